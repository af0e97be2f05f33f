//! The routing change between two states of a vhost: for each exchange,
//! the classes of routing keys whose queues differ before and after.
//!
//! Exact for direct, fanout and topic exchanges: every key whose queues
//! differ is in exactly one class reported, with those queues. Keys that
//! meet a headers exchange, a plugin's type or an exchange declared
//! elsewhere are said to be beyond telling, never guessed.
//!
//! Only what a change can reach is looked at. A key routes alike before
//! and after unless, on its way, it meets an exchange whose type, internal
//! flag, alternate exchange or existence changed, or a direct or topic
//! binding added or removed that takes it: the walk is the same up to
//! there. So an exchange is looked at only when it reaches a changed one,
//! and when the changes it reaches are bindings of direct and topic
//! exchanges, only the classes of keys those bindings take.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use super::classes::{self, Matcher};
use super::router::Reached;
use super::{Keys, Message, Router, Version};
use crate::model::{Binding, DestinationKind, Vhost};

/// The most states the walk of one exchange's classes takes: past it, the
/// exchange is said to be beyond telling.
const CAP: usize = 50_000;

/// Past this many exchanges created or deleted in a vhost, each is summed
/// up rather than told class by class: a new vhost's hundreds of exchanges
/// would be pages of classes no reviewer reads, and their cost.
const DETAILED: usize = 10;

/// The most binding keys, and the most states of the walk, that a created
/// or deleted exchange's classes are told from: past either, it is summed
/// up, so that its cost stays that of what changed.
const DETAIL_KEYS: usize = 1_000;
const DETAIL_CAP: usize = 5_000;

/// Past this many bindings added to or removed from exchanges on both
/// sides, a plan's routing change sums up each such exchange by those
/// bindings: told class by class, 20,000 new bindings over 5,000 exchanges
/// took a 10,000-queue plan from 2 to 46 s and 1 GB (issue 33's
/// benchmark), and would be pages no reviewer reads. Never for a
/// migration's check (`compare_kept`), which reads the classes.
const KEPT_DETAIL: usize = 1_000;

/// One exchange's routing change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExchangeChange {
    pub exchange: String,
    /// The plan creates the exchange (its keys go from nothing, a publish
    /// refused, to its queues) or deletes it (the reverse); `None`: it is
    /// on both sides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub existence: Option<Existence>,
    /// The classes of keys whose queues change.
    pub classes: Vec<KeyClass>,
    /// Why some keys' queues cannot be told (a headers exchange, a plugin's
    /// type, an exchange declared elsewhere, too many classes).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cannot_tell: Vec<String>,
    /// A created or deleted exchange whose classes are not told one by
    /// one: its bindings instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
}

/// Whether the plan creates or deletes an exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Existence {
    Created,
    Deleted,
}

/// A created or deleted exchange summed up: what it is bound to, on the
/// side it exists on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Why its classes of keys are not told one by one.
    pub why: String,
    /// Its bindings; for an exchange on both sides, those added or removed.
    pub bindings: usize,
    /// The queues and exchanges its bindings lead to.
    pub queues: BTreeSet<String>,
    pub exchanges: BTreeSet<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alternate: Option<String>,
}

/// A class of keys that route alike before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyClass {
    /// The keys taken by all of these; none: any key.
    pub keys: Vec<Term>,
    /// Less the keys taken by any of these.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub except: Vec<Term>,
    /// One key of the class, as short as there is.
    pub example: String,
    pub before: BTreeSet<String>,
    pub after: BTreeSet<String>,
}

/// A set of keys: one key, or a topic pattern's keys.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Term {
    Key(String),
    Pattern(String),
}

impl Term {
    pub fn takes(&self, key: &str) -> bool {
        match self {
            Term::Key(k) => k == key,
            Term::Pattern(p) => super::topic::matches(p, key),
        }
    }
}

impl KeyClass {
    /// Whether `key` is in the class.
    pub fn contains(&self, key: &str) -> bool {
        self.keys.iter().all(|t| t.takes(key)) && !self.except.iter().any(|t| t.takes(key))
    }

    /// The queues that stop receiving these keys.
    pub fn stop(&self) -> impl Iterator<Item = &String> {
        self.before.difference(&self.after)
    }

    /// The queues that start receiving them.
    pub fn start(&self) -> impl Iterator<Item = &String> {
        self.after.difference(&self.before)
    }

    /// How a user reads the class.
    pub fn describe(&self) -> String {
        // A pattern without wildcards is one key.
        let one = |p: &str| !p.split('.').any(|w| w == "*" || w == "#");
        let term = |t: &Term| match t {
            Term::Key(k) => format!("key \"{k}\""),
            Term::Pattern(p) => format!("\"{p}\""),
        };
        let mut out = match self.keys.as_slice() {
            [] => "any key".to_string(),
            [Term::Pattern(p)] if p == "#" => "any key".to_string(),
            [Term::Key(k)] => format!("key \"{k}\""),
            [Term::Pattern(p)] if one(p) => format!("key \"{p}\""),
            ts => format!("keys matching {}", ts.iter().map(term).collect::<Vec<_>>().join(" and ")),
        };
        if !self.except.is_empty() {
            const SHOWN: usize = 5;
            let mut named: Vec<String> = self.except.iter().take(SHOWN).map(term).collect();
            if self.except.len() > SHOWN {
                named.push(format!("{} more", self.except.len() - SHOWN));
            }
            out.push_str(&format!(", except {}", named.join(", ")));
        }
        out
    }
}

