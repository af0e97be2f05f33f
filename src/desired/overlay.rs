//! An environment's overlays: topology files merged over the base's
//! topology by object key. An object the base declares takes the fields the
//! overlay gives (a table such as `arguments` entry by entry); one it does
//! not declare is added; `remove = true` removes it from the environment,
//! and `remove = ["arguments.x-max-length"]` removes entries of its tables.
//! `rename_vhosts = { orders = "orders-staging" }` gives a vhost of the base
//! another name in the environment. Overlays apply in order, and the files
//! of one in sorted order: where two set one field, the later wins.
//!
//! Every object of an overlay is read by the same parser as the base's, with
//! the base's object as its defaults, so each problem is reported at the
//! overlay's own line.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::PathBuf;

use super::Desired;
use super::decl::{Decl, QueueDecl};
use super::kinds;
use super::parse::{self, OVERLAY_KEYS, Parser};
use super::reader::{Fields, Reader};
use super::tree::{Item, Node};
use crate::diagnostic::Diagnostic;
use crate::model::kinds::{self as object_kinds, KINDS, Scope};
use crate::model::{
    Exchange, ObjectKey, Permission, Policy, Queue, QueueType, Topology, User, Value, Vhost, super_streams,
};
use crate::source::{FieldLocations, FileId, Location, Locations, ObjectLocation, Sources};

/// Merges the overlay files, in order, over `desired`'s topology; their
/// problems join its diagnostics, at the overlays' lines.
pub(super) fn apply(desired: &mut Desired, files: Vec<(PathBuf, String)>) {
    let ids: Vec<FileId> = files.into_iter().map(|(path, text)| desired.sources.add(&path, text)).collect();
    if ids.is_empty() {
        // Nothing to merge: the topology and its places stay shared with
        // the base's (taken to change, they would be copied).
        crate::diagnostic::sort(&mut desired.diagnostics);
        return;
    }
    let Desired { topology, locations, sources, diagnostics, renamed, .. } = desired;
    let mut found = Vec::new();
    let mut merger = Merger { topology, locations, sources, renames: Vec::new(), renamed };
    for id in ids {
        let text = sources.get(id).text.clone();
        merger.file(Reader { file: id, diagnostics: &mut found }, &text);
    }
    merger.finish(&mut found);
    // An object of a file of several vhosts is read once for each of them.
    crate::diagnostic::sort(&mut found);
    found.dedup_by(|a, b| a.location == b.location && a.code == b.code && a.message == b.message);
    diagnostics.extend(found);
    crate::diagnostic::sort(diagnostics);
}

struct Merger<'a> {
    topology: &'a mut Topology,
    locations: &'a mut Locations,
    /// `rename_vhosts` entries, applied once every overlay is merged.
    renames: Vec<Rename>,
    /// The renames done, base name to the environment's.
    renamed: &'a mut BTreeMap<String, String>,
    sources: &'a Sources,
}

struct Rename {
    from: String,
    to: String,
    from_at: Location,
    to_at: Location,
}

/// What an object's `remove` key asks for.
enum Removal {
    None,
    /// `remove = true`, at this place.
    Object(Location),
    /// `remove = ["arguments.x-max-length", …]`: table entries, each placed.
    Entries(Vec<(String, Location)>),
}

/// How the merger reaches one kind of named object.
struct Kind<T> {
    /// `queue`, as messages name it.
    noun: &'static str,
    /// The objects of this kind in a vhost (users: the topology's).
    map: for<'t> fn(&'t mut Topology, &str) -> &'t mut dyn Held<T>,
    key: fn(&str, &str) -> ObjectKey,
    /// The table whose entries `remove = [...]` may name, by its key.
    table: Option<(&'static str, TableOf<T>)>,
}

/// Removes an entry of an object's table (a queue's arguments, a user's
/// limits); whether it had one.
type TableOf<T> = fn(&mut T, &str) -> bool;

const EXCHANGES: Kind<Exchange> = Kind {
    noun: "exchange",
    map: |t, v| &mut vhost(t, v).exchanges,
    key: |v, n| ObjectKey::Exchange { vhost: v.into(), name: n.into() },
    table: Some(("arguments", |x, e| x.arguments.remove(e).is_some())),
};
const QUEUES: Kind<Queue> = Kind {
    noun: "queue",
    map: |t, v| &mut vhost(t, v).queues,
    key: |v, n| ObjectKey::Queue { vhost: v.into(), name: n.into() },
    table: Some(("arguments", |q, e| q.arguments.remove(e).is_some())),
};
const POLICIES: Kind<Policy> = Kind {
    noun: "policy",
    map: |t, v| vhost(t, v),
    key: |v, n| object_kinds::policies::key(v, n),
    table: Some(("definition", |p, e| p.definition.remove(e).is_some())),
};
const USERS: Kind<User> = Kind {
    noun: "user",
    map: |t, _| t,
    key: |_, n| object_kinds::users::key(n),
    table: Some(("limits", |u, e| u.limits.as_mut().and_then(|l| l.remove(e)).is_some())),
};
const PERMISSIONS: Kind<Permission> = Kind {
    noun: "permissions of user",
    map: |t, v| vhost(t, v),
    key: |v, n| object_kinds::permissions::key(v, n),
    table: None,
};

/// The objects of kinds of `model::kinds` in vhost `v`, or broker-wide.
impl<T> Kind<T> {
    fn key_of(&self, v: &str, name: &str) -> ObjectKey {
        (self.key)(v, name)
    }
}

fn objects<'t>(t: &'t mut Topology, v: Option<&str>) -> &'t mut object_kinds::Objects {
    match v {
        Some(v) => &mut vhost(t, v).objects,
        None => &mut t.objects,
    }
}

fn vhost<'t>(t: &'t mut Topology, name: &str) -> &'t mut Vhost {
    if !t.vhosts.contains_key(name) {
        t.vhosts.insert(name.to_string(), Vhost::new(name));
    }
    t.vhosts.get_mut(name).expect("just ensured")
}

/// A name within two edits of one the base declares: likely a typo of it.
/// Where the merger finds the objects of one kind by name: a map of
/// them, or for policies and permissions the vhost's objects of their
/// kind, typed, and for users the topology's.
trait Held<T> {
    fn get(&self, name: &str) -> Option<T>;
    /// Whether it had one.
    fn remove(&mut self, name: &str) -> bool;
    fn insert(&mut self, name: String, value: T);
    fn names(&self) -> Vec<String>;
}

impl<T: Clone> Held<T> for BTreeMap<String, T> {
    fn get(&self, name: &str) -> Option<T> {
        BTreeMap::get(self, name).cloned()
    }

