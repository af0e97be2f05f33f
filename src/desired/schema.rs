//! JSON Schemas of the topology format and of `warren.toml`, for editors
//! that complete and check TOML by schema (Taplo, Even Better TOML). Made
//! from the key lists the parser checks against and the tables of queue
//! arguments, policy keys and lint rules: a key the parser learns and this
//! does not describe panics here, and a test (docs/schema) fails.

use serde_json::{Value, json};

use super::kinds::{self as kind_keys, is_named};
use super::parse::{
    BINDING_KEYS, EXCHANGE_KEYS, EXCHANGE_TYPES, EXTERNAL_KEYS, HASHING_ALGORITHMS, LIMIT_KEYS, PERMISSION_KEYS,
    POLICY_KEYS, QUEUE_KEYS, TOP_KEYS, USER_KEYS, USER_LIMIT_KEYS, VHOST_KEYS,
};
use crate::lint::rules::{Level, RULES};
use crate::model::kinds::{self, Fixed, Kind, Presence, Type};
use crate::model::{ApplyTo, Expect, POLICY_KEYS as POLICY_DEFINITION_KEYS, QUEUE_ARGUMENTS, QueueType};

const DRAFT: &str = "http://json-schema.org/draft-07/schema#";

/// The schema of a topology file (and of an overlay file, which may also
/// say `rename_vhosts`).
pub fn topology() -> Value {
    let mut properties = serde_json::Map::new();
    for key in TOP_KEYS.iter() {
        properties.insert(key.to_string(), top(key));
    }
    properties.insert(
        "rename_vhosts".into(),
        json!({"type": "object", "description": "An overlay's new names for the base's vhosts.", "additionalProperties": {"type": "string"}}),
    );
    json!({
        "$schema": DRAFT,
        "title": "warren topology file",
        "description": "RabbitMQ topology as code: see docs/format.md.",
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    })
}

/// The schema of the project file, `warren.toml`.
pub fn project() -> Value {
    let levels: Vec<&str> = Level::NAMES.to_vec();
    let rules: serde_json::Map<String, Value> =
        RULES.iter().map(|r| (r.code.to_string(), json!({"enum": levels, "description": r.summary}))).collect();
    json!({
        "$schema": DRAFT,
        "title": "warren project file (warren.toml)",
        "type": "object",
        "properties": {
            "project": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$", "description": "The owner of what this project's applies create; plan and apply against a broker need it."},
                    "default_env": {"type": "string", "description": "The environment plan, apply and lint --live use when --env is not given; one of [environments]."},
                    "shapes": {"type": "array", "items": {"type": "string"}, "description": "Directories of shapes shared by many projects, relative to this file (docs/shapes.md)."},
                },
                "required": ["name"],
                "additionalProperties": false,
            },
            "environments": {
                "type": "object",
                "propertyNames": {"pattern": "^[A-Za-z0-9._-]{1,64}$"},
                "additionalProperties": {
                    "type": "object",
                    "properties": {
                        "url_env": {"type": "string", "description": "The variable holding the management API URL, credentials included."},
                        "amqp_url_env": {"type": "string", "description": "The variable holding the AMQP URL; by default the broker's own listener."},
                        "overlays": {"type": "array", "items": {"type": "string"}, "description": "Directories of TOML merged over the base, relative to the project."},
                    },
                    "required": ["url_env"],
                    "additionalProperties": false,
                },
            },
            "deploy": {
                "type": "object",
                "properties": {"stages": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}},
                "required": ["stages"],
                "additionalProperties": false,
            },
            "lint": {"type": "object", "properties": rules, "additionalProperties": false},
        },
        "additionalProperties": false,
    })
}

/// A table of named objects, each of `object`'s schema.
fn named(object: Value) -> Value {
    json!({"type": "object", "additionalProperties": object})
}

