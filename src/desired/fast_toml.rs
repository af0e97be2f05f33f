//! A quick reader for the plain TOML that topology files are made of:
//! `[table]` and `[[array]]` headers, dotted keys, basic and literal
//! one-line strings, decimal integers and floats, booleans, arrays, one-line
//! inline tables and comments. It gives exactly the tree that the toml
//! crate's table converts to ([`Table::from_toml`]), ranges included, and
//! `None` for anything else (dates, multi-line strings, redefined tables,
//! any error): the caller then reads the text with the toml crate, whose
//! diagnostics stay the only ones. The toml crate lexes every token into a
//! vector and replays it as events into hashed tables, which is most of the
//! time a large file takes.

use std::borrow::Cow;
use std::ops::Range;

use rustc_hash::FxHashMap;
use toml::de::DeValue;

use super::tree::{Item, Key, Node, Table};

/// Deeper nesting is left to the toml crate and its recursion limit.
const MAX_DEPTH: usize = 32;

/// A byte class as a table, so that a run of its bytes is found with one
/// lookup per byte.
macro_rules! byte_class {
    ($b:ident => $member:expr) => {{
        let mut table = [false; 256];
        let mut i = 0;
        while i < 256 {
            let $b = i as u8;
            table[i] = $member;
            i += 1;
        }
        table
    }};
}

/// Bytes that may stand in a bare key.
const BARE: [bool; 256] = byte_class!(b => b.is_ascii_alphanumeric() || b == b'_' || b == b'-');

/// Bytes that a one-line string holds as they are: not a quote, not a
/// backslash, not a control character other than tab.
const PLAIN: [bool; 256] = byte_class!(b => !matches!(b, b'"' | b'\\' | b'\'' | 0..=0x08 | 0x0a..=0x1f | 0x7f));

/// The length of the run of `class` bytes at the start of `bytes`.
fn run(bytes: &[u8], class: &[bool; 256]) -> usize {
    bytes.iter().position(|&b| !class[b as usize]).unwrap_or(bytes.len())
}

/// The document `text`, as the toml crate reads a valid one, or `None`.
pub fn parse(text: &str) -> Option<Table<'_>> {
    if text.starts_with('\u{feff}') {
        return None;
    }
    let mut doc = Doc {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        root: Table::new(),
        current: Table::new(),
        header: None,
        numbers: FxHashMap::default(),
        spare: Vec::new(),
    };
    doc.document()?;
    Some(doc.root)
}

/// A `[table]` or `[[array]]` header.
struct Header<'i> {
    path: Vec<Key<'i>>,
    key: Key<'i>,
    span: Range<usize>,
    array: bool,
}

struct Doc<'i> {
    text: &'i str,
    bytes: &'i [u8],
    pos: usize,
    root: Table<'i>,
    /// The table the lines since the last header fill.
    current: Table<'i>,
    header: Option<Header<'i>>,
    /// Numbers as the toml crate reads them, by their text: it alone can
    /// make them, and files repeat the same few many times.
    numbers: FxHashMap<&'i str, Item<'i>>,
    /// An emptied key path, kept for the next key so that a line costs no
    /// allocation.
    spare: Vec<Key<'i>>,
}

