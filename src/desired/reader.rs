//! Walks a parsed TOML table by hand, so that every value keeps its span and
//! every problem in a file is reported in one run, not just the first.

use std::fmt;
use std::ops::Range;

use super::tree::{Item, Node, Tree};
use crate::diagnostic::Diagnostic;
pub(super) use crate::diagnostic::did_you_mean;
use crate::model::kinds::Type;
use crate::model::{Table, Value};
use crate::source::{FileId, Location};

/// Collects the diagnostics of one file.
pub(super) struct Reader<'d> {
    pub file: FileId,
    pub diagnostics: &'d mut Vec<Diagnostic>,
}

impl Reader<'_> {
    pub(super) fn loc(&self, span: Range<usize>) -> Location {
        Location { file: self.file, span }
    }

    pub(super) fn report(&mut self, d: Diagnostic) {
        self.diagnostics.push(d);
    }

    /// Reports that `node` is not of the `expected` kind.
    pub(super) fn wrong_type(&mut self, node: &Node, what: impl fmt::Display, expected: &str) {
        let found = kind_of(&node.item);
        let d = Diagnostic::error("wrong-type", format!("{what} must be {expected}, not {found}"))
            .at(self.loc(node.span()))
            .label(format!("this is {found}"))
            .help(format!("write {what} as {expected}"));
        self.report(d);
    }

    /// The value of `node` as a RabbitMQ value, or a diagnostic.
    /// `what` names the value in messages; it is written only for one.
    pub(super) fn value(&mut self, node: &Node, what: &dyn fmt::Display) -> Option<Value> {
        Some(match &node.item {
            Item::String(s) => Value::String(s.to_string()),
            Item::Integer(i) => match i64::from_str_radix(i.as_str(), i.radix()) {
                Ok(v) => Value::Int(v),
                Err(_) => {
                    let d = Diagnostic::error("bad-value", format!("{what} does not fit in a 64-bit integer"))
                        .at(self.loc(node.span()))
                        .help("use a smaller number");
                    self.report(d);
                    return None;
                }
            },
            // `1000.0` means 1000, as it does in a definitions export.
            Item::Float(f) => Value::Float(f.as_str().parse().unwrap_or(f64::NAN)).normalised(),
            Item::Boolean(b) => Value::Bool(*b),
            Item::Datetime => {
                self.wrong_type(node, what, "a string, number, boolean, array or table");
                return None;
            }
            Item::Array(items) => {
                let mut out = Vec::new();
                for item in items {
                    out.push(self.value(item, what)?);
                }
                Value::List(out)
            }
            Item::Table(t) => Value::Table(self.table_values(t, what)?),
        })
    }

    /// A table of arbitrary values (arguments, policy definitions).
    pub(super) fn table_values(&mut self, table: &Tree, what: &dyn fmt::Display) -> Option<Table> {
        // Room for exactly its entries (keys of a TOML table are unique).
        let mut out = Table::with_capacity(table.len());
        let mut ok = true;
        for (k, v) in table.iter() {
            match self.value(v, &Keyed(what, &k.name)) {
                Some(value) => {
                    out.insert(k.name.to_string(), value);
                }
                None => ok = false,
            }
        }
        ok.then_some(out)
    }
}

/// `what "key"`: an entry of a table, named only when a message needs it.
struct Keyed<'a>(&'a dyn fmt::Display, &'a str);

impl fmt::Display for Keyed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} \"{}\"", self.0, self.1)
    }
}

/// `` `key` of what ``, written only when a message needs it.
pub(super) struct Label<'a>(&'a str, What<'a>);

