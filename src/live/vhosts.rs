//! Vhost settings as the live side sees them: description, default queue
//! type and limits, from a `vhosts` entry (3.10 to 4.x shapes), the top of a
//! 4.x single-vhost export, or `vhost-limits` parameters.
//!
//! Each field is `Some` only when the export says something about it:
//! `description` when it is not empty (RabbitMQ stores `""` for none),
//! `default_queue_type` when it names a queue type (`"undefined"` is none),
//! `limits` when at least one limit is set, `tags` when there is one,
//! `protected_from_deletion` when it is true (4.1+; absent before). The
//! vhost settings' kind reads the entry (`kinds::vhosts`, its `read`);
//! what it cannot judge alone is corrected and noted here.

use std::collections::BTreeMap;

use serde_json::Value as Json;

use super::definitions::VhostFields;
use super::notes::Notes;
use crate::model::kinds::vhosts;
use crate::model::{QueueType, Value, VhostSettings};

/// The settings the export gives for `vhost`: the entry read by the vhost
/// settings' kind, then a default queue type warren does not know noted
/// and read as none, and limits that are not numbers noted and left out.
pub(super) fn settings(fields: &VhostFields, vhost: &str, notes: &mut Notes) -> VhostSettings {
    let mut item = serde_json::to_value(fields).expect("the fields serde read serialise back");
    item["name"] = Json::from(vhost);
    let Some(Ok(mut object)) = (vhosts::KIND.read)(&item) else {
        unreachable!("a vhost's entry with a name is always read")
    };
    if let Some(t) = object.text("default_queue_type")
        && QueueType::parse(t).is_none()
    {
        notes.one(
            format!("vhost \"{vhost}\" has default queue type \"{t}\", which warren does not know; read as none"),
            "warren knows the classic, quorum and stream queue types",
        );
        object.body.remove("default_queue_type");
    }
    let mut limits = BTreeMap::new();
    if let Some(l) = &fields.limits {
        add_limits(&mut limits, l, &format!("vhost \"{vhost}\""), notes);
    }
    object.body.remove("limits");
    if !limits.is_empty() {
        object
            .body
            .insert("limits".into(), Value::Table(limits.into_iter().map(|(k, v)| (k, Value::Int(v))).collect()));
    }
    vhosts::settings(vhost, &object.body).expect("the settings read, corrected")
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
