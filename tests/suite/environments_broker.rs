//! Environments on real brokers: three private nodes as three
//! environments of one project (`scripts/broker fleet`), planned in one
//! report and rolled out stage by stage.

use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde_json::json;

use super::common::broker::{TestBroker, readable_dir};
use super::common::{Run, warren_env};

/// One test at a time on the fleet: one stops a node, one holds a stage.
static FLEET: Mutex<()> = Mutex::new(());

/// The three nodes, by environment: one, two, three.
struct Fleet {
    nodes: Vec<String>,
    urls: Vec<String>,
}

const NAMES: [&str; 3] = ["one", "two", "three"];

impl Fleet {
    fn from_env() -> Fleet {
        let list = |name: &str| -> Vec<String> {
            let v = std::env::var(format!("WARREN_TEST_FLEET_{name}")).unwrap_or_else(|_| {
                panic!("WARREN_TEST_FLEET_{name} is not set: run the tests with scripts/test, which starts the fleet")
            });
            v.split_whitespace().map(str::to_string).collect()
        };
        let fleet = Fleet { nodes: list("NODES"), urls: list("URLS") };
        assert_eq!((fleet.nodes.len(), fleet.urls.len()), (3, 3), "three nodes");
        fleet
    }

    fn broker(&self, i: usize) -> TestBroker {
        TestBroker::at(&self.urls[i], None)
    }

    /// Each environment's URL variable, set to its node.
    fn variables(&self, project: &str) -> Vec<(String, String)> {
        NAMES.iter().zip(&self.urls).map(|(n, u)| (variable(project, n), u.clone())).collect()
    }

    /// `warren ARGS` with every environment's variable set, and no other
    /// broker named.
    fn warren(&self, project: &str, args: &[&str]) -> Run {
        self.warren_with(&self.variables(project), args)
    }

    /// `warren ARGS` with these variables set, and no other broker named.
    fn warren_with(&self, vars: &[(String, String)], args: &[&str]) -> Run {
        let mut env: Vec<(&str, Option<&str>)> = vars.iter().map(|(k, v)| (k.as_str(), Some(v.as_str()))).collect();
        env.extend([("WARREN_URL", None), ("WARREN_AMQP_URL", None)]);
        warren_env(args, &env)
    }

    /// Stops node `i`'s app; it starts again when the guard drops.
    fn stop(&self, i: usize) -> Stopped<'_> {
        ctl(&self.nodes[i], "stop_app");
        Stopped { fleet: self, i }
    }
}

struct Stopped<'a> {
    fleet: &'a Fleet,
    i: usize,
}

impl Drop for Stopped<'_> {
    fn drop(&mut self) {
        ctl(&self.fleet.nodes[self.i], "start_app");
        let broker = self.fleet.broker(self.i);
        for _ in 0..120 {
            if broker.try_get("overview").is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("node {} did not come back", self.fleet.nodes[self.i]);
    }
}

fn ctl(node: &str, action: &str) {
    let ctl = std::env::var("WARREN_TEST_RABBITMQCTL").unwrap_or_else(|_| "rabbitmqctl".into());
    let out = std::process::Command::new(ctl).args(["-n", node, action]).output().expect("rabbitmqctl runs");
    assert!(out.status.success(), "rabbitmqctl {action} {node}: {}", String::from_utf8_lossy(&out.stderr));
}

fn variable(project: &str, env: &str) -> String {
    format!("{}_{}_URL", project.to_uppercase().replace('-', "_"), env.to_uppercase())
}

