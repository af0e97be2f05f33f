//! Stamps: a shape used with values (`[[stamps]]`), once or `for_each`
//! entry of a list. Each use becomes a body of ordinary tables under a
//! file id of its own (`Sources::add_stamped`), so that every place in it
//! is the shape's line and knows the stamp's.

use std::collections::BTreeMap;
use std::ops::Range;

use super::reader::did_you_mean;
use super::shapes::{DOCS, Shape, Shapes, fill};
use super::tree::{Item, Key, Node, Tree};
use crate::diagnostic::Diagnostic;
use crate::source::{FileId, Location, Sources, Stamp};

/// The keys of a stamp that are not parameters.
const STAMP_KEYS: &[&str] = &["shape", "for_each"];

/// What one use of a shape made: its body with the values filled in.
pub(super) struct Made<'i> {
    /// The file (index among those read) whose stamp it is, at the root:
    /// its vhosts are the objects'.
    pub root: usize,
    /// The id its places are under.
    pub file: FileId,
    pub body: Node<'i>,
}

/// Values of parameters, by name.
type Values<'i> = BTreeMap<String, Node<'i>>;

/// Expands stamps, depth first through the shapes that stamp others.
pub(super) struct Stamper<'s, 'i> {
    pub shapes: &'s Shapes<'i>,
    pub sources: &'s mut Sources,
    pub diagnostics: &'s mut Vec<Diagnostic>,
    pub made: Vec<Made<'i>>,
    /// The shapes being stamped, outermost first: a cycle's path.
    stack: Vec<String>,
}

impl<'s, 'i> Stamper<'s, 'i> {
    pub(super) fn new(shapes: &'s Shapes<'i>, sources: &'s mut Sources, diagnostics: &'s mut Vec<Diagnostic>) -> Self {
        Stamper { shapes, sources, diagnostics, made: Vec::new(), stack: Vec::new() }
    }

    fn error(&mut self, file: FileId, span: Range<usize>, d: Diagnostic) {
        self.diagnostics.push(d.at(Location { file, span }));
    }

    /// The stamps of `node` (a `stamps` array) written in `file`; `outer`
    /// holds the values of the shape they are in, if they are in one.
    pub(super) fn stamps(&mut self, root: usize, file: FileId, node: &Node<'i>, outer: Option<&Values<'i>>) {
        let Item::Array(items) = &node.item else {
            let d = Diagnostic::error("wrong-type", "`stamps` must be an array of tables ([[stamps]])")
                .label("here")
                .help(format!("write each use of a shape as a [[stamps]] table; see {DOCS}"));
            return self.error(file, node.span(), d);
        };
        for item in items {
            self.stamp(root, file, item, outer);
        }
    }

    /// One stamp: its shape, its values, and a body for each of its uses.
    fn stamp(&mut self, root: usize, file: FileId, node: &Node<'i>, outer: Option<&Values<'i>>) {
        let Item::Table(table) = &node.item else {
            let d = Diagnostic::error("wrong-type", "a stamp must be a table")
                .label("here")
                .help("write `{ shape = \"NAME\", PARAMETER = VALUE, ... }`");
            return self.error(file, node.span(), d);
        };
        let Some((name, at)) = self.shape_named(file, node, table, outer) else { return };
        let Some(shape) = self.shapes.get(&name) else { return };
        if self.stack.contains(&name) {
            let path = [self.stack.as_slice(), std::slice::from_ref(&name)].concat().join("\" → \"");
            let d = Diagnostic::error("shape-cycle", format!("shape \"{name}\" stamps itself: \"{path}\""))
                .label("stamped again here")
                .help("a shape may stamp other shapes, never one that leads back to itself: remove this stamp");
            return self.error(file, at, d);
        }
        let mut given = Values::new();
        for (key, value) in table.iter() {
            let k = key.name.as_ref();
            if STAMP_KEYS.contains(&k) {
                continue;
            }
            if !shape.has(k) {
                self.unknown_parameter(file, key, shape);
                continue;
            }
            if let Some(v) = self.filled(file, value, outer) {
                given.insert(k.to_string(), v);
            }
        }
        let uses = match table.get("for_each") {
            Some(each) => self.for_each(file, each, shape, outer),
            None => vec![(node.span(), Values::new())],
        };
        // A value given beside `for_each` and in it would leave one of the
        // two unused without a word: which one the user meant is theirs to say.
        let twice: Vec<&Key<'i>> = table
            .iter()
            .map(|(key, _)| key)
            .filter(|key| given.contains_key(key.name.as_ref()))
            .filter(|key| uses.iter().any(|(_, each)| each.contains_key(key.name.as_ref())))
            .collect();
        for key in &twice {
            let d = Diagnostic::error(
                "duplicate-parameter",
                format!("parameter \"{}\" is given both here and in the stamp's `for_each`", key.name),
            )
            .label("given twice")
            .help("give it once: here, for every use of the shape, or in `for_each`, for each use");
            self.error(file, key.span(), d);
        }
        if !twice.is_empty() {
            return;
        }
        let mut missing_said = false;
        for (span, each) in uses {
            let mut values = shape.defaults.clone();
            values.extend(given.clone());
            values.extend(each);
            let missing: Vec<&str> =
                shape.required.iter().map(String::as_str).filter(|p| !values.contains_key(*p)).collect();
            if !missing.is_empty() {
                if !missing_said {
                    self.missing(file, at.clone(), &name, &missing);
                    missing_said = true;
                }
                continue;
            }
            self.make(root, Location { file, span }, shape, &values);
        }
    }

