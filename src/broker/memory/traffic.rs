//! Message traffic and the hooks tests need, as inherent methods of
//! [`Memory`]: publishing and getting as a client would, and what only
//! clients or a failing cluster do to a real broker.

use std::sync::atomic::Ordering;

use super::state::{Message, QueueState};
use super::{Memory, routing, writes};
use crate::broker::{Answer, BrokerError};
use crate::model::Table;

impl Memory {
    /// Publishes a message as a client would (not as this view's user), and
    /// says whether it reached a queue. `exchange` "" (or "amq.default") is
    /// the default exchange.
    pub fn publish(&self, vhost: &str, exchange: &str, routing_key: &str, headers: &Table, body: &str) -> Answer<bool> {
        let action = || format!("publish to exchange \"{exchange}\" in vhost \"{vhost}\"");
        let mut s = self.lock_state();
        let id = s.next_id();
        let version = s.version.clone();
        let Some(v) = s.vhosts.get_mut(vhost) else { return Err(BrokerError::NotFound { action: action() }) };
        let exchange = if exchange == "amq.default" { "" } else { exchange };
        let Some(x) = v.exchanges.get(exchange) else { return Err(BrokerError::NotFound { action: action() }) };
        if x.internal {
            return Err(BrokerError::Refused {
                action: action(),
                status: 400,
                reason: format!(
                    "403 ACCESS_REFUSED - cannot publish to internal exchange '{exchange}' in vhost '{vhost}'"
                ),
            });
        }
        let queues = routing::route(v, &version, exchange, routing_key, headers);
        let message = Message {
            id,
            exchange: exchange.to_string(),
            routing_key: routing_key.to_string(),
            headers: headers.clone(),
            body: body.to_string(),
        };
        for q in &queues {
            if let Some(q) = v.queues.get_mut(q) {
                q.ready.push_back(message.clone());
            }
        }
        Ok(!queues.is_empty())
    }

    /// Takes the oldest ready message of a queue, acknowledged; `None` when
    /// it holds none or does not exist.
    pub fn get(&self, vhost: &str, queue: &str) -> Option<Message> {
        self.lock_state().vhosts.get_mut(vhost)?.queues.get_mut(queue)?.ready.pop_front()
    }

    /// Sets how many consumers a queue has. An auto-delete queue whose last
    /// consumer leaves is deleted, as the broker does.
    pub fn set_consumers(&self, vhost: &str, queue: &str, consumers: u64) -> Answer<()> {
        let mut s = self.lock_state();
        let missing = || BrokerError::NotFound { action: format!("set the consumers of queue \"{queue}\"") };
        let v = s.vhosts.get_mut(vhost).ok_or_else(missing)?;
        let q = v.queues.get_mut(queue).ok_or_else(missing)?;
        let last_left = q.auto_delete && q.consumers > 0 && consumers == 0;
        q.consumers = consumers;
        if last_left {
            let _ = writes::delete_queue(v, vhost, queue, false);
        }
        Ok(())
    }

    /// Sets how many messages of a queue consumers hold unacknowledged.
    pub fn set_unacked(&self, vhost: &str, queue: &str, unacked: u64) -> Answer<()> {
        self.with_queue(vhost, queue, |q| q.unacked = unacked)
    }

    /// Makes the next `readings` of a queue take (ready, unacknowledged)
    /// from totals that lag, as the broker's queue totals do for up to one
    /// statistics interval after a change
    /// (https://www.rabbitmq.com/docs/management#statistics-interval); the queue's own
    /// counts (ready, consumers) stay fresh.
    pub fn lag_totals(&self, vhost: &str, queue: &str, listed: (u64, u64), readings: usize) -> Answer<()> {
        self.with_queue(vhost, queue, |q| q.lagging = Some((listed, readings)))
    }

    /// Takes a replicated queue's leader away (`false`) or gives it back:
    /// without one, the broker reads its counts as 0 (`rabbit_quorum_queue`
    /// answers a passive declare from its local state).
    pub fn set_leader(&self, vhost: &str, queue: &str, leader: bool) -> Answer<()> {
        self.with_queue(vhost, queue, |q| q.leader = leader)
    }

    fn with_queue(&self, vhost: &str, queue: &str, change: impl FnOnce(&mut QueueState)) -> Answer<()> {
        let mut s = self.lock_state();
        let q = s.vhosts.get_mut(vhost).and_then(|v| v.queues.get_mut(queue));
        let q = q.ok_or_else(|| BrokerError::NotFound { action: format!("change queue \"{queue}\" for a test") })?;
        change(q);
        Ok(())
    }

    /// Cuts the connection that holds the lock in `vhost` (`None`: `/`), as
    /// a lost connection would: its holder's [`Lock::held`] turns false and
    /// the lock is free. Says whether a lock was held.
    pub fn cut_lock(&self, vhost: Option<&str>) -> bool {
        let entry = self.lock_state().locks.remove(vhost.unwrap_or("/"));
        entry.map(|e| e.connected.store(false, Ordering::SeqCst)).is_some()
    }
}
