//! Places each file's declarations into the vhosts it names and checks that
//! no object is declared twice, in one file or across files.

use std::collections::hash_map::Entry;

use super::decl::{Decl, FileDecl};
use super::spans::{Site, Spans};
use crate::diagnostic::Diagnostic;
use crate::model::{ObjectKey, Topology, Vhost};
use crate::source::Sources;

/// The merged topology and where each object came from.
pub fn merge(files: Vec<FileDecl>, sources: &Sources, diagnostics: &mut Vec<Diagnostic>) -> (Topology, Spans) {
    let mut m = Merger { topology: Topology::default(), spans: Spans::default(), sources, diagnostics };
    // Settings first: a queue's default type comes from its vhost's settings,
    // which may be declared in another file.
    for f in &files {
        for (v, _) in &f.vhosts {
            m.topology.vhosts.entry(v.clone()).or_insert_with(|| Vhost::new(v));
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
    (m.topology, m.spans)
}

struct Merger<'a> {
    topology: Topology,
    spans: Spans,
    sources: &'a Sources,
    diagnostics: &'a mut Vec<Diagnostic>,
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
        let entry = match self.spans.objects.entry(key) {
            Entry::Vacant(e) => {
                e.insert(Site { at: decl.at.clone(), fields: decl.fields.clone() });
                return true;
            }
            Entry::Occupied(e) => e,
        };
        let (key, first) = (entry.key(), entry.get());
        {
            let first_at = self.sources.position(&first.at);
            let what = match &key {
                ObjectKey::Vhost(_) => format!("the settings of {key} are"),
                _ => format!("{key} is"),
            };
            let d = Diagnostic::error("duplicate", format!("{what} declared twice"))
                .at(decl.at.clone())
                .label("declared again here")
                .help(format!("it is first declared at {first_at}; keep one of the two declarations"));
            self.diagnostics.push(d);
        }
        false
    }

    fn file(&mut self, mut f: FileDecl) {
        for u in std::mem::take(&mut f.users) {
            if self.claim(ObjectKey::User(u.value.name.clone()), &u) {
                self.topology.users.insert(u.value.name.clone(), u.value);
            }
        }
        let n = f.vhosts.len();
        for (i, (v, _)) in f.vhosts.iter().enumerate() {
            let last = i + 1 == n;
            let v = v.as_str();
            let (exchanges, queues, bindings) =
                (own(&mut f.exchanges, last), own(&mut f.queues, last), own(&mut f.bindings, last));
            let (policies, operator_policies, permissions) =
                (own(&mut f.policies, last), own(&mut f.operator_policies, last), own(&mut f.permissions, last));
            let objects = exchanges.len() + queues.len() + bindings.len();
            self.spans.objects.reserve(objects + policies.len() + operator_policies.len() + permissions.len());
            for x in exchanges {
                let key = ObjectKey::Exchange { vhost: v.into(), name: x.value.name.clone() };
                if self.claim(key, &x) {
                    self.vhost(v).exchanges.insert(x.value.name.clone(), x.value);
                }
            }
            let default = self.vhost(v).settings.default_queue_type;
            for q in queues {
                let key = ObjectKey::Queue { vhost: v.into(), name: q.value.queue.name.clone() };
                if self.claim(key, &q) {
                    let mut queue = q.value.queue;
                    queue.kind = q.value.declared_type.or(default).unwrap_or(queue.kind);
                    self.vhost(v).queues.insert(queue.name.clone(), queue);
                }
            }
            for b in bindings {
                let key = ObjectKey::Binding { vhost: v.into(), binding: b.value.clone() };
                if self.claim(key, &b) {
                    self.vhost(v).bindings.insert(b.value);
                }
            }
            for p in policies {
                let key = ObjectKey::Policy { vhost: v.into(), name: p.value.name.clone() };
                if self.claim(key, &p) {
                    self.vhost(v).policies.insert(p.value.name.clone(), p.value);
                }
            }
            for p in operator_policies {
                let key = ObjectKey::OperatorPolicy { vhost: v.into(), name: p.value.name.clone() };
                if self.claim(key, &p) {
                    self.vhost(v).operator_policies.insert(p.value.name.clone(), p.value);
                }
            }
            for p in permissions {
                let key = ObjectKey::Permission { vhost: v.into(), user: p.value.user.clone() };
                if self.claim(key, &p) {
                    self.vhost(v).permissions.insert(p.value.user.clone(), p.value);
                }
            }
            let vh = self.vhost(v);
            vh.external.exchanges.extend(f.external.exchanges.iter().cloned());
            vh.external.queues.extend(f.external.queues.iter().cloned());
            for name in &f.failed.exchanges {
                self.spans.named.insert(ObjectKey::Exchange { vhost: v.into(), name: name.clone() });
            }
            for name in &f.failed.queues {
                self.spans.named.insert(ObjectKey::Queue { vhost: v.into(), name: name.clone() });
            }
        }
    }
}

/// The declarations for one of a file's vhosts: the last one takes them, the
/// others get copies.
fn own<T: Clone>(items: &mut Vec<T>, last: bool) -> Vec<T> {
    if last { std::mem::take(items) } else { items.clone() }
}
