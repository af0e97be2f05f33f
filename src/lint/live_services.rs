//! The services' contract checked on the live broker (`warren lint
//! --live`): who consumes each queue a service consumes, what each
//! service's user publishes to, and whether each service is connected.
//! Pure: `commands::lint` reads the broker.

use std::collections::{BTreeMap, BTreeSet};

use super::{Context, LISTED, describe_exchange, finding, listed};
use crate::broker::{Client, Consumer};
use crate::diagnostic::Diagnostic;
use crate::model::Vhost;

/// What the broker showed of each vhost's clients (see `live::Observed`).
pub(super) struct Shown<'o> {
    pub consumers: &'o BTreeMap<String, Vec<Consumer>>,
    pub connections: &'o BTreeMap<String, Vec<Client>>,
    pub published_to: Option<&'o BTreeMap<String, BTreeSet<String>>>,
    pub every_client: bool,
}

pub(super) fn check(ctx: &mut Context, observed: Shown) {
    let with_services: Vec<(&String, &Vhost)> =
        ctx.topology.vhosts.iter().filter(|(_, v)| !v.services.is_empty()).collect();
    if with_services.is_empty() {
        return;
    }
    if !observed.every_client {
        // Its own clients only: every other service would look idle, and
        // no consumer foreign. Said once, about the broker.
        let d = Diagnostic::info(
            "service-idle",
            "warren's user sees only its own connections and consumers (it has neither the `monitoring` nor the `administrator` tag): the services' live checks (`foreign-consumer`, `publish-undeclared`, `service-idle`) are skipped",
        )
        .help("run `warren lint --live` as a user with the `monitoring` tag");
        ctx.out.shown.push(d);
        return;
    }
    let mut found: Vec<(&str, String, String, Diagnostic)> = Vec::new();
    for (vname, vhost) in with_services {
        let consumers = observed.consumers.get(vname).map(Vec::as_slice).unwrap_or_default();
        let clients = observed.connections.get(vname).map(Vec::as_slice).unwrap_or_default();
        for (service, field, d) in foreign_consumers(vname, vhost, consumers) {
            found.push((vname, service, field, d));
        }
        for (service, d) in undeclared_publishes(vname, vhost, clients, observed.published_to) {
            found.push((vname, service, "user".to_string(), d));
        }
        for (service, d) in idle(vname, vhost, clients) {
            found.push((vname, service, "user".to_string(), d));
        }
    }
    for (vname, service, field, d) in found {
        ctx.report_service(vname, &service, &field, d);
    }
    if observed.published_to.is_none() {
        // About the broker as a whole, once: not per connection.
        let d = Diagnostic::info(
            "publish-undeclared",
            "the broker keeps no per-exchange statistics of channels (`management.rates_mode` is not `detailed`): lint sees that a service's user publishes, not to which exchanges",
        )
        .help("only a user whose services declare no `publishes` at all is found publishing where it should not; set `management.rates_mode = detailed` in rabbitmq.conf for the exchanges (it costs the broker more statistics)");
        ctx.out.shown.push(d);
    }
}

/// A connection as messages name it: the name its client gave it, and the
/// broker's name, which holds its peer's address.
fn connection(client_name: Option<&str>, broker_name: &str) -> String {
    match client_name {
        Some(n) => format!("\"{n}\" ({broker_name})"),
        None => broker_name.to_string(),
    }
}

/// Up to [`LISTED`] connections, and how many more.
fn connections(mut named: Vec<String>) -> String {
    named.sort();
    named.dedup();
    let n = named.len();
    let mut out = named.iter().take(LISTED).cloned().collect::<Vec<_>>().join(", ");
    if n > LISTED {
        out += &format!(" and {} more", n - LISTED);
    }
    out
}

/// `foreign-consumer`: a consumer of a queue that services consume, from a
/// user none of them connects as. One finding per queue, each foreign user
/// with its connections; at the first service's `consumes` entry.
fn foreign_consumers(vname: &str, vhost: &Vhost, consumers: &[Consumer]) -> Vec<(String, String, Diagnostic)> {
    let mut readers: BTreeMap<&str, Vec<(&str, &str, usize)>> = BTreeMap::new();
    for s in vhost.services.values() {
        for (i, q) in s.consumes.iter().enumerate() {
            readers.entry(q).or_default().push((&s.name, &s.user, i));
        }
    }
    let mut foreign: BTreeMap<&str, BTreeMap<&str, Vec<String>>> = BTreeMap::new();
    // A consumer is listed a moment before its channel's user is: unknown
    // yet, it is nobody's.
    for c in consumers.iter().filter(|c| !c.user.is_empty()) {
        let Some(services) = readers.get(c.queue.as_str()) else { continue };
        if services.iter().any(|(_, user, _)| *user == c.user) {
            continue;
        }
        let conn = connection(c.client_name.as_deref(), &c.connection);
        foreign.entry(&c.queue).or_default().entry(&c.user).or_default().push(conn);
    }
    let mut out = Vec::new();
    for (queue, by_user) in foreign {
        let services = &readers[queue];
        let names: Vec<&str> = services.iter().map(|(s, _, _)| *s).collect();
        let users: BTreeSet<&str> = services.iter().map(|(_, u, _)| *u).collect();
        let who: Vec<String> = by_user
            .into_iter()
            .map(|(user, conns)| {
                let theirs =
                    vhost.services.values().filter(|s| s.user == user).map(|s| s.name.as_str()).collect::<Vec<_>>();
                let of = match theirs.as_slice() {
                    [] => String::from(", of no service"),
                    some => format!(", of service {}", listed(some)),
                };
                format!("user \"{user}\"{of}, on {}", connections(conns))
            })
            .collect();
        let d = finding(
            "foreign-consumer",
            format!(
                "queue \"{queue}\" in vhost \"{vname}\" is consumed by {}, which service {} (user {}) does not connect as: the services get only part of its messages",
                who.join("; "),
                listed(&names),
                listed(&users.into_iter().collect::<Vec<_>>()),
            ),
        )
        .help("stop that consumer, or declare the service it belongs to in the files with a queue of its own (two services on one queue is `shared-queue`); the service's generated permissions refuse a user it does not name");
        let (first, _, i) = services[0];
        out.push((first.to_string(), format!("consumes.{i}"), d));
    }
    out
}

