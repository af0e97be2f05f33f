//! `warren import --object ADDRESS --into DIR`: one live object (or those
//! an address's globs name) added to an existing topology, in the file that
//! declares its vhost. It writes files only; the next apply records the
//! objects as the project's, since they match the broker.

use std::fs;
use std::path::{Path, PathBuf};

use super::import::read;
use crate::cli::Connection;
use crate::desired;
use crate::diagnostic::Diagnostic;
use crate::diff::target::Target;
use crate::error::{self, Done, Error};
use crate::import::{Known, object};
use crate::model::ObjectKey;
use crate::source::Sources;
use crate::writer::Writer;

pub fn run(
    state: Option<&Path>,
    targets: &[Target],
    dir: &Path,
    connection: &Connection,
    out: &Writer,
) -> error::Result {
    let before = desired::load(dir);
    if before.sources.ids().next().is_none() {
        return Err(Error::invalid().line(format!(
            "{} holds no topology files to add to: `warren init` or `warren import --out` starts one.",
            dir.display()
        )));
    }
    if before.has_errors() {
        let errors: Vec<Diagnostic> = before.diagnostics.iter().filter(|d| d.is_error()).cloned().collect();
        return Err(Error::invalid()
            .drawn(errors, &before.sources)
            .line(format!("{} is not valid: nothing was written; fix it first.", dir.display())));
    }
    let origin = read(state, &[], connection).map_err(|d| Error::invalid().drawn([d], &Sources::default()))?;
    let found = object::named(&origin.live.topology, targets, &before.topology);
    let named: Vec<&str> = targets.iter().map(|t| t.text.as_str()).collect();
    if found.vhosts.is_empty() && found.objects.is_empty() {
        return Err(Error::invalid().line(format!(
            "Nothing to import: no object of {} matches {} that {} does not declare already.",
            origin.source,
            named.join(", "),
            dir.display()
        )));
    }
    // One file per vhost: what is added goes beside the vhost's declaration.
    let known = Known { beside: Some(&before.topology), queues_per_file: usize::MAX, ..Known::default() };
    let imported = crate::import::import_knowing(&found, &[], &origin.source, &known)
        .map_err(|d| Error::invalid().drawn([d], &Sources::default()))?;
    let written = write_beside(&before, dir, &imported.files)?;
    let after = desired::load(dir);
    if after.has_errors() {
        let errors: Vec<Diagnostic> = after.diagnostics.iter().filter(|d| d.is_error()).cloned().collect();
        restore(&written);
        return Err(Error::invalid().drawn(errors, &after.sources).line(
            "The files with these objects added would not be valid, so nothing was written: import what they \
             need too (--object for each), or list it under [external].",
        ));
    }
    for (path, was) in written.iter().filter(|_| !out.quiet()) {
        let verb = if was.is_some() { "Added to" } else { "Wrote" };
        out.outln(format!("{verb} {}", path.display()));
    }
    out.outln(format!(
        "Imported {} from {}. The next `warren apply` records them as project \"{}\"'s: they match the broker, \
         so its plan changes nothing of them.",
        what(&found),
        origin.source,
        after.project.name()
    ));
    Ok(Done::Ok)
}

/// Each imported file's text added to the file that declares its vhost,
/// or written as a new file; on failure, every file as it was.
fn write_beside(
    before: &desired::Desired,
    dir: &Path,
    files: &[crate::import::File],
) -> Result<Vec<(PathBuf, Option<String>)>, Error> {
    let mut written: Vec<(PathBuf, Option<String>)> = Vec::new();
    for file in files {
        // Beside the vhost's declaration, or a file of its own (users.toml
        // for users), which must be new.
        let (path, text) = match file.vhost.as_deref().and_then(|v| declaring(before, v)) {
            Some(path) => (path, format!("\n{}", object::body(&file.text))),
            None => (dir.join(&file.name), file.text.clone()),
        };
        let was = fs::read_to_string(&path).ok();
        let appends = text.starts_with('\n');
        if was.is_some() && !appends {
            restore(&written);
            return Err(Error::invalid().line(format!(
                "{} exists, and is not where warren declares what it would hold: nothing was written. Add them \
                 by hand, or import them into a new directory with `warren import --out`.",
                path.display()
            )));
        }
        let new = format!("{}{text}", was.clone().unwrap_or_default());
        if let Err(e) = fs::write(&path, new) {
            restore(&written);
            return Err(Error::invalid().line(format!("cannot write {}: {e}; nothing was written.", path.display())));
        }
        written.push((path, was));
    }
    Ok(written)
}

/// The first file of `desired` whose `vhosts` names `v`, when one does:
/// what is appended there belongs to its vhosts.
fn declaring(desired: &desired::Desired, v: &str) -> Option<PathBuf> {
    let sources = &desired.sources;
    sources.files().map(|id| sources.get(id)).find_map(|f| {
        let table: toml::Table = toml::from_str(&f.text).ok()?;
        let names = table.get("vhosts")?.as_array()?;
        names.iter().any(|n| n.as_str() == Some(v)).then(|| f.path.clone())
    })
}

/// Puts every written file back as it was.
fn restore(written: &[(PathBuf, Option<String>)]) {
    for (path, was) in written {
        let _ = match was {
            Some(text) => fs::write(path, text),
            None => fs::remove_file(path),
        };
    }
}

/// What was imported: each object, or how many past ten.
fn what(found: &crate::model::Topology) -> String {
    let inventory = crate::model::Inventory::of(found);
    let objects: Vec<String> =
        inventory.objects.iter().filter(|k| !matches!(k, ObjectKey::Vhost(_))).map(ToString::to_string).collect();
    match objects.len() {
        0..=10 => objects.join(", "),
        n => format!("{n} objects"),
    }
}
