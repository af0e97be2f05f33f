//! The plan's routing change (`routing` in the JSON document): for each
//! exchange whose routing changes, the classes of keys that go elsewhere,
//! each with an example key, the queues before and after, and which
//! queues stop or start receiving them.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::routing::change::{ExchangeChange, Term};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutingDoc {
    pub vhost: String,
    pub exchange: String,
    pub classes: Vec<KeyClassDoc>,
    /// Why some keys' queues cannot be told: a headers exchange, a
    /// plugin's type, an exchange declared elsewhere on their way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cannot_tell: Vec<String>,
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
    pub fn new(vhost: &str, change: &ExchangeChange) -> Self {
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
            exchange: change.exchange.clone(),
            classes: change
                .classes
                .iter()
                .map(|c| KeyClassDoc {
                    description: c.describe(),
                    keys: terms(&c.keys),
                    except: terms(&c.except),
                    example: c.example.clone(),
                    before: c.before.iter().cloned().collect(),
                    after: c.after.iter().cloned().collect(),
                    stop: c.stop().cloned().collect(),
                    start: c.start().cloned().collect(),
                })
                .collect(),
            cannot_tell: change.cannot_tell.clone(),
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
    format!("exchange \"{}\" in vhost \"{}\"", r.exchange, r.vhost)
}

/// The section of the human plan.
pub fn human(routing: &[RoutingDoc]) -> String {
    if routing.is_empty() {
        return String::new();
    }
    let mut out = "Routing change (messages that go elsewhere once applied):\n".to_string();
    for r in routing {
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
    let rows: Vec<String> = routing
        .iter()
        .flat_map(|r| {
            let classes = r.classes.iter().map(move |c| {
                format!(
                    "| `{}`{} | {} | `{}` | {} | {} |\n",
                    r.exchange,
                    vhost_note(&r.vhost),
                    cell(&c.description),
                    cell(&c.example),
                    cell(&queues(&c.before)),
                    cell(&queues(&c.after))
                )
            });
            let unknown = r.cannot_tell.iter().map(move |why| {
                format!("| `{}`{} | cannot tell: {} | | | |\n", r.exchange, vhost_note(&r.vhost), cell(why))
            });
            classes.chain(unknown)
        })
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

fn vhost_note(vhost: &str) -> String {
    if vhost == "/" { String::new() } else { format!(" (vhost `{vhost}`)") }
}

/// Text safe in a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('`', "'")
}
