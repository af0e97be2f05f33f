//! The operations apply carries out, one per broker request or so.

use crate::model::kinds::{Name, Object, Phase as KindPhase};
use crate::model::{Binding, Exchange, Permission, Queue, QueueType, User, VhostSettings};

/// One operation on the broker. Plain data: apply interprets it.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// `settings` holds the files' settings over the live ones, so that a
    /// PUT (which replaces them all) keeps what the files do not manage.
    PutVhost {
        name: String,
        settings: VhostSettings,
        remove_limits: Vec<String>,
    },
    DeleteVhost {
        name: String,
    },
    /// `user` as the files declare it, and the live limits the files no
    /// longer set, to remove.
    PutUser {
        user: User,
        remove_limits: Vec<String>,
    },
    DeleteUser {
        name: String,
    },
    DeclareExchange {
        vhost: String,
        exchange: Exchange,
    },
    DeleteExchange {
        vhost: String,
        name: String,
    },
    DeclareQueue {
        vhost: String,
        queue: Queue,
    },
    DeleteQueue {
        vhost: String,
        name: String,
        kind: QueueType,
    },
    Bind {
        vhost: String,
        binding: Binding,
    },
    Unbind {
        vhost: String,
        binding: Binding,
    },
    PutPermission {
        vhost: String,
        permission: Permission,
    },
    DeletePermission {
        vhost: String,
        user: String,
    },
    /// Creates or updates an object of a kind of `model::kinds`; `vhost` is
    /// `None` for a broker-wide kind. Its phase is its kind's.
    PutObject {
        vhost: Option<String>,
        name: Name,
        object: Object,
    },
    DeleteObject {
        vhost: Option<String>,
        name: Name,
    },
    /// Expand-and-contract of an old queue into a new one.
    Migrate(Box<super::MigrationPlan>),
    /// A migration in flight taken back to its old queue.
    Rollback(Box<super::RollbackPlan>),
}

/// Where an operation falls in the order of a plan, earliest first:
/// vhosts and users, then exchanges, policies and queues, then bindings
/// and permissions, then migrations, then every removal in reverse. Steps
/// of one phase may run at once. Policies come before queues, as in the
/// broker's own import: each queue then gets its policy as it is declared,
/// where a policy set afterwards makes the broker match it against every
/// queue of the vhost (1.5-2 s a policy in a vhost of 10,000 queues); and
/// after exchanges, so that a dead-letter or alternate exchange a policy
/// names exists before any queue can use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    PutVhost,
    PutUser,
    /// The delete of an exchange or queue that is declared again right after.
    DeleteReplaced,
    DeclareExchange,
    PutPolicy,
    DeclareQueue,
    Bind,
    PutPermission,
    PutObject,
    Migrate,
    Unbind,
    DeleteObject,
    DeletePolicy,
    DeletePermission,
    DeleteQueue,
    DeleteExchange,
    DeleteUser,
    DeleteVhost,
}

impl Phase {
    /// What the phase does, for `apply -v`.
    pub fn describe(self) -> &'static str {
        match self {
            Phase::PutVhost => "set vhosts",
            Phase::PutUser => "set users",
            Phase::DeleteReplaced => "delete what is declared again",
            Phase::DeclareExchange => "declare exchanges",
            Phase::PutPolicy => "set policies",
            Phase::DeclareQueue => "declare queues",
            Phase::Bind => "bind",
            Phase::PutPermission => "set permissions",
            Phase::PutObject => "set other objects",
            Phase::DeleteObject => "delete other objects",
            Phase::Migrate => "migrate",
            Phase::Unbind => "unbind",
            Phase::DeletePolicy => "delete policies",
            Phase::DeletePermission => "delete permissions",
            Phase::DeleteQueue => "delete queues",
            Phase::DeleteExchange => "delete exchanges",
            Phase::DeleteUser => "delete users",
            Phase::DeleteVhost => "delete vhosts",
        }
    }
}

impl Op {
    pub fn phase(&self) -> Phase {
        match self {
            Op::PutVhost { .. } => Phase::PutVhost,
            Op::PutUser { .. } => Phase::PutUser,
            Op::DeclareExchange { .. } => Phase::DeclareExchange,
            Op::DeclareQueue { .. } => Phase::DeclareQueue,
            Op::Bind { .. } => Phase::Bind,
            Op::PutPermission { .. } => Phase::PutPermission,
            Op::PutObject { name, .. } => match name.kind.phase {
                KindPhase::PutPolicy => Phase::PutPolicy,
                KindPhase::PutObject => Phase::PutObject,
            },
            Op::DeleteObject { name, .. } => match name.kind.phase {
                KindPhase::PutPolicy => Phase::DeletePolicy,
                KindPhase::PutObject => Phase::DeleteObject,
            },
            Op::Migrate(_) | Op::Rollback(_) => Phase::Migrate,
            Op::Unbind { .. } => Phase::Unbind,
            Op::DeletePermission { .. } => Phase::DeletePermission,
            Op::DeleteQueue { .. } => Phase::DeleteQueue,
            Op::DeleteExchange { .. } => Phase::DeleteExchange,
            Op::DeleteUser { .. } => Phase::DeleteUser,
            Op::DeleteVhost { .. } => Phase::DeleteVhost,
        }
    }
}

impl std::fmt::Display for Op {
    /// What the operation does, as progress lines and error reports say it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use Op::*;
        match self {
            PutVhost { name, .. } => write!(f, "create or update vhost \"{name}\""),
            DeleteVhost { name } => write!(f, "delete vhost \"{name}\""),
            PutUser { user, .. } => write!(f, "create or update user \"{}\"", user.name),
            DeleteUser { name } => write!(f, "delete user \"{name}\""),
            DeclareExchange { vhost, exchange } => {
                write!(f, "declare exchange \"{}\" in vhost \"{vhost}\"", exchange.name)
            }
            DeleteExchange { vhost, name } => write!(f, "delete exchange \"{name}\" in vhost \"{vhost}\""),
            DeclareQueue { vhost, queue } => write!(f, "declare queue \"{}\" in vhost \"{vhost}\"", queue.name),
            DeleteQueue { vhost, name, .. } => write!(f, "delete queue \"{name}\" in vhost \"{vhost}\""),
            Bind { vhost, binding } => write!(f, "bind {binding} in vhost \"{vhost}\""),
            Unbind { vhost, binding } => write!(f, "unbind {binding} in vhost \"{vhost}\""),
            PutPermission { vhost, permission } => {
                write!(f, "set permissions of \"{}\" in vhost \"{vhost}\"", permission.user)
            }
            DeletePermission { vhost, user } => write!(f, "delete permissions of \"{user}\" in vhost \"{vhost}\""),
            PutObject { vhost, name, .. } => write!(f, "set {}", name.at(vhost.as_deref())),
            DeleteObject { vhost, name } => write!(f, "delete {}", name.at(vhost.as_deref())),
            Migrate(m) => write!(f, "migrate queue \"{}\" to \"{}\" in vhost \"{}\"", m.old.name, m.new.name, m.vhost),
            Rollback(r) => {
                write!(
                    f,
                    "roll back migration {} (queue \"{}\" >> \"{}\") in vhost \"{}\"",
                    r.id, r.old, r.new, r.vhost
                )
            }
        }
    }
}
