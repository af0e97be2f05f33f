//! A fleet as it is in production: twelve brokers, each reached through a
//! link that adds 50 ms of round trip (benches/link.rs, a delaying proxy:
//! this kernel has no `netem`), each holding a 1,000-queue vhost.
//!
//! - `plan --env all` against the slowest single plan over the same
//!   links, measured in turns (target at most 1.3);
//! - `apply --env all` of one stage of the twelve, each adding 20 queues,
//!   against the slowest single apply of the same (target at most 1.5);
//! - the requests (round trips) one plan makes, at 1,000 queues and at
//!   100: the same, since a plan reads listings, never one object at a time;
//! - the applies again, each vhost's definitions replayed by its link
//!   ([`Link::replay_definitions`]), the writes made by the brokers;
//! - the CPU of each fleet apply (warren's, the links', the rest: the
//!   brokers', of which their idle share is measured with nothing asked
//!   of them) and how busy it kept the machine's cores: all of them busy
//!   is an apply that waited on CPU which brokers on machines of their own
//!   would not share;
//! - the plans again, each broker's answers replayed by its link
//!   ([`Link::replay`]) and the brokers stopped: brokers on machines of
//!   their own, whose CPU the fleet's plan does not share as it does here.
//!
//! The benchmark starts its brokers (nodes `WARREN_BENCH_FLEET_NUMBERS`,
//! default 51 to 62, with `scripts/broker`) and its links, and stops the
//! brokers when it ends. The brokers share this machine's two cores: the
//! link's latency is what a plan waits on, not their CPU.
//!
//! Run: `cargo bench --bench fleet_latency` (`WARREN_BENCH_SCALE=10` for a
//! tenth of the queues).

mod common;
mod link;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{agent, api, delete_vhost, load, median, ratio, warren_binary};
use link::{Crossed, Link};
use serde_json::Value as Json;

const VHOST: &str = "bench-latency";
/// Half the round trip each link adds.
const ONE_WAY: Duration = Duration::from_millis(25);
/// Queues each environment's apply adds.
const ADDED: usize = 20;
const RUNS: usize = 5;
/// How long the machine's CPU is counted with the brokers idle.
const IDLE: Duration = Duration::from_secs(3);

