//! The desired state: topology files on disk to a [`Topology`], with the
//! place of every object for diagnostics.

mod decl;
pub mod expect;
pub mod kinds;
mod merge;
mod moved;
mod overlay;
mod parse;
mod reader;
mod removed;
pub mod revision;
pub mod schema;
mod services;
mod shapes;
mod shared;
mod stamps;
mod super_streams;
pub(crate) mod tree;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

pub(crate) use kinds::is_named;
pub use parse::MAX_NAME_BYTES;
pub(crate) use parse::{EXCHANGE_TYPES, HASHING_ALGORITHMS, LIMIT_KEYS, USER_LIMIT_KEYS, check_expect};

use crate::diagnostic::Diagnostic;
use crate::model::Topology;
use crate::project::{self, Environment, Project};
use crate::source::{FileId, Locations, Sources};
pub use shared::Shared;

/// The topology the files describe, where each part came from, and what is
/// wrong with them. The topology holds every object that parsed cleanly.
#[derive(Debug, Clone)]
pub struct Desired {
    pub topology: Shared<Topology>,
    pub locations: Shared<Locations>,
    pub sources: Sources,
    pub diagnostics: Vec<Diagnostic>,
    /// The project the files belong to (`warren.toml`, else `default`).
    pub project: Project,
    /// An environment's vhosts that its overlays rename: the base's name
    /// to the environment's.
    pub renamed: BTreeMap<String, String>,
    /// `warren destroy`: the topology is the files' vhosts, emptied.
    pub destroy: bool,
    /// `--target`: the plan is limited to these objects and what they need.
    pub targets: Vec<crate::diff::target::Target>,
}

impl Desired {
    /// What `warren destroy` plans to: the files' vhosts with nothing in
    /// them (their settings as declared, so that a vhost another project
    /// keeps is not changed), no users and no broker-wide objects. The plan
    /// then removes what the project owns there, as it would objects taken
    /// out of the files, and nothing else.
    pub fn destroyed(mut self) -> Desired {
        let vhosts = std::mem::take(&mut self.topology.vhosts);
        self.topology = Topology::default().into();
        for (name, v) in vhosts {
            let emptied = crate::model::Vhost { settings: v.settings, ..crate::model::Vhost::new(&name) };
            self.topology.vhosts.insert(name, emptied);
        }
        self.destroy = true;
        // The files' findings are about what they declare, which is going.
        self.diagnostics.retain(Diagnostic::is_error);
        self
    }

    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// Leaves out the problems of environments' own settings: with `--env`,
    /// each fails the environment it belongs to alone, when it is picked
    /// (see [`environment_unchecked`]), not the base of the others.
    pub fn without_environment_problems(&mut self) {
        let own: Vec<Diagnostic> = self.project.environments.iter().flat_map(|e| e.problems.clone()).collect();
        self.diagnostics.retain(|d| !own.contains(d));
    }

    /// Whether the project file did not read at all: nothing else was
    /// read, and its environments are unknown.
    pub fn project_unreadable(&self) -> bool {
        self.diagnostics.iter().any(project::is_unreadable)
    }
}

/// [`load`], or the files at a git revision when `path` is `REV:PATH` and no
/// path on disk (see `revision.rs`).
pub fn load_at(path: &Path) -> Desired {
    match revision::parse(path) {
        Some((rev, within)) => revision::load(&rev, &within),
        None => load(path),
    }
}

/// Reads a file, or every `*.toml` below a directory in sorted order, and
/// checks the whole topology.
pub fn load(path: &Path) -> Desired {
    let mut desired = load_unchecked(path);
    let found = lint(&desired);
    desired.add_findings(found);
    desired
}

/// Reads the files as [`load`] does, without the whole-topology checks of
/// [`lint`]: for a caller that runs them beside other work.
pub fn load_unchecked(path: &Path) -> Desired {
    let mut diagnostics = Vec::new();
    let project = project::file_of(path).and_then(|file| match std::fs::read_to_string(&file) {
        Ok(text) => Some((file, text)),
        Err(e) => {
            diagnostics.push(
                Diagnostic::error("read", format!("cannot read {}: {e}", file.display()))
                    .help("check the path and its permissions"),
            );
            None
        }
    });
    // A project file that does not read is the one error said: without
    // it, its overlays would be read as base files, each a false finding.
    let settings = match &project {
        Some((file, text)) => match project_alone(file, text) {
            Ok(settings) => settings,
            Err(broken) => return broken,
        },
        None => Project::default(),
    };
    let mut texts = Vec::new();
    let shape_dirs = settings.shape_dirs(path);
    let shape_files = shape_texts(&settings, &shape_dirs, &mut diagnostics);
    let apart = [settings.overlay_dirs(path, None), shape_dirs].concat();
    match topology_files(path, &apart) {
        Ok(files) => {
            read_texts(files, &mut texts, &mut diagnostics);
        }
        Err(d) => diagnostics.push(d),
    }
    from_texts(texts, project, shape_files, diagnostics)
}

