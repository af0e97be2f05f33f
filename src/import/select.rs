//! Which live objects topology files can declare. What `warren validate`
//! would refuse (a server-named `amq.gen-…` queue, a policy key RabbitMQ does
//! not know, a null argument) is left out, and the names bindings still use
//! are listed as external so that the files validate.

use std::collections::{BTreeMap, BTreeSet};

use crate::desired::{EXCHANGE_TYPES, HASHING_ALGORITHMS, LIMIT_KEYS, MAX_NAME_BYTES, USER_LIMIT_KEYS, check_expect};
use crate::model::kinds::{Kind, operator_policies, permissions, policies, users};
use crate::model::{
    BUILTIN_EXCHANGES, Binding, DestinationKind, Exchange, ObjectKey, Password, Permission, Policy, QUEUE_ARGUMENTS,
    Queue, Table, Topology, User, Vhost, argument_rule, policy_key,
};
use crate::toml_text;

/// A live object the files leave out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    pub key: ObjectKey,
    /// Part of the object left out (a vhost limit), or `None` for all of it.
    pub part: Option<String>,
    pub why: String,
}

/// What the files will declare, and what they leave out.
#[derive(Debug, Default)]
pub(super) struct Selection {
    /// Loaded back, the files give exactly this (`external` included).
    pub topology: Topology,
    pub left_out: Vec<LeftOut>,
}

/// Selects the `vhosts` of `live` (every vhost when empty) and its users:
/// all of them, or with a vhost filter those with permissions there.
pub(super) fn select(live: &Topology, vhosts: &BTreeSet<String>) -> Selection {
    let mut s = Selection::default();
    let chosen = |v: &String| vhosts.is_empty() || vhosts.contains(v);
    let wanted_user =
        |u: &String| vhosts.is_empty() || live.vhosts.iter().any(|(v, vh)| chosen(v) && vh.has_permission(u));
    for (name, mut user) in live.users().into_iter().filter(|(n, _)| wanted_user(n)) {
        match user_problem(&user) {
            None => {
                s.limits(&users::key(&name), USER_LIMIT_KEYS, &mut user.limits);
                s.topology.set_user(&user);
            }
            Some(why) => s.leave_out(users::key(&name), why),
        }
    }
    // Broker-wide objects of kinds belong to no vhost: a vhost filter
    // leaves them to an import of the whole broker.
    // A kind that names one broker (its cluster name) is not imported:
    // files taken to another broker would rename that one. The users
    // are selected above.
    if vhosts.is_empty() {
        let portable = live.objects.iter().filter(|(n, _)| n.kind.portable && n.kind != &users::KIND);
        s.topology.objects.extend(portable.map(|(n, b)| (n.clone(), b.clone())));
    }
    for (name, vh) in live.vhosts.iter().filter(|(v, _)| chosen(v)) {
        let selected = s.vhost(vh);
        s.topology.vhosts.insert(name.clone(), selected);
    }
    s
}

impl Selection {
    fn leave_out(&mut self, key: ObjectKey, why: String) {
        self.left_out.push(LeftOut { key, part: None, why });
    }

