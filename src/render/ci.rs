//! Findings as CI systems take them: GitHub's workflow commands (one
//! annotation per finding, at its file, line and column) with a markdown
//! step summary, and GitLab's code quality report. Renderings of a
//! [`LintDocument`]: nothing is computed here but the text.

use sha2::{Digest, Sha256};

use super::document::{DiagnosticDoc, PlanDocument};
use super::lint::{FindingDoc, LintDocument, summary_line};
use crate::diagnostic::Severity;

/// The findings shown (not those allowed), errors first.
fn shown(doc: &LintDocument) -> Vec<&FindingDoc> {
    let mut out: Vec<&FindingDoc> = doc.findings.iter().filter(|f| f.allowed.is_none()).collect();
    out.sort_by_key(|f| f.severity);
    out
}

/// A workflow command's message: GitHub reads `%`, CR and LF as escapes.
fn escape_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// A workflow command's property value: also `:` and `,`, which end it.
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// One `::error file=…,line=…,col=…,title=CODE::message` line per finding.
pub fn github(doc: &LintDocument) -> String {
    shown(doc)
        .into_iter()
        .map(|f| {
            let place = Place { file: f.file.as_deref(), line: f.line, column: f.column };
            annotation(f.severity, &place, f.environment.as_deref(), &f.code, &f.message, f.help.as_deref())
        })
        .collect()
}

/// The errors and warnings of a plan as annotations, errors first.
pub fn plan_github(doc: &PlanDocument) -> String {
    let of = |severity: Severity, list: &[DiagnosticDoc]| -> String {
        list.iter()
            .map(|d| {
                let place = Place { file: d.file.as_deref(), line: d.line, column: d.column };
                let env = doc.origin.environment.as_deref();
                annotation(severity, &place, env, &d.code, &d.message, d.help.as_deref())
            })
            .collect()
    };
    of(Severity::Error, &doc.errors) + &of(Severity::Warning, &doc.warnings)
}

/// Where an annotation points.
struct Place<'a> {
    file: Option<&'a str>,
    line: Option<usize>,
    column: Option<usize>,
}

/// One workflow command: `::error file=…,line=…,col=…,title=…::message`.
fn annotation(
    severity: Severity,
    at: &Place,
    environment: Option<&str>,
    code: &str,
    message: &str,
    help: Option<&str>,
) -> String {
    let command = match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    };
    let mut properties = Vec::new();
    if let Some(file) = at.file {
        properties.push(format!("file={}", escape_property(file)));
    }
    if let Some(line) = at.line {
        properties.push(format!("line={line}"));
    }
    if let Some(column) = at.column {
        properties.push(format!("col={column}"));
    }
    let title = match environment {
        Some(env) => format!("warren {code} ({env})"),
        None => format!("warren {code}"),
    };
    properties.push(format!("title={}", escape_property(&title)));
    let message = with_help(message, help);
    format!("::{command} {}::{}\n", properties.join(","), escape_data(&message))
}

/// The findings as a markdown table, for `$GITHUB_STEP_SUMMARY`.
pub fn markdown(doc: &LintDocument, title: &str) -> String {
    format!("### {title}\n\n{}\n", summary_line(&doc.summary)) + &table(&shown(doc))
}

/// The findings as a markdown table (nothing when there are none): each
/// one's severity, code, place and message.
pub fn table(found: &[&FindingDoc]) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    if found.is_empty() {
        return String::new();
    }
    let mut out = "\n| severity | code | where | message |\n|---|---|---|---|\n".to_string();
    for f in found {
        let place = match (&f.file, f.line) {
            (Some(file), Some(line)) => format!("`{file}:{line}`"),
            (Some(file), None) => format!("`{file}`"),
            _ => String::new(),
        };
        let place = match &f.environment {
            Some(env) => format!("{env}: {place}"),
            None => place,
        };
        out += &format!("| {} | `{}` | {} | {} |\n", f.severity.as_str(), f.code, cell(&place), cell(&f.message));
    }
    out
}

/// GitLab's code quality report: a JSON array, each finding with a
/// fingerprint that stays the same from run to run (its code, file and
/// message, and which of the same it is: not its line, which moves with
/// every edit above it), so that GitLab tells new findings from old ones.
/// A finding with no file is placed at `path`, what the command was given.
pub fn gitlab(doc: &LintDocument, path: &str) -> String {
    let mut prints = Fingerprints::default();
    let list: Vec<serde_json::Value> = shown(doc)
        .into_iter()
        .map(|f| {
            let file = f.file.as_deref().unwrap_or(path);
            let print = prints.next(f, file);
            let severity = match f.severity {
                Severity::Error => "major",
                Severity::Warning => "minor",
                Severity::Info => "info",
            };
            serde_json::json!({
                "description": f.message,
                "check_name": f.code,
                "fingerprint": print,
                "severity": severity,
                "location": { "path": file, "lines": { "begin": f.line.unwrap_or(1) } },
            })
        })
        .collect();
    serde_json::to_string_pretty(&list).expect("a report serialises") + "\n"
}

