//! The policy warren offers instead of recreating or migrating a queue whose
//! arguments change: one that gives the live queue the new arguments while
//! keeping what the policy applying to it today sets.

use std::collections::BTreeSet;

use crate::model::{ApplyTo, Matcher, Policy, QUEUE_ARGUMENTS, Queue, Resolution, Table, matching_queue, resolution};
use crate::toml_text;

/// With no policy to beat, the priority the advice has always used.
const LEAST_PRIORITY: i64 = 10;

/// A policy to declare instead of changing a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Advice {
    /// The policy as the files would declare it.
    pub toml: String,
    /// The policy applying to the queue today, whose keys it carries.
    pub carries: Option<String>,
}

impl Advice {
    /// The TOML with a first line, a comment, that says what it carries:
    /// for output that is not wrapped, where the comment stays one line.
    pub(super) fn commented(&self) -> String {
        match &self.carries {
            Some(p) => format!("# carries the keys of policy {} and wins over it\n{}", toml_text::string(p), self.toml),
            None => self.toml.clone(),
        }
    }
}

/// A policy, as TOML, that gives `have` (the live queue, which stays) the
/// arguments `want` asks for, given the policies `in_force` once the plan is
/// applied; `None` unless it reproduces every changed argument.
///
/// RabbitMQ applies only the highest-priority matching policy, so the advice
/// carries the definition of the one that applies to `have` today and wins
/// over every matching one. Its pattern is `have`'s exact name: the carried
/// policy's own pattern would set the change on every queue it matches.
pub(super) fn policy_alternative(have: &Queue, want: &Queue, in_force: &[Matcher]) -> Option<Advice> {
    if have.kind != want.kind || have.durable != want.durable || have.auto_delete != want.auto_delete {
        return None;
    }
    let changes = changed_keys(have, want)?;
    let matched = matching_queue(in_force, have);
    let today = matched.first();
    let mut definition: Table = today.map(|p| p.definition.clone()).unwrap_or_default();
    definition.extend(changes);
    let priority = today.map_or(LEAST_PRIORITY, |p| p.priority.saturating_add(1).max(LEAST_PRIORITY));
    let taken: BTreeSet<&str> = in_force.iter().map(|m| m.policy.name.as_str()).collect();
    let base = format!("{}-settings", have.name);
    let mut name = base.clone();
    for i in 2.. {
        if !taken.contains(name.as_str()) {
            break;
        }
        name = format!("{base}-{i}");
    }
    let advice = Policy {
        name,
        pattern: format!("^{}$", regex::escape(&have.name)),
        apply_to: ApplyTo::Queues,
        priority,
        definition,
    };
    // A key of a queue type other than `have`'s would keep it from matching.
    if !Matcher::new(&advice).matches_queue(have) {
        return None;
    }
    let toml = render(&advice)?;
    Some(Advice { toml, carries: today.map(|p| p.name.clone()) })
}

/// The policy keys and values that set every argument changed from `have`
/// to `want` so that they apply; `None` if one cannot be set that way.
fn changed_keys(have: &Queue, want: &Queue) -> Option<Table> {
    let mut out = Table::new();
    for rule in QUEUE_ARGUMENTS {
        let (old, new) = (have.arguments.get(rule.name), want.arguments.get(rule.name));
        if old == new {
            continue;
        }
        let policy_key = rule.policy_key?;
        let new = new?; // a removed argument cannot be undone by a policy
        // The live argument stays: the policy's value must be the one applied.
        let wins = match (old, resolution(policy_key, have.kind)) {
            (None, _) | (Some(_), Resolution::Policy) => true,
            (Some(o), Resolution::Min) => matches!((o.as_int(), new.as_int()), (Some(o), Some(n)) if n < o),
            (Some(_), Resolution::Argument) => false,
        };
        if !wins {
            return None;
        }
        out.insert(policy_key.to_string(), new.clone());
    }
    // Unknown arguments differing: no policy key covers them.
    let known = |k: &String| QUEUE_ARGUMENTS.iter().any(|r| r.name == k);
    let unknown_changed = have
        .arguments
        .keys()
        .chain(want.arguments.keys())
        .any(|k| !known(k) && have.arguments.get(k) != want.arguments.get(k));
    (!unknown_changed && !out.is_empty()).then_some(out)
}

