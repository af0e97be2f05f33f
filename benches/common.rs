//! Shared by the benchmarks: timing by medians, the generated topology on
//! disk, and peak memory of a child process.

// Each benchmark includes this file as a module of its own and uses a part
// of it; every item is used by one benchmark or more.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value as Json;

/// The middle value of `values` (the upper one of an even count).
pub(crate) fn median<T: PartialOrd + Copy>(mut values: Vec<T>) -> T {
    values.sort_by(|a, b| a.partial_cmp(b).expect("timings and their ratios are numbers"));
    values[values.len() / 2]
}

/// Times `a` and `b` in turns, `runs` times each after a first run of
/// each, so that both meet the same moments of a noisy machine. Gives their
/// median times and the median of the ratios a/b of each turn.
pub(crate) fn paired(runs: usize, mut a: impl FnMut(), mut b: impl FnMut()) -> (Duration, Duration, f64) {
    let timed = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed()
    };
    a();
    b();
    let turns: Vec<(Duration, Duration)> = (0..runs).map(|_| (timed(&mut a), timed(&mut b))).collect();
    let of = |f: fn(&(Duration, Duration)) -> Duration| median(turns.iter().map(f).collect());
    (of(|t| t.0), of(|t| t.1), median(turns.iter().map(|&(x, y)| ratio(x, y)).collect()))
}

/// The release binary next to this benchmark.
pub(crate) fn warren_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the benchmark knows its path");
    // target/release/deps/bench-… -> target/release/warren
    exe.parent().and_then(Path::parent).expect("inside target/").join("warren")
}

/// Runs a command to completion, failing loudly on a non-zero exit; returns
/// its peak resident memory in kB (from GNU time's %M).
pub(crate) fn run_measured(cmd: &mut Command) -> u64 {
    let mut time = Command::new("/usr/bin/time");
    time.arg("-f").arg("%M").arg(cmd.get_program()).args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => time.env(k, v),
            None => time.env_remove(k),
        };
    }
    let out = time.output().expect("/usr/bin/time runs (apt-get install time)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(0) || out.status.code() == Some(2), "{:?} failed:\n{stderr}", cmd);
    stderr.lines().last().and_then(|l| l.trim().parse().ok()).unwrap_or(0)
}

pub(crate) fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

pub(crate) fn agent() -> ureq::Agent {
    agent_within(Duration::from_secs(900))
}

/// An agent whose every request gives up after `limit`; an HTTP error
/// status is an answer, not an error.
pub(crate) fn agent_within(limit: Duration) -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(limit)).build().into()
}

/// `(base, authorization)` of a broker URL `http://user:password@host:port`.
pub(crate) fn api(url: &str) -> (String, String) {
    let rest = url.strip_prefix("http://").expect("http://user:password@host:port");
    let (userinfo, host) = rest.split_once('@').unwrap();
    use base64::Engine;
    (format!("http://{host}/api"), format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(userinfo)))
}

/// The vhost afresh, holding the definitions (a broker-wide export's, or
/// one vhost's).
pub(crate) fn load(url: &str, vhost: &str, defs: &Json) {
    delete_vhost(url, vhost);
    let (base, auth) = api(url);
    let a = agent();
    let put = a
        .put(&format!("{base}/vhosts/{vhost}"))
        .header("authorization", &auth)
        .header("content-type", "application/json");
    assert!(put.send("{}").unwrap().status().as_u16() < 300);
    let post = a
        .post(&format!("{base}/definitions"))
        .header("authorization", &auth)
        .header("content-type", "application/json");
    let status = post.send(defs.to_string()).unwrap().status().as_u16();
    assert!(status < 300, "import into {url}: HTTP {status}");
}

/// Deletes the vhost; thousands of queues can outlast the HTTP timeout,
/// so it waits for the vhost to be gone.
pub(crate) fn delete_vhost(url: &str, vhost: &str) {
    let (base, auth) = api(url);
    let a = agent();
    let _ = a.delete(&format!("{base}/vhosts/{vhost}")).header("authorization", &auth).call();
    let deadline = Instant::now() + Duration::from_secs(600);
    let gone = || {
        let answer = a.get(&format!("{base}/vhosts/{vhost}")).header("authorization", &auth).call();
        answer.is_ok_and(|r| r.status().as_u16() == 404)
    };
    while !gone() {
        assert!(Instant::now() < deadline, "vhost {vhost} is still there on {base}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The generated vhost of `queues`, `exchanges` and `bindings`
/// (`warren::testing::large_definitions`) as a definitions export of the
/// vhost `vhost`, for a broker's own import.
pub(crate) fn definitions_as(vhost: &str, queues: usize, exchanges: usize, bindings: usize) -> Json {
    let text = warren::testing::large_definitions(queues, exchanges, bindings);
    let mut defs: Json = serde_json::from_str(&text).expect("the generated definitions are JSON");
    for key in ["queues", "exchanges", "bindings", "policies"] {
        for item in defs[key].as_array_mut().into_iter().flatten() {
            item["vhost"] = serde_json::json!(vhost);
        }
    }
    defs["vhosts"] = serde_json::json!([{ "name": vhost }]);
    defs["users"] = serde_json::json!([]);
    defs["permissions"] = serde_json::json!([]);
    defs
}

/// The same vhost as topology files in `dir`, as `warren import` writes
/// them.
pub(crate) fn write_files_as(dir: &Path, vhost: &str, queues: usize, exchanges: usize, bindings: usize) {
    let mut topology = warren::testing::large_topology(queues, exchanges, bindings);
    let mut vh = topology.vhosts.pop_first().expect("one vhost").1;
    vh.name = vhost.into();
    topology.vhosts.insert(vhost.into(), vh);
    for f in &warren::import::import(&topology, &[], "generated").expect("the generated topology imports").files {
        std::fs::write(dir.join(&f.name), &f.text).expect("the files are written");
    }
}