/// What one exchange is, as far as routing goes.
#[derive(PartialEq, Eq)]
struct Signature<'a> {
    exists: bool,
    kind: Option<&'a str>,
    internal: bool,
    alternate: Option<&'a str>,
}

fn signature<'a>(r: &Router<'a>, v: &'a Vhost, name: &str) -> Signature<'a> {
    let x = v.exchanges.get(name);
    Signature {
        exists: r.exchange_exists(name),
        kind: x.map(|x| x.kind.as_str()),
        internal: x.is_some_and(|x| x.internal),
        alternate: r.alternate(name),
    }
}

/// The two sides, and what changed between them.
struct Sides<'a> {
    before: Router<'a>,
    after: Router<'a>,
    vb: &'a Vhost,
    va: &'a Vhost,
    /// Exchanges changed so that any key reaching them may route otherwise.
    hard: FxHashSet<&'a str>,
    /// Direct and topic bindings only one side has.
    soft: FxHashMap<&'a str, Vec<&'a Binding>>,
    /// Where each exchange may send a message on, on either side.
    next: FxHashMap<&'a str, BTreeSet<&'a str>>,
}

/// One side of a comparison: a vhost, routing by its own bindings or by
/// `bindings` (ordered as a vhost orders its own) in their place.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    pub vhost: &'a Vhost,
    pub bindings: Option<&'a [&'a Binding]>,
}

impl<'a> Side<'a> {
    pub fn of(vhost: &'a Vhost) -> Self {
        Side { vhost, bindings: None }
    }

    fn router(self, version: Version) -> Router<'a> {
        match self.bindings {
            Some(bs) => Router::for_routes_over(self.vhost, version, bs),
            None => Router::for_routes(self.vhost, version),
        }
    }
}

/// The routing change from `before` to `after` (one vhost, both), by
/// exchange name; exchanges whose keys all route alike are left out.
/// Exchanges on one side only are in it, told class by class, or summed
/// up past [`DETAILED`] of them or past their walk's limits.
pub fn compare(before: &Vhost, after: &Vhost, version: Version) -> Vec<ExchangeChange> {
    compare_with(Side::of(before), Side::of(after), version, true)
}

/// [`compare`] of two sides, either routing by bindings other than its
/// vhost's own.
pub fn compare_sides(before: Side, after: Side, version: Version) -> Vec<ExchangeChange> {
    compare_with(before, after, version, true)
}

/// [`compare`] of the exchanges on both sides only (a migration's check:
/// an exchange it declares routes nothing of a client's before).
pub fn compare_kept(before: &Vhost, after: &Vhost, version: Version) -> Vec<ExchangeChange> {
    compare_with(Side::of(before), Side::of(after), version, false)
}

fn compare_with(before: Side, after: Side, version: Version, lifecycle: bool) -> Vec<ExchangeChange> {
    let sides = sides(before, after, version);
    if sides.hard.is_empty() && sides.soft.is_empty() {
        return Vec::new();
    }
    let found = concerned(&sides, lifecycle);
    let born_or_gone = found.iter().filter(|x| existence(&sides, x).is_some()).count();
    let moved: usize = sides.soft.values().map(Vec::len).sum();
    let kept_summed = lifecycle && moved > KEPT_DETAIL;
    // The index of binding keys is built only when some exchange is told
    // class by class: a new vhost's exchanges, all summed up, need none.
    let mut index: Option<Index> = None;
    let mut out = Vec::new();
    for x in found {
        let existence = existence(&sides, x);
        let change = match existence {
            Some(e) if born_or_gone > DETAILED => {
                summed(&sides, x, e, format!("{born_or_gone} exchanges are created or deleted in the vhost"))
            }
            // What reaches a changed exchange changes as that one does:
            // said by it.
            None if kept_summed && !sides.hard.contains(x) => match sides.soft.get(x) {
                Some(changed) => {
                    let why = format!("{moved} bindings of exchanges kept are added or removed in the vhost");
                    rebound(x, changed, why)
                }
                None => continue,
            },
            _ => exchange_change(&sides, x, index.get_or_insert_with(|| Index::new(&sides)), existence),
        };
        let told = !change.classes.is_empty() || !change.cannot_tell.is_empty();
        let bound = change.summary.as_ref().is_some_and(|s| s.bindings > 0 || s.alternate.is_some());
        if told || bound {
            out.push(change);
        }
    }
    out
}

/// Whether `x` is on one side only.
fn existence(s: &Sides, x: &str) -> Option<Existence> {
    match (s.before.exchange_exists(x), s.after.exchange_exists(x)) {
        (false, true) => Some(Existence::Created),
        (true, false) => Some(Existence::Deleted),
        _ => None,
    }
}

/// Exchange `x`, created or deleted, summed up by its bindings on the
/// side it exists on.
fn summed(s: &Sides, x: &str, e: Existence, why: String) -> ExchangeChange {
    let r = if e == Existence::Created { &s.after } else { &s.before };
    ExchangeChange { existence: Some(e), ..summary(x, why, r.bindings_from(x), r.alternate(x)) }
}

