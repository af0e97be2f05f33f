//! Shapes: a set of objects defined once with parameters (`[shapes.NAME]`),
//! and stamped with values wherever it is needed (`[[stamps]]`, see
//! `stamps.rs`). What a stamp makes is read as if written out, so that
//! everything after reading (merge, overlays, lint, plan) sees ordinary
//! objects.
//!
//! ```toml
//! [shapes.dead-lettered]
//! parameters = ["name"]
//! defaults = { type = "quorum" }
//! [shapes.dead-lettered.queues."${name}"]
//! type = "${type}"
//! ```

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::LazyLock;

use super::parse::SHAPE_BODY_KEYS;
use super::reader::{Fields, Reader, did_you_mean};
use super::tree::{Item, Key, Node, Tree};
use crate::diagnostic::Diagnostic;
use crate::source::{FileId, Location, Sources};

/// The keys of a shape's table: its parameters, and its body's.
static SHAPE_KEYS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let mut keys = vec!["parameters", "defaults", "description"];
    keys.extend(SHAPE_BODY_KEYS.iter().copied());
    keys
});

/// Where shapes are explained to users.
pub(super) const DOCS: &str = "docs/shapes.md";

/// One shape, checked: its parameters are all used, its placeholders all
/// name one, its body holds only what a file may declare.
#[derive(Debug, Clone)]
pub(super) struct Shape<'i> {
    pub name: String,
    /// Its table header's name.
    pub at: Location,
    pub required: BTreeSet<String>,
    pub defaults: BTreeMap<String, Node<'i>>,
    /// The objects (and stamps of other shapes) it makes.
    pub body: Tree<'i>,
    /// A placeholder names no parameter: its stamps make nothing, rather
    /// than an error at each of them for the one mistake.
    pub broken: bool,
}

impl Shape<'_> {
    pub(super) fn has(&self, parameter: &str) -> bool {
        self.required.contains(parameter) || self.defaults.contains_key(parameter)
    }

    pub(super) fn parameters(&self) -> impl Iterator<Item = &str> {
        self.required.iter().map(String::as_str).chain(self.defaults.keys().map(String::as_str))
    }
}

/// Every shape of the files, by name.
pub(super) type Shapes<'i> = BTreeMap<String, Shape<'i>>;

/// Adds the shapes of one file's `shapes` table to `shapes`.
pub(super) fn define<'i>(
    file: FileId,
    node: &Node<'i>,
    shapes: &mut Shapes<'i>,
    sources: &Sources,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut r = Reader { file, diagnostics };
    let Item::Table(table) = &node.item else {
        r.wrong_type(node, "`shapes`", "a table of shapes by name ([shapes.NAME])");
        return;
    };
    for (key, node) in table.iter() {
        let Some(shape) = one(&mut r, key, node) else { continue };
        if let Some(first) = shapes.get(&shape.name) {
            let d = Diagnostic::error("duplicate", format!("shape \"{}\" is defined twice", shape.name))
                .at(shape.at.clone())
                .label("defined again here")
                .help(format!("it is first defined at {}: keep one, or rename one", sources.position(&first.at)));
            r.report(d);
            continue;
        }
        shapes.insert(shape.name.clone(), shape);
    }
}

