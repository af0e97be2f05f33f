//! Which queues a message published to an exchange reaches: the one
//! routing model (`crate::routing`) over the vhost as this broker holds it.

use std::collections::BTreeSet;

use super::state::VhostState;
use crate::model::kinds::{operator_policies, policies};
use crate::model::{Queue, Table, Vhost};
use crate::routing::{Keys, Message, Router, Version};

/// The queues the message reaches, each once.
pub(super) fn route(
    v: &VhostState,
    version: &str,
    exchange: &str,
    routing_key: &str,
    headers: &Table,
) -> BTreeSet<String> {
    let vhost = model_of(v);
    let router = Router::new(&vhost, Version::parse(Some(version)));
    let message =
        Message { exchange: exchange.to_string(), keys: Keys::one(routing_key), headers: Some(headers.clone()) };
    router.route(&message).queues
}

/// The vhost as the model holds it: what routes, nothing else.
fn model_of(v: &VhostState) -> Vhost {
    let mut vhost = Vhost::new("");
    vhost.exchanges = v.exchanges.iter().filter(|(n, _)| !n.is_empty()).map(|(n, x)| (n.clone(), x.clone())).collect();
    vhost.queues = v
        .queues
        .iter()
        .map(|(n, q)| {
            let mut arguments = q.arguments.clone();
            arguments.remove("x-queue-type");
            let queue = Queue {
                name: n.clone(),
                kind: q.kind,
                durable: q.durable,
                auto_delete: q.auto_delete,
                arguments,
                replaces: None,
            };
            (n.clone(), queue)
        })
        .collect();
    vhost.bindings = v.bindings.clone();
    vhost.objects = policies::objects(v.policies.values().map(|p| &p.policy));
    vhost.objects.extend(operator_policies::objects(v.operator_policies.values().map(|p| &p.policy)));
    vhost
}
