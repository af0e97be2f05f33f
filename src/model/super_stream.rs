//! Super streams (RabbitMQ 3.11+): one partitioned stream that the broker
//! keeps as an exchange, its partition streams and their bindings. The
//! files declare it as one object; everything else sees the objects it
//! becomes, exactly those RabbitMQ's own `add_super_stream` makes
//! (`rabbit_stream_manager:create_super_stream`): a durable direct exchange
//! with argument `x-super-stream = true`; a durable stream per partition,
//! `NAME-0`… or `NAME-KEY`, with the stream arguments given and
//! `x-queue-leader-locator = "balanced"` unless another is given; a
//! binding from the exchange to each with the partition's key (`0`, `1`…
//! or `KEY`) and argument `x-stream-partition-order`, its place from 0.

use super::{Binding, DestinationKind, Exchange, Queue, QueueType, Table, Value, Vhost};

/// The exchange argument that marks a super stream.
pub const SUPER_STREAM_ARGUMENT: &str = "x-super-stream";
/// The binding argument that orders a super stream's partitions.
pub const PARTITION_ORDER_ARGUMENT: &str = "x-stream-partition-order";
/// The leader locator RabbitMQ gives partitions when none is asked for
/// (3.13 and later).
pub const DEFAULT_LEADER_LOCATOR: &str = "balanced";
/// The RabbitMQ version super streams came in.
pub const SUPER_STREAMS_SINCE: (u32, u32) = (3, 11);

/// How a super stream's partitions are named and routed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Partitions {
    /// `NAME-0` … `NAME-(n-1)`, routing keys `0` … `n-1`.
    Count(usize),
    /// `NAME-KEY` for each key, routed to by that key.
    Keys(Vec<String>),
}

/// One super stream: its name, partitions and the stream arguments every
/// partition has (`x-queue-type` aside).
#[derive(Debug, Clone, PartialEq)]
pub struct SuperStream {
    pub name: String,
    pub partitions: Partitions,
    pub arguments: Table,
}

/// The objects one super stream becomes.
#[derive(Debug, Clone, PartialEq)]
pub struct Expanded {
    pub exchange: Exchange,
    pub queues: Vec<Queue>,
    pub bindings: Vec<Binding>,
}

impl SuperStream {
    /// Each partition's routing key, in order.
    pub fn keys(&self) -> Vec<String> {
        match &self.partitions {
            Partitions::Count(n) => (0..*n).map(|i| i.to_string()).collect(),
            Partitions::Keys(keys) => keys.clone(),
        }
    }

    /// The partition stream a routing key leads to.
    pub fn partition(&self, key: &str) -> String {
        format!("{}-{key}", self.name)
    }

    /// The exchange, streams and bindings RabbitMQ makes for it.
    pub fn expand(&self) -> Expanded {
        let mut arguments = self.arguments.clone();
        if !arguments.contains_key("x-queue-leader-locator") {
            arguments.insert("x-queue-leader-locator".into(), Value::String(DEFAULT_LEADER_LOCATOR.into()));
        }
        let mut exchange_arguments = Table::new();
        exchange_arguments.insert(SUPER_STREAM_ARGUMENT.into(), Value::Bool(true));
        let exchange = Exchange {
            name: self.name.clone(),
            kind: "direct".into(),
            durable: true,
            auto_delete: false,
            internal: false,
            arguments: exchange_arguments,
        };
        let (mut queues, mut bindings) = (Vec::new(), Vec::new());
        for (order, key) in self.keys().into_iter().enumerate() {
            let name = self.partition(&key);
            queues.push(Queue {
                name: name.clone(),
                kind: QueueType::Stream,
                durable: true,
                auto_delete: false,
                arguments: arguments.clone(),
                replaces: None,
            });
            let mut binding_arguments = Table::new();
            binding_arguments.insert(PARTITION_ORDER_ARGUMENT.into(), Value::Int(order as i64));
            bindings.push(Binding {
                source: self.name.clone(),
                destination_kind: DestinationKind::Queue,
                destination: name,
                routing_key: key,
                arguments: binding_arguments,
            });
        }
        Expanded { exchange, queues, bindings }
    }
}

/// Whether an exchange is a super stream's.
pub fn is_super_stream_exchange(x: &Exchange) -> bool {
    matches!(x.arguments.get(SUPER_STREAM_ARGUMENT), Some(Value::Bool(true)))
}

/// The super streams of a vhost: each exchange marked as one whose
/// partitions are exactly what [`SuperStream::expand`] makes of them (and
/// nothing else is bound from it), read back into one object.
pub fn super_streams(vhost: &Vhost) -> Vec<SuperStream> {
    vhost.exchanges.values().filter(|x| is_super_stream_exchange(x)).filter_map(|x| read_back(vhost, x)).collect()
}

