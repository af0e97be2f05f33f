//! Checks that refuse a migration before it starts (exit 4), and warnings
//! about what it cannot cover. Each names the queue's `replaces` line.

use super::{Migration, Problem};
use crate::diagnostic::Diagnostic;
use crate::model::scaffold::{self, ALTERNATE_ARGUMENT};
use crate::model::{Inventory, Matcher, ObjectKey, Queue, Vhost};

/// Codes of refusals: a plan with only these errors exits 4, not 1.
pub const REFUSALS: [&str; 8] = [
    "other-project",
    super::in_flight::CODE,
    "preflight-expiring-queue",
    "preflight-delayed-exchange",
    "preflight-name-taken",
    "preflight-alternate-argument",
    "preflight-extra-binding",
    "preflight-dead-letter-loop",
];

pub(super) fn check(
    new: &Queue,
    old: &Queue,
    m: &Migration,
    want: &Vhost,
    live: &Vhost,
    inventory: &Inventory,
    v: &str,
) -> Vec<Problem> {
    let key = ObjectKey::Queue { vhost: v.into(), name: new.name.clone() };
    let mut out = Vec::new();
    let mut say = |d: Diagnostic| out.push(Problem { key: key.clone(), field: Some("replaces".into()), diagnostic: d });
    let p = &old.name;

    if old.auto_delete || old.arguments.contains_key("x-expires") {
        say(Diagnostic::error(
            "preflight-expiring-queue",
            format!("queue \"{p}\" is auto-delete or has x-expires: it can vanish with its messages mid-migration"),
        )
        .help(format!("make sure \"{p}\" cannot expire (recreate it without auto_delete / x-expires), then migrate")));
    }
    let sources: std::collections::BTreeSet<&str> = m.moved.iter().map(|b| b.source.as_str()).collect();
    for x in &sources {
        let Some(exchange) = live.exchanges.get(*x) else { continue };
        if exchange.kind == "x-delayed-message" {
            say(Diagnostic::error(
                "preflight-delayed-exchange",
                format!("exchange \"{x}\" is an x-delayed-message exchange: it holds messages itself and routes them later"),
            )
            .help("messages it holds would be routed after the swap by bindings that no longer exist; migrate consumers by hand"));
        }
        let interposed = scaffold::interposed(p, x);
        for name in [interposed.clone(), scaffold::alternate(p, x)] {
            let owned = inventory.contains(&ObjectKey::Exchange { vhost: v.into(), name: name.clone() });
            if let Some(e) = live.exchanges.get(&name) {
                if !owned {
                    say(Diagnostic::error(
                        "preflight-name-taken",
                        format!("exchange \"{name}\", which the migration needs, exists and was not made by warren"),
                    )
                    .help(format!("remove or rename \"{name}\"; names starting `{}` are warren's", scaffold::PREFIX)));
                }
                // The interposed exchange's own is warren's alternate exchange.
                let ours = (name == interposed).then(|| scaffold::alternate(p, x));
                match e.arguments.get(ALTERNATE_ARGUMENT).and_then(|a| a.as_str()) {
                    Some(ae) if Some(ae) != ours.as_deref() => say(Diagnostic::error(
                        "preflight-alternate-argument",
                        format!("exchange \"{name}\" carries an alternate-exchange argument (\"{ae}\") that is not warren's: messages would go there instead"),
                    )
                    .help(format!("delete \"{name}\" so that warren declares it afresh"))),
                    _ => {}
                }
            }
        }
        let expected = |b: &&crate::model::Binding| {
            (b.source == *x && b.destination == interposed)
                || (b.source == interposed && (b.destination == *p || b.destination == new.name))
        };
        let extra: Vec<String> = live
            .bindings
            .iter()
            .filter(|b| b.source == interposed || b.destination == interposed)
            .filter(|b| !expected(b))
            .map(|b| b.to_string())
            .collect();
        if !extra.is_empty() {
            say(Diagnostic::error(
                "preflight-extra-binding",
                format!("exchange \"{interposed}\" has bindings the migration did not make: {}", extra.join("; ")),
            )
            .help("they would keep its route set non-empty, so the alternate exchange would never fire; remove them"));
        }
        if new.arguments.get("x-dead-letter-exchange").and_then(|d| d.as_str()) == Some(*x) {
            say(Diagnostic::error(
                "preflight-dead-letter-loop",
                format!("queue \"{}\" dead-letters into \"{x}\", which routes to it", new.name),
            )
            .help(format!(
                "rejected messages would re-enter \"{x}\" and fan out to its consumers; dead-letter through the default exchange instead: x-dead-letter-exchange = \"\" with x-dead-letter-routing-key"
            )));
        }
        let federated = live.policies.values().any(|pol| {
            pol.definition.keys().any(|k| k.starts_with("federation-upstream")) && Matcher::new(pol).matches_exchange(x)
        });
        if federated {
            say(Diagnostic::warning(
                "migration-federated",
                format!("exchange \"{x}\" is federated: what the federation link does during the swap is not verified"),
            ));
        }
    }
    for other in want.queues.values().filter(|q| q.name != new.name) {
        let dlx = other.arguments.get("x-dead-letter-exchange").and_then(|d| d.as_str());
        let dlrk = other.arguments.get("x-dead-letter-routing-key").and_then(|d| d.as_str());
        if dlx == Some("") && dlrk == Some(p.as_str()) {
            say(Diagnostic::warning(
                "migration-by-name",
                format!("queue \"{}\" dead-letters into \"{p}\" by name through the default exchange", other.name),
            )
            .help(format!(
                "point it at \"{}\"; like publishers that address \"{p}\" by name, it is not moved",
                new.name
            )));
        }
    }
    say(Diagnostic::warning(
        "migration-ordering",
        format!(
            "order across the swap is not kept: consumers of \"{}\" may see new messages before \"{p}\"'s last ones",
            new.name
        ),
    ));
    let dlx = |q: &Queue| q.arguments.get("x-dead-letter-exchange").cloned();
    if dlx(old) != dlx(new) || old.kind != new.kind {
        say(Diagnostic::warning(
            "migration-failure-behaviour",
            format!("\"{}\" handles rejected and expired messages differently from \"{p}\"", new.name),
        )
        .help("a message that was dropped may now be dead-lettered, or the other way round; check the new queue's arguments"));
    }
    out
}
