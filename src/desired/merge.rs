//! Places each file's declarations into the vhosts it names and checks that
//! no object is declared twice, in one file or across files.

use std::collections::{BTreeMap, BTreeSet};

use super::decl::{Decl, FileDecl, Moved, ObjectDecl, Removed};
use crate::diagnostic::Diagnostic;
use crate::model::kinds::{Scope, users};
use crate::model::{Binding, ObjectKey, SetBuilder, Topology, Vhost};
use crate::source::{Location, Sources};
use crate::source::{Locations, ObjectLocation, Sites};

/// The merged topology and where each object came from.
pub(super) fn merge(
    mut files: Vec<FileDecl>,
    sources: &Sources,
    diagnostics: &mut Vec<Diagnostic>,
) -> (Topology, Locations) {
    // Bindings are most of a large topology and depend on nothing else here:
    // they are placed on a thread of their own while the rest is merged.
    let bindings: Vec<_> = files.iter_mut().map(|f| (vhost_names(f), std::mem::take(&mut f.bindings))).collect();
    let removed: Vec<_> = files.iter_mut().map(|f| (vhost_names(f), std::mem::take(&mut f.removed))).collect();
    let moved: Vec<_> = files.iter_mut().map(|f| (vhost_names(f), std::mem::take(&mut f.moved))).collect();
    let services: super::services::Filed =
        files.iter_mut().map(|f| (vhost_names(f), std::mem::take(&mut f.services))).collect();
    let (mut m, (sets, sites, found)) =
        rayon::join(|| merge_rest(files, sources), || place_bindings(bindings, sources));
    for (v, set) in sets {
        m.vhost(&v).bindings = set;
    }
    m.locations.bindings = sites;
    m.removed(removed);
    m.moved(moved);
    let unmet = super::services::place(&mut m.topology, &mut m.locations, services, sources);
    m.diagnostics.extend(unmet);
    diagnostics.append(&mut m.diagnostics);
    diagnostics.extend(found);
    (m.topology, m.locations)
}

impl Merger<'_> {
    /// The objects of `[removed]`, each in every vhost of its file; one the
    /// files also declare is an error, since it cannot be both.
    fn removed(&mut self, files: Vec<(Vec<String>, Vec<Removed>)>) {
        for (vhosts, removed) in files {
            for r in removed {
                let keys: Vec<ObjectKey> = match r.kind {
                    "users" => vec![r.key("")],
                    _ => vhosts.iter().map(|v| r.key(v)).collect(),
                };
                for key in keys {
                    if self.topology.has(&key) {
                        let d = Diagnostic::error("duplicate", format!("{key} is both declared and in [removed]"))
                            .at(r.at.clone())
                            .label("declared elsewhere in the files")
                            .help("keep the declaration to go on managing it, or remove it to stop managing it and leave it on the broker");
                        self.diagnostics.push(d);
                        continue;
                    }
                    self.topology.removed.insert(key);
                }
            }
        }
    }
}

impl Merger<'_> {
    /// The exchanges of `[moved]`, in every vhost of their file: the old
    /// name must no longer be declared and the new one must be, once.
    fn moved(&mut self, files: Vec<(Vec<String>, Vec<Moved>)>) {
        for (vhosts, moved) in files {
            for m in moved {
                for v in &vhosts {
                    let vhost = self.topology.vhosts.get(v);
                    let declared = |name: &str| vhost.is_some_and(|x| x.exchanges.contains_key(name));
                    let problem = if m.from == m.to {
                        Some(("an exchange cannot move to its own name".to_string(), "drop the entry".to_string()))
                    } else if declared(&m.from) {
                        Some((
                            format!("exchange \"{}\" in vhost \"{v}\" is both declared and moved", m.from),
                            format!(
                                "declare only the new name, \"{}\"; the old one is kept while the entry is here",
                                m.to
                            ),
                        ))
                    } else if !declared(&m.to) {
                        Some((
                            format!(
                                "exchange \"{}\" in vhost \"{v}\" moves to \"{}\", which the files do not declare",
                                m.from, m.to
                            ),
                            format!("declare `[exchanges.\"{}\"]` with the bindings the old one had", m.to),
                        ))
                    } else if vhost.is_some_and(|x| x.moved.contains_key(&m.from) || x.moved.contains_key(&m.to)) {
                        Some((
                            format!("exchange \"{}\" moves twice", m.from),
                            "keep one entry per exchange".to_string(),
                        ))
                    } else {
                        None
                    };
                    match problem {
                        Some((message, help)) => {
                            self.diagnostics.push(Diagnostic::error("moved", message).at(m.at.clone()).help(help))
                        }
                        None => _ = self.vhost(v).moved.insert(m.from.clone(), m.to.clone()),
                    }
                }
            }
        }
    }
}

