//! The plan as a pull-request comment: a hidden marker that CI finds the
//! comment by (to update it rather than add one per push), a warning first
//! when anything is destroyed, replaced, migrated or rolled back, the
//! summary, the errors, then the warnings and the full plan folded. It
//! always fits in a GitHub comment: past [`LIMIT`] the full plan is cut,
//! never the summary, the warning or the warnings, and the comment says so.

use std::fmt::Write;

use super::document::{DiagnosticDoc, PlanDocument};
use super::human::{self, Voice};
use crate::diff::Action;

/// GitHub's limit on a comment's body, in characters.
pub const LIMIT: usize = 65_536;

/// What is kept for the note that says the plan was cut, and the fences.
const RESERVE: usize = 600;

pub fn render(doc: &PlanDocument) -> String {
    marker(doc) + &body(doc)
}

/// The hidden line CI finds its comment by: the command, the project, and
/// the environment.
pub fn marker(doc: &PlanDocument) -> String {
    let o = &doc.origin;
    let command = if o.diff { "diff" } else { "plan" };
    let env = o.environment.as_deref().map(|e| format!(" environment={e}")).unwrap_or_default();
    format!("<!-- warren:{command} project={}{env} -->\n", o.project)
}

/// The comment without its marker, in at most [`LIMIT`] characters.
pub fn body(doc: &PlanDocument) -> String {
    body_within(doc, LIMIT)
}

/// The comment without its marker in at most `limit` characters: for a
/// report of several environments, which shares one comment (and has one
/// marker of its own). Past the limit the full plan is cut first; the
/// errors, the warnings and the picture each take at most a quarter.
pub fn body_within(doc: &PlanDocument, limit: usize) -> String {
    let mut out = head(doc, limit);
    let plan: Vec<String> = human::render(doc, false).lines().map(diff_marked).collect();
    let whole: usize = plan.iter().map(|l| l.chars().count() + 1).sum();
    let comparing = matches!(Voice::of(doc), Voice::Compare { .. });
    out += if comparing {
        "<details><summary>All differences</summary>\n\n```diff\n"
    } else {
        "<details><summary>Full plan</summary>\n\n```diff\n"
    };
    let room = limit.saturating_sub(out.chars().count() + RESERVE);
    if whole <= room {
        for line in &plan {
            out += line;
            out.push('\n');
        }
        out += "```\n\n</details>\n";
        return out;
    }
    let mut used = 0;
    let mut shown = 0;
    for line in &plan {
        let n = line.chars().count() + 1;
        if used + n > room {
            break;
        }
        out += line;
        out.push('\n');
        used += n;
        shown += 1;
    }
    let command = if doc.origin.diff { "warren diff" } else { "warren plan" };
    let (what, above) = if comparing {
        ("list of differences", "the summary and the warnings are above")
    } else {
        ("plan", "the summary, the warnings and everything destroyed are above")
    };
    let _ = write!(
        out,
        "```\n\n**The {what} is cut here** ({shown} of {} lines) to fit a comment of {LIMIT} characters: \
         {above}. Run `{command}` (or read the job's log) for all of it.\n\n</details>\n",
        plan.len()
    );
    out
}

/// Everything but the full plan: what must always be in the comment.
fn head(doc: &PlanDocument, limit: usize) -> String {
    let mut out = String::new();
    if doc.origin.diff {
        let _ = writeln!(out, "### warren diff `{}` → `{}`\n", doc.live, doc.desired);
    } else {
        let _ = writeln!(out, "### warren plan for `{}`\n", doc.desired);
    }
    warning(&mut out, doc);
    if !doc.changed_outside.is_empty() {
        let all: Vec<&str> = doc.changed_outside.iter().map(|o| o.address.as_str()).collect();
        let _ = writeln!(
            out,
            "> [!CAUTION]\n> {} object(s) were **changed outside warren** since its last apply: {}.\n",
            all.len(),
            listed(&all)
        );
    }
    let _ = writeln!(out, "**{}**\n", human::summary_line(doc));
    let share = limit / 4;
    if !doc.errors.is_empty() {
        out += &listed_within(&doc.errors, ":x:", share);
        out += "\n";
    }
    out += &super::routing::markdown(&doc.routing, share);
    let fits = |p: &&super::graph::Picture| p.mermaid.chars().count() + p.legend.chars().count() < share;
    if let Some(picture) = doc.origin.picture.as_ref().filter(fits) {
        let around = match Voice::of(doc) {
            Voice::Compare { .. } => "the differences",
            _ => "the change",
        };
        let legend = if picture.legend.is_empty() { String::new() } else { format!("{}\n\n", picture.legend) };
        let _ = writeln!(
            out,
            "<details><summary>Routing around {around}</summary>\n\n{legend}```mermaid\n{}```\n\n</details>\n",
            picture.mermaid
        );
    }
    if !doc.warnings.is_empty() {
        let _ = writeln!(out, "<details><summary>Warnings ({})</summary>\n", doc.warnings.len());
        out += &listed_within(&doc.warnings, ":warning:", share);
        out += "\n</details>\n\n";
    }
    out
}

