//! The saved-plan file that `plan --out` writes and `apply PLANFILE` reads.
//!
//! It holds the topology files' text, a digest of each live object the plan
//! depends on and a fingerprint of the plan, not the steps: apply re-plans
//! from exactly those texts against the broker as it is then, and carries
//! the plan out only when those objects and the plan are the ones that were
//! reviewed. Steps would have to be trusted blindly; a re-plan that must
//! come out identical gives the same guarantee with the normal checks.
//!
//! Never stored: credentials (the origin is printed without them) and
//! password values (only the files' text, which names `password_env`
//! variables, not their values).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::diagnostic::Diagnostic;
use crate::render::{FleetDocument, Origin, PlanDocument};

/// The key that marks a saved plan; its value is the format version.
pub const MARKER: &str = "warren_saved_plan";
/// Bumped on any incompatible change to the file. 2: a digest per object
/// the plan depends on (`depends_on`) instead of one of the whole live state.
/// 3: the plan as it was shown (`shown`), for `warren show`.
pub const FORMAT_VERSION: u32 = 3;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedPlan {
    /// The format version, under the marker key.
    pub warren_saved_plan: u32,
    pub warren_version: String,
    /// When the plan was made: RFC 3339, UTC.
    pub created: String,
    /// What the plan was made against: the broker's address without
    /// credentials, or `definitions file X`.
    pub origin: String,
    /// The topology path as `plan` was given it (the plan document names it).
    pub path: PathBuf,
    /// The `--replace` queues of the plan.
    pub replace: Vec<String>,
    /// [`crate::fingerprint::depends_on`]: the live objects the plan
    /// depends on, as they were when it was made, by name.
    pub depends_on: BTreeMap<String, String>,
    /// [`plan_fingerprint`] of the plan.
    pub plan_fingerprint: String,
    /// The topology files, in the order they were read: for an
    /// environment, the base's, the project file and its overlays'.
    pub files: Vec<SavedFile>,
    /// The environment the plan is of, in a plan of several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
    /// The project the plan was made for: its project file's name, or the
    /// `--project` given for files without one, which apply then takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The `--target` addresses the plan is limited to, as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<String>,
    /// The plan as `plan` showed it. None in a plan of several environments,
    /// whose report of them all ([`SavedPlans::shown`]) holds each one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown: Option<Shown>,
}

/// A plan as `plan` showed it, which `warren show` draws again in any
/// format: the document, and what its formats draw beside it (the picture
/// of the pull-request comment). Apply never reads it: it plans again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shown {
    pub document: PlanDocument,
    pub origin: Origin,
}

/// The report of several environments' plans as `plan --env` showed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetShown {
    pub document: FleetDocument,
    /// The origin of each environment's plan, in the document's order
    /// (every environment of a saved report has a plan).
    pub origins: Vec<Origin>,
}

impl FleetShown {
    /// The report as it was shown, each plan with its origin again.
    pub fn document(&self) -> FleetDocument {
        let mut document = self.document.clone();
        let plans = document.environments.iter_mut().filter_map(|e| e.plan.as_mut());
        for (plan, origin) in plans.zip(&self.origins) {
            plan.origin = origin.clone();
        }
        document
    }
}

/// The saved plan of several environments (`plan --env ... --out`): one
/// plan per environment, each checked on its own broker by apply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedPlans {
    /// The format version, under the marker key.
    pub warren_saved_plan: u32,
    pub environments: Vec<SavedPlan>,
    /// The report of them all as `plan` showed it.
    pub shown: FleetShown,
}

/// What a saved-plan file holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Saved {
    One(Box<SavedPlan>),
    Environments(SavedPlans),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedFile {
    /// The path as it was read (relative paths stay relative).
    pub path: PathBuf,
    pub text: String,
}

impl SavedPlan {
    /// The files as [`crate::desired::load_texts`] takes them.
    pub fn texts(&self) -> Vec<(PathBuf, String)> {
        self.files.iter().map(|f| (f.path.clone(), f.text.clone())).collect()
    }
}

/// Whether `text` is meant as a saved plan rather than a topology file: a
/// JSON object. TOML cannot start with `{`, so nothing valid is mistaken.
pub fn looks_saved(text: &str) -> bool {
    text.trim_start().starts_with('{')
}

/// Writes `plan` to `path` (pretty JSON, so that a reviewer can read it).
pub fn write(plan: &impl Serialize, path: &Path) -> Result<(), Diagnostic> {
    let mut text = serde_json::to_string_pretty(plan).expect("a saved plan always serialises");
    text.push('\n');
    std::fs::write(path, text).map_err(|e| {
        Diagnostic::error("write", format!("cannot write the saved plan {}: {e}", path.display()))
            .help("check that the directory exists and is writable")
    })
}

