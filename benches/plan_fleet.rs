//! Against the three fleet nodes (`scripts/broker fleet`), each holding
//! the generated 10,000-queue, 500-exchange, 20,000-binding vhost: `warren
//! plan --env all` over the three, as a ratio to the slowest of the three
//! single plans (`warren plan` against each broker alone), measured in
//! turns in one run. The brokers are read at once, so the goal is at most
//! 1.3.
//!
//! Run: `scripts/broker fleet start && eval "$(scripts/broker fleet env)"
//!       && cargo bench --bench plan_fleet`

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{delete_vhost, load, median, ratio, warren_binary};

const VHOST: &str = "bench-fleet";

fn main() {
    let urls: Vec<String> = std::env::var("WARREN_TEST_FLEET_URLS")
        .expect("WARREN_TEST_FLEET_URLS: start the fleet with scripts/broker (see the header)")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(urls.len(), 3, "three fleet nodes");
    // WARREN_BENCH_SCALE=10 runs a tenth of the size, for a quick look.
    let scale: usize = std::env::var("WARREN_BENCH_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let (queues, exchanges, bindings) = (10_000 / scale, 500 / scale, 20_000 / scale);

    // Each broker gets the vhost by its own bulk import, all three at once.
    let defs = common::definitions_as(VHOST, queues, exchanges, bindings);
    let loading = Instant::now();
    std::thread::scope(|s| {
        for url in &urls {
            let defs = &defs;
            s.spawn(move || load(url, VHOST, defs));
        }
    });
    eprintln!("loaded the three brokers in {:?}", loading.elapsed());

    // The same topology as files, one environment per broker.
    let dir = tempfile::tempdir().unwrap();
    common::write_files_as(dir.path(), VHOST, queues, exchanges, bindings);
    let mut project = String::from("[project]\nname = \"bench\"\n");
    for i in 0..3 {
        project += &format!("\n[environments.node{i}]\nurl_env = \"BENCH_NODE{i}_URL\"\n");
    }
    std::fs::write(dir.path().join("warren.toml"), project).unwrap();

    let warren = warren_binary();
    let plan = |args: &[&str], url: Option<&str>| {
        let mut c = Command::new(&warren);
        c.arg("plan").arg(dir.path()).arg("-q").args(args).env_remove("WARREN_AMQP_URL");
        for (i, u) in urls.iter().enumerate() {
            c.env(format!("BENCH_NODE{i}_URL"), u);
        }
        match url {
            Some(u) => c.env("WARREN_URL", u),
            None => c.env_remove("WARREN_URL"),
        };
        let t = Instant::now();
        let out = c.output().unwrap();
        let elapsed = t.elapsed();
        assert!(
            out.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        elapsed
    };
    // Turns: the three single plans, then the fleet's; one warm-up turn.
    let runs = 5;
    let mut turns: Vec<(Duration, [Duration; 3])> = Vec::new();
    for turn in 0..=runs {
        let singles = [0, 1, 2].map(|i| plan(&[], Some(&urls[i])));
        let fleet = plan(&["--env", "all"], None);
        if turn > 0 {
            turns.push((fleet, singles));
        }
    }
    let fleet_ratio = median(turns.iter().map(|(f, s)| ratio(*f, *s.iter().max().expect("three singles"))).collect());
    let fleet = median(turns.iter().map(|t| t.0).collect());
    let slowest = median(turns.iter().map(|t| *t.1.iter().max().unwrap()).collect());
    let each: Vec<String> =
        (0..3).map(|i| format!("{:.2}", median(turns.iter().map(|t| t.1[i]).collect()).as_secs_f64())).collect();

    for url in &urls {
        delete_vhost(url, VHOST);
    }
    println!("plan of 3 brokers, each {queues} queues / {exchanges} exchanges / {bindings} bindings ({runs} turns)");
    println!("  single plans (median, s):           {}", each.join(", "));
    println!("  slowest single plan (median):       {:>6.2} s", slowest.as_secs_f64());
    println!("  plan --env all (median):            {:>6.2} s", fleet.as_secs_f64());
    println!("  fleet / slowest single (median of turns): {:>5.2}  (target <= 1.3)", fleet_ratio);
}
