//! One test's world on a test node, the fixture of every test that runs
//! warren against a broker: its vhosts and users (removed before it starts,
//! as an interrupted run may have left them, and when it ends, also when an
//! assertion fails), a directory for its files, whom warren runs as, and
//! the texts no output may show.
//!
//! Two kinds, by whom warren runs as. [`Case::admin`]: the node's
//! administrator, whose records, journal and lock are broker-wide, so the
//! test holds the node alone ([`super::alone`]). [`Case::policymaker`]: a
//! user of the case's own, a `policymaker` with every permission on its
//! vhost alone, whose records live in that vhost, so such tests share the
//! node. Test modules add the calls only they make in `impl Case` blocks of
//! their own.

use std::sync::Mutex;

use serde_json::{Value as Json, json};

use super::traffic::amqp_url_on;
use super::{Run, TestBroker, Turn, alone, flat, seg, share};

/// Vhosts that other tests, the examples or the benchmarks use: never a
/// case's, since a case deletes its vhosts.
const SHARED_VHOSTS: [&str; 4] = ["/", "orders", "payments", "bench"];

/// One test's vhosts, users, directory and broker; see the module's note.
pub(crate) struct Case {
    pub broker: TestBroker,
    /// The case's vhost, which `{V}` stands for in its files.
    pub vhost: String,
    /// Every vhost the case may make, `vhost` first.
    vhosts: Vec<String>,
    /// Every user the case may make, its own user included.
    users: Vec<String>,
    dir: tempfile::TempDir,
    /// Whom warren runs as: the administrator (`None`), or the case's own
    /// policymaker (user, password).
    user: Option<(String, String)>,
    /// More variables for warren from now on (a fault hook, another user).
    env: Mutex<Vec<(String, String)>>,
    /// Texts no output of warren may show: passwords, hashes.
    pub secrets: Vec<String>,
    _turn: Turn,
}

impl Case {
    /// A case on the test node (`WARREN_TEST_URL`) whose warren runs as
    /// the administrator, alone on the node.
    pub(crate) fn admin(vhost: &str) -> Case {
        let case = Case::with(vhost, TestBroker::from_env(), alone(), None);
        case.afresh();
        case
    }

    /// A case on the test node whose warren runs as the case's own
    /// policymaker, sharing the node.
    pub(crate) fn policymaker(vhost: &str) -> Case {
        Case::policymaker_on(vhost, TestBroker::from_env(), share())
    }

    /// A case on `broker` whose warren runs as the case's own policymaker,
    /// holding `turn`.
    pub(crate) fn policymaker_on(vhost: &str, broker: TestBroker, turn: Turn) -> Case {
        let user = (format!("{vhost}-user"), format!("{vhost}-pw-7Rq2"));
        let case = Case::with(vhost, broker, turn, Some(user));
        case.afresh();
        case
    }

    fn with(vhost: &str, broker: TestBroker, turn: Turn, user: Option<(String, String)>) -> Case {
        let mut case = Case {
            broker,
            vhost: vhost.to_string(),
            vhosts: Vec::new(),
            users: Vec::new(),
            dir: tempfile::tempdir().unwrap(),
            user: None,
            env: Mutex::default(),
            secrets: Vec::new(),
            _turn: turn,
        };
        case.add_vhosts(&[vhost]);
        if let Some((name, password)) = user {
            case.users.push(name.clone());
            case.secrets.push(password.clone());
            case.user = Some((name, password));
        }
        case
    }

    /// More vhosts the case may make, removed now and when it ends.
    pub(crate) fn with_vhosts(mut self, vhosts: &[&str]) -> Case {
        self.add_vhosts(vhosts);
        self.clean();
        self
    }

    /// Users the case may make, removed now and when it ends.
    pub(crate) fn with_users(mut self, users: &[&str]) -> Case {
        self.users.extend(users.iter().map(|u| u.to_string()));
        self.clean();
        self
    }

    fn add_vhosts(&mut self, vhosts: &[&str]) {
        for v in vhosts {
            assert!(!SHARED_VHOSTS.contains(v), "vhost {v} belongs to other tests");
            self.vhosts.push(v.to_string());
        }
    }

