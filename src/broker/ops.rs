//! Each change to an object as management API requests.

use reqwest::Method;
use serde_json::Value as Json;

use super::endpoint::segment;
use super::error::BrokerError;
use super::http::Http;
use crate::model::kinds::{Kind, Name, Object, bindings, exchanges, permissions, policies, queues, users, vhosts};
use crate::model::{Binding, Exchange, Password, Permission, Policy, Queue, QueueType, User, Value, VhostSettings};

// One request (or a few) per change to an object, for [`super::Rabbit`].
// Deletes of what is already gone succeed, so that repeating one is safe.

/// Creates or updates a vhost with `settings` (the settings' kind's
/// requests: its PUT, then one per limit), and removes the limits named.
/// The vhost's PUT keeps its limits: they are set and removed one by one
/// after it.
pub(super) async fn put_vhost(
    http: &Http,
    name: &str,
    settings: &VhostSettings,
    remove_limits: &[String],
) -> Result<(), BrokerError> {
    for request in (vhosts::KIND.put)(None, &vhosts::object(name, settings)) {
        let action = match &request.part {
            None => format!("create or update vhost \"{name}\""),
            Some(part) => format!("set {part} of vhost \"{name}\""),
        };
        put(http, &path(&request.path), request.body, &action).await?;
    }
    let limits = Limits { path: "vhost-limits", owner: ("vhost", name) };
    limits.remove(http, remove_limits).await
}

/// The limits of one vhost or user: `DELETE /api/{path}/{owner}/{limit}`
/// (their kinds' `put` sets them).
struct Limits<'a> {
    /// `vhost-limits` or `user-limits`.
    path: &'static str,
    /// (`vhost` or `user`, name), for messages and the path.
    owner: (&'static str, &'a str),
}

impl Limits<'_> {
    /// Removes `remove`, one request each.
    async fn remove(&self, http: &Http, remove: &[String]) -> Result<(), BrokerError> {
        let ((what, name), path) = (self.owner, self.path);
        for limit in remove {
            let at = format!("{path}/{}/{}", segment(name), segment(limit));
            delete(http, &at, &format!("remove limit {limit} of {what} \"{name}\"")).await?;
        }
        Ok(())
    }
}

pub(super) async fn delete_vhost(http: &Http, name: &str) -> Result<(), BrokerError> {
    let at = path(&(vhosts::KIND.delete)(None, &[name.to_string()]));
    delete(http, &at, &format!("delete vhost \"{name}\"")).await
}

/// Creates or updates a user with its limits (the kind's requests: its
/// PUT, then one per limit), and removes the limits named; `password` is
/// the value read from the environment for a user whose password comes
/// from there. The user's PUT keeps its limits: they are set and removed
/// one by one after it.
pub(super) async fn put_user(
    http: &Http,
    user: &User,
    password: Option<&str>,
    remove_limits: &[String],
) -> Result<(), BrokerError> {
    let name = &user.name;
    for request in (users::KIND.put)(None, &user_object(user, password)?) {
        let action = match &request.part {
            None => format!("create or update user \"{name}\""),
            Some(part) => format!("set {part} of user \"{name}\""),
        };
        put(http, &path(&request.path), request.body, &action).await?;
    }
    let limits = Limits { path: "user-limits", owner: ("user", name) };
    limits.remove(http, remove_limits).await
}

/// The user's object as its PUT sends it: a password from the environment
/// read (`password`), or an error when it was not.
pub(super) fn user_object(user: &User, password: Option<&str>) -> Result<Object, BrokerError> {
    let mut object = users::object(user);
    match (&user.password, password) {
        (Password::Env(_), Some(p)) => {
            object.body.insert("password".into(), Value::String(p.to_string()));
        }
        (Password::Env(var), None) => {
            return Err(BrokerError::Setup(format!(
                "the password of user \"{}\" comes from ${var}, which is not set",
                user.name
            )));
        }
        _ => {}
    }
    Ok(object)
}

pub(super) async fn delete_user(http: &Http, name: &str) -> Result<(), BrokerError> {
    let path = path(&(users::KIND.delete)(None, &[name.to_string()]));
    delete(http, &path, &format!("delete user \"{name}\"")).await
}

pub(super) async fn declare_exchange(http: &Http, vhost: &str, x: &Exchange) -> Result<(), BrokerError> {
    let action = format!("declare exchange \"{}\" in vhost \"{vhost}\"", x.name);
    for request in (exchanges::KIND.put)(Some(vhost), &exchanges::object(x)) {
        put(http, &path(&request.path), request.body, &action).await?;
    }
    Ok(())
}

pub(super) async fn delete_exchange(http: &Http, vhost: &str, name: &str) -> Result<(), BrokerError> {
    let path = path(&(exchanges::KIND.delete)(Some(vhost), &[name.to_string()]));
    delete(http, &path, &format!("delete exchange \"{name}\" in vhost \"{vhost}\"")).await
}

/// Declares a queue: its kind's request, the type as `x-queue-type`.
pub(super) async fn declare_queue(http: &Http, vhost: &str, q: &Queue) -> Result<(), BrokerError> {
    let action = format!("declare queue \"{}\" in vhost \"{vhost}\"", q.name);
    for request in (queues::KIND.put)(Some(vhost), &queues::object(q)) {
        put(http, &path(&request.path), request.body, &action).await?;
    }
    Ok(())
}

