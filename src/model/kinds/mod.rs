//! Object kinds declared in one file each: what a kind is (its identity,
//! its attributes and which of them are immutable or secret, its broker
//! calls and its definitions form, its docs entry), and the list of them.
//!
//! The planner, the renderers, import and export, drift and ownership are
//! generic over [`Kind`]: adding a kind is its own file and a line in
//! [`KINDS`]. A kind lives in the model, as a declaration over the model's
//! values, so that every layer (the broker included) reads the same one.
//! The kinds warren had before this seam (exchanges, queues, bindings)
//! still have their own types, and move onto it one at a time
//! (docs/development.md, "Moving an old kind onto the seam"); vhost
//! settings are declared ([`vhosts`]) but still kept in `Vhost::settings`,
//! not in [`KINDS`]; policies
//! and operator policies have moved, and are in [`KINDS`]; users are in
//! it too, their objects among the topology's broker-wide ones
//! (`Topology::users` gives them typed), and permissions, their objects
//! among each vhost's (`Vhost::permissions` gives them typed).

pub mod bindings;
pub mod exchanges;
mod federation_upstream_sets;
mod federation_upstreams;
mod global_parameters;
pub mod operator_policies;
mod parameter;
pub mod permissions;
pub mod policies;
pub mod queues;
mod shovels;
mod topic_permissions;
pub mod users;
pub mod vhosts;

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value as Json;

use super::value::{Table, Value};

/// Every kind declared in this folder, in the order plans list them.
pub static KINDS: &[&Kind] = &[
    &policies::KIND,
    &operator_policies::KIND,
    &topic_permissions::KIND,
    &shovels::KIND,
    &federation_upstreams::KIND,
    &federation_upstream_sets::KIND,
    &global_parameters::KIND,
    // Last: a user's place in plans is its key's rank, before the other
    // broker-wide kinds', and import writes users first. Their objects are
    // the topology's broker-wide ones, compared by `diff/users.rs`.
    &users::KIND,
    // Their place in plans is their key's rank (after users), as is
    // import's; they are compared by `diff/users.rs`, typed.
    &permissions::KIND,
];

/// The kind whose TOML table (and inventory group) is `table`.
pub fn by_table(table: &str) -> Option<&'static Kind> {
    KINDS.iter().copied().find(|k| k.table == table)
}

/// One kind of object, as one file declares it.
pub struct Kind {
    /// As plans and diagnostics say it: `topic permission`.
    pub name: &'static str,
    /// The TOML table of a topology file, and the inventory's group: `topic_permissions`.
    pub table: &'static str,
    pub scope: Scope,
    /// The attributes whose values name one object; the others are its body.
    pub identity: &'static [Attribute],
    pub attributes: &'static [Attribute],
    /// What the kind is, for docs/format.md.
    pub about: &'static str,
    /// The first RabbitMQ version that has the kind, as `(major, minor)`.
    pub since: (u32, u32),
    /// The plugin the broker needs for it, if any.
    pub plugin: Option<&'static str>,
    /// The list of a definitions export that holds the kind.
    pub definitions: &'static str,
    /// The management API path that lists every object of the kind in the
    /// form of that list's items, when a vhost's export does not hold them.
    pub listing: Option<&'static str>,
    /// Whether `warren import` writes the broker's objects of the kind into
    /// files: not when they are one broker's own identity (its cluster
    /// name), which files taken to another broker would overwrite there.
    pub portable: bool,
    /// What deleting one loses, when that needs --allow-destroy (a shovel's
    /// messages in flight, say); `None` when nothing is lost.
    pub destroy_loses: Option<&'static str>,
    /// One item of the definitions list: `None` when the item is not of
    /// this kind (a list may hold several), else the object or why not.
    pub read: fn(&Json) -> Option<Result<Object, String>>,
    /// The definitions item of an object in vhost `vhost`.
    pub write: fn(Option<&str>, &Object) -> Json,
    /// The management API requests that create or update an object, in
    /// the order they are sent: most kinds' one, a user's PUT and one per
    /// limit (the broker keeps a user's limits apart).
    pub put: fn(Option<&str>, &Object) -> Vec<Request>,
    /// The management API path that deletes an object.
    pub delete: fn(Option<&str>, &[String]) -> Vec<String>,
    /// What the broker refuses in an object that its attributes' types
    /// cannot say (the keys of a table attribute, checked by the model's
    /// tables): each finding an error at the attribute, or the
    /// key within a table attribute, that it names. `None` for most kinds.
    pub check: Option<fn(&Object) -> Vec<Finding>>,
    /// When a plan sets and deletes its objects.
    pub phase: Phase,
}

