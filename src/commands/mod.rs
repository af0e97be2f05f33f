//! One module per command: each reads its inputs, runs the pipeline and
//! hands its report to the [`Writer`]; none prints.

pub mod abort;
pub mod adopt;
pub mod apply;
pub mod destroy;
pub mod export;
pub mod findings;
pub mod fleet;
pub mod fmt;
pub mod graph;
pub mod import;
pub mod import_object;
pub mod init;
pub mod lint;
pub mod live_side;
mod picture;
pub mod plan;
pub mod planned;
mod refusal;
pub mod rollout;
pub mod route;
pub mod saved_plan;
pub mod session;
pub mod show;
pub mod status;
pub mod test;
pub mod validate;

use std::future::Future;

use crate::broker::BrokerError;
use crate::error::Error;
use crate::render::Format;
use crate::writer::Writer;

/// How a plan is shown (`plan`, `diff`).
#[derive(Debug, Clone)]
pub struct Show {
    pub format: Format,
    pub detailed_exitcode: bool,
    pub replace: Vec<String>,
    /// `plan --target`.
    pub targets: Vec<crate::diff::target::Target>,
}

/// A broker error met before the first write, and what to do about it.
fn unchanged(e: BrokerError) -> Error {
    Error::broker(e).line("Nothing was changed.")
}

/// Waits for broker calls on the run's one runtime (made in `run`).
pub(crate) fn block_on<F: Future>(calls: F) -> F::Output {
    tokio::runtime::Handle::current().block_on(calls)
}

/// With -v, how long each stage took, on stderr.
pub(crate) struct Clock<'w> {
    last: Option<std::time::Instant>,
    out: &'w Writer,
}

impl<'w> Clock<'w> {
    pub(crate) fn new(out: &'w Writer) -> Self {
        Clock { last: out.verbose().then(std::time::Instant::now), out }
    }

    pub(crate) fn lap(&mut self, what: &str) {
        if let Some(t) = self.last {
            self.out.errln(format!("warren: {what}: {:.1} ms", t.elapsed().as_secs_f64() * 1e3));
            self.last = Some(std::time::Instant::now());
        }
    }
}
