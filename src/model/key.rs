//! Names every object warren manages, so that locations, changes and plan steps
//! can all point at the same thing.

use std::fmt;

use super::kinds::Name;
use super::topology::Binding;

/// Ordered by kind (see [`ObjectKey::rank`]), then by vhost and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ObjectKey {
    Vhost(String),
    Exchange {
        vhost: String,
        name: String,
    },
    Queue {
        vhost: String,
        name: String,
    },
    Binding {
        vhost: String,
        binding: Binding,
    },
    /// An object of a kind of `model::kinds`; `vhost` is `None` for a broker-wide kind.
    Object {
        vhost: Option<String>,
        name: Name,
    },
}

impl Ord for ObjectKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        use ObjectKey as K;
        self.rank().cmp(&other.rank()).then_with(|| match (self, other) {
            (K::Vhost(a), K::Vhost(b)) => a.cmp(b),
            (K::Exchange { vhost: v, name: n }, K::Exchange { vhost: w, name: m })
            | (K::Queue { vhost: v, name: n }, K::Queue { vhost: w, name: m }) => (v, n).cmp(&(w, m)),
            (K::Binding { vhost: v, binding: a }, K::Binding { vhost: w, binding: b }) => (v, a).cmp(&(w, b)),
            (K::Object { vhost: v, name: a }, K::Object { vhost: w, name: b }) => (v, a).cmp(&(w, b)),
            // One rank is one variant.
            _ => std::cmp::Ordering::Equal,
        })
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl ObjectKey {
    /// Where the kind of object sorts among the others: a policy after
    /// bindings, and an object of another kind a plan sets with policies
    /// right after them, as each did before it was a kind's object, so that
    /// lists of objects keep their order; the other kinds' objects last.
    fn rank(&self) -> u8 {
        match self {
            ObjectKey::Vhost(_) => 0,
            ObjectKey::Exchange { .. } => 1,
            ObjectKey::Queue { .. } => 2,
            ObjectKey::Binding { .. } => 3,
            ObjectKey::Object { name, .. } if name.kind == &super::kinds::policies::KIND => 4,
            ObjectKey::Object { name, .. } if name.kind.phase == super::kinds::Phase::PutPolicy => 5,
            // A user's object where users were before they were a kind's.
            ObjectKey::Object { name, .. } if name.kind == &super::kinds::users::KIND => 6,
            // Permissions where they were before they were a kind's objects.
            ObjectKey::Object { name, .. } if name.kind == &super::kinds::permissions::KIND => 7,
            ObjectKey::Object { .. } => 8,
        }
    }

    /// The kind of object, as the plan and diagnostics name it.
    pub fn kind(&self) -> &'static str {
        match self {
            ObjectKey::Vhost(_) => "vhost",
            ObjectKey::Exchange { .. } => "exchange",
            ObjectKey::Queue { .. } => "queue",
            ObjectKey::Binding { .. } => "binding",
            // As the old key said it: the kind's name is `permission`.
            ObjectKey::Object { name, .. } if name.kind == &super::kinds::permissions::KIND => "permissions",
            ObjectKey::Object { name, .. } => name.kind.name,
        }
    }

    /// The object's name within its vhost; for a binding, its description.
    pub fn name(&self) -> String {
        match self {
            ObjectKey::Vhost(name) => name.clone(),
            ObjectKey::Exchange { name, .. } | ObjectKey::Queue { name, .. } => name.clone(),
            ObjectKey::Binding { binding, .. } => binding.to_string(),
            // A compound identity as its JSON array: names may hold spaces.
            ObjectKey::Object { name, .. } => match name.id.as_slice() {
                [one] => one.clone(),
                parts => serde_json::to_string(parts).expect("strings serialise"),
            },
        }
    }

    /// The same object in vhost `to`; a user is in none.
    pub fn in_vhost(self, to: &str) -> ObjectKey {
        let to = to.to_string();
        match self {
            ObjectKey::Vhost(_) => ObjectKey::Vhost(to),
            ObjectKey::Exchange { name, .. } => ObjectKey::Exchange { vhost: to, name },
            ObjectKey::Queue { name, .. } => ObjectKey::Queue { vhost: to, name },
            ObjectKey::Binding { binding, .. } => ObjectKey::Binding { vhost: to, binding },
            ObjectKey::Object { vhost: None, .. } => self,
            ObjectKey::Object { name, .. } => ObjectKey::Object { vhost: Some(to), name },
        }
    }

    pub fn vhost(&self) -> Option<&str> {
        match self {
            ObjectKey::Vhost(v) => Some(v),
            ObjectKey::Exchange { vhost, .. } | ObjectKey::Queue { vhost, .. } | ObjectKey::Binding { vhost, .. } => {
                Some(vhost)
            }
            ObjectKey::Object { vhost, .. } => vhost.as_deref(),
        }
    }
}

/// Whether `removed` (the files' `[removed]`) names the object, or for a
/// binding either of its ends: a binding goes with what it connects.
pub fn is_removed(removed: &std::collections::BTreeSet<ObjectKey>, key: &ObjectKey) -> bool {
    if removed.contains(key) {
        return true;
    }
    let ObjectKey::Binding { vhost, binding: b } = key else { return false };
    let v = || vhost.clone();
    let destination = match b.destination_kind {
        super::DestinationKind::Queue => ObjectKey::Queue { vhost: v(), name: b.destination.clone() },
        super::DestinationKind::Exchange => ObjectKey::Exchange { vhost: v(), name: b.destination.clone() },
    };
    removed.contains(&ObjectKey::Exchange { vhost: v(), name: b.source.clone() }) || removed.contains(&destination)
}

impl fmt::Display for ObjectKey {
    /// `queue "orders" in vhost "/"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObjectKey::Vhost(v) => write!(f, "vhost \"{v}\""),
            ObjectKey::Exchange { vhost, name } | ObjectKey::Queue { vhost, name } => {
                write!(f, "{} \"{name}\" in vhost \"{vhost}\"", self.kind())
            }
            ObjectKey::Binding { vhost, binding } => {
                write!(f, "binding {binding} in vhost \"{vhost}\"")
            }
            ObjectKey::Object { vhost, name } => f.write_str(&name.at(vhost.as_deref())),
        }
    }
}
