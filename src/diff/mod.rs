//! (desired, live, inventory) -> changes. Pure: no I/O, no clock.
//!
//! Ownership decides what may be destroyed: a live object missing from the
//! files is destroyed only when this project's inventory lists it. Another
//! project's objects are shown as theirs and never touched (declaring one is
//! an error); anything else is shown as unmanaged and never touched.

mod access;
mod attributes;
mod change;
mod immutable;
mod in_flight;
pub mod outside;
mod policy_advice;
mod preflight;

use std::cell::OnceCell;
use std::collections::{BTreeMap, BTreeSet};

pub use attributes::Attributes;
pub use change::{Action, Change, Declared, Migration};
pub use in_flight::InFlight;
pub use outside::Outside;
pub use preflight::REFUSALS;

use crate::diagnostic::Diagnostic;
use crate::model::{
    Binding, DestinationKind, Exchange, Inventory, LazyGraph, Matcher, Node, ObjectKey, Ownership, Password, Policy,
    Queue, QueueCounts, RoutingGraph, Topology, User, Vhost, VhostSettings, is_shared, policy_key, scaffold,
};

/// Choices the user makes on the command line.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Queues to destroy and recreate when their immutable properties
    /// change (terraform's `-replace`): lossy, so apply needs --allow-destroy.
    pub replace: BTreeSet<String>,
    /// Users whose password, read from the environment, does not match the
    /// live hash.
    pub stale_passwords: BTreeSet<String>,
    /// Message and consumer counts of live queues, keyed by (vhost, name),
    /// when read from a broker; `None` offline (counts unknown).
    pub queue_counts: Option<BTreeMap<(String, String), QueueCounts>>,
    /// The live broker's version (major, minor), when known: some changes
    /// are ignored by older brokers.
    pub broker_version: Option<(u32, u32)>,
    /// The migrations in flight, by id, from warren's journal.
    pub in_flight: BTreeMap<String, crate::journal::Migration>,
    /// Each vhost's last apply, from warren's journals: when the objects
    /// changed outside warren were last as it left them.
    pub last_applies: BTreeMap<String, crate::journal::LastApply>,
    /// The user warren connects as, when read from a broker: its own
    /// access is guarded (see `access.rs`).
    pub connected_user: Option<String>,
    /// Two topologies compared for review (two environments), not a plan
    /// to carry out: what cannot change in place is shown as it differs,
    /// and nothing needs --allow-destroy.
    pub comparing: bool,
    /// A change reviewed offline (`warren diff OLD NEW`), not a plan to
    /// carry out now: what it would lose is said in the conditional.
    pub review: bool,
}

/// How the reason of a difference that no broker can make in place ends,
/// when two topologies are compared.
pub const NOT_IN_PLACE: &str = "which cannot change in place";

/// A desired change that cannot be carried out, tied to the object at fault.
#[derive(Debug, Clone)]
pub struct Problem {
    pub key: ObjectKey,
    pub field: Option<String>,
    pub diagnostic: Diagnostic,
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
/// objects `ownership` assigns to projects.
pub fn diff(desired: &Topology, live: &Topology, ownership: &Ownership, project: &str, options: &Options) -> Diff {
    let declared: BTreeSet<String> = desired.vhosts.keys().cloned().collect();
    let inventory = &ownership.of(project);
    let mut d = Differ { inventory, ownership, project, options, declared, out: Diff::default() };
    d.theirs_declared(desired, live);
    d.users(desired, live);
    let empty = Vhost::default();
    for (name, want) in &desired.vhosts {
        let have = live.vhosts.get(name);
        d.vhost_settings(name, &want.settings, have.map(|h| &h.settings));
        let held = d.in_flight(name, want, have.unwrap_or(&empty));
        d.vhost(name, want, have.unwrap_or(&empty), &held);
    }
    for name in live.vhosts.keys().filter(|n| !desired.vhosts.contains_key(*n)) {
        let key = ObjectKey::Vhost(name.clone());
        if inventory.owns(&key, &d.declared) && ownership.other_holder(&key, project).is_none() {
            let reason = if options.review {
                "removed from the files: the vhost would go with everything in it"
            } else {
                "removed from the files: the vhost goes with everything in it"
            };
            let mut c = Change::new(key, Action::Destroy, reason);
            c.requires_allow_destroy = true;
            d.out.changes.push(c);
        }
    }
    access::guard(&mut d.out.changes, live, options.connected_user.as_deref(), &options.stale_passwords);
    if options.comparing {
        for c in &mut d.out.changes {
            c.requires_allow_destroy = false;
            c.requires_allow_lockout = false;
        }
    } else {
        d.changed_outside(live);
    }
    d.out
}

struct Differ<'a> {
    /// This project's inventory.
    inventory: &'a Inventory,
    ownership: &'a Ownership,
    project: &'a str,
    /// The vhosts the files declare: the scope of this run's ownership.
    declared: BTreeSet<String>,
    options: &'a Options,
    out: Diff,
}

