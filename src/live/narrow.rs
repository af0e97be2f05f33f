//! A plan's reads grow with the project, not the broker: a declared vhost
//! much larger than what the project declares, owns and references is read
//! by name ([`Broker::read_named`]) rather than whole, and marked as
//! partly read ([`crate::model::Unread`]), so that what the read leaves
//! out is never taken for gone.
//!
//! What is read by name: the objects the files declare and reference
//! (binding ends, `replaces`, `[moved]`, `[external]`, alternate and
//! dead-letter exchanges of declared objects and policies), the objects
//! the project's inventory lists, every binding to or from those, and the
//! objects at the other ends of those bindings. Policies, operator
//! policies, runtime parameters, users and permissions are read whole:
//! they are few, and policies decide what applies to the project's queues.
//!
//! Which way is taken follows the broker's size as its overview counts it
//! (a vhost's own count would cost the broker a listing of all its queues,
//! about as much as the whole read), measured against what a read by name
//! costs (docs/development.md, "Reads that grow with the project").

use crate::broker::{Answers, Broker, BrokerError, Size, Wanted};
use crate::model::{DestinationKind, Inventory, ObjectKey, Topology, Unread, Value, Vhost};

use super::Live;

/// Below this many queues and exchanges a vhost is read whole: one
/// request, cheaper than the two rounds of a read by name.
pub const NARROW_FROM: u64 = 2_000;

/// A vhost is read by name only when it holds at least this many times as
/// many queues and exchanges as the names asked: a name costs two to three
/// requests, an object of a whole read a share of one.
pub const NARROW_RATIO: u64 = 20;

/// The hidden switch of tests: `WARREN_TEST_NARROW_FROM=N` reads by name
/// every vhost of at least N queues and exchanges, whatever the project's
/// size (`0`: always; a large N: never).
const NARROW_FROM_VARIABLE: &str = "WARREN_TEST_NARROW_FROM";

/// How each declared vhost was read, and why, for `-v`.
pub type Reasons = Vec<String>;

/// The live state of the vhosts the files declare (`desired`), each read
/// whole or by name for `project` (`None`: each whole), with the reasons.
pub async fn from_broker(
    broker: &impl Broker,
    desired: &Topology,
    project: Option<&str>,
) -> Result<(Live, Reasons), BrokerError> {
    let declared: Vec<String> = desired.vhosts.keys().cloned().collect();
    let Some(project) = project else {
        return all_whole(broker, &declared, ", as this command reads").await;
    };
    let forced = std::env::var(NARROW_FROM_VARIABLE).ok().and_then(|v| v.parse::<u64>().ok());
    let floor = forced.unwrap_or(NARROW_FROM);
    let Some(totals) = broker.object_totals().await? else {
        return all_whole(broker, &declared, ": the broker does not say its size").await;
    };
    if let Some(why) = small(totals, floor) {
        return all_whole(broker, &declared, &format!(": {why}")).await;
    }
    // Unless a test forces reads by name, a vhost where the project
    // declares a twentieth of the broker's objects or more is read whole
    // straight away: no owned name could make it a read by name.
    let (mut reasons, large) = declares_most(desired, &declared, Some(totals).filter(|_| forced.is_none()));
    if large.is_empty() {
        return super::from_broker(broker, &declared).await.map(|l| (l, reasons));
    }
    // Round one: the records, to know what the project owns.
    let nothing = Wanted::default();
    let (base, named) = tokio::join!(
        broker.answers_of(&[]),
        futures_util::future::try_join_all(large.iter().map(|v| broker.read_named(v, &nothing))),
    );
    let (base, named) = (base?, named?);
    let mut first = base.clone();
    for (v, n) in large.iter().zip(named) {
        add_named(&mut first, v, n, Size::default());
    }
    let origin = broker.origin();
    let records = super::from_answers(first, &origin)?;
    let existing = crate::broker::vhost_names(&base.vhosts)?;
    let (present, missing): (Vec<String>, Vec<String>) = large.into_iter().partition(|v| existing.contains(v));
    reasons.extend(missing.iter().map(|v| format!("vhost \"{v}\": does not exist (or this user cannot see it)")));
    let (chosen, by_name) = choose(desired, &present, &records, project, totals, forced.is_some());
    reasons.extend(chosen);
    let whole: Vec<String> = declared.iter().filter(|v| !by_name.iter().any(|(n, _)| n == *v)).cloned().collect();
    // Round two: the vhosts read whole (with the users, permissions and
    // records again, when there are any), and the others by name.
    let (answers, named) = tokio::join!(
        async { if whole.is_empty() { Ok(base) } else { broker.answers_of(&whole).await } },
        futures_util::future::try_join_all(by_name.iter().map(|(v, w)| broker.read_named(v, w))),
    );
    let mut answers = answers?;
    for ((v, _), n) in by_name.iter().zip(named?) {
        add_named(&mut answers, v, n, totals);
    }
    let live = super::from_answers(answers, &origin)?;
    Ok((live, reasons))
}

