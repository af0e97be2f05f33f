//! Against a private broker node: a 20-queue project planned in a vhost
//! that also holds 100,000 queues of another project (`WARREN_BENCH_QUEUES`),
//! loaded once with the broker's own definitions import, as ratios to a
//! raw `GET /api/definitions/{vhost}` of that vhost, in time and in bytes
//! on the wire, measured in paired turns (`WARREN_BENCH_TURNS`, default 5)
//! through a byte-counting TCP proxy that the benchmark starts and stops;
//! and the same project planned in an empty vhost, for comparison.
//!
//! Run: `WARREN_TEST_NODE=7 scripts/broker start && eval "$(WARREN_TEST_NODE=7 scripts/broker env)"
//!       && cargo bench --bench narrow`
//! (`WARREN_BENCH_KEEP=1` keeps the loaded vhost for the next run, which
//! then skips the import.)

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{median, paired, warren_binary};
use serde_json::json;

/// A TCP proxy to the broker's management port that counts the bytes it
/// carries both ways.
struct Proxy {
    port: u16,
    bytes: Arc<AtomicU64>,
}

impl Proxy {
    fn start(target: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
        let port = listener.local_addr().unwrap().port();
        let bytes = Arc::new(AtomicU64::new(0));
        let counted = bytes.clone();
        // Lives as long as the benchmark process; it ends with it.
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&target) else { continue };
                let pipe = |mut from: TcpStream, mut to: TcpStream, n: Arc<AtomicU64>| {
                    std::thread::spawn(move || {
                        let mut buf = vec![0u8; 64 * 1024];
                        while let Ok(k) = from.read(&mut buf) {
                            if k == 0 || to.write_all(&buf[..k]).is_err() {
                                break;
                            }
                            n.fetch_add(k as u64, Ordering::Relaxed);
                        }
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                };
                pipe(client.try_clone().unwrap(), server.try_clone().unwrap(), counted.clone());
                pipe(server, client, counted.clone());
            }
        });
        Proxy { port, bytes }
    }

    /// Bytes carried while `f` ran.
    fn count(&self, f: impl FnOnce()) -> u64 {
        let before = self.bytes.load(Ordering::Relaxed);
        f();
        // The last reads of a closed connection land just after.
        std::thread::sleep(Duration::from_millis(50));
        self.bytes.load(Ordering::Relaxed) - before
    }
}

