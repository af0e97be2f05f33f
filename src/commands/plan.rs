//! `warren plan` and `warren diff`: compare, then show the plan in the
//! chosen format. The two differ only in where the live side comes from.

use std::path::Path;

use crate::desired::{self, Desired};
use crate::diagnostic::{self, Diagnostic, render as render_diagnostics};
use crate::diff::{self, Options};
use crate::exit::Exit;
use crate::model::{Inventory, Topology};
use crate::output::Output;
use crate::plan::{self, Plan};
use crate::render::{self, Format, PlanDocument};

/// How the plan is shown.
#[derive(Debug, Clone)]
pub struct Show {
    pub format: Format,
    pub detailed_exitcode: bool,
    pub replace: Vec<String>,
}

/// The live side of a comparison.
pub struct LiveSide {
    pub topology: Topology,
    pub inventory: Inventory,
    /// How the plan names it: `definitions file x.json`, `examples/old`.
    pub origin: String,
    pub notes: Vec<Diagnostic>,
}

/// A plan with everything needed to show it.
pub struct Planned {
    pub plan: Plan,
    pub document: PlanDocument,
    pub desired: Desired,
}

/// Loads the files and plans against `live`; `Err` holds the exit after
/// the files' diagnostics are shown.
pub fn compute(path: &Path, live: LiveSide, show: &Show) -> Result<Planned, Box<Desired>> {
    let desired = desired::load(path);
    if desired.has_errors() {
        return Err(Box::new(desired));
    }
    let options = Options { replace: show.replace.iter().cloned().collect(), ..Options::default() };
    let d = diff::diff(&desired.topology, &live.topology, &live.inventory, &options);
    let plan = plan::build(d, &desired.topology, &live.topology);
    let mut diagnostics: Vec<Diagnostic> = plan
        .problems
        .iter()
        .map(|p| match desired.spans.locate(&p.key, p.field.as_deref()) {
            Some(l) => p.diagnostic.clone().at(l),
            None => p.diagnostic.clone(),
        })
        .collect();
    diagnostics.extend(desired.diagnostics.iter().cloned());
    diagnostics.extend(live.notes.iter().cloned());
    diagnostic::sort(&mut diagnostics);
    let document = PlanDocument::new(&plan, &path.display().to_string(), &live.origin, &diagnostics, &desired.sources);
    Ok(Planned { plan, document, desired: Desired { diagnostics, ..desired } })
}

/// Prints a plan (or the reasons there is none) and returns the exit code.
pub fn show(result: Result<Planned, Box<Desired>>, path: &Path, live_origin: &str, show: &Show, out: Output) -> Exit {
    match result {
        Err(desired) => {
            let diags = &desired.diagnostics;
            match show.format {
                Format::Human => eprint!("{}", render_diagnostics(diags, &desired.sources, out.diagnostic_style())),
                format => {
                    let empty = Plan { changes: vec![], steps: vec![], problems: vec![] };
                    let doc =
                        PlanDocument::new(&empty, &path.display().to_string(), live_origin, diags, &desired.sources);
                    print!("{}", render::render(&doc, format, false));
                    eprint!("{}", render_diagnostics(diags, &desired.sources, out.diagnostic_style()));
                }
            }
            eprintln!("{} is not valid: no plan was made.", path.display());
            Exit::Error
        }
        Ok(planned) => {
            let shown: Vec<Diagnostic> =
                planned.desired.diagnostics.iter().filter(|d| !out.quiet || d.is_error()).cloned().collect();
            eprint!("{}", render_diagnostics(&shown, &planned.desired.sources, out.diagnostic_style()));
            let color = out.color && show.format == Format::Human;
            print!("{}", render::render(&planned.document, show.format, color));
            if !planned.document.errors.is_empty() {
                eprintln!(
                    "The plan cannot be carried out: {} must be fixed first.",
                    errors(planned.document.errors.len())
                );
                Exit::Error
            } else if show.detailed_exitcode && planned.document.has_changes() {
                Exit::Changes
            } else {
                Exit::Ok
            }
        }
    }
}

fn errors(n: usize) -> String {
    if n == 1 { "1 error".into() } else { format!("{n} errors") }
}

/// `warren diff OLD NEW`: the plan from one desired state to another,
/// offline. Everything in OLD counts as managed by warren.
pub fn diff_command(old: &Path, new: &Path, show_opts: &Show, out: Output) -> Exit {
    let before = desired::load(old);
    if before.has_errors() {
        eprint!("{}", render_diagnostics(&before.diagnostics, &before.sources, out.diagnostic_style()));
        eprintln!("{} is not valid: no plan was made.", old.display());
        return Exit::Error;
    }
    let live = LiveSide {
        inventory: Inventory::of(&before.topology),
        topology: before.topology,
        origin: old.display().to_string(),
        notes: Vec::new(),
    };
    let origin = live.origin.clone();
    show(compute(new, live, show_opts), new, &origin, show_opts, out)
}
