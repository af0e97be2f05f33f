//! The environments of a project file: the brokers one topology runs on,
//! each with its overlays, and the stages `apply --env all` rolls out in.
//!
//! ```toml
//! [environments.staging]
//! url_env = "ORDERS_STAGING_URL"
//! overlays = ["overlays/staging"]
//!
//! [deploy]
//! stages = [["staging"], ["prod-eu", "prod-us"]]
//! ```
//!
//! Credentials never live in the file: an environment names the variables
//! that hold its URLs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use crate::diagnostic::Diagnostic;
use crate::source::{FileId, Location};

/// The longest environment name: it heads a section of every report.
const MAX_NAME: usize = 64;

/// One environment: where its broker is, and what it changes of the base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    pub name: String,
    /// The variable holding the management API URL, credentials included.
    pub url_env: String,
    /// The variable holding the AMQP URL; by default the broker's own
    /// listeners.
    pub amqp_url_env: Option<String>,
    /// Directories of TOML merged over the base, in order, relative to the
    /// project's directory.
    pub overlays: Vec<PathBuf>,
    /// The environment's key in the project file.
    pub at: Location,
    /// What is wrong with this environment's own settings: a command that
    /// picks it fails for it, and the others go on.
    pub problems: Vec<Diagnostic>,
}

/// An environment's section as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EnvironmentSection {
    url_env: Spanned<String>,
    amqp_url_env: Option<Spanned<String>>,
    #[serde(default)]
    overlays: Vec<Spanned<String>>,
}

/// `[deploy]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DeploySection {
    stages: Vec<Vec<Spanned<String>>>,
}

/// The environments, by name, and the stages; what is wrong is pushed to
/// `diagnostics` and left out.
pub(super) fn read(
    id: FileId,
    sections: BTreeMap<Spanned<String>, EnvironmentSection>,
    deploy: Option<DeploySection>,
    diagnostics: &mut Vec<Diagnostic>,
) -> (Vec<Environment>, Vec<Vec<String>>) {
    let at = |span: std::ops::Range<usize>| Location { file: id, span };
    let mut environments = Vec::new();
    for (name, section) in sections {
        if !super::is_name(name.get_ref(), MAX_NAME) {
            diagnostics.push(
                Diagnostic::error("project-file", format!("environment name \"{}\" is not valid", name.get_ref()))
                    .at(at(name.span()))
                    .label("here")
                    .help(format!(
                        "use 1 to {MAX_NAME} ASCII letters, digits, '-', '_' or '.': `--env` takes names and globs"
                    )),
            );
            continue;
        }
        let mut problems = Vec::new();
        for variable in std::iter::once(&section.url_env).chain(&section.amqp_url_env) {
            if !is_variable(variable.get_ref()) {
                problems.push(not_a_variable(variable.get_ref(), at(variable.span()), name.get_ref()));
            }
        }
        let mut overlays = Vec::new();
        for overlay in section.overlays {
            if overlay.get_ref().is_empty() || PathBuf::from(overlay.get_ref()).is_absolute() {
                problems.push(
                    Diagnostic::error(
                        "project-file",
                        format!("overlay \"{}\" is not a relative path", overlay.get_ref()),
                    )
                    .at(at(overlay.span()))
                    .label("here")
                    .help("name a directory of TOML relative to the project's directory, e.g. \"overlays/staging\""),
                );
            } else {
                overlays.push(PathBuf::from(overlay.into_inner()));
            }
        }
        diagnostics.extend(problems.iter().cloned());
        environments.push(Environment {
            name: name.get_ref().clone(),
            url_env: section.url_env.into_inner(),
            amqp_url_env: section.amqp_url_env.map(Spanned::into_inner),
            overlays,
            at: at(name.span()),
            problems,
        });
    }
    let stages = deploy.map(|d| stages(id, d, &environments, diagnostics)).unwrap_or_default();
    (environments, stages)
}