/// When a plan sets and deletes a kind's objects (the plan's phases of
/// the same names, `plan::Phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// With policies: after exchanges and before queues (a queue is then
    /// declared under what they set), deleted after bindings go.
    PutPolicy,
    /// After bindings and permissions, deleted before policies go.
    PutObject,
}

impl Kind {
    /// The attribute named `name`, in the identity or the body.
    pub fn attribute(&self, name: &str) -> Option<&'static Attribute> {
        self.identity.iter().chain(self.attributes).find(|a| a.name == name)
    }

    /// Whether a broker of version `(major, minor)` has the kind.
    pub fn on(&self, version: (u32, u32)) -> bool {
        version >= self.since
    }

    /// The attribute a topology file's key gives (`password_env` gives a
    /// [`Type::Password`] attribute), in the identity or the body.
    pub fn attribute_of_key(&self, key: &str) -> Option<&'static Attribute> {
        self.identity.iter().chain(self.attributes).find(|a| a.file_keys().contains(&key))
    }

    /// The attribute that is a table an overlay merges key by key, if any.
    pub fn table_attribute(&self) -> Option<&'static Attribute> {
        self.attributes.iter().find(|a| a.ty == Type::Table)
    }

    /// `body` with the default of each attribute it lacks, as the broker
    /// takes an absent one: a broker keeps a parameter as it was given, so
    /// that one given with defaults and one without compare equal only so.
    pub fn with_defaults(&self, mut body: Table) -> Table {
        for a in self.attributes {
            if let (Presence::Default(d), false) = (a.presence, body.contains_key(a.name)) {
                body.insert(a.name.to_string(), d.value());
            }
        }
        body
    }
}

impl PartialEq for Kind {
    fn eq(&self, other: &Self) -> bool {
        self.table == other.table
    }
}

impl Eq for Kind {}

impl PartialOrd for Kind {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Kind {
    fn cmp(&self, other: &Self) -> Ordering {
        self.table.cmp(other.table)
    }
}

impl std::hash::Hash for Kind {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.table.hash(state);
    }
}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.table)
    }
}

/// Where objects of a kind live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// In one vhost: a topology file declares them for each of its vhosts.
    Vhost,
    /// On the broker as a whole.
    Broker,
}

/// One attribute of a kind.
#[derive(Debug)]
pub struct Attribute {
    /// As the TOML file and the plan name it.
    pub name: &'static str,
    pub ty: Type,
    pub presence: Presence,
    /// A change needs the object deleted and made again.
    pub immutable: bool,
    /// Never printed: plans show a digest of it.
    pub secret: bool,
    pub about: &'static str,
}

impl Attribute {
    /// An attribute the object may leave out, kept out when it does.
    pub(super) const fn optional(name: &'static str, ty: Type, about: &'static str) -> Attribute {
        Attribute { name, ty, presence: Presence::Optional, immutable: false, secret: false, about }
    }

    /// An attribute whose absence means `default`.
    pub(super) const fn defaulted(name: &'static str, ty: Type, default: Fixed, about: &'static str) -> Attribute {
        Attribute { name, ty, presence: Presence::Default(default), immutable: false, secret: false, about }
    }