/// Exchange `x`, on both sides, summed up by the bindings added to it or
/// removed from it (`changed`).
fn rebound(x: &str, changed: &[&Binding], why: String) -> ExchangeChange {
    summary(x, why, changed, None)
}

/// Exchange `x` summed up by `bindings`: how many, and the queues and
/// exchanges they lead to.
fn summary(x: &str, why: String, bindings: &[&Binding], alternate: Option<&str>) -> ExchangeChange {
    let mut summary = Summary {
        why,
        bindings: bindings.len(),
        queues: BTreeSet::new(),
        exchanges: BTreeSet::new(),
        alternate: alternate.map(str::to_string),
    };
    for b in bindings {
        let to =
            if b.destination_kind == DestinationKind::Queue { &mut summary.queues } else { &mut summary.exchanges };
        to.insert(b.destination.clone());
    }
    ExchangeChange {
        exchange: x.to_string(),
        existence: None,
        classes: Vec::new(),
        cannot_tell: Vec::new(),
        summary: Some(summary),
    }
}

fn sides<'a>(sb: Side<'a>, sa: Side<'a>, version: Version) -> Sides<'a> {
    let (vb, va) = (sb.vhost, sa.vhost);
    let (before, after) = (sb.router(version), sa.router(version));
    // The names in order, each once: gathered, then sorted (a set would
    // compare each of the thousands of bindings' names with a dozen).
    let mut names: Vec<&str> = vb.exchanges.keys().chain(va.exchanges.keys()).map(String::as_str).collect();
    for (source, bindings) in before.sources().chain(after.sources()) {
        names.push(source);
        let into = bindings.iter().filter(|b| b.destination_kind == DestinationKind::Exchange);
        names.extend(into.map(|b| b.destination.as_str()));
    }
    names.sort_unstable();
    names.dedup();
    let mut s = Sides {
        before,
        after,
        vb,
        va,
        hard: FxHashSet::default(),
        soft: FxHashMap::default(),
        next: FxHashMap::default(),
    };
    for name in names {
        let (sb, sa) = (signature(&s.before, vb, name), signature(&s.after, va, name));
        let kinds = [sb.kind, sa.kind];
        let next = s.next.entry(name).or_default();
        for r in [&s.before, &s.after] {
            next.extend(r.alternate(name));
            for b in r.bindings_from(name) {
                if b.destination_kind == DestinationKind::Exchange {
                    next.insert(&b.destination);
                }
            }
        }
        // A fanout exchange reads neither key nor arguments, a headers
        // exchange no key: bindings that differ only there route alike.
        let same = sb.kind == sa.kind;
        let routed = |b: &'a Binding| match sb.kind {
            Some("fanout") if same => (b.destination_kind, b.destination.as_str(), "", None),
            Some("headers") if same => (b.destination_kind, b.destination.as_str(), "", Some(&b.arguments)),
            _ => (b.destination_kind, b.destination.as_str(), b.routing_key.as_str(), Some(&b.arguments)),
        };
        let (lb, la) = (s.before.bindings_from(name), s.after.bindings_from(name));
        // Most exchanges keep their bindings: told in one pass, unhashed,
        // most often the very same bindings (a plan's side laid over the
        // live one).
        let alike = lb.len() == la.len() && lb.iter().zip(la).all(|(b, a)| std::ptr::eq(*b, *a) || b == a);
        let mut changed: Vec<&Binding> = if alike {
            Vec::new()
        } else {
            let bb: FxHashSet<_> = lb.iter().map(|b| routed(b)).collect();
            let ba: FxHashSet<_> = la.iter().map(|b| routed(b)).collect();
            let gone = lb.iter().filter(|b| !ba.contains(&routed(b)));
            gone.chain(la.iter().filter(|b| !bb.contains(&routed(b)))).copied().collect()
        };
        changed.sort();
        changed.dedup();
        let keyed = kinds.iter().all(|k| matches!(k, Some("direct" | "topic")));
        if sb != sa || (!changed.is_empty() && !keyed) {
            s.hard.insert(name);
        } else if !changed.is_empty() {
            s.soft.insert(name, changed);
        }
    }
    s
}

/// The exchanges that reach a changed one, sorted; with `lifecycle`, those
/// on one side only too.
fn concerned<'a>(s: &Sides<'a>, lifecycle: bool) -> Vec<&'a str> {
    let mut back: FxHashMap<&str, Vec<&str>> = FxHashMap::default();
    for (from, tos) in &s.next {
        for to in tos {
            back.entry(to).or_default().push(from);
        }
    }
    let mut found: BTreeSet<&str> = s.hard.iter().chain(s.soft.keys()).copied().collect();
    let mut work: Vec<&str> = found.iter().copied().collect();
    while let Some(x) = work.pop() {
        for from in back.get(x).into_iter().flatten() {
            if found.insert(from) {
                work.push(from);
            }
        }
    }
    // The default exchange is told by the queues created and deleted.
    let (b, a) = (|x: &str| s.before.exchange_exists(x), |x: &str| s.after.exchange_exists(x));
    let kept = |x: &str| if lifecycle { b(x) || a(x) } else { b(x) && a(x) };
    found.into_iter().filter(|x| !x.is_empty() && *x != "amq.default" && kept(x)).collect()
}

