//! Queue checks that depend on the queue's resolved type.

use super::Context;
use crate::diagnostic::Diagnostic;
use crate::model::{Matcher, ObjectKey, QueueType, argument_rule, matching_queue};

pub(super) fn check(ctx: &mut Context) {
    let mut found = Vec::new();
    for (vname, vhost) in &ctx.topology.vhosts {
        let matchers: Vec<Matcher> = vhost.policies.values().map(Matcher::new).collect();
        for q in vhost.queues.values() {
            let key = ObjectKey::Queue { vhost: vname.clone(), name: q.name.clone() };
            for name in q.arguments.keys() {
                let Some(rule) = argument_rule(name) else {
                    continue;
                };
                if !rule.types.contains(&q.kind) {
                    let types: Vec<&str> = rule.types.iter().map(|t| t.as_str()).collect();
                    let d = Diagnostic::error(
                        "argument-for-other-type",
                        format!("`{name}` is not an argument of {} queues", q.kind),
                    )
                    .label(format!("RabbitMQ refuses to create a {} queue with it", q.kind))
                    .help(format!(
                        "`{name}` applies to {} queues; remove it or change the queue's type",
                        types.join(" and ")
                    ));
                    found.push((key.clone(), Some(format!("arguments.{name}")), d));
                }
            }
            if q.kind.is_replicated() {
                for (field, bad) in [("durable", !q.durable), ("auto_delete", q.auto_delete)] {
                    if bad {
                        let d = Diagnostic::error(
                            "replicated-not-durable",
                            format!("a {} queue must be durable and not auto-delete", q.kind),
                        )
                        .help(format!("remove `{field}` (it defaults to the only value {} queues accept)", q.kind));
                        found.push((key.clone(), Some(field.to_string()), d));
                    }
                }
            } else if !q.durable {
                let d = Diagnostic::warning("transient-queue", format!("queue \"{}\" is not durable", q.name))
                    .help("RabbitMQ 4.3 refuses transient non-exclusive queues, and a restart loses this one with its messages; make it durable");
                found.push((key.clone(), Some("durable".into()), d));
            }
            if q.kind == QueueType::Quorum && !q.arguments.contains_key("x-dead-letter-exchange") {
                let by_policy = matching_queue(&matchers, q)
                    .first()
                    .is_some_and(|p| p.definition.contains_key("dead-letter-exchange"));
                if !by_policy {
                    let d = Diagnostic::warning(
                        "quorum-without-dlx",
                        format!("quorum queue \"{}\" has no dead-letter exchange", q.name),
                    )
                    .help("RabbitMQ 4 drops a message after 20 failed deliveries when it has nowhere to dead-letter it; set `x-dead-letter-exchange`");
                    found.push((key, None, d));
                }
            }
        }
    }
    for (key, field, d) in found {
        ctx.report(&key, field.as_deref(), d);
    }
}
