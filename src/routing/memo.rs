//! Where the dead letters of many queues go, each route worked out once: a
//! lint run asks of every queue with a dead-letter exchange, and most of
//! them send the same class of keys (any key, from a fanout or headers
//! binding) to the same exchange.

use std::rc::Rc;

use rustc_hash::FxHashMap;

use super::router::Reached;
use super::{Keys, Message, Router};

/// Where the dead letters of a queue go, for every message it can hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Landing<'a> {
    /// The queues reached, by the names the vhost holds, sorted, each once.
    pub queues: Vec<&'a str>,
    /// Some route passes where the model cannot tell (see [`super::Route::cannot_tell`]).
    pub cannot_tell: bool,
}

impl Landing<'_> {
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
    routed: FxHashMap<(&'a str, Keys), Rc<Landing<'a>>>,
}

impl<'r, 'a> DeadLetterRoutes<'r, 'a> {
    pub fn new(router: &'r Router<'a>) -> Self {
        DeadLetterRoutes { router, routed: FxHashMap::default() }
    }

    /// Where the dead letters of `queue` go; `None` when it has no
    /// dead-letter exchange. Queues whose dead letters carry one class of
    /// keys to the same exchange share one answer.
    pub fn of(&mut self, queue: &str) -> Option<Rc<Landing<'a>>> {
        let (exchange, routing_key) = self.router.dead_letter_exchange(queue)?;
        Some(self.of_exchange(queue, exchange, routing_key))
    }

    /// [`DeadLetterRoutes::of`] a queue whose dead-letter `exchange` and
    /// `routing_key` are known (see [`Router::dead_letter_exchange`]).
    pub fn of_exchange(&mut self, queue: &str, exchange: &'a str, routing_key: Option<&'a str>) -> Rc<Landing<'a>> {
        let keys = match routing_key {
            Some(k) => vec![Keys::one(k)],
            None => self.router.keys_into(queue),
        };
        let mut landings: Vec<Rc<Landing>> = keys.into_iter().map(|k| self.landing(exchange, k)).collect();
        // Often every class of keys lands alike (a fanout dead-letter
        // exchange): one answer, shared.
        if landings.iter().all(|l| Rc::ptr_eq(l, &landings[0]) || **l == *landings[0]) {
            return landings.pop().unwrap_or_default();
        }
        let mut out = Landing::default();
        for l in landings {
            out.queues.extend(&l.queues);
            out.cannot_tell |= l.cannot_tell;
        }
        out.queues.sort_unstable();
        out.queues.dedup();
        Rc::new(out)
    }

    /// Where dead letters of class `keys` published to `exchange` go.
    fn landing(&mut self, exchange: &'a str, keys: Keys) -> Rc<Landing<'a>> {
        let router = self.router;
        let routed = self.routed.entry((exchange, keys)).or_insert_with_key(|(exchange, keys)| {
            let message = Message { exchange: exchange.to_string(), keys: keys.clone(), headers: None };
            let Reached { mut queues, route } = router.reach(&message, false, false);
            queues.sort_unstable();
            queues.dedup();
            Rc::new(Landing { queues, cannot_tell: !route.cannot_tell.is_empty() })
        });
        Rc::clone(routed)
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
                .map(|d| (d.route.queues.into_iter().collect::<Vec<_>>(), !d.route.cannot_tell.is_empty()));
            some += usize::from(want.is_some());
            let got = memo.of(q).map(|l| (l.queues.iter().map(|q| q.to_string()).collect(), l.cannot_tell));
            assert_eq!(got, want, "{q}");
        }
        assert!(some > 0);
    }
}
