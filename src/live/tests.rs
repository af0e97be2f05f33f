//! One test per normalisation rule, with 3.10-shaped and 4.x-shaped exports.

use super::*;
use crate::model::{
    ApplyTo, Binding, DestinationKind, Inventory, ObjectKey, Ownership, Password, QueueType, Value, Vhost,
};

fn read(json: &str) -> Live {
    from_definitions(json, "defs.json").unwrap_or_else(|d| panic!("{}", d.message))
}

fn vhost<'a>(live: &'a Live, name: &str) -> &'a Vhost {
    &live.topology.vhosts[name]
}

fn names<T>(map: &std::collections::BTreeMap<String, T>) -> Vec<&str> {
    map.keys().map(String::as_str).collect()
}

fn notes(live: &Live) -> Vec<&str> {
    live.notes.iter().map(|d| d.message.as_str()).collect()
}

fn binding(source: &str, queue: &str, key: &str) -> Binding {
    Binding {
        source: source.into(),
        destination_kind: DestinationKind::Queue,
        destination: queue.into(),
        routing_key: key.into(),
        arguments: Default::default(),
    }
}

// --- queue types ---

#[test]
fn x_queue_type_becomes_the_type_and_leaves_the_arguments() {
    // 4.x injects `x-queue-type` into every new queue.
    let live = read(
        r#"{"rabbitmq_definition_format": "cluster", "vhosts": [{"name": "/"}],
            "queues": [
              {"name": "a", "vhost": "/", "durable": true, "auto_delete": false,
               "arguments": {"x-queue-type": "classic", "x-message-ttl": 1000}},
              {"name": "b", "vhost": "/", "durable": true, "auto_delete": false,
               "arguments": {"x-queue-type": "quorum"}}]}"#,
    );
    let q = &vhost(&live, "/").queues;
    assert_eq!(q["a"].kind, QueueType::Classic);
    assert_eq!(q["a"].arguments.len(), 1);
    assert_eq!(q["a"].arguments.get("x-message-ttl"), Some(&Value::Int(1000)));
    assert_eq!(q["b"].kind, QueueType::Quorum);
    assert!(q["b"].arguments.is_empty());
    assert!(live.notes.is_empty());
}

#[test]
fn the_type_field_of_3_13_exports_is_used_without_the_argument() {
    let live = read(
        r#"{"vhosts": [{"name": "/"}], "queues": [
            {"name": "s", "vhost": "/", "durable": true, "auto_delete": false,
             "arguments": {}, "type": "stream"}]}"#,
    );
    assert_eq!(vhost(&live, "/").queues["s"].kind, QueueType::Stream);
}

#[test]
fn without_either_the_vhost_default_applies_in_each_shape() {
    for entry in [
        r#"{"name": "v", "default_queue_type": "quorum"}"#,
        r#"{"name": "v", "metadata": {"default_queue_type": "quorum"}}"#,
        r#"{"name": "v", "defaultqueuetype": "quorum"}"#,
    ] {
        let live =
            read(&format!(r#"{{"vhosts": [{entry}], "queues": [{{"name": "q", "vhost": "v", "arguments": {{}}}}]}}"#));
        let v = vhost(&live, "v");
        assert_eq!(v.queues["q"].kind, QueueType::Quorum, "{entry}");
        assert_eq!(v.settings.default_queue_type, Some(QueueType::Quorum));
    }
}

#[test]
fn otherwise_a_queue_is_classic() {
    // 3.10.8: no type anywhere.
    let live = read(
        r#"{"rabbit_version": "3.10.8", "vhosts": [{"name": "/"}], "queues": [
            {"name": "q", "vhost": "/", "durable": true, "auto_delete": false, "arguments": {}}]}"#,
    );
    assert_eq!(vhost(&live, "/").queues["q"].kind, QueueType::Classic);
}

#[test]
fn the_argument_wins_over_a_disagreeing_type_field() {
    let live = read(
        r#"{"vhosts": [{"name": "/"}], "queues": [{"name": "q", "vhost": "/",
            "arguments": {"x-queue-type": "quorum"}, "type": "classic"}]}"#,
    );
    assert_eq!(vhost(&live, "/").queues["q"].kind, QueueType::Quorum);
    assert!(notes(&live)[0].contains("read as quorum"), "{:?}", notes(&live));
}

#[test]
fn a_queue_of_an_unknown_type_is_left_out_with_a_note() {
    let live = read(
        r#"{"vhosts": [{"name": "/"}], "queues": [{"name": "q", "vhost": "/",
            "arguments": {"x-queue-type": "delayed"}}]}"#,
    );
    assert!(vhost(&live, "/").queues.is_empty());
    assert!(notes(&live)[0].contains("\"delayed\""));
}

// --- defaults and numbers ---

#[test]
fn absent_flags_take_the_broker_defaults() {
    let live = read(
        r#"{"vhosts": [{"name": "/"}],
            "exchanges": [{"name": "x", "vhost": "/", "type": "topic"}],
            "queues": [{"name": "q", "vhost": "/"}]}"#,
    );
    let v = vhost(&live, "/");
    let x = &v.exchanges["x"];
    assert!(x.durable && !x.auto_delete && !x.internal && x.arguments.is_empty());
    let q = &v.queues["q"];
    assert!(q.durable && !q.auto_delete && q.replaces.is_none());
}

