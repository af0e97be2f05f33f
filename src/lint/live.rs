//! The rules that read the live broker (`warren lint --live`): who consumes
//! each queue, what the broker reports deprecated and in use, and queues
//! someone consumes from that no project owns. Pure: the command reads the
//! broker, these functions only look at what it read.

use std::collections::{BTreeMap, BTreeSet};

use super::{Context, Findings, LintSettings, finding};
use crate::broker::{Client, Consumer, DeprecatedFeature};
use crate::diagnostic::{Diagnostic, Severity};
use crate::model::{Binding, DestinationKind, ObjectKey, Ownership, Permission, Queue, QueueType, Topology};
use crate::source::Locations;
use crate::toml_text;

/// What the broker said, for the vhosts the files declare.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// Its RabbitMQ version (major, minor), as the live state's read gives it.
    pub version: Option<(u32, u32)>,
    pub topology: Topology,
    pub ownership: Ownership,
    /// The consumers of each declared vhost's queues.
    pub consumers: BTreeMap<String, Vec<Consumer>>,
    /// `None`: the broker has no list of deprecated features in use.
    pub deprecated: Option<Vec<DeprecatedFeature>>,
    /// The client connections of each declared vhost.
    pub connections: BTreeMap<String, Vec<Client>>,
    /// The exchanges each publishing channel of a service's user published
    /// to, by channel; `None` when the broker keeps no per-exchange
    /// statistics (`management.rates_mode` other than `detailed`).
    pub published_to: Option<BTreeMap<String, BTreeSet<String>>>,
    /// Whether the broker listed every user's clients (to warren's user
    /// with the `monitoring` or `administrator` tag), not only its own.
    pub every_client: bool,
}

/// The live rules' findings about the broker `observed` describes, for the
/// files' `topology`.
pub fn check(topology: &Topology, locations: &Locations, settings: &LintSettings, observed: &Observed) -> Findings {
    let version = observed.version;
    let views = std::collections::BTreeMap::new();
    let mut ctx = Context::new(topology, locations, settings, version, &views);
    let consumed = consumers_by_queue(observed);
    shared_queues(&mut ctx, &consumed, &observed.topology);
    unmanaged(&mut ctx, observed, &consumed);
    priorities(&mut ctx, observed, version);
    deprecated(&mut ctx, observed);
    let shown = super::live_services::Shown {
        consumers: &observed.consumers,
        connections: &observed.connections,
        published_to: observed.published_to.as_ref(),
        every_client: observed.every_client,
    };
    super::live_services::check(&mut ctx, shown);
    ctx.out
}

/// Who a consumer is: the user, and the name its client gave the connection.
fn service(c: &Consumer) -> (&str, Option<&str>) {
    (&c.user, c.client_name.as_deref())
}

/// Each vhost's consumers, by queue.
type Consumed<'o> = BTreeMap<&'o String, BTreeMap<&'o str, Vec<&'o Consumer>>>;

fn consumers_by_queue(observed: &Observed) -> Consumed<'_> {
    let mut out: Consumed = BTreeMap::new();
    for (vname, consumers) in &observed.consumers {
        let by_queue = out.entry(vname).or_default();
        for c in consumers {
            by_queue.entry(&c.queue).or_default().push(c);
        }
    }
    out
}

