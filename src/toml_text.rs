//! TOML text for keys and values, written by hand so that the output is laid
//! out for people: bare keys where TOML allows them, literal strings for
//! regular expressions, one line per value.

use crate::model::Value;

/// The widest line: a longer list is written one item a line, a longer
/// inline table (by import) as a sub-table.
pub(crate) const WIDTH: usize = 100;

/// A key: bare when TOML allows it (`max-length`), else quoted (`"shop.orders"`).
pub(crate) fn key(k: &str) -> String {
    let bare = !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if bare { k.to_string() } else { basic(k) }
}

/// A dotted table path of keys: `queues."orders.invoicing"`.
pub(crate) fn path(keys: &[&str]) -> String {
    keys.iter().map(|k| key(k)).collect::<Vec<_>>().join(".")
}

/// A string on one line: a literal string (`'^orders\.'`) when it holds
/// backslashes and a literal can hold it, else a basic string with escapes.
pub(crate) fn string(s: &str) -> String {
    let literal_ok = !s.contains('\'') && !s.chars().any(char::is_control);
    if s.contains('\\') && literal_ok { format!("'{s}'") } else { basic(s) }
}

fn basic(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `name = [...]` with items written already: on one line when it fits in
/// [`WIDTH`], else one item a line; no final newline.
pub(crate) fn list_field(name: &str, items: &[String]) -> String {
    let one_line = format!("{} = [{}]", key(name), items.join(", "));
    if one_line.len() <= WIDTH || items.is_empty() {
        return one_line;
    }
    let lines: Vec<String> = items.iter().map(|i| format!("    {i},\n")).collect();
    format!("{} = [\n{}]", key(name), lines.concat())
}

/// A value on one line; `None` when it holds a null, which TOML cannot write.
pub(crate) fn value(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => float(*f),
        Value::String(s) => string(s),
        Value::List(items) => {
            let items: Option<Vec<String>> = items.iter().map(value).collect();
            format!("[{}]", items?.join(", "))
        }
        Value::Table(t) => inline_table(t.iter())?,
    })
}

/// `{ a = 1, b = "x" }`, or `{}`.
pub(crate) fn inline_table<'a>(entries: impl Iterator<Item = (&'a String, &'a Value)>) -> Option<String> {
    let entries: Option<Vec<String>> = entries.map(|(k, v)| Some(format!("{} = {}", key(k), value(v)?))).collect();
    let entries = entries?;
    Some(if entries.is_empty() { "{}".into() } else { format!("{{ {} }}", entries.join(", ")) })
}

/// A float that reads back as the same float, never as an integer.
fn float(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let s = f.to_string();
    if s.contains(['.', 'e', 'E']) { s } else { format!("{s}.0") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Table;

    #[test]
    fn keys_are_bare_where_toml_allows() {
        assert_eq!(key("max-length"), "max-length");
        assert_eq!(key("x_1"), "x_1");
        assert_eq!(key("shop.orders"), "\"shop.orders\"");
        assert_eq!(key(""), "\"\"");
        assert_eq!(key("a b"), "\"a b\"");
        assert_eq!(path(&["queues", "orders.x"]), "queues.\"orders.x\"");
    }

    #[test]
    fn strings_escape_or_go_literal() {
        assert_eq!(string("plain"), "\"plain\"");
        assert_eq!(string("^orders\\."), "'^orders\\.'");
        assert_eq!(string("it's \\d"), "\"it's \\\\d\"");
        assert_eq!(string("a\"b\nc\u{1}"), "\"a\\\"b\\nc\\u0001\"");
    }

    #[test]
    fn values() {
        let mut t = Table::new();
        t.insert("x-match".into(), Value::String("all".into()));
        t.insert("n".into(), Value::List(vec![Value::Int(1), Value::Float(0.5)]));
        assert_eq!(value(&Value::Table(t)).unwrap(), "{ n = [1, 0.5], x-match = \"all\" }");
        assert_eq!(value(&Value::Table(Table::new())).unwrap(), "{}");
        assert_eq!(value(&Value::List(vec![Value::Null])), None);
        assert_eq!(value(&Value::Float(1e20)).unwrap(), "100000000000000000000.0");
        assert_eq!(value(&Value::Float(f64::NAN)).unwrap(), "nan");
        assert_eq!(value(&Value::Bool(true)).unwrap(), "true");
    }

    #[test]
    fn everything_written_parses_back_the_same() {
        let samples = [
            Value::String("^a\\.b$".into()),
            Value::String("quote ' and \\ both".into()),
            Value::String("tab\tnew\nline \u{7f} é".into()),
            Value::Float(-0.25),
            Value::Float(1e20),
            Value::Int(i64::MIN),
        ];
        for v in samples {
            let doc = format!("{} = {}", key("k.ey"), value(&v).unwrap());
            let parsed: toml::Table = toml::from_str(&doc).unwrap();
            let back = match &parsed["k.ey"] {
                toml::Value::String(s) => Value::String(s.clone()),
                toml::Value::Float(f) => Value::Float(*f),
                toml::Value::Integer(i) => Value::Int(*i),
                other => panic!("{other:?}"),
            };
            assert_eq!(back, v, "{doc}");
        }
    }
}