/// `publish-undeclared`: a connection of a service's user that published
/// to an exchange no service of that user declares; without per-exchange
/// statistics (`published_to` is `None`), one that published at all
/// though its user's services declare no publish. One finding per user.
fn undeclared_publishes(
    vname: &str,
    vhost: &Vhost,
    clients: &[Client],
    published_to: Option<&BTreeMap<String, BTreeSet<String>>>,
) -> Vec<(String, Diagnostic)> {
    let mut out = Vec::new();
    for (user, services) in by_user(vhost) {
        let declared: BTreeSet<&str> =
            services.iter().flat_map(|s| &vhost.services[*s].publishes).map(|p| p.exchange.as_str()).collect();
        // Exchange ("" for "anywhere": the statistics do not say) → connections.
        let mut wrong: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for c in clients.iter().filter(|c| c.user == user && c.published > 0) {
            let conn = connection(c.client_name.as_deref(), &c.connection);
            match published_to {
                Some(to) => {
                    let exchanges = c.publishing_channels.iter().filter_map(|ch| to.get(ch)).flatten();
                    for x in exchanges.filter(|x| !declared.contains(x.as_str())) {
                        wrong.entry(describe_exchange(x)).or_default().push(conn.clone());
                    }
                }
                None if declared.is_empty() => {
                    let conn = format!("{conn}: {} message(s)", c.published);
                    wrong.entry("exchanges the broker does not name".into()).or_default().push(conn);
                }
                None => {}
            }
        }
        wrong.retain(|_, conns| !conns.is_empty());
        if wrong.is_empty() {
            continue;
        }
        let what: Vec<String> =
            wrong.into_iter().map(|(x, conns)| format!("{x} (on {})", connections(conns))).collect();
        let d = finding(
            "publish-undeclared",
            format!(
                "user \"{user}\" of service {} published in vhost \"{vname}\" to {}, which no service of that user declares",
                listed(&services),
                what.join("; ")
            ),
        )
        .help("add the exchange to the `publishes` of the service that sends it, or stop that publisher; the service's generated permissions refuse an exchange it does not name");
        out.push((services[0].to_string(), d));
    }
    out
}

/// `service-idle`: services whose user has no connection to the vhost. One
/// finding per user.
fn idle(vname: &str, vhost: &Vhost, clients: &[Client]) -> Vec<(String, Diagnostic)> {
    let connected: BTreeSet<&str> = clients.iter().map(|c| c.user.as_str()).collect();
    by_user(vhost)
        .into_iter()
        .filter(|(user, _)| !connected.contains(user))
        .map(|(user, services)| {
            let d = finding(
                "service-idle",
                format!("service {} (user \"{user}\") has no connection to vhost \"{vname}\"", listed(&services)),
            )
            .help("a service that is down, not deployed yet, or gone: start it, or remove it from the files (its user keeps its permissions until then)");
            (services[0].to_string(), d)
        })
        .collect()
}