fn shared_queues(ctx: &mut Context, consumed: &Consumed, live: &Topology) {
    for (&vname, by_queue) in consumed {
        for (&queue, consumers) in by_queue {
            // The files say who reads a queue that services consume:
            // `foreign-consumer` names whoever else does, with the service.
            let services = ctx.topology.vhosts.get(vname).map(|v| v.services.values());
            if services.into_iter().flatten().any(|s| s.consumes.iter().any(|q| q == queue)) {
                continue;
            }
            let users: BTreeSet<&str> = consumers.iter().map(|c| c.user.as_str()).collect();
            let names: BTreeSet<&str> = consumers.iter().filter_map(|c| c.client_name.as_deref()).collect();
            if users.len() < 2 && names.len() < 2 {
                continue;
            }
            // Services by user when users differ, else by connection name.
            let by_user = users.len() > 1;
            let mut services: BTreeMap<&str, Vec<&Consumer>> = BTreeMap::new();
            for c in consumers {
                let (user, name) = service(c);
                let id = if by_user { user } else { name.unwrap_or(user) };
                services.entry(id).or_default().push(c);
            }
            let listed: Vec<String> = services
                .iter()
                .map(|(id, cs)| {
                    let conns: BTreeSet<String> = cs
                        .iter()
                        .map(|c| match &c.client_name {
                            Some(n) => format!("\"{n}\" ({})", c.connection),
                            None => c.connection.clone(),
                        })
                        .collect();
                    let who = if by_user { format!("user \"{id}\"") } else { format!("connection \"{id}\"") };
                    format!("{who} on {}", conns.into_iter().collect::<Vec<_>>().join(", "))
                })
                .collect();
            let d = finding(
                "shared-queue",
                format!(
                    "queue \"{queue}\" in vhost \"{vname}\" is consumed by {} services: {}; each gets only part of its messages",
                    services.len(),
                    listed.join("; ")
                ),
            )
            .help(fix(vname, queue, services.keys().copied().collect(), by_user, ctx.topology, live, by_queue));
            let key = ObjectKey::Queue { vhost: vname.clone(), name: queue.to_string() };
            ctx.report(&key, None, d);
        }
    }
}

/// The fix for a queue consumed by `services`: the first keeps the queue,
/// each other gets a queue of its own bound like it, and with services
/// told apart by user, each user may read its own queue, and the other
/// queues it consumes (`consumed`, the vhost's consumers by queue) that
/// its permissions allow, only. As TOML to add to the files, and
/// permissions to put in place of the users' own.
fn fix(
    vname: &str,
    queue: &str,
    services: Vec<&str>,
    by_user: bool,
    files: &Topology,
    live: &Topology,
    consumed: &BTreeMap<&str, Vec<&Consumer>>,
) -> String {
    let declared = files.vhosts.get(vname).and_then(|v| v.queues.get(queue));
    let live_vhost = live.vhosts.get(vname);
    let model: Option<&Queue> = declared.or_else(|| live_vhost.and_then(|v| v.queues.get(queue)));
    let bindings: Vec<_> = live_vhost
        .into_iter()
        .flat_map(|v| &v.bindings)
        .chain(files.vhosts.get(vname).into_iter().flat_map(|v| &v.bindings))
        .filter(|b| b.destination_kind == DestinationKind::Queue && b.destination == queue)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut out = String::from(
        "a queue hands each message to one consumer: give each other service a queue of its own, bound like this one, and move its consumers there.\n",
    );
    out += "# add to the files:\n";
    for s in services.iter().skip(1) {
        out += &queue_like(&own_queue(queue, s), model, &bindings);
    }
    if bindings.is_empty() {
        out += &format!(
            "# publishers address \"{queue}\" by name: publish to a fanout exchange bound to each service's queue instead\n"
        );
    }
    if !by_user {
        out += "# these services log in as one user: give each a user of its own, so that each may read its own queue only\n";
        return spaced(out);
    }
    out += "# put in place of these users' [permissions]:\n";
    let permission = |user: &str| -> Option<Permission> {
        files.vhosts.get(vname).and_then(|v| v.permission(user)).or_else(|| live_vhost?.permission(user))
    };
    for (i, s) in services.iter().enumerate() {
        let own = if i == 0 { queue.to_string() } else { own_queue(queue, s) };
        out += &reading_only(s, own, queue, permission(s).as_ref(), consumed);
    }
    spaced(out)
}

