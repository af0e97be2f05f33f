//! What one topology file declares, before its objects are placed in each
//! of the file's vhosts.

use std::collections::BTreeSet;

use crate::model::kinds::{Name, users};
use crate::model::{
    Binding, Exchange, External, ObjectKey, Permission, Policy, Queue, QueueType, Table, User, VhostSettings,
};
use crate::source::FieldLocations;
use crate::source::Location;

/// An object with the place it was declared and the places of its fields.
#[derive(Debug, Clone)]
pub(super) struct Decl<T> {
    pub value: T,
    /// The object's name (its table header) or, for bindings, its table.
    pub at: Location,
    /// Field path (`durable`, `arguments.x-message-ttl`) to its value's place.
    pub fields: std::sync::Arc<FieldLocations>,
}

/// A queue whose type may still come from its vhost's default.
#[derive(Debug, Clone)]
pub(super) struct QueueDecl {
    pub queue: Queue,
    pub declared_type: Option<QueueType>,
}

/// An object of a kind of `model::kinds`: its name and its body, defaults
/// filled in.
#[derive(Debug, Clone)]
pub(super) struct ObjectDecl {
    pub name: Name,
    pub body: Table,
}

#[derive(Debug, Clone)]
pub(super) struct FileDecl {
    pub vhosts: Vec<(String, Location)>,
    pub settings: Option<Decl<VhostSettings>>,
    pub exchanges: Vec<Decl<Exchange>>,
    pub queues: Vec<Decl<QueueDecl>>,
    pub bindings: Vec<Decl<Binding>>,
    pub policies: Vec<Decl<Policy>>,
    pub users: Vec<Decl<User>>,
    pub permissions: Vec<Decl<Permission>>,
    /// Objects of the kinds of `model::kinds`, of every scope.
    pub objects: Vec<Decl<ObjectDecl>>,
    pub external: External,
    /// `[removed]`: objects to stop managing without deleting them.
    pub removed: Vec<Removed>,
    /// `[moved]`: exchanges renamed.
    pub moved: Vec<Moved>,
    /// `[services.NAME]`: who publishes and consumes what.
    pub services: Vec<Decl<crate::model::services::Service>>,
    /// The names whose declaration had errors.
    pub failed: Failed,
}

/// Objects declared with errors: reported once, and still declared for the
/// checks of the objects that name them.
#[derive(Debug, Clone, Default)]
pub(super) struct Failed {
    pub exchanges: BTreeSet<String>,
    pub queues: BTreeSet<String>,
    pub users: Vec<String>,
    /// `[vhost] default_queue_type` was given but is unusable: the type of
    /// the file's queues that rely on it is unknown.
    pub default_queue_type: bool,
}

/// One exchange renamed in `[moved]`, in each of the file's vhosts.
#[derive(Debug, Clone)]
pub(super) struct Moved {
    pub from: String,
    pub to: String,
    pub at: Location,
}

/// One object named in `[removed]`: its key in one of the file's vhosts
/// (`vhost` is filled in when the file is placed), and where it is named.
#[derive(Debug, Clone)]
pub(super) struct Removed {
    pub kind: &'static str,
    pub name: String,
    pub at: Location,
}

impl Removed {
    /// The object in vhost `v` (a user is in none).
    pub(super) fn key(&self, v: &str) -> ObjectKey {
        let (vhost, name) = (v.to_string(), self.name.clone());
        match self.kind {
            "exchanges" => ObjectKey::Exchange { vhost, name },
            "queues" => ObjectKey::Queue { vhost, name },
            "permissions" => crate::model::kinds::permissions::key(&vhost, &name),
            "users" => users::key(&name),
            // A kind of `model::kinds` named by one attribute (policies, operator policies).
            kind => match crate::model::kinds::by_table(kind) {
                Some(kind) => ObjectKey::Object { vhost: Some(vhost), name: Name { kind, id: vec![name] } },
                None => users::key(&name),
            },
        }
    }
}
