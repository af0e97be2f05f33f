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
        Output { color, quiet, verbose, tty, lint: "warren lint", documented: false }
    }

    /// The same, for a command whose files `warren lint ARGS` lists every
    /// finding of, and whose stdout holds them when `documented`.
    pub fn for_findings(self, lint: String, documented: bool) -> Self {
        // Made once per run: leaking it keeps Output a plain copy.
        Output { lint: Box::leak(lint.into_boxed_str()), documented, ..self }
    }

    /// Diagnostics style: a fixed width keeps output identical in CI logs.
    pub fn diagnostic_style(&self) -> Style {
        Style { color: self.color, width: 100 }
    }
}
