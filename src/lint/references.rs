//! References between objects: binding ends, permissions' users, `replaces`.

use std::collections::{BTreeMap, HashSet};

use rustc_hash::FxHashSet;

use super::Context;
use crate::diagnostic::Diagnostic;
use crate::model::{BUILTIN_EXCHANGES, DestinationKind, ObjectKey};

pub(super) fn check(ctx: &mut Context) {
    bindings(ctx);
    permissions(ctx);
    replaces(ctx);
}

fn bindings(ctx: &mut Context) {
    // Declared objects are in the topology; these are the names whose
    // declaration failed, gathered once so that a lookup does not allocate.
    let mut exchanges: HashSet<(&str, &str)> = HashSet::new();
    let mut queues: HashSet<(&str, &str)> = HashSet::new();
    for key in &ctx.locations.named {
        match key {
            ObjectKey::Exchange { vhost, name } => exchanges.insert((vhost, name)),
            ObjectKey::Queue { vhost, name } => queues.insert((vhost, name)),
            _ => false,
        };
    }
    for (vname, vhost) in &ctx.topology.vhosts {
        // Every name a binding may use, hashed: a lookup in the ordered maps
        // compares long names that share their prefix at every level.
        let known_exchanges: FxHashSet<&str> = (vhost.exchanges.keys().map(String::as_str))
            .chain(vhost.external.exchanges.iter().map(String::as_str))
            .chain(BUILTIN_EXCHANGES)
            .chain(exchanges.iter().filter(|(v, _)| v == vname).map(|&(_, n)| n))
            .collect();
        let known_queues: FxHashSet<&str> = (vhost.queues.keys().map(String::as_str))
            .chain(vhost.external.queues.iter().map(String::as_str))
            .chain(queues.iter().filter(|(v, _)| v == vname).map(|&(_, n)| n))
            .collect();
        let exchange_known = |name: &str| known_exchanges.contains(name);
        let queue_known = |name: &str| known_queues.contains(name);
        let mut found = Vec::new();
        for b in &vhost.bindings {
            let key = || ObjectKey::Binding { vhost: vname.clone(), binding: b.clone() };
            if !exchange_known(&b.source) {
                found.push((key(), "source", "exchange", b.source.clone()));
            }
            let known = match b.destination_kind {
                DestinationKind::Queue => queue_known(&b.destination),
                DestinationKind::Exchange => exchange_known(&b.destination),
            };
            if !known {
                let field = b.destination_kind.as_str();
                found.push((key(), field, field, b.destination.clone()));
            }
        }
        for (key, field, kind, name) in found {
            let d = Diagnostic::error(
                "dangling-binding",
                format!("this binding's {kind} \"{name}\" is declared nowhere in vhost \"{vname}\""),
            )
            .label(format!("no {kind} of this name"))
            .help(format!(
                "declare it under [{kind}s.\"{name}\"], or, if another team owns it, list it in `[external] {kind}s = [\"{name}\"]`"
            ));
            ctx.report(&key, Some(field), d);
        }
    }
}

fn permissions(ctx: &mut Context) {
    let mut found = Vec::new();
    for (vname, vhost) in &ctx.topology.vhosts {
        for user in vhost.permission_users() {
            // A user declared with errors is declared all the same.
            let declared = ctx.topology.has_user(user)
                || ctx.locations.named.contains(&crate::model::kinds::users::key(user))
                || vhost.external.users.contains(user);
            if !declared {
                found.push(crate::model::kinds::permissions::key(vname, user));
            }
        }
    }
    for key in found {
        let Some((_, user)) = crate::model::kinds::permissions::name_of(&key) else {
            continue;
        };
        let d = Diagnostic::error(
            "unknown-user",
            format!("permissions are given to user \"{user}\", who is declared nowhere"),
        )
        .label("no [users] entry of this name")
        .help(format!(
            "declare the user under [users.{user}], list it in `[external] users` if it is made elsewhere, or fix the name"
        ));
        ctx.report(&key, None, d);
    }
}

fn replaces(ctx: &mut Context) {
    let mut found = Vec::new();
    for (vname, vhost) in &ctx.topology.vhosts {
        let mut claimed: BTreeMap<&str, &str> = BTreeMap::new();
        for q in vhost.queues.values() {
            let Some(old) = q.replaces.as_deref() else {
                continue;
            };
            let key = ObjectKey::Queue { vhost: vname.clone(), name: q.name.clone() };
            if old == q.name {
                let d = Diagnostic::error("replaces-self", format!("queue \"{old}\" replaces itself"))
                    .help("`replaces` names the old queue this one takes over; remove it, or name the old queue");
                found.push((key, d));
            } else if let Some(first) = claimed.get(old) {
                let d = Diagnostic::error(
                    "replaces-twice",
                    format!("queues \"{first}\" and \"{}\" both replace \"{old}\"", q.name),
                )
                .help("a queue's messages can move to one new queue only; keep `replaces` on one of them");
                found.push((key, d));
            } else if vhost.queues.contains_key(old)
                || ctx.locations.named.contains(&ObjectKey::Queue { vhost: vname.clone(), name: old.to_string() })
            {
                let d = Diagnostic::error(
                    "replaces-declared",
                    format!("queue \"{}\" replaces \"{old}\", which the files still declare", q.name),
                )
                .help(format!("remove the declaration of \"{old}\": the migration deletes it once it is drained"));
                found.push((key, d));
            } else {
                claimed.insert(old, &q.name);
            }
        }
    }
    for (key, d) in found {
        ctx.report(&key, Some("replaces"), d);
    }
}
