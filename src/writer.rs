//! The one writer: everything a command says reaches the user through a
//! [`Writer`], and nothing else in warren prints.
//!
//! A command's report is not one value computed at its end: `apply` shows
//! its plan, asks, then tells each step as it runs. So a command hands the
//! writer the parts of its report as they come (the document on stdout,
//! what goes beside it on stderr, its diagnostics, and at the end the
//! [`Error`] it ended with), and the writer alone decides where they go:
//! the terminal, or a buffer that a rollout prints as one environment's
//! section (cargo's `Shell` is the model).

use std::io::{BufRead, IsTerminal, Write};
use std::sync::{Arc, Mutex};

use crate::diagnostic::{Diagnostic, Style, render, render_beside};
use crate::error::Error;
use crate::output::Output;
use crate::source::Sources;

/// Where a command's report goes, with the output settings of its run.
/// Cloning gives another handle to the same place.
#[derive(Clone)]
pub struct Writer {
    output: Output,
    sink: Arc<Sink>,
    /// Said before each line of [`Writer::errln`]: whose line it is, where
    /// several environments speak at once.
    label: Option<Arc<str>>,
}

enum Sink {
    /// stdout and stderr.
    Terminal,
    /// Both streams in one text, in the order written.
    Buffer(Mutex<String>),
}

impl Writer {
    /// The process's stdout and stderr.
    pub fn terminal(output: Output) -> Writer {
        Writer { output, sink: Arc::new(Sink::Terminal), label: None }
    }

    /// A buffer, for one environment of a rollout: no colour, no live
    /// lines, never a terminal to confirm on.
    pub fn buffer(output: Output) -> Writer {
        let output = Output { color: false, tty: false, ..output };
        Writer { output, sink: Arc::new(Sink::Buffer(Mutex::default())), label: None }
    }

    /// What a buffer holds, emptying it; nothing for the terminal.
    pub fn take(&self) -> String {
        match &*self.sink {
            Sink::Terminal => String::new(),
            Sink::Buffer(text) => std::mem::take(&mut *lock(text)),
        }
    }

    /// The output settings of this run.
    pub fn output(&self) -> Output {
        self.output
    }

    /// The same place, with other settings.
    pub fn with(&self, output: Output) -> Writer {
        Writer { output, ..self.clone() }
    }

    /// The same place, each line of [`Writer::errln`] said as `label`'s.
    pub fn labelled(&self, label: &str) -> Writer {
        Writer { label: Some(label.into()), ..self.clone() }
    }

    /// The same place, for a command whose files `lists.0` lists every
    /// finding of, and `lists.1` every refusal of, and whose stdout holds
    /// them when `documented` (see [`Output::for_findings`]).
    pub fn for_findings(&self, lists: (String, String), documented: bool) -> Writer {
        self.with(self.output.for_findings(lists, documented))
    }

    pub fn quiet(&self) -> bool {
        self.output.quiet
    }

    pub fn verbose(&self) -> bool {
        self.output.verbose
    }

    pub fn color(&self) -> bool {
        self.output.color
    }

    /// How diagnostics are drawn.
    pub fn style(&self) -> Style {
        self.output.diagnostic_style()
    }

    /// Part of the command's document, on stdout.
    pub fn out(&self, text: impl AsRef<str>) {
        match &*self.sink {
            Sink::Terminal => {
                let mut stdout = std::io::stdout().lock();
                // A closed pipe (`warren plan | head`) is no error of warren's.
                let _ = stdout.write_all(text.as_ref().as_bytes()).and_then(|()| stdout.flush());
            }
            Sink::Buffer(buffer) => lock(buffer).push_str(text.as_ref()),
        }
    }

    /// A line of the command's document.
    pub fn outln(&self, line: impl AsRef<str>) {
        self.out(format!("{}\n", line.as_ref()));
    }

    /// What goes beside the document, on stderr.
    pub fn err(&self, text: impl AsRef<str>) {
        match &*self.sink {
            Sink::Terminal => {
                let _ = std::io::stderr().lock().write_all(text.as_ref().as_bytes());
            }
            Sink::Buffer(buffer) => lock(buffer).push_str(text.as_ref()),
        }
    }

