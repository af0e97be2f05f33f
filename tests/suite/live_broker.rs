//! Against the private test broker (`scripts/broker start`; WARREN_TEST_URL):
//! a definitions file imported into RabbitMQ and exported again reads to the
//! same topology as the file itself, so an unchanged topology shows no
//! changes. Each test works in its own vhosts and deletes them.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::{QUIRKS, realworld, root};
use serde_json::{Value as Json, json};
use warren::live::{from_definitions, from_vhost_definitions};
use warren::model::QueueType;

/// The management API of the test broker. A missing broker fails the test:
/// `scripts/test` always starts one.
fn broker() -> Option<String> {
    Some(std::env::var("WARREN_TEST_URL").expect("WARREN_TEST_URL is not set: run the tests with scripts/test"))
}

/// One HTTP call through curl: the status and the body.
fn api(base: &str, method: &str, path: &str, body: Option<&Json>) -> (u16, String) {
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-w", "\n%{http_code}", "-X", method])
        .args(["-H", "content-type: application/json"])
        .arg(format!("{base}/api/{path}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    if body.is_some() {
        cmd.args(["--data-binary", "@-"]);
    }
    let mut child = cmd.spawn().expect("curl runs");
    let mut stdin = child.stdin.take().unwrap();
    if let Some(b) = body {
        stdin.write_all(b.to_string().as_bytes()).unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

/// A vhost that exists for one test and is deleted when it ends.
struct TestVhost {
    base: String,
    name: String,
}

impl TestVhost {
    fn new(base: &str, name: &str, settings: Json) -> TestVhost {
        let v = TestVhost { base: base.to_string(), name: name.to_string() };
        api(base, "DELETE", &format!("vhosts/{name}"), None);
        let (code, body) = api(base, "PUT", &format!("vhosts/{name}"), Some(&settings));
        assert!(code == 201 || code == 204, "creating vhost {name}: {code} {body}");
        v
    }

    fn export(&self) -> String {
        let (code, body) = api(&self.base, "GET", &format!("definitions/{}", self.name), None);
        assert_eq!(code, 200, "{body}");
        body
    }
}

impl Drop for TestVhost {
    fn drop(&mut self) {
        api(&self.base, "DELETE", &format!("vhosts/{}", self.name), None);
    }
}

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
    let Some(base) = broker() else { return };
    for path in std::iter::once(root().join(QUIRKS)).chain(realworld()) {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let number = stem.split('-').next().unwrap().to_string();
        let defs: Json = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let file = from_definitions(&defs.to_string(), &stem).unwrap();
        for (i, vhost) in file.topology.vhosts.keys().enumerate() {
            let test = TestVhost::new(&base, &format!("warren-live-{number}-{i}"), json!({}));
            let body = vhost_body(&defs, vhost);
            let (code, answer) = api(&base, "POST", &format!("definitions/{}", test.name), Some(&body));
            assert!(code == 201 || code == 204, "{stem} {vhost}: import {code} {answer}");

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
            let mut loaded = loaded.topology;
            loaded.vhosts.values_mut().for_each(|v| v.external = Default::default());
            assert_eq!(loaded, actual.topology, "{stem} {vhost}: import of the export");

            // The cluster-wide export holds the same vhost, read the same, and
            // the permissions the broker gave the vhost's creator.
            let (code, all) = api(&base, "GET", "definitions", None);
            assert_eq!(code, 200);
            let cluster = from_definitions(&all, "broker").unwrap();
            let mut in_cluster = cluster.topology.vhosts[&test.name].clone();
            assert!(in_cluster.permissions.contains_key("guest"));
            in_cluster.permissions.clear();
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
    let Some(base) = broker() else { return };
    let settings = json!({"defaultqueuetype": "quorum", "default_queue_type": "quorum"});
    let test = TestVhost::new(&base, "warren-live-dqt", settings);
    for (name, body) in [
        ("untyped", json!({"durable": true})),
        ("classic", json!({"durable": true, "arguments": {"x-queue-type": "classic"}})),
    ] {
        let (code, answer) = api(&base, "PUT", &format!("queues/{}/{name}", test.name), Some(&body));
        assert!(code == 201 || code == 204, "{code} {answer}");
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
