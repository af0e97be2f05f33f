//! `warren validate`: parse and check the files and the routing tests
//! beside them; show their errors, and count the lint's warnings, which
//! `warren lint` lists.

use std::path::Path;

use super::findings::lint_of;
use crate::desired;
use crate::diagnostic::{Diagnostic, Severity};
use crate::error::{self, Done, Error};
use crate::render::lint::{LintDocument, LintFormat};
use crate::route_test::{self, Suite};
use crate::source::Sources;
use crate::writer::Writer;

/// Checks the base and, with `envs`, each environment it picks: its
/// topology with the overlays merged over the base. An environment shows
/// only what the base does not: its overlays' problems, and the findings
/// its merged topology adds. Errors are shown (drawn, or listed in the
/// machine formats); warnings and infos are counted, `warren lint` lists
/// them: a CI that runs both annotates each finding once.
pub fn run(path: &Path, envs: &[String], format: LintFormat, out: &Writer) -> error::Result {
    let human = format == LintFormat::Human;
    let mut base = desired::load_unchecked(path);
    if !envs.is_empty() {
        base.without_environment_problems();
    }
    // The routing tests beside the files: their syntax now, their names
    // once the topology they name is read.
    let suite = Suite::beside(path, &mut base);
    // Environments merge their overlays over the files as read, before the
    // lint's findings; only they need that copy, which at 100,000 queues
    // is about a hundred megabytes.
    let unchecked = (!envs.is_empty()).then(|| base.clone());
    let found = desired::lint(&base);
    base.add_findings(found);
    let names = route_test::check(&suite, path, None, &base);
    base.add_findings(names);
    let mut doc = LintDocument::new();
    listed(&mut doc, None, &base.diagnostics, &base.sources);
    if human {
        show(&errors(&base.diagnostics), &base.sources, out);
    }
    let lint = lint_of(path, &[]);
    let mut valid =
        report(&path.display().to_string(), &base.diagnostics, &base.diagnostics, &base.topology, &lint, human, out);
    let picked = if envs.is_empty() || base.project_unreadable() {
        Vec::new()
    } else {
        match base.project.select(envs) {
            Ok(p) => p,
            Err(d) => {
                return Err(Error::invalid().drawn([d], &base.sources));
            }
        }
    };
    // Some exactly when environments were picked.
    if let Some(unchecked) = &unchecked {
        for env in picked {
            let mut merged = desired::environment(unchecked, path, env);
            let names = route_test::check(&suite, path, Some(env), &merged);
            merged.add_findings(names);
            let own = merged.beyond(&base.diagnostics);
            listed(&mut doc, Some(&env.name), &own, &merged.sources);
            if human {
                show(&errors(&own), &merged.sources, out);
            }
            let what = format!("environment {}", env.name);
            let lint = lint_of(path, std::slice::from_ref(&env.name));
            valid &= report(&what, &merged.diagnostics, &own, &merged.topology, &lint, human, out);
        }
    }
    if !human {
        super::findings::print(&doc, format, path, "warren validate", out);
    }
    if valid { Ok(Done::Ok) } else { Err(Error::invalid()) }
}

fn errors(diagnostics: &[Diagnostic]) -> Vec<Diagnostic> {
    diagnostics.iter().filter(|d| d.is_error()).cloned().collect()
}

/// Adds the errors to the document, and counts the rest in its summary.
fn listed(doc: &mut LintDocument, environment: Option<&str>, diagnostics: &[Diagnostic], sources: &Sources) {
    doc.add(environment, &errors(diagnostics), &[], sources);
    doc.count(diagnostics.iter().filter(|d| !d.is_error()));
}

/// Says whether `what` is valid, with the count of its errors (`all`) and of
/// the warnings and infos found for it (`shown`), which `lint` lists; true
/// if it is. `say`: in words (the machine formats are the whole of stdout).
fn report(
    what: &str,
    all: &[Diagnostic],
    shown: &[Diagnostic],
    topology: &crate::model::Topology,
    lint: &str,
    say: bool,
    out: &Writer,
) -> bool {
    let errors = all.iter().filter(|d| d.is_error()).count();
    let warnings = shown.iter().filter(|d| d.severity == Severity::Warning).count();
    let infos = shown.iter().filter(|d| d.severity == Severity::Info).count();
    let said: Vec<String> = [(warnings, "warning"), (infos, "info")]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, word)| plural(n, word))
        .collect();
    if errors > 0 {
        if say {
            let tail = if said.is_empty() { String::new() } else { format!(" (`{lint}` lists them all)") };
            out.errln(format!("{what} is not valid: {}{tail}.", counted(errors, &said)));
        }
        return false;
    }
    let them = if warnings + infos == 1 { "it" } else { "them" };
    let tail = if said.is_empty() { String::new() } else { format!(" ({}: `{lint}` lists {them})", said.join(", ")) };
    if say {
        out.outln(format!("{what} is valid: {}{tail}.", summary(topology)));
    }
    true
}

/// `1 vhost, 3 exchanges, 8 queues, 7 bindings, 2 policies, 0 users`, then
/// the objects of each kind of `model::kinds` the files declare.
pub fn summary(t: &crate::model::Topology) -> String {
    use crate::model::kinds::{KINDS, Kind, Phase};
    let sum = |f: fn(&crate::model::Vhost) -> usize| t.vhosts.values().map(f).sum::<usize>();
    let count = |kind: &Kind| {
        let all = t.vhosts.values().map(|v| &v.objects).chain([&t.objects]);
        all.map(|o| o.keys().filter(|name| name.kind == kind).count()).sum::<usize>()
    };
    // A kind a plan sets with policies is counted with them.
    let as_policies = |k: &&&Kind| k.phase == Phase::PutPolicy;
    let policies = KINDS.iter().filter(as_policies).map(|k| count(k)).sum::<usize>();
    let mut parts = vec![
        plural(t.vhosts.len(), "vhost"),
        plural(sum(|v| v.exchanges.len()), "exchange"),
        plural(sum(|v| v.queues.len()), "queue"),
        plural(sum(|v| v.bindings.len()), "binding"),
        plural(policies, "policy"),
        plural(t.user_names().count(), "user"),
    ];
    // Users are counted above, at their place; permissions, as before
    // they were a kind's objects, not at all.
    let apart = |k: &&&Kind| **k == &crate::model::kinds::users::KIND || **k == &crate::model::kinds::permissions::KIND;
    for kind in KINDS.iter().filter(|k| !as_policies(k) && !apart(k)) {
        let n = count(kind);
        if n > 0 {
            parts.push(plural(n, kind.name));
        }
    }
    parts.join(", ")
}

/// Prints diagnostics on stderr, a few of each kind (see
/// [`super::findings::shown`]); with `-q`, only the errors.
pub fn show(diagnostics: &[Diagnostic], sources: &Sources, out: &Writer) {
    super::findings::shown(diagnostics, sources, out);
}

/// `3 errors`, `3 errors and 2 warnings, 1 info`.
fn counted(errors: usize, others: &[String]) -> String {
    let mut s = plural(errors, "error");
    if !others.is_empty() {
        s += &format!(" and {}", others.join(", "));
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
