//! warren's records on the broker as a user meets them: a record of
//! another format than this warren's is refused, naming both formats and
//! what to do, and nothing is changed.

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

impl Drop for Case {
    fn drop(&mut self) {
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
