//! Helpers shared by the CLI tests: run the real binary as a user would.

pub(crate) mod broker;
pub(crate) mod case;
pub(crate) mod definitions;
pub(crate) mod migration;
// `gen` is a reserved word in edition 2024, hence the raw identifier.
pub(crate) mod r#gen;
pub(crate) mod routing;
pub(crate) mod strategy;
pub(crate) mod traffic;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use assert_cmd::Command;

// The test broker's client, as every test names it.
pub(crate) use broker::{TestBroker, seg};
pub(crate) use case::Case;
pub(crate) use migration::{MigrationCase, migration};

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

/// A test's hold on the test node (or the cluster), released when dropped:
/// each guard is held for its drop alone. A test takes one, once: a second
/// would wait for itself.
pub(crate) enum Turn {
    Alone { _held: RwLockWriteGuard<'static, ()> },
    Shared { _held: RwLockReadGuard<'static, ()> },
    Cluster { _held: MutexGuard<'static, ()> },
}

/// The test node to this test alone, once the tests holding it are done.
pub(crate) fn alone() -> Turn {
    Turn::Alone { _held: NODE.write().unwrap_or_else(PoisonError::into_inner) }
}

/// The test node, shared with the other tests that share it.
pub(crate) fn share() -> Turn {
    Turn::Shared { _held: NODE.read().unwrap_or_else(PoisonError::into_inner) }
}

/// The cluster, to this test alone.
pub(crate) fn cluster() -> Turn {
    Turn::Cluster { _held: CLUSTER.lock().unwrap_or_else(PoisonError::into_inner) }
}

/// The repository root, so tests name paths as a user in it would.
pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A copy of examples/shop in `dir` (as `dir/shop`) whose binding key
/// `from` is `to`: a pull request that changes one topic binding, which
/// removes one binding and adds another.
pub(crate) fn shop_with_key(dir: &Path, from: &str, to: &str) -> PathBuf {
    let changed = dir.join("shop");
    std::fs::create_dir(&changed).unwrap();
    for entry in std::fs::read_dir(root().join("examples/shop")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            // `routing_key = ...` of a binding, or `key = ...` of a stamp.
            let text = text.replace(&format!("key = \"{from}\""), &format!("key = \"{to}\""));
            std::fs::write(changed.join(path.file_name().unwrap()), text).unwrap();
        }
    }
    changed
}

/// Checks `doc` against the JSON schema in file `schema` (from the
/// repository root), saying every place it breaks.
pub(crate) fn assert_schema(doc: &serde_json::Value, schema: &str) {
    let text = std::fs::read_to_string(root().join(schema)).unwrap();
    let compiled: serde_json::Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&compiled).unwrap_or_else(|e| panic!("{schema} compiles: {e}"));
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "not as {schema} says:\n{}\n{doc:#}", errors.join("\n"));
}

/// What one run of `warren` printed and how it ended.
pub(crate) struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `warren ARGS` from the repository root, without colour.
pub(crate) fn warren(args: &[&str]) -> Run {
    warren_env(args, &[])
}

/// Runs `warren ARGS` like [`warren`], with these variables set (`Some`) or
/// removed (`None`) from its environment.
pub(crate) fn warren_env(args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
    warren_in(&root(), args, env)
}

