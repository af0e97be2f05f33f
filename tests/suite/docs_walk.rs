//! A walk through the README and every page of docs/ as a new user: every
//! block the text marks runnable is run as written, against the test node,
//! and must end as the text says (docs/development.md, "The docs walk").
//!
//! The marks live in the info string of a fenced block, after the language,
//! where GitHub ignores them: ```` ```sh runnable ```` (must exit 0),
//! ```` ```sh runnable exit=2 ```` (must exit 2), and
//! ```` ```toml file=PATH ```` (written to PATH, as a reader saves it).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, TestBroker, root, seg};

/// What a marked block asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Action {
    /// Run with bash; it must exit with this code.
    Run { exit: i32 },
    /// Write the block's text to this path, relative to the page's directory.
    Write(String),
}

/// One marked block: where it starts, what it asks for, and its text.
#[derive(Debug, Clone)]
pub(crate) struct Block {
    pub line: usize,
    pub action: Action,
    pub text: String,
}

/// The marked blocks of a markdown text, in order; unmarked blocks are left
/// out. A fence may be indented (inside a list): its lines lose that indent.
pub(crate) fn marked_blocks(markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines = markdown.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        let ticks = trimmed.chars().take_while(|c| *c == '`').count();
        if ticks < 3 {
            continue;
        }
        let info = &trimmed[ticks..];
        if info.contains('`') {
            continue; // inline code such as ```` ```mermaid ````, not a fence
        }
        let mut text = String::new();
        for (_, body) in lines.by_ref() {
            let t = body.trim_start();
            if t.chars().take_while(|c| *c == '`').count() >= ticks && t.trim_matches('`').trim().is_empty() {
                break;
            }
            text.push_str(body.get(indent.min(body.len() - t.len())..).unwrap_or(body));
            text.push('\n');
        }
        if let Some(action) = action(info) {
            blocks.push(Block { line: n + 1, action, text });
        }
    }
    blocks
}

/// The mark of a fence's info string (`sh runnable exit=2`), if any.
fn action(info: &str) -> Option<Action> {
    let words: Vec<&str> = info.split_whitespace().collect();
    if let Some(path) = words.iter().find_map(|w| w.strip_prefix("file=")) {
        return Some(Action::Write(path.to_string()));
    }
    if !words.contains(&"runnable") {
        return None;
    }
    let exit =
        words.iter().find_map(|w| w.strip_prefix("exit=")).map_or(0, |e| e.parse().expect("exit=N takes a number"));
    Some(Action::Run { exit })
}

/// README.md, then every page of docs/, as paths relative to the root.
pub(crate) fn pages() -> Vec<String> {
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    let mut all = vec!["README.md".to_string()];
    all.extend(docs);
    all
}

#[test]
fn the_marks_are_read_from_the_info_string() {
    let text = "a\n```sh runnable\nwarren plan\n```\n\n```sh\nnot marked\n```\n  ```toml file=t/a.toml\n  vhosts = []\n  ```\n```sh runnable exit=2\nfalse\n```\n";
    let blocks = marked_blocks(text);
    assert_eq!(blocks.len(), 3, "{blocks:?}");
    assert_eq!(
        (blocks[0].line, &blocks[0].action, blocks[0].text.as_str()),
        (2, &Action::Run { exit: 0 }, "warren plan\n")
    );
    assert_eq!((&blocks[1].action, blocks[1].text.as_str()), (&Action::Write("t/a.toml".into()), "vhosts = []\n"));
    assert_eq!(blocks[2].action, Action::Run { exit: 2 });
    // The README's tour is walked: it has blocks to run.
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(marked_blocks(&readme).iter().filter(|b| matches!(b.action, Action::Run { .. })).count() >= 5);
}

/// Copies the directory `from` into `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The names of what the node holds, to leave it as the walk found it.
struct Before {
    vhosts: BTreeSet<String>,
    users: BTreeSet<String>,
    /// Per vhost that was there: its exchanges, queues and policies.
    objects: BTreeSet<(String, String, String)>,
    /// warren's broker-wide records, as they were.
    records: Vec<(String, Option<serde_json::Value>)>,
}

fn names(list: &serde_json::Value) -> Vec<String> {
    list.as_array().into_iter().flatten().filter_map(|item| item["name"].as_str().map(str::to_string)).collect()
}

