//! Where each desired object was declared, kept beside the topology so that
//! the model itself compares by content alone.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::model::ObjectKey;
use crate::source::Location;

/// The declaration site of one object and of its fields.
#[derive(Debug, Clone)]
pub struct Site {
    pub at: Location,
    /// Shared: a file's declaration stands in each of the file's vhosts.
    pub fields: Arc<BTreeMap<String, Location>>,
}

#[derive(Debug, Clone, Default)]
pub struct Spans {
    pub objects: HashMap<ObjectKey, Site>,
    /// Exchanges and queues named in the files, also those whose declaration
    /// had errors, so that one mistake does not cascade into "undeclared".
    pub named: BTreeSet<ObjectKey>,
}

impl Spans {
    /// The place of an object, or of one of its fields when that is known.
    pub fn locate(&self, key: &ObjectKey, field: Option<&str>) -> Option<Location> {
        let site = self.objects.get(key)?;
        field.and_then(|f| site.fields.get(f)).or(Some(&site.at)).cloned()
    }
}
