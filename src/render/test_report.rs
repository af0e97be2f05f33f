//! `warren test`'s report as data: every routing test with where its
//! message went and what failed, and the problems that kept tests from
//! running. The JSON format is this document (docs/schema/test-report.schema.json);
//! the CI formats render its failures and problems as findings (code
//! `route-test` for a failed expectation) through [`super::ci`].

use serde::Serialize;

use super::lint::{FindingDoc, LintDocument};
use crate::desired::expect::{Expectation, Subject, WantKind};
use crate::diagnostic::{Diagnostic, Severity};
use crate::route_test::Outcome;
use crate::routing::Route;
use crate::source::Sources;

pub const FORMAT_VERSION: &str = "1";

/// `--format` of `warren test`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TestFormat {
    /// Each failure drawn at the expectation it breaks, and a summary line.
    Human,
    /// The whole report (docs/schema/test-report.schema.json).
    Json,
    /// GitHub Actions annotations, and the report in $GITHUB_STEP_SUMMARY when it is set.
    Github,
    /// GitLab's code quality report (JSON).
    Gitlab,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// A markdown summary, for a pull-request comment.
    Markdown,
}

#[derive(Debug, Clone, Serialize)]
pub struct TestDocument {
    pub format_version: String,
    /// `files`, or `broker` with `--live`.
    pub against: &'static str,
    pub tests: Vec<TestDoc>,
    /// Problems of the files that kept tests from running, as `validate`
    /// lists them.
    pub errors: Vec<FindingDoc>,
    pub summary: TestSummary,
    /// The failures as findings, for the CI formats.
    #[serde(skip)]
    failed: Vec<FindingDoc>,
    /// Whether the tests that passed are listed (the JSON report); the
    /// other formats show failures alone.
    #[serde(skip)]
    all: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TestSummary {
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct TestDoc {
    /// The environment whose topology it ran on; none for the base files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    pub file: String,
    pub line: usize,
    pub column: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `route` or `dead_letters`.
    pub kind: &'static str,
    pub vhost: String,
    /// What is routed, as a user reads it.
    pub subject: String,
    pub passed: bool,
    /// Where it went, in one line.
    pub actual: String,
    /// The queues reached, the path, and where the message is dropped or
    /// the model cannot tell.
    pub route: Route,
    pub failures: Vec<FailureDoc>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FailureDoc {
    /// The outcome stated: `exactly`, `at_least`, `none_of`, `nothing`.
    pub expected: WantKind,
    pub line: usize,
    pub column: usize,
    pub not_reached: Vec<String>,
    pub unexpected: Vec<String>,
    /// The model cannot tell every queue reached.
    pub uncertain: bool,
}

impl TestDocument {
    /// A report over the files or the broker (`live`); `all`: with every
    /// test, passed or not, as the JSON report lists them.
    pub fn new(live: bool, all: bool) -> Self {
        TestDocument {
            format_version: FORMAT_VERSION.into(),
            against: if live { "broker" } else { "files" },
            tests: Vec::new(),
            errors: Vec::new(),
            summary: TestSummary::default(),
            failed: Vec::new(),
            all,
        }
    }

    /// Adds problems that kept tests from running (errors only).
    pub fn add_errors(&mut self, environment: Option<&str>, errors: &[Diagnostic], sources: &Sources) {
        let mut doc = LintDocument::new();
        doc.add(environment, errors, &[], sources);
        self.summary.errors += doc.findings.len();
        self.errors.extend(doc.findings);
    }

    /// Adds one test's outcome; `failures`: its failures as diagnostics.
    pub fn add(
        &mut self,
        environment: Option<&str>,
        e: &Expectation,
        outcome: &Outcome,
        failures: &[Diagnostic],
        sources: &Sources,
    ) {
        if outcome.passed() {
            self.summary.passed += 1;
            if !self.all {
                return;
            }
        } else {
            self.summary.failed += 1;
            let mut doc = LintDocument::new();
            doc.add(environment, failures, &[], sources);
            self.failed.extend(doc.findings);
        }
        let failures = outcome
            .failures
            .iter()
            .map(|f| {
                let (line, column) = sources.line_col(&f.at);
                FailureDoc {
                    expected: f.want,
                    line,
                    column,
                    not_reached: f.missing.clone(),
                    unexpected: f.unexpected.clone(),
                    uncertain: f.uncertain,
                }
            })
            .collect();
        let (line, column) = sources.line_col(&e.at);
        self.tests.push(TestDoc {
            environment: environment.map(str::to_string),
            file: sources.get(e.at.file).path.display().to_string(),
            line,
            column,
            name: e.name.clone(),
            kind: match e.subject {
                Subject::Route { .. } => "route",
                Subject::DeadLetters { .. } => "dead_letters",
            },
            vhost: outcome.vhost.clone(),
            subject: crate::route_test::subject(e),
            passed: outcome.passed(),
            actual: outcome.actual.describe_for(e),
            route: outcome.actual.route.clone(),
            failures,
        });
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a test report always serialises") + "\n"
    }

    /// The errors and failures as findings, for the CI renderings.
    pub fn findings(&self) -> LintDocument {
        let mut doc = LintDocument::new();
        doc.findings = self.errors.iter().chain(&self.failed).cloned().collect();
        doc.summary.errors = doc.findings.iter().filter(|f| f.severity == Severity::Error).count();
        doc
    }

    /// The report as markdown: the summary line, then each failure and
    /// problem with its place.
    pub fn markdown(&self, title: &str) -> String {
        let listed = self.findings();
        let found: Vec<&FindingDoc> = listed.findings.iter().collect();
        format!("### {title}\n\n{}\n", summary_line(&self.summary)) + &super::ci::table(&found)
    }
}

/// `Tests: 12 passed, 1 failed.`, with the errors that kept tests from
/// running when there are some.
pub fn summary_line(s: &TestSummary) -> String {
    let errors = match s.errors {
        0 => String::new(),
        1 => ", 1 error in the files".to_string(),
        n => format!(", {n} errors in the files"),
    };
    format!("Tests: {} passed, {} failed{errors}.", s.passed, s.failed)
}
