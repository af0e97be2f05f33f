//! Services in the diff: each change to a permission or topic permission
//! that services make says which, so that a plan reads as the files do.

use super::differ::Differ;
use crate::model::kinds::permissions;
use crate::model::{ObjectKey, Topology};

impl Differ<'_> {
    /// Marks each change to a permission or topic permission that services
    /// make with their names.
    pub(super) fn service_changes(&mut self, desired: &Topology) {
        for c in &mut self.out.changes {
            let (vhost, user, exchange) = match (&c.key, permissions::name_of(&c.key)) {
                (_, Some((vhost, user))) => (vhost, user, None),
                (ObjectKey::Object { vhost: Some(vhost), name }, _) if name.kind.table == "topic_permissions" => {
                    (vhost.as_str(), name.id[0].as_str(), name.id.get(1))
                }
                _ => continue,
            };
            let Some(v) = desired.vhosts.get(vhost) else { continue };
            let asks = |s: &&crate::model::services::Service| {
                s.user == *user && exchange.is_none_or(|x| s.publishes.iter().any(|p| p.exchange == *x))
            };
            c.services = v.services.values().filter(asks).map(|s| s.name.clone()).collect();
        }
    }
}
