//! Why a step of an apply did not take effect, and how the journal says so.

use crate::broker::BrokerError;
use crate::journal::{RunOutcome, StepOutcome};

/// Why a migration did not finish in this run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    Broker(BrokerError),
    /// It waits; everything stays in place and a later apply resumes it.
    Paused(String),
    /// A check right before a step refused it.
    Refused(String),
    /// The lock's connection closed: another apply may hold the lock now,
    /// so nothing more is done.
    LockLost,
}

impl Failure {
    /// Why, in words, for the journal and the report.
    pub fn why(&self) -> String {
        match self {
            Failure::Broker(e) => e.to_string(),
            Failure::Paused(why) | Failure::Refused(why) => why.clone(),
            Failure::LockLost => "the lock's connection closed".into(),
        }
    }

    /// How the run that stopped on it ends, in the journal's history.
    pub fn run_outcome(&self) -> RunOutcome {
        match self {
            Failure::Paused(_) => RunOutcome::Paused,
            Failure::Refused(_) => RunOutcome::Refused,
            Failure::LockLost => RunOutcome::LockLost,
            Failure::Broker(_) => RunOutcome::Failed,
        }
    }

    /// How the step that failed so ended, in the journal's words.
    pub fn outcome(&self) -> StepOutcome {
        match self {
            Failure::Paused(_) => StepOutcome::Paused,
            Failure::Refused(_) | Failure::Broker(BrokerError::Unsafe { .. }) => StepOutcome::Refused,
            Failure::LockLost => StepOutcome::LockLost,
            Failure::Broker(_) => StepOutcome::Failed,
        }
    }
}

impl From<BrokerError> for Failure {
    fn from(e: BrokerError) -> Self {
        Failure::Broker(e)
    }
}