/// What the exchanges of a vhost ask of keys, found once for all of them.
#[derive(Default)]
struct Index<'a> {
    all: Vec<Matcher<'a>>,
    ids: FxHashMap<(&'a str, bool), u32>,
    /// The matchers of each exchange's bindings (either side).
    own: FxHashMap<&'a str, Vec<u32>>,
    /// Those of its changed direct and topic bindings.
    changed: FxHashMap<&'a str, Vec<u32>>,
    /// The ways into each exchange: from where, and what a key must answer
    /// to take it (`None`: any key that reaches there).
    into: FxHashMap<&'a str, Vec<(&'a str, Option<u32>)>>,
    /// The matchers that may meet each one, found when first asked.
    near: FxHashMap<u32, Vec<u32>>,
    /// The queues' places in name order, made when a route first reaches
    /// many (on either core).
    ranks: OnceLock<Ranks<'a>>,
}

/// The queue names of both sides in name order, each with its place: a
/// route's queues are put in order by their places, not by comparing names
/// (a class's thousand queues behind a fanout exchange, routed for each
/// class, on each side, share their first bytes, `bench.q0…`).
struct Ranks<'a> {
    names: Vec<&'a str>,
    of: FxHashMap<&'a str, u32>,
}

impl<'a> Ranks<'a> {
    fn new(vb: &'a Vhost, va: &'a Vhost) -> Self {
        let mut names: Vec<&str> = vb.queues.keys().map(String::as_str).collect();
        if !std::ptr::eq(vb, va) {
            names.extend(va.queues.keys().map(String::as_str));
        }
        names.extend(vb.external.queues.iter().chain(&va.external.queues).map(String::as_str));
        names.sort_unstable();
        names.dedup();
        let of = names.iter().enumerate().map(|(i, n)| (*n, i as u32)).collect();
        Ranks { names, of }
    }

    /// [`sorted`], by places: the same queues in the same order.
    fn sorted(&self, queues: Vec<&'a str>) -> Vec<&'a str> {
        let mut placed: Vec<u32> = Vec::with_capacity(queues.len());
        for q in &queues {
            match self.of.get(q) {
                Some(&p) => placed.push(p),
                // A binding to a queue neither side declares has no place.
                None => return sorted(queues),
            }
        }
        placed.sort_unstable();
        placed.dedup();
        placed.into_iter().map(|i| self.names[i as usize]).collect()
    }
}

impl<'a> Index<'a> {
    fn id(&mut self, text: &'a str, literal: bool) -> u32 {
        match self.ids.entry((text, literal)) {
            std::collections::hash_map::Entry::Occupied(o) => *o.get(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let id = self.all.len() as u32;
                self.all.push(Matcher::new(text, literal));
                *v.insert(id)
            }
        }
    }

    fn new(s: &Sides<'a>) -> Self {
        let mut ix = Index::default();
        let mut names: Vec<&str> = s.next.keys().copied().collect();
        names.sort_unstable();
        for e in names {
            let kinds: Vec<&str> = [&s.before, &s.after].iter().filter_map(|r| r.kind_of(e)).collect();
            let forms: Vec<bool> = [("direct", true), ("topic", false)]
                .iter()
                .filter(|(k, _)| kinds.contains(k))
                .map(|(_, l)| *l)
                .collect();
            let changed: FxHashSet<&Binding> = s.soft.get(e).into_iter().flatten().copied().collect();
            // The after side's bindings, most often the very same as the
            // before side's, ask nothing more then.
            let (lb, la) = (s.before.bindings_from(e), s.after.bindings_from(e));
            let same = lb.len() == la.len() && lb.iter().zip(la).all(|(b, a)| std::ptr::eq(*b, *a));
            // Gathered here, put in the maps once.
            let (mut own, mut changed_ids) = (Vec::new(), Vec::new());
            for b in lb.iter().chain(if same { &[][..] } else { la }) {
                let mut taken = None;
                for &literal in &forms {
                    let id = ix.id(&b.routing_key, literal);
                    own.push(id);
                    if changed.contains(b) {
                        changed_ids.push(id);
                    }
                    taken = Some(id);
                }
                if b.destination_kind == DestinationKind::Exchange {
                    let key = if forms.len() == 1 { taken } else { None };
                    ix.into.entry(&b.destination).or_default().push((e, key));
                }
            }
            if !own.is_empty() {
                ix.own.insert(e, own);
            }
            if !changed_ids.is_empty() {
                ix.changed.insert(e, changed_ids);
            }
            for r in [&s.before, &s.after] {
                if let Some(ae) = r.alternate(e) {
                    ix.into.entry(ae).or_default().push((e, None));
                }
            }
        }
        for ids in ix.own.values_mut().chain(ix.changed.values_mut()) {
            ids.sort_unstable();
            ids.dedup();
        }
        ix
    }

    fn near(&mut self, w: u32) -> &[u32] {
        let all = &self.all;
        self.near.entry(w).or_insert_with(|| {
            (0..all.len() as u32).filter(|&m| classes::may_meet(&all[w as usize], &all[m as usize])).collect()
        })
    }
}

/// The exchanges `x` reaches on either side, itself included, in no
/// order, and as a set.
fn reach<'a>(s: &Sides<'a>, x: &'a str) -> (Vec<&'a str>, FxHashSet<&'a str>) {
    let mut seen: FxHashSet<&str> = FxHashSet::from_iter([x]);
    let mut out = vec![x];
    let mut i = 0;
    while let Some(&e) = out.get(i) {
        for n in s.next.get(e).into_iter().flatten() {
            if seen.insert(n) {
                out.push(n);
            }
        }
        i += 1;
    }
    (out, seen)
}

