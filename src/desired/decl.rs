//! What one topology file declares, before its objects are placed in each
//! of the file's vhosts.

use super::spans::FieldSites;
use crate::model::{Binding, Exchange, External, Permission, Policy, Queue, QueueType, User, VhostSettings};
use crate::source::Location;

/// An object with the place it was declared and the places of its fields.
#[derive(Debug, Clone)]
pub struct Decl<T> {
    pub value: T,
    /// The object's name (its table header) or, for bindings, its table.
    pub at: Location,
    /// Field path (`durable`, `arguments.x-message-ttl`) to its value's place.
    pub fields: std::sync::Arc<FieldSites>,
}

/// A queue whose type may still come from its vhost's default.
#[derive(Debug, Clone)]
pub struct QueueDecl {
    pub queue: Queue,
    pub declared_type: Option<QueueType>,
}

#[derive(Debug, Clone)]
pub struct FileDecl {
    pub vhosts: Vec<(String, Location)>,
    pub settings: Option<Decl<VhostSettings>>,
    pub exchanges: Vec<Decl<Exchange>>,
    pub queues: Vec<Decl<QueueDecl>>,
    pub bindings: Vec<Decl<Binding>>,
    pub policies: Vec<Decl<Policy>>,
    pub operator_policies: Vec<Decl<Policy>>,
    pub users: Vec<Decl<User>>,
    pub permissions: Vec<Decl<Permission>>,
    pub external: External,
    /// The exchange and queue names whose declaration had errors.
    pub failed: External,
}