/// One line per diagnostic, whole, in at most `room` characters; then how
/// many more there are.
fn listed_within(diagnostics: &[DiagnosticDoc], icon: &str, room: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    for (i, d) in diagnostics.iter().enumerate() {
        let line = format!("- {icon} {}{} (`{}`)\n", place(d), d.message, d.code);
        let n = line.chars().count();
        if used + n > room {
            let _ = writeln!(out, "- … and {} more: see `--format json`", diagnostics.len() - i);
            break;
        }
        used += n;
        out += &line;
    }
    out
}

/// The warning block, first: what is destroyed or replaced, by name. Two
/// environments compared have a note instead: what differs in a way no
/// broker changes in place.
fn warning(out: &mut String, doc: &PlanDocument) {
    let of = |a: Action| doc.changes.iter().filter(move |c| c.action == a);
    if let Voice::Compare { .. } = Voice::of(doc) {
        let fixed = || of(Action::Update).filter(|c| c.reason.ends_with(crate::diff::NOT_IN_PLACE));
        let n = fixed().count();
        if n > 0 {
            let _ = writeln!(
                out,
                "> [!NOTE]\n> {n} object(s) differ in what cannot change in place on a broker: {}.\n",
                names(fixed())
            );
        }
        return;
    }
    let (destroy, replace) = (of(Action::Destroy).count(), of(Action::Replace).count());
    let (migrate, rollback) = (of(Action::Migrate).count(), of(Action::Rollback).count());
    // Permissions that grant less are made or updated, yet take access.
    let narrowing = || {
        let made = |c: &&super::ChangeDoc| matches!(c.action, Action::Create | Action::Update);
        doc.changes.iter().filter(|c| c.requires_allow_destroy).filter(made)
    };
    let narrowed = narrowing().count();
    if destroy + replace + migrate + rollback + narrowed == 0 {
        return;
    }
    // A change reviewed (`diff OLD NEW`) says what applying it would do.
    let review = Voice::of(doc) == Voice::Review;
    let (will, applied) = if review { ("would", " if applied") } else { ("will", "") };
    *out += "> [!WARNING]\n";
    if destroy > 0 {
        let _ =
            writeln!(out, "> {destroy} object(s) {will} be **destroyed**{applied}: {}.", names(of(Action::Destroy)));
    }
    if replace > 0 {
        let can = if review { "could" } else { "can" };
        let _ = writeln!(
            out,
            "> {replace} object(s) {will} be **destroyed and recreated**{applied}; messages or routes {can} be lost: {}.",
            names(of(Action::Replace))
        );
    }
    if narrowed > 0 {
        let _ = writeln!(
            out,
            "> {narrowed} change(s) {will} **take access away**{applied}, granting less than the live permissions: {}.",
            names(narrowing())
        );
    }
    if migrate > 0 {
        let _ = writeln!(
            out,
            "> {migrate} queue(s) {will} be **migrated live** to a replacement{applied}, with no message loss."
        );
    }
    if rollback > 0 {
        let _ = writeln!(
            out,
            "> {rollback} migration(s) in flight {will} be **rolled back** to their old queue{applied}, with no message loss."
        );
    }
    if doc.summary.requires_allow_destroy {
        *out += if review {
            "> Apply would refuse this change without `--allow-destroy`.\n"
        } else {
            "> Apply refuses this plan without `--allow-destroy`.\n"
        };
    }
    if doc.summary.requires_allow_lockout {
        *out +=
            "> It takes access away from the user warren connects as: apply refuses it without `--allow-lockout`.\n";
    }
    *out += "\n";
}

/// The addresses of `changes`, the first 20, then how many more.
fn names<'a>(changes: impl Iterator<Item = &'a super::ChangeDoc>) -> String {
    listed(&changes.map(|c| c.address.as_str()).collect::<Vec<_>>())
}

/// The first 20 of `all`, then how many more.
fn listed(all: &[&str]) -> String {
    const LISTED: usize = 20;
    let mut s = all.iter().take(LISTED).copied().collect::<Vec<_>>().join(", ");
    if all.len() > LISTED {
        let _ = write!(s, " and {} more", all.len() - LISTED);
    }
    s
}

fn place(d: &DiagnosticDoc) -> String {
    match (&d.file, d.line, d.column) {
        (Some(f), Some(l), Some(c)) => format!("`{f}:{l}:{c}`: "),
        _ => String::new(),
    }
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
