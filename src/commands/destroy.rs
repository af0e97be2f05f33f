//! `warren destroy`: apply, to the files' vhosts emptied (see
//! [`crate::desired::Desired::destroyed`]), in one environment at most.

use std::path::Path;

use super::apply::{self, Options};
use crate::cli::Connection;
use crate::error::{self, Error};
use crate::writer::Writer;

/// `warren destroy`: the plan to a topology of the files' vhosts emptied,
/// carried out as apply does; in one environment at most, never a fleet.
pub fn run(
    path: &Path,
    env: Option<String>,
    options: &Options,
    connection: &Connection,
    out: &Writer,
) -> error::Result {
    if super::saved_plan::is_saved_plan(path) {
        return Err(Error::invalid().line(format!(
            "{} is a saved plan: warren destroy takes the project's topology directory, whose files name the project and its vhosts.",
            path.display()
        )));
    }
    let envs = super::fleet::against_broker(path, env.into_iter().collect(), out)?;
    if envs.is_empty() {
        return apply::run(path, options, connection, out);
    }
    // A glob may pick several; an unknown name is the rollout's to report.
    if crate::project::read(path).select(&envs).is_ok_and(|picked| picked.len() > 1) {
        return Err(Error::invalid()
            .line("warren destroy removes one environment's objects at a time: name one environment with --env."));
    }
    super::rollout::run(path, &envs, options, connection, out)
}