fn vhost_names(f: &FileDecl) -> Vec<String> {
    f.vhosts.iter().map(|(v, _)| v.clone()).collect()
}

/// Everything but the bindings.
fn merge_rest(files: Vec<FileDecl>, sources: &Sources) -> Merger<'_> {
    let mut m = Merger {
        topology: Topology::default(),
        locations: Locations::default(),
        sources,
        diagnostics: Vec::new(),
        untyped: BTreeSet::new(),
    };
    // Settings first: a queue's default type comes from its vhost's settings,
    // which may be declared in another file.
    for f in &files {
        for (v, _) in &f.vhosts {
            m.topology.vhosts.entry(v.clone()).or_insert_with(|| Vhost::new(v));
            if f.failed.default_queue_type {
                m.untyped.insert(v.clone());
            }
            if let Some(s) = &f.settings
                && m.claim(ObjectKey::Vhost(v.clone()), s)
            {
                m.vhost(v).settings = s.value.clone();
            }
        }
    }
    for f in files {
        m.file(f);
    }
    m
}

/// Each vhost's bindings, as one set.
type BindingSets = BTreeMap<String, BTreeSet<Binding>>;

/// Bindings declared for one vhost, in the order declared.
type Group = (String, Vec<Decl<Binding>>);

/// What one run of bindings gives: each vhost's set so far, the places of
/// first declarations, and the places of repeats.
type Placed = (BTreeMap<String, SetBuilder<Binding>>, Sites<ObjectLocation>, Vec<(ObjectKey, Location)>);

/// A large file's bindings are placed in two runs at once; fewer, in one.
const ONE_RUN: usize = 4096;

/// Each vhost's bindings, where each was declared, and the duplicates found.
fn place_bindings(
    files: Vec<(Vec<String>, Vec<Decl<Binding>>)>,
    sources: &Sources,
) -> (BindingSets, Sites<ObjectLocation>, Vec<Diagnostic>) {
    // In the order declared, each file's bindings once for each of its vhosts.
    let mut earlier: Vec<Group> = Vec::new();
    for (vhosts, mut bindings) in files {
        let n = vhosts.len();
        for (i, v) in vhosts.into_iter().enumerate() {
            earlier.push((v, own(&mut bindings, i + 1 == n)));
        }
    }
    let all = earlier.iter().map(|(_, b)| b.len()).sum();
    let later = if all > ONE_RUN { split(&mut earlier, all / 2) } else { Vec::new() };
    // Room for the later run's places too, which join these.
    let ((mut sets, mut sites, mut repeats), (later_sets, later_sites, later_repeats)) =
        rayon::join(|| place(earlier, all), || place(later, 0));
    // The runs' sets and their places join apart, at once.
    let (sets, ()) = rayon::join(
        || {
            for (v, set) in later_sets {
                match sets.get_mut(&v) {
                    Some(earlier) => earlier.union(set),
                    None => _ = sets.insert(v, set),
                }
            }
            sets.into_iter().map(|(v, set)| (v, set.finish())).collect()
        },
        || {
            // Every binding of the later run was declared after those of the earlier.
            repeats.extend(sites.join(later_sites).into_iter().map(|(key, site)| (key, site.at)));
            repeats.extend(later_repeats);
        },
    );
    let found = repeats
        .into_iter()
        .map(|(key, at)| duplicate(&key, at, sites.get(&key).expect("a repeat's first place"), sources))
        .collect();
    (sets, sites, found)
}

