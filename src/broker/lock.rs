//! The apply lock: an exclusive queue held by one AMQP connection for the
//! whole apply (https://www.rabbitmq.com/docs/queues#exclusive-queues). The broker deletes it when that connection
//! closes, so a holder that dies frees it; a live holder that loses the
//! connection sees it and stops before its next step.
//!
//! The in-memory broker ([`super::Memory`]) hands out the same [`Lock`],
//! held in this process instead of by a connection.
//!
//! One lock per place of records (`model::records`): broker-wide records
//! are global parameters, so two applies to different vhosts would still
//! overwrite each other's, and their lock lives in the vhost the AMQP URL
//! names (`/` by default). Records kept inside a project's vhosts have
//! their lock beside the journal, in the project's first vhost. Either way
//! warren's user needs configure permission on `warren.lock` there.

use lapin::options::QueueDeclareOptions;
use lapin::types::FieldTable;
use lapin::{Connection, ErrorKind};

use super::amqp::Amqp;
use super::error::BrokerError;

/// The exclusive queue's name.
pub const LOCK_QUEUE: &str = "warren.lock";

/// The AMQP `resource-locked` reply: another connection holds the queue.
const RESOURCE_LOCKED: u16 = 405;

/// A held lock; dropping it frees it (a real one by closing its connection).
pub struct Lock {
    hold: Hold,
}

enum Hold {
    Connection(Connection),
    Local(Box<dyn LocalHold>),
}

/// A lock held inside this process (the in-memory broker's): freed when
/// dropped, and no longer held once its "connection" is cut.
pub(super) trait LocalHold: Send + Sync {
    fn held(&self) -> bool;
}

impl Lock {
    pub(super) fn local(hold: impl LocalHold + 'static) -> Lock {
        Lock { hold: Hold::Local(Box::new(hold)) }
    }

    /// Whether the lock's connection is still open, so the lock still held.
    pub fn held(&self) -> bool {
        match &self.hold {
            Hold::Connection(c) => c.status().connected(),
            Hold::Local(h) => h.held(),
        }
    }

    pub async fn release(self) {
        match self.hold {
            Hold::Connection(c) => {
                super::amqp::close(&c, "apply finished").await;
            }
            Hold::Local(h) => drop(h),
        }
    }
}

impl Amqp {
    /// Tries once to take the lock: `None` when another connection holds it.
    /// `holder` names this process in the broker's connection list.
    pub(super) async fn try_lock(&self, vhost: &str, holder: &str) -> Result<Option<Lock>, BrokerError> {
        let connection = self.connect(vhost, &format!("warren apply ({holder})")).await?;
        let unreachable =
            |e: lapin::Error| BrokerError::AmqpUnreachable { endpoint: self.address(), detail: e.to_string() };
        let channel = connection.create_channel().await.map_err(unreachable)?;
        let options = QueueDeclareOptions { exclusive: true, ..QueueDeclareOptions::default() };
        match channel.queue_declare(LOCK_QUEUE.into(), options, FieldTable::default()).await {
            Ok(_) => Ok(Some(Lock { hold: Hold::Connection(connection) })),
            Err(e) => {
                super::amqp::close(&connection, "lock busy").await;
                match e.kind() {
                    ErrorKind::ProtocolError(p) if p.get_id() == RESOURCE_LOCKED => Ok(None),
                    _ => Err(BrokerError::Refused {
                        action: format!("take the apply lock (exclusive queue \"{LOCK_QUEUE}\" in vhost \"{vhost}\")"),
                        status: 0,
                        reason: e.to_string(),
                    }),
                }
            }
        }
    }
}

impl Amqp {
    /// The vhost of the lock of broker-wide records.
    pub(super) fn lock_vhost(&self) -> &str {
        &self.lock_vhost
    }
}
