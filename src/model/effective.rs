//! Which policy the broker applies to a queue or exchange (`rabbit_policy:match_all`;
//! https://www.rabbitmq.com/docs/policies#priorities):
//! the highest-priority match whose apply-to fits and none of whose keys the
//! queue type refuses.

use regex::Regex;

use super::policy_keys::unsupported_by;
use super::topology::{Policy, Queue};

/// A policy with its pattern compiled. Patterns RabbitMQ accepts but the
/// Rust regex engine does not (look-around) never match here.
pub struct Matcher<'a> {
    pub policy: &'a Policy,
    regex: Option<Regex>,
    /// The broker's major version: which keys a queue type refuses
    /// changed between 3.x and 4.x.
    major: u32,
}

impl<'a> Matcher<'a> {
    /// A matcher as the newest broker (4.x) matches.
    pub fn new(policy: &'a Policy) -> Self {
        Matcher::on_version(policy, 4)
    }

    /// A matcher as a broker of major version `major` matches.
    pub fn on_version(policy: &'a Policy, major: u32) -> Self {
        Matcher { policy, regex: Regex::new(&policy.pattern).ok(), major }
    }

    pub fn name_matches(&self, name: &str) -> bool {
        self.regex.as_ref().is_some_and(|r| r.is_match(name))
    }

    /// Whether the broker would consider this policy for `queue`: a key
    /// the queue's type does not use (an exchange's, another type's) leaves
    /// the policy applicable; only a key the type refuses skips it.
    pub fn matches_queue(&self, queue: &Queue) -> bool {
        self.policy.apply_to.matches_queue(queue.kind)
            && self.name_matches(&queue.name)
            && !self.policy.definition.keys().any(|k| unsupported_by(k, queue.kind, self.major))
    }

    pub fn matches_exchange(&self, name: &str) -> bool {
        self.policy.apply_to.matches_exchanges() && self.name_matches(name)
    }
}

/// The order in which the broker prefers matching policies: the highest
/// priority first, ties by name.
pub fn precedence(a: &Policy, b: &Policy) -> std::cmp::Ordering {
    b.priority.cmp(&a.priority).then(a.name.cmp(&b.name))
}

/// The policies that match `queue`, in [`precedence`] order.
pub fn matching_queue<'a>(matchers: &[Matcher<'a>], queue: &Queue) -> Vec<&'a Policy> {
    let mut out: Vec<&Policy> = matchers.iter().filter(|m| m.matches_queue(queue)).map(|m| m.policy).collect();
    out.sort_by(|a, b| precedence(a, b));
    out
}

/// The first of [`matching_queue`]: the policy the broker applies, found
/// without collecting the others.
pub fn applied_to_queue<'a>(matchers: &[Matcher<'a>], queue: &Queue) -> Option<&'a Policy> {
    matchers.iter().filter(|m| m.matches_queue(queue)).map(|m| m.policy).min_by(|a, b| precedence(a, b))
}

/// Where a queue's setting comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetBy<'a> {
    /// Its `x-…` argument.
    Argument,
    /// The policy (`false`) or operator policy (`true`) applied to it.
    Policy(&'a Policy, bool),
}

/// A queue's setting from argument `argument` and policy key `key`, as the
/// broker resolves the two (`applied`: its policy and operator policy),
/// with where the value comes from.
pub fn queue_setting<'a>(
    queue: &'a Queue,
    applied: (Option<&'a Policy>, Option<&'a Policy>),
    argument: &str,
    key: &str,
) -> Option<(&'a super::Value, SetBy<'a>)> {
    use super::policy_keys::{Resolution, resolution};
    let by_argument = queue.arguments.get(argument).map(|v| (v, SetBy::Argument));
    let (policy, operator) = applied;
    let by_policy = policy
        .and_then(|p| Some((p.definition.get(key)?, SetBy::Policy(p, false))))
        .or_else(|| operator.and_then(|p| Some((p.definition.get(key)?, SetBy::Policy(p, true)))));
    match (by_argument, by_policy, resolution(key, queue.kind)) {
        (Some(a), Some(p), Resolution::Min) => {
            Some(if p.0.as_int().zip(a.0.as_int()).is_some_and(|(p, a)| p < a) { p } else { a })
        }
        (Some(a), Some(_), Resolution::Argument) => Some(a),
        (Some(_), Some(p), Resolution::Policy) => Some(p),
        (a, p, _) => a.or(p),
    }
}