/// Each user of a service in `vhost`, with its services in name order.
fn by_user(vhost: &Vhost) -> BTreeMap<&str, Vec<&str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for s in vhost.services.values() {
        out.entry(&s.user).or_default().push(&s.name);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::lint::live::{Observed, check};

    const FILES: &str = r#"vhosts = ["shop"]
[exchanges.orders]
type = "topic"
[exchanges.audit]
type = "fanout"
[queues."orders.placed"]
[[bindings]]
source = "orders"
queue = "orders.placed"
routing_key = "order.placed"
[users.shop]
password_env = "A"
[users.billing]
password_env = "B"
[users.reports]
password_env = "C"
[services.storefront]
user = "shop"
publishes = [{ exchange = "orders", keys = ["order.placed"] }]
[services.billing]
user = "billing"
consumes = ["orders.placed"]
[services.reports]
user = "reports"
[services.reports-nightly]
user = "reports"
"#;

    fn client(user: &str, port: u16, published: u64) -> Client {
        Client {
            connection: format!("10.0.0.5:{port} -> 10.0.0.2:5672"),
            user: user.into(),
            client_name: None,
            published,
            publishing_channels: if published > 0 { vec![format!("ch{port}")] } else { Vec::new() },
        }
    }

    fn consumer(user: &str, port: u16) -> Consumer {
        Consumer {
            queue: "orders.placed".into(),
            user: user.into(),
            connection: format!("10.0.0.5:{port} -> 10.0.0.2:5672"),
            client_name: Some(format!("tool-{port}")),
        }
    }

    /// The live findings of the services' codes for `observed`.
    fn lint_live(observed: Observed) -> Vec<Diagnostic> {
        let root = Path::new("/t");
        let d = crate::desired::load_texts(root, vec![(root.join("t.toml"), FILES.to_string())]);
        assert!(d.diagnostics.iter().all(|d| !d.is_error()), "{:?}", d.diagnostics);
        let codes = ["foreign-consumer", "publish-undeclared", "service-idle", "shared-queue"];
        let f = check(&d.topology, &d.locations, &d.project.lint, &observed);
        f.shown.into_iter().filter(|d| codes.contains(&d.code)).collect()
    }

    /// Ten connections of a foreign user on a service's queue are one
    /// finding that names three; ten services of one idle user, one.
    #[test]
    fn repeated_findings_are_one_per_queue_or_user() {
        let mut consumers: Vec<Consumer> = (1..=10).map(|p| consumer("ops", p)).collect();
        consumers.push(consumer("billing", 20));
        consumers.push(consumer("", 21));
        let connections = (1..=10).map(|p| client("ops", p, 0)).chain([client("billing", 20, 0)]);
        let observed = Observed {
            consumers: BTreeMap::from([("shop".to_string(), consumers)]),
            connections: BTreeMap::from([("shop".to_string(), connections.collect())]),
            published_to: Some(BTreeMap::new()),
            every_client: true,
            ..Observed::default()
        };
        let found = lint_live(observed);
        let codes: Vec<&str> = found.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["foreign-consumer", "service-idle", "service-idle"], "{found:#?}");
        let m = &found[0].message;
        assert!(m.contains("user \"ops\", of no service, on \"tool-1\" (10.0.0.5:1 -> 10.0.0.2:5672)"), "{m}");
        assert!(m.contains("and 7 more") && m.contains("service \"billing\" (user \"billing\")"), "{m}");
        let at = &found[0].location.as_ref().expect("a place").span;
        assert_eq!((FILES[..at.start].matches('\n').count() + 1, &FILES[at.clone()]), (22, "\"orders.placed\""));
        let idle: Vec<&str> = found[1..].iter().map(|d| d.message.as_str()).collect();
        assert!(idle[0].contains("service \"reports\", \"reports-nightly\" (user \"reports\")"), "{idle:?}");
        assert!(idle[1].contains("service \"storefront\" (user \"shop\")"), "{idle:?}");
    }

    /// A user that sees only its own clients makes no service look idle:
    /// one info says that the checks are skipped.
    #[test]
    fn a_user_that_sees_only_its_own_clients_skips_the_checks() {
        let found = lint_live(Observed::default());
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(found[0].location.is_none() && found[0].message.contains("`monitoring`"), "{found:#?}");
    }

    /// With per-exchange statistics each undeclared exchange is named; a
    /// declared one is not. Without them, a user whose services publish is
    /// not judged, one that declares no publish is, and one info says so.
    #[test]
    fn undeclared_publishes_by_what_the_broker_keeps() {
        let connections = vec![client("shop", 1, 40), client("billing", 2, 3), client("reports", 3, 0)];
        let detailed = Observed {
            connections: BTreeMap::from([("shop".to_string(), connections.clone())]),
            published_to: Some(BTreeMap::from([
                ("ch1".to_string(), BTreeSet::from(["orders".to_string(), "audit".to_string()])),
                ("ch2".to_string(), BTreeSet::from([String::new()])),
            ])),
            every_client: true,
            ..Observed::default()
        };
        let found = lint_live(detailed);
        let published: Vec<&str> =
            found.iter().filter(|d| d.code == "publish-undeclared").map(|d| d.message.as_str()).collect();
        assert_eq!(published.len(), 2, "{found:#?}");
        assert!(published[0].contains("user \"billing\"") && published[0].contains("the default exchange"));
        assert!(published[1].contains("user \"shop\"") && published[1].contains("exchange \"audit\""));
        assert!(!published[1].contains("\"orders\""), "{}", published[1]);

        let basic = Observed {
            connections: BTreeMap::from([("shop".to_string(), connections)]),
            published_to: None,
            every_client: true,
            ..Observed::default()
        };
        let found = lint_live(basic);
        let published: Vec<&Diagnostic> = found.iter().filter(|d| d.code == "publish-undeclared").collect();
        assert_eq!(published.len(), 2, "{found:#?}");
        assert!(published[0].message.contains("user \"billing\"") && published[0].message.contains("3 message(s)"));
        assert!(published[0].location.is_some());
        assert!(published[1].location.is_none() && published[1].severity == crate::diagnostic::Severity::Info);
    }
}
