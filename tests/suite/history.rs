//! `warren status` and `warren history` as a user reads them: the runs of
//! the journal, how they are numbered, and the brokers of a project's
//! environments.

use crate::common::{Run, TestBroker, Turn, alone, flat, seg};

/// One test's vhost and topology directory, on the test node alone: warren
/// runs as the administrator, whose journal is broker-wide.
struct Case {
    broker: TestBroker,
    vhost: String,
    dir: tempfile::TempDir,
    _turn: Turn,
}

impl Case {
    fn new(vhost: &str) -> Case {
        let turn = alone();
        let case = Case {
            broker: TestBroker::from_env(),
            vhost: vhost.into(),
            dir: tempfile::tempdir().unwrap(),
            _turn: turn,
        };
        case.clean();
        case
    }

    fn clean(&self) {
        self.broker.delete(&format!("vhosts/{}", seg(&self.vhost)));
    }

    /// Writes `name` in the directory `sub` (made if need be); `{V}` stands
    /// for the vhost. Returns the directory.
    fn file(&self, sub: &str, name: &str, text: &str) -> String {
        let dir = self.dir.path().join(sub);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), text.replace("{V}", &self.vhost)).unwrap();
        dir.display().to_string()
    }

    fn warren(&self, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
        let run = self.broker.warren(args, env);
        Run { stderr: flat(&run.stderr), ..run }
    }

    fn ok(&self, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
        let run = self.warren(args, env);
        assert_eq!(run.code, 0, "warren {}:\n{}\n{}", args.join(" "), run.stdout, run.stderr);
        run
    }
}

impl Drop for Case {
    fn drop(&mut self) {
        self.clean();
    }
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn history_and_status_read_the_brokers_of_the_environments_env_names() {
    let case = Case::new("t-history-env");
    let url = case.broker.url.clone();
    let dir = case.file(
        "project",
        "warren.toml",
        "[project]\nname = \"t-history-env\"\n\n[environments.one]\nurl_env = \"T_HISTORY_ONE_URL\"\n",
    );
    case.file("project", "topology.toml", "vhosts = [\"{V}\"]\n\n[queues.q]\ntype = \"classic\"\n");
    // Only the environment's variable names the broker.
    let env = [("T_HISTORY_ONE_URL", Some(url.as_str())), ("WARREN_URL", None)];
    case.ok(&["apply", &dir, "--env", "one", "--auto-approve"], &env);

    let history = case.ok(&["history", &dir, "--env", "one", "--vhost", &case.vhost], &env);
    assert!(history.stdout.starts_with("Environment one ("), "{}", history.stdout);
    assert!(history.stdout.contains(&format!("vhost \"{}\":", case.vhost)), "{}", history.stdout);
    assert!(history.stdout.contains(": complete by "), "{}", history.stdout);
    assert!(history.stdout.contains("2 to add, 0 to change"), "{}", history.stdout);
    // From inside the project, as plan is run.
    let run = crate::common::warren_in(
        std::path::Path::new(&dir),
        &["history", "--env", "one", "--vhost", &case.vhost],
        &[("T_HISTORY_ONE_URL", Some(url.as_str())), ("WARREN_URL", None)],
    );
    assert_eq!(run.code, 1, "no `topology` directory here: {}\n{}", run.stdout, run.stderr);
    let run = crate::common::warren_in(
        std::path::Path::new(&dir),
        &["history", ".", "--env", "one", "--vhost", &case.vhost],
        &[("T_HISTORY_ONE_URL", Some(url.as_str())), ("WARREN_URL", None)],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.stdout, history.stdout);

    let status = case.ok(&["status", &dir, "--env", "one"], &env);
    assert!(status.stdout.starts_with("Environment one ("), "{}", status.stdout);
    assert!(status.stdout.contains("No apply is running."), "{}", status.stdout);

    // An environment whose variable is unset is said, and is an error.
    let run = case.warren(&["history", &dir, "--env", "one"], &[("T_HISTORY_ONE_URL", None)]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("$T_HISTORY_ONE_URL is not set"), "{}", run.stderr);
}
