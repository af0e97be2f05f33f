//! Helpers shared by the CLI tests: run the real binary as a user would.

#![allow(dead_code)]

// `gen` is a reserved word in edition 2024, hence the raw identifier.
pub mod r#gen;
pub mod import;
pub mod strategy;
pub mod traffic;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use assert_cmd::Command;

/// The tests of this binary run at once, on the same test node. Each one
/// that touches the node holds a [`Turn`] while it does: those whose warren
/// runs as an administrator (whose records, inventory, journal and lock,
/// are broker-wide: an apply claims every vhost its files name, so two at
/// once would each see the other's as removed from its files), and those
/// that compare the whole broker, run [`alone`]; the others, each in vhosts
/// and with users of its own, [`share`] it.
static NODE: RwLock<()> = RwLock::new(());
/// The three-node cluster, whose members some tests stop: one at a time.
static CLUSTER: Mutex<()> = Mutex::new(());

/// A test's hold on the test node (or the cluster), released when dropped.
/// A test takes one, once: a second would wait for itself.
pub enum Turn {
    Alone(RwLockWriteGuard<'static, ()>),
    Shared(RwLockReadGuard<'static, ()>),
    Cluster(MutexGuard<'static, ()>),
}

/// The test node to this test alone, once the tests holding it are done.
pub fn alone() -> Turn {
    Turn::Alone(NODE.write().unwrap_or_else(PoisonError::into_inner))
}

/// The test node, shared with the other tests that share it.
pub fn share() -> Turn {
    Turn::Shared(NODE.read().unwrap_or_else(PoisonError::into_inner))
}

/// The cluster, to this test alone.
pub fn cluster() -> Turn {
    Turn::Cluster(CLUSTER.lock().unwrap_or_else(PoisonError::into_inner))
}

/// A migration case of `tests/migrations`: the topology before (`v1`) and
/// after (`v2`); `{V}` stands for the vhost.
pub struct Versions {
    pub v1: String,
    pub v2: String,
}

/// The migration case in `tests/migrations/NAME`.
pub fn migration(name: &str) -> Versions {
    let read = |v: &str| {
        let path = root().join("tests/migrations").join(name).join(format!("{v}.toml"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    Versions { v1: read("v1"), v2: read("v2") }
}

/// The repository root, so tests name paths as a user in it would.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What one run of `warren` printed and how it ended.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `warren ARGS` from the repository root, without colour.
pub fn warren(args: &[&str]) -> Run {
    warren_env(args, &[])
}

/// Runs `warren ARGS` like [`warren`], with these variables set (`Some`) or
/// removed (`None`) from its environment.
pub fn warren_env(args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
    let mut cmd = Command::cargo_bin("warren").expect("the warren binary is built");
    cmd.current_dir(root()).env_remove("NO_COLOR");
    for (name, value) in env {
        match value {
            Some(v) => cmd.env(name, v),
            None => cmd.env_remove(name),
        };
    }
    let out = cmd.args(["--color", "never"]).args(args).output().expect("warren runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The entries of a corpus directory (files and sub-directories), sorted,
/// as paths relative to the repository root.
pub fn corpus(dir: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root().join(dir))
        .expect("corpus directory exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "toml"))
        .map(|p| format!("{dir}/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    out.sort();
    out
}

/// The codes a corpus entry's first line promises: `# expect: a, b`.
pub fn expected_codes(entry: &str) -> Vec<String> {
    let path = root().join(entry);
    let file = if path.is_dir() { path.join("a.toml") } else { path };
    let text = std::fs::read_to_string(&file).expect("corpus file is readable");
    let first = text.lines().next().unwrap_or_default();
    let list = first.strip_prefix("# expect:").unwrap_or_else(|| panic!("{} lacks `# expect:`", file.display()));
    let mut codes: Vec<String> = list.split(',').map(|c| c.trim().to_string()).filter(|c| !c.is_empty()).collect();
    codes.sort();
    codes
}

/// The diagnostic codes in rendered output, sorted.
pub fn codes_in(output: &str) -> Vec<String> {
    let mut codes: Vec<String> = output
        .split("warren::")
        .skip(1)
        .map(|rest| rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '-').collect())
        .collect();
    codes.sort();
    codes
}

pub fn stem(entry: &str) -> String {
    Path::new(entry).file_stem().unwrap().to_string_lossy().into_owned()
}

/// The repository's own definitions export with the quirks of real ones
/// (server-named queues, bindings from the broker's own exchanges, vhost
/// limits, several vhosts and users).
pub const QUIRKS: &str = "tests/definitions/3.x-multivhost-quirks.json";

/// An optional extra corpus of real-world definitions files, sorted: every
/// `*.json` in the folder `WARREN_REALWORLD_DIR` names, when the user sets
/// it. Empty, and said so on
/// stderr, when the variable is unset: a clone of the repository has no such
/// folder, and the repository's own fixtures cover the quirks tests rely on.
pub fn realworld() -> Vec<PathBuf> {
    let Some(dir) = std::env::var_os("WARREN_REALWORLD_DIR") else {
        eprintln!("WARREN_REALWORLD_DIR is not set: the extra real-world corpus is absent and not run");
        return Vec::new();
    };
    let dir = root().join(dir);
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{} is readable: {e}", dir.display()))
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    out.sort();
    out
}

/// A response body as text. ureq stops at 10 MB by default; a broker that
/// holds a benchmark's 10,000 queues answers `GET /api/definitions` with more.
pub fn body_text(response: &mut ureq::http::Response<ureq::Body>) -> Result<String, ureq::Error> {
    response.body_mut().with_config().limit(1 << 30).read_to_string()
}

/// The private test broker that `scripts/test` starts (`WARREN_TEST_URL`):
/// its management API over plain HTTP, for setting up and checking what
/// warren did, as a user would with curl.
pub struct TestBroker {
    /// `http://user:password@host:port`, as warren's `--url` takes it.
    pub url: String,
    api: String,
    auth: String,
    agent: ureq::Agent,
    /// `WARREN_AMQP_URL` for warren (the apply lock): the test node's AMQP
    /// port with the test admin's credentials, from `WARREN_TEST_AMQP_URL`.
    amqp: Option<String>,
}

/// One HTTP answer: status and body (JSON when the body is JSON).
pub struct Answer {
    pub status: u16,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

impl TestBroker {
    /// Reads `WARREN_TEST_URL`; fails (does not skip) when it is missing.
    pub fn from_env() -> TestBroker {
        TestBroker::from_vars("WARREN_TEST_")
    }

    /// Reads `{prefix}URL` and `{prefix}AMQP_URL`, as `scripts/test` sets
    /// them for another node (`WARREN_TEST_RESTART_`, `WARREN_TEST_CLUSTER_`).
    pub fn from_vars(prefix: &str) -> TestBroker {
        let url = std::env::var(format!("{prefix}URL")).unwrap_or_else(|_| {
            panic!("{prefix}URL is not set: run the tests with scripts/test, which starts the private broker nodes")
        });
        TestBroker::at(&url, std::env::var(format!("{prefix}AMQP_URL")).ok())
    }

    /// The node whose management API is `url` (`http://user:password@host:port`)
    /// and AMQP listener `amqp`.
    pub fn at(url: &str, amqp: Option<String>) -> TestBroker {
        let rest = url.strip_prefix("http://").expect("a broker URL looks like http://user:password@host:port");
        let (userinfo, host) = rest.split_once('@').expect("a broker URL has user:password@");
        use base64::Engine;
        let agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        TestBroker {
            url: url.trim_end_matches('/').to_string(),
            api: format!("http://{}/api", host.trim_end_matches('/')),
            auth: format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(userinfo)),
            agent,
            amqp,
        }
    }

    /// Its AMQP URL (any vhost), if it has one.
    pub fn amqp(&self) -> Option<&str> {
        self.amqp.as_deref()
    }

    /// The broker's URL with other credentials.
    pub fn url_as(&self, user: &str, password: &str) -> String {
        let host = self.api.trim_start_matches("http://").trim_end_matches("/api");
        format!("http://{}:{}@{host}", seg(user), seg(password))
    }

    /// `METHOD /api/PATH` with an optional JSON body, as the test's admin.
    pub fn request(&self, method: &str, path: &str, body: Option<&serde_json::Value>) -> Answer {
        self.request_as(&self.auth, method, path, body)
    }

    /// The same request with the credentials of `user`.
    pub fn request_with(&self, user: &str, password: &str, method: &str, path: &str) -> Answer {
        use base64::Engine;
        let auth = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")));
        self.request_as(&auth, method, path, None)
    }

    fn request_as(&self, auth: &str, method: &str, path: &str, body: Option<&serde_json::Value>) -> Answer {
        let url = format!("{}/{path}", self.api);
        let result = match (method, body) {
            ("GET", _) => self.agent.get(&url).header("Authorization", auth).call(),
            ("DELETE", _) => self.agent.delete(&url).header("Authorization", auth).call(),
            ("PUT", b) => self
                .agent
                .put(&url)
                .header("Authorization", auth)
                .header("content-type", "application/json")
                .send(b.map(|b| b.to_string()).unwrap_or_else(|| "{}".into())),
            ("POST", b) => self
                .agent
                .post(&url)
                .header("Authorization", auth)
                .header("content-type", "application/json")
                .send(b.map(|b| b.to_string()).unwrap_or_else(|| "{}".into())),
            (m, _) => panic!("unsupported method {m}"),
        };
        let mut response = result.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = response.status().as_u16();
        let body = body_text(&mut response).unwrap_or_default();
        Answer { status, body }
    }

    /// GET that must succeed; the parsed JSON.
    pub fn get(&self, path: &str) -> serde_json::Value {
        let a = self.request("GET", path, None);
        assert_eq!(a.status, 200, "GET {path}: {}", a.body);
        a.json()
    }

    /// GET that may fail: `None` on any error, the node being down included.
    pub fn try_get(&self, path: &str) -> Option<serde_json::Value> {
        let mut response =
            self.agent.get(format!("{}/{path}", self.api)).header("Authorization", &self.auth).call().ok()?;
        if response.status().as_u16() != 200 {
            return None;
        }
        serde_json::from_str(&body_text(&mut response).ok()?).ok()
    }

    /// Whether `GET /api/PATH` finds the object.
    pub fn exists(&self, path: &str) -> bool {
        match self.request("GET", path, None).status {
            200 => true,
            404 => false,
            s => panic!("GET {path}: HTTP {s}"),
        }
    }

    /// PUT or POST that must succeed.
    pub fn put(&self, path: &str, body: serde_json::Value) {
        let a = self.request("PUT", path, Some(&body));
        assert!(matches!(a.status, 200..=299), "PUT {path}: HTTP {} {}", a.status, a.body);
    }

    pub fn post(&self, path: &str, body: serde_json::Value) -> serde_json::Value {
        let a = self.request("POST", path, Some(&body));
        assert!(matches!(a.status, 200..=299), "POST {path}: HTTP {} {}", a.status, a.body);
        if a.body.is_empty() { serde_json::Value::Null } else { a.json() }
    }

    /// Deletes if present; a failure is printed, not raised, so that
    /// cleaning up never hides the assertion that failed.
    pub fn delete(&self, path: &str) {
        let a = self.request("DELETE", path, None);
        if !matches!(a.status, 200..=299 | 404) {
            eprintln!("cleanup: DELETE {path}: HTTP {} {}", a.status, a.body);
        }
    }

    /// The broker's version, e.g. `(3, 10)`.
    pub fn version(&self) -> (u32, u32) {
        let v = self.get("overview")["rabbitmq_version"].as_str().unwrap_or_default().to_string();
        let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
    }

    /// Runs `warren ARGS` against this broker (`WARREN_URL`), with these
    /// variables set or removed as well.
    pub fn warren(&self, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
        let mut all: Vec<(&str, Option<&str>)> = vec![
            ("WARREN_URL", Some(self.url.as_str())),
            ("WARREN_CA_CERT", None),
            ("WARREN_CLIENT_CERT", None),
            ("WARREN_CLIENT_KEY", None),
            ("WARREN_AMQP_URL", self.amqp.as_deref()),
        ];
        all.extend_from_slice(env);
        warren_env(args, &all)
    }
}

/// Diagnostics as one line of words: miette wraps long messages at a fixed
/// width and draws a margin (`│`) on continuation lines.
#[allow(dead_code)] // not every test file checks diagnostics
pub fn flat(text: &str) -> String {
    text.lines()
        .map(|l| l.trim().trim_start_matches('│').trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Percent-encodes a path segment (`/` is `%2F`).
pub fn seg(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `text` without whitespace and the `│` of wrapped diagnostics: compare
/// `squash(stderr).contains(&squash(expected))`, since diagnostics wrap at
/// 100 columns wherever a long name happens to fall.
pub fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace() && *c != '│').collect()
}
