//! How a run of warren ends: the one error type of the commands, and the
//! one place that turns it into the contract's exit codes.
//!
//! A command puts what went wrong in its error where it knows most (the
//! diagnostics, the step, "Nothing was changed"); `run` hands the error to
//! the writer, which says it, and [`exit`] picks the code from its kind.

use crate::apply::Failure;
use crate::broker::BrokerError;
use crate::diagnostic::Diagnostic;
use crate::exit::Exit;
use crate::source::Sources;

/// How a command that did what it was asked ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    Ok,
    /// The plan has changes, and --detailed-exitcode asks to say so.
    Changes,
}

/// Why a command did not do all it was asked, and what to tell the user
/// about it when the run ends.
#[derive(Debug, Clone)]
pub struct Error {
    pub kind: Kind,
    /// Drawn first, against `sources`.
    pub diagnostics: Vec<Diagnostic>,
    pub sources: Sources,
    /// Said after the diagnostics, one per line.
    pub lines: Vec<String>,
}

impl Error {
    /// An error with nothing more to say than what the command said already.
    pub fn new(kind: Kind) -> Error {
        Error { kind, diagnostics: Vec::new(), sources: Sources::default(), lines: Vec::new() }
    }

    /// The files, a saved plan, an export or an argument are not valid.
    pub fn invalid() -> Error {
        Error::new(Kind::Invalid)
    }

    /// These diagnostics, drawn against `sources`, say why.
    pub fn drawn(mut self, diagnostics: impl IntoIterator<Item = Diagnostic>, sources: &Sources) -> Error {
        self.diagnostics.extend(diagnostics);
        self.sources = sources.clone();
        self
    }

    /// And this line, after what is said already.
    pub fn line(mut self, line: impl Into<String>) -> Error {
        self.lines.push(line.into());
        self
    }

    /// A broker error, said with what to do about it.
    pub fn broker(e: BrokerError) -> Error {
        let line = format!("error: {e}\n  help: {}", e.help());
        Error::new(Kind::Broker(e)).line(line)
    }
}

/// The kinds of [`Error`], one exit code each (see [`exit`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
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

impl From<Kind> for Error {
    fn from(kind: Kind) -> Self {
        Error::new(kind)
    }
}

impl From<Failure> for Error {
    /// Apply says how it stopped as it stops.
    fn from(f: Failure) -> Self {
        Error::new(Kind::Stopped(f))
    }
}

/// The exit code of a run that ended so.
pub fn exit(result: &Result) -> Exit {
    match result.as_ref().map_err(|e| &e.kind) {
        Ok(Done::Ok) => Exit::Ok,
        Ok(Done::Changes) => Exit::Changes,
        Err(Kind::Stopped(Failure::Paused(_))) => Exit::Paused,
        Err(Kind::Refused | Kind::Stopped(Failure::Refused(_)))
        | Err(Kind::Broker(BrokerError::Unsafe { .. }))
        | Err(Kind::Stopped(Failure::Broker(BrokerError::Unsafe { .. }))) => Exit::Refused,
        Err(Kind::Locked) => Exit::Locked,
        Err(Kind::Rollout(exit)) => *exit,
        Err(
            Kind::Invalid
            | Kind::Broker(_)
            | Kind::Stopped(Failure::LockLost | Failure::Broker(_))
            | Kind::Declined
            | Kind::Records
            | Kind::Environments
            | Kind::Findings,
        ) => Exit::Error,
    }
}