impl<'a> Differ<'a> {
    fn push(&mut self, c: Change) {
        self.out.changes.push(c);
    }

    /// A live object absent from the files: destroyed if this project owns
    /// it (and, for a shared vhost or user, no other project holds it).
    fn absent(&mut self, key: ObjectKey, before: Attributes, lossy: bool) {
        let other = self.ownership.other_holder(&key, self.project);
        let mut c = match other {
            Some(p) if !self.inventory.contains(&key) || is_shared(&key) => theirs(key, p),
            _ if self.inventory.owns(&key, &self.declared) => {
                let mut c = Change::new(key, Action::Destroy, "removed from the files");
                c.requires_allow_destroy = lossy;
                c
            }
            _ => Change::new(key, Action::Unmanaged, "live, but neither in the files nor created by warren"),
        };
        c.before = Some(before);
        self.push(c);
    }

    /// A problem for each declared object that another project owns: this
    /// project would change it and take it over. Vhosts and users are shared.
    fn theirs_declared(&mut self, desired: &Topology, live: &Topology) {
        if self.ownership.projects.keys().all(|p| p == self.project) {
            return; // the common case: one project, nothing to look up
        }
        let replaced = desired
            .vhosts
            .iter()
            .flat_map(|(v, vh)| vh.queues.values().filter_map(move |q| q.replaces.as_ref().map(|old| (q, v, old))));
        let mut found: Vec<(ObjectKey, Option<String>, &str)> = Vec::new();
        for (q, v, old) in replaced {
            let key = ObjectKey::Queue { vhost: v.clone(), name: old.clone() };
            if let Some(p) = self.taken(&key, live) {
                found.push((ObjectKey::Queue { vhost: v.clone(), name: q.name.clone() }, Some("replaces".into()), p));
            }
        }
        for key in Inventory::of(desired).objects.into_iter().filter(|k| !is_shared(k)) {
            if let Some(p) = self.taken(&key, live) {
                found.push((key, None, p));
            }
        }
        for (key, field, owner) in found {
            let what = if field.is_some() { "replaces" } else { "declares" };
            let diagnostic = Diagnostic::error(
                "other-project",
                format!("{key} belongs to project \"{owner}\"; project \"{}\" {what} it", self.project),
            )
            .label(format!("owned by project \"{owner}\""))
            .help(format!(
                "to use it without managing it, list it under [external] instead; to take it over, run `warren adopt --from {owner}` on these files, then remove it from project \"{owner}\"'s files"
            ));
            self.out.problems.push(Problem { key, field, diagnostic });
        }
    }