/// The files of the project's shapes directories, in sorted order; what
/// cannot be read is said at the project file's line that names it.
fn shape_texts(settings: &Project, dirs: &[PathBuf], diagnostics: &mut Vec<Diagnostic>) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    for (dir, (named, at)) in dirs.iter().zip(&settings.shapes) {
        let mut found = Vec::new();
        if let Err(e) = collect(dir, &mut found) {
            diagnostics.push(
                Diagnostic::error("read", format!("cannot read the shapes directory {}: {e}", dir.display()))
                    .at(at.clone())
                    .label(format!("\"{}\"", named.display()))
                    .help("create it, or fix its path in `[project] shapes` (relative to the project's directory)"),
            );
            continue;
        }
        found.sort();
        read_texts(found, &mut files, diagnostics);
    }
    files
}

/// Files in memory: each path with its text.
type Texts = Vec<(PathBuf, String)>;

/// Reads each of `files` into `texts`; what cannot be read is an error
/// that names the file.
fn read_texts(files: Vec<PathBuf>, texts: &mut Texts, diagnostics: &mut Vec<Diagnostic>) {
    for file in files {
        match std::fs::read_to_string(&file) {
            Ok(text) => texts.push((file, text)),
            Err(e) => diagnostics.push(
                Diagnostic::error("read", format!("cannot read {}: {e}", file.display()))
                    .help("check the path and its permissions"),
            ),
        }
    }
}

/// The files of `files` below the shapes directories `project` names,
/// apart from the others.
fn split_shapes(root: &Path, project: Option<&(PathBuf, String)>, files: Texts) -> (Texts, Texts) {
    let declared = project.map(|(_, text)| project::parse(FileId(0), text, &mut Vec::new()));
    let dirs = declared.map(|p| p.shape_dirs(root)).unwrap_or_default();
    files.into_iter().partition(|(p, _)| dirs.iter().any(|d| p.starts_with(d)))
}

/// The project file read alone; when it does not read as one, the desired
/// state that holds only its diagnostics.
fn project_alone(file: &Path, text: &str) -> Result<Project, Desired> {
    let mut sources = Sources::default();
    let id = sources.add(file, text.to_string());
    let mut diagnostics = Vec::new();
    let settings = project::parse(id, text, &mut diagnostics);
    if !diagnostics.iter().any(|d| d.is_error() && project::is_unreadable(d)) {
        return Ok(settings);
    }
    Err(Desired {
        topology: Topology::default().into(),
        locations: Locations::default().into(),
        sources,
        diagnostics,
        project: Project::default(),
        renamed: BTreeMap::new(),
        destroy: false,
        targets: Vec::new(),
    })
}

/// The desired state of files already in memory (a saved plan's), in the
/// order given; diagnostics name the paths given with them. The file
/// `root/warren.toml`, if given, is the project file.
pub fn load_texts(root: &Path, mut files: Vec<(PathBuf, String)>) -> Desired {
    let project_path = root.join(project::FILE_NAME);
    let project = files.iter().position(|(p, _)| *p == project_path).map(|i| files.remove(i));
    let (shape_files, files) = split_shapes(root, project.as_ref(), files);
    let mut desired = from_texts(files, project, shape_files, Vec::new());
    let found = lint(&desired);
    desired.add_findings(found);
    desired
}

/// The desired state of one environment: `base` (read by [`load_unchecked`]
/// from `root`) with the environment's overlays merged over it, checked as
/// a whole.
pub fn environment(base: &Desired, root: &Path, env: &Environment) -> Desired {
    let mut desired = environment_unchecked(base, root, env);
    let found = lint(&desired);
    desired.add_findings(found);
    desired
}

/// [`environment`] without the whole-topology checks of [`lint`].
pub fn environment_unchecked(base: &Desired, root: &Path, env: &Environment) -> Desired {
    let mut desired = base.clone();
    desired.diagnostics.extend(env.problems.iter().cloned());
    let files = overlay_texts(root, env, &mut desired.diagnostics);
    overlay::apply(&mut desired, files);
    desired
}

