//! `warren import`: topology files for what the broker, or a definitions
//! export, holds.
//!
//! It never overwrites: if `--out` already holds `*.toml` files (anywhere
//! below it, since all of them would be read together), it refuses with
//! exit 1 and writes nothing. The files it writes are loaded back and
//! checked before it reports success.

use std::fs;
use std::path::{Path, PathBuf};

use super::live_side;
use super::validate::plural;
use crate::cli::Connection;
use crate::desired;
use crate::diagnostic::Diagnostic;
use crate::error::{self, Done, Error};
use crate::import::{self, File};
use crate::live::{self, Live};
use crate::model::Topology;
use crate::model::kinds::{KINDS, Phase};
use crate::source::Sources;
use crate::writer::Writer;

/// Imports `vhosts` (every vhost when empty) from the definitions export
/// `state`, or from the broker when there is none. A project named with
/// `--project` (or `WARREN_PROJECT`) is written into the project file, as
/// `init` does: the user said whose the files are, and a plan of them
/// needs it.
pub fn run(
    state: Option<&Path>,
    vhosts: &[String],
    out_dir: &Path,
    connection: &Connection,
    out: &Writer,
) -> error::Result {
    let project = connection.project.as_deref().map(project_named).transpose()?;
    import_files(state, vhosts, out_dir, project.as_deref(), connection, out)
        .unwrap_or_else(|d| Err(Error::invalid().drawn([d], &Sources::default())))
}

/// `given` (--project or WARREN_PROJECT) as the name of a project file
/// `init` or `import` writes, refused as that file would refuse it.
pub(super) fn project_named(given: &str) -> Result<String, Error> {
    let mut project = crate::project::Project::default();
    project.resolve(Some(given), true).map_err(|d| Error::invalid().drawn([d], &Sources::default()))?;
    Ok(given.to_string())
}

/// `warren init --state FILE` / `--import`: the import, with the project
/// file that names `project` written beside the imported files.
pub fn with_project(
    state: Option<&Path>,
    vhosts: &[String],
    out_dir: &Path,
    project: &str,
    connection: &Connection,
    out: &Writer,
) -> error::Result {
    import_files(state, vhosts, out_dir, Some(project), connection, out)
        .unwrap_or_else(|d| Err(Error::invalid().drawn([d], &Sources::default())))
}

/// The live state to import, with how the files' comments name where it
/// came from (`defs.json`, `the broker at http://host:15672`) and how the
/// summary does.
pub(super) struct Origin {
    pub(super) live: Live,
    pub(super) source: String,
    shown: String,
    /// From a broker, the queues each user's connections consume.
    consumed: import::Consumed,
}

pub(super) fn read(state: Option<&Path>, vhosts: &[String], connection: &Connection) -> Result<Origin, Diagnostic> {
    let Some(state) = state else {
        let live = live_side::definitions_from_broker(connection, vhosts)?;
        let consumed = consumed(connection, live.topology.vhosts.keys())?;
        let source = format!("the broker at {}", live_side::describe(connection));
        return Ok(Origin { live, shown: source.clone(), source, consumed });
    };
    let json = fs::read_to_string(state).map_err(|e| {
        Diagnostic::error("read", format!("cannot read {}: {e}", state.display()))
            .help("give a definitions export: `rabbitmqctl export_definitions FILE`, or GET /api/definitions")
    })?;
    let origin = state.display().to_string();
    // One --vhost also names the vhost of a single-vhost export.
    let single = match vhosts {
        [v] => Some(v.as_str()),
        _ => None,
    };
    let live = live::from_vhost_definitions_only(&json, &origin, single, vhosts)?;
    let source = state.file_name().map_or(origin.clone(), |n| n.to_string_lossy().into_owned());
    Ok(Origin { live, source, shown: origin, consumed: import::Consumed::new() })
}

/// The queues each user consumes on the broker now, in each of `vhosts`
/// (its proposed service consumes those: `import/services.rs`).
fn consumed<'a>(
    connection: &Connection,
    vhosts: impl Iterator<Item = &'a String>,
) -> Result<import::Consumed, Diagnostic> {
    use crate::broker::Broker;
    let broker = live_side::connect(connection)?;
    let mut out = import::Consumed::new();
    for v in vhosts {
        let consumers = super::block_on(broker.consumers(v)).map_err(|e| live_side::diagnostic(&e))?;
        for c in consumers {
            out.entry(v.clone()).or_default().entry(c.user).or_default().insert(c.queue);
        }
    }
    Ok(out)
}

