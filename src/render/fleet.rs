//! The plans of several environments as one report: a summary table, then
//! each environment's plan or the error that kept it from one. JSON,
//! human and markdown views are drawn from the same [`FleetDocument`].

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::document::{DiagnosticDoc, FORMAT_VERSION, PlanDocument};
use super::{Format, human, markdown};
use crate::diff::Action;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetDocument {
    pub format_version: String,
    /// The topology directory every environment's files start from.
    pub desired: String,
    pub environments: Vec<EnvironmentDoc>,
}

/// One environment: its plan, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentDoc {
    pub name: String,
    /// The management API's address, without credentials; empty when its
    /// variable is not set.
    pub broker: String,
    /// Whether the broker differs from the environment's files; absent
    /// without a plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift: Option<bool>,
    /// True when warren has never applied the project to this broker (its
    /// records hold nothing of it): the broker differs from the files
    /// because nothing was applied yet, not because it drifted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub never_applied: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanDocument>,
    /// What kept it from a plan: its files' errors, or the broker's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<DiagnosticDoc>,
    /// Without a plan (which holds them), the warnings of its files: the
    /// machine formats draw none on stderr.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<DiagnosticDoc>,
}

impl EnvironmentDoc {
    pub fn planned(name: &str, broker: &str, plan: PlanDocument) -> Self {
        let drift = Some(plan.has_changes());
        EnvironmentDoc {
            name: name.into(),
            broker: broker.into(),
            drift,
            never_applied: false,
            plan: Some(plan),
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    pub fn failed(name: &str, broker: &str, errors: Vec<DiagnosticDoc>, warnings: Vec<DiagnosticDoc>) -> Self {
        EnvironmentDoc {
            name: name.into(),
            broker: broker.into(),
            drift: None,
            never_applied: false,
            plan: None,
            errors,
            warnings,
        }
    }
}

impl FleetDocument {
    pub fn new(desired: &str, environments: Vec<EnvironmentDoc>) -> Self {
        FleetDocument { format_version: FORMAT_VERSION.into(), desired: desired.into(), environments }
    }

    /// True when some environment could not be planned.
    pub fn has_errors(&self) -> bool {
        self.environments.iter().any(|e| e.plan.is_none())
    }

    /// True when some environment's plan changes its broker.
    pub fn has_changes(&self) -> bool {
        self.environments.iter().any(|e| e.drift == Some(true))
    }
}

/// The report in the chosen format.
pub fn render(doc: &FleetDocument, format: Format, color: bool) -> String {
    match format {
        Format::Human => render_human(doc, color),
        Format::Json => serde_json::to_string_pretty(doc).expect("a fleet document always serialises") + "\n",
        Format::Markdown => render_markdown(doc),
        Format::Github => {
            let annotations: String =
                doc.environments.iter().filter_map(|e| e.plan.as_ref()).map(super::ci::plan_github).collect();
            annotations + &render_human(doc, false)
        }
    }
}

/// One row per environment: its counts and drift, or its first error.
fn table(doc: &FleetDocument) -> Vec<[String; 7]> {
    let mut rows = vec![["ENVIRONMENT", "BROKER", "ADD", "CHANGE", "DESTROY", "MIGRATE", "DRIFT"].map(String::from)];
    for e in &doc.environments {
        let broker = if e.broker.is_empty() { "-".to_string() } else { e.broker.clone() };
        match &e.plan {
            Some(p) => {
                let s = &p.summary;
                let drift = match (e.drift == Some(true), s.outside) {
                    (false, _) => "no".to_string(),
                    (true, 0) if e.never_applied => "never applied".to_string(),
                    (true, 0) => "yes".to_string(),
                    (true, n) => format!("yes ({n} changed outside warren)"),
                };
                rows.push([
                    e.name.clone(),
                    broker,
                    s.add.to_string(),
                    s.change.to_string(),
                    s.destroy.to_string(),
                    s.migrate.to_string(),
                    drift,
                ]);
            }
            None => {
                let message = e.errors.first().map_or("no plan".to_string(), |d| format!("error: {}", d.message));
                rows.push([
                    e.name.clone(),
                    broker,
                    message,
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
            }
        }
    }
    rows
}

/// The last line: how many were planned, and what all of them would do.
pub fn summary_line(doc: &FleetDocument) -> String {
    let planned: Vec<&PlanDocument> = doc.environments.iter().filter_map(|e| e.plan.as_ref()).collect();
    let failed = doc.environments.len() - planned.len();
    let sum = |f: fn(&PlanDocument) -> usize| planned.iter().map(|p| f(p)).sum::<usize>();
    let changing = doc.environments.iter().filter(|e| e.drift == Some(true)).count();
    let mut line = match failed {
        0 if planned.len() == 1 => "1 environment planned".to_string(),
        0 => format!("{} environments planned", planned.len()),
        _ => format!("{} of {} environments planned ({failed} could not be)", planned.len(), doc.environments.len()),
    };
    if planned.is_empty() {
        line += ".";
    } else if changing == 0 {
        line += ": no changes.";
    } else {
        let _ = write!(
            line,
            "; {changing} with changes: {} to add, {} to change, {} to destroy, {} to migrate in all.",
            sum(|p| p.summary.add),
            sum(|p| p.summary.change),
            sum(|p| p.summary.destroy),
            sum(|p| p.summary.migrate)
        );
    }
    line
}

fn render_human(doc: &FleetDocument, color: bool) -> String {
    let mut out = format!("Plans of {} environments of {}:\n\n", doc.environments.len(), doc.desired);
    let rows = table(doc);
    // An error's row spans the count columns: it does not widen them.
    let width = |i: usize| rows.iter().filter(|r| i < 2 || !r[3].is_empty()).map(|r| r[i].chars().count()).max();
    let widths: Vec<usize> = (0..6).map(|i| width(i).unwrap_or(0)).collect();
    for (n, r) in rows.iter().enumerate() {
        let mut line = String::from(" ");
        for (i, cell) in r.iter().enumerate() {
            // An error runs on across the count columns.
            let error = n > 0 && i == 2 && r[3].is_empty();
            match i {
                _ if error => line += &format!(" {cell}"),
                0 | 1 => line += &format!(" {cell:<w$}", w = widths[i]),
                6 => line += &format!(" {cell}"),
                _ => line += &format!(" {cell:>w$}", w = widths[i]),
            }
            if error {
                break;
            }
        }
        out += line.trim_end();
        out += "\n";
    }
    for e in &doc.environments {
        let broker = if e.broker.is_empty() { String::new() } else { format!(" ({})", e.broker) };
        let _ = writeln!(out, "\n── environment {}{broker} ──\n", e.name);
        match &e.plan {
            Some(p) => out += &human::render(p, color),
            None => {
                for d in &e.errors {
                    let _ = writeln!(out, "error: {}", located(d));
                    if let Some(h) = &d.help {
                        let _ = writeln!(out, "  help: {h}");
                    }
                }
            }
        }
    }
    out += "\n";
    out += &summary_line(doc);
    out += "\n";
    out
}

/// `file:line:column: message`, or the message alone.
fn located(d: &DiagnosticDoc) -> String {
    match (&d.file, d.line, d.column) {
        (Some(f), Some(l), Some(c)) => format!("{f}:{l}:{c}: {}", d.message),
        _ => d.message.clone(),
    }
}

/// The environments whose plan loses something, each with how many of
/// its changes do: what is destroyed or recreated, and permissions that
/// grant less (made or updated, yet losing access).
fn losing(doc: &FleetDocument) -> Vec<String> {
    let loses =
        |c: &&super::ChangeDoc| matches!(c.action, Action::Destroy | Action::Replace) || c.requires_allow_destroy;
    let count = |e: &EnvironmentDoc| e.plan.as_ref().map_or(0, |p| p.changes.iter().filter(loses).count());
    doc.environments.iter().filter(|e| count(e) > 0).map(|e| format!("{} ({})", e.name, count(e))).collect()
}

fn render_markdown(doc: &FleetDocument) -> String {
    let project = doc.environments.iter().find_map(|e| Some(e.plan.as_ref()?.origin.project.clone()));
    let names: Vec<&str> = doc.environments.iter().map(|e| e.name.as_str()).collect();
    let mut out = format!(
        "<!-- warren:plan project={} environments={} -->\n",
        project.as_deref().unwrap_or("?"),
        names.join(",")
    );
    let _ = writeln!(out, "### warren plan for `{}`: {} environments\n", doc.desired, doc.environments.len());
    // What loses something comes first, as in one environment's comment:
    // the sections below may be cut.
    let losing = losing(doc);
    if !losing.is_empty() {
        let _ = writeln!(
            out,
            "> [!WARNING]\n> Objects will be **destroyed or recreated**, or access taken away, in: {}.\n",
            losing.join(", ")
        );
    }
    let _ = writeln!(out, "**{}**\n", summary_line(doc));
    let rows = table(doc);
    for (n, r) in rows.iter().enumerate() {
        let cells: Vec<String> = r.iter().map(|c| c.replace('|', "\\|")).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
        if n == 0 {
            out += "|---|---|--:|--:|--:|--:|---|\n";
        }
    }
    out += "\n";
    // The environments share one comment: each takes an equal part of what
    // is left, and what one leaves unused goes to the next.
    let mut left = doc.environments.len();
    for e in &doc.environments {
        let room = markdown::LIMIT.saturating_sub(out.chars().count() + RESERVE) / left.max(1);
        left -= 1;
        let mut section = String::new();
        match &e.plan {
            Some(p) => {
                let title = format!("<details><summary><b>{}</b>: {}</summary>\n\n", e.name, human::summary_line(p));
                let end = "\n</details>\n\n";
                let inner = room.saturating_sub(title.chars().count() + end.len());
                // The environment's own comment, one heading down; when
                // even its head does not fit, a pointer to it.
                let body = Some(inner)
                    .filter(|n| *n >= MIN_SECTION)
                    .map(|n| markdown::body_within(p, n).replacen("### ", "#### ", 1))
                    .filter(|b| b.chars().count() <= inner)
                    .unwrap_or_else(|| {
                        format!("Too many environments to show this plan here: run `warren plan --env {}`.\n", e.name)
                    });
                section += &title;
                section += &body;
                section += end;
            }
            None => {
                let _ = writeln!(section, "- :x: **{}**: no plan", e.name);
                for (i, d) in e.errors.iter().enumerate() {
                    let line = format!("  - {} (`{}`)\n", located(d), d.code);
                    if section.chars().count() + line.chars().count() > room {
                        let _ = writeln!(section, "  - … and {} more", e.errors.len() - i);
                        break;
                    }
                    section += &line;
                }
                section += "\n";
            }
        }
        out += &section;
    }
    out
}

/// What the comment keeps for the note of an environment cut short.
const RESERVE: usize = 200;

/// The least room in which an environment's plan is worth showing: below
/// it, its section says how to see it.
const MIN_SECTION: usize = 1_500;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::document::{ChangeDoc, Origin, SummaryDoc};

    fn diagnostic(i: usize) -> DiagnosticDoc {
        DiagnosticDoc {
            code: "dlx-missing".into(),
            message: format!("queue \"q{i}\" dead-letters to exchange \"gone\", which no file declares"),
            help: None,
            file: Some("topology/shop.toml".into()),
            line: Some(i),
            column: Some(1),
            shape: None,
        }
    }

    /// A plan that adds `n` queues and destroys one, with `n / 10` warnings.
    fn large_plan(n: usize) -> PlanDocument {
        let change = |i: usize, action: Action| ChangeDoc {
            address: format!("queue \"q{i}\" in vhost \"shop\""),
            kind: "queue".into(),
            vhost: Some("shop".into()),
            name: format!("q{i}"),
            action,
            reason: "declared in the files".into(),
            requires_allow_destroy: false,
            requires_allow_lockout: false,
            before: None,
            after: Some([("type".to_string(), serde_json::json!("classic"))].into()),
            rebind: vec![],
            migration: None,
            rollback: None,
            owner: None,
            super_stream: None,
            services: Vec::new(),
            shape: None,
        };
        let mut changes: Vec<ChangeDoc> = (0..n).map(|i| change(i, Action::Create)).collect();
        changes.push(change(n, Action::Destroy));
        PlanDocument {
            format_version: FORMAT_VERSION.into(),
            desired: "topology".into(),
            live: "http://broker:15672".into(),
            summary: SummaryDoc {
                add: n,
                change: 0,
                destroy: 1,
                migrate: 0,
                rollback: 0,
                unmanaged: 0,
                other_project: 0,
                forget: 0,
                outside: 0,
                requires_allow_destroy: false,
                requires_allow_lockout: false,
            },
            changes,
            errors: vec![],
            warnings: (0..n / 10).map(diagnostic).collect(),
            migrations_in_flight: vec![],
            routing: vec![],
            changed_outside: vec![],
            not_read: vec![],
            origin: Origin { project: "shop".into(), ..Origin::default() },
        }
    }

    #[test]
    fn the_drift_of_an_environment_never_applied_says_so() {
        // Seen: DRIFT said `yes` for an environment warren had never applied.
        let mut never = EnvironmentDoc::planned("staging", "http://a:15672", large_plan(2));
        never.never_applied = true;
        let drifted = EnvironmentDoc::planned("prod", "http://b:15672", large_plan(2));
        let mut same = large_plan(0);
        same.changes.clear();
        same.summary.destroy = 0;
        let mut empty = EnvironmentDoc::planned("qa", "http://c:15672", same);
        empty.never_applied = true;
        let doc = FleetDocument::new("topology", vec![never, drifted, empty]);
        let rows = table(&doc);
        let drift: Vec<(&str, &str)> = rows[1..].iter().map(|r| (r[0].as_str(), r[6].as_str())).collect();
        assert_eq!(drift, [("staging", "never applied"), ("prod", "yes"), ("qa", "no")]);
        for format in [Format::Human, Format::Markdown] {
            let text = render(&doc, format, false);
            assert!(text.contains("never applied"), "{format:?}:\n{text}");
        }
        let json = render(&doc, Format::Json, false);
        assert_eq!(json.matches("\"never_applied\": true").count(), 2, "{json}");
    }

    #[test]
    fn one_environment_is_counted_in_the_singular() {
        let mut same = large_plan(0);
        same.changes.clear();
        same.summary.destroy = 0;
        let one = vec![EnvironmentDoc::planned("qa", "http://c:15672", same)];
        assert_eq!(summary_line(&FleetDocument::new("topology", one)), "1 environment planned: no changes.");
    }

    #[test]
    fn a_fleet_comment_fits_github_and_names_every_environment() {
        for count in [1, 3, 12, 60] {
            let mut environments: Vec<EnvironmentDoc> = (0..count)
                .map(|i| EnvironmentDoc::planned(&format!("env-{i}"), "http://broker:15672", large_plan(3_000)))
                .collect();
            let errors = (0..500).map(diagnostic).collect();
            environments.push(EnvironmentDoc::failed("broken", "http://down:15672", errors, vec![]));
            let md = render(&FleetDocument::new("topology", environments), Format::Markdown, false);
            let chars = md.chars().count();
            assert!(chars <= markdown::LIMIT, "{count} environments: {chars} characters");
            for i in 0..count {
                assert!(md.contains(&format!("<b>env-{i}</b>: Plan: 3000 to add")), "{count}: env-{i} is named");
            }
            assert!(md.contains("**broken**: no plan") && md.contains("… and "), "{count}: errors cut, said");
            assert_eq!(md.matches("<details>").count(), md.matches("</details>").count(), "{count}: folds closed");
            assert!(
                md.contains("**destroyed or recreated**, or access taken away, in: env-0 (1)"),
                "{count}: destroys first"
            );
            if count <= 3 {
                assert!(md.contains("will be **destroyed**: queue \"q3000\""), "{count}: the destroy is told");
            }
        }
    }
}
