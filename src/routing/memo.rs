//! Where the dead letters of many queues go, each route worked out once: a
//! lint run asks of every queue with a dead-letter exchange, and most of
//! them send the same class of keys (any key, from a fanout or headers
//! binding) to the same exchange.

use std::collections::BTreeSet;
use std::rc::Rc;

use rustc_hash::FxHashMap;

use super::{Keys, Message, Router};

/// Where the dead letters of a queue go, for every message it can hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Landing {
    pub queues: BTreeSet<String>,
    /// Some route passes where the model cannot tell (see [`super::Route::cannot_tell`]).
    pub cannot_tell: bool,
}

impl Landing {
    /// Nothing reached and nothing the model cannot tell: they are lost.
    pub fn nowhere(&self) -> bool {
        self.queues.is_empty() && !self.cannot_tell
    }
}

/// [`Router::dead_letters`] for every message a queue can hold (`original`
/// `None`), as a consumer's reject dead-letters them (no cycle is cut),
/// with each (exchange, class of keys) routed once.
pub struct DeadLetterRoutes<'r, 'a> {
    router: &'r Router<'a>,
    routed: FxHashMap<(&'a str, Keys), Rc<Landing>>,
}

impl<'r, 'a> DeadLetterRoutes<'r, 'a> {
    pub fn new(router: &'r Router<'a>) -> Self {
        DeadLetterRoutes { router, routed: FxHashMap::default() }
    }

    /// Where the dead letters of `queue` go; `None` when it has no
    /// dead-letter exchange.
    pub fn of(&mut self, queue: &str) -> Option<Landing> {
        let (exchange, routing_key) = self.router.dead_letter_exchange(queue)?;
        let keys = match routing_key {
            Some(k) => vec![Keys::one(k)],
            None => self.router.keys_into(queue),
        };
        let mut out = Landing::default();
        for k in keys {
            let router = self.router;
            let routed = self.routed.entry((exchange, k)).or_insert_with_key(|(exchange, k)| {
                let message = Message { exchange: exchange.to_string(), keys: k.clone(), headers: None };
                let route = router.route_from(&message, false, false);
                Rc::new(Landing { queues: route.queues, cannot_tell: !route.cannot_tell.is_empty() })
            });
            out.queues.extend(routed.queues.iter().cloned());
            out.cannot_tell |= routed.cannot_tell;
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::{Reason, Version};

    /// The same answer as the router's own, for each queue of a topology
    /// with every type of exchange and dead-letter exchanges among them.
    #[test]
    fn each_queue_lands_where_the_router_says() {
        let topology = crate::testing::large_topology(200, 12, 500);
        let vhost = topology.vhosts.values().next().unwrap();
        let router = Router::new(vhost, Version::NEWEST);
        let mut memo = DeadLetterRoutes::new(&router);
        let mut some = 0;
        for q in vhost.queues.keys() {
            let want = router
                .dead_letters(q, Reason::Rejected, None)
                .map(|d| Landing { cannot_tell: !d.route.cannot_tell.is_empty(), queues: d.route.queues });
            some += usize::from(want.is_some());
            assert_eq!(memo.of(q), want, "{q}");
        }
        assert!(some > 0);
    }
}