/// `help` with a blank line before each TOML table header but the first,
/// and before the comments that lead to it, as `warren fmt` lays tables
/// out: the fix is pasted into the files, and `fmt --check` in CI should
/// not then fail on it.
pub(super) fn spaced(help: String) -> String {
    let mut out = String::with_capacity(help.len() + 64);
    let mut comments = String::new();
    let mut first = true;
    for line in help.split_inclusive('\n') {
        if line.starts_with('#') {
            comments.push_str(line);
            continue;
        }
        if line.starts_with('[') {
            if !first {
                out.push('\n');
            }
            first = false;
        }
        out.push_str(&std::mem::take(&mut comments));
        out.push_str(line);
    }
    out + &comments
}

/// The queue of its own that service `s` gets in place of `queue`.
pub(super) fn own_queue(queue: &str, s: &str) -> String {
    format!("{queue}.{s}")
}

/// The TOML of queue `name`, of the type and arguments of `model` (if
/// known), with `bindings` like the ones to `model`.
pub(super) fn queue_like(name: &str, model: Option<&Queue>, bindings: &[&Binding]) -> String {
    let mut out = format!("[queues.{}]\n", toml_text::key(name));
    if let Some(q) = model {
        out += &format!("type = {}\n", toml_text::string(q.kind.as_str()));
        if let Some(args) = toml_text::inline_table(q.arguments.iter()).filter(|_| !q.arguments.is_empty()) {
            out += &format!("arguments = {args}\n");
        }
    }
    for b in bindings {
        out += &format!(
            "[[bindings]]\nsource = {}\nqueue = {}\nrouting_key = {}\n",
            toml_text::string(&b.source),
            toml_text::string(name),
            toml_text::string(&b.routing_key)
        );
        if let Some(args) = toml_text::inline_table(b.arguments.iter()).filter(|_| !b.arguments.is_empty()) {
            out += &format!("arguments = {args}\n");
        }
    }
    out
}

/// The TOML of user `s`'s permissions `p` with `read` narrowed to its `own`
/// queue and the other queues it consumes (`consumed`, the vhost's
/// consumers by queue; `queue` is the one shared) that `p` allows.
fn reading_only(
    s: &str,
    own: String,
    queue: &str,
    p: Option<&Permission>,
    consumed: &BTreeMap<&str, Vec<&Consumer>>,
) -> String {
    // What the user consumes besides this queue, and may still read:
    // narrowing its `read` to one queue would cut it off from those.
    let may_read = p.and_then(|p| regex::Regex::new(&p.read).ok());
    let mut reads = vec![own];
    reads.extend(
        consumed
            .iter()
            .filter(|(q, cs)| **q != queue && cs.iter().any(|c| c.user == s))
            .filter(|(q, _)| may_read.as_ref().is_none_or(|r| r.is_match(q)))
            .map(|(q, _)| q.to_string()),
    );
    let escaped: Vec<String> = reads.iter().map(|q| regex::escape(q)).collect();
    let read = match escaped.as_slice() {
        [one] => format!("^{one}$"),
        many => format!("^({})$", many.join("|")),
    };
    let (configure, write) = p.map_or((String::new(), String::new()), |p| (p.configure.clone(), p.write.clone()));
    format!(
        "[permissions.{}]\nconfigure = {}\nwrite = {}\nread = {}\n",
        toml_text::key(s),
        toml_text::string(&configure),
        toml_text::string(&write),
        toml_text::string(&read)
    )
}

fn unmanaged(ctx: &mut Context, observed: &Observed, consumed: &Consumed) {
    for (&vname, by_queue) in consumed {
        let Some(live) = observed.topology.vhosts.get(vname) else { continue };
        let files = ctx.topology.vhosts.get(vname);
        for (&queue, consumers) in by_queue {
            let n = consumers.len();
            let key = ObjectKey::Queue { vhost: vname.clone(), name: queue.to_string() };
            // Exclusive and server-named queues are not in the definitions:
            // they live and die with their connection.
            let durable = live.queues.contains_key(queue);
            let declared = files.is_some_and(|v| v.queues.contains_key(queue) || v.external.queues.contains(queue));
            let owned = observed.ownership.projects.values().any(|inv| inv.contains(&key));
            if !durable || declared || owned {
                continue;
            }
            let d = finding(
                "unmanaged-consumer-queue",
                format!("queue \"{queue}\" in vhost \"{vname}\" has {n} consumer(s), and no project owns it: someone relies on it"),
            )
            .help(format!(
                "declare it in the project of its consumers (`warren import --vhost {vname}` writes its TOML), or list it in `[external] queues` if another team manages it by hand"
            ));
            ctx.report(&key, None, d);
        }
    }
}

