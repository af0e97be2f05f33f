//! Users: broker-wide, set at `/api/users/{name}` (administrators only),
//! with their limits at `/api/user-limits/{name}/{limit}`.
//!
//! A kind warren had before the seam, declared here beside the old type
//! ([`User`]): [`user`] and [`object`] are the typed view both ways. It is
//! in [`super::KINDS`], and a topology keeps its users in
//! `Topology::objects` (`Topology::users` gives them typed); the files'
//! reader and docs leave users to their own code (`read_apart`,
//! `documented_apart`), the diff to `diff/users.rs`. Its secret is a password, which is not a URI:
//! the attribute `password` is of [`Type::Password`], whose value says
//! where the password is (see [`Type::Password`]); its absence is a user
//! without one (a certificate's, or another backend's).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value as Json, json};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use super::{Attribute, Finding, Fixed, Kind, Object, Phase, Request, Scope, Type, field};
use crate::model::{Password, Table, User, Value};

/// RabbitMQ's default `password_hashing_module`: a hash made with it is
/// kept without its algorithm, as [`Password::Hash`] keeps it.
pub const DEFAULT_ALGORITHM: &str = "rabbit_password_hashing_sha256";

pub static KIND: Kind = Kind {
    name: "user",
    table: "users",
    scope: Scope::Broker,
    identity: &[Attribute { immutable: true, ..Attribute::required("name", Type::String, "the user's name") }],
    attributes: &[
        Attribute::optional(
            "password",
            Type::Password,
            "its password: from a variable, or a RabbitMQ password hash; none to log in by certificate only",
        )
        .secret(),
        Attribute::defaulted(
            "tags",
            Type::Strings,
            Fixed::Strings(&[]),
            "its tags, such as `administrator` or `management`",
        ),
        Attribute::optional(
            "limits",
            Type::Table,
            "`max-connections` and `max-channels`; left as they are on the broker when not given",
        ),
    ],
    about: "A user of the broker, its password, tags and limits. Setting one needs the `administrator` tag.",
    since: (3, 0),
    plugin: None,
    definitions: "users",
    listing: None,
    portable: true,
    // Deleting a user takes its access: the lockout guards say when.
    destroy_loses: None,
    read,
    write,
    put,
    delete,
    check: Some(check),
    phase: Phase::PutObject,
};

/// What the broker refuses in a user that its attributes' types cannot
/// say: a hash that is not base64 (the broker's reason would quote it) and
/// a variable's name that is not one. The files' reader places each at the
/// key that gives the password, a hash's without showing the line.
pub fn check(o: &Object) -> Vec<Finding> {
    let (message, help) = match o.body.get("password").and_then(password) {
        Some(Password::Env(var)) if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => (
            format!("\"{var}\" is not an environment variable name"),
            "name the variable that holds the password, e.g. `password_env = \"ANALYTICS_PASSWORD\"`",
        ),
        Some(Password::Hash { hash, .. }) if STANDARD.decode(&hash).is_err() => (
            format!("the `password_hash` of user \"{}\" is not base64", o.id[0]),
            "RabbitMQ password hashes are base64, as in a definitions export or what `warren export` writes",
        ),
        _ => return Vec::new(),
    };
    let path = vec!["password".to_string()];
    vec![Finding { path, at_key: false, code: "bad-value", message, label: None, help: help.into() }]
}

/// The typed view of an object: `None` when its attributes are not a
/// user's (a file or a broker checked them first). A password read from
/// its variable is not a [`Password`]: the typed view holds the variable.
pub fn user(name: &str, body: &Table) -> Option<User> {
    let password = match body.get("password") {
        None => Password::None,
        Some(v) => password(v)?,
    };
    let tags = match body.get("tags") {
        None => BTreeSet::new(),
        Some(Value::List(items)) => items.iter().map(|t| t.as_str().map(str::to_string)).collect::<Option<_>>()?,
        Some(_) => return None,
    };
    let limits = match body.get("limits") {
        None => None,
        Some(Value::Table(t)) => Some(t.iter().map(|(k, v)| Some((k.clone(), v.as_int()?))).collect::<Option<_>>()?),
        Some(_) => return None,
    };
    Some(User { name: name.to_string(), password, tags, limits })
}