fn main() {
    let numbers: Vec<u32> = std::env::var("WARREN_BENCH_FLEET_NUMBERS")
        .ok()
        .map(|s| s.split_whitespace().map(|n| n.parse().expect("node numbers")).collect())
        .unwrap_or_else(|| (51..=62).collect());
    let scale: usize = std::env::var("WARREN_BENCH_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let queues = 1_000 / scale;
    let brokers = Brokers::start(&numbers);
    let direct: Vec<String> = numbers.iter().map(|n| format!("http://guest:guest@127.0.0.1:{}", 15700 + n)).collect();
    let links: Vec<Link> =
        numbers.iter().map(|n| Link::start(SocketAddr::from(([127, 0, 0, 1], 15700 + *n as u16)), ONE_WAY)).collect();
    let linked: Vec<String> = links.iter().map(|l| format!("http://guest:guest@127.0.0.1:{}", l.port)).collect();

    let loading = Instant::now();
    let defs = definitions(VHOST, queues);
    std::thread::scope(|s| {
        for url in &direct {
            let defs = &defs;
            s.spawn(move || load(url, VHOST, defs));
        }
    });
    eprintln!("started and loaded {} brokers in {:?}", numbers.len(), loading.elapsed() + brokers.took);

    let dir = tempfile::tempdir().unwrap();
    write_project(dir.path(), queues, numbers.len());
    let fleet = Fleet { dir: dir.path(), urls: &linked };
    // Every broker at once, as a fleet behind real links is read: the
    // default (8) bounds the work a fleet of big vhosts does at once.
    let at_once = linked.len().to_string();
    // The first apply takes the loaded objects into the project's records.
    fleet.run(&["apply", "--env", "all", "--auto-approve", "--parallelism", &at_once]);

    // What the brokers take of the machine while nothing asks them
    // anything (their statistics, their timers): part of "the rest" below.
    let quiet = Cpu::now();
    std::thread::sleep(IDLE);
    let idle = (Cpu::now() - quiet).machine / IDLE.as_secs_f64();

    let plans = plan_turns(&fleet, &at_once);

    // Round trips of one plan, at this size and at a tenth of it.
    let before = links[0].counts();
    fleet.run(&["plan", "--env", &env(0)]);
    let big = links[0].counts() - before;
    let small = round_trips_at(queues / 10, &direct[0], &linked[0], &links[0]);

    let (applies, apply_crossed) = apply_turns(&fleet, &direct, &links, &at_once);

    // Answers replayed by the links: brokers on machines of their own,
    // whose CPU a fleet's plan does not share. One fleet plan through the
    // brokers records every answer first, in the state each apply starts
    // from (the added queues taken away).
    for l in &links {
        l.replay();
    }
    fleet.run(&["plan", "--env", "all", "--parallelism", &at_once]);
    // Applies again, each vhost's definitions answered from the record (the
    // reads whose cost to a broker grows with its vhost); the writes, and
    // the reads of warren's records, still reach the brokers, which share
    // this machine's two cores.
    for l in &links {
        l.replay_definitions();
    }
    let (replayed_applies, replayed_apply_crossed) = apply_turns(&fleet, &direct, &links, &at_once);
    // Plans again, every answer replayed, and the brokers stopped first, so
    // that not even their idle CPU (twelve nodes' statistics) is shared.
    for l in &links {
        l.replay();
    }
    drop(brokers);
    let replayed = plan_turns(&fleet, &at_once);

    let n = linked.len();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let report = |what: &str, turns: &[(Duration, Duration)], target: f64| {
        let all = median(turns.iter().map(|t| t.0).collect());
        let slowest = median(turns.iter().map(|t| t.1).collect());
        let r = median(turns.iter().map(|t| ratio(t.0, t.1)).collect());
        println!(
            "  {what}: --env all {:.0} ms, slowest single {:.0} ms: {r:.2}  (target <= {target})",
            ms(all),
            ms(slowest)
        );
    };
    println!(
        "{n} brokers, each {queues} queues, behind links of {} ms round trip ({RUNS} turns, medians)",
        2 * ONE_WAY.as_millis()
    );
    println!("  the brokers idle, nothing asked of them: {idle:.2} CPU-seconds a second");
    report("plan ", &plans, 1.3);
    let pairs = |turns: &[ApplyTurn]| turns.iter().map(|t| (t.all, t.slowest)).collect::<Vec<_>>();
    report("apply", &pairs(&applies), 1.5);
    cpu_report(&applies, idle);
    report("plan, each broker's answers replayed by its link (a broker per machine)", &replayed, 1.3);
    report("apply, each vhost's definitions replayed by its link, the writes made", &pairs(&replayed_applies), 1.5);
    cpu_report(&replayed_applies, idle);
    println!(
        "  requests of one plan: {} at {queues} queues, {} at {} queues ({} and {} kB through the link)",
        big.requests,
        small.requests,
        queues / 10,
        big.bytes / 1024,
        small.bytes / 1024
    );
    println!("  requests of one apply adding {ADDED} queues: {}", apply_crossed.requests);
    println!(
        "  the same, definitions replayed: {}, {} of them answered from the record",
        replayed_apply_crossed.requests, replayed_apply_crossed.replayed
    );
}

/// Where the CPU of the fleet's applies went (medians of the turns), and
/// how busy that kept the machine's cores: all of them busy all along is
/// an apply that waited on this machine's CPU, which brokers on machines
/// of their own would not share.
fn cpu_report(turns: &[ApplyTurn], idle: f64) {
    let of = |f: &dyn Fn(&ApplyTurn) -> f64| median(turns.iter().map(f).collect());
    let cores = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    let said = |cpu: &dyn Fn(&ApplyTurn) -> Cpu| {
        let (warren, links) = (of(&|t| cpu(t).warren), of(&|t| cpu(t).links));
        let rest = of(&|t| cpu(t).machine - cpu(t).links - cpu(t).warren);
        format!("warren {warren:.2} s, the links {links:.2} s, the brokers and the rest {rest:.2} s")
    };
    println!(
        "    its CPU: {} (the brokers idle would take {:.2} s of it); the {cores} cores busy {:.0}% of its time, \
         which they need at least {:.0} ms for",
        said(&|t| t.cpu),
        of(&|t| idle * t.all.as_secs_f64()),
        of(&|t| t.cpu.machine / t.all.as_secs_f64() / cores) * 100.0,
        of(&|t| t.cpu.machine / cores) * 1000.0,
    );
    println!("    the single applies' CPU, one after another: {}", said(&|t| t.singles));
}

/// The twelve single applies, then the fleet's with `at_once`
/// environments at once, in turns (the first a warm-up), each adding
/// ADDED queues (the file `added.toml`, there only while this runs), taken
/// away again behind warren's back (straight to the broker, not through
/// the link) after each: each turn's fleet apply and slowest single apply,
/// and what one single apply sent through its link.
fn apply_turns(fleet: &Fleet, direct: &[String], links: &[Link], at_once: &str) -> (Vec<ApplyTurn>, Crossed) {
    let added_file = fleet.dir.join("added.toml");
    std::fs::write(&added_file, added()).unwrap();
    let mut turns = Vec::new();
    let mut crossed = Crossed::default();
    for turn in 0..=RUNS {
        let mut slowest = Duration::ZERO;
        let mut singles = Cpu::default();
        for (i, url) in direct.iter().enumerate() {
            let (before, cpu) = (links[i].counts(), Cpu::now());
            slowest = slowest.max(fleet.timed(&["apply", "--env", &env(i), "--auto-approve"]));
            singles = singles + (Cpu::now() - cpu);
            crossed = links[i].counts() - before;
            remove_added(url);
        }
        let before = Cpu::now();
        let all = fleet.timed(&["apply", "--env", "all", "--auto-approve", "--parallelism", at_once]);
        let cpu = Cpu::now() - before;
        std::thread::scope(|s| {
            for url in direct {
                s.spawn(move || remove_added(url));
            }
        });
        if turn > 0 {
            turns.push(ApplyTurn { all, slowest, cpu, singles });
        }
    }
    std::fs::remove_file(added_file).unwrap();
    (turns, crossed)
}

/// One turn of the applies: the fleet's and the slowest single one, and
/// the CPU of the fleet's and of all the single ones.
struct ApplyTurn {
    all: Duration,
    slowest: Duration,
    cpu: Cpu,
    singles: Cpu,
}

/// CPU time used so far, in seconds: by the whole machine (every core),
/// by this process (the links' threads), and by its children that ended
/// (the warren runs).
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    machine: f64,
    links: f64,
    warren: f64,
}

