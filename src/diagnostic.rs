//! Diagnostics: every problem warren finds in the user's files, with the
//! place it comes from and what to do about it.

use std::fmt;

use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};

use crate::source::{Location, Sources};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
    /// Worth knowing, not wrong: never fails a run.
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// One finding. `code` is stable: tests, CI filters and docs refer to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
    pub location: Option<Location>,
    /// Text under the underlined value.
    pub label: Option<String>,
    /// What to do about it.
    pub help: Option<String>,
    /// The source line holds a secret: show its position, never its text.
    pub redact: bool,
}

impl Diagnostic {
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            code,
            message: message.into(),
            location: None,
            label: None,
            help: None,
            redact: false,
        }
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(code, message) }
    }

    pub fn info(code: &'static str, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Info, ..Diagnostic::error(code, message) }
    }

    pub fn at(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }

    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn redacted(mut self) -> Self {
        self.redact = true;
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

pub use crate::model::did_you_mean;

/// Sort diagnostics the way a reader walks the files: by file, then offset.
pub fn sort(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| {
        let key = |d: &Diagnostic| d.location.as_ref().map(|l| (l.file, l.span.start, l.span.end));
        key(a).cmp(&key(b)).then(a.code.cmp(b.code)).then(a.message.cmp(&b.message))
    });
}

/// How diagnostics are drawn.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
    pub width: usize,
}

/// Draws diagnostics the way rustc and miette do: a header, the source
/// line with the value underlined, and a help line. Every one of them:
/// `warren lint`, which lists them all, and single diagnostics.
pub fn render(diagnostics: &[Diagnostic], sources: &Sources, style: Style) -> String {
    let handler = handler(style);
    let mut out = String::new();
    for d in diagnostics {
        draw(&handler, d, sources, &mut out);
    }
    out
}

/// How many findings of one code a command draws beside its main output;
/// one line says the rest.
pub const DRAWN_PER_CODE: usize = 3;

/// What a command shows beside its main output: of each severity and code,
/// the first [`DRAWN_PER_CODE`] drawn in full, then one line for the rest
/// ("and 9,998 more warnings like this (dlx-unroutable): `warren lint
/// topology` lists them all"), where the last drawn one was. `lint` names
/// the command that lists them all, by code. The rest are never drawn: at 10,000
/// findings drawing them was most of a plan's time.
pub fn render_beside(
    diagnostics: &[Diagnostic],
    sources: &Sources,
    style: Style,
    lister: impl Fn(&str) -> &str,
) -> String {
    let handler = handler(style);
    let mut out = String::new();
    for shown in consolidate(diagnostics) {
        match shown {
            Shown::Drawn(d) => draw(&handler, d, sources, &mut out),
            Shown::More { severity, code, more } => out += &more_line(severity, code, more, lister(code)),
        }
    }
    out
}

/// One item of what [`render_beside`] shows.
#[derive(Debug, PartialEq)]
pub enum Shown<'a> {
    Drawn(&'a Diagnostic),
    /// `more` findings of this severity and code are not drawn.
    More {
        severity: Severity,
        code: &'static str,
        more: usize,
    },
}

/// The diagnostics in their order, those past the first [`DRAWN_PER_CODE`]
/// of a severity and code left out, and said after the last one drawn.
pub fn consolidate(diagnostics: &[Diagnostic]) -> Vec<Shown<'_>> {
    let mut counts: std::collections::HashMap<(Severity, &str), usize> = std::collections::HashMap::new();
    for d in diagnostics {
        *counts.entry((d.severity, d.code)).or_default() += 1;
    }
    let mut seen: std::collections::HashMap<(Severity, &str), usize> = std::collections::HashMap::new();
    let mut out = Vec::new();
    for d in diagnostics {
        let n = seen.entry((d.severity, d.code)).or_default();
        *n += 1;
        if *n > DRAWN_PER_CODE {
            continue;
        }
        out.push(Shown::Drawn(d));
        let total = counts[&(d.severity, d.code)];
        if *n == DRAWN_PER_CODE && total > DRAWN_PER_CODE {
            out.push(Shown::More { severity: d.severity, code: d.code, more: total - DRAWN_PER_CODE });
        }
    }
    out
}

/// `and 9,998 more warnings like this (dlx-unroutable): `warren lint PATH` lists them all`.
fn more_line(severity: Severity, code: &str, more: usize, lint: &str) -> String {
    let word = match (severity, more) {
        (Severity::Error, 1) => "error",
        (Severity::Error, _) => "errors",
        (Severity::Warning, 1) => "warning",
        (Severity::Warning, _) => "warnings",
        (Severity::Info, 1) => "info",
        (Severity::Info, _) => "infos",
    };
    format!("  … and {} more {word} like this ({code}): `{lint}` lists them all\n\n", thousands(more))
}