/// One shape's table read and checked.
fn one<'i>(r: &mut Reader, key: &Key<'i>, node: &Node<'i>) -> Option<Shape<'i>> {
    let name = key.name.to_string();
    let what = format!("shape \"{name}\"");
    let Item::Table(table) = &node.item else {
        r.wrong_type(node, &what, "a table");
        return None;
    };
    // Reports the unknown keys once, here, not at every stamp.
    let _ = Fields::new(r, node, super::reader::What::named("shape", &name), SHAPE_KEYS.as_slice());
    let mut shape = Shape {
        name: name.clone(),
        at: r.loc(key.span()),
        required: BTreeSet::new(),
        defaults: BTreeMap::new(),
        body: Tree::default(),
        broken: false,
    };
    let mut spans: BTreeMap<String, Range<usize>> = BTreeMap::new();
    if let Some(list) = table.get("parameters") {
        parameters(r, list, &what, &mut shape, &mut spans);
    }
    if let Some(defaults) = table.get("defaults") {
        match &defaults.item {
            Item::Table(t) => {
                for (k, v) in t.iter() {
                    spans.insert(k.name.to_string(), k.span());
                    shape.defaults.insert(k.name.to_string(), v.clone());
                }
            }
            _ => r.wrong_type(defaults, format!("`defaults` of {what}"), "a table of values by parameter"),
        }
    }
    let body: Vec<(Key<'i>, Node<'i>)> = table
        .iter()
        .filter(|(k, _)| SHAPE_BODY_KEYS.contains(&k.name.as_ref()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    shape.body = Tree::from_entries(body);
    shape.broken = !check_placeholders(r, &shape, &spans);
    Some(shape)
}

/// `parameters = ["name", ...]`: the parameters a stamp must give.
fn parameters(r: &mut Reader, list: &Node, what: &str, shape: &mut Shape, spans: &mut BTreeMap<String, Range<usize>>) {
    let Item::Array(items) = &list.item else {
        r.wrong_type(list, format!("`parameters` of {what}"), "an array of parameter names");
        return;
    };
    for item in items {
        match &item.item {
            Item::String(s) if is_parameter(s) => {
                spans.insert(s.to_string(), item.span());
                shape.required.insert(s.to_string());
            }
            Item::String(s) => r.report(
                Diagnostic::error("bad-value", format!("\"{s}\" is not a parameter name"))
                    .at(r.loc(item.span()))
                    .label("here")
                    .help("name a parameter with ASCII letters, digits, '_' and '-'"),
            ),
            _ => r.wrong_type(item, format!("a parameter of {what}"), "a string"),
        }
    }
}

fn is_parameter(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Every placeholder of the body names a parameter, and every parameter is
/// used by one; a default is also a parameter the stamps may leave out.
/// False when a placeholder is wrong.
fn check_placeholders(r: &mut Reader, shape: &Shape, spans: &BTreeMap<String, Range<usize>>) -> bool {
    let mut used = BTreeSet::new();
    let mut ok = true;
    let mut unknown: Vec<(String, Range<usize>)> = Vec::new();
    walk_strings(&shape.body, &mut |text, span| match placeholders(text) {
        Ok(names) => {
            for name in names {
                if shape.has(&name) {
                    used.insert(name);
                } else {
                    unknown.push((name, span.clone()));
                }
            }
        }
        Err(e) => {
            ok = false;
            r.report(
                Diagnostic::error("placeholder", format!("{e} in shape \"{}\"", shape.name))
                    .at(r.loc(span.clone()))
                    .label("here")
                    .help("write a parameter as `${name}`; `$${` writes a literal `${`"),
            )
        }
    });
    ok &= unknown.is_empty();
    for (name, span) in unknown {
        let d = Diagnostic::error(
            "unknown-placeholder",
            format!("`${{{name}}}` names no parameter of shape \"{}\"", shape.name),
        )
        .at(r.loc(span))
        .label("no such parameter");
        let d = match did_you_mean(&name, shape.parameters()) {
            Some(close) => d.help(format!("did you mean `${{{close}}}`?")),
            None => d.help(format!("add \"{name}\" to the shape's `parameters` (or to its `defaults`); see {DOCS}")),
        };
        r.report(d);
    }
    for (name, span) in spans {
        if !used.contains(name) {
            let d = Diagnostic::error(
                "unused-parameter",
                format!("parameter \"{name}\" of shape \"{}\" is used nowhere in it", shape.name),
            )
            .at(r.loc(span.clone()))
            .label("never written as `${...}`")
            .help(format!("use it as `${{{name}}}` in a name or a value of the shape, or remove it"));
            r.report(d);
        }
    }
    ok
}

/// Calls `f` on every key and string value of `tree`, with its span.
pub(super) fn walk_strings(tree: &Tree, f: &mut dyn FnMut(&str, &Range<usize>)) {
    for (key, node) in tree.iter() {
        f(&key.name, &key.span);
        walk_node(node, f);
    }
}

fn walk_node(node: &Node, f: &mut dyn FnMut(&str, &Range<usize>)) {
    match &node.item {
        Item::String(s) => f(s, &node.span),
        Item::Array(items) => items.iter().for_each(|n| walk_node(n, f)),
        Item::Table(t) => walk_strings(t, f),
        _ => {}
    }
}

/// The parameters named in `text` (`${name}`), in order; `$${` is a
/// literal `${`.
pub(super) fn placeholders(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    pieces(text, &mut |piece| {
        if let Piece::Parameter(name) = piece {
            out.push(name.to_string());
        }
    })?;
    Ok(out)
}

/// A part of a string with placeholders.
pub(super) enum Piece<'a> {
    Text(&'a str),
    Parameter(&'a str),
}

/// Splits `text` into text and placeholders, in order.
pub(super) fn pieces<'a>(text: &'a str, f: &mut dyn FnMut(Piece<'a>)) -> Result<(), String> {
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        if rest[..i].ends_with('$') {
            // `$${`: the `$` escapes, and `${` is text.
            f(Piece::Text(&rest[..i - 1]));
            f(Piece::Text("${"));
            rest = &rest[i + 2..];
            continue;
        }
        f(Piece::Text(&rest[..i]));
        let after = &rest[i + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("`${{` without its `}}` in \"{text}\""));
        };
        let name = &after[..end];
        if !is_parameter(name) {
            return Err(format!("`${{{name}}}` is not a parameter name"));
        }
        f(Piece::Parameter(name));
        rest = &after[end + 1..];
    }
    f(Piece::Text(rest));
    Ok(())
}

/// `text` with its placeholders replaced by their values (strings as
/// they are, numbers and booleans as written); the name of a value that
/// cannot be written in a string (an array, a table) is the error.
pub(super) fn fill<'i>(text: &str, values: &BTreeMap<String, Node<'i>>) -> Result<Cow<'i, str>, String> {
    let mut out = String::new();
    let mut problem = None;
    pieces(text, &mut |piece| match piece {
        Piece::Text(t) => out.push_str(t),
        Piece::Parameter(name) => match values.get(name).map(|n| &n.item) {
            Some(Item::String(s)) => out.push_str(s),
            Some(Item::Integer(i)) => out.push_str(i.as_str()),
            Some(Item::Float(x)) => out.push_str(x.as_str()),
            Some(Item::Boolean(b)) => out.push_str(if *b { "true" } else { "false" }),
            // Checked with the shape: only a parameter's value can be missing here.
            None => problem = Some(name.to_string()),
            Some(_) => problem = Some(name.to_string()),
        },
    })?;
    match problem {
        Some(name) => Err(name),
        None => Ok(Cow::Owned(out)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_found_and_escaped() {
        assert_eq!(placeholders("${name}.dead").unwrap(), vec!["name"]);
        assert_eq!(placeholders("a $${b} ${c}").unwrap(), vec!["c"]);
        assert!(placeholders("${name").is_err());
        assert!(placeholders("${a b}").is_err());
        assert_eq!(placeholders("^orders\\.{2}$").unwrap(), Vec::<String>::new());
    }
}