/// A quorum queue that takes over a live classic queue with priorities:
/// RabbitMQ refuses `x-max-priority` on a quorum queue, and delivers by
/// priority differently there (not at all before 4.0, two levels from 4.0).
fn priorities(ctx: &mut Context, observed: &Observed, version: Option<(u32, u32)>) {
    let mut found = Vec::new();
    for (vname, v) in &ctx.topology.vhosts {
        let Some(live) = observed.topology.vhosts.get(vname) else { continue };
        for q in v.queues.values().filter(|q| q.kind == QueueType::Quorum) {
            let Some(old) = q.replaces.as_deref().and_then(|p| live.queues.get(p)) else { continue };
            let Some(levels) = old.arguments.get("x-max-priority").and_then(|v| v.as_int()) else { continue };
            let there = match version {
                Some(v) if v < (4, 0) => format!("RabbitMQ {}.{} quorum queues ignore message priorities", v.0, v.1),
                _ => "quorum queues have two: normal (0 to 4) and high (5 and above), from RabbitMQ 4.0".to_string(),
            };
            let d = finding(
                "priority-on-quorum",
                format!(
                    "quorum queue \"{}\" replaces \"{}\", which delivers by {levels} message priorities: {there}",
                    q.name, old.name
                ),
            )
            .help("check that the consumers do not rely on the order of priorities, or keep a classic queue for them");
            found.push((ObjectKey::Queue { vhost: vname.clone(), name: q.name.clone() }, d));
        }
    }
    for (key, d) in found {
        ctx.report(&key, Some("replaces"), d);
    }
}

fn deprecated(ctx: &mut Context, observed: &Observed) {
    // About the broker as a whole: no object, no place in the files.
    let key = ObjectKey::Vhost(String::new());
    match &observed.deprecated {
        None => {
            let d = Diagnostic::info(
                "deprecated-feature-used",
                format!(
                    "RabbitMQ {} cannot list the deprecated features in use (3.13 and later can)",
                    observed.version.map_or("before 3.13".to_string(), |(a, b)| format!("{a}.{b}"))
                ),
            )
            .help("read the release notes of the version you upgrade to for what it removes; `warren lint` checks the files for the removals it knows");
            // A note about the broker, not a finding: no level applies.
            ctx.out.shown.push(d);
        }
        Some(features) => {
            for f in features {
                let phase = f.phase.replace('_', " ");
                let d = finding(
                    "deprecated-feature-used",
                    format!("the broker reports deprecated feature \"{}\" in use ({phase})", f.name),
                )
                .help(format!(
                    "a later RabbitMQ denies it by default, then removes it: find what uses it and change that before upgrading (see {})",
                    f.doc_url.as_deref().unwrap_or("https://www.rabbitmq.com/docs/deprecated-features")
                ));
                ctx.report(&key, None, d);
            }
        }
    }
}

