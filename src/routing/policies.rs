//! The settings that route, as the broker resolves arguments and policies:
//! an exchange's alternate exchange, a queue's dead-letter exchange and key.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::model::{Matcher, Policy, Queue, SetBy, Value, Vhost, precedence, queue_setting};

/// The policy and the operator policy the broker applies to a queue.
pub type Applied<'a> = (Option<&'a Policy>, Option<&'a Policy>);

pub(super) struct Policies<'a> {
    vhost: &'a Vhost,
    policies: Vec<Matcher<'a>>,
    operator: Vec<Matcher<'a>>,
    /// Each queue's [`Applied`]: matching every pattern to a queue's name
    /// is most of what a setting costs, and lint asks several settings of
    /// each queue. Made on the first question about a queue, for all of
    /// them: most routers (a plan's, one publish to the in-memory broker)
    /// never ask one. Keyed by where the vhost holds each queue, and
    /// holding indices into `policies` and `operator`: a cell of
    /// references to the vhost would tie every router to the vhost's
    /// exact lifetime (a cell is invariant), and the vhost, borrowed while
    /// the router lives, cannot move its queues.
    applied: OnceLock<FxHashMap<usize, Indices>>,
}

/// An [`Applied`] as indices into a [`Policies`]' `policies` and `operator`.
type Indices = (Option<usize>, Option<usize>);

/// Where `queue` is held: its identity among the vhost's queues.
fn at(queue: &Queue) -> usize {
    std::ptr::from_ref(queue).addr()
}

/// The index in `matchers` of the policy the broker applies to `queue`.
fn applied_index(matchers: &[Matcher], queue: &Queue) -> Option<usize> {
    let matching = matchers.iter().enumerate().filter(|(_, m)| m.matches_queue(queue));
    matching.min_by(|(_, a), (_, b)| precedence(a.policy, b.policy)).map(|(i, _)| i)
}

impl<'a> Policies<'a> {
    /// The vhost's policies as a broker of major version `major` applies
    /// them to queues (which keys a queue type refuses changed in 4.0):
    /// their kinds' typed views, kept with the vhost, since a router's
    /// answers lend a policy for as long as the vhost (`Applied<'a>`,
    /// `SetBy<'a>`), which a copy owned by the router could not.
    pub(super) fn new(vhost: &'a Vhost, major: u32) -> Self {
        let matcher = |p| Matcher::on_version(p, major);
        Policies {
            vhost,
            policies: vhost.policies().into_iter().map(matcher).collect(),
            operator: vhost.operator_policies().into_iter().map(matcher).collect(),
            applied: OnceLock::new(),
        }
    }

    /// An exchange's alternate exchange: its argument, else its policy's
    /// (operator policies cannot set one). The broker's own exchanges have
    /// no arguments (`None`), but policies apply to them too.
    pub(super) fn alternate(&self, name: &str, arguments: Option<&'a crate::model::Table>) -> Option<&'a str> {
        if let Some(Value::String(ae)) = arguments.and_then(|a| a.get("alternate-exchange")) {
            return Some(ae);
        }
        let p = self.exchange_policy(name)?;
        p.definition.get("alternate-exchange").and_then(Value::as_str)
    }

    /// The policy the broker applies to exchange `name`.
    pub(super) fn exchange_policy(&self, name: &str) -> Option<&'a Policy> {
        self.policies.iter().filter(|m| m.matches_exchange(name)).map(|m| m.policy).min_by(|a, b| precedence(a, b))
    }

    /// The policy and the operator policy the broker applies to `queue`,
    /// matched once for all the vhost's queues (another vhost's queue is
    /// matched on its own).
    pub(super) fn applied(&self, queue: &Queue) -> Applied<'a> {
        let resolve = |q: &Queue| (applied_index(&self.policies, q), applied_index(&self.operator, q));
        let all = self.applied.get_or_init(|| self.vhost.queues.values().map(|q| (at(q), resolve(q))).collect());
        let (policy, operator) = all.get(&at(queue)).copied().unwrap_or_else(|| resolve(queue));
        (policy.map(|i| self.policies[i].policy), operator.map(|i| self.operator[i].policy))
    }

    /// A queue's setting from its argument and its policies (`queue`: one
    /// of the vhost's).
    pub(super) fn setting(&self, queue: &'a Queue, argument: &str, key: &str) -> Option<(&'a Value, SetBy<'a>)> {
        queue_setting(queue, self.applied(queue), argument, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{QueueType, applied_to_queue};

    /// The table made once answers as matching each queue on its own; a
    /// queue of another vhost of the same name but another type is matched
    /// as itself (a stream takes no policy with `expires`).
    #[test]
    fn each_queue_is_given_the_policies_that_match_it_alone() {
        let topology = crate::testing::large_topology(200, 12, 500);
        let v = topology.vhosts.values().next().unwrap();
        let policies = Policies::new(v, 4);
        let matchers: Vec<Matcher> = v.policies().into_iter().map(|p| Matcher::on_version(p, 4)).collect();
        let name = |p: Option<&Policy>| p.map(|p| p.name.clone());
        for q in v.queues.values() {
            assert_eq!(name(policies.applied(q).0), name(applied_to_queue(&matchers, q)), "{}", q.name);
        }
        let mut stream = v.queues["bench.q00000"].clone();
        stream.kind = QueueType::Stream;
        assert_ne!(name(applied_to_queue(&matchers, &stream)), name(policies.applied(&v.queues["bench.q00000"]).0));
        assert_eq!(name(policies.applied(&stream).0), name(applied_to_queue(&matchers, &stream)));
    }
}
