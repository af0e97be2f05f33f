//! proptest strategies for arbitrary valid [`Topology`] values: what the
//! files may declare and the broker accepts.
//!
//! Meant for the properties the planner must keep: "plan(x, x) is empty",
//! and, against the test broker, "export then import then plan is empty"
//! (use [`topology_3_10`] there: it keeps to what RabbitMQ 3.10.8 accepts).
//! Today `tests/properties.rs` checks the export's shape with them.
//!
//! Names come from a small alphabet with dots (`a`, `b.a`, `a..b`), so that
//! generated topologies hit TOML key quoting, URL encoding of names and
//! regex escaping, and often reuse a name across kinds of object.

use std::collections::{BTreeMap, BTreeSet};

use proptest::collection::{btree_set, vec};
use proptest::option;
use proptest::prelude::*;
use proptest::sample::{Index, select, subsequence};
use warren::model::{
    ApplyTo, Binding, DestinationKind, Exchange, Expect, POLICY_KEYS, Password, Permission, Policy, QUEUE_ARGUMENTS,
    Queue, QueueType, Table, Topology, User, Value, Vhost, VhostSettings,
};
use warren::password::{SHA256, hash_with_salt};

/// Which broker the topology must be acceptable to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Profile {
    /// Everything warren's model accepts (RabbitMQ 3.13 and 4.x).
    Model,
    /// Only what RabbitMQ 3.10.8 accepts, checked on the test broker:
    /// `apply-to` only `all`, `queues` or `exchanges`; no policy keys
    /// `stream-filter-size-bytes`, `target-group-size`, `consumer-timeout`;
    /// no operator policy keys `overflow`, `queue-version`; `delivery-limit`
    /// at least 0.
    Rabbit310,
}

/// Any valid topology.
pub(crate) fn topology() -> impl Strategy<Value = Topology> {
    topology_for(Profile::Model)
}

/// A valid topology that the 3.10.8 test broker imports.
pub(crate) fn topology_3_10() -> impl Strategy<Value = Topology> {
    topology_for(Profile::Rabbit310)
}

/// Users first (they are cluster-wide), then one to three vhosts whose
/// permissions name only those users.
pub(crate) fn topology_for(profile: Profile) -> impl Strategy<Value = Topology> {
    vec(user(), 0..4)
        .prop_map(|users| users.into_iter().map(|u| (u.name.clone(), u)).collect::<BTreeMap<_, _>>())
        .prop_flat_map(move |users| {
            let names: Vec<String> = users.keys().cloned().collect();
            let vhosts = btree_set(vhost_name(), 1..=3).prop_flat_map(move |vnames| {
                vnames.into_iter().map(|n| vhost(n, names.clone(), profile)).collect::<Vec<_>>()
            });
            (Just(users), vhosts)
        })
        .prop_map(|(users, vhosts)| {
            let mut t = Topology {
                objects: Default::default(),
                removed: Default::default(),
                vhosts: vhosts.into_iter().map(|v| (v.name.clone(), v)).collect(),
            };
            for u in users.values() {
                t.set_user(u);
            }
            t
        })
}

/// An object name: `a`, `b.a`, `a..b`; never `amq.` and never empty.
pub(crate) fn name() -> impl Strategy<Value = String> {
    "[ab][ab.]{0,3}"
}

/// A vhost name, `/` included.
pub(crate) fn vhost_name() -> impl Strategy<Value = String> {
    prop_oneof![Just("/".to_string()), "[ab][ab./]{0,2}"]
}

fn user() -> impl Strategy<Value = User> {
    let tags = subsequence(vec!["administrator", "management", "monitoring"], 0..=2);
    // Limits of at least 1: a plan that converges never sets up a
    // connection limit of 0 that would stop the test's own user.
    let limits = subsequence(vec!["max-connections", "max-channels"], 1..=2)
        .prop_flat_map(|keys| {
            let n = keys.len();
            (Just(keys), vec(prop_oneof![Just(-1i64), 1i64..1_000], n))
        })
        .prop_map(|(keys, values)| keys.into_iter().map(String::from).zip(values).collect::<BTreeMap<_, _>>());
    (name(), password(), tags, option::of(limits)).prop_map(|(name, password, tags, limits)| User {
        name,
        password,
        tags: tags.into_iter().map(String::from).collect(),
        limits,
    })
}