#[test]
fn integral_floats_are_integers() {
    let live = read(
        r#"{"vhosts": [{"name": "/"}], "queues": [{"name": "q", "vhost": "/",
            "arguments": {"x-message-ttl": 15000.0, "x-weight": 0.5}}],
            "policies": [{"vhost": "/", "name": "p", "pattern": ".*",
             "definition": {"max-length": 10.0}, "priority": 1.0}]}"#,
    );
    let v = vhost(&live, "/");
    assert_eq!(v.queues["q"].arguments.get("x-message-ttl"), Some(&Value::Int(15000)));
    assert_eq!(v.queues["q"].arguments.get("x-weight"), Some(&Value::Float(0.5)));
    assert_eq!(v.policy("p").unwrap().definition.get("max-length"), Some(&Value::Int(10)));
    assert_eq!(v.policy("p").unwrap().priority, 1);
}

#[test]
fn arguments_read_as_the_json_tree_reads_them() {
    let args = r#"{"n": null, "b": true, "i": -3, "big": 18446744073709551615, "f": 2.5,
        "s": "x\u00e9", "l": [1, 2.0, "a"], "t": {"k": {"deep": 7.0}}, "dup": 1, "dup": 2}"#;
    let live = read(&format!(
        r#"{{"vhosts": [{{"name": "/"}}], "queues": [{{"name": "q", "vhost": "/", "arguments": {args}}}]}}"#
    ));
    let tree: serde_json::Value = serde_json::from_str(args).unwrap();
    let crate::model::Value::Table(expected) = Value::from(tree) else { panic!("a table") };
    assert_eq!(vhost(&live, "/").queues["q"].arguments, expected);
    assert_eq!(expected.get("dup"), Some(&Value::Int(2)));
    let deep = Value::Table(crate::model::Table::from_iter([("deep".into(), Value::Int(7))]));
    assert_eq!(expected.get("t"), Some(&Value::Table(crate::model::Table::from_iter([("k".into(), deep)]))));
}

#[test]
fn of_objects_listed_twice_the_last_is_used_and_noted() {
    let live = read(
        r#"{"vhosts": [{"name": "/"}],
            "exchanges": [{"name": "x", "vhost": "/", "type": "topic"}, {"name": "w", "vhost": "/", "type": "direct"},
                          {"name": "x", "vhost": "/", "type": "fanout"}],
            "queues": [{"name": "q", "vhost": "/", "durable": true}, {"name": "a", "vhost": "/"},
                       {"name": "q", "vhost": "/", "durable": false}, {"name": "q", "vhost": "/", "auto_delete": true}]}"#,
    );
    let v = vhost(&live, "/");
    assert_eq!(names(&v.exchanges), ["w", "x"]);
    assert_eq!(v.exchanges["x"].kind, "fanout");
    assert_eq!(names(&v.queues), ["a", "q"]);
    assert!(v.queues["q"].auto_delete && v.queues["q"].durable, "the last entry, with its defaults");
    let notes = notes(&live);
    assert!(notes.iter().any(|n| n.contains("exchanges listed more than once") && n.contains("\"x\"")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("queues listed more than once") && n.contains("\"q\"")), "{notes:?}");
}

// --- policies ---

#[test]
fn policies_default_to_all_and_priority_zero() {
    let live = read(
        r#"{"vhosts": [{"name": "/"}], "policies": [
            {"vhost": "/", "name": "bare", "pattern": "^a", "definition": {"max-length": 1}},
            {"vhost": "/", "name": "full", "pattern": "^b", "apply-to": "quorum_queues",
             "priority": 5, "definition": {"delivery-limit": 3}}]}"#,
    );
    let p = &crate::model::kinds::policies::typed(&vhost(&live, "/").objects);
    assert_eq!((p["bare"].apply_to, p["bare"].priority), (ApplyTo::All, 0));
    assert_eq!((p["full"].apply_to, p["full"].priority), (ApplyTo::QuorumQueues, 5));
}

#[test]
fn operator_policies_come_from_parameters() {
    let live = read(
        r#"{"vhosts": [{"name": "/"}], "parameters": [
            {"vhost": "/", "component": "operator_policy", "name": "cap",
             "value": {"pattern": ".*", "definition": {"max-length": 3},
                       "priority": 0, "apply-to": "queues"}}]}"#,
    );
    let op = &crate::model::kinds::operator_policies::typed(&vhost(&live, "/").objects)["cap"];
    assert_eq!(op.apply_to, ApplyTo::Queues);
    assert_eq!(op.definition.get("max-length"), Some(&Value::Int(3)));
    assert!(vhost(&live, "/").policies().is_empty());
}

#[test]
fn a_malformed_operator_policy_is_an_error() {
    let e = from_definitions(
        r#"{"vhosts": [{"name": "/"}], "parameters": [
            {"vhost": "/", "component": "operator_policy", "name": "cap", "value": {"pattern": ".*"}}]}"#,
        "defs.json",
    )
    .unwrap_err();
    assert!(e.message.contains("parameters[0].value"), "{}", e.message);
}

#[test]
fn unknown_policy_keys_and_apply_to_values_are_noted() {
    let live = read(
        r#"{"vhosts": [{"name": "/"}], "policies": [
            {"vhost": "/", "name": "p", "pattern": ".*", "definition": {"max-lenght": 1}},
            {"vhost": "/", "name": "q", "pattern": ".*", "apply-to": "everything",
             "definition": {"max-length": 1}}]}"#,
    );
    let v = vhost(&live, "/");
    assert!(v.policy("p").is_some());
    assert!(v.policy("q").is_none());
    let n = notes(&live);
    assert!(n[0].contains("`max-lenght`"), "{n:?}");
    assert!(n[1].contains("\"everything\""), "{n:?}");
}

