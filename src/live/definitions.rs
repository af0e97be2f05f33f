//! The shape of a RabbitMQ definitions file, 3.10 to 4.x (https://www.rabbitmq.com/docs/definitions,
//! `rabbit_definitions`), read leniently: unknown fields are ignored, optional fields may be
//! absent or `null`. Only a file whose structure is wrong (a list that is not
//! a list, an item without a name) is an error.

use serde::de::{Deserializer, IgnoredAny};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value as Json};

use crate::diagnostic::Diagnostic;
use crate::model::{INVENTORY_PARAMETER, Table};

/// A whole export: cluster-wide (`GET /api/definitions`, `rabbitmqctl
/// export_definitions`) or of one vhost (`GET /api/definitions/{vhost}`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Definitions {
    /// 4.x: `"cluster"` or `"single_virtual_host"`.
    pub rabbitmq_definition_format: Option<String>,
    /// 4.x single-vhost exports: the vhost the file was taken from.
    pub original_vhost_name: Option<String>,
    /// The RabbitMQ version that wrote the file: `rabbitmq_version` (3.8+),
    /// else `rabbit_version` (every version), as the broker's import reads it.
    pub rabbitmq_version: Option<String>,
    pub rabbit_version: Option<String>,
    #[serde(deserialize_with = "nullable")]
    pub users: Vec<UserDef>,
    /// `None` when the file has no `vhosts` list at all.
    pub vhosts: Option<Vec<VhostDef>>,
    #[serde(deserialize_with = "nullable")]
    pub permissions: Vec<PermissionDef>,
    /// Read by the kind that holds them (`model::kinds`).
    #[serde(deserialize_with = "nullable")]
    pub topic_permissions: Vec<Json>,
    #[serde(deserialize_with = "nullable")]
    pub parameters: Vec<ParameterDef>,
    #[serde(deserialize_with = "nullable")]
    pub global_parameters: Vec<GlobalParameterDef>,
    #[serde(deserialize_with = "nullable")]
    pub policies: Vec<PolicyDef>,
    #[serde(deserialize_with = "nullable")]
    pub queues: Vec<QueueDef>,
    #[serde(deserialize_with = "nullable")]
    pub exchanges: Vec<ExchangeDef>,
    #[serde(deserialize_with = "nullable")]
    pub bindings: Vec<BindingDef>,
    // 4.x single-vhost exports carry the vhost's own settings at the top (see
    // `VhostFields`). They are fields here, not a `#[serde(flatten)]`: that
    // would make serde buffer the whole file as a tree before reading it.
    pub description: Option<String>,
    pub default_queue_type: Option<String>,
    pub defaultqueuetype: Option<String>,
    pub metadata: Option<VhostMetadata>,
    pub limits: Option<Json>,
    pub tags: Option<Json>,
    pub protected_from_deletion: Option<bool>,
}

impl Definitions {
    /// The RabbitMQ version that wrote the file, if it says.
    pub(crate) fn version(&self) -> Option<&str> {
        self.rabbitmq_version.as_deref().or(self.rabbit_version.as_deref())
    }

    /// The vhost settings at the top of a single-vhost export, taken out.
    pub(crate) fn take_vhost_settings(&mut self) -> VhostFields {
        VhostFields {
            description: self.description.take(),
            default_queue_type: self.default_queue_type.take(),
            defaultqueuetype: self.defaultqueuetype.take(),
            metadata: self.metadata.take(),
            limits: self.limits.take(),
            tags: self.tags.take(),
            protected_from_deletion: self.protected_from_deletion.take(),
        }
    }
}

