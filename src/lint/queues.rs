//! Queue checks that depend on the queue's resolved type.

use super::view::{Applied, View};
use super::{Context, finding};
use crate::diagnostic::Diagnostic;
use crate::model::{ObjectKey, Queue, QueueType, argument_rule};

pub(super) fn check(ctx: &mut Context) {
    // Each finding is reported as it is found: a policy can make the same
    // one on every queue, which the report counts rather than keeps.
    let (topology, views) = (ctx.topology, ctx.views);
    for (vname, vhost) in &topology.vhosts {
        let view = &views[vname.as_str()];
        for q in vhost.queues.values() {
            let key = ObjectKey::Queue { vhost: vname.clone(), name: q.name.clone() };
            arguments_and_durability(ctx, &key, q);
            settings(ctx, vname, &key, q, view.queue_policies(q));
        }
    }
}

/// What queue `q`'s type refuses or risks: arguments of other types, and
/// replicated queues that are not durable or are auto-delete.
fn arguments_and_durability(ctx: &mut Context, key: &ObjectKey, q: &Queue) {
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
            .help(format!("`{name}` applies to {} queues; remove it or change the queue's type", types.join(" and ")));
            ctx.report(key, Some(&format!("arguments.{name}")), d);
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
                ctx.report(key, Some(field), d);
            }
        }
    } else if !q.durable {
        let d = finding("transient-queue", format!("queue \"{}\" is not durable", q.name))
            .help("RabbitMQ 4.3 refuses transient non-exclusive queues, and a restart loses this one with its messages; make it durable");
        ctx.report(key, Some("durable"), d);
    }
}

/// What queue `q`'s settings, by argument or by one of the policies
/// `applied` to it, risk or RabbitMQ 4 refuses.
fn settings(ctx: &mut Context, vname: &str, key: &ObjectKey, q: &Queue, applied: Applied) {
    // With no delivery limit (-1), nothing is dropped for failing.
    let unlimited = View::setting(q, applied, "x-delivery-limit", "delivery-limit")
        .is_some_and(|(v, _)| v.as_int().is_some_and(|n| n < 0));
    if q.kind == QueueType::Quorum
        && !unlimited
        && View::setting(q, applied, "x-dead-letter-exchange", "dead-letter-exchange").is_none()
    {
        let d = finding("quorum-without-dlx", format!("quorum queue \"{}\" has no dead-letter exchange", q.name))
            .help("RabbitMQ 4 drops a message after 20 failed deliveries when it has nowhere to dead-letter it; set `x-dead-letter-exchange`");
        ctx.report(key, None, d);
    }
    if let Some((v, from)) = View::setting(q, applied, "x-queue-mode", "queue-mode") {
        let d = finding("queue-mode-removed", format!("queue \"{}\" sets the queue mode ({v}), which RabbitMQ 4.3 refuses", q.name))
            .help("classic queues keep messages on disk since 3.12 whatever the mode: remove `x-queue-mode` (or the policy key `queue-mode`)");
        let (k, f) = from.place(vname, &q.name, "x-queue-mode", "queue-mode");
        ctx.report(&k, Some(&f), d);
    }
    if let Some((v, from)) = View::setting(q, applied, "x-queue-version", "queue-version")
        && v.as_int() == Some(1)
    {
        let d = finding("queue-mode-removed", format!("queue \"{}\" asks for classic queue storage version 1, which RabbitMQ 4.3 refuses", q.name))
            .help("version 2 is the default since RabbitMQ 3.13 and the only one in 4.3: remove `x-queue-version` (or the policy key `queue-version`)");
        let (k, f) = from.place(vname, &q.name, "x-queue-version", "queue-version");
        ctx.report(&k, Some(&f), d);
    }
    if q.kind == QueueType::Stream
        && View::setting(q, applied, "x-max-age", "max-age").is_none()
        && View::setting(q, applied, "x-max-length-bytes", "max-length-bytes").is_none()
    {
        let d = finding("stream-unbounded", format!("stream \"{}\" has neither a maximum age nor a maximum size", q.name))
            .help("a stream keeps every message until the disk fills: set `x-max-age` (e.g. \"7D\") or `x-max-length-bytes`, by argument or policy");
        ctx.report(key, None, d);
    }
    if q.durable
        && !q.auto_delete
        && let Some((v, from)) = View::setting(q, applied, "x-expires", "expires")
    {
        let d = finding("expires-on-declared", format!("durable queue \"{}\" expires after {v} ms unused", q.name))
            .help("the broker then deletes it with its messages, and the next apply declares it again: remove the expiry from a queue the files keep, or make the queue auto-delete if it is meant to go");
        let (k, f) = from.place(vname, &q.name, "x-expires", "expires");
        ctx.report(&k, Some(&f), d);
    }
}
