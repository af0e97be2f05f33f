//! Checks that refuse a migration before it starts (exit 4): what would
//! lose messages or route them wrong once the swap begins. Each names the
//! queue's `replaces` line. What a migration cannot cover, but may go on
//! with, is said by `migrations/warnings.rs`.

use super::{
    ALTERNATE_ARGUMENT, DEAD_LETTER_LOOP, DELAYED_EXCHANGE, EXPIRING_QUEUE, EXTRA_BINDING, NAME_TAKEN, STREAM_QUEUE,
};
use crate::diagnostic::Diagnostic;
use crate::diff::sides::Sides;
use crate::diff::{Migration, Problem};
use crate::model::scaffold::{self, ALTERNATE_ARGUMENT as AE_ARGUMENT};
use crate::model::{Exchange, Inventory, ObjectKey, Queue, QueueType};

/// The refusals of migration `m`, of live queue `old` into `new`.
pub(in crate::diff) fn preflight(
    s: &Sides,
    new: &Queue,
    old: &Queue,
    m: &Migration,
    inventory: &Inventory,
) -> Vec<Problem> {
    let p = &old.name;
    let mut found = Vec::new();
    if old.kind == QueueType::Stream {
        // The swap waits until P is drained, and a stream's consumers read
        // it without removing anything: the wait would never end.
        found.push(
            Diagnostic::error(
                STREAM_QUEUE,
                format!("queue \"{p}\" is a stream: reading it removes no message, so it never drains and the migration could never finish"),
            )
            .help(format!(
                "a stream cannot be migrated live: declare \"{}\" without `replaces`, move the publishers and consumers of \"{p}\" over, then remove \"{p}\" from the files (its messages stay until then)",
                new.name
            )),
        );
    }
    if old.auto_delete || old.arguments.contains_key("x-expires") {
        found.push(
            Diagnostic::error(
                EXPIRING_QUEUE,
                format!("queue \"{p}\" is auto-delete or has x-expires: it can vanish with its messages mid-migration"),
            )
            .help(format!(
                "make sure \"{p}\" cannot expire (recreate it without auto_delete / x-expires), then migrate"
            )),
        );
    }
    for x in m.sources() {
        let Some(exchange) = s.full.exchanges.get(x) else { continue };
        found.extend(through(s, new, p, exchange, inventory));
    }
    found.into_iter().map(|d| Problem::at_replaces(s.v, &new.name, d)).collect()
}

/// The refusals for live exchange `x`, a source whose bindings to `p`
/// move to `new` through the exchanges the migration interposes.
fn through(s: &Sides, new: &Queue, p: &str, x: &Exchange, inventory: &Inventory) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    let name = x.name.as_str();
    if x.kind == "x-delayed-message" {
        found.push(Diagnostic::error(
            DELAYED_EXCHANGE,
            format!("exchange \"{name}\" is an x-delayed-message exchange: it holds messages itself and routes them later"),
        )
        .help("messages it holds would be routed after the swap by bindings that no longer exist; migrate consumers by hand"));
    }
    found.extend(scaffolding_taken(s, p, name, inventory));
    let interposed = scaffold::interposed(p, name);
    let expected = |b: &&crate::model::Binding| {
        (b.source == name && b.destination == interposed)
            || (b.source == interposed && (b.destination == p || b.destination == new.name))
    };
    let extra: Vec<String> = s
        .full
        .bindings
        .iter()
        .filter(|b| b.source == interposed || b.destination == interposed)
        .filter(|b| !expected(b))
        .map(|b| b.to_string())
        .collect();
    if !extra.is_empty() {
        found.push(
            Diagnostic::error(
                EXTRA_BINDING,
                format!("exchange \"{interposed}\" has bindings the migration did not make: {}", extra.join("; ")),
            )
            .help("they would keep its route set non-empty, so the alternate exchange would never fire; remove them"),
        );
    }
    if new.arguments.get("x-dead-letter-exchange").and_then(|d| d.as_str()) == Some(name) {
        found.push(Diagnostic::error(
            DEAD_LETTER_LOOP,
            format!("queue \"{}\" dead-letters into \"{name}\", which routes to it", new.name),
        )
        .help(format!(
            "rejected messages would re-enter \"{name}\" and fan out to its consumers; dead-letter through the default exchange instead: x-dead-letter-exchange = \"\" with x-dead-letter-routing-key"
        )));
    }
    found
}

/// The exchanges the migration of `p` needs for source `x`, where they are
/// live already: refused when warren did not make them, or when they send
/// what nothing routes anywhere but to warren's own alternate exchange.
fn scaffolding_taken(s: &Sides, p: &str, x: &str, inventory: &Inventory) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    let interposed = scaffold::interposed(p, x);
    for name in [interposed.clone(), scaffold::alternate(p, x)] {
        let Some(e) = s.full.exchanges.get(&name) else { continue };
        let owned = inventory.contains(&ObjectKey::Exchange { vhost: s.v.into(), name: name.clone() });
        if !owned {
            found.push(
                Diagnostic::error(
                    NAME_TAKEN,
                    format!("exchange \"{name}\", which the migration needs, exists and was not made by warren"),
                )
                .help(format!("remove or rename \"{name}\"; names starting `{}` are warren's", scaffold::PREFIX)),
            );
        }
        // The interposed exchange's own is warren's alternate exchange.
        let ours = (name == interposed).then(|| scaffold::alternate(p, x));
        match e.arguments.get(AE_ARGUMENT).and_then(|a| a.as_str()) {
            Some(ae) if Some(ae) != ours.as_deref() => found.push(
                Diagnostic::error(
                    ALTERNATE_ARGUMENT,
                    format!("exchange \"{name}\" carries an alternate-exchange argument (\"{ae}\") that is not warren's: messages would go there instead"),
                )
                .help(format!("delete \"{name}\" so that warren declares it afresh")),
            ),
            _ => {}
        }
    }
    found
}
