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

/// With -v, how long each stage took, on stderr.
pub(crate) struct Clock {
    last: Option<std::time::Instant>,
}

impl Clock {
    pub(crate) fn new(on: bool) -> Self {
        Clock { last: on.then(std::time::Instant::now) }
    }

    pub(crate) fn lap(&mut self, what: &str) {
        if let Some(t) = self.last {
            eprintln!("warren: {what}: {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
            self.last = Some(std::time::Instant::now());
        }
    }
}
