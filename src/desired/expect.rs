//! Routing tests: `*.test.toml` files beside the topology, each a list of
//! expectations about where messages go (`[[route]]`) and where a queue's
//! dead letters go (`[[dead_letters]]`). Like terraform's `*.tftest.hcl`
//! beside `*.tf`, they live with the files they test and are never read as
//! topology; like atlas's schema tests, each states an outcome, checked
//! offline against the files or, with `--live`, against a broker's
//! topology. This module reads their syntax; `crate::route_test` checks
//! their names and runs them.

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::parse::document;
use super::reader::{Fields, Reader};
use super::tree::{Item, Node};
use crate::diagnostic::Diagnostic;
use crate::model::Table;
use crate::source::{FileId, Location, Sources};

/// How the name of a routing test file ends.
pub const SUFFIX: &str = ".test.toml";

/// Whether `path` names a routing test file (never a topology file).
pub fn is_test_file(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.ends_with(SUFFIX))
}

const TOP_KEYS: &[&str] = &["vhost", "route", "dead_letters"];
const WANTS: &[&str] = &["reaches", "reaches_at_least", "reaches_none_of", "reaches_none"];
const ROUTE_KEYS: &[&str] = &[
    "name",
    "vhost",
    "exchange",
    "key",
    "cc",
    "bcc",
    "headers",
    "reaches",
    "reaches_at_least",
    "reaches_none_of",
    "reaches_none",
];
const DEAD_LETTER_KEYS: &[&str] = &[
    "name",
    "vhost",
    "queue",
    "reason",
    "key",
    "headers",
    "reaches",
    "reaches_at_least",
    "reaches_none_of",
    "reaches_none",
];

/// A name as written, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct Named {
    pub name: String,
    pub at: Location,
}

/// One expectation of a test file.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// `name = "..."`, for reports.
    pub name: Option<String>,
    /// Its own `vhost`, else the file's; `None`: the topology's one vhost.
    pub vhost: Option<Named>,
    pub subject: Subject,
    pub wants: Vec<Want>,
    /// The table, for a diagnostic about it as a whole.
    pub at: Location,
}

/// What is routed.
#[derive(Debug, Clone, PartialEq)]
pub enum Subject {
    /// A message published to `exchange` with the routing key and the keys
    /// of its `CC` and `BCC` headers (`keys`, the routing key first).
    Route { exchange: Named, keys: Vec<String>, headers: Table },
    /// The dead letters of `queue` for `reason`; `key`: the routing key of
    /// the message that died, or every message the queue can hold;
    /// `exchange`: the one it was published to (its `x-death` names it).
    DeadLetters { queue: Named, reason: Named, key: Option<String>, exchange: Option<String>, headers: Table },
}

/// How the queues reached are compared with those listed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WantKind {
    /// `reaches`: exactly these.
    Exactly,
    /// `reaches_at_least`: these and maybe more.
    AtLeast,
    /// `reaches_none_of`: none of these.
    NoneOf,
    /// `reaches_none = true`: no queue.
    Nothing,
}

impl WantKind {
    pub fn key(self) -> &'static str {
        match self {
            WantKind::Exactly => "reaches",
            WantKind::AtLeast => "reaches_at_least",
            WantKind::NoneOf => "reaches_none_of",
            WantKind::Nothing => "reaches_none",
        }
    }
}

/// One stated outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Want {
    pub kind: WantKind,
    pub queues: Vec<Named>,
    /// The value written, where a failure points.
    pub at: Location,
}

/// The routing test files below `path` (a directory; a file has none), sorted.
pub fn files(path: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if path.is_dir() {
        let _ = collect(path, &mut out);
    }
    out.sort();
    out
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if is_test_file(&path) {
            out.push(path);
        }
    }
    Ok(())
}

/// Reads the test files below `path` into `sources`: each file's
/// expectations, and what cannot be read or is wrong in them.
pub fn load(path: &Path, sources: &mut Sources, diagnostics: &mut Vec<Diagnostic>) -> Vec<(PathBuf, Vec<Expectation>)> {
    let mut out = Vec::new();
    for file in files(path) {
        match std::fs::read_to_string(&file) {
            Ok(text) => {
                let id = sources.add(&file, text);
                let text = sources.get(id).text.clone();
                out.push((file, parse(id, &text, diagnostics)));
            }
            Err(e) => diagnostics.push(
                Diagnostic::error("read", format!("cannot read {}: {e}", file.display()))
                    .help("check the path and its permissions"),
            ),
        }
    }
    out
}

