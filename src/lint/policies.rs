//! Policy checks: removed keys, ambiguous priorities, and policy keys that
//! meet a queue argument setting the same thing.

use super::Context;
use crate::diagnostic::Diagnostic;
use crate::model::{Matcher, ObjectKey, Policy, QUEUE_ARGUMENTS, Resolution, matching_queue, policy_key, resolution};

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
                        let d = Diagnostic::warning("ha-policy", format!("`{k}` is classic queue mirroring, removed in RabbitMQ 4"))
                            .help("RabbitMQ 4 rejects the whole policy; use quorum queues for replication and remove the `ha-*` keys");
                        found.push((key_of(p, operator), Some(format!("definition.{k}")), d));
                    }
                }
            }
            let matchers: Vec<Matcher> = set.values().map(Matcher::new).collect();
            for q in vhost.queues.values() {
                let matched = matching_queue(&matchers, q);
                let Some(top) = matched.first() else { continue };
                if let Some(tie) = matched.get(1).filter(|p| p.priority == top.priority) {
                    let d = Diagnostic::warning(
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
                    let d = Diagnostic::warning(
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
        }
    }
    for (key, field, d) in found {
        ctx.report(&key, field.as_deref(), d);
    }
}
