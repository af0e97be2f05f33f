//! warren's records on the broker as a user meets them: a record of
//! another format than this warren's is refused, naming both formats and
//! what to do, and nothing is changed; a large inventory is kept in parts,
//! broker-wide and inside a `policymaker`'s vhost, and one kept whole by an
//! earlier warren is read.

use serde_json::{Value as Json, json};

use crate::common::{Run, TestBroker, Turn, alone, flat, seg};

const INVENTORY: &str = "global-parameters/warren.inventory";
const JOURNAL: &str = "global-parameters/warren.journal";

/// The test node to this test alone (every administrator's run reads the
/// broker-wide records), and the records as they were, put back however
/// the test ends.
struct Case {
    broker: TestBroker,
    vhost: String,
    dir: tempfile::TempDir,
    saved: Vec<(&'static str, Option<Json>)>,
    _turn: Turn,
}

impl Case {
    fn new(vhost: &str) -> Case {
        let turn = alone();
        let broker = TestBroker::from_env();
        let saved =
            [INVENTORY, JOURNAL].into_iter().map(|p| (p, broker.try_get(p).map(|g| g["value"].clone()))).collect();
        let dir = tempfile::tempdir().unwrap();
        let topology = format!("vhosts = [\"{vhost}\"]\n\n[queues.orders]\ntype = \"classic\"\n");
        std::fs::write(dir.path().join("topology.toml"), topology).unwrap();
        let case = Case { broker, vhost: vhost.into(), dir, saved, _turn: turn };
        case.broker.delete(&format!("vhosts/{}", seg(&case.vhost)));
        case
    }

    /// Replaces the broker-wide record at `path` with `value`.
    fn put(&self, path: &str, value: Json) {
        self.broker.put(path, json!({ "value": value }));
    }