/// Every vhost of `declared` read whole, each for the same reason, `why`
/// after "read whole".
async fn all_whole(broker: &impl Broker, declared: &[String], why: &str) -> Result<(Live, Reasons), BrokerError> {
    let reasons = declared.iter().map(|v| format!("vhost \"{v}\": read whole{why}")).collect();
    super::from_broker(broker, declared).await.map(|l| (l, reasons))
}

/// Which of the `large` vhosts are read by name, with what to ask there,
/// and why each is read as it is. `records` tell what the project owns and
/// which migrations are in flight; `forced`: a test's switch, whatever the
/// ratio.
fn choose(
    desired: &Topology,
    large: &[String],
    records: &Live,
    project: &str,
    totals: Size,
    forced: bool,
) -> (Reasons, Vec<(String, Wanted)>) {
    let inventory = records.ownership.of(project);
    let (mut reasons, mut by_name) = (Vec::new(), Vec::new());
    let why = format!("the broker holds {} queues and {} exchanges in all", totals.queues, totals.exchanges);
    for v in large {
        let wanted = wanted(desired.vhosts.get(v), inventory, v);
        let in_flight = records.migrations.values().any(|m| &m.vhost == v);
        let asked = wanted.len() as u64;
        if in_flight {
            reasons.push(format!("vhost \"{v}\": read whole: a migration is in flight there"));
        } else if !forced && totals.total() < NARROW_RATIO * asked.max(1) {
            reasons.push(format!(
                "vhost \"{v}\": read whole: {why}, fewer than {NARROW_RATIO} times the {asked} names the project would read"
            ));
        } else {
            reasons.push(format!(
                "vhost \"{v}\": read by name: {why}; the project declares, owns or references {} queues, {} exchanges and {} other bindings",
                wanted.queues.len(),
                wanted.exchanges.len(),
                wanted.pairs.len()
            ));
            by_name.push((v.clone(), wanted));
        }
    }
    (reasons, by_name)
}

/// Why every vhost is read whole, when the broker's `totals`, which bound
/// every vhost's, are below `floor`: a plan of a small broker then asks
/// nothing more than a whole read.
fn small(totals: Size, floor: u64) -> Option<String> {
    (totals.total() < floor).then(|| {
        format!(
            "the broker holds {} queues and {} exchanges in all, fewer than {floor}",
            totals.queues, totals.exchanges
        )
    })
}

/// Splits `declared` into the vhosts read whole because the names the
/// files alone ask there (owned ones only add to them) are at least a
/// [`NARROW_RATIO`]th of the broker's `totals`, which bound the vhost's
/// size, with why; and the vhosts that may be read by name (all, without
/// `totals`).
fn declares_most(desired: &Topology, declared: &[String], totals: Option<Size>) -> (Reasons, Vec<String>) {
    let mut reasons = Vec::new();
    let Some(totals) = totals else { return (reasons, declared.to_vec()) };
    let mut rest = Vec::new();
    for v in declared {
        let asked = wanted(desired.vhosts.get(v), &Inventory::default(), v).len() as u64;
        if totals.total() < NARROW_RATIO * asked.max(1) {
            reasons.push(format!(
                "vhost \"{v}\": read whole: the project declares or references {asked} names there, and the broker holds {} queues and {} exchanges in all, fewer than {NARROW_RATIO} times as many",
                totals.queues, totals.exchanges
            ));
        } else {
            rest.push(v.clone());
        }
    }
    (reasons, rest)
}

