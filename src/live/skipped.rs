//! Items of an export that RabbitMQ does not load either: an item of a
//! cluster-wide export that names no vhost, a user whose `password_hash` is
//! not base64, and that user's permissions. They are left out of the live
//! state, each with a warning at its place in the file, and `warren import`
//! lists them at the top of the file they would have gone to.

use std::collections::HashMap;
use std::path::Path;

use serde_json::value::RawValue;

use super::notes::CODE;
use crate::diagnostic::Diagnostic;

/// Where a skipped item would have gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The users' file.
    Users,
    Vhost(String),
    /// It names no vhost.
    NoVhost,
}

/// One item left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub scope: Scope,
    /// `user "legacy"`, `queue "stray"`.
    pub what: String,
    /// The list of the export the item is in (`users`), and its index there.
    pub list: &'static str,
    pub index: usize,
    /// 1-based line and column (in characters) of the item in the file;
    /// `None` when it came from a broker's answers rather than one file.
    pub at: Option<(usize, usize)>,
    pub why: String,
    pub help: String,
}

impl Skipped {
    /// The warning: `defs.json:10:5: user "legacy" (`users[1]`) skipped: …`.
    pub fn diagnostic(&self, origin: &str) -> Diagnostic {
        let place = match self.at {
            Some((line, column)) => format!("{origin}:{line}:{column}"),
            None => origin.to_string(),
        };
        let message = format!("{place}: {} (`{}[{}]`) skipped: {}", self.what, self.list, self.index, self.why);
        Diagnostic::warning(CODE, message).help(self.help.clone())
    }
}

/// The text an export was parsed from, to say where its skipped items are.
#[derive(Debug, Clone, Copy)]
pub enum Text<'a> {
    Held(&'a str),
    /// Read again from the file, only when something was skipped (rare): a
    /// large export's text need not be kept while it is read.
    File(&'a Path),
    /// A broker's answers, not one file.
    None,
}

/// Sets where each skipped item is in `text`, the text they were read from.
/// It is read again only when something was skipped, which is rare.
pub(super) fn locate(skipped: &mut [Skipped], text: Text) {
    if skipped.is_empty() {
        return;
    }
    let read;
    let json = match text {
        Text::Held(json) => json,
        Text::File(path) => match std::fs::read_to_string(path) {
            Ok(t) => {
                read = t;
                &read
            }
            // Gone since: the warnings say the file, without the places.
            Err(_) => return,
        },
        Text::None => return,
    };
    let Ok(top) = serde_json::from_str::<HashMap<String, &RawValue>>(json) else {
        return;
    };
    let mut lists: HashMap<&str, Vec<&RawValue>> = HashMap::new();
    let mut offsets: Vec<(usize, usize)> = Vec::new();
    for (i, s) in skipped.iter().enumerate() {
        let items = lists.entry(s.list).or_insert_with(|| {
            top.get(s.list).and_then(|raw| serde_json::from_str(raw.get()).ok()).unwrap_or_default()
        });
        if let Some(item) = items.get(s.index) {
            // The item borrows from `json`: its address says where it is.
            let offset = (item.get().as_ptr() as usize).wrapping_sub(json.as_ptr() as usize);
            if json.is_char_boundary(offset) {
                offsets.push((offset, i));
            }
        }
    }
    offsets.sort_unstable();
    let sorted: Vec<usize> = offsets.iter().map(|(o, _)| *o).collect();
    for ((_, i), at) in offsets.iter().zip(line_columns(json, &sorted)) {
        skipped[*i].at = Some(at);
    }
}

/// The line and column of each offset (ascending), in one pass over the
/// text: an export from the HTTP API is a single line of megabytes.
fn line_columns(text: &str, offsets: &[usize]) -> Vec<(usize, usize)> {
    let (mut line, mut column, mut from) = (1, 1, 0);
    offsets
        .iter()
        .map(|&to| {
            for c in text[from..to].chars() {
                if c == '\n' {
                    line += 1;
                    column = 1;
                } else {
                    column += 1;
                }
            }
            from = to;
            (line, column)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skipped(list: &'static str, index: usize) -> Skipped {
        Skipped {
            scope: Scope::NoVhost,
            what: "queue \"q\"".into(),
            list,
            index,
            at: None,
            why: "it names no vhost".into(),
            help: "h".into(),
        }
    }

    #[test]
    fn items_are_located_by_list_and_index() {
        let json = "{\"queues\": [\n  {\"name\": \"a\"},\n  {\"name\": \"é\"}, {\"name\": \"b\"}\n],\n\"users\": [{}]}";
        let mut s = vec![skipped("queues", 2), skipped("users", 0), skipped("queues", 0), skipped("queues", 9)];
        locate(&mut s, Text::Held(json));
        let at: Vec<_> = s.iter().map(|s| s.at).collect();
        assert_eq!(at, [Some((3, 18)), Some((5, 11)), Some((2, 3)), None]);
        assert_eq!(
            s[0].diagnostic("d.json").message,
            "d.json:3:18: queue \"q\" (`queues[2]`) skipped: it names no vhost"
        );
    }

    #[test]
    fn a_file_is_read_again_to_locate_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.json");
        std::fs::write(&path, "{\"queues\": [{},\n {}]}").unwrap();
        let mut s = vec![skipped("queues", 1)];
        locate(&mut s, Text::File(&path));
        assert_eq!(s[0].at, Some((2, 2)));
        let mut s = vec![skipped("queues", 1)];
        locate(&mut s, Text::File(&dir.path().join("gone.json")));
        assert_eq!(s[0].at, None);
    }

    #[test]
    fn unreadable_text_locates_nothing() {
        let mut s = vec![skipped("queues", 0)];
        locate(&mut s, Text::Held("[1, 2]"));
        assert_eq!(s[0].at, None);
        assert_eq!(s[0].diagnostic("d.json").message, "d.json: queue \"q\" (`queues[0]`) skipped: it names no vhost");
    }
}
