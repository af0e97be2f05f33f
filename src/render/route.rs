//! `warren route`'s report: where a message goes, or a queue's dead
//! letters, as a person reads it and as JSON (`docs/schema/route.schema.json`).
//! The human view is drawn from the same document the JSON prints.

use std::fmt::Write;

use serde::Serialize;

use crate::routing::{CannotTell, Hop, Keys, Message, Reason, Route, Version, Why};

/// The JSON document's version; new fields may come within a version.
pub const FORMAT_VERSION: &str = "1";

/// `--format` of `warren route`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RouteFormat {
    Human,
    Json,
}

/// The answer of one `warren route`.
#[derive(Debug, Clone, Serialize)]
pub struct RouteDocument {
    pub format_version: String,
    /// What was read: `the files in topology`, `definitions file x.json`, `http://host:15672`.
    pub source: String,
    pub vhost: String,
    /// The RabbitMQ version headers are compared as (`4.0`).
    pub version: String,
    /// Whether the broker said it (`broker`), the export did (`export`), or
    /// warren assumed the newest it knows (`assumed`).
    pub version_from: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<MessageDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<RouteDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_letters: Option<DeadLettersDoc>,
}

/// The message asked about.
#[derive(Debug, Clone, Serialize)]
pub struct MessageDoc {
    /// "" for the default exchange.
    pub exchange: String,
    pub routing_key: String,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    /// `null`: not given (a headers exchange cannot tell).
    pub headers: Option<serde_json::Value>,
}

/// Where a message goes: [`Route`] with its drops explained in words.
#[derive(Debug, Clone, Serialize)]
pub struct RouteDoc {
    pub queues: Vec<String>,
    pub path: Vec<Hop>,
    pub cannot_tell: Vec<CannotTell>,
    pub dropped: Vec<DroppedDoc>,
    /// The one line of [`describe`].
    pub summary: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct DroppedDoc {
    pub exchange: String,
    #[serde(flatten)]
    pub why: Why,
    pub explanation: String,
}

/// Where a queue's dead letters go.
#[derive(Debug, Clone, Serialize)]
pub struct DeadLettersDoc {
    pub queue: String,
    /// Its dead-letter exchange; `null`: it has none, and its dead letters are dropped.
    pub exchange: Option<String>,
    /// Its dead-letter routing key; `null`: the dead letters keep their keys.
    pub routing_key: Option<String>,
    /// The classes of keys the dead letters carry.
    pub keys: Vec<Keys>,
    pub reasons: Vec<ReasonDoc>,
}

/// One reason a message is dead-lettered.
#[derive(Debug, Clone, Serialize)]
pub struct ReasonDoc {
    pub reason: Reason,
    /// Whether the queue's settings make it dead-letter for this reason.
    pub applies: bool,
    /// The setting that decides it, in words.
    pub why: String,
    /// Where they go, when it applies and the queue has a dead-letter exchange.
    pub route: Option<RouteDoc>,
}

impl RouteDocument {
    pub fn new(source: &str, vhost: &str, version: Version, version_from: &'static str) -> Self {
        RouteDocument {
            format_version: FORMAT_VERSION.into(),
            source: source.into(),
            vhost: vhost.into(),
            version: version.to_string(),
            version_from,
            message: None,
            route: None,
            dead_letters: None,
        }
    }
}

impl MessageDoc {
    pub fn new(message: &Message, key: &str, cc: &[String], bcc: &[String]) -> Self {
        let headers = message.headers.as_ref().map(|h| {
            h.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(v))).collect::<serde_json::Map<_, _>>().into()
        });
        MessageDoc {
            exchange: message.exchange.clone(),
            routing_key: key.into(),
            cc: cc.to_vec(),
            bcc: bcc.to_vec(),
            headers,
        }
    }
}

impl RouteDoc {
    pub fn new(route: &Route) -> Self {
        RouteDoc {
            queues: route.queues.iter().cloned().collect(),
            path: route.path.clone(),
            cannot_tell: route.cannot_tell.clone(),
            dropped: route
                .dropped
                .iter()
                .map(|d| DroppedDoc {
                    exchange: d.exchange.clone(),
                    why: d.why.clone(),
                    explanation: Route::explain(&d.why, &d.exchange),
                })
                .collect(),
            summary: describe(route),
        }
    }
}

/// A route in one line: "reaches orders.audit, orders.shipping.eu", or
/// "reaches no queue: <why>", or where the model cannot tell.
pub fn describe(route: &Route) -> String {
    let queues: Vec<&str> = route.queues.iter().map(String::as_str).collect();
    let unknown: Vec<String> =
        route.cannot_tell.iter().map(|c| format!("{}: {}", exchange(&c.exchange), c.why)).collect();
    let dropped: Vec<String> = route.dropped.iter().map(|d| Route::explain(&d.why, &d.exchange)).collect();
    match (queues.is_empty(), unknown.is_empty()) {
        (false, true) => format!("reaches {}", queues.join(", ")),
        (false, false) => format!("reaches {}, and maybe more: {}", queues.join(", "), unknown.join("; ")),
        (true, false) => format!("cannot tell where it goes: {}", unknown.join("; ")),
        (true, true) if dropped.is_empty() => "reaches no queue".into(),
        (true, true) => format!("reaches no queue: {}", dropped.join("; ")),
    }
}

/// The document in the chosen format; `quiet`: the human view's last
/// lines alone.
pub fn render(doc: &RouteDocument, format: RouteFormat, quiet: bool) -> String {
    match format {
        RouteFormat::Json => serde_json::to_string_pretty(doc).expect("a route document always serialises") + "\n",
        RouteFormat::Human => human(doc, quiet),
    }
}