    /// The other project that owns `key`, when it is live and this project
    /// does not own it too.
    fn taken(&self, key: &ObjectKey, live: &Topology) -> Option<&'a str> {
        if self.inventory.contains(key) || !live.has(key) {
            return None;
        }
        self.ownership.other_holder(key, self.project)
    }

    /// Tells which of the objects that differ were changed outside warren
    /// since its last apply, and says so in their changes' reasons.
    fn changed_outside(&mut self, live: &Topology) {
        let acting = self
            .out
            .changes
            .iter()
            .filter(|c| matches!(c.action, Action::Create | Action::Update | Action::Replace | Action::Destroy));
        let keys = acting.map(|c| &c.key).chain(self.out.problems.iter().map(|p| &p.key));
        let found = outside::find(keys, &self.inventory.digests, live, &self.options.last_applies);
        let moved: BTreeMap<&ObjectKey, &Outside> = found.iter().map(|o| (&o.key, o)).collect();
        for c in &mut self.out.changes {
            let Some(o) = moved.get(&c.key) else { continue };
            let since = match &o.since {
                Some(last) => format!(" (last applied by {} at {})", last.by, last.at),
                None => String::new(),
            };
            let what = if o.deleted { "deleted" } else { "changed" };
            match c.action {
                Action::Create if o.deleted => {
                    c.reason =
                        format!("deleted outside warren since its last apply{since}: declared again as the files say")
                }
                Action::Update => {
                    c.reason = format!("changed outside warren since its last apply{since}: put back as the files say")
                }
                _ => c.reason += &format!("; it was {what} outside warren since its last apply{since}"),
            }
        }
        for p in &mut self.out.problems {
            if moved.contains_key(&p.key) {
                p.diagnostic.message += " (it was changed outside warren since its last apply)";
            }
        }
        self.out.outside = found;
    }

    /// Replaces the reason of the change just pushed, when it is a destroy.
    fn explain_last(&mut self, reason: &str) {
        if let Some(c) = self.out.changes.last_mut().filter(|c| c.action == Action::Destroy) {
            c.reason = reason.to_string();
        }
    }

    fn created(&mut self, key: ObjectKey, after: Attributes, reason: &str, declared: Option<Declared>) {
        let mut c = Change::new(key, Action::Create, reason);
        c.after = Some(after);
        c.declared = declared;
        self.push(c);
    }

    fn updated(&mut self, key: ObjectKey, before: Attributes, after: Attributes, declared: Declared) {
        let mut c = Change::new(key, Action::Update, "changed in the files");
        c.before = Some(before);
        c.after = Some(after);
        c.declared = Some(declared);
        self.push(c);
    }

    /// Create, update, destroy or mark unmanaged the entries of two maps of
    /// objects that can all change in place.
    fn mutable<T: PartialEq>(
        &mut self,
        want: &BTreeMap<String, T>,
        have: &BTreeMap<String, T>,
        key: impl Fn(&str) -> ObjectKey,
        attrs: impl Fn(&T) -> Attributes,
        declared: impl Fn(&T) -> Declared,
    ) {
        for (name, w) in want {
            match have.get(name) {
                None => self.created(key(name), attrs(w), "declared in the files", Some(declared(w))),
                Some(h) if h != w => self.updated(key(name), attrs(h), attrs(w), declared(w)),
                Some(_) => {}
            }
        }
        for (name, h) in have.iter().filter(|(n, _)| !want.contains_key(*n)) {
            self.absent(key(name), attrs(h), false);
        }
    }

    fn users(&mut self, desired: &Topology, live: &Topology) {
        for (name, w) in &desired.users {
            let key = ObjectKey::User(name.clone());
            match live.users.get(name) {
                None => {
                    self.created(key, attributes::user(w), "declared in the files", Some(Declared::User(w.clone())))
                }
                Some(h) if h.tags != w.tags || !self.same_password(w, h) => {
                    self.updated(key, attributes::user(h), attributes::user(w), Declared::User(w.clone()))
                }
                Some(_) => {}
            }
        }
        for (name, h) in live.users.iter().filter(|(n, _)| !desired.users.contains_key(*n)) {
            self.absent(ObjectKey::User(name.clone()), attributes::user(h), false);
        }
    }

    /// Whether the live password is already the desired one. A password
    /// from the environment can only be checked against the live hash by
    /// the caller, who reads the environment.
    fn same_password(&self, want: &User, have: &User) -> bool {
        const DEFAULT: &str = "rabbit_password_hashing_sha256";
        match (&want.password, &have.password) {
            (Password::Env(_), _) => !self.options.stale_passwords.contains(&want.name),
            (Password::Hash { hash: a, algorithm: x }, Password::Hash { hash: b, algorithm: y }) => {
                a == b && x.as_deref().unwrap_or(DEFAULT) == y.as_deref().unwrap_or(DEFAULT)
            }
            (a, b) => a == b,
        }
    }

    fn vhost_settings(&mut self, name: &str, want: &VhostSettings, have: Option<&VhostSettings>) {
        let key = ObjectKey::Vhost(name.into());
        let Some(have) = have else {
            self.created(key, attributes::vhost(want), "declared in the files", Some(Declared::Vhost(want.clone())));
            return;
        };
        // Only the settings the files manage are compared.
        let mut managed = VhostSettings {
            description: want.description.as_ref().map(|_| have.description.clone().unwrap_or_default()),
            default_queue_type: want.default_queue_type.and(have.default_queue_type),
            limits: want.limits.as_ref().map(|_| have.limits.clone().unwrap_or_default()),
        };
        // RabbitMQ before 3.13 accepts a new default queue type for an
        // existing vhost and ignores it (`rabbit_vhost:update/5` exists from 3.13): apply would
        // report success and never converge.
        if let (Some(w), Some(version)) = (want.default_queue_type, self.options.broker_version)
            && version < (3, 13)
            && have.default_queue_type != Some(w)
        {
            let now = have.default_queue_type.map_or("none".to_string(), |t| format!("\"{}\"", t.as_str()));
            let diagnostic = Diagnostic::error(
                "broker-version",
                format!(
                    "vhost \"{name}\" cannot change its default queue type from {now} to \"{}\" on RabbitMQ {}.{}: versions before 3.13 ignore a new default queue type for an existing vhost",
                    w.as_str(),
                    version.0,
                    version.1
                ),
            )
            .help("keep `default_queue_type` as it is live and give each queue its `type`, or upgrade the broker to 3.13 or later");
            self.out.problems.push(Problem { key: key.clone(), field: Some("default_queue_type".into()), diagnostic });
            managed.default_queue_type = Some(w);
        }
        if managed != *want {
            self.updated(key, attributes::vhost(&managed), attributes::vhost(want), Declared::Vhost(want.clone()));
        }
    }

    /// The migrations in flight in vhost `v`, against the files: each is
    /// listed, and rolled back or refused as the files say (see
    /// `in_flight`); what a rollback handles is returned.
    fn in_flight(&mut self, v: &str, want: &Vhost, live: &Vhost) -> in_flight::Held {
        let mut held = in_flight::Held::default();
        let finished =
            |r: &crate::journal::Migration| !live.queues.contains_key(&r.old) && live.queues.contains_key(&r.new);
        for r in self.options.in_flight.values().filter(|r| r.vhost == v && !finished(r)) {
            self.out.in_flight.push(InFlight::of(r));
            match in_flight::judge(r, want, live) {
                in_flight::Verdict::Resume => {}
                in_flight::Verdict::RollBack(c, bindings) => {
                    held.queues.insert(r.new.clone());
                    held.bindings.extend(bindings);
                    self.push(*c);
                }
                in_flight::Verdict::Refuse(p) => self.out.problems.push(*p),
            }
        }
        held
    }

    fn vhost(&mut self, v: &str, want: &Vhost, full: &Vhost, held: &in_flight::Held) {
        // Queues being replaced belong to their migration, not to this diff,
        // and so does the scaffolding of migrations in flight.
        let replaced: BTreeSet<&str> = want.queues.values().filter_map(|q| q.replaces.as_deref()).collect();
        let live_graph = LazyGraph::new(full);
        let without;
        let have = if has_scaffolding(full) {
            without = without_scaffolding(full);
            &without
        } else {
            full
        };
        let mut migrating_bindings = held.bindings.clone();
        // Compiled for the first queue whose arguments change: most plans have none.
        let in_force = OnceCell::new();
        let inventory = self.inventory;

        self.exchanges(v, want, have, &live_graph);
        let mut live_queues = Walk::new(&have.queues);
        for (name, q) in &want.queues {
            // Made only for a change: most queues of a large vhost have none.
            let key = || ObjectKey::Queue { vhost: v.into(), name: name.clone() };
            if let Some(old) = q.replaces.as_deref().filter(|p| have.queues.contains_key(*p)) {
                let mut m = migration(q, &have.queues[old], want, full, live_graph.get(), self.inventory, v);
                let policies = in_force.get_or_init(|| policies_in_force(want, have, inventory, &self.declared, v));
                m.policy_instead =
                    policy_advice::policy_alternative(&have.queues[old], q, policies).map(|a| a.commented());
                for p in preflight::check(q, &have.queues[old], &m, want, full, self.inventory, v) {
                    self.out.problems.push(p);
                }
                migrating_bindings.extend(m.moved.iter().cloned());
                migrating_bindings.extend(m.dropped.iter().cloned());
                migrating_bindings.extend(m.added.iter().cloned());
                migrating_bindings.extend(m.moved.iter().map(|b| retarget(b, name)));
                let mut c = Change::new(key(), Action::Migrate, format!("replaces queue \"{old}\" by live migration"));
                c.before = Some(attributes::queue(&have.queues[old]));
                c.after = Some(attributes::queue(q));
                c.migration = Some(m);
                c.declared = Some(Declared::Queue(q.clone()));
                self.push(c);
                continue;
            }
            match live_queues.get(name) {
                None => {
                    let reason = match &q.replaces {
                        Some(old) => format!("declared in the files (it replaces \"{old}\", which does not exist)"),
                        None => "declared in the files".to_string(),
                    };
                    self.created(key(), attributes::queue(q), &reason, Some(Declared::Queue(q.clone())));
                }
                Some(h) if same_queue(h, q) => {}
                Some(h) => {
                    let policies = in_force.get_or_init(|| policies_in_force(want, have, inventory, &self.declared, v));
                    self.queue_changed(key(), h, q, &live_graph, policies)
                }
            }
        }
        let mut declared = Walk::new(&want.queues);
        for (name, h) in &have.queues {
            if declared.get(name).is_none()
                && !replaced.contains(name.as_str())
                && !want.external.queues.contains(name)
                && !held.queues.contains(name)
            {
                let key = ObjectKey::Queue { vhost: v.into(), name: name.clone() };
                let counts = self.options.queue_counts.as_ref().map(|c| c.get(&(v.to_string(), name.clone())).copied());
                let before = attributes::queue(h);
                match counts {
                    // Known empty and unused: nothing can be lost.
                    Some(Some(c)) if c.is_idle() => self.absent(key, before, false),
                    Some(Some(c)) => {
                        self.absent(key, before, true);
                        self.explain_last(&format!("removed from the files; {}", c.describe()));
                    }
                    _ => {
                        self.absent(key, before, true);
                        self.explain_last(if self.options.review {
                            "removed from the files; its messages, if any, would be lost with it"
                        } else {
                            "removed from the files; its messages, if any, are lost with it"
                        });
                    }
                }
            }
        }
        let (added, removed) = only_in_each(&want.bindings, &have.bindings);
        for b in added {
            if !migrating_bindings.contains(b) {
                let key = ObjectKey::Binding { vhost: v.into(), binding: b.clone() };
                self.created(key, attributes::binding(b), "declared in the files", None);
            }
        }
        for b in removed {
            if !migrating_bindings.contains(b) {
                let key = ObjectKey::Binding { vhost: v.into(), binding: b.clone() };
                self.absent(key, attributes::binding(b), false);
            }
        }
        self.mutable(
            &want.policies,
            &have.policies,
            |n| ObjectKey::Policy { vhost: v.into(), name: n.into() },
            attributes::policy,
            |p| Declared::Policy(p.clone()),
        );
        self.mirroring_refused(v, &want.policies, &have.policies);
        self.mutable(
            &want.operator_policies,
            &have.operator_policies,
            |n| ObjectKey::OperatorPolicy { vhost: v.into(), name: n.into() },
            attributes::policy,
            |p| Declared::Policy(p.clone()),
        );
        self.mutable(
            &want.permissions,
            &have.permissions,
            |u| ObjectKey::Permission { vhost: v.into(), user: u.into() },
            attributes::permission,
            |p| Declared::Permission(p.clone()),
        );
    }

    /// RabbitMQ 4 removed classic queue mirroring and refuses a policy that
    /// sets an `ha-*` key (400 "not recognised policy settings"): creating
    /// or changing one is a problem before any write, not a failure halfway
    /// through an apply. One kept as it is live (from before an upgrade) is
    /// left alone.
    fn mirroring_refused(&mut self, v: &str, want: &BTreeMap<String, Policy>, have: &BTreeMap<String, Policy>) {
        let Some(version) = self.options.broker_version.filter(|b| *b >= (4, 0)) else { return };
        for (name, p) in want.iter().filter(|(n, p)| have.get(*n) != Some(*p)) {
            for k in p.definition.keys().filter(|k| policy_key(k).is_some_and(|pk| pk.mirroring)) {
                let diagnostic = Diagnostic::error(
                    "broker-version",
                    format!(
                        "policy \"{name}\" sets `{k}`, classic queue mirroring, which RabbitMQ {}.{} no longer has: it refuses the policy",
                        version.0, version.1
                    ),
                )
                .help("remove the `ha-*` keys; quorum queues replicate (`type = \"quorum\"`)");
                let key = ObjectKey::Policy { vhost: v.into(), name: name.clone() };
                self.out.problems.push(Problem { key, field: Some(format!("definition.{k}")), diagnostic });
            }
        }
    }

    fn exchanges(&mut self, v: &str, want: &Vhost, have: &Vhost, live_graph: &LazyGraph) {
        for (name, x) in &want.exchanges {
            let key = || ObjectKey::Exchange { vhost: v.into(), name: name.clone() };
            match have.exchanges.get(name) {
                None => self.created(
                    key(),
                    attributes::exchange(x),
                    "declared in the files",
                    Some(Declared::Exchange(x.clone())),
                ),
                Some(h) if same_exchange(h, x) => {}
                Some(h) if self.options.comparing => {
                    let fields = immutable::exchange_fields(h, x).join(", ");
                    let mut c = Change::new(key(), Action::Update, format!("differs in {fields}, {NOT_IN_PLACE}"));
                    c.before = Some(attributes::exchange(h));
                    c.after = Some(attributes::exchange(x));
                    self.push(c);
                }
                Some(h) => {
                    let node = Node::Exchange(name.clone());
                    let mut c = Change::new(
                        key(),
                        Action::Replace,
                        format!(
                            "{} cannot change in place: the exchange {}",
                            immutable::exchange_fields(h, x).join(", "),
                            if self.options.review {
                                "would be deleted and declared again, and messages published in between would not be routed"
                            } else {
                                "is deleted and declared again, and messages published in between are not routed"
                            }
                        ),
                    );
                    c.before = Some(attributes::exchange(h));
                    c.after = Some(attributes::exchange(x));
                    c.declared = Some(Declared::Exchange(x.clone()));
                    c.requires_allow_destroy = true;
                    let live_graph = live_graph.get();
                    c.rebind = surviving(
                        live_graph.inbound(&node).into_iter().chain(live_graph.outbound(&node)),
                        want,
                        self.inventory,
                        v,
                    );
                    self.push(c);
                }
            }
        }
        for (name, h) in &have.exchanges {
            if !want.exchanges.contains_key(name) && !want.external.exchanges.contains(name) {
                let key = ObjectKey::Exchange { vhost: v.into(), name: name.clone() };
                self.absent(key, attributes::exchange(h), false);
            }
        }
    }

    fn queue_changed(
        &mut self,
        key: ObjectKey,
        have: &Queue,
        want: &Queue,
        live_graph: &LazyGraph,
        in_force: &[Matcher],
    ) {
        let fields = immutable::queue_fields(have, want);
        if self.options.comparing {
            let mut c = Change::new(key, Action::Update, format!("differs in {}, {NOT_IN_PLACE}", fields.join(", ")));
            c.before = Some(attributes::queue(have));
            c.after = Some(attributes::queue(want));
            self.push(c);
            return;
        }
        if self.options.replace.contains(&want.name) {
            let node = Node::Queue(want.name.clone());
            let mut c = Change::new(
                key.clone(),
                Action::Replace,
                format!(
                    "{} cannot change in place and --replace asks to recreate it: its messages {}",
                    fields.join(", "),
                    if self.options.review { "would be lost" } else { "are lost" }
                ),
            );
            c.before = Some(attributes::queue(have));
            c.after = Some(attributes::queue(want));
            c.declared = Some(Declared::Queue(want.clone()));
            c.requires_allow_destroy = true;
            c.rebind = live_graph.get().inbound(&node).into_iter().cloned().collect();
            self.push(c);
            return;
        }
        let policy = policy_advice::policy_alternative(have, want, in_force);
        let diagnostic = immutable::queue_problem(want, &fields, policy);
        self.out.problems.push(Problem { key, field: None, diagnostic });
    }
}