/// The stages, each naming declared environments once; an environment in
/// no stage goes last in `apply --env all`, which is said.
fn stages(
    id: FileId,
    deploy: DeploySection,
    environments: &[Environment],
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<Vec<String>> {
    let at = |span: std::ops::Range<usize>| Location { file: id, span };
    let declared: BTreeSet<&str> = environments.iter().map(|e| e.name.as_str()).collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for stage in deploy.stages {
        let mut names = Vec::new();
        for name in stage {
            if !declared.contains(name.get_ref().as_str()) {
                diagnostics.push(undeclared("stage", name.get_ref(), at(name.span()), declared.iter().copied()));
            } else if !seen.insert(name.get_ref().clone()) {
                diagnostics.push(
                    Diagnostic::error("project-file", format!("environment \"{}\" is in two stages", name.get_ref()))
                        .at(at(name.span()))
                        .label("again here")
                        .help("an environment is rolled out once: keep it in one stage"),
                );
            } else {
                names.push(name.into_inner());
            }
        }
        if !names.is_empty() {
            out.push(names);
        }
    }
    for e in environments.iter().filter(|e| !seen.contains(&e.name)) {
        diagnostics.push(
            Diagnostic::warning("project-file", format!("environment \"{}\" is in no stage of [deploy]", e.name))
                .at(e.at.clone())
                .label("here")
                .help("`apply --env all` rolls it out last, after every stage; add it to a stage to say when"),
        );
    }
    out
}

impl super::Project {
    /// The environments `--env` picks, each once, in the order declared:
    /// by name, `all`, or a glob (`prod-*`); a pattern after `!` leaves out
    /// what it matches (`--env 'prod-*' --env '!prod-us'`), from every
    /// environment when only exclusions are given. Each pattern must match
    /// one: a misspelt exclusion would otherwise pick the very environment
    /// it meant to spare.
    pub fn select(&self, patterns: &[String]) -> Result<Vec<&Environment>, Diagnostic> {
        if self.environments.is_empty() {
            return Err(Diagnostic::error(
                "environment",
                "`--env` was given, but the project declares no environments",
            )
            .help("declare them in warren.toml as [environments.NAME] with url_env (and overlays), or drop `--env`"));
        }
        let (excluded, included): (Vec<&String>, Vec<&String>) = patterns.iter().partition(|p| p.starts_with('!'));
        let mut picked = BTreeSet::new();
        if included.is_empty() {
            picked.extend(self.environments.iter().map(|e| e.name.as_str()));
        }
        for pattern in included {
            picked.extend(self.matching(pattern)?);
        }
        for pattern in excluded {
            for name in self.matching(&pattern[1..])? {
                picked.remove(name);
            }
        }
        if picked.is_empty() {
            return Err(Diagnostic::error(
                "environment",
                "`--env` leaves no environment: its exclusions take every one it picks",
            )
            .help(format!("the environments are {}", self.names())));
        }
        Ok(self.environments.iter().filter(|e| picked.contains(e.name.as_str())).collect())
    }

    /// The environments `pattern` (a name, `all` or a glob) names; none is
    /// an error that says which there are.
    fn matching(&self, pattern: &str) -> Result<Vec<&str>, Diagnostic> {
        let matcher = match globset::Glob::new(pattern) {
            Ok(g) => g.compile_matcher(),
            Err(e) => {
                return Err(Diagnostic::error("environment", format!("`--env {pattern}` is not a valid glob: {e}")).help(
                    format!(
                        "name an environment, `all`, or a glob such as `prod-*` (after `!` to leave it out); the environments are {}",
                        self.names()
                    ),
                ));
            }
        };
        let found: Vec<&str> = self
            .environments
            .iter()
            .filter(|e| pattern == "all" || matcher.is_match(&e.name))
            .map(|e| e.name.as_str())
            .collect();
        if !found.is_empty() {
            return Ok(found);
        }
        let d = Diagnostic::error("environment", format!("no environment is called \"{pattern}\""));
        let close = crate::diagnostic::did_you_mean(pattern, self.environments.iter().map(|e| e.name.as_str()));
        Err(match close {
            Some(c) => d.help(format!("did you mean \"{c}\"? The environments are {}", self.names())),
            None => d.help(format!("the environments are {}; `all` picks every one", self.names())),
        })
    }

    /// The declared environments' names, quoted, for help texts.
    fn names(&self) -> String {
        self.environments.iter().map(|e| format!("\"{}\"", e.name)).collect::<Vec<_>>().join(", ")
    }
}

/// `field` (a stage, `default_env`) names environment `name`, which the
/// project file does not declare; `declared` are those it does.
pub(super) fn undeclared<'a>(
    field: &str,
    name: &str,
    place: Location,
    declared: impl Iterator<Item = &'a str>,
) -> Diagnostic {
    let known: Vec<String> = declared.map(|n| format!("\"{n}\"")).collect();
    let help = if known.is_empty() {
        "declare it first, as [environments.NAME] with url_env".to_string()
    } else {
        format!("the environments declared are {}", known.join(", "))
    };
    Diagnostic::error("project-file", format!("{field} names environment \"{name}\", which is not declared"))
        .at(place)
        .label("here")
        .help(help)
}

