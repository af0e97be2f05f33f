//! Each plan operation as management API requests.

use reqwest::Method;
use serde_json::{Value as Json, json};

use super::endpoint::segment;
use super::error::BrokerError;
use super::http::Http;
use crate::model::{Binding, DestinationKind, Password, QueueType, Table, Value};
use crate::plan::Op;

fn table(t: &Table) -> Json {
    Json::from(&Value::Table(t.clone()))
}

/// Carries out one operation. `guard_deletes` deletes classic queues only
/// if empty and unused; `password` is the value read from the environment
/// for a `PutUser` whose password comes from there.
pub async fn run(http: &Http, op: &Op, guard_deletes: bool, password: Option<&str>) -> Result<(), BrokerError> {
    use Op::*;
    match op {
        PutVhost { name, settings, remove_limits } => {
            let mut body = json!({});
            if let Some(d) = &settings.description {
                body["description"] = json!(d);
            }
            if let Some(t) = settings.default_queue_type {
                // 3.10-3.12 read `defaultqueuetype`, later versions the other.
                body["default_queue_type"] = json!(t.as_str());
                body["defaultqueuetype"] = json!(t.as_str());
            }
            let v = segment(name);
            put(http, &format!("vhosts/{v}"), body, &format!("create or update vhost \"{name}\"")).await?;
            for (limit, value) in settings.limits.iter().flatten() {
                let action = format!("set limit {limit} of vhost \"{name}\"");
                put(http, &format!("vhost-limits/{v}/{}", segment(limit)), json!({ "value": value }), &action).await?;
            }
            for limit in remove_limits {
                let action = format!("remove limit {limit} of vhost \"{name}\"");
                delete(http, &format!("vhost-limits/{v}/{}", segment(limit)), &action).await?;
            }
            Ok(())
        }
        DeleteVhost { name } => {
            delete(http, &format!("vhosts/{}", segment(name)), &format!("delete vhost \"{name}\"")).await
        }
        PutUser { user } => {
            let tags = user.tags.iter().cloned().collect::<Vec<_>>().join(",");
            let body = match (&user.password, password) {
                (Password::Env(_), Some(p)) => json!({ "password": p, "tags": tags }),
                (Password::Env(var), None) => {
                    return Err(BrokerError::Setup(format!(
                        "the password of user \"{}\" comes from ${var}, which is not set",
                        user.name
                    )));
                }
                (Password::Hash { hash, algorithm }, _) => json!({
                    "password_hash": hash,
                    "hashing_algorithm": algorithm.as_deref().unwrap_or("rabbit_password_hashing_sha256"),
                    "tags": tags,
                }),
                (Password::None, _) => json!({ "password_hash": "", "tags": tags }),
            };
            put(
                http,
                &format!("users/{}", segment(&user.name)),
                body,
                &format!("create or update user \"{}\"", user.name),
            )
            .await
        }
        DeleteUser { name } => {
            delete(http, &format!("users/{}", segment(name)), &format!("delete user \"{name}\"")).await
        }
        DeclareExchange { vhost, exchange: x } => {
            let body = json!({
                "type": x.kind, "durable": x.durable, "auto_delete": x.auto_delete,
                "internal": x.internal, "arguments": table(&x.arguments),
            });
            let path = format!("exchanges/{}/{}", segment(vhost), segment(&x.name));
            put(http, &path, body, &format!("declare exchange \"{}\" in vhost \"{vhost}\"", x.name)).await
        }
        DeleteExchange { vhost, name } => {
            let path = format!("exchanges/{}/{}", segment(vhost), segment(name));
            delete(http, &path, &format!("delete exchange \"{name}\" in vhost \"{vhost}\"")).await
        }
        DeclareQueue { vhost, queue: q } => {
            let mut args = q.arguments.clone();
            args.insert("x-queue-type".into(), Value::String(q.kind.as_str().into()));
            let body = json!({ "durable": q.durable, "auto_delete": q.auto_delete, "arguments": table(&args) });
            let path = format!("queues/{}/{}", segment(vhost), segment(&q.name));
            put(http, &path, body, &format!("declare queue \"{}\" in vhost \"{vhost}\"", q.name)).await
        }
        DeleteQueue { vhost, name, kind } => {
            let mut path = format!("queues/{}/{}", segment(vhost), segment(name));
            // Quorum queues refuse these flags and streams ignore them
            // (reference 1.5); their emptiness is checked before the plan runs.
            let guarded = guard_deletes && *kind == QueueType::Classic;
            if guarded {
                path += "?if-empty=true&if-unused=true";
            }
            let action = format!("delete queue \"{name}\" in vhost \"{vhost}\"");
            match delete(http, &path, &action).await {
                Err(BrokerError::Refused { status: 400, reason, .. })
                    if guarded && (reason.contains("not empty") || reason.contains("in use")) =>
                {
                    Err(BrokerError::Unsafe { action, reason })
                }
                other => other,
            }
        }
        Bind { vhost, binding: b } => {
            let path = binding_path(vhost, b);
            let body = json!({ "routing_key": b.routing_key, "arguments": table(&b.arguments) });
            http.send(Method::POST, &path, Some(&body), &format!("create binding {b} in vhost \"{vhost}\"")).await?;
            Ok(())
        }
        Unbind { vhost, binding: b } => unbind(http, vhost, b).await,
        PutPolicy { vhost, policy: p, operator } => {
            let body = json!({
                "pattern": p.pattern, "definition": table(&p.definition),
                "priority": p.priority, "apply-to": p.apply_to.as_str(),
            });
            let (kind, path) = policy_path(vhost, &p.name, *operator);
            put(http, &path, body, &format!("set {kind} \"{}\" in vhost \"{vhost}\"", p.name)).await
        }
        DeletePolicy { vhost, name, operator } => {
            let (kind, path) = policy_path(vhost, name, *operator);
            delete(http, &path, &format!("delete {kind} \"{name}\" in vhost \"{vhost}\"")).await
        }
        PutPermission { vhost, permission: p } => {
            let body = json!({ "configure": p.configure, "write": p.write, "read": p.read });
            let path = format!("permissions/{}/{}", segment(vhost), segment(&p.user));
            put(http, &path, body, &format!("set permissions of \"{}\" in vhost \"{vhost}\"", p.user)).await
        }
        DeletePermission { vhost, user } => {
            let path = format!("permissions/{}/{}", segment(vhost), segment(user));
            delete(http, &path, &format!("delete permissions of \"{user}\" in vhost \"{vhost}\"")).await
        }
        Migrate(_) | Rollback(_) => Err(BrokerError::Setup(format!("{op} is carried out by apply, step by step"))),
    }
}

