//! Vhost settings as the live side sees them: description, default queue
//! type and limits, from a `vhosts` entry (3.10 to 4.x shapes), the top of a
//! 4.x single-vhost export, or `vhost-limits` parameters.
//!
//! Each field is `Some` only when the export says something about it:
//! `description` when it is not empty (RabbitMQ stores `""` for none),
//! `default_queue_type` when it names a queue type (`"undefined"` is none),
//! `limits` when at least one limit is set, `tags` when there is one,
//! `protected_from_deletion` when it is true (4.1+; absent before).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value as Json;

use super::definitions::VhostFields;
use super::notes::Notes;
use crate::model::{QueueType, Value, VhostSettings};

/// The settings the export gives for `vhost`.
pub(super) fn settings(fields: &VhostFields, vhost: &str, notes: &mut Notes) -> VhostSettings {
    let meta = fields.metadata.as_ref();
    let description =
        fields.description.as_ref().or(meta.and_then(|m| m.description.as_ref())).filter(|d| !d.is_empty()).cloned();
    let dqt = fields
        .default_queue_type
        .as_deref()
        .or(meta.and_then(|m| m.default_queue_type.as_deref()))
        .or(fields.defaultqueuetype.as_deref());
    let default_queue_type = dqt.and_then(|t| queue_type(t, vhost, notes));
    let tags = fields.tags.as_ref().or(meta.and_then(|m| m.tags.as_ref())).map(tags).filter(|t| !t.is_empty());
    let mut limits = BTreeMap::new();
    if let Some(l) = &fields.limits {
        add_limits(&mut limits, l, &format!("vhost \"{vhost}\""), notes);
    }
    let protected_from_deletion =
        fields.protected_from_deletion.or(meta.and_then(|m| m.protected_from_deletion)).filter(|p| *p);
    VhostSettings {
        description,
        default_queue_type,
        limits: (!limits.is_empty()).then_some(limits),
        tags,
        protected_from_deletion,
    }
}

/// A vhost's tags: a list, or one comma-separated string as RabbitMQ
/// accepts them; blanks dropped.
fn tags(json: &Json) -> BTreeSet<String> {
    let items: Vec<&str> = match json {
        Json::Array(a) => a.iter().filter_map(Json::as_str).collect(),
        Json::String(s) => s.split(',').collect(),
        _ => Vec::new(),
    };
    items.into_iter().map(str::trim).filter(|t| !t.is_empty()).map(str::to_string).collect()
}

/// A default queue type; `"undefined"` and `""` mean none.
fn queue_type(name: &str, vhost: &str, notes: &mut Notes) -> Option<QueueType> {
    if matches!(name, "" | "undefined") {
        return None;
    }
    let parsed = QueueType::parse(name);
    if parsed.is_none() {
        notes.one(
            format!("vhost \"{vhost}\" has default queue type \"{name}\", which warren does not know; read as none"),
            "warren knows the classic, quorum and stream queue types",
        );
    }
    parsed
}

/// Adds the limits in `json` (`{"max-queues": 10}`, or `[]` for none) of
/// `owner` (`vhost "v"`, `user "u"`).
pub(super) fn add_limits(limits: &mut BTreeMap<String, i64>, json: &Json, owner: &str, notes: &mut Notes) {
    match json {
        Json::Object(map) => {
            for (k, v) in map {
                match Value::from(v).as_int() {
                    Some(i) => {
                        limits.insert(k.clone(), i);
                    }
                    None => notes.one(
                        format!("{owner} has limit `{k}` = {v}, which is not a number; left out"),
                        "limits are integers (-1 for no limit)",
                    ),
                }
            }
        }
        Json::Array(a) if a.is_empty() => {}
        Json::Null => {}
        other => notes.one(
            format!("{owner} has limits in an unknown shape ({other}); left out"),
            "limits are an object such as {\"max-connections\": 100}",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> (VhostSettings, Vec<String>) {
        let fields: VhostFields = serde_json::from_str(json).unwrap();
        let mut notes = Notes::default();
        let s = settings(&fields, "v", &mut notes);
        let notes = notes.into_diagnostics().into_iter().map(|d| d.message).collect();
        (s, notes)
    }

    #[test]
    fn a_3_10_entry_has_no_settings() {
        let (s, notes) = read(r#"{"name": "v"}"#);
        assert_eq!(s, VhostSettings::default());
        assert!(notes.is_empty());
    }

    #[test]
    fn a_3_13_entry_reads_top_level_fields() {
        let (s, _) = read(
            r#"{"name": "v", "description": "orders", "tags": [], "default_queue_type": "quorum",
                "metadata": {"description": "orders", "tags": [], "default_queue_type": "quorum"}}"#,
        );
        assert_eq!(s.description.as_deref(), Some("orders"));
        assert_eq!(s.default_queue_type, Some(QueueType::Quorum));
        assert_eq!(s.limits, None);
    }

    #[test]
    fn metadata_alone_is_enough() {
        let (s, _) =
            read(r#"{"limits": [], "metadata": {"description": "Default virtual host", "tags": []}, "name": "/"}"#);
        assert_eq!(s.description.as_deref(), Some("Default virtual host"));
        assert_eq!(s.limits, None);
    }

    #[test]
    fn the_3_10_put_key_is_read_last() {
        let (s, _) = read(r#"{"defaultqueuetype": "stream"}"#);
        assert_eq!(s.default_queue_type, Some(QueueType::Stream));
        let (s, _) = read(r#"{"default_queue_type": "classic", "defaultqueuetype": "stream"}"#);
        assert_eq!(s.default_queue_type, Some(QueueType::Classic));
    }

    #[test]
    fn empty_and_undefined_mean_none() {
        let (s, notes) = read(r#"{"description": "", "default_queue_type": "undefined"}"#);
        assert_eq!(s, VhostSettings::default());
        assert!(notes.is_empty());
    }

    #[test]
    fn an_unknown_queue_type_is_noted() {
        let (s, notes) = read(r#"{"default_queue_type": "qourum"}"#);
        assert_eq!(s.default_queue_type, None);
        assert!(notes[0].contains("\"qourum\""), "{notes:?}");
    }

    #[test]
    fn limits_of_4_x() {
        let (s, _) = read(r#"{"limits": {"max-queues": 100, "max-connections": 10.0}}"#);
        let l = s.limits.unwrap();
        assert_eq!(l["max-queues"], 100);
        assert_eq!(l["max-connections"], 10);
    }

    #[test]
    fn odd_limits_are_noted_and_tags_read() {
        let (s, notes) = read(r#"{"limits": {"max-queues": "many"}, "tags": ["a"]}"#);
        assert_eq!(s.limits, None);
        assert_eq!(s.tags, Some(["a".to_string()].into()));
        assert_eq!(notes.len(), 1, "{notes:?}");
        let (s, _) = read(r#"{"metadata": {"tags": "b, a,"}, "protected_from_deletion": true}"#);
        assert_eq!(s.tags, Some(["a".to_string(), "b".to_string()].into()), "a string is split at commas");
        assert_eq!(s.protected_from_deletion, Some(true));
        let (s, _) = read(r#"{"tags": [], "protected_from_deletion": false}"#);
        assert_eq!((s.tags, s.protected_from_deletion), (None, None), "no tags, no protection: nothing said");
    }
}