/// `value`, written where a variable's name belongs. A URL there holds
/// credentials: neither the message nor the drawn line shows it.
fn not_a_variable(value: &str, place: Location, env: &str) -> Diagnostic {
    let url = value.contains("://") || value.contains('@');
    let message = match url {
        true => format!("environment \"{env}\" gives a URL where the name of a variable holding it belongs"),
        false => format!("\"{value}\" is not a variable name (environment \"{env}\")"),
    };
    let d = Diagnostic::error("project-file", message).at(place).label("here").help(
        "name the environment variable that holds the URL (letters, digits and '_', not starting with a digit), never the URL itself: it holds credentials; e.g. url_env = \"ORDERS_STAGING_URL\", then export ORDERS_STAGING_URL=https://user:password@host:port",
    );
    if url { d.redacted() } else { d }
}

fn is_variable(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use crate::diagnostic::{Diagnostic, Severity};
    use crate::project::{Project, parse};
    use crate::source::FileId;

    fn read(text: &str) -> (Project, Vec<Diagnostic>) {
        let mut d = Vec::new();
        (parse(FileId(0), text, &mut d), d)
    }

    /// The text each diagnostic points at.
    fn at<'a>(text: &'a str, d: &Diagnostic) -> &'a str {
        &text[d.location.clone().unwrap().span]
    }

    const FLEET: &str = r#"[project]
name = "orders"

[environments.staging]
url_env = "ORDERS_STAGING_URL"
overlays = ["overlays/staging"]

[environments.prod-eu]
url_env = "ORDERS_PROD_EU_URL"
amqp_url_env = "ORDERS_PROD_EU_AMQP_URL"
overlays = ["overlays/prod", "overlays/eu"]

[environments.prod-us]
url_env = "ORDERS_PROD_US_URL"