/// A value of [`Type::Password`] as the typed view holds it.
fn password(value: &Value) -> Option<Password> {
    let Value::Table(t) = value else { return None };
    if let Some(var) = super::env_var(value) {
        return Some(Password::Env(var.to_string()));
    }
    let hash = t.get("hash")?.as_str()?.to_string();
    let algorithm = match t.get("algorithm") {
        None => None,
        Some(a) => Some(a.as_str()?.to_string()),
    };
    (t.len() == 1 + usize::from(algorithm.is_some())).then_some(Password::Hash { hash, algorithm })
}

/// The object of a typed user: the inverse of [`user`].
pub fn object(u: &User) -> Object {
    let mut body = Table::with_capacity(3);
    let one = |k: &str, v: &str| (k.to_string(), Value::String(v.to_string()));
    match &u.password {
        Password::None => {}
        Password::Env(var) => {
            body.insert("password".into(), Value::Table([one("env", var)].into_iter().collect()));
        }
        Password::Hash { hash, algorithm } => {
            let parts = std::iter::once(one("hash", hash)).chain(algorithm.iter().map(|a| one("algorithm", a)));
            body.insert("password".into(), Value::Table(parts.collect()));
        }
    }
    body.insert("tags".into(), Value::List(u.tags.iter().map(|t| Value::String(t.clone())).collect()));
    if let Some(l) = &u.limits {
        body.insert("limits".into(), Value::Table(l.iter().map(|(k, v)| (k.clone(), Value::Int(*v))).collect()));
    }
    Object { id: vec![u.name.clone()], body }
}

/// The typed view of the users among `objects` (the broker's), by name.
pub fn typed(objects: &super::Objects) -> BTreeMap<String, User> {
    let of_kind = objects.iter().filter(|(n, _)| n.kind == &KIND);
    of_kind.filter_map(|(n, body)| user(&n.id[0], body)).map(|u| (u.name.clone(), u)).collect()
}

/// The name, among a topology's objects, of user `name`.
pub fn name(name: &str) -> super::Name {
    super::Name { kind: &KIND, id: vec![name.to_string()] }
}

/// The key of user `name`.
pub fn key(name: &str) -> crate::model::ObjectKey {
    crate::model::ObjectKey::Object { vhost: None, name: self::name(name) }
}

/// The name of the user `key` names, if it names one.
pub fn name_of(key: &crate::model::ObjectKey) -> Option<&str> {
    match key {
        crate::model::ObjectKey::Object { vhost: None, name } if name.kind == &KIND => Some(&name.id[0]),
        _ => None,
    }
}

/// The hash and algorithm a definitions item gives: an empty hash for no
/// password, and for one still naming its variable (never its name).
fn hash_of(o: &Object) -> (&str, &str) {
    match o.body.get("password") {
        Some(Value::Table(t)) => match t.get("hash").and_then(Value::as_str) {
            Some(hash) => (hash, t.get("algorithm").and_then(Value::as_str).unwrap_or(DEFAULT_ALGORITHM)),
            None => ("", DEFAULT_ALGORITHM),
        },
        _ => ("", DEFAULT_ALGORITHM),
    }
}