    /// The name of the shape a stamp uses, when that shape exists; and the
    /// place of the name.
    fn shape_named(
        &mut self,
        file: FileId,
        node: &Node<'i>,
        table: &Tree<'i>,
        outer: Option<&Values<'i>>,
    ) -> Option<(String, Range<usize>)> {
        let Some(value) = table.get("shape") else {
            let d = Diagnostic::error("missing-key", "this stamp does not say which shape it uses")
                .label("no `shape`")
                .help("add `shape = \"NAME\"`, the name of a [shapes.NAME] table");
            self.error(file, node.span(), d);
            return None;
        };
        let Item::String(_) = &value.item else {
            let d = Diagnostic::error("wrong-type", "`shape` of a stamp must be a string")
                .label("here")
                .help("write the shape's name as a string");
            self.error(file, value.span(), d);
            return None;
        };
        let name = match self.filled(file, value, outer)?.item {
            Item::String(s) => s.to_string(),
            _ => return None,
        };
        if !self.shapes.contains_key(&name) {
            let d = Diagnostic::error("unknown-shape", format!("no shape is named \"{name}\"")).label("unknown shape");
            let d = match did_you_mean(&name, self.shapes.keys().map(String::as_str)) {
                Some(close) => d.help(format!("did you mean \"{close}\"?")),
                None => d.help(format!(
                    "define it as [shapes.{name}] in a topology file or in a shapes directory that warren.toml names; see {DOCS}"
                )),
            };
            self.error(file, value.span(), d);
            return None;
        }
        Some((name, value.span()))
    }

    fn unknown_parameter(&mut self, file: FileId, key: &Key<'i>, shape: &Shape) {
        let d = Diagnostic::error(
            "unknown-parameter",
            format!("shape \"{}\" has no parameter \"{}\"", shape.name, key.name),
        )
        .label("unknown parameter");
        let d = match did_you_mean(&key.name, shape.parameters()) {
            Some(close) => d.help(format!("did you mean `{close}`?")),
            None => {
                let all: Vec<String> = shape.parameters().map(|p| format!("`{p}`")).collect();
                let all = if all.is_empty() { "none".to_string() } else { all.join(", ") };
                d.help(format!("its parameters are {all}"))
            }
        };
        self.error(file, key.span(), d);
    }

    fn missing(&mut self, file: FileId, at: Range<usize>, name: &str, missing: &[&str]) {
        let list: Vec<String> = missing.iter().map(|p| format!("\"{p}\"")).collect();
        let d = Diagnostic::error(
            "missing-parameter",
            format!("this stamp of shape \"{name}\" does not give parameter {}", list.join(", ")),
        )
        .label("stamped here")
        .help(format!(
            "add {} to the stamp (or to its `for_each`)",
            missing.iter().map(|p| format!("`{p} = ...`")).collect::<Vec<_>>().join(", ")
        ));
        self.error(file, at, d);
    }

