//! The shapes an import proposes (issue 32, docs/shapes.md): queues that
//! each come with the same objects named after them (a dead-letter
//! exchange `NAME.dlx` and queue `NAME.dead` bound together, a retry
//! exchange with its delay queues) are written once as a shape and stamped
//! for each of them.
//!
//! What a queue's stamp holds (its family): the queue, the exchanges and
//! queues whose names are the queue's followed by `.`, `-` or `_`, and
//! every binding to those (from any exchange). Two queues stamp one shape
//! when their families are alike: the same objects once the queue's name
//! is written `${name}` in every name, argument and routing key, but for
//! the values that differ from one queue to the next (a routing key, a
//! binding's source, an argument's string or number), each of which
//! becomes a parameter; values that always go together (a queue's
//! dead-letter routing key and the keys it is bound with) are one
//! parameter. A family with nothing named after its queue is no shape.
//!
//! A proposal to review, never declared: written commented out at the end
//! of the vhost's file, as the proposed services are (`services.rs`), so
//! that the files as imported still read as the broker is.

use std::collections::{BTreeMap, BTreeSet};

use super::render;
use crate::model::{Binding, DestinationKind, Exchange, Queue, Table, Value, Vhost};
use crate::toml_text::{WIDTH, key, list_field, path, string, value};

/// The parameter every proposed shape has: the queue's name.
const NAME: &str = "name";

/// What ends a queue's name in the name of an object named after it.
const SEPARATORS: [char; 3] = ['.', '-', '_'];

/// One shape the import proposes, and the stamps that would use it.
#[derive(Debug)]
pub(super) struct Proposed {
    /// `proposed-dead-dlx`: after what its objects are named.
    pub shape: String,
    /// The parameters, `name` first.
    pub parameters: Vec<String>,
    /// Each stamp's values, in the order of `parameters`, by queue name.
    pub uses: Vec<Vec<Value>>,
    /// The objects of one stamp, with `${PARAMETER}` for its values.
    pub body: Vhost,
}

/// Queue `root`'s family, its names written with `${name}`, in an order
/// that is the same for every family alike.
#[derive(Debug, Clone)]
struct Family {
    root: String,
    exchanges: Vec<Exchange>,
    queues: Vec<Queue>,
    /// Ordered by their skeletons (`skeleton_of`), each distinct.
    bindings: Vec<Binding>,
}

/// What a value that may differ between stamps is, to name its parameter.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    Key,
    Source,
    Argument(String),
}

impl Role {
    fn parameter(&self) -> String {
        match self {
            Role::Key => "key".to_string(),
            Role::Source => "source".to_string(),
            Role::Argument(a) => a.trim_start_matches("x-").to_string(),
        }
    }
}

/// The shapes `v` has at least two uses of, the largest savings first;
/// no object is in two of them.
pub(super) fn proposed(v: &Vhost) -> Vec<Proposed> {
    let incoming = incoming(v);
    let mut alike: BTreeMap<String, Vec<Family>> = BTreeMap::new();
    for root in v.queues.keys() {
        let Some(f) = family(v, root, &incoming) else { continue };
        alike.entry(skeleton(&f)).or_default().push(f);
    }
    let mut groups: Vec<Vec<Family>> = alike.into_values().filter(|uses| uses.len() >= 2).collect();
    // The most objects written once first: a family inside a larger one
    // (`a.retry`'s inside `a`'s) gives way.
    let saved = |g: &Vec<Family>| (g[0].exchanges.len() + g[0].queues.len() + g[0].bindings.len()) * (g.len() - 1);
    groups.sort_by_key(|g| std::cmp::Reverse(saved(g)));
    let mut claimed: BTreeSet<String> = BTreeSet::new();
    let mut out: Vec<Proposed> = Vec::new();
    for group in groups {
        let free: Vec<Family> = group.into_iter().filter(|f| names(f).iter().all(|n| !claimed.contains(n))).collect();
        if free.len() < 2 {
            continue;
        }
        for f in &free {
            claimed.extend(names(f));
        }
        out.push(shape(free, &out));
    }
    out.sort_by(|a, b| a.shape.cmp(&b.shape));
    out
}

