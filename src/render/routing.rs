//! The plan's routing change (`routing` in the JSON document): for each
//! exchange whose routing changes, the classes of keys that go elsewhere,
//! each with an example key, the queues before and after, and which
//! queues stop or start receiving them.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::routing::change::{ExchangeChange, Existence, Term};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutingDoc {
    pub vhost: String,
    pub exchange: String,
    /// `created` or `deleted` by the plan; absent: on both sides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub existence: Option<String>,
    pub classes: Vec<KeyClassDoc>,
    /// Why some keys' queues cannot be told: a headers exchange, a
    /// plugin's type, an exchange declared elsewhere on their way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cannot_tell: Vec<String>,
    /// A created or deleted exchange not told class by class: its bindings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<SummaryDoc>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryDoc {
    /// Why its classes of keys are not told one by one.
    pub why: String,
    pub bindings: usize,
    pub queues: Vec<String>,
    pub exchanges: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alternate: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyClassDoc {
    /// The class in words: `keys matching "a.*", except key "a.b"`.
    pub description: String,
    /// The keys taken by all of these (none: any key)…
    pub keys: Vec<TermDoc>,
    /// …less those taken by any of these.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub except: Vec<TermDoc>,
    pub example: String,
    pub before: Vec<String>,
    pub after: Vec<String>,
    /// Queues that stop receiving these keys (before, not after).
    pub stop: Vec<String>,
    /// Queues that start receiving them (after, not before).
    pub start: Vec<String>,
}

/// One key (`key`) or a topic pattern's keys (`pattern`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TermDoc {
    Key(String),
    Pattern(String),
}

impl RoutingDoc {
    /// The document of `change`, which it takes: a class's queues, a
    /// thousand names each behind a fanout exchange, are moved, not copied.
    pub fn new(vhost: &str, change: ExchangeChange) -> Self {
        let terms = |ts: &[Term]| {
            ts.iter()
                .map(|t| match t {
                    Term::Key(k) => TermDoc::Key(k.clone()),
                    Term::Pattern(p) => TermDoc::Pattern(p.clone()),
                })
                .collect()
        };
        RoutingDoc {
            vhost: vhost.to_string(),
            exchange: change.exchange,
            existence: change.existence.map(|e| {
                match e {
                    Existence::Created => "created",
                    Existence::Deleted => "deleted",
                }
                .to_string()
            }),
            summary: change.summary.map(|s| SummaryDoc {
                why: s.why,
                bindings: s.bindings,
                queues: s.queues.into_iter().collect(),
                exchanges: s.exchanges.into_iter().collect(),
                alternate: s.alternate,
            }),
            classes: change
                .classes
                .into_iter()
                .map(|c| KeyClassDoc {
                    description: c.describe(),
                    keys: terms(&c.keys),
                    except: terms(&c.except),
                    stop: c.stop().cloned().collect(),
                    start: c.start().cloned().collect(),
                    example: c.example,
                    before: c.before.into_iter().collect(),
                    after: c.after.into_iter().collect(),
                })
                .collect(),
            cannot_tell: change.cannot_tell,
        }
    }
}

fn queues(names: &[String]) -> String {
    if names.is_empty() {
        "nothing".to_string()
    } else {
        names.iter().map(|q| format!("\"{q}\"")).collect::<Vec<_>>().join(", ")
    }
}

fn at(r: &RoutingDoc) -> String {
    let new = match r.existence.as_deref() {
        Some("created") => "new ",
        Some("deleted") => "deleted ",
        _ => "",
    };
    format!("{new}exchange \"{}\" in vhost \"{}\"", r.exchange, r.vhost)
}

/// Past this many summed-up exchanges created (or deleted) in a vhost,
/// they are one line together.
const GROUPED: usize = 5;

/// Up to `shown` of `names`, quoted, and how many more.
fn some(names: &[String], shown: usize) -> String {
    let mut out: Vec<String> = names.iter().take(shown).map(|n| format!("\"{n}\"")).collect();
    if names.len() > shown {
        out.push(format!("{} more", names.len() - shown));
    }
    out.join(", ")
}

/// What a summed-up exchange's bindings lead to: `40 bindings to 38 queues
/// ("a", "b", "c", 35 more) and 2 exchanges ("x", "y")`.
fn bound(s: &SummaryDoc) -> String {
    let mut out = format!("{} binding(s) to {} queue(s)", s.bindings, s.queues.len());
    if !s.queues.is_empty() {
        out += &format!(" ({})", some(&s.queues, 3));
    }
    if !s.exchanges.is_empty() {
        out += &format!(" and {} exchange(s) ({})", s.exchanges.len(), some(&s.exchanges, 3));
    }
    if let Some(ae) = &s.alternate {
        out += &format!(", alternate exchange \"{ae}\"");
    }
    out
}

/// The summed-up exchanges of `r`'s vhost created (or deleted) as `r` is,
/// when they are more than [`GROUPED`]: one line for all of them.
fn group<'a>(routing: &'a [RoutingDoc], r: &RoutingDoc) -> Option<Vec<&'a RoutingDoc>> {
    r.summary.as_ref()?;
    let all: Vec<&RoutingDoc> =
        routing.iter().filter(|o| o.summary.is_some() && o.vhost == r.vhost && o.existence == r.existence).collect();
    (all.len() > GROUPED).then_some(all)
}