/// Cuts `groups` after their first `keep` bindings; returns the rest.
fn split(groups: &mut Vec<Group>, keep: usize) -> Vec<Group> {
    let mut seen = 0;
    for i in 0..groups.len() {
        let len = groups[i].1.len();
        if seen + len > keep {
            let tail = groups[i].1.split_off(keep - seen);
            let mut rest = vec![(groups[i].0.clone(), tail)];
            rest.extend(groups.drain(i + 1..));
            return rest;
        }
        seen += len;
    }
    Vec::new()
}

/// One run of bindings: their sets, the places of their first declarations
/// (with room for `room` of them), and the places of their repeats. A file
/// written by `warren import` lists its bindings in order, which the set
/// builder takes without a search.
fn place(run: Vec<Group>, room: usize) -> Placed {
    let mut sites = Sites::default();
    sites.reserve(room.max(run.iter().map(|(_, b)| b.len()).sum()));
    let mut sets: BTreeMap<String, SetBuilder<Binding>> = BTreeMap::new();
    let mut repeats = Vec::new();
    for (v, decls) in run {
        if decls.is_empty() {
            continue;
        }
        let set = sets.entry(v.clone()).or_default();
        for b in decls {
            let at = b.at.clone();
            match sites.claim_binding(&v, &b.value, ObjectLocation { at: b.at, fields: b.fields }) {
                // A binding claimed for the first time is new to the set.
                None => _ = set.insert(b.value),
                Some(_) => repeats.push((ObjectKey::Binding { vhost: v.clone(), binding: b.value }, at)),
            }
        }
    }
    (sets, sites, repeats)
}

/// Records where `key` is declared in `sites`; if it already was, the
/// diagnostic that says so.
fn claim<T>(
    sites: &mut Sites<ObjectLocation>,
    key: &ObjectKey,
    decl: &Decl<T>,
    sources: &Sources,
) -> Option<Diagnostic> {
    match sites.claim(key, ObjectLocation { at: decl.at.clone(), fields: decl.fields.clone() }) {
        None => None,
        Some(first) => {
            let d = duplicate(key, decl.at.clone(), first, sources);
            // An object a super stream makes is declared at the super stream.
            let made = [&decl.fields, &first.fields].iter().any(|f| f.get(SUPER_STREAM_MARK).is_some());
            let first_at = sources.position(&first.at);
            Some(if made {
                d.help(format!("it is first declared at {first_at}; a super stream declares its exchange, its `NAME-…` streams and their bindings itself: rename one of the two"))
            } else {
                d
            })
        }
    }
}

/// The field that marks the places of what a super stream makes.
pub(super) const SUPER_STREAM_MARK: &str = "super_stream";

/// `key`, first declared at `first`, is declared again `at`.
fn duplicate(key: &ObjectKey, at: Location, first: &ObjectLocation, sources: &Sources) -> Diagnostic {
    let mut first_at = sources.position(&first.at);
    // Two stamps of one shape make it at the same line: the stamps tell them apart.
    if let Some(origin) = sources.origin(&first.at) {
        first_at = format!("{first_at} ({origin})");
    }
    let what = match key {
        ObjectKey::Vhost(_) => format!("the settings of {key} are"),
        _ => format!("{key} is"),
    };
    Diagnostic::error("duplicate", format!("{what} declared twice"))
        .at(at)
        .label("declared again here")
        .help(format!("it is first declared at {first_at}; keep one of the two declarations"))
}

struct Merger<'a> {
    topology: Topology,
    locations: Locations,
    sources: &'a Sources,
    diagnostics: Vec<Diagnostic>,
    /// Vhosts whose default queue type was declared with errors.
    untyped: BTreeSet<String>,
}

