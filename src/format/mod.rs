//! The canonical layout of warren's TOML files (`warren fmt`), text in,
//! text out. It is the layout `warren import` writes: known keys in the
//! order import writes them, keys bare where TOML allows, strings as
//! `toml_text` writes them, `key = value` with one space each side, one
//! blank line before each table header, no trailing whitespace, one final
//! newline. Comments stay with the key or header they precede, and a
//! comment at the end of a line stays on that line.
//!
//! What the user chose stays: the order of tables and of `[[array]]` items
//! across the file (files are grouped on purpose), inline tables against
//! sub-tables, dotted keys, how numbers are written. toml_edit keeps every
//! comment and position; only decor and representations are rewritten.

mod order;

use std::ops::Range;

use toml_edit::{Array, ArrayOfTables, Decor, DocumentMut, InlineTable, Item, Key, Table, Value};

use crate::toml_text::{self, WIDTH};
use order::{Step, known, rank};

/// Which of warren's files a text is: it decides which keys are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A topology or overlay file.
    Topology,
    /// The project file, `warren.toml`.
    Project,
    /// A routing test file, `*.test.toml`.
    Test,
}

/// Why a text could not be formatted: it is not TOML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub span: Range<usize>,
    pub message: String,
}

/// The text in the canonical layout; the same TOML value as `text`.
pub fn format(text: &str, kind: FileKind) -> Result<String, SyntaxError> {
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| SyntaxError {
        span: e.span().unwrap_or(0..0),
        message: e.message().trim().to_string(),
    })?;
    let mut path = Vec::new();
    table(doc.as_table_mut(), kind, &mut path, "");
    let trailing = doc.trailing().as_str().unwrap_or_default().to_string();
    doc.set_trailing(comments(&trailing));
    Ok(tidy(&doc.to_string()))
}

/// A table's keys in order and laid out, and its sub-tables likewise;
/// `dotted` is the text of the dotted keys that lead to it (`a.`), if any.
fn table(t: &mut Table, kind: FileKind, path: &mut Vec<Step>, dotted: &str) {
    let order = known(kind, path);
    let names: Vec<String> = t.iter().map(|(k, _)| k.to_string()).collect();
    // Taken from the end, where removing is cheap (a table of 100,000
    // queues), then put back in order.
    let mut entries: Vec<(Key, Item)> = names.iter().rev().filter_map(|k| t.remove_entry(k)).collect();
    entries.reverse();
    // The comments that open a file stay at its top, whatever key moves
    // there (`vhosts`).
    let opening = match entries.first_mut() {
        Some((key, Item::Value(_))) if path.is_empty() => {
            let text = key.leaf_decor().prefix().and_then(|p| p.as_str()).unwrap_or_default().to_string();
            key.leaf_decor_mut().set_prefix("");
            text
        }
        _ => String::new(),
    };
    entries.sort_by_key(|(k, _)| rank(order, k.get()));
    if let Some((key, Item::Value(_))) = entries.first_mut() {
        let own = key.leaf_decor().prefix().and_then(|p| p.as_str()).unwrap_or_default().to_string();
        key.leaf_decor_mut().set_prefix(format!("{opening}{own}"));
    }
    let mut first = true;
    for (old, mut item) in entries {
        path.push(Step::Key(old.get().to_string()));
        let is_value = matches!(&item, Item::Value(_)) || matches!(&item, Item::Table(t) if t.is_dotted());
        let key = canonical_key(&old, is_value, first && dotted.is_empty() && !path_is_root(path));
        first &= !is_value;
        let shown = format!("{dotted}{}", key.display_repr());
        match &mut item {
            Item::Value(v) => value(v, kind, path, shown.len(), true),
            Item::Table(sub) if sub.is_dotted() => table(sub, kind, path, &format!("{shown}.")),
            Item::Table(sub) => {
                header(sub.decor_mut());
                table(sub, kind, path, "");
            }
            Item::ArrayOfTables(items) => array_of_tables(items, kind, path),
            Item::None => {}
        }
        path.pop();
        t.insert_formatted(&key, item);
    }
}

fn path_is_root(path: &[Step]) -> bool {
    path.len() <= 1
}

fn array_of_tables(items: &mut ArrayOfTables, kind: FileKind, path: &mut Vec<Step>) {
    path.push(Step::Item);
    for t in items.iter_mut() {
        header(t.decor_mut());
        table(t, kind, path, "");
    }
    path.pop();
}

/// The key as `toml_text::key` writes it, with the comments before it;
/// `first`: the first key under a header, with no blank line before it.
fn canonical_key(old: &Key, is_value: bool, first: bool) -> Key {
    let mut key = Key::parse(&toml_text::key(old.get())).ok().and_then(|mut k| k.pop()).unwrap_or_else(|| old.clone());
    if is_value {
        let mut before = comments(old.leaf_decor().prefix().and_then(|p| p.as_str()).unwrap_or_default());
        if first {
            before = before.trim_start_matches('\n').to_string();
        }
        *key.leaf_decor_mut() = Decor::new(before, " ");
    }
    key
}