    /// An attribute every object gives.
    pub(super) const fn required(name: &'static str, ty: Type, about: &'static str) -> Attribute {
        Attribute { name, ty, presence: Presence::Required, immutable: false, secret: false, about }
    }

    /// The same attribute, secret: its value may carry a credential.
    pub(super) const fn secret(self) -> Attribute {
        Attribute { secret: true, ..self }
    }

    /// The keys of a topology file that give the attribute: its name, but
    /// for a [`Type::Password`] the three keys the files spell one with
    /// ([`PASSWORD_KEYS`]).
    pub fn file_keys(&'static self) -> &'static [&'static str] {
        match self.ty {
            Type::Password => &PASSWORD_KEYS,
            _ => std::slice::from_ref(&self.name),
        }
    }
}

/// The keys a topology file gives a [`Type::Password`] with, as RabbitMQ's
/// definitions name a user's: `password_env = "VARIABLE"` (the value
/// `{ env = "VARIABLE" }`), or `password_hash` with `hashing_algorithm`
/// when not the default (`{ hash = "…", algorithm = "…" }`). The first two
/// exclude each other.
pub const PASSWORD_KEYS: [&str; 3] = ["password_env", "password_hash", "hashing_algorithm"];

/// A [`Type::Password`] value as the files' keys spell it, in
/// [`PASSWORD_KEYS`] order: `[("password_env", "VARIABLE")]`, or the hash
/// and its algorithm when given. Nothing for a value of another shape (a
/// password read from its variable is never written).
pub fn password_keys(value: &Value) -> Vec<(&'static str, &str)> {
    if let Some(var) = env_var(value) {
        return vec![(PASSWORD_KEYS[0], var)];
    }
    let Value::Table(t) = value else { return Vec::new() };
    let Some(hash) = t.get("hash").and_then(Value::as_str) else { return Vec::new() };
    let algorithm = t.get("algorithm").and_then(Value::as_str).map(|a| (PASSWORD_KEYS[2], a));
    std::iter::once((PASSWORD_KEYS[1], hash)).chain(algorithm).collect()
}

/// What values an attribute takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    String,
    Integer,
    Boolean,
    /// A list of strings.
    Strings,
    /// One of these strings.
    OneOf(&'static [&'static str]),
    /// One of these strings, or an integer.
    OneOfOrInteger(&'static [&'static str]),
    /// A URI, or an array of URIs (the broker tries them in turn).
    Uris,
    /// A table of any values: an overlay merges it key by key, and its
    /// `remove = ["ATTRIBUTE.KEY"]` takes a key out.
    Table,
    /// Any value: a string, a number, a boolean, an array or a table.
    Any,
    /// A password, a secret that is not a URI: `{ env = "VARIABLE" }` (the
    /// files' secret, read when warren plans and applies), the password
    /// read from it (a string, held in memory only), or a RabbitMQ hash,
    /// `{ hash = "…", algorithm = "…" }` (the algorithm when not the
    /// default), which a file and an export may hold: it is no password.
    Password,
}

impl Type {
    /// As docs and diagnostics say it: `a string`.
    pub fn describe(self) -> String {
        match self {
            Type::String => "a string".into(),
            Type::Integer => "an integer".into(),
            Type::Boolean => "a boolean".into(),
            Type::Strings => "an array of strings".into(),
            Type::Any => "any value".into(),
            Type::Table => "a table".into(),
            Type::Uris => "a URI or an array of URIs".into(),
            Type::Password => "a password from `{ env = \"VARIABLE\" }`, or a password hash".into(),
            Type::OneOf(words) => format!("one of {}", quoted(words)),
            Type::OneOfOrInteger(words) => format!("one of {} or an integer", quoted(words)),
        }
    }