impl Merger<'_> {
    fn vhost(&mut self, name: &str) -> &mut Vhost {
        // Looked up first: `entry` would allocate the name on every call.
        if !self.topology.vhosts.contains_key(name) {
            self.topology.vhosts.insert(name.to_string(), Vhost::new(name));
        }
        self.topology.vhosts.get_mut(name).expect("just ensured")
    }

    /// Records where `key` is declared; false (with a diagnostic) if it already was.
    fn claim<T>(&mut self, key: ObjectKey, decl: &Decl<T>) -> bool {
        match claim(&mut self.locations.objects, &key, decl, self.sources) {
            None => true,
            Some(d) => {
                self.diagnostics.push(d);
                false
            }
        }
    }

    /// Places a file's users and broker-wide objects; returns its objects
    /// of each vhost.
    fn broker_wide(&mut self, f: &mut FileDecl) -> Vec<Decl<ObjectDecl>> {
        for u in std::mem::take(&mut f.users) {
            if self.claim(users::key(&u.value.name), &u) {
                self.topology.set_user(&u.value);
            }
        }
        for name in std::mem::take(&mut f.failed.users) {
            self.locations.named.insert(users::key(&name));
        }
        let (broker, objects): (Vec<_>, Vec<_>) =
            std::mem::take(&mut f.objects).into_iter().partition(|o| o.value.name.kind.scope == Scope::Broker);
        for o in broker {
            self.object(None, o);
        }
        objects
    }

    fn file(&mut self, mut f: FileDecl) {
        let mut of_kinds = self.broker_wide(&mut f);
        let n = f.vhosts.len();
        for (i, (v, _)) in f.vhosts.iter().enumerate() {
            let last = i + 1 == n;
            let v = v.as_str();
            let (exchanges, queues) = (own(&mut f.exchanges, last), own(&mut f.queues, last));
            let (policies, permissions) = (own(&mut f.policies, last), own(&mut f.permissions, last));
            let objects = exchanges.len() + queues.len();
            self.locations.objects.reserve(objects + policies.len() + permissions.len());
            let mut claimed = Vec::with_capacity(exchanges.len());
            for x in exchanges {
                let key = ObjectKey::Exchange { vhost: v.into(), name: x.value.name.clone() };
                if self.claim(key, &x) {
                    claimed.push((x.value.name.clone(), x.value));
                }
            }
            add_all(&mut self.vhost(v).exchanges, claimed);
            let default = self.vhost(v).settings.default_queue_type;
            let untyped = self.untyped.contains(v);
            let mut claimed = Vec::with_capacity(queues.len());
            for q in queues {
                let key = ObjectKey::Queue { vhost: v.into(), name: q.value.queue.name.clone() };
                if untyped && q.value.declared_type.is_none() {
                    // Of unknown type, so not checked as one; declared all the same.
                    if self.claim(key.clone(), &q) {
                        self.locations.named.insert(key);
                    }
                    continue;
                }
                if self.claim(key, &q) {
                    let mut queue = q.value.queue;
                    queue.kind = q.value.declared_type.or(default).unwrap_or(queue.kind);
                    claimed.push((queue.name.clone(), queue));
                }
            }
            add_all(&mut self.vhost(v).queues, claimed);
            // Read as typed policies (their own diagnostics), held as their kind's objects.
            for p in policies {
                if self.claim(crate::model::kinds::policies::key(v, &p.value.name), &p) {
                    self.vhost(v).set_policy(&p.value);
                }
            }
            for p in permissions {
                let key = crate::model::kinds::permissions::key(v, &p.value.user);
                if self.claim(key, &p) {
                    self.vhost(v).set_permission(&p.value);
                }
            }
            for o in own(&mut of_kinds, last) {
                self.object(Some(v), o);
            }
            let vh = self.vhost(v);
            vh.external.exchanges.extend(f.external.exchanges.iter().cloned());
            vh.external.queues.extend(f.external.queues.iter().cloned());
            vh.external.users.extend(f.external.users.iter().cloned());
            for name in &f.failed.exchanges {
                self.locations.named.insert(ObjectKey::Exchange { vhost: v.into(), name: name.clone() });
            }
            for name in &f.failed.queues {
                self.locations.named.insert(ObjectKey::Queue { vhost: v.into(), name: name.clone() });
            }
        }
    }
}