/// A project of three environments whose base is [`v1`], in vhost
/// `project`; with `limits`, each environment's overlay sets queue `work`'s
/// length limit: 100, 200, 300. Stages: one, then two and three.
fn project(dir: &Path, project: &str, limits: bool) {
    let mut toml = format!("[project]\nname = \"{project}\"\n");
    for (i, name) in NAMES.iter().enumerate() {
        toml += &format!("\n[environments.{name}]\nurl_env = \"{}\"\n", variable(project, name));
        if !limits {
            continue;
        }
        toml += &format!("overlays = [\"overlays/{name}\"]\n");
        let overlay = dir.join("overlays").join(name);
        std::fs::create_dir_all(&overlay).unwrap();
        let limit = 100 * (i + 1);
        std::fs::write(
            overlay.join("limits.toml"),
            format!("vhosts = [\"{project}\"]\n\n[queues.work]\narguments.x-max-length = {limit}\n"),
        )
        .unwrap();
    }
    toml += "\n[deploy]\nstages = [[\"one\"], [\"two\", \"three\"]]\n";
    std::fs::write(dir.join("warren.toml"), toml).unwrap();
    let v1 = format!(
        "vhosts = [\"{project}\"]\n\n[exchanges.events]\ntype = \"fanout\"\n\n\
         [queues.work]\ntype = \"classic\"\narguments = {{ x-max-length = 10 }}\n\n\
         [[bindings]]\nsource = \"events\"\nqueue = \"work\"\n"
    );
    std::fs::write(dir.join("topology.toml"), v1).unwrap();
}

/// The base, changed: queue `work` replaced by the quorum queue `work.v2`,
/// a live migration on each broker.
fn v2(dir: &Path, project: &str) {
    let v2 = format!(
        "vhosts = [\"{project}\"]\n\n[exchanges.events]\ntype = \"fanout\"\n\n\
         [queues.\"work.v2\"]\ntype = \"quorum\"\nreplaces = \"work\"\n\n\
         [[bindings]]\nsource = \"events\"\nqueue = \"work.v2\"\n"
    );
    std::fs::write(dir.join("topology.toml"), v2).unwrap();
}

/// A fleet test's start: its turn on the fleet (one test at a time), the
/// fleet, and the files of [`project`] `name` in a directory of their own,
/// on nodes that do not hold it yet ([`afresh`]).
fn fleet_project(name: &str, limits: bool) -> (MutexGuard<'static, ()>, Fleet, tempfile::TempDir) {
    let turn = FLEET.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let fleet = Fleet::from_env();
    afresh(&fleet, name);
    let dir = readable_dir();
    project(dir.path(), name, limits);
    (turn, fleet, dir)
}

/// Each node without the project's vhost and without warren's records, as
/// a first run finds it: the fleet's nodes are these tests' alone.
fn afresh(fleet: &Fleet, vhost: &str) {
    for i in 0..3 {
        let broker = fleet.broker(i);
        broker.delete(&format!("vhosts/{vhost}"));
        for p in broker.get("global-parameters").as_array().into_iter().flatten() {
            let name = p["name"].as_str().unwrap_or_default();
            if name.starts_with("warren") {
                broker.delete(&format!("global-parameters/{name}"));
            }
        }
    }
}

