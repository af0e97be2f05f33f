//! Headers exchanges (`rabbit_exchange_type_headers`): a binding's
//! arguments against a message's headers, by its `x-match`.

use super::Version;
use crate::model::{Table, Value};

/// Whether a headers binding with `arguments` takes a message with
/// `headers`: `x-match` `all` (the default) or `any` of the other
/// arguments, those starting with `x-` left out unless the mode is
/// `all-with-x` or `any-with-x`. An argument without a value (`null`, the
/// AMQP `void`) asks only that the header be there. With `all`, a binding
/// with nothing to compare takes every message; with `any`, none.
pub fn matches(arguments: &Table, headers: &Table, version: Version) -> bool {
    let mode = arguments.get("x-match").and_then(Value::as_str).unwrap_or("all");
    let (any, with_x) = match mode {
        "any" => (true, false),
        "all-with-x" => (false, true),
        "any-with-x" => (true, true),
        _ => (false, false),
    };
    let mut wanted = arguments.iter().filter(|(k, _)| *k != "x-match" && (with_x || !k.starts_with("x-")));
    let fits = |(k, want): (&String, &Value)| match (headers.get(k), want) {
        (Some(_), Value::Null) => true,
        (Some(have), want) => equal(have, want, version),
        (None, _) => false,
    };
    if any { wanted.any(fits) } else { wanted.all(fits) }
}

/// RabbitMQ 3.x compares header values with Erlang's `==`, for which the
/// integer 1 equals the float 1.0; RabbitMQ 4 compares them exactly
/// (`=:=`), type and all.
fn equal(have: &Value, want: &Value, version: Version) -> bool {
    if version.compares_headers_exactly() {
        return have == want;
    }
    match (have, want) {
        (Value::Int(i), Value::Float(f)) | (Value::Float(f), Value::Int(i)) => *i as f64 == *f,
        _ => have == want,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(pairs: &[(&str, Value)]) -> Table {
        pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
    }

    #[test]
    fn modes() {
        let v = Version::NEWEST;
        let s = |x: &str| Value::String(x.into());
        let headers = table(&[("a", s("1")), ("x-b", s("2"))]);
        assert!(matches(&table(&[("a", s("1"))]), &headers, v));
        assert!(!matches(&table(&[("a", s("1")), ("c", s("3"))]), &headers, v));
        assert!(matches(&table(&[("x-match", s("any")), ("a", s("1")), ("c", s("3"))]), &headers, v));
        // `x-` arguments are left out unless the mode says `with-x`.
        assert!(matches(&table(&[("a", s("1")), ("x-b", s("9"))]), &headers, v));
        assert!(!matches(&table(&[("x-match", s("all-with-x")), ("a", s("1")), ("x-b", s("9"))]), &headers, v));
        assert!(matches(&table(&[("x-match", s("any-with-x")), ("x-b", s("2"))]), &headers, v));
        assert!(matches(&table(&[("c", Value::Null), ("x-match", s("any")), ("a", Value::Null)]), &headers, v));
        assert!(matches(&Table::new(), &headers, v));
        assert!(!matches(&table(&[("x-match", s("any"))]), &headers, v));
    }

    #[test]
    fn numbers_compare_by_version() {
        let headers = table(&[("n", Value::Int(1))]);
        let binding = table(&[("n", Value::Float(1.0))]);
        assert!(matches(&binding, &headers, Version::new(3, 10)));
        assert!(!matches(&binding, &headers, Version::new(4, 0)));
    }
}