/// The settings of a vhost, as a `vhosts` entry or the top of a 4.x
/// single-vhost export gives them, checked in shape by serde (its errors
/// name the file); serialised back with the vhost's name, it is the item
/// that the vhost settings' kind reads (`live/vhosts.rs`).
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub(crate) struct VhostFields {
    pub description: Option<String>,
    pub default_queue_type: Option<String>,
    /// 3.10's `PUT /api/vhosts` key, which some hand-written files copy.
    pub defaultqueuetype: Option<String>,
    pub metadata: Option<VhostMetadata>,
    /// 4.x: `{"max-queues": 10}`; older exports write `[]` for none.
    pub limits: Option<Json>,
    pub tags: Option<Json>,
    /// 4.1+.
    pub protected_from_deletion: Option<bool>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct VhostDef {
    pub name: String,
    #[serde(flatten)]
    pub fields: VhostFields,
}

/// 3.13+ keeps description, tags and default queue type here.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default)]
pub(crate) struct VhostMetadata {
    pub description: Option<String>,
    pub default_queue_type: Option<String>,
    pub tags: Option<Json>,
    pub protected_from_deletion: Option<bool>,
}

/// A `users` item, checked in shape by serde (its errors name the item);
/// serialised back, it is the item that the users' kind reads
/// (`live/users.rs`), less a plaintext password.
#[derive(Debug, Deserialize, Serialize)]
pub(crate) struct UserDef {
    pub name: String,
    #[serde(default)]
    pub password_hash: Option<String>,
    /// A plaintext password (accepted by the broker's import). Only its
    /// presence is kept: warren never holds a plaintext password.
    #[serde(default, skip_serializing)]
    pub password: Option<IgnoredAny>,
    #[serde(default)]
    pub hashing_algorithm: Option<String>,
    #[serde(default)]
    pub tags: Option<Tags>,
    #[serde(default)]
    pub limits: Option<Json>,
}

/// User tags: a list, or (before 3.9 and in hand-written files) one
/// comma-separated string.
#[derive(Debug, Deserialize, Serialize)]
#[serde(untagged)]
pub(crate) enum Tags {
    List(Vec<String>),
    Text(String),
}

#[derive(Debug, Deserialize, Serialize)]
pub(crate) struct PermissionDef {
    pub user: String,
    #[serde(default)]
    pub vhost: Option<String>,
    pub configure: String,
    pub write: String,
    pub read: String,
}

/// A vhost-scoped runtime parameter: operator policies, vhost limits,
/// shovels, federation upstreams.
#[derive(Debug, Deserialize)]
pub(crate) struct ParameterDef {
    #[serde(default)]
    pub vhost: Option<String>,
    pub component: String,
    pub name: String,
    #[serde(default)]
    pub value: Json,
}

/// A global parameter. warren's inventory is kept as its text, to be read
/// straight into its keys: parsed as a JSON tree first, it took a sixth of
/// the instructions of a fleet's plan, which reads one inventory per broker.
#[derive(Debug, Deserialize)]
#[serde(from = "ListedGlobalParameter")]
pub(crate) struct GlobalParameterDef {
    pub name: String,
    /// Its value, `Null` for the inventory's (see `inventory`).
    pub value: Json,
    /// The value of warren's inventory (`INVENTORY_PARAMETER`), as text.
    pub inventory: Option<Box<RawValue>>,
}

/// A global parameter as exports and the broker give it.
#[derive(Deserialize)]
struct ListedGlobalParameter {
    name: String,
    value: Option<Box<RawValue>>,
}

impl From<ListedGlobalParameter> for GlobalParameterDef {
    fn from(listed: ListedGlobalParameter) -> Self {
        let ListedGlobalParameter { name, value } = listed;
        if name == INVENTORY_PARAMETER {
            return GlobalParameterDef { name, value: Json::Null, inventory: value };
        }
        // Text that parsed as a raw value is JSON.
        let value = value.and_then(|v| serde_json::from_str(v.get()).ok()).unwrap_or(Json::Null);
        GlobalParameterDef { name, value, inventory: None }
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct PolicyDef {
    #[serde(default)]
    pub vhost: Option<String>,
    pub name: String,
    #[serde(flatten)]
    pub body: PolicyBody,
}

/// What a policy has beside its name: the rest of a `policies` item, or the
/// `value` of an operator policy parameter.
#[derive(Debug, Deserialize)]
pub(crate) struct PolicyBody {
    pub pattern: String,
    #[serde(default, rename = "apply-to")]
    pub apply_to: Option<String>,
    #[serde(default, deserialize_with = "integer")]
    pub priority: Option<i64>,
    pub definition: Map<String, Json>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct QueueDef {
    pub name: String,
    #[serde(default)]
    pub vhost: Option<String>,
    #[serde(default)]
    pub durable: Option<bool>,
    #[serde(default)]
    pub auto_delete: Option<bool>,
    #[serde(default, deserialize_with = "table")]
    pub arguments: Table,
    /// 3.13+ `rabbitmqctl` and streamed 4.2 exports: the queue's type.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ExchangeDef {
    pub name: String,
    #[serde(default)]
    pub vhost: Option<String>,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub durable: Option<bool>,
    #[serde(default)]
    pub auto_delete: Option<bool>,
    #[serde(default)]
    pub internal: Option<bool>,
    #[serde(default, deserialize_with = "table")]
    pub arguments: Table,
}

#[derive(Debug, Deserialize)]
pub(crate) struct BindingDef {
    pub source: String,
    #[serde(default)]
    pub vhost: Option<String>,
    pub destination: String,
    pub destination_type: DestinationType,
    #[serde(default, deserialize_with = "nullable")]
    pub routing_key: String,
    #[serde(default, deserialize_with = "table")]
    pub arguments: Table,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum DestinationType {
    Queue,
    Exchange,
}

/// `null` reads as the type's default (an empty list, map or string).
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A table, `null` read as empty, in no more room than its entries take:
/// serde's reader leaves room for four, and an export has a table of one
/// or two arguments for each queue and binding.
fn table<'de, D: Deserializer<'de>>(d: D) -> Result<Table, D::Error> {
    let read: Table = nullable(d)?;
    // Exactly: a vector's own growth, from empty, leaves room for four.
    let mut table = Table::with_capacity(read.len());
    table.extend(read);
    Ok(table)
}

/// An integer, also when written as an integral float (`10.0`).
fn integer<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    match crate::model::Value::from(&Json::Number(n.clone())).as_int() {
        Some(i) => Ok(Some(i)),
        None => Err(serde::de::Error::custom(format!("expected an integer, found {n}"))),
    }
}

/// Reads a definitions file; an error says what is wrong, at which line and
/// column, and in which item.
pub(crate) fn parse(json: &str, origin: &str) -> Result<Definitions, Diagnostic> {
    // The derived reader also takes a struct written as a list of its fields;
    // a definitions file is an object.
    if !json.trim_start().starts_with('{')
        && let Err(e) = serde_json::from_str::<std::collections::HashMap<String, IgnoredAny>>(json)
    {
        let mut d = shape_error(origin, String::new(), &e);
        d.message = d.message.replace("a map", "a definitions object");
        return Err(d);
    }
    // Tracking the path slows every file down; it is done again only to
    // explain an error.
    if let Ok(defs) = serde_json::from_str(json) {
        return Ok(defs);
    }
    let mut de = serde_json::Deserializer::from_str(json);
    let defs =
        serde_path_to_error::deserialize(&mut de).map_err(|e| shape_error(origin, e.path().to_string(), e.inner()))?;
    de.end().map_err(|e| shape_error(origin, String::new(), &e))?;
    Ok(defs)
}

pub(super) fn shape_error(origin: &str, path: String, e: &serde_json::Error) -> Diagnostic {
    let (line, column) = (e.line(), e.column());
    let full = e.to_string();
    let what = full.strip_suffix(&format!(" at line {line} column {column}")).unwrap_or(&full);
    let what = what.replace("struct Definitions", "a definitions object");
    let within = match path.as_str() {
        "" | "." => String::new(),
        p => format!(" (in `{p}`)"),
    };
    let help = if e.is_syntax() || e.is_eof() {
        "the file is not valid JSON; export it again with `rabbitmqctl export_definitions FILE` or `GET /api/definitions`"
    } else {
        "the file is JSON but not in the shape of a RabbitMQ definitions export (https://www.rabbitmq.com/docs/definitions); fix the item named above"
    };
    Diagnostic::error("definitions", format!("{origin}:{line}:{column}: {what}{within}")).help(help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_give_line_and_column() {
        let e = parse("{\n  \"queues\": [\n    {\"name\": \"q\",}\n  ]\n}", "defs.json").unwrap_err();
        assert_eq!(e.code, "definitions");
        assert!(e.message.starts_with("defs.json:3:"), "{}", e.message);
        assert!(e.help.unwrap().contains("not valid JSON"));
    }

    #[test]
    fn shape_errors_name_the_item() {
        let json = r#"{"queues": [{"name": "a"}, {"name": "b", "durable": "yes"}]}"#;
        let e = parse(json, "d.json").unwrap_err();
        assert!(e.message.contains("expected a boolean"), "{}", e.message);
        assert!(e.message.contains("(in `queues[1].durable`)"), "{}", e.message);
        assert!(e.message.starts_with("d.json:1:"), "{}", e.message);
    }

    #[test]
    fn a_missing_name_is_an_error() {
        let e = parse(r#"{"exchanges": [{"type": "topic"}]}"#, "d.json").unwrap_err();
        assert!(e.message.contains("missing field `name`"), "{}", e.message);
    }

    #[test]
    fn a_top_level_array_is_not_definitions() {
        let e = parse("[]", "d.json").unwrap_err();
        assert!(e.message.contains("a definitions object"), "{}", e.message);
    }

    #[test]
    fn trailing_text_is_an_error() {
        assert!(parse("{} {}", "d.json").is_err());
    }

    #[test]
    fn nulls_and_unknown_fields_are_accepted() {
        let json = r#"{"queues": null, "bindings": [{"source": "x", "vhost": "/",
            "destination": "q", "destination_type": "queue", "routing_key": null,
            "arguments": null, "properties_key": "~"}], "explanation": "4.x"}"#;
        let d = parse(json, "d.json").unwrap();
        assert!(d.queues.is_empty());
        assert_eq!(d.bindings[0].routing_key, "");
    }

    #[test]
    fn priority_may_be_an_integral_float() {
        let json = r#"{"policies": [{"vhost": "/", "name": "p", "pattern": ".*",
            "priority": 2.0, "definition": {}}]}"#;
        assert_eq!(parse(json, "d.json").unwrap().policies[0].body.priority, Some(2));
        let bad = r#"{"policies": [{"name": "p", "pattern": ".*", "priority": 1.5, "definition": {}}]}"#;
        assert!(parse(bad, "d.json").is_err());
    }

    #[test]
    fn tags_are_a_list_or_a_string() {
        let json = r#"{"users": [{"name": "a", "tags": ["x"]}, {"name": "b", "tags": "x,y"}]}"#;
        let d = parse(json, "d.json").unwrap();
        assert!(matches!(d.users[0].tags, Some(Tags::List(_))));
        assert!(matches!(d.users[1].tags, Some(Tags::Text(_))));
    }
}
