//! 100,000 queues, 5,000 exchanges, 200,000 bindings and 500 policies in
//! one vhost, on a node this benchmark starts and stops (node 33, or 34
//! with `WARREN_TEST_RABBITMQ=4`; `WARREN_BENCH_NODE=N` for another), as
//! ratios to baselines measured in the same run:
//!
//! - `warren apply` to an empty vhost against the broker's own import of
//!   the same definitions (`POST /api/definitions/{vhost}`), in turns
//!   (`WARREN_BENCH_TURNS`, default 1: each takes minutes at full size);
//! - `warren plan` with nothing to change against
//!   `GET /api/definitions/{vhost}`, in paired turns (`WARREN_BENCH_PLANS`,
//!   default 3); the GET is tried once first, and if it gives no answer
//!   within `WARREN_BENCH_GET_LIMIT` seconds (default 600), as at 100,000
//!   queues, the plans are timed alone against that limit;
//! - the size of every record warren leaves on the broker (global
//!   parameters, record exchanges), and the time to write the largest
//!   again (a PUT of the same value) against the apply;
//! - the plan's peak memory (GNU time's %M) against a process holding the
//!   vhost's export as parsed JSON: the GET's answer, or, if it gave none,
//!   the vhost's listings written as one definitions document.
//!
//! `WARREN_BENCH_IMPORT_ONLY=1` times the broker's import alone.
//! `WARREN_BENCH_KEEP=DIR` applies once, without the import beside it, and
//! stops there, with the project's files copied to DIR and the node left
//! running, for a plan profiled by hand (stop the node with
//! `scripts/broker stop`).
//! `WARREN_BENCH_QUEUES=10000` scales everything down for a quick look
//! (exchanges a twentieth of the queues, bindings twice, policies one per
//! 200 queues). Not part of the test suite (`test = false`).
//!
//! Run: `cargo bench --bench hundred_k` (needs `/usr/bin/time`).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{median, paired, ratio, run_measured, warren_binary};
use serde_json::{Value as Json, json};

/// RabbitMQ's default limit of a management API request's body
/// (`management.http.max_body_size`), on 3.10.8 as Debian patched it and
/// on 4.x; this benchmark's node takes larger ones, for the import.
const DEFAULT_BODY_LIMIT: usize = 10_000_000;

/// Set in the child that only holds the export as parsed JSON.
const HOLD: &str = "WARREN_BENCH_HOLD_JSON";