/// The environment `env` of files already in memory (a saved plan's): the
/// project file and the base's files, with the overlay files of `env`
/// among them, as `environment` read them.
pub fn environment_texts(root: &Path, mut files: Vec<(PathBuf, String)>, env: &str) -> Desired {
    let project_path = root.join(project::FILE_NAME);
    let project = files.iter().position(|(p, _)| *p == project_path).map(|i| files.remove(i));
    let declared = project.as_ref().map(|(_, text)| project::parse(FileId(0), text, &mut Vec::new()));
    let overlays = declared.map(|p| p.overlay_dirs(root, Some(env))).unwrap_or_default();
    let (over, files): (Vec<_>, Vec<_>) =
        files.into_iter().partition(|(p, _)| overlays.iter().any(|o| p.starts_with(o)));
    let (shape_files, files) = split_shapes(root, project.as_ref(), files);
    let base = from_texts(files, project, shape_files, Vec::new());
    if !base.project.environments.iter().any(|e| e.name == env) {
        let mut d = base;
        d.diagnostics.push(
            Diagnostic::error("saved-plan", format!("the saved plan's project file declares no environment \"{env}\""))
                .help("make a new plan with `warren plan PATH --env NAME --out FILE`"),
        );
        return d;
    }
    merged(base, over)
}

/// `desired` with `files` merged over it as overlays, checked as a whole.
fn merged(mut desired: Desired, files: Vec<(PathBuf, String)>) -> Desired {
    overlay::apply(&mut desired, files);
    let found = lint(&desired);
    desired.add_findings(found);
    desired
}

/// The files of `env`'s overlays, in order; what cannot be read is said in
/// `diagnostics`.
fn overlay_texts(root: &Path, env: &Environment, diagnostics: &mut Vec<Diagnostic>) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    for dir in &env.overlays {
        let dir = root.join(dir);
        let mut found = Vec::new();
        if let Err(e) = collect(&dir, &mut found) {
            diagnostics.push(
                Diagnostic::error(
                    "overlay",
                    format!("cannot read overlay {} of environment \"{}\": {e}", dir.display(), env.name),
                )
                .at(env.at.clone())
                .help("create the directory, or fix its path in `overlays` (relative to the project's directory)"),
            );
            continue;
        }
        if found.is_empty() {
            diagnostics.push(
                Diagnostic::warning(
                    "overlay",
                    format!("overlay {} of environment \"{}\" holds no *.toml files", dir.display(), env.name),
                )
                .at(env.at.clone())
                .help("add the files that change the base for this environment, or drop the overlay"),
            );
        }
        found.sort();
        read_texts(found, &mut files, diagnostics);
    }
    files
}

/// The whole-topology checks: references between objects, and what the
/// broker would refuse or do differently than the files say.
pub fn lint(desired: &Desired) -> Vec<Diagnostic> {
    findings(desired).shown
}

/// The whole-topology checks' findings, with those that exceptions allow.
pub fn findings(desired: &Desired) -> crate::lint::Findings {
    findings_for(desired, None)
}

/// [`findings`] for a broker of `version` (major, minor). The rules judge
/// valid files only (see [`crate::lint::Findings::without_rules`]).
pub fn findings_for(desired: &Desired, version: Option<(u32, u32)>) -> crate::lint::Findings {
    let found = crate::lint::check_for(&desired.topology, &desired.locations, &desired.project.lint, version);
    let invalid = desired.has_errors()
        || found.shown.iter().any(|d| d.is_error() && crate::lint::rules::rule_of(d.code).is_none());
    if invalid { found.without_rules() } else { found }
}

impl Desired {
    /// Its diagnostics that `base` does not already say: an environment's
    /// own, shown apart from its base's.
    pub fn beyond(&self, base: &[Diagnostic]) -> Vec<Diagnostic> {
        // A set: a base of 10,000 findings compared one by one with an
        // environment's 10,000 took seconds.
        let said: rustc_hash::FxHashSet<(&Option<crate::source::Location>, &str)> =
            base.iter().map(|b| (&b.location, b.message.as_str())).collect();
        self.diagnostics.iter().filter(|d| !said.contains(&(&d.location, d.message.as_str()))).cloned().collect()
    }

    /// The same topology with the vhosts an environment renamed under
    /// their base names again: for comparing two environments' contents.
    pub fn in_base_names(mut self) -> Desired {
        let back: BTreeMap<String, String> = self.renamed.iter().map(|(b, e)| (e.clone(), b.clone())).collect();
        overlay::rename(&mut self.topology, &mut self.locations, &back);
        self.renamed.clear();
        self
    }

    /// Adds what [`lint`] found.
    pub fn add_findings(&mut self, found: Vec<Diagnostic>) {
        self.diagnostics.extend(found);
        crate::diagnostic::sort(&mut self.diagnostics);
    }
}