/// The exchanges and queues a family's stamp makes, as claimed.
fn names(f: &Family) -> Vec<String> {
    let real = |n: &str| n.replacen(&placeholder(NAME), &f.root, 1);
    let exchanges = f.exchanges.iter().map(|x| format!("e {}", real(&x.name)));
    exchanges.chain(f.queues.iter().map(|q| format!("q {}", real(&q.name)))).collect()
}

/// The bindings to each queue and exchange, by destination.
fn incoming(v: &Vhost) -> BTreeMap<(DestinationKind, &str), Vec<&Binding>> {
    let mut to: BTreeMap<(DestinationKind, &str), Vec<&Binding>> = BTreeMap::new();
    for b in &v.bindings {
        to.entry((b.destination_kind, b.destination.as_str())).or_default().push(b);
    }
    to
}

/// `${parameter}`.
fn placeholder(parameter: &str) -> String {
    format!("${{{parameter}}}")
}

/// Whether `name` is named after queue `root`: `root` then a separator.
fn named_after(name: &str, root: &str) -> bool {
    name.strip_prefix(root).and_then(|rest| rest.chars().next()).is_some_and(|c| SEPARATORS.contains(&c))
}

/// `s` with the queue's name `root`, where it starts it, as `${name}`.
fn abstracted(s: &str, root: &str) -> String {
    match s == root || named_after(s, root) {
        true => format!("{}{}", placeholder(NAME), &s[root.len()..]),
        false => s.to_string(),
    }
}

fn abstracted_table(t: &Table, root: &str) -> Table {
    t.iter()
        .map(|(k, v)| {
            let v = match v {
                Value::String(s) => Value::String(abstracted(s, root)),
                other => other.clone(),
            };
            (k.clone(), v)
        })
        .collect()
}

/// Queue `root` and what is named after it; `None` when nothing is, when
/// two of its bindings differ only in values that may differ between
/// stamps (their order would be a guess), or when a value already holds
/// `${` (a shape would read it as a placeholder).
fn family(v: &Vhost, root: &str, incoming: &BTreeMap<(DestinationKind, &str), Vec<&Binding>>) -> Option<Family> {
    let from_root = |name: &&String| name.starts_with(root);
    let exchanges: Vec<Exchange> = v
        .exchanges
        .range(root.to_string()..)
        .take_while(|(n, _)| from_root(n))
        .filter(|(n, _)| named_after(n, root))
        .map(|(_, x)| Exchange {
            name: abstracted(&x.name, root),
            arguments: abstracted_table(&x.arguments, root),
            ..x.clone()
        })
        .collect();
    let queues: Vec<Queue> = v
        .queues
        .range(root.to_string()..)
        .take_while(|(n, _)| from_root(n))
        .filter(|(n, _)| *n == root || named_after(n, root))
        .map(|(_, q)| Queue {
            name: abstracted(&q.name, root),
            arguments: abstracted_table(&q.arguments, root),
            ..q.clone()
        })
        .collect();
    if exchanges.is_empty() && queues.len() < 2 {
        return None;
    }
    let real = |n: &str| n.replacen(&placeholder(NAME), root, 1);
    let ends = queues
        .iter()
        .map(|q| (DestinationKind::Queue, real(&q.name)))
        .chain(exchanges.iter().map(|x| (DestinationKind::Exchange, real(&x.name))));
    let mut bindings: Vec<(String, Binding)> = ends
        .flat_map(|(kind, name)| {
            incoming.get(&(kind, name.as_str())).into_iter().flatten().copied().collect::<Vec<_>>()
        })
        .map(|b| Binding {
            source: abstracted(&b.source, root),
            destination_kind: b.destination_kind,
            destination: abstracted(&b.destination, root),
            routing_key: abstracted(&b.routing_key, root),
            arguments: abstracted_table(&b.arguments, root),
        })
        .map(|b| (skeleton_of(&b), b))
        .collect();
    bindings.sort_by(|a, b| a.0.cmp(&b.0));
    if bindings.windows(2).any(|w| w[0].0 == w[1].0) {
        return None;
    }
    let f =
        Family { root: root.to_string(), exchanges, queues, bindings: bindings.into_iter().map(|(_, b)| b).collect() };
    let mut literal = false;
    let mut f2 = f.clone();
    leaves(&mut f2, &mut |_, v| {
        literal |= matches!(v, Value::String(s) if s.replacen(&placeholder(NAME), "", 1).contains("${"))
    });
    let names = f.exchanges.iter().map(|x| &x.name).chain(f.queues.iter().map(|q| &q.name));
    let named_literal = names
        .chain(f.bindings.iter().map(|b| &b.destination))
        .any(|n| n.replacen(&placeholder(NAME), "", 1).contains("${"));
    (!literal && !named_literal).then_some(f)
}

