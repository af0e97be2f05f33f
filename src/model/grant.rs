//! What a permission's regular expression grants, as RabbitMQ reads it:
//! every name (or routing key) it matches anywhere, since the broker runs
//! it unanchored (`re:run/3` in `rabbit_auth_backend_internal`), the empty
//! expression granting nothing (the broker reads it as `^$`).
//!
//! A plan asks whether a new expression grants all the old one did: if not,
//! the user loses access, which apply refuses without --allow-destroy.
//! Matching the names of today's objects is not enough (a queue declared
//! tomorrow may be the one lost), so both expressions become automata over
//! bytes, as Erlang's `re` reads a binary without its `unicode` option, and
//! a walk of the two together looks for a name the old one grants and the
//! new one does not. One difference is left: PCRE's `$` also matches before
//! a name's final newline, which no real name has.

use std::collections::{HashMap, VecDeque};

use regex_automata::dfa::{Automaton, StartKind, dense};

/// An automaton that owns its tables.
type Dfa = dense::DFA<Vec<u32>>;
use regex_automata::util::primitives::StateID;
use regex_automata::util::{start, syntax};
use regex_automata::{Anchored, Input, MatchKind, nfa::thompson};

/// What a new expression takes away from an old one.
#[derive(Debug, PartialEq, Eq)]
pub enum Narrowed {
    /// Nothing: the new expression grants every name the old one did.
    No,
    /// A name the old expression grants and the new one does not.
    Loses(String),
    /// Not known: an expression warren cannot read as a regular language
    /// (a back-reference, a look-around, a topic permission's `{username}`)
    /// or too large to compare. Read as a loss, since a plan that cannot
    /// prove access kept must say it may be lost.
    Unknown,
}

/// Product states a comparison may visit before it gives up (`Unknown`).
/// Permissions' expressions are short: theirs stay in the hundreds.
const MAX_STATES: usize = 100_000;

/// Bytes in the order the walk tries them, so that the name it finds reads
/// as a name: letters, digits and separators first.
fn bytes() -> impl Iterator<Item = u8> {
    let readable = (b'a'..=b'z').chain(b'0'..=b'9').chain(*b".-_").chain(b'A'..=b'Z');
    readable.chain((0..=255u8).filter(|b| !(b.is_ascii_alphanumeric() || b".-_".contains(b))))
}

/// Whether `new` grants every name `old` grants, and if not, a name it
/// loses: the first of `known` that it loses (names of objects, for an
/// example a reader recognises), or else one the walk makes up.
pub fn narrowed<'a>(old: &str, new: &str, known: impl IntoIterator<Item = &'a str>) -> Narrowed {
    if effective(old) == effective(new) {
        return Narrowed::No;
    }
    let (Some(o), Some(n)) = (automaton(old), automaton(new)) else { return Narrowed::Unknown };
    let made_up = match lost(&o, &n) {
        Walk::Nothing => return Narrowed::No,
        Walk::Name(name) => String::from_utf8_lossy(&name).into_owned(),
        Walk::TooLarge => return Narrowed::Unknown,
    };
    // Only once a loss is proven, and among a bounded number of names: a
    // plan changing 500 users' permissions in a vhost of 10,000 queues
    // would otherwise match millions of names.
    let grants = |dfa: &Dfa, name: &str| matches!(dfa.try_search_fwd(&Input::new(name)), Ok(Some(_)));
    let example = known.into_iter().take(KNOWN_TRIED).find(|name| grants(&o, name) && !grants(&n, name));
    Narrowed::Loses(example.map_or(made_up, str::to_string))
}

/// Known names tried for an example of a loss.
const KNOWN_TRIED: usize = 2_000;

/// Whether `expression` grants `name`, as the broker decides it; `None`
/// for an expression warren cannot read.
pub fn grants(expression: &str, name: &str) -> Option<bool> {
    let dfa = automaton(expression)?;
    dfa.try_search_fwd(&Input::new(name)).ok().map(|m| m.is_some())
}

/// The expression the broker runs: the empty one is `^$`.
fn effective(expression: &str) -> &str {
    if expression.is_empty() { "^$" } else { expression }
}

fn automaton(expression: &str) -> Option<Dfa> {
    dense::Builder::new()
        .syntax(syntax::Config::new().unicode(false).utf8(false))
        .thompson(thompson::Config::new().utf8(false))
        .configure(
            dense::Config::new()
                .match_kind(MatchKind::All)
                .start_kind(StartKind::Unanchored)
                .dfa_size_limit(Some(1 << 20))
                .determinize_size_limit(Some(1 << 20)),
        )
        .build(effective(expression))
        .ok()
}

enum Walk {
    Nothing,
    Name(Vec<u8>),
    TooLarge,
}

/// A state of the two automata read together, and whether the old one has
/// matched already: a match anywhere grants the name, so once the old one
/// has matched it grants every longer name too, and once the new one has,
/// nothing on from there can be a loss.
type Pair = (StateID, StateID, bool);

