//! Each object's attributes as the plan shows them: plain JSON values under
//! stable names, with secrets replaced by a description.

use std::collections::BTreeMap;

use serde_json::{Value as Json, json};

use crate::model::kinds::Kind;
use crate::model::{Binding, Exchange, Password, Permission, Queue, Table, User, Value, VhostSettings};

/// Attribute name to value, sorted.
pub type Attributes = BTreeMap<String, Json>;

fn table(t: &Table) -> Json {
    Json::from(&Value::Table(t.clone()))
}

pub(super) fn exchange(x: &Exchange) -> Attributes {
    attrs([
        ("type", json!(x.kind)),
        ("durable", json!(x.durable)),
        ("auto_delete", json!(x.auto_delete)),
        ("internal", json!(x.internal)),
        ("arguments", table(&x.arguments)),
    ])
}

pub(super) fn queue(q: &Queue) -> Attributes {
    attrs([
        ("type", json!(q.kind.as_str())),
        ("durable", json!(q.durable)),
        ("auto_delete", json!(q.auto_delete)),
        ("arguments", table(&q.arguments)),
    ])
}

pub(super) fn binding(b: &Binding) -> Attributes {
    attrs([
        ("source", json!(b.source)),
        (b.destination_kind.as_str(), json!(b.destination)),
        ("routing_key", json!(b.routing_key)),
        ("arguments", table(&b.arguments)),
    ])
}

/// A user; the password is described, never shown.
pub(super) fn user(u: &User) -> Attributes {
    let password = match &u.password {
        Password::Env(var) => format!("(sensitive: from ${var})"),
        Password::Hash { .. } => "(sensitive: a password hash)".to_string(),
        Password::None => "(none)".to_string(),
    };
    let mut out = attrs([("password", json!(password)), ("tags", json!(u.tags))]);
    if let Some(l) = &u.limits {
        out.insert("limits".into(), json!(l));
    }
    out
}

/// What a user's digest covers: its tags and limits, never its password.
pub(super) fn digested_user(u: &User) -> Attributes {
    let mut out = user(u);
    out.remove("password");
    out
}

pub(super) fn permission(p: &Permission) -> Attributes {
    attrs([("configure", json!(p.configure)), ("write", json!(p.write)), ("read", json!(p.read))])
}

/// Vhost settings the desired side manages (absent ones are not shown).
pub(super) fn vhost(s: &VhostSettings) -> Attributes {
    let mut out = Attributes::new();
    if let Some(d) = &s.description {
        out.insert("description".into(), json!(d));
    }
    if let Some(t) = s.default_queue_type {
        out.insert("default_queue_type".into(), json!(t.as_str()));
    }
    if let Some(l) = &s.limits {
        out.insert("limits".into(), json!(l));
    }
    if let Some(t) = &s.tags {
        out.insert("tags".into(), json!(t));
    }
    if let Some(p) = s.protected_from_deletion {
        out.insert("protected_from_deletion".into(), json!(p));
    }
    out
}

/// An object of a kind of `model::kinds`: its body's attributes, each
/// secret one as a digest of its value (so that a changed secret shows as
/// changed without being shown).
pub(crate) fn object(kind: &Kind, body: &Table) -> Attributes {
    let shown = |(name, value): (&String, &Value)| {
        let json = match kind.attribute(name) {
            Some(a) if a.secret && !crate::model::kinds::env_vars(value).is_empty() => {
                let vars: Vec<String> = crate::model::kinds::env_vars(value).iter().map(|v| format!("${v}")).collect();
                json!(format!("(sensitive: from {})", vars.join(", ")))
            }
            Some(a) if a.secret && has_password(value) => {
                let digest = hex_digest(&serde_json::to_vec(&Json::from(value)).expect("values always serialise"));
                json!(format!("(sensitive: {}, digest {digest})", redacted(value)))
            }
            _ => Json::from(value),
        };
        (name.clone(), json)
    };
    body.iter().map(shown).collect()
}

/// Whether any URI of a secret attribute's value carries a password.
fn has_password(value: &Value) -> bool {
    match value {
        Value::String(uri) => crate::model::kinds::has_password(uri),
        Value::List(items) => items.iter().any(has_password),
        _ => false,
    }
}

/// The URIs of a secret attribute's value with their passwords masked.
fn redacted(value: &Value) -> String {
    let mask =
        |v: &Value| v.as_str().map_or("a value".to_string(), |u| crate::model::kinds::mask_passwords(u).into_owned());
    match value {
        Value::List(items) => items.iter().map(mask).collect::<Vec<_>>().join(", "),
        one => mask(one),
    }
}

/// 64 bits of SHA-256 over `bytes`, in hex: enough to tell a change.
pub(super) fn hex_digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn attrs<const N: usize>(pairs: [(&str, Json); N]) -> Attributes {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}
