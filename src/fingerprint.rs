//! Short, stable digests that say "the same" across runs: of the live state
//! a plan was made from (a saved plan is refused when it changed) and of a
//! plan (the journal records which plan an apply carries out).
//!
//! They digest warren's own normalised form, so they are comparable only
//! between runs of the same warren version; the journal and saved plans
//! record the version beside them.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use crate::diff::Action;
use crate::model::kinds::{operator_policies, policies};
use crate::model::{Inventory, Matcher, ObjectKey, Ownership, Topology, Vhost, scaffold};
use crate::render::PlanDocument;

/// What an object the plan depends on reads as when it is not live.
pub const ABSENT: &str = "absent";

/// What a plan depends on in the live state, object by object: for each,
/// a digest of the live object and of which other projects hold it (or
/// [`ABSENT`]), keyed by how a plan names it (`queue "q" in vhost "v"`).
///
/// The objects are those the files declare (with the queues they replace
/// and the objects they name as external), those `project` owns, the
/// scaffolding of migrations in the declared vhosts, the live bindings
/// that touch any of these exchanges and queues, and the live policies and
/// operator policies that match them; and `project`'s own records. Any
/// other object, an application's own queue for one, is no part of it.
/// Queue counts are left out: they move all the time and no plan depends
/// on them alone.
pub fn depends_on(
    desired: &Topology,
    live: &Topology,
    ownership: &Ownership,
    project: &str,
) -> BTreeMap<String, String> {
    let owned = ownership.of(project);
    let mut keys: BTreeSet<ObjectKey> = Inventory::of(desired).objects.into_iter().collect();
    keys.extend(owned.objects.iter().cloned());
    for (v, want) in &desired.vhosts {
        let key = |name: &String, queue: bool| match queue {
            true => ObjectKey::Queue { vhost: v.clone(), name: name.clone() },
            false => ObjectKey::Exchange { vhost: v.clone(), name: name.clone() },
        };
        keys.extend(want.queues.values().filter_map(|q| q.replaces.as_ref()).map(|old| key(old, true)));
        keys.extend(want.external.queues.iter().map(|q| key(q, true)));
        keys.extend(want.external.exchanges.iter().map(|x| key(x, false)));
        if let Some(have) = live.vhosts.get(v) {
            keys.extend(have.exchanges.keys().filter(|n| scaffold::is_scaffolding(n)).map(|n| key(n, false)));
        }
    }
    let vhosts: BTreeSet<&str> = keys.iter().filter_map(|k| k.vhost()).collect();
    let mut around = Vec::new();
    for v in vhosts {
        let Some(have) = live.vhosts.get(v) else { continue };
        around.extend(touching(v, have, desired.vhosts.get(v), &keys));
    }
    keys.extend(around);
    let mut out: BTreeMap<String, String> = keys
        .iter()
        .map(|k| {
            let holders: Vec<&String> =
                ownership.projects.iter().filter(|(p, inv)| *p != project && inv.contains(k)).map(|(p, _)| p).collect();
            let value = match state_of(live, k) {
                None if holders.is_empty() => ABSENT.to_string(),
                state => digest(format!("{state:?}\n{holders:?}").as_bytes()),
            };
            (k.to_string(), value)
        })
        .collect();
    out.insert(format!("warren's records of project \"{project}\""), digest(owned.to_json().to_string().as_bytes()));
    out
}

