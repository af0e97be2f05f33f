//! What the user asks of a diff.

use std::collections::BTreeSet;

/// The user's choices for one diff: the flags given on the command line,
/// and what the command asks for (a plan to carry out, a change reviewed
/// offline, two topologies compared). What was read from the broker is in
/// [`BrokerFacts`](super::BrokerFacts).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Queues to destroy and recreate when their immutable properties
    /// change (terraform's `-replace`): lossy, so apply needs --allow-destroy.
    pub replace: BTreeSet<String>,
    /// Two topologies compared for review (two environments), not a plan
    /// to carry out: what cannot change in place is shown as it differs,
    /// and nothing needs --allow-destroy.
    pub comparing: bool,
    /// A change reviewed offline (`warren diff OLD NEW`), not a plan to
    /// carry out now: what it would lose is said in the conditional.
    pub review: bool,
    /// `warren destroy`: the files' vhosts are declared empty, and each goes
    /// too when this project alone holds it, as if the files dropped it.
    pub destroy: bool,
}