/// Deletes a queue at its kind's path; `guarded`, a classic one only if
/// it is empty and unused ([`BrokerError::Unsafe`] when it is not): the
/// guard is the query this one request adds, not the kind's.
pub(super) async fn delete_queue(
    http: &Http,
    vhost: &str,
    name: &str,
    kind: QueueType,
    guarded: bool,
) -> Result<(), BrokerError> {
    let mut path = path(&(queues::KIND.delete)(Some(vhost), &[name.to_string()]));
    // Quorum queues refuse these flags and streams ignore them
    // (`rabbit_quorum_queue:delete/4`, `rabbit_stream_queue:delete/4`); their emptiness is checked before the plan runs.
    let guarded = guarded && kind == QueueType::Classic;
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

/// Creates a binding with its kind's request: a POST to its ends (the
/// broker names a binding; there is nothing to PUT at).
pub(super) async fn bind(http: &Http, vhost: &str, b: &Binding) -> Result<(), BrokerError> {
    let action = format!("create binding {b} in vhost \"{vhost}\"");
    for request in (bindings::KIND.put)(Some(vhost), &bindings::object(b)) {
        http.send(Method::POST, &path(&request.path), Some(&request.body), &action).await?;
    }
    Ok(())
}

/// Sets a policy, as its kind says.
pub(super) async fn put_policy(http: &Http, vhost: &str, p: &Policy) -> Result<(), BrokerError> {
    put_object(http, Some(vhost), &policies::KIND, &policies::object(p)).await
}

pub(super) async fn delete_policy(http: &Http, vhost: &str, name: &str) -> Result<(), BrokerError> {
    delete_object(http, Some(vhost), &Name { kind: &policies::KIND, id: vec![name.to_string()] }).await
}

/// Sets a user's permissions in a vhost with the kind's request.
pub(super) async fn put_permission(http: &Http, vhost: &str, p: &Permission) -> Result<(), BrokerError> {
    let action = format!("set permissions of \"{}\" in vhost \"{vhost}\"", p.user);
    for request in (permissions::KIND.put)(Some(vhost), &permissions::object(p)) {
        put(http, &path(&request.path), request.body, &action).await?;
    }
    Ok(())
}

pub(super) async fn delete_permission(http: &Http, vhost: &str, user: &str) -> Result<(), BrokerError> {
    let path = path(&(permissions::KIND.delete)(Some(vhost), &[user.to_string()]));
    delete(http, &path, &format!("delete permissions of \"{user}\" in vhost \"{vhost}\"")).await
}

pub(super) async fn put_object(
    http: &Http,
    vhost: Option<&str>,
    kind: &'static Kind,
    object: &Object,
) -> Result<(), BrokerError> {
    let name = Name { kind, id: object.id.clone() };
    for request in (kind.put)(vhost, object) {
        let action = match &request.part {
            None => format!("set {}", name.at(vhost)),
            Some(part) => format!("set {part} of {}", name.at(vhost)),
        };
        put(http, &path(&request.path), request.body, &action).await?;
    }
    Ok(())
}

pub(super) async fn delete_object(http: &Http, vhost: Option<&str>, name: &Name) -> Result<(), BrokerError> {
    let path = path(&(name.kind.delete)(vhost, &name.id));
    delete(http, &path, &format!("delete {}", name.at(vhost))).await
}

/// A kind's path segments, each encoded.
fn path(segments: &[String]) -> String {
    segments.iter().map(|s| segment(s)).collect::<Vec<_>>().join("/")
}

pub(super) async fn put(http: &Http, path: &str, body: Json, action: &str) -> Result<(), BrokerError> {
    http.send(Method::PUT, path, Some(&body), action).await.map(|_| ())
}

pub(super) async fn delete(http: &Http, path: &str, action: &str) -> Result<(), BrokerError> {
    match http.send(Method::DELETE, path, None, action).await {
        // Already gone is what a delete wants: repeating one is safe.
        Err(BrokerError::NotFound { .. }) => Ok(()),
        other => other.map(|_| ()),
    }
}

/// Bindings have no name: list the bindings between its ends (its kind's
/// delete path), find the live one that is the same object, and delete it
/// by the `properties_key` the broker gave it (its argument hash cannot be
/// computed outside the broker).
pub(super) async fn unbind(http: &Http, vhost: &str, b: &Binding) -> Result<(), BrokerError> {
    let action = format!("delete binding {b} in vhost \"{vhost}\"");
    let wanted = bindings::object(b);
    let ends = path(&(bindings::KIND.delete)(Some(vhost), &wanted.id));
    let listed = match http.get_json(&ends, &action).await {
        Err(BrokerError::NotFound { .. }) => return Ok(()),
        other => other?,
    };
    for item in listed.as_array().into_iter().flatten() {
        if let Some(Ok(live)) = (bindings::KIND.read)(item)
            && live.id == wanted.id
        {
            let key = item["properties_key"].as_str().unwrap_or("~");
            return delete(http, &format!("{ends}/{}", segment(key)), &action).await;
        }
    }
    Ok(())
}
