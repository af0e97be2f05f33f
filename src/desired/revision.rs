//! Topology files at a git revision, `REV:PATH` as `git show` spells them
//! (`origin/main:topology`): what `warren diff` compares a pull request
//! with, without a second checkout. Read with the `git` command, as the
//! user's own git sees the repository (its remotes, its credentials).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Desired;
use crate::diagnostic::Diagnostic;

/// `REV:PATH` split, when `spec` is no path on disk and has that shape.
pub fn parse(spec: &Path) -> Option<(String, String)> {
    if spec.exists() {
        return None;
    }
    let text = spec.to_str()?;
    let (rev, path) = text.split_once(':')?;
    (!rev.is_empty()).then(|| (rev.to_string(), if path.is_empty() { ".".to_string() } else { path.to_string() }))
}

/// The topology at `rev` under `path`, each file named `REV:PATH/…` in
/// diagnostics; what git cannot give is an error diagnostic.
pub fn load(rev: &str, path: &str) -> Desired {
    let root = PathBuf::from(format!("{rev}:{path}"));
    match files(rev, path) {
        Ok(found) => {
            // Named below the root as given (`REV:./shop.toml` for `REV:.`),
            // so that the project file is found where load_texts looks.
            let named = |rel: String| if rel.is_empty() { root.clone() } else { root.join(rel) };
            let files = found.into_iter().map(|(rel, text)| (named(rel), text)).collect();
            super::load_texts(&root, files)
        }
        Err(d) => {
            let mut desired = super::load_texts(&root, Vec::new());
            desired.diagnostics = vec![d];
            desired
        }
    }
}

/// Every `*.toml` below `path` at `rev`, named relative to `path` (empty
/// when `path` is the file), with its text; not those in the project's
/// overlays.
fn files(rev: &str, path: &str) -> Result<Vec<(String, String)>, Diagnostic> {
    let failed = |what: String| {
        Diagnostic::error("read", format!("cannot read {rev}:{path} from git: {what}"))
            .help("give a revision git knows and a path in it, as `git show` takes them: `warren diff origin/main:topology topology`")
    };
    // `git ARGS`, with `input` on its standard input (written from a thread
    // of its own, so that neither pipe fills while the other waits).
    let git = |args: &[&str], input: Option<String>| -> Result<String, Diagnostic> {
        let cannot = |e: std::io::Error| failed(format!("cannot run git: {e}"));
        let mut child = Command::new("git")
            .args(args)
            .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(cannot)?;
        let writer = input.zip(child.stdin.take()).map(|(text, mut stdin)| {
            std::thread::spawn(move || std::io::Write::write_all(&mut stdin, text.as_bytes()))
        });
        let out = child.wait_with_output().map_err(cannot)?;
        if let Some(w) = writer {
            w.join().expect("writing to git does not panic").map_err(cannot)?;
        }
        if !out.status.success() {
            return Err(failed(String::from_utf8_lossy(&out.stderr).trim().to_string()));
        }
        String::from_utf8(out.stdout).map_err(|_| failed("a file is not UTF-8".into()))
    };
    // Each file's blob, then every blob's text from one `git cat-file`.
    let listed = git(&["ls-tree", "-r", rev, "--", path], None)?;
    let blobs: Vec<(&str, &str)> = listed
        .lines()
        .filter_map(|l| {
            let (meta, name) = l.split_once('\t')?;
            let mut meta = meta.split(' ');
            (meta.nth(1) == Some("blob") && name.ends_with(".toml") && !name.ends_with(super::expect::SUFFIX))
                .then_some((meta.next()?, name))
        })
        .collect();
    if blobs.is_empty() {
        return Err(failed("no *.toml files there".into()));
    }
    let asked: String = blobs.iter().map(|(oid, _)| format!("{oid}\n")).collect();
    let batch = git(&["cat-file", "--batch"], Some(asked))?;
    let mut rest = batch.as_str();
    let mut out = Vec::new();
    for (_, name) in blobs {
        // `<oid> blob <size>`, the text, a newline.
        let (header, body) = rest.split_once('\n').ok_or_else(|| failed("git cat-file ended early".into()))?;
        let size: usize =
            header.rsplit(' ').next().and_then(|n| n.parse().ok()).ok_or_else(|| failed(header.into()))?;
        let text = body.get(..size).ok_or_else(|| failed("git cat-file ended early".into()))?;
        out.push((name.to_string(), text.to_string()));
        rest = body.get(size + 1..).unwrap_or("");
    }
    // git names them relative to the current directory, as `path` is.
    let within = path.trim_start_matches("./").trim_end_matches('/');
    let within = if within == "." { "" } else { within };
    for (name, _) in &mut out {
        let rel = if name == within { "" } else { name.strip_prefix(within).unwrap_or(name).trim_start_matches('/') };
        *name = rel.to_string();
    }
    // The project's overlays are not part of its base.
    let overlays = out
        .iter()
        .find(|(n, _)| n == crate::project::FILE_NAME)
        .map(|(_, text)| crate::project::parse(crate::source::FileId(0), text, &mut Vec::new()))
        .map(|p| p.overlay_dirs(Path::new(""), None))
        .unwrap_or_default();
    out.retain(|(n, _)| !overlays.iter().any(|o| Path::new(n).starts_with(o)));
    Ok(out)
}
