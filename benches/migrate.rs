//! A live migration at scale: 100 classic queues (`WARREN_BENCH_QUEUES`),
//! each bound to one direct exchange on its own key, under steady traffic
//! to all of them with a consumer on each, migrated in one `warren apply`
//! to quorum replacements (`WARREN_BENCH_TYPE`).
//!
//! Reports the apply's total time against the time the drains alone take,
//! as a ratio, both measured in this run on the same broker:
//! - baseline: the same queues, traffic, consumers and backlog in another
//!   vhost, every old queue's binding moved to its new queue by hand at
//!   once; the drains alone take from the first unbind until every old
//!   queue is empty. warren must then confirm each drain over readings that
//!   span a statistics interval (6 s), so baseline + 6 s is the least an
//!   apply can take.
//! - warren: the apply's wall time, and, seen from outside while it runs,
//!   when each old queue stops being routed to and when it is empty.
//!
//! Every number must arrive exactly once over old and new queues, in
//! warren's run (the baseline's moves by hand are not atomic). Needs the
//! private test broker (`WARREN_TEST_URL`, `WARREN_TEST_AMQP_URL`):
//!
//! ```sh
//! WARREN_TEST_NODE=6 scripts/broker start
//! eval "$(WARREN_TEST_NODE=6 scripts/broker env)"
//! cargo bench --bench migrate
//! # 1,000 queues, to classic queues with a length limit:
//! WARREN_BENCH_QUEUES=1000 WARREN_BENCH_TYPE=classic cargo bench --bench migrate
//! ```
//!
//! `WARREN_BENCH_LOG=FILE` keeps what the apply printed with `-v`.

mod common;
// The test suite's broker client and traffic, by path: a benchmark cannot
// use the test binary's modules. The suite uses all of both, and finds
// their dead code; this benchmark uses a part.
#[allow(dead_code)]
#[path = "../tests/suite/common/broker.rs"]
mod broker;
#[allow(dead_code)]
#[path = "../tests/suite/common/traffic.rs"]
mod traffic;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::{Duration, Instant};

use broker::{TestBroker, seg};
use serde_json::json;
use traffic::{ConsumerId, PREFETCH, Publish, Report, Traffic, amqp_url};

/// How many queues migrate: `WARREN_BENCH_QUEUES`, 100 unless set.
fn queues() -> usize {
    std::env::var("WARREN_BENCH_QUEUES").ok().and_then(|s| s.parse().ok()).unwrap_or(100)
}
/// What replaces them: `WARREN_BENCH_TYPE=classic` for classic queues with
/// a length limit (quorum queues on one 2-core node wedge near 900), quorum
/// queues unless set.
fn replacement() -> String {
    match std::env::var("WARREN_BENCH_TYPE").as_deref() {
        Ok("classic") => "type = \"classic\"\narguments = { \"x-max-length\" = 1000000 }\n".into(),
        _ => "type = \"quorum\"\n".into(),
    }
}
/// Messages a second over all queues: 10 a second each of 100.
const RATE: u32 = 1000;
/// Traffic runs this long before the old queues' consumers start, so that
/// each holds a backlog of about 50 messages.
const PREFILL: Duration = Duration::from_secs(5);
/// An old queue's consumer handles about as many messages as arrive (10 a
/// second), so the backlog holds until the swap, then drains in about 5 s.
const OLD_DELAY: Duration = Duration::from_millis(100);
/// What warren's drain confirmation needs beyond an empty queue.
const SETTLE: Duration = Duration::from_secs(6);

fn old(i: usize) -> String {
    format!("q-{i:03}")
}
fn new(i: usize) -> String {
    format!("n-{i:03}")
}
fn key(i: usize) -> String {
    format!("k-{i:03}")
}

/// The topology files: v1 binds the old queues, v2 their quorum replacements.
fn topology(vhost: &str, v2: bool) -> String {
    let mut t = format!("vhosts = [\"{vhost}\"]\n\n[exchanges.bench]\ntype = \"direct\"\n");
    for i in 0..queues() {
        let (q, extra) = if v2 {
            (new(i), format!("{}replaces = \"{}\"\n", replacement(), old(i)))
        } else {
            (old(i), "type = \"classic\"\n".to_string())
        };
        t += &format!(
            "\n[queues.\"{q}\"]\n{extra}\n[[bindings]]\nsource = \"bench\"\nqueue = \"{q}\"\nrouting_key = \"{}\"\n",
            key(i)
        );
    }
    t
}

struct World {
    broker: TestBroker,
    vhost: String,
    dir: tempfile::TempDir,
    amqp: String,
}

impl World {
    fn new(vhost: &str) -> World {
        let broker = TestBroker::from_env();
        let amqp = std::env::var("WARREN_TEST_AMQP_URL").expect("WARREN_TEST_AMQP_URL is set (scripts/broker env)");
        let mut url = url::Url::parse(&amqp).expect("WARREN_TEST_AMQP_URL is a URL");
        url.set_path("");
        let w = World { broker, vhost: vhost.into(), dir: tempfile::tempdir().unwrap(), amqp: url.to_string() };
        w.broker.delete(&format!("vhosts/{}", seg(vhost)));
        w
    }