/// No password, or a real SHA-256 hash (import decodes it), with the
/// algorithm named or left to the default.
fn password() -> impl Strategy<Value = Password> {
    prop_oneof![
        Just(Password::None),
        (any::<[u8; 4]>(), "[a-z0-9]{1,12}", any::<bool>()).prop_map(|(salt, pw, named)| {
            Password::Hash { hash: hash_with_salt(&pw, salt), algorithm: named.then(|| SHA256.to_string()) }
        }),
    ]
}

fn settings() -> impl Strategy<Value = VhostSettings> {
    let limits = subsequence(vec!["max-queues", "max-connections"], 0..=2)
        .prop_flat_map(|keys| {
            let n = keys.len();
            (Just(keys), vec(100i64..10_000, n))
        })
        .prop_map(|(keys, values)| keys.into_iter().map(String::from).zip(values).collect::<BTreeMap<_, _>>());
    let tags = subsequence(vec!["orders", "team-a", "critical"], 1..=2)
        .prop_map(|t| t.into_iter().map(String::from).collect::<BTreeSet<_>>());
    (option::of("[a-z][a-z ]{0,11}"), option::of(select(QueueType::ALL.to_vec())), option::of(limits), option::of(tags))
        .prop_map(|(description, default_queue_type, limits, tags)| VhostSettings {
            description,
            default_queue_type,
            limits,
            tags,
            protected_from_deletion: None,
        })
}

/// A binding before its ends are chosen among the vhost's objects.
#[derive(Debug, Clone)]
struct BindingSeed {
    source: Index,
    to_queue: bool,
    destination: Index,
    routing_key: String,
    x_match_all: bool,
    header: i64,
}

fn binding_seed() -> impl Strategy<Value = BindingSeed> {
    (any::<Index>(), any::<bool>(), any::<Index>(), "[ab.*#]{0,4}", any::<bool>(), 0i64..3).prop_map(
        |(source, to_queue, destination, routing_key, x_match_all, header)| BindingSeed {
            source,
            to_queue,
            destination,
            routing_key,
            x_match_all,
            header,
        },
    )
}

fn vhost(name: String, users: Vec<String>, profile: Profile) -> impl Strategy<Value = Vhost> {
    let n_users = users.len();
    (
        settings(),
        vec(exchange(), 0..6),
        vec(queue(), 0..6),
        vec(binding_seed(), 0..8),
        vec(policy(profile, false), 0..3),
        vec(policy(profile, true), 0..2),
        vec(option::of(permission_regexes()), n_users),
    )
        .prop_map(move |(settings, exchanges, queues, seeds, policies, operator, perms)| {
            let mut v = Vhost::new(&name);
            v.settings = settings;
            v.exchanges = exchanges.into_iter().map(|x| (x.name.clone(), x)).collect();
            v.queues = queues.into_iter().map(|q| (q.name.clone(), q)).collect();
            v.bindings = bindings(&v, seeds);
            v.objects = warren::model::kinds::policies::objects(&policies);
            v.objects.extend(warren::model::kinds::operator_policies::objects(&operator));
            for (user, p) in users.iter().zip(perms) {
                if let Some((configure, write, read)) = p {
                    v.set_permission(&Permission { user: user.clone(), configure, write, read });
                }
            }
            v
        })
}

