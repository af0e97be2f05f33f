//! `[lint]` in the project file: a level for a rule, by its code.
//!
//! ```toml
//! [lint]
//! transient-queue = "error"   # raise
//! unroutable-exchange = "info" # lower
//! guest-user = "off"          # silence: still listed as allowed by `lint --format json`
//! ```

use std::collections::BTreeMap;

use toml::Spanned;

use crate::diagnostic::Diagnostic;
use crate::lint::rules::{Level, rule_of};
use crate::lint::{LintSettings, unknown_rule};
use crate::source::{FileId, Location};

/// Reads `[lint]`; what is wrong is pushed to `diagnostics` and left out.
pub(super) fn read(
    id: FileId,
    section: BTreeMap<Spanned<String>, Spanned<String>>,
    diagnostics: &mut Vec<Diagnostic>,
) -> LintSettings {
    let at = |span: std::ops::Range<usize>| Location { file: id, span };
    let mut levels = BTreeMap::new();
    for (code, level) in section {
        let Some(parsed) = Level::parse(level.get_ref()) else {
            diagnostics.push(
                Diagnostic::error("project-file", format!("\"{}\" is not a lint level", level.get_ref()))
                    .at(at(level.span()))
                    .help(format!("use one of: {}", Level::NAMES.join(", "))),
            );
            continue;
        };
        if rule_of(code.get_ref()).is_none() {
            diagnostics.push(unknown_rule(code.get_ref(), at(code.span())));
            continue;
        }
        levels.insert(code.get_ref().clone(), (parsed, at(code.span())));
    }
    LintSettings::new(levels)
}