/// The super stream that exchange `x` is, if its objects are exactly one's.
fn read_back(vhost: &Vhost, x: &Exchange) -> Option<SuperStream> {
    let mut bound: Vec<(i64, &Binding)> = Vec::new();
    for b in vhost.bindings.iter().filter(|b| b.source == x.name) {
        bound.push((b.arguments.get(PARTITION_ORDER_ARGUMENT)?.as_int()?, b));
    }
    bound.sort_by_key(|(order, _)| *order);
    let keys: Vec<String> = bound.iter().map(|(_, b)| b.routing_key.clone()).collect();
    let first = vhost.queues.get(&bound.first()?.1.destination)?;
    let mut arguments = first.arguments.clone();
    // The default is said by leaving it out, as with RabbitMQ's tool.
    if arguments.get("x-queue-leader-locator").and_then(Value::as_str) == Some(DEFAULT_LEADER_LOCATOR) {
        arguments.remove("x-queue-leader-locator");
    }
    let counted = keys.iter().enumerate().all(|(i, k)| *k == i.to_string());
    let partitions = if counted { Partitions::Count(keys.len()) } else { Partitions::Keys(keys) };
    let ss = SuperStream { name: x.name.clone(), partitions, arguments };
    let expanded = ss.expand();
    let same = expanded.exchange == *x
        && expanded.bindings.iter().eq(bound.iter().map(|(_, b)| *b))
        && expanded.queues.iter().all(|q| vhost.queues.get(&q.name).is_some_and(|h| same_queue(h, q)));
    same.then_some(ss)
}

fn same_queue(a: &Queue, b: &Queue) -> bool {
    a.kind == b.kind && a.durable == b.durable && a.auto_delete == b.auto_delete && a.arguments == b.arguments
}

/// The super stream of each queue of `vhost` that one made (a stream
/// bound from a super stream's exchange, the mark RabbitMQ gives it), by
/// queue name: worked out once for a whole vhost, where a plan of 10,000
/// queues once searched every binding for each queue.
pub fn partitions_of(vhost: &Vhost) -> std::collections::HashMap<&str, &str> {
    let mut out = std::collections::HashMap::new();
    if !vhost.exchanges.values().any(is_super_stream_exchange) {
        return out;
    }
    for b in vhost.bindings.iter().filter(|b| b.destination_kind == DestinationKind::Queue) {
        if let Some(x) = vhost.exchanges.get(&b.source).filter(|x| is_super_stream_exchange(x)) {
            // The first in the bindings' order: a queue bound from two is
            // no partition RabbitMQ made, and either name says so.
            out.entry(b.destination.as_str()).or_insert(x.name.as_str());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vhost_of(ss: &SuperStream) -> Vhost {
        let e = ss.expand();
        let mut v = Vhost::new("v");
        v.exchanges.insert(e.exchange.name.clone(), e.exchange);
        for q in e.queues {
            v.queues.insert(q.name.clone(), q);
        }
        v.bindings.extend(e.bindings);
        v
    }

    #[test]
    fn expands_as_rabbitmq_does_and_reads_back() {
        let ss = SuperStream { name: "orders".into(), partitions: Partitions::Count(3), arguments: Table::new() };
        let e = ss.expand();
        assert_eq!(e.exchange.kind, "direct");
        assert!(is_super_stream_exchange(&e.exchange));
        let names: Vec<_> = e.queues.iter().map(|q| q.name.as_str()).collect();
        assert_eq!(names, ["orders-0", "orders-1", "orders-2"]);
        assert_eq!(e.queues[0].arguments.get("x-queue-leader-locator").and_then(Value::as_str), Some("balanced"));
        assert_eq!(e.bindings[2].routing_key, "2");
        assert_eq!(e.bindings[2].arguments.get(PARTITION_ORDER_ARGUMENT).and_then(Value::as_int), Some(2));
        let v = vhost_of(&ss);
        assert_eq!(super_streams(&v), vec![ss]);
        let keyed = SuperStream {
            name: "s".into(),
            partitions: Partitions::Keys(vec!["us".into(), "eu".into()]),
            arguments: [("x-max-age".to_string(), Value::String("7D".into()))].into_iter().collect(),
        };
        let v = vhost_of(&keyed);
        assert_eq!(super_streams(&v), vec![keyed]);
        assert_eq!(partitions_of(&v).get("s-eu"), Some(&"s"));
    }

    #[test]
    fn an_exchange_with_more_bound_than_partitions_is_no_super_stream() {
        let ss = SuperStream { name: "o".into(), partitions: Partitions::Count(2), arguments: Table::new() };
        let mut v = vhost_of(&ss);
        v.bindings.insert(Binding {
            source: "o".into(),
            destination_kind: DestinationKind::Queue,
            destination: "o-0".into(),
            routing_key: "extra".into(),
            arguments: Table::new(),
        });
        assert!(super_streams(&v).is_empty());
    }
}