/// Binds declared exchanges to declared queues or other exchanges; headers
/// exchanges get `x-match` arguments. No `~` in keys (the lint refuses it
/// with arguments) and no exchange bound to itself.
fn bindings(v: &Vhost, seeds: Vec<BindingSeed>) -> BTreeSet<Binding> {
    let exchanges: Vec<&Exchange> = v.exchanges.values().collect();
    let queues: Vec<&String> = v.queues.keys().collect();
    let mut out = BTreeSet::new();
    if exchanges.is_empty() {
        return out;
    }
    for s in seeds {
        let source = s.source.get(&exchanges);
        let (destination_kind, destination) = if s.to_queue && !queues.is_empty() {
            (DestinationKind::Queue, s.destination.get(&queues).to_string())
        } else {
            let d = s.destination.get(&exchanges);
            if d.name == source.name {
                continue;
            }
            (DestinationKind::Exchange, d.name.clone())
        };
        let arguments = if source.kind == "headers" {
            let x_match = if s.x_match_all { "all" } else { "any" };
            Table::from_iter([
                ("x-match".to_string(), Value::String(x_match.into())),
                ("a".to_string(), Value::Int(s.header)),
            ])
        } else {
            Table::new()
        };
        out.insert(Binding {
            source: source.name.clone(),
            destination_kind,
            destination,
            routing_key: s.routing_key,
            arguments,
        });
    }
    out
}

fn exchange() -> impl Strategy<Value = Exchange> {
    (
        name(),
        select(vec!["direct", "fanout", "topic", "headers"]),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        option::of(name()),
    )
        .prop_map(|(name, kind, durable, auto_delete, internal, ae)| Exchange {
            name,
            kind: kind.into(),
            durable,
            auto_delete,
            internal,
            arguments: ae
                .map(|ae| Table::from_iter([("alternate-exchange".to_string(), Value::String(ae))]))
                .unwrap_or_default(),
        })
}

/// A queue of any type; replicated types are durable and not auto-delete,
/// every argument is one its type knows, with a value it accepts, and a
/// dead-letter routing key comes with a dead-letter exchange.
fn queue() -> impl Strategy<Value = Queue> {
    (name(), select(QueueType::ALL.to_vec()))
        .prop_flat_map(|(name, kind)| {
            let flags =
                if kind.is_replicated() { Just((true, false)).boxed() } else { (any::<bool>(), any::<bool>()).boxed() };
            (Just(name), Just(kind), flags, arguments(kind))
        })
        .prop_map(|(name, kind, (durable, auto_delete), mut arguments)| {
            // The broker refuses a dead-letter routing key without an
            // exchange (routing_key_but_no_dlx_defined).
            if arguments.contains_key("x-dead-letter-routing-key") {
                arguments.entry("x-dead-letter-exchange".into()).or_insert_with(|| Value::String("a".into()));
            }
            Queue { name, kind, durable, auto_delete, arguments, replaces: None }
        })
}

fn arguments(kind: QueueType) -> impl Strategy<Value = Table> {
    QUEUE_ARGUMENTS
        .iter()
        .filter(|r| r.types.contains(&kind))
        .map(|r| option::weighted(0.25, setting(r.name, r.expect, Profile::Model)).prop_map(|v| v.map(|v| (r.name, v))))
        .collect::<Vec<_>>()
        .prop_map(|pairs| pairs.into_iter().flatten().map(|(k, v)| (k.to_string(), v)).collect())
}

/// A value for a queue argument or policy key: what its shape allows, but
/// queues expire after an hour at the earliest (one that expires in a few
/// milliseconds is gone before a test can look at it), and 3.10 refuses the
/// `delivery-limit` policy value -1 (its 4.x "unlimited").
fn setting(name: &str, expect: Expect, profile: Profile) -> BoxedStrategy<Value> {
    match name {
        "x-expires" | "expires" => (3_600_000i64..=86_400_000).prop_map(Value::Int).boxed(),
        "delivery-limit" if profile == Profile::Rabbit310 => (0i64..=1000).prop_map(Value::Int).boxed(),
        _ => value(expect),
    }
}

