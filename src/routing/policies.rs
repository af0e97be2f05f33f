//! The settings that route, as the broker resolves arguments and policies:
//! an exchange's alternate exchange, a queue's dead-letter exchange and key.

use crate::model::{Matcher, Policy, Queue, SetBy, Value, Vhost, applied_to_queue, precedence, queue_setting};

pub(super) struct Policies<'a> {
    policies: Vec<Matcher<'a>>,
    operator: Vec<Matcher<'a>>,
}

impl<'a> Policies<'a> {
    /// The vhost's policies as a broker of major version `major` applies
    /// them to queues (which keys a queue type refuses changed in 4.0).
    pub(super) fn new(vhost: &'a Vhost, major: u32) -> Self {
        let matcher = |p| Matcher::on_version(p, major);
        Policies {
            policies: vhost.policies.values().map(matcher).collect(),
            operator: vhost.operator_policies.values().map(matcher).collect(),
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

    fn exchange_policy(&self, name: &str) -> Option<&'a Policy> {
        self.policies.iter().filter(|m| m.matches_exchange(name)).map(|m| m.policy).min_by(|a, b| precedence(a, b))
    }

    /// A queue's setting from its argument and its policies.
    pub(super) fn setting(&self, queue: &'a Queue, argument: &str, key: &str) -> Option<(&'a Value, SetBy<'a>)> {
        let applied = (applied_to_queue(&self.policies, queue), applied_to_queue(&self.operator, queue));
        queue_setting(queue, applied, argument, key)
    }
}
