//! The quirks found while reading an export (and what `warren import`
//! leaves out), grouped so that a hundred alike findings make one readable
//! note instead of a hundred.

use std::collections::BTreeSet;

use crate::diagnostic::Diagnostic;

/// The code of every note about an export.
pub const CODE: &str = "live-quirk";

/// At most this many names are listed in one note.
const LISTED: usize = 8;

#[derive(Debug)]
pub(crate) struct Notes {
    code: &'static str,
    groups: Vec<Group>,
}

impl Default for Notes {
    /// Notes about an export (code `live-quirk`).
    fn default() -> Self {
        Notes::new(CODE)
    }
}

#[derive(Debug)]
struct Group {
    topic: String,
    help: String,
    items: BTreeSet<String>,
}

impl Notes {
    /// Notes that will be warnings with this code.
    pub(crate) fn new(code: &'static str) -> Self {
        Notes { code, groups: Vec::new() }
    }

    /// Adds `item` (a name, quoted in the note) to the note about `topic`.
    pub(crate) fn add(&mut self, topic: impl Into<String>, help: impl Into<String>, item: &str) {
        let topic = topic.into();
        let item = format!("\"{}\"", item.escape_debug());
        match self.groups.iter_mut().find(|g| g.topic == topic) {
            Some(g) => {
                g.items.insert(item);
            }
            None => self.groups.push(Group { topic, help: help.into(), items: BTreeSet::from([item]) }),
        }
    }

    /// A note that stands alone; the same note twice is kept once.
    pub(crate) fn one(&mut self, message: impl Into<String>, help: impl Into<String>) {
        let topic = message.into();
        if !self.groups.iter().any(|g| g.topic == topic) {
            self.groups.push(Group { topic, help: help.into(), items: BTreeSet::new() });
        }
    }

    /// The notes as warnings, in the order their topics were first found.
    pub(crate) fn into_diagnostics(self) -> Vec<Diagnostic> {
        let code = self.code;
        self.groups.into_iter().map(|g| Diagnostic::warning(code, message(&g)).help(g.help)).collect()
    }
}

fn message(g: &Group) -> String {
    if g.items.is_empty() {
        return g.topic.clone();
    }
    let shown: Vec<&str> = g.items.iter().take(LISTED).map(String::as_str).collect();
    let mut list = shown.join(", ");
    if g.items.len() > LISTED {
        list += &format!(" and {} more", g.items.len() - LISTED);
    }
    format!("{}: {list}", g.topic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alike_findings_make_one_note() {
        let mut n = Notes::default();
        for i in 0..10 {
            n.add("bindings to missing queues", "help", &format!("q{i}"));
        }
        n.add("bindings to missing queues", "help", "q0");
        n.one("plain", "h");
        n.one("plain", "h");
        let d = n.into_diagnostics();
        assert_eq!(d.len(), 2);
        assert_eq!(
            d[0].message,
            "bindings to missing queues: \"q0\", \"q1\", \"q2\", \"q3\", \"q4\", \"q5\", \"q6\", \"q7\" and 2 more"
        );
        assert_eq!(d[0].code, CODE);
        assert!(d[0].location.is_none() && !d[0].is_error());
    }
}
