//! `warren status` and `warren history` as a user reads them: the runs of
//! the journal, how they are numbered, and the brokers of a project's
//! environments.

use crate::common::{Case, Run};

/// The tests' [`Case`]s run warren as the administrator, whose journal is
/// broker-wide, alone on the test node.
impl Case {
    /// `warren ARGS`, which must succeed.
    fn ok(&self, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
        let run = self.warren(args, env);
        assert_eq!(run.code, 0, "warren {}:\n{}\n{}", args.join(" "), run.stdout, run.stderr);
        run
    }
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn history_and_status_read_the_brokers_of_the_environments_env_names() {
    let case = Case::admin("t-history-env");
    let url = case.broker.url.clone();
    case.file(
        "project/warren.toml",
        "[project]\nname = \"t-history-env\"\n\n[environments.one]\nurl_env = \"T_HISTORY_ONE_URL\"\n",
    );
    let dir = case.path_of("project");
    case.file("project/topology.toml", "vhosts = [\"{V}\"]\n\n[queues.q]\ntype = \"classic\"\n");
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

/// The run numbers `history` shows, in the order it shows them.
fn run_numbers(history: &str) -> Vec<u64> {
    history.lines().filter_map(|l| l.trim_start().strip_prefix("run ")?.split(':').next()?.parse().ok()).collect()
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn history_numbers_the_runs_it_records_one_after_another_and_an_adopt_is_one() {
    let case = Case::admin("t-history-numbers");
    let project = |name: &str, queues: &[&str]| {
        case.file(&format!("{name}/warren.toml"), &format!("[project]\nname = \"{name}\"\n"));
        let mut toml = String::from("vhosts = [\"{V}\"]\n");
        for q in queues {
            toml += &format!("\n[queues.\"{q}\"]\ntype = \"classic\"\n");
        }
        case.file(&format!("{name}/topology.toml"), &toml);
        case.path_of(name)
    };
    // The broker-wide journal keeps the runs of earlier tests, of this one too.
    let before = run_numbers(&case.ok(&["history"], &[]).stdout).into_iter().max().unwrap_or(0);
    let a = project("t-history-a", &["a.one"]);
    case.ok(&["apply", &a, "--auto-approve"], &[]);
    // Seen: numbers skipped (2, 3, 4, 5, 9, 12). Applies that find nothing
    // to do leave no run in the history, and take no number.
    for _ in 0..3 {
        let run = case.ok(&["apply", &a, "--auto-approve"], &[]);
        assert!(run.stdout.contains("No changes."), "{}", run.stdout);
    }
    let a = project("t-history-a", &["a.one", "a.two"]);
    case.ok(&["apply", &a, "--auto-approve"], &[]);
    // Seen: an adopt left no entry in the vhost's history.
    let b = project("t-history-b", &["a.one"]);
    let run = case.ok(&["adopt", &b, "--from", "t-history-a", "--auto-approve"], &[]);
    assert!(run.stdout.contains("Adopted 1 object"), "{}", run.stdout);

    let history = case.ok(&["history", "--vhost", &case.vhost], &[]);
    let numbers: Vec<u64> = run_numbers(&history.stdout).into_iter().filter(|n| *n > before).collect();
    assert_eq!(numbers.len(), 3, "two applies that changed something and the adopt:\n{}", history.stdout);
    assert_eq!(
        numbers,
        [numbers[2] + 2, numbers[2] + 1, numbers[2]],
        "newest first, one after another:\n{}",
        history.stdout
    );
    let adopt = history.stdout.lines().position(|l| l.contains(&format!("run {}:", numbers[0]))).unwrap();
    let lines: Vec<&str> = history.stdout.lines().collect();
    assert!(lines[adopt].contains(": adopted by "), "{}", history.stdout);
    assert!(lines[adopt + 1].contains("1 object(s) from project t-history-a"), "{}", history.stdout);
    assert!(numbers[2] == before + 1, "the first run takes the next number: {before}\n{}", history.stdout);
    let all = case.ok(&["history"], &[]);
    assert!(!all.stdout.contains(&format!("run {}:", numbers[0] + 1)), "{}", all.stdout);
}