// --- vhost settings ---

#[test]
fn vhost_limits_from_parameters_and_from_4_x_entries() {
    // 3.x: a `vhost-limits` parameter; 4.x: `limits` in the vhost entry.
    let live = read(
        r#"{"vhosts": [{"name": "a"}, {"name": "b", "limits": {"max-queues": 10}}],
            "parameters": [{"value": {"max-connections": 2000}, "vhost": "a",
                            "component": "vhost-limits", "name": "limits"}]}"#,
    );
    let a = vhost(&live, "a").settings.limits.as_ref().unwrap();
    assert_eq!(a["max-connections"], 2000);
    let b = vhost(&live, "b").settings.limits.as_ref().unwrap();
    assert_eq!(b["max-queues"], 10);
}

// --- what is left out ---

#[test]
fn broker_objects_and_federation_artefacts_are_left_out() {
    let live = read(
        r#"{"vhosts": [{"name": "/"}],
            "exchanges": [
              {"name": "", "vhost": "/", "type": "direct"},
              {"name": "amq.topic", "vhost": "/", "type": "topic"},
              {"name": "federation: up -> rabbit@a", "vhost": "/", "type": "x-federation-upstream"},
              {"name": "up", "vhost": "/", "type": "topic"}],
            "queues": [
              {"name": "federation: up -> rabbit@a", "vhost": "/"},
              {"name": "q", "vhost": "/"}],
            "bindings": [
              {"source": "", "vhost": "/", "destination": "q", "destination_type": "queue", "routing_key": "q"},
              {"source": "up", "vhost": "/", "destination": "federation: up -> rabbit@a",
               "destination_type": "exchange", "routing_key": ""},
              {"source": "federation: up -> rabbit@a", "vhost": "/",
               "destination": "federation: up -> rabbit@a", "destination_type": "queue", "routing_key": ""},
              {"source": "up", "vhost": "/", "destination": "q", "destination_type": "queue", "routing_key": "k"}],
            "global_parameters": [
              {"name": "cluster_name", "value": "rabbit@a"},
              {"name": "internal_cluster_id", "value": "rabbitmq-cluster-id-x"}]}"#,
    );
    let v = vhost(&live, "/");
    assert_eq!(names(&v.exchanges), ["up"]);
    assert_eq!(names(&v.queues), ["q"]);
    assert_eq!(v.bindings.iter().cloned().collect::<Vec<_>>(), [binding("up", "q", "k")]);
    assert!(live.notes.is_empty(), "{:?}", notes(&live));
}

