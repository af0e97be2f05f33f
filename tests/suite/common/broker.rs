//! The private test broker's client: its management API over HTTP (`ureq`),
//! as a user would use it with curl, and its node's `rabbitmqctl`, which
//! imports definitions as RabbitMQ itself does.
//!
//! [`TestBroker::from_env`] reads what `scripts/broker env` prints:
//! `WARREN_TEST_URL`, `WARREN_TEST_AMQP_URL`, `WARREN_TEST_NODE` (default 1)
//! and `WARREN_TEST_RABBITMQCTL` (default `rabbitmqctl`; a RabbitMQ 4 test
//! node's runs the one in its Debian 13 root). Without the URL a test fails.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A response body as text. ureq stops at 10 MB by default; a broker that
/// holds a benchmark's 10,000 queues answers `GET /api/definitions` with more.
fn body_text(response: &mut ureq::http::Response<ureq::Body>) -> Result<String, ureq::Error> {
    response.body_mut().with_config().limit(1 << 30).read_to_string()
}

/// The private test broker that `scripts/test` starts (`WARREN_TEST_URL`):
/// its management API over plain HTTP, for setting up and checking what
/// warren did, and its node's rabbitmqctl.
pub(crate) struct TestBroker {
    /// `http://user:password@host:port`, as warren's `--url` takes it.
    pub url: String,
    api: String,
    auth: String,
    agent: ureq::Agent,
    /// `WARREN_AMQP_URL` for warren (the apply lock): the test node's AMQP
    /// port with the test admin's credentials, from `WARREN_TEST_AMQP_URL`.
    amqp: Option<String>,
    /// The node's name for `rabbitmqctl -n` (`warren-testN@localhost`),
    /// when known: [`TestBroker::at`] has only URLs.
    node: Option<String>,
    /// The rabbitmqctl that talks to the node.
    rabbitmqctl: String,
}

/// One HTTP answer: status and body (JSON when the body is JSON).
pub(crate) struct Answer {
    pub status: u16,
    pub body: String,
}

impl Answer {
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

impl TestBroker {
    /// Reads the `WARREN_TEST_` variables; fails (does not skip) when
    /// `WARREN_TEST_URL` is missing.
    pub(crate) fn from_env() -> TestBroker {
        TestBroker::from_vars("WARREN_TEST_")
    }

    /// Reads `{prefix}URL`, `{prefix}AMQP_URL`, `{prefix}NODE` (the node's
    /// number, default 1) and `{prefix}RABBITMQCTL` (default `rabbitmqctl`),
    /// as `scripts/broker env` prints them, with `WARREN_TEST_ENV_PREFIX`
    /// for another node (`WARREN_TEST_RESTART_`).
    pub(crate) fn from_vars(prefix: &str) -> TestBroker {
        let var = |name: &str| std::env::var(format!("{prefix}{name}")).ok();
        let url = var("URL").unwrap_or_else(|| {
            panic!("{prefix}URL is not set: run the tests with scripts/test, which starts the private broker nodes")
        });
        let mut broker = TestBroker::at(&url, var("AMQP_URL"));
        broker.node = Some(format!("warren-test{}@localhost", var("NODE").as_deref().unwrap_or("1")));
        broker.rabbitmqctl = var("RABBITMQCTL").unwrap_or_else(|| "rabbitmqctl".into());
        broker
    }

    /// The node whose management API is `url` (`http://user:password@host:port`)
    /// and AMQP listener `amqp`; its name is unknown, so [`TestBroker::ctl`]
    /// fails.
    pub(crate) fn at(url: &str, amqp: Option<String>) -> TestBroker {
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
            node: None,
            rabbitmqctl: "rabbitmqctl".into(),
        }
    }

    /// Its AMQP URL (any vhost), if it has one.
    pub(crate) fn amqp(&self) -> Option<&str> {
        self.amqp.as_deref()
    }

    /// `host:port` of its management API.
    fn host(&self) -> &str {
        self.api.trim_start_matches("http://").trim_end_matches("/api")
    }

    /// The broker's URL with other credentials.
    pub(crate) fn url_as(&self, user: &str, password: &str) -> String {
        format!("http://{}:{}@{}", seg(user), seg(password), self.host())
    }

    /// The broker's URL as warren shows it: without credentials.
    pub(crate) fn shown_url(&self) -> String {
        format!("http://{}", self.host())
    }

    /// `METHOD /api/PATH` with an optional JSON body, as the test's admin.
    pub(crate) fn request(&self, method: &str, path: &str, body: Option<&serde_json::Value>) -> Answer {
        self.request_as(&self.auth, method, path, body)
    }

    /// The same request with the credentials of `user`.
    pub(crate) fn request_with(&self, user: &str, password: &str, method: &str, path: &str) -> Answer {
        use base64::Engine;
        let auth = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")));
        self.request_as(&auth, method, path, None)
    }