/// Reads a saved plan's text; `path` names it in the diagnostics.
pub fn parse(text: &str, path: &Path) -> Result<SavedPlan, Diagnostic> {
    match parse_any(text, path)? {
        Saved::One(plan) => Ok(*plan),
        Saved::Environments(_) => Err(Diagnostic::error(
            "saved-plan",
            format!("{} is the saved plan of several environments", path.display()),
        )
        .help(format!("apply it as `warren apply {}`, or one of them with `--env NAME`", path.display()))),
    }
}

/// Reads a saved plan of one topology or of several environments.
pub fn parse_any(text: &str, path: &Path) -> Result<Saved, Diagnostic> {
    let bad = |what: String| {
        Diagnostic::error("saved-plan", format!("{} is not a usable saved plan: {what}", path.display()))
            .help("make a new one with `warren plan PATH --out FILE`")
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        if e.is_eof() { bad(format!("it is cut short ({e})")) } else { bad(format!("it is not valid JSON ({e})")) }
    })?;
    match value.get(MARKER) {
        None => return Err(bad(format!("it has no \"{MARKER}\" marker"))),
        Some(v) if v.as_u64() != Some(u64::from(FORMAT_VERSION)) => {
            return Err(bad(format!(
                "its format version is {v}, and this warren ({}) reads version {FORMAT_VERSION}",
                env!("CARGO_PKG_VERSION")
            )));
        }
        Some(_) => {}
    }
    let at = |e: serde_path_to_error::Error<serde_json::Error>| bad(format!("at {}: {}", e.path(), e.inner()));
    if value.get("environments").is_some() {
        serde_path_to_error::deserialize(value).map(Saved::Environments).map_err(at)
    } else {
        serde_path_to_error::deserialize(value).map(|p| Saved::One(Box::new(p))).map_err(at)
    }
}

/// Reads a saved plan from disk.
pub fn read(path: &Path) -> Result<SavedPlan, Diagnostic> {
    parse(&read_text(path)?, path)
}

/// Reads a saved plan of one topology or of several environments.
pub fn read_any(path: &Path) -> Result<Saved, Diagnostic> {
    parse_any(&read_text(path)?, path)
}

fn read_text(path: &Path) -> Result<String, Diagnostic> {
    std::fs::read_to_string(path)
        .map_err(|e| Diagnostic::error("read", format!("cannot read {}: {e}", path.display())).help("check the path"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SavedPlan {
        SavedPlan {
            warren_saved_plan: FORMAT_VERSION,
            warren_version: env!("CARGO_PKG_VERSION").into(),
            created: "2026-12-02T19:48:40Z".into(),
            origin: "http://127.0.0.1:15672".into(),
            path: "topology".into(),
            replace: vec!["orders".into()],
            depends_on: BTreeMap::from([("queue \"orders\" in vhost \"/\"".into(), "0123456789abcdef".into())]),
            plan_fingerprint: "fedcba9876543210".into(),
            files: vec![SavedFile {
                path: "topology/a.toml".into(),
                text: "vhosts = [\"/\"]\n[users.u]\npassword_env = \"U_PASSWORD\"\n".into(),
            }],
            environment: None,
            project: Some("orders".into()),
            targets: vec![],
            shown: None,
        }
    }

    #[test]
    fn a_plan_of_several_environments_reads_back_and_is_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plans.json");
        let one = |name: &str| SavedPlan { environment: Some(name.into()), ..sample() };
        let shown = FleetShown { document: FleetDocument::new("topology", vec![]), origins: vec![] };
        let plans = SavedPlans { warren_saved_plan: FORMAT_VERSION, environments: vec![one("a"), one("b")], shown };
        write(&plans, &file).unwrap();
        assert_eq!(read_any(&file).unwrap(), Saved::Environments(plans));
        let d = read(&file).unwrap_err();
        assert!(d.message.contains("the saved plan of several environments"), "{}", d.message);
    }

    #[test]
    fn a_saved_plan_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plan.json");
        write(&sample(), &file).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(looks_saved(&text));
        assert!(text.contains("\"warren_saved_plan\": 3"), "{text}");
        assert_eq!(read(&file).unwrap(), sample());
    }

    #[test]
    fn bad_files_are_diagnostics_that_name_the_file() {
        let p = Path::new("x/plan.json");
        let full = serde_json::to_string(&sample()).unwrap();
        let cases = [
            ("garbage", "it is not valid JSON"),
            ("{\"a\": ", "cut short"),
            (&full[..full.len() / 2], "cut short"),
            ("{\"files\": []}", "no \"warren_saved_plan\" marker"),
            ("[1, 2]", "no \"warren_saved_plan\" marker"),
            (&full.replace("\"warren_saved_plan\":3", "\"warren_saved_plan\":2"), "format version is 2"),
            (&full.replace("\"origin\"", "\"origin_\""), "unknown field"),
        ];
        for (text, expected) in cases {
            let d = parse(text, p).expect_err(text);
            assert!(d.message.starts_with("x/plan.json is not a usable saved plan"), "{}", d.message);
            assert!(d.message.contains(expected), "{text:?}: {}", d.message);
        }
    }
}
