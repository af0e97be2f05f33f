//! The shape of the source, checked as code: no import cycles between
//! source files, nor between the top-level modules (so data can only flow
//! one way through them), and the broker module a transport that imports
//! nothing but the model and its own files. Tests (`#[cfg(test)]` and the
//! `tests.rs` files) are left out: they may reach anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use petgraph::algo::tarjan_scc;
use petgraph::graph::DiGraph;
use regex::Regex;

/// A module path: `["broker", "records"]`; the crate root is empty.
type Module = Vec<String>;

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") && path.file_name().is_some_and(|n| n != "tests.rs") {
            out.push(path);
        }
    }
}

/// `src/broker/mod.rs` -> broker, `src/broker/ops.rs` -> broker/ops.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib" || p == "main") {
        parts.pop();
    }
    parts
}

/// `a::{b, c::{d, e}}` -> a::b, a::c::d, a::c::e.
fn expand(prefix: &[String], group: &str, out: &mut Vec<Module>) {
    let (mut depth, mut item) = (0, String::new());
    let mut items = Vec::new();
    for ch in group.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if ch == ',' && depth == 0 {
            items.push(std::mem::take(&mut item));
        } else {
            item.push(ch);
        }
    }
    items.push(item);
    for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
        if let Some((head, inner)) = item.split_once("::{") {
            let mut p = prefix.to_vec();
            p.extend(head.split("::").map(str::to_string));
            expand(&p, inner.strip_suffix('}').unwrap_or(inner), out);
        } else {
            let mut p = prefix.to_vec();
            p.extend(item.split(" as ").next().unwrap().split("::").filter(|s| !s.is_empty()).map(str::to_string));
            out.push(p);
        }
    }
}

/// Every source file's module and the modules it imports (as files).
fn imports() -> BTreeMap<Module, BTreeSet<Module>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(&src, f)).collect();
    let resolve = |path: &[String]| (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|m| modules.contains(m));
    let uses = Regex::new(r"\buse\s+((?:crate|super|self)(?:::\w+)*)(?:::\{([^;]*)\})?;").unwrap();
    let inline = Regex::new(r"\b((?:crate|super)(?:::\w+)+)").unwrap();
    let comment = Regex::new(r"//.*").unwrap();
    let mut out = BTreeMap::new();
    for file in &files {
        let module = module_of(&src, file);
        let text = std::fs::read_to_string(file).unwrap();
        let text = text.split("#[cfg(test)]").next().unwrap();
        let text = comment.replace_all(text, "");
        let mut paths = Vec::new();
        for c in uses.captures_iter(&text) {
            let base: Module = c[1].split("::").map(str::to_string).collect();
            match c.get(2) {
                Some(group) => expand(&base, group.as_str(), &mut paths),
                None => paths.push(base),
            }
        }
        paths.extend(inline.captures_iter(&text).map(|c| c[1].split("::").map(str::to_string).collect()));
        let mut deps = BTreeSet::new();
        for path in paths {
            let (mut at, rest) = match path[0].as_str() {
                "crate" => (Vec::new(), &path[1..]),
                _ => (module.clone(), &path[..]),
            };
            let mut rest = rest;
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "super" => {
                        at.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
            at.extend(rest.iter().cloned());
            if let Some(m) = resolve(&at).filter(|m| *m != module && !m.is_empty()) {
                deps.insert(m);
            }
        }
        out.insert(module, deps);
    }
    out
}

fn name(m: &Module) -> String {
    m.join("/")
}

#[test]
fn no_source_file_imports_one_that_imports_it_back() {
    let imports = imports();
    let mut graph = DiGraph::<Module, ()>::new();
    let nodes: BTreeMap<&Module, _> = imports.keys().map(|m| (m, graph.add_node(m.clone()))).collect();
    for (m, deps) in &imports {
        for d in deps {
            graph.add_edge(nodes[m], nodes[d], ());
        }
    }
    let cycles: Vec<Vec<String>> = tarjan_scc(&graph)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut names: Vec<String> = c.iter().map(|n| name(&graph[*n])).collect();
            names.sort();
            names
        })
        .collect();
    assert!(cycles.is_empty(), "import cycles between source files: {cycles:?}");
}