/// A header's decor: its comments, a blank line before them unless one
/// already separates them from what comes before, and its line's comment.
fn header(decor: &mut Decor) {
    let before = comments(decor.prefix().and_then(|p| p.as_str()).unwrap_or_default());
    let before = if before.contains("\n\n") || before.starts_with('\n') { before } else { format!("\n{before}") };
    let after = line_comment(decor.suffix().and_then(|s| s.as_str()).unwrap_or_default());
    *decor = Decor::new(before, after);
}

/// A value laid out: strings as `toml_text::string` writes them, arrays
/// on one line when `key = [...]` fits in [`WIDTH`], else one item a line;
/// `width` is the length of the key before it, `outer`: not inside an
/// array or inline table.
fn value(v: &mut Value, kind: FileKind, path: &mut Vec<Step>, width: usize, outer: bool) {
    let suffix = line_comment(v.decor().suffix().and_then(|s| s.as_str()).unwrap_or_default());
    match v {
        Value::String(s) => {
            let text = toml_text::string(s.value());
            if let Ok(mut parsed) = text.parse::<Value>() {
                *parsed.decor_mut() = v.decor().clone();
                *v = parsed;
            }
        }
        Value::Array(a) => array(a, kind, path, width, outer),
        Value::InlineTable(t) => inline_table(t, kind, path),
        _ => {}
    }
    if outer {
        *v.decor_mut() = Decor::new(" ", suffix);
    }
}

fn array(a: &mut Array, kind: FileKind, path: &mut Vec<Step>, width: usize, outer: bool) {
    let commented =
        a.iter().any(|item| has_comment(item.decor())) || a.trailing().as_str().is_some_and(|t| t.contains('#'));
    path.push(Step::Item);
    for item in a.iter_mut() {
        value(item, kind, path, 0, false);
    }
    path.pop();
    if commented {
        // Comments inside an array keep the lines the user gave them.
        return;
    }
    for (i, item) in a.iter_mut().enumerate() {
        *item.decor_mut() = Decor::new(if i == 0 { "" } else { " " }, "");
    }
    a.set_trailing_comma(false);
    a.set_trailing("");
    let mut shown = a.clone();
    *shown.decor_mut() = Decor::new("", "");
    let one_line = width + " = ".len() + shown.to_string().len();
    if !outer || a.is_empty() || one_line <= WIDTH {
        return;
    }
    for item in a.iter_mut() {
        *item.decor_mut() = Decor::new("\n    ", "");
    }
    a.set_trailing_comma(true);
    a.set_trailing("\n");
}

fn inline_table(t: &mut InlineTable, kind: FileKind, path: &mut Vec<Step>) {
    let commented = t.iter().any(|(k, _)| t.key(k).is_some_and(|k| has_comment(k.leaf_decor())))
        || t.iter().any(|(_, v)| has_comment(v.decor()))
        || t.trailing().as_str().is_some_and(|s| s.contains('#'));
    let order = known(kind, path);
    let names: Vec<String> = t.iter().map(|(k, _)| k.to_string()).collect();
    let mut entries: Vec<(Key, Value)> = names.iter().rev().filter_map(|k| t.remove_entry(k)).collect();
    entries.reverse();
    entries.sort_by_key(|(k, _)| rank(order, k.get()));
    for (old, mut v) in entries {
        path.push(Step::Key(old.get().to_string()));
        value(&mut v, kind, path, 0, false);
        path.pop();
        let mut key = Key::parse(&toml_text::key(old.get())).ok().and_then(|mut k| k.pop()).unwrap_or(old.clone());
        if commented {
            *key.leaf_decor_mut() = old.leaf_decor().clone();
        }
        t.insert_formatted(&key, v);
    }
    if !commented {
        t.fmt();
        t.set_trailing_comma(false);
        t.set_trailing("");
    }
}

fn has_comment(decor: &Decor) -> bool {
    [decor.prefix(), decor.suffix()].into_iter().flatten().any(|r| r.as_str().is_some_and(|s| s.contains('#')))
}

/// The comment lines of a decor, each as written but for the space around
/// it, and the blank lines between them, at most one in a row.
fn comments(raw: &str) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = raw.split('\n').collect();
    // What follows the last newline is the indentation of the key itself.
    for line in &lines[..lines.len() - 1] {
        let line = line.trim();
        if line.is_empty() && (out.ends_with("\n\n") || out == "\n") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The comment at the end of a line, after the spaces the user put before
/// it (at least one, a tab as one), so that aligned comments stay aligned.
fn line_comment(raw: &str) -> String {
    match raw.find('#') {
        Some(i) => format!("{}{}", " ".repeat(raw[..i].chars().count().max(1)), raw[i..].trim_end()),
        None => String::new(),
    }
}

/// The text line by line: no trailing whitespace, no blank line first or
/// twice in a row, one newline at the end. Safe on values because every
/// string is written on one line.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 1);
    let mut blank = true;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            if !blank {
                out.push('\n');
            }
            blank = true;
            continue;
        }
        out.push_str(line);
        out.push('\n');
        blank = false;
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests;
