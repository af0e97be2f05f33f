//! Large topologies for benchmarks and scale tests, built as a [`Topology`]
//! and written by [`crate::export::definitions`], so a benchmark's input is
//! exactly what warren itself would export.

use crate::export;
use crate::model::{
    ApplyTo, Binding, DestinationKind, Exchange, Policy, Queue, QueueType, Table, Topology, Value, Vhost,
};

/// The one vhost every generated object lives in.
pub const VHOST: &str = "bench";

const KINDS: [&str; 4] = ["topic", "direct", "fanout", "headers"];

/// Every `E2E_EVERY`th binding goes from an exchange to another exchange.
const E2E_EVERY: usize = 25;

/// The name of generated exchange `i`: `bench.x0007`.
pub fn exchange_name(i: usize) -> String {
    format!("bench.x{i:04}")
}

/// The name of generated queue `i`: `bench.q00042`.
pub fn queue_name(i: usize) -> String {
    format!("bench.q{i:05}")
}

/// A topology of one vhost, [`VHOST`], with exactly this many queues,
/// exchanges and bindings, and four policies:
/// - exchanges cycle through topic, direct, fanout and headers, all durable;
/// - queues are durable classic queues, each with `x-message-ttl`, every
///   third with `x-max-length`, every fifth dead-lettering to the first
///   fanout exchange;
/// - bindings spread over all exchanges and queues, every 25th between two
///   exchanges (when there are two), each with its own routing key (or, from
///   a headers exchange, its own `x-match` arguments) so none repeats;
/// - policies use keys the queues' arguments do not set, at distinct
///   priorities, and only `apply-to` values RabbitMQ 3.10 accepts; the
///   narrower ones carry the broad one's key, so that none hides it.
///
/// Panics if bindings are asked for without an exchange to bind from, or
/// without a queue or a second exchange to bind to.
pub fn large_topology(queues: usize, exchanges: usize, bindings: usize) -> Topology {
    assert!(
        bindings == 0 || (exchanges > 0 && (queues > 0 || exchanges > 1)),
        "{bindings} bindings need an exchange and a queue or a second exchange"
    );
    let mut v = Vhost::new(VHOST);
    v.exchanges.extend((0..exchanges).map(|i| (exchange_name(i), exchange(i))));
    let dlx = (exchanges > 2).then(|| exchange_name(2));
    v.queues.extend((0..queues).map(|i| (queue_name(i), queue(i, dlx.as_deref()))));
    v.bindings.extend((0..bindings).map(|k| binding(k, queues, exchanges)));
    v.objects.extend(crate::model::kinds::policies::objects(policies().iter().map(|(_, p)| p)));
    let mut t = Topology::default();
    t.vhosts.insert(VHOST.into(), v);
    t
}

/// Exchange `i`: durable, of the `i`th of [`KINDS`] in turn.
fn exchange(i: usize) -> Exchange {
    Exchange {
        name: exchange_name(i),
        kind: KINDS[i % KINDS.len()].to_string(),
        durable: true,
        auto_delete: false,
        internal: false,
        arguments: Table::new(),
    }
}

/// Queue `i`: a durable classic queue with a TTL, every third with a
/// maximum length, every fifth dead-lettering to `dlx` (if any).
fn queue(i: usize, dlx: Option<&str>) -> Queue {
    let mut arguments = Table::new();
    arguments.insert("x-message-ttl".into(), Value::Int(60_000 + (i % 10) as i64 * 1_000));
    if i.is_multiple_of(3) {
        arguments.insert("x-max-length".into(), Value::Int(10_000));
    }
    if let Some(dlx) = dlx.filter(|_| i.is_multiple_of(5)) {
        arguments.insert("x-dead-letter-exchange".into(), Value::String(dlx.to_string()));
    }
    Queue {
        name: queue_name(i),
        kind: QueueType::Classic,
        durable: true,
        auto_delete: false,
        arguments,
        replaces: None,
    }
}

/// Binding `k` of a topology with this many `queues` and `exchanges`: from
/// the exchanges in turn, to the queues in turn or, every
/// [`E2E_EVERY`]th, to another exchange, with a key (or headers) of its own.
fn binding(k: usize, queues: usize, exchanges: usize) -> Binding {
    let source = k % exchanges.max(1);
    let e2e = exchanges > 1 && (queues == 0 || k % E2E_EVERY == E2E_EVERY - 1);
    let (destination_kind, destination) = if e2e {
        let step = 1 + (k / E2E_EVERY) % (exchanges - 1);
        (DestinationKind::Exchange, exchange_name((source + step) % exchanges))
    } else {
        (DestinationKind::Queue, queue_name(k % queues))
    };
    let (routing_key, arguments) = match KINDS[source % KINDS.len()] {
        "headers" => (
            String::new(),
            Table::from_iter([
                ("x-match".to_string(), Value::String("all".into())),
                ("shard".to_string(), Value::Int(k as i64)),
            ]),
        ),
        "topic" => (format!("bench.k{k}.#"), Table::new()),
        _ => (format!("bench.k{k}"), Table::new()),
    };
    Binding { source: exchange_name(source), destination_kind, destination, routing_key, arguments }
}