fn tags(o: &Object) -> Vec<&str> {
    match o.body.get("tags") {
        Some(Value::List(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A definitions item: its hash (an empty one for none), its tags as an
/// array or as RabbitMQ's comma-separated text, and its limits. A
/// plaintext `password` is not kept: warren never holds one (the live
/// side notes it). A hash without `hashing_algorithm` is read as made
/// with the default, which an export before 3.6 did not use: the live
/// side knows the file's version and reads those itself.
fn read(item: &Json) -> Option<Result<Object, String>> {
    let object = || -> Result<Object, String> {
        let name = field(item, "name")?.to_string();
        let mut body = Table::with_capacity(3);
        match item.get("password_hash").and_then(Json::as_str) {
            None | Some("") => {}
            Some(hash) => {
                let mut p = Table::with_capacity(2);
                p.insert("hash".into(), Value::String(hash.to_string()));
                match item.get("hashing_algorithm").and_then(Json::as_str) {
                    None | Some(DEFAULT_ALGORITHM) => {}
                    Some(a) => {
                        p.insert("algorithm".into(), Value::String(a.to_string()));
                    }
                }
                body.insert("password".into(), Value::Table(p));
            }
        }
        let given: Vec<&str> = match item.get("tags") {
            None | Some(Json::Null) => Vec::new(),
            Some(Json::String(s)) => s.split(',').collect(),
            Some(Json::Array(a)) => {
                a.iter().map(|t| t.as_str().ok_or("its `tags` are not strings")).collect::<Result<_, _>>()?
            }
            Some(_) => return Err("its `tags` are neither a string nor an array".into()),
        };
        let tags: BTreeSet<&str> = given.into_iter().map(str::trim).filter(|t| !t.is_empty()).collect();
        body.insert("tags".into(), Value::List(tags.into_iter().map(|t| Value::String(t.into())).collect()));
        if let Some(Json::Object(l)) = item.get("limits")
            && !l.is_empty()
        {
            body.insert("limits".into(), Value::from(&Json::Object(l.clone())));
        }
        Ok(Object { id: vec![name], body })
    };
    Some(object())
}

/// The item as `warren export` writes it: RabbitMQ 3.10.8 and 4.0.5 export
/// and import a user's limits here.
fn write(_: Option<&str>, o: &Object) -> Json {
    let (hash, algorithm) = hash_of(o);
    let limits = match o.body.get("limits") {
        Some(l @ Value::Table(_)) => Json::from(l),
        _ => json!({}),
    };
    json!({
        "name": o.id[0],
        "password_hash": hash,
        "hashing_algorithm": algorithm,
        "tags": tags(o),
        "limits": limits,
    })
}

/// The user's PUT, then one PUT per limit it gives: the broker keeps a
/// user's limits apart (`/api/user-limits/{name}/{limit}`), and its PUT
/// leaves them as they were. The user's: a password read from its
/// variable as `password` (the broker hashes it), else the hash; its tags
/// as RabbitMQ's text. A password still naming its variable is sent as
/// none: the caller refuses that first (`Refusal::PasswordUnset`). A
/// limit the object no longer gives is the caller's to remove: it is on
/// the broker, not in the object.
fn put(_: Option<&str>, o: &Object) -> Vec<Request> {
    let tags = tags(o).join(",");
    let body = match o.body.get("password") {
        Some(Value::String(p)) => json!({ "password": p, "tags": tags }),
        Some(Value::Table(t)) if t.contains_key("hash") => {
            let (hash, algorithm) = hash_of(o);
            json!({ "password_hash": hash, "hashing_algorithm": algorithm, "tags": tags })
        }
        _ => json!({ "password_hash": "", "tags": tags }),
    };
    let user = Request::new(delete(None, &o.id), body);
    std::iter::once(user).chain(super::limit_requests(o, "user-limits")).collect()
}

fn delete(_: Option<&str>, id: &[String]) -> Vec<String> {
    vec!["users".into(), id[0].clone()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(password: Password) -> User {
        let limits = Some([("max-connections".to_string(), 10)].into_iter().collect());
        User { name: "app".into(), password, tags: ["management".to_string()].into(), limits }
    }

    const HASH: &str = "ljAfhB1nIJOvSDForEpdiyGk3/fjTsHjP5loG6Bsot+hXmrC";

    fn each_password() -> [Password; 4] {
        [
            Password::None,
            Password::Env("APP_PASSWORD".into()),
            Password::Hash { hash: HASH.into(), algorithm: None },
            Password::Hash { hash: HASH.into(), algorithm: Some("rabbit_password_hashing_sha512".into()) },
        ]
    }

    #[test]
    fn the_typed_view_and_the_object_are_one_another() {
        for p in each_password() {
            let u = app(p);
            let o = object(&u);
            assert_eq!(user("app", &o.body), Some(u.clone()));
            assert_eq!(KIND.with_defaults(o.body.clone()), o.body, "every attribute given");
            let a = KIND.attribute("password").unwrap();
            assert!(o.body.get("password").is_none_or(|v| a.ty.admits(v)), "{:?}", u.password);
        }
        let bare = User { limits: None, tags: BTreeSet::new(), ..app(Password::None) };
        assert_eq!(user("app", &KIND.with_defaults(object(&bare).body)), Some(bare));
    }

    #[test]
    fn a_definitions_item_reads_back_what_is_written_and_puts_at_the_users_path() {
        for p in each_password() {
            let o = object(&app(p.clone()));
            let item = (KIND.write)(None, &o);
            let back = (KIND.read)(&item).unwrap().unwrap();
            // A password from a variable is written as none, never its name.
            let expected = if matches!(p, Password::Env(_)) { object(&app(Password::None)) } else { o.clone() };
            assert_eq!(back, expected, "{p:?}");
        }
        let o = object(&app(Password::Hash { hash: HASH.into(), algorithm: None }));
        let [r, limit] = <[Request; 2]>::try_from((KIND.put)(None, &o)).unwrap();
        assert_eq!(r.path, ["users", "app"]);
        assert_eq!(
            r.body,
            json!({ "password_hash": HASH, "hashing_algorithm": DEFAULT_ALGORITHM, "tags": "management" })
        );
        assert_eq!(r.part, None);
        assert_eq!(limit.path, ["user-limits", "app", "max-connections"]);
        assert_eq!(limit.body, json!({ "value": 10 }));
        assert_eq!(limit.part.as_deref(), Some("limit max-connections"));
        let mut read_from_env = object(&app(Password::Env("APP_PASSWORD".into())));
        read_from_env.body.insert("password".into(), Value::String("s3cret".into()));
        assert_eq!((KIND.put)(None, &read_from_env)[0].body, json!({ "password": "s3cret", "tags": "management" }));
        let text = json!({ "name": "t", "password_hash": "", "tags": "administrator, monitoring", "limits": {} });
        let read = (KIND.read)(&text).unwrap().unwrap();
        let tags = ["administrator".to_string(), "monitoring".to_string()].into();
        assert_eq!(
            user("t", &read.body),
            Some(User { name: "t".into(), password: Password::None, tags, limits: None })
        );
        assert!((KIND.read)(&json!({ "password_hash": "" })).unwrap().is_err());
    }

    /// A user's key says and sorts as `ObjectKey::User` did before users
    /// were a kind's objects: plans, records and messages are unchanged.
    #[test]
    fn a_user_s_key_says_and_sorts_as_the_old_key_did() {
        use crate::model::ObjectKey;
        let binding = ObjectKey::Binding {
            vhost: "v".into(),
            binding: crate::model::Binding {
                source: "x".into(),
                destination: "q".into(),
                destination_kind: crate::model::DestinationKind::Queue,
                routing_key: String::new(),
                arguments: Table::new(),
            },
        };
        let policy = crate::model::kinds::policies::key("v", "p");
        let permission = crate::model::kinds::permissions::key("a", "a");
        let other = ObjectKey::Object {
            vhost: None,
            name: super::super::Name { kind: &super::super::global_parameters::KIND, id: vec!["a".into()] },
        };
        for name in ["app", "a \"quoted\" name", "ünïcode\\"] {
            let k = key(name);
            assert_eq!(k.to_string(), format!("user \"{name}\""));
            assert_eq!((k.kind(), k.name(), k.vhost()), ("user", name.to_string(), None));
            assert_eq!(k.clone().in_vhost("w"), k);
            assert_eq!(name_of(&k), Some(name));
            assert!(binding < k && policy < k && k < permission && k < other, "{k}");
        }
        assert!(key("a") < key("b"));
        assert_eq!(name_of(&permission), None);
    }

    #[test]
    fn a_hash_that_is_not_base64_and_a_variable_that_is_no_name_are_found() {
        let found =
            |p: Password| (KIND.check.unwrap())(&object(&app(p))).into_iter().map(|f| f.message).collect::<Vec<_>>();
        assert!(each_password().into_iter().all(|p| found(p).is_empty()));
        assert_eq!(
            found(Password::Env("APP-PASSWORD".into())),
            ["\"APP-PASSWORD\" is not an environment variable name"]
        );
        let bad = Password::Hash { hash: "not base64!".into(), algorithm: None };
        assert_eq!(found(bad), ["the `password_hash` of user \"app\" is not base64"]);
    }
}
