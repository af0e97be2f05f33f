//! The headers of messages a queue holds, as far as its bindings tell:
//! what the model routes in place of "any headers" when the question is
//! whether some message goes somewhere (a dead letter coming back to its
//! queue), and a headers exchange would otherwise leave it unanswered.

use super::{Router, headers};
use crate::model::Table;

impl<'a> Router<'a> {
    /// For each binding of a headers exchange into `queue` that takes some
    /// message, the headers of one message it takes: its arguments but
    /// `x-match`, a header without a value (`null`) present as `void`.
    /// Such a message reaches the queue whenever one is published to the
    /// binding's exchange; its dead letters carry the same headers.
    pub fn headers_into(&self, queue: &str) -> Vec<Table> {
        let mut out: Vec<Table> = Vec::new();
        for b in self.bindings_into(queue) {
            let kind = match self.vhost.exchanges.get(&b.source) {
                Some(x) => x.kind.as_str(),
                None if matches!(b.source.as_str(), "amq.headers" | "amq.match") => "headers",
                None => continue,
            };
            if kind != "headers" {
                continue;
            }
            let witness: Table =
                b.arguments.iter().filter(|(k, _)| *k != "x-match").map(|(k, v)| (k.clone(), v.clone())).collect();
            if headers::matches(&b.arguments, &witness, self.version) && !out.contains(&witness) {
                out.push(witness);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Binding, DestinationKind, Exchange, Value, Vhost};
    use crate::routing::Version;

    #[test]
    fn a_headers_binding_gives_the_headers_it_takes_and_one_that_takes_none_gives_none() {
        let mut v = Vhost::new("v");
        let x = Exchange {
            name: "h".into(),
            kind: "headers".into(),
            durable: true,
            auto_delete: false,
            internal: false,
            arguments: Table::new(),
        };
        v.exchanges.insert("h".into(), x);
        let bind = |pairs: &[(&str, Value)]| Binding {
            source: "h".into(),
            destination_kind: DestinationKind::Queue,
            destination: "q".into(),
            routing_key: String::new(),
            arguments: pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
        };
        let s = |x: &str| Value::String(x.into());
        v.bindings.insert(bind(&[("x-match", s("all")), ("stage", s("retry")), ("seen", Value::Null)]));
        v.bindings.insert(bind(&[("x-match", s("any"))]));
        let router = Router::new(&v, Version::NEWEST);
        let found = router.headers_into("q");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].get("stage"), Some(&s("retry")));
        assert_eq!(found[0].get("seen"), Some(&Value::Null));
        assert!(router.headers_into("other").is_empty());
    }
}
