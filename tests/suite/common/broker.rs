//! The private test broker's client: its management API over HTTP.

use super::{Run, seg, warren_env};

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
