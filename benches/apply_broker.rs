//! Against a private broker node: applying a generated 10,000-queue,
//! 500-exchange, 20,000-binding, 50-policy topology to an empty vhost (one
//! policy per service, as large installations have), as ratios to
//! the broker's own bulk import of the same definitions (POST
//! /api/definitions) and to one HTTP request per object in sequence; and
//! `warren plan` against that vhost as a ratio to a raw GET of its
//! definitions. All measured in one run: the import and the apply in
//! turns (`WARREN_BENCH_TURNS`, default 3), the plan and the GET in seven.
//!
//! Run: `WARREN_TEST_NODE=7 scripts/broker start && eval "$(WARREN_TEST_NODE=7 scripts/broker env)"
//!       && cargo bench --bench apply_broker`
//! (`WARREN_BENCH_APPLIES=10` applies ten times in a row, each into an
//! emptied vhost, and fails on the first that does not succeed.)

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{median, ratio, warren_binary};
use serde_json::{Value as Json, json};

struct Api {
    agent: ureq::Agent,
    base: String,
    auth: String,
}

impl Api {
    fn call(&self, method: &str, path: &str, body: Option<&Json>) -> u16 {
        let url = format!("{}/api/{path}", self.base);
        let a = &self.auth;
        let text = body.map(|b| b.to_string()).unwrap_or_else(|| "{}".into());
        let json = "application/json";
        let resp = match method {
            "GET" => self.agent.get(&url).header("authorization", a).call(),
            "DELETE" => self.agent.delete(&url).header("authorization", a).call(),
            "PUT" => self.agent.put(&url).header("authorization", a).header("content-type", json).send(text),
            _ => self.agent.post(&url).header("authorization", a).header("content-type", json).send(text),
        };
        match resp {
            Ok(r) => r.status().as_u16(),
            Err(ureq::Error::StatusCode(c)) => c,
            Err(e) => panic!("{method} {path}: {e}"),
        }
    }