/// The questions that tell apart the keys from `x` that may route
/// otherwise, and those of them such a key answers yes to; none wanted
/// means every key is concerned.
fn questions<'a>(
    s: &Sides<'a>,
    ix: &mut Index<'a>,
    x: &'a str,
    reached: &[&'a str],
    set: &FxHashSet<&'a str>,
) -> (Vec<u32>, Option<FxHashSet<u32>>) {
    let mut wanted: FxHashSet<u32> = FxHashSet::default();
    let mut every = false;
    for &e in reached {
        // A changed binding of `e` matters only for keys that can reach
        // `e` from `x`: those the last keyed bindings on the way take.
        if let Some(changed) = ix.changed.get(e) {
            let taken: Vec<u32> = match keys_into(ix, e, x, set) {
                None => changed.clone(),
                Some(into) => changed
                    .iter()
                    .copied()
                    .filter(|&w| into.iter().any(|&k| classes::may_meet(&ix.all[w as usize], &ix.all[k as usize])))
                    .collect(),
            };
            wanted.extend(taken);
        }
        if e.is_empty() || e == "amq.default" {
            every = true;
        } else if s.hard.contains(e) {
            match keys_into(ix, e, x, set) {
                Some(keys) => wanted.extend(keys),
                None => every = true,
            }
        }
    }
    if every {
        let mut ids: BTreeSet<u32> =
            reached.iter().flat_map(|e| ix.own.get(e).into_iter().flatten().copied()).collect();
        if set.contains("") || set.contains("amq.default") {
            // The default exchange routes by the queue each key names.
            for q in s.vb.queues.keys().chain(s.va.queues.keys()) {
                ids.insert(ix.id(q, true));
            }
        }
        return (ids.into_iter().collect(), None);
    }
    // Matchers that meet no wanted one take no key concerned: those of
    // the exchanges reached, each asked of the wanted ones when they are
    // few, else picked from all that meet each wanted one (found once for
    // the vhost, for the exchanges that reach most of it).
    let mut ids: BTreeSet<u32> = wanted.iter().copied().collect();
    let owned = || reached.iter().flat_map(|e| ix.own.get(e).into_iter().flatten().copied());
    let unmet = wanted.iter().filter(|w| !ix.near.contains_key(w)).count();
    if owned().count() * wanted.len() <= unmet * ix.all.len() {
        let all = &ix.all;
        let meets = |m: u32| wanted.iter().any(|&w| classes::may_meet(&all[w as usize], &all[m as usize]));
        ids.extend(owned().filter(|&m| meets(m)));
    } else {
        let owned: FxHashSet<u32> = owned().collect();
        for &w in &wanted {
            let near: Vec<u32> = ix.near(w).to_vec();
            ids.extend(near.into_iter().filter(|m| owned.contains(m)));
        }
    }
    (ids.into_iter().collect(), Some(wanted))
}

/// The matchers one of which a key from `x` answers yes to when it reaches
/// `h`; `None` when any key may reach it.
fn keys_into(ix: &Index, h: &str, x: &str, reached: &FxHashSet<&str>) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    let mut seen: FxHashSet<&str> = FxHashSet::from_iter([h]);
    let mut work = vec![h];
    while let Some(n) = work.pop() {
        if n == x {
            return None;
        }
        for (from, key) in ix.into.get(n).into_iter().flatten() {
            match key {
                _ if !reached.contains(from) => {}
                Some(id) => out.push(*id),
                None => {
                    if seen.insert(from) {
                        work.push(from);
                    }
                }
            }
        }
    }
    Some(out)
}

fn exchange_change<'a>(
    s: &Sides<'a>,
    x: &'a str,
    table: &mut Index<'a>,
    existence: Option<Existence>,
) -> ExchangeChange {
    let (reached, set) = reach(s, x);
    let (ids, wanted) = questions(s, table, x, &reached, &set);
    let mut change = ExchangeChange {
        exchange: x.to_string(),
        existence,
        classes: Vec::new(),
        cannot_tell: Vec::new(),
        summary: None,
    };
    if let Some(e) = existence.filter(|_| ids.len() > DETAIL_KEYS) {
        return summed(s, x, e, format!("its keys meet more than {DETAIL_KEYS} binding keys"));
    }
    let cap = if existence.is_some() { DETAIL_CAP } else { CAP };
    let fresh = classes::fresh_word(ids.iter().map(|i| &table.all[*i as usize]));
    let atoms = match (classes::atoms(&table.all, &ids, wanted.as_ref(), &fresh, cap), existence) {
        (Ok(a), _) => a,
        (Err(classes::TooMany), Some(e)) => {
            return summed(s, x, e, format!("its bindings tell more than {cap} classes of keys apart"));
        }
        (Err(classes::TooMany), None) => {
            change.cannot_tell.push(format!("its bindings tell more than {CAP} classes of keys apart"));
            return change;
        }
    };
    let mut why: BTreeSet<String> = BTreeSet::new();
    // Only the queues are compared, by the names the vhosts hold: no path,
    // and no owned names but those of a class that changed (a hub's keys
    // reach a thousand queues alike on both sides). The classes are routed,
    // put in order and compared on both cores, each on its own: the plan
    // has read its inputs by now, and the routes from a fanout hub, a
    // thousand queues each, are most of the routing change.
    let ranks = &table.ranks;
    let compared: Vec<Compared> = {
        use rayon::prelude::*;
        atoms
            .par_iter()
            .map(|atom| {
                let message = Message { exchange: x.to_string(), keys: Keys::one(&atom.key), headers: None };
                let (rb, ra) = (s.before.reach(&message, true, false), s.after.reach(&message, true, false));
                compared(s, ranks, rb, ra)
            })
            .collect()
    };
    for (atom, c) in atoms.into_iter().zip(compared) {
        match c {
            Compared::Alike => {}
            Compared::CannotTell(w) => why.extend(w),
            Compared::Differ(before, after) => {
                let (keys, except) = describe(table, &ids, &atom.accepts);
                change.classes.push(KeyClass { keys, except, example: atom.key, before, after });
            }
        }
    }
    change.classes.sort_by(|a, b| (&a.keys, &a.example).cmp(&(&b.keys, &b.example)));
    change.cannot_tell = why.into_iter().collect();
    change
}

