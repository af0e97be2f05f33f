//! Helpers shared by the CLI tests: run the real binary as a user would.

#![allow(dead_code)]

// `gen` is a reserved word in edition 2024, hence the raw identifier.
pub mod r#gen;
pub mod import;
pub mod strategy;

use std::path::{Path, PathBuf};

use assert_cmd::Command;

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

/// The real-world definitions files (`../shared/realworld/*.json`, beside
/// the checkout in CI), sorted.
pub fn realworld() -> Vec<PathBuf> {
    let dir = root().join("../shared/realworld");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{} is readable: {e}", dir.display()))
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    out.sort();
    out
}

/// `text` without whitespace and the `│` of wrapped diagnostics: compare
/// `squash(stderr).contains(&squash(expected))`, since diagnostics wrap at
/// 100 columns wherever a long name happens to fall.
pub fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace() && *c != '│').collect()
}