/// `9998` as `9,998`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn handler(style: Style) -> GraphicalReportHandler {
    let theme = if style.color { GraphicalTheme::unicode() } else { GraphicalTheme::unicode_nocolor() };
    GraphicalReportHandler::new_themed(theme).with_width(style.width).with_links(false)
}

fn draw(handler: &GraphicalReportHandler, d: &Diagnostic, sources: &Sources, out: &mut String) {
    let report = Report::new(d, sources);
    // Writing into a String cannot fail.
    let _ = handler.render_report(out, &report);
    out.push('\n');
}

/// A one-line form: `path:line:col: error[code]: message`, for logs and tests.
pub fn render_short(d: &Diagnostic, sources: &Sources) -> String {
    let sev = d.severity.as_str();
    match &d.location {
        Some(l) => match sources.origin(l) {
            Some(origin) => format!("{}: {sev}[{}]: {} ({origin})", sources.position(l), d.code, d.message),
            None => format!("{}: {sev}[{}]: {}", sources.position(l), d.code, d.message),
        },
        None => format!("{sev}[{}]: {}", d.code, d.message),
    }
}

/// The adapter that lets miette draw one [`Diagnostic`].
struct Report<'a> {
    message: String,
    code: String,
    severity: miette::Severity,
    help: Option<String>,
    source: Option<Window<'a>>,
    label: Option<LabeledSpan>,
}

impl<'a> Report<'a> {
    fn new(d: &Diagnostic, sources: &'a Sources) -> Self {
        let mut message = d.message.clone();
        // What a stamp made is shown at the shape's line, and says the
        // stamp's line too: the user wrote both.
        if let Some(origin) = d.location.as_ref().and_then(|l| sources.origin(l)) {
            message = format!("{message} ({origin})");
        }
        let (source, label) = match &d.location {
            Some(l) if d.redact => {
                message = format!("{message} (at {})", sources.position(l));
                (None, None)
            }
            Some(l) => {
                let file = sources.get(l.file);
                let (lines, first_line) = sources.lines_around(l, WINDOW_LINES);
                let window = Window { name: file.path.to_string_lossy(), text: &file.text[lines.clone()], first_line };
                // The span, in the window's own offsets.
                let start = l.span.start.clamp(lines.start, lines.end) - lines.start;
                let end = l.span.end.clamp(lines.start, lines.end) - lines.start;
                let span = SourceSpan::from(start..end.max(start));
                (Some(window), Some(LabeledSpan::new_with_span(d.label.clone(), span)))
            }
            None => (None, None),
        };
        Report {
            message,
            code: format!("warren::{}", d.code),
            severity: match d.severity {
                Severity::Error => miette::Severity::Error,
                Severity::Warning => miette::Severity::Warning,
                Severity::Info => miette::Severity::Advice,
            },
            help: d.help.clone(),
            source,
            label,
        }
    }
}

/// Lines of context kept around a diagnostic's span: more than miette
/// draws (one).
const WINDOW_LINES: usize = 2;

/// The lines of a file around one diagnostic, which is all miette reads of
/// it: handing it the whole file made it copy the file and count its lines
/// from the top for every diagnostic, hours for 10,000 findings in a
/// large file.
struct Window<'a> {
    name: std::borrow::Cow<'a, str>,
    text: &'a str,
    /// The file's line (0-based) the window starts at.
    first_line: usize,
}

impl SourceCode for Window<'_> {
    fn read_span<'b>(
        &'b self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'b> + 'b>, miette::MietteError> {
        let inner = self.text.read_span(span, before, after)?;
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.to_string(),
            inner.data(),
            *inner.span(),
            inner.line() + self.first_line,
            inner.column(),
            inner.line_count(),
        )))
    }
}

impl fmt::Debug for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Report<'_> {}