    fn request_as(&self, auth: &str, method: &str, path: &str, body: Option<&serde_json::Value>) -> Answer {
        self.try_request_as(auth, method, path, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// The request, or why no answer came (the node down, say).
    fn try_request_as(
        &self,
        auth: &str,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<Answer, ureq::Error> {
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
        let mut response = result?;
        let status = response.status().as_u16();
        let body = body_text(&mut response).unwrap_or_default();
        Ok(Answer { status, body })
    }

    /// GET that must succeed; the parsed JSON.
    pub(crate) fn get(&self, path: &str) -> serde_json::Value {
        let a = self.request("GET", path, None);
        assert_eq!(a.status, 200, "GET {path}: {}", a.body);
        a.json()
    }

    /// The whole broker's definitions. RabbitMQ 3.10's export answers 500
    /// while any queue of the node (another test's) has no process yet
    /// (`rabbit_amqqueue_process:format/1` calls node(none)); warren asks
    /// again after a 5xx, and so does this, for up to 10 s.
    pub(crate) fn definitions(&self) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let a = self.request("GET", "definitions", None);
            if a.status == 200 || a.status < 500 || Instant::now() > deadline {
                assert_eq!(a.status, 200, "GET definitions: {}", a.body);
                return a.json();
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// GET that may fail: `None` on any error, the node being down included.
    pub(crate) fn try_get(&self, path: &str) -> Option<serde_json::Value> {
        let mut response =
            self.agent.get(format!("{}/{path}", self.api)).header("Authorization", &self.auth).call().ok()?;
        if response.status().as_u16() != 200 {
            return None;
        }
        serde_json::from_str(&body_text(&mut response).ok()?).ok()
    }

    /// Whether `GET /api/PATH` finds the object.
    pub(crate) fn exists(&self, path: &str) -> bool {
        let a = self.request("GET", path, None);
        match a.status {
            200 => true,
            404 => false,
            s => panic!("GET {path}: HTTP {s} {}", a.body),
        }
    }

    /// PUT or POST that must succeed.
    pub(crate) fn put(&self, path: &str, body: serde_json::Value) {
        let a = self.request("PUT", path, Some(&body));
        assert!(matches!(a.status, 200..=299), "PUT {path}: HTTP {} {}", a.status, a.body);
    }

    pub(crate) fn post(&self, path: &str, body: serde_json::Value) -> serde_json::Value {
        let a = self.request("POST", path, Some(&body));
        assert!(matches!(a.status, 200..=299), "POST {path}: HTTP {} {}", a.status, a.body);
        if a.body.is_empty() { serde_json::Value::Null } else { a.json() }
    }

    /// Deletes if present; a failure is printed, not raised, so that
    /// cleaning up never hides the assertion that failed.
    pub(crate) fn delete(&self, path: &str) {
        match self.try_request_as(&self.auth, "DELETE", path, None) {
            Ok(a) if matches!(a.status, 200..=299 | 404) => {}
            Ok(a) => eprintln!("cleanup: DELETE {path}: HTTP {} {}", a.status, a.body),
            Err(e) => eprintln!("cleanup: DELETE {path}: {e}"),
        }
    }

    /// The broker's version, e.g. `(3, 10)`.
    pub(crate) fn version(&self) -> (u32, u32) {
        let v = self.get("overview")["rabbitmq_version"].as_str().unwrap_or_default().to_string();
        let mut parts = v.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
    }

    /// `rabbitmqctl -n NODE ARGS`.
    pub(crate) fn ctl(&self, args: &[&str]) -> std::process::Output {
        let node = self.node.as_deref().expect("rabbitmqctl needs the node's name: make the TestBroker with from_vars");
        Command::new(&self.rabbitmqctl).arg("-n").arg(node).args(args).output().expect("rabbitmqctl runs")
    }

    /// `rabbitmqctl import_definitions FILE`, after making the file readable
    /// to the `rabbitmq` user that Debian's rabbitmqctl reads it as (its
    /// folder must be too: see [`readable_dir`]). The error is the CLI's
    /// output.
    pub(crate) fn import_file(&self, file: &Path) -> Result<(), String> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).map_err(|e| e.to_string())?;
        }
        let path = file.canonicalize().map_err(|e| e.to_string())?;
        let out = self.ctl(&["import_definitions", path.to_str().unwrap()]);
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
        }
    }

    /// Writes `doc` into `dir` and imports it.
    pub(crate) fn import(&self, dir: &Path, doc: &serde_json::Value) -> Result<(), String> {
        let file = dir.join("definitions.json");
        std::fs::write(&file, serde_json::to_string_pretty(doc).unwrap()).map_err(|e| e.to_string())?;
        self.import_file(&file)
    }
}

/// A temporary folder the `rabbitmq` user can read files in, for
/// [`TestBroker::import_file`].
pub(crate) fn readable_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

/// Percent-encodes a path segment (`/` is `%2F`).
pub(crate) fn seg(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