    fn vhost(&mut self, live: &Vhost) -> Vhost {
        let v = &live.name;
        let mut out = Vhost::new(v);
        out.settings = live.settings.clone();
        self.limits(&ObjectKey::Vhost(v.clone()), LIMIT_KEYS, &mut out.settings.limits);
        for (name, x) in &live.exchanges {
            match exchange_problem(x) {
                None => {
                    out.exchanges.insert(name.clone(), x.clone());
                }
                Some(why) => {
                    out.external.exchanges.insert(name.clone());
                    let (vhost, name) = (v.clone(), name.clone());
                    self.leave_out(ObjectKey::Exchange { vhost, name }, why);
                }
            }
        }
        for (name, q) in &live.queues {
            match queue_problem(q) {
                None => {
                    out.queues.insert(name.clone(), q.clone());
                }
                Some(why) => {
                    out.external.queues.insert(name.clone());
                    let (vhost, name) = (v.clone(), name.clone());
                    self.leave_out(ObjectKey::Queue { vhost, name }, why);
                }
            }
        }
        for b in &live.bindings {
            if let Some(why) = binding_problem(b) {
                let key = ObjectKey::Binding { vhost: v.clone(), binding: b.clone() };
                self.leave_out(key, why);
                continue;
            }
            out.bindings.insert(b.clone());
        }
        list_externals(&mut out);
        // Every object of a kind reads back as it is: its values are of
        // the attributes' types.
        out.objects = live.objects.clone();
        // Policies and operator policies are checked through their typed view.
        for kind in [&policies::KIND, &operator_policies::KIND] {
            let kept = self.policies(v, &policies::typed_of(kind, &live.objects), kind);
            out.objects.retain(|n, _| n.kind != kind || kept.contains_key(&n.id[0]));
        }
        // Permissions, through theirs: each one import refuses is left out.
        for (user, p) in &live.permissions() {
            if let Some(why) = self.permission_problem(p) {
                self.leave_out(permissions::key(v, user), why);
                out.remove_permission(user);
            }
        }
        out
    }

    /// Keeps the `limits` of the vhost or user `key` that topology files can
    /// set (`known`), and none at all when none is left.
    fn limits(&mut self, key: &ObjectKey, known: &[&str], limits: &mut Option<BTreeMap<String, i64>>) {
        if let Some(limits) = limits {
            limits.retain(|k, n| {
                let why = if !known.contains(&k.as_str()) {
                    format!("topology files set only {}", known.join(" and "))
                } else if *n < -1 {
                    format!("{n} is below -1")
                } else {
                    return true;
                };
                self.left_out.push(LeftOut { key: key.clone(), part: Some(format!("limit `{k}`")), why });
                false
            });
        }
        if limits.as_ref().is_some_and(|l| l.is_empty()) {
            *limits = None;
        }
    }

    /// The policies of vhost `v` (of `kind`: policies or operator
    /// policies) the files can declare.
    fn policies(&mut self, v: &str, live: &BTreeMap<String, Policy>, kind: &'static Kind) -> BTreeMap<String, Policy> {
        let mut out = BTreeMap::new();
        for (name, p) in live {
            if let Some(why) = policy_problem(p, kind == &operator_policies::KIND) {
                self.leave_out(policies::key_of(kind, v, name), why);
            } else {
                out.insert(name.clone(), p.clone());
            }
        }
        out
    }

    fn permission_problem(&self, p: &Permission) -> Option<String> {
        (!self.topology.has_user(&p.user)).then(|| format!("user \"{}\" is not imported", p.user.escape_debug()))
    }
}

/// Lists as external each binding end that `vhost` does not declare.
fn list_externals(vhost: &mut Vhost) {
    let Vhost { exchanges, queues, bindings, external, .. } = vhost;
    let declared = |x: &String| exchanges.contains_key(x) || BUILTIN_EXCHANGES.contains(&x.as_str());
    for b in bindings.iter() {
        if !declared(&b.source) {
            external.exchanges.insert(b.source.clone());
        }
        match b.destination_kind {
            DestinationKind::Exchange if !declared(&b.destination) => {
                external.exchanges.insert(b.destination.clone());
            }
            DestinationKind::Queue if !queues.contains_key(&b.destination) => {
                external.queues.insert(b.destination.clone());
            }
            _ => {}
        }
    }
}

fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("its name is empty".into())
    } else if name.len() > MAX_NAME_BYTES {
        Some(format!("its name is over {MAX_NAME_BYTES} bytes"))
    } else {
        None
    }
}

/// Why a table of values cannot be written: a null somewhere.
fn values_problem(what: &str, table: &Table) -> Option<String> {
    toml_text::inline_table(table.iter()).is_none().then(|| format!("{what} holds a null, which TOML cannot write"))
}

