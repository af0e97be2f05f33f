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
    let broker = vec!["broker".to_string()];
    let mut wrong = Vec::new();
    for (m, deps) in imports() {
        if !m.starts_with(&broker) {
            continue;
        }
        for d in deps.iter().filter(|d| !d.starts_with(&broker) && d.first().is_none_or(|f| f != "model")) {
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
