//! Permissions: what a user may configure, write and read in one vhost,
//! each a regular expression on the names of the vhost's exchanges and
//! queues, set at `/api/permissions/{vhost}/{user}`.
//!
//! A kind warren had before the seam, declared here beside the old type
//! ([`Permission`]): [`permission`] and [`object`] are the typed view both
//! ways. It is in [`super::KINDS`], and a vhost keeps its permissions in
//! `Vhost::objects` (`Vhost::permissions` gives them typed); the files'
//! reader and docs leave permissions to their own code (`read_apart`,
//! `documented_apart`), the diff to `diff/users.rs`, the in-memory
//! broker to its own state.

use std::collections::BTreeMap;

use serde_json::{Value as Json, json};

use super::{Attribute, Finding, Kind, Object, Phase, Request, Scope, Type, field};
use crate::model::{Permission, Table, Value, Vhost};

pub static KIND: Kind = Kind {
    name: "permission",
    table: "permissions",
    scope: Scope::Vhost,
    identity: &[Attribute { immutable: true, ..Attribute::required("user", Type::String, "the user they are for") }],
    attributes: &[
        Attribute::required(
            "configure",
            Type::String,
            "a regular expression on the names of the exchanges and queues the user may declare and delete",
        ),
        Attribute::required(
            "write",
            Type::String,
            "a regular expression on the names of the exchanges the user may publish to and bind from",
        ),
        Attribute::required(
            "read",
            Type::String,
            "a regular expression on the names of the queues the user may consume from and bind to, \
             and of the exchanges it may bind from",
        ),
    ],
    about: "What a user may configure, write and read in the vhost: each a regular expression on names, \
            `\"^$\"` for nothing and `\".*\"` for everything.",
    since: (3, 0),
    plugin: None,
    definitions: "permissions",
    listing: None,
    portable: true,
    // Deleting them takes the user's access to the vhost: the lockout
    // guards say when that is warren's own.
    destroy_loses: None,
    read,
    write,
    put,
    delete,
    check: Some(check),
    phase: Phase::PutObject,
};

/// The three expressions, in the order the broker and the files give them.
const EXPRESSIONS: [&str; 3] = ["configure", "write", "read"];

/// What the broker refuses in a permission that its attributes' types
/// cannot say: an expression that is not a regular expression, each a
/// finding at its attribute. RabbitMQ's are PCRE's (Erlang's `re`), which
/// takes what Rust's `regex` does not (look-around, back-references,
/// possessive repetition): only the mistakes both refuse are found, an
/// unclosed or unopened group or class, a trailing backslash, a range or a
/// count out of order.
pub fn check(o: &Object) -> Vec<Finding> {
    use regex_syntax::ast::{ErrorKind, parse::Parser};
    let mut out = Vec::new();
    for key in EXPRESSIONS {
        let Some(expression) = o.text(key) else { continue };
        let Err(e) = Parser::new().parse(expression) else { continue };
        let refused = matches!(
            e.kind(),
            ErrorKind::GroupUnclosed
                | ErrorKind::GroupUnopened
                | ErrorKind::ClassUnclosed
                | ErrorKind::EscapeUnexpectedEof
                | ErrorKind::ClassRangeInvalid
                | ErrorKind::RepetitionCountInvalid
        );
        if refused {
            out.push(Finding {
                path: vec![key.to_string()],
                at_key: false,
                code: "bad-value",
                message: format!(
                    "the `{key}` expression of permissions of \"{}\" is not a regular expression: {}",
                    o.id[0],
                    e.kind()
                ),
                label: None,
                help: "RabbitMQ refuses it; write a regular expression over names, e.g. `\"^orders\\\\.\"`, \
                       `\"^$\"` for none"
                    .into(),
            });
        }
    }
    out
}

/// The typed view of an object: `None` when its attributes are not a
/// permission's (a file or a broker checked them first).
pub fn permission(user: &str, body: &Table) -> Option<Permission> {
    let text = |k: &str| body.get(k)?.as_str().map(str::to_string);
    Some(Permission {
        user: user.to_string(),
        configure: text("configure")?,
        write: text("write")?,
        read: text("read")?,
    })
}

/// The object of a typed permission: the inverse of [`permission`].
pub fn object(p: &Permission) -> Object {
    let values = [&p.configure, &p.write, &p.read].map(|e| Value::String(e.clone()));
    let body = EXPRESSIONS.iter().map(|k| k.to_string()).zip(values).collect();
    Object { id: vec![p.user.clone()], body }
}

/// The typed view of the permissions among `objects` (a vhost's), by user.
pub fn typed(objects: &super::Objects) -> BTreeMap<String, Permission> {
    let of_kind = objects.iter().filter(|(n, _)| n.kind == &KIND);
    of_kind.filter_map(|(n, body)| permission(&n.id[0], body)).map(|p| (p.user.clone(), p)).collect()
}