/// Runs `warren ARGS` like [`warren_env`], in the directory `dir`.
pub(crate) fn warren_in(dir: &Path, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
    let mut cmd = Command::cargo_bin("warren").expect("the warren binary is built");
    cmd.current_dir(dir).env_remove("NO_COLOR");
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

impl TestBroker {
    /// Runs `warren ARGS` against this broker (`WARREN_URL`), with these
    /// variables set or removed as well.
    pub(crate) fn warren(&self, args: &[&str], env: &[(&str, Option<&str>)]) -> Run {
        let mut all: Vec<(&str, Option<&str>)> = vec![
            ("WARREN_URL", Some(self.url.as_str())),
            ("WARREN_CA_CERT", None),
            ("WARREN_CLIENT_CERT", None),
            ("WARREN_CLIENT_KEY", None),
            ("WARREN_AMQP_URL", self.amqp()),
        ];
        // Tests not about projects act as one, as a user with a project
        // file would: named after the test's vhosts' owner, `default`.
        if !env.iter().any(|(k, _)| *k == "WARREN_PROJECT") && !names_project(args) {
            all.push(("WARREN_PROJECT", Some("default")));
        }
        all.extend_from_slice(env);
        warren_env(args, &all)
    }
}

/// Whether the command's PATH names its project itself (`--project` must
/// then agree with it): a directory with a project file, or a saved plan
/// that records the project it was made for.
fn names_project(args: &[&str]) -> bool {
    let commands = ["plan", "apply", "destroy", "adopt", "lint", "status"];
    let Some(at) = args.iter().position(|a| commands.contains(a)) else { return false };
    let Some(path) = args.get(at + 1).map(|a| root().join(a)) else { return false };
    // A saved plan names its project at the top (the plan it shows names
    // one too, an empty one when there is none).
    let saved_plan = || {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        serde_json::from_str::<serde_json::Value>(&text)
            .is_ok_and(|v| v.get("warren_saved_plan").is_some() && v.get("project").is_some())
    };
    path.join("warren.toml").is_file() || (path.is_file() && saved_plan())
}

/// The entries of a corpus directory (files and sub-directories), sorted,
/// as paths relative to the repository root.
pub(crate) fn corpus(dir: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root().join(dir))
        .expect("corpus directory exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "toml"))
        .map(|p| format!("{dir}/{}", p.file_name().unwrap().to_string_lossy()))
        .collect();
    out.sort();
    out
}

/// The example topologies: the folders of `examples` that hold topology
/// files (`examples/ci` holds CI configuration, run by its own test).
pub(crate) fn examples() -> Vec<String> {
    corpus("examples")
        .into_iter()
        .filter(|e| {
            let mut found = Vec::new();
            walk(&root().join(e), &mut found);
            found.iter().any(|f| f.extension().is_some_and(|x| x == "toml"))
        })
        .collect()
}

/// Every file below `dir`, unsorted.
pub(crate) fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The codes a corpus entry's first line promises: `# expect: a, b`.
pub(crate) fn expected_codes(entry: &str) -> Vec<String> {
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
pub(crate) fn codes_in(output: &str) -> Vec<String> {
    let mut codes: Vec<String> = output
        .split("warren::")
        .skip(1)
        .map(|rest| rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '-').collect())
        .collect();
    codes.sort();
    codes
}

pub(crate) fn stem(entry: &str) -> String {
    Path::new(entry).file_stem().unwrap().to_string_lossy().into_owned()
}

/// The repository's own definitions export with the quirks of real ones
/// (server-named queues, bindings from the broker's own exchanges, vhost
/// limits, several vhosts and users).
pub(crate) const QUIRKS: &str = "tests/definitions/3.x-multivhost-quirks.json";

/// An optional extra corpus of real-world definitions files, sorted: every
/// `*.json` in the folder `WARREN_REALWORLD_DIR` names, when the user sets
/// it. Empty, and said so on
/// stderr, when the variable is unset: a clone of the repository has no such
/// folder, and the repository's own fixtures cover the quirks tests rely on.
pub(crate) fn realworld() -> Vec<PathBuf> {
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

/// Diagnostics as one line of words: miette wraps long messages at a fixed
/// width and draws a margin (`│`) on continuation lines.
pub(crate) fn flat(text: &str) -> String {
    text.lines()
        .map(|l| l.trim().trim_start_matches('│').trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` without whitespace and the `│` of wrapped diagnostics: compare
/// `squash(stderr).contains(&squash(expected))`, since diagnostics wrap at
/// 100 columns wherever a long name happens to fall.
pub(crate) fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace() && *c != '│').collect()
}

/// `git` in `dir` as a test's own user, which must succeed.
pub(crate) fn git(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=warren", "-c", "user.email=warren@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A git repository of `dir` as it stands, on branch `main`, in one commit.
/// A temporary git repository holding `files` (path, text), committed.
pub(crate) fn repository(files: &[(&str, &str)]) -> tempfile::TempDir {
    let repo = files_dir(files);
    committed(repo.path());
    repo
}

fn committed(dir: &std::path::Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "v1"]);
}

/// A temporary directory holding these files (names relative to it, with
/// their directories made).
pub(crate) fn files_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}
