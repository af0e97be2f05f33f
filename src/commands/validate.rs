//! `warren validate`: parse and check the files, print every finding.

use std::path::Path;

use crate::desired;
use crate::diagnostic::{Diagnostic, render};
use crate::error::{self, Done, Error};
use crate::output::Output;
use crate::render::lint::{LintDocument, LintFormat};
use crate::source::Sources;

/// Checks the base and, with `envs`, each environment it picks: its
/// topology with the overlays merged over the base. An environment shows
/// only what the base does not: its overlays' problems, and the findings
/// its merged topology adds.
pub fn run(path: &Path, envs: &[String], format: LintFormat, out: Output) -> error::Result {
    let human = format == LintFormat::Human;
    let mut base = desired::load_unchecked(path);
    if !envs.is_empty() {
        base.without_environment_problems();
    }
    // Environments merge their overlays over the files as read, before the
    // lint's findings; only they need that copy, which at 100,000 queues
    // is about a hundred megabytes.
    let unchecked = (!envs.is_empty()).then(|| base.clone());
    let found = desired::lint(&base);
    base.add_findings(found);
    let mut doc = LintDocument::new();
    doc.add(None, &base.diagnostics, &[], &base.sources);
    if human {
        show(&base.diagnostics, &base.sources, out);
    }
    let mut valid = report(&path.display().to_string(), &base.diagnostics, &base.diagnostics, &base.topology, human);
    let picked = if envs.is_empty() || base.project_unreadable() {
        Vec::new()
    } else {
        match base.project.select(envs) {
            Ok(p) => p,
            Err(d) => {
                show(&[d], &base.sources, out);
                return Err(Error::Invalid);
            }
        }
    };
    // Some exactly when environments were picked.
    if let Some(unchecked) = &unchecked {
        for env in picked {
            let merged = desired::environment(unchecked, path, env);
            let own = merged.beyond(&base.diagnostics);
            doc.add(Some(&env.name), &own, &[], &merged.sources);
            if human {
                show(&own, &merged.sources, out);
            }
            valid &= report(&format!("environment {}", env.name), &merged.diagnostics, &own, &merged.topology, human);
        }
    }
    if !human {
        super::findings::print(&doc, format, path, "warren validate");
    }
    if valid { Ok(Done::Ok) } else { Err(Error::Invalid) }
}

/// Says whether `what` is valid, with the count of its errors (`all`) and of
/// the warnings shown for it; true if it is. `say`: in words (the machine
/// formats are the whole of stdout).
fn report(what: &str, all: &[Diagnostic], shown: &[Diagnostic], topology: &crate::model::Topology, say: bool) -> bool {
    let errors = all.iter().filter(|d| d.is_error()).count();
    let warnings = shown.iter().filter(|d| d.severity == crate::diagnostic::Severity::Warning).count();
    let infos = shown.iter().filter(|d| d.severity == crate::diagnostic::Severity::Info).count();
    if errors > 0 {
        if say {
            eprintln!("{what} is not valid: {}.", counted(errors, warnings));
        }
        return false;
    }
    let said: Vec<String> = [(warnings, "warning"), (infos, "info")]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, word)| plural(n, word))
        .collect();
    let tail = if said.is_empty() { String::new() } else { format!(" ({})", said.join(", ")) };
    if say {
        println!("{what} is valid: {}{tail}.", summary(topology));
    }
    true
}

/// `1 vhost, 3 exchanges, 8 queues, 7 bindings, 2 policies, 0 users`.
pub fn summary(t: &crate::model::Topology) -> String {
    let sum = |f: fn(&crate::model::Vhost) -> usize| t.vhosts.values().map(f).sum::<usize>();
    [
        plural(t.vhosts.len(), "vhost"),
        plural(sum(|v| v.exchanges.len()), "exchange"),
        plural(sum(|v| v.queues.len()), "queue"),
        plural(sum(|v| v.bindings.len()), "binding"),
        plural(sum(|v| v.policies.len() + v.operator_policies.len()), "policy"),
        plural(t.users.len(), "user"),
    ]
    .join(", ")
}

/// Prints diagnostics on stderr; with `-q`, only the errors.
pub fn show(diagnostics: &[Diagnostic], sources: &Sources, out: Output) {
    let shown: Vec<Diagnostic> = diagnostics.iter().filter(|d| !out.quiet || d.is_error()).cloned().collect();
    eprint!("{}", render(&shown, sources, out.diagnostic_style()));
}

fn counted(errors: usize, warnings: usize) -> String {
    let mut s = plural(errors, "error");
    if warnings > 0 {
        s += &format!(" and {}", plural(warnings, "warning"));
    }
    s
}

/// `1 queue`, `2 queues`, `2 policies`.
pub fn plural(n: usize, word: &str) -> String {
    match (n, word.strip_suffix('y')) {
        (1, _) => format!("1 {word}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        _ => format!("{n} {word}s"),
    }
}
