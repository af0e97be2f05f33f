//! `warren route`: where a message goes, or where a queue's dead letters
//! go, by the routing model over the files, an export or the broker. It
//! only reads: nothing is ever published.

use super::live_side::{self, StateFile, StateRead};
use crate::broker::{Broker, BrokerError};
use crate::cli::{Connection, RouteArgs};
use crate::error::{self, Done, Error};
use crate::model::{Table, Topology, Value, Vhost};
use crate::render::route::{self as report, DeadLettersDoc, MessageDoc, ReasonDoc, RouteDocument};
use crate::routing::{Keys, Message, Reason, Route, Router, Version};
use crate::writer::Writer;

/// The topology a route is read from, and what it says of itself.
struct Read {
    topology: Topology,
    /// How the report names it: `the files in topology`, `http://host:15672`.
    origin: String,
    /// The RabbitMQ version that the broker says, or that wrote the export.
    version: Option<String>,
    /// Which of the two: `broker` or `export` (`assumed` without one).
    version_from: &'static str,
}

/// Answers the question of `args` against the files of `args.path` (or
/// its environment's), an export, or the broker: with `--live` and no
/// `--env`, the broker of the project's default environment, as `plan`.
pub fn run(args: &RouteArgs, connection: &Connection, out: &Writer) -> error::Result {
    let env = match (&args.env, args.live) {
        (None, true) => super::fleet::against_broker(&args.path, Vec::new(), out)?.pop(),
        (env, _) => env.clone(),
    };
    let env = env.as_deref();
    let headers = match (args.no_headers, args.headers.is_empty()) {
        (true, _) => Some(Table::new()),
        (false, true) => None,
        (false, false) => Some(parse_headers(&args.headers)?),
    };
    let read = read(args, env, connection, out)?;
    let vhost = pick_vhost(&read, args.vhost.as_deref())?;
    let version = Version::parse(read.version.as_deref());
    let said_version = match &read.version {
        Some(v) => format!("RabbitMQ {v}, as the {} says", read.version_from),
        None => format!("RabbitMQ {version}, the newest warren knows: nothing read says its version"),
    };
    if out.verbose() {
        out.errln(format!("warren: headers are compared as {said_version}."));
    }
    let router = Router::new(vhost, version);
    let mut doc = RouteDocument::new(&read.origin, &vhost.name, version, read.version_from);
    match &args.dead_letters {
        Some(queue) => {
            doc.dead_letters = Some(dead_letters(&router, vhost, queue, args, headers, &read.origin)?);
        }
        None => {
            let exchange = args.exchange.as_deref().unwrap_or_default();
            if !router.exchange_exists(exchange) {
                return Err(unknown("exchange", exchange, vhost.exchanges.keys(), &read.origin, &vhost.name).line(
                    "  help: `--exchange \"\"` is the default exchange, which routes to the queue the key names",
                ));
            }
            let key = args.key.clone().unwrap_or_default();
            let keys: Vec<String> =
                std::iter::once(key.clone()).chain(args.cc.iter().cloned()).chain(args.bcc.iter().cloned()).collect();
            let message = Message { exchange: exchange.to_string(), keys: Keys::Exact(keys), headers };
            let route = router.route(&message);
            doc.message = Some(MessageDoc::new(&message, &key, &args.cc, &args.bcc));
            doc.route = Some(report::RouteDoc::new(&route));
        }
    }
    out.out(report::render(&doc, args.format, out.quiet()));
    Ok(Done::Ok)
}

/// The topology: the files (base or environment), an export, or the broker.
fn read(args: &RouteArgs, env: Option<&str>, connection: &Connection, out: &Writer) -> error::Result<Read> {
    if let Some(file) = &args.state {
        let state = StateFile { path: file, vhost: args.vhost.as_deref() };
        let side = match live_side::from_state(state) {
            Ok(StateRead::Read(side)) => *side,
            Ok(StateRead::Unnamed { .. }) => {
                return Err(Error::invalid().line(format!(
                    "error: {} is the export of a single vhost, and does not say which\n  help: name it with --vhost NAME",
                    file.display()
                )));
            }
            Err(d) => return Err(Error::invalid().drawn([d], &Default::default())),
        };
        let version = written_by(file);
        let version_from = if version.is_some() { "export" } else { "assumed" };
        return Ok(Read { topology: side.topology, origin: side.origin, version, version_from });
    }
    if args.live {
        return from_broker(args, env, connection);
    }
    let (desired, origin) = match env {
        Some(env) => {
            let (_, d) = super::fleet::one(&args.path, &[env.to_string()], out)?;
            (d, format!("environment {env} of the files in {}", args.path.display()))
        }
        None => {
            let d = crate::desired::load(&args.path);
            let errors: Vec<_> = d.diagnostics.iter().filter(|d| d.is_error()).cloned().collect();
            super::findings::shown(&errors, &d.sources, out);
            (d, format!("the files in {}", args.path.display()))
        }
    };
    if desired.has_errors() {
        return Err(Error::invalid().line(format!("{} is not valid: no route was made.", args.path.display())));
    }
    Ok(Read { topology: desired.topology.into_inner(), origin, version: None, version_from: "assumed" })
}