    /// Whether `value` is of this type.
    pub fn admits(self, value: &Value) -> bool {
        match (self, value) {
            (Type::String, Value::String(_)) | (Type::Integer, Value::Int(_)) | (Type::Boolean, Value::Bool(_)) => true,
            (Type::Strings, Value::List(items)) => items.iter().all(|i| matches!(i, Value::String(_))),
            (Type::OneOf(words) | Type::OneOfOrInteger(words), Value::String(s)) => words.contains(&s.as_str()),
            (Type::OneOfOrInteger(_), Value::Int(_)) | (Type::Uris, Value::String(_)) | (Type::Any, _) => true,
            (Type::Table, Value::Table(_)) => true,
            (Type::Uris, Value::List(items)) => items.iter().all(|i| matches!(i, Value::String(_))),
            (Type::Password, Value::String(_)) => true,
            (Type::Password, Value::Table(t)) => {
                env_var(value).is_some()
                    || (t.get("hash").is_some_and(|h| h.as_str().is_some())
                        && t.keys().all(|k| k == "hash" || k == "algorithm")
                        && t.get("algorithm").is_none_or(|a| a.as_str().is_some()))
            }
            _ => false,
        }
    }
}

fn quoted(words: &[&str]) -> String {
    words.iter().map(|w| format!("\"{w}\"")).collect::<Vec<_>>().join(", ")
}

/// Whether an attribute must be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    Required,
    Optional,
    /// Absent means this value, as the broker takes it.
    Default(Fixed),
}

/// A default value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fixed {
    Str(&'static str),
    Int(i64),
    Bool(bool),
    /// A list of strings: `Strings(&[])` for an empty one.
    Strings(&'static [&'static str]),
}

impl Fixed {
    pub fn value(self) -> Value {
        match self {
            Fixed::Str(s) => Value::String(s.to_string()),
            Fixed::Int(i) => Value::Int(i),
            Fixed::Bool(b) => Value::Bool(b),
            Fixed::Strings(items) => Value::List(items.iter().map(|s| Value::String(s.to_string())).collect()),
        }
    }
}

/// One object of a kind: the values of its identity, in the kind's order,
/// and its other attributes, defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    pub id: Vec<String>,
    pub body: Table,
}

impl Object {
    /// A string attribute of the body.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.body.get(name).and_then(Value::as_str)
    }
}

/// What a kind's [`Kind::check`] finds wrong in an object, placed by the
/// files' reader at what `path` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The attribute, and within a table attribute the key: `["definition", "max-age"]`.
    pub path: Vec<String>,
    /// Whether it is about the key itself, rather than its value.
    pub at_key: bool,
    /// The diagnostic's code: `operator-policy-key`.
    pub code: &'static str,
    pub message: String,
    pub label: Option<String>,
    pub help: String,
}

/// An object's name within its scope: its kind and identity.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name {
    pub kind: &'static Kind,
    pub id: Vec<String>,
}

impl Name {
    /// `topic permission (...) in vhost "v"`; the name alone for a broker-wide kind.
    pub fn at(&self, vhost: Option<&str>) -> String {
        match vhost {
            Some(v) => format!("{self} in vhost \"{v}\""),
            None => self.to_string(),
        }
    }
}

impl fmt::Display for Name {
    /// `topic permission (user "app", exchange "amq.topic")`; one part: `shovel "orders"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind.name;
        match self.id.as_slice() {
            // A policy's and a user's name as plans, records' messages and
            // the broker's action texts said it before it was a kind's
            // object: as exchanges' and queues' are, unescaped.
            [one] if self.kind == &policies::KIND || self.kind == &users::KIND => write!(f, "{kind} \"{one}\""),
            // A user's permissions as the old key and the broker's action
            // texts said them (`set permissions of "app" in vhost "/"`).
            [one] if self.kind == &permissions::KIND => write!(f, "permissions of \"{one}\""),
            [one] => write!(f, "{kind} \"{}\"", one.escape_debug()),
            parts => {
                let named: Vec<String> = (self.kind.identity.iter().zip(parts))
                    .map(|(a, v)| format!("{} \"{}\"", a.name, v.escape_debug()))
                    .collect();
                write!(f, "{kind} ({})", named.join(", "))
            }
        }
    }
}