/// A vhost keeps its users' permissions as its objects of this kind
/// (`Vhost::objects`); these read and write them typed.
impl Vhost {
    /// Its permissions, typed, by user.
    pub fn permissions(&self) -> BTreeMap<String, Permission> {
        typed(&self.objects)
    }

    /// The users it gives permissions, in order.
    pub fn permission_users(&self) -> impl Iterator<Item = &str> {
        self.objects.keys().filter(|n| n.kind == &KIND).map(|n| n.id[0].as_str())
    }

    /// The permissions of user `user`, typed.
    pub fn permission(&self, user: &str) -> Option<Permission> {
        permission(user, self.objects.get(&name(user))?)
    }

    /// Whether it gives user `user` permissions.
    pub fn has_permission(&self, user: &str) -> bool {
        self.objects.contains_key(&name(user))
    }

    /// Sets `p` as its kind's object: whether it replaced the user's.
    pub fn set_permission(&mut self, p: &Permission) -> bool {
        self.objects.insert(name(&p.user), object(p).body).is_some()
    }

    /// Takes the permissions of user `user` out: whether it had some.
    pub fn remove_permission(&mut self, user: &str) -> bool {
        self.objects.remove(&name(user)).is_some()
    }

    /// Keeps only the permissions of the users `keep` takes.
    pub fn retain_permissions(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.objects.retain(|n, _| n.kind != &KIND || keep(&n.id[0]));
    }
}

/// The name, among a vhost's objects, of the permissions of user `user`.
pub fn name(user: &str) -> super::Name {
    super::Name { kind: &KIND, id: vec![user.to_string()] }
}

/// The key of the permissions of user `user` in vhost `vhost`.
pub fn key(vhost: &str, user: &str) -> crate::model::ObjectKey {
    crate::model::ObjectKey::Object { vhost: Some(vhost.to_string()), name: self::name(user) }
}

/// The vhost and user of the permissions `key` names, if it names some.
pub fn name_of(key: &crate::model::ObjectKey) -> Option<(&str, &str)> {
    match key {
        crate::model::ObjectKey::Object { vhost: Some(vhost), name } if name.kind == &KIND => {
            Some((vhost, &name.id[0]))
        }
        _ => None,
    }
}

/// A definitions item (or one of the permission listing's): its user and
/// its three expressions, each a string.
fn read(item: &Json) -> Option<Result<Object, String>> {
    let object = || -> Result<Object, String> {
        let id = vec![field(item, "user")?.to_string()];
        let body = EXPRESSIONS.iter().map(|k| Ok((k.to_string(), Value::String(field(item, k)?.to_string()))));
        Ok(Object { id, body: body.collect::<Result<_, String>>()? })
    };
    Some(object())
}

fn write(vhost: Option<&str>, o: &Object) -> Json {
    json!({
        "user": o.id[0],
        "vhost": vhost,
        "configure": o.text("configure"),
        "write": o.text("write"),
        "read": o.text("read"),
    })
}

fn put(vhost: Option<&str>, o: &Object) -> Vec<Request> {
    let body = json!({ "configure": o.text("configure"), "write": o.text("write"), "read": o.text("read") });
    vec![Request::new(delete(vhost, &o.id), body)]
}