/// The broker's definitions of the vhost asked about (of every vhost when
/// none is named), and its version: read requests only.
fn from_broker(args: &RouteArgs, env: Option<&str>, connection: &Connection) -> error::Result<Read> {
    let connection = match env {
        None => connection.clone(),
        Some(name) => {
            let project = crate::project::read(&args.path);
            let picked =
                project.select(&[name.to_string()]).map_err(|d| Error::invalid().drawn([d], &Default::default()))?;
            let [env] = picked.as_slice() else {
                return Err(Error::invalid().line(format!("error: `--env {name}` picks more than one environment")));
            };
            super::fleet::connection(env, connection).map_err(|d| Error::invalid().drawn([d], &Default::default()))?
        }
    };
    let broker = live_side::connect(&connection).map_err(|d| Error::invalid().drawn([d], &Default::default()))?;
    let (live, version) = super::block_on(read_vhosts(&broker, args.vhost.as_deref())).map_err(Error::broker)?;
    Ok(Read { topology: live.topology, origin: broker.origin(), version: Some(version), version_from: "broker" })
}

/// The RabbitMQ version that wrote an export (`rabbitmq_version`, 3.8+;
/// else `rabbit_version`), when it says.
fn written_by(file: &std::path::Path) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Written {
        rabbitmq_version: Option<String>,
        rabbit_version: Option<String>,
    }
    let text = std::fs::File::open(file).ok()?;
    let w: Written = serde_json::from_reader(std::io::BufReader::new(text)).ok()?;
    w.rabbitmq_version.or(w.rabbit_version)
}

/// The vhost asked about, else every vhost the user may read, by the
/// requests `plan` makes (which a user without the `administrator` tag may
/// make too); and the broker's version.
async fn read_vhosts(broker: &impl Broker, vhost: Option<&str>) -> Result<(crate::live::Live, String), BrokerError> {
    let names = match vhost {
        Some(v) => vec![v.to_string()],
        None => {
            let listing: Vec<serde_json::Value> = serde_json::from_str(&broker.vhosts().await?)
                .map_err(|e| BrokerError::Unreadable { action: "list the vhosts".into(), reason: e.to_string() })?;
            listing.iter().filter_map(|v| v["name"].as_str().map(str::to_string)).collect()
        }
    };
    let (version, live) = tokio::join!(broker.check(), crate::live::from_broker(broker, &names));
    Ok((live?, version?))
}

/// The vhost asked about, or the only one there is.
fn pick_vhost<'t>(read: &'t Read, asked: Option<&str>) -> error::Result<&'t Vhost> {
    let names = || read.topology.vhosts.keys().map(|v| format!("\"{v}\"")).collect::<Vec<_>>().join(", ");
    match asked {
        Some(v) => read.topology.vhosts.get(v).ok_or_else(|| {
            let there = if read.topology.vhosts.is_empty() { "none".to_string() } else { names() };
            Error::invalid()
                .line(format!("error: no vhost \"{v}\" in {}\n  help: the vhosts there: {there}", read.origin))
        }),
        None => {
            let mut all = read.topology.vhosts.values();
            match (all.next(), all.next()) {
                (Some(v), None) => Ok(v),
                (None, _) => Err(Error::invalid().line(format!("error: no vhost in {}", read.origin))),
                _ => Err(Error::invalid().line(format!(
                    "error: {} holds several vhosts: name one with --vhost\n  help: the vhosts there: {}",
                    read.origin,
                    names()
                ))),
            }
        }
    }
}

/// An exchange or queue that is not there, with the closest names that are.
fn unknown<'n>(what: &str, name: &str, known: impl Iterator<Item = &'n String>, origin: &str, vhost: &str) -> Error {
    let mut close: Vec<(f64, &String)> =
        known.map(|k| (strsim::jaro_winkler(name, k), k)).filter(|(score, _)| *score > 0.8).collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut e = Error::invalid().line(format!("error: no {what} \"{name}\" in vhost \"{vhost}\" of {origin}"));
    if let Some((_, k)) = close.first() {
        e = e.line(format!("  help: did you mean \"{k}\"?"));
    }
    e
}

