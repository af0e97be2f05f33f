//! A report of findings (`validate`, `lint`) in a machine format, printed,
//! and for GitHub also appended to the step summary.

use std::path::{Path, PathBuf};

use crate::cli::Command;
use crate::diagnostic::{Diagnostic, render_beside};
use crate::render::lint::{LintDocument, LintFormat};
use crate::source::Sources;
use crate::writer::Writer;

/// Findings beside a command's main output, on stderr: a few of each kind
/// drawn, the rest said in a line that points at `warren lint` (see
/// [`render_beside`]); with `-q`, only the errors. Nothing when stdout is
/// a document that holds them (`--format json`).
pub fn show(diagnostics: &[Diagnostic], sources: &Sources, out: &Writer) {
    if out.output().documented {
        return;
    }
    shown(diagnostics, sources, out);
}

/// [`show`], whatever the format: for findings no document holds.
pub fn shown(diagnostics: &[Diagnostic], sources: &Sources, out: &Writer) {
    let shown: Vec<Diagnostic> = diagnostics.iter().filter(|d| !out.quiet() || d.is_error()).cloned().collect();
    let output = out.output();
    out.err(render_beside(&shown, sources, out.style(), |code| output.lister(code)));
}

/// The `warren lint` that lists every finding of the files `command` reads
/// (`warren lint topology --env staging`) and the plan that lists every
/// refusal (see [`lists_of`]), and whether its stdout is a document that
/// holds them.
pub fn lint_command(command: &Command) -> ((String, String), bool) {
    let default = PathBuf::from("topology");
    let (path, envs, documented): (&Path, &[String], bool) = match command {
        Command::Plan { path, envs, output, .. } => (path, envs, output.format != crate::render::Format::Human),
        Command::Apply { path, envs, .. } => (path, envs, false),
        Command::Adopt { path, .. } | Command::Graph { path, .. } => (path, &[], false),
        Command::Route(args) => (&args.path, &[], false),
        Command::Validate { path, envs, .. } | Command::Export { path, envs, .. } => (path, envs, false),
        // OLD NEW: NEW's findings are shown.
        Command::Diff { paths, envs, output } => {
            let path = if envs.is_empty() { paths.last() } else { paths.first() };
            (path.unwrap_or(&default), envs, output.format != crate::render::Format::Human)
        }
        _ => (&default, &[], false),
    };
    (lists_of(path, envs), documented)
}

/// `warren lint PATH --env ENV...`, which lists every finding of the files,
/// and `warren plan PATH --env ENV... --format json`, whose JSON lists
/// every refusal of a plan against the broker.
pub fn lists_of(path: &Path, envs: &[String]) -> (String, String) {
    let plan = lint_of(path, envs).replacen("warren lint", "warren plan", 1);
    (lint_of(path, envs), format!("{plan} --format json"))
}

/// `warren lint PATH --env ENV...`, quoted for a shell.
pub fn lint_of(path: &Path, envs: &[String]) -> String {
    let mut words = vec!["warren".to_string(), "lint".into(), quoted(&path.display().to_string())];
    for env in envs {
        words.push("--env".into());
        words.push(quoted(env));
    }
    words.join(" ")
}

/// A word as a shell reads it back: quoted when it holds anything else than
/// letters, digits and `-_./:@%+=,`.
fn quoted(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// A document of findings in a machine format: JSON, GitLab's report, or
/// GitHub's annotations with the findings appended to the step summary
/// (`$GITHUB_STEP_SUMMARY`) when there is one. `title` heads the summary.
pub fn print(doc: &LintDocument, format: LintFormat, path: &Path, title: &str, out: &Writer) {
    match format {
        LintFormat::Human | LintFormat::Json => out.out(doc.json()),
        LintFormat::Gitlab => out.out(crate::render::ci::gitlab(doc, &path.display().to_string())),
        LintFormat::Sarif => out.out(crate::render::ci::sarif(doc)),
        LintFormat::Github => {
            out.out(crate::render::ci::github(doc));
            step_summary(&crate::render::ci::markdown(doc, &format!("{title} {}", path.display())), out);
        }
    }
}

/// Appends `markdown` to GitHub's step summary, when the job has one
/// (`$GITHUB_STEP_SUMMARY`); a file that cannot be written is a warning.
pub fn step_summary(markdown: &str, out: &Writer) {
    let Some(file) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|f| !f.is_empty()) else { return };
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{markdown}\n").as_bytes()));
    if let Err(e) = written {
        out.errln(format!("warning: could not append to $GITHUB_STEP_SUMMARY ({}): {e}", file.to_string_lossy()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lint_command_is_quoted_for_a_shell() {
        assert_eq!(lint_of(Path::new("topology"), &[]), "warren lint topology");
        let envs = ["prod-*".to_string(), "qa".to_string()];
        assert_eq!(lint_of(Path::new("my files/x"), &envs), "warren lint 'my files/x' --env 'prod-*' --env qa");
        assert_eq!(lint_of(Path::new("it's"), &[]), "warren lint 'it'\\''s'");
    }

    /// What only a plan against the broker finds, `warren lint` never
    /// lists: the line under a few drawn refusals points at the plan's JSON.
    #[test]
    fn refusals_are_listed_by_the_plans_json_and_the_rest_by_lint() {
        let envs = ["prod".to_string()];
        let lists = lists_of(Path::new("my files"), &envs);
        assert_eq!(lists.1, "warren plan 'my files' --env prod --format json");
        let output =
            crate::output::Output::new(crate::cli::ColorChoice::Never, false, false).for_findings(lists, false);
        assert_eq!(output.lister("external-user-missing"), "warren plan 'my files' --env prod --format json");
        assert_eq!(output.lister("other-project"), output.plan);
        assert_eq!(output.lister("dlx-unroutable"), "warren lint 'my files' --env prod");
    }
}
