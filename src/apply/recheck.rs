//! Before a phase that deletes something, the live state is read again:
//! a plan can be minutes old by then (a migration waited, a person read
//! it), and deleting an object somebody changed meanwhile would destroy
//! what nobody reviewed.

use super::failure::Failure;
use crate::broker::Broker;
use crate::model::Topology;
use crate::plan::{Op, Step};

/// Reads the vhosts that `steps` delete from and refuses if an object they
/// delete is no longer what the plan was made from.
pub(super) async fn destructive(broker: &impl Broker, planned: &Topology, steps: &[Step]) -> Result<(), Failure> {
    let mut vhosts: Vec<String> = steps.iter().filter_map(|s| deleted(&s.op)).map(|(v, _)| v.to_string()).collect();
    if vhosts.is_empty() {
        return Ok(());
    }
    vhosts.sort();
    vhosts.dedup();
    let fresh = crate::live::from_broker(broker, &vhosts).await?;
    match changed(planned, &fresh.topology, steps) {
        None => Ok(()),
        Some(what) => Err(Failure::Refused(format!(
            "{what} changed on the broker since the plan was made, so it is not deleted; run plan again to see the change"
        ))),
    }
}

/// The vhost an operation deletes from, and what it deletes. A vhost's
/// own deletion is not rechecked: a plan reads only the vhosts the files
/// declare in full, so it holds nothing to compare a dropped vhost with
/// (and deleting one always needs --allow-destroy).
fn deleted(op: &Op) -> Option<(&str, String)> {
    match op {
        Op::DeleteQueue { vhost, name, .. } => Some((vhost, format!("queue \"{name}\" in vhost \"{vhost}\""))),
        Op::DeleteExchange { vhost, name } => Some((vhost, format!("exchange \"{name}\" in vhost \"{vhost}\""))),
        _ => None,
    }
}

/// The first object `steps` delete whose fresh definition differs from the
/// planned one. One already gone is no change: deleting it is a no-op.
fn changed(planned: &Topology, fresh: &Topology, steps: &[Step]) -> Option<String> {
    steps.iter().find_map(|s| {
        let (_, what) = deleted(&s.op)?;
        let same = match &s.op {
            Op::DeleteQueue { vhost, name, .. } => {
                let now = fresh.vhosts.get(vhost).and_then(|v| v.queues.get(name));
                now.is_none() || now == planned.vhosts.get(vhost).and_then(|v| v.queues.get(name))
            }
            Op::DeleteExchange { vhost, name } => {
                let now = fresh.vhosts.get(vhost).and_then(|v| v.exchanges.get(name));
                now.is_none() || now == planned.vhosts.get(vhost).and_then(|v| v.exchanges.get(name))
            }
            _ => true,
        };
        (!same).then_some(what)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Queue, QueueType, Vhost};
    use crate::plan::Phase;

    fn with_queue(durable: bool) -> Topology {
        let mut v = Vhost::new("v");
        let q = Queue {
            name: "q".into(),
            kind: QueueType::Classic,
            durable,
            auto_delete: false,
            arguments: Default::default(),
            replaces: None,
        };
        v.queues.insert("q".into(), q);
        let mut t = Topology::default();
        t.vhosts.insert("v".into(), v);
        t
    }

    fn delete_q() -> Vec<Step> {
        vec![Step {
            op: Op::DeleteQueue { vhost: "v".into(), name: "q".into(), kind: QueueType::Classic },
            change: 0,
            phase: Phase::DeleteQueue,
        }]
    }

    #[test]
    fn a_queue_redeclared_differently_since_the_plan_is_not_deleted() {
        let planned = with_queue(true);
        assert_eq!(changed(&planned, &planned, &delete_q()), None);
        assert_eq!(changed(&planned, &Topology::default(), &delete_q()), None, "gone already");
        let what = changed(&planned, &with_queue(false), &delete_q()).expect("a change");
        assert!(what.contains("queue \"q\""), "{what}");
    }
}