    /// The uses `for_each` asks for: a table of lists (every combination),
    /// or a list of tables; each with its place and its values.
    fn for_each(
        &mut self,
        file: FileId,
        each: &Node<'i>,
        shape: &Shape,
        outer: Option<&Values<'i>>,
    ) -> Vec<(Range<usize>, Values<'i>)> {
        let mut uses: Vec<(Range<usize>, Values<'i>)> = Vec::new();
        match &each.item {
            Item::Array(items) => {
                for item in items {
                    let Item::Table(t) = &item.item else {
                        let d = Diagnostic::error("wrong-type", "an entry of `for_each` must be a table of values")
                            .label("here")
                            .help("write `for_each = [{ region = \"eu\" }, ...]` or `for_each = { region = [\"eu\", ...] }`");
                        self.error(file, item.span(), d);
                        continue;
                    };
                    let values = self.values(file, t, shape, outer);
                    uses.push((item.span(), values));
                }
            }
            Item::Table(t) => uses = self.product(file, t, shape, outer),
            _ => {
                let d = Diagnostic::error("wrong-type", "`for_each` must be a table of lists or a list of tables")
                    .label("here")
                    .help("write `for_each = { region = [\"eu\", \"us\"] }`");
                self.error(file, each.span(), d);
            }
        }
        uses
    }

    /// `for_each = { a = [..], b = [..] }`: every combination of one value
    /// of each, placed at the value of the first key (the one that varies
    /// when there is one key).
    fn product(
        &mut self,
        file: FileId,
        t: &Tree<'i>,
        shape: &Shape,
        outer: Option<&Values<'i>>,
    ) -> Vec<(Range<usize>, Values<'i>)> {
        let mut uses: Vec<(Range<usize>, Values<'i>)> = vec![(0..0, Values::new())];
        for (key, list) in t.iter() {
            if !shape.has(&key.name) {
                self.unknown_parameter(file, key, shape);
                continue;
            }
            let Item::Array(items) = &list.item else {
                let d = Diagnostic::error("wrong-type", format!("`for_each.{}` must be a list of values", key.name))
                    .label("here")
                    .help(format!("write `{} = [\"a\", \"b\"]`", key.name));
                self.error(file, list.span(), d);
                continue;
            };
            let mut next = Vec::new();
            for (span, values) in &uses {
                for item in items {
                    let Some(v) = self.filled(file, item, outer) else { continue };
                    let mut values = values.clone();
                    values.insert(key.name.to_string(), v);
                    let span = if span.is_empty() { item.span() } else { span.clone() };
                    next.push((span, values));
                }
            }
            uses = next;
        }
        uses
    }

    /// A table of parameters' values.
    fn values(&mut self, file: FileId, t: &Tree<'i>, shape: &Shape, outer: Option<&Values<'i>>) -> Values<'i> {
        let mut values = Values::new();
        for (key, value) in t.iter() {
            if !shape.has(&key.name) {
                self.unknown_parameter(file, key, shape);
            } else if let Some(v) = self.filled(file, value, outer) {
                values.insert(key.name.to_string(), v);
            }
        }
        values
    }

    /// `node` with the values of the shape it is written in, if it is in one.
    fn filled(&mut self, file: FileId, node: &Node<'i>, outer: Option<&Values<'i>>) -> Option<Node<'i>> {
        match outer {
            None => Some(node.clone()),
            Some(values) => self.fill_node(file, node, values),
        }
    }

    /// One use of `shape` with `values`, stamped `at`.
    fn make(&mut self, root: usize, at: Location, shape: &Shape<'i>, values: &Values<'i>) {
        if shape.broken {
            return;
        }
        let stamp = Stamp { shape: shape.name.clone(), at, defined: shape.at.clone() };
        let file = self.sources.add_stamped(shape.at.file, stamp);
        let mut entries = Vec::new();
        let mut nested = None;
        for (key, node) in shape.body.iter() {
            if key.name == "stamps" {
                nested = Some(node);
                continue;
            }
            if let Some(node) = self.fill_node(file, node, values) {
                entries.push((key.clone(), node));
            }
        }
        self.made.push(Made {
            root,
            file,
            body: Node { span: shape.at.span.clone(), item: Item::Table(Tree::from_entries(entries)) },
        });
        if let Some(nested) = nested {
            self.stack.push(shape.name.clone());
            self.stamps(root, file, nested, Some(values));
            self.stack.pop();
        }
    }

