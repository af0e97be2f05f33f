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
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Project {
    /// The name `[project]` gives, or `--project`/`WARREN_PROJECT` for a
    /// directory without one ([`Project::resolve`]); `None` when neither
    /// names it, which offline commands accept and a broker does not.
    pub name: Option<String>,
    /// The environment plan and apply use when `--env` is not given.
    pub default_env: Option<String>,
    /// Its environments, by name.
    pub environments: Vec<Environment>,
    /// The order `apply --env all` rolls out in: stages of environments.
    pub stages: Vec<Vec<String>>,
    /// The levels `[lint]` sets.
    pub lint: LintSettings,
    /// `[project] shapes`: directories of shapes that many projects share,
    /// relative to the project's directory, each with where it is named.
    pub shapes: Vec<(std::path::PathBuf, Location)>,
}

impl Project {
    /// The shapes directories below `root`, the project's directory: their
    /// files hold shapes, not topology.
    pub fn shape_dirs(&self, root: &Path) -> Vec<std::path::PathBuf> {
        self.shapes.iter().map(|(dir, _)| root.join(dir)).collect()
    }

    /// The overlay directories of environment `env` (of every environment
    /// when `None`), below `root`, the project's directory: files there
    /// are not part of the base topology.
    pub fn overlay_dirs(&self, root: &Path, env: Option<&str>) -> Vec<std::path::PathBuf> {
        let chosen = self.environments.iter().filter(|e| env.is_none_or(|n| e.name == n));
        chosen.flat_map(|e| e.overlays.iter().map(|o| root.join(o))).collect()
    }
}

