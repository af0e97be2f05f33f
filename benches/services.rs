//! What services add to reading and checking the files: 500 services (100
//! users, each service consuming 20 queues and publishing to 2 exchanges
//! with their keys) over the generated vhost of 10,000 queues, 500
//! exchanges and 20,000 bindings. `warren validate` and `warren lint` of
//! the files with the services, against the same commands without them,
//! side by side through the binary. Target: each <= 1.25. Run:
//! `cargo bench --bench services`.

mod common;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use common::{paired, warren_binary};

const SERVICES: usize = 500;
const USERS: usize = 100;

fn main() {
    let (queues, exchanges, bindings) = (10_000, 500, 20_000);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let topology = warren::testing::large_topology(queues, exchanges, bindings);
    let files = warren::import::import(&topology, &[], "generated").expect("the generated topology imports");
    // WARREN_BENCH_DIR keeps the files there, for a profiler.
    let root = std::env::var_os("WARREN_BENCH_DIR").map_or_else(|| dir.path().to_path_buf(), Into::into);
    let (plain, with) = (root.join("plain"), root.join("services"));
    for d in [&plain, &with] {
        std::fs::create_dir_all(d).unwrap();
        for f in &files.files {
            std::fs::write(d.join(&f.name), &f.text).unwrap();
        }
    }
    std::fs::write(with.join("services.toml"), services(&topology.vhosts["bench"], queues, exchanges)).unwrap();

    let bin = warren_binary();
    let run = |command: &str, path: &Path| {
        let out = Command::new(&bin).arg("-q").arg(command).arg(path).output().unwrap();
        // lint exits 1 on findings of the generated topology itself: only
        // a crash or an unreadable file fails the benchmark.
        assert!(out.status.code().is_some_and(|c| c <= 1), "{command}: {}", String::from_utf8_lossy(&out.stderr));
        out
    };
    let valid = run("validate", &with);
    assert!(valid.status.success(), "the services are valid: {}", String::from_utf8_lossy(&valid.stderr));
    println!("{SERVICES} services ({USERS} users) over {queues} queues / {exchanges} exchanges / {bindings} bindings");
    for command in ["validate", "lint"] {
        let (a, b, ratio) = paired(11, || drop(run(command, &with)), || drop(run(command, &plain)));
        println!("  warren {command:<8} without services: {:>8.1} ms", b.as_secs_f64() * 1e3);
        println!("  warren {command:<8} with services:    {:>8.1} ms", a.as_secs_f64() * 1e3);
        println!("  ratio:                            {ratio:>8.2}  (target <= 1.25; median of 11 paired turns)");
    }
}

/// The services' file: service i connects as user i % USERS, consumes 20
/// queues and publishes to 2 exchanges, with two of their binding keys
/// where the exchange takes keys.
fn services(vhost: &warren::model::Vhost, queues: usize, exchanges: usize) -> String {
    let mut out = String::from("vhosts = [\"bench\"]\n");
    for u in 0..USERS {
        let _ = write!(out, "\n[users.\"bench.u{u:03}\"]\npassword_env = \"BENCH_PASSWORD\"\n");
    }
    for s in 0..SERVICES {
        let consumes: Vec<String> = (0..20).map(|j| format!("\"bench.q{:05}\"", (s * 20 + j) % queues)).collect();
        let mut publishes = Vec::new();
        for j in 0..2 {
            let x = format!("bench.x{:04}", (s * 2 + j) % exchanges);
            let keys: Vec<String> = match vhost.exchanges[&x].kind.as_str() {
                "direct" | "topic" => {
                    let bound = vhost.bindings.iter().filter(|b| b.source == x && !b.routing_key.contains(['*', '#']));
                    bound.take(2).map(|b| format!("\"{}\"", b.routing_key)).collect()
                }
                _ => Vec::new(),
            };
            let keys = if keys.is_empty() { String::new() } else { format!(", keys = [{}]", keys.join(", ")) };
            publishes.push(format!("{{ exchange = \"{x}\"{keys} }}"));
        }
        let _ = write!(
            out,
            "\n[services.\"bench.s{s:03}\"]\nuser = \"bench.u{:03}\"\nconsumes = [{}]\npublishes = [{}]\n",
            s % USERS,
            consumes.join(", "),
            publishes.join(", ")
        );
    }
    out
}
