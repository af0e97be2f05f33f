//! What is routed: a message, or a class of messages.

use crate::model::Table;

/// A message as published: its exchange ("" is the default exchange), its
/// keys and its headers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Message {
    pub exchange: String,
    pub keys: Keys,
    /// `None`: not known (a class of messages with any headers); a headers
    /// exchange then cannot tell.
    pub headers: Option<Table>,
}

/// The routing keys of a message, or a class of them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(tag = "kind", content = "keys", rename_all = "snake_case")]
pub enum Keys {
    /// The routing key and the keys of its `CC` and `BCC` headers, routed
    /// together: each queue once, an alternate exchange only when none of
    /// them routes.
    Exact(Vec<String>),
    /// Every key.
    Any,
    /// The keys a topic pattern takes.
    Matching(String),
}

impl Message {
    /// A message with one key and no headers.
    pub fn new(exchange: &str, key: &str) -> Self {
        Message { exchange: exchange.to_string(), keys: Keys::one(key), headers: Some(Table::new()) }
    }
}

impl Keys {
    pub fn one(key: &str) -> Self {
        Keys::Exact(vec![key.to_string()])
    }

    /// Whether some key of the class is `key`.
    pub fn admits(&self, key: &str) -> bool {
        match self {
            Keys::Exact(keys) => keys.iter().any(|k| k == key),
            Keys::Any => true,
            Keys::Matching(p) => super::topic::matches(p, key),
        }
    }

    /// Whether some key of the class matches topic `pattern`.
    pub fn meets_pattern(&self, pattern: &str) -> bool {
        match self {
            Keys::Exact(keys) => keys.iter().any(|k| super::topic::matches(pattern, k)),
            Keys::Any => true,
            Keys::Matching(p) => super::topic::intersects(pattern, p),
        }
    }

    /// The class after a direct binding with `key` took it: one key of a
    /// class; a message goes on with all its keys.
    pub(crate) fn through_key(&self, key: &str) -> Keys {
        match self {
            Keys::Exact(_) => self.clone(),
            Keys::Any | Keys::Matching(_) => Keys::one(key),
        }
    }

    /// The class after a topic binding with `pattern` took it: the narrower
    /// of the two patterns when one covers the other; otherwise the class
    /// as it came, which is wider than what passed (the answer may then
    /// name a queue that only keys outside the binding's pattern reach).
    pub(crate) fn through_pattern(&self, pattern: &str) -> Keys {
        match self {
            Keys::Exact(_) => self.clone(),
            Keys::Any => Keys::Matching(pattern.to_string()),
            Keys::Matching(p) if super::topic::covers(p, pattern) => Keys::Matching(pattern.to_string()),
            Keys::Matching(_) => self.clone(),
        }
    }

    /// How a user reads the class.
    pub fn describe(&self) -> String {
        match self {
            Keys::Exact(keys) if keys.len() == 1 => format!("key \"{}\"", keys[0]),
            Keys::Exact(keys) => {
                format!("keys {}", keys.iter().map(|k| format!("\"{k}\"")).collect::<Vec<_>>().join(", "))
            }
            Keys::Any => "any key".to_string(),
            Keys::Matching(p) => format!("keys matching \"{p}\""),
        }
    }
}