/// How one class of keys routes before and after.
enum Compared {
    Alike,
    /// Some route passes where the model cannot tell, and they differ:
    /// why, for each exchange.
    CannotTell(Vec<String>),
    /// The queues before and after.
    Differ(BTreeSet<String>, BTreeSet<String>),
}

/// The queues of one class routed before (`rb`) and after (`ra`),
/// compared.
fn compared<'a>(s: &Sides<'a>, ranks: &OnceLock<Ranks<'a>>, rb: Reached<'a>, ra: Reached<'a>) -> Compared {
    // Few queues are put in order as they are.
    let order = |queues: Vec<&'a str>| {
        if queues.len() < 32 {
            return sorted(queues);
        }
        ranks.get_or_init(|| Ranks::new(s.vb, s.va)).sorted(queues)
    };
    let (qb, qa) = (order(rb.queues), order(ra.queues));
    let (cb, ca) = (&rb.route.cannot_tell, &ra.route.cannot_tell);
    if !cb.is_empty() || !ca.is_empty() {
        if qb != qa || cb != ca {
            return Compared::CannotTell(
                cb.iter().chain(ca).map(|c| format!("exchange \"{}\": {}", c.exchange, c.why)).collect(),
            );
        }
        return Compared::Alike;
    }
    if qb == qa {
        return Compared::Alike;
    }
    let owned = |q: Vec<&str>| q.into_iter().map(str::to_string).collect();
    Compared::Differ(owned(qb), owned(qa))
}

/// Queues reached, each once, in order.
///
/// Each name is put in order by its first 16 bytes as one number, and by
/// the rest only when those tie: a class's thousand queues behind a fanout
/// exchange, routed for each class on each side, share their first bytes
/// (`bench.q0…`), which a comparison of names reads again each time.
fn sorted(queues: Vec<&str>) -> Vec<&str> {
    let head = |q: &str| {
        let mut bytes = [0u8; 16];
        let n = q.len().min(16);
        bytes[..n].copy_from_slice(&q.as_bytes()[..n]);
        // Zeros after a shorter name: it comes first, as a prefix does,
        // or ties and is told by the whole name.
        u128::from_be_bytes(bytes)
    };
    let mut keyed: Vec<(u128, &str)> = queues.into_iter().map(|q| (head(q), q)).collect();
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    keyed.dedup_by(|a, b| a.1 == b.1);
    keyed.into_iter().map(|(_, q)| q).collect()
}

/// The class of keys that `accepts` (and no other of `ids`) take, as
/// terms: the narrowest of them, less the others that meet them.
fn describe(table: &Index, ids: &[u32], accepts: &[u32]) -> (Vec<Term>, Vec<Term>) {
    let m = |i: u32| &table.all[i as usize];
    let term =
        |i: u32| if m(i).literal { Term::Key(m(i).text.to_string()) } else { Term::Pattern(m(i).text.to_string()) };
    if let Some(&l) = accepts.iter().find(|&&i| m(i).literal) {
        return (vec![term(l)], Vec::new());
    }
    let mut narrow: Vec<u32> = Vec::new();
    for &i in accepts {
        let wider = accepts.iter().any(|&j| {
            j != i
                && super::topic::covers(m(i).text, m(j).text)
                && (!super::topic::covers(m(j).text, m(i).text) || j < i)
        });
        if !wider {
            narrow.push(i);
        }
    }
    let accepted: FxHashSet<u32> = accepts.iter().copied().collect();
    let meets = |i: u32| {
        narrow.iter().all(|&a| {
            if m(i).literal {
                super::topic::matches(m(a).text, m(i).text)
            } else {
                super::topic::intersects(m(a).text, m(i).text)
            }
        })
    };
    let mut except: Vec<Term> =
        ids.iter().copied().filter(|i| !accepted.contains(i)).filter(|&i| meets(i)).map(term).collect();
    except.sort();
    except.dedup();
    (narrow.into_iter().map(term).collect(), without_covered(except))
}

/// The most terms whose union is thinned to the widest ones: past it,
/// pairing them all would cost more than long lists do.
const THINNED: usize = 200;