fn objects(broker: &TestBroker, vhost: &str) -> Vec<(String, String, String)> {
    ["exchanges", "queues", "policies"]
        .into_iter()
        .flat_map(|kind| {
            names(&broker.get(&format!("{kind}/{}", seg(vhost))))
                .into_iter()
                .map(move |name| (kind.to_string(), vhost.to_string(), name))
        })
        .collect()
}

fn before(broker: &TestBroker) -> Before {
    let vhosts: BTreeSet<String> = names(&broker.get("vhosts")).into_iter().collect();
    Before {
        objects: vhosts.iter().flat_map(|v| objects(broker, v)).collect(),
        users: names(&broker.get("users")).into_iter().collect(),
        records: ["warren.inventory", "warren.journal"]
            .into_iter()
            .map(|name| (name.to_string(), broker.try_get(&format!("global-parameters/{name}"))))
            .collect(),
        vhosts,
    }
}

/// Deletes what the walk made, and puts warren's records back as they were.
fn restore(broker: &TestBroker, before: &Before) {
    for vhost in names(&broker.get("vhosts")) {
        if !before.vhosts.contains(&vhost) {
            broker.delete(&format!("vhosts/{}", seg(&vhost)));
            continue;
        }
        for (kind, v, name) in objects(broker, &vhost) {
            if !before.objects.contains(&(kind.clone(), v.clone(), name.clone()))
                && !name.starts_with("amq.")
                && !name.is_empty()
            {
                broker.delete(&format!("{kind}/{}/{}", seg(&v), seg(&name)));
            }
        }
    }
    for user in names(&broker.get("users")) {
        if !before.users.contains(&user) {
            broker.delete(&format!("users/{}", seg(&user)));
        }
    }
    for (name, value) in &before.records {
        match value {
            Some(v) => broker.put(&format!("global-parameters/{name}"), v.clone()),
            None => broker.delete(&format!("global-parameters/{name}")),
        }
    }
}

/// Puts the node back as [`Before`] found it when dropped, a failed
/// assertion included.
struct Restore<'a>(&'a TestBroker, Before);

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        restore(self.0, &self.1);
    }
}

/// Runs one block with bash in `dir`, as a user's shell would: `warren` on
/// PATH, `WARREN_URL` the test node, no other `WARREN_` variable.
fn run(dir: &Path, script: &str, bin_dir: &Path, url: &str) -> (i32, String) {
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut cmd = Command::new("timeout");
    cmd.args(["600", "bash", "-e", "-o", "pipefail", "-c", script]).current_dir(dir);
    for (name, _) in std::env::vars() {
        if name.starts_with("WARREN_") {
            cmd.env_remove(name);
        }
    }
    let out = cmd.env("PATH", path).env("WARREN_URL", url).env("NO_COLOR", "1").output().expect("bash runs");
    let shown = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), shown)
}

#[test]
#[ignore = "needs a broker: scripts/test runs it"]
fn every_runnable_block_of_the_readme_and_the_docs_runs_as_written() {
    let _turn = common::alone();
    let broker = TestBroker::from_env();
    let _restore = Restore(&broker, before(&broker));
    let bin = assert_cmd::cargo::cargo_bin("warren");
    let bin_dir: PathBuf = bin.parent().unwrap().to_path_buf();
    let mut failures = Vec::new();
    let mut ran = 0;
    for page in pages() {
        let text = std::fs::read_to_string(root().join(&page)).unwrap();
        let blocks = marked_blocks(&text);
        if blocks.is_empty() {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&root().join("examples"), &dir.path().join("examples"));
        for block in blocks {
            match &block.action {
                Action::Write(file) => {
                    let path = dir.path().join(file);
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(path, &block.text).unwrap();
                }
                Action::Run { exit } => {
                    ran += 1;
                    let (code, shown) = run(dir.path(), &block.text, &bin_dir, &broker.url);
                    if code != *exit {
                        failures.push(format!(
                            "{page}:{}: exited {code}, the text expects {exit}\n{}\n--- output:\n{shown}",
                            block.line, block.text
                        ));
                    }
                }
            }
        }
    }
    assert!(ran > 0, "no runnable block found");
    assert!(failures.is_empty(), "{} block(s) did not run as written:\n\n{}", failures.len(), failures.join("\n\n"));
}