impl<'i> Doc<'i> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_spaces(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek() == Some(byte)).then(|| self.pos += 1)
    }

    fn document(&mut self) -> Option<()> {
        loop {
            self.skip_spaces();
            match self.peek() {
                None => break,
                Some(b'\n') => self.pos += 1,
                Some(b'\r') => self.newline()?,
                Some(b'#') => self.comment()?,
                Some(b'[') => {
                    self.finish_table()?;
                    self.header = Some(self.header_line()?);
                    self.end_of_line()?;
                }
                Some(_) => {
                    let (mut path, key) = self.keys()?;
                    self.skip_spaces();
                    self.eat(b'=')?;
                    self.skip_spaces();
                    let value = self.value(0)?;
                    insert(self.bytes, &mut self.current, &mut path, key, value)?;
                    self.spare = path;
                    self.end_of_line()?;
                }
            }
        }
        self.finish_table()
    }

    /// `\r\n`; a lone `\r` is not a line end.
    fn newline(&mut self) -> Option<()> {
        (self.bytes.get(self.pos..self.pos + 2) == Some(b"\r\n")).then(|| self.pos += 2)
    }

    /// A comment up to its line end, which is left for the caller. Control
    /// characters in one are an error to some TOML versions: left alone.
    fn comment(&mut self) -> Option<()> {
        self.pos += 1;
        while let Some(b) = self.peek() {
            match b {
                b'\n' => break,
                b'\r' => return (self.bytes.get(self.pos + 1) == Some(&b'\n')).then_some(()),
                b'\t' => {}
                0..0x20 | 0x7f => return None,
                _ => {}
            }
            self.pos += 1;
        }
        Some(())
    }

    /// Spaces and a comment, then the end of the line or of the file.
    fn end_of_line(&mut self) -> Option<()> {
        self.skip_spaces();
        if self.peek() == Some(b'#') {
            self.comment()?;
        }
        match self.peek() {
            None | Some(b'\n') => Some(()),
            Some(b'\r') => (self.bytes.get(self.pos + 1) == Some(&b'\n')).then_some(()),
            Some(_) => None,
        }
    }

    fn header_line(&mut self) -> Option<Header<'i>> {
        let start = self.pos;
        self.pos += 1;
        let array = self.eat(b'[').is_some();
        self.skip_spaces();
        let (path, key) = self.keys()?;
        self.skip_spaces();
        self.eat(b']')?;
        if array {
            self.eat(b']')?;
        }
        Some(Header { path, key, span: start..self.pos, array })
    }

    /// A key, dotted or not: the tables on its way, and its last part.
    fn keys(&mut self) -> Option<(Vec<Key<'i>>, Key<'i>)> {
        let mut path = std::mem::take(&mut self.spare);
        path.clear();
        let mut key = self.key()?;
        loop {
            let before = self.pos;
            self.skip_spaces();
            if self.eat(b'.').is_none() {
                self.pos = before;
                break;
            }
            self.skip_spaces();
            path.push(std::mem::replace(&mut key, self.key()?));
            if path.len() > MAX_DEPTH {
                return None;
            }
        }
        Some((path, key))
    }

    fn key(&mut self) -> Option<Key<'i>> {
        let start = self.pos;
        let name = match self.peek()? {
            b'"' => self.basic_string()?,
            b'\'' => self.literal_string()?,
            _ => {
                self.pos += run(&self.bytes[start..], &BARE);
                if self.pos == start {
                    return None;
                }
                Cow::Borrowed(&self.text[start..self.pos])
            }
        };
        Some(Key { span: start..self.pos, name })
    }

    fn value(&mut self, depth: usize) -> Option<Node<'i>> {
        if depth > MAX_DEPTH {
            return None;
        }
        let start = self.pos;
        let item = match self.peek()? {
            b'"' => Item::String(self.basic_string()?),
            b'\'' => Item::String(self.literal_string()?),
            b't' => self.word("true", Item::Boolean(true))?,
            b'f' => self.word("false", Item::Boolean(false))?,
            b'[' => self.array(depth)?,
            b'{' => self.inline_table(depth)?,
            b'0'..=b'9' | b'+' | b'-' => self.number()?,
            _ => return None,
        };
        Some(Node { span: start..self.pos, item })
    }

    fn word(&mut self, word: &str, value: Item<'i>) -> Option<Item<'i>> {
        self.text[self.pos..].starts_with(word).then(|| {
            self.pos += word.len();
            value
        })
    }

    /// An integer or float, made by the toml crate from its text; a date or
    /// time, or anything it does not read as a number, is left to it.
    fn number(&mut self) -> Option<Item<'i>> {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9' | b'A'..=b'Z' | b'a'..=b'z' | b'_' | b'+' | b'-' | b'.' | b':')) {
            self.pos += 1;
        }
        let token = &self.text[start..self.pos];
        if let Some(v) = self.numbers.get(token) {
            return Some(v.clone());
        }
        let item = match DeValue::parse(token).ok()?.into_inner() {
            DeValue::Integer(i) => Item::Integer(i),
            DeValue::Float(f) => Item::Float(f),
            _ => return None,
        };
        self.numbers.insert(token, item.clone());
        Some(item)
    }

    /// `[a, b, ]`, over lines and with comments.
    fn array(&mut self, depth: usize) -> Option<Item<'i>> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_blank()?;
            if self.eat(b']').is_some() {
                break;
            }
            items.push(self.value(depth + 1)?);
            self.skip_blank()?;
            if self.eat(b',').is_none() {
                self.eat(b']')?;
                break;
            }
        }
        Some(Item::Array(items))
    }

    /// Spaces, line ends and comments, as an array may have between items.
    fn skip_blank(&mut self) -> Option<()> {
        loop {
            self.skip_spaces();
            match self.peek() {
                Some(b'\n') => self.pos += 1,
                Some(b'\r') => self.newline()?,
                Some(b'#') => self.comment()?,
                _ => return Some(()),
            }
        }
    }

    /// `{ a = 1, b.c = "x" }` on one line, without a trailing comma (which
    /// only some TOML versions allow).
    fn inline_table(&mut self, depth: usize) -> Option<Item<'i>> {
        self.pos += 1;
        let mut table = Table::new();
        self.skip_spaces();
        if self.eat(b'}').is_some() {
            return Some(Item::Table(table));
        }
        loop {
            let (mut path, key) = self.keys()?;
            self.skip_spaces();
            self.eat(b'=')?;
            self.skip_spaces();
            let value = self.value(depth + 1)?;
            insert(self.bytes, &mut table, &mut path, key, value)?;
            self.spare = path;
            self.skip_spaces();
            if self.eat(b',').is_none() {
                self.eat(b'}')?;
                return Some(Item::Table(table));
            }
            self.skip_spaces();
        }
    }

    /// `'…'`, borrowed as it is; `'''` opens a multi-line string, left alone.
    fn literal_string(&mut self) -> Option<Cow<'i, str>> {
        let start = self.pos + 1;
        if self.bytes.get(start..start + 2) == Some(b"''") {
            return None;
        }
        let mut end = start;
        loop {
            end += run(self.bytes.get(end..)?, &PLAIN);
            match *self.bytes.get(end)? {
                b'\'' => break,
                b'\t' => {}
                0..0x20 | 0x7f => return None,
                _ => {}
            }
            end += 1;
        }
        self.pos = end + 1;
        Some(Cow::Borrowed(&self.text[start..end]))
    }

    /// `"…"`, borrowed unless it has escapes; `"""` opens a multi-line
    /// string, left alone, as are escapes only some TOML versions know.
    fn basic_string(&mut self) -> Option<Cow<'i, str>> {
        let start = self.pos + 1;
        if self.bytes.get(start..start + 2) == Some(b"\"\"") {
            return None;
        }
        let mut owned: Option<String> = None;
        let mut from = start;
        let mut i = start;
        loop {
            i += run(self.bytes.get(i..)?, &PLAIN);
            match *self.bytes.get(i)? {
                b'"' => break,
                b'\\' => {
                    let s = owned.get_or_insert_with(String::new);
                    s.push_str(&self.text[from..i]);
                    let (c, len) = self.escape(i + 1)?;
                    s.push(c);
                    i += 1 + len;
                    from = i;
                    continue;
                }
                b'\t' => {}
                0..0x20 | 0x7f => return None,
                _ => {}
            }
            i += 1;
        }
        self.pos = i + 1;
        Some(match owned {
            None => Cow::Borrowed(&self.text[start..i]),
            Some(mut s) => {
                s.push_str(&self.text[from..i]);
                Cow::Owned(s)
            }
        })
    }

    /// The character an escape at `at` (after its backslash) stands for,
    /// and the escape's length.
    fn escape(&self, at: usize) -> Option<(char, usize)> {
        let hex = |len: usize| {
            let digits = self.text.get(at + 1..at + 1 + len)?;
            if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            char::from_u32(u32::from_str_radix(digits, 16).ok()?).map(|c| (c, 1 + len))
        };
        match *self.bytes.get(at)? {
            b'b' => Some(('\u{8}', 1)),
            b't' => Some(('\t', 1)),
            b'n' => Some(('\n', 1)),
            b'f' => Some(('\u{c}', 1)),
            b'r' => Some(('\r', 1)),
            b'"' => Some(('"', 1)),
            b'\\' => Some(('\\', 1)),
            b'u' => hex(4),
            b'U' => hex(8),
            _ => None,
        }
    }

    /// Puts the lines read since the last header where the header says.
    fn finish_table(&mut self) -> Option<()> {
        let table = std::mem::take(&mut self.current);
        let Some(mut header) = self.header.take() else {
            // Lines before any header are the root's.
            self.root = table;
            return Some(());
        };
        let table = Node { span: header.span.clone(), item: Item::Table(table) };
        let parent = descend_headers(self.bytes, &mut self.root, &mut header.path)?;
        self.spare = header.path;
        match parent.position(&header.key.name) {
            None if header.array => {
                let items = Node { span: header.span, item: Item::Array(vec![table]) };
                parent.push(header.key, items)?;
            }
            None => parent.push(header.key, table)?,
            Some(i) if header.array => match parent.at_mut(i) {
                node if is_array_of_tables(node) => {
                    let Item::Array(items) = &mut node.item else { unreachable!("checked") };
                    items.push(table);
                }
                _ => return None,
            },
            // A table defined twice, or one made before by a longer header
            // (where the toml crate's own marks would decide).
            Some(_) => return None,
        }
        Some(())
    }
}

