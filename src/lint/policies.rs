//! Policy checks: removed keys, ambiguous priorities, policies that hide
//! another's keys, and policy keys that meet a queue argument setting the
//! same thing.

use std::collections::{BTreeMap, BTreeSet};

use super::{Context, finding};
use crate::diagnostic::Diagnostic;
use crate::model::{
    Matcher, ObjectKey, Policy, QUEUE_ARGUMENTS, Resolution, Value, matching_queue, policy_key, resolution,
};
use crate::toml_text;

pub(super) fn check(ctx: &mut Context) {
    let mut found = Vec::new();
    for (vname, vhost) in &ctx.topology.vhosts {
        let key_of = |p: &Policy, operator: bool| {
            let (vhost, name) = (vname.clone(), p.name.clone());
            if operator { ObjectKey::OperatorPolicy { vhost, name } } else { ObjectKey::Policy { vhost, name } }
        };
        for (operator, set) in [(false, &vhost.policies), (true, &vhost.operator_policies)] {
            for p in set.values() {
                for k in p.definition.keys() {
                    if policy_key(k).is_some_and(|pk| pk.mirroring) {
                        let d = finding("ha-policy", format!("`{k}` is classic queue mirroring, removed in RabbitMQ 4"))
                            .help("RabbitMQ 4 rejects the whole policy; use quorum queues for replication and remove the `ha-*` keys");
                        found.push((key_of(p, operator), Some(format!("definition.{k}")), d));
                    }
                }
            }
            let matchers: Vec<Matcher> = set.values().map(Matcher::new).collect();
            // (winner, hidden) -> the queues where the winner hides keys.
            let mut hidden: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
            // The policies that match some declared object.
            let mut used: BTreeSet<&str> = BTreeSet::new();
            for q in vhost.queues.values() {
                let matched = matching_queue(&matchers, q);
                used.extend(matched.iter().map(|p| p.name.as_str()));
                let Some(top) = matched.first() else { continue };
                // Ties are policy-tie's: which one wins is up to the broker.
                for below in matched.iter().skip(1).filter(|p| p.priority < top.priority) {
                    if below.definition.keys().any(|k| !top.definition.contains_key(k)) {
                        hidden.entry((&top.name, &below.name)).or_default().push(&q.name);
                    }
                }
                if let Some(tie) = matched.get(1).filter(|p| p.priority == top.priority) {
                    let d = finding(
                        "policy-tie",
                        format!(
                            "policies \"{}\" and \"{}\" both match queue \"{}\" with priority {}",
                            top.name, tie.name, q.name, top.priority
                        ),
                    )
                    .help(
                        "RabbitMQ then picks one of them at random; give one a higher `priority` or narrow a `pattern`",
                    );
                    found.push((key_of(tie, operator), Some("priority".into()), d));
                }
                for k in top.definition.keys() {
                    let Some(arg) = QUEUE_ARGUMENTS.iter().find(|r| r.policy_key == Some(k.as_str())) else {
                        continue;
                    };
                    if !q.arguments.contains_key(arg.name) {
                        continue;
                    }
                    let winner = match resolution(k, q.kind) {
                        Resolution::Min => "the lower of the two values applies",
                        Resolution::Argument => "the queue's argument wins",
                        Resolution::Policy => "the policy's value wins",
                    };
                    let d = finding(
                        "policy-overrides-argument",
                        format!(
                            "policy \"{}\" sets `{k}` on queue \"{}\", which already has `{}`: {winner}",
                            top.name, q.name, arg.name
                        ),
                    )
                    .help("set it in one place only, so that the files say what the broker does");
                    found.push((key_of(top, operator), Some(format!("definition.{k}")), d));
                }
            }
            for m in &matchers {
                let name = m.policy.name.as_str();
                let named_elsewhere = || {
                    (vhost.exchanges.keys().chain(&vhost.external.exchanges)).any(|x| m.matches_exchange(x))
                        || (m.policy.apply_to.matches_queue_of_some_type()
                            && vhost.external.queues.iter().any(|q| m.name_matches(q)))
                };
                if !used.contains(name) && !named_elsewhere() {
                    let kind = if operator { "operator policy" } else { "policy" };
                    let d = finding(
                        "policy-matches-nothing",
                        format!(
                            "{kind} \"{name}\" (pattern \"{}\", apply_to {}) matches nothing the files declare in vhost \"{vname}\"",
                            m.policy.pattern,
                            m.policy.apply_to.as_str()
                        ),
                    )
                    .help("check its pattern and `apply_to`; a queue it does not fit the keys of is skipped too. If it is meant for objects that applications declare, say so with `lint_allow = [\"policy-matches-nothing\"]`");
                    found.push((key_of(m.policy, operator), Some("pattern".into()), d));
                }
            }
            for ((top, below), queues) in hidden {
                let (top, below) = (&set[top], &set[below]);
                found.push((key_of(top, operator), None, shadows(top, below, &queues, operator)));
            }
        }
    }
    for (key, field, d) in found {
        ctx.report(&key, field.as_deref(), d);
    }
}

/// The warning for policy `top`, which wins over `below` on `queues` without
/// carrying all of its keys.
fn shadows(top: &Policy, below: &Policy, queues: &[&str], operator: bool) -> Diagnostic {
    let kind = if operator { "operator policy" } else { "policy" };
    let lost: Vec<(&String, &Value)> =
        below.definition.iter().filter(|(k, _)| !top.definition.contains_key(*k)).collect();
    let names = lost.iter().map(|(k, _)| format!("`{k}`")).collect::<Vec<_>>().join(", ");
    const LISTED: usize = 3;
    let mut on = match queues {
        [q] => format!("queue \"{q}\""),
        _ => format!("{} queues: ", queues.len()) + &quoted(&queues[..queues.len().min(LISTED)]),
    };
    if queues.len() > LISTED {
        on += &format!(" and {} more", queues.len() - LISTED);
    }
    let values: Option<Vec<String>> =
        lost.iter().map(|(k, v)| Some(format!("{} = {}", toml_text::key(k), toml_text::value(v)?))).collect();
    let add = match values {
        Some(v) => format!("`{}`", v.join(", ")),
        None => names.clone(),
    };
    let them = if queues.len() == 1 { "this queue" } else { "these queues" };
    finding(
        "policy-shadows",
        format!(
            "{kind} \"{}\" (priority {}) hides {names} of {kind} \"{}\" (priority {}) on {on}",
            top.name, top.priority, below.name, below.priority
        ),
    )
    .help(format!(
        "RabbitMQ applies only the highest-priority {kind} matching a queue: add {add} to the definition of \"{}\" to keep {names} on {them}, or narrow its pattern if it is not meant for {them}",
        top.name
    ))
}

fn quoted(names: &[&str]) -> String {
    names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
}