impl Merger<'_> {
    /// An object of a kind of `model::kinds`, in vhost `vhost` or (`None`)
    /// broker-wide.
    fn object(&mut self, vhost: Option<&str>, o: Decl<ObjectDecl>) {
        let key = ObjectKey::Object { vhost: vhost.map(str::to_string), name: o.value.name.clone() };
        if self.claim(key, &o) {
            let objects = match vhost {
                Some(v) => &mut self.vhost(v).objects,
                None => &mut self.topology.objects,
            };
            objects.insert(o.value.name, o.value.body);
        }
    }
}

/// Adds objects of distinct names, new to `map`. Into an empty map (a vhost's
/// first file) they are built at once, which for the names in order that a
/// file written by `warren import` lists costs no search.
fn add_all<V>(map: &mut BTreeMap<String, V>, objects: Vec<(String, V)>) {
    if map.is_empty() {
        *map = objects.into_iter().collect();
    } else {
        map.extend(objects);
    }
}

/// The declarations for one of a file's vhosts: the last one takes them, the
/// others get copies.
fn own<T: Clone>(items: &mut Vec<T>, last: bool) -> Vec<T> {
    if last { std::mem::take(items) } else { items.clone() }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::desired::load_texts;

    /// Bindings with keys `k0`…, then the `repeated` ones again.
    fn file(bindings: usize, repeated: &[usize]) -> String {
        let mut t = String::from("vhosts = [\"/\"]\n[exchanges.x]\ntype = \"topic\"\n[queues.q]\n");
        for i in (0..bindings).chain(repeated.iter().copied()) {
            t.push_str(&format!("[[bindings]]\nsource = \"x\"\nqueue = \"q\"\nrouting_key = \"k{i}\"\n"));
        }
        t
    }

    /// The line of each duplicate, with its help.
    fn duplicates(text: String) -> Vec<(usize, String)> {
        let d = load_texts(Path::new("."), vec![(PathBuf::from("t.toml"), text)]);
        let mut found: Vec<_> = (d.diagnostics.iter().filter(|x| x.code == "duplicate"))
            .map(|x| (d.sources.line_col(x.location.as_ref().expect("placed")).0, x.help.clone().unwrap_or_default()))
            .collect();
        found.sort();
        found
    }

    #[test]
    fn a_repeated_binding_names_its_first_declaration_in_one_run_and_across_two() {
        // The 6,000 bindings are placed in two runs: the repeats fall in the
        // later one, a first declaration in each.
        for n in [10, 6_000] {
            let line = |i: usize| 5 + 4 * i;
            let first =
                |i: usize| format!("it is first declared at t.toml:{}:1; keep one of the two declarations", line(i));
            let expected = vec![(line(n), first(3)), (line(n + 1), first(3)), (line(n + 2), first(n - 1))];
            assert_eq!(duplicates(file(n, &[3, 3, n - 1])), expected, "{n} bindings");
        }
    }

    #[test]
    fn two_runs_of_bindings_make_one_set() {
        // In file order (k0, k1, …) and in sorted order (k0, k1, k10, …):
        // the later run's bindings then come after, or among, the earlier's.
        let n = 6_000;
        let mut sorted: Vec<usize> = (0..n).collect();
        sorted.sort_by_key(|i| format!("k{i}"));
        let orders = [(0..n).collect::<Vec<_>>(), sorted];
        for (vhosts, order) in [&["/"][..], &["/", "b"]].into_iter().flat_map(|v| orders.iter().map(move |o| (v, o))) {
            let list: Vec<String> = vhosts.iter().map(|v| format!("\"{v}\"")).collect();
            let mut t = format!("vhosts = [{}]\n[exchanges.x]\ntype = \"topic\"\n[queues.q]\n", list.join(", "));
            for i in order {
                t.push_str(&format!("[[bindings]]\nsource = \"x\"\nqueue = \"q\"\nrouting_key = \"k{i}\"\n"));
            }
            let d = load_texts(Path::new("."), vec![(PathBuf::from("t.toml"), t)]);
            for v in vhosts {
                let keys: Vec<String> = d.topology.vhosts[*v].bindings.iter().map(|b| b.routing_key.clone()).collect();
                let mut expected: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
                expected.sort();
                assert_eq!(keys, expected, "vhost {v}");
            }
        }
    }
}
