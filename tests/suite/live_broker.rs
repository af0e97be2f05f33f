//! Against the private test broker (`scripts/broker start`; WARREN_TEST_URL):
//! a definitions file imported into RabbitMQ and exported again reads to the
//! same topology as the file itself, so an unchanged topology shows no
//! changes. Each test works in its own vhosts and deletes them.

use crate::common::traffic::TestVhost;
use crate::common::{QUIRKS, TestBroker, realworld, root};
use serde_json::{Value as Json, json};
use warren::live::{from_definitions, from_vhost_definitions};
use warren::model::QueueType;

/// The items of `vhost` in `defs`, as the body of a single-vhost import:
/// without what the broker refuses or cannot hold here (plugin parameters,
/// server-named queues, bindings to objects the file lacks).
fn vhost_body(defs: &Json, vhost: &str) -> Json {
    let of = |list: &str| -> Vec<Json> {
        defs[list]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["vhost"].as_str() == Some(vhost))
            .map(|i| {
                let mut i = i.clone();
                i.as_object_mut().unwrap().remove("vhost");
                i
            })
            .collect()
    };
    let queues: Vec<Json> =
        of("queues").into_iter().filter(|q| !q["name"].as_str().unwrap().starts_with("amq.")).collect();
    let exchanges = of("exchanges");
    let has = |items: &[Json], name: &str| items.iter().any(|i| i["name"] == name);
    let bindings: Vec<Json> = of("bindings")
        .into_iter()
        .filter(|b| {
            let source = b["source"].as_str().unwrap();
            let dest = b["destination"].as_str().unwrap();
            let dest_ok = match b["destination_type"].as_str() {
                Some("queue") => has(&queues, dest),
                _ => dest.starts_with("amq.") || has(&exchanges, dest),
            };
            (source.starts_with("amq.") || has(&exchanges, source)) && dest_ok
        })
        .collect();
    let parameters: Vec<Json> = of("parameters")
        .into_iter()
        .filter(|p| matches!(p["component"].as_str(), Some("operator_policy" | "vhost-limits")))
        .collect();
    json!({
        "queues": queues, "exchanges": exchanges, "bindings": bindings,
        "policies": of("policies"), "parameters": parameters,
    })
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn realworld_files_read_the_same_after_a_trip_through_rabbitmq() {
    let _turn = crate::common::share();
    let broker = TestBroker::from_env();
    for path in std::iter::once(root().join(QUIRKS)).chain(realworld()) {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let number = stem.split('-').next().unwrap().to_string();
        let defs: Json = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let file = from_definitions(&defs.to_string(), &stem).unwrap();
        for (i, vhost) in file.topology.vhosts.keys().enumerate() {
            let test = TestVhost::with_settings(&format!("warren-live-{number}-{i}"), json!({}));
            let body = vhost_body(&defs, vhost);
            let answer = broker.request("POST", &format!("definitions/{}", test.name), Some(&body));
            let (code, text) = (answer.status, answer.body);
            assert!(code == 201 || code == 204, "{stem} {vhost}: import {code} {text}");

            let mut expected = from_vhost_definitions(&body.to_string(), &stem, Some(&test.name)).unwrap();
            let exported = test.export();
            let actual = from_vhost_definitions(&exported, "broker", Some(&test.name))
                .unwrap_or_else(|d| panic!("{stem} {vhost}: {}", d.message));
            // The test made its vhost with no default queue type: 3.x keeps
            // none, 4.x gives it the node's (classic), and says so.
            let dqt = actual.topology.vhosts[&test.name].settings.default_queue_type;
            assert!(matches!(dqt, None | Some(QueueType::Classic)), "{stem} {vhost}: {dqt:?}");
            expected.topology.vhosts.get_mut(&test.name).unwrap().settings.default_queue_type = dqt;
            assert_eq!(
                actual.topology, expected.topology,
                "{stem}, vhost {vhost}: the broker's export reads differently"
            );

            // `warren import` of the broker's export loads back the same.
            let imported = warren::import::import(&actual.topology, &[], "broker").unwrap();
            let dir = tempfile::tempdir().unwrap();
            for f in &imported.files {
                std::fs::write(dir.path().join(&f.name), &f.text).unwrap();
            }
            let loaded = warren::desired::load(dir.path());
            assert!(!loaded.has_errors(), "{stem} {vhost}: {:?}", loaded.diagnostics);
            assert!(imported.left_out.is_empty(), "{stem} {vhost}");
            let mut loaded = loaded.topology.into_inner();
            loaded.vhosts.values_mut().for_each(|v| v.external = Default::default());
            assert_eq!(loaded, actual.topology, "{stem} {vhost}: import of the export");

            // The cluster-wide export holds the same vhost, read the same, and
            // the permissions the broker gave the vhost's creator.
            let all = broker.request("GET", "definitions", None);
            assert_eq!(all.status, 200);
            let all = all.body;
            let cluster = from_definitions(&all, "broker").unwrap();
            let mut in_cluster = cluster.topology.vhosts[&test.name].clone();
            assert!(in_cluster.has_permission("guest"));
            in_cluster.retain_permissions(|_| false);
            assert_eq!(
                in_cluster, actual.topology.vhosts[&test.name],
                "{stem}, vhost {vhost}: cluster and vhost exports differ"
            );
        }
    }
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn the_vhost_default_queue_type_reads_like_the_files() {
    let _turn = crate::common::share();
    let broker = TestBroker::from_env();
    let settings = json!({"defaultqueuetype": "quorum", "default_queue_type": "quorum"});
    let test = TestVhost::with_settings("warren-live-dqt", settings);
    for (name, body) in [
        ("untyped", json!({"durable": true})),
        ("classic", json!({"durable": true, "arguments": {"x-queue-type": "classic"}})),
    ] {
        let answer = broker.request("PUT", &format!("queues/{}/{name}", test.name), Some(&body));
        let (code, text) = (answer.status, answer.body);
        assert!(code == 201 || code == 204, "{code} {text}");
    }
    let live = from_vhost_definitions(&test.export(), "broker", Some(&test.name)).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.toml");
    std::fs::write(
        &file,
        "vhosts = [\"warren-live-dqt\"]\n\n[vhost]\ndefault_queue_type = \"quorum\"\n\n\
         [queues.untyped]\n\n[queues.classic]\ntype = \"classic\"\n",
    )
    .unwrap();
    let desired = warren::desired::load(&file);
    assert!(!desired.has_errors(), "{:?}", desired.diagnostics);
    assert_eq!(live.topology.vhosts[&test.name].queues, desired.topology.vhosts[&test.name].queues);
}
