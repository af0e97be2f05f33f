//! Super streams in an import: an exchange marked `x-super-stream` whose
//! partitions are exactly what RabbitMQ makes for one is written back as
//! one `[super_streams.NAME]`, not as the objects it is.

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::model::{Binding, SuperStream, Vhost, super_streams};

/// `vhost` without the objects of its super streams, and those super
/// streams; the vhost itself when it has none.
pub(super) fn apart(vhost: &Vhost) -> (Cow<'_, Vhost>, Vec<SuperStream>) {
    let streams = super_streams(vhost);
    if streams.is_empty() {
        return (Cow::Borrowed(vhost), streams);
    }
    let mut rest = vhost.clone();
    for ss in &streams {
        rest.exchanges.remove(&ss.name);
        for key in ss.keys() {
            rest.queues.remove(&ss.partition(&key));
        }
    }
    let made: BTreeSet<Binding> = streams.iter().flat_map(|ss| ss.expand().bindings).collect();
    rest.bindings.retain(|b| !made.contains(b));
    (Cow::Owned(rest), streams)
}