fn main() {
    if let Some(path) = std::env::var_os(HOLD) {
        let text = std::fs::read_to_string(path).unwrap();
        let v: Json = serde_json::from_str(&text).unwrap();
        drop(text);
        std::hint::black_box(&v);
        return;
    }
    let number = |key: &str, default: usize| -> usize {
        std::env::var(key).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
    };
    let queues = number("WARREN_BENCH_QUEUES", 100_000);
    let (exchanges, bindings, policies) = (queues / 20, queues * 2, (queues / 200).max(4));
    let turns = number("WARREN_BENCH_TURNS", 1).max(1);
    let plans = number("WARREN_BENCH_PLANS", 3).max(1);

    let node = Node::start();
    let api = Api::new(&node.url);
    let t = Instant::now();
    let mut topology = warren::testing::large_topology(queues, exchanges, bindings);
    with_service_policies(&mut topology, policies.saturating_sub(4));
    let (import_vhost, apply_vhost) = ("bench-import", "bench-apply");
    let mut defs: Json = warren::export::definitions(&topology);
    let import_doc = json!({
        "queues": defs["queues"].take(),
        "exchanges": defs["exchanges"].take(),
        "bindings": defs["bindings"].take(),
        "policies": defs["policies"].take(),
    });
    let import_text = import_doc.to_string();
    drop(import_doc);
    let mut vh = topology.vhosts.pop_first().unwrap().1;
    vh.name = apply_vhost.into();
    topology.vhosts.insert(apply_vhost.into(), vh);
    let dir = tempfile::tempdir().unwrap();
    let desired = dir.path().join("topology");
    std::fs::create_dir_all(&desired).unwrap();
    std::fs::write(desired.join("warren.toml"), "[project]\nname = \"bench\"\n").unwrap();
    for f in &warren::import::import(&topology, &[], "generated").unwrap().files {
        std::fs::write(desired.join(&f.name), &f.text).unwrap();
    }
    drop(topology);
    eprintln!(
        "generated {queues} queues, {exchanges} exchanges, {bindings} bindings, {policies} policies in {:.1} s ({:.1} MB to import)",
        t.elapsed().as_secs_f64(),
        import_text.len() as f64 / 1e6
    );

    // 1. The import and the apply in turns, each into an empty vhost on a
    // broker without the other's.
    let warren = Warren { binary: warren_binary(), desired: desired.clone(), url: node.url.clone() };
    let (mut imports, mut applies) = (Vec::new(), Vec::new());
    if std::env::var_os("WARREN_BENCH_IMPORT_ONLY").is_some() {
        // The baseline alone, for a run whose import was measured apart.
        api.put(&format!("vhosts/{import_vhost}"), "{}");
        let t = Instant::now();
        api.import(import_vhost, &import_text);
        println!(
            "broker import (POST /api/definitions/{{vhost}}): {:.1} s, RabbitMQ {}",
            secs(t.elapsed()),
            api.version
        );
        api.delete_vhost(import_vhost);
        return;
    }
    if let Some(keep) = std::env::var_os("WARREN_BENCH_KEEP") {
        // For a plan profiled by hand: the vhost applied, no import, the
        // files, and the node left running.
        api.delete_vhost(apply_vhost);
        let t = Instant::now();
        warren.run("apply");
        eprintln!("warren apply {:.1} s", secs(t.elapsed()));
        copy_files(&desired, Path::new(&keep));
        println!("the applied files are in {}; node {} at {} is left running", keep.display(), node.number, node.url);
        std::mem::forget(node);
        return;
    }
    for n in 1..=turns {
        api.delete_vhost(apply_vhost);
        api.delete_vhost(import_vhost);
        api.put(&format!("vhosts/{import_vhost}"), "{}");
        let t = Instant::now();
        api.import(import_vhost, &import_text);
        imports.push(t.elapsed());
        api.delete_vhost(import_vhost);
        let t = Instant::now();
        warren.run("apply");
        applies.push(t.elapsed());
        eprintln!(
            "turn {n} of {turns}: broker import {:.1} s, warren apply {:.1} s",
            secs(imports[n - 1]),
            secs(applies[n - 1])
        );
    }
    drop(import_text);
    let apply_ratio = median(imports.iter().zip(&applies).map(|(i, a)| ratio(*a, *i)).collect());
    let (import_time, apply_time) = (median(imports), median(applies));

    // 2. The records warren left, and the time to write the largest again.
    let records = api.records(apply_vhost);
    let largest = records.iter().max_by_key(|r| r.bytes).cloned();
    let write = largest.as_ref().map(|r| median((0..3).map(|_| api.rewrite(r)).collect()));
    // Every record written again, one after another: more than an apply's
    // one write of them, which puts a record's parts at once.
    let write_all: Duration = records.iter().map(|r| api.rewrite(r)).sum();
    // The inventory as one parameter, as warren wrote it before parts (this
    // node takes bodies above the default limit): written, then read.
    let whole = api.whole_inventory(&records).map(|value| {
        let body = json!({"name": "warren.bench-whole", "value": value}).to_string();
        let put = api.put("global-parameters/warren.bench-whole", &body);
        let t = Instant::now();
        api.get("global-parameters/warren.bench-whole");
        let got = t.elapsed();
        api.delete("global-parameters/warren.bench-whole");
        (body.len(), put, got)
    });

    // 3. A plan with nothing to change against a GET of the definitions,
    // which may never answer at this size (RabbitMQ 4.0.5 and 3.10.8 gave
    // no answer to one of 100,000 queues in 20 minutes): tried once with a
    // limit first, and paired with the plans only if it answers.
    let definitions = format!("definitions/{apply_vhost}");
    let limit = Duration::from_secs(number("WARREN_BENCH_GET_LIMIT", 600) as u64);
    let first = api.get_within(&definitions, limit);
    let (plan, get, export_text) = match first {
        Some(text) => {
            let (plan, get, r) = paired(plans, || warren.run("plan"), || drop(api.get(&definitions)));
            (plan, Answer::Paired(get, r), text)
        }
        None => {
            let plans: Vec<Duration> = (0..plans).map(|_| warren.timed("plan")).collect();
            (median(plans), Answer::Unanswered(limit), api.definitions_from_listings(apply_vhost))
        }
    };

    // 4. The plan's peak memory against the export held as parsed JSON:
    // the GET's answer, or the vhost's listings written as one.
    let export = dir.path().join("export.json");
    std::fs::write(&export, &export_text).unwrap();
    let export_mb = export_text.len() as f64 / 1e6;
    drop(export_text);
    let plan_kb = run_measured(&mut warren.command("plan"));
    let held_kb = run_measured(Command::new(std::env::current_exe().unwrap()).env(HOLD, &export));

    api.delete_vhost(apply_vhost);
    drop(node);

    println!(
        "{queues} queues / {exchanges} exchanges / {bindings} bindings / {policies} policies, RabbitMQ {}",
        api.version
    );
    println!("  broker import (POST /api/definitions/{{vhost}}): {:>8.1} s", secs(import_time));
    println!("  warren apply to an empty vhost:                {:>8.1} s", secs(apply_time));
    println!("  apply / import:          {apply_ratio:>6.2}  (target <= 1.0; median of {turns} turns)");
    match get {
        Answer::Paired(get, r) => {
            println!("  GET /api/definitions/{{vhost}}: {:>8.2} s ({export_mb:.1} MB)", secs(get));
            println!("  warren plan, no changes:      {:>8.2} s", secs(plan));
            println!("  plan / GET:              {r:>6.2}  (target <= 1.1; median of {plans} paired turns)");
        }
        Answer::Unanswered(limit) => {
            println!("  GET /api/definitions/{{vhost}}: no answer in {:.0} s", secs(limit));
            println!("  warren plan, no changes:      {:>8.2} s (median of {plans})", secs(plan));
            println!("  plan / GET:              < {:.3}  (target <= 1.1; the GET gave no answer)", ratio(plan, limit));
        }
    }
    println!("  records warren leaves (the lock is an exclusive queue, gone with its apply):");
    for r in &records {
        println!("    {:<40} {:>12} bytes", r.name, r.bytes);
    }
    for r in records.iter().filter(|r| r.bytes + 100 > DEFAULT_BODY_LIMIT) {
        println!("    {} is too large for a broker's default body limit ({DEFAULT_BODY_LIMIT} bytes)", r.name);
    }
    if let (Some(r), Some(w)) = (&largest, write) {
        println!(
            "  writing the largest ({}) again: {:.2} s, {:.3} of the apply (target <= 0.05)",
            r.name,
            secs(w),
            ratio(w, apply_time)
        );
    }
    println!(
        "  writing all {} again, one after another: {:.2} s, {:.3} of the apply",
        records.len(),
        secs(write_all),
        ratio(write_all, apply_time)
    );
    if let Some((bytes, put, got)) = whole {
        println!(
            "  the inventory as one parameter, as before parts ({bytes} bytes): PUT {:.2} s ({:.3} of the apply), GET {:.2} s",
            secs(put),
            ratio(put, apply_time),
            secs(got)
        );
    }
    let held = match get {
        Answer::Paired(..) => "its GET's answer",
        Answer::Unanswered(_) => "its listings written as one definitions document",
    };
    println!(
        "  plan peak memory {:.1} MB; the vhost's export ({held}, {export_mb:.1} MB) held as parsed JSON {:.1} MB: ratio {:.2} (target <= 1.0)",
        plan_kb as f64 / 1e3,
        held_kb as f64 / 1e3,
        plan_kb as f64 / held_kb as f64
    );
    println!("  load average at the end: {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim());
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// How `GET /api/definitions/{vhost}` answered.
#[derive(Clone, Copy)]
enum Answer {
    /// In the paired turns: its median time, and the plan's median ratio.
    Paired(Duration, f64),
    /// Not within this limit, tried once.
    Unanswered(Duration),
}

/// Policies beside the generated topology's four, one per service, each
/// matching the queues whose number ends in its own three digits.
fn with_service_policies(topology: &mut warren::model::Topology, n: usize) {
    use warren::model::{ApplyTo, Policy, Table, Value};
    let v = topology.vhosts.values_mut().next().unwrap();
    for k in 0..n {
        let name = format!("bench-svc{k:03}");
        let definition = Table::from_iter([
            ("max-length-bytes".to_string(), Value::Int(100 << 20)),
            ("expires".to_string(), Value::Int(14 * 24 * 3_600_000)),
        ]);
        let pattern = format!("^bench\\.q\\d{{2}}{k:03}$");
        v.set_policy(&Policy { name, pattern, apply_to: ApplyTo::Queues, priority: 3, definition });
    }
}

/// The benchmark's node, stopped when dropped (a failed run too).
struct Node {
    number: String,
    url: String,
}

impl Node {
    fn start() -> Node {
        let four = std::env::var("WARREN_TEST_RABBITMQ").is_ok_and(|v| v == "4");
        let number = std::env::var("WARREN_BENCH_NODE").unwrap_or_else(|_| if four { "34" } else { "33" }.into());
        let t = Instant::now();
        // The import, the baseline, is larger than the broker's default limit.
        let limit = std::env::var("WARREN_TEST_MAX_BODY_SIZE").unwrap_or_else(|_| "1000000000".into());
        let timeout = std::env::var("WARREN_TEST_HTTP_TIMEOUT").unwrap_or_else(|_| "3600000".into());
        let mut start = script(&number, "start");
        start.env("WARREN_TEST_MAX_BODY_SIZE", limit).env("WARREN_TEST_HTTP_TIMEOUT", timeout);
        let started = start.status().unwrap();
        assert!(started.success(), "scripts/broker start failed for node {number}");
        let env = String::from_utf8(script(&number, "env").output().unwrap().stdout).unwrap();
        let vars: BTreeMap<&str, &str> =
            env.lines().filter_map(|l| l.strip_prefix("export ")?.split_once('=')).collect();
        let url = vars["WARREN_TEST_URL"].to_string();
        eprintln!("node {number} started in {:.1} s", secs(t.elapsed()));
        Node { number, url }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = script(&self.number, "stop").status();
    }
}

/// Every file of directory `from` into directory `to`, made if need be.
fn copy_files(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for f in std::fs::read_dir(from).unwrap() {
        let f = f.unwrap();
        std::fs::copy(f.path(), to.join(f.file_name())).unwrap();
    }
}

fn script(number: &str, what: &str) -> Command {
    let mut c = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/broker"));
    c.arg(what).env("WARREN_TEST_NODE", number);
    c
}

struct Warren {
    binary: PathBuf,
    desired: PathBuf,
    url: String,
}

impl Warren {
    fn command(&self, what: &str) -> Command {
        let mut c = Command::new(&self.binary);
        c.arg(what).arg(&self.desired).arg("-q").env("WARREN_URL", &self.url);
        // The export of 100,000 queues takes this machine's broker longer
        // than a request's default two minutes; the node keeps a request
        // an hour, and so does warren, as an operator of such a vhost would.
        c.env("WARREN_REQUEST_TIMEOUT", "1h");
        if what == "apply" {
            c.arg("--auto-approve");
        }
        c
    }

    fn timed(&self, what: &str) -> Duration {
        let t = Instant::now();
        self.run(what);
        t.elapsed()
    }

    /// Runs `apply` or `plan`, which must succeed (a plan with no changes).
    fn run(&self, what: &str) {
        let out = self.command(what).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "warren {what}: {}", String::from_utf8_lossy(&out.stderr));
        if what == "plan" {
            assert!(stdout.contains("No changes"), "{stdout:.500}");
        }
    }
}

#[derive(Clone)]
struct Record {
    name: String,
    /// The value as the broker hands it back, in bytes of JSON.
    bytes: usize,
    value: Json,
    /// A global parameter, or the vhost of a record exchange.
    vhost: Option<String>,
}

struct Api {
    agent: ureq::Agent,
    base: String,
    auth: String,
    url: String,
    version: String,
}

impl Api {
    fn new(url: &str) -> Api {
        let (base, auth) = common::api(url);
        let mut api = Api { agent: common::agent(), base, auth, url: url.to_string(), version: String::new() };
        let overview: Json = serde_json::from_str(&api.get("overview")).unwrap();
        api.version = overview["rabbitmq_version"].as_str().unwrap_or("?").to_string();
        api
    }

    fn get(&self, path: &str) -> String {
        let mut r =
            self.agent.get(&format!("{}/{path}", self.base)).header("authorization", &self.auth).call().unwrap();
        assert!(r.status().as_u16() < 300, "GET {path}: {}", r.status());
        r.body_mut().with_config().limit(1 << 31).read_to_string().unwrap()
    }

    /// A GET's answer, or `None` if it gives none within `limit` (the
    /// connection is then closed); any other failure fails the benchmark.
    fn get_within(&self, path: &str, limit: Duration) -> Option<String> {
        let answer = common::agent_within(limit)
            .get(&format!("{}/{path}", self.base))
            .header("authorization", &self.auth)
            .call()
            .and_then(|mut r| {
                assert!(r.status().as_u16() < 300, "GET {path}: {}", r.status());
                r.body_mut().with_config().limit(1 << 31).read_to_string()
            });
        match answer {
            Ok(text) => Some(text),
            Err(ureq::Error::Timeout(_)) => None,
            Err(e) => panic!("GET {path}: {e}"),
        }
    }

    /// The vhost's definitions as its export gives them, written from its
    /// listings (which answer at a size where the export does not): the
    /// columns an export keeps, without the default exchange, the `amq.*`
    /// exchanges and the default exchange's implicit bindings.
    fn definitions_from_listings(&self, vhost: &str) -> String {
        let list = |what: &str, columns: &str| -> Vec<Json> {
            let text = self.get(&format!("{what}/{vhost}?disable_stats=true&columns={columns}"));
            serde_json::from_str(&text).unwrap()
        };
        let queues = list("queues", "name,vhost,durable,auto_delete,arguments,type");
        let mut exchanges = list("exchanges", "name,vhost,type,durable,auto_delete,internal,arguments");
        exchanges.retain(|x| x["name"].as_str().is_some_and(|n| !n.is_empty() && !n.starts_with("amq.")));
        let mut bindings = list("bindings", "source,vhost,destination,destination_type,routing_key,arguments");
        bindings.retain(|b| b["source"].as_str().is_some_and(|s| !s.is_empty()));
        let policies = list("policies", "name,vhost,pattern,apply-to,definition,priority");
        json!({"rabbitmq_version": self.version, "policies": policies, "queues": queues,
            "exchanges": exchanges, "bindings": bindings})
        .to_string()
    }

    fn put(&self, path: &str, body: &str) -> Duration {
        let t = Instant::now();
        let r = self
            .agent
            .put(&format!("{}/{path}", self.base))
            .header("authorization", &self.auth)
            .header("content-type", "application/json")
            .send(body)
            .unwrap();
        assert!(r.status().as_u16() < 300, "PUT {path}: {}", r.status());
        t.elapsed()
    }

    fn delete(&self, path: &str) {
        let _ = self.agent.delete(&format!("{}/{path}", self.base)).header("authorization", &self.auth).call();
    }

    /// The broker-wide inventory's JSON, its parts joined when it has any.
    fn whole_inventory(&self, records: &[Record]) -> Option<Json> {
        let index = &records.iter().find(|r| r.name == warren::model::INVENTORY_PARAMETER)?.value;
        let Some(Ok(index)) = warren::model::SplitIndex::of(index) else { return Some(index.clone()) };
        let part = |p: &str| records.iter().find(|r| r.name == p).map(|r| &r.value);
        warren::model::join(warren::model::INVENTORY_PARAMETER, &index, part).ok()
    }

    fn delete_vhost(&self, vhost: &str) {
        common::delete_vhost(&self.url, vhost);
    }

    /// The broker's import of `text` into `vhost`, which answers when it
    /// is done. The node keeps the connection open for an hour
    /// (`WARREN_TEST_HTTP_TIMEOUT`): RabbitMQ 3.10.8 closes it after two
    /// minutes by default, and the import then stops half done (seen here:
    /// the queues and exchanges it had handed to its workers were made, no
    /// binding was).
    fn import(&self, vhost: &str, text: &str) {
        let answer = common::agent_within(Duration::from_secs(3600))
            .post(&format!("{}/definitions/{vhost}", self.base))
            .header("authorization", &self.auth)
            .header("content-type", "application/json")
            .send(text);
        match answer {
            Ok(r) => assert!(r.status().as_u16() < 300, "the import: HTTP {}", r.status()),
            Err(e) => panic!("the import's connection closed ({e}): a longer WARREN_TEST_HTTP_TIMEOUT?"),
        }
    }

    /// warren's records: its global parameters, and its record exchanges
    /// in `vhost`.
    fn records(&self, vhost: &str) -> Vec<Record> {
        let mut out = Vec::new();
        let params: Json = serde_json::from_str(&self.get("global-parameters")).unwrap();
        for p in params.as_array().into_iter().flatten() {
            let name = p["name"].as_str().unwrap_or_default();
            if name.starts_with("warren") {
                let bytes = p["value"].to_string().len();
                out.push(Record { name: name.into(), bytes, value: p["value"].clone(), vhost: None });
            }
        }
        let path = format!("exchanges/{vhost}?page=1&page_size=500&use_regex=true&name=%5Ewarren%5C.");
        let listing: Json = serde_json::from_str(&self.get(&path)).unwrap();
        for x in listing["items"].as_array().into_iter().flatten() {
            let value = x["arguments"][warren::model::RECORD_ARGUMENT].clone();
            if let Some(text) = value.as_str() {
                let name = x["name"].as_str().unwrap_or_default().to_string();
                out.push(Record { name, bytes: text.len(), value, vhost: Some(vhost.into()) });
            }
        }
        out
    }

    /// Writes `record` again as it is, timed: a global parameter's PUT, or
    /// a record exchange declared again beside it (then deleted).
    fn rewrite(&self, record: &Record) -> Duration {
        match &record.vhost {
            None => {
                let body = json!({"name": record.name, "value": record.value}).to_string();
                self.put(&format!("global-parameters/{}", record.name), &body)
            }
            Some(vhost) => {
                let path = format!("exchanges/{vhost}/warren.bench-copy");
                let body = json!({"type": "topic", "durable": true, "internal": true,
                    "arguments": {warren::model::RECORD_ARGUMENT: record.value}});
                let took = self.put(&path, &body.to_string());
                let _ = self.agent.delete(&format!("{}/{path}", self.base)).header("authorization", &self.auth).call();
                took
            }
        }
    }
}
