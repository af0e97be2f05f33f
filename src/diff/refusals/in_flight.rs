//! Files that change a migration in flight other than by finishing it or
//! going back to the files from before it (`in_flight.rs` judges which):
//! refused until it is finished or aborted, since neither way would then
//! leave the broker as the files say.

use super::IN_FLIGHT;
use crate::diagnostic::Diagnostic;
use crate::diff::{InFlight, Problem};
use crate::journal::Migration as Record;
use crate::model::{ObjectKey, Vhost};

/// The refusal of migration `r`, which the files change as `what` says, at
/// the new queue's declaration, else the old one's. Past its point of no
/// return it can only be finished.
pub(in crate::diff) fn in_flight(r: &Record, want: &Vhost, what: &str, past_no_return: bool) -> Problem {
    let (id, old, new, v) = (&r.id, &r.old, &r.new, &r.vhost);
    let name = if want.queues.contains_key(new) || !want.queues.contains_key(old) { new } else { old };
    let key = ObjectKey::Queue { vhost: v.clone(), name: name.clone() };
    let f = InFlight::of(r);
    let help = if past_no_return {
        format!("finish it: apply the files that started it (queue \"{new}\" with `replaces = \"{old}\"`)")
    } else {
        format!(
            "finish it first: apply the files that started it (queue \"{new}\" with `replaces = \"{old}\"`, declared as then); or roll it back: apply the files from before it (\"{old}\" declared, \"{new}\" not), or run `warren abort {id}`; then change the files"
        )
    };
    let diagnostic = Diagnostic::error(
        IN_FLIGHT,
        format!(
            "migration {id} in vhost \"{v}\" (queue \"{old}\" >> \"{new}\", step {} of {}, {}) is in flight, and the files change it: {what}",
            f.done, f.total, f.state
        ),
    )
    .label("a migration in flight")
    .help(help);
    Problem { key, field: None, diagnostic }
}