/// Waits until an apply holds environment `env`'s lock, as its status says.
fn running(fleet: &Fleet, project: &str, path: &str, env: &str) {
    for _ in 0..120 {
        let status = fleet.warren(project, &["status", path, "--env", env]);
        if status.stdout.contains("An apply is running") {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("no apply took environment {env}'s lock");
}

/// The line of the rollout's end report about environment `name`.
fn outcome(run: &Run, name: &str) -> String {
    let report = run.stdout.rsplit("\nRollout of ").next().unwrap_or_default();
    report.lines().find(|l| l.trim_start().starts_with(&format!("{name} "))).unwrap_or_default().to_string()
}

fn queue(fleet: &Fleet, i: usize, vhost: &str, name: &str) -> Option<serde_json::Value> {
    fleet.broker(i).try_get(&format!("queues/{vhost}/{name}"))
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn one_report_for_three_brokers_one_stopped_then_all_converge_with_their_overlays_values() {
    let name = "fleet-converge";
    let (_turn, fleet, dir) = fleet_project(name, true);
    let path = dir.path().to_str().unwrap();

    // Node three is down: two plans and one clear error, exit 1.
    let stopped = fleet.stop(2);
    let run = fleet.warren(name, &["plan", path, "--env", "all", "--format", "json"]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let envs = doc["environments"].as_array().unwrap();
    let by_name = |n: &str| envs.iter().find(|e| e["name"] == n).unwrap().clone();
    for n in ["one", "two"] {
        assert_eq!(by_name(n)["drift"], true, "{n}: {}", run.stdout);
        assert_eq!(by_name(n)["plan"]["summary"]["add"], 4, "{n}: vhost, exchange, queue, binding");
    }
    let three = by_name("three");
    assert!(three["plan"].is_null());
    let error = three["errors"][0]["message"].as_str().unwrap();
    assert!(error.contains("cannot reach the RabbitMQ management API"), "{error}");
    assert!(!three["broker"].as_str().unwrap().contains("guest:"), "no credentials in the report");
    // The human report says the same, in a table first.
    let run = fleet.warren(name, &["plan", path, "--env", "all"]);
    assert_eq!(run.code, 1);
    let table: Vec<&str> = run.stdout.lines().skip(2).take(4).collect();
    assert!(table[0].contains("ENVIRONMENT") && table[0].contains("DRIFT"), "{}", run.stdout);
    assert!(table[1].starts_with("  one ") && table[1].ends_with(" never applied"), "{}", run.stdout);
    assert!(table[2].starts_with("  three ") && table[2].contains("error: cannot reach"), "{}", run.stdout);
    drop(stopped);

    // With it started, one rollout converges all three, stage by stage.
    let run = fleet.warren(name, &["apply", path, "--env", "all", "--auto-approve"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(outcome(&run, "one").contains("stage 1  applied"), "{}", run.stdout);
    assert!(outcome(&run, "three").contains("stage 2  applied"), "{}", run.stdout);
    let run = fleet.warren(name, &["plan", path, "--env", "all", "--detailed-exitcode"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.ends_with("3 environments planned: no changes.\n"), "{}", run.stdout);
    // Each broker has what its overlay says.
    for i in 0..3 {
        let work = queue(&fleet, i, name, "work").unwrap();
        assert_eq!(work["arguments"]["x-max-length"], json!(100 * (i + 1)), "node {i}");
    }
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_stage_that_pauses_stops_the_rollout_and_a_rerun_goes_on() {
    let name = "fleet-pause";
    let (_turn, fleet, dir) = fleet_project(name, false);
    let path = dir.path().to_str().unwrap();
    let run = fleet.warren(name, &["apply", path, "--env", "all", "--auto-approve"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);

    // Messages wait in environment one's queue, with no consumer: its
    // migration to quorum pauses at the drain timeout.
    let one = fleet.broker(0);
    for i in 0..5 {
        let body =
            json!({"properties": {}, "routing_key": "work", "payload": format!("m{i}"), "payload_encoding": "string"});
        one.post(&format!("exchanges/{name}/amq.default/publish"), body);
    }
    v2(dir.path(), name);
    let apply_all = ["apply", path, "--env", "all", "--auto-approve"];

    // While an apply of environment one holds its lock (waiting for a
    // drain that does not come), a rollout that cannot lock one changes
    // nothing anywhere, says why, ends as locked (exit 5), and gives back
    // the locks it took of two and three.
    std::thread::scope(|s| {
        let holder =
            s.spawn(|| fleet.warren(name, &["apply", path, "--env", "one", "--auto-approve", "--drain-timeout", "6s"]));
        running(&fleet, name, path, "one");
        let run = fleet.warren(name, &[&apply_all[..], &["--lock-timeout", "0s"]].concat());
        assert_eq!(run.code, 5, "locked:\n{}\n{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("The lock was not released within --lock-timeout 0s"), "{}", run.stdout);
        assert!(run.stderr.contains("Nothing was changed: every chosen environment must be planned"), "{}", run.stderr);
        assert!(run.stderr.contains("environment one: Another apply holds the lock"), "whose lock: {}", run.stderr);
        for (i, env) in [(1, "two"), (2, "three")] {
            assert!(queue(&fleet, i, name, "work.v2").is_none(), "nothing changed on node {i}");
            let status = fleet.warren(name, &["status", path, "--env", env]);
            assert!(status.stdout.contains("No apply is running."), "{env}'s lock given back: {}", status.stdout);
        }
        assert_eq!(holder.join().unwrap().code, 3, "the holder's migration pauses");
    });

    // A rollout holds every environment's lock from its plan to the end of
    // its apply: stage two's are held while stage one waits, and given
    // back when the rollout stops before stage two.
    std::thread::scope(|s| {
        let rollout = s.spawn(|| fleet.warren(name, &[&apply_all[..], &["--drain-timeout", "6s"]].concat()));
        running(&fleet, name, path, "three");
        let single = fleet.warren(name, &["apply", path, "--env", "three", "--auto-approve", "--lock-timeout", "0s"]);
        assert_eq!(single.code, 5, "{}\n{}", single.stdout, single.stderr);
        assert!(single.stderr.contains("(a rollout of 3 environments)"), "who holds it: {}", single.stderr);
        let run = rollout.join().unwrap();
        assert_eq!(run.code, 3, "paused:\n{}\n{}", run.stdout, run.stderr);
        assert!(outcome(&run, "one").contains("paused"), "{}", run.stdout);
        assert!(outcome(&run, "two").contains("not started"), "{}", run.stdout);
        assert!(outcome(&run, "three").contains("not started"), "{}", run.stdout);
    });
    for (i, env) in [(1, "two"), (2, "three")] {
        assert!(queue(&fleet, i, name, "work.v2").is_none(), "stage 2 was not started on node {i}");
        let status = fleet.warren(name, &["status", path, "--env", env]);
        assert!(status.stdout.contains("No apply is running."), "{env}'s lock given back: {}", status.stdout);
    }

    // Someone reads the old queue empty; the rollout goes on where it stopped.
    let got = one.post(
        &format!("queues/{name}/work/get"),
        json!({"count": 5, "ackmode": "ack_requeue_false", "encoding": "auto"}),
    );
    assert_eq!(got.as_array().map(Vec::len), Some(5), "{got}");
    let run = fleet.warren(name, &["apply", path, "--env", "all", "--auto-approve", "--drain-timeout", "60s"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    for i in 0..3 {
        assert_eq!(queue(&fleet, i, name, "work.v2").unwrap()["type"], "quorum", "node {i}");
        assert!(queue(&fleet, i, name, "work").is_none(), "node {i}: the old queue is gone");
    }
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn a_saved_plan_of_three_environments_is_applied_each_checked_on_its_own_broker() {
    let name = "fleet-saved";
    let (_turn, fleet, dir) = fleet_project(name, true);
    let path = dir.path().to_str().unwrap();
    let file = dir.path().join("plans.json");
    let file = file.to_str().unwrap();
    let run = fleet.warren(name, &["plan", path, "--env", "all", "--out", file]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("Saved the plans of 3 environments"), "{}", run.stderr);
    // `show` prints the report of the three as `plan` printed it, from the
    // file alone.
    let shown = fleet.warren(name, &["show", file]);
    assert_eq!((shown.code, &shown.stdout), (0, &run.stdout), "{}", shown.stderr);
    // Broker two changes after the plan: its plan is refused there, and
    // only there; the stage it is in still ends, and the rollout stops.
    fleet.broker(1).put(&format!("vhosts/{name}"), json!({}));
    let run = fleet.warren(name, &["apply", file, "--auto-approve"]);
    assert_eq!(run.code, 4, "{}\n{}", run.stdout, run.stderr);
    assert!(outcome(&run, "one").contains("applied"), "{}", run.stdout);
    assert!(outcome(&run, "two").contains("refused"), "{}", run.stdout);
    assert!(outcome(&run, "three").contains("applied"), "{}", run.stdout);
    assert!(run.stdout.contains("what this plan depends on changed on the broker since it was made"), "{}", run.stdout);
    assert!(run.stdout.contains(&format!("vhost \"{name}\": created")), "{}", run.stdout);
    assert!(queue(&fleet, 0, name, "work").is_some() && queue(&fleet, 2, name, "work").is_some());
    assert!(queue(&fleet, 1, name, "work").is_none(), "nothing applied on the changed broker");
}

/// Two environments that reach one broker under two addresses: the first
/// holds the broker's lock from the rollout's plan, so the second is
/// planned without it and plans again under it in its stage, rather than
/// waiting for a lock its own rollout holds.
#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn two_environments_on_one_broker_are_rolled_out_without_waiting_for_each_other() {
    let name = "fleet-one-broker";
    let (_turn, fleet, dir) = fleet_project(name, false);
    // Environment two reaches node one, as `localhost`.
    let again = fleet.urls[0].replace("127.0.0.1", "localhost");
    assert_ne!(again, fleet.urls[0], "another address of node one");
    let mut vars = fleet.variables(name);
    vars[1].1 = again;
    let path = dir.path().to_str().unwrap();
    let args = ["apply", path, "--env", "one", "--env", "two", "--auto-approve", "--lock-timeout", "5s"];
    let run = fleet.warren_with(&vars, &args);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("Environment two reaches the broker of environment one"), "{}", run.stderr);
    assert!(outcome(&run, "two").contains("stage 2  applied"), "{}", run.stdout);
    assert!(queue(&fleet, 0, name, "work").is_some());
}

/// On the test node (not the fleet): an environment warren never applied
/// is said so in the DRIFT column, not `yes`.
#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn the_drift_of_an_environment_never_applied_says_so() {
    let _turn = super::common::alone();
    let broker = TestBroker::from_env();
    let vhost = "t-env-never-applied";
    broker.delete(&format!("vhosts/{vhost}"));
    // An earlier run's records of the project: this one starts from none.
    if let Some(mut records) = broker.try_get("global-parameters/warren.inventory")
        && records["value"]["projects"].get("t-env-never").is_some()
    {
        records["value"]["projects"].as_object_mut().unwrap().remove("t-env-never");
        broker.put("global-parameters/warren.inventory", records);
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("warren.toml"),
        "[project]\nname = \"t-env-never\"\n\n[environments.one]\nurl_env = \"T_ENV_NEVER_URL\"\n",
    )
    .unwrap();
    let files = |queues: &[&str]| {
        let mut toml = format!("vhosts = [\"{vhost}\"]\n");
        for q in queues {
            toml += &format!("\n[queues.{q}]\ntype = \"classic\"\n");
        }
        std::fs::write(dir.path().join("topology.toml"), toml).unwrap();
    };
    let path = dir.path().to_str().unwrap();
    let env = [("T_ENV_NEVER_URL", Some(broker.url.as_str())), ("WARREN_URL", None), ("WARREN_AMQP_URL", None)];
    let drift = |args: &[&str]| -> String {
        let run = warren_env(args, &env);
        assert!(run.code == 0 || run.code == 2, "{}\n{}", run.stdout, run.stderr);
        let row =
            run.stdout.lines().find(|l| l.trim_start().starts_with("one ")).unwrap_or_else(|| panic!("{}", run.stdout));
        // ENVIRONMENT BROKER ADD CHANGE DESTROY MIGRATE DRIFT
        row.split_whitespace().skip(6).collect::<Vec<_>>().join(" ")
    };
    files(&["a"]);
    assert_eq!(drift(&["plan", path, "--env", "one"]), "never applied");
    let json = warren_env(&["plan", path, "--env", "one", "--format", "json"], &env);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["environments"][0]["never_applied"], true, "{}", json.stdout);
    let run = warren_env(&["apply", path, "--env", "one", "--auto-approve"], &env);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(drift(&["plan", path, "--env", "one"]), "no");
    files(&["a", "b"]);
    assert_eq!(drift(&["plan", path, "--env", "one"]), "yes");
    broker.delete(&format!("vhosts/{vhost}"));
}