/// The top-level modules in an order where each imports only modules after
/// it: a cycle among them would make one.
#[test]
fn the_top_level_modules_import_each_other_one_way() {
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, deps) in imports() {
        let Some(from) = m.first() else { continue };
        let entry = top.entry(from.clone()).or_default();
        entry.extend(deps.iter().filter_map(|d| d.first()).filter(|d| *d != from).cloned());
    }
    let mut graph = DiGraph::<String, ()>::new();
    let nodes: BTreeMap<&String, _> = top.keys().map(|m| (m, graph.add_node(m.clone()))).collect();
    for (m, deps) in &top {
        for d in deps.iter().filter(|d| nodes.contains_key(d)) {
            graph.add_edge(nodes[m], nodes[d], ());
        }
    }
    let order = petgraph::algo::toposort(&graph, None).map_err(|c| {
        let at = &graph[c.node_id()];
        let back: Vec<&String> = top.iter().filter(|(_, d)| d.contains(at)).map(|(m, _)| m).collect();
        format!("module {at} is in an import cycle; it is imported by {back:?}")
    });
    assert!(order.is_ok(), "{}", order.unwrap_err());
}

#[test]
fn the_broker_module_imports_only_the_model() {
    // The in-memory broker routes messages by the one routing model, which
    // is the model's own question of where a message goes.
    let broker = vec!["broker".to_string()];
    let mut wrong = Vec::new();
    for (m, deps) in imports() {
        if !m.starts_with(&broker) {
            continue;
        }
        for d in
            deps.iter().filter(|d| !d.starts_with(&broker) && d.first().is_none_or(|f| f != "model" && f != "routing"))
        {
            wrong.push(format!("{} imports {}", name(&m), name(d)));
        }
    }
    assert!(wrong.is_empty(), "the broker is a transport over the model: {wrong:?}");
}

/// The check sees what it should: a cycle and an import it must find.
#[test]
fn the_import_reader_finds_grouped_nested_and_inline_imports() {
    let imports = imports();
    let of = |m: &str| imports[&m.split('/').map(str::to_string).collect::<Module>()].clone();
    let named = |ms: BTreeSet<Module>| ms.iter().map(name).collect::<BTreeSet<_>>();
    let records = named(of("broker/records"));
    assert!(records.contains("model") && records.contains("broker/lock"), "{records:?}");
    let apply = named(of("commands/apply"));
    for m in ["commands/planned", "commands/session", "apply", "model", "diagnostic"] {
        assert!(apply.contains(m), "commands/apply imports {m}: {apply:?}");
    }
}

/// Functions of more than this many lines, counted from the line with `fn`
/// to the closing brace, need a comment saying why they are one piece.
const LONGEST: usize = 80;

/// `text` with the contents of comments, strings and character literals
/// blanked out and every newline kept, so that braces count and lines keep
/// their numbers. Lifetimes (`'a`) are left alone.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let ident = |i: usize| i < c.len() && (c[i].is_alphanumeric() || c[i] == '_');
    let mut out = String::with_capacity(text.len());
    // Blanks `c[from..to]`, keeping its newlines.
    let blank = |out: &mut String, from: usize, to: usize| {
        out.extend(c[from..to.min(c.len())].iter().map(|&ch| if ch == '\n' { '\n' } else { ' ' }));
    };
    let mut i = 0;
    while i < c.len() {
        let next = |k: usize| c.get(i + k).copied();
        let end = if c[i] == '/' && next(1) == Some('/') {
            (i..c.len()).find(|&j| c[j] == '\n').unwrap_or(c.len())
        } else if c[i] == '/' && next(1) == Some('*') {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (0, i);
            while j < c.len() {
                if c[j] == '/' && c.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if c[j] == '*' && c.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j
        } else if c[i] == 'r' && !(i > 0 && ident(i - 1) && !(c[i - 1] == 'b' && !(i > 1 && ident(i - 2)))) && {
            let hashes = c[i + 1..].iter().take_while(|&&h| h == '#').count();
            c.get(i + 1 + hashes) == Some(&'"')
        } {
            // A raw string: r"…", r#"…"#, br"…"; no escapes inside.
            let hashes = c[i + 1..].iter().take_while(|&&h| h == '#').count();
            let close: Vec<char> = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            let body = i + 2 + hashes;
            (body..c.len()).find(|&j| c[j..].starts_with(&close)).map_or(c.len(), |j| j + close.len())
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            j + 1
        } else if c[i] == '\'' && next(1) == Some('\\') {
            (i + 2..c.len()).find(|&j| c[j] == '\'').map_or(c.len(), |j| j + 1)
        } else if c[i] == '\'' && next(2) == Some('\'') {
            i + 3
        } else {
            out.push(c[i]);
            i += 1;
            continue;
        };
        blank(&mut out, i, end);
        i = end.min(c.len());
    }
    out
}