/// Whether a value may differ between stamps: a string not named after
/// the queue, or a number.
fn varies(v: &Value) -> bool {
    match v {
        Value::String(s) => !s.contains(&placeholder(NAME)),
        Value::Int(_) | Value::Float(_) => true,
        _ => false,
    }
}

/// Visits each value of `f` that may differ between stamps, in an order
/// that is the same for every family alike.
fn leaves(f: &mut Family, visit: &mut impl FnMut(Role, &mut Value)) {
    let table = |t: &mut Table, visit: &mut dyn FnMut(Role, &mut Value)| {
        for (k, v) in t.iter_mut() {
            if varies(v) {
                visit(Role::Argument(k.clone()), v);
            }
        }
    };
    for x in &mut f.exchanges {
        table(&mut x.arguments, visit);
    }
    for q in &mut f.queues {
        table(&mut q.arguments, visit);
    }
    for b in &mut f.bindings {
        for (role, field) in [(Role::Source, &mut b.source), (Role::Key, &mut b.routing_key)] {
            let mut v = Value::String(std::mem::take(field));
            if varies(&v) {
                visit(role, &mut v);
            }
            if let Value::String(s) = v {
                *field = s;
            }
        }
        table(&mut b.arguments, visit);
    }
}

/// A binding with its values that may differ between stamps as `?`.
fn skeleton_of(b: &Binding) -> String {
    let hole = |s: &str| if varies(&Value::String(s.to_string())) { "?".to_string() } else { s.to_string() };
    let arguments: Vec<String> =
        b.arguments.iter().map(|(k, v)| if varies(v) { format!("{k}=?") } else { format!("{k}={v:?}") }).collect();
    format!(
        "{}>{:?}:{}>{}[{}]",
        hole(&b.source),
        b.destination_kind,
        b.destination,
        hole(&b.routing_key),
        arguments.join(",")
    )
}

/// The family with every value that may differ between stamps as `?`:
/// alike families have the same.
fn skeleton(f: &Family) -> String {
    let mut f = f.clone();
    leaves(&mut f, &mut |_, v| *v = Value::String("?".into()));
    format!("{:?}|{:?}|{:?}", f.exchanges, f.queues, f.bindings)
}