/// The four policies, by name (see [`large_topology`]).
fn policies() -> Vec<(String, Policy)> {
    let policy = |name: &str, pattern: &str, apply_to, priority, key: &str, value: Value| {
        let p = Policy {
            name: name.into(),
            pattern: pattern.into(),
            apply_to,
            priority,
            definition: Table::from_iter([(key.to_string(), value)]),
        };
        (p.name.clone(), p)
    };
    let mut out = vec![
        policy("bench-bytes", "^bench\\.q", ApplyTo::Queues, 0, "max-length-bytes", Value::Int(100 << 20)),
        policy("bench-expires", "^bench\\.q0", ApplyTo::Queues, 1, "expires", Value::Int(7 * 24 * 3_600_000)),
        policy("bench-overflow", "^bench\\.q1", ApplyTo::Queues, 2, "overflow", Value::String("reject-publish".into())),
        policy(
            "bench-ae",
            "^bench\\.x00",
            ApplyTo::Exchanges,
            0,
            "alternate-exchange",
            Value::String(exchange_name(2)),
        ),
    ];
    // RabbitMQ applies one policy per queue: without it, bench-bytes' key
    // would be lost on the queues the narrower policies match.
    let bytes = out[0].1.definition.clone();
    for (_, p) in out.iter_mut().filter(|(name, _)| ["bench-expires", "bench-overflow"].contains(&name.as_str())) {
        p.definition.extend(bytes.clone());
    }
    out
}

/// [`large_topology`] as a cluster-wide definitions document (pretty JSON),
/// ready for `rabbitmqctl import_definitions` or `warren plan --state`.
pub fn large_definitions(queues: usize, exchanges: usize, bindings: usize) -> String {
    export::to_text(&export::definitions(&large_topology(queues, exchanges, bindings)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ObjectKey;
    use crate::source::Locations;

    fn counts(t: &Topology) -> (usize, usize, usize, usize) {
        let v = &t.vhosts[VHOST];
        let e2e = v.bindings.iter().filter(|b| b.destination_kind == DestinationKind::Exchange).count();
        (v.queues.len(), v.exchanges.len(), v.bindings.len(), e2e)
    }

    #[test]
    fn has_exactly_the_counts_asked_for() {
        let t = large_topology(10_000, 500, 20_000);
        assert_eq!(counts(&t), (10_000, 500, 20_000, 800));
        assert_eq!(t.vhosts[VHOST].policies().len(), 4);
        assert_eq!(counts(&large_topology(0, 3, 10)), (0, 3, 10, 10));
        assert_eq!(counts(&large_topology(5, 0, 0)), (5, 0, 0, 0));
        assert_eq!(counts(&large_topology(1, 1, 30)), (1, 1, 30, 0));
    }

    #[test]
    fn is_deterministic() {
        assert_eq!(large_definitions(300, 20, 600), large_definitions(300, 20, 600));
    }

    #[test]
    fn mixes_exchange_types() {
        let t = large_topology(10, 8, 40);
        let mut kinds: Vec<&str> = t.vhosts[VHOST].exchanges.values().map(|x| x.kind.as_str()).collect();
        kinds.sort();
        kinds.dedup();
        assert_eq!(kinds, ["direct", "fanout", "headers", "topic"]);
    }

    #[test]
    fn passes_warrens_own_checks() {
        let t = large_topology(600, 40, 1_200);
        let v = &t.vhosts[VHOST];
        let mut locations = Locations::default();
        for name in v.exchanges.keys() {
            locations.named.insert(ObjectKey::Exchange { vhost: VHOST.into(), name: name.clone() });
        }
        for name in v.queues.keys() {
            locations.named.insert(ObjectKey::Queue { vhost: VHOST.into(), name: name.clone() });
        }
        let found = crate::lint::check(&t, &locations, &Default::default());
        let errors: Vec<_> = found.shown.iter().filter(|d| d.is_error()).collect();
        assert!(errors.is_empty(), "{errors:#?}");
    }

    #[test]
    fn the_document_has_every_object() {
        let doc: serde_json::Value = serde_json::from_str(&large_definitions(50, 6, 90)).unwrap();
        for (key, n) in [("queues", 50), ("exchanges", 6), ("bindings", 90), ("policies", 4)] {
            assert_eq!(doc[key].as_array().unwrap().len(), n, "{key}");
        }
        assert_eq!(doc["vhosts"], serde_json::json!([{ "name": VHOST }]));
    }
}
