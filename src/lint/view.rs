//! One vhost as the rules ask about it: which policy applies to a queue or
//! an exchange, what a queue's setting comes out as from its argument and
//! its policy, and where a message published to an exchange goes.

use rustc_hash::FxHashSet;

use crate::model::{BUILTIN_EXCHANGES, ObjectKey, Policy, Queue, SetBy, Value, Vhost, queue_setting};
use crate::routing::{Router, Version};
use crate::source::Locations;

pub(crate) struct View<'a> {
    pub vhost: &'a Vhost,
    /// Where messages go, and which policies apply to each queue and
    /// exchange: the one routing model.
    pub router: Router<'a>,
    /// Exchanges declared with errors: declared all the same.
    failed_exchanges: FxHashSet<&'a str>,
}

pub(crate) use crate::routing::Applied;

/// Where a queue's setting comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum From<'a> {
    /// Its `x-…` argument.
    Argument,
    /// The named policy (or operator policy) that applies to it.
    Policy(&'a Policy, bool),
}

impl From<'_> {
    /// Where a finding about a setting of `queue` goes: at its argument
    /// (`arguments.ARGUMENT`), or at the policy key that sets it.
    pub(crate) fn place(self, vhost: &str, queue: &str, argument: &str, policy_key: &str) -> (ObjectKey, String) {
        let queue = ObjectKey::Queue { vhost: vhost.to_string(), name: queue.to_string() };
        self.place_of(queue, argument, policy_key)
    }

    /// [`From::place`] for any object: `object` when its argument sets it.
    pub(crate) fn place_of(self, object: ObjectKey, argument: &str, policy_key: &str) -> (ObjectKey, String) {
        match self {
            From::Argument => (object, format!("arguments.{argument}")),
            From::Policy(p, operator) => {
                let (vhost, name) = (object.vhost().unwrap_or_default().to_string(), p.name.clone());
                let key = match operator {
                    true => crate::model::kinds::operator_policies::key(&vhost, &name),
                    false => crate::model::kinds::policies::key(&vhost, &name),
                };
                (key, format!("definition.{policy_key}"))
            }
        }
    }
}

impl<'a> View<'a> {
    pub(crate) fn new(name: &'a str, vhost: &'a Vhost, locations: &'a Locations, version: Version) -> Self {
        let failed_exchanges = locations
            .named
            .iter()
            .filter_map(|key| match key {
                ObjectKey::Exchange { vhost: v, name: n } if v == name => Some(n.as_str()),
                _ => None,
            })
            .collect();
        View { vhost, router: Router::new(vhost, version), failed_exchanges }
    }

    /// Whether an exchange of this name exists for the files: declared
    /// (cleanly or not), external, or the broker's own.
    pub(crate) fn exchange_known(&self, name: &str) -> bool {
        name.is_empty()
            || self.vhost.exchanges.contains_key(name)
            || self.vhost.external.exchanges.contains(name)
            || BUILTIN_EXCHANGES.contains(&name)
            || self.failed_exchanges.contains(name)
    }

    /// The policy and the operator policy the broker applies to `queue`
    /// (one of the vhost's), as the router resolved them.
    pub(crate) fn queue_policies(&self, queue: &Queue) -> Applied<'a> {
        self.router.queue_policies(queue)
    }

    /// A queue's setting from argument `argument` and policy key `key`, as
    /// the broker resolves the two (`applied`: the queue's policies), with
    /// where the value comes from.
    pub(crate) fn setting(
        queue: &'a Queue,
        applied: Applied<'a>,
        argument: &str,
        key: &str,
    ) -> Option<(&'a Value, From<'a>)> {
        let (value, by) = queue_setting(queue, applied, argument, key)?;
        Some((
            value,
            match by {
                SetBy::Argument => From::Argument,
                SetBy::Policy(p, operator) => From::Policy(p, operator),
            },
        ))
    }

    /// An exchange's alternate exchange, as the routing model resolves its
    /// argument and its policy, with where it is set.
    pub(crate) fn alternate(&self, exchange: &str) -> Option<(&'a str, From<'a>)> {
        let ae = self.router.alternate(exchange)?;
        let x = self.vhost.exchanges.get(exchange)?;
        if x.arguments.get("alternate-exchange").and_then(Value::as_str) == Some(ae) {
            return Some((ae, From::Argument));
        }
        Some((ae, From::Policy(self.router.exchange_policy(exchange)?, false)))
    }
}