    fn apply(&self, v2: bool, verbose: bool) -> (std::process::Output, Duration) {
        std::fs::write(self.dir.path().join("topology.toml"), topology(&self.vhost, v2)).unwrap();
        let mut c = Command::new(common::warren_binary());
        c.env("WARREN_URL", &self.broker.url).env("WARREN_AMQP_URL", self.amqp.trim_end_matches('/'));
        c.args(["--color", "never", "apply", "--auto-approve", "--drain-timeout", "10m"]).arg(self.dir.path());
        if verbose {
            c.arg("-v");
        }
        let t = Instant::now();
        let out = c.output().expect("warren runs");
        (out, t.elapsed())
    }

    /// Queues with a binding from a non-default exchange.
    fn bound(&self) -> BTreeSet<String> {
        let list = self.broker.get(&format!("bindings/{}", seg(&self.vhost)));
        list.as_array()
            .unwrap()
            .iter()
            .filter(|b| b["source"] != "" && b["destination_type"] == "queue")
            .map(|b| b["destination"].as_str().unwrap().to_string())
            .collect()
    }

    /// Every queue's message count (queue totals: fresh for classic queues).
    fn messages(&self) -> BTreeMap<String, u64> {
        let path =
            format!("queues/{}?disable_stats=true&enable_queue_totals=true&columns=name,messages", seg(&self.vhost));
        let list = self.broker.get(&path);
        list.as_array()
            .unwrap()
            .iter()
            .map(|q| (q["name"].as_str().unwrap().to_string(), q["messages"].as_u64().unwrap_or(0)))
            .collect()
    }

    fn traffic(&self) -> (Traffic, Vec<ConsumerId>) {
        let keys: Vec<String> = (0..queues()).map(key).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let mut traffic = Traffic::start(&amqp_url(&self.vhost), Publish::new("bench", &keys).rate(RATE));
        std::thread::sleep(PREFILL);
        let consumers = (0..queues()).map(|i| traffic.add_consumer(&old(i), OLD_DELAY)).collect();
        (traffic, consumers)
    }
}

impl Drop for World {
    fn drop(&mut self) {
        self.broker.delete(&format!("vhosts/{}", seg(&self.vhost)));
    }
}

/// When each old queue stopped being routed to, and when it was empty.
#[derive(Default)]
struct Drains {
    swapped: BTreeMap<usize, Instant>,
    drained: BTreeMap<usize, Instant>,
}

impl Drains {
    /// From the first swap to the last drain.
    fn window(&self) -> Duration {
        let first = self.swapped.values().min().expect("a swap");
        let last = self.drained.values().max().expect("a drain");
        last.duration_since(*first)
    }

    /// The longest single drain, from its swap.
    fn longest(&self) -> Duration {
        self.drained.iter().map(|(i, t)| t.duration_since(self.swapped[i])).max().unwrap_or_default()
    }
}

/// One look at the world: notes swaps and drains, stops the consumers of
/// drained old queues, and consumes new queues that exist (a few per look,
/// so drained queues are seen promptly).
fn look(
    w: &World,
    traffic: &mut Traffic,
    old_consumers: &mut [Option<ConsumerId>],
    consumed: &mut BTreeSet<usize>,
    drains: &mut Drains,
) {
    let bound = w.bound();
    let messages = w.messages();
    let now = Instant::now();
    for (i, consumer) in old_consumers.iter_mut().enumerate() {
        if !drains.swapped.contains_key(&i) && messages.contains_key(&old(i)) && !bound.contains(&old(i)) {
            drains.swapped.insert(i, now);
        }
        if drains.swapped.contains_key(&i) && messages.get(&old(i)).copied().unwrap_or(0) == 0 {
            drains.drained.entry(i).or_insert(now);
            if let Some(id) = consumer.take() {
                traffic.stop_consumer(id);
            }
        }
    }
    let mut added = 0;
    let waiting: Vec<usize> =
        (0..queues()).filter(|i| !consumed.contains(i) && messages.contains_key(&new(*i))).collect();
    for i in waiting {
        if added == (queues() / 20).max(5) {
            break;
        }
        if traffic.try_add_consumer(&new(i), Duration::ZERO, PREFETCH).is_ok() {
            consumed.insert(i);
            added += 1;
        }
    }
}

/// Ends the traffic; warren's must have arrived exactly once.
fn finish(traffic: Traffic, what: &str, must: bool) -> Report {
    let report = traffic.finish(Duration::from_secs(120));
    match report.check_exactly_once() {
        Ok(()) => println!("  {what}: exactly once ({} messages, none returned)", report.confirmed.len()),
        Err(e) if must => panic!("{what}: traffic was not delivered exactly once:\n{e}"),
        Err(_) => println!(
            "  {what}: {} messages, {} duplicated, {} returned (bindings moved by hand are not atomic)",
            report.confirmed.len(),
            report.duplicates.len(),
            report.returned.len()
        ),
    }
    report
}