impl Cpu {
    fn now() -> Cpu {
        // /proc counts in USER_HZ, which Linux fixes at 100 for user space.
        let seconds = |ticks: &str| ticks.parse::<f64>().unwrap() / 100.0;
        let stat = std::fs::read_to_string("/proc/stat").unwrap();
        let all: Vec<&str> = stat.lines().next().unwrap().split_whitespace().skip(1).collect();
        // user, nice, system, then idle and iowait (not busy), irq, softirq, steal.
        let machine = [0, 1, 2, 5, 6, 7].iter().map(|&i| seconds(all[i])).sum();
        let own = std::fs::read_to_string("/proc/self/stat").unwrap();
        // After the command's name: state is the third field, utime the 14th.
        let fields: Vec<&str> = own.rsplit_once(')').unwrap().1.split_whitespace().collect();
        let field = |n: usize| seconds(fields[n - 3]);
        Cpu { machine, links: field(14) + field(15), warren: field(16) + field(17) }
    }
}

impl std::ops::Sub for Cpu {
    type Output = Cpu;
    fn sub(self, o: Cpu) -> Cpu {
        Cpu { machine: self.machine - o.machine, links: self.links - o.links, warren: self.warren - o.warren }
    }
}

impl std::ops::Add for Cpu {
    type Output = Cpu;
    fn add(self, o: Cpu) -> Cpu {
        Cpu { machine: self.machine + o.machine, links: self.links + o.links, warren: self.warren + o.warren }
    }
}

/// The twelve single plans, then the fleet's with `at_once` environments
/// at once, in turns (the first a warm-up): each turn's fleet plan and
/// slowest single plan.
fn plan_turns(fleet: &Fleet, at_once: &str) -> Vec<(Duration, Duration)> {
    let mut turns = Vec::new();
    for turn in 0..=RUNS {
        let slowest = (0..fleet.urls.len()).map(|i| fleet.timed(&["plan", "--env", &env(i)])).max().unwrap();
        let all = fleet.timed(&["plan", "--env", "all", "--parallelism", at_once]);
        if turn > 0 {
            turns.push((all, slowest));
        }
    }
    turns
}

/// The environment of broker `i`.
fn env(i: usize) -> String {
    format!("b{i:02}")
}

/// The generated vhost's shape at `queues` queues: a twentieth as many
/// exchanges (three at least, one of them the dead-letter exchange) and
/// twice as many bindings.
fn shape(queues: usize) -> (usize, usize, usize) {
    (queues, (queues / 20).max(3), queues * 2)
}

/// The generated vhost's definitions, as the vhost `vhost`.
fn definitions(vhost: &str, queues: usize) -> Json {
    let (q, e, b) = shape(queues);
    common::definitions_as(vhost, q, e, b)
}