    /// A line beside the document.
    pub fn errln(&self, line: impl AsRef<str>) {
        match &self.label {
            None => self.err(format!("{}\n", line.as_ref())),
            Some(label) => {
                let said = |l: &str| if l.is_empty() { "\n".to_string() } else { format!("{label}: {l}\n") };
                let text: String = match line.as_ref() {
                    "" => "\n".into(),
                    text => text.lines().map(said).collect(),
                };
                self.err(text);
            }
        }
    }

    /// A line beside the document that `-q` leaves out.
    pub fn note(&self, line: impl AsRef<str>) {
        if !self.output.quiet {
            self.errln(line);
        }
    }

    /// Diagnostics drawn in full, on stderr.
    pub fn diagnostics(&self, diagnostics: &[Diagnostic], sources: &Sources) {
        self.err(render(diagnostics, sources, self.style()));
    }

    /// What a command that did not do all it was asked says at its end: its
    /// diagnostics (a few of each kind, as beside any output), then its lines.
    pub fn error(&self, e: &Error) {
        self.err(render_beside(&e.diagnostics, &e.sources, self.style(), |code| self.output.lister(code)));
        for line in &e.lines {
            self.errln(line);
        }
    }

    /// Whether live lines may be redrawn in place: stderr is a terminal and
    /// is this writer's.
    pub fn redraws(&self) -> bool {
        matches!(*self.sink, Sink::Terminal) && self.output.tty
    }

    /// The terraform-style confirmation of a writing command: only `yes`
    /// approves, and without a terminal nothing is asked and nothing done.
    /// `verb` names the command in the messages (`apply`, `abort`).
    pub fn confirm(&self, question: &str, verb: &str) -> bool {
        if !matches!(*self.sink, Sink::Terminal) || !std::io::stdin().is_terminal() {
            self.errln(format!(
                "Nothing was changed: there is no terminal to confirm on; pass --auto-approve to {verb} unattended."
            ));
            return false;
        }
        self.err(format!("\n{question}\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: "));
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        let yes = answer.trim() == "yes";
        if !yes {
            let mut cancelled = verb.to_string();
            cancelled[..1].make_ascii_uppercase();
            self.errln(format!("\n{cancelled} cancelled. Nothing was changed."));
        }
        yes
    }
}

/// A buffer's text, even after a panic elsewhere while it was held: what
/// was written stays worth showing.
fn lock(text: &Mutex<String>) -> std::sync::MutexGuard<'_, String> {
    text.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::ColorChoice;

    #[test]
    fn a_buffer_keeps_both_streams_in_the_order_written() {
        let w = Writer::buffer(Output::new(ColorChoice::Always, false, false));
        assert!(!w.color(), "a buffer is never coloured");
        w.outln("plan");
        w.errln("a note");
        w.note("said unless -q");
        w.out("done\n");
        assert_eq!(w.take(), "plan\na note\nsaid unless -q\ndone\n");
        assert_eq!(w.take(), "", "taking empties it");
        let quiet = Writer::buffer(Output::new(ColorChoice::Never, true, false));
        quiet.note("left out");
        assert_eq!(quiet.take(), "");
    }

    #[test]
    fn a_labelled_writer_says_whose_each_line_is() {
        let buffer = Writer::buffer(Output::new(ColorChoice::Never, false, false));
        let two = buffer.labelled("environment two");
        two.errln("Another apply holds the lock.\n\nWaiting…");
        two.errln("");
        buffer.errln("unlabelled");
        assert_eq!(
            buffer.take(),
            "environment two: Another apply holds the lock.\n\nenvironment two: Waiting…\n\nunlabelled\n"
        );
    }

    #[test]
    fn a_buffer_never_confirms() {
        let w = Writer::buffer(Output::new(ColorChoice::Never, false, false));
        assert!(!w.confirm("Go?", "apply"));
        assert!(w.take().contains("pass --auto-approve to apply unattended"));
    }
}
