//! Changes the live broker's version would ignore or refuse: each is a
//! problem before any write, rather than an apply that reports success and
//! never converges, or one that fails halfway through.

use super::{BROKER_VERSION, PLUGIN_MISSING};
use crate::diagnostic::Diagnostic;
use crate::diff::Problem;
use crate::diff::differ::Differ;
use crate::diff::sides::Sides;
use crate::model::{
    DEFAULT_LEADER_LOCATOR, ObjectKey, SUPER_STREAMS_SINCE, Topology, Value, Vhost, VhostSettings,
    is_super_stream_exchange, partitions_of, policy_key,
};

impl Differ<'_> {
    /// RabbitMQ before 3.13 accepts a new default queue type for an
    /// existing vhost and ignores it (`rabbit_vhost:update/5` exists from
    /// 3.13): apply would report success and never converge. Whether
    /// vhost `name`'s is refused.
    pub(in crate::diff) fn default_queue_type_refused(
        &mut self,
        name: &str,
        want: &VhostSettings,
        have: &VhostSettings,
    ) -> bool {
        let (Some(w), Some(version)) = (want.default_queue_type, self.facts.broker_version) else { return false };
        if version >= (3, 13) || have.default_queue_type == Some(w) {
            return false;
        }
        let now = have.default_queue_type.map_or("none".to_string(), |t| format!("\"{}\"", t.as_str()));
        let diagnostic = Diagnostic::error(
            BROKER_VERSION,
            format!(
                "vhost \"{name}\" cannot change its default queue type from {now} to \"{}\" on RabbitMQ {}.{}: versions before 3.13 ignore a new default queue type for an existing vhost",
                w.as_str(),
                version.0,
                version.1
            ),
        )
        .help("keep `default_queue_type` as it is live and give each queue its `type`, or upgrade the broker to 3.13 or later");
        let key = ObjectKey::Vhost(name.into());
        self.out.problems.push(Problem { key, field: Some("default_queue_type".into()), diagnostic });
        true
    }

    /// Deletion protection came in RabbitMQ 4.1; earlier brokers accept
    /// `protected_from_deletion` in a vhost's PUT and ignore it (4.0.5 and
    /// 3.10.8 both did), so the vhost would stay deletable while apply
    /// reported success. `false` is what every vhost of those brokers is:
    /// only `true` is refused.
    pub(in crate::diff) fn deletion_protection_refused(&mut self, name: &str, want: &VhostSettings) {
        const SINCE: (u32, u32) = (4, 1);
        let (Some(true), Some(version)) = (want.protected_from_deletion, self.facts.broker_version) else { return };
        if version >= SINCE {
            return;
        }
        let diagnostic = Diagnostic::error(
            BROKER_VERSION,
            format!(
                "vhost \"{name}\" sets `protected_from_deletion`: RabbitMQ {}.{} has no deletion protection for vhosts; it came in RabbitMQ {}.{}",
                version.0, version.1, SINCE.0, SINCE.1
            ),
        )
        .help(format!(
            "upgrade the broker to RabbitMQ {}.{} or later, or remove `protected_from_deletion` from [vhost]",
            SINCE.0, SINCE.1
        ));
        let key = ObjectKey::Vhost(name.into());
        self.out.problems.push(Problem { key, field: Some("protected_from_deletion".into()), diagnostic });
    }

    /// RabbitMQ 4 removed classic queue mirroring and refuses a policy that
    /// sets an `ha-*` key (400 "not recognised policy settings"): creating
    /// or changing one is a problem before any write, not a failure halfway
    /// through an apply. One kept as it is live (from before an upgrade) is
    /// left alone.
    pub(in crate::diff) fn mirroring_refused(&mut self, s: &Sides) {
        let Some(version) = self.facts.broker_version.filter(|b| *b >= (4, 0)) else { return };
        for p in s.want.policies().into_iter().filter(|p| s.have.policy(&p.name).as_ref() != Some(*p)) {
            let name = &p.name;
            for k in p.definition.keys().filter(|k| policy_key(k).is_some_and(|pk| pk.mirroring)) {
                let diagnostic = Diagnostic::error(
                    BROKER_VERSION,
                    format!(
                        "policy \"{name}\" sets `{k}`, classic queue mirroring, which RabbitMQ {}.{} no longer has: it refuses the policy",
                        version.0, version.1
                    ),
                )
                .help("remove the `ha-*` keys; quorum queues replicate (`type = \"quorum\"`)");
                let key = crate::model::kinds::policies::key(s.v, name);
                self.out.problems.push(Problem { key, field: Some(format!("definition.{k}")), diagnostic });
            }
        }
    }

    /// Objects of a kind whose plugin the live broker has not enabled: one
    /// problem per kind, at its first object, before any write (the broker
    /// would refuse each with 400 "component not found", halfway through).
    pub(in crate::diff) fn plugins_missing(&mut self, desired: &crate::model::Topology) {
        let Some(enabled) = &self.facts.plugins else { return };
        let mut seen = std::collections::BTreeMap::new();
        for (vhost, name, _) in desired.kind_objects() {
            if let Some(plugin) = name.kind.plugin.filter(|p| !enabled.contains(*p)) {
                seen.entry(name.kind.table)
                    .or_insert_with(|| (vhost.map(str::to_string), name.clone(), plugin, 0))
                    .3 += 1;
            }
        }
        for (vhost, name, plugin, count) in seen.into_values() {
            let more = if count > 1 { format!(" (and {} more)", count - 1) } else { String::new() };
            let diagnostic = Diagnostic::error(
                PLUGIN_MISSING,
                format!("{}{more} needs the {plugin} plugin, which the broker has not enabled", name.at(vhost.as_deref())),
            )
            .help(format!(
                "enable it on every node (`rabbitmq-plugins enable {plugin} {plugin}_management`), or remove the {} from the files; a user without the `monitoring` tag sees a plugin only by its management part",
                name.kind.table.replace('_', " ")
            ));
            self.out.problems.push(Problem { key: ObjectKey::Object { vhost, name }, field: None, diagnostic });
        }
    }

    /// Super streams on a broker that has none (before 3.11), and, before
    /// 3.13, partitions with the `balanced` leader locator RabbitMQ's own
    /// tool gives them from 3.13 on: problems before any write.
    pub(in crate::diff) fn super_streams_unsupported(&mut self, desired: &Topology, live: &Topology) {
        let Some(version) = self.facts.broker_version else { return };
        let (major, minor) = SUPER_STREAMS_SINCE;
        for (v, want) in &desired.vhosts {
            let have = live.vhosts.get(v);
            for x in want.exchanges.values().filter(|x| is_super_stream_exchange(x)) {
                let unchanged = have.and_then(|h| h.exchanges.get(&x.name)) == Some(x);
                if version < SUPER_STREAMS_SINCE && !unchanged {
                    let diagnostic = Diagnostic::error(
                        BROKER_VERSION,
                        format!(
                            "super stream \"{}\" in vhost \"{v}\": RabbitMQ {}.{} has no super streams; they came in RabbitMQ {major}.{minor}",
                            x.name, version.0, version.1
                        ),
                    )
                    .help(format!("upgrade the broker to RabbitMQ {major}.{minor} or later, or remove the super stream from the files"));
                    let key = ObjectKey::Exchange { vhost: v.clone(), name: x.name.clone() };
                    self.out.problems.push(Problem { key, field: None, diagnostic });
                } else if version < (3, 13) {
                    self.balanced_refused(v, want, have, &x.name, version);
                }
            }
        }
    }

    /// A new partition with the `balanced` leader locator, which RabbitMQ
    /// knows from 3.13.
    fn balanced_refused(&mut self, v: &str, want: &Vhost, have: Option<&Vhost>, name: &str, version: (u32, u32)) {
        let partitions = partitions_of(want);
        let balanced = want.queues.values().find(|q| {
            partitions.get(q.name.as_str()) == Some(&name)
                && q.arguments.get("x-queue-leader-locator").and_then(Value::as_str) == Some(DEFAULT_LEADER_LOCATOR)
                && have.and_then(|h| h.queues.get(&q.name)) != Some(*q)
        });
        let Some(q) = balanced else { return };
        let diagnostic = Diagnostic::error(
            BROKER_VERSION,
            format!(
                "super stream \"{name}\" in vhost \"{v}\": its partitions' leader locator \"balanced\" (the default) came in RabbitMQ 3.13, and this broker is {}.{}",
                version.0, version.1
            ),
        )
        .help("set `arguments = { \"x-queue-leader-locator\" = \"client-local\" }` on the super stream, or upgrade the broker to 3.13 or later");
        let key = ObjectKey::Queue { vhost: v.into(), name: q.name.clone() };
        self.out.problems.push(Problem { key, field: Some("arguments.x-queue-leader-locator".into()), diagnostic });
    }

    /// Objects of a kind the live broker's version does not have: one
    /// problem per kind, at its first object, before any write.
    pub(in crate::diff) fn kinds_unsupported(&mut self, desired: &crate::model::Topology) {
        let Some(version) = self.facts.broker_version else { return };
        let mut seen = std::collections::BTreeMap::new();
        for (vhost, name, _) in desired.kind_objects() {
            if !name.kind.on(version) {
                seen.entry(name.kind.table).or_insert_with(|| (vhost.map(str::to_string), name.clone(), 0)).2 += 1;
            }
        }
        for (vhost, name, count) in seen.into_values() {
            let (kind, (major, minor)) = (name.kind, name.kind.since);
            let more = if count > 1 { format!(" (and {} more)", count - 1) } else { String::new() };
            let diagnostic = Diagnostic::error(
                BROKER_VERSION,
                format!(
                    "{}{more}: RabbitMQ {}.{} has no {}s; they came in RabbitMQ {major}.{minor}",
                    name.at(vhost.as_deref()),
                    version.0,
                    version.1,
                    kind.name
                ),
            )
            .help(format!(
                "upgrade the broker to RabbitMQ {major}.{minor} or later, or remove the {} from the files",
                kind.table.replace('_', " ")
            ));
            self.out.problems.push(Problem { key: ObjectKey::Object { vhost, name }, field: None, diagnostic });
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diff::{Action, BrokerFacts, Options, diff};
    use crate::model::{Ownership, Policy, QueueType, Topology, Vhost};

    fn with_dqt(t: Option<QueueType>) -> Topology {
        let mut v = Vhost::new("v");
        v.settings.default_queue_type = t;
        let mut topology = Topology::default();
        topology.vhosts.insert("v".into(), v);
        topology
    }

    fn on(version: Option<(u32, u32)>) -> BrokerFacts {
        BrokerFacts { broker_version: version, ..BrokerFacts::default() }
    }

    #[test]
    fn a_default_queue_type_change_is_a_problem_before_3_13() {
        let (want, have) = (with_dqt(Some(QueueType::Classic)), with_dqt(Some(QueueType::Quorum)));
        let ownership = Ownership::default();
        let diff_on = |version| diff(&want, &have, &ownership, "default", &Options::default(), &on(version));
        let old = diff_on(Some((3, 12)));
        assert_eq!(old.problems.len(), 1);
        assert!(old.problems[0].diagnostic.message.contains("from \"quorum\" to \"classic\" on RabbitMQ 3.12"));
        assert!(old.changes.is_empty(), "no update that could not happen: {:?}", old.changes);
        for version in [Some((3, 13)), Some((4, 0)), None] {
            let d = diff_on(version);
            assert!(d.problems.is_empty(), "{version:?}");
            assert_eq!(d.changes.len(), 1);
            assert_eq!(d.changes[0].action, Action::Update);
        }
        let same = diff(&want, &want, &ownership, "default", &Options::default(), &on(Some((3, 10))));
        assert!(same.problems.is_empty() && same.changes.is_empty());
    }

    #[test]
    fn deletion_protection_is_a_problem_before_4_1_naming_the_version_it_needs() {
        let protected = |p: Option<bool>| {
            let mut t = with_dqt(None);
            t.vhosts.get_mut("v").unwrap().settings.protected_from_deletion = p;
            t
        };
        let ownership = Ownership::default();
        let diff_on = |want: &Topology, version| {
            diff(want, &with_dqt(None), &ownership, "default", &Options::default(), &on(version))
        };
        for version in [(3, 10), (3, 13), (4, 0)] {
            let d = diff_on(&protected(Some(true)), Some(version));
            assert_eq!(d.problems.len(), 1, "{version:?}");
            let message = &d.problems[0].diagnostic.message;
            assert!(message.contains("`protected_from_deletion`") && message.contains("RabbitMQ 4.1"), "{message}");
            assert_eq!(d.problems[0].field.as_deref(), Some("protected_from_deletion"));
            assert!(diff_on(&protected(Some(false)), Some(version)).problems.is_empty(), "false is every vhost there");
        }
        for version in [Some((4, 1)), None] {
            let d = diff_on(&protected(Some(true)), version);
            assert!(d.problems.is_empty(), "{version:?}");
            assert_eq!(d.changes.len(), 1);
        }
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
            t.vhosts.get_mut("v").unwrap().set_policy(&p);
            t
        };
        let (ha, none) = (with_policy("ha-mode"), with_dqt(None));
        let ownership = Ownership::default();
        let diff_on = |want: &Topology, have: &Topology, version| {
            diff(want, have, &ownership, "default", &Options::default(), &on(version))
        };
        let refused = diff_on(&ha, &none, Some((4, 0)));
        assert_eq!(refused.problems.len(), 1);
        assert!(refused.problems[0].diagnostic.message.contains("`ha-mode`"), "{:?}", refused.problems);
        assert_eq!(refused.problems[0].field.as_deref(), Some("definition.ha-mode"));
        for version in [Some((3, 13)), None] {
            assert!(diff_on(&ha, &none, version).problems.is_empty(), "{version:?}");
        }
        assert!(diff_on(&ha, &ha, Some((4, 0))).problems.is_empty(), "kept as it is live");
        assert!(diff_on(&with_policy("max-length"), &none, Some((4, 0))).problems.is_empty());
    }

    fn with_super_stream(arguments: &[(&str, &str)]) -> Topology {
        let ss = crate::model::SuperStream {
            name: "events".into(),
            partitions: crate::model::Partitions::Count(2),
            arguments: arguments
                .iter()
                .map(|(k, v)| (k.to_string(), crate::model::Value::String(v.to_string())))
                .collect(),
        };
        let e = ss.expand();
        let mut t = with_dqt(None);
        let v = t.vhosts.get_mut("v").unwrap();
        v.exchanges.insert(e.exchange.name.clone(), e.exchange);
        v.queues.extend(e.queues.into_iter().map(|q| (q.name.clone(), q)));
        v.bindings.extend(e.bindings);
        t
    }

    #[test]
    fn a_super_stream_is_a_problem_before_3_11_and_its_balanced_locator_before_3_13() {
        let ownership = Ownership::default();
        let none = with_dqt(None);
        let diff_on =
            |want: &Topology, version| diff(want, &none, &ownership, "default", &Options::default(), &on(version));
        let balanced = with_super_stream(&[]);
        let old = diff_on(&balanced, Some((3, 10)));
        assert_eq!(old.problems.len(), 1, "{:?}", old.problems);
        let said = &old.problems[0].diagnostic.message;
        assert!(said.contains("RabbitMQ 3.10 has no super streams; they came in RabbitMQ 3.11"), "{said}");
        let newer = diff_on(&balanced, Some((3, 12)));
        assert_eq!(newer.problems.len(), 1, "{:?}", newer.problems);
        assert!(newer.problems[0].diagnostic.message.contains("\"balanced\""), "{:?}", newer.problems);
        assert!(
            diff_on(&with_super_stream(&[("x-queue-leader-locator", "client-local")]), Some((3, 12)))
                .problems
                .is_empty()
        );
        for version in [Some((3, 13)), Some((4, 0)), None] {
            let d = diff_on(&balanced, version);
            assert!(d.problems.is_empty(), "{version:?}");
            // Each object says which super stream it is part of.
            assert_eq!(d.changes.len(), 5);
            assert!(d.changes.iter().all(|c| c.super_stream.as_deref() == Some("events")), "{:?}", d.changes);
        }
    }
}