/// `terms` less those another of them covers: the same union of keys.
fn without_covered(terms: Vec<Term>) -> Vec<Term> {
    if terms.len() > THINNED {
        return terms;
    }
    let covers = |outer: &Term, inner: &Term| match (outer, inner) {
        (Term::Pattern(p), Term::Key(k)) => super::topic::matches(p, k),
        (Term::Pattern(p), Term::Pattern(q)) => p != q && super::topic::covers(p, q),
        _ => false,
    };
    let kept: Vec<bool> = terms
        .iter()
        .enumerate()
        .map(|(i, t)| {
            !terms.iter().enumerate().any(|(j, o)| {
                // Of two patterns that cover each other, the first stays.
                j != i && covers(o, t) && !(covers(t, o) && i < j)
            })
        })
        .collect();
    terms.into_iter().zip(kept).filter(|(_, k)| *k).map(|(t, _)| t).collect()
}

/// The routing change by vhost, over the vhosts of both sides.
pub fn compare_all(
    before: &BTreeMap<String, Vhost>,
    after: &BTreeMap<String, Vhost>,
    version: Version,
) -> Vec<(String, ExchangeChange)> {
    let empty = Vhost::default();
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut out = Vec::new();
    for v in names {
        let (b, a) = (before.get(v).unwrap_or(&empty), after.get(v).unwrap_or(&empty));
        out.extend(compare(b, a, version).into_iter().map(|c| (v.clone(), c)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Exchange, Table, Value};
    use proptest::prelude::*;

    const WORDS: [&str; 5] = ["a", "b", "*", "#", ""];
    const KINDS: [&str; 3] = ["direct", "topic", "fanout"];

    fn exchange(name: &str, kind: &str, alternate: Option<&str>) -> Exchange {
        let mut arguments = Table::new();
        if let Some(ae) = alternate {
            arguments.insert("alternate-exchange".into(), Value::String(ae.into()));
        }
        Exchange { name: name.into(), kind: kind.into(), durable: true, auto_delete: false, internal: false, arguments }
    }

    /// A vhost of exchanges `e0`… and queues `q0`…, from drawn numbers.
    fn vhost(kinds: &[usize], alternates: &[Option<usize>], bindings: &[(usize, usize, Vec<usize>)]) -> Vhost {
        let mut v = Vhost::new("/");
        for (i, k) in kinds.iter().enumerate() {
            let ae = alternates.get(i).copied().flatten().map(|a| format!("e{}", a % kinds.len()));
            v.exchanges.insert(format!("e{i}"), exchange(&format!("e{i}"), KINDS[*k], ae.as_deref()));
        }
        for (source, to, words) in bindings {
            let key: Vec<&str> = words.iter().map(|w| WORDS[*w]).collect();
            let (destination_kind, destination) = if to % 3 == 0 {
                (DestinationKind::Exchange, format!("e{}", to % kinds.len()))
            } else {
                (DestinationKind::Queue, format!("q{}", to % 4))
            };
            v.bindings.insert(Binding {
                source: format!("e{}", source % kinds.len()),
                destination_kind,
                destination,
                routing_key: key.join("."),
                arguments: Table::new(),
            });
        }
        v
    }

    fn side() -> impl Strategy<Value = Vhost> {
        let binding = (0usize..4, 0usize..12, proptest::collection::vec(0usize..WORDS.len(), 0..4));
        (
            proptest::collection::vec(0usize..KINDS.len(), 1..4),
            proptest::collection::vec(proptest::option::weighted(0.2, 0usize..4), 4),
            proptest::collection::vec(binding, 0..8),
        )
            .prop_map(|(k, a, b)| vhost(&k, &a, &b))
    }

    /// `before` and an `after` that keeps most of it.
    fn pair() -> impl Strategy<Value = (Vhost, Vhost)> {
        (side(), side(), proptest::collection::vec(any::<bool>(), 8)).prop_map(|(before, other, keep)| {
            let mut after = before.clone();
            let mut i = 0;
            after.bindings.retain(|_| {
                i += 1;
                keep[i % keep.len()]
            });
            after.bindings.extend(other.bindings.iter().take(3).cloned());
            if keep[0] {
                after.exchanges = other.exchanges.clone();
            }
            (before, after)
        })
    }

    fn key() -> impl Strategy<Value = String> {
        let words = ["a", "b", "*", "#", "", "z"];
        proptest::collection::vec(0usize..words.len(), 0..5)
            .prop_map(move |ws| ws.iter().map(|w| words[*w]).collect::<Vec<_>>().join("."))
    }

    fn bind(v: &mut Vhost, source: &str, key: &str, queue: &str) {
        v.bindings.insert(crate::testing::objects::to_queue(source, queue, key));
    }

    /// A created exchange's keys go from nothing to its queues; a deleted
    /// one's the reverse; a migration's check leaves both out.
    #[test]
    fn a_created_or_deleted_exchange_is_told_class_by_class() {
        let before = Vhost::new("/");
        let mut after = Vhost::new("/");
        after.exchanges.insert("n".into(), exchange("n", "topic", None));
        bind(&mut after, "n", "a.*", "q1");
        bind(&mut after, "n", "b", "q2");
        let created = compare(&before, &after, Version::NEWEST);
        assert_eq!(created.len(), 1, "{created:?}");
        assert_eq!(created[0].existence, Some(Existence::Created));
        let told: Vec<(String, Vec<&str>)> =
            created[0].classes.iter().map(|c| (c.describe(), c.after.iter().map(String::as_str).collect())).collect();
        assert_eq!(told, [("keys matching \"a.*\"".to_string(), vec!["q1"]), ("key \"b\"".into(), vec!["q2"])]);
        assert!(created[0].classes.iter().all(|c| c.before.is_empty()));
        let deleted = compare(&after, &before, Version::NEWEST);
        assert_eq!(deleted[0].existence, Some(Existence::Deleted));
        assert!(deleted[0].classes.iter().all(|c| c.after.is_empty() && !c.before.is_empty()));
        assert!(compare_kept(&before, &after, Version::NEWEST).is_empty());
    }

    /// Past [`DETAILED`] exchanges created in a vhost, each is summed up by
    /// its bindings, and none is walked.
    #[test]
    fn many_created_exchanges_are_summed_up() {
        let before = Vhost::new("/");
        let mut after = Vhost::new("/");
        for i in 0..=DETAILED {
            let name = format!("n{i}");
            after.exchanges.insert(name.clone(), exchange(&name, "direct", None));
            bind(&mut after, &name, "k", &format!("q{i}"));
        }
        after.exchanges.insert("empty".into(), exchange("empty", "direct", None));
        let created = compare(&before, &after, Version::NEWEST);
        assert_eq!(created.len(), DETAILED + 1, "an exchange bound to nothing routes nothing: {created:?}");
        for c in &created {
            let s = c.summary.as_ref().expect("summed up");
            assert!(c.classes.is_empty() && s.bindings == 1 && s.queues.len() == 1, "{c:?}");
            assert!(s.why.contains("12 exchanges are created or deleted"), "{}", s.why);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Every key routed otherwise is in one reported class with those
        /// queues, and every key of a reported class routes as it says.
        #[test]
        fn the_classes_are_every_key_routed_otherwise((before, after) in pair(), keys in proptest::collection::vec(key(), 40)) {
            let changes = compare(&before, &after, Version::NEWEST);
            let (rb, ra) = (Router::new(&before, Version::NEWEST), Router::new(&after, Version::NEWEST));
            // An exchange on one side only takes no client's message on the
            // other: its keys go from nothing or to nothing.
            let names: BTreeSet<&String> = before.exchanges.keys().chain(after.exchanges.keys()).collect();
            for x in names {
                let change = changes.iter().find(|c| &c.exchange == x);
                prop_assert!(change.is_none_or(|c| c.summary.is_none()), "{x}: summed up: {change:?}");
                let classes = change.map_or(&[][..], |c| c.classes.as_slice());
                for c in classes {
                    prop_assert!(c.contains(&c.example), "{x}: {c:?}");
                }
                let examples = classes.iter().map(|c| c.example.clone());
                for k in keys.iter().cloned().chain(examples) {
                    let m = Message { exchange: x.clone(), keys: Keys::one(&k), headers: None };
                    let (b, a) = (rb.route(&m), ra.route(&m));
                    let told = b.cannot_tell.is_empty() && a.cannot_tell.is_empty();
                    let holding: Vec<&KeyClass> = classes.iter().filter(|c| c.contains(&k)).collect();
                    if told && b.queues != a.queues {
                        prop_assert_eq!(holding.len(), 1, "{}: key {:?} {:?} -> {:?}: {:?}", x, k, b.queues, a.queues, classes);
                    }
                    for c in holding {
                        prop_assert!(told, "{x}: key {k:?} cannot be told, yet is in {c:?}");
                        prop_assert_eq!((&c.before, &c.after), (&b.queues, &a.queues), "{}: key {:?}", x, k);
                    }
                }
            }
        }
    }

    /// Thousands of bindings added to exchanges kept on both sides: each
    /// is summed up by its new bindings, in time that grows with them; the
    /// exchanges only upstream of them are not told again. A migration's
    /// check still tells every class.
    #[test]
    fn many_bindings_added_to_kept_exchanges_are_summed_up_by_exchange() {
        let mut before = Vhost::new("/");
        for i in 0..20 {
            before.exchanges.insert(format!("x{i}"), exchange(&format!("x{i}"), "topic", None));
        }
        before.exchanges.insert("hub".into(), exchange("hub", "fanout", None));
        let bind = |source: &str, kind: DestinationKind, to: String, key: String| Binding {
            source: source.into(),
            destination_kind: kind,
            destination: to,
            routing_key: key,
            arguments: Table::new(),
        };
        before.bindings.insert(bind("hub", DestinationKind::Exchange, "x0".into(), String::new()));
        let mut after = before.clone();
        for i in 0..1_200 {
            after.bindings.insert(bind(
                &format!("x{}", i % 20),
                DestinationKind::Queue,
                format!("q{i}"),
                format!("k.{i}"),
            ));
        }
        let change = compare(&before, &after, Version::NEWEST);
        assert_eq!(change.len(), 20, "each rebound exchange, and not the hub upstream of x0");
        let x0 = change.iter().find(|c| c.exchange == "x0").unwrap();
        let summary = x0.summary.as_ref().expect("summed up");
        assert_eq!((x0.existence, summary.bindings, summary.queues.len()), (None, 60, 60));
        assert!(summary.why.contains("1200 bindings"), "{}", summary.why);
        let kept = compare_kept(&before, &after, Version::NEWEST);
        assert!(kept.iter().all(|c| c.summary.is_none()), "a migration's check reads the classes");
    }
}
