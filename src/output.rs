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
}

impl Output {
    pub fn new(choice: ColorChoice, quiet: bool, verbose: bool) -> Self {
        let tty = std::io::stderr().is_terminal();
        let color = match choice {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && tty,
        };
        Output { color, quiet, verbose, tty }
    }

    /// Diagnostics style: a fixed width keeps output identical in CI logs.
    pub fn diagnostic_style(&self) -> Style {
        Style { color: self.color, width: 100 }
    }
}