fn human(doc: &RouteDocument, quiet: bool) -> String {
    let mut out = String::new();
    if let (Some(m), Some(r)) = (&doc.message, &doc.route) {
        if !quiet {
            let _ = writeln!(out, "{} ({}):\n", message(m, &doc.vhost), doc.source);
            out += &steps(r, "  ");
            out += "\n";
        }
        let _ = writeln!(out, "{}.", capitalised(&r.summary));
    }
    if let Some(d) = &doc.dead_letters {
        out += &dead_letters(doc, d, quiet);
    }
    out
}

/// `Message to exchange "orders" in vhost "v", key "a.b", CC "c", headers {"n":1}`.
fn message(m: &MessageDoc, vhost: &str) -> String {
    let quoted = |keys: &[String]| keys.iter().map(|k| format!("\"{k}\"")).collect::<Vec<_>>().join(", ");
    let mut s = format!("Message to {} in vhost \"{vhost}\", key \"{}\"", exchange(&m.exchange), m.routing_key);
    if !m.cc.is_empty() {
        s += &format!(", CC {}", quoted(&m.cc));
    }
    if !m.bcc.is_empty() {
        s += &format!(", BCC {}", quoted(&m.bcc));
    }
    match &m.headers {
        // Said where it matters: a headers exchange on the way cannot tell.
        None => {}
        Some(serde_json::Value::Object(h)) if h.is_empty() => s += ", no headers",
        Some(h) => s += &format!(", headers {h}"),
    }
    s
}

/// The path, the drops and the unknowns of a route, a line each.
fn steps(r: &RouteDoc, indent: &str) -> String {
    let mut out = String::new();
    for hop in &r.path {
        let line = match hop {
            Hop::Binding { exchange: x, key, destination_kind, destination } => {
                let by = if key.is_empty() { "binding".to_string() } else { format!("binding key \"{key}\"") };
                format!("{} -> {destination_kind} \"{destination}\" ({by})", exchange(x))
            }
            Hop::Default { queue } => format!("the default exchange -> queue \"{queue}\" (the key names it)"),
            Hop::Alternate { exchange: x, alternate } => {
                format!("{} -> alternate exchange \"{alternate}\" (no binding matched)", exchange(x))
            }
        };
        let _ = writeln!(out, "{indent}{line}");
    }
    for d in &r.dropped {
        let _ = writeln!(out, "{indent}dropped: {}", d.explanation);
    }
    for c in &r.cannot_tell {
        let _ = writeln!(out, "{indent}cannot tell: {}: {}", exchange(&c.exchange), c.why);
    }
    out
}

fn dead_letters(doc: &RouteDocument, d: &DeadLettersDoc, quiet: bool) -> String {
    let mut out = String::new();
    let (apply, not): (Vec<&ReasonDoc>, Vec<&ReasonDoc>) = d.reasons.iter().partition(|r| r.applies);
    if !quiet {
        let _ = writeln!(out, "Dead letters of queue \"{}\" in vhost \"{}\" ({}):", d.queue, doc.vhost, doc.source);
        match (&d.exchange, &d.routing_key) {
            (None, _) => {}
            (Some(x), Some(k)) => {
                let _ = writeln!(out, "They go to {} with the dead-letter routing key \"{k}\".", exchange(x));
            }
            (Some(x), None) => {
                let keys: Vec<String> = d.keys.iter().map(Keys::describe).collect();
                let _ = writeln!(out, "They go to {} with the keys they carried: {}.", exchange(x), keys.join(", "));
            }
        }
    }
    if d.exchange.is_none() {
        let reasons: Vec<&str> = apply.iter().map(|r| name(r.reason)).collect();
        let what = if reasons.is_empty() { String::new() } else { format!(" ({})", reasons.join(", ")) };
        let _ = writeln!(
            out,
            "It has no dead-letter exchange (argument x-dead-letter-exchange or policy dead-letter-exchange): \
             the messages it dead-letters{what} are dropped."
        );
    }
    for r in &apply {
        match (&r.route, quiet) {
            (Some(route), true) => {
                let _ = writeln!(out, "{}: {}.", name(r.reason), route.summary);
            }
            (Some(route), false) => {
                let _ = write!(out, "\n{}: {}\n{}", name(r.reason), r.why, steps(route, "  "));
                let _ = writeln!(out, "  {}.", capitalised(&route.summary));
            }
            (None, _) => {}
        }
    }
    if !not.is_empty() && !quiet {
        out += "\nNot dead-lettered as:\n";
        for r in &not {
            let _ = writeln!(out, "  {}: {}", name(r.reason), r.why);
        }
    }
    out
}

/// A reason as the command line names it.
fn name(r: Reason) -> &'static str {
    match r {
        Reason::DeliveryLimit => "delivery-limit",
        other => other.as_str(),
    }
}

fn exchange(name: &str) -> String {
    if name.is_empty() { "the default exchange".into() } else { format!("exchange \"{name}\"") }
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::Dropped;

    #[test]
    fn one_line() {
        let mut r = Route::default();
        r.dropped.push(Dropped { exchange: "x".into(), why: Why::NoBindingMatched });
        assert_eq!(
            describe(&r),
            "reaches no queue: no binding of exchange \"x\" matched, and it has no alternate exchange"
        );
        r.queues.extend(["orders.audit".to_string(), "orders.shipping.eu".to_string()]);
        assert_eq!(describe(&r), "reaches orders.audit, orders.shipping.eu");
        r.cannot_tell.push(CannotTell { exchange: "h".into(), why: "its type is a plugin's".into() });
        assert_eq!(
            describe(&r),
            "reaches orders.audit, orders.shipping.eu, and maybe more: exchange \"h\": its type is a plugin's"
        );
    }
}