    /// `warren ARGS`, which must fail with exit 1; its stderr on one line.
    fn refused(&self, args: &[&str]) -> String {
        let run: Run = self.broker.warren(args, &[]);
        assert_eq!(run.code, 1, "warren {}:\n{}\n{}", args.join(" "), run.stdout, run.stderr);
        flat(&run.stderr)
    }
}

/// The parts a large inventory may be kept in (`model::record_parts`), as
/// far as these tests make them.
fn parts() -> Vec<String> {
    ['a', 'b'].iter().flat_map(|slot| (1..=4).map(move |i| format!("{INVENTORY}.{slot}.{i}"))).collect()
}

impl Drop for Case {
    fn drop(&mut self) {
        for part in parts() {
            self.broker.delete(&part);
        }
        self.broker.delete(&format!("vhosts/{}", seg(&self.vhost)));
        for (path, value) in &self.saved {
            match value {
                Some(value) => self.put(path, value.clone()),
                None => self.broker.delete(path),
            }
        }
    }
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn records_of_another_format_are_refused_naming_both_formats_and_nothing_changes() {
    let case = Case::new("t-records-format");
    let dir = case.dir.path().to_str().unwrap().to_string();
    let plan = ["plan", dir.as_str()];
    let apply = ["apply", dir.as_str(), "--auto-approve"];

    // A journal as warren wrote it before records shared one format.
    case.broker.delete(INVENTORY);
    case.put(JOURNAL, json!({"format": 1, "generation": 7, "current": null, "migrations": {}, "history": []}));
    let said = "it was written in record format 1, and this warren reads format 3: finish or abort its migrations in flight with the warren that wrote it, then delete it to start afresh";
    // status and apply (which reads the journal as it takes the lock) say it as unreadable.
    for args in [&["status"][..], &apply[..]] {
        let stderr = case.refused(args);
        assert!(
            stderr.contains(&format!("warren's journal (global parameter `warren.journal`) is unreadable: {said}")),
            "{stderr}"
        );
    }
    let stderr = case.refused(&plan);
    let refusal = format!("warren's journal (global parameter `warren.journal`) is of another format: {said}");
    assert!(stderr.contains(&refusal), "{stderr}");
    assert!(stderr.contains("help: to delete it: `rabbitmqctl clear_global_parameter warren.journal`"), "{stderr}");

    // An inventory as warren wrote it with projects, before the formats were one.
    case.broker.delete(JOURNAL);
    let records = json!({"format": 2, "projects": {"default": {"format": 1, "users": [], "vhosts": {}}}});
    case.put(INVENTORY, records.clone());
    for args in [&plan[..], &apply[..]] {
        let stderr = case.refused(args);
        let refusal = "warren's inventory (global parameter `warren.inventory`) is of another format: it was written in record format 2, and this warren reads format 3: go on with the warren that wrote it, or delete it to start afresh";
        assert!(stderr.contains(refusal), "{stderr}");
    }
    assert!(!case.broker.exists(&format!("vhosts/{}", seg(&case.vhost))), "apply changed nothing");
    assert_eq!(case.broker.get(INVENTORY)["value"], records, "the records are as they were");
    // apply took the lock, and with it the journal, which keeps no trace of a run that changed nothing.
    let journal = &case.broker.get(JOURNAL)["value"];
    assert_eq!((&journal["current"], &journal["history"]), (&Json::Null, &json!([])), "{journal}");
}

/// The inventory as the broker holds it: the parameter's value, or its
/// parts' texts joined when it is kept in parts.
fn inventory(broker: &TestBroker) -> Json {
    let value = broker.get(INVENTORY)["value"].clone();
    if value["format"] != json!(4) {
        return value;
    }
    let slot = value["slot"].as_str().unwrap();
    let text: String = (1..=value["parts"].as_u64().unwrap())
        .map(|i| broker.get(&format!("{INVENTORY}.{slot}.{i}"))["value"]["text"].as_str().unwrap().to_string())
        .collect();
    serde_json::from_str(&text).unwrap()
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_large_inventory_is_kept_in_parts_and_one_kept_whole_before_is_read() {
    let case = Case::new("t-records-parts");
    let dir = case.dir.path().to_str().unwrap().to_string();
    case.broker.delete(JOURNAL);
    // As an earlier warren kept a large inventory: whole, in one global
    // parameter. Another project's 60,000 queues, 1.3 MB of JSON.
    let queues: Vec<String> = (0..60_000).map(|i| format!("other.queue.{i:06}")).collect();
    let vhosts = json!({"t-records-parts-other": {"queues": queues}});
    let other = json!({"format": 3, "users": [], "vhosts": vhosts, "declared_with": {"users": {}, "vhosts": {}}});
    case.put(INVENTORY, json!({"format": 3, "projects": {"other": other}}));
    let warren = |args: &[&str], code: i32| {
        let run: Run = case.broker.warren(args, &[]);
        assert_eq!(run.code, code, "warren {}:\n{}\n{}", args.join(" "), run.stdout, run.stderr);
    };

    // Read whole; written in parts, with the other project's records. An
    // apply writes its records twice (its claim, then what it did): the
    // second write went to the other slot, whose parts the first index named.
    let left = |index: &Json| {
        let other = if index["slot"] == json!("a") { "b" } else { "a" };
        let n = index["other"].as_u64().unwrap();
        assert!(n >= 2, "{index}");
        (1..=n).all(|i| case.broker.exists(&format!("{INVENTORY}.{other}.{i}")))
    };
    warren(&["apply", &dir, "--auto-approve"], 0);
    let index = case.broker.get(INVENTORY)["value"].clone();
    assert_eq!(index["format"], json!(4), "{index}");
    assert!(index["parts"].as_u64().unwrap() >= 2, "{index}");
    assert!(left(&index), "the parts of the index before are left for its readers: {index}");
    let records = inventory(&case.broker);
    let others = &records["projects"]["other"]["vhosts"]["t-records-parts-other"]["queues"];
    assert_eq!(others.as_array().unwrap().len(), 60_000);
    assert_eq!(records["projects"]["default"]["vhosts"]["t-records-parts"]["queues"], json!(["orders"]));
    warren(&["plan", &dir, "--detailed-exitcode"], 0);

    // Read in parts, and written again.
    let topology = "vhosts = [\"t-records-parts\"]\n\n[queues.orders]\ntype = \"classic\"\n\n[queues.invoices]\n";
    std::fs::write(case.dir.path().join("topology.toml"), topology).unwrap();
    warren(&["apply", &dir, "--auto-approve"], 0);
    let index = case.broker.get(INVENTORY)["value"].clone();
    assert!(left(&index), "{index}");
    let records = inventory(&case.broker);
    assert_eq!(records["projects"]["default"]["vhosts"]["t-records-parts"]["queues"], json!(["invoices", "orders"]));
    warren(&["plan", &dir, "--detailed-exitcode"], 0);
}

/// warren's inventory records in the case's vhost, parts too, by name,
/// with their values.
fn vhost_records(case: &crate::common::Case) -> std::collections::BTreeMap<String, Json> {
    let listed = case.get("exchanges/{V}?columns=name,arguments");
    let records =
        listed.as_array().unwrap().iter().filter(|x| x["name"].as_str().unwrap().starts_with("warren.records."));
    let value = |x: &Json| serde_json::from_str(x["arguments"]["x-warren-record"].as_str().unwrap()).unwrap();
    records.map(|x| (x["name"].as_str().unwrap().to_string(), value(x))).collect()
}

/// The record exchange of the case's inventory, which must be split, with
/// the text of its parts joined: checks that its parts, and no other
/// generation or part, are left.
fn split_inventory(case: &crate::common::Case) -> (String, String) {
    let records = vhost_records(case);
    let (index, parts): (Vec<_>, Vec<_>) = records.iter().partition(|(name, _)| !name.contains(".part-"));
    let [(name, index)] = index[..] else { panic!("one generation: {:?}", records.keys()) };
    assert_eq!(index["format"], json!(4), "{index}");
    let n = index["parts"].as_u64().unwrap() as usize;
    assert!(n >= 2, "{index}");
    let names: Vec<&str> = parts.iter().map(|(p, _)| p.as_str()).collect();
    let mut wanted: Vec<String> = (1..=n).map(|i| format!("{name}.part-{i}")).collect();
    wanted.sort();
    assert_eq!(names, wanted, "the parts of its generation, and only them");
    let text: String = (1..=n).map(|i| records[&format!("{name}.part-{i}")]["text"].as_str().unwrap()).collect();
    assert_eq!(text.len() as u64, index["bytes"].as_u64().unwrap());
    (name.clone(), text)
}

/// A `policymaker`'s project keeps its inventory in its vhost: 1,100
/// queues with long names, each bound by a long key, make over 1 MB of JSON,
/// written in parts of a generation's exchange and read back; an inventory
/// an earlier warren kept whole in one exchange is read, and written again
/// in parts.
#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_policymakers_large_inventory_is_kept_in_parts_in_its_vhost_and_one_kept_whole_before_is_read() {
    let case = crate::common::Case::policymaker("t-records-vhost-parts");
    let name = |i: usize| format!("{}.{i:05}", "q".repeat(234));
    let mut topology = String::from("vhosts = [\"{V}\"]\n\n[exchanges.x]\ntype = \"direct\"\n");
    for i in 0..1_100 {
        let q = name(i);
        topology.push_str(&format!(
            "\n[queues.\"{q}\"]\n\n[[bindings]]\nsource = \"x\"\nqueue = \"{q}\"\nrouting_key = \"{q}\"\n"
        ));
    }
    case.topology(&topology);
    let plan_unchanged = || {
        let run = case.plan(&["--detailed-exitcode"], &[]);
        assert_eq!(run.code, 0, "plan:\n{}\n{}", run.stdout, run.stderr);
    };
    let queues = |text: &str| {
        let inventory: Json = serde_json::from_str(text).unwrap();
        assert_eq!(inventory["format"], json!(3));
        inventory["vhosts"][&case.vhost]["queues"].as_array().unwrap().len()
    };

    // Written in parts (twice: the claim, then what the apply did; the
    // claim's generation is gone with its parts), read back by a plan.
    case.apply_ok(&[], &[]);
    let (record, text) = split_inventory(&case);
    assert!(text.len() > 1_000_000, "{} bytes", text.len());
    assert_eq!(queues(&text), 1_100);
    plan_unchanged();

    // As an earlier warren kept it: whole, in the exchange of the next generation.
    let generation: u64 = record.rsplit_once('.').unwrap().1.parse().unwrap();
    for name in vhost_records(&case).keys() {
        case.broker.delete(&format!("exchanges/{}/{}", seg(&case.vhost), seg(name)));
    }
    let whole = format!("warren.records.default.{}", generation + 1);
    let exchange = json!({"type": "fanout", "durable": true, "auto_delete": false, "internal": true,
        "arguments": {"x-warren-record": text}});
    case.broker.put(&format!("exchanges/{}/{}", seg(&case.vhost), seg(&whole)), exchange);
    assert_eq!(vhost_records(&case).into_keys().collect::<Vec<_>>(), [whole.as_str()]);
    plan_unchanged();

    // Read whole, written again in parts, with one more queue.
    topology.push_str("\n[queues.invoices]\n");
    case.topology(&topology);
    case.apply_ok(&[], &[]);
    let (record, text) = split_inventory(&case);
    let now: u64 = record.rsplit_once('.').unwrap().1.parse().unwrap();
    assert!(now > generation + 1, "{record} after {whole}");
    assert_eq!(queues(&text), 1_101);
    plan_unchanged();
}
