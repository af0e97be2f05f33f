//! What routing tests add to reading and checking the files: `warren test`
//! of 1,000 expectations (800 messages to exchanges of every type, 200 of
//! queues' dead letters) on the generated vhost of 10,000 queues, 500
//! exchanges and 20,000 bindings, against `warren validate` of the same
//! files (which reads the test files and checks their names too), side
//! by side through the binary. Target: test / validate <= 1.25. Run:
//! `cargo bench --bench routing_test`.

mod common;

use std::fmt::Write as _;
use std::process::Command;

use common::{paired, warren_binary};
use warren::routing::{Keys, Message, Reason, Router, Version};

/// The generated names (see `warren::testing::large_topology`).
fn exchange_name(i: usize) -> String {
    format!("bench.x{i:04}")
}

fn queue_name(i: usize) -> String {
    format!("bench.q{i:05}")
}

const TESTS: usize = 1_000;

fn main() {
    let (queues, exchanges, bindings) = (10_000, 500, 20_000);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let topology = warren::testing::large_topology(queues, exchanges, bindings);
    let files = warren::import::import(&topology, &[], "generated").expect("the generated topology imports");
    // WARREN_BENCH_DIR keeps the files there, for a profiler.
    let desired = std::env::var_os("WARREN_BENCH_DIR").map_or_else(|| dir.path().join("topology"), Into::into);
    std::fs::create_dir_all(&desired).unwrap();
    for f in &files.files {
        std::fs::write(desired.join(&f.name), &f.text).unwrap();
    }
    let vhost = &topology.vhosts["bench"];
    let router = Router::new(vhost, Version::NEWEST);
    std::fs::write(desired.join("bench.test.toml"), tests(&router, bindings, exchanges)).unwrap();

    let bin = warren_binary();
    let run = |command: &str| {
        let out = Command::new(&bin).arg("-q").arg(command).arg(&desired).output().unwrap();
        assert!(
            out.status.success(),
            "{command}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let said = run("test");
    assert!(said.contains(&format!("Tests: {TESTS} passed, 0 failed.")), "{said}");
    let (test, validate, ratio) = paired(11, || drop(run("test")), || drop(run("validate")));
    println!("warren test, {TESTS} expectations, {queues} queues / {exchanges} exchanges / {bindings} bindings");
    println!("  warren validate:         {:>8.1} ms", validate.as_secs_f64() * 1e3);
    println!("  warren test:             {:>8.1} ms", test.as_secs_f64() * 1e3);
    println!("  ratio test/validate:     {ratio:>8.2}  (target <= 1.25; median of 11 paired turns)");
}

/// The test file: each expectation states exactly the queues the model
/// reaches (so all pass), written as a user would.
fn tests(router: &Router, bindings: usize, exchanges: usize) -> String {
    let mut out = String::from("vhost = \"bench\"\n");
    for i in 0..TESTS * 4 / 5 {
        // Binding k's own key (or headers): from exchange k % exchanges.
        let k = (i * 7919) % bindings;
        let x = exchange_name(k % exchanges);
        let (key, headers) = match (k % exchanges) % 4 {
            0 => (format!("bench.k{k}.x"), None),
            3 => (String::new(), Some(k)),
            _ => (format!("bench.k{k}"), None),
        };
        let mut table = warren::model::Table::new();
        if let Some(shard) = headers {
            table.insert("shard".into(), warren::model::Value::Int(shard as i64));
        }
        let message = Message { exchange: x.clone(), keys: Keys::one(&key), headers: Some(table) };
        let reached = router.route(&message).queues;
        let _ = write!(out, "\n[[route]]\nexchange = \"{x}\"\nkey = \"{key}\"\n");
        if let Some(shard) = headers {
            let _ = writeln!(out, "headers = {{ shard = {shard} }}");
        }
        let _ = writeln!(out, "reaches = {}", list(reached));
    }
    for i in 0..TESTS / 5 {
        // Every fifth queue dead-letters; half the tests name the key.
        let q = queue_name((i * 5 * 37) % 10_000);
        let reason = if i % 2 == 0 { Reason::Rejected } else { Reason::Expired };
        let key = (i % 4 < 2).then(|| format!("bench.k{i}"));
        let original = key.as_deref().map(|k| Message {
            exchange: String::new(),
            keys: Keys::one(k),
            headers: Some(warren::model::Table::new()),
        });
        let reached = router.dead_letters(&q, reason, original.as_ref()).map(|d| d.route.queues).unwrap_or_default();
        let _ = write!(out, "\n[[dead_letters]]\nqueue = \"{q}\"\nreason = \"{}\"\n", reason.as_str());
        if let Some(key) = key {
            let _ = writeln!(out, "key = \"{key}\"");
        }
        let _ = writeln!(out, "reaches = {}", list(reached));
    }
    out
}

fn list(queues: impl IntoIterator<Item = String>) -> String {
    let quoted: Vec<String> = queues.into_iter().map(|q| format!("\"{q}\"")).collect();
    format!("[{}]", quoted.join(", "))
}