fn from_texts(
    files: Vec<(PathBuf, String)>,
    project_file: Option<(PathBuf, String)>,
    shape_files: Vec<(PathBuf, String)>,
    mut diagnostics: Vec<Diagnostic>,
) -> Desired {
    let mut sources = Sources::default();
    let ids: Vec<FileId> = files.into_iter().map(|(path, text)| sources.add(&path, text)).collect();
    // The texts apart from `sources`, which the stamps add to.
    let texts: Vec<std::sync::Arc<str>> = ids.iter().map(|id| sources.get(*id).text.clone()).collect();
    let parsed = parse_all(&texts, &ids);
    // Added after the topology files, which keep their ids.
    let project = project_file.map_or_else(Project::default, |(path, text)| {
        let id = sources.add(&path, text);
        let text = sources.get(id).text.clone();
        project::parse(id, &text, &mut diagnostics)
    });
    let shape_ids: Vec<FileId> = shape_files.into_iter().map(|(path, text)| sources.add(&path, text)).collect();
    let shape_texts: Vec<std::sync::Arc<str>> = shape_ids.iter().map(|id| sources.get(*id).text.clone()).collect();
    let mut decls = Vec::new();
    let mut stamping = Vec::new();
    for ((parsed, found), id) in parsed.iter().zip(&ids) {
        diagnostics.extend(found.iter().cloned());
        let vhosts = parsed.decl.as_ref().map(|d| d.vhosts.clone()).unwrap_or_default();
        stamping.push(stamps::Stamping {
            file: *id,
            shapes: parsed.shapes.as_ref(),
            stamps: parsed.stamps.as_ref(),
            vhosts,
        });
    }
    let shape_texts: Vec<(FileId, &str)> = shape_ids.iter().copied().zip(shape_texts.iter().map(|t| &**t)).collect();
    let made = stamps::expand(&stamping, &shape_texts, &mut sources, &mut diagnostics);
    drop(stamping);
    for (parsed, _) in parsed {
        decls.extend(parsed.decl);
    }
    // What stamps made comes after what is written out: a duplicate is
    // said at the stamp.
    decls.extend(made);
    let (topology, locations) = merge::merge(decls, &sources, &mut diagnostics);
    crate::diagnostic::sort(&mut diagnostics);
    Desired {
        topology: topology.into(),
        locations: locations.into(),
        sources,
        diagnostics,
        project,
        renamed: BTreeMap::new(),
        destroy: false,
        targets: Vec::new(),
    }
}

/// Each file parsed, in order, with its diagnostics: the files are split
/// among the machine's cores, since parsing is most of reading them.
fn parse_all<'i>(texts: &'i [std::sync::Arc<str>], ids: &[FileId]) -> Vec<(parse::ParsedFile<'i>, Vec<Diagnostic>)> {
    let parse = |(id, text): (&FileId, &'i std::sync::Arc<str>)| {
        let mut found = Vec::new();
        let parsed = parse::parse_with_shapes(*id, text, &mut found);
        (parsed, found)
    };
    ids.par_iter().zip(texts.par_iter()).map(parse).collect()
}

/// The topology files a path names, but those below `overlays`.
fn topology_files(path: &Path, overlays: &[PathBuf]) -> Result<Vec<PathBuf>, Diagnostic> {
    let meta = std::fs::metadata(path).map_err(|e| {
        Diagnostic::error("read", format!("cannot read {}: {e}", path.display()))
            .help("give the path of a topology file or of a directory of them")
    })?;
    if meta.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    collect(path, &mut out).map_err(|e| {
        Diagnostic::error("read", format!("cannot list {}: {e}", path.display())).help("check its permissions")
    })?;
    // The project file holds settings, not topology.
    let project_file = path.join(project::FILE_NAME);
    out.retain(|f| *f != project_file && !overlays.iter().any(|o| f.starts_with(o)));
    out.sort();
    if out.is_empty() {
        return Err(Diagnostic::error("read", format!("{} holds no *.toml files", path.display()))
            .help("point warren at a topology file or a directory that contains some"));
    }
    Ok(out)
}

/// Adds every `*.toml` below `dir` to `out`, unsorted, but routing test
/// files (`*.test.toml`, see `expect.rs`): they are no topology.
pub(crate) fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "toml") && !expect::is_test_file(&path) {
            out.push(path);
        }
    }
    Ok(())
}

/// The keys the parser accepts in each table, by a name of the table's
/// place, for the formatter's test that gives each of them its place.
#[cfg(test)]
pub(crate) fn known_keys() -> Vec<(&'static str, &'static [&'static str])> {
    vec![
        ("vhost", parse::VHOST_KEYS),
        ("external", parse::EXTERNAL_KEYS),
        ("exchange", parse::EXCHANGE_KEYS),
        ("queue", parse::QUEUE_KEYS),
        ("binding", parse::BINDING_KEYS),
        ("policy", parse::POLICY_KEYS),
        ("user", parse::USER_KEYS),
        ("permission", parse::PERMISSION_KEYS),
        ("service", services::SERVICE_KEYS),
        ("publish", services::PUBLISH_KEYS),
        ("declares", services::DECLARES_KEYS),
        ("super stream", super_streams::SUPER_STREAM_KEYS),
        ("removed", removed::REMOVED_KEYS),
    ]
}