/// One line for a group of summed-up exchanges.
fn grouped(all: &[&RoutingDoc]) -> String {
    let names: Vec<String> = all.iter().map(|r| r.exchange.clone()).collect();
    let bindings: usize = all.iter().filter_map(|r| r.summary.as_ref()).map(|s| s.bindings).sum();
    let distinct = |f: fn(&SummaryDoc) -> &Vec<String>| {
        all.iter().filter_map(|r| r.summary.as_ref()).flat_map(f).collect::<std::collections::BTreeSet<_>>().len()
    };
    let (queues, exchanges) = (distinct(|s| &s.queues), distinct(|s| &s.exchanges));
    let what = match all[0].existence.as_deref() {
        Some("deleted") => "deleted",
        Some(_) => "new",
        None => "rebound",
    };
    format!(
        "{} {what} exchanges in vhost \"{}\" ({}): {bindings} binding(s) to {queues} queue(s) and {exchanges} exchange(s); \
         their keys are not told class by class ({}): `warren route` tells where a key goes",
        all.len(),
        all[0].vhost,
        some(&names, 3),
        all[0].summary.as_ref().map_or("", |s| s.why.as_str()),
    )
}

/// The section of the human plan.
pub fn human(routing: &[RoutingDoc]) -> String {
    if routing.is_empty() {
        return String::new();
    }
    let mut out = "Routing change (messages that go elsewhere once applied):\n".to_string();
    let mut said: std::collections::BTreeSet<(&str, Option<&str>)> = Default::default();
    for r in routing {
        if let Some(all) = group(routing, r) {
            if said.insert((r.vhost.as_str(), r.existence.as_deref())) {
                let _ = writeln!(out, "  {}", grouped(&all));
            }
            continue;
        }
        if let Some(s) = &r.summary {
            let _ = writeln!(out, "  {}: {}; its keys are not told class by class ({})", at(r), bound(s), s.why);
            continue;
        }
        let _ = writeln!(out, "  {}:", at(r));
        for c in &r.classes {
            let example = if c.description == format!("key \"{}\"", c.example) {
                String::new()
            } else {
                format!(" (e.g. \"{}\")", c.example)
            };
            let (before, after) = (queues(&c.before), queues(&c.after));
            let _ = writeln!(out, "    {}{example}: {before} -> {after}", c.description);
        }
        for why in &r.cannot_tell {
            let _ = writeln!(out, "    cannot tell where some keys go: {why}");
        }
    }
    out += "\n";
    out
}

/// The section of the pull-request comment, in at most `room` characters.
pub fn markdown(routing: &[RoutingDoc], room: usize) -> String {
    if routing.is_empty() {
        return String::new();
    }
    let mut out = "**Routing change**: messages that go elsewhere once applied\n\n\
                   | Exchange | Keys | Example | Before | After |\n|---|---|---|---|---|\n"
        .to_string();
    let mut said: std::collections::BTreeSet<(&str, Option<&str>)> = Default::default();
    let summed: Vec<String> = routing
        .iter()
        .filter_map(|r| match group(routing, r) {
            Some(all) => said
                .insert((r.vhost.as_str(), r.existence.as_deref()))
                .then(|| summed_row(&format!("{} exchanges", all.len()), &grouped(&all), r)),
            None => r.summary.as_ref().map(|s| {
                let what = format!("{}; not told class by class ({})", bound(s), s.why);
                summed_row(&format!("`{}`", r.exchange), &what, r)
            }),
        })
        .collect();
    let rows: Vec<String> = routing
        .iter()
        .filter(|r| r.summary.is_none())
        .flat_map(|r| {
            let classes = r.classes.iter().map(move |c| {
                format!(
                    "| `{}`{}{} | {} | `{}` | {} | {} |\n",
                    r.exchange,
                    existence_note(r),
                    vhost_note(&r.vhost),
                    cell(&c.description),
                    cell(&c.example),
                    cell(&queues(&c.before)),
                    cell(&queues(&c.after))
                )
            });
            let unknown = r.cannot_tell.iter().map(move |why| {
                format!(
                    "| `{}`{}{} | cannot tell: {} | | | |\n",
                    r.exchange,
                    existence_note(r),
                    vhost_note(&r.vhost),
                    cell(why)
                )
            });
            classes.chain(unknown)
        })
        .chain(summed)
        .collect();
    let mut used = out.chars().count();
    for (i, row) in rows.iter().enumerate() {
        let n = row.chars().count();
        if used + n > room {
            let _ = writeln!(out, "| … and {} more: see `--format json` | | | | |", rows.len() - i);
            break;
        }
        used += n;
        out += row;
    }
    out += "\n";
    out
}

/// A summed-up exchange (or group of them) as a row: its bindings where
/// the keys would be.
fn summed_row(exchange: &str, what: &str, r: &RoutingDoc) -> String {
    let (before, after) = if r.existence.as_deref() == Some("deleted") {
        ("its bindings", "nothing")
    } else {
        ("nothing", "its bindings")
    };
    format!("| {exchange}{}{} | {} | | {before} | {after} |\n", existence_note(r), vhost_note(&r.vhost), cell(what))
}

fn existence_note(r: &RoutingDoc) -> &'static str {
    match r.existence.as_deref() {
        Some("created") => " (new)",
        Some("deleted") => " (deleted)",
        _ => "",
    }
}

fn vhost_note(vhost: &str) -> String {
    if vhost == "/" { String::new() } else { format!(" (vhost `{vhost}`)") }
}

/// Text safe in a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('`', "'")
}