/// Breadth first, so the name found is among the shortest; the empty name
/// only when no other is lost, since "" reads as a mistake in a plan.
fn lost(old: &Dfa, new: &Dfa) -> Walk {
    let begin = start::Config::new().anchored(Anchored::No);
    let (Ok(o), Ok(n)) = (old.start_state(&begin), new.start_state(&begin)) else { return Walk::TooLarge };
    let first: Pair = (o, n, false);
    let mut came_from: HashMap<Pair, Option<(Pair, u8)>> = HashMap::from([(first, None)]);
    let mut queue = VecDeque::from([first]);
    let mut empty = false;
    while let Some(pair @ (o, n, hit)) = queue.pop_front() {
        let old_grants = hit || old.is_match_state(old.next_eoi_state(o));
        if old_grants && !new.is_match_state(new.next_eoi_state(n)) {
            match pair == first {
                true => empty = true,
                false => return Walk::Name(name(&came_from, pair)),
            }
        }
        for b in bytes() {
            let (o2, n2) = (old.next_state(o, b), new.next_state(n, b));
            if new.is_match_state(n2) {
                continue;
            }
            let hit2 = hit || old.is_match_state(o2);
            if !hit2 && old.is_dead_state(o2) {
                continue;
            }
            let next = (o2, n2, hit2);
            if came_from.contains_key(&next) {
                continue;
            }
            if came_from.len() >= MAX_STATES {
                return Walk::TooLarge;
            }
            came_from.insert(next, Some((pair, b)));
            queue.push_back(next);
        }
    }
    if empty { Walk::Name(Vec::new()) } else { Walk::Nothing }
}

fn name(came_from: &HashMap<Pair, Option<(Pair, u8)>>, mut at: Pair) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(Some((before, b))) = came_from.get(&at) {
        out.push(*b);
        at = *before;
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loses(old: &str, new: &str) -> Narrowed {
        narrowed(old, new, [])
    }

    #[test]
    fn widening_or_rewriting_loses_nothing() {
        assert_eq!(loses("^a$", "^(?:a|b)$"), Narrowed::No);
        assert_eq!(loses("^orders\\.a$", "^orders\\..*"), Narrowed::No);
        assert_eq!(loses("^a$", "a"), Narrowed::No, "unanchored: `a` grants every name holding an a");
        assert_eq!(loses("^(a)$", "^a$"), Narrowed::No);
        assert_eq!(loses("", "^$"), Narrowed::No, "the broker reads the empty expression as ^$");
        assert_eq!(loses("^$", ".*"), Narrowed::No);
        assert_eq!(loses("foo", ".*"), Narrowed::No);
    }

    #[test]
    fn narrowing_names_a_name_lost() {
        assert_eq!(loses("^(?:a|b)$", "^a$"), Narrowed::Loses("b".into()));
        assert_eq!(loses(".*", "^$"), Narrowed::Loses("a".into()));
        assert_eq!(loses(".*", ""), Narrowed::Loses("a".into()));
        assert_eq!(loses("a", "^a$"), Narrowed::Loses("aa".into()));
        assert_eq!(loses("^$", "^a$"), Narrowed::Loses(String::new()));
        let known = ["legacy.audit", "orders.invoicing"];
        assert_eq!(narrowed(".*", "^orders\\.invoicing$", known), Narrowed::Loses("legacy.audit".into()));
    }

    #[test]
    fn what_cannot_be_compared_is_unknown() {
        assert_eq!(loses("^(a)\\1$", "^a$"), Narrowed::Unknown, "a back-reference");
        assert_eq!(loses("^{username}\\.", "^x$"), Narrowed::Unknown, "a topic permission's variable");
        assert_eq!(loses(".*", "(?=a)"), Narrowed::Unknown, "a look-ahead");
    }

    /// A user whose services consume many queues has an expression of as
    /// many names: still compared, not `Unknown`.
    #[test]
    fn an_expression_of_many_names_is_compared() {
        let names: Vec<String> = (0..200).map(|i| format!("orders\\.service-{i}\\.in")).collect();
        let all = format!("^(?:{})$", names.join("|"));
        let fewer = format!("^(?:{})$", names[1..].join("|"));
        assert_eq!(loses(&fewer, &all), Narrowed::No);
        assert_eq!(loses(&all, &fewer), Narrowed::Loses("orders.service-0.in".into()));
    }

    #[test]
    fn grants_as_the_broker_matches() {
        assert_eq!(grants("", ""), Some(true));
        assert_eq!(grants("", "a"), Some(false));
        assert_eq!(grants("orders", "shop.orders.dlx"), Some(true));
        assert_eq!(grants("^orders$", "shop.orders"), Some(false));
        assert_eq!(grants("(?=a)", "a"), None);
    }

    /// Checked against the matcher: each name of a small alphabet up to
    /// length four that the old expression grants and the new one does not
    /// exists exactly when the comparison says something is lost.
    #[test]
    fn the_comparison_agrees_with_matching_every_short_name() {
        let expressions = ["^a", "a$", "^a$", "a", "^(?:a|b)$", "^a.*", "^[ab]+$", "b", "^$", ".*", "^a\\.b$", "\\."];
        let mut names = vec![String::new()];
        for _ in 0..4 {
            let longer: Vec<String> = names.iter().flat_map(|n| ["a", "b", "."].map(|c| format!("{n}{c}"))).collect();
            names.extend(longer);
        }
        names.sort();
        names.dedup();
        let granted: HashMap<&str, Vec<&String>> =
            expressions.iter().map(|e| (*e, names.iter().filter(|n| grants(e, n) == Some(true)).collect())).collect();
        for old in expressions {
            for new in expressions {
                let missed = granted[old].iter().find(|n| !granted[new].contains(n));
                match loses(old, new) {
                    Narrowed::No => assert_eq!(missed, None, "{old} -> {new}"),
                    Narrowed::Loses(name) => {
                        assert_eq!(grants(old, &name), Some(true), "{old} -> {new}: {name:?}");
                        assert_eq!(grants(new, &name), Some(false), "{old} -> {new}: {name:?}");
                    }
                    Narrowed::Unknown => panic!("{old} -> {new}: both are regular"),
                }
            }
        }
    }
}
