//! Saved plans in the commands: `plan --out` writes one, `apply PLANFILE`
//! reads it and refuses it when what the plan depends on changed on the
//! broker, or the plan is no longer the one reviewed. The file format is
//! [`crate::saved_plan`].

use std::io::Read;
use std::path::{Path, PathBuf};

use super::planned::Planned;
use crate::desired::{self, Desired};
use crate::diagnostic::Diagnostic;
use crate::error::{Error, Kind};
use crate::fingerprint;
use crate::saved_plan::{self, Saved, SavedFile, SavedPlan, SavedPlans, Shown};
use crate::writer::Writer;

/// `plan --out FILE`: saves what apply needs to make this plan again.
pub fn save(planned: &Planned, path: &Path, replace: &[String], file: &Path) -> Result<(), Diagnostic> {
    saved_plan::write(&saved(planned, path, replace, None), file)
}

/// What apply needs to make `planned` again; `environment` names the
/// environment it is of, in a plan of several.
pub fn saved(planned: &Planned, path: &Path, replace: &[String], environment: Option<&str>) -> SavedPlan {
    let sources = &planned.desired.sources;
    SavedPlan {
        warren_saved_plan: saved_plan::FORMAT_VERSION,
        warren_version: env!("CARGO_PKG_VERSION").into(),
        created: crate::journal::now(),
        origin: planned.live.origin.clone(),
        path: path.to_path_buf(),
        replace: replace.to_vec(),
        depends_on: depends_on(planned),
        plan_fingerprint: fingerprint::plan(&planned.document),
        // What stamps made is made again from the files.
        files: sources
            .files()
            .map(|id| {
                let f = sources.get(id);
                SavedFile { path: f.path.clone(), text: f.text.to_string() }
            })
            .collect(),
        environment: environment.map(str::to_string),
        project: planned.desired.project.name.clone(),
        targets: planned.desired.targets.iter().map(|t| t.text.clone()).collect(),
        shown: environment
            .is_none()
            .then(|| Shown { document: planned.document.clone(), origin: planned.document.origin.clone() }),
    }
}

/// What apply plans from: the files at a path, or a saved plan's.
pub struct ApplyInput {
    pub desired: Desired,
    /// The path the plan names (a saved plan's is the one `plan` was given).
    pub path: PathBuf,
    pub replace: Vec<String>,
    pub saved: Option<SavedPlan>,
}

/// Loads `path` as a topology, or as a saved plan when its content is one.
/// On failure, the error says why.
pub fn apply_input(path: &Path, replace: &[String], out: &Writer) -> Result<ApplyInput, Error> {
    if !is_saved_plan(path) {
        let desired = desired::load(path);
        return Ok(ApplyInput { desired, path: path.to_path_buf(), replace: replace.to_vec(), saved: None });
    }
    let saved = match saved_plan::read(path) {
        Ok(s) => s,
        Err(d) => return Err(unusable(d)),
    };
    saved_input(path, saved, replace, out)
}

/// The saved plan of several environments at `path`, or why not.
pub fn read_plans(path: &Path) -> Result<SavedPlans, Error> {
    match saved_plan::read_any(path) {
        Ok(Saved::Environments(plans)) => Ok(plans),
        Ok(Saved::One(_)) => Err(unusable(
            Diagnostic::error("saved-plan", format!("{} is the saved plan of one topology", path.display()))
                .help(format!("apply it as `warren apply {}`, without --env", path.display())),
        )),
        Err(d) => Err(unusable(d)),
    }
}

/// Whether `path` holds the saved plan of several environments.
pub fn is_saved_plans(path: &Path) -> bool {
    is_saved_plan(path) && matches!(saved_plan::read_any(path), Ok(Saved::Environments(_)))
}

fn unusable(d: Diagnostic) -> Error {
    Error::invalid().drawn([d], &Default::default()).line("Nothing was changed.")
}