/// SARIF 2.1.0, for code scanning: one run of warren, a rule per code met
/// (its id the code, stable), each finding a result at its file, line and
/// column with a fingerprint that stays from run to run; the findings an
/// exception allows are results with an in-source suppression.
pub fn sarif(doc: &LintDocument) -> String {
    let mut rules: Vec<&str> = doc.findings.iter().map(|f| f.code.as_str()).collect();
    rules.sort_unstable();
    rules.dedup();
    let rule_docs: Vec<serde_json::Value> = rules
        .iter()
        .map(|code| {
            let rule = crate::lint::rules::rule_of(code);
            // A failed routing test (`warren test`) is no rule of the lint.
            let (summary, help) = match rule {
                Some(r) => (r.summary, format!("docs/lint.md, section `{code}`")),
                None if *code == "route-test" => {
                    ("a routing test failed", "docs/routing.md, section Routing tests".to_string())
                }
                None => ("a problem in the topology files", "docs/format.md, section Errors".to_string()),
            };
            let mut r = serde_json::json!({
                "id": code,
                "shortDescription": {"text": summary},
                "help": {"text": help},
            });
            if let Some(rule) = rule {
                r["defaultConfiguration"] = serde_json::json!({"level": level(rule.severity)});
            }
            r
        })
        .collect();
    let mut prints = Fingerprints::default();
    let results: Vec<serde_json::Value> = doc
        .findings
        .iter()
        .map(|f| {
            let print = prints.next(f, f.file.as_deref().unwrap_or(""));
            let text = with_help(&f.message, f.help.as_deref());
            let mut r = serde_json::json!({
                "ruleId": f.code,
                "ruleIndex": rules.iter().position(|c| *c == f.code).expect("every code has a rule"),
                "level": level(f.severity),
                "message": {"text": text},
                "partialFingerprints": {"warren/v1": print},
            });
            if let Some(file) = &f.file {
                let mut region = serde_json::Map::new();
                if let Some(l) = f.line {
                    region.insert("startLine".into(), l.into());
                }
                if let Some(c) = f.column {
                    region.insert("startColumn".into(), c.into());
                }
                r["locations"] =
                    serde_json::json!([{"physicalLocation": {"artifactLocation": {"uri": file}, "region": region}}]);
            }
            if let Some(shape) = &f.shape {
                r["relatedLocations"] = related(shape);
            }
            if f.allowed.is_some() {
                r["suppressions"] = serde_json::json!([{"kind": "inSource"}]);
            }
            r
        })
        .collect();
    let sarif = serde_json::json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "warren", "version": env!("CARGO_PKG_VERSION"), "rules": rule_docs}},
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&sarif).expect("a SARIF log serialises") + "\n"
}

/// For what a stamp made (the result is at the shape's line): the stamp
/// the user wrote, and the shape's table, as SARIF's related locations.
fn related(shape: &super::ShapeDoc) -> serde_json::Value {
    let places = [
        (&shape.stamped_at, format!("the stamp of shape \"{}\" that made it", shape.name)),
        (&shape.defined_at, format!("shape \"{}\"", shape.name)),
    ];
    let locations: Vec<serde_json::Value> = places
        .iter()
        .enumerate()
        .filter_map(|(id, (at, text))| {
            // `path:line:column`, the path possibly holding `:` itself.
            let mut parts = at.rsplitn(3, ':');
            let (column, line, file) =
                (parts.next()?.parse::<u64>().ok()?, parts.next()?.parse::<u64>().ok()?, parts.next()?);
            Some(serde_json::json!({
                "id": id,
                "physicalLocation": {
                    "artifactLocation": {"uri": file},
                    "region": {"startLine": line, "startColumn": column},
                },
                "message": {"text": text},
            }))
        })
        .collect();
    serde_json::Value::Array(locations)
}

/// Fingerprints that stay the same from run to run: a finding's code,
/// environment, file and message, and which of the same it is (not its
/// line, which moves with every edit above it).
#[derive(Default)]
struct Fingerprints {
    seen: std::collections::HashMap<String, usize>,
}

impl Fingerprints {
    fn next(&mut self, f: &FindingDoc, file: &str) -> String {
        let what = format!("{}\n{}\n{file}\n{}", f.code, f.environment.as_deref().unwrap_or(""), f.message);
        let nth = self.seen.entry(what.clone()).or_default();
        *nth += 1;
        Sha256::digest(format!("{what}\n{nth}").as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A finding's message with its help on the next line.
fn with_help(message: &str, help: Option<&str>) -> String {
    match help {
        Some(help) => format!("{message}\n{help}"),
        None => message.to_string(),
    }
}

/// SARIF's word for a severity.
fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_commands_escape_what_github_reads() {
        assert_eq!(escape_data("50% a\nb\r"), "50%25 a%0Ab%0D");
        assert_eq!(escape_property("a:b,c%"), "a%3Ab%2Cc%25");
    }
}