/// The policy as the files would declare it; `None` if a carried value
/// cannot be written in TOML (a null).
fn render(p: &Policy) -> Option<String> {
    let mut out = format!("[{}]\n", toml_text::path(&["policies", &p.name]));
    out += &format!("pattern = {}\n", toml_text::string(&p.pattern));
    out += &format!("apply_to = {}\n", toml_text::string(p.apply_to.as_str()));
    out += &format!("priority = {}\n", p.priority);
    out += &format!("definition = {}", toml_text::inline_table(p.definition.iter())?);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{QueueType, Value};

    fn queue(name: &str, args: &[(&str, i64)]) -> Queue {
        Queue {
            name: name.into(),
            kind: QueueType::Quorum,
            durable: true,
            auto_delete: false,
            arguments: args.iter().map(|(k, v)| (k.to_string(), Value::Int(*v))).collect(),
            replaces: None,
        }
    }

    fn policy(name: &str, pattern: &str, apply_to: ApplyTo, priority: i64, def: &[(&str, i64)]) -> Policy {
        Policy {
            name: name.into(),
            pattern: pattern.into(),
            apply_to,
            priority,
            definition: def.iter().map(|(k, v)| (k.to_string(), Value::Int(*v))).collect(),
        }
    }

    /// The advice for adding a message TTL to queue "orders.invoicing",
    /// parsed back: its name and table.
    fn advise(policies: &[Policy]) -> Option<(Advice, String, toml::Table)> {
        let have = queue("orders.invoicing", &[]);
        let want = queue("orders.invoicing", &[("x-message-ttl", 60000)]);
        let matchers: Vec<Matcher> = policies.iter().map(Matcher::new).collect();
        let advice = policy_alternative(&have, &want, &matchers)?;
        let doc: toml::Table = advice.toml.parse().expect("TOML");
        let (name, p) = doc["policies"].as_table().unwrap().iter().next().map(|(n, p)| (n.clone(), p.clone()))?;
        Some((advice, name, p.as_table().unwrap().clone()))
    }

    fn keys(p: &toml::Table) -> Vec<String> {
        p["definition"].as_table().unwrap().keys().cloned().collect()
    }

    #[test]
    fn with_no_policy_to_beat_the_priority_is_ten_and_nothing_is_carried() {
        let (advice, name, p) = advise(&[]).unwrap();
        assert_eq!(advice.carries, None);
        assert_eq!(name, "orders.invoicing-settings");
        assert_eq!(p["priority"].as_integer(), Some(10));
        assert_eq!(keys(&p), ["message-ttl"]);
    }

    #[test]
    fn it_carries_the_winning_policy_and_beats_every_matching_one() {
        let policies = [
            policy("orders-limits", r"^orders\.", ApplyTo::Queues, 15, &[("max-length", 50000)]),
            policy("orders-all", r"^orders\.", ApplyTo::All, 15, &[("delivery-limit", 20)]),
            policy("low", r".*", ApplyTo::Queues, 3, &[("expires", 1000)]),
        ];
        let (advice, _, p) = advise(&policies).unwrap();
        // Of two at the top, the broker's pick is either: the first by name.
        assert_eq!(advice.carries.as_deref(), Some("orders-all"));
        assert_eq!(p["priority"].as_integer(), Some(16));
        assert_eq!(keys(&p), ["delivery-limit", "message-ttl"]);
    }

    #[test]
    fn policies_that_do_not_apply_to_the_queue_are_neither_carried_nor_beaten() {
        let policies = [
            policy("exchanges", r"^orders\.", ApplyTo::Exchanges, 50, &[("max-length", 1)]),
            policy("classic", r"^orders\.", ApplyTo::ClassicQueues, 40, &[("max-length", 2)]),
            policy("shipping", r"^orders\.shipping$", ApplyTo::Queues, 30, &[("max-length", 3)]),
            policy("orders-limits", r"^orders\.", ApplyTo::QuorumQueues, 0, &[("max-length", 50000)]),
        ];
        let (advice, _, p) = advise(&policies).unwrap();
        assert_eq!(advice.carries.as_deref(), Some("orders-limits"));
        assert_eq!(p["priority"].as_integer(), Some(10));
        assert_eq!(p["definition"]["max-length"].as_integer(), Some(50000));
    }

    #[test]
    fn the_change_replaces_a_carried_value_of_the_same_key() {
        let policies = [policy("orders-limits", r"^orders\.", ApplyTo::Queues, 0, &[("message-ttl", 1000)])];
        let (_, _, p) = advise(&policies).unwrap();
        assert_eq!(p["definition"]["message-ttl"].as_integer(), Some(60000));
    }

    #[test]
    fn a_name_already_taken_gets_a_number() {
        let policies = [
            policy("orders.invoicing-settings", r"^orders\.invoicing$", ApplyTo::Queues, 10, &[("max-length", 5)]),
            policy("orders.invoicing-settings-2", r"^nothing$", ApplyTo::Queues, 0, &[("max-length", 5)]),
        ];
        let (advice, name, p) = advise(&policies).unwrap();
        assert_eq!(name, "orders.invoicing-settings-3");
        assert_eq!(advice.carries.as_deref(), Some("orders.invoicing-settings"));
        assert_eq!(p["priority"].as_integer(), Some(11));
        assert_eq!(keys(&p), ["max-length", "message-ttl"]);
    }

    #[test]
    fn no_advice_when_the_live_argument_would_still_win() {
        // max-length: the lower of argument and policy applies.
        let have = queue("q", &[("x-max-length", 100)]);
        let matchers: Vec<Matcher> = Vec::new();
        assert!(policy_alternative(&have, &queue("q", &[("x-max-length", 200)]), &matchers).is_none());
        assert!(policy_alternative(&have, &queue("q", &[("x-max-length", 50)]), &matchers).is_some());
        // A removed argument, or one no policy key sets.
        assert!(policy_alternative(&have, &queue("q", &[]), &matchers).is_none());
        let sac = queue("q", &[("x-max-length", 100), ("x-quorum-initial-group-size", 3)]);
        assert!(policy_alternative(&have, &sac, &matchers).is_none());
    }

    #[test]
    fn the_commented_form_names_what_it_carries() {
        let policies = [policy("orders-limits", r"^orders\.", ApplyTo::Queues, 0, &[("max-length", 50000)])];
        let (advice, _, _) = advise(&policies).unwrap();
        let text = advice.commented();
        assert!(text.starts_with("# carries the keys of policy \"orders-limits\" and wins over it\n["), "{text}");
        assert!(text.parse::<toml::Table>().is_ok(), "{text}");
    }
}