/// A live object that another project holds: shown as theirs, never touched.
fn theirs(key: ObjectKey, project: &str) -> Change {
    let mut c = Change::new(key, Action::OtherProject, format!("owned by project \"{project}\""));
    c.owner = Some(project.to_string());
    c
}

/// Looks up names that come in ascending order in an ordered map, walking
/// it once: a search of it for each would compare long names that share
/// their prefix at every level.
struct Walk<'a, V> {
    items: std::iter::Peekable<std::collections::btree_map::Iter<'a, String, V>>,
}

impl<'a, V> Walk<'a, V> {
    fn new(map: &'a BTreeMap<String, V>) -> Self {
        Walk { items: map.iter().peekable() }
    }

    /// The value of `name`, which is not below any name asked before.
    fn get(&mut self, name: &str) -> Option<&'a V> {
        while self.items.next_if(|(k, _)| k.as_str() < name).is_some() {}
        self.items.peek().filter(|(k, _)| k.as_str() == name).map(|(_, v)| *v)
    }
}

/// The items only in `a` and those only in `b`, in order, in one walk of both.
fn only_in_each<'a, T: Ord>(a: &'a BTreeSet<T>, b: &'a BTreeSet<T>) -> (Vec<&'a T>, Vec<&'a T>) {
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    let (mut a, mut b) = (a.iter().peekable(), b.iter().peekable());
    while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
        match x.cmp(y) {
            std::cmp::Ordering::Less => only_a.extend(a.next()),
            std::cmp::Ordering::Greater => only_b.extend(b.next()),
            std::cmp::Ordering::Equal => {
                a.next();
                b.next();
            }
        }
    }
    only_a.extend(a);
    only_b.extend(b);
    (only_a, only_b)
}

