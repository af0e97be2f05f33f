//! The exit codes of the contract, in one place.

/// What a run of warren ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Success (and, with --detailed-exitcode, no changes).
    Ok = 0,
    /// An error; nothing was changed on the broker.
    Error = 1,
    /// Success with changes (only with --detailed-exitcode).
    Changes = 2,
    /// Apply paused: a migration waits.
    Paused = 3,
    /// Refused for safety.
    Refused = 4,
    /// Another apply holds the lock.
    Locked = 5,
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e as u8)
    }
}