/// The shape of alike families `uses` (two or more): each value that
/// differs between them a parameter, one for values that always go
/// together.
fn shape(uses: Vec<Family>, taken: &[Proposed]) -> Proposed {
    let values = |f: &Family| {
        let mut out: Vec<(Role, Value)> = Vec::new();
        leaves(&mut f.clone(), &mut |role, v| out.push((role, v.clone())));
        out
    };
    let each: Vec<Vec<(Role, Value)>> = uses.iter().map(values).collect();
    let column = |i: usize| -> Vec<&Value> { each.iter().map(|vs| &vs[i].1).collect() };
    // Each column of values that differ, with the best name of its roles.
    let mut columns: Vec<(Vec<&Value>, Role)> = Vec::new();
    let mut of_leaf: Vec<Option<usize>> = Vec::new();
    for (i, (role, _)) in each[0].iter().enumerate() {
        let c = column(i);
        if c.iter().all(|v| *v == c[0]) {
            of_leaf.push(None);
            continue;
        }
        match columns.iter().position(|(known, _)| *known == c) {
            Some(p) => {
                columns[p].1 = columns[p].1.clone().min(role.clone());
                of_leaf.push(Some(p));
            }
            None => {
                columns.push((c, role.clone()));
                of_leaf.push(Some(columns.len() - 1));
            }
        }
    }
    let mut parameters = vec![NAME.to_string()];
    for (_, role) in &columns {
        let base = role.parameter();
        let name =
            (1..).map(|i| if i == 1 { base.clone() } else { format!("{base}-{i}") }).find(|n| !parameters.contains(n));
        parameters.push(name.unwrap_or(base));
    }
    let mut first = uses[0].clone();
    let mut i = 0;
    leaves(&mut first, &mut |_, v| {
        if let Some(p) = of_leaf[i] {
            *v = Value::String(placeholder(&parameters[p + 1]));
        }
        i += 1;
    });
    let stamps = uses
        .iter()
        .enumerate()
        .map(|(u, f)| {
            let mut row = vec![Value::String(f.root.clone())];
            row.extend(columns.iter().map(|(c, _)| c[u].clone()));
            row
        })
        .collect();
    let mut body = Vhost::new("");
    body.exchanges = first.exchanges.into_iter().map(|x| (x.name.clone(), x)).collect();
    body.queues = first.queues.into_iter().map(|q| (q.name.clone(), q)).collect();
    body.bindings = first.bindings.into_iter().collect();
    Proposed { shape: unique(shape_name(&body), taken), parameters, uses: stamps, body }
}

/// `proposed-dead-dlx`: the first word of each name after the queue's.
fn shape_name(body: &Vhost) -> String {
    let words: BTreeSet<String> = body
        .exchanges
        .keys()
        .chain(body.queues.keys())
        .filter_map(|n| n.strip_prefix(&placeholder(NAME)))
        .filter_map(|rest| rest.get(1..)?.split(SEPARATORS).next())
        .map(|w| w.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect())
        .filter(|w: &String| !w.is_empty())
        .collect();
    let words: Vec<String> = words.into_iter().take(3).collect();
    match words.is_empty() {
        true => "proposed".to_string(),
        false => format!("proposed-{}", words.join("-")),
    }
}

/// `name`, or `name-2`, `name-3`… when a proposal has it already.
fn unique(name: String, taken: &[Proposed]) -> String {
    let free = |n: &str| !taken.iter().any(|p| p.shape == n);
    if free(&name) {
        return name;
    }
    (2..).map(|i| format!("{name}-{i}")).find(|n| free(n)).unwrap_or(name)
}

/// The proposals' lines, uncommented; none when there are none. `vhost`
/// stamps them: a queue of its default type is written without `type`.
pub(super) fn lines(proposals: &[Proposed], vhost: &Vhost) -> Vec<String> {
    if proposals.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<String> = PREFACE.lines().map(str::to_string).collect();
    for p in proposals {
        let (x, q, b) = (p.body.exchanges.len(), p.body.queues.len(), p.body.bindings.len());
        out.push(String::new());
        out.push(format!(
            "# Shape \"{}\": {} queues alike; each stamp makes {x} exchange(s), {q} queue(s) and {b} binding(s).",
            p.shape,
            p.uses.len()
        ));
        out.push(format!("[{}]", path(&["shapes", &p.shape])));
        out.push(list_field("parameters", &p.parameters.iter().map(|n| string(n)).collect::<Vec<_>>()));
        out.push(String::new());
        out.extend(render::shape_body(&p.shape, &p.body, vhost).lines().map(str::to_string));
        out.push(String::new());
        out.push("[[stamps]]".to_string());
        out.push(format!("shape = {}", string(&p.shape)));
        out.extend(for_each(p).lines().map(str::to_string));
    }
    out
}

