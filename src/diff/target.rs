//! `--target`: a plan limited to some objects and what they need, as
//! terraform's `-target` is. For the exceptional case (a fix that cannot
//! wait for the rest of a change); the plan says so.

use std::collections::{BTreeMap, BTreeSet};

use globset::{Glob, GlobMatcher};

use super::{Action, Declared, Diff, Problem};
use crate::model::{DestinationKind, ObjectKey, Value};

/// One `--target KIND:VHOST/NAME`: a kind, and globs on the vhost and the
/// name. `KIND:NAME` is any vhost's; an empty VHOST is the default vhost `/`.
#[derive(Debug, Clone)]
pub struct Target {
    /// As given, for the plan's warning.
    pub text: String,
    kind: String,
    vhost: Option<GlobMatcher>,
    name: GlobMatcher,
}

/// The kinds an address may name: as the plan names them, spaces as `_`.
fn kind_word(key: &ObjectKey) -> String {
    key.kind().replace(' ', "_")
}

impl Target {
    /// Reads `KIND:VHOST/NAME`; the error says what is expected.
    pub fn parse(text: &str) -> Result<Target, String> {
        let Some((kind, address)) = text.split_once(':') else {
            return Err(format!(
                "`{text}` is not KIND:VHOST/NAME (such as queue:orders/orders.work, queue:/orders.work for vhost \"/\", or user:alice)"
            ));
        };
        let broker_wide = matches!(kind, "vhost" | "user");
        let (vhost, name) = match address.split_once('/') {
            Some((v, n)) if !broker_wide => (Some(if v.is_empty() { "/" } else { v }), n),
            _ => (None, address),
        };
        let glob = |g: &str| Glob::new(g).map(|g| g.compile_matcher()).map_err(|e| format!("`{text}`: {e}"));
        if name.is_empty() {
            return Err(format!("`{text}` names no object: KIND:VHOST/NAME"));
        }
        Ok(Target {
            text: text.to_string(),
            kind: kind.to_string(),
            vhost: vhost.map(glob).transpose()?,
            name: glob(name)?,
        })
    }

    /// Whether `key` is an object this target names. A binding is named by
    /// either end: `binding:V/orders.work` is every binding to or from it.
    pub fn names(&self, key: &ObjectKey) -> bool {
        if kind_word(key) != self.kind {
            return false;
        }
        if let Some(v) = &self.vhost
            && !key.vhost().is_some_and(|k| v.is_match(k))
        {
            return false;
        }
        match key {
            ObjectKey::Binding { binding, .. } => {
                self.name.is_match(&binding.source) || self.name.is_match(&binding.destination)
            }
            _ => self.name.is_match(key.name()),
        }
    }
}

/// What `key`, which the files declare as `declared` when they do, cannot
/// be made without: its vhost, a binding's ends, a permission's user, a
/// queue's dead-letter exchange and an exchange's alternate exchange (in
/// its arguments; one a policy names is the policy's).
fn needs(key: &ObjectKey, declared: Option<&Declared>) -> Vec<ObjectKey> {
    let mut out: Vec<ObjectKey> = key.vhost().map(|v| ObjectKey::Vhost(v.to_string())).into_iter().collect();
    let named = |arguments: &crate::model::Table, argument: &str| match arguments.get(argument) {
        Some(Value::String(x)) if !x.is_empty() => {
            key.vhost().map(|v| ObjectKey::Exchange { vhost: v.to_string(), name: x.clone() })
        }
        _ => None,
    };
    match declared {
        Some(Declared::Queue(q)) => out.extend(named(&q.arguments, "x-dead-letter-exchange")),
        Some(Declared::Exchange(x)) => out.extend(named(&x.arguments, "alternate-exchange")),
        _ => {}
    }
    match key {
        ObjectKey::Binding { vhost, binding } => {
            out.push(ObjectKey::Exchange { vhost: vhost.clone(), name: binding.source.clone() });
            let name = binding.destination.clone();
            out.push(match binding.destination_kind {
                DestinationKind::Queue => ObjectKey::Queue { vhost: vhost.clone(), name },
                DestinationKind::Exchange => ObjectKey::Exchange { vhost: vhost.clone(), name },
            });
        }
        key if let Some((_, user)) = crate::model::kinds::permissions::name_of(key) => {
            out.push(crate::model::kinds::users::key(user))
        }
        ObjectKey::Vhost(_) => out.clear(),
        _ => {}
    }
    out
}

/// What a limited diff leaves out.
#[derive(Debug, Default)]
pub struct LeftOut {
    /// Every object whose change is left out: apply records nothing of them.
    pub keys: BTreeSet<ObjectKey>,
    /// How many of those changes would have acted on the broker.
    pub actions: usize,
}

