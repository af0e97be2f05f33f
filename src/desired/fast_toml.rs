//! A quick reader for the plain TOML that topology files are made of:
//! `[table]` and `[[array]]` headers, dotted keys, basic and literal
//! one-line strings, decimal integers and floats, booleans, arrays, one-line
//! inline tables and comments. It gives exactly the table that
//! [`DeTable::parse_recoverable`] gives, spans included, and `None` for
//! anything else (dates, multi-line strings, redefined tables, any error):
//! the caller then reads the text with the toml crate, whose diagnostics
//! stay the only ones. The toml crate lexes every token into a vector and
//! replays it as events, which is most of the time a large file takes.
//!
//! The tables and arrays it builds lack the toml crate's private marks
//! (implicit, dotted, inline, array of tables), which only matter to serde
//! deserialisation of the table; warren walks it by hand.

use std::borrow::Cow;
use std::ops::Range;

use rustc_hash::FxHashMap;
use toml::Spanned;
use toml::de::{DeArray, DeTable, DeValue};
use toml::map::Entry;

type Key<'i> = Spanned<Cow<'i, str>>;
type Node<'i> = Spanned<DeValue<'i>>;

/// Deeper nesting is left to the toml crate and its recursion limit.
const MAX_DEPTH: usize = 32;

/// The document `text`, as the toml crate reads a valid one, or `None`.
pub fn parse(text: &str) -> Option<DeTable<'_>> {
    if text.starts_with('\u{feff}') {
        return None;
    }
    let mut doc = Doc {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        root: DeTable::new(),
        current: DeTable::new(),
        header: None,
        numbers: FxHashMap::default(),
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
    root: DeTable<'i>,
    /// The table the lines since the last header fill.
    current: DeTable<'i>,
    header: Option<Header<'i>>,
    /// Numbers as the toml crate reads them, by their text: it alone can
    /// make them, and files repeat the same few many times.
    numbers: FxHashMap<&'i str, DeValue<'i>>,
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
                    let (path, key) = self.keys()?;
                    self.skip_spaces();
                    self.eat(b'=')?;
                    self.skip_spaces();
                    let value = self.value(0)?;
                    insert(self.bytes, &mut self.current, path, key, value)?;
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
        let mut path = Vec::new();
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
                while matches!(self.peek(), Some(b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-')) {
                    self.pos += 1;
                }
                if self.pos == start {
                    return None;
                }
                Cow::Borrowed(&self.text[start..self.pos])
            }
        };
        Some(Spanned::new(start..self.pos, name))
    }

    fn value(&mut self, depth: usize) -> Option<Node<'i>> {
        if depth > MAX_DEPTH {
            return None;
        }
        let start = self.pos;
        let value = match self.peek()? {
            b'"' => DeValue::String(self.basic_string()?),
            b'\'' => DeValue::String(self.literal_string()?),
            b't' => self.word("true", DeValue::Boolean(true))?,
            b'f' => self.word("false", DeValue::Boolean(false))?,
            b'[' => self.array(depth)?,
            b'{' => self.inline_table(depth)?,
            b'0'..=b'9' | b'+' | b'-' => self.number()?,
            _ => return None,
        };
        Some(Spanned::new(start..self.pos, value))
    }

    fn word(&mut self, word: &str, value: DeValue<'i>) -> Option<DeValue<'i>> {
        self.text[self.pos..].starts_with(word).then(|| {
            self.pos += word.len();
            value
        })
    }

    /// An integer or float, made by the toml crate from its text; a date or
    /// time, or anything it does not read as a number, is left to it.
    fn number(&mut self) -> Option<DeValue<'i>> {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9' | b'A'..=b'Z' | b'a'..=b'z' | b'_' | b'+' | b'-' | b'.' | b':')) {
            self.pos += 1;
        }
        let token = &self.text[start..self.pos];
        if let Some(v) = self.numbers.get(token) {
            return Some(v.clone());
        }
        let value = DeValue::parse(token).ok()?.into_inner();
        if !matches!(value, DeValue::Integer(_) | DeValue::Float(_)) {
            return None;
        }
        self.numbers.insert(token, value.clone());
        Some(value)
    }

    /// `[a, b, ]`, over lines and with comments.
    fn array(&mut self, depth: usize) -> Option<DeValue<'i>> {
        self.pos += 1;
        let mut items = DeArray::new();
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
        Some(DeValue::Array(items))
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
    fn inline_table(&mut self, depth: usize) -> Option<DeValue<'i>> {
        self.pos += 1;
        let mut table = DeTable::new();
        self.skip_spaces();
        if self.eat(b'}').is_some() {
            return Some(DeValue::Table(table));
        }
        loop {
            let (path, key) = self.keys()?;
            self.skip_spaces();
            self.eat(b'=')?;
            self.skip_spaces();
            let value = self.value(depth + 1)?;
            insert(self.bytes, &mut table, path, key, value)?;
            self.skip_spaces();
            if self.eat(b',').is_none() {
                self.eat(b'}')?;
                return Some(DeValue::Table(table));
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
        let mut run = start;
        let mut i = start;
        loop {
            match *self.bytes.get(i)? {
                b'"' => break,
                b'\\' => {
                    let s = owned.get_or_insert_with(String::new);
                    s.push_str(&self.text[run..i]);
                    let (c, len) = self.escape(i + 1)?;
                    s.push(c);
                    i += 1 + len;
                    run = i;
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
                s.push_str(&self.text[run..i]);
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
        let Some(header) = self.header.take() else {
            // Lines before any header are the root's.
            self.root = table;
            return Some(());
        };
        let table = Spanned::new(header.span.clone(), DeValue::Table(table));
        let parent = descend_headers(self.bytes, &mut self.root, header.path)?;
        match parent.entry(header.key) {
            Entry::Vacant(e) if header.array => {
                let mut items = DeArray::new();
                items.push(table);
                e.insert(Spanned::new(header.span, DeValue::Array(items)));
            }
            Entry::Vacant(e) => _ = e.insert(table),
            Entry::Occupied(e) if header.array => match e.into_mut() {
                node if is_array_of_tables(node) => {
                    let DeValue::Array(items) = node.get_mut() else { unreachable!("checked") };
                    items.push(table);
                }
                _ => return None,
            },
            // A table defined twice, or one made before by a longer header
            // (where the toml crate's own marks would decide).
            Entry::Occupied(_) => return None,
        }
        Some(())
    }
}

/// The table a header's path leads to from the root, made where missing;
/// through an array of tables, its last table. `None` where the toml crate
/// would report an error (an inline table or a value in the way).
fn descend_headers<'t, 'i>(
    bytes: &[u8],
    mut table: &'t mut DeTable<'i>,
    path: Vec<Key<'i>>,
) -> Option<&'t mut DeTable<'i>> {
    for key in path {
        let span = key.span();
        let node = match table.entry(key) {
            Entry::Vacant(e) => e.insert(Spanned::new(span, DeValue::Table(DeTable::new()))),
            Entry::Occupied(e) => e.into_mut(),
        };
        let inline = bytes[node.span().start] == b'{';
        let aot = is_array_of_tables(node);
        table = match node.get_mut() {
            DeValue::Table(t) if !inline => t,
            DeValue::Array(items) if aot => match items.last_mut()?.get_mut() {
                DeValue::Table(t) => t,
                _ => return None,
            },
            _ => return None,
        };
    }
    Some(table)
}

/// An array made by `[[headers]]`: it has the span of its first table.
fn is_array_of_tables(node: &Node) -> bool {
    match node.get_ref() {
        DeValue::Array(items) => items.first().is_some_and(|first| first.span() == node.span()),
        _ => false,
    }
}

/// Adds `key = value` to `table`, through the tables of a dotted key, made
/// where missing. `None` where the toml crate would report an error (a key
/// given twice, a dotted key into a value or into a table written `{ … }`).
/// The tables here are all new since the last header, so one with a span
/// that does not start at a brace was made by a dotted key.
fn insert<'i>(bytes: &[u8], table: &mut DeTable<'i>, path: Vec<Key<'i>>, key: Key<'i>, value: Node<'i>) -> Option<()> {
    let mut table = table;
    for part in path {
        let span = part.span();
        let node = match table.entry(part) {
            Entry::Vacant(e) => e.insert(Spanned::new(span, DeValue::Table(DeTable::new()))),
            Entry::Occupied(e) => e.into_mut(),
        };
        if matches!(bytes[node.span().start], b'{' | b'[') {
            return None;
        }
        table = match node.get_mut() {
            DeValue::Table(t) => t,
            _ => return None,
        };
    }
    match table.entry(key) {
        Entry::Vacant(e) => {
            e.insert(value);
            Some(())
        }
        Entry::Occupied(_) => None,
    }
}