impl Project {
    /// The name the project's records use: its own, or `default` for an
    /// unnamed one, which only offline commands accept.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(DEFAULT)
    }

    /// Settles the project's name with the one given on the command line
    /// (`--project`, `WARREN_PROJECT`). With `required`, as before reaching
    /// a broker, an unnamed project is an error that shows how to name it:
    /// two directories without a project file would otherwise be one
    /// project, each destroying what the other created.
    pub fn resolve(&mut self, given: Option<&str>, required: bool) -> Result<(), Diagnostic> {
        match (&self.name, given) {
            (Some(named), Some(given)) if named != given => Err(Diagnostic::error(
                "project",
                format!("{FILE_NAME} names project \"{named}\", but --project or WARREN_PROJECT says \"{given}\""),
            )
            .help(format!(
                "a directory with a {FILE_NAME} is the project it names: drop --project (or unset WARREN_PROJECT), or run from the other project's directory"
            ))),
            (Some(_), _) => Ok(()),
            (None, Some(given)) if !is_name(given, MAX_NAME) => Err(Diagnostic::error(
                "project",
                format!("project name \"{given}\" (--project or WARREN_PROJECT) is not valid"),
            )
            .help(format!("use 1 to {MAX_NAME} ASCII letters, digits, '-', '_' or '.'"))),
            (None, Some(given)) => {
                self.name = Some(given.to_string());
                Ok(())
            }
            (None, None) if required => Err(Diagnostic::error(
                "project",
                "no project: plan and apply against a broker act for a project, and these files name none",
            )
            .help(format!(
                "write {FILE_NAME} beside the topology files:\n\n    [project]\n    name = \"orders\"\n\nThe project owns what warren creates, and warren destroys only what its own project created. For a one-off run, --project NAME or WARREN_PROJECT=NAME names it instead."
            ))),
            (None, None) => Ok(()),
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
    default_env: Option<toml::Spanned<String>>,
    #[serde(default)]
    shapes: Vec<toml::Spanned<String>>,
}

/// A new project's file (`warren init`): the name, and the settings a
/// project adds next, commented out (docs/format.md, "The project file").
pub fn template(name: &str) -> String {
    let upper: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    format!(
        r#"# The project these topology files belong to. What its applies create on a
# broker is recorded as this project's, and warren destroys only what its
# own project created. See docs/format.md, "The project file".
[project]
name = "{name}"

# Brokers to plan and apply against by name (`--env staging`), each with
# its own URL variable and overlays. See docs/environments.md.
# [environments.staging]
# url_env = "{upper}_STAGING_URL"
"#
    )
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
/// are pushed to `diagnostics`. A file that does not read as a project
/// file at all is one error, and the default project is returned then.
pub fn parse(id: FileId, text: &str, diagnostics: &mut Vec<Diagnostic>) -> Project {
    let at = |span: std::ops::Range<usize>| Location { file: id, span };
    let file: File = match toml::from_str(text) {
        Ok(f) => f,
        Err(e) => {
            let mut d = unreadable(e.message());
            if let Some(span) = e.span() {
                d = d.at(at(span));
            }
            diagnostics.push(d);
            return Project::default();
        }
    };
    let (environments, stages) = environments::read(id, file.environments, file.deploy, diagnostics);
    let lint = lint::read(id, file.lint, diagnostics);
    let mut project = Project { environments, stages, lint, ..Project::default() };
    let Some(section) = file.project else { return project };
    project.shapes = section.shapes.iter().map(|d| (d.get_ref().into(), at(d.span()))).collect();
    let name = section.name;
    if is_name(name.get_ref(), MAX_NAME) {
        project.name = Some(name.into_inner());
    } else {
        diagnostics.push(
            Diagnostic::error("project-file", format!("project name \"{}\" is not valid", name.get_ref()))
                .at(at(name.span()))
                .label("here")
                .help(format!("use 1 to {MAX_NAME} ASCII letters, digits, '-', '_' or '.'")),
        );
    }
    if let Some(env) = section.default_env {
        if project.environments.iter().any(|e| e.name == *env.get_ref()) {
            project.default_env = Some(env.into_inner());
        } else {
            let declared = project.environments.iter().map(|e| e.name.as_str());
            diagnostics.push(environments::undeclared("default_env", env.get_ref(), at(env.span()), declared));
        }
    }
    project
}

/// Whether `d` says the project file does not read as one at all (so
/// nothing else of it was read).
pub fn is_unreadable(d: &Diagnostic) -> bool {
    (d.code == "unknown-key" && d.message.ends_with(UNKNOWN_KEY)) || d.message.starts_with(UNREADABLE)
}

const UNREADABLE: &str = "the project file is not valid: ";
const UNKNOWN_KEY: &str = " in the project file";

/// The error of a project file that does not read as one: serde's unknown
/// field (`unknown field `stagez`, expected `stages``) said as the topology
/// files say an unknown key, with the closest known one.
fn unreadable(message: &str) -> Diagnostic {
    const HELP: &str = "a project file holds settings only ([project], [environments.NAME], [deploy], [lint]); see docs/environments.md; topology goes in other *.toml files";
    let unknown = message.strip_prefix("unknown field `").and_then(|rest| rest.split_once('`'));
    let Some((key, expected)) = unknown else {
        return Diagnostic::error("project-file", format!("{UNREADABLE}{}", message.trim())).label("here").help(HELP);
    };
    let known: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let d = Diagnostic::error("unknown-key", format!("unknown key `{key}`{UNKNOWN_KEY}")).label("unknown key");
    match crate::diagnostic::did_you_mean(key, known.iter().copied()) {
        Some(close) => d.help(format!("did you mean `{close}`?")),
        None if known.is_empty() => d.help(HELP),
        None => d.help(format!(
            "the keys here are {}",
            known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
        )),
    }
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
        assert_eq!(read("[project]\nname = \"team-a\"\n").0.name.as_deref(), Some("team-a"));
        assert_eq!(read("").0, Project::default());
        assert_eq!(read("").0.name(), DEFAULT);
    }

    #[test]
    fn a_typo_is_one_error_at_it_with_the_key_meant() {
        let text = "[environments.staging]\nurl_env = \"S\"\n[deploy]\nstagez = 1\n";
        let (_, d) = read(text);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(&text[d[0].location.clone().unwrap().span], "stagez");
        assert_eq!(d[0].message, "unknown key `stagez` in the project file");
        assert_eq!(d[0].help.as_deref(), Some("did you mean `stages`?"));
    }

    #[test]
    fn the_default_environment_is_a_declared_one() {
        let text = "[project]\nname = \"a\"\ndefault_env = \"dev\"\n[environments.dev]\nurl_env = \"D\"\n";
        assert_eq!(read(text).0.default_env.as_deref(), Some("dev"));
        let text = "[project]\nname = \"a\"\ndefault_env = \"prod\"\n[environments.dev]\nurl_env = \"D\"\n";
        let (p, d) = read(text);
        assert_eq!(p.default_env, None);
        assert_eq!(&text[d[0].location.clone().unwrap().span], "\"prod\"");
        assert!(d[0].help.as_deref().unwrap().contains("\"dev\""), "{d:?}");
    }

    #[test]
    fn a_broker_needs_a_named_project() {
        let mut unnamed = Project::default();
        assert!(unnamed.resolve(None, false).is_ok());
        let e = unnamed.resolve(None, true).unwrap_err();
        assert!(e.help.unwrap().contains("[project]\n    name = "), "the two lines to write");
        unnamed.resolve(Some("orders"), true).unwrap();
        assert_eq!(unnamed.name(), "orders");
        // A project file's name stands; another one given is an error.
        assert!(unnamed.resolve(Some("orders"), true).is_ok());
        assert!(unnamed.resolve(Some("billing"), true).unwrap_err().message.contains("\"billing\""));
        assert!(Project::default().resolve(Some("bad name"), false).is_err());
    }

    #[test]
    fn an_unknown_key_is_an_error_at_its_place() {
        let text = "[project]\nname = \"a\"\nowner = \"b\"\n";
        let (p, d) = read(text);
        assert_eq!(p, Project::default());
        assert_eq!(d.len(), 1);
        let span = d[0].location.clone().unwrap().span;
        assert!(text[span].contains("owner"), "{:?}", d[0]);
        assert!(d[0].message.contains("unknown key `owner`"), "{}", d[0].message);
    }

    #[test]
    fn a_bad_name_is_an_error_at_the_name() {
        let text = "[project]\nname = \"team a\"\n";
        let (_, d) = read(text);
        assert_eq!(&text[d[0].location.clone().unwrap().span], "\"team a\"");
        assert!(read("[project]\nname = \"\"\n").1.len() == 1);
    }
}