/// The expectations of one test file's text (file `id`); problems pushed
/// to `diagnostics`. An expectation with a problem is left out.
pub fn parse(id: FileId, text: &str, diagnostics: &mut Vec<Diagnostic>) -> Vec<Expectation> {
    let mut r = Reader { file: id, diagnostics };
    let Some(whole) = document(&mut r, text) else { return Vec::new() };
    let Some(top) = Fields::new(&mut r, &whole, "the test file", TOP_KEYS) else { return Vec::new() };
    let vhost = named(&mut r, &top, "vhost");
    let mut out = Vec::new();
    for (kind, known) in [("route", ROUTE_KEYS), ("dead_letters", DEAD_LETTER_KEYS)] {
        let Some(node) = top.get(kind) else { continue };
        let Item::Array(items) = &node.item else {
            r.wrong_type(node, format_args!("`{kind}`"), &format!("an array of tables (`[[{kind}]]`)"));
            continue;
        };
        for item in items {
            let what = if kind == "route" { "a route test" } else { "a dead-letter test" };
            let Some(fields) = Fields::new(&mut r, item, what, known) else { continue };
            if let Some(mut e) = expectation(&mut r, &fields, kind, item) {
                e.vhost = e.vhost.or_else(|| vhost.clone());
                out.push(e);
            }
        }
    }
    if top.get("route").is_none() && top.get("dead_letters").is_none() {
        let d = Diagnostic::warning("missing-key", "this test file holds no test")
            .at(r.loc(0..text.len().min(1)))
            .help("add a `[[route]]` or `[[dead_letters]]` table; docs/routing.md, section Routing tests");
        r.report(d);
    }
    out
}

/// One `[[route]]` or `[[dead_letters]]` table; `None` when it has errors.
fn expectation(r: &mut Reader, f: &Fields, kind: &str, node: &Node) -> Option<Expectation> {
    let before = r.diagnostics.len();
    let at = r.loc(table_span(node));
    let headers = f.values(r, "headers");
    // Every part read before any is given up on: one run says all.
    let subject = if kind == "route" {
        let exchange = required(r, f, "exchange", at.span.clone(), "\"orders\"");
        let mut keys = vec![f.string(r, "key").unwrap_or_default()];
        for extra in ["cc", "bcc"] {
            keys.extend(f.strings(r, extra).unwrap_or_default().into_iter().map(|(k, _)| k));
        }
        exchange.zip(headers).map(|(exchange, headers)| Subject::Route { exchange, keys, headers })
    } else {
        let queue = required(r, f, "queue", at.span.clone(), "\"orders\"");
        let reason = required(r, f, "reason", at.span.clone(), "\"rejected\"");
        let key = f.string(r, "key");
        let exchange = f.string(r, "exchange");
        match (queue, reason, headers) {
            (Some(queue), Some(reason), Some(headers)) => {
                Some(Subject::DeadLetters { queue, reason, key, exchange, headers })
            }
            _ => None,
        }
    };
    let wants = wants(r, f, &at);
    let name = f.string(r, "name");
    let vhost = named(r, f, "vhost");
    let subject = subject?;
    (r.diagnostics.len() == before).then_some(Expectation { name, vhost, subject, wants, at })
}

/// The stated outcomes: `reaches` or `reaches_none` alone, or
/// `reaches_at_least` and `reaches_none_of`, together or not.
fn wants(r: &mut Reader, f: &Fields, at: &Location) -> Vec<Want> {
    let mut out = Vec::new();
    for key in WANTS {
        let Some(node) = f.get(key) else { continue };
        let kind = match *key {
            "reaches" => WantKind::Exactly,
            "reaches_at_least" => WantKind::AtLeast,
            "reaches_none_of" => WantKind::NoneOf,
            _ => WantKind::Nothing,
        };
        let queues = if kind == WantKind::Nothing {
            if f.bool(r, key) == Some(false) {
                let d = Diagnostic::error("bad-value", "`reaches_none = false` states nothing")
                    .at(r.loc(node.span()))
                    .help("write `reaches_none = true`, or list the queues with `reaches` or `reaches_at_least`");
                r.report(d);
            }
            Vec::new()
        } else {
            let listed = f.strings(r, key).unwrap_or_default();
            listed.into_iter().map(|(name, span)| Named { name, at: r.loc(span) }).collect()
        };
        out.push(Want { kind, queues, at: r.loc(node.span()) });
    }
    if out.is_empty() {
        let d = Diagnostic::error("missing-key", format!("{} states no outcome", f.what))
            .at(at.clone())
            .label("a test needs an outcome")
            .help("add `reaches = [\"queue\"]` (exactly these queues), `reaches_at_least`, `reaches_none_of` or `reaches_none = true`");
        r.report(d);
    }
    let alone = out.iter().find(|w| matches!(w.kind, WantKind::Exactly | WantKind::Nothing));
    if let (Some(w), true) = (alone, out.len() > 1) {
        let d = Diagnostic::error(
            "bad-value",
            format!("`{}` says every queue reached; it cannot be combined", w.kind.key()),
        )
        .at(w.at.clone())
        .help("keep `reaches` (or `reaches_none`) alone, or use `reaches_at_least` with `reaches_none_of`");
        r.report(d);
    }
    out
}

