//! `warren plan --state` on a generated vhost of 10,000 queues, 500
//! exchanges and 20,000 bindings, against the same export: its time as a
//! ratio of reading its two inputs with the libraries warren uses (the
//! export's JSON into a `serde_json::Value`, each topology file into a
//! `toml::Table`), measured in the same run, and its peak memory as a
//! ratio of a process that holds the export as a parsed JSON document
//! (`serde_json::Value`), with `warren validate`'s peak beside them. Run: `cargo bench --bench plan_state`;
//! `WARREN_BENCH_QUEUES=100000` for ten times the size (exchanges and
//! bindings scale with it).

mod common;

use std::process::Command;

use common::{paired, run_measured, warren_binary};

/// Set in the child that only holds the export as parsed JSON.
const HOLD: &str = "WARREN_BENCH_HOLD_JSON";

fn main() {
    if let Some(path) = std::env::var_os(HOLD) {
        let text = std::fs::read_to_string(path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        drop(text);
        std::hint::black_box(&v);
        return;
    }
    let queues: usize = std::env::var("WARREN_BENCH_QUEUES").ok().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let (exchanges, bindings) = (queues / 20, queues * 2);
    let dir = tempfile::tempdir().expect("a temporary directory");
    // WARREN_BENCH_DIR keeps the generated files, for profiling.
    let keep = std::env::var_os("WARREN_BENCH_DIR").map(std::path::PathBuf::from);
    let root = keep.as_deref().unwrap_or(dir.path());
    let state = root.join("definitions.json");
    std::fs::write(&state, warren::testing::large_definitions(queues, exchanges, bindings)).unwrap();
    let topology = warren::testing::large_topology(queues, exchanges, bindings);
    let files = warren::import::import(&topology, &[], "generated").expect("the generated topology imports");
    let desired = root.join("topology");
    std::fs::create_dir_all(&desired).unwrap();
    for f in &files.files {
        std::fs::write(desired.join(&f.name), &f.text).unwrap();
    }

    let bin = warren_binary();
    let plan = || {
        let mut c = Command::new(&bin);
        c.args(["plan"]).arg(&desired).arg("--state").arg(&state).args(["--format", "json", "-q"]);
        c
    };
    let out = plan().output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"add\": 0") && text.contains("\"change\": 0"), "the plan should be empty: {text:.400}");
    let (warren, baseline, ratio) = paired(
        15,
        || assert!(plan().output().unwrap().status.success()),
        || {
            let text = std::fs::read_to_string(&state).unwrap();
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            std::hint::black_box(v);
            for f in &files.files {
                let text = std::fs::read_to_string(desired.join(&f.name)).unwrap();
                let t: toml::Table = text.parse().unwrap();
                std::hint::black_box(t);
            }
        },
    );
    let peak_kb = run_measured(&mut plan());
    let validate_kb = run_measured(Command::new(&bin).arg("validate").arg(&desired).arg("-q"));
    let held_kb = run_measured(std::process::Command::new(std::env::current_exe().unwrap()).env(HOLD, &state));
    let largest = files.files.iter().map(|f| f.text.len()).max().unwrap_or(0);
    let export_mb = std::fs::metadata(&state).map_or(0, |m| m.len()) as f64 / 1e6;
    println!("plan --state, {queues} queues / {exchanges} exchanges / {bindings} bindings");
    println!(
        "  inputs: a {export_mb:.1} MB export; {} topology files as `warren import` writes them, the largest {:.2} MB",
        files.files.len(),
        largest as f64 / 1e6
    );
    println!("  read+parse JSON and TOML (baseline): {:>5.1} ms", baseline.as_secs_f64() * 1e3);
    println!("  warren plan --state:              {:>8.1} ms", warren.as_secs_f64() * 1e3);
    println!("  ratio plan/baseline:              {:>8.2}  (target <= 1.5; median of 15 paired turns)", ratio);
    println!("  peak memory of warren plan:       {:>8.1} MB", peak_kb as f64 / 1024.0);
    println!("  peak memory, export as JSON Value:{:>8.1} MB", held_kb as f64 / 1024.0);
    println!("  ratio of the peaks:               {:>8.2}  (target <= 1.0)", peak_kb as f64 / held_kb as f64);
    println!(
        "  peak memory of warren validate:   {:>8.1} MB  ({:.2} of the export as JSON Value)",
        validate_kb as f64 / 1024.0,
        validate_kb as f64 / held_kb as f64
    );
    println!("  what takes the memory: docs/development.md, section Benchmarks");
    routing_change(&topology, root, &state, &bin);
}

/// Set to leave the plan's routing change out: the baseline of its cost.
const NO_ROUTING: &str = "WARREN_BENCH_NO_ROUTING_CHANGE";

/// The plan of the same vhost with 100 bindings' keys changed, with its
/// routing change against without it, in turns.
fn routing_change(
    topology: &warren::model::Topology,
    root: &std::path::Path,
    state: &std::path::Path,
    bin: &std::path::Path,
) {
    let mut changed = topology.clone();
    let v = changed.vhosts.values_mut().next().expect("the generated vhost");
    let every = (v.bindings.len() / 100).max(1);
    let picked: Vec<warren::model::Binding> = v.bindings.iter().step_by(every).take(100).cloned().collect();
    for b in &picked {
        v.bindings.remove(b);
        let key = if b.routing_key.ends_with(".#") {
            b.routing_key.replace(".#", ".*")
        } else {
            format!("{}.changed", b.routing_key)
        };
        v.bindings.insert(warren::model::Binding { routing_key: key, ..b.clone() });
    }
    let files = warren::import::import(&changed, &[], "generated").expect("the changed topology imports");
    let desired = root.join("changed");
    std::fs::create_dir_all(&desired).unwrap();
    for f in &files.files {
        std::fs::write(desired.join(&f.name), &f.text).unwrap();
    }
    let plan = |off: bool| {
        let mut c = Command::new(bin);
        c.args(["plan"]).arg(&desired).arg("--state").arg(state).args(["--format", "json", "-q"]);
        if off {
            c.env(NO_ROUTING, "1");
        }
        c
    };
    let out = plan(false).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a plan document");
    let exchanges = json["routing"].as_array().map_or(0, Vec::len);
    let classes: usize =
        json["routing"].as_array().into_iter().flatten().map(|x| x["classes"].as_array().map_or(0, Vec::len)).sum();
    let (with, without, ratio) = paired(
        15,
        || assert!(plan(false).output().unwrap().status.code() == Some(0)),
        || assert!(plan(true).output().unwrap().status.code() == Some(0)),
    );
    println!(
        "plan --state with 100 bindings' keys changed ({} to add, {} to destroy)",
        json["summary"]["add"], json["summary"]["destroy"]
    );
    println!("  routing change: {exchanges} exchanges, {classes} classes of keys");
    println!("  without the routing change (baseline): {:>6.1} ms", without.as_secs_f64() * 1e3);
    println!("  with it:                                {:>6.1} ms", with.as_secs_f64() * 1e3);
    println!("  ratio with/without:                     {:>6.2}  (target <= 1.25; median of 15 paired turns)", ratio);
}
