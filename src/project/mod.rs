//! The project file, `warren.toml` at the root of a topology directory:
//! settings, never topology. It names the project, the owner of what its
//! applies create or adopt on a broker shared with other projects, and its
//! environments (`environments.rs`).

mod environments;
mod lint;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::diagnostic::Diagnostic;
use crate::lint::LintSettings;
use crate::source::{FileId, Location};

/// The project file's name, at the root of a topology directory.
pub const FILE_NAME: &str = "warren.toml";

pub use crate::model::DEFAULT_PROJECT as DEFAULT;

/// The longest project name: it is written into the broker's records and
/// shown in every plan of another project.
const MAX_NAME: usize = 64;

pub use environments::Environment;

/// A project's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    pub name: String,
    /// Its environments, by name.
    pub environments: Vec<Environment>,
    /// The order `apply --env all` rolls out in: stages of environments.
    pub stages: Vec<Vec<String>>,
    /// The levels `[lint]` sets.
    pub lint: LintSettings,
}

impl Project {
    /// The overlay directories of environment `env` (of every environment
    /// when `None`), below `root`, the project's directory: files there
    /// are not part of the base topology.
    pub fn overlay_dirs(&self, root: &Path, env: Option<&str>) -> Vec<std::path::PathBuf> {
        let chosen = self.environments.iter().filter(|e| env.is_none_or(|n| e.name == n));
        chosen.flat_map(|e| e.overlays.iter().map(|o| root.join(o))).collect()
    }
}

impl Default for Project {
    fn default() -> Self {
        Project {
            name: DEFAULT.to_string(),
            environments: Vec::new(),
            stages: Vec::new(),
            lint: LintSettings::default(),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    project: Option<Section>,
    #[serde(default)]
    environments: BTreeMap<toml::Spanned<String>, environments::EnvironmentSection>,
    deploy: Option<environments::DeploySection>,
    #[serde(default)]
    lint: BTreeMap<toml::Spanned<String>, toml::Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Section {
    name: toml::Spanned<String>,
}

/// The project file of the topology at `path`, when `path` is a directory
/// that has one. A single topology file belongs to project `default`: its
/// plan would treat every other file of a project as removed.
pub fn file_of(path: &Path) -> Option<PathBuf> {
    let file = path.join(FILE_NAME);
    (path.is_dir() && file.is_file()).then_some(file)
}

/// The project of the directory `path`, read alone (no topology), its
/// problems left to the run that reads it with the topology.
pub fn read(path: &Path) -> Project {
    match file_of(path).and_then(|f| std::fs::read_to_string(f).ok()) {
        Some(text) => parse(FileId(0), &text, &mut Vec::new()),
        None => Project::default(),
    }
}

/// Reads a project file's text (file `id` in the run's sources). Problems
/// are pushed to `diagnostics`, and the default project is returned then.
pub fn parse(id: FileId, text: &str, diagnostics: &mut Vec<Diagnostic>) -> Project {
    let at = |span: std::ops::Range<usize>| Location { file: id, span };
    let file: File = match toml::from_str(text) {
        Ok(f) => f,
        Err(e) => {
            let mut d = Diagnostic::error("project-file", format!("the project file is not valid: {}", e.message()))
                .help("a project file holds settings only, e.g. [project] with name = \"team-a\"; topology goes in other *.toml files");
            if let Some(span) = e.span() {
                d = d.at(at(span));
            }
            diagnostics.push(d);
            return Project::default();
        }
    };
    let (environments, stages) = environments::read(id, file.environments, file.deploy, diagnostics);
    let lint = lint::read(id, file.lint, diagnostics);
    let Some(section) = file.project else { return Project { environments, stages, lint, ..Project::default() } };
    let name = section.name.get_ref();
    if !is_name(name, MAX_NAME) {
        diagnostics.push(
            Diagnostic::error("project-file", format!("project name \"{name}\" is not valid"))
                .at(at(section.name.span()))
                .label("here")
                .help(format!("use 1 to {MAX_NAME} ASCII letters, digits, '-', '_' or '.'")),
        );
        return Project { environments, stages, lint, ..Project::default() };
    }
    Project { name: name.clone(), environments, stages, lint }
}

/// Whether `name` is 1 to `max` ASCII letters, digits, '-', '_' or '.': a
/// name that is safe in the broker's records, in reports and in globs.
fn is_name(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (Project, Vec<Diagnostic>) {
        let mut d = Vec::new();
        (parse(FileId(0), text, &mut d), d)
    }

    #[test]
    fn names_the_project() {
        assert_eq!(read("[project]\nname = \"team-a\"\n").0.name, "team-a");
        assert_eq!(read("").0, Project::default());
    }

    #[test]
    fn an_unknown_key_is_an_error_at_its_place() {
        let text = "[project]\nname = \"a\"\nowner = \"b\"\n";
        let (p, d) = read(text);
        assert_eq!(p, Project::default());
        assert_eq!(d.len(), 1);
        let span = d[0].location.clone().unwrap().span;
        assert!(text[span].contains("owner"), "{:?}", d[0]);
        assert!(d[0].message.contains("unknown field"), "{}", d[0].message);
    }

    #[test]
    fn a_bad_name_is_an_error_at_the_name() {
        let text = "[project]\nname = \"team a\"\n";
        let (_, d) = read(text);
        assert_eq!(&text[d[0].location.clone().unwrap().span], "\"team a\"");
        assert!(read("[project]\nname = \"\"\n").1.len() == 1);
    }
}