fn has_scaffolding(v: &Vhost) -> bool {
    v.exchanges.keys().any(|n| scaffold::is_scaffolding(n)) || v.policies.keys().any(|n| scaffold::is_scaffolding(n))
}

/// The vhost less the objects of migrations in flight.
fn without_scaffolding(v: &Vhost) -> Vhost {
    let mut out = v.clone();
    out.exchanges.retain(|n, _| !scaffold::is_scaffolding(n));
    out.policies.retain(|n, _| !scaffold::is_scaffolding(n));
    out.bindings.retain(|b| {
        let into_scaffolding =
            b.destination_kind == DestinationKind::Exchange && scaffold::is_scaffolding(&b.destination);
        !scaffold::is_scaffolding(&b.source) && !into_scaffolding
    });
    out
}

/// The policies of vhost `v` once the plan is applied: those the files
/// declare, and live ones warren leaves alone (neither declared nor owned).
fn policies_in_force<'a>(
    want: &'a Vhost,
    have: &'a Vhost,
    inventory: &Inventory,
    declared: &BTreeSet<String>,
    v: &str,
) -> Vec<Matcher<'a>> {
    let kept = have.policies.values().filter(|p| {
        !want.policies.contains_key(&p.name)
            && !inventory.owns(&ObjectKey::Policy { vhost: v.into(), name: p.name.clone() }, declared)
    });
    want.policies.values().chain(kept).map(Matcher::new).collect()
}

