//! How a run of warren ends: the one error type of the commands, and the
//! one place that turns it into the contract's exit codes.
//!
//! A command says what went wrong where it knows most (the diagnostics,
//! the step, "Nothing was changed"), then returns the kind of the error;
//! [`exit`] picks the code.

use crate::apply::Failure;
use crate::broker::BrokerError;
use crate::exit::Exit;

/// How a command that did what it was asked ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    Ok,
    /// The plan has changes, and --detailed-exitcode asks to say so.
    Changes,
}

/// Why a command did not do all it was asked.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The files, a saved plan, an export or an argument are not valid.
    Invalid,
    /// A broker call failed before anything was changed, or after.
    Broker(BrokerError),
    /// Refused for safety, before any write.
    Refused,
    /// An apply, adopt or abort stopped at a step.
    Stopped(Failure),
    /// Another run holds the lock, past the wait allowed.
    Locked,
    /// The user did not confirm.
    Declined,
    /// warren's records (journal, inventory) cannot be read or written.
    Records,
    /// Some environments of a `--env` run could not be planned; its report
    /// says which, and why.
    Environments,
    /// `warren lint` found findings of error severity.
    Findings,
    /// A rollout over environments ended as its worst environment did.
    Rollout(Exit),
}

/// What a command returns.
pub type Result<T = Done> = std::result::Result<T, Error>;

impl From<BrokerError> for Error {
    fn from(e: BrokerError) -> Self {
        Error::Broker(e)
    }
}

impl From<Failure> for Error {
    fn from(f: Failure) -> Self {
        Error::Stopped(f)
    }
}

/// The exit code of a run that ended so.
pub fn exit(result: &Result) -> Exit {
    match result {
        Ok(Done::Ok) => Exit::Ok,
        Ok(Done::Changes) => Exit::Changes,
        Err(Error::Stopped(Failure::Paused(_))) => Exit::Paused,
        Err(Error::Refused | Error::Stopped(Failure::Refused(_)))
        | Err(Error::Broker(BrokerError::Unsafe { .. }))
        | Err(Error::Stopped(Failure::Broker(BrokerError::Unsafe { .. }))) => Exit::Refused,
        Err(Error::Locked) => Exit::Locked,
        Err(Error::Rollout(exit)) => *exit,
        Err(
            Error::Invalid
            | Error::Broker(_)
            | Error::Stopped(Failure::LockLost | Failure::Broker(_))
            | Error::Declined
            | Error::Records
            | Error::Environments
            | Error::Findings,
        ) => Exit::Error,
    }
}