async fn put(http: &Http, path: &str, body: Json, action: &str) -> Result<(), BrokerError> {
    http.send(Method::PUT, path, Some(&body), action).await.map(|_| ())
}

async fn delete(http: &Http, path: &str, action: &str) -> Result<(), BrokerError> {
    match http.send(Method::DELETE, path, None, action).await {
        // Already gone is what a delete wants: repeating one is safe.
        Err(BrokerError::NotFound { .. }) => Ok(()),
        other => other.map(|_| ()),
    }
}

fn policy_path(vhost: &str, name: &str, operator: bool) -> (&'static str, String) {
    let (kind, base) = if operator { ("operator policy", "operator-policies") } else { ("policy", "policies") };
    (kind, format!("{base}/{}/{}", segment(vhost), segment(name)))
}

fn binding_path(vhost: &str, b: &Binding) -> String {
    let d = match b.destination_kind {
        DestinationKind::Queue => "q",
        DestinationKind::Exchange => "e",
    };
    format!("bindings/{}/e/{}/{d}/{}", segment(vhost), segment(&b.source), segment(&b.destination))
}

/// Bindings have no name: find the live one with the same key and
/// arguments and delete it by the `properties_key` the broker gave it
/// (its argument hash cannot be computed outside the broker).
async fn unbind(http: &Http, vhost: &str, b: &Binding) -> Result<(), BrokerError> {
    let action = format!("delete binding {b} in vhost \"{vhost}\"");
    let path = binding_path(vhost, b);
    let listed = match http.get_json(&path, &action).await {
        Err(BrokerError::NotFound { .. }) => return Ok(()),
        other => other?,
    };
    let wanted = table(&b.arguments);
    for item in listed.as_array().into_iter().flatten() {
        let args = Json::from(&Value::from(item.get("arguments").unwrap_or(&Json::Null)));
        let args = if args.is_null() { json!({}) } else { args };
        if item["routing_key"].as_str() == Some(&b.routing_key) && args == wanted {
            let key = item["properties_key"].as_str().unwrap_or("~");
            return delete(http, &format!("{path}/{}", segment(key)), &action).await;
        }
    }
    Ok(())
}