fn required(r: &mut Reader, f: &Fields, key: &str, at: Range<usize>, example: &str) -> Option<Named> {
    let span = f.span(key);
    let name = f.required_string(r, key, at, example)?;
    Some(Named { name, at: r.loc(span.unwrap_or_default()) })
}

fn named(r: &mut Reader, f: &Fields, key: &str) -> Option<Named> {
    let span = f.span(key)?;
    Some(Named { name: f.string(r, key)?, at: r.loc(span) })
}

/// Where a table of an array of tables is written: from its first key to
/// the end of its last value (the toml crate gives such a table no span of
/// its own).
fn table_span(node: &Node) -> Range<usize> {
    match &node.item {
        Item::Table(t) if node.span.is_empty() => {
            let start = t.keys().map(|k| k.span.start).min().unwrap_or(0);
            let end = t.iter().map(|(_, v)| v.span.end).max().unwrap_or(start);
            start..end
        }
        _ => node.span(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (Vec<Expectation>, Vec<Diagnostic>) {
        let mut d = Vec::new();
        (parse(FileId(0), text, &mut d), d)
    }

    #[test]
    fn a_route_and_a_dead_letter_test() {
        let text = "vhost = \"shop\"\n[[route]]\nexchange = \"x\"\nkey = \"a.b\"\ncc = [\"c\"]\nheaders = { region = \"eu\" }\nreaches = [\"q1\", \"q2\"]\n[[dead_letters]]\nqueue = \"q1\"\nreason = \"expired\"\nreaches_none = true\n";
        let (e, d) = read(text);
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].vhost.as_ref().unwrap().name, "shop");
        let Subject::Route { keys, headers, .. } = &e[0].subject else { panic!() };
        assert_eq!(keys, &["a.b", "c"]);
        assert_eq!(headers.len(), 1);
        assert_eq!(&text[e[0].wants[0].at.span.clone()], "[\"q1\", \"q2\"]");
        assert_eq!(&text[e[0].wants[0].queues[1].at.span.clone()], "\"q2\"");
        assert_eq!(e[1].wants[0].kind, WantKind::Nothing);
        assert_eq!(&text[e[0].at.span.clone()], "[[route]]");
    }

    #[test]
    fn problems_at_their_place() {
        let text = "[[route]]\nexchang = \"x\"\nkey = 1\nreaches = [\"q\"]\nreaches_none = true\n";
        let (e, d) = read(text);
        assert!(e.is_empty());
        let codes: Vec<&str> = d.iter().map(|d| d.code).collect();
        assert_eq!(codes, ["unknown-key", "missing-key", "wrong-type", "bad-value"], "{d:?}");
        assert_eq!(d[0].help.as_deref(), Some("did you mean `exchange`?"));
        assert_eq!(&text[d[2].location.clone().unwrap().span], "1");
        let (_, d) = read("[[route]]\nexchange = \"x\"\n");
        assert_eq!(d[0].code, "missing-key");
        assert!(d[0].message.contains("states no outcome"), "{d:?}");
        let (_, d) = read("[[route]\n");
        assert_eq!(d[0].code, "syntax");
    }

    #[test]
    fn test_files_are_told_by_their_name() {
        assert!(is_test_file(Path::new("a/orders.test.toml")));
        assert!(!is_test_file(Path::new("a/orders.toml")));
        assert!(!is_test_file(Path::new("a/test.toml")));
    }
}
