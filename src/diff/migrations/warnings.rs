//! What a migration cannot cover, said as warnings on the queue's
//! `replaces` line: it goes on, and the user checks. What refuses a
//! migration is in `refusals/preflight.rs`.

use crate::diagnostic::Diagnostic;
use crate::diff::sides::Sides;
use crate::diff::{Migration, Problem};
use crate::model::{Matcher, Queue};

/// The warnings about migration `m`, of live queue `old` into `new`.
pub(super) fn warnings(s: &Sides, new: &Queue, old: &Queue, m: &Migration) -> Vec<Problem> {
    let p = &old.name;
    let mut found = Vec::new();
    for x in m.sources().into_iter().filter(|x| s.full.exchanges.contains_key(*x)) {
        let federated = s.full.policies().into_iter().any(|pol| {
            pol.definition.keys().any(|k| k.starts_with("federation-upstream")) && Matcher::new(pol).matches_exchange(x)
        });
        if federated {
            found.push(Diagnostic::warning(
                "migration-federated",
                format!("exchange \"{x}\" is federated: what the federation link does during the swap is not verified"),
            ));
        }
    }
    for other in s.want.queues.values().filter(|q| q.name != new.name) {
        let dlx = other.arguments.get("x-dead-letter-exchange").and_then(|d| d.as_str());
        let dlrk = other.arguments.get("x-dead-letter-routing-key").and_then(|d| d.as_str());
        if dlx == Some("") && dlrk == Some(p.as_str()) {
            found.push(
                Diagnostic::warning(
                    "migration-by-name",
                    format!("queue \"{}\" dead-letters into \"{p}\" by name through the default exchange", other.name),
                )
                .help(format!(
                    "point it at \"{}\"; like publishers that address \"{p}\" by name, it is not moved",
                    new.name
                )),
            );
        }
    }
    found.push(Diagnostic::warning(
        "migration-ordering",
        format!(
            "order across the swap is not kept: consumers of \"{}\" may see new messages before \"{p}\"'s last ones",
            new.name
        ),
    ));
    let dlx = |q: &Queue| q.arguments.get("x-dead-letter-exchange").cloned();
    if dlx(old) != dlx(new) || old.kind != new.kind {
        found.push(
            Diagnostic::warning(
                "migration-failure-behaviour",
                format!("\"{}\" handles rejected and expired messages differently from \"{p}\"", new.name),
            )
            .help("a message that was dropped may now be dead-lettered, or the other way round; check the new queue's arguments"),
        );
    }
    found.into_iter().map(|d| Problem::at_replaces(s.v, &new.name, d)).collect()
}
