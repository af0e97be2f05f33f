//! Where and how text reaches the user: colour choice, terminal width, and
//! whether stderr is a terminal (progress is rewritten in place there).

use std::io::IsTerminal;

use crate::cli::ColorChoice;
use crate::diagnostic::Style;

/// Output settings resolved once from flags and the environment.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub color: bool,
    pub quiet: bool,
    pub verbose: bool,
    /// stderr is a terminal.
    pub tty: bool,
    /// The command that lists every finding of this run's files (`warren
    /// lint PATH`): the other commands draw a few of each kind and point
    /// at it.
    pub lint: &'static str,
    /// The plan whose JSON lists every refusal of this run's plan (`warren
    /// plan PATH --format json`): `warren lint` finds none of them.
    pub plan: &'static str,
    /// stdout is a document that holds the findings (`plan --format json`
    /// and the other machine formats): stderr draws none of them.
    pub documented: bool,
}

impl Output {
    pub fn new(choice: ColorChoice, quiet: bool, verbose: bool) -> Self {
        let tty = std::io::stderr().is_terminal();
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && tty,
        };
        Output { color, quiet, verbose, tty, lint: "warren lint", plan: "warren plan --format json", documented: false }
    }

    /// The same, for a command whose files `warren lint ARGS` lists every
    /// finding of (`lists.0`), and `warren plan ARGS --format json` every
    /// refusal (`lists.1`), and whose stdout holds them when `documented`.
    pub fn for_findings(self, lists: (String, String), documented: bool) -> Self {
        // Made once per run: leaking them keeps Output a plain copy.
        let (lint, plan) = (Box::leak(lists.0.into_boxed_str()), Box::leak(lists.1.into_boxed_str()));
        Output { lint, plan, documented, ..self }
    }

    /// The command that lists every finding of `code`.
    pub fn lister(&self, code: &str) -> &'static str {
        match crate::diff::is_refusal(code) {
            true => self.plan,
            false => self.lint,
        }
    }

    /// Diagnostics style: a fixed width keeps output identical in CI logs.
    pub fn diagnostic_style(&self) -> Style {
        Style { color: self.color, width: 100 }
    }
}