fn exchange_problem(x: &Exchange) -> Option<String> {
    name_problem(&x.name)
        .or_else(|| x.name.starts_with("amq.").then(|| "`amq.` names belong to the broker".to_string()))
        .or_else(|| {
            (!EXCHANGE_TYPES.contains(&x.kind.as_str()) && !x.kind.starts_with("x-"))
                .then(|| format!("its type \"{}\" is not one topology files accept", x.kind))
        })
        .or_else(|| values_problem("its `arguments`", &x.arguments))
}

fn queue_problem(q: &Queue) -> Option<String> {
    if let Some(why) = name_problem(&q.name) {
        return Some(why);
    }
    if q.name.starts_with("amq.") {
        return Some("server-named: `amq.` names belong to the broker".into());
    }
    if q.kind.is_replicated() && (!q.durable || q.auto_delete) {
        return Some(format!("a {} queue must be durable and not auto-delete", q.kind));
    }
    for (name, value) in &q.arguments {
        let Some(rule) = argument_rule(name) else {
            continue;
        };
        if let Some(problem) = check_expect(rule.expect, value) {
            return Some(format!("its argument `{name}` {problem}"));
        }
        if !rule.types.contains(&q.kind) {
            return Some(format!("its argument `{name}` is not one of {} queues", q.kind));
        }
    }
    values_problem("its `arguments`", &q.arguments)
}

fn binding_problem(b: &Binding) -> Option<String> {
    if b.source.is_empty() {
        return Some("the default exchange cannot be bound explicitly".into());
    }
    if let Some(why) = name_problem(&b.destination) {
        return Some(format!("its destination: {why}"));
    }
    if b.routing_key.contains('~') && !b.arguments.is_empty() {
        return Some("a `~` in the routing key of a binding with arguments breaks the management API".into());
    }
    values_problem("its `arguments`", &b.arguments)
}

fn policy_problem(p: &Policy, operator: bool) -> Option<String> {
    if let Some(why) = name_problem(&p.name) {
        return Some(why);
    }
    if p.definition.is_empty() {
        return Some("its definition is empty".into());
    }
    for (k, value) in &p.definition {
        let Some(known) = policy_key(k) else {
            return Some(format!("`{k}` is not a policy key RabbitMQ knows"));
        };
        if operator && !known.operator {
            return Some(format!("`{k}` cannot be set by an operator policy"));
        }
        let rule = QUEUE_ARGUMENTS.iter().find(|r| r.policy_key == Some(k));
        if let Some(problem) = rule.and_then(|r| check_expect(r.expect, value)) {
            return Some(format!("its key `{k}` {problem}"));
        }
    }
    values_problem("its `definition`", &p.definition)
}