/// A value the broker accepts for a setting of this shape. Integers stay
/// near the lower bound, where the interesting limits are.
fn value(expect: Expect) -> BoxedStrategy<Value> {
    match expect {
        Expect::Int(lo, hi) => (lo..=hi.min(lo.saturating_add(1_000_000))).prop_map(Value::Int).boxed(),
        Expect::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        Expect::Str => name().prop_map(Value::String).boxed(),
        Expect::OneOf(v) => select(v.to_vec()).prop_map(|s| Value::String(s.into())).boxed(),
        Expect::IntOneOf(v) => select(v.to_vec()).prop_map(Value::Int).boxed(),
        Expect::Age => (1u32..1000, select(vec!['Y', 'M', 'D', 'h', 'm', 's']))
            .prop_map(|(n, unit)| Value::String(format!("{n}{unit}")))
            .boxed(),
    }
}

/// Policy keys RabbitMQ 3.10.8 rejects (and operator policy keys).
const NOT_ON_3_10: &[&str] = &["stream-filter-size-bytes", "target-group-size", "consumer-timeout"];
const NOT_OPERATOR_ON_3_10: &[&str] = &["overflow", "queue-version"];

/// The policy keys a policy applying to `apply_to` may set: ones that act
/// on those objects, never classic mirroring nor federation (a plugin).
fn policy_keys(profile: Profile, apply_to: ApplyTo, operator: bool) -> Vec<&'static str> {
    POLICY_KEYS
        .iter()
        .filter(|k| !k.mirroring && !k.name.starts_with("federation-"))
        .filter(|k| !operator || k.operator)
        .filter(|k| {
            profile == Profile::Model
                || !(NOT_ON_3_10.contains(&k.name) || operator && NOT_OPERATOR_ON_3_10.contains(&k.name))
        })
        .filter(|k| match apply_to {
            ApplyTo::All => true,
            ApplyTo::Exchanges => k.exchanges,
            _ => QueueType::ALL.iter().any(|t| apply_to.matches_queue(*t) && k.queue_types.contains(t)),
        })
        .map(|k| k.name)
        .collect()
}

fn policy_value(key: &'static str, profile: Profile) -> BoxedStrategy<Value> {
    match QUEUE_ARGUMENTS.iter().find(|r| r.policy_key == Some(key)) {
        Some(rule) => setting(key, rule.expect, profile),
        None if key == "alternate-exchange" => name().prop_map(Value::String).boxed(),
        None => (1i64..7).prop_map(Value::Int).boxed(),
    }
}

fn policy(profile: Profile, operator: bool) -> impl Strategy<Value = Policy> {
    let apply_to = match (profile, operator) {
        (_, true) => vec![ApplyTo::Queues],
        (Profile::Rabbit310, false) => vec![ApplyTo::All, ApplyTo::Queues, ApplyTo::Exchanges],
        (Profile::Model, false) => ApplyTo::ALL.to_vec(),
    };
    let patterns = vec!["^a", "^a\\.b", ".*", "^(a|b)\\.", "b$"];
    (name(), select(apply_to), select(patterns), 0i64..5)
        .prop_flat_map(move |(name, apply_to, pattern, priority)| {
            let keys = policy_keys(profile, apply_to, operator);
            let definition = subsequence(keys.clone(), 1..=keys.len().min(3))
                .prop_flat_map(move |keys| {
                    keys.into_iter()
                        .map(|k| policy_value(k, profile).prop_map(move |v| (k.to_string(), v)))
                        .collect::<Vec<_>>()
                })
                .prop_map(|pairs| pairs.into_iter().collect::<Table>());
            (Just(name), Just(apply_to), Just(pattern.to_string()), Just(priority), definition)
        })
        .prop_map(|(name, apply_to, pattern, priority, definition)| Policy {
            name,
            pattern,
            apply_to,
            priority,
            definition,
        })
}

fn permission_regexes() -> impl Strategy<Value = (String, String, String)> {
    let re = || select(vec!["^$", ".*", "^a\\.", "^(a|b)$"]).prop_map(String::from);
    (re(), re(), re())
}