/// The severity a static rule's finding takes against a broker of this
/// version, with why, where the version changes what the broker does.
pub fn for_version(code: &str, (major, minor): (u32, u32)) -> Option<(Severity, String)> {
    let at_least = |a: u32, b: u32| (major, minor) >= (a, b);
    let version = format!("the broker runs RabbitMQ {major}.{minor}");
    match code {
        "queue-mode-removed" | "transient-queue" if at_least(4, 3) => {
            Some((Severity::Error, format!("{version}, which refuses it")))
        }
        "ha-policy" if at_least(4, 0) => Some((Severity::Error, format!("{version}, which refuses the policy"))),
        "quorum-without-dlx" if !at_least(4, 0) => {
            Some((Severity::Info, format!("{version}: no delivery limit by default before 4.0")))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fix of a shared queue narrows each user's `read` to its own
    /// queue, but keeps every other queue the user consumes live and may
    /// read: `lint-audit` also consumes `orders.audit`, which the fix would
    /// otherwise cut it off from (and `payments`, which its permissions no
    /// longer allow, stays out).
    #[test]
    fn the_shared_queue_fix_keeps_the_other_queues_a_user_consumes() {
        use crate::testing::objects::queue;
        let mut files = Topology::default();
        let mut v = crate::model::Vhost::new("v");
        for q in ["orders.created", "orders.audit", "payments", "orders.billing-log"] {
            v.queues.insert(q.into(), queue(q, QueueType::Classic, Default::default()));
        }
        for (user, read) in [("lint-audit", "^orders\\."), ("lint-billing", "^orders\\.(created|billing-log)$")] {
            let p = Permission { user: user.into(), configure: "^$".into(), write: "^$".into(), read: read.into() };
            v.set_permission(&p);
        }
        files.vhosts.insert("v".into(), v);
        let consumer = |queue: &str, user: &str, port: u16| Consumer {
            queue: queue.into(),
            user: user.into(),
            connection: format!("10.0.0.5:{port} -> 10.0.0.2:5672"),
            client_name: None,
        };
        let observed = Observed {
            version: Some((3, 10)),
            topology: files.clone(),
            consumers: BTreeMap::from([(
                "v".to_string(),
                vec![
                    consumer("orders.created", "lint-audit", 1),
                    consumer("orders.audit", "lint-audit", 1),
                    consumer("payments", "lint-audit", 1),
                    consumer("orders.created", "lint-billing", 2),
                    consumer("orders.billing-log", "lint-billing", 2),
                ],
            )]),
            ..Observed::default()
        };
        let found = check(&files, &Locations::default(), &LintSettings::default(), &observed);
        let shared: Vec<&Diagnostic> = found.shown.iter().filter(|d| d.code == "shared-queue").collect();
        assert_eq!(shared.len(), 1, "{shared:?}");
        let help = shared[0].help.as_deref().unwrap();
        let permissions = help.split_once("# put in place of these users' [permissions]:\n").unwrap().1;
        // Each user's `read`, as the TOML says it.
        let reads: Vec<String> = permissions
            .lines()
            .filter(|l| l.starts_with("read = "))
            .map(|l| toml::from_str::<toml::Table>(l).unwrap()["read"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            reads,
            [r"^(orders\.created|orders\.audit)$", r"^(orders\.created\.lint\-billing|orders\.billing\-log)$"],
            "{help}"
        );
        let audit = regex::Regex::new(&reads[0]).unwrap();
        assert!(audit.is_match("orders.audit") && !audit.is_match("payments") && !audit.is_match("ordersXaudit"));
    }

    /// Versions no test node runs (4.3) are checked here; 3.10 and 4.0 also
    /// through the binary against real nodes (tests/suite/lint_broker.rs).
    #[test]
    fn the_broker_version_sets_the_version_rules_severity() {
        let at = |code, v| for_version(code, v).map(|(s, _)| s);
        assert_eq!(at("queue-mode-removed", (4, 2)), None);
        assert_eq!(at("queue-mode-removed", (4, 3)), Some(Severity::Error));
        assert_eq!(at("transient-queue", (4, 3)), Some(Severity::Error));
        assert_eq!(at("transient-queue", (3, 13)), None);
        assert_eq!(at("ha-policy", (3, 13)), None);
        assert_eq!(at("ha-policy", (4, 0)), Some(Severity::Error));
        assert_eq!(at("quorum-without-dlx", (3, 10)), Some(Severity::Info));
        assert_eq!(at("quorum-without-dlx", (4, 0)), None);
        assert_eq!(at("guest-user", (4, 3)), None);
    }
}