/// The generated vhost's files, as the vhost `vhost`, in `dir`.
fn write_files(dir: &Path, vhost: &str, queues: usize) {
    let (q, e, b) = shape(queues);
    common::write_files_as(dir, vhost, q, e, b);
}

/// The files of the generated vhost, and a project with one environment
/// per broker, all in one stage.
fn write_project(dir: &Path, queues: usize, brokers: usize) {
    write_files(dir, VHOST, queues);
    let envs: Vec<String> = (0..brokers).map(env).collect();
    let mut project = String::from("[project]\nname = \"bench\"\n");
    for e in &envs {
        project += &format!("\n[environments.{e}]\nurl_env = \"BENCH_{}_URL\"\n", e.to_uppercase());
    }
    let stage: Vec<String> = envs.iter().map(|e| format!("{e:?}")).collect();
    project += &format!("\n[deploy]\nstages = [[{}]]\n", stage.join(", "));
    std::fs::write(dir.join("warren.toml"), project).unwrap();
}

/// The queues each apply adds.
fn added() -> String {
    let mut text = format!("vhosts = [{VHOST:?}]\n");
    for i in 0..ADDED {
        text += &format!("\n[queues.\"added.{i}\"]\ntype = \"classic\"\n");
    }
    text
}

/// Deletes the added queues straight from the broker.
fn remove_added(url: &str) {
    let (base, auth) = api(url);
    let a = agent();
    for i in 0..ADDED {
        let answer = a.delete(&format!("{base}/queues/{VHOST}/added.{i}")).header("authorization", &auth).call();
        assert!(answer.is_ok_and(|r| r.status().as_u16() < 300), "queue added.{i} was not there on {base}");
    }
}

/// The requests of one plan of a `queues`-queue vhost on the broker behind
/// `link`: the same generated shape, in a vhost and a project of its own.
fn round_trips_at(queues: usize, direct: &str, linked: &str, link: &Link) -> Crossed {
    const SMALL: &str = "bench-latency-small";
    load(direct, SMALL, &definitions(SMALL, queues));
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path(), SMALL, queues);
    let before = link.counts();
    let out = Command::new(warren_binary())
        .args(["plan", "-q", "--project", "bench-small"])
        .arg(dir.path())
        .env("WARREN_URL", linked)
        .env_remove("WARREN_AMQP_URL")
        .output()
        .unwrap();
    let crossed = link.counts() - before;
    assert!(matches!(out.status.code(), Some(0 | 2)), "{}", String::from_utf8_lossy(&out.stderr));
    delete_vhost(direct, SMALL);
    crossed
}

/// The project directory and the URLs of its environments.
struct Fleet<'a> {
    dir: &'a Path,
    urls: &'a [String],
}

impl Fleet<'_> {
    /// Runs warren with `args` on the project, which must succeed.
    fn run(&self, args: &[&str]) {
        let mut c = Command::new(warren_binary());
        c.arg(args[0]).arg(self.dir).arg("-q").args(&args[1..]);
        c.env_remove("WARREN_URL").env_remove("WARREN_AMQP_URL");
        for (i, u) in self.urls.iter().enumerate() {
            c.env(format!("BENCH_{}_URL", env(i).to_uppercase()), u);
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "warren {}:\n{}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn timed(&self, args: &[&str]) -> Duration {
        let t = Instant::now();
        self.run(args);
        t.elapsed()
    }
}

/// The benchmark's brokers, stopped when dropped (a failed run too).
struct Brokers {
    numbers: String,
    took: Duration,
}

impl Brokers {
    fn start(numbers: &[u32]) -> Brokers {
        let numbers: Vec<String> = numbers.iter().map(u32::to_string).collect();
        let mut brokers = Brokers { numbers: numbers.join(" "), took: Duration::ZERO };
        let t = Instant::now();
        brokers.fleet("start");
        brokers.took = t.elapsed();
        brokers
    }

    fn fleet(&self, what: &str) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/broker");
        let status = Command::new(script)
            .args(["fleet", what])
            .env("WARREN_TEST_FLEET_NUMBERS", &self.numbers)
            .status()
            .expect("scripts/broker runs");
        assert!(status.success(), "scripts/broker fleet {what} failed for nodes {}", self.numbers);
    }
}

impl Drop for Brokers {
    fn drop(&mut self) {
        if !self.numbers.is_empty() {
            self.fleet("stop");
            self.numbers.clear();
        }
    }
}