#[test]
fn the_inventory_parameter_becomes_the_records() {
    let mut inventory = Inventory::default();
    inventory.objects.insert(ObjectKey::Vhost("/".into()));
    inventory.objects.insert(ObjectKey::Queue { vhost: "/".into(), name: "q".into() });
    let records = Ownership::single("default", inventory);
    let json = format!(
        r#"{{"vhosts": [{{"name": "/"}}], "global_parameters": [{{"name": "warren.inventory", "value": {}}}]}}"#,
        records.to_json()
    );
    let live = read(&json);
    assert_eq!(live.ownership, records);
    assert!(live.notes.is_empty());
    assert_eq!(read(r#"{"vhosts": []}"#).ownership, Ownership::default());
}

#[test]
fn an_inventory_of_another_format_is_refused_and_a_malformed_one_is_an_error() {
    let with = |value: &str| {
        let defs = format!(r#"{{"global_parameters": [{{"name": "warren.inventory", "value": {value}}}]}}"#);
        from_definitions(&defs, "defs.json").unwrap_err()
    };
    // As warren wrote it before records shared one format.
    let e = with(r#"{"format": 2, "projects": {}}"#);
    assert_eq!(
        e.message,
        "defs.json: warren's inventory (global parameter `warren.inventory`) is of another format: it was written in record format 2, and this warren reads format 3: go on with the warren that wrote it, or delete it to start afresh (the next apply records what the files declare; objects removed from the files meanwhile show as unmanaged, and are never destroyed)"
    );
    assert_eq!(e.help.as_deref(), Some("to delete it: `rabbitmqctl clear_global_parameter warren.inventory`"));
    let e = with(r#"{"format": 3}"#);
    assert!(e.message.ends_with("is malformed: the records hold no \"projects\""), "{}", e.message);
}

#[test]
fn the_journal_parameter_gives_the_migrations_in_flight() {
    let mut journal = crate::journal::Journal::from_json(None).unwrap();
    let m = crate::journal::Migration { id: "m1".into(), vhost: "/".into(), ..Default::default() };
    journal.migrations.insert("m1".into(), m.clone());
    let json = format!(
        r#"{{"vhosts": [{{"name": "/"}}], "global_parameters": [{{"name": "warren.journal", "value": {}}}]}}"#,
        journal.to_json()
    );
    let live = read(&json);
    assert_eq!(live.migrations.into_values().collect::<Vec<_>>(), [m]);
    assert!(live.notes.is_empty());
    let e = from_definitions(r#"{"global_parameters": [{"name": "warren.journal", "value": {"format": 1}}]}"#, "d")
        .unwrap_err();
    let said = "d: warren's journal (global parameter `warren.journal`) is of another format: it was written in record format 1, and this warren reads format 3: finish or abort";
    assert!(e.message.starts_with(said), "{}", e.message);
}

/// Records kept inside vhosts (`model::records`): the newest generation of
/// each project's inventory joins the ownership, a journal's migrations
/// those in flight, and none of the exchanges is topology.
#[test]
fn record_exchanges_inside_vhosts_become_records_not_topology() {
    let q = |name: &str| ObjectKey::Queue { vhost: "v".into(), name: name.into() };
    let inventory =
        |names: &[&str]| Inventory { objects: names.iter().map(|n| q(n)).collect(), ..Inventory::default() };
    let mut journal = crate::journal::Journal::from_json(None).unwrap();
    let m = crate::journal::Migration { id: "m1".into(), vhost: "v".into(), ..Default::default() };
    journal.migrations.insert("m1".into(), m.clone());
    let record = |name: &str, value: String| {
        serde_json::json!({"name": name, "vhost": "v", "type": "fanout", "durable": true, "auto_delete": false,
            "internal": true, "arguments": {"x-warren-record": value}})
    };
    let exchanges = serde_json::json!([
        record("warren.records.team-a.3", inventory(&["old"]).to_json().to_string()),
        record("warren.records.team-a.4", inventory(&["q1"]).to_json().to_string()),
        record("warren.journal.team-a.9", journal.to_json().to_string()),
        {"name": "x", "vhost": "v", "type": "topic", "durable": true, "auto_delete": false, "internal": false, "arguments": {}},
    ]);
    let json = serde_json::json!({"vhosts": [{"name": "v"}], "exchanges": exchanges}).to_string();
    let live = read(&json);
    assert_eq!(live.topology.vhosts["v"].exchanges.keys().collect::<Vec<_>>(), ["x"]);
    let mut newest = inventory(&["q1"]);
    newest.objects.insert(ObjectKey::Vhost("v".into()));
    assert_eq!(live.ownership, Ownership::single("team-a", newest), "the newest generation, with its vhost");
    let found = &live.records.in_vhosts[&("v".to_string(), "team-a".to_string())];
    assert_eq!(found.found.iter().copied().collect::<Vec<_>>(), [3, 4], "the older one is known, to be deleted");
    assert_eq!(live.migrations.into_values().collect::<Vec<_>>(), [m]);
    assert!(live.notes.is_empty(), "{:?}", live.notes);

    let bad = serde_json::json!({"exchanges": [record("warren.records.team-a.1", "{not json".into())], "vhosts": [{"name": "v"}]});
    let e = from_definitions(&bad.to_string(), "defs.json").unwrap_err();
    assert!(e.message.contains("warren.records.team-a.1") && e.message.contains("malformed"), "{}", e.message);
    let other = serde_json::json!({"format": 1, "users": [], "vhosts": {"v": {"queues": ["q1"]}}});
    let old = serde_json::json!({"exchanges": [record("warren.records.team-a.1", other.to_string())], "vhosts": [{"name": "v"}]});
    let e = from_definitions(&old.to_string(), "defs.json").unwrap_err();
    assert!(
        e.message.starts_with("defs.json: warren's record \"warren.records.team-a.1\" in vhost \"v\" is of another format: it was written in record format 1, and this warren reads format 3: go on with the warren that wrote it"),
        "{}",
        e.message
    );
    let help =
        "to delete it: delete the exchange \"warren.records.team-a.1\" (and its other generations) in vhost \"v\"";
    assert_eq!(e.help.as_deref(), Some(help));
}

/// A large inventory inside a vhost (`model::record_parts`): its newest
/// generation's exchange holds an index, joined with the parts in any
/// order; an older generation kept whole, and parts a run left without
/// their exchange, are known for the next write to delete; none of them is
/// topology, and a part missing is refused, never misread.
#[test]
fn a_record_exchange_in_parts_is_joined_and_its_leftovers_are_known() {
    let q = |name: String| ObjectKey::Queue { vhost: "v".into(), name };
    let names: Vec<ObjectKey> = (0..40_000).map(|i| q(format!("a.queue.with.a.long.name.{i:06}"))).collect();
    let large = Inventory { objects: names.into_iter().collect(), ..Inventory::default() };
    let small = Inventory { objects: [q("old".into())].into(), ..Inventory::default() };
    let record = |name: &str, value: &serde_json::Value| {
        serde_json::json!({"name": name, "vhost": "v", "type": "fanout", "durable": true, "auto_delete": false,
            "internal": true, "arguments": {"x-warren-record": value.to_string()}})
    };
    let split = crate::model::exchange_layout("warren.records.team.a.5", &large.to_json());
    assert_eq!(split.len(), 3, "two parts and the index");
    let left = crate::model::exchange_layout("warren.records.team.a.6", &large.to_json());
    let mut exchanges: Vec<serde_json::Value> = split.iter().rev().map(|(n, v)| record(n, v)).collect();
    exchanges.push(record("warren.records.team.a.4", &small.to_json()));
    exchanges.push(record(&left[0].0, &left[0].1));
    exchanges.push(serde_json::json!({"name": "x", "vhost": "v", "type": "topic", "durable": true,
        "auto_delete": false, "internal": false, "arguments": {}}));
    let json = serde_json::json!({"vhosts": [{"name": "v"}], "exchanges": exchanges});
    let live = read(&json.to_string());
    assert_eq!(live.topology.vhosts["v"].exchanges.keys().collect::<Vec<_>>(), ["x"]);
    let mut newest = large.clone();
    newest.objects.insert(ObjectKey::Vhost("v".into()));
    assert_eq!(live.ownership, Ownership::single("team.a", newest));
    let found = &live.records.in_vhosts[&("v".to_string(), "team.a".to_string())];
    assert_eq!(found.found.iter().copied().collect::<Vec<_>>(), [4, 5]);
    assert_eq!(found.parts, std::collections::BTreeMap::from([(5, 2), (6, 1)]));
    assert_eq!(found.next_generation(), 7);
    assert!(live.notes.is_empty(), "{:?}", live.notes);

    // A part of the newest generation missing: a read that met a write.
    let torn: Vec<serde_json::Value> = split.iter().skip(1).map(|(n, v)| record(n, v)).collect();
    let torn = serde_json::json!({"vhosts": [{"name": "v"}], "exchanges": torn});
    let e = from_definitions(&torn.to_string(), "defs.json").unwrap_err();
    assert!(
        e.message.starts_with("defs.json: warren's record \"warren.records.team.a.5\" in vhost \"v\" is malformed: its part \"warren.records.team.a.5.part-1\" is missing (written while it was read? run again)"),
        "{}",
        e.message
    );
}

#[test]
fn other_parameters_are_noted_as_not_modelled() {
    let live = read(
        r#"{"vhosts": [{"name": "sda"}],
            "parameters": [{"component": "a-plugin-of-ours", "name": "completed", "value": {}, "vhost": "sda"}],
            "global_parameters": [{"name": "my_setting", "value": 1}],
            "topic_permissions": [{"user": "u", "vhost": "sda", "exchange": "amq.topic", "write": ".*", "read": ".*"}]}"#,
    );
    let n = notes(&live);
    assert_eq!(n.len(), 1, "{n:?}");
    assert!(n.iter().any(|m| m.contains("`a-plugin-of-ours`") && m.contains("\"completed\"")));
    // Kinds warren manages (`model::kinds`) are read, not noted.
    assert_eq!(
        live.topology.objects.keys().map(|n| n.to_string()).collect::<Vec<_>>(),
        ["global parameter \"my_setting\""]
    );
    let objects = &live.topology.vhosts["sda"].objects;
    assert_eq!(
        objects.keys().map(|n| n.to_string()).collect::<Vec<_>>(),
        ["topic permission (user \"u\", exchange \"amq.topic\")"]
    );
}

#[test]
fn a_malformed_item_of_a_kind_is_skipped_at_its_place() {
    let live = read(
        r#"{"vhosts": [{"name": "sda"}],
            "topic_permissions": [{"user": "u", "vhost": "sda", "exchange": "amq.topic", "read": ".*"}]}"#,
    );
    assert!(live.topology.vhosts["sda"].objects.is_empty());
    let skipped: Vec<String> = live.skipped.iter().map(|s| format!("{}: {}", s.what, s.why)).collect();
    assert_eq!(skipped, ["topic permission \"u\": it has no string `write`"]);
}

// --- users and permissions ---

#[test]
fn users_and_permissions() {
    let live = read(
        r#"{"users": [
              {"name": "guest", "password_hash": "ljAfhB1nIJOvSDForEpdiyGk3/fjTsHjP5loG6Bsot+hXmrC",
               "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": "administrator"},
              {"name": "cert", "password_hash": "", "tags": ["monitoring", "management"]}],
            "vhosts": [{"name": "/"}],
            "permissions": [{"user": "guest", "vhost": "/", "configure": ".*", "write": ".*", "read": "^r"}]}"#,
    );
    let users = &live.topology.users();
    assert!(matches!(users["guest"].password, Password::Hash { algorithm: None, .. }));
    assert_eq!(users["cert"].password, Password::None);
    assert_eq!(users["cert"].tags.len(), 2);
    let p = vhost(&live, "/").permission("guest").unwrap();
    assert_eq!((p.configure.as_str(), p.read.as_str()), (".*", "^r"));
    assert!(live.notes.is_empty(), "{:?}", notes(&live));
}

// --- quirks: kept and noted ---

#[test]
fn bindings_to_missing_objects_and_from_built_ins_are_kept_and_noted() {
    let live = read(
        r#"{"vhosts": [{"name": "/"}],
            "exchanges": [{"name": "events", "vhost": "/", "type": "topic"}],
            "bindings": [
              {"source": "events", "vhost": "/", "destination": "gone", "destination_type": "queue", "routing_key": "a"},
              {"source": "events", "vhost": "/", "destination": "gone", "destination_type": "queue", "routing_key": "b"},
              {"source": "elsewhere", "vhost": "/", "destination": "events", "destination_type": "exchange", "routing_key": ""},
              {"source": "amq.fanout", "vhost": "/", "destination": "events", "destination_type": "exchange", "routing_key": ""}]}"#,
    );
    assert_eq!(vhost(&live, "/").bindings.len(), 4);
    let n = notes(&live);
    assert_eq!(n.len(), 3, "{n:?}");
    assert!(n.iter().any(|m| m.contains("to queues") && m.ends_with(": \"gone\"")));
    assert!(n.iter().any(|m| m.contains("from exchanges") && m.contains("\"elsewhere\"")));
    assert!(n.iter().any(|m| m.contains("broker's own") && m.contains("\"amq.fanout\"")));
}

#[test]
fn objects_in_unlisted_vhosts_create_the_vhost_with_a_note() {
    let listed = read(r#"{"vhosts": [{"name": "a"}], "queues": [{"name": "q", "vhost": "b"}]}"#);
    assert!(vhost(&listed, "b").queues.contains_key("q"));
    assert!(notes(&listed)[0].contains("lacks"), "{:?}", notes(&listed));
    // A hand-written file without any `vhosts` list.
    let unlisted = read(
        r#"{"users": [{"name": "u", "tags": ""}], "queues": [{"name": "q", "vhost": "/"}],
            "permissions": [{"user": "u", "vhost": "/", "configure": "", "write": "", "read": ""}]}"#,
    );
    assert_eq!(unlisted.notes.len(), 1, "{:?}", notes(&unlisted));
    assert!(notes(&unlisted)[0].contains("no `vhosts` list"));
}

#[test]
fn permissions_of_unknown_users_and_duplicates_are_noted() {
    let live = read(
        r#"{"vhosts": [{"name": "/"}],
            "queues": [{"name": "q", "vhost": "/"}, {"name": "q", "vhost": "/", "durable": false}],
            "permissions": [{"user": "ghost", "vhost": "/", "configure": "", "write": "", "read": ""}]}"#,
    );
    assert!(!vhost(&live, "/").queues["q"].durable);
    let n = notes(&live);
    assert!(n.iter().any(|m| m.contains("more than once")), "{n:?}");
    assert!(n.iter().any(|m| m.contains("\"ghost\"")), "{n:?}");
}

