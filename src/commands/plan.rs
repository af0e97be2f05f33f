//! `warren plan` and `warren diff`: compare, then show the plan in the
//! chosen format. The two differ only in where the live side comes from.

use std::path::{Path, PathBuf};

use super::findings;
use super::live_side::{self, LiveSide, StateFile};
use super::planned::{Planned, assemble, compare, draft, review};
use super::{Clock, Show};
use crate::desired::{self, Desired};
use crate::diagnostic::Diagnostic;
use crate::error::{self, Done, Error, Kind};
use crate::model::{Inventory, Ownership};
use crate::plan::Plan;
use crate::render::{self, Format, PlanDocument};
use crate::writer::Writer;

/// Shows why invalid files give no plan: in the document of a machine
/// format, else drawn on stderr.
pub fn print_invalid(desired: &Desired, path: &Path, live_origin: &str, format: Format, out: &Writer) -> Error {
    let diags = &desired.diagnostics;
    if format != Format::Human {
        let empty = Plan { changes: vec![], steps: vec![], problems: vec![], in_flight: vec![], outside: vec![] };
        let doc = PlanDocument::new(&empty, &path.display().to_string(), live_origin, diags, &desired.sources);
        out.out(render::render(&doc, format, false));
    } else {
        findings::shown(diags, &desired.sources, out);
    }
    Error::invalid().line(format!("{} is not valid: no plan was made.", path.display()))
}

/// Prints the diagnostics (stderr) and the plan (stdout). With -q, the
/// errors and, in the human format, the plan's summary line alone: the
/// machine formats are always whole.
pub fn print(planned: &Planned, format: Format, out: &Writer) {
    print_diagnostics(planned, out);
    print_document(&planned.document, format, out);
}

/// The plan alone, as [`print`] shows it after its diagnostics.
pub fn print_document(document: &PlanDocument, format: Format, out: &Writer) {
    if out.quiet() && format == Format::Human {
        out.outln(render::human::summary_line(document));
    } else {
        out.out(render::render(document, format, out.color() && format == Format::Human));
    }
    if format == Format::Github {
        super::findings::step_summary(&render::markdown::render(document), out);
    }
}

/// The plan's diagnostics on stderr, unless its document is stdout; with
/// -q, its errors only.
pub fn print_diagnostics(planned: &Planned, out: &Writer) {
    findings::show(&planned.desired.diagnostics, &planned.desired.sources, out);
}

/// The exit of `plan` and `diff` once the plan is shown.
fn finish(planned: &Planned, show: &Show) -> error::Result {
    if !planned.document.errors.is_empty() {
        if planned.document.errors.iter().all(|e| crate::diff::REFUSALS.contains(&e.code.as_str())) {
            return Err(Error::new(Kind::Refused));
        }
        Err(Error::invalid())
    } else if show.detailed_exitcode && planned.document.has_changes() {
        Ok(Done::Changes)
    } else {
        Ok(Done::Ok)
    }
}

pub fn errors(n: usize) -> String {
    if n == 1 { "1 error".into() } else { format!("{n} errors") }
}

/// `warren plan`: against a definitions export (`state`) or the broker;
/// with `save`, also writes a saved plan there for `apply`.
pub fn plan_command(
    path: &Path,
    state: Option<StateFile>,
    save: Option<&Path>,
    show: &Show,
    connection: &crate::cli::Connection,
    out: &Writer,
) -> error::Result {
    let mut clock = Clock::new(out);
    let origin = match state {
        Some(s) => format!("definitions file {}", s.path.display()),
        None => live_side::describe(connection),
    };
    // An export does not depend on the files: read both at once.
    let (mut desired, from_state) = rayon::join(|| desired::load_unchecked(path), || state.map(live_side::from_state));
    desired.targets.clone_from(&show.targets);
    clock.lap("read the files and the export");
    // A broker is planned for a named project; an export may be too.
    if !desired.has_errors()
        && let Err(d) = desired.project.resolve(connection.project.as_deref(), state.is_none())
    {
        return Err(Error::invalid().drawn([d], &desired.sources));
    }
    let checked = desired.has_errors() || state.is_none();
    if checked {
        // Refused files get every finding, and the broker is reached only
        // for files that pass.
        let found = desired::lint(&desired);
        desired.add_findings(found);
        if desired.has_errors() {
            return Err(print_invalid(&desired, path, &origin, show.format, out));
        }
    }
    let live = match from_state {
        Some(read) => read.and_then(|r| r.finish(&desired.topology)),
        None => super::block_on(live_side::from_broker(connection, &desired.topology, desired.project.name())),
    };
    clock.lap("read the live state");
    let live = match live {
        Ok(l) => l,
        Err(d) => return Err(Error::invalid().drawn([d], &desired.sources)),
    };
    if out.verbose() {
        for line in &live.reads {
            out.errln(format!("warren: {line}"));
        }
    }
    let drafted = if checked {
        draft(&desired, &live, &show.replace)
    } else {
        // Against an export, the whole-topology checks run beside the plan:
        // both only read the files' topology. Files they refuse get no plan.
        let (found, drafted) = rayon::join(|| desired::lint(&desired), || draft(&desired, &live, &show.replace));
        desired.add_findings(found);
        if desired.has_errors() {
            return Err(print_invalid(&desired, path, &origin, show.format, out));
        }
        drafted
    };
    let planned = assemble(desired, path, live, drafted);
    clock.lap("diff and plan");
    print(&planned, show.format, out);
    clock.lap("render");
    let mut result = finish(&planned, show);
    if let Some(file) = save {
        result = match result {
            Ok(done) => save_plan(&planned, path, &show.replace, file, done, out),
            // Apply would refuse it anyway.
            Err(e) => Err(e.line(format!("No saved plan was written to {}: the plan has errors.", file.display()))),
        };
    }
    // The process ends here: freeing a large topology piece by piece would
    // only delay the exit.
    std::mem::forget(planned);
    result
}