    /// `node` with `values` in its keys and strings; a string that is one
    /// placeholder alone takes its value as it is (a number stays one).
    fn fill_node(&mut self, file: FileId, node: &Node<'i>, values: &Values<'i>) -> Option<Node<'i>> {
        let item = match &node.item {
            Item::String(s) => {
                if let Some(name) = s.strip_prefix("${").and_then(|r| r.strip_suffix('}'))
                    && let Some(value) = values.get(name)
                {
                    return Some(Node { span: node.span(), item: value.item.clone() });
                }
                Item::String(self.fill_text(file, s, &node.span, values)?)
            }
            Item::Array(items) => Item::Array(items.iter().filter_map(|n| self.fill_node(file, n, values)).collect()),
            Item::Table(t) => {
                let mut entries = Vec::new();
                for (key, value) in t.iter() {
                    let name = self.fill_text(file, &key.name, &key.span, values)?;
                    let value = self.fill_node(file, value, values)?;
                    entries.push((Key { span: key.span(), name }, value));
                }
                Item::Table(Tree::from_entries(entries))
            }
            other => other.clone(),
        };
        Some(Node { span: node.span(), item })
    }

    fn fill_text(
        &mut self,
        file: FileId,
        text: &str,
        span: &Range<usize>,
        values: &Values<'i>,
    ) -> Option<std::borrow::Cow<'i, str>> {
        if !text.contains("${") {
            return Some(std::borrow::Cow::Owned(text.to_string()));
        }
        match fill(text, values) {
            Ok(s) => Some(s),
            Err(name) => {
                let d =
                    Diagnostic::error("bad-value", format!("parameter \"{name}\" cannot be written inside a string"))
                        .label("here")
                        .help("give the parameter a string, a number or a boolean, or use it alone as the whole value");
                self.error(file, span.clone(), d);
                None
            }
        }
    }
}

/// A file read, as the expansion needs it: its id, its shapes and stamps,
/// and the vhosts its stamps' objects go to.
pub(super) struct Stamping<'a, 'i> {
    pub file: FileId,
    pub shapes: Option<&'a Node<'i>>,
    pub stamps: Option<&'a Node<'i>>,
    pub vhosts: Vec<(String, Location)>,
}

/// The objects every stamp of `files` makes, read as files of their own:
/// the shapes are those of `files` and of the shape files (`shapes`
/// directories of the project file: `shapes` tables alone).
pub(super) fn expand<'i>(
    files: &[Stamping<'_, 'i>],
    shape_files: &[(FileId, &'i str)],
    sources: &mut Sources,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<super::decl::FileDecl> {
    use rayon::prelude::*;
    let mut shapes = Shapes::new();
    let mut wholes = Vec::new();
    for (file, text) in shape_files {
        let mut r = super::reader::Reader { file: *file, diagnostics };
        if let Some(whole) = super::parse::document(&mut r, text) {
            wholes.push((*file, whole));
        }
    }
    for (file, whole) in &wholes {
        let mut r = super::reader::Reader { file: *file, diagnostics };
        let what = "a shapes file (a file of a `shapes` directory holds [shapes.NAME] tables alone)";
        let Some(top) = super::reader::Fields::new(&mut r, whole, super::reader::What::said(what), &["shapes"]) else {
            continue;
        };
        if let Some(node) = top.get("shapes") {
            super::shapes::define(*file, node, &mut shapes, sources, diagnostics);
        }
    }
    for f in files {
        if let Some(node) = f.shapes {
            super::shapes::define(f.file, node, &mut shapes, sources, diagnostics);
        }
    }
    let mut stamper = Stamper::new(&shapes, sources, diagnostics);
    for (root, f) in files.iter().enumerate() {
        if let Some(node) = f.stamps {
            stamper.stamps(root, f.file, node, None);
        }
    }
    let made = std::mem::take(&mut stamper.made);
    let read: Vec<(Option<super::decl::FileDecl>, Vec<Diagnostic>)> = made
        .par_iter()
        .map(|m| {
            let mut found = Vec::new();
            let decl = super::parse::parse_stamped(m.file, &m.body, files[m.root].vhosts.clone(), &mut found);
            (decl, found)
        })
        .collect();
    let mut decls = Vec::new();
    for (decl, found) in read {
        decls.extend(decl);
        diagnostics.extend(found);
    }
    decls
}