    fn remove(&mut self, name: &str) -> bool {
        BTreeMap::remove(self, name).is_some()
    }

    fn insert(&mut self, name: String, value: T) {
        BTreeMap::insert(self, name, value);
    }

    fn names(&self) -> Vec<String> {
        self.keys().cloned().collect()
    }
}

impl Held<User> for Topology {
    fn get(&self, name: &str) -> Option<User> {
        self.user(name)
    }

    fn remove(&mut self, name: &str) -> bool {
        self.remove_user(name)
    }

    fn insert(&mut self, _: String, value: User) {
        self.set_user(&value);
    }

    fn names(&self) -> Vec<String> {
        self.user_names().map(str::to_string).collect()
    }
}

impl Held<Policy> for Vhost {
    fn get(&self, name: &str) -> Option<Policy> {
        self.policy(name)
    }

    fn remove(&mut self, name: &str) -> bool {
        self.remove_policy(name)
    }

    fn insert(&mut self, _: String, value: Policy) {
        self.set_policy(&value);
    }

    fn names(&self) -> Vec<String> {
        self.policies().into_iter().map(|p| p.name.clone()).collect()
    }
}

impl Held<Permission> for Vhost {
    fn get(&self, user: &str) -> Option<Permission> {
        self.permission(user)
    }

    fn remove(&mut self, user: &str) -> bool {
        self.remove_permission(user)
    }

    fn insert(&mut self, _: String, value: Permission) {
        self.set_permission(&value);
    }

    fn names(&self) -> Vec<String> {
        self.permission_users().map(str::to_string).collect()
    }
}

fn typo_of<'a>(name: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    names.into_iter().find(|n| *n != name && strsim::levenshtein(name, n) <= 2)
}

/// What an overlay cannot change: said, never silently left out.
fn base_only(p: &mut Parser, top: &Fields) {
    for key in ["services", "moved", "removed"] {
        if let Some(span) = top.span(key) {
            let d = Diagnostic::error("overlay", format!("an overlay cannot declare `{key}`"))
                .at(p.loc(span))
                .help(format!("declare `{key}` in the base files: it holds in every environment"));
            p.r.report(d);
        }
    }
}