/// `diff` limited to the changes the targets name and what those need.
/// Objects only shown (unmanaged, another project's) go with the rest.
pub fn limit(diff: Diff, targets: &[Target]) -> (Diff, LeftOut) {
    let mut kept: BTreeSet<ObjectKey> =
        diff.changes.iter().filter(|c| targets.iter().any(|t| t.names(&c.key))).map(|c| c.key.clone()).collect();
    let declared: BTreeMap<&ObjectKey, &Declared> =
        diff.changes.iter().filter_map(|c| c.declared.as_ref().map(|d| (&c.key, d))).collect();
    let mut todo: Vec<ObjectKey> = kept.iter().cloned().collect();
    while let Some(k) = todo.pop() {
        for n in needs(&k, declared.get(&k).copied()) {
            if kept.insert(n.clone()) {
                todo.push(n);
            }
        }
    }
    let Diff { changes, problems, in_flight, outside } = diff;
    let (changes, left): (Vec<_>, Vec<_>) = changes.into_iter().partition(|c| kept.contains(&c.key));
    let problems: Vec<Problem> = problems.into_iter().filter(|p| kept.contains(&p.key)).collect();
    let shown_only = |a: Action| matches!(a, Action::Unmanaged | Action::OtherProject);
    let actions = left.iter().filter(|c| !shown_only(c.action)).count();
    let keys = left.into_iter().map(|c| c.key).collect();
    (Diff { changes, problems, in_flight, outside }, LeftOut { keys, actions })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(v: &str, n: &str) -> ObjectKey {
        ObjectKey::Queue { vhost: v.into(), name: n.into() }
    }

    #[test]
    fn addresses_name_kinds_vhosts_and_names_with_globs() {
        let t = Target::parse("queue:shop/orders.*").unwrap();
        assert!(t.names(&queue("shop", "orders.work")));
        assert!(!t.names(&queue("other", "orders.work")));
        assert!(!t.names(&ObjectKey::Exchange { vhost: "shop".into(), name: "orders.work".into() }));
        // An empty vhost is "/"; none is any.
        assert!(Target::parse("queue:/orders.work").unwrap().names(&queue("/", "orders.work")));
        assert!(Target::parse("queue:orders.work").unwrap().names(&queue("x", "orders.work")));
        assert!(Target::parse("user:alice").unwrap().names(&crate::model::kinds::users::key("alice")));
        let kind = &crate::model::kinds::operator_policies::KIND;
        let name = crate::model::kinds::Name { kind, id: vec!["cap".into()] };
        let cap = ObjectKey::Object { vhost: Some("/".into()), name };
        assert!(Target::parse("operator_policy:/cap").unwrap().names(&cap));
        for bad in ["queue", "queue:shop/", "queue:shop/[", "user:"] {
            assert!(Target::parse(bad).is_err(), "{bad}");
        }
    }

    /// A queue's dead-letter exchange and an exchange's alternate exchange
    /// come along: without them, what the queue dead-letters and what the
    /// exchange cannot route would be dropped.
    #[test]
    fn a_queue_brings_its_dead_letter_exchange_and_an_exchange_its_alternate() {
        use crate::model::{Exchange, QueueType};
        use crate::testing::objects::{self, table, text};
        let exchange = |name: &str, ae: Option<&str>| Exchange {
            arguments: ae.map(|ae| table(&[("alternate-exchange", text(ae))])).unwrap_or_default(),
            ..objects::exchange(name, "direct")
        };
        let q = objects::queue("w", QueueType::Classic, table(&[("x-dead-letter-exchange", text("dlx"))]));
        let create = |key: ObjectKey, declared: Declared| {
            let mut c = super::super::Change::new(key, Action::Create, "");
            c.declared = Some(declared);
            c
        };
        let x = |name: &str| ObjectKey::Exchange { vhost: "/".into(), name: name.into() };
        let changes = vec![
            create(queue("/", "w"), Declared::Queue(q)),
            create(x("dlx"), Declared::Exchange(exchange("dlx", Some("ae")))),
            create(x("ae"), Declared::Exchange(exchange("ae", None))),
            create(x("other"), Declared::Exchange(exchange("other", None))),
        ];
        let diff = Diff { changes, problems: Vec::new(), in_flight: Vec::new(), outside: Vec::new() };
        let (kept, left) = limit(diff, &[Target::parse("queue:/w").unwrap()]);
        let kept: Vec<String> = kept.changes.iter().map(|c| c.key.to_string()).collect();
        assert_eq!(
            kept,
            ["queue \"w\" in vhost \"/\"", "exchange \"dlx\" in vhost \"/\"", "exchange \"ae\" in vhost \"/\""]
        );
        assert_eq!(left.actions, 1, "only the exchange nothing needs is left out");
    }
}
