//! What a project sets of the rules: `[lint]` in its project file (read by
//! `project`), and the codes an object's `lint_allow` names.

use std::collections::BTreeMap;

use super::rules::{Level, RULES};
use crate::diagnostic::{Diagnostic, did_you_mean};
use crate::source::Location;

/// The levels a project sets, by rule code, each with where it is set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LintSettings {
    levels: BTreeMap<String, (Level, Location)>,
}

impl LintSettings {
    pub fn new(levels: BTreeMap<String, (Level, Location)>) -> Self {
        LintSettings { levels }
    }

    /// The level set for `code`, and where.
    pub fn level(&self, code: &str) -> Option<(Level, &Location)> {
        self.levels.get(code).map(|(l, at)| (*l, at))
    }
}

/// A code that names no rule, in `[lint]` or an object's `lint_allow`: a
/// warning, so that a rule renamed in a later warren does not stop a rollout.
pub fn unknown_rule(code: &str, at: Location) -> Diagnostic {
    let help = match did_you_mean(code, RULES.iter().map(|r| r.code)) {
        Some(c) => format!("did you mean \"{c}\"? (`warren lint --rules` lists every rule)"),
        None => "`warren lint --rules` lists every rule; checks of what the broker refuses cannot be turned off".into(),
    };
    Diagnostic::warning("lint-config", format!("\"{code}\" is not a lint rule"))
        .at(at)
        .label("no rule of this code")
        .help(help)
}