impl Merger<'_> {
    fn file(&mut self, mut r: Reader, text: &str) {
        let Some(whole) = parse::document(&mut r, text) else { return };
        let Some(top) = Fields::new(&mut r, &whole, "the overlay", OVERLAY_KEYS.as_slice()) else { return };
        let mut p = Parser { r };
        let vhosts = p.vhosts(&top, text.len());
        for (v, at) in &vhosts {
            if !self.topology.vhosts.contains_key(v) {
                let d = Diagnostic::warning(
                    "overlay-adds",
                    format!("the overlay adds vhost \"{v}\", which the base does not declare"),
                )
                .at(at.clone())
                .label("only in this environment");
                p.r.report(match typo_of(v, self.topology.vhosts.keys().map(String::as_str)) {
                    Some(s) => d.help(format!("to change vhost \"{s}\", name it as the base does")),
                    None => d.help("that is what it does when that is meant; to change a vhost of the base, name it as the base does"),
                });
                vhost(self.topology, v);
            }
        }
        let names: Vec<&str> = vhosts.iter().map(|(v, _)| v.as_str()).collect();
        base_only(&mut p, &top);
        if let Some(node) = top.get("vhost") {
            self.settings(&mut p, node, &names);
        }
        for (name, node, at) in p.named(&top, "exchanges") {
            self.named(&mut p, &EXCHANGES, &names, name, node, at, |p, node, at, base| {
                p.exchange(name, node, at, base.map(|(b, _)| b))
            });
        }
        for (name, node, at) in p.named(&top, "queues") {
            self.named(&mut p, &QUEUES, &names, name, node, at, |p, node, at, base| {
                let base =
                    base.map(|(q, site)| QueueDecl { queue: q.clone(), declared_type: typed(site).then_some(q.kind) });
                // One of no type is typed by its vhost's default in `finish`.
                let decl = p.queue(name, node, at, base.as_ref())?;
                Some(Decl { value: decl.value.queue, at: decl.at, fields: decl.fields })
            });
        }
        for (name, node, at) in p.named(&top, "policies") {
            self.named(&mut p, &POLICIES, &names, name, node, at, |p, node, at, base| {
                p.policy(name, node, at, base.map(|(b, _)| b))
            });
        }
        for (name, node, at) in p.named(&top, "users") {
            self.named(&mut p, &USERS, &[""], name, node, at, |p, node, at, base| {
                p.user(name, node, at, base.map(|(b, _)| b))
            });
        }
        for (name, node, at) in p.named(&top, "permissions") {
            self.named(&mut p, &PERMISSIONS, &names, name, node, at, |p, node, at, base| {
                p.permission(name, node, at, base.map(|(b, _)| b))
            });
        }
        if let Some(node) = top.get("bindings") {
            self.bindings(&mut p, node, &names);
        }
        for (name, node, at) in p.named(&top, "super_streams") {
            self.super_stream(&mut p, name, node, at, &names);
        }
        self.objects(&mut p, &top, &names);
        if let Some(node) = top.get("external") {
            let external = p.external(node);
            for v in &names {
                let x = &mut vhost(self.topology, v).external;
                x.exchanges.extend(external.exchanges.iter().cloned());
                x.queues.extend(external.queues.iter().cloned());
                x.users.extend(external.users.iter().cloned());
            }
        }
        if let Some(node) = top.get("rename_vhosts") {
            self.read_renames(&mut p, node);
        }
    }

    /// A super stream of the overlay, in each of its vhosts: the base's of
    /// that name (its objects, as read back from them) is taken out whole,
    /// and this one, merged over it, put in its place; `remove = true`
    /// takes it out alone.
    fn super_stream(&mut self, p: &mut Parser, name: &str, node: &Node, at: Range<usize>, vhosts: &[&str]) {
        let (node, removal) = removal(p, node, Some("arguments"), false);
        for v in vhosts {
            let base = super_streams(vhost(self.topology, v)).into_iter().find(|s| s.name == name);
            let mut base_args = base.clone();
            if let (Some(b), Removal::Entries(entries)) = (&mut base_args, &removal) {
                for (path, _) in entries {
                    b.arguments.remove(path.trim_start_matches("arguments."));
                }
            }
            let read = match &removal {
                Removal::Object(_) => None,
                _ => p.super_stream(name, &node, at.clone(), base_args.as_ref()),
            };
            if let Some(old) = &base {
                self.take_out(v, &old.expand());
            } else if let Removal::Object(at) = &removal {
                let d = Diagnostic::error(
                    "overlay-remove",
                    format!("the overlay removes super stream \"{name}\" from vhost \"{v}\", which is not declared"),
                )
                .at(at.clone())
                .help("name a super stream the base declares");
                p.r.report(d);
            }
            let Some((ss, fields)) = read else { continue };
            let site = ObjectLocation { at: p.loc(at.clone()), fields: std::sync::Arc::new(fields) };
            let made = ss.expand();
            let vh = vhost(self.topology, v);
            vh.exchanges.insert(made.exchange.name.clone(), made.exchange.clone());
            vh.queues.extend(made.queues.iter().map(|q| (q.name.clone(), q.clone())));
            vh.bindings.extend(made.bindings.iter().cloned());
            self.locations.objects.insert(&EXCHANGES.key_of(v, &made.exchange.name), site.clone());
            for q in &made.queues {
                self.locations.objects.insert(&QUEUES.key_of(v, &q.name), site.clone());
            }
            for b in made.bindings {
                self.locations.bindings.insert(&ObjectKey::Binding { vhost: v.to_string(), binding: b }, site.clone());
            }
        }
    }

    /// Takes a super stream's objects out of vhost `v`, places included.
    fn take_out(&mut self, v: &str, made: &crate::model::Expanded) {
        let vh = vhost(self.topology, v);
        vh.exchanges.remove(&made.exchange.name);
        self.locations.objects.remove(&EXCHANGES.key_of(v, &made.exchange.name));
        for q in &made.queues {
            vhost(self.topology, v).queues.remove(&q.name);
            self.locations.objects.remove(&QUEUES.key_of(v, &q.name));
        }
        for b in &made.bindings {
            vhost(self.topology, v).bindings.remove(b);
            self.locations.bindings.remove(&ObjectKey::Binding { vhost: v.to_string(), binding: b.clone() });
        }
    }

    /// One named object of the overlay, in each of its vhosts: merged over
    /// the base's, added, or removed.
    #[allow(clippy::too_many_arguments)]
    fn named<T: Clone>(
        &mut self,
        p: &mut Parser,
        kind: &Kind<T>,
        vhosts: &[&str],
        name: &str,
        node: &Node,
        at: Range<usize>,
        read: impl Fn(&mut Parser, &Node, Range<usize>, Option<(&T, &ObjectLocation)>) -> Option<Decl<T>>,
    ) {
        let (node, removal) = removal(p, node, kind.table.map(|(t, _)| t), false);
        for v in vhosts {
            let key = (kind.key)(v, name);
            let existing = (kind.map)(self.topology, v).get(name);
            let site = self.locations.objects.get(&key).cloned();
            if let Removal::Object(remove_at) = &removal {
                if !(kind.map)(self.topology, v).remove(name) {
                    p.r.report(
                        Diagnostic::error(
                            "overlay-remove",
                            format!("the overlay removes {key}, which is not declared"),
                        )
                        .at(remove_at.clone())
                        .help(format!("name the {} as the base declares it, or drop this `remove`", kind.noun)),
                    );
                }
                self.locations.objects.remove(&key);
                continue;
            }
            let base = existing.as_ref().zip(site.as_ref());
            let Some(mut decl) = read(p, &node, at.clone(), base) else {
                if existing.is_none() {
                    self.locations.named.insert(key);
                }
                continue;
            };
            if let Removal::Entries(entries) = &removal {
                strip(p, kind, &key, &mut decl.value, entries);
            }
            let fields = match &site {
                Some(s) if existing.is_some() => merge_fields(&s.fields, &decl.fields),
                _ => decl.fields.clone(),
            };
            let object_at = match (&site, &existing) {
                (Some(s), Some(_)) => s.at.clone(),
                _ => {
                    let siblings = (kind.map)(self.topology, v).names();
                    if let Some(close) = typo_of(name, siblings.iter().map(String::as_str)) {
                        p.r.report(
                            Diagnostic::warning(
                                "overlay-adds",
                                format!("the overlay adds {key}, which the base does not declare"),
                            )
                            .at(decl.at.clone())
                            .label("only in this environment")
                            .help(format!(
                                "to change the {} \"{close}\" of the base, name it as the base does",
                                kind.noun
                            )),
                        );
                    }
                    decl.at.clone()
                }
            };
            (kind.map)(self.topology, v).insert(name.to_string(), decl.value);
            self.locations.named.remove(&key);
            self.locations.objects.insert(&key, ObjectLocation { at: object_at, fields });
        }
    }

    /// The objects of kinds of `model::kinds` of one overlay file; one
    /// declared twice in it is a `duplicate` error, as in a topology file.
    fn objects(&mut self, p: &mut Parser, top: &Fields, vhosts: &[&str]) {
        let mut seen: BTreeMap<object_kinds::Name, Location> = BTreeMap::new();
        for kind in KINDS.iter().filter(|k| !kinds::read_apart(k)) {
            for (node, name) in p.entries(top, kind) {
                let at = p.r.loc(name.as_ref().map_or(node.span(), |(_, span)| span.clone()));
                if let Some(n) = kinds::name_of(kind, node, name.as_ref().map(|(n, _)| *n))
                    && let Some(first) = seen.insert(n.clone(), at.clone())
                {
                    let first = self.sources.position(&first);
                    p.r.report(
                        Diagnostic::error("duplicate", format!("{n} is declared twice in this overlay"))
                            .at(at)
                            .label("declared again here")
                            .help(format!("it is first declared at {first}; keep one of the two declarations")),
                    );
                    continue;
                }
                self.object(p, kind, vhosts, node, name);
            }
        }
    }

    /// An object of a kind of `model::kinds`, in each of the overlay's
    /// vhosts (or broker-wide): merged over the base's of its name, added,
    /// or removed.
    fn object(
        &mut self,
        p: &mut Parser,
        kind: &'static object_kinds::Kind,
        vhosts: &[&str],
        node: &Node,
        name: Option<(&str, Range<usize>)>,
    ) {
        let named = name.as_ref().map(|(n, _)| *n);
        // A kind named inside its table keeps those keys beside `remove`.
        let table = kind.table_attribute().map(|a| a.name);
        let (node, removal) = removal(p, node, table, !kinds::is_named(kind));
        if let (Removal::Object(_), Item::Table(t)) = (&removal, &node.item)
            && let Some(other) = t.keys().find(|k| !kind.identity.iter().any(|a| a.name == k.name))
        {
            p.r.report(
                Diagnostic::error("overlay-remove", "an object that is removed has no other keys")
                    .at(p.r.loc(other.span()))
                    .help("drop the other keys, or `remove = true` to change the object instead"),
            );
        }
        let Some(oname) = kinds::name_of(kind, &node, named) else {
            // Reported as a topology file's would be.
            p.object(kind, name, &node, None);
            return;
        };
        let scopes: Vec<Option<&str>> = match kind.scope {
            Scope::Broker => vec![None],
            Scope::Vhost => vhosts.iter().map(|v| Some(*v)).collect(),
        };
        for v in scopes {
            let key = ObjectKey::Object { vhost: v.map(str::to_string), name: oname.clone() };
            let existing = objects(self.topology, v).get(&oname).cloned();
            let site = self.locations.objects.get(&key).cloned();
            if let Removal::Object(remove_at) = &removal {
                if objects(self.topology, v).remove(&oname).is_none() {
                    p.r.report(
                        Diagnostic::error(
                            "overlay-remove",
                            format!("the overlay removes {key}, which is not declared"),
                        )
                        .at(remove_at.clone())
                        .help(format!("name the {} as the base declares it, or drop this `remove`", kind.name)),
                    );
                }
                self.locations.objects.remove(&key);
                continue;
            }
            let Some(mut decl) = p.object(kind, name.clone(), &node, existing.as_ref()) else { continue };
            if let (Removal::Entries(entries), Some(t)) = (&removal, table) {
                for (path, at) in entries {
                    let entry = &path[t.len() + 1..];
                    let Some(Value::Table(of)) = decl.value.body.get_mut(t) else { continue };
                    if of.remove(entry).is_none() {
                        p.r.report(absent_entry(&key, path, at));
                    }
                }
            }
            let (fields, object_at) = match (&site, &existing) {
                (Some(s), Some(_)) => (merge_fields(&s.fields, &decl.fields), s.at.clone()),
                _ => {
                    self.added(p, &key, &oname, v, &decl.at);
                    (decl.fields.clone(), decl.at.clone())
                }
            };
            objects(self.topology, v).insert(oname.clone(), decl.value.body);
            self.locations.objects.insert(&key, ObjectLocation { at: object_at, fields });
        }
    }

    /// Warns of an object the overlay adds whose name is close to one of
    /// the base's: likely a typo of it.
    fn added(
        &mut self,
        p: &mut Parser,
        key: &ObjectKey,
        name: &object_kinds::Name,
        vhost: Option<&str>,
        at: &Location,
    ) {
        let said = |n: &object_kinds::Name| n.id.join(" ");
        let siblings: Vec<&object_kinds::Name> =
            objects(self.topology, vhost).keys().filter(|n| n.kind == name.kind).collect();
        let Some(close) = siblings.iter().find(|n| typo_of(&said(name), [said(n).as_str()]).is_some()) else { return };
        p.r.report(
            Diagnostic::warning("overlay-adds", format!("the overlay adds {key}, which the base does not declare"))
                .at(at.clone())
                .label("only in this environment")
                .help(format!("to change the {close} of the base, name it as the base does")),
        );
    }

    /// `[vhost]` of the overlay: the settings merged over each vhost's, or
    /// the vhost removed with everything in it.
    fn settings(&mut self, p: &mut Parser, node: &Node, vhosts: &[&str]) {
        // `[vhost] remove = true` removes the vhost with everything in it.
        let (node, removal) = removal(p, node, Some("limits"), false);
        for v in vhosts {
            let key = ObjectKey::Vhost(v.to_string());
            if let Removal::Object(at) = &removal {
                if self.topology.vhosts.remove(*v).is_none_or(|x| x == Vhost::new(v)) {
                    p.r.report(
                        Diagnostic::error(
                            "overlay-remove",
                            format!("the overlay removes vhost \"{v}\", which the base does not declare"),
                        )
                        .at(at.clone())
                        .help("name a vhost of the base in `vhosts`, or drop this `remove`"),
                    );
                }
                let gone = |k: &ObjectKey| k.vhost() == Some(*v);
                self.locations.objects.retain(|k| !gone(k));
                self.locations.bindings.retain(|k| !gone(k));
                self.locations.named.retain(|k| !gone(k));
                continue;
            }
            let base = self.topology.vhosts.get(*v).map(|x| x.settings.clone());
            let Some(mut decl) = p.settings(&node, base.as_ref()) else { continue };
            if let Removal::Entries(entries) = &removal {
                for (path, at) in entries {
                    let entry = path.strip_prefix("limits.").unwrap_or(path);
                    if decl.value.limits.as_mut().and_then(|l| l.remove(entry)).is_none() {
                        p.r.report(absent_entry(&key, path, at));
                    }
                }
            }
            let fields = match self.locations.objects.get(&key) {
                Some(s) => ObjectLocation { at: s.at.clone(), fields: merge_fields(&s.fields, &decl.fields) },
                None => ObjectLocation { at: decl.at.clone(), fields: decl.fields.clone() },
            };
            self.locations.objects.insert(&key, fields);
            vhost(self.topology, v).settings = decl.value;
        }
    }

    /// `[[bindings]]` of the overlay: added, or removed with `remove = true`.
    fn bindings(&mut self, p: &mut Parser, node: &Node, vhosts: &[&str]) {
        let Item::Array(items) = &node.item else {
            // Reported as a topology file's would be.
            p.bindings(node);
            return;
        };
        for item in items {
            let (item, removal) = removal(p, item, None, true);
            let Some(decl) = p.binding(&item) else { continue };
            for v in vhosts {
                let key = ObjectKey::Binding { vhost: v.to_string(), binding: decl.value.clone() };
                let set = &mut vhost(self.topology, v).bindings;
                match &removal {
                    Removal::Object(at) => {
                        if !set.remove(&decl.value) {
                            p.r.report(
                                Diagnostic::error("overlay-remove", format!("the overlay removes {key}, which is not declared"))
                                    .at(at.clone())
                                    .help("give the binding's source, destination, routing key and arguments as the base declares them"),
                            );
                        }
                        self.locations.bindings.remove(&key);
                    }
                    _ if !set.insert(decl.value.clone()) => {
                        let first = self.locations.bindings.get(&key).map(|s| s.at.clone());
                        let mut d = Diagnostic::error("duplicate", format!("{key} is declared twice"))
                            .at(decl.at.clone())
                            .label("declared again here");
                        if let Some(first) = first {
                            let first = self.sources.position(&first);
                            d = d.help(format!("it is first declared at {first}; keep one of the two declarations"));
                        }
                        p.r.report(d);
                    }
                    _ => {
                        let site = ObjectLocation { at: decl.at.clone(), fields: decl.fields.clone() };
                        self.locations.bindings.insert(&key, site);
                    }
                }
            }
        }
    }

    fn read_renames(&mut self, p: &mut Parser, node: &Node) {
        let Item::Table(table) = &node.item else {
            p.r.wrong_type(node, "`rename_vhosts`", "a table of vhost names, e.g. { orders = \"orders-staging\" }");
            return;
        };
        for (k, v) in table.iter() {
            let Item::String(to) = &v.item else {
                p.r.wrong_type(v, format_args!("the new name of vhost \"{}\"", k.name), "a string");
                continue;
            };
            if to.is_empty() || to.len() > parse::MAX_NAME_BYTES {
                p.r.report(
                    Diagnostic::error("bad-value", format!("\"{to}\" cannot be a vhost's name"))
                        .at(p.r.loc(v.span()))
                        .help(format!("use 1 to {} bytes", parse::MAX_NAME_BYTES)),
                );
                continue;
            }
            self.renames.push(Rename {
                from: k.name.to_string(),
                to: to.to_string(),
                from_at: p.r.loc(k.span()),
                to_at: p.r.loc(v.span()),
            });
        }
    }

    /// What waits for every overlay: renames, and queues typed by a
    /// default an overlay changed.
    fn finish(&mut self, found: &mut Vec<Diagnostic>) {
        // Each queue of no type takes its vhost's default as it is now.
        for (v, vh) in &mut self.topology.vhosts {
            let default = vh.settings.default_queue_type.unwrap_or(QueueType::Classic);
            for q in vh.queues.values_mut() {
                let key = ObjectKey::Queue { vhost: v.clone(), name: q.name.clone() };
                if self.locations.objects.get(&key).is_some_and(|s| !typed(s)) {
                    q.kind = default;
                }
            }
        }
        let renames = std::mem::take(&mut self.renames);
        for r in &renames {
            if !self.topology.vhosts.contains_key(&r.from) {
                found.push(
                    Diagnostic::error(
                        "overlay-rename",
                        format!("the overlay renames vhost \"{}\", which is not declared", r.from),
                    )
                    .at(r.from_at.clone())
                    .help("name a vhost of the base, as its files name it"),
                );
                continue;
            }
            if self.topology.vhosts.contains_key(&r.to) && !renames.iter().any(|o| o.from == r.to) {
                found.push(
                    Diagnostic::error(
                        "overlay-rename",
                        format!("vhost \"{}\" is renamed to \"{}\", which is already a vhost", r.from, r.to),
                    )
                    .at(r.to_at.clone())
                    .help("two vhosts cannot share a name; choose another"),
                );
                continue;
            }
            if renames.iter().filter(|o| o.to == r.to).count() > 1 {
                found.push(
                    Diagnostic::error("overlay-rename", format!("two vhosts are renamed to \"{}\"", r.to))
                        .at(r.to_at.clone())
                        .help("give each vhost a name of its own"),
                );
                continue;
            }
        }
        if found.iter().any(|d| d.code == "overlay-rename") {
            return;
        }
        let moves: BTreeMap<String, String> = renames.into_iter().map(|r| (r.from, r.to)).collect();
        rename(self.topology, self.locations, &moves);
        *self.renamed = moves;
    }
}