fn import_files(
    state: Option<&Path>,
    vhosts: &[String],
    out_dir: &Path,
    project: Option<&str>,
    connection: &Connection,
    out: &Writer,
) -> Result<error::Result, Diagnostic> {
    let Origin { live, source, shown, consumed } = read(state, vhosts, connection)?;
    let known = import::Known { skipped: &live.skipped, consumed: Some(&consumed), ..import::Known::default() };
    let imported = import::import_knowing(&live.topology, vhosts, &source, &known)?;
    refuse_existing(out_dir)?;
    let written = write(out_dir, &imported.files)?;
    if let Some(name) = project {
        write_project_file(out_dir, name, out)?;
    }

    let mut notes = live.notes;
    notes.extend(imported.notes);
    if !out.quiet() {
        out.diagnostics(&notes, &Sources::default());
    }
    for (path, file) in written.iter().zip(&imported.files) {
        if !out.quiet() {
            out.outln(format!("Wrote {}: {}", path.display(), summary(file)));
        }
    }
    let check = desired::load(out_dir);
    if check.has_errors() {
        let errors: Vec<Diagnostic> = check.diagnostics.iter().filter(|d| d.is_error()).cloned().collect();
        return Ok(Err(Error::invalid().drawn(errors, &check.sources).line(
            "warren import wrote files that `warren validate` rejects. This is a bug in warren: please report it, with the export if you can.",
        )));
    }
    let warnings = check.diagnostics.len();
    let tail = if warnings > 0 {
        format!(" `warren validate {}` shows {} about them.", out_dir.display(), plural(warnings, "warning"))
    } else {
        String::new()
    };
    out.outln(format!("Imported {shown} into {}: {}.{tail}", out_dir.display(), counts(&imported.topology)));
    // Its plan against a broker needs a project: say so now, not then.
    if !out.quiet() && crate::project::file_of(out_dir).is_none() {
        out.outln(format!(
            "Name the project these files belong to before planning them against a broker: write {} with\n  [project]\n  name = \"...\"\nor import again with --project NAME.",
            out_dir.join(crate::project::FILE_NAME).display()
        ));
    }
    Ok(Ok(Done::Ok))
}

/// Writes `dir`'s project file, naming project `name`.
pub fn write_project_file(dir: &Path, name: &str, out: &Writer) -> Result<(), Diagnostic> {
    let file = dir.join(crate::project::FILE_NAME);
    fs::write(&file, crate::project::template(name)).map_err(|e| {
        Diagnostic::error("init", format!("cannot write {}: {e}", file.display()))
            .help("check the directory's permissions and free space")
    })?;
    if !out.quiet() {
        out.outln(format!("Wrote {}: project \"{name}\"", file.display()));
    }
    Ok(())
}

/// Refuses a directory that already holds topology files (or a project
/// file): `import` and `init` start a topology, never add to one.
pub fn refuse_existing(dir: &Path) -> Result<(), Diagnostic> {
    if !dir.exists() {
        return Ok(());
    }
    if !dir.is_dir() {
        return Err(Diagnostic::error("import", format!("{} exists and is not a directory", dir.display()))
            .help("give a directory, new or without *.toml files"));
    }
    let mut found = Vec::new();
    desired::collect(dir, &mut found).map_err(|e| {
        Diagnostic::error("read", format!("cannot list {}: {e}", dir.display())).help("check its permissions")
    })?;
    if found.is_empty() {
        return Ok(());
    }
    found.sort();
    let shown: Vec<String> = found.iter().take(5).map(|p| p.display().to_string()).collect();
    let more = if found.len() > 5 { format!(" and {} more", found.len() - 5) } else { String::new() };
    Err(Diagnostic::error(
        "import",
        format!(
            "{} already holds topology files: {}{more}",
            dir.display(),
            shown.join(", ")
        ),
    )
    .help("warren never overwrites files here, nor adds to a topology (every *.toml below a directory is read as one); remove them or give a new directory"))
}

fn write(dir: &Path, files: &[File]) -> Result<Vec<PathBuf>, Diagnostic> {
    let cannot = |what: &Path, e: std::io::Error| {
        Diagnostic::error("import", format!("cannot write {}: {e}", what.display()))
            .help("check the directory's permissions and free space")
    };
    fs::create_dir_all(dir).map_err(|e| cannot(dir, e))?;
    let mut written = Vec::new();
    for f in files {
        let path = dir.join(&f.name);
        fs::write(&path, &f.text).map_err(|e| cannot(&path, e))?;
        written.push(path);
    }
    Ok(written)
}

/// What one file declares: `vhost "/": 3 exchanges, 7 queues`.
fn summary(file: &File) -> String {
    let c = &file.counts;
    // Policies, and the kinds a plan sets with them, are said after bindings.
    let with_policies = |what: &str| KINDS.iter().any(|k| k.name == what && k.phase == Phase::PutPolicy);
    let kinds = |early: bool| {
        let of = c.kinds.iter().filter(move |(what, _)| with_policies(what) == early);
        of.map(|(what, n)| plural(*n, what)).collect::<Vec<_>>()
    };
    let Some(v) = &file.vhost else {
        return [plural(c.users, "user")]
            .into_iter()
            .chain(kinds(true))
            .chain(kinds(false))
            .collect::<Vec<_>>()
            .join(", ");
    };
    let said = |parts: &[(usize, &str)]| -> Vec<String> {
        parts.iter().filter(|(n, _)| *n > 0).map(|(n, what)| plural(*n, what)).collect()
    };
    let parts: Vec<String> = [
        said(&[(c.exchanges, "exchange"), (c.queues, "queue"), (c.bindings, "binding")]),
        kinds(true),
        said(&[(c.permissions, "permission")]),
        kinds(false),
    ]
    .concat();
    let parts = if parts.is_empty() { "no objects".to_string() } else { parts.join(", ") };
    let proposed = said(&[(file.proposed.shapes, "shape"), (file.proposed.services, "service")]);
    match proposed.is_empty() {
        true => format!("vhost \"{v}\", {parts}"),
        false => format!("vhost \"{v}\", {parts}; proposes {}, commented out at its end", proposed.join(", ")),
    }
}

/// `2 vhosts, 6 users`.
fn counts(t: &Topology) -> String {
    format!("{}, {}", plural(t.vhosts.len(), "vhost"), plural(t.user_names().count(), "user"))
}
