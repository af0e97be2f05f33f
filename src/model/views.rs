//! Typed views of a vhost's generic objects, lent for as long as the vhost:
//! the routing model, lint and the planner match a vhost's policies and
//! operator policies (objects of their kinds) as [`Policy`] values, and
//! what they answer borrows them for as long as the vhost.

use std::fmt;

use super::Policy;

/// The views made of one vhost's objects, kept with it. Each distinct view
/// is made once (a vhost does not change while a router borrows it; one
/// changed later gets new views beside the old, which go with the vhost).
/// Not part of what the vhost is: a clone starts without, and two vhosts
/// compare equal whatever views they keep.
#[derive(Default)]
pub struct Views {
    policies: elsa::sync::FrozenVec<Box<Policy>>,
}

impl Views {
    /// `policy` (a policy's or an operator policy's typed view), kept with
    /// the vhost.
    pub fn policy(&self, policy: Policy) -> &Policy {
        match self.policies.iter().find(|kept| **kept == policy) {
            Some(kept) => kept,
            None => self.policies.push_get(Box::new(policy)),
        }
    }
}

impl Clone for Views {
    fn clone(&self) -> Self {
        Views::default()
    }
}

impl PartialEq for Views {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Views {}

impl fmt::Debug for Views {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Views")
    }
}