/// Writes the saved plan of `plan --out`; how `plan` ends.
fn save_plan(
    planned: &Planned,
    path: &Path,
    replace: &[String],
    file: &Path,
    done: Done,
    out: &Writer,
) -> error::Result {
    match super::saved_plan::save(planned, path, replace, file) {
        Ok(()) => {
            out.note(format!(
                "Saved this plan to {}. `warren apply {}` carries out exactly this plan, \
                     and refuses it if the broker has changed by then.",
                file.display(),
                file.display()
            ));
            Ok(done)
        }
        Err(d) => Err(Error::invalid().drawn([d], &planned.desired.sources)),
    }
}

/// `warren diff OLD NEW`, or `warren diff [PATH] --env A --env B`: the plan
/// from one desired state to another, offline. Everything in OLD counts as
/// managed by warren.
pub fn diff_command(paths: &[PathBuf], envs: &[String], show: &Show, out: &Writer) -> error::Result {
    let usage = |what: &str| {
        Err(Error::invalid()
            .line(format!("error: {what}\n  help: `warren diff OLD NEW`, or `warren diff [PATH] --env A --env B`")))
    };
    match (paths, envs) {
        ([old, new], []) => {
            let before = desired::load_at(old);
            if before.has_errors() {
                let lists = super::findings::lists_of(old, &[]);
                findings::shown(&before.diagnostics, &before.sources, &out.for_findings(lists, false));
                return Err(Error::invalid().line(format!("{} is not valid: no plan was made.", old.display())));
            }
            let desired = desired::load_at(new);
            if desired.has_errors() {
                return Err(print_invalid(&desired, new, &old.display().to_string(), show.format, out));
            }
            diff(before, &old.display().to_string(), desired, new, show, out, None)
        }
        (_, []) => usage("diff compares two topologies: give OLD and NEW"),
        ([] | [_], [a, b]) => {
            let default = PathBuf::from("topology");
            let path = paths.first().unwrap_or(&default);
            let pair = super::fleet::two(path, a, b, out)?;
            let ((first, before), (second, desired)) = (pair.first, pair.second);
            let old = format!("environment {}", first.name);
            let new = PathBuf::from(format!("environment {}", second.name));
            for (d, label) in [(&before, &old), (&desired, &new.display().to_string())] {
                if d.has_errors() {
                    return Err(Error::invalid().line(format!("{label} is not valid: no plan was made.")));
                }
            }
            // Contents are compared under the base's vhost names; the
            // names themselves are said apart.
            for (env, d) in [(&first, &before), (&second, &desired)] {
                for (base, name) in &d.renamed {
                    out.errln(format!("In environment {}, vhost \"{base}\" is called \"{name}\".", env.name));
                }
            }
            let compared = Compared { old: first.name, new: second.name, shown: pair.shown };
            diff(before.in_base_names(), &old, desired.in_base_names(), &new, show, out, Some(compared))
        }
        (_, [_, _]) => usage("with --env, diff takes at most one PATH, the topology directory"),
        _ => usage("diff compares two environments: give --env twice"),
    }
}

/// Two environments compared by `diff`: their names, and the diagnostics
/// already shown of them.
struct Compared {
    old: String,
    new: String,
    shown: Vec<Diagnostic>,
}

/// The plan from `before` (named `old`) to `desired` (named `new`), a
/// change reviewed; when `compared` (two environments), what differs
/// rather than what applies.
fn diff(
    before: Desired,
    old: &str,
    desired: Desired,
    new: &Path,
    show: &Show,
    out: &Writer,
    compared: Option<Compared>,
) -> error::Result {
    let live = LiveSide {
        ownership: Ownership::single(desired.project.name(), Inventory::of(&before.topology)),
        records: Default::default(),
        topology: before.topology.into_inner(),
        migrations: Default::default(),
        last_applies: Default::default(),
        origin: old.to_string(),
        notes: Vec::new(),
        queue_counts: None,
        broker_version: None,
        user: None,
        plugins: None,
        reads: Vec::new(),
    };
    let mut planned = match &compared {
        Some(c) => compare(desired, new, live, &c.old, &c.new),
        None => review(desired, new, live, &show.replace),
    };
    planned.document.origin.diff = true;
    match compared {
        Some(c) => {
            planned.document.origin.compared = Some((c.old, c.new));
            // The environments' own diagnostics were shown as they were
            // read: only what the comparison adds is shown now.
            let all = std::mem::take(&mut planned.desired.diagnostics);
            let said = |d: &Diagnostic| c.shown.iter().any(|s| s.location == d.location && s.message == d.message);
            planned.desired.diagnostics = all.iter().filter(|d| !said(d)).cloned().collect();
            print(&planned, show.format, out);
            planned.desired.diagnostics = all;
        }
        None => print(&planned, show.format, out),
    }
    finish(&planned, show)
}
