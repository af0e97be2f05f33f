//! `[services.NAME]`: who publishes and consumes what (`model::services`).
//! Read here, checked against the topology and turned into their users'
//! permissions when the files are merged (`merge.rs`).

use std::collections::BTreeMap;

use super::decl::Decl;
use super::parse::Parser;
use super::reader::{Fields, What, kind_of};
use super::tree::{Item, Node};
use crate::diagnostic::Diagnostic;
use crate::model::kinds::{Name, by_table};
use crate::model::services::{Declares, Grant, Publish, Service, grants};
use crate::model::{ObjectKey, Table, Topology, Value, Vhost, builtin_exchange};
use crate::source::{FieldLocations, Location, Locations, ObjectLocation, Sources};

pub(super) const SERVICE_KEYS: &[&str] = &["user", "publishes", "consumes", "declares", "lint_allow"];
pub(super) const PUBLISH_KEYS: &[&str] = &["exchange", "keys", "headers"];
pub(super) const DECLARES_KEYS: &[&str] = &["server_named", "prefixes"];

impl Parser<'_> {
    /// One service; `None` when it does not read (each problem reported).
    pub(super) fn service(&mut self, name: &str, node: &Node, at: std::ops::Range<usize>) -> Option<Decl<Service>> {
        let f = Fields::new(&mut self.r, node, What::named("service", name), SERVICE_KEYS)?;
        let mut fields_at = self.fields_at(&f);
        let ok = self.check_name(name, &at, "service", false);
        let user = f.required_string(&mut self.r, "user", at.clone(), "\"orders-app\"");
        let consumes = match f.get("consumes") {
            None => Some(Vec::new()),
            Some(_) => f.strings(&mut self.r, "consumes").map(|q| {
                q.into_iter()
                    .enumerate()
                    .map(|(i, (q, span))| {
                        fields_at.insert(format!("consumes.{i}"), self.loc(span));
                        q
                    })
                    .collect()
            }),
        };
        let publishes = self.publishes(&f, name, &mut fields_at);
        let declares = match f.get("declares") {
            None => Some(Declares::default()),
            Some(node) => self.declares(node, name),
        };
        let value = Service {
            name: name.to_string(),
            user: user?,
            publishes: publishes?,
            consumes: consumes?,
            declares: declares?,
        };
        ok.then(|| Decl { value, at: self.loc(at), fields: fields_at.into() })
    }

    /// `publishes`: an array of `{ exchange, keys }` tables.
    fn publishes(&mut self, f: &Fields, service: &str, fields_at: &mut FieldLocations) -> Option<Vec<Publish>> {
        let Some(node) = f.get("publishes") else { return Some(Vec::new()) };
        let Item::Array(items) = &node.item else {
            self.r.wrong_type(node, format_args!("`publishes` of service \"{service}\""), "an array of tables");
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for item in items {
            let what = format!("a `publishes` entry of service \"{service}\"");
            let Some(p) = Fields::new(&mut self.r, item, What::said(&what), PUBLISH_KEYS) else {
                ok = false;
                continue;
            };
            let exchange = p.required_string(&mut self.r, "exchange", item.span(), "\"shop.orders\"");
            let keys = match p.get("keys") {
                None => Some(Vec::new()),
                Some(_) => p.strings(&mut self.r, "keys").map(|k| k.into_iter().map(|(k, _)| k).collect()),
            };
            let headers = match p.get("headers") {
                None => Some(Vec::new()),
                Some(node) => self.header_sets(node, &what),
            };
            match (exchange, keys, headers) {
                (Some(exchange), Some(keys), Some(headers)) => {
                    let n = out.len();
                    fields_at.insert(format!("publishes.{n}"), self.loc(item.span()));
                    if let Some(at) = p.span("headers") {
                        fields_at.insert(format!("publishes.{n}.headers"), self.loc(at));
                    }
                    out.push(Publish { exchange, keys, headers });
                }
                _ => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// `headers`: a table of a message's headers, or an array of them (one
    /// per kind of message), each value one a headers binding compares:
    /// a string, a number or a boolean.
    fn header_sets(&mut self, node: &Node, what: &str) -> Option<Vec<Table>> {
        let label = format!("`headers` of {what}");
        let sets: Vec<&Node> = match &node.item {
            Item::Table(_) => vec![node],
            Item::Array(items) if items.iter().all(|i| matches!(i.item, Item::Table(_))) => items.iter().collect(),
            _ => {
                self.r.wrong_type(node, &label, "a table of headers, or an array of such tables");
                return None;
            }
        };
        let mut out = Vec::with_capacity(sets.len());
        let mut ok = true;
        for set in sets {
            let Item::Table(t) = &set.item else { continue };
            let mut headers = Table::with_capacity(t.len());
            for (k, v) in t.iter() {
                if matches!(v.item, Item::Array(_) | Item::Table(_) | Item::Datetime) {
                    let d = Diagnostic::error(
                        "bad-value",
                        format!("header \"{}\" of {what} is {}", k.name, kind_of(&v.item)),
                    )
                    .at(self.loc(v.span()))
                    .help("give a string, a number or a boolean: the values a headers binding compares");
                    self.r.report(d);
                    ok = false;
                    continue;
                }
                // A float stays one: a client publishing `1.0` sends a
                // float, which RabbitMQ 4 tells from the integer 1.
                let value = match &v.item {
                    Item::Float(f) => Some(Value::Float(f.as_str().parse().unwrap_or(f64::NAN))),
                    _ => self.r.value(v, &format_args!("header \"{}\" of {what}", k.name)),
                };
                match value {
                    Some(value) => {
                        headers.insert(k.name.to_string(), value);
                    }
                    None => ok = false,
                }
            }
            out.push(headers);
        }
        ok.then_some(out)
    }

    fn declares(&mut self, node: &Node, service: &str) -> Option<Declares> {
        let what = format!("`declares` of service \"{service}\"");
        let f = Fields::new(&mut self.r, node, What::said(&what), DECLARES_KEYS)?;
        let server_named = match f.get("server_named") {
            None => false,
            Some(_) => f.bool(&mut self.r, "server_named")?,
        };
        let mut prefixes = Vec::new();
        for (p, span) in f.strings(&mut self.r, "prefixes").unwrap_or_default() {
            if p.is_empty() || p.starts_with("amq.") {
                let d = Diagnostic::error("bad-value", format!("service \"{service}\" may not declare queues named \"{p}…\""))
                    .at(self.loc(span))
                    .help("give a prefix of its own, such as \"billing.tmp.\": the empty prefix would let it declare any queue, and `amq.` names are the broker's (use `server_named = true` for those)");
                self.r.report(d);
                return None;
            }
            prefixes.push(p);
        }
        Some(Declares { server_named, prefixes })
    }
}

/// The services of each file, in each vhost of the file.
pub(super) type Filed = Vec<(Vec<String>, Vec<Decl<Service>>)>;

/// Places the services in their vhosts, checks what they name against the
/// merged topology, and adds each service user's permissions and topic
/// permissions (`model::services::grants`), located at the first service
/// that asks for them. A user whose permissions the files also write by
/// hand is an error: one of the two must go.
pub(super) fn place(
    topology: &mut Topology,
    locations: &mut Locations,
    files: Filed,
    sources: &Sources,
) -> Vec<Diagnostic> {
    let (at, mut out) = placed(topology, locations, files, sources);
    for (v, vhost) in topology.vhosts.iter_mut().filter(|(_, x)| !x.services.is_empty()) {
        for (user, grant) in grants(&vhost.services, &vhost.exchanges) {
            let first = grant.services.iter().next().and_then(|s| at.get(&(v.clone(), s.clone()))).cloned();
            let Some(first) = first else { continue };
            out.extend(granted(v, vhost, locations, user, grant, first, sources));
        }
    }
    out
}

/// The services in their vhosts, each checked; where each is declared.
fn placed(
    topology: &mut Topology,
    locations: &mut Locations,
    files: Filed,
    sources: &Sources,
) -> (BTreeMap<(String, String), Location>, Vec<Diagnostic>) {
    let mut out = Vec::new();
    let mut at: BTreeMap<(String, String), Location> = BTreeMap::new();
    for (vhosts, services) in files {
        for s in services {
            for v in &vhosts {
                let key = (v.clone(), s.value.name.clone());
                if let Some(first) = at.get(&key) {
                    let d = Diagnostic::error(
                        "duplicate",
                        format!("service \"{}\" in vhost \"{v}\" is declared twice", s.value.name),
                    )
                    .at(s.at.clone())
                    .help(format!("it is first declared at {}; keep one", sources.position(first)));
                    out.push(d);
                    continue;
                }
                let Some(vhost) = topology.vhosts.get(v) else { continue };
                let user = &s.value.user;
                let known = topology.has_user(user) || vhost.external.users.contains(user);
                let problems = check(&s.value, v, vhost, known);
                if problems.is_empty() {
                    topology
                        .vhosts
                        .get_mut(v)
                        .expect("looked up")
                        .services
                        .insert(s.value.name.clone(), s.value.clone());
                    let site = ObjectLocation { at: s.at.clone(), fields: s.fields.clone() };
                    locations.services.insert(key.clone(), site);
                    at.insert(key, s.at.clone());
                }
                out.extend(problems.into_iter().map(|(code, field, message, help)| {
                    let place = s.fields.get(&field).unwrap_or_else(|| s.at.clone());
                    Diagnostic::error(code, message).at(place).help(help)
                }));
            }
        }
    }
    (at, out)
}

/// One user's grant added to its vhost, located at its first service;
/// a problem where the files also write it by hand.
fn granted(
    v: &str,
    vhost: &mut Vhost,
    locations: &mut Locations,
    user: String,
    grant: Grant,
    first: Location,
    sources: &Sources,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let named: Vec<String> = grant.services.iter().map(|s| format!("\"{s}\"")).collect();
    let key = crate::model::kinds::permissions::key(v, &user);
    if let Some(hand) = locations.objects.get(&key) {
        let d = Diagnostic::error(
            "service-permissions",
            format!("the permissions of \"{user}\" in vhost \"{v}\" are written here and also made for services {}", named.join(", ")),
        )
        .at(hand.at.clone())
        .help(format!("remove [permissions.\"{user}\"]: its services give it what they need (see {}); or connect the services as another user", sources.position(&first)));
        return vec![d];
    }
    locations.objects.insert(&key, ObjectLocation { at: first.clone(), fields: Default::default() });
    vhost.set_permission(&grant.permission);
    let kind = by_table("topic_permissions").expect("a kind");
    for (exchange, write) in grant.topic {
        let name = Name { kind, id: vec![user.clone(), exchange] };
        let key = ObjectKey::Object { vhost: Some(v.to_string()), name: name.clone() };
        if let Some(hand) = locations.objects.get(&key) {
            let d = Diagnostic::error(
                "service-permissions",
                format!("{} is written here and also made for services {}", name.at(Some(v)), named.join(", ")),
            )
            .at(hand.at.clone())
            .help("remove this [[topic_permissions]] entry: the services' keys make it");
            out.push(d);
            continue;
        }
        locations.objects.insert(&key, ObjectLocation { at: first.clone(), fields: Default::default() });
        let body = [("write", write), ("read", "^$".to_string())].map(|(k, v)| (k.to_string(), Value::String(v)));
        vhost.objects.insert(name, body.into_iter().collect());
    }
    out
}

/// One problem of a service: its code, the field it is at, the message
/// and the help.
type Problem = (&'static str, String, String, String);

/// What a service names that the vhost lacks, or keys its exchange's type
/// cannot use.
fn check(s: &Service, v: &str, vhost: &Vhost, user_declared: bool) -> Vec<Problem> {
    let mut out = Vec::new();
    let who = format!("service \"{}\" in vhost \"{v}\"", s.name);
    if !user_declared {
        out.push((
            "unknown-user",
            "user".into(),
            format!("{who} connects as user \"{}\", declared nowhere", s.user),
            format!(
                "declare `[users.\"{}\"]` (with its `password_env`), or list it in `[external] users` if it is made elsewhere: warren gives it the permissions its services need",
                s.user
            ),
        ));
    }
    for (i, p) in s.publishes.iter().enumerate() {
        let kind = match (p.exchange.as_str(), vhost.exchanges.get(&p.exchange)) {
            ("", _) => Some("direct"),
            (_, Some(x)) => Some(x.kind.as_str()),
            (name, None) => builtin_exchange(name).map(|(kind, _)| kind),
        };
        let Some(kind) = kind.or_else(|| vhost.external.exchanges.contains(&p.exchange).then_some("")) else {
            out.push((
                "unknown-name",
                "publishes".into(),
                format!("{who} publishes to exchange \"{}\", which the files do not declare", p.exchange),
                "declare it, or list it in `[external] exchanges` if another project does".to_string(),
            ));
            continue;
        };
        if !p.headers.is_empty() && !matches!(kind, "headers" | "") {
            let target = match p.exchange.as_str() {
                "" => "the default exchange".to_string(),
                x => format!("{kind} exchange \"{x}\""),
            };
            out.push((
                "bad-value",
                format!("publishes.{i}.headers"),
                format!("{who} publishes to {target} with headers, which it does not route by"),
                "headers route a message only at a headers exchange: leave `headers` out, or give the `keys` this exchange routes by".to_string(),
            ));
        }
        let pattern = p.keys.iter().find(|k| k.split('.').any(|w| w == "*" || w == "#"));
        match kind {
            "fanout" | "headers" if !p.keys.is_empty() => out.push((
                "bad-value",
                "publishes".into(),
                format!("{who} publishes to {kind} exchange \"{}\" with keys, which it ignores", p.exchange),
                "leave `keys` out: every message goes to every binding's match".to_string(),
            )),
            "direct" => {
                if let Some(k) = pattern {
                    out.push((
                        "bad-value",
                        "publishes".into(),
                        format!("{who} publishes to direct exchange \"{}\" with the pattern \"{k}\"", p.exchange),
                        "a direct exchange compares keys whole: list the keys the service publishes with".to_string(),
                    ));
                }
            }
            _ => {}
        }
    }
    for q in &s.consumes {
        if !vhost.queues.contains_key(q) && !vhost.external.queues.contains(q) {
            out.push((
                "unknown-name",
                "consumes".into(),
                format!("{who} consumes queue \"{q}\", which the files do not declare"),
                "declare it, or list it in `[external] queues` if another project does".to_string(),
            ));
        }
    }
    out
}
