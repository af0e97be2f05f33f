//! A JSON-like value with a total order, so that arguments and policy
//! definitions can live inside ordered sets and compare exactly.

use std::cmp::Ordering;
use std::fmt;

/// Named values: queue and exchange arguments, policy definitions. Sorted
/// by name like a `BTreeMap`, and in the same order, in one vector: a table
/// has a few entries, and a large topology has one per queue and binding,
/// where a `BTreeMap`'s node would take 600 bytes.
pub type Table = litemap::LiteMap<String, Value>;

/// An argument or definition value as RabbitMQ stores it.
#[derive(Debug, Clone)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    List(Vec<Value>),
    Table(Table),
}

impl Value {
    /// The value as an integer, also when it is a float with no fraction
    /// (definitions exports may write `1000.0` for `1000`).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(*f as i64),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The kind of value, as a user reads it in a diagnostic.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::String(_) => "a string",
            Value::List(_) => "an array",
            Value::Table(_) => "a table",
        }
    }

    /// The same value with integral floats turned into integers, recursively,
    /// so that `1000` and `1000.0` compare equal.
    pub fn normalised(self) -> Value {
        match self {
            Value::Float(f) => match Value::Float(f).as_int() {
                Some(i) => Value::Int(i),
                None => Value::Float(f),
            },
            Value::List(items) => Value::List(items.into_iter().map(Value::normalised).collect()),
            Value::Table(t) => Value::Table(t.into_iter().map(|(k, v)| (k, v.normalised())).collect()),
            other => other,
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) => 2,
            Value::Float(_) => 3,
            Value::String(_) => 4,
            Value::List(_) => 5,
            Value::Table(_) => 6,
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => a.total_cmp(b),
            (Value::String(a), Value::String(b)) => a.cmp(b),
            (Value::List(a), Value::List(b)) => a.cmp(b),
            (Value::Table(a), Value::Table(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl std::hash::Hash for Value {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.rank().hash(state);
        match self {
            Value::Null => {}
            Value::Bool(b) => b.hash(state),
            Value::Int(i) => i.hash(state),
            Value::Float(f) => f.to_bits().hash(state),
            Value::String(s) => s.hash(state),
            Value::List(l) => l.hash(state),
            Value::Table(t) => t.hash(state),
        }
    }
}

impl fmt::Display for Value {
    /// JSON text, the form users see in definitions files and plans.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", serde_json::Value::from(self))
    }
}

impl From<&Value> for serde_json::Value {
    fn from(v: &Value) -> Self {
        match v {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => (*b).into(),
            Value::Int(i) => (*i).into(),
            Value::Float(f) => {
                serde_json::Number::from_f64(*f).map(serde_json::Value::Number).unwrap_or(serde_json::Value::Null)
            }
            Value::String(s) => s.clone().into(),
            Value::List(l) => l.iter().map(serde_json::Value::from).collect(),
            Value::Table(t) => {
                t.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(v))).collect::<serde_json::Map<_, _>>().into()
            }
        }
    }
}

impl From<&serde_json::Value> for Value {
    fn from(v: &serde_json::Value) -> Self {
        match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(a) => Value::List(a.iter().map(Value::from).collect()),
            serde_json::Value::Object(o) => Value::Table(o.iter().map(|(k, v)| (k.clone(), Value::from(v))).collect()),
        }
        .normalised()
    }
}

/// As `From<&serde_json::Value>`, moving strings instead of copying them.
impl From<serde_json::Value> for Value {
    fn from(v: serde_json::Value) -> Self {
        match v {
            serde_json::Value::String(s) => Value::String(s),
            serde_json::Value::Array(a) => Value::List(a.into_iter().map(Value::from).collect()),
            serde_json::Value::Object(o) => Value::Table(o.into_iter().map(|(k, v)| (k, Value::from(v))).collect()),
            other => return Value::from(&other),
        }
        .normalised()
    }
}

impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serde_json::Value::from(self).serialize(s)
    }
}

/// Read straight from the document, as `From<serde_json::Value>` reads a
/// parsed one: an export has an argument table per queue and binding, and a
/// JSON tree of each would be built only to be converted.
impl<'de> serde::Deserialize<'de> for Value {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(d.deserialize_any(ValueVisitor)?.normalised())
    }
}

struct ValueVisitor;

impl<'de> serde::de::Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Int(i))
    }

    fn visit_u64<E>(self, u: u64) -> Result<Value, E> {
        Ok(i64::try_from(u).map_or(Value::Float(u as f64), Value::Int))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Float(f))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Value::List(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry::<String, Value>()? {
            entries.push(entry);
        }
        // Collected, the last of a repeated key stays, as serde_json keeps it.
        Ok(Value::Table(entries.into_iter().collect()))
    }
}
