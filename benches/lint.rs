//! What the lint rules add to reading and checking the files, on the
//! generated vhost of 10,000 queues, 500 exchanges and 20,000 bindings
//! with policies, users and permissions: in-process, the time of every
//! rule (`lint::check`) against that of reading the files
//! (`desired::load_unchecked`), in turns; every rule against every rule but
//! those that ask where messages go (`lint::check_without_routing`: what
//! the routing model costs lint), in turns; and, side by side, `warren
//! lint` against `warren validate` through the binary. Run:
//! `cargo bench --bench lint`.

mod common;

use std::process::Command;
use std::time::Instant;

use common::{paired, warren_binary};

fn main() {
    let (queues, exchanges, bindings) = (10_000, 500, 20_000);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let topology = warren::testing::large_topology(queues, exchanges, bindings);
    let files = warren::import::import(&topology, &[], "generated").expect("the generated topology imports");
    let desired = dir.path().join("topology");
    std::fs::create_dir_all(&desired).unwrap();
    for f in &files.files {
        std::fs::write(desired.join(&f.name), &f.text).unwrap();
    }

    // In-process: reading the files, then the rules over what was read,
    // then the rules without routing.
    let mut read_ms = Vec::new();
    let mut rules_ms = Vec::new();
    let mut unrouted_ms = Vec::new();
    let mut ratios = Vec::new();
    let mut count = 0;
    for _ in 0..11 {
        let t = Instant::now();
        let d = warren::desired::load_unchecked(&desired);
        read_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let found = warren::desired::findings(&d);
        rules_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let unrouted = warren::lint::check_without_routing(&d.topology, &d.locations, &d.project.lint);
        unrouted_ms.push(t.elapsed().as_secs_f64() * 1e3);
        ratios.push(rules_ms.last().unwrap() / unrouted_ms.last().unwrap());
        assert!(unrouted.shown.len() <= found.shown.len());
        count = found.shown.len();
        if std::env::var_os("WARREN_BENCH_CODES").is_some() {
            let mut codes = std::collections::BTreeMap::new();
            for f in &found.shown {
                *codes.entry(f.code).or_insert(0) += 1;
            }
            eprintln!("{codes:?}");
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (read, rules, unrouted) = (median(&mut read_ms), median(&mut rules_ms), median(&mut unrouted_ms));
    let routing = median(&mut ratios);

    let bin = warren_binary();
    let run = |command: &str| {
        let mut c = Command::new(&bin);
        c.arg("-q").arg(command).arg(&desired);
        let out = c.output().unwrap();
        assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let (lint, validate, ratio) = paired(11, || run("lint"), || run("validate"));
    println!("lint, {queues} queues / {exchanges} exchanges / {bindings} bindings");
    println!("  read the files (load_unchecked):  {read:>8.1} ms");
    println!("  every rule (lint::check):         {rules:>8.1} ms ({count} findings)");
    println!("  rules / reading:                  {:>8.2}  (target <= 0.25; medians of 11)", rules / read);
    println!("  the rules without routing:        {unrouted:>8.1} ms");
    println!("  rules / rules without routing:    {routing:>8.2}  (target <= 1.25; median of 11 turns)");
    println!("  warren validate:                  {:>8.1} ms", validate.as_secs_f64() * 1e3);
    println!("  warren lint:                      {:>8.1} ms", lint.as_secs_f64() * 1e3);
    println!("  ratio lint/validate:              {ratio:>8.2}  (median of 11 paired turns)");
}
