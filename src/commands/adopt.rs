//! `warren adopt [PATH] --from PROJECT`: the explicit hand-over of objects
//! from one project to another (terraform's `state mv`). The objects these
//! files declare that project PROJECT owns become this project's, in the
//! broker's records only: nothing else on the broker changes, and the next
//! plan shows what apply would then change in them.

use std::path::Path;
use std::time::Duration;

use super::live_side;
use super::session::{self, Ended};
use crate::apply::Recorder;
use crate::broker::{Broker, RecordStore};
use crate::cli::Connection;
use crate::desired::{self, Desired};
use crate::error::{self, Done, Error, Kind};
use crate::journal::RunOutcome;
use crate::model::{Inventory, ObjectKey, Place, is_shared};
use crate::writer::Writer;

pub fn run(
    path: &Path,
    from: &str,
    auto_approve: bool,
    lock_timeout: Duration,
    connection: &Connection,
    out: &Writer,
) -> error::Result {
    let mut desired = desired::load(path);
    if let Err(d) = desired.project.resolve(connection.project.as_deref(), true) {
        desired.diagnostics.push(d);
    }
    if desired.has_errors() {
        super::findings::shown(&desired.diagnostics, &desired.sources, out);
        return Err(Error::invalid().line(format!("{} is not valid: nothing was adopted.", path.display())));
    }
    let project = desired.project.name().to_string();
    if from == project {
        return Err(Error::invalid().line(format!(
            "error: these files are project \"{project}\" already; --from names the project to take objects over from"
        )));
    }
    let broker = live_side::open(connection)?;
    adopt(&broker, &desired, from, auto_approve, lock_timeout, out)
}

/// Hands over to `desired`'s project, on `broker`, the objects it declares
/// that project `from` owns.
pub fn adopt<B: Broker>(
    broker: &B,
    desired: &Desired,
    from: &str,
    auto_approve: bool,
    lock_timeout: Duration,
    out: &Writer,
) -> error::Result {
    let project = desired.project.name().to_string();
    // Under the lock: no apply may write the records between the reading
    // and the writing.
    let doing = format!("adopting objects of project {from}");
    let vhosts: Vec<String> = desired.topology.vhosts.keys().cloned().collect();
    super::block_on(async {
        let place = broker.place_of(&project, &vhosts).await.map_err(super::unchanged)?;
        session::locked(broker, place.clone(), lock_timeout, &doing, out, async |recorder| {
            locked(desired, from, auto_approve, broker, recorder, &place, out).await
        })
        .await
    })
}

async fn locked<B: Broker>(
    desired: &Desired,
    from: &str,
    auto_approve: bool,
    broker: &B,
    recorder: &Recorder<B>,
    place: &Place,
    out: &Writer,
) -> (error::Result, Ended) {
    let project = &desired.project.name();
    let live = match live_side::read(broker, &desired.topology, None).await {
        Ok(l) => l,
        Err(e) => return (Err(super::unchanged(e)), None),
    };
    let theirs = live.ownership.of(from);
    let taken: Vec<ObjectKey> = Inventory::of(&desired.topology)
        .objects
        .into_iter()
        .filter(|k| !is_shared(k) && theirs.contains(k) && live.topology.has(k))
        .collect();
    if taken.is_empty() {
        out.outln(format!("Nothing to adopt: project \"{from}\" owns nothing these files declare."));
        return (Ok(Done::Ok), None);
    }
    out.outln(format!("Project \"{project}\" will take over from project \"{from}\":\n"));
    for k in &taken {
        out.outln(format!("  {k}"));
    }
    out.outln(format!(
        "\nOnly warren's records change; the next plan shows what apply would then change in these objects, and project \"{from}\" no longer sees them as its own."
    ));
    if !auto_approve && !out.confirm(&format!("Adopt these on {}?", live.origin), "adopt") {
        return (Err(Error::new(Kind::Declined)), None);
    }
    let mut mine = live.ownership.of(project).clone();
    mine.objects.extend(taken.iter().cloned());
    // What the other project applied is what this one now answers for.
    mine.digests.extend(taken.iter().filter_map(|k| Some((k.clone(), theirs.digests.get(k)?.clone()))));
    // The run goes into the history of the vhosts whose objects changed hands.
    let vhosts: std::collections::BTreeSet<String> =
        taken.iter().filter_map(|k| k.vhost()).map(str::to_string).collect();
    recorder.note(|j| {
        if let Some(run) = &mut j.current {
            run.vhosts = vhosts.into_iter().collect();
            run.summary = format!("{} object(s) from project {from}", taken.len());
        }
    });
    let writes = live.records.writes(&live.ownership.with(project, mine), project, place);
    if let Err(e) = broker.write_records(&writes).await {
        return (Err(super::unchanged(e)), None);
    }
    let n = taken.len();
    out.outln(format!("\nAdopted {n} object{} from project \"{from}\".", if n == 1 { "" } else { "s" }));
    (Ok(Done::Ok), Some((RunOutcome::Adopted, None)))
}