/// `for_each = { name = [...] }` for a shape of one parameter, else one
/// inline table per stamp.
fn for_each(p: &Proposed) -> String {
    if p.parameters.len() == 1 {
        let uses: Vec<String> = p.uses.iter().filter_map(|row| value(&row[0])).collect();
        return format!("for_each = {{ {} }}", list_field(&key(NAME), &uses));
    }
    let rows: Vec<String> = p
        .uses
        .iter()
        .map(|row| {
            let fields: Vec<String> =
                p.parameters.iter().zip(row).filter_map(|(n, v)| Some(format!("{} = {}", key(n), value(v)?))).collect();
            format!("{{ {} }}", fields.join(", "))
        })
        .collect();
    let one_line = format!("for_each = [{}]", rows.join(", "));
    match one_line.len() <= WIDTH {
        true => one_line,
        false => format!("for_each = [\n{}]", rows.iter().map(|r| format!("    {r},\n")).collect::<String>()),
    }
}

const PREFACE: &str = "\
Proposed shapes (`warren import`, docs/shapes.md): queues that each come
with the same objects, named after them, written once as a shape and
stamped for each queue. A proposal, commented out so that nothing
changes: to use one, uncomment it and remove from the files above what
its stamps make (each queue, the exchanges and queues named after it,
and the bindings to them); `warren plan` then shows no change.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::QueueType;

    use crate::testing::objects::{exchange, to_queue as binding};

    /// A quorum queue, dead-lettered to `dlx` if given.
    fn queue(name: &str, dlx: Option<&str>) -> Queue {
        let mut arguments = Table::default();
        if let Some(x) = dlx {
            arguments.insert("x-dead-letter-exchange".into(), Value::String(x.into()));
        }
        crate::testing::objects::queue(name, QueueType::Quorum, arguments)
    }

    /// `names` each dead-lettered as the common shape is, bound from `shop`.
    fn dead_lettered(names: &[&str]) -> Vhost {
        let mut v = Vhost::new("/");
        v.exchanges.insert("shop".into(), exchange("shop", "topic"));
        for n in names {
            v.queues.insert(n.to_string(), queue(n, Some(&format!("{n}.dlx"))));
            v.exchanges.insert(format!("{n}.dlx"), exchange(&format!("{n}.dlx"), "fanout"));
            let mut dead = queue(&format!("{n}.dead"), None);
            dead.kind = QueueType::Classic;
            v.queues.insert(dead.name.clone(), dead);
            v.bindings.insert(binding(&format!("{n}.dlx"), &format!("{n}.dead"), ""));
            v.bindings.insert(binding("shop", n, n));
        }
        v
    }

    fn roots(p: &Proposed) -> Vec<String> {
        p.uses.iter().filter_map(|row| if let Value::String(s) = &row[0] { Some(s.clone()) } else { None }).collect()
    }

    #[test]
    fn queues_with_the_same_objects_named_after_them_are_one_shape() {
        let v = dead_lettered(&["orders", "payments", "refunds"]);
        let p = proposed(&v);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].shape, "proposed-dead-dlx");
        assert_eq!(p[0].parameters, ["name"], "the keys are the queues' names");
        assert_eq!(roots(&p[0]), ["orders", "payments", "refunds"]);
        let body = &p[0].body;
        assert_eq!(body.queues.keys().collect::<Vec<_>>(), ["${name}", "${name}.dead"]);
        let dlx = body.queues["${name}"].arguments.get("x-dead-letter-exchange");
        assert_eq!(dlx, Some(&Value::String("${name}.dlx".into())));
        assert_eq!(body.bindings.len(), 2, "the dead-letter binding, and shop's with the queue's name as key");
    }

    /// As in a real export (census-rm-ons): each queue dead-letters with a
    /// key of its own, bound with that key from a shared exchange, and its
    /// `.dlq` bound with it from a shared dead-letter exchange.
    #[test]
    fn values_that_differ_are_parameters_and_values_that_go_together_are_one() {
        let mut v = Vhost::new("/");
        for (n, k) in [("case.rh.case", "event.case.update"), ("case.rh.uac", "event.uac.update")] {
            let mut q = queue(n, Some("events.deadletter.exchange"));
            q.arguments.insert("x-dead-letter-routing-key".into(), Value::String(k.into()));
            v.queues.insert(n.into(), q);
            v.queues.insert(format!("{n}.dlq"), queue(&format!("{n}.dlq"), None));
            v.bindings.insert(binding("events", n, k));
            v.bindings.insert(binding("events.deadletter.exchange", &format!("{n}.dlq"), k));
        }
        let p = proposed(&v);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].parameters, ["name", "key"]);
        assert_eq!(p[0].uses[1], [Value::String("case.rh.uac".into()), Value::String("event.uac.update".into())]);
        let q = &p[0].body.queues["${name}"];
        assert_eq!(q.arguments.get("x-dead-letter-routing-key"), Some(&Value::String("${key}".into())));
        let keys: Vec<&str> = p[0].body.bindings.iter().map(|b| b.routing_key.as_str()).collect();
        assert_eq!(keys, ["${key}", "${key}"]);
        roundtrip(&v, &["events", "events.deadletter.exchange"]);
    }

    #[test]
    fn a_queue_alone_or_unlike_the_others_is_no_shape() {
        let mut v = dead_lettered(&["orders", "payments"]);
        v.queues.insert("lonely".into(), queue("lonely", None));
        // Its dead-letter queue is classic in the others, quorum here.
        let mut odd = dead_lettered(&["odd"]);
        odd.queues.get_mut("odd.dead").unwrap().kind = QueueType::Quorum;
        v.queues.extend(odd.queues);
        v.exchanges.extend(odd.exchanges);
        v.bindings.extend(odd.bindings);
        let p = proposed(&v);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(roots(&p[0]), ["orders", "payments"]);
        assert!(proposed(&dead_lettered(&["one"])).is_empty(), "one use is no reuse");
    }

    /// The proposal, uncommented and loaded alone with `outside` listed
    /// as external exchanges, makes `v`'s objects but those.
    fn roundtrip(v: &Vhost, outside: &[&str]) {
        let proposal = lines(&proposed(v), v)[PREFACE.lines().count()..].join("\n");
        let external: Vec<String> = outside.iter().map(|x| string(x)).collect();
        let text = format!("vhosts = [\"/\"]\n\n[external]\n{}\n{proposal}\n", list_field("exchanges", &external));
        let root = std::path::Path::new("/p");
        let d = crate::desired::load_texts(root, vec![(root.join("t.toml"), text.clone())]);
        assert!(!d.has_errors(), "{:?}\n{text}", d.diagnostics);
        let made = &d.topology.vhosts["/"];
        let mut expected = v.clone();
        expected.exchanges.retain(|x, _| !outside.contains(&x.as_str()));
        assert_eq!(made.exchanges, expected.exchanges, "{text}");
        assert_eq!(made.queues, expected.queues, "{text}");
        assert_eq!(made.bindings, expected.bindings, "{text}");
    }

    #[test]
    fn the_proposal_uncommented_makes_the_objects_it_replaces() {
        roundtrip(&dead_lettered(&["orders", "payments"]), &["shop"]);
    }
}
