//! One module per command: each reads its inputs, runs the pipeline and
//! prints the outcome.

pub mod abort;
pub mod adopt;
pub mod apply;
mod confirm;
pub mod export;
pub mod findings;
pub mod fleet;
pub mod graph;
pub mod import;
pub mod lint;
pub mod live_side;
pub mod plan;
pub mod planned;
mod refusal;
pub mod rollout;
pub mod saved_plan;
pub mod session;
pub mod status;
pub mod validate;

use crate::broker::BrokerError;
use crate::error::Error;
use crate::render::Format;

/// How a plan is shown (`plan`, `diff`).
#[derive(Debug, Clone)]
pub struct Show {
    pub format: Format,
    pub detailed_exitcode: bool,
    pub replace: Vec<String>,
}

/// Says a broker error and what to do about it.
fn said(e: BrokerError) -> Error {
    eprintln!("error: {e}\n  help: {}", e.help());
    Error::Broker(e)
}

/// Says a broker error met before the first write.
fn unchanged(e: BrokerError) -> Error {
    eprintln!("error: {e}\n  help: {}\nNothing was changed.", e.help());
    Error::Broker(e)
}