/// Queues compare on everything the broker stores (not on `replaces`).
fn same_queue(a: &Queue, b: &Queue) -> bool {
    a.kind == b.kind && a.durable == b.durable && a.auto_delete == b.auto_delete && a.arguments == b.arguments
}

fn same_exchange(a: &Exchange, b: &Exchange) -> bool {
    a == b
}

/// Live bindings touching a recreated exchange that must exist afterwards:
/// every one the files still declare, and every one warren does not own.
fn surviving<'a>(
    bindings: impl Iterator<Item = &'a Binding>,
    want: &Vhost,
    inventory: &Inventory,
    v: &str,
) -> Vec<Binding> {
    let mut out: Vec<Binding> = bindings
        .filter(|b| {
            want.bindings.contains(*b)
                || !inventory.contains(&ObjectKey::Binding { vhost: v.into(), binding: (*b).clone() })
        })
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The same binding, delivering to `queue` instead.
fn retarget(b: &Binding, queue: &str) -> Binding {
    Binding { destination: queue.to_string(), ..b.clone() }
}

/// How `new` takes over `old`: which of the old queue's bindings move,
/// which go away, which are new, and what an interrupted run left behind.
fn migration(
    new: &Queue,
    old: &Queue,
    want: &Vhost,
    live: &Vhost,
    live_graph: &RoutingGraph,
    inventory: &Inventory,
    v: &str,
) -> Migration {
    // The old queue's bindings: direct ones, and those an earlier run moved
    // behind an interposed exchange (X -> X2 -> P, or X -> X2 once P let go).
    let mut old_bindings: Vec<Binding> = live_graph
        .inbound(&Node::Queue(old.name.clone()))
        .into_iter()
        .filter(|b| !scaffold::is_scaffolding(&b.source))
        .cloned()
        .collect();
    for b in &live.bindings {
        if b.destination_kind == DestinationKind::Exchange
            && b.destination == scaffold::interposed(&old.name, &b.source)
        {
            let direct =
                Binding { destination_kind: DestinationKind::Queue, destination: old.name.clone(), ..b.clone() };
            if !old_bindings.contains(&direct) {
                old_bindings.push(direct);
            }
        }
    }
    old_bindings.sort();
    let old_bindings = old_bindings.iter();
    let new_bindings: Vec<&Binding> = want
        .bindings
        .iter()
        .filter(|b| b.destination_kind == DestinationKind::Queue && b.destination == new.name)
        .collect();
    let (mut moved, mut dropped) = (Vec::new(), Vec::new());
    for b in old_bindings {
        if new_bindings.contains(&&retarget(b, &new.name)) {
            moved.push(b.clone());
        } else {
            dropped.push(b.clone());
        }
    }
    let added =
        new_bindings.into_iter().filter(|b| !moved.iter().any(|m| retarget(m, &new.name) == **b)).cloned().collect();
    let changed = immutable::queue_fields(old, new);
    let leftover_exchanges = leftovers(&old.name, &moved, want, live, inventory, v);
    Migration { replaces: old.name.clone(), moved, dropped, added, changed, policy_instead: None, leftover_exchanges }
}

/// The scaffolding for old queue `p` of exchanges that are not sources of
/// the migration (`moved`), live and warren's own: what a run that stopped
/// mid-teardown left once the last binding through it was gone. Found by
/// the names it would have for each exchange live or in the files; objects
/// warren does not own are left alone.
fn leftovers(p: &str, moved: &[Binding], want: &Vhost, live: &Vhost, inventory: &Inventory, v: &str) -> Vec<String> {
    let sources: BTreeSet<&str> = moved.iter().map(|b| b.source.as_str()).collect();
    let others: BTreeSet<&String> = live
        .exchanges
        .keys()
        .chain(want.exchanges.keys())
        .filter(|x| !scaffold::is_scaffolding(x) && !sources.contains(x.as_str()))
        .collect();
    let mut exchanges = Vec::new();
    for x in others {
        for name in [scaffold::alternate(p, x), scaffold::interposed(p, x)] {
            let owned = inventory.contains(&ObjectKey::Exchange { vhost: v.into(), name: name.clone() });
            if owned && live.exchanges.contains_key(&name) {
                exchanges.push(name);
            }
        }
    }
    exchanges
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::QueueType;

    fn with_dqt(t: Option<QueueType>) -> Topology {
        let mut v = Vhost::new("v");
        v.settings.default_queue_type = t;
        let mut topology = Topology::default();
        topology.vhosts.insert("v".into(), v);
        topology
    }

    #[test]
    fn a_default_queue_type_change_is_a_problem_before_3_13() {
        let (want, have) = (with_dqt(Some(QueueType::Classic)), with_dqt(Some(QueueType::Quorum)));
        let ownership = Ownership::default();
        let on = |version| {
            let options = Options { broker_version: version, ..Options::default() };
            diff(&want, &have, &ownership, "default", &options)
        };
        let old = on(Some((3, 12)));
        assert_eq!(old.problems.len(), 1);
        assert!(old.problems[0].diagnostic.message.contains("from \"quorum\" to \"classic\" on RabbitMQ 3.12"));
        assert!(old.changes.is_empty(), "no update that could not happen: {:?}", old.changes);
        for version in [Some((3, 13)), Some((4, 0)), None] {
            let d = on(version);
            assert!(d.problems.is_empty(), "{version:?}");
            assert_eq!(d.changes.len(), 1);
            assert_eq!(d.changes[0].action, Action::Update);
        }
        let same =
            diff(&want, &want, &ownership, "default", &Options { broker_version: Some((3, 10)), ..Options::default() });
        assert!(same.problems.is_empty() && same.changes.is_empty());
    }

    #[test]
    fn a_mirroring_policy_is_a_problem_on_4_x_unless_it_is_live_already() {
        let with_policy = |key: &str| {
            let mut t = with_dqt(None);
            let definition = [(key.to_string(), crate::model::Value::String("all".into()))].into_iter().collect();
            let p = Policy {
                name: "p".into(),
                pattern: ".*".into(),
                apply_to: crate::model::ApplyTo::Queues,
                priority: 0,
                definition,
            };
            t.vhosts.get_mut("v").unwrap().policies.insert("p".into(), p);
            t
        };
        let (ha, none) = (with_policy("ha-mode"), with_dqt(None));
        let ownership = Ownership::default();
        let on = |want: &Topology, have: &Topology, version| {
            let options = Options { broker_version: version, ..Options::default() };
            diff(want, have, &ownership, "default", &options)
        };
        let refused = on(&ha, &none, Some((4, 0)));
        assert_eq!(refused.problems.len(), 1);
        assert!(refused.problems[0].diagnostic.message.contains("`ha-mode`"), "{:?}", refused.problems);
        assert_eq!(refused.problems[0].field.as_deref(), Some("definition.ha-mode"));
        for version in [Some((3, 13)), None] {
            assert!(on(&ha, &none, version).problems.is_empty(), "{version:?}");
        }
        assert!(on(&ha, &ha, Some((4, 0))).problems.is_empty(), "kept as it is live");
        assert!(on(&with_policy("max-length"), &none, Some((4, 0))).problems.is_empty());
    }

    #[test]
    fn scaffolding_an_interrupted_teardown_left_is_deleted_when_warren_owns_it() {
        let exchange = |name: &str, internal| Exchange {
            name: name.into(),
            kind: "direct".into(),
            durable: true,
            auto_delete: false,
            internal,
            arguments: Default::default(),
        };
        let queue = |name: &str, replaces: Option<&str>| Queue {
            name: name.into(),
            kind: QueueType::Classic,
            durable: true,
            auto_delete: false,
            arguments: Default::default(),
            replaces: replaces.map(Into::into),
        };
        let to_new = |source: &str| Binding {
            source: source.into(),
            destination_kind: DestinationKind::Queue,
            destination: "new".into(),
            routing_key: "k".into(),
            arguments: Default::default(),
        };
        // The run stopped right before deleting the interposed exchanges:
        // both sources are bound to the new queue directly, nothing routes
        // through the scaffolding, and only "shop"'s is warren's.
        let mut live = Vhost::new("v");
        for x in ["shop", "billing"] {
            live.exchanges.insert(x.into(), exchange(x, false));
            live.bindings.insert(to_new(x));
            let interposed = scaffold::interposed("old", x);
            live.exchanges.insert(interposed.clone(), exchange(&interposed, true));
        }
        live.queues.insert("old".into(), queue("old", None));
        live.queues.insert("new".into(), queue("new", None));
        let mut want = Vhost::new("v");
        for x in ["shop", "billing"] {
            want.exchanges.insert(x.into(), exchange(x, false));
            want.bindings.insert(to_new(x));
        }
        want.queues.insert("new".into(), queue("new", Some("old")));
        let mut inventory = Inventory::default();
        inventory.objects.insert(ObjectKey::Exchange { vhost: "v".into(), name: scaffold::interposed("old", "shop") });
        let topology =
            |v: Vhost| Topology { vhosts: [("v".to_string(), v)].into_iter().collect(), ..Default::default() };
        let ownership = Ownership::single("default", inventory);
        let d = diff(&topology(want), &topology(live), &ownership, "default", &Options::default());
        let m = d.changes.iter().find_map(|c| c.migration.clone()).expect("a migration");
        assert!(m.moved.is_empty(), "{m:?}");
        assert_eq!(m.leftover_exchanges, [scaffold::interposed("old", "shop")]);
    }

    proptest::proptest! {
        #[test]
        fn one_walk_finds_what_the_two_differences_find(
            a in proptest::collection::btree_set(0u8..60, 0..50),
            b in proptest::collection::btree_set(0u8..60, 0..50),
        ) {
            let (only_a, only_b) = only_in_each(&a, &b);
            proptest::prop_assert_eq!(only_a, a.difference(&b).collect::<Vec<_>>());
            proptest::prop_assert_eq!(only_b, b.difference(&a).collect::<Vec<_>>());
        }

        #[test]
        fn a_walk_finds_what_a_search_finds(
            names in proptest::collection::btree_set("[a-c]{0,3}", 0..20),
            asked in proptest::collection::btree_set("[a-c]{0,3}", 0..20),
        ) {
            let map: BTreeMap<String, usize> = names.into_iter().enumerate().map(|(i, n)| (n, i)).collect();
            let mut walk = Walk::new(&map);
            for name in &asked {
                proptest::prop_assert_eq!(walk.get(name), map.get(name));
            }
        }
    }

    #[test]
    fn a_shared_vhost_or_user_goes_only_with_its_last_project() {
        let mut live = Topology::default();
        for v in ["shared", "kept"] {
            live.vhosts.insert(v.into(), Vhost::new(v));
        }
        live.users
            .insert("app".into(), User { name: "app".into(), password: Password::None, tags: Default::default() });
        let held = Inventory::of(&live);
        let mut desired = Topology::default();
        desired.vhosts.insert("kept".into(), Vhost::new("kept"));
        let kinds = |o: &Ownership| {
            let d = diff(&desired, &live, o, "a", &Options::default());
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
}
