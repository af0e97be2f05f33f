//! A report of findings (`validate`, `lint`) in a machine format, printed,
//! and for GitHub also appended to the step summary.

use std::path::Path;

use crate::render::lint::{LintDocument, LintFormat};

/// A document of findings in a machine format: JSON, GitLab's report, or
/// GitHub's annotations with the findings appended to the step summary
/// (`$GITHUB_STEP_SUMMARY`) when there is one. `title` heads the summary.
pub fn print(doc: &LintDocument, format: LintFormat, path: &Path, title: &str) {
    match format {
        LintFormat::Human | LintFormat::Json => print!("{}", doc.json()),
        LintFormat::Gitlab => print!("{}", crate::render::ci::gitlab(doc, &path.display().to_string())),
        LintFormat::Sarif => print!("{}", crate::render::ci::sarif(doc)),
        LintFormat::Github => {
            print!("{}", crate::render::ci::github(doc));
            step_summary(&crate::render::ci::markdown(doc, &format!("{title} {}", path.display())));
        }
    }
}

/// Appends `markdown` to GitHub's step summary, when the job has one
/// (`$GITHUB_STEP_SUMMARY`); a file that cannot be written is a warning.
pub fn step_summary(markdown: &str) {
    let Some(file) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|f| !f.is_empty()) else { return };
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{markdown}\n").as_bytes()));
    if let Err(e) = written {
        eprintln!("warning: could not append to $GITHUB_STEP_SUMMARY ({}): {e}", file.to_string_lossy());
    }
}
