//! The plan as a pull-request comment: the summary visible, a warning when
//! anything is destroyed or migrated, the full plan folded.

use std::fmt::Write;

use super::document::PlanDocument;
use super::human;
use crate::diff::Action;

pub fn render(doc: &PlanDocument) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### warren plan for `{}`\n", doc.desired);
    let _ = writeln!(out, "**{}**\n", human::summary_line(doc));
    let count = |a: Action| doc.changes.iter().filter(|c| c.action == a).count();
    let (destroy, replace, migrate) = (count(Action::Destroy), count(Action::Replace), count(Action::Migrate));
    let rollback = count(Action::Rollback);
    if destroy + replace + migrate + rollback > 0 {
        out += "> [!WARNING]\n";
        if destroy > 0 {
            let _ = writeln!(out, "> {destroy} object(s) will be **destroyed**.");
        }
        if replace > 0 {
            let _ = writeln!(
                out,
                "> {replace} object(s) will be **destroyed and recreated**; messages or routes can be lost."
            );
        }
        if migrate > 0 {
            let _ =
                writeln!(out, "> {migrate} queue(s) will be **migrated live** to a replacement, with no message loss.");
        }
        if rollback > 0 {
            let _ = writeln!(
                out,
                "> {rollback} migration(s) in flight will be **rolled back** to their old queue, with no message loss."
            );
        }
        if doc.summary.requires_allow_destroy {
            out += "> Apply refuses this plan without `--allow-destroy`.\n";
        }
        out += "\n";
    }
    for e in &doc.errors {
        let at = match (&e.file, e.line, e.column) {
            (Some(f), Some(l), Some(c)) => format!("`{f}:{l}:{c}`: "),
            _ => String::new(),
        };
        let _ = writeln!(out, "- :x: {at}{} (`{}`)", e.message, e.code);
    }
    if !doc.errors.is_empty() {
        out += "\n";
    }
    out += "<details><summary>Full plan</summary>\n\n```diff\n";
    for line in human::render(doc, false).lines() {
        out += &diff_marked(line);
        out.push('\n');
    }
    out += "```\n\n</details>\n";
    out
}

/// Moves a leading `+` or `-` to the first column, where GitHub's `diff`
/// highlighting looks for it.
fn diff_marked(line: &str) -> String {
    let body = line.trim_start();
    let indent = line.len() - body.len();
    match body.chars().next() {
        Some(sign @ ('+' | '-')) if indent > 0 && body[1..].starts_with(' ') => {
            format!("{sign}{}{}", " ".repeat(indent), &body[1..])
        }
        _ => line.to_string(),
    }
}