fn seg(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

fn main() {
    let url = std::env::var("WARREN_TEST_URL").expect("start a node: see the note at the top");
    let turns: usize = std::env::var("WARREN_BENCH_TURNS").ok().and_then(|t| t.parse().ok()).unwrap_or(5);
    let others: usize = std::env::var("WARREN_BENCH_QUEUES").ok().and_then(|t| t.parse().ok()).unwrap_or(100_000);
    let parsed = url::Url::parse(&url).expect("WARREN_TEST_URL is a URL");
    let (user, password) = (parsed.username().to_string(), parsed.password().unwrap_or_default().to_string());
    let target = format!("{}:{}", parsed.host_str().unwrap(), parsed.port().unwrap());
    let proxy = Proxy::start(target);
    let through = format!("http://{user}:{password}@127.0.0.1:{}", proxy.port);
    let auth = format!("Basic {}", base64_of(&format!("{user}:{password}")));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(1800)))
        .http_status_as_error(false)
        .build()
        .into();
    let api = |method: &str, path: &str, body: Option<String>| -> (u16, String) {
        let u = format!("{through}/api/{path}");
        let r = match (method, body) {
            ("PUT", b) => agent
                .put(&u)
                .header("authorization", &auth)
                .header("content-type", "application/json")
                .send(b.unwrap_or_else(|| "{}".into())),
            ("POST", b) => agent
                .post(&u)
                .header("authorization", &auth)
                .header("content-type", "application/json")
                .send(b.unwrap_or_default()),
            ("DELETE", _) => agent.delete(&u).header("authorization", &auth).call(),
            _ => agent.get(&u).header("authorization", &auth).call(),
        };
        match r {
            Ok(mut r) => (r.status().as_u16(), r.body_mut().read_to_string().unwrap_or_default()),
            // A long import or deletion outlasts the broker's HTTP
            // timeout, which closes the connection while the work goes on.
            Err(e) => (0, e.to_string()),
        }
    };
    let (big, empty) = ("bench-narrow", "bench-narrow-empty");
    let count = || {
        let (status, body) =
            api("GET", &format!("queues/{}?page=1&page_size=1&columns=name&disable_stats=true", seg(big)), None);
        let n = serde_json::from_str::<serde_json::Value>(&body).ok().and_then(|j| j["filtered_count"].as_u64());
        (status == 200).then_some(n).flatten()
    };
    api("DELETE", &format!("vhosts/{}", seg(empty)), None);
    api("PUT", &format!("vhosts/{}", seg(empty)), None);
    // Loaded once: a run that finds the vhost loaded (an earlier run's)
    // keeps it, since the import takes minutes.
    if count() != Some(others as u64) {
        api("DELETE", &format!("vhosts/{}", seg(big)), None);
        api("PUT", &format!("vhosts/{}", seg(big)), None);
        let queues: Vec<_> = (0..others)
            .map(|i| json!({"name": format!("other.q.{i:06}"), "durable": true, "auto_delete": false, "arguments": {}}))
            .collect();
        let doc = json!({"queues": queues, "exchanges": [], "bindings": [], "policies": [], "parameters": []});
        let t = Instant::now();
        let (status, body) = api("POST", &format!("definitions/{}", seg(big)), Some(doc.to_string()));
        assert!(status == 0 || (200..300).contains(&status), "the import: HTTP {status} {body}");
        while count() != Some(others as u64) {
            assert!(t.elapsed() < Duration::from_secs(3600), "the import did not finish in an hour");
            std::thread::sleep(Duration::from_secs(2));
        }
        eprintln!("imported {others} queues of another project in {:.1} s", t.elapsed().as_secs_f64());
    }

    let dir = tempfile::tempdir().unwrap();
    let files = |v: &str| {
        let d = dir.path().join(v);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("warren.toml"), "[project]\nname = \"team\"\n").unwrap();
        let mut t = format!("vhosts = [\"{v}\"]\n\n[exchanges.\"team.events\"]\ntype = \"topic\"\n");
        for i in 0..20 {
            t += &format!(
                "\n[queues.\"team.q{i:02}\"]\n\n[[bindings]]\nsource = \"team.events\"\nqueue = \"team.q{i:02}\"\nrouting_key = \"k.{i}\"\n"
            );
        }
        std::fs::write(d.join("topology.toml"), t).unwrap();
        d
    };
    let warren = warren_binary();
    let run = |command: &str, v: &str, verbose: bool| {
        let mut c = Command::new(&warren);
        c.arg(command).arg(files(v)).env("WARREN_URL", &through);
        c.arg(if verbose { "-v" } else { "-q" });
        if command == "apply" {
            c.arg("--auto-approve");
        }
        let out = c.output().expect("warren runs");
        assert!(matches!(out.status.code(), Some(0 | 2)), "{command}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    // The project applied in both vhosts: the plans then have nothing to change.
    run("apply", big, false);
    run("apply", empty, false);
    let why = run("plan", big, true);
    eprintln!("{}", why.lines().filter(|l| l.contains("vhost \"")).collect::<Vec<_>>().join("\n"));

    let get = || {
        let (status, _) = api("GET", &format!("definitions/{}", seg(big)), None);
        assert_eq!(status, 200);
    };
    let (plan_time, get_time, time_ratio) = paired(turns, || drop(run("plan", big, false)), get);
    let plan_bytes: Vec<u64> = (0..turns).map(|_| proxy.count(|| drop(run("plan", big, false)))).collect();
    let get_bytes: Vec<u64> = (0..turns).map(|_| proxy.count(get)).collect();
    let (plan_bytes, get_bytes) = (median(plan_bytes), median(get_bytes));
    let (empty_time, _, empty_ratio) = paired(turns, || drop(run("plan", empty, false)), get);
    println!("20-queue project in a vhost with {others} other queues ({turns} paired turns, medians):");
    println!(
        "  plan {:.1} ms, GET /api/definitions/{{vhost}} {:.1} ms: time ratio {time_ratio:.3}",
        plan_time.as_secs_f64() * 1e3,
        get_time.as_secs_f64() * 1e3
    );
    println!("  bytes: plan {plan_bytes}, GET {get_bytes}: ratio {:.4}", plan_bytes as f64 / get_bytes as f64);
    println!(
        "  the same project in an empty vhost: plan {:.1} ms, ratio to the GET above {empty_ratio:.3}",
        empty_time.as_secs_f64() * 1e3
    );
    api("DELETE", &format!("vhosts/{}", seg(empty)), None);
    if std::env::var_os("WARREN_BENCH_KEEP").is_none() {
        api("DELETE", &format!("vhosts/{}", seg(big)), None);
    }
}

fn base64_of(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}
