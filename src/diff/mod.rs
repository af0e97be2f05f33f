//! (desired, live, inventory) -> changes. Pure: no I/O, no clock.
//!
//! Ownership decides what may be destroyed: a live object missing from the
//! files is destroyed only when this project's inventory lists it. Another
//! project's objects are shown as theirs and never touched (declaring one is
//! an error); anything else is shown as unmanaged and never touched.
//!
//! It reads the user's choices ([`Options`]) and what was read from the
//! broker ([`BrokerFacts`]). A file per kind of object (vhosts, users and
//! their permissions, exchanges, queues, bindings, policies) decides its
//! changes; `migrations/` the queues that replace others; `in_flight.rs`
//! the journal's migrations in flight; `refusals/` every change refused,
//! with the one list of their codes; `access.rs` and `outside.rs` what
//! each change then says about access and about changes made outside
//! warren.

mod access;
mod attributes;
mod bindings;
mod change;
mod differ;
mod exchanges;
mod facts;
mod immutable;
mod in_flight;
mod migrations;
pub mod moved;
mod objects;
mod options;
pub mod outside;
mod policies;
mod policy_advice;
mod queues;
mod refusals;
mod services;
mod sides;
mod super_streams;
pub mod target;
mod users;
mod vhosts;
mod walk;

use std::collections::BTreeSet;

pub use attributes::Attributes;
pub use change::{Action, Change, Declared, InFlight, Migration};
pub use differ::{LEFT_WITH_ITS_VHOST, NOT_WARRENS};
pub use facts::BrokerFacts;
pub use immutable::NOT_IN_PLACE;
pub use options::Options;
pub use outside::Outside;
pub use refusals::{REFUSALS, is_refusal, routes_moved};

use crate::diagnostic::Diagnostic;
use crate::model::{ObjectKey, Ownership, Topology, Vhost};
use differ::Differ;

/// A desired change that cannot be carried out, tied to the object at fault.
#[derive(Debug, Clone)]
pub struct Problem {
    pub key: ObjectKey,
    pub field: Option<String>,
    pub diagnostic: Diagnostic,
}

impl Problem {
    /// A problem at the `replaces` line of queue `queue` in vhost `v`.
    fn at_replaces(v: &str, queue: &str, diagnostic: Diagnostic) -> Problem {
        let key = ObjectKey::Queue { vhost: v.into(), name: queue.into() };
        Problem { key, field: Some("replaces".into()), diagnostic }
    }
}

/// Everything that differs.
#[derive(Debug, Clone, Default)]
pub struct Diff {
    pub changes: Vec<Change>,
    pub problems: Vec<Problem>,
    /// The migrations in flight in the vhosts the files declare.
    pub in_flight: Vec<InFlight>,
    /// The objects that differ from the files because they were changed
    /// outside warren since its last apply.
    pub outside: Vec<Outside>,
}