/// Gives the vhosts of `moves` (from, to) their new names, with their
/// objects and the places of those.
pub(super) fn rename(topology: &mut Topology, locations: &mut Locations, moves: &BTreeMap<String, String>) {
    if moves.is_empty() {
        return;
    }
    let mut vhosts: Vec<(String, Vhost)> = std::mem::take(&mut topology.vhosts).into_iter().collect();
    for (name, vh) in &mut vhosts {
        if let Some(to) = moves.get(name.as_str()) {
            *name = to.clone();
            vh.name = to.clone();
        }
    }
    topology.vhosts = vhosts.into_iter().collect();
    let rekey = |k: ObjectKey| match k.vhost().and_then(|v| moves.get(v)) {
        Some(to) => k.in_vhost(to),
        None => k,
    };
    locations.objects.rekey(rekey);
    locations.bindings.rekey(rekey);
    locations.named = std::mem::take(&mut locations.named).into_iter().map(rekey).collect();
}

/// Whether the files give a queue's type, rather than its vhost's default.
fn typed(site: &ObjectLocation) -> bool {
    site.fields.get("type").is_some() || site.fields.get("arguments.x-queue-type").is_some()
}

/// The base's field places, with the overlay's over them.
fn merge_fields(base: &FieldLocations, over: &FieldLocations) -> std::sync::Arc<FieldLocations> {
    let mut out = base.clone();
    for (path, at) in over.iter() {
        out.insert(path, at);
    }
    out.into()
}

