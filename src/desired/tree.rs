//! A topology file as the walker reads it, from the toml crate's parsed
//! document ([`Tree::from_toml`]): tables keep their keys in file order,
//! and every key and value keeps its byte range, with the names the walker
//! matches on in one place.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use toml::Spanned;
use toml::de::{DeFloat, DeInteger, DeTable, DeValue};

/// A key and where it is written.
#[derive(Clone)]
pub(crate) struct Key<'i> {
    pub span: Range<usize>,
    pub name: Cow<'i, str>,
}

impl Key<'_> {
    pub(crate) fn span(&self) -> Range<usize> {
        self.span.clone()
    }
}

/// A value and where it is written.
#[derive(Clone)]
pub(crate) struct Node<'i> {
    pub span: Range<usize>,
    pub item: Item<'i>,
}

impl Node<'_> {
    pub(crate) fn span(&self) -> Range<usize> {
        self.span.clone()
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Item<'i> {
    String(Cow<'i, str>),
    /// As written: the walker says when one does not fit in 64 bits.
    Integer(DeInteger<'i>),
    Float(DeFloat<'i>),
    Boolean(bool),
    /// Never valid in a topology file: only its kind is reported.
    Datetime,
    Array(Vec<Node<'i>>),
    Table(Tree<'i>),
}

/// A TOML table: entries in file order, each name once.
#[derive(Clone, Default)]
pub(crate) struct Tree<'i> {
    entries: Vec<(Key<'i>, Node<'i>)>,
}

impl<'i> Tree<'i> {
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Key<'i>, &Node<'i>)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    pub(crate) fn keys(&self) -> impl Iterator<Item = &Key<'i>> {
        self.entries.iter().map(|(k, _)| k)
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Node<'i>> {
        self.position(name).map(|i| &self.entries[i].1)
    }

    /// Where `name` is among the entries.
    fn position(&self, name: &str) -> Option<usize> {
        self.entries.iter().position(|(k, _)| k.name == name)
    }

    /// A copy without the entry `name`, and that entry.
    pub(crate) fn without(&self, name: &str) -> (Tree<'i>, Option<Node<'i>>) {
        let mut rest = self.clone();
        let taken = rest.position(name).map(|i| rest.entries.remove(i).1);
        (rest, taken)
    }

    /// A table of these entries, in this order (names unique).
    pub(crate) fn from_entries(entries: Vec<(Key<'i>, Node<'i>)>) -> Self {
        Tree { entries }
    }

    /// The toml crate's table.
    pub(crate) fn from_toml(table: DeTable<'i>) -> Self {
        let entries = table.into_iter().map(|(k, v)| (Key { span: k.span(), name: k.into_inner() }, node(v))).collect();
        Tree { entries }
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
        DeValue::Table(t) => Item::Table(Tree::from_toml(t)),
    };
    Node { span, item }
}

// Every key, value and range in order, for test failures.
impl fmt::Debug for Tree<'_> {
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