fn top(key: &str) -> Value {
    match key {
        "vhosts" => {
            json!({"type": "array", "items": {"type": "string"}, "description": "The vhosts this file's objects belong to."})
        }
        "vhost" => object(VHOST_KEYS, vhost_key),
        "exchanges" => named(object(EXCHANGE_KEYS, exchange_key)),
        "queues" => named(object(QUEUE_KEYS, queue_key)),
        "bindings" => json!({"type": "array", "items": object(BINDING_KEYS, binding_key)}),
        "policies" | "operator_policies" => named(object(POLICY_KEYS, policy_key)),
        "users" => named(object(USER_KEYS, user_key)),
        "permissions" => named(object(PERMISSION_KEYS, permission_key)),
        "services" => {
            let mut o = named(object(super::services::SERVICE_KEYS, service_key));
            o["description"] =
                json!("Services: who publishes and consumes what; their users' permissions are made from them.");
            o
        }
        "super_streams" => {
            let mut o = named(object(super::super_streams::SUPER_STREAM_KEYS, super_stream_key));
            o["description"] = json!(
                "Super streams (RabbitMQ 3.11+): each becomes its exchange, its partition streams and their bindings."
            );
            o
        }
        "external" => object(EXTERNAL_KEYS, |_| strings()),
        "removed" => {
            let mut o = object(super::removed::REMOVED_KEYS, |_| strings());
            o["description"] = json!(
                "Objects this project stops managing without deleting them: they leave its inventory and stay on the broker."
            );
            o
        }
        "moved" => {
            let exchanges = json!({"type": "object", "additionalProperties": {"type": "string"}, "description": "Each old exchange name, to its new one."});
            json!({"type": "object", "properties": {"exchanges": exchanges}, "additionalProperties": false,
                   "description": "Exchanges renamed: the old one is kept, bound to the new, until the entry is dropped."})
        }
        "shapes" => shapes(),
        "stamps" => {
            let each = json!({"description": "One use per entry: a list of tables of values, or a table of lists (every combination).",
                              "type": ["array", "object"]});
            json!({"type": "array", "description": "Uses of shapes: `shape` names one, the other keys are its parameters' values (docs/shapes.md).",
                   "items": {"type": "object", "properties": {"shape": {"type": "string"}, "for_each": each},
                             "required": ["shape"], "additionalProperties": true}})
        }
        other => match kinds::by_table(other) {
            Some(k) => kind(k),
            None => panic!("the schema does not describe top-level key `{other}`"),
        },
    }
}

/// `[shapes.NAME]`: parameters, and a body of the top-level tables whose
/// names and strings may hold `${parameter}` (so any value may be a
/// string there: a placeholder alone takes its value's type).
fn shapes() -> Value {
    let mut properties = serde_json::Map::new();
    properties.insert(
        "parameters".into(),
        json!({"type": "array", "items": {"type": "string"}, "description": "The parameters every stamp must give."}),
    );
    properties.insert(
        "defaults".into(),
        json!({"type": "object", "description": "Parameters with a value a stamp may leave out."}),
    );
    properties.insert("description".into(), json!({"type": "string"}));
    for key in super::parse::SHAPE_BODY_KEYS.iter() {
        properties.insert(
            key.to_string(),
            json!({"description": format!("`{key}` as at the top of a file, with ${{parameter}} placeholders")}),
        );
    }
    json!({"type": "object", "description": "Sets of objects defined once with parameters and stamped by [[stamps]] (docs/shapes.md).",
           "additionalProperties": {"type": "object", "properties": properties, "additionalProperties": false}})
}

/// The table of a kind of `model::kinds`, from its attributes.
fn kind(k: &Kind) -> Value {
    let keys = kind_keys::keys(k);
    let attribute = |name: &str| -> Value {
        let Some(a) = k.attribute_of_key(name) else { return lint_allow() };
        if a.ty == Type::Password {
            // One of the keys that spell a password (`password_env`, ...).
            return json!({"type": "string", "description": a.about});
        }
        let mut v = of_type(a.ty);
        v["description"] = json!(a.about);
        if let Presence::Default(d) = a.presence {
            v["default"] = match d {
                Fixed::Str(s) => json!(s),
                Fixed::Int(i) => json!(i),
                Fixed::Bool(b) => json!(b),
                Fixed::Strings(items) => json!(items),
            };
        }
        v
    };
    let properties: serde_json::Map<String, Value> = keys.iter().map(|n| (n.to_string(), attribute(n))).collect();
    let required: Vec<&str> =
        keys.iter().copied().filter(|n| k.attribute(n).is_some_and(|a| a.presence == Presence::Required)).collect();
    let object =
        json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false});
    let mut table = if is_named(k) { named(object) } else { json!({"type": "array", "items": object}) };
    table["description"] = json!(k.about);
    table
}

fn of_type(ty: Type) -> Value {
    match ty {
        Type::String => json!({"type": "string"}),
        Type::Integer => json!({"type": "integer"}),
        Type::Boolean => boolean(),
        Type::Strings => strings(),
        Type::OneOf(words) => json!({"enum": words}),
        Type::OneOfOrInteger(words) => json!({"anyOf": [{"enum": words}, {"type": "integer"}]}),
        Type::Any => json!({}),
        Type::Table => json!({"type": "object"}),
        Type::Uris => {
            let env = json!({"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"], "additionalProperties": false});
            let one = json!({"anyOf": [{"type": "string"}, env]});
            json!({"anyOf": [one.clone(), {"type": "array", "items": one}]})
        }
        Type::Password => {
            let env = json!({"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"], "additionalProperties": false});
            let text = json!({"type": "string"});
            let hash = json!({"type": "object", "properties": {"hash": text, "algorithm": text}, "required": ["hash"], "additionalProperties": false});
            json!({"anyOf": [env, hash]})
        }
    }
}