fn delete(vhost: Option<&str>, id: &[String]) -> Vec<String> {
    vec!["permissions".into(), vhost.unwrap_or_default().into(), id[0].clone()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app() -> Permission {
        Permission { user: "app".into(), configure: "^$".into(), write: "^orders\\.".into(), read: ".*".into() }
    }

    #[test]
    fn the_typed_view_and_the_object_are_one_another() {
        let o = object(&app());
        assert_eq!(o.id, ["app"]);
        assert_eq!(permission("app", &o.body), Some(app()));
        assert_eq!(KIND.with_defaults(o.body.clone()), o.body, "every attribute given");
        for a in KIND.attributes {
            assert!(o.body.get(a.name).is_some_and(|v| a.ty.admits(v)), "{}", a.name);
        }
        let mut missing = o.body.clone();
        missing.remove("read");
        assert_eq!(permission("app", &missing), None);
    }

    #[test]
    fn a_definitions_item_reads_back_what_is_written_and_puts_at_the_permissions_path() {
        let o = object(&app());
        let item = (KIND.write)(Some("orders"), &o);
        assert_eq!(
            item,
            json!({ "user": "app", "vhost": "orders", "configure": "^$", "write": "^orders\\.", "read": ".*" })
        );
        assert_eq!((KIND.read)(&item).unwrap().unwrap(), o);
        let [r] = <[Request; 1]>::try_from((KIND.put)(Some("orders"), &o)).unwrap();
        assert_eq!(r.path, ["permissions", "orders", "app"]);
        assert_eq!(r.body, json!({ "configure": "^$", "write": "^orders\\.", "read": ".*" }));
        assert_eq!(r.part, None);
        assert_eq!((KIND.delete)(Some("orders"), &o.id), ["permissions", "orders", "app"]);
        let no_read = json!({ "user": "app", "vhost": "orders", "configure": "", "write": "" });
        assert_eq!((KIND.read)(&no_read).unwrap(), Err("it has no string `read`".to_string()));
    }

    /// A vhost's permissions are its objects of their kind, one store with
    /// its policies and the other kinds', read and written typed.
    #[test]
    fn permissions_are_kept_as_the_vhost_s_objects_and_read_typed() {
        let mut v = Vhost::new("orders");
        v.set_policy(&crate::model::Policy {
            name: "p".into(),
            pattern: ".*".into(),
            apply_to: crate::model::ApplyTo::Queues,
            priority: 0,
            definition: [("max-length".to_string(), Value::Int(1))].into_iter().collect(),
        });
        let reader = Permission { user: "b".into(), ..app() };
        assert!(!v.set_permission(&reader));
        assert!(!v.set_permission(&Permission { read: "^$".into(), ..app() }));
        assert!(v.set_permission(&app()));
        assert_eq!(v.objects.len(), 3, "two users' permissions beside the policy");
        assert!(v.objects.contains_key(&name("app")) && v.objects.contains_key(&name("b")));
        assert_eq!(v.permission_users().collect::<Vec<_>>(), ["app", "b"]);
        assert_eq!(v.permission("app"), Some(app()));
        assert_eq!(v.permissions().into_values().collect::<Vec<_>>(), [app(), reader]);
        let mut t = crate::model::Topology::default();
        t.vhosts.insert("orders".into(), v.clone());
        assert!(v.has_permission("b") && t.has(&key("orders", "b")) && !v.has_permission("c"));
        assert!(!t.has(&key("/", "b")));
        v.retain_permissions(|u| u != "b");
        assert!(v.remove_permission("app") && !v.remove_permission("app"));
        assert!(v.permissions().is_empty() && v.policy("p").is_some());
    }

    /// A permission's key says and sorts as `ObjectKey::Permission` did
    /// before permissions were a kind's objects: plans, records and
    /// messages are unchanged.
    #[test]
    fn a_permission_s_key_says_and_sorts_as_the_old_key_did() {
        use crate::model::ObjectKey;
        let policy = crate::model::kinds::policies::key("z", "p");
        let user = crate::model::kinds::users::key("z");
        let topic = ObjectKey::Object {
            vhost: Some("a".into()),
            name: super::super::Name { kind: &super::super::topic_permissions::KIND, id: vec!["a".into(), "x".into()] },
        };
        let global = ObjectKey::Object {
            vhost: None,
            name: super::super::Name { kind: &super::super::global_parameters::KIND, id: vec!["a".into()] },
        };
        for user_name in ["app", "a \"quoted\" name", "ünïcode\\"] {
            let k = key("/", user_name);
            assert_eq!(k.to_string(), format!("permissions of \"{user_name}\" in vhost \"/\""));
            assert_eq!((k.kind(), k.name(), k.vhost()), ("permissions", user_name.to_string(), Some("/")));
            assert_eq!(k.clone().in_vhost("w"), key("w", user_name));
            assert_eq!(name_of(&k), Some(("/", user_name)));
            assert!(policy < k && user < k && k < topic && k < global, "{k}");
        }
        // By vhost, then user, as the old key's fields.
        assert!(key("a", "z") < key("b", "a") && key("a", "a") < key("a", "b"));
        assert_eq!(name_of(&user), None);
        assert_eq!(name_of(&topic), None);
    }

    #[test]
    fn an_expression_both_regex_engines_refuse_is_found_and_one_pcre_takes_is_not() {
        let found = |configure: &str| {
            let p = Permission { configure: configure.into(), ..app() };
            (KIND.check.unwrap())(&object(&p)).into_iter().map(|f| (f.path, f.message)).collect::<Vec<_>>()
        };
        for ok in ["^$", ".*", "^orders\\.", "^(?!amq\\.).*", "^(a)\\1$", "a*+", "a{", "[]x]", "(?<n>x)"] {
            assert_eq!(found(ok), [], "{ok}");
        }
        for bad in ["^(orders", "orders)", "[a-", "orders\\", "[z-a]", "a{5,2}"] {
            let [(path, message)] = <[_; 1]>::try_from(found(bad)).unwrap();
            assert_eq!(path, ["configure"]);
            assert!(
                message
                    .starts_with("the `configure` expression of permissions of \"app\" is not a regular expression: "),
                "{message}"
            );
        }
    }
}
