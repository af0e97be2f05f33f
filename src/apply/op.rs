//! One plan operation carried out by the broker's typed calls.

use crate::broker::{Broker, BrokerError};
use crate::plan::Op;

/// Carries out one operation. `guard_deletes` deletes classic queues only
/// if empty and unused; `password` is the value read from the environment
/// for a `PutUser` whose password comes from there.
pub(super) async fn run(
    broker: &impl Broker,
    op: &Op,
    guard_deletes: bool,
    password: Option<&str>,
) -> Result<(), BrokerError> {
    use Op::*;
    match op {
        PutVhost { name, settings, remove_limits } => broker.put_vhost(name, settings, remove_limits).await,
        DeleteVhost { name } => broker.delete_vhost(name).await,
        PutUser { user, remove_limits } => broker.put_user(user, password, remove_limits).await,
        DeleteUser { name } => broker.delete_user(name).await,
        DeclareExchange { vhost, exchange } => broker.declare_exchange(vhost, exchange).await,
        DeleteExchange { vhost, name } => broker.delete_exchange(vhost, name).await,
        DeclareQueue { vhost, queue } => broker.declare_queue(vhost, queue).await,
        DeleteQueue { vhost, name, kind } => broker.delete_queue(vhost, name, *kind, guard_deletes).await,
        Bind { vhost, binding } => broker.bind(vhost, binding).await,
        Unbind { vhost, binding } => broker.unbind(vhost, binding).await,
        PutPermission { vhost, permission } => broker.put_permission(vhost, permission).await,
        DeletePermission { vhost, user } => broker.delete_permission(vhost, user).await,
        PutObject { vhost, name, object } => broker.put_object(vhost.as_deref(), name.kind, object).await,
        DeleteObject { vhost, name } => broker.delete_object(vhost.as_deref(), name).await,
        Migrate(_) | Rollback(_) => Err(BrokerError::Setup(format!("{op} is carried out by apply, step by step"))),
    }
}