/// Every function in `text` longer than [`LONGEST`] lines: its name, its
/// first line (from 1), its length, and whether a comment within the three
/// lines above it or on the first line of its body says it is "one piece".
fn long_functions(text: &str) -> Vec<(String, usize, usize, bool)> {
    let raw: Vec<&str> = text.lines().collect();
    let code = code_only(text);
    let code: Vec<&str> = code.lines().collect();
    let start = Regex::new(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:const|async|unsafe)\s+)*fn\s+(\w+)").unwrap();
    let says_one_piece = |line: &str| line.split_once("//").is_some_and(|(_, c)| c.contains("one piece"));
    let mut out = Vec::new();
    for (at, line) in code.iter().enumerate() {
        let Some(name) = start.captures(line).map(|c| c[1].to_string()) else { continue };
        // Brace depth from the `fn` line on; `None` until the body opens.
        let (mut depth, mut body) = (0i64, None);
        let mut end = None;
        for (n, l) in code.iter().enumerate().skip(at) {
            if body.is_none() && depth == 0 && l.trim_end().ends_with(';') && !l.contains('{') {
                break; // a declaration without a body, in a trait
            }
            for ch in l.chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        body.get_or_insert(n + 1);
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if body.is_some() && depth == 0 {
                end = Some(n);
                break;
            }
        }
        let (Some(body), Some(end)) = (body, end) else { continue };
        let length = end - at + 1;
        if length > LONGEST {
            let head = raw[at.saturating_sub(3)..at].iter().chain(raw.get(body));
            out.push((name, at + 1, length, head.into_iter().any(|l| says_one_piece(l))));
        }
    }
    out
}

/// Issue 28: a function over [`LONGEST`] lines is split into pieces that
/// are ideas of their own, or says why it is one piece (one exhaustive
/// match that reads best whole, say) in a comment containing "one piece"
/// within the three lines above its `fn` or on the first line of its body.
/// Lines are read with comments and strings blanked out and braces counted:
/// simple, and enough for rustfmt's layout.
#[test]
fn no_function_is_over_80_lines_without_saying_why_it_is_one_piece() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    all_sources(&src, &mut files);
    files.sort();
    let mut offenders = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap().to_string_lossy().into_owned();
        for (name, line, length, says) in long_functions(&std::fs::read_to_string(file).unwrap()) {
            if !says {
                offenders.push(format!("{rel}:{line} {name} ({length} lines)"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "functions over {LONGEST} lines: split them into named pieces, or say why each is one piece \
         in a `// … one piece …` comment at its head:\n  {}",
        offenders.join("\n  ")
    );
}

/// Every `.rs` file under `dir`, tests included.
fn all_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            all_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The reader sees through strings, comments and character literals, and
/// finds the comment above or at the head of a function.
#[test]
fn the_long_function_reader_counts_braces_in_code_only() {
    let body = |n: usize| "    let x = 1;\n".repeat(n);
    let tricky =
        "    let s = \"}}}\"; let r = r#\"{\"#; let c = '}'; // }\n    /* { */ let l: &'static str = \"\\\"}\";\n";
    let text = format!(
        "fn short() {{\n{}}}\n// one piece: a match\nfn said() {{\n{}}}\nfn long<'a>(a: &'a str) {{\n{tricky}{}}}\ntrait T {{\n    fn declared(&self);\n}}\nfn head() {{\n    // one piece\n{}}}\n",
        body(10),
        body(90),
        body(90),
        body(90)
    );
    let found: Vec<(String, usize, bool)> =
        long_functions(&text).into_iter().map(|(name, _, length, says)| (name, length, says)).collect();
    assert_eq!(
        found,
        [("said".to_string(), 92, true), ("long".to_string(), 94, false), ("head".to_string(), 93, true)]
    );
}
