//! A compiled migration that would move messages elsewhere: once its
//! steps have run, every key must reach the queues it reached before, the
//! new queue standing in the old one's place (with the bindings it adds
//! or drops). Compilation is meant to make that so; a migration that does
//! not is a bug in warren, refused rather than carried out.

use super::ROUTES_MOVED;
use crate::diagnostic::Diagnostic;
use crate::diff::Problem;
use crate::routing::change::ExchangeChange;

/// The refusal of the migration of `old` into `new` in vhost `v`, whose
/// end state changes routing as `change` says; none when only `old`
/// (standing for `new`) or `new` gains or loses keys: a migration in
/// flight has the new queue bound beside the old one until it ends.
pub fn routes_moved(v: &str, old: &str, new: &str, change: &[ExchangeChange]) -> Option<Problem> {
    let moved: Vec<String> = change
        .iter()
        .flat_map(|x| x.classes.iter().map(move |c| (x, c)))
        .filter(|(_, c)| c.stop().chain(c.start()).any(|q| q != old && q != new))
        .map(|(x, c)| format!("{} of exchange \"{}\"", c.describe(), x.exchange))
        .collect();
    let unknown: Vec<&String> = change.iter().flat_map(|x| &x.cannot_tell).collect();
    if moved.is_empty() && unknown.is_empty() {
        return None;
    }
    let what = if moved.is_empty() {
        format!("its end state cannot be told to route as before ({})", unknown[0])
    } else {
        format!("once its steps have run, {} would reach other queues than before", moved.join("; "))
    };
    let d = Diagnostic::error(
        ROUTES_MOVED,
        format!("the migration of queue \"{old}\" into \"{new}\" is refused: {what}"),
    )
    .help("this is a bug in warren's migration: please report it with this plan; migrate this queue by hand meanwhile");
    Some(Problem::at_replaces(v, new, d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::change::{KeyClass, Term};

    fn change(before: &[&str], after: &[&str]) -> Vec<ExchangeChange> {
        let set = |qs: &[&str]| qs.iter().map(|q| q.to_string()).collect();
        let class = KeyClass {
            keys: vec![Term::Key("k".into())],
            except: vec![],
            example: "k".into(),
            before: set(before),
            after: set(after),
        };
        let (existence, summary) = (None, None);
        vec![ExchangeChange { exchange: "x".into(), existence, classes: vec![class], cannot_tell: vec![], summary }]
    }

    #[test]
    fn only_the_replaced_queue_may_gain_or_lose_keys() {
        assert!(routes_moved("/", "old", "new", &change(&["a"], &["a", "old"])).is_none());
        assert!(routes_moved("/", "old", "new", &change(&["old", "new"], &["old"])).is_none(), "in flight");
        let refused = routes_moved("/", "old", "new", &change(&["old"], &["b"])).expect("refused");
        assert_eq!(refused.diagnostic.code, ROUTES_MOVED);
        assert!(refused.diagnostic.message.contains("key \"k\" of exchange \"x\""), "{}", refused.diagnostic.message);
    }
}