    /// Removes what an earlier run left, then makes what the case's own
    /// user needs: its vhost (a policymaker cannot make vhosts), the user,
    /// and its permissions there.
    pub(crate) fn afresh(&self) {
        self.clean();
        let Some((user, password)) = &self.user else { return };
        let v = seg(&self.vhost);
        self.broker.put(&format!("vhosts/{v}"), json!({}));
        self.broker.put(&format!("users/{}", seg(user)), json!({"password": password, "tags": "policymaker"}));
        let all = json!({"configure": ".*", "write": ".*", "read": ".*"});
        self.broker.put(&format!("permissions/{v}/{}", seg(user)), all);
    }

    /// Deletes the case's vhosts and users and, when warren runs as the
    /// administrator, the migrations of its vhosts that an earlier, failed
    /// run left in the broker-wide journal.
    pub(crate) fn clean(&self) {
        for v in &self.vhosts {
            self.broker.delete(&format!("vhosts/{}", seg(v)));
        }
        for u in &self.users {
            self.broker.delete(&format!("users/{}", seg(u)));
        }
        if self.user.is_some() {
            return;
        }
        let Some(mut journal) = self.broker.try_get("global-parameters/warren.journal") else { return };
        let Some(migrations) = journal["value"]["migrations"].as_object_mut() else { return };
        let before = migrations.len();
        migrations.retain(|_, m| !self.vhosts.iter().any(|v| m["vhost"] == v.as_str()));
        if migrations.len() != before {
            self.broker.put("global-parameters/warren.journal", json!({"value": journal["value"]}));
        }
    }

    /// Whether warren runs as the administrator.
    pub(crate) fn is_admin(&self) -> bool {
        self.user.is_none()
    }

    /// The user warren runs as.
    pub(crate) fn user_name(&self) -> String {
        match &self.user {
            Some((user, _)) => user.clone(),
            None => url::Url::parse(&self.broker.url).unwrap().username().to_string(),
        }
    }

    /// Works through another node of the same cluster from now on.
    pub(crate) fn through(&mut self, broker: TestBroker) {
        self.broker = broker;
    }

    /// The node's AMQP URL as the administrator, without vhost or query.
    pub(crate) fn amqp(&self) -> String {
        let amqp = self.broker.amqp().expect("the node's AMQP URL is set (WARREN_TEST_*AMQP_URL)");
        let mut url = url::Url::parse(amqp).expect("an AMQP URL");
        url.set_path("");
        url.set_query(None);
        url.to_string().trim_end_matches('/').to_string()
    }

    /// The AMQP URL of the case's vhost as the administrator, for traffic.
    pub(crate) fn traffic_url(&self) -> String {
        amqp_url_on(&self.amqp(), &self.vhost)
    }

    /// The case's directory, where its files are.
    pub(crate) fn path(&self) -> String {
        self.dir.path().display().to_string()
    }

    /// `relative` inside the case's directory, as warren's path argument.
    pub(crate) fn path_of(&self, relative: &str) -> String {
        self.dir.path().join(relative).display().to_string()
    }