/// An object of exactly these keys, each described by `describe`.
fn object(keys: &[&str], describe: fn(&str) -> Value) -> Value {
    let properties: serde_json::Map<String, Value> = keys.iter().map(|k| (k.to_string(), describe(k))).collect();
    json!({"type": "object", "properties": properties, "additionalProperties": false})
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn boolean() -> Value {
    json!({"type": "boolean"})
}

fn lint_allow() -> Value {
    let codes: Vec<&str> = RULES.iter().map(|r| r.code).collect();
    json!({"type": "array", "items": {"enum": codes}, "description": "Lint rules allowed on this object (docs/lint.md)."})
}

fn queue_types() -> Value {
    let types: Vec<&str> = QueueType::ALL.iter().map(|t| t.as_str()).collect();
    json!({"enum": types})
}

/// A `limits` table of these names, each an integer of at least -1.
fn limits(keys: &[&str]) -> Value {
    let p: serde_json::Map<String, Value> =
        keys.iter().map(|k| (k.to_string(), json!({"type": "integer", "minimum": -1}))).collect();
    json!({"type": "object", "properties": p, "additionalProperties": false})
}

fn vhost_key(key: &str) -> Value {
    match key {
        "description" => json!({"type": "string"}),
        "default_queue_type" => queue_types(),
        "limits" => limits(LIMIT_KEYS),
        "tags" => strings(),
        "protected_from_deletion" => {
            json!({"type": "boolean", "description": "RabbitMQ 4.1 or later: the vhost cannot be deleted."})
        }
        other => panic!("the schema does not describe [vhost] key `{other}`"),
    }
}

fn exchange_key(key: &str) -> Value {
    match key {
        "type" => json!({"anyOf": [{"enum": EXCHANGE_TYPES}, {"type": "string", "pattern": "^x-"}]}),
        "durable" | "auto_delete" | "internal" => boolean(),
        "arguments" => json!({"type": "object"}),
        "lint_allow" => lint_allow(),
        other => panic!("the schema does not describe exchange key `{other}`"),
    }
}

fn queue_key(key: &str) -> Value {
    match key {
        "type" => queue_types(),
        "durable" | "auto_delete" => boolean(),
        "replaces" => json!({"type": "string", "description": "The live queue this one takes over by live migration."}),
        "arguments" => {
            let p: serde_json::Map<String, Value> =
                QUEUE_ARGUMENTS.iter().map(|a| (a.name.to_string(), expect(a.expect))).collect();
            json!({"type": "object", "properties": p})
        }
        "lint_allow" => lint_allow(),
        other => panic!("the schema does not describe queue key `{other}`"),
    }
}

fn super_stream_key(key: &str) -> Value {
    match key {
        "partitions" => {
            json!({"type": "integer", "minimum": 1, "description": "Streams NAME-0 … NAME-(N-1), routed to by keys 0 … N-1."})
        }
        "binding_keys" => {
            json!({"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "One stream NAME-KEY per key, routed to by that key."})
        }
        "arguments" => {
            let stream = QUEUE_ARGUMENTS.iter().filter(|a| a.types.contains(&QueueType::Stream));
            let p: serde_json::Map<String, Value> = stream.map(|a| (a.name.to_string(), expect(a.expect))).collect();
            json!({"type": "object", "properties": p, "additionalProperties": false})
        }
        other => panic!("the schema does not describe super stream key `{other}`"),
    }
}

fn binding_key(key: &str) -> Value {
    match key {
        "source" | "queue" | "exchange" | "routing_key" => json!({"type": "string"}),
        "arguments" => json!({"type": "object"}),
        "lint_allow" => lint_allow(),
        other => panic!("the schema does not describe binding key `{other}`"),
    }
}

fn policy_key(key: &str) -> Value {
    match key {
        "pattern" => json!({"type": "string"}),
        "apply_to" => {
            let all: Vec<&str> = ApplyTo::ALL.iter().map(|a| a.as_str()).collect();
            json!({"enum": all})
        }
        "priority" => json!({"type": "integer"}),
        "definition" => {
            let p: serde_json::Map<String, Value> =
                POLICY_DEFINITION_KEYS.iter().map(|k| (k.name.to_string(), json!({}))).collect();
            json!({"type": "object", "properties": p, "additionalProperties": false})
        }
        "lint_allow" => lint_allow(),
        other => panic!("the schema does not describe policy key `{other}`"),
    }
}

fn user_key(key: &str) -> Value {
    match key {
        "password_env" => json!({"type": "string", "description": "The variable holding the password at apply time."}),
        "password_hash" => json!({"type": "string"}),
        "hashing_algorithm" => json!({"enum": HASHING_ALGORITHMS}),
        "tags" => strings(),
        "limits" => limits(USER_LIMIT_KEYS),
        "password" => json!({"not": {}, "description": "Refused: a plaintext password; use password_env."}),
        "lint_allow" => lint_allow(),
        other => panic!("the schema does not describe user key `{other}`"),
    }
}

fn service_key(key: &str) -> Value {
    match key {
        "user" => {
            json!({"type": "string", "description": "The broker user the service connects as, declared in [users]."})
        }
        "consumes" => {
            json!({"type": "array", "items": {"type": "string"}, "description": "The queues it consumes from."})
        }
        "publishes" => {
            let keys = json!({"type": "array", "items": {"type": "string"}, "description": "Its routing keys, or topic patterns of them."});
            let set = json!({"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}});
            let headers = json!({"oneOf": [set, {"type": "array", "items": set}],
                                 "description": "To a headers exchange: its messages' headers, one table per kind of message."});
            let entry = json!({"type": "object", "properties": {"exchange": {"type": "string"}, "keys": keys, "headers": headers},
                               "required": ["exchange"], "additionalProperties": false});
            json!({"type": "array", "items": entry, "description": "The exchanges it publishes to, with its keys or headers."})
        }
        "declares" => {
            json!({"type": "object", "additionalProperties": false, "description": "The queues it declares itself.",
            "properties": {"server_named": boolean(), "prefixes": strings()}})
        }
        "lint_allow" => lint_allow(),
        other => panic!("the schema does not describe service key `{other}`"),
    }
}

fn permission_key(key: &str) -> Value {
    match key {
        "configure" | "write" | "read" => json!({"type": "string"}),
        "lint_allow" => lint_allow(),
        other => panic!("the schema does not describe permission key `{other}`"),
    }
}

fn expect(e: Expect) -> Value {
    match e {
        Expect::Int(lo, hi) if hi == i64::MAX => json!({"type": "integer", "minimum": lo}),
        Expect::Int(lo, hi) => json!({"type": "integer", "minimum": lo, "maximum": hi}),
        Expect::Bool => boolean(),
        Expect::Str => json!({"type": "string"}),
        Expect::OneOf(v) => json!({"enum": v}),
        Expect::IntOneOf(v) => json!({"enum": v}),
        Expect::Age => json!({"type": "string", "pattern": "^[0-9]+[YMDhms]$"}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key the project file's schema names is one the project file's
    /// reader takes.
    #[test]
    fn the_project_schema_names_only_keys_warren_toml_takes() {
        let text = "[project]\nname = \"orders\"\n\n[environments.staging]\nurl_env = \"A\"\namqp_url_env = \"B\"\noverlays = [\"overlays/staging\"]\n\n[deploy]\nstages = [[\"staging\"]]\n\n[lint]\nguest-user = \"off\"\n";
        let schema = project();
        let keys = |v: &Value| -> Vec<String> { v["properties"].as_object().unwrap().keys().cloned().collect() };
        assert_eq!(keys(&schema), ["deploy", "environments", "lint", "project"]);
        let env = &schema["properties"]["environments"]["additionalProperties"];
        for k in keys(env) {
            assert!(text.contains(&format!("\n{k} = ")), "{k}");
        }
        let mut found = Vec::new();
        crate::project::parse(crate::source::FileId(0), text, &mut found);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn every_parser_key_is_described() {
        let t = topology();
        assert_eq!(
            t["properties"]["queues"]["additionalProperties"]["properties"].as_object().unwrap().len(),
            QUEUE_KEYS.len()
        );
        assert!(
            t["properties"]["queues"]["additionalProperties"]["properties"]["arguments"]["properties"]["x-message-ttl"]
                .is_object()
        );
        for k in kinds::KINDS.iter().filter(|k| !kind_keys::documented_apart(k)) {
            let table = &t["properties"][k.table];
            let object = if is_named(k) { &table["additionalProperties"] } else { &table["items"] };
            let described = object["properties"].as_object().unwrap();
            assert_eq!(described.len(), kind_keys::keys(k).len(), "{}", k.table);
            for a in k.identity.iter().filter(|_| !is_named(k)).chain(k.attributes) {
                assert_eq!(described[a.name]["description"], json!(a.about), "{}.{}", k.table, a.name);
            }
            assert_eq!(table["description"], json!(k.about));
        }
    }
}