fn user_problem(u: &User) -> Option<String> {
    if let Some(why) = name_problem(&u.name) {
        return Some(why);
    }
    match &u.password {
        Password::Hash { algorithm: Some(a), .. } if !HASHING_ALGORITHMS.contains(&a.as_str()) => {
            Some(format!("its hashing algorithm \"{a}\" is not one RabbitMQ ships"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ApplyTo, QueueType, Value};

    fn queue(name: &str, kind: QueueType, args: &[(&str, Value)]) -> Queue {
        Queue {
            name: name.into(),
            kind,
            durable: true,
            auto_delete: false,
            arguments: args.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            replaces: None,
        }
    }

    fn bind(source: &str, queue: &str) -> Binding {
        Binding {
            source: source.into(),
            destination_kind: DestinationKind::Queue,
            destination: queue.into(),
            routing_key: String::new(),
            arguments: Table::new(),
        }
    }

    fn policy(key: &str, value: Value) -> Policy {
        Policy {
            name: "p".into(),
            pattern: ".*".into(),
            apply_to: ApplyTo::All,
            priority: 0,
            definition: [(key.to_string(), value)].into_iter().collect(),
        }
    }

    #[test]
    fn server_named_queues_are_left_out_and_external() {
        let mut t = Topology::default();
        let mut v = Vhost::new("/");
        for q in [queue("amq.gen-1", QueueType::Classic, &[]), queue("work", QueueType::Classic, &[])] {
            v.queues.insert(q.name.clone(), q);
        }
        v.bindings.insert(bind("amq.fanout", "amq.gen-1"));
        v.bindings.insert(bind("gone", "work"));
        t.vhosts.insert("/".into(), v);
        let s = select(&t, &BTreeSet::new());
        let out = &s.topology.vhosts["/"];
        assert_eq!(out.queues.keys().collect::<Vec<_>>(), ["work"]);
        assert_eq!(out.bindings.len(), 2);
        assert!(out.external.queues.contains("amq.gen-1"));
        assert!(out.external.exchanges.contains("gone"));
        assert!(!out.external.exchanges.contains("amq.fanout"));
        assert_eq!(s.left_out.len(), 1);
        assert!(s.left_out[0].why.contains("server-named"));
    }

    #[test]
    fn what_validate_refuses_is_left_out() {
        assert!(queue_problem(&queue("q", QueueType::Classic, &[("x-delivery-limit", Value::Int(5))])).is_some());
        assert!(queue_problem(&queue("q", QueueType::Classic, &[("x-max-priority", Value::Int(0))])).is_some());
        assert!(queue_problem(&queue("q", QueueType::Classic, &[("x-foo", Value::Null)])).is_some());
        assert!(queue_problem(&queue("q", QueueType::Quorum, &[("x-delivery-limit", Value::Int(5))])).is_none());
        assert!(policy_problem(&policy("max-lenght", Value::Int(1)), false).is_some());
        assert!(policy_problem(&policy("alternate-exchange", Value::String("x".into())), true).is_some());
        assert!(policy_problem(&policy("max-length", Value::String("x".into())), false).is_some());
        assert!(policy_problem(&policy("max-length", Value::Int(5)), true).is_none());
        let mut b = bind("x", "q");
        b.routing_key = "a~b".into();
        b.arguments.insert("x-match".into(), Value::String("all".into()));
        assert!(binding_problem(&b).is_some());
        let user = User {
            name: "u".into(),
            password: Password::Hash { hash: "h".into(), algorithm: Some("bcrypt".into()) },
            tags: Default::default(),
            limits: None,
        };
        assert!(user_problem(&user).unwrap().contains("bcrypt"));
    }

    #[test]
    fn a_vhost_filter_keeps_the_users_with_permissions_there() {
        let mut t = Topology::default();
        for u in ["a", "b"] {
            t.set_user(&User { name: u.into(), password: Password::None, tags: Default::default(), limits: None });
        }
        let mut v = Vhost::new("x");
        v.set_permission(&Permission {
            user: "a".into(),
            configure: String::new(),
            write: String::new(),
            read: String::new(),
        });
        t.vhosts.insert("x".into(), v);
        t.vhosts.insert("y".into(), Vhost::new("y"));
        let s = select(&t, &BTreeSet::from(["x".to_string()]));
        assert_eq!(s.topology.user_names().collect::<Vec<_>>(), ["a"]);
        assert_eq!(s.topology.vhosts.keys().collect::<Vec<_>>(), ["x"]);
        let all = select(&t, &BTreeSet::new());
        assert_eq!(all.topology.user_names().count(), 2);
    }

    #[test]
    fn odd_limits_are_dropped() {
        let mut t = Topology::default();
        let mut v = Vhost::new("x");
        v.settings.limits = Some([("max-channels".to_string(), 5)].into_iter().collect());
        t.vhosts.insert("x".into(), v);
        let s = select(&t, &BTreeSet::new());
        assert_eq!(s.topology.vhosts["x"].settings.limits, None);
        assert_eq!(s.left_out[0].part.as_deref(), Some("limit `max-channels`"));
    }
}