/// The table a header's path leads to from the root, made where missing;
/// through an array of tables, its last table. `None` where the toml crate
/// would report an error (an inline table or a value in the way).
fn descend_headers<'t, 'i>(
    bytes: &[u8],
    mut table: &'t mut Table<'i>,
    path: &mut Vec<Key<'i>>,
) -> Option<&'t mut Table<'i>> {
    for key in path.drain(..) {
        let node = step(table, key)?;
        let inline = bytes[node.span.start] == b'{';
        let aot = is_array_of_tables(node);
        table = match &mut node.item {
            Item::Table(t) if !inline => t,
            Item::Array(items) if aot => match &mut items.last_mut()?.item {
                Item::Table(t) => t,
                _ => return None,
            },
            _ => return None,
        };
    }
    Some(table)
}

/// The entry `key` names in `table`, made an empty table where missing.
fn step<'t, 'i>(table: &'t mut Table<'i>, key: Key<'i>) -> Option<&'t mut Node<'i>> {
    let i = match table.position(&key.name) {
        Some(i) => i,
        None => {
            let node = Node { span: key.span(), item: Item::Table(Table::new()) };
            table.push(key, node)?;
            table.len() - 1
        }
    };
    Some(table.at_mut(i))
}

/// An array made by `[[headers]]`: it has the span of its first table.
fn is_array_of_tables(node: &Node) -> bool {
    match &node.item {
        Item::Array(items) => items.first().is_some_and(|first| first.span == node.span),
        _ => false,
    }
}

/// Adds `key = value` to `table`, through the tables of a dotted key, made
/// where missing. `None` where the toml crate would report an error (a key
/// given twice, a dotted key into a value or into a table written `{ … }`).
/// The tables here are all new since the last header, so one with a span
/// that does not start at a brace was made by a dotted key.
fn insert<'i>(
    bytes: &[u8],
    table: &mut Table<'i>,
    path: &mut Vec<Key<'i>>,
    key: Key<'i>,
    value: Node<'i>,
) -> Option<()> {
    let mut table = table;
    for part in path.drain(..) {
        let node = step(table, part)?;
        if matches!(bytes[node.span.start], b'{' | b'[') {
            return None;
        }
        table = match &mut node.item {
            Item::Table(t) => t,
            _ => return None,
        };
    }
    match table.position(&key.name) {
        None => table.push(key, value),
        Some(_) => None,
    }
}