/// `node` without its `remove` key, and what that key asks for. `table`
/// names the table whose entries may be removed. A binding (`by_content`)
/// is named by its other keys.
fn removal<'i>(p: &mut Parser, node: &Node<'i>, table: Option<&str>, by_content: bool) -> (Node<'i>, Removal) {
    let Item::Table(t) = &node.item else { return (node.clone(), Removal::None) };
    let (rest, taken) = t.without("remove");
    let node_rest = Node { span: node.span(), item: Item::Table(rest.clone()) };
    let Some(remove) = taken else { return (node_rest, Removal::None) };
    let removal = match &remove.item {
        Item::Boolean(false) => Removal::None,
        Item::Boolean(true) => {
            if let Some(other) = rest.keys().next().filter(|_| !by_content) {
                p.r.report(
                    Diagnostic::error("overlay-remove", "an object that is removed has no other keys")
                        .at(p.r.loc(other.span()))
                        .help("drop the other keys, or `remove = true` to change the object instead"),
                );
            }
            Removal::Object(p.r.loc(remove.span()))
        }
        Item::Array(items) => {
            let mut entries = Vec::new();
            for item in items {
                let Item::String(path) = &item.item else {
                    p.r.wrong_type(item, "each item of `remove`", "a string such as \"arguments.x-max-length\"");
                    continue;
                };
                let ok = table.is_some_and(|t| {
                    path.strip_prefix(t).and_then(|r| r.strip_prefix('.')).is_some_and(|e| !e.is_empty())
                });
                if !ok {
                    let help = match table {
                        Some(t) => {
                            format!("name an entry of its `{t}`, as \"{t}.NAME\"; to change another field, set it")
                        }
                        None => "this object has no table whose entries can be removed; to change a field, set it"
                            .to_string(),
                    };
                    p.r.report(
                        Diagnostic::error("overlay-remove", format!("`remove` cannot name \"{path}\""))
                            .at(p.r.loc(item.span()))
                            .help(help),
                    );
                    continue;
                }
                entries.push((path.to_string(), p.r.loc(item.span())));
            }
            Removal::Entries(entries)
        }
        _ => {
            p.r.wrong_type(&remove, "`remove`", "true, or a list of entries such as [\"arguments.x-max-length\"]");
            Removal::None
        }
    };
    (node_rest, removal)
}