/// The baseline: every binding moved by hand at once, drains timed. The
/// new queues are declared beforehand, so that only the moves are timed.
fn baseline() -> Duration {
    let w = World::new("t-mig-bench-baseline");
    let (out, _) = w.apply(false, false);
    assert!(out.status.success(), "v1 apply failed: {}", String::from_utf8_lossy(&out.stderr));
    let v = seg(&w.vhost);
    for i in 0..queues() {
        w.broker
            .put(&format!("queues/{v}/{}", new(i)), json!({"durable": true, "arguments": {"x-queue-type": "quorum"}}));
    }
    let (mut traffic, consumers) = w.traffic();
    let mut old_consumers: Vec<Option<ConsumerId>> = consumers.into_iter().map(Some).collect();
    let messages = w.messages();
    let backlog: u64 = (0..queues()).map(|i| messages.get(&old(i)).copied().unwrap_or(0)).sum::<u64>();
    let mut drains = Drains::default();
    let mut consumed = BTreeSet::new();
    // New binding first, then the old one goes: nothing is unroutable, but
    // a message published in between reaches both (not counted here).
    for i in 0..queues() {
        w.broker.post(&format!("bindings/{v}/e/bench/q/{}", new(i)), json!({"routing_key": key(i), "arguments": {}}));
        w.broker.delete(&format!("bindings/{v}/e/bench/q/{}/{}", old(i), key(i)));
    }
    while drains.drained.len() < queues() {
        look(&w, &mut traffic, &mut old_consumers, &mut consumed, &mut drains);
        std::thread::sleep(Duration::from_millis(100));
    }
    while consumed.len() < queues() {
        look(&w, &mut traffic, &mut old_consumers, &mut consumed, &mut drains);
    }
    println!("baseline: {} bindings moved by hand at once, backlog {backlog} messages at the move", queues());
    println!("  drains alone (first unbind to last old queue empty): {:>6.1} s", drains.window().as_secs_f64());
    finish(traffic, "baseline", false);
    drains.window()
}

fn main() {
    // `cargo test --all-targets` builds and runs benchmarks too, in debug
    // mode and without `--bench`: this one needs minutes and a broker.
    if !std::env::args().any(|a| a == "--bench") {
        println!("benches/migrate.rs: run it with `cargo bench --bench migrate`");
        return;
    }
    let drains_alone = baseline();

    let w = World::new("t-mig-bench");
    let (out, _) = w.apply(false, false);
    assert!(out.status.success(), "v1 apply failed: {}", String::from_utf8_lossy(&out.stderr));
    let (mut traffic, consumers) = w.traffic();
    let mut old_consumers: Vec<Option<ConsumerId>> = consumers.into_iter().map(Some).collect();
    let backlog: u64 = w.messages().iter().filter(|(q, _)| q.starts_with("q-")).map(|(_, n)| n).sum();
    let mut drains = Drains::default();
    let mut consumed = BTreeSet::new();
    let started = Instant::now();
    let (out, total) = std::thread::scope(|s| {
        let apply = s.spawn(|| w.apply(true, true));
        while !apply.is_finished() {
            look(&w, &mut traffic, &mut old_consumers, &mut consumed, &mut drains);
            std::thread::sleep(Duration::from_millis(100));
        }
        apply.join().expect("apply runs")
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    if let Some(path) = std::env::var_os("WARREN_BENCH_LOG") {
        std::fs::write(path, &out.stderr).unwrap();
    }
    assert!(
        out.status.success() && stdout.contains(&format!("{} migrated", queues())),
        "the apply did not migrate every queue:\n{}\n{}",
        stdout.lines().last().unwrap_or_default(),
        String::from_utf8_lossy(&out.stderr)
    );
    while consumed.len() < queues() {
        look(&w, &mut traffic, &mut old_consumers, &mut consumed, &mut drains);
    }
    let to = if replacement().contains("quorum") { "quorum" } else { "classic with a length limit" };
    println!("warren: {} classic queues to {to} in one apply, backlog {backlog} messages before it", queues());
    println!("  total apply:                                         {:>6.1} s", total.as_secs_f64());
    println!("  seen from outside: first swap to last drain          {:>6.1} s", drains.window().as_secs_f64());
    println!("  seen from outside: longest single drain              {:>6.1} s", drains.longest().as_secs_f64());
    let at = |t: Option<&Instant>| t.map_or(f64::NAN, |t| t.duration_since(started).as_secs_f64());
    println!(
        "  timeline (s from the apply's start): first swap {:.1}, last swap {:.1}, first drain {:.1}, last drain {:.1}, end {:.1}",
        at(drains.swapped.values().min()),
        at(drains.swapped.values().max()),
        at(drains.drained.values().min()),
        at(drains.drained.values().max()),
        total.as_secs_f64()
    );
    finish(traffic, "warren", true);
    println!("ratio total apply / drains alone (baseline):           {:>6.2}", common::ratio(total, drains_alone));
    println!(
        "ratio total apply / (drains alone + {} s confirmation):  {:>6.2}",
        SETTLE.as_secs(),
        common::ratio(total, drains_alone + SETTLE)
    );
}
