//! `warren validate`: parse and check the files, print every finding.

use std::path::Path;

use crate::desired;
use crate::diagnostic::{Diagnostic, render};
use crate::error::{self, Done, Error};
use crate::output::Output;
use crate::source::Sources;

pub fn run(path: &Path, out: Output) -> error::Result {
    let desired = desired::load(path);
    show(&desired.diagnostics, &desired.sources, out);
    let errors = desired.diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = desired.diagnostics.len() - errors;
    if errors > 0 {
        eprintln!("{} is not valid: {}.", path.display(), counted(errors, warnings));
        return Err(Error::Invalid);
    }
    let tail = if warnings > 0 { format!(" ({})", plural(warnings, "warning")) } else { String::new() };
    println!("{} is valid: {}{tail}.", path.display(), summary(&desired.topology));
    Ok(Done::Ok)
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