// --- single-vhost exports ---

#[test]
fn a_3_10_single_vhost_export_takes_the_callers_vhost() {
    let json = r#"{"rabbit_version": "3.10.8", "parameters": [], "policies": [],
        "queues": [{"name": "q", "durable": true, "auto_delete": false, "arguments": {}}],
        "exchanges": [{"name": "x", "type": "fanout", "durable": true, "auto_delete": false,
                       "internal": false, "arguments": {}}],
        "bindings": [{"source": "x", "destination": "q", "destination_type": "queue",
                      "routing_key": "", "arguments": {}}]}"#;
    let live = from_vhost_definitions(json, "v.json", Some("orders")).unwrap();
    let v = vhost(&live, "orders");
    assert_eq!(v.bindings.len(), 1);
    assert_eq!(live.topology.vhosts.len(), 1);
    assert!(live.notes.is_empty(), "{:?}", notes(&live));
    let e = from_definitions(json, "v.json").unwrap_err();
    assert!(e.message.contains("single vhost"), "{}", e.message);
}

#[test]
fn a_3_10_single_vhost_export_names_the_vhost_in_policies_only() {
    // Exactly what GET /api/definitions/warren-probe returned on 3.10.8.
    let json = r#"{"rabbit_version":"3.10.8","parameters":[{"value":{"pattern":"^a","definition":{"max-length":5},"priority":0,"apply-to":"queues"},"vhost":"warren-probe","component":"operator_policy","name":"op1"},{"value":{"max-connections":20},"vhost":"warren-probe","component":"vhost-limits","name":"limits"}],"policies":[{"vhost":"warren-probe","name":"p1","pattern":"^a","apply-to":"all","definition":{"max-length":5},"priority":0}],"queues":[{"name":"q","durable":true,"auto_delete":false,"arguments":{}}],"exchanges":[],"bindings":[]}"#;
    let live = from_vhost_definitions(json, "v.json", Some("copy")).unwrap();
    assert_eq!(names(&live.topology.vhosts), ["copy"]);
    let v = vhost(&live, "copy");
    assert_eq!(names(&crate::model::kinds::policies::typed(&v.objects)), ["p1"]);
    assert_eq!(names(&crate::model::kinds::operator_policies::typed(&v.objects)), ["op1"]);
    assert_eq!(names(&v.queues), ["q"]);
    assert_eq!(v.settings.limits.as_ref().unwrap()["max-connections"], 20);
    assert!(live.notes.is_empty(), "{:?}", notes(&live));
}