    /// Writes (or replaces) the file `relative` in the case's directory,
    /// making its folders; `{V}` stands for the vhost.
    pub(crate) fn file(&self, relative: &str, text: &str) {
        let path = self.dir.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text.replace("{V}", &self.vhost)).unwrap();
    }

    /// Writes (or replaces) the topology file, `topology.toml`.
    pub(crate) fn topology(&self, toml: &str) {
        self.file("topology.toml", toml);
    }

    /// Sets a variable for warren's following runs, or with `None` stops
    /// setting it.
    pub(crate) fn set_env(&self, name: &str, value: Option<&str>) {
        let mut env = self.env.lock().unwrap();
        env.retain(|(k, _)| k != name);
        if let Some(v) = value {
            env.push((name.to_string(), v.to_string()));
        }
    }

    /// `warren ARGS` as the case's user, with the variables of
    /// [`Case::set_env`] and then `env`; checks that no secret is printed.
    /// Its stderr is [`flat`]: diagnostics wrap wherever a long name falls.
    pub(crate) fn warren(&self, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
        let run = self.warren_as_printed(args, env);
        Run { stderr: flat(&run.stderr), ..run }
    }

    /// [`Case::warren`] with stderr as warren printed it, line by line.
    pub(crate) fn warren_as_printed(&self, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
        let mut all = self.login();
        all.extend(self.env.lock().unwrap().iter().map(|(k, v)| (k.clone(), Some(v.clone()))));
        all.extend(env.iter().map(|(k, v)| (k.to_string(), v.map(str::to_string))));
        let all: Vec<(&str, Option<&str>)> = all.iter().map(|(k, v)| (k.as_str(), v.as_deref())).collect();
        let run = self.broker.warren(args, &all);
        for s in &self.secrets {
            assert!(!run.stdout.contains(s.as_str()), "a secret was printed on stdout:\n{}", run.stdout);
            assert!(!run.stderr.contains(s.as_str()), "a secret was printed on stderr:\n{}", run.stderr);
        }
        run
    }

    /// The variables that make warren log in as the case's own user. Only
    /// administrators see the broker's listeners, so the others are given
    /// the AMQP URL of their vhost (which also holds their lock).
    fn login(&self) -> Vec<(String, Option<String>)> {
        let Some((user, password)) = &self.user else { return Vec::new() };
        let amqp = self.amqp().replacen("guest:guest@", &format!("{}:{}@", seg(user), seg(password)), 1);
        vec![
            ("WARREN_URL".into(), Some(self.broker.url_as(user, password))),
            ("WARREN_AMQP_URL".into(), Some(amqp_url_on(&amqp, &self.vhost))),
        ]
    }

    /// `warren apply DIR --auto-approve ARGS` of the case's directory.
    pub(crate) fn apply(&self, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
        let path = self.path();
        let mut all = vec!["apply", path.as_str(), "--auto-approve"];
        all.extend_from_slice(args);
        self.warren(&all, env)
    }

    /// Applies and expects success.
    pub(crate) fn apply_ok(&self, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
        let run = self.apply(args, env);
        assert_eq!(run.code, 0, "apply failed:\n{}\n{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("Apply complete!"), "{}", run.stdout);
        run
    }

    /// `warren plan DIR ARGS` of the case's directory.
    pub(crate) fn plan(&self, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
        let path = self.path();
        let mut all = vec!["plan", path.as_str()];
        all.extend_from_slice(args);
        self.warren(&all, env)
    }

    /// `GET /api/PATH`, which must succeed; `{V}` stands for the vhost.
    pub(crate) fn get(&self, path: &str) -> Json {
        self.broker.get(&path.replace("{V}", &seg(&self.vhost)))
    }

    /// Whether `GET /api/PATH` finds the object; `{V}` stands for the vhost.
    pub(crate) fn exists(&self, path: &str) -> bool {
        self.broker.exists(&path.replace("{V}", &seg(&self.vhost)))
    }

    /// Publishes `n` persistent messages to `queue` by the default
    /// exchange, numbered from 1,000,000 so that test traffic's numbers
    /// never meet them.
    pub(crate) fn publish(&self, queue: &str, n: usize) {
        for i in 0..n {
            let routed = self.broker.post(
                &format!("exchanges/{}/amq.default/publish", seg(&self.vhost)),
                json!({"properties": {"delivery_mode": 2}, "routing_key": queue,
                       "payload": format!("{}", 1_000_000 + i), "payload_encoding": "string"}),
            );
            assert_eq!(routed["routed"], true, "publish to {queue}");
        }
    }

    /// Messages (ready and unacknowledged) in `queue` from the queue totals
    /// (fresh for classic queues; quorum queues report theirs once per Ra
    /// tick, 5 s); `None` when the queue does not exist.
    pub(crate) fn messages(&self, queue: &str) -> Option<u64> {
        let list = self.get("queues/{V}?disable_stats=true&enable_queue_totals=true&columns=name,messages");
        let q = list.as_array().unwrap().iter().find(|q| q["name"] == queue)?;
        Some(q["messages"].as_u64().unwrap_or(0))
    }
}

impl Drop for Case {
    fn drop(&mut self) {
        self.clean();
    }
}
