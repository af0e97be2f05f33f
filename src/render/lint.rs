//! `warren lint`'s report as data: every finding, shown or allowed, with
//! where it is and where the exception that allows it is. The JSON format
//! is this document; CI formats are renderings of it.

use serde::Serialize;

use crate::diagnostic::{Diagnostic, Severity};
use crate::lint::Allowed;
use crate::lint::rules::{RULES, Reads};
use crate::source::{Location, Sources};

pub const FORMAT_VERSION: &str = "1";

/// `--format` of `warren lint` and `warren validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LintFormat {
    /// Each finding drawn at its source line.
    Human,
    /// The whole document (see docs/lint.md).
    Json,
    /// GitHub Actions annotations, and the findings in $GITHUB_STEP_SUMMARY when it is set.
    Github,
    /// GitLab's code quality report (JSON).
    Gitlab,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
}

#[derive(Debug, Clone, Serialize)]
pub struct LintDocument {
    pub format_version: String,
    pub findings: Vec<FindingDoc>,
    pub summary: LintSummary,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LintSummary {
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    /// Findings an exception allows (`lint_allow`, or a rule turned off).
    pub allowed: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct FindingDoc {
    /// The environment whose merged topology or broker it is about; none
    /// for the base files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    pub code: String,
    #[serde(serialize_with = "severity_word")]
    pub severity: Severity,
    pub message: String,
    pub help: Option<String>,
    pub file: Option<String>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// Where the exception that allows it is written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed: Option<PlaceDoc>,
    /// For what a stamp of a shape made (the place above is then in the
    /// shape): the shape, and the stamp the user wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<super::ShapeDoc>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PlaceDoc {
    pub file: String,
    pub line: usize,
    pub column: usize,
}

impl PlaceDoc {
    fn new(l: &Location, sources: &Sources) -> Self {
        let (line, column) = sources.line_col(l);
        PlaceDoc { file: sources.get(l.file).path.display().to_string(), line, column }
    }
}

impl FindingDoc {
    fn new(d: &Diagnostic, environment: Option<&str>, sources: &Sources, allowed: Option<&Location>) -> Self {
        let at = d.location.as_ref().map(|l| PlaceDoc::new(l, sources));
        FindingDoc {
            environment: environment.map(str::to_string),
            code: d.code.to_string(),
            severity: d.severity,
            message: d.message.clone(),
            help: d.help.clone(),
            file: at.as_ref().map(|p| p.file.clone()),
            line: at.as_ref().map(|p| p.line),
            column: at.as_ref().map(|p| p.column),
            allowed: allowed.map(|l| PlaceDoc::new(l, sources)),
            shape: d.location.as_ref().and_then(|l| super::ShapeDoc::of(l, sources)),
        }
    }
}

impl LintDocument {
    pub fn new() -> Self {
        LintDocument { format_version: FORMAT_VERSION.into(), findings: Vec::new(), summary: LintSummary::default() }
    }

    /// Adds one target's findings: the base files (`environment` none) or
    /// an environment's.
    pub fn add(&mut self, environment: Option<&str>, shown: &[Diagnostic], allowed: &[Allowed], sources: &Sources) {
        for d in shown {
            match d.severity {
                Severity::Error => self.summary.errors += 1,
                Severity::Warning => self.summary.warnings += 1,
                Severity::Info => self.summary.infos += 1,
            }
            self.findings.push(FindingDoc::new(d, environment, sources, None));
        }
        for a in allowed {
            self.summary.allowed += 1;
            self.findings.push(FindingDoc::new(&a.finding, environment, sources, Some(&a.by)));
        }
    }

    /// Counts findings in the summary without listing them: `validate`'s
    /// warnings and infos, which `warren lint` lists.
    pub fn count<'a>(&mut self, not_listed: impl IntoIterator<Item = &'a Diagnostic>) {
        for d in not_listed {
            match d.severity {
                Severity::Error => self.summary.errors += 1,
                Severity::Warning => self.summary.warnings += 1,
                Severity::Info => self.summary.infos += 1,
            }
        }
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a lint document always serialises") + "\n"
    }
}

impl Default for LintDocument {
    fn default() -> Self {
        Self::new()
    }
}

/// `lint: 1 error, 2 warnings, 0 infos, 1 allowed.`
pub fn summary_line(s: &LintSummary) -> String {
    format!("lint: {} error(s), {} warning(s), {} info(s), {} allowed.", s.errors, s.warnings, s.infos, s.allowed)
}

/// Every rule, for `warren lint --rules`: as a table, or as JSON.
pub fn rules(json: bool) -> String {
    let reads = |r: Reads| match r {
        Reads::Files => "files",
        Reads::Broker => "broker",
        Reads::Both => "files, broker",
    };
    if json {
        let list: Vec<serde_json::Value> = RULES
            .iter()
            .map(|r| {
                serde_json::json!({
                    "code": r.code, "severity": r.severity.as_str(), "reads": reads(r.reads), "summary": r.summary,
                })
            })
            .collect();
        return serde_json::to_string_pretty(&list).expect("rules serialise") + "\n";
    }
    let width = RULES.iter().map(|r| r.code.len()).max().unwrap_or(0);
    let mut out = String::new();
    for r in RULES {
        out += &format!("{:width$}  {:7}  {:13}  {}\n", r.code, r.severity.as_str(), reads(r.reads), r.summary);
    }
    out + "Every rule is described in docs/lint.md.\n"
}

/// A severity as its word: `error`, `warning`, `info`.
fn severity_word<S: serde::Serializer>(severity: &Severity, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(severity.as_str())
}
