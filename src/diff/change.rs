//! The diff's output: plain records of what differs and why.

use serde::{Deserialize, Serialize};

use super::attributes::Attributes;
use crate::model::{Binding, Exchange, ObjectKey, Permission, Queue, User, VhostSettings};

/// What happens to one object, with terraform's meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// `+` create.
    Create,
    /// `~` update in place.
    Update,
    /// `-` destroy.
    Destroy,
    /// `-/+` destroy and recreate: lossy.
    Replace,
    /// `>>` lossless live migration of a queue.
    Migrate,
    /// `<<` a migration in flight taken back, as `warren abort` does.
    Rollback,
    /// `?` live but neither declared nor in the inventory: never touched.
    Unmanaged,
    /// `=` live and held by another project: shown as theirs, never touched.
    OtherProject,
    /// `.` named in `[removed]`: leaves this project's inventory and stays
    /// on the broker as it is (terraform's "forget").
    Forget,
}

impl Action {
    pub fn symbol(self) -> &'static str {
        match self {
            Action::Create => "+",
            Action::Update => "~",
            Action::Destroy => "-",
            Action::Replace => "-/+",
            Action::Migrate => ">>",
            Action::Rollback => "<<",
            Action::Unmanaged => "?",
            Action::OtherProject => "=",
            Action::Forget => ".",
        }
    }
}

/// One object's change.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub key: ObjectKey,
    pub action: Action,
    /// Why, in a sentence. Explains; never changes what apply does.
    pub reason: String,
    pub before: Option<Attributes>,
    pub after: Option<Attributes>,
    /// Could lose messages or routes, or removes access: apply refuses
    /// without --allow-destroy.
    pub requires_allow_destroy: bool,
    /// Takes access away from the user warren connects as (deletes it, its
    /// permissions, a tag, or changes its password): apply refuses without
    /// --allow-lockout, whatever else is allowed.
    pub requires_allow_lockout: bool,
    /// For a replaced exchange or queue: live bindings to put back after it
    /// is recreated, including ones warren does not manage.
    pub rebind: Vec<Binding>,
    pub migration: Option<Migration>,
    /// For [`Action::Rollback`]: the journal's record of the migration.
    pub rollback: Option<crate::journal::Migration>,
    /// For [`Action::OtherProject`]: the project that holds the object; for
    /// [`Action::Unmanaged`], this project, when its inventory holds the
    /// object but the run does not speak for it (made with vhosts the files
    /// no longer declare).
    pub owner: Option<String>,
    /// The object as the files declare it, for a change that puts it on
    /// the broker (create, update, replace, migrate): what the plan's
    /// operation carries.
    pub declared: Option<Declared>,
    /// The super stream the object is part of (its exchange, a partition
    /// stream or a partition's binding), when it is one's.
    pub super_stream: Option<String>,
    /// The services whose needs made the object (a user's permissions or
    /// topic permission), by name.
    pub services: Vec<String>,
}

/// An object as the files declare it. A binding is all in its key.
#[derive(Debug, Clone, PartialEq)]
pub enum Declared {
    /// The vhost's settings the files manage.
    Vhost(VhostSettings),
    User(User),
    Exchange(Exchange),
    Queue(Queue),
    Permission(Permission),
    /// An object of a kind of `model::kinds`.
    Object(crate::model::kinds::Object),
}

impl Change {
    pub fn new(key: ObjectKey, action: Action, reason: impl Into<String>) -> Self {
        Change {
            key,
            action,
            reason: reason.into(),
            before: None,
            after: None,
            requires_allow_destroy: false,
            requires_allow_lockout: false,
            rebind: Vec::new(),
            migration: None,
            rollback: None,
            owner: None,
            declared: None,
            super_stream: None,
            services: Vec::new(),
        }
    }
}

/// A queue that takes over another by expand-and-contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migration {
    /// The live queue being replaced.
    pub replaces: String,
    /// Its live bindings that move to the new queue (same source, key, arguments).
    pub moved: Vec<Binding>,
    /// Its live bindings with no counterpart on the new queue: they go away.
    pub dropped: Vec<Binding>,
    /// The new queue's bindings with no counterpart on the old one: created directly.
    pub added: Vec<Binding>,
    /// Changed attributes between the old queue and the new one.
    pub changed: Vec<String>,
    /// Set when every change could have been made by a policy instead.
    pub policy_instead: Option<String>,
    /// warren's own scaffolding for this old queue that an interrupted run
    /// left live, though no source routes through it any more (a run that
    /// stopped between the teardown's last unbind and the delete of the
    /// interposed exchange): exchanges, deleted at teardown.
    pub leftover_exchanges: Vec<String>,
}

impl Migration {
    /// The exchanges whose bindings to the old queue move to the new one.
    pub(super) fn sources(&self) -> std::collections::BTreeSet<&str> {
        self.moved.iter().map(|b| b.source.as_str()).collect()
    }
}

/// One migration in flight in a vhost the files declare, as a plan shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlight {
    pub id: String,
    pub vhost: String,
    pub old: String,
    pub new: String,
    /// Steps done, of `total`.
    pub done: usize,
    pub total: usize,
    /// running, paused, stopped.
    pub state: String,
}

impl InFlight {
    pub fn of(r: &crate::journal::Migration) -> InFlight {
        InFlight {
            id: r.id.clone(),
            vhost: r.vhost.clone(),
            old: r.old.clone(),
            new: r.new.clone(),
            done: r.done.min(r.steps.len()),
            total: r.steps.len(),
            state: r.state.to_string(),
        }
    }
}