#[test]
fn a_4_x_single_vhost_export_names_its_vhost_and_settings() {
    let json = r#"{"rabbitmq_version": "4.1.0", "rabbitmq_definition_format": "single_virtual_host",
        "original_vhost_name": "orders", "explanation": "Definitions of virtual host 'orders'",
        "metadata": {"description": "orders domain", "tags": [], "default_queue_type": "quorum"},
        "description": "orders domain", "limits": {"max-queues": 100},
        "parameters": [], "policies": [], "exchanges": [], "bindings": [],
        "queues": [{"name": "q", "durable": true, "auto_delete": false,
                    "arguments": {"x-queue-type": "quorum"}}]}"#;
    let live = from_definitions(json, "v.json").unwrap();
    let v = vhost(&live, "orders");
    assert_eq!(v.settings.description.as_deref(), Some("orders domain"));
    assert_eq!(v.settings.default_queue_type, Some(QueueType::Quorum));
    assert_eq!(v.settings.limits.as_ref().unwrap()["max-queues"], 100);
    assert_eq!(v.queues["q"].kind, QueueType::Quorum);
    let renamed = from_vhost_definitions(json, "v.json", Some("copy")).unwrap();
    assert!(renamed.topology.vhosts.contains_key("copy"));
    assert!(notes(&renamed)[0].contains("taken from vhost \"orders\""));
}

#[test]
fn a_cluster_export_ignores_the_callers_vhost() {
    let json = r#"{"vhosts": [{"name": "a"}], "queues": [{"name": "q", "vhost": "a"}]}"#;
    let live = from_vhost_definitions(json, "d.json", Some("b")).unwrap();
    assert_eq!(names(&live.topology.vhosts), ["a"]);
}

