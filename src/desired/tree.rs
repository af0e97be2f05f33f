//! A topology file as the walker reads it: tables keep their keys in file
//! order, and every key and value keeps its byte range. The quick reader
//! ([`super::fast_toml`]) builds one straight from the text; any other file
//! is read by the toml crate and converted ([`Table::from_toml`]).
//!
//! Lighter than the toml crate's table: an object's table is a short list,
//! found by comparing keys, and only a large table is hashed.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use rustc_hash::FxHashMap;
use toml::Spanned;
use toml::de::{DeFloat, DeInteger, DeTable, DeValue};

/// A table with this many entries is indexed by name as it is built.
const INDEXED: usize = 16;

/// A key and where it is written.
#[derive(Clone)]
pub struct Key<'i> {
    pub span: Range<usize>,
    pub name: Cow<'i, str>,
}

impl Key<'_> {
    pub fn span(&self) -> Range<usize> {
        self.span.clone()
    }
}

/// A value and where it is written.
#[derive(Clone)]
pub struct Node<'i> {
    pub span: Range<usize>,
    pub item: Item<'i>,
}

impl Node<'_> {
    pub fn span(&self) -> Range<usize> {
        self.span.clone()
    }
}

#[derive(Debug, Clone)]
pub enum Item<'i> {
    String(Cow<'i, str>),
    /// As written: the walker says when one does not fit in 64 bits.
    Integer(DeInteger<'i>),
    Float(DeFloat<'i>),
    Boolean(bool),
    /// Never valid in a topology file: only its kind is reported.
    Datetime,
    Array(Vec<Node<'i>>),
    Table(Table<'i>),
}

/// Entries in file order, each name once.
#[derive(Clone, Default)]
pub struct Table<'i> {
    entries: Vec<(Key<'i>, Node<'i>)>,
    /// Name to entry, for a large table the quick reader builds: finding a
    /// repeated name among 10,000 queues must not take a scan each.
    index: Option<Box<FxHashMap<&'i str, usize>>>,
}

impl<'i> Table<'i> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Key<'i>, &Node<'i>)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &Key<'i>> {
        self.entries.iter().map(|(k, _)| k)
    }

    pub fn get(&self, name: &str) -> Option<&Node<'i>> {
        self.position(name).map(|i| &self.entries[i].1)
    }

    /// Where `name` is among the entries.
    pub(super) fn position(&self, name: &str) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(name).copied(),
            None => self.entries.iter().position(|(k, _)| k.name == name),
        }
    }

    pub(super) fn at_mut(&mut self, i: usize) -> &mut Node<'i> {
        &mut self.entries[i].1
    }

    /// Adds an entry whose name the table does not have yet ([`Self::position`]).
    /// `None` when the table is large enough to be indexed and the name is
    /// not a slice of the text (it had escapes): the index borrows names.
    pub(super) fn push(&mut self, key: Key<'i>, node: Node<'i>) -> Option<()> {
        let at = self.entries.len();
        if let Some(index) = &mut self.index {
            index.insert(borrowed(&key.name)?, at);
        } else if at + 1 == INDEXED {
            let mut index = FxHashMap::default();
            index.reserve(INDEXED * 2);
            for (i, (k, _)) in self.entries.iter().enumerate() {
                index.insert(borrowed(&k.name)?, i);
            }
            index.insert(borrowed(&key.name)?, at);
            self.index = Some(Box::new(index));
        }
        self.entries.push((key, node));
        Some(())
    }

    /// The toml crate's table, for a file the quick reader left to it.
    pub fn from_toml(table: DeTable<'i>) -> Self {
        let entries = table.into_iter().map(|(k, v)| (Key { span: k.span(), name: k.into_inner() }, node(v))).collect();
        Table { entries, index: None }
    }
}

fn borrowed<'i>(name: &Cow<'i, str>) -> Option<&'i str> {
    match name {
        Cow::Borrowed(s) => Some(s),
        Cow::Owned(_) => None,
    }
}

fn node(value: Spanned<DeValue<'_>>) -> Node<'_> {
    let span = value.span();
    let item = match value.into_inner() {
        DeValue::String(s) => Item::String(s),
        DeValue::Integer(i) => Item::Integer(i),
        DeValue::Float(f) => Item::Float(f),
        DeValue::Boolean(b) => Item::Boolean(b),
        DeValue::Datetime(_) => Item::Datetime,
        DeValue::Array(items) => Item::Array(items.into_iter().map(node).collect()),
        DeValue::Table(t) => Item::Table(Table::from_toml(t)),
    };
    Node { span, item }
}

// Every key, value and range in order: the tests compare the quick reader
// with the toml crate through this.
impl fmt::Debug for Table<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl fmt::Debug for Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} @ {:?}", self.name, self.span)
    }
}

impl fmt::Debug for Node<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@ {:?} ", self.span)?;
        self.item.fmt(f)
    }
}