/// Removes `remove = [...]`'s entries from an object's table.
fn strip<T>(p: &mut Parser, kind: &Kind<T>, key: &ObjectKey, value: &mut T, entries: &[(String, Location)]) {
    let Some((name, remove)) = kind.table else { return };
    for (path, at) in entries {
        let entry = &path[name.len() + 1..];
        if !remove(value, entry) {
            p.r.report(absent_entry(key, path, at));
        }
    }
}

fn absent_entry(key: &ObjectKey, path: &str, at: &Location) -> Diagnostic {
    Diagnostic::error("overlay-remove", format!("the overlay removes `{path}` of {key}, which it does not have"))
        .at(at.clone())
        .help("drop it from `remove`, or name the entry as the base writes it")
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::desired::{Desired, load_texts};
    use crate::diagnostic::Severity;
    use crate::model::{ObjectKey, QueueType, Value};

    const BASE: &str = r#"vhosts = ["orders"]
[vhost]
default_queue_type = "quorum"
[exchanges.events]
type = "topic"
[queues."orders.invoicing"]
arguments = { x-max-length = 10, x-message-ttl = 60000, x-dead-letter-exchange = "", x-dead-letter-routing-key = "orders.debug" }
[queues."orders.debug"]
type = "classic"
[[bindings]]
source = "events"
queue = "orders.invoicing"
routing_key = "order.*"
[policies.limits]
pattern = "^orders\\."
apply_to = "queues"
definition = { max-length-bytes = 1000, delivery-limit = 20 }
[users.app]
password_env = "APP_PASSWORD"
limits = { max-connections = 10, max-channels = 20 }
[permissions.app]
configure = "^$"
write = "^events$"
read = "^orders\\."
[[topic_permissions]]
user = "app"
exchange = "events"
write = "^order\\."
read = "^order\\."
"#;

    /// The base, with `overlay` (file `overlay.toml`) merged over it.
    fn merged(overlay: &str) -> Desired {
        merged_over(BASE, overlay)
    }

    /// `base` (file `base.toml`), with `overlay` merged over it.
    fn merged_over(base: &str, overlay: &str) -> Desired {
        let mut d = load_texts(Path::new("."), vec![(PathBuf::from("base.toml"), base.to_string())]);
        assert!(d.diagnostics.is_empty(), "{:?}", d.diagnostics);
        super::apply(&mut d, vec![(PathBuf::from("overlay.toml"), overlay.to_string())]);
        d
    }

    /// Each diagnostic as `file:line:column code message`.
    fn said(d: &Desired) -> Vec<String> {
        d.diagnostics
            .iter()
            .map(|x| match &x.location {
                Some(l) => format!("{} {} {}", d.sources.position(l), x.code, x.message),
                None => format!("{} {}", x.code, x.message),
            })
            .collect()
    }

    #[test]
    fn a_field_takes_the_overlay_value_typed_and_placed_at_the_overlay() {
        let d = merged("vhosts = [\"orders\"]\n[queues.\"orders.invoicing\"]\narguments.x-max-length = 1000000\n");
        assert!(d.diagnostics.is_empty(), "{:?}", said(&d));
        let q = &d.topology.vhosts["orders"].queues["orders.invoicing"];
        assert_eq!(q.arguments.get("x-max-length"), Some(&Value::Int(1_000_000)));
        assert_eq!(q.arguments.get("x-message-ttl"), Some(&Value::Int(60_000)), "the base's other arguments stay");
        assert_eq!(q.kind, QueueType::Quorum, "still typed by the vhost's default");
        let key = ObjectKey::Queue { vhost: "orders".into(), name: "orders.invoicing".into() };
        let at = d.locations.locate(&key, Some("arguments.x-max-length")).unwrap();
        assert_eq!(d.sources.position(&at), "overlay.toml:3:26");
        let at = d.locations.locate(&key, Some("arguments.x-message-ttl")).unwrap();
        assert!(d.sources.position(&at).starts_with("base.toml:"));
    }

    #[test]
    fn what_an_overlay_cannot_declare_is_an_error_not_left_out() {
        let d = merged("vhosts = [\"orders\"]\n[services.s]\nuser = \"app\"\n[removed]\nqueues = [\"q\"]\n");
        assert_eq!(
            said(&d),
            [
                "overlay.toml:2:2 overlay an overlay cannot declare `services`",
                "overlay.toml:4:1 overlay an overlay cannot declare `removed`"
            ]
        );
    }

    #[test]
    fn a_broken_overlay_is_reported_at_its_own_line() {
        let d = merged(
            "vhosts = [\"orders\"]\n[queues.\"orders.invoicing\"]\ndurable = \"yes\"\narguments = { x-max-length = \"lots\" }\n",
        );
        let said = said(&d);
        assert!(said.iter().any(|s| s.starts_with("overlay.toml:3:11 wrong-type")), "{said:?}");
        assert!(said.iter().any(|s| s.starts_with("overlay.toml:4:30 bad-argument")), "{said:?}");
        // The base's queue stays as it was.
        let q = &d.topology.vhosts["orders"].queues["orders.invoicing"];
        assert_eq!(q.arguments.get("x-max-length"), Some(&Value::Int(10)));
    }

    #[test]
    fn a_super_stream_takes_the_overlay_fields_and_replaces_the_base_objects() {
        let base = BASE.to_string()
            + "[super_streams.stream]\npartitions = 2\narguments = { x-max-age = \"7D\", x-max-length-bytes = 1000 }\n";
        let over = |overlay: &str| merged_over(&base, overlay);
        let queues = |d: &Desired| -> Vec<String> {
            d.topology.vhosts["orders"].queues.keys().filter(|q| q.starts_with("stream-")).cloned().collect()
        };
        let unchanged = over("vhosts = [\"orders\"]\n");
        assert_eq!(queues(&unchanged), ["stream-0", "stream-1"]);
        let d =
            over("vhosts = [\"orders\"]\n[super_streams.stream]\npartitions = 3\narguments = { x-max-age = \"1D\" }\n");
        assert!(d.diagnostics.is_empty(), "{:?}", said(&d));
        assert_eq!(queues(&d), ["stream-0", "stream-1", "stream-2"]);
        let q = &d.topology.vhosts["orders"].queues["stream-2"];
        assert_eq!(q.arguments.get("x-max-age"), Some(&Value::String("1D".into())), "the overlay's value");
        assert_eq!(q.arguments.get("x-max-length-bytes"), Some(&Value::Int(1000)), "the base's other arguments");
        let key = ObjectKey::Queue { vhost: "orders".into(), name: "stream-2".into() };
        assert_eq!(d.sources.position(&d.locations.locate(&key, None).unwrap()), "overlay.toml:2:16");
        assert_eq!(d.topology.vhosts["orders"].bindings.iter().filter(|b| b.source == "stream").count(), 3);

        let keyed = over("vhosts = [\"orders\"]\n[super_streams.stream]\nbinding_keys = [\"eu\"]\n");
        assert_eq!(queues(&keyed), ["stream-eu"]);
        let key = ObjectKey::Queue { vhost: "orders".into(), name: "stream-0".into() };
        assert!(keyed.locations.locate(&key, None).is_none(), "the base's partitions and their places are gone");

        let gone = over("vhosts = [\"orders\"]\n[super_streams.stream]\nremove = true\n");
        assert!(gone.diagnostics.is_empty(), "{:?}", said(&gone));
        assert!(queues(&gone).is_empty() && !gone.topology.vhosts["orders"].exchanges.contains_key("stream"));

        let added =
            over("vhosts = [\"orders\"]\n[super_streams.more]\npartitions = 1\narguments = { x-max-age = \"1D\" }\n");
        assert!(added.topology.vhosts["orders"].queues.contains_key("more-0"));
        let unsaid = over("vhosts = [\"orders\"]\n[super_streams.more]\narguments = { x-max-age = \"1D\" }\n");
        assert!(said(&unsaid).iter().any(|s| s.starts_with("overlay.toml:2:16 missing-key")), "{:?}", said(&unsaid));
    }

    #[test]
    fn a_policy_changes_one_key_of_its_definition() {
        let d = merged("vhosts = [\"orders\"]\n[policies.limits]\ndefinition.max-length-bytes = 5\n");
        assert!(d.diagnostics.is_empty(), "{:?}", said(&d));
        let p = &d.topology.vhosts["orders"].policy("limits").unwrap();
        assert_eq!(p.pattern, "^orders\\.");
        assert_eq!(p.definition.get("max-length-bytes"), Some(&Value::Int(5)));
        assert_eq!(p.definition.get("delivery-limit"), Some(&Value::Int(20)));
    }

    /// A table attribute of a kind (an operator policy's `definition`) is
    /// merged key by key, and `remove` takes keys out, as a policy's is.
    #[test]
    fn an_operator_policy_changes_and_removes_keys_of_its_definition() {
        let base = format!(
            "{BASE}[operator_policies.cap]\npattern = \"^orders\\\\.debug$\"\ndefinition = {{ max-length-bytes = 10, overflow = \"reject-publish\" }}\n"
        );
        let definition = |d: &Desired| {
            let o = &d.topology.vhosts["orders"].objects;
            crate::model::kinds::operator_policies::typed(o)["cap"].definition.clone()
        };
        let d = merged_over(&base, "vhosts = [\"orders\"]\n[operator_policies.cap]\ndefinition.max-length-bytes = 5\n");
        assert!(d.diagnostics.is_empty(), "{:?}", said(&d));
        assert_eq!(definition(&d).get("max-length-bytes"), Some(&Value::Int(5)));
        assert_eq!(definition(&d).get("overflow"), Some(&Value::String("reject-publish".into())));
        let d =
            merged_over(&base, "vhosts = [\"orders\"]\n[operator_policies.cap]\nremove = [\"definition.overflow\"]\n");
        assert!(d.diagnostics.is_empty(), "{:?}", said(&d));
        assert_eq!(definition(&d).keys().collect::<Vec<_>>(), ["max-length-bytes"]);
        let d = merged_over(&base, "vhosts = [\"orders\"]\n[operator_policies.cap]\nremove = [\"definition.nope\"]\n");
        assert!(said(&d).iter().any(|s| s.starts_with("overlay.toml:3:11 overlay-remove")), "{:?}", said(&d));
        let d = merged_over(&base, "vhosts = [\"orders\"]\n[operator_policies.cap]\nremove = [\"pattern\"]\n");
        assert!(said(&d).iter().any(|s| s.contains("overlay-remove")), "{:?}", said(&d));
    }

    #[test]
    fn new_objects_are_added_and_a_likely_typo_is_said() {
        let d = merged(
            "vhosts = [\"orders\"]\n[queues.\"orders.invoicng\"]\narguments.x-max-length = 5\n[policies.extra]\ndefinition = { max-length = 1 }\n[queues.\"orders.audit\"]\n",
        );
        let said = said(&d);
        assert!(
            said.iter().any(|s| s.starts_with("overlay.toml:2:9 overlay-adds") && s.contains("invoicng")),
            "{said:?}"
        );
        // A new policy must be whole: its pattern is missing.
        assert!(said.iter().any(|s| s.starts_with("overlay.toml:4:11 missing-key")), "{said:?}");
        assert!(!said.iter().any(|s| s.contains("orders.audit")), "an addition with no near name is silent: {said:?}");
        let v = &d.topology.vhosts["orders"];
        assert_eq!(v.queues["orders.audit"].kind, QueueType::Quorum, "a new queue takes the vhost's default");
        assert!(v.queues.contains_key("orders.invoicng"));
    }

    #[test]
    fn objects_and_entries_are_removed() {
        let d = merged(
            "vhosts = [\"orders\"]\n[queues.\"orders.debug\"]\nremove = true\n[queues.\"orders.invoicing\"]\nremove = [\"arguments.x-message-ttl\"]\n[[bindings]]\nsource = \"events\"\nqueue = \"orders.invoicing\"\nrouting_key = \"order.*\"\nremove = true\n",
        );
        assert!(d.diagnostics.is_empty(), "{:?}", said(&d));
        let v = &d.topology.vhosts["orders"];
        assert!(!v.queues.contains_key("orders.debug"));
        assert!(!v.queues["orders.invoicing"].arguments.contains_key("x-message-ttl"));
        assert!(v.bindings.is_empty());
        assert!(
            d.locations
                .locate(&ObjectKey::Queue { vhost: "orders".into(), name: "orders.debug".into() }, None)
                .is_none()
        );
    }

    #[test]
    fn removing_what_is_not_there_is_an_error_at_the_remove() {
        let d = merged(
            "vhosts = [\"orders\"]\n[queues.gone]\nremove = true\n[queues.\"orders.invoicing\"]\nremove = [\"arguments.x-expires\", \"durable\"]\n[exchanges.events]\nremove = true\ntype = \"fanout\"\n",
        );
        let said = said(&d);
        assert!(
            said.iter().any(|s| s.starts_with("overlay.toml:3:10 overlay-remove") && s.contains("gone")),
            "{said:?}"
        );
        assert!(
            said.iter().any(|s| s.starts_with("overlay.toml:5:11 overlay-remove") && s.contains("x-expires")),
            "{said:?}"
        );
        assert!(
            said.iter().any(|s| s.starts_with("overlay.toml:5:34 overlay-remove") && s.contains("\"durable\"")),
            "{said:?}"
        );
        assert!(
            said.iter().any(|s| s.starts_with("overlay.toml:8:1 overlay-remove") && s.contains("no other keys")),
            "{said:?}"
        );
    }

    #[test]
    fn a_renamed_vhost_takes_its_objects_and_their_places() {
        let d = merged(
            "rename_vhosts = { orders = \"orders-staging\" }\nvhosts = [\"orders\"]\n[queues.\"orders.invoicing\"]\narguments.x-max-length = 7\n",
        );
        assert!(d.diagnostics.is_empty(), "{:?}", said(&d));
        assert!(!d.topology.vhosts.contains_key("orders"));
        let v = &d.topology.vhosts["orders-staging"];
        assert_eq!(v.name, "orders-staging");
        assert_eq!(v.queues["orders.invoicing"].arguments.get("x-max-length"), Some(&Value::Int(7)));
        assert!(v.has_permission("app") && v.bindings.len() == 1);
        let key = ObjectKey::Queue { vhost: "orders-staging".into(), name: "orders.invoicing".into() };
        assert!(d.locations.locate(&key, Some("arguments.x-max-length")).is_some());
        let d = merged("rename_vhosts = { nope = \"x\" }\n");
        assert_eq!(
            said(&d),
            ["overlay.toml:1:19 overlay-rename the overlay renames vhost \"nope\", which is not declared"]
        );
    }

    #[test]
    fn a_new_default_queue_type_types_the_queues_that_give_none() {
        let d = merged("vhosts = [\"orders\"]\n[vhost]\ndefault_queue_type = \"classic\"\n");
        assert!(d.diagnostics.is_empty(), "{:?}", said(&d));
        let v = &d.topology.vhosts["orders"];
        assert_eq!(v.queues["orders.invoicing"].kind, QueueType::Classic);
        assert_eq!(v.settings.default_queue_type, Some(QueueType::Classic));
    }

    #[test]
    fn a_file_of_two_vhosts_reports_its_problem_once() {
        let d = merged("vhosts = [\"orders\", \"other\"]\n[queues.q]\ndurable = 1\n");
        let errors: Vec<String> = said(&d).into_iter().filter(|s| s.contains("wrong-type")).collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(d.diagnostics.iter().any(|x| x.severity == Severity::Warning && x.message.contains("vhost \"other\"")));
    }

    #[test]
    fn users_and_permissions_take_the_overlay_fields() {
        let d = merged(
            "vhosts = [\"orders\"]\n[users.app]\npassword_env = \"STAGING_APP_PASSWORD\"\n[permissions.app]\nread = \"^orders\\\\.invoicing$\"\n",
        );
        let said = said(&d);
        assert!(said.iter().all(|s| !s.contains("error")), "{said:?}");
        let p = d.topology.vhosts["orders"].permission("app").unwrap();
        assert_eq!((p.write.as_str(), p.read.as_str()), ("^events$", "^orders\\.invoicing$"));
        assert_eq!(
            d.topology.user("app").unwrap().password,
            crate::model::Password::Env("STAGING_APP_PASSWORD".into())
        );
    }

    #[test]
    fn a_users_limits_merge_entry_by_entry_and_one_can_be_removed() {
        let d = merged(
            "vhosts = [\"orders\"]\n[users.app]\nlimits = { max-connections = 50 }\nremove = [\"limits.max-channels\"]\n",
        );
        assert!(d.diagnostics.is_empty(), "{:?}", said(&d));
        let limits = d.topology.user("app").unwrap().limits.unwrap();
        assert_eq!(limits, [("max-connections".to_string(), 50)].into());
        assert_eq!(d.topology.user("app").unwrap().password, crate::model::Password::Env("APP_PASSWORD".into()));
        let d = merged("vhosts = [\"orders\"]\n[users.app]\nremove = [\"limits.max-queues\"]\n");
        assert_eq!(
            said(&d),
            [
                "overlay.toml:3:11 overlay-remove the overlay removes `limits.max-queues` of user \"app\", which it does not have"
            ]
        );
    }

    #[test]
    fn objects_of_kinds_merge_by_their_name_are_added_and_removed() {
        use crate::model::kinds::{Name, by_table};
        let name = |x: &str| Name { kind: by_table("topic_permissions").unwrap(), id: vec!["app".into(), x.into()] };
        let d = merged(
            "vhosts = [\"orders\"]\n[[topic_permissions]]\nuser = \"app\"\nexchange = \"events\"\nread = \"^order\\\\.created$\"\n[[topic_permissions]]\nuser = \"app\"\nexchange = \"amq.topic\"\nwrite = \"^$\"\nread = \"^$\"\n",
        );
        assert!(d.diagnostics.is_empty(), "{:?}", said(&d));
        let objects = &d.topology.vhosts["orders"].objects;
        let body = &objects[&name("events")];
        assert_eq!(body.get("read"), Some(&Value::String("^order\\.created$".into())));
        assert_eq!(body.get("write"), Some(&Value::String("^order\\.".into())), "the base's write stays");
        assert!(objects.contains_key(&name("amq.topic")), "added");
        let key = ObjectKey::Object { vhost: Some("orders".into()), name: name("events") };
        assert_eq!(d.sources.position(&d.locations.locate(&key, Some("read")).unwrap()), "overlay.toml:5:8");
        assert!(d.sources.position(&d.locations.locate(&key, None).unwrap()).starts_with("base.toml:"));

        let d = merged(
            "vhosts = [\"orders\"]\n[[topic_permissions]]\nuser = \"app\"\nexchange = \"events\"\nremove = true\n[[topic_permissions]]\nuser = \"app\"\nexchange = \"gone\"\nremove = true\nread = \"^$\"\n",
        );
        assert_eq!(
            said(&d),
            [
                "overlay.toml:9:10 overlay-remove the overlay removes topic permission (user \"app\", exchange \"gone\") in vhost \"orders\", which is not declared",
                "overlay.toml:10:1 overlay-remove an object that is removed has no other keys",
            ]
        );
        // The base's policy is among the objects: no topic permission is left.
        assert!(!d.topology.vhosts["orders"].objects.keys().any(|n| n.kind.table == "topic_permissions"));
        assert!(d.locations.locate(&key, None).is_none());

        let twice = "[[topic_permissions]]\nuser = \"app\"\nexchange = \"events\"\nread = \"^$\"\n";
        let d = merged(&format!("vhosts = [\"orders\"]\n{twice}{twice}"));
        assert_eq!(
            said(&d),
            [
                "overlay.toml:6:1 duplicate topic permission (user \"app\", exchange \"events\") is declared twice in this overlay"
            ]
        );
    }
}