#[test]
fn items_without_a_vhost_in_a_cluster_export_are_skipped_where_they_are() {
    let json = "{\"vhosts\": [{\"name\": \"a\"}],\n \"queues\": [{\"name\": \"q\", \"vhost\": \"a\"},\n  {\"name\": \"r\"}],\n \"permissions\": [{\"user\": \"u\", \"configure\": \"\", \"write\": \"\", \"read\": \"\"}]}";
    let live = read(json);
    assert_eq!(names(&vhost(&live, "a").queues), ["q"]);
    assert!(vhost(&live, "a").permissions().is_empty());
    let n = notes(&live);
    assert!(n[0].starts_with("defs.json:3:3: queue \"r\" (`queues[1]`) skipped: it names no vhost"), "{n:?}");
    assert!(n[1].starts_with("defs.json:4:18: permissions of \"u\" (`permissions[0]`) skipped"), "{n:?}");
    assert_eq!(live.skipped[0].scope, Scope::NoVhost);
    assert_eq!(live.skipped.len(), 2);
}

#[test]
fn a_user_whose_hash_is_not_base64_is_skipped_with_its_permissions() {
    let json = r#"{"vhosts": [{"name": "a"}],
        "users": [{"name": "u", "password_hash": "%%%"}, {"name": "w", "password_hash": ""}],
        "permissions": [{"user": "u", "vhost": "a", "configure": "", "write": "", "read": ""},
                        {"user": "w", "vhost": "a", "configure": "", "write": "", "read": ""}]}"#;
    let live = read(json);
    assert_eq!(names(&live.topology.users()), ["w"]);
    assert_eq!(names(&vhost(&live, "a").permissions()), ["w"]);
    let skipped: Vec<(&Scope, &str)> = live.skipped.iter().map(|s| (&s.scope, s.what.as_str())).collect();
    assert_eq!(
        skipped,
        [(&Scope::Users, "user \"u\""), (&Scope::Vhost("a".into()), "permissions of \"u\" in vhost \"a\"")]
    );
    assert!(notes(&live)[0].starts_with("defs.json:2:19: user \"u\" (`users[0]`) skipped"), "{:?}", notes(&live));
}

// --- the point of it all ---

#[test]
fn an_export_of_a_declared_topology_equals_the_desired_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.toml");
    std::fs::write(
        &file,
        r#"vhosts = ["shop"]

[vhost]
default_queue_type = "quorum"

[exchanges."shop.orders"]
type = "topic"

[queues."orders.invoicing"]
arguments = { "x-dead-letter-exchange" = "shop.dlx", "x-delivery-limit" = 5 }

[queues."orders.audit"]
type = "classic"
durable = false

[exchanges."shop.dlx"]
type = "fanout"

[[bindings]]
source = "shop.orders"
queue = "orders.invoicing"
routing_key = "order.*"

[policies.limits]
pattern = "^orders\\."
apply_to = "queues"
definition = { "max-length" = 1000 }

[users.svc]
password_hash = "ljAfhB1nIJOvSDForEpdiyGk3/fjTsHjP5loG6Bsot+hXmrC"
tags = ["monitoring"]

[permissions.svc]
configure = "^$"
write = "^shop\\."
read = ".*"
"#,
    )
    .unwrap();
    let desired = crate::desired::load(&file);
    assert!(!desired.has_errors(), "{:?}", desired.diagnostics);
    // What a 4.x broker exports for it.
    let export = r#"{"rabbitmq_version": "4.0.9", "rabbitmq_definition_format": "cluster",
        "users": [{"name": "svc", "password_hash": "ljAfhB1nIJOvSDForEpdiyGk3/fjTsHjP5loG6Bsot+hXmrC",
                   "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": ["monitoring"], "limits": {}}],
        "vhosts": [{"name": "shop", "description": "", "tags": [], "default_queue_type": "quorum",
                    "metadata": {"description": "", "tags": [], "default_queue_type": "quorum"}}],
        "permissions": [{"user": "svc", "vhost": "shop", "configure": "^$", "write": "^shop\\.", "read": ".*"}],
        "topic_permissions": [], "parameters": [],
        "global_parameters": [{"name": "cluster_name", "value": "rabbit@host"}],
        "policies": [{"vhost": "shop", "name": "limits", "pattern": "^orders\\.", "apply-to": "queues",
                      "definition": {"max-length": 1000}, "priority": 0}],
        "queues": [
          {"name": "orders.invoicing", "vhost": "shop", "durable": true, "auto_delete": false,
           "arguments": {"x-dead-letter-exchange": "shop.dlx", "x-delivery-limit": 5, "x-queue-type": "quorum"}},
          {"name": "orders.audit", "vhost": "shop", "durable": false, "auto_delete": false,
           "arguments": {"x-queue-type": "classic"}}],
        "exchanges": [
          {"name": "shop.orders", "vhost": "shop", "type": "topic", "durable": true,
           "auto_delete": false, "internal": false, "arguments": {}},
          {"name": "shop.dlx", "vhost": "shop", "type": "fanout", "durable": true,
           "auto_delete": false, "internal": false, "arguments": {}}],
        "bindings": [
          {"source": "shop.orders", "vhost": "shop", "destination": "orders.invoicing",
           "destination_type": "queue", "routing_key": "order.*", "arguments": {}},
          {"source": "", "vhost": "shop", "destination": "orders.audit",
           "destination_type": "queue", "routing_key": "orders.audit", "arguments": {}}]}"#;
    let mut live = read(export);
    // The broker's own global parameter is read (a project may declare it);
    // no plan shows it unless a project does.
    let first = live.topology.objects.pop_first().map(|(n, _)| n.to_string()); // the users after it
    assert_eq!(first.as_deref(), Some("global parameter \"cluster_name\""));
    assert_eq!(live.topology, *desired.topology);
    assert!(live.notes.is_empty(), "{:?}", notes(&live));
}

