//! Objects of the kinds of `model::kinds`, compared the same way for every
//! kind: by identity, then attribute by attribute, an immutable attribute's
//! change making the object deleted and made again.

use super::attributes;
use super::change::{Action, Change, Declared};
use super::differ::Differ;
use crate::model::ObjectKey;
use crate::model::kinds::{Kind, Name, Object, Objects};

impl Differ<'_> {
    /// The objects of one scope (a vhost's, or with `vhost` `None` the
    /// broker's) of the kinds `of` takes.
    pub(super) fn objects(&mut self, vhost: Option<&str>, want: &Objects, have: &Objects, of: fn(&Kind) -> bool) {
        let key = |name: &Name| ObjectKey::Object { vhost: vhost.map(str::to_string), name: name.clone() };
        for (name, w) in want.iter().filter(|(n, _)| of(n.kind)) {
            let after = attributes::object(name.kind, w);
            let declared = || Some(Declared::Object(Object { id: name.id.clone(), body: w.clone() }));
            let Some(h) = have.get(name) else {
                self.created(key(name), after, "declared in the files", declared());
                continue;
            };
            if h == w {
                continue;
            }
            let before = attributes::object(name.kind, h);
            let fixed: Vec<&str> = (name.kind.attributes.iter())
                .filter(|a| a.immutable && h.get(a.name) != w.get(a.name))
                .map(|a| a.name)
                .collect();
            if fixed.is_empty() {
                self.updated(key(name), before, after, declared().expect("made above"));
                continue;
            }
            let reason = format!("{} cannot change in place: it is deleted and made again", fixed.join(", "));
            let mut c = Change::new(key(name), Action::Replace, reason);
            c.requires_allow_destroy = name.kind.destroy_loses.is_some();
            (c.before, c.after, c.declared) = (Some(before), Some(after), declared());
            self.push(c);
        }
        for (name, h) in have.iter().filter(|(n, _)| of(n.kind) && !want.contains_key(*n)) {
            // A broker-wide object no project holds is the broker's or its
            // operators': shown in no plan, as undeclared vhosts are not.
            if vhost.is_none() && !self.ownership.projects.values().any(|i| i.contains(&key(name))) {
                continue;
            }
            self.absent(key(name), attributes::object(name.kind, h), name.kind.destroy_loses.is_some());
            if let Some(loses) = name.kind.destroy_loses {
                self.explain_last(&format!("{}; {loses}", self.gone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{BrokerFacts, Options, diff};
    use super::*;
    use crate::model::kinds::by_table;
    use crate::model::{Inventory, Ownership, Table, Topology, Value, Vhost};

    fn topic(user: &str, write: &str) -> (Name, Table) {
        let kind = by_table("topic_permissions").unwrap();
        let body = [("read", ".*"), ("write", write)].map(|(k, v)| (k.to_string(), Value::String(v.into())));
        (Name { kind, id: vec![user.into(), "amq.topic".into()] }, body.into_iter().collect())
    }

    fn with(objects: &[(Name, Table)]) -> Topology {
        let mut v = Vhost::new("v");
        v.objects = objects.iter().cloned().collect();
        Topology { vhosts: [("v".to_string(), v)].into(), ..Topology::default() }
    }

    fn actions(desired: &Topology, live: &Topology, held: &Topology) -> Vec<(String, Action)> {
        let ownership = Ownership::single("p", Inventory::of(held));
        let d = diff(desired, live, &ownership, "p", &Options::default(), &BrokerFacts::default());
        d.changes.iter().map(|c| (c.key.to_string(), c.action)).collect()
    }

    #[test]
    fn objects_of_a_kind_are_created_updated_and_destroyed_only_when_held() {
        let named = |u: &str| format!("topic permission (user \"{u}\", exchange \"amq.topic\") in vhost \"v\"");
        let none = with(&[]);
        assert_eq!(actions(&with(&[topic("a", "^x")]), &none, &none), [(named("a"), Action::Create)]);
        assert_eq!(
            actions(&with(&[topic("a", "^y")]), &with(&[topic("a", "^x")]), &none),
            [(named("a"), Action::Update)]
        );
        let live = with(&[topic("a", "^x")]);
        assert_eq!(actions(&none, &live, &live), [(named("a"), Action::Destroy)], "held: destroyed");
        assert_eq!(actions(&none, &live, &none), [(named("a"), Action::Unmanaged)], "not held: never touched");
        assert!(actions(&live, &live, &live).is_empty());
    }

    #[test]
    fn an_update_carries_the_declared_object_and_shows_its_attributes() {
        let ownership = Ownership::default();
        let (desired, live) = (with(&[topic("a", "^(?:x|y)")]), with(&[topic("a", "^x")]));
        let d = diff(&desired, &live, &ownership, "p", &Options::default(), &BrokerFacts::default());
        let c = &d.changes[0];
        assert_eq!(c.before.as_ref().unwrap()["write"], "^x");
        assert_eq!(c.after.as_ref().unwrap()["write"], "^(?:x|y)");
        assert!(matches!(&c.declared, Some(Declared::Object(o)) if o.text("write") == Some("^(?:x|y)")));
        assert!(!c.requires_allow_destroy, "a topic permission that grants more loses nothing");
    }

    /// A kind with an immutable and a secret attribute, as shovels have.
    static LINK: crate::model::kinds::Kind = crate::model::kinds::Kind {
        name: "link",
        table: "links",
        scope: crate::model::kinds::Scope::Vhost,
        identity: &[],
        attributes: &[attribute("queue", true, false), attribute("uri", false, true)],
        about: "",
        since: (3, 10),
        plugin: None,
        definitions: "parameters",
        listing: None,
        portable: true,
        destroy_loses: Some("its messages in flight are lost"),
        read: |_| None,
        write: |_, _| serde_json::Value::Null,
        put: |_, _| unreachable!(),
        delete: |_, _| unreachable!(),
        check: None,
        phase: crate::model::kinds::Phase::PutObject,
    };

    const fn attribute(name: &'static str, immutable: bool, secret: bool) -> crate::model::kinds::Attribute {
        use crate::model::kinds::{Attribute, Presence, Type};
        Attribute { name, ty: Type::String, presence: Presence::Required, immutable, secret, about: "" }
    }

    fn link(queue: &str, uri: &str) -> (Name, Table) {
        let body = [("queue", queue), ("uri", uri)].map(|(k, v)| (k.to_string(), Value::String(v.into())));
        (Name { kind: &LINK, id: vec!["l".into()] }, body.into_iter().collect())
    }

    #[test]
    fn an_immutable_change_replaces_and_a_secret_shows_only_as_a_digest() {
        let (desired, live) = (with(&[link("q2", "amqp://u:new@h")]), with(&[link("q1", "amqp://u:old@h")]));
        let d = diff(&desired, &live, &Ownership::default(), "p", &Options::default(), &BrokerFacts::default());
        let c = &d.changes[0];
        assert_eq!(
            (c.action, c.reason.as_str()),
            (Action::Replace, "queue cannot change in place: it is deleted and made again")
        );
        assert!(c.requires_allow_destroy, "a link loses its messages in flight");
        let shown = format!("{:?} {:?}", c.before, c.after);
        assert!(!shown.contains("old") && !shown.contains("new"), "{shown}");
        assert_ne!(
            c.before.as_ref().unwrap()["uri"],
            c.after.as_ref().unwrap()["uri"],
            "a changed secret shows as changed"
        );
    }

    #[test]
    fn a_kind_the_broker_version_lacks_is_one_problem_before_any_write() {
        let mut second = link("q", "amqp://h");
        second.0.id = vec!["m".into()];
        let desired = with(&[link("q", "amqp://h"), second]);
        let facts = BrokerFacts { broker_version: Some((3, 9)), ..BrokerFacts::default() };
        let d = diff(&desired, &with(&[]), &Ownership::default(), "p", &Options::default(), &facts);
        let said: Vec<&str> = d.problems.iter().map(|p| p.diagnostic.message.as_str()).collect();
        assert_eq!(
            said,
            ["link \"l\" in vhost \"v\" (and 1 more): RabbitMQ 3.9 has no links; they came in RabbitMQ 3.10"]
        );
        let on_310 = BrokerFacts { broker_version: Some((3, 10)), ..BrokerFacts::default() };
        assert!(
            diff(&desired, &with(&[]), &Ownership::default(), "p", &Options::default(), &on_310).problems.is_empty()
        );
    }
}