/// Where the dead letters of `queue` go, for each reason asked about.
fn dead_letters(
    router: &Router,
    vhost: &Vhost,
    queue: &str,
    args: &RouteArgs,
    headers: Option<Table>,
    origin: &str,
) -> error::Result<DeadLettersDoc> {
    if !vhost.queues.contains_key(queue) {
        let e = unknown("queue", queue, vhost.queues.keys(), origin, &vhost.name);
        return Err(if vhost.external.queues.contains(queue) {
            e.line("  help: the files name it as declared elsewhere: its settings, and so its dead letters, are not known here")
        } else {
            e
        });
    }
    let dlx = router.dead_letter_exchange(queue);
    // The dead-lettered messages, as published: the one asked about, else
    // every message the queue can hold (with the headers given, for each).
    let originals: Option<(Vec<Keys>, Option<Table>)> = match (&args.key, headers) {
        (Some(key), h) => {
            let keys = std::iter::once(key).chain(&args.cc).chain(&args.bcc).cloned().collect();
            Some((vec![Keys::Exact(keys)], h))
        }
        (None, Some(h)) => Some((router.keys_into(queue), Some(h))),
        (None, None) => None,
    };
    let exchange = args.exchange.as_deref().unwrap_or_default();
    let mut reasons = Vec::new();
    let mut keys = Vec::new();
    for (reason, why) in router.dead_letter_reasons(queue) {
        if args.reason.is_some_and(|r| r != reason) {
            continue;
        }
        let route = match (&why, dlx) {
            (Ok(_), Some(_)) => Some(dead_letter_route(router, queue, reason, exchange, originals.as_ref(), &mut keys)),
            _ => None,
        };
        let (applies, why) = match why {
            Ok(w) => (true, w),
            Err(w) => (false, w),
        };
        reasons.push(ReasonDoc { reason, applies, why, route: route.as_ref().map(report::RouteDoc::new) });
    }
    Ok(DeadLettersDoc {
        queue: queue.to_string(),
        exchange: dlx.map(|(x, _)| x.to_string()),
        routing_key: dlx.and_then(|(_, k)| k.map(str::to_string)),
        keys,
        reasons,
    })
}

/// The route of the dead letters of `queue` for `reason`, over each
/// original message (published to `exchange`); the classes of keys they
/// carry added to `keys`.
fn dead_letter_route(
    router: &Router,
    queue: &str,
    reason: Reason,
    exchange: &str,
    originals: Option<&(Vec<Keys>, Option<Table>)>,
    keys: &mut Vec<Keys>,
) -> Route {
    let letters: Vec<_> = match originals {
        None => router.dead_letters(queue, reason, None).into_iter().collect(),
        Some((classes, headers)) => classes
            .iter()
            .filter_map(|k| {
                let original = Message { exchange: exchange.to_string(), keys: k.clone(), headers: headers.clone() };
                router.dead_letters(queue, reason, Some(&original))
            })
            .collect(),
    };
    let mut route = Route::default();
    for letter in letters {
        add_new(keys, letter.keys);
        route.queues.extend(letter.route.queues);
        // Each original message may take the same steps: each is said once.
        add_new(&mut route.path, letter.route.path);
        add_new(&mut route.cannot_tell, letter.route.cannot_tell);
        add_new(&mut route.dropped, letter.route.dropped);
    }
    route
}

fn add_new<T: PartialEq>(to: &mut Vec<T>, items: Vec<T>) {
    for item in items {
        if !to.contains(&item) {
            to.push(item);
        }
    }
}

/// `k=v` typed (an integer, a float, true or false, else a string), or
/// `k:=JSON`.
pub fn parse_headers(given: &[String]) -> error::Result<Table> {
    let mut table = Table::new();
    for h in given {
        let bad = |why: &str| {
            Error::invalid().line(format!(
                "error: --header \"{h}\": {why}\n  help: give k=v (v an integer, a float, true, false or a string) or k:=JSON"
            ))
        };
        let (name, value) = if let Some((k, json)) = h.split_once(":=") {
            let v: serde_json::Value = serde_json::from_str(json).map_err(|e| bad(&format!("not JSON: {e}")))?;
            (k, Value::from(&v))
        } else if let Some((k, v)) = h.split_once('=') {
            (k, typed(v))
        } else {
            return Err(bad("no `=`"));
        };
        if name.is_empty() {
            return Err(bad("no header name"));
        }
        table.insert(name.to_string(), value);
    }
    Ok(table)
}

fn typed(v: &str) -> Value {
    if let Ok(i) = v.parse::<i64>() {
        Value::Int(i)
    } else if let Some(f) = v.parse::<f64>().ok().filter(|f| f.is_finite() && v.contains(['.', 'e', 'E'])) {
        Value::Float(f)
    } else {
        match v {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(v.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_typed() {
        let t =
            parse_headers(&["a=1".into(), "b=1.5".into(), "c=true".into(), "d=x=y".into(), "e:=\"1\"".into()]).unwrap();
        assert_eq!(t.get("a"), Some(&Value::Int(1)));
        assert_eq!(t.get("b"), Some(&Value::Float(1.5)));
        assert_eq!(t.get("c"), Some(&Value::Bool(true)));
        assert_eq!(t.get("d"), Some(&Value::String("x=y".into())));
        assert_eq!(t.get("e"), Some(&Value::String("1".into())));
        assert!(parse_headers(&["nothing".into()]).is_err());
        assert!(parse_headers(&["=1".into()]).is_err());
        assert!(parse_headers(&["a:={".into()]).is_err());
        // "inf" and "nan" are words, not floats.
        assert_eq!(parse_headers(&["n=nan".into()]).unwrap().get("n"), Some(&Value::String("nan".into())));
    }
}
