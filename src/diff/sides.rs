//! One vhost on both sides: what every kind of object's diff reads.

use crate::model::{LazyGraph, Vhost};

/// One vhost on both sides, as every kind of object's diff reads it.
pub(super) struct Sides<'v> {
    /// Its name.
    pub v: &'v str,
    /// As the files declare it.
    pub want: &'v Vhost,
    /// As it is live, less the scaffolding of migrations, which belongs to
    /// them and not to this diff.
    pub have: &'v Vhost,
    /// As it is live, scaffolding and all: what routes today.
    pub full: &'v Vhost,
    /// The routing graph of `full`, built when a change needs it.
    pub graph: &'v LazyGraph<'v>,
}