/// The live bindings of vhost `v` that touch an exchange or a queue of
/// `keys`, and its live policies and operator policies that match one.
fn touching(v: &str, have: &Vhost, want: Option<&Vhost>, keys: &BTreeSet<ObjectKey>) -> Vec<ObjectKey> {
    let (mut exchanges, mut queues) = (BTreeSet::new(), Vec::new());
    for k in keys {
        match k {
            ObjectKey::Exchange { vhost, name } if vhost == v => {
                exchanges.insert(name.as_str());
            }
            ObjectKey::Queue { vhost, name } if vhost == v => {
                // Policies match a queue by its type too: as declared and as live.
                queues.extend(want.and_then(|w| w.queues.get(name)));
                queues.extend(have.queues.get(name));
            }
            _ => {}
        }
    }
    let queue_names: BTreeSet<&str> = queues.iter().map(|q| q.name.as_str()).collect();
    let mut out: Vec<ObjectKey> = have
        .bindings
        .iter()
        .filter(|b| {
            exchanges.contains(b.source.as_str())
                || match b.destination_kind {
                    crate::model::DestinationKind::Exchange => exchanges.contains(b.destination.as_str()),
                    crate::model::DestinationKind::Queue => queue_names.contains(b.destination.as_str()),
                }
        })
        .map(|b| ObjectKey::Binding { vhost: v.to_string(), binding: b.clone() })
        .collect();
    let matches =
        |m: &Matcher| queues.iter().any(|q| m.matches_queue(q)) || exchanges.iter().any(|x| m.matches_exchange(x));
    for (of_kind, key) in [
        (have.policies(), policies::key as fn(&str, &str) -> ObjectKey),
        (have.operator_policies(), operator_policies::key),
    ] {
        out.extend(of_kind.into_iter().filter(|p| matches(&Matcher::new(p))).map(|p| key(v, &p.name)));
    }
    out
}

/// The live object `key` names, as text; `None` when it is not live.
fn state_of(t: &Topology, key: &ObjectKey) -> Option<String> {
    if let Some(u) = crate::model::kinds::users::name_of(key) {
        // The typed user's text, as before users were objects.
        return t.user(u).map(|u| format!("{u:?}"));
    }
    if let Some((v, user)) = crate::model::kinds::permissions::name_of(key) {
        // The typed permission's text, as before permissions were objects.
        return t.vhosts.get(v)?.permission(user).map(|p| format!("{p:?}"));
    }
    if let ObjectKey::Object { vhost: None, name } = key {
        return t.objects.get(name).map(|o| format!("{o:?}"));
    }
    let v = t.vhosts.get(key.vhost()?)?;
    match key {
        ObjectKey::Vhost(_) => Some(format!("{:?}", v.settings)),
        ObjectKey::Exchange { name, .. } => v.exchanges.get(name).map(|x| format!("{x:?}")),
        ObjectKey::Queue { name, .. } => v.queues.get(name).map(|q| format!("{q:?}")),
        ObjectKey::Binding { binding, .. } => v.bindings.contains(binding).then(|| "bound".to_string()),
        ObjectKey::Object { name, .. } => v.objects.get(name).map(|o| object_state(name, o)),
    }
}

/// A vhost's object of a kind, as text: a policy or an operator policy as
/// its typed view, as warren digested it before it was a kind's object, so
/// that a plan saved then still applies.
fn object_state(name: &crate::model::kinds::Name, body: &crate::model::Table) -> String {
    let typed = [&policies::KIND, &operator_policies::KIND].contains(&name.kind);
    match policies::policy(&name.id[0], body).filter(|_| typed) {
        Some(p) => format!("{p:?}"),
        None => format!("{body:?}"),
    }
}