// --- reading some vhosts only ---

const TWO_VHOSTS: &str = r#"{"vhosts": [{"name": "a"}, {"name": "b", "tags": ["x"]}],
    "users": [{"name": "ua", "password_hash": "", "tags": []},
              {"name": "ub", "password": "plain", "tags": []},
              {"name": "none", "password_hash": "", "tags": []}],
    "permissions": [{"user": "ua", "vhost": "a", "configure": ".*", "write": ".*", "read": ".*"},
                    {"user": "ub", "vhost": "b", "configure": ".*", "write": ".*", "read": ".*"}],
    "parameters": [{"vhost": "b", "component": "a-plugin-of-ours", "name": "s", "value": {}}],
    "queues": [{"name": "qa", "vhost": "a", "durable": true, "auto_delete": false, "arguments": {}},
               {"name": "qb", "vhost": "b", "durable": true, "auto_delete": false, "arguments": {}}],
    "bindings": [{"source": "amq.fanout", "vhost": "b", "destination": "qb",
                  "destination_type": "queue", "routing_key": "", "arguments": {}},
                 {"source": "amq.fanout", "vhost": "c", "destination": "qc",
                  "destination_type": "queue", "routing_key": "", "arguments": {}}]}"#;

#[test]
fn reading_some_vhosts_notes_nothing_about_the_others() {
    let all = read(TWO_VHOSTS);
    assert_eq!(all.notes.len(), 6, "{:?}", notes(&all));

    let live = from_vhost_definitions_only(TWO_VHOSTS, "defs.json", None, &["a".into()]).unwrap();
    assert!(live.notes.is_empty(), "{:?}", notes(&live));
    assert_eq!(vhost(&live, "a"), vhost(&all, "a"));
    assert_eq!(names(&live.topology.users()), ["ua"]);
    // The others are there by name, so that a caller can list them.
    assert_eq!(names(&live.topology.vhosts), ["a", "b", "c"]);
    assert_eq!(vhost(&live, "b"), &Vhost::new("b"));
    assert_eq!(vhost(&live, "c"), &Vhost::new("c"));

    let b = from_vhost_definitions_only(TWO_VHOSTS, "defs.json", None, &["b".into()]).unwrap();
    assert_eq!(b.notes.len(), 3, "{:?}", notes(&b));
    assert!(notes(&b).iter().all(|n| !n.contains("\"c\"")), "{:?}", notes(&b));
    assert_eq!(vhost(&b, "b"), vhost(&all, "b"));
    assert_eq!(names(&b.topology.users()), ["ub"]);
}

#[test]
fn reading_all_vhosts_is_reading_the_export() {
    let all = read(TWO_VHOSTS);
    let same = from_vhost_definitions_only(TWO_VHOSTS, "defs.json", None, &[]).unwrap();
    assert_eq!(same.topology, all.topology);
    assert_eq!(same.notes, all.notes);
}

/// A large broker-wide inventory in parts, written twice: the second
/// write's parts are in the other slot, the first's are left beside them.
/// The read takes the slot its index names, and drops the other's parts
/// before it reads the listings (they are as large as the record).
#[test]
fn a_broker_wide_inventory_is_read_from_its_slot_and_the_other_slot_dropped() {
    use crate::model::{INVENTORY_PARAMETER, layout};
    let q = |name: String| ObjectKey::Queue { vhost: "v".into(), name };
    let inventory = |n: usize| Inventory {
        objects: (0..n).map(|i| q(format!("a.queue.with.a.long.name.{i:06}"))).collect(),
        ..Inventory::default()
    };
    let (first, second) = (inventory(40_000), inventory(30_000));
    let record = |inventory: &Inventory| serde_json::json!({"format": crate::model::RECORD_FORMAT, "projects": {"team": inventory.to_json()}});
    let a = layout(INVENTORY_PARAMETER, &record(&first), None);
    let b = layout(INVENTORY_PARAMETER, &record(&second), a.index.as_ref());
    assert_eq!(b.index.as_ref().and_then(|i| i.slot), Some('b'));
    let mut params: Vec<serde_json::Value> = a.puts[..a.puts.len() - 1]
        .iter()
        .chain(&b.puts)
        .map(|(name, value)| serde_json::json!({"name": name, "value": value}))
        .collect();
    params.push(serde_json::json!({"name": "cluster_name", "value": "c"}));
    let json = serde_json::json!({"vhosts": [{"name": "v"}], "global_parameters": params});
    let live = read(&json.to_string());
    // Its vhost is owned with its queues, as the record groups them.
    let mut second = second;
    second.objects.insert(ObjectKey::Vhost("v".into()));
    assert!(live.ownership == Ownership::single("team", second), "not the second write's inventory");

    let mut defs = super::definitions::parse(&json.to_string(), "defs.json").unwrap();
    super::normalise::drop_stale_parts(&mut defs.global_parameters);
    let names: Vec<&str> = defs.global_parameters.iter().map(|g| g.name.as_str()).collect();
    assert!(names.iter().all(|n| !n.starts_with("warren.inventory.a.")), "{names:?}");
    assert_eq!(names.iter().filter(|n| n.starts_with("warren.inventory.b.")).count(), b.puts.len() - 1);
    assert!(names.contains(&INVENTORY_PARAMETER) && names.contains(&"cluster_name"), "{names:?}");
}