/// Adds a vhost read by name to `answers`; `bound` bounds the whole
/// vhost's size (the broker's totals).
fn add_named(answers: &mut Answers, v: &str, named: crate::broker::Named, bound: Size) {
    let unread = Size {
        queues: bound.queues.saturating_sub(named.read.queues),
        exchanges: bound.exchanges.saturating_sub(named.read.exchanges),
    };
    answers.listings.extend(named.listings.into_iter().map(|(l, text)| (v.to_string(), l, text)));
    answers.vhost_parameters.extend(named.parameters.map(|p| (v.to_string(), p)));
    answers.unread.push((v.to_string(), unread));
}

/// Marks the vhosts read by name with what was left unread.
pub(super) fn mark(topology: &mut Topology, unread: &[(String, Size)]) {
    for (v, size) in unread {
        let vhost = topology.vhosts.entry(v.clone()).or_insert_with(|| Vhost::new(v));
        vhost.unread = Some(Unread { queues_at_most: size.queues, exchanges_at_most: size.exchanges });
    }
}

/// What a read by name of vhost `v` asks for: what the files declare and
/// reference there (`want`), and what `inventory` says the project owns.
pub fn wanted(want: Option<&Vhost>, inventory: &Inventory, v: &str) -> Wanted {
    let mut w = Wanted::default();
    if let Some(want) = want {
        declared(want, &mut w);
    }
    let mut bindings = Vec::new();
    for key in &inventory.objects {
        match key {
            ObjectKey::Queue { vhost, name } if vhost == v => {
                w.queues.insert(name.clone());
            }
            ObjectKey::Exchange { vhost, name } if vhost == v => {
                w.exchanges.insert(name.clone());
            }
            ObjectKey::Binding { vhost, binding } if vhost == v => bindings.push(binding),
            _ => {}
        }
    }
    // A binding between objects read above comes with their bindings.
    for b in bindings {
        let to_exchange = b.destination_kind == DestinationKind::Exchange;
        let destination_read = match to_exchange {
            true => w.exchanges.contains(&b.destination),
            false => w.queues.contains(&b.destination),
        };
        if !w.exchanges.contains(&b.source) && !destination_read {
            w.pairs.insert((b.source.clone(), to_exchange, b.destination.clone()));
        }
    }
    let builtin = |x: &String| x.is_empty() || x.starts_with("amq.");
    w.exchanges.retain(|x| !builtin(x));
    let (queues, exchanges) = (&w.queues, &w.exchanges);
    w.referenced_queues.retain(|q| !queues.contains(q));
    w.referenced_exchanges.retain(|x| !builtin(x) && !exchanges.contains(x));
    w
}

/// The names a vhost of the files declares or references.
fn declared(want: &Vhost, w: &mut Wanted) {
    let named_exchange = |args: &crate::model::Table, key: &str| match args.get(key) {
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    };
    // Declared (and replaced, and renamed) objects come with their
    // bindings; what they only reference comes alone.
    for (name, q) in &want.queues {
        w.queues.insert(name.clone());
        w.queues.extend(q.replaces.clone());
        w.referenced_exchanges.extend(named_exchange(&q.arguments, "x-dead-letter-exchange"));
    }
    for (name, x) in &want.exchanges {
        w.exchanges.insert(name.clone());
        w.referenced_exchanges.extend(named_exchange(&x.arguments, "alternate-exchange"));
    }
    for p in want.policies() {
        w.referenced_exchanges.extend(named_exchange(&p.definition, "dead-letter-exchange"));
        w.referenced_exchanges.extend(named_exchange(&p.definition, "alternate-exchange"));
    }
    for b in &want.bindings {
        w.referenced_exchanges.insert(b.source.clone());
        match b.destination_kind {
            DestinationKind::Queue => w.referenced_queues.insert(b.destination.clone()),
            DestinationKind::Exchange => w.referenced_exchanges.insert(b.destination.clone()),
        };
    }
    for (old, new) in &want.moved {
        w.exchanges.insert(old.clone());
        w.exchanges.insert(new.clone());
    }
    w.referenced_exchanges.extend(want.external.exchanges.iter().cloned());
    w.referenced_queues.extend(want.external.queues.iter().cloned());
}