impl miette::Diagnostic for Report<'_> {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(&self.code))
    }
    fn severity(&self) -> Option<miette::Severity> {
        Some(self.severity)
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help.as_ref().map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        self.label.clone().map(|l| Box::new(std::iter::once(l)) as Box<dyn Iterator<Item = LabeledSpan>>)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Location;

    fn at(code: &'static str, severity: Severity, n: usize) -> Diagnostic {
        Diagnostic { severity, ..Diagnostic::error(code, format!("finding {n}")) }
    }

    fn said(shown: &[Shown]) -> Vec<String> {
        shown
            .iter()
            .map(|s| match s {
                Shown::Drawn(d) => d.message.clone(),
                Shown::More { severity, code, more } => format!("{} more {} {code}", more, severity.as_str()),
            })
            .collect()
    }

    #[test]
    fn the_first_three_of_a_code_are_drawn_and_the_rest_said_after_the_third() {
        let mut all: Vec<Diagnostic> = (0..5).map(|n| at("dlx-unroutable", Severity::Warning, n)).collect();
        all.insert(1, at("guest-user", Severity::Warning, 9));
        all.push(at("unknown-key", Severity::Error, 10));
        assert_eq!(
            said(&consolidate(&all)),
            ["finding 0", "finding 9", "finding 1", "finding 2", "2 more warning dlx-unroutable", "finding 10"]
        );
    }

    #[test]
    fn three_or_fewer_are_all_drawn_and_severities_count_apart() {
        let all: Vec<Diagnostic> = (0..3).map(|n| at("dlx-unroutable", Severity::Warning, n)).collect();
        assert_eq!(said(&consolidate(&all)).len(), 3);
        // A code met as an error and as a warning (lint --deny): two kinds.
        let mut mixed: Vec<Diagnostic> = (0..3).map(|n| at("c", Severity::Warning, n)).collect();
        mixed.extend((3..7).map(|n| at("c", Severity::Error, n)));
        assert_eq!(
            said(&consolidate(&mixed)),
            ["finding 0", "finding 1", "finding 2", "finding 3", "finding 4", "finding 5", "1 more error c"]
        );
        assert!(consolidate(&[]).is_empty());
    }

    #[test]
    fn the_line_counts_exactly_with_thousands_and_names_the_lint_command() {
        let all: Vec<Diagnostic> = (0..10_001).map(|n| at("dlx-unroutable", Severity::Warning, n)).collect();
        let text = render_beside(&all, &Sources::default(), Style { color: false, width: 100 }, |_| "warren lint topo");
        assert_eq!(text.matches("warren::dlx-unroutable").count(), 3, "{text}");
        assert!(
            text.contains(
                "  … and 9,998 more warnings like this (dlx-unroutable): `warren lint topo` lists them all\n"
            ),
            "{text}"
        );
        let four: Vec<Diagnostic> = (0..4).map(|n| at("unknown-key", Severity::Error, n)).collect();
        let text = render_beside(&four, &Sources::default(), Style { color: false, width: 100 }, |_| "warren lint t");
        assert!(text.contains("… and 1 more error like this (unknown-key): `warren lint t` lists them all"), "{text}");
    }

    #[test]
    fn thousands_are_separated() {
        for (n, s) in [(0, "0"), (999, "999"), (1_000, "1,000"), (99_998, "99,998"), (1_234_567, "1,234,567")] {
            assert_eq!(thousands(n), s);
        }
    }

    /// The drawing from the lines around a span is the drawing from the
    /// whole file: the same numbers, the same context, at the file's edges
    /// too.
    #[test]
    fn a_diagnostic_drawn_from_its_lines_is_drawn_as_from_the_whole_file() {
        let mut text = String::new();
        for i in 0..200 {
            text += &format!("[queues.\"q{i}\"]\ntype = \"classic\"\n\n");
        }
        text += "last = 1";
        let mut sources = Sources::default();
        let file = sources.add(std::path::Path::new("t/big.toml"), text.clone());
        let style = Style { color: false, width: 100 };
        let spans = [
            0..1,
            text.find("q57").unwrap()..text.find("q57").unwrap() + 3,
            // Over three lines.
            text.find("[queues.\"q120\"]").unwrap()..text.find("[queues.\"q121\"]").unwrap(),
            text.len() - 1..text.len(),
            text.len()..text.len(),
        ];
        for span in spans {
            let d = Diagnostic::warning("c", "m").at(Location { file, span: span.clone() }).label("here").help("h");
            let whole = {
                let handler = handler(style);
                let mut out = String::new();
                let named = miette::NamedSource::new("t/big.toml", text.clone());
                let report = Whole { inner: Report::new(&d, &sources), text: named, span: span.clone() };
                let _ = handler.render_report(&mut out, &report);
                out.push('\n');
                out
            };
            assert_eq!(render(std::slice::from_ref(&d), &sources, style), whole, "{span:?}");
        }
    }

    /// The old drawing: miette given the whole file.
    struct Whole<'a> {
        inner: Report<'a>,
        text: miette::NamedSource<String>,
        span: std::ops::Range<usize>,
    }

    impl fmt::Debug for Whole<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Debug::fmt(&self.inner, f)
        }
    }
    impl fmt::Display for Whole<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Display::fmt(&self.inner, f)
        }
    }
    impl std::error::Error for Whole<'_> {}
    impl miette::Diagnostic for Whole<'_> {
        fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
            self.inner.code()
        }
        fn severity(&self) -> Option<miette::Severity> {
            self.inner.severity()
        }
        fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
            self.inner.help()
        }
        fn source_code(&self) -> Option<&dyn SourceCode> {
            Some(&self.text)
        }
        fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
            let label = self.inner.label.as_ref().and_then(|l| l.label().map(str::to_string));
            let span = SourceSpan::from(self.span.clone());
            Some(Box::new(std::iter::once(LabeledSpan::new_with_span(label, span))))
        }
    }
}
