//! `warren fmt`: lays out the files canonically (`crate::format`), or with
//! `--check` shows how each would change and changes nothing.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use similar::TextDiff;

use crate::desired::expect::is_test_file;
use crate::diagnostic::Diagnostic;
use crate::error::{self, Done, Error};
use crate::format::{self, FileKind};
use crate::project;
use crate::source::{Location, Sources};
use crate::writer::Writer;

/// What `fmt` found: the files it read, and those not in the canonical
/// layout, with their text as it is and as it would be.
pub struct Report {
    pub files: usize,
    pub changed: Vec<Changed>,
}

/// A file whose layout is not the canonical one.
pub struct Changed {
    pub path: PathBuf,
    pub before: String,
    pub after: String,
}

/// Formats the files `path` names; with `check`, writes nothing and fails
/// when a file would change.
pub fn run(path: &Path, check: bool, out: &Writer) -> error::Result {
    let report = report(path)?;
    if !check {
        for c in &report.changed {
            std::fs::write(&c.path, &c.after).map_err(|e| {
                Error::new(error::Kind::Invalid).line(format!("error: cannot write {}: {e}", c.path.display()))
            })?;
        }
    }
    show(&report, check, out);
    if check && !report.changed.is_empty() {
        let n = report.changed.len();
        let files = if n == 1 { "1 file is".to_string() } else { format!("{n} files are") };
        return Err(Error::invalid().line(format!(
            "error: {files} not in the canonical layout\n  help: run `warren fmt {}` to lay them out",
            path.display()
        )));
    }
    Ok(Done::Ok)
}

/// Every file read and formatted; the first files that are not TOML, at
/// their line and column, when any is not.
pub fn report(path: &Path) -> error::Result<Report> {
    let mut sources = Sources::default();
    let mut problems = Vec::new();
    let mut changed = Vec::new();
    let files = files(path).map_err(|d| Error::invalid().drawn([d], &sources))?;
    // Each file on its own, in parallel as `desired` reads them; the
    // results in the files' order.
    let formatted: Vec<_> = files
        .par_iter()
        .map(|(file, kind)| {
            let before = std::fs::read_to_string(file)?;
            let after = format::format(&before, *kind);
            Ok((before, after))
        })
        .collect::<Vec<std::io::Result<_>>>();
    for ((file, _), result) in files.iter().zip(formatted) {
        match result {
            Err(e) => problems.push(Diagnostic::error("read", format!("cannot read {}: {e}", file.display()))),
            Ok((before, Ok(after))) if after == before => {}
            Ok((before, Ok(after))) => changed.push(Changed { path: file.clone(), before, after }),
            Ok((before, Err(e))) => {
                let id = sources.add(file, before);
                let d = Diagnostic::error("syntax", format!("invalid TOML: {}", e.message))
                    .at(Location { file: id, span: e.span })
                    .help("fix the TOML syntax; https://toml.io describes it; no file was formatted");
                problems.push(d);
            }
        }
    }
    if !problems.is_empty() {
        return Err(Error::invalid().drawn(problems, &sources));
    }
    Ok(Report { files: files.len(), changed })
}

/// The files `path` names, each with its kind: a file, or every `*.toml`
/// below a directory, in sorted order.
fn files(path: &Path) -> Result<Vec<(PathBuf, FileKind)>, Diagnostic> {
    let read = |e: std::io::Error| {
        Diagnostic::error("read", format!("cannot read {}: {e}", path.display()))
            .help("give the path of a topology file or of a directory of them")
    };
    if std::fs::metadata(path).map_err(read)?.is_file() {
        let project = path.file_name().is_some_and(|n| n == project::FILE_NAME);
        return Ok(vec![(path.to_path_buf(), kind(path, project))]);
    }
    let mut found = Vec::new();
    below(path, &mut found).map_err(read)?;
    found.sort();
    let project_file = path.join(project::FILE_NAME);
    Ok(found.into_iter().map(|f| (f.clone(), kind(&f, f == project_file))).collect())
}

fn kind(file: &Path, project: bool) -> FileKind {
    if project {
        FileKind::Project
    } else if is_test_file(file) {
        FileKind::Test
    } else {
        FileKind::Topology
    }
}

/// Every `*.toml` below `dir`, but in hidden directories (`.git`, an
/// editor's): fmt writes, and those files are no one's topology.
fn below(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            if !path.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')) {
                below(&path, out)?;
            }
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
    Ok(())
}

/// The files changed (or, with `check`, a diff of each that would be;
/// only its name with -q), and a count beside them.
fn show(report: &Report, check: bool, out: &Writer) {
    for c in &report.changed {
        if check && !out.quiet() {
            out.out(diff(c));
        } else {
            out.outln(c.path.display().to_string());
        }
    }
    let n = report.changed.len();
    let verb = if check { "would be reformatted" } else { "reformatted" };
    out.note(format!("{n} of {} files {verb}.", report.files));
}

/// A unified diff of a file's layout, as `git diff` shows one.
pub fn diff(c: &Changed) -> String {
    let name = c.path.display().to_string();
    // git's a/ and b/ prefixes read wrong before an absolute path.
    let (a, b) = if c.path.is_absolute() { (name.clone(), name) } else { (format!("a/{name}"), format!("b/{name}")) };
    TextDiff::from_lines(&c.before, &c.after).unified_diff().context_radius(3).header(&a, &b).to_string()
}
