//! What changed on the broker outside warren since its last apply.
//!
//! warren records in its inventory a digest of each exchange, queue,
//! policy, permission and object of a kind as it applied it. When a plan
//! finds such an object different from the files, the live object's
//! digest tells who moved: the same as recorded, the files changed; not,
//! someone changed the broker since (terraform's "changed outside of
//! Terraform"). Bindings have no digest (a binding is all identity). A
//! user's digest covers its tags and, when the files set them, its limits
//! (a password is never digested); a vhost's, the settings the files set:
//! the live side is digested as the files manage it, so that a setting the
//! files leave alone never reads as moved.

use std::collections::{BTreeMap, BTreeSet};

use super::attributes::{self, Attributes};
use super::change::Action;
use super::differ::Differ;
use crate::journal::LastApply;
use crate::model::kinds::{permissions, users};
use crate::model::{ObjectKey, Topology};

/// An object changed outside warren since its last apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outside {
    pub key: ObjectKey,
    /// Deleted, rather than changed.
    pub deleted: bool,
    /// The last apply to its vhost, when the journal knows it.
    pub since: Option<LastApply>,
}

/// A short digest of an object's attributes: 64 bits of SHA-256 over
/// their JSON, whose maps are sorted.
pub fn digest(a: &Attributes) -> String {
    let text = serde_json::to_vec(a).expect("attributes always serialise");
    attributes::hex_digest(&text)
}

/// The attributes of the object `key` names in `t`, for the kinds that
/// have digests; `None` when it is absent or has none. A user's or a
/// vhost's are those of the settings `files` manage (`files` may be `t`).
pub fn attributes_of(t: &Topology, key: &ObjectKey, files: &Topology) -> Option<Attributes> {
    if let Some(name) = users::name_of(key) {
        let (have, want) = (t.user(name)?, files.user(name)?);
        let limits = super::users::managed_limits(&have, &want);
        return Some(attributes::digested_user(&crate::model::User { limits, ..have }));
    }
    match key {
        ObjectKey::Object { vhost: None, name } => {
            return t.objects.get(name).map(|body| attributes::object(name.kind, body));
        }
        ObjectKey::Vhost(name) => {
            let (have, want) = (&t.vhosts.get(name)?.settings, &files.vhosts.get(name)?.settings);
            return Some(attributes::vhost(&super::vhosts::managed(have, want)));
        }
        _ => {}
    }
    let v = t.vhosts.get(key.vhost()?)?;
    match key {
        ObjectKey::Exchange { name, .. } => v.exchanges.get(name).map(attributes::exchange),
        ObjectKey::Queue { name, .. } => v.queues.get(name).map(attributes::queue),
        // A user's permissions digested typed, as before they were objects.
        key if let Some((_, user)) = permissions::name_of(key) => {
            v.permission(user).as_ref().map(attributes::permission)
        }
        ObjectKey::Object { name, .. } => v.objects.get(name).map(|body| attributes::object(name.kind, body)),
        ObjectKey::Binding { .. } | ObjectKey::Vhost(_) => None,
    }
}

/// The digests to record once an apply has run, for `keys` (the
/// inventory's objects): each object the files declare, as they declare
/// it, except those in `unsettled` (changes not carried out), which keep
/// their earlier digest if they had one.
pub fn recorded(
    earlier: &BTreeMap<ObjectKey, String>,
    desired: &Topology,
    keys: &crate::model::KeySet,
    unsettled: &BTreeSet<ObjectKey>,
) -> BTreeMap<ObjectKey, String> {
    let digest_of = |key: &ObjectKey| match unsettled.contains(key) {
        true => earlier.get(key).cloned(),
        false => attributes_of(desired, key, desired).map(|a| digest(&a)),
    };
    keys.iter().filter_map(|key| Some((key.clone(), digest_of(key)?))).collect()
}

/// Of `keys` (the objects a plan finds different from the files), those
/// whose live state is not what warren recorded applying.
pub fn find<'k>(
    keys: impl Iterator<Item = &'k ObjectKey>,
    recorded: &BTreeMap<ObjectKey, String>,
    live: &Topology,
    files: &Topology,
    last_applies: &BTreeMap<String, LastApply>,
) -> Vec<Outside> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for key in keys {
        let Some(applied) = recorded.get(key) else { continue };
        if !seen.insert(key) {
            continue;
        }
        // A user or vhost the files no longer declare has no managed
        // settings to compare.
        if (matches!(key, ObjectKey::Vhost(_)) || users::name_of(key).is_some()) && !files.has(key) {
            continue;
        }
        let deleted = match attributes_of(live, key, files) {
            None => true,
            Some(a) if digest(&a) != *applied => false,
            Some(_) => continue,
        };
        let since = key.vhost().and_then(|v| last_applies.get(v)).cloned();
        out.push(Outside { key: key.clone(), deleted, since });
    }
    out
}

