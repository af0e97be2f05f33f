//! Diagnostics: every problem warren finds in the user's files, with the
//! place it comes from and what to do about it.

use std::fmt;

use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceSpan};

use crate::source::{Location, Sources};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
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

/// The closest of `candidates` to `word`, when it is close enough to be a typo.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

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
/// line with the value underlined, and a help line.
pub fn render(diagnostics: &[Diagnostic], sources: &Sources, style: Style) -> String {
    let theme = if style.color { GraphicalTheme::unicode() } else { GraphicalTheme::unicode_nocolor() };
    let handler = GraphicalReportHandler::new_themed(theme).with_width(style.width).with_links(false);
    let mut out = String::new();
    for d in diagnostics {
        let report = Report::new(d, sources);
        // Writing into a String cannot fail.
        let _ = handler.render_report(&mut out, &report);
        out.push('\n');
    }
    out
}

/// A one-line form: `path:line:col: error[code]: message`, for logs and tests.
pub fn render_short(d: &Diagnostic, sources: &Sources) -> String {
    let sev = d.severity.as_str();
    match &d.location {
        Some(l) => format!("{}: {sev}[{}]: {}", sources.position(l), d.code, d.message),
        None => format!("{sev}[{}]: {}", d.code, d.message),
    }
}

/// The adapter that lets miette draw one [`Diagnostic`].
struct Report {
    message: String,
    code: String,
    severity: miette::Severity,
    help: Option<String>,
    source: Option<NamedSource<String>>,
    label: Option<LabeledSpan>,
}

impl Report {
    fn new(d: &Diagnostic, sources: &Sources) -> Self {
        let mut message = d.message.clone();
        let (source, label) = match &d.location {
            Some(l) if d.redact => {
                message = format!("{message} (at {})", sources.position(l));
                (None, None)
            }
            Some(l) => {
                let file = sources.get(l.file);
                let named = NamedSource::new(file.path.display().to_string(), file.text.to_string());
                let span = SourceSpan::from(l.span.start..l.span.end.max(l.span.start));
                (Some(named), Some(LabeledSpan::new_with_span(d.label.clone(), span)))
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

impl fmt::Debug for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Report {}

impl miette::Diagnostic for Report {
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