/// Compares the desired topology of `project` with the live one, whose
/// objects `ownership` assigns to projects, as the user chose (`options`)
/// and with what was read from the broker (`facts`).
pub fn diff(
    desired: &Topology,
    live: &Topology,
    ownership: &Ownership,
    project: &str,
    options: &Options,
    facts: &BrokerFacts,
) -> Diff {
    // A renamed exchange is kept, forwarding to its new name, as if declared.
    let expanded = moved::expand(desired, live);
    let desired: &Topology = &expanded;
    let declared: BTreeSet<String> = desired.vhosts.keys().cloned().collect();
    let inventory = &ownership.of(project);
    let removed = &desired.removed;
    let mut d = Differ { inventory, ownership, project, options, facts, declared, removed, out: Diff::default() };
    d.theirs_declared(desired, live);
    d.users(desired, live);
    // Users are the users' own to compare (`users.rs`), not the generic objects'.
    d.objects(None, &desired.objects, &live.objects, |k| k != &crate::model::kinds::users::KIND);
    d.kinds_unsupported(desired);
    d.plugins_missing(desired);
    d.external_users_missing(desired, live);
    let empty = Vhost::default();
    for (name, want) in &desired.vhosts {
        let have = live.vhosts.get(name);
        d.vhost_settings(name, &want.settings, have.map(|h| &h.settings));
        let held = d.in_flight(name, want, have.unwrap_or(&empty));
        d.vhost(name, want, have.unwrap_or(&empty), &held);
    }
    d.vhosts_absent(desired, live);
    d.super_streams_unsupported(desired, live);
    d.super_stream_changes(desired, live);
    d.service_changes(desired);
    // After the reasons of changes made outside warren are written: what
    // access a change takes is said whatever else its reason says.
    if !options.comparing {
        d.changed_outside(live, desired);
    }
    access::guard(&mut d.out.changes, desired, live, facts.connected_user.as_deref(), &facts.stale_passwords);
    if options.comparing {
        for c in &mut d.out.changes {
            c.requires_allow_destroy = false;
            c.requires_allow_lockout = false;
        }
    }
    d.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Inventory, Password, User};

    #[test]
    fn a_shared_vhost_or_user_goes_only_with_its_last_project() {
        let mut live = Topology::default();
        for v in ["shared", "kept"] {
            live.vhosts.insert(v.into(), Vhost::new(v));
        }
        live.set_user(&User { name: "app".into(), password: Password::None, tags: Default::default(), limits: None });
        let held = Inventory::of(&live);
        let mut desired = Topology::default();
        desired.vhosts.insert("kept".into(), Vhost::new("kept"));
        let kinds = |o: &Ownership| {
            let d = diff(&desired, &live, o, "a", &Options::default(), &BrokerFacts::default());
            d.changes.iter().map(|c| (c.key.to_string(), c.action)).collect::<Vec<_>>()
        };
        let shared = Ownership::single("a", held.clone()).with("b", held.clone());
        assert_eq!(
            kinds(&shared),
            [("user \"app\"".to_string(), Action::OtherProject)],
            "b still holds both: neither is destroyed (a vhost is listed only when it goes)"
        );
        let last = kinds(&Ownership::single("a", held));
        assert_eq!(last.iter().filter(|(_, a)| *a == Action::Destroy).count(), 2, "{last:?}");
    }

    #[test]
    fn a_user_the_project_made_with_a_vhost_no_longer_declared_is_left_and_said_to_be_its_own() {
        let mut live = Topology::default();
        live.vhosts.insert("old".into(), Vhost::new("old"));
        live.set_user(&User { name: "app".into(), password: Password::None, tags: Default::default(), limits: None });
        let held = Inventory::of(&live);
        live.vhosts.insert("new".into(), Vhost::new("new"));
        let mut desired = Topology::default();
        desired.vhosts.insert("new".into(), Vhost::new("new"));
        let d = diff(&desired, &live, &Ownership::single("a", held), "a", &Options::default(), &BrokerFacts::default());
        let user: Vec<_> = d.changes.iter().filter(|c| c.key.to_string() == "user \"app\"").collect();
        assert_eq!(user.len(), 1, "{:?}", d.changes);
        assert_eq!(user[0].action, Action::Unmanaged, "never touched: its vhost is out of this run's scope");
        assert_eq!(user[0].reason, LEFT_WITH_ITS_VHOST, "and not called \"not created by warren\"");
        assert_eq!(user[0].owner.as_deref(), Some("a"), "and held by this project, as data the renderers group by");
    }

    /// The super-stream test's shrink under load: streams read as idle
    /// while they held 2 and 3 messages, and were deleted without
    /// --allow-destroy. Only a queue of another type is proven idle by 0.
    #[test]
    fn a_stream_read_as_empty_and_unused_still_needs_allow_destroy() {
        use crate::model::{QueueCounts, QueueType};
        use crate::testing::objects::queue;
        for (kind, needed) in [(QueueType::Stream, true), (QueueType::Quorum, false), (QueueType::Classic, false)] {
            let mut v = Vhost::new("v");
            v.queues.insert("q".into(), queue("q", kind, Default::default()));
            let live = Topology { vhosts: [("v".into(), v)].into(), ..Topology::default() };
            let desired = Topology { vhosts: [("v".into(), Vhost::new("v"))].into(), ..Topology::default() };
            let idle = QueueCounts { messages: Some(0), consumers: Some(0) };
            let facts = BrokerFacts {
                queue_counts: Some([(("v".to_string(), "q".to_string()), idle)].into()),
                ..BrokerFacts::default()
            };
            let owner = Ownership::single("a", Inventory::of(&live));
            let d = diff(&desired, &live, &owner, "a", &Options::default(), &facts);
            let [c] = d.changes.as_slice() else { panic!("{:?}", d.changes) };
            assert_eq!(c.action, Action::Destroy, "{kind:?}");
            assert_eq!(c.requires_allow_destroy, needed, "{kind:?}: {}", c.reason);
            assert_eq!(c.reason.contains("does not prove it empty"), needed, "{kind:?}: {}", c.reason);
        }
    }

    /// Permissions that grant less take access as surely as deleting
    /// them: a service's `.*` narrowed to its own queue is refused without
    /// --allow-destroy, and the plan names a queue the user loses.
    #[test]
    fn permissions_that_grant_less_need_allow_destroy_and_name_what_is_lost() {
        use crate::model::Permission;
        use crate::testing::objects::queue;
        let with = |p: (&str, &str, &str)| {
            let mut v = Vhost::new("v");
            v.queues.insert(
                "legacy.audit".into(),
                queue("legacy.audit", crate::model::QueueType::Classic, Default::default()),
            );
            let (configure, write, read) = (p.0.to_string(), p.1.to_string(), p.2.to_string());
            v.set_permission(&Permission { user: "app".into(), configure, write, read });
            Topology { vhosts: [("v".into(), v)].into(), ..Topology::default() }
        };
        let change = |want, have| {
            let d = diff(
                &with(want),
                &with(have),
                &Ownership::default(),
                "a",
                &Options::default(),
                &BrokerFacts::default(),
            );
            let [c] = d.changes.as_slice() else { panic!("{:?}", d.changes) };
            (c.requires_allow_destroy, c.reason.clone())
        };
        let all = (".*", ".*", ".*");
        let (needed, reason) = change(("^$", "^$", "^orders\\.a$"), all);
        assert!(needed, "{reason}");
        assert!(
            reason.ends_with(
                "the user loses access: `configure`, `write` and `read` no longer grant queue \"legacy.audit\""
            ),
            "{reason}"
        );
        let (needed, reason) = change(("^$", "^$", "^(?:a|b)$"), ("^$", "^$", "^a$"));
        assert!(!needed, "granting more takes nothing: {reason}");
        let (needed, reason) = change(("^$", "^$", "^a$"), ("^$", "^$", "^(?:a|b)$"));
        assert!(needed && reason.ends_with("`read` no longer grants a name such as \"b\""), "{reason}");
        let (needed, reason) = change(("^$", "^$", "^(a)\\1$"), ("^$", "^$", "^a$"));
        assert!(needed && reason.contains("`read` may grant less: warren cannot compare"), "{reason}");
    }

    /// The user warren connects as: permissions that grant more take
    /// nothing from it; ones that grant less need --allow-lockout too.
    #[test]
    fn the_connected_users_permissions_need_allow_lockout_only_when_they_grant_less() {
        use crate::model::Permission;
        let with = |read: &str| {
            let mut v = Vhost::new("v");
            let p = Permission { user: "warren".into(), configure: "^$".into(), write: "^$".into(), read: read.into() };
            v.set_permission(&p);
            Topology { vhosts: [("v".into(), v)].into(), ..Topology::default() }
        };
        let facts = BrokerFacts { connected_user: Some("warren".into()), ..BrokerFacts::default() };
        let flags = |want: &str, have: &str| {
            let d = diff(&with(want), &with(have), &Ownership::default(), "a", &Options::default(), &facts);
            let [c] = d.changes.as_slice() else { panic!("{:?}", d.changes) };
            (c.requires_allow_lockout, c.requires_allow_destroy)
        };
        assert_eq!(flags("^(?:a|b)$", "^a$"), (false, false), "granting more");
        assert_eq!(flags("^a$", "^(?:a|b)$"), (true, true), "granting less");
        assert_eq!(flags("^(a)\\1$", "^a$"), (true, true), "not comparable: counted as less");
    }

    /// A topic permission where there was none restricts the keys of a user
    /// who could use the exchange with any; one that grants less does too.
    #[test]
    fn a_topic_permission_that_restricts_keys_needs_allow_destroy() {
        use crate::model::Permission;
        use crate::model::kinds::{Name, by_table};
        let kind = by_table("topic_permissions").unwrap();
        let name = Name { kind, id: vec!["app".into(), "orders".into()] };
        let with = |write: Option<&str>, may_write: &str| {
            let mut v = Vhost::new("v");
            let (configure, read) = ("^$".to_string(), "^$".to_string());
            v.set_permission(&Permission { user: "app".into(), configure, write: may_write.into(), read });
            if let Some(w) = write {
                let body =
                    [("read", "^$"), ("write", w)].map(|(k, x)| (k.to_string(), crate::model::Value::String(x.into())));
                v.objects.insert(name.clone(), body.into_iter().collect());
            }
            Topology { vhosts: [("v".into(), v)].into(), ..Topology::default() }
        };
        let change = |want: Topology, have: Topology| {
            let d = diff(&want, &have, &Ownership::default(), "a", &Options::default(), &BrokerFacts::default());
            let c: Vec<_> = d.changes.iter().filter(|c| c.key.to_string().starts_with("topic permission")).collect();
            let [c] = c.as_slice() else { panic!("{:?}", d.changes) };
            (c.requires_allow_destroy, c.reason.clone())
        };
        let (needed, reason) = change(with(Some("^order\\."), "^orders$"), with(None, "^orders$"));
        assert!(
            needed && reason.contains("`write` no longer grants routing key \"a\" on exchange \"orders\""),
            "{reason}"
        );
        let (needed, reason) = change(with(Some("^order\\."), "^other$"), with(None, "^other$"));
        assert!(!needed, "the user could not publish to the exchange at all: {reason}");
        let (needed, reason) = change(with(Some("^order\\..*"), "^orders$"), with(Some("^order\\.a$"), "^orders$"));
        assert!(!needed, "{reason}");
        let (needed, _) = change(with(Some("^order\\.a$"), "^orders$"), with(Some("^order\\..*"), "^orders$"));
        assert!(needed);
    }

    #[test]
    fn a_limit_lowered_on_the_user_warren_runs_as_needs_allow_lockout() {
        let user = |limits: Option<&[(&str, i64)]>| User {
            name: "warren".into(),
            password: Password::None,
            tags: Default::default(),
            limits: limits.map(|l| l.iter().map(|(k, n)| (k.to_string(), *n)).collect()),
        };
        let with = |u: User| {
            let mut t = Topology::default();
            t.set_user(&u);
            t
        };
        let facts = BrokerFacts { connected_user: Some("warren".into()), ..BrokerFacts::default() };
        let lockout = |want: User, have: User| {
            let d = diff(&with(want), &with(have), &Ownership::default(), "a", &Options::default(), &facts);
            assert_eq!(d.changes.len(), 1, "{:?}", d.changes);
            d.changes[0].requires_allow_lockout
        };
        let ten = [("max-connections", 10)];
        assert!(lockout(user(Some(&ten)), user(None)), "a new limit");
        assert!(lockout(user(Some(&[("max-connections", 5)])), user(Some(&ten))), "a lower one");
        assert!(lockout(user(Some(&ten)), user(Some(&[("max-connections", -1)]))), "one where there was none");
        assert!(!lockout(user(Some(&[("max-connections", 20)])), user(Some(&ten))), "a higher one");
        assert!(!lockout(user(Some(&[("max-connections", -1)])), user(Some(&ten))), "no limit");
        assert!(!lockout(user(Some(&[])), user(Some(&ten))), "removed");
    }
}