/// The names of `wanted` as one set per kind, for tests.
#[cfg(test)]
fn names(w: &Wanted) -> (std::collections::BTreeSet<&str>, std::collections::BTreeSet<&str>) {
    (w.queues.iter().map(String::as_str).collect(), w.exchanges.iter().map(String::as_str).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Binding, Queue, QueueType};

    fn queue(name: &str) -> Queue {
        Queue {
            name: name.into(),
            kind: QueueType::Classic,
            durable: true,
            auto_delete: false,
            arguments: Default::default(),
            replaces: None,
        }
    }

    fn binding(source: &str, queue: &str) -> Binding {
        Binding {
            source: source.into(),
            destination_kind: DestinationKind::Queue,
            destination: queue.into(),
            routing_key: "k".into(),
            arguments: Default::default(),
        }
    }

    #[test]
    fn a_vhost_the_project_declares_a_twentieth_of_the_broker_in_is_read_whole_uncounted() {
        let mut desired = Topology::default();
        let mut big = Vhost::new("big");
        big.queues.extend((0..100).map(|i| (format!("q{i}"), queue(&format!("q{i}")))));
        desired.vhosts.insert("big".into(), big);
        desired.vhosts.insert("small".into(), Vhost::new("small"));
        let vhosts = ["big".to_string(), "small".to_string()];
        let totals = |n| Size { queues: n, exchanges: 0 };
        let (reasons, counted) = declares_most(&desired, &vhosts, Some(totals(1_999)));
        assert_eq!(counted, ["small"], "one name asked at least: 20 of 1,999 is not enough");
        assert!(reasons[0].contains("declares or references 100 names"), "{reasons:?}");
        let (reasons, counted) = declares_most(&desired, &vhosts, Some(totals(2_000)));
        assert_eq!((reasons.len(), counted.len()), (0, 2), "at 20 times the names, the vhost is counted");
    }

    #[test]
    fn declared_referenced_and_owned_names_are_asked() {
        let mut want = Vhost::new("v");
        let mut q = queue("orders");
        q.arguments.insert("x-dead-letter-exchange".into(), Value::String("dlx".into()));
        q.replaces = Some("orders.old".into());
        want.queues.insert("orders".into(), q);
        want.bindings.insert(binding("theirs", "orders"));
        want.bindings.insert(binding("amq.topic", "orders"));
        let mut inventory = Inventory::default();
        let key = |name: &str| ObjectKey::Queue { vhost: "v".into(), name: name.into() };
        inventory.objects.insert(key("gone"));
        inventory.objects.insert(ObjectKey::Queue { vhost: "elsewhere".into(), name: "no".into() });
        let far = binding("a", "b");
        inventory.objects.insert(ObjectKey::Binding { vhost: "v".into(), binding: far });
        inventory.objects.insert(ObjectKey::Binding { vhost: "v".into(), binding: binding("x", "gone") });
        let w = wanted(Some(&want), &inventory, "v");
        let (queues, exchanges) = names(&w);
        assert_eq!(queues, ["gone", "orders", "orders.old"].into(), "with their bindings");
        assert!(exchanges.is_empty(), "{exchanges:?}");
        let alone: std::collections::BTreeSet<&str> = w.referenced_exchanges.iter().map(String::as_str).collect();
        assert_eq!(alone, ["dlx", "theirs"].into(), "referenced only, read alone; amq.* are the broker's own");
        assert!(w.referenced_queues.is_empty(), "orders is read with its bindings already");
        assert_eq!(w.pairs, [("a".to_string(), false, "b".to_string())].into(), "only the binding no read reaches");
    }
}