    /// Deletes a vhost. Deleting thousands of queues can outlast the
    /// broker's HTTP timeout, which then closes the connection while the
    /// deletion goes on: then it waits for the vhost to be gone.
    fn delete_vhost(&self, name: &str) {
        let path = format!("vhosts/{}", seg(name));
        let url = format!("{}/api/{path}", self.base);
        match self.agent.delete(&url).header("authorization", &self.auth).call() {
            Ok(_) | Err(ureq::Error::StatusCode(_)) => {}
            Err(e) => {
                let deadline = Instant::now() + Duration::from_secs(600);
                while self.call("GET", &path, None) != 404 {
                    assert!(Instant::now() < deadline, "vhost {name} is still there after DELETE ({e})");
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        }
    }
}

/// Policies beside the generated topology's four, one per service: 46,
/// for 50 in all.
const SERVICE_POLICIES: usize = 46;

/// Adds `n` policies, each matching the queues whose number ends in its
/// own two digits (a hundredth of them), above the generated ones.
fn with_service_policies(topology: &mut warren::model::Topology, n: usize) {
    use warren::model::{ApplyTo, Policy, Table, Value};
    let v = topology.vhosts.values_mut().next().unwrap();
    for k in 0..n {
        let name = format!("bench-svc{k:02}");
        let definition = Table::from_iter([
            ("max-length-bytes".to_string(), Value::Int(100 << 20)),
            ("expires".to_string(), Value::Int(14 * 24 * 3_600_000)),
        ]);
        let pattern = format!("^bench\\.q\\d{{3}}{k:02}$");
        v.set_policy(&Policy { name, pattern, apply_to: ApplyTo::Queues, priority: 3, definition });
    }
}

fn seg(s: &str) -> String {
    warren::broker::segment(s)
}

fn timed(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

fn main() {
    let url =
        std::env::var("WARREN_TEST_URL").expect("WARREN_TEST_URL: start a node with scripts/broker (see the header)");
    let rest = url.strip_prefix("http://").expect("http://user:password@host:port");
    let (userinfo, host) = rest.split_once('@').unwrap();
    use base64::Engine;
    let auth = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(userinfo));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(true)
        .timeout_global(Some(Duration::from_secs(600)))
        .build()
        .into();
    let api = Api { agent, base: format!("http://{host}"), auth };

    // WARREN_BENCH_SCALE=10 runs a tenth of the size, for a quick look.
    let scale: usize = std::env::var("WARREN_BENCH_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let (queues, exchanges, bindings) = (10_000 / scale, 500 / scale, 20_000 / scale);
    let mut topology = warren::testing::large_topology(queues, exchanges, bindings);
    with_service_policies(&mut topology, SERVICE_POLICIES);
    let policies = topology.vhosts.values().next().unwrap().policies().len();
    let dir = tempfile::tempdir().unwrap();
    let reset = |vhost: &str| {
        api.delete_vhost(vhost);
        assert!(api.call("PUT", &format!("vhosts/{}", seg(vhost)), Some(&json!({}))) < 300);
    };

    // 1. The broker's own bulk import, into vhost bench-import (timed in
    // turns with the apply, below).
    let mut defs: Json = warren::export::definitions(&topology);
    for key in ["queues", "exchanges", "bindings", "policies"] {
        for item in defs[key].as_array_mut().into_iter().flatten() {
            item["vhost"] = json!("bench-import");
        }
    }
    defs["vhosts"] = json!([{ "name": "bench-import" }]);
    defs["users"] = json!([]);
    defs["permissions"] = json!([]);
    let import = || timed(|| assert!(api.call("POST", "definitions", Some(&defs)) < 300));

    // 2. One request per object, in sequence, into vhost bench-seq.
    reset("bench-seq");
    let v = "bench-seq";
    let t = topology.vhosts.values().next().unwrap().clone();
    let sequential = timed(|| {
        for x in t.exchanges.values() {
            let body = json!({"type": x.kind, "durable": x.durable, "auto_delete": x.auto_delete, "internal": x.internal, "arguments": Json::from(&warren::model::Value::Table(x.arguments.clone()))});
            api.call("PUT", &format!("exchanges/{}/{}", seg(v), seg(&x.name)), Some(&body));
        }
        for q in t.queues.values() {
            let mut args = q.arguments.clone();
            args.insert("x-queue-type".into(), warren::model::Value::String(q.kind.as_str().into()));
            let body = json!({"durable": q.durable, "auto_delete": q.auto_delete, "arguments": Json::from(&warren::model::Value::Table(args))});
            api.call("PUT", &format!("queues/{}/{}", seg(v), seg(&q.name)), Some(&body));
        }
        for b in &t.bindings {
            let d = if b.destination_kind == warren::model::DestinationKind::Queue { "q" } else { "e" };
            let body = json!({"routing_key": b.routing_key, "arguments": Json::from(&warren::model::Value::Table(b.arguments.clone()))});
            api.call(
                "POST",
                &format!("bindings/{}/e/{}/{d}/{}", seg(v), seg(&b.source), seg(&b.destination)),
                Some(&body),
            );
        }
        for p in t.policies() {
            let body = json!({"pattern": p.pattern, "definition": Json::from(&warren::model::Value::Table(p.definition.clone())), "priority": p.priority, "apply-to": p.apply_to.as_str()});
            api.call("PUT", &format!("policies/{}/{}", seg(v), seg(&p.name)), Some(&body));
        }
    });
    eprintln!("one request per object: {sequential:?}");
    api.delete_vhost("bench-seq");

    // 3. warren apply into vhost bench-apply (created by warren), in turns
    // with the import.
    let mut vh = topology.vhosts.pop_first().unwrap().1;
    vh.name = "bench-apply".into();
    topology.vhosts.insert("bench-apply".into(), vh);
    let files = warren::import::import(&topology, &[], "generated").unwrap();
    let desired = dir.path().join("topology");
    std::fs::create_dir_all(&desired).unwrap();
    // A plan or apply against a broker acts for a project.
    std::fs::write(desired.join("warren.toml"), "[project]\nname = \"bench\"\n").unwrap();
    for f in &files.files {
        std::fs::write(desired.join(&f.name), &f.text).unwrap();
    }
    let warren = warren_binary();
    let run = |command: &str| {
        let mut c = Command::new(&warren);
        c.arg(command).arg(&desired).arg("-q").env("WARREN_URL", &url);
        if command == "apply" {
            c.arg("--auto-approve");
        }
        let out = c.output().unwrap();
        assert!(out.status.code() == Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let apply = || {
        timed(|| {
            run("apply");
        })
    };
    // WARREN_BENCH_TURNS (default 3) turns of the import and the apply,
    // each pair back to back and each on a broker without the other's
    // vhost, for the median of their ratios.
    let turns: usize = std::env::var("WARREN_BENCH_TURNS").ok().and_then(|s| s.parse().ok()).unwrap_or(3).max(1);
    let (mut imports, mut applies) = (Vec::new(), Vec::new());
    for n in 1..=turns {
        api.delete_vhost("bench-apply");
        reset("bench-import");
        imports.push(import());
        api.delete_vhost("bench-import");
        applies.push(apply());
        eprintln!("turn {n} of {turns}: bulk import {:?}, warren apply {:?}", imports[n - 1], applies[n - 1]);
    }
    let apply_ratio = median(imports.iter().zip(&applies).map(|(i, a)| ratio(*a, *i)).collect());
    let (import_time, apply_time) = (median(imports), median(applies));
    // WARREN_BENCH_APPLIES=10 applies again into an emptied vhost, nine
    // more times: each must succeed (a dropped connection once stopped
    // one apply in four), and each time is reported.
    let again: usize = std::env::var("WARREN_BENCH_APPLIES").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    for n in 2..=again {
        api.delete_vhost("bench-apply");
        let t = apply();
        eprintln!("warren apply {n} of {again}: {t:?}");
    }

    // 4. plan against the applied vhost, and a raw GET of its definitions,
    // in turns: one of each pays the same moment's noise.
    let (plan, get, plan_ratio) = common::paired(
        7,
        || {
            let out = run("plan");
            assert!(out.contains("No changes"), "{out:.300}");
        },
        || {
            api.call("GET", "definitions/bench-apply", None);
        },
    );

    for v in ["bench-import", "bench-seq", "bench-apply"] {
        api.delete_vhost(v);
    }
    println!(
        "apply to an empty vhost, {queues} queues / {exchanges} exchanges / {bindings} bindings / {policies} policies"
    );
    println!("  broker bulk import (POST /api/definitions): {:>8.1} s", import_time.as_secs_f64());
    println!("  one request per object, in sequence:       {:>8.1} s", sequential.as_secs_f64());
    println!("  warren apply:                              {:>8.1} s", apply_time.as_secs_f64());
    println!("  apply / bulk import:     {:>6.2}  (target <= 1.0; median of {turns} paired turns)", apply_ratio);
    println!("  sequential / apply:      {:>6.2}  (target >= 3)", ratio(sequential, apply_time));
    println!("plan against the live vhost");
    println!("  raw GET /api/definitions/{{vhost}}: {:>8.2} s", get.as_secs_f64());
    println!("  warren plan:                      {:>8.2} s", plan.as_secs_f64());
    println!("  plan / GET:              {:>6.2}  (target <= 1.25; median of 7 paired turns)", plan_ratio);
}
