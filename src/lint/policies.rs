//! Policy checks: removed keys, ambiguous priorities, policies that hide
//! another's keys, and policy keys that meet a queue argument setting the
//! same thing.

use std::collections::{BTreeMap, BTreeSet};

use super::{Context, finding};
use crate::diagnostic::Diagnostic;
use crate::model::kinds::{operator_policies, policies};
use crate::model::{
    Matcher, Policy, QUEUE_ARGUMENTS, Queue, Resolution, Value, Vhost, matching_queue, policy_key, resolution,
};
use crate::toml_text;

pub(super) fn check(ctx: &mut Context) {
    let mut found = Vec::new();
    for (vname, vhost) in &ctx.topology.vhosts {
        for (kind, set) in [(&policies::KIND, vhost.policies()), (&operator_policies::KIND, vhost.operator_policies())]
        {
            let operator = kind == &operator_policies::KIND;
            let key_of = |p: &Policy| policies::key_of(kind, vname, &p.name);
            let set: BTreeMap<&str, &Policy> = set.into_iter().map(|p| (p.name.as_str(), p)).collect();
            for p in set.values() {
                found.extend(mirroring(p).map(|(field, d)| (key_of(p), Some(field), d)));
            }
            let matchers: Vec<Matcher> = set.values().map(|p| Matcher::new(p)).collect();
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
                if let Some((tie, d)) = tie(q, &matched) {
                    found.push((key_of(tie), Some("priority".into()), d));
                }
                found.extend(overridden_arguments(q, top).map(|(field, d)| (key_of(top), Some(field), d)));
            }
            for m in &matchers {
                if !used.contains(m.policy.name.as_str()) && !named_elsewhere(vhost, m) {
                    found.push((key_of(m.policy), Some("pattern".into()), matches_nothing(vname, m, operator)));
                }
            }
            for ((top, below), queues) in hidden {
                let (top, below) = (&set[top], &set[below]);
                found.push((key_of(top), None, shadows(top, below, &queues, operator)));
            }
        }
    }
    for (key, field, d) in found {
        ctx.report(&key, field.as_deref(), d);
    }
}

/// A warning for each key of `p` that is classic queue mirroring, with the
/// field it points at.
fn mirroring(p: &Policy) -> impl Iterator<Item = (String, Diagnostic)> + '_ {
    p.definition.keys().filter(|k| policy_key(k).is_some_and(|pk| pk.mirroring)).map(|k| {
        let d = finding("ha-policy", format!("`{k}` is classic queue mirroring, removed in RabbitMQ 4"))
            .help("RabbitMQ 4 rejects the whole policy; use quorum queues for replication and remove the `ha-*` keys");
        (format!("definition.{k}"), d)
    })
}

/// The policy that ties with the winner of `matched` (the policies matching
/// queue `q`, the winner first) for priority, with the warning.
fn tie<'a>(q: &Queue, matched: &[&'a Policy]) -> Option<(&'a Policy, Diagnostic)> {
    let top = matched.first()?;
    let tie = matched.get(1).filter(|p| p.priority == top.priority)?;
    let d = finding(
        "policy-tie",
        format!(
            "policies \"{}\" and \"{}\" both match queue \"{}\" with priority {}",
            top.name, tie.name, q.name, top.priority
        ),
    )
    .help("RabbitMQ then picks one of them at random; give one a higher `priority` or narrow a `pattern`");
    Some((tie, d))
}

/// A warning for each key of policy `top` that queue `q` also sets by an
/// argument, with the field of `top` it points at.
fn overridden_arguments<'a>(q: &'a Queue, top: &'a Policy) -> impl Iterator<Item = (String, Diagnostic)> + 'a {
    top.definition.keys().filter_map(move |k| {
        let arg = QUEUE_ARGUMENTS.iter().find(|r| r.policy_key == Some(k.as_str()))?;
        if !q.arguments.contains_key(arg.name) {
            return None;
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
        Some((format!("definition.{k}"), d))
    })
}

/// Whether `m` matches an exchange of `vhost`, or an external queue it
/// could apply to: objects the files name without declaring their queues.
fn named_elsewhere(vhost: &Vhost, m: &Matcher) -> bool {
    (vhost.exchanges.keys().chain(&vhost.external.exchanges)).any(|x| m.matches_exchange(x))
        || (m.policy.apply_to.matches_queue_of_some_type() && vhost.external.queues.iter().any(|q| m.name_matches(q)))
}

/// The warning for a policy of vhost `vname` that matches nothing.
fn matches_nothing(vname: &str, m: &Matcher, operator: bool) -> Diagnostic {
    let kind = if operator { "operator policy" } else { "policy" };
    finding(
        "policy-matches-nothing",
        format!(
            "{kind} \"{}\" (pattern \"{}\", apply_to {}) matches nothing the files declare in vhost \"{vname}\"",
            m.policy.name,
            m.policy.pattern,
            m.policy.apply_to.as_str()
        ),
    )
    .help("check its pattern and `apply_to`; a queue it does not fit the keys of is skipped too. If it is meant for objects that applications declare, say so with `lint_allow = [\"policy-matches-nothing\"]`")
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