/// The objects whose entries differ between two [`depends_on`] maps, each
/// with how: `changed`, `created` or `deleted`.
pub fn changed(saved: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Vec<(String, &'static str)> {
    let names: BTreeSet<&String> = saved.keys().chain(now.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| {
            let (before, after) = (saved.get(name).map(String::as_str), now.get(name).map(String::as_str));
            let how = match (before.unwrap_or(ABSENT), after.unwrap_or(ABSENT)) {
                (a, b) if a == b => return None,
                (ABSENT, _) => "created",
                (_, ABSENT) => "deleted",
                // Out of the plan's reach now, or newly in it (a policy
                // that now matches, or no longer does): changed either way.
                _ => "changed",
            };
            Some((name.clone(), how))
        })
        .collect()
}

/// What a plan does, by its machine-readable document, whatever it was
/// compared with: the live origin is left out, so that a plan made from an
/// export (or through another address of the same broker) that matches the
/// live state counts as the same plan. So are the live objects it shows
/// but leaves alone (unmanaged, another project's): they change nothing it
/// does.
pub fn plan(document: &PlanDocument) -> String {
    let mut d = document.clone();
    d.live = String::new();
    d.changes.retain(|c| !matches!(c.action, Action::Unmanaged | Action::OtherProject));
    d.summary.unmanaged = 0;
    d.summary.other_project = 0;
    digest(&serde_json::to_vec(&d).expect("a plan document always serialises"))
}

fn digest(bytes: &[u8]) -> String {
    let sum = Sha256::digest(bytes);
    sum.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ApplyTo, QueueType, Value, Vhost};
    use crate::testing::objects::{exchange, policy, queue, table, to_queue};

    const V: &str = "v";

    /// The files: exchange "orders" bound to queue "orders.work".
    fn desired() -> Topology {
        let mut v = Vhost::new(V);
        v.exchanges.insert("orders".into(), exchange("orders", "topic"));
        v.queues.insert("orders.work".into(), queue("orders.work", QueueType::Classic, Default::default()));
        v.bindings.insert(to_queue("orders", "orders.work", "#"));
        Topology { vhosts: [(V.to_string(), v)].into(), ..Topology::default() }
    }

    fn vhost(t: &mut Topology) -> &mut Vhost {
        t.vhosts.get_mut(V).unwrap()
    }

    /// What changed between the live states `before` and `after`, for the
    /// files of [`desired`] in project "p".
    fn changes(
        before: &Topology,
        after: &Topology,
        ownership: (&Ownership, &Ownership),
    ) -> Vec<(String, &'static str)> {
        let d = desired();
        changed(&depends_on(&d, before, ownership.0, "p"), &depends_on(&d, after, ownership.1, "p"))
    }

    #[test]
    fn objects_the_plan_neither_declares_nor_owns_do_not_count() {
        let live = desired();
        let records = Ownership::single("p", Inventory::of(&desired()));
        let mut after = live.clone();
        vhost(&mut after).queues.insert("app.own".into(), queue("app.own", QueueType::Classic, Default::default()));
        vhost(&mut after).exchanges.insert("app.x".into(), exchange("app.x", "direct"));
        vhost(&mut after).bindings.insert(to_queue("app.x", "app.own", "k"));
        let elsewhere = policy("app", "^app\\.", ApplyTo::Queues, 0, table(&[("max-length", Value::Int(5))]));
        vhost(&mut after).set_policy(&elsewhere);
        after.set_user(&crate::model::User {
            name: "app-user".into(),
            password: crate::model::Password::None,
            tags: Default::default(),
            limits: None,
        });
        let mut theirs = records.clone();
        let app = Topology { vhosts: after.vhosts.clone(), ..Topology::default() };
        let mut app_inventory = Inventory::of(&app);
        app_inventory.objects.retain(|k| k.name().starts_with("app"));
        theirs.projects.insert("app".into(), app_inventory.into());
        assert_eq!(changes(&live, &after, (&records, &theirs)), vec![]);
    }

    #[test]
    fn a_declared_object_changed_or_gone_is_named() {
        let live = desired();
        let records = Ownership::default();
        let mut after = live.clone();
        vhost(&mut after).queues.get_mut("orders.work").unwrap().durable = false;
        vhost(&mut after).exchanges.remove("orders");
        assert_eq!(
            changes(&live, &after, (&records, &records)),
            vec![
                ("exchange \"orders\" in vhost \"v\"".to_string(), "deleted"),
                ("queue \"orders.work\" in vhost \"v\"".to_string(), "changed"),
            ]
        );
        // Not live when planned, live now: created.
        let empty = Topology { vhosts: [(V.to_string(), Vhost::new(V))].into(), ..Topology::default() };
        let named = changes(&empty, &live, (&records, &records));
        assert!(named.contains(&("queue \"orders.work\" in vhost \"v\"".to_string(), "created")), "{named:?}");
    }

    #[test]
    fn an_owned_object_and_the_projects_records_count() {
        let mut live = desired();
        let old = queue("orders.old", QueueType::Classic, Default::default());
        vhost(&mut live).queues.insert("orders.old".into(), old);
        let mut inventory = Inventory::of(&live);
        let records = Ownership::single("p", inventory.clone());
        let mut after = live.clone();
        vhost(&mut after).queues.get_mut("orders.old").unwrap().auto_delete = true;
        let named = changes(&live, &after, (&records, &records));
        assert_eq!(named, vec![("queue \"orders.old\" in vhost \"v\"".to_string(), "changed")]);
        inventory.digests.insert(ObjectKey::Vhost(V.into()), "0".into());
        let named = changes(&live, &live, (&records, &Ownership::single("p", inventory)));
        assert_eq!(named, vec![("warren's records of project \"p\"".to_string(), "changed")]);
    }

    #[test]
    fn another_project_taking_a_declared_object_is_named() {
        let live = desired();
        let records = Ownership::default();
        let mut taken = Inventory::default();
        taken.objects.insert(ObjectKey::Queue { vhost: V.into(), name: "orders.work".into() });
        let theirs = Ownership::single("other", taken);
        let named = changes(&live, &live, (&records, &theirs));
        assert_eq!(named, vec![("queue \"orders.work\" in vhost \"v\"".to_string(), "changed")]);
    }

    #[test]
    fn a_policy_or_binding_that_reaches_a_declared_object_is_named() {
        let live = desired();
        let records = Ownership::default();
        let mut after = live.clone();
        let limit = policy("limit", "^orders\\.", ApplyTo::Queues, 1, table(&[("max-length", Value::Int(5))]));
        vhost(&mut after).objects.extend(operator_policies::objects([&limit]));
        vhost(&mut after).set_policy(&limit);
        let to_exchanges = policy(
            "ae",
            "^orders$",
            ApplyTo::Exchanges,
            0,
            table(&[("alternate-exchange", Value::String("x".into()))]),
        );
        vhost(&mut after).set_policy(&to_exchanges);
        // Matches the name, but not a classic queue: not in force on it.
        let quorum_only = policy("qq", "^orders", ApplyTo::Queues, 0, table(&[("delivery-limit", Value::Int(5))]));
        vhost(&mut after).set_policy(&quorum_only);
        vhost(&mut after).bindings.insert(to_queue("amq.topic", "orders.work", "extra"));
        let named: Vec<String> = changes(&live, &after, (&records, &records)).into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            named,
            [
                "binding amq.topic -> queue orders.work key \"extra\" in vhost \"v\"",
                "operator policy \"limit\" in vhost \"v\"",
                "policy \"ae\" in vhost \"v\"",
                "policy \"limit\" in vhost \"v\"",
            ]
        );
    }

    #[test]
    fn an_operator_policy_is_digested_as_its_typed_view() {
        let limit = policy("limit", "^orders\\.", ApplyTo::Queues, 1, table(&[("max-length", Value::Int(5))]));
        let mut t = desired();
        vhost(&mut t).objects.extend(operator_policies::objects([&limit]));
        let key = operator_policies::key(V, "limit");
        assert_eq!(state_of(&t, &key), Some(format!("{limit:?}")));
    }

    #[test]
    fn the_same_state_depends_on_the_same_digests() {
        let live = desired();
        let records = Ownership::default();
        let a = depends_on(&desired(), &live, &records, "p");
        assert_eq!(a, depends_on(&desired(), &live.clone(), &records, "p"), "deterministic");
        assert!(a.values().all(|d| d.len() == 16 || d == ABSENT), "{a:?}");
    }
}