/// What apply plans from for one saved plan read from `path`: one
/// topology's, or one environment's of a plan of several.
pub fn saved_input(path: &Path, saved: SavedPlan, replace: &[String], out: &Writer) -> Result<ApplyInput, Error> {
    // The plan records its --replace list; another one would make a plan
    // other than the one reviewed.
    if !replace.is_empty() {
        return Err(Error::invalid().line(format!(
            "Nothing was changed: --replace cannot be given with a saved plan; {} records its own ({}).",
            path.display(),
            if saved.replace.is_empty() { "none".into() } else { saved.replace.join(", ") }
        )));
    }
    out.note(format!(
        "Applying the saved plan {}, made {} against {} by warren {}.",
        path.display(),
        saved.created,
        saved.origin,
        saved.warren_version
    ));
    let mut desired = match &saved.environment {
        None => desired::load_texts(&saved.path, saved.texts()),
        Some(env) => desired::environment_texts(&saved.path, saved.texts(), env),
    };
    // A project named by --project when the plan was made is the plan's.
    if desired.project.name.is_none() {
        desired.project.name.clone_from(&saved.project);
    }
    for t in &saved.targets {
        let target = crate::diff::target::Target::parse(t).map_err(|e| {
            unusable(Diagnostic::error("saved-plan", format!("{} is not a usable saved plan: {e}", path.display())))
        })?;
        desired.targets.push(target);
    }
    Ok(ApplyInput { desired, path: saved.path.clone(), replace: saved.replace.clone(), saved: Some(saved) })
}

/// A file whose content starts like JSON: TOML never does.
pub fn is_saved_plan(path: &Path) -> bool {
    let Ok(mut f) = std::fs::File::open(path) else { return false };
    // The first bytes decide; a topology file need not be read twice.
    let mut head = [0u8; 1024];
    let n = f.read(&mut head).unwrap_or(0);
    saved_plan::looks_saved(&String::from_utf8_lossy(&head[..n]))
}

/// [`fingerprint::depends_on`] of a plan's desired and live sides.
fn depends_on(planned: &Planned) -> std::collections::BTreeMap<String, String> {
    let (desired, live) = (&planned.desired, &planned.live);
    fingerprint::depends_on(&desired.topology, &live.topology, &live.ownership, desired.project.name())
}

/// How many changed objects a refusal names before it counts the rest.
const NAMED: usize = 10;

/// Refuses (exit 4) a saved plan when an object it depends on changed, or
/// the plan differs now. Other objects may change meanwhile: an
/// application's own queues, another project's objects.
pub fn check(saved: &SavedPlan, planned: &Planned) -> Result<(), Error> {
    let changed = fingerprint::changed(&saved.depends_on, &depends_on(planned));
    if !changed.is_empty() {
        let mut refused = Error::new(Kind::Refused).line(
            "Refused: what this plan depends on changed on the broker since it was made; make a new plan. Changed:",
        );
        for (name, how) in changed.iter().take(NAMED) {
            refused = refused.line(format!("  {name}: {how}"));
        }
        if changed.len() > NAMED {
            refused = refused.line(format!("  and {} more", changed.len() - NAMED));
        }
        if saved.origin != planned.live.origin {
            refused = refused.line(format!(
                "  The plan was made against {}, and is applied to {}: it is accepted only when the objects it \
                 depends on are on this broker exactly as they were there.",
                saved.origin, planned.live.origin
            ));
        }
        return Err(refused.line("Nothing was changed."));
    }
    let plan_now = fingerprint::plan(&planned.document);
    if plan_now != saved.plan_fingerprint {
        let why = if saved.warren_version != env!("CARGO_PKG_VERSION") {
            format!(
                "it was made by warren {}, and this is warren {}, which may plan differently",
                saved.warren_version,
                env!("CARGO_PKG_VERSION")
            )
        } else {
            "the environment differs: a password variable (password_env) or a secret's (`{ env = ... }`) is \
             set differently or not at all, so a password or a URI now compares otherwise"
                .into()
        };
        let refused = Error::new(Kind::Refused).line(format!(
            "Refused: the broker is as it was, but the plan now comes out different (fingerprint {}, now {plan_now}): \
             {why}. Run plan to see it; make a new plan.",
            saved.plan_fingerprint
        ));
        return Err(refused.line("Nothing was changed."));
    }
    Ok(())
}