impl Differ<'_> {
    /// Tells which of the objects that differ were changed outside warren
    /// since its last apply, and says so in their changes' reasons.
    pub(super) fn changed_outside(&mut self, live: &Topology, files: &Topology) {
        let acting = self
            .out
            .changes
            .iter()
            .filter(|c| matches!(c.action, Action::Create | Action::Update | Action::Replace | Action::Destroy));
        let keys = acting.map(|c| &c.key).chain(self.out.problems.iter().map(|p| &p.key));
        let found = find(keys, &self.inventory.digests, live, files, &self.facts.last_applies);
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Queue, Vhost};
    use serde_json::{Value as Json, json};

    fn attrs(pairs: &[(&str, Json)]) -> Attributes {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    fn topology(max_length: i64) -> Topology {
        let mut t = Topology::default();
        let mut v = Vhost::new("shop");
        let mut arguments = crate::model::Table::new();
        arguments.insert("x-max-length".into(), crate::model::Value::Int(max_length));
        let q = Queue {
            name: "orders".into(),
            kind: crate::model::QueueType::Classic,
            durable: true,
            auto_delete: false,
            arguments,
            replaces: None,
        };
        v.queues.insert("orders".into(), q);
        t.vhosts.insert("shop".into(), v);
        t
    }

    /// Every object of [`topology`], as the inventory holds them.
    fn all(max_length: i64) -> crate::model::KeySet {
        crate::model::Inventory::of(&topology(max_length)).objects
    }

    fn key() -> ObjectKey {
        ObjectKey::Queue { vhost: "shop".into(), name: "orders".into() }
    }

    #[test]
    fn a_digest_is_stable_and_tells_attributes_apart() {
        let a = attrs(&[("durable", json!(true)), ("arguments", json!({"x-max-length": 10}))]);
        let b = attrs(&[("arguments", json!({"x-max-length": 10})), ("durable", json!(true))]);
        assert_eq!(digest(&a), digest(&b), "the order of insertion does not matter");
        assert_eq!(digest(&a).len(), 16);
        assert_ne!(digest(&a), digest(&attrs(&[("durable", json!(true)), ("arguments", json!({"x-max-length": 11}))])));
    }

    #[test]
    fn the_live_object_tells_a_change_in_the_files_from_one_outside_warren() {
        let applied = recorded(&BTreeMap::new(), &topology(10), &all(10), &BTreeSet::new());
        assert_eq!(applied.len(), 2, "the queue and its vhost's settings");
        let last = BTreeMap::from([("shop".to_string(), LastApply { by: "ann@ci".into(), at: "t".into() })]);
        // The files now say 20; the broker still has the 10 warren applied.
        assert_eq!(find([key()].iter(), &applied, &topology(10), &topology(20), &last), vec![]);
        // Someone made it 30 on the broker.
        let found = find([key()].iter(), &applied, &topology(30), &topology(20), &last);
        assert_eq!(found, vec![Outside { key: key(), deleted: false, since: Some(last["shop"].clone()) }]);
        // Someone deleted it.
        let found = find([key(), key()].iter(), &applied, &Topology::default(), &topology(20), &BTreeMap::new());
        assert_eq!(found, vec![Outside { key: key(), deleted: true, since: None }]);
        // Never applied: nothing to tell.
        assert_eq!(find([key()].iter(), &BTreeMap::new(), &topology(30), &topology(20), &last), vec![]);
    }

    #[test]
    fn a_change_not_carried_out_keeps_its_earlier_digest() {
        let earlier = recorded(&BTreeMap::new(), &topology(10), &all(10), &BTreeSet::new());
        let unsettled = BTreeSet::from([key()]);
        assert_eq!(recorded(&earlier, &topology(20), &all(20), &unsettled), earlier);
        assert_eq!(recorded(&BTreeMap::new(), &topology(20), &all(20), &unsettled).get(&key()), None);
        assert_ne!(recorded(&earlier, &topology(20), &all(20), &BTreeSet::new()), earlier);
    }

    /// `topology(10)` with user "app" of these limits (`None`: not set).
    fn with_user(limits: Option<&[(&str, i64)]>) -> Topology {
        let mut t = topology(10);
        let limits = limits.map(|l| l.iter().map(|(k, v)| (k.to_string(), *v)).collect());
        let user = crate::model::User {
            name: "app".into(),
            password: crate::model::Password::Env("APP_PASSWORD".into()),
            tags: Default::default(),
            limits,
        };
        t.set_user(&user);
        t
    }

    #[test]
    fn a_user_limit_changed_on_the_broker_is_told_and_an_unmanaged_one_is_not() {
        let user = users::key("app");
        let files = with_user(Some(&[("max-connections", 10)]));
        let applied = recorded(&BTreeMap::new(), &files, &crate::model::KeySet::from([user.clone()]), &BTreeSet::new());
        let found =
            |live: &Topology, files: &Topology| find([user.clone()].iter(), &applied, live, files, &BTreeMap::new());
        assert_eq!(found(&files, &files), vec![]);
        let moved = with_user(Some(&[("max-connections", 10), ("max-channels", 5)]));
        assert_eq!(found(&moved, &files), vec![Outside { key: user.clone(), deleted: false, since: None }]);
        // Files that set no limits digest none: the live ones are not theirs.
        let unmanaged = with_user(None);
        let applied =
            recorded(&BTreeMap::new(), &unmanaged, &crate::model::KeySet::from([user.clone()]), &BTreeSet::new());
        assert_eq!(find([user.clone()].iter(), &applied, &moved, &unmanaged, &BTreeMap::new()), vec![]);
        // The password is never part of it.
        let mut other_password = files.clone();
        let app = crate::model::User { password: crate::model::Password::None, ..other_password.user("app").unwrap() };
        other_password.set_user(&app);
        assert_eq!(found(&other_password, &files), vec![]);
    }
}