impl fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` of {}", self.0, self.1)
    }
}

/// How a user reads the kind of a TOML value.
pub(super) fn kind_of(v: &Item) -> &'static str {
    match v {
        Item::String(_) => "a string",
        Item::Integer(_) => "an integer",
        Item::Float(_) => "a float",
        Item::Boolean(_) => "a boolean",
        Item::Datetime => "a date-time",
        Item::Array(_) => "an array",
        Item::Table(_) => "a table",
    }
}

/// How messages name what a table declares: `queue "orders"`, `the file`.
/// Written only when a message needs it.
#[derive(Clone, Copy)]
pub(super) struct What<'a> {
    kind: &'a str,
    name: Option<&'a str>,
}

impl<'a> What<'a> {
    /// `kind "name"`.
    pub(super) fn named(kind: &'a str, name: &'a str) -> Self {
        What { kind, name: Some(name) }
    }

    /// `text`, as it is: an object named by several values.
    pub(super) fn said(text: &'a str) -> Self {
        What { kind: text, name: None }
    }
}

impl From<&'static str> for What<'_> {
    fn from(kind: &'static str) -> Self {
        What { kind, name: None }
    }
}

impl fmt::Display for What<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name {
            Some(name) => write!(f, "{} \"{name}\"", self.kind),
            None => f.write_str(self.kind),
        }
    }
}

/// One TOML table read as an object with a fixed set of keys.
pub(super) struct Fields<'t, 'i> {
    pub table: &'t Tree<'i>,
    /// How messages name the object.
    pub what: What<'t>,
    known: &'static [&'static str],
}

impl<'t, 'i> Fields<'t, 'i> {
    /// Reads `node` as a table with the `known` keys, reporting every other key.
    pub(super) fn new(
        r: &mut Reader,
        node: &'t Node<'i>,
        what: impl Into<What<'t>>,
        known: &'static [&'static str],
    ) -> Option<Self> {
        let what = what.into();
        match &node.item {
            Item::Table(table) => {
                let fields = Fields { table, what, known };
                fields.report_unknown(r);
                Some(fields)
            }
            _ => {
                r.wrong_type(node, what, "a table");
                None
            }
        }
    }

    fn report_unknown(&self, r: &mut Reader) {
        for key in self.table.keys() {
            let name = key.name.as_ref();
            if self.known.contains(&name) {
                continue;
            }
            let mut d = Diagnostic::error("unknown-key", format!("unknown key `{name}` in {}", self.what))
                .at(r.loc(key.span()))
                .label("not a key warren knows here");
            d = match did_you_mean(name, self.known.iter().copied()) {
                Some(s) => d.help(format!("did you mean `{s}`?")),
                None => d.help(format!("the keys of {} are: {}", self.what, self.known.join(", "))),
            };
            r.report(d);
        }
    }

    /// `name` as one of the keys this object may have.
    pub(super) fn known_key(&self, name: &str) -> Option<&'static str> {
        self.known.iter().copied().find(|k| *k == name)
    }

    pub(super) fn get(&self, key: &str) -> Option<&'t Node<'i>> {
        self.table.get(key)
    }

    /// The span of `key`'s value, for pointing diagnostics at it.
    pub(super) fn span(&self, key: &str) -> Option<Range<usize>> {
        self.get(key).map(|n| n.span())
    }

    fn label<'a>(&'a self, key: &'a str) -> Label<'a> {
        Label(key, self.what)
    }

    pub(super) fn string(&self, r: &mut Reader, key: &str) -> Option<String> {
        let node = self.get(key)?;
        match &node.item {
            Item::String(s) => Some(s.to_string()),
            _ => {
                r.wrong_type(node, self.label(key), "a string");
                None
            }
        }
    }

    /// A required string: reports a missing key at `at`.
    pub(super) fn required_string(&self, r: &mut Reader, key: &str, at: Range<usize>, example: &str) -> Option<String> {
        if self.get(key).is_none() {
            let d = Diagnostic::error("missing-key", format!("{} has no `{key}`", self.what))
                .at(r.loc(at))
                .label(format!("`{key}` is required here"))
                .help(format!("add `{key} = {example}`"));
            r.report(d);
            return None;
        }
        self.string(r, key)
    }

    pub(super) fn bool(&self, r: &mut Reader, key: &str) -> Option<bool> {
        let node = self.get(key)?;
        match &node.item {
            Item::Boolean(b) => Some(*b),
            _ => {
                r.wrong_type(node, self.label(key), "true or false");
                None
            }
        }
    }

    pub(super) fn int(&self, r: &mut Reader, key: &str) -> Option<i64> {
        let node = self.get(key)?;
        match r.value(node, &self.label(key)) {
            Some(Value::Int(i)) => Some(i),
            Some(_) => {
                r.wrong_type(node, self.label(key), "an integer");
                None
            }
            None => None,
        }
    }

    pub(super) fn table(&self, r: &mut Reader, key: &str) -> Option<&'t Tree<'i>> {
        let node = self.get(key)?;
        match &node.item {
            Item::Table(t) => Some(t),
            _ => {
                r.wrong_type(node, self.label(key), "a table");
                None
            }
        }
    }

    /// A table of arbitrary values; absent means empty.
    pub(super) fn values(&self, r: &mut Reader, key: &str) -> Option<Table> {
        match self.get(key) {
            None => Some(Table::new()),
            Some(_) => {
                let t = self.table(r, key)?;
                r.table_values(t, &self.label(key))
            }
        }
    }

    /// The value of an attribute of a kind (`model::kinds`), of type `ty`;
    /// `None` when absent or reported.
    pub(super) fn typed(&self, r: &mut Reader, key: &str, ty: Type) -> Option<Value> {
        let node = self.get(key)?;
        if ty == Type::Table {
            // Read as the old kinds read their tables (a policy's `definition`).
            return self.values(r, key).map(Value::Table);
        }
        let value = match (&node.item, ty) {
            (Item::String(s), Type::String | Type::OneOf(_) | Type::OneOfOrInteger(_)) => Value::String(s.to_string()),
            (Item::Integer(_), Type::OneOfOrInteger(_)) => r.value(node, &self.label(key))?,
            (Item::String(_) | Item::Table(_) | Item::Array(_), Type::Uris) => {
                return self.uris(r, node, key);
            }
            (Item::Boolean(b), Type::Boolean) => Value::Bool(*b),
            (_, Type::Any) => r.value(node, &self.label(key))?,
            (Item::Integer(_) | Item::Float(_), Type::Integer) => match r.value(node, &self.label(key))? {
                Value::Int(i) => Value::Int(i),
                _ => return self.wrong(r, node, key, ty),
            },
            (Item::Array(items), Type::Strings) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    match &item.item {
                        Item::String(s) => out.push(Value::String(s.to_string())),
                        _ => {
                            r.wrong_type(item, format_args!("each item of {}", self.label(key)), "a string");
                            return None;
                        }
                    }
                }
                Value::List(out)
            }
            _ => return self.wrong(r, node, key, ty),
        };
        if let (Type::OneOf(words) | Type::OneOfOrInteger(words), Value::String(s)) = (ty, &value)
            && !words.contains(&s.as_str())
        {
            let help = match did_you_mean(s, words.iter().copied()) {
                Some(w) => format!("did you mean \"{w}\"?"),
                None => format!("use {}", ty.describe()),
            };
            let d = Diagnostic::error("bad-value", format!("\"{s}\" is not a valid `{key}` of {}", self.what))
                .at(r.loc(node.span()))
                .help(help);
            r.report(d);
            return None;
        }
        Some(value)
    }

    /// A URI, `{ env = "VARIABLE" }`, or an array of them: the forms a
    /// value that may carry a credential takes.
    fn uris(&self, r: &mut Reader, node: &Node, key: &str) -> Option<Value> {
        let one = |r: &mut Reader, n: &Node| -> Option<Value> {
            match r.value(n, &self.label(key))? {
                v @ Value::String(_) => Some(v),
                v if crate::model::kinds::env_var(&v).is_some() => Some(v),
                _ => {
                    r.wrong_type(n, self.label(key), "a URI or `{ env = \"VARIABLE\" }`");
                    None
                }
            }
        };
        match &node.item {
            Item::Array(items) => items.iter().map(|i| one(r, i)).collect::<Option<Vec<_>>>().map(Value::List),
            _ => one(r, node),
        }
    }

    fn wrong(&self, r: &mut Reader, node: &Node, key: &str, ty: Type) -> Option<Value> {
        r.wrong_type(node, self.label(key), &ty.describe());
        None
    }

    /// An array of strings, each with its span.
    pub(super) fn strings(&self, r: &mut Reader, key: &str) -> Option<Vec<(String, Range<usize>)>> {
        let node = self.get(key)?;
        let Item::Array(items) = &node.item else {
            r.wrong_type(node, self.label(key), "an array of strings");
            return None;
        };
        let mut out = Vec::new();
        for item in items {
            match &item.item {
                Item::String(s) => out.push((s.to_string(), item.span())),
                _ => r.wrong_type(item, format_args!("each item of {}", self.label(key)), "a string"),
            }
        }
        Some(out)
    }
}