/// A management API request: the path's segments (each percent-encoded by
/// the broker module) and the JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub path: Vec<String>,
    pub body: Json,
    /// What it sets of the object when it is not the object itself, as
    /// the broker's action texts say it: `limit max-connections` (then
    /// "set limit max-connections of user \"app\"").
    pub part: Option<String>,
}

impl Request {
    /// A request that sets the object itself.
    pub fn new(path: Vec<String>, body: Json) -> Request {
        Request { path, body, part: None }
    }
}

/// Objects of any kind in one scope, by name.
pub type Objects = std::collections::BTreeMap<Name, Table>;

/// The variable a secret's value comes from, when the files give it as
/// `{ env = "VARIABLE" }` and it has not been read yet.
pub fn env_var(value: &Value) -> Option<&str> {
    match value {
        Value::Table(t) if t.len() == 1 => t.get("env").and_then(Value::as_str),
        _ => None,
    }
}

/// The variables an attribute's value still names: itself, or the items
/// of an array (a URI each).
pub fn env_vars(value: &Value) -> Vec<&str> {
    match value {
        Value::List(items) => items.iter().filter_map(env_var).collect(),
        other => env_var(other).into_iter().collect(),
    }
}

/// The password of a URI: `amqp://user:PASSWORD@host`. Matched on the
/// text, not by parsing: a malformed URI (a bad port) still hides one.
static PASSWORD: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r#"([A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s"']*):[^@/?#\s"']+@"#).expect("a valid pattern")
});

/// Whether `text` holds a URI that carries a password (`amqp://user:secret@host`):
/// such a value belongs in the environment, not in a file.
pub fn has_password(text: &str) -> bool {
    PASSWORD.is_match(text)
}

/// `text` with the password of each URI in it masked as `***`: for what
/// warren shows of a secret, and for a broker's error that quotes one.
pub fn mask_passwords(text: &str) -> std::borrow::Cow<'_, str> {
    PASSWORD.replace_all(text, "$1:***@")
}

/// One PUT per limit of `o`'s `limits` table, at `{path}/{name}/{limit}`,
/// each said as `limit NAME` in the broker's action texts: the broker keeps
/// a user's and a vhost's limits apart from the object itself.
/// A definitions item of a named vhost object: its `fields` with its name
/// and vhost, as the export writes exchanges, queues and policies.
pub(super) fn named_item(vhost: Option<&str>, name: &str, mut fields: serde_json::Map<String, Json>) -> Json {
    fields.insert("name".into(), Json::from(name));
    fields.insert("vhost".into(), Json::from(vhost));
    Json::Object(fields)
}

pub(super) fn limit_requests(o: &Object, path: &str) -> Vec<Request> {
    let Some(Value::Table(limits)) = o.body.get("limits") else { return Vec::new() };
    let limit = |(limit, value): (&String, &Value)| Request {
        path: vec![path.into(), o.id[0].clone(), limit.clone()],
        body: serde_json::json!({ "value": Json::from(value) }),
        part: Some(format!("limit {limit}")),
    };
    limits.iter().map(limit).collect()
}

/// A definitions item's string field `key`, or why not.
pub fn field<'a>(item: &'a Json, key: &str) -> Result<&'a str, String> {
    item.get(key).and_then(Json::as_str).ok_or_else(|| format!("it has no string `{key}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_table_and_a_default_of_its_type() {
        let mut tables: Vec<&str> = KINDS.iter().map(|k| k.table).collect();
        tables.sort();
        tables.dedup();
        assert_eq!(tables.len(), KINDS.len(), "two kinds share a table");
        for k in KINDS {
            for a in k.identity.iter().chain(k.attributes) {
                if let Presence::Default(d) = a.presence {
                    assert!(a.ty.admits(&d.value()), "{}.{}: default not of its type", k.table, a.name);
                }
            }
            assert!(k.identity.iter().all(|a| a.ty == Type::String && !a.secret), "{}: identity", k.table);
        }
    }
}
