//! The order of keys inside each known table: the order `warren import`
//! writes them in (src/import/render.rs), then keys the parser knows that
//! import never writes (`lint_allow`, `password`). Keys not listed keep
//! their relative order after the listed ones.

use super::FileKind;
use crate::desired::kinds::{is_named, keys};
use crate::model::kinds::by_table;

/// A step of a path into a file: a key, or an item of an array of tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    Key(String),
    Item,
}

const ROOT: &[&str] = &["vhosts"];
const VHOST: &[&str] = &["description", "default_queue_type", "tags", "protected_from_deletion", "limits"];
const EXTERNAL: &[&str] = &["exchanges", "queues", "users"];
const EXCHANGE: &[&str] = &["type", "durable", "auto_delete", "internal", "arguments", "lint_allow"];
const QUEUE: &[&str] = &["type", "durable", "auto_delete", "replaces", "arguments", "lint_allow"];
const SUPER_STREAM: &[&str] = &["partitions", "binding_keys", "arguments"];
const BINDING: &[&str] = &["source", "exchange", "queue", "routing_key", "arguments", "lint_allow"];
const POLICY: &[&str] = &["pattern", "apply_to", "priority", "definition", "lint_allow"];
const USER: &[&str] =
    &["password_hash", "hashing_algorithm", "password_env", "password", "tags", "limits", "lint_allow"];
const PERMISSION: &[&str] = &["configure", "write", "read", "lint_allow"];
const SERVICE: &[&str] = &["user", "publishes", "consumes", "declares", "lint_allow"];
const PUBLISH: &[&str] = &["exchange", "keys", "headers"];
const DECLARES: &[&str] = &["server_named", "prefixes"];
const REMOVED: &[&str] = &["exchanges", "queues", "policies", "operator_policies", "permissions", "users"];
const PROJECT: &[&str] = &["name", "default_env", "shapes"];
const SHAPE: &[&str] = &["description", "parameters", "defaults"];
/// A stamp's parameters follow its shape, in the order written.
const STAMP: &[&str] = &["shape"];
const ENVIRONMENT: &[&str] = &["url_env", "amqp_url_env", "overlays"];

/// The known keys of the table at `path`, in their order; empty when the
/// table is not known (its keys keep the order they have).
pub(super) fn known(kind: FileKind, path: &[Step]) -> &'static [&'static str] {
    let names: Vec<&str> = path
        .iter()
        .map(|s| match s {
            Step::Key(k) => k.as_str(),
            Step::Item => "[]",
        })
        .collect();
    match kind {
        FileKind::Topology => topology(&names),
        FileKind::Project => match names.as_slice() {
            ["project"] => PROJECT,
            ["environments", _] => ENVIRONMENT,
            _ => &[],
        },
        FileKind::Test => &[],
    }
}

fn topology(names: &[&str]) -> &'static [&'static str] {
    match names {
        [] => ROOT,
        ["vhost"] => VHOST,
        ["external"] => EXTERNAL,
        ["removed"] => REMOVED,
        ["exchanges", _] => EXCHANGE,
        ["queues", _] => QUEUE,
        ["super_streams", _] => SUPER_STREAM,
        ["bindings", "[]"] => BINDING,
        ["policies" | "operator_policies", _] => POLICY,
        ["users", _] => USER,
        ["permissions", _] => PERMISSION,
        ["services", _] => SERVICE,
        ["services", _, "declares"] => DECLARES,
        ["services", _, "publishes", "[]"] => PUBLISH,
        ["shapes", _] => SHAPE,
        ["stamps", "[]"] => STAMP,
        // A shape's body is laid out as a file's tables are.
        ["shapes", _, body @ ..] => topology(body),
        [table, second] => match by_table(table) {
            Some(k) if is_named(k) == (*second != "[]") => keys(k),
            _ => &[],
        },
        _ => &[],
    }
}

/// Where `key` goes among the keys of a table whose known keys are `known`.
pub(super) fn rank(known: &[&str], key: &str) -> usize {
    known.iter().position(|k| *k == key).unwrap_or(known.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key the parser accepts has its place: a key added there and
    /// not here would drift to the end of its table.
    #[test]
    fn every_key_the_parser_knows_is_ordered() {
        let ours = [
            ("vhost", VHOST),
            ("external", EXTERNAL),
            ("exchange", EXCHANGE),
            ("queue", QUEUE),
            ("binding", BINDING),
            ("policy", POLICY),
            ("user", USER),
            ("permission", PERMISSION),
            ("service", SERVICE),
            ("publish", PUBLISH),
            ("declares", DECLARES),
            ("super stream", SUPER_STREAM),
            ("removed", REMOVED),
        ];
        for (place, parser) in crate::desired::known_keys() {
            let here = ours.iter().find(|(p, _)| *p == place).map(|(_, k)| *k).unwrap_or_default();
            for key in parser {
                assert!(here.contains(key), "`{key}` has no place among {here:?}");
            }
        }
    }

    #[test]
    fn kinds_follow_their_attribute_lists() {
        let k = by_table("shovels").unwrap();
        let path = [Step::Key("shovels".into()), Step::Key("s".into())];
        assert_eq!(known(FileKind::Topology, &path), keys(k));
        let path = [Step::Key("bindings".into()), Step::Item];
        assert_eq!(known(FileKind::Topology, &path), BINDING);
        assert!(known(FileKind::Test, &path).is_empty());
    }
}