[deploy]
stages = [["staging"], ["prod-eu", "prod-us"]]
"#;

    #[test]
    fn environments_and_stages_are_read() {
        let (p, d) = read(FLEET);
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(p.name(), "orders");
        let names: Vec<&str> = p.environments.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["prod-eu", "prod-us", "staging"]);
        let eu = &p.environments[0];
        assert_eq!(eu.url_env, "ORDERS_PROD_EU_URL");
        assert_eq!(eu.amqp_url_env.as_deref(), Some("ORDERS_PROD_EU_AMQP_URL"));
        assert_eq!(eu.overlays, [std::path::PathBuf::from("overlays/prod"), "overlays/eu".into()]);
        assert_eq!(&FLEET[eu.at.span.clone()], "prod-eu");
        assert_eq!(p.stages, [vec!["staging".to_string()], vec!["prod-eu".into(), "prod-us".into()]]);
    }

    #[test]
    fn env_picks_names_globs_and_all() {
        let (p, _) = read(FLEET);
        let pick = |patterns: &[&str]| {
            let patterns: Vec<String> = patterns.iter().map(|s| s.to_string()).collect();
            p.select(&patterns).map(|e| e.iter().map(|e| e.name.clone()).collect::<Vec<_>>())
        };
        assert_eq!(pick(&["all"]).unwrap(), ["prod-eu", "prod-us", "staging"]);
        assert_eq!(pick(&["prod-*"]).unwrap(), ["prod-eu", "prod-us"]);
        assert_eq!(pick(&["staging", "prod-eu", "staging"]).unwrap(), ["prod-eu", "staging"]);
        let e = pick(&["stagin"]).unwrap_err();
        assert!(e.message.contains("\"stagin\"") && e.help.unwrap().contains("did you mean \"staging\""));
        assert!(pick(&["qa-*"]).unwrap_err().help.unwrap().contains("\"prod-eu\", \"prod-us\", \"staging\""));
        let (none, _) = read("[project]\nname = \"x\"\n");
        assert!(none.select(&["all".to_string()]).unwrap_err().message.contains("declares no environments"));
        // `!` leaves out; alone, from every environment.
        assert_eq!(pick(&["prod-*", "!prod-us"]).unwrap(), ["prod-eu"]);
        assert_eq!(pick(&["!prod-*"]).unwrap(), ["staging"]);
        assert_eq!(pick(&["!prod-us", "all"]).unwrap(), ["prod-eu", "staging"]);
        // A misspelt exclusion is an error, never a silent pick of what it meant to spare.
        let e = pick(&["prod-*", "!prod-uss"]).unwrap_err();
        assert!(
            e.message.contains("\"prod-uss\"") && e.help.as_deref().unwrap_or("").contains("did you mean \"prod-us\""),
            "{e:?}"
        );
        assert!(pick(&["prod-eu", "!prod-*"]).unwrap_err().message.contains("leaves no environment"));
    }

    #[test]
    fn a_url_in_place_of_a_variable_is_an_error_at_it() {
        let text = "[environments.dev]\nurl_env = \"http://guest:secret@localhost:15672\"\n[environments.qa]\nurl_env = \"QA_URL\"\n";
        let (p, d) = read(text);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(at(text, &d[0]), "\"http://guest:secret@localhost:15672\"");
        assert!(d[0].help.as_deref().unwrap_or("").contains("never the URL itself"), "{:?}", d[0]);
        // Neither the message nor the drawn source shows the credentials.
        assert!(!d[0].message.contains("secret") && d[0].redact, "{:?}", d[0]);
        // Only that environment is broken.
        let problems: Vec<usize> = p.environments.iter().map(|e| e.problems.len()).collect();
        assert_eq!(problems, [1, 0]);
    }

    #[test]
    fn stages_name_declared_environments_once() {
        let text = "[environments.a]\nurl_env = \"A\"\n[environments.b]\nurl_env = \"B\"\n[deploy]\nstages = [[\"a\", \"c\"], [\"a\"]]\n";
        let (p, d) = read(text);
        let errors: Vec<&Diagnostic> = d.iter().filter(|d| d.severity == Severity::Error).collect();
        assert_eq!(errors.len(), 2, "{d:?}");
        assert!(errors[0].message.contains("\"c\", which is not declared"), "{:?}", errors[0]);
        assert!(errors[1].message.contains("\"a\" is in two stages"), "{:?}", errors[1]);
        assert_eq!(at(text, errors[1]), "\"a\"");
        // b is in no stage: said; it goes last in a rollout.
        let warnings: Vec<&Diagnostic> = d.iter().filter(|d| d.severity == Severity::Warning).collect();
        assert_eq!(warnings.len(), 1, "{d:?}");
        assert!(warnings[0].message.contains("\"b\" is in no stage"), "{:?}", warnings[0]);
        assert_eq!(p.stages, [vec!["a".to_string()]]);
    }

    #[test]
    fn names_keys_and_paths_are_checked() {
        let text = "[environments.\"prod eu\"]\nurl_env = \"X\"\n[environments.ok]\nurl_env = \"OK\"\noverlays = [\"/etc/overlay\"]\n[environments.typo]\nurl_env = \"T\"\nurl = \"x\"\n";
        let (_, d) = read(text);
        assert!(!d.is_empty());
        // serde refuses the unknown key first, for the whole file.
        assert!(d.iter().any(|d| d.message.contains("unknown key `url`")), "{d:?}");
        let text = "[environments.\"prod eu\"]\nurl_env = \"X\"\n[environments.ok]\nurl_env = \"OK\"\noverlays = [\"/etc/overlay\"]\n";
        let (_, d) = read(text);
        let mut places: Vec<&str> = d.iter().map(|d| at(text, d)).collect();
        places.sort();
        assert_eq!(places, ["\"/etc/overlay\"", "\"prod eu\""], "{d:?}");
    }
}
