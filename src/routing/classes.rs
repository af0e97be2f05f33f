//! Classes of routing keys: the keys an exchange (and every exchange it
//! reaches) cannot tell apart. A key's route depends only on which
//! binding keys it equals (direct) and which patterns it matches (topic),
//! so keys with the same answer to every one of those questions route
//! alike. Such a class is found by walking all the binding keys at once
//! as one automaton, word by word; words no binding key names behave
//! alike, so one fresh word stands for all of them, and the walk is
//! finite.

use rustc_hash::{FxHashMap, FxHashSet};

/// A word of a binding key as a matcher reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Word<'t> {
    Lit(&'t str),
    /// `*` in a topic pattern: one word.
    Star,
    /// `#` in a topic pattern: zero or more words.
    Hash,
}

/// One question a key answers: does it equal this direct binding key
/// (`literal`), or match this topic pattern. It borrows its text: a plan's
/// routing change makes one for each binding key of the vhost.
#[derive(Debug, Clone)]
pub(super) struct Matcher<'t> {
    pub text: &'t str,
    pub literal: bool,
    words: Vec<Word<'t>>,
    /// How many bytes of `text` its leading literal words take, with the
    /// dot after each but the last word: two matchers whose texts differ
    /// within both such heads differ in a literal word, before any
    /// wildcard (see [`may_meet`]).
    fixed: usize,
}

impl<'t> Matcher<'t> {
    pub(super) fn new(text: &'t str, literal: bool) -> Self {
        let split = (!text.is_empty()).then(|| text.split('.')).into_iter().flatten();
        let words = split
            .map(|w| match w {
                "*" if !literal => Word::Star,
                "#" if !literal => Word::Hash,
                w => Word::Lit(w),
            })
            .collect::<Vec<_>>();
        let mut fixed = 0;
        for (i, w) in words.iter().enumerate() {
            let Word::Lit(w) = w else { break };
            fixed += w.len() + usize::from(i + 1 < words.len());
        }
        Matcher { text, literal, words, fixed }
    }

    /// Whether `key` answers yes.
    #[cfg(test)]
    pub(super) fn takes(&self, key: &str) -> bool {
        if self.literal { self.text == key } else { super::topic::matches(self.text, key) }
    }
}

/// Whether some key may answer yes to both: false only when none can,
/// told cheaply from the words before the first `#` and after the last.
pub(super) fn may_meet(a: &Matcher, b: &Matcher) -> bool {
    // Most pairs differ early in a literal word: told by one comparison.
    let head = a.fixed.min(b.fixed);
    a.text.as_bytes()[..head] == b.text.as_bytes()[..head] && words_agree(a, b)
}

/// [`may_meet`] word by word.
fn words_agree(a: &Matcher, b: &Matcher) -> bool {
    fn agree<'w, 't: 'w>(a: impl Iterator<Item = &'w Word<'t>>, b: impl Iterator<Item = &'w Word<'t>>) -> bool {
        let (mut a, mut b) = (a.peekable(), b.peekable());
        loop {
            match (a.next(), b.next()) {
                (Some(Word::Hash), _) | (_, Some(Word::Hash)) => return true,
                (None, None) => return true,
                (None, Some(_)) | (Some(_), None) => return false,
                (Some(Word::Lit(x)), Some(Word::Lit(y))) if x != y => return false,
                _ => {}
            }
        }
    }
    agree(a.words.iter(), b.words.iter()) && agree(a.words.iter().rev(), b.words.iter().rev())
}

/// Where the walk stands: each matcher's positions still alive.
type State = Vec<(u32, u16)>;

/// A state walked, with the state and word it was first reached from
/// (`None`: a fresh word).
type Walked = (State, Option<(usize, Option<Box<str>>)>);

/// One class: the matchers its keys answer yes to, and its shortest key.
#[derive(Debug, Clone)]
pub(super) struct Atom {
    pub accepts: Vec<u32>,
    pub key: String,
}

/// More classes than the walk may look at.
#[derive(Debug)]
pub(super) struct TooMany;

/// The classes of keys that `ids` (indexes into `all`) tell apart; with
/// `wanted`, only the classes whose keys answer yes to one of those (the
/// walk stops where none can any more). `fresh` is a word no matcher
/// names. At most `cap` states are walked.
pub(super) fn atoms(
    all: &[Matcher<'_>],
    ids: &[u32],
    wanted: Option<&FxHashSet<u32>>,
    fresh: &str,
    cap: usize,
) -> Result<Vec<Atom>, TooMany> {
    let start = closed(all, ids.iter().map(|&i| (i, 0)).collect());
    // A state reached by the one key of one empty word is kept apart: that
    // key is the empty key, which has no words, so it cannot stand for
    // the keys of the state.
    let mut seen: FxHashMap<(State, bool), usize> = FxHashMap::default();
    // Each state once, with the state and word it was reached from.
    let mut states: Vec<Walked> = vec![(start.clone(), None)];
    seen.insert((start, false), 0);
    let mut found: FxHashMap<Vec<u32>, String> = FxHashMap::default();
    let mut order: Vec<Vec<u32>> = Vec::new();
    let mut i = 0;
    while i < states.len() {
        if states.len() > cap {
            return Err(TooMany);
        }
        let state = states[i].0.clone();
        let alive = |s: &State| wanted.is_none_or(|w| s.iter().any(|(m, _)| w.contains(m)));
        let accepts = accepting(all, &state);
        let counted = wanted.is_none_or(|w| accepts.iter().any(|m| w.contains(m)));
        // A key of one empty word is the empty key, which has no words.
        let path = key_of(&states, i, fresh);
        if counted && path.is_some() && !found.contains_key(&accepts) {
            found.insert(accepts.clone(), path.unwrap_or_default());
            order.push(accepts);
        }
        for (word, next) in moves(all, &state, wanted) {
            let lone_empty = i == 0 && word.as_deref() == Some("");
            if !alive(&next) || seen.contains_key(&(next.clone(), lone_empty)) {
                continue;
            }
            seen.insert((next.clone(), lone_empty), states.len());
            states.push((next, Some((i, word))));
        }
        i += 1;
    }
    Ok(order.into_iter().map(|a| Atom { key: found.remove(&a).unwrap_or_default(), accepts: a }).collect())
}

/// The key that reached state `i`; `None` for the one-empty-word key.
fn key_of(states: &[Walked], mut i: usize, fresh: &str) -> Option<String> {
    let mut words: Vec<&str> = Vec::new();
    while let Some((from, word)) = &states[i].1 {
        words.push(word.as_deref().unwrap_or(fresh));
        i = *from;
    }
    words.reverse();
    if words.len() == 1 && words[0].is_empty() {
        return None;
    }
    Some(words.join("."))
}

/// The matchers that take a key ending in `state`.
fn accepting(all: &[Matcher<'_>], state: &State) -> Vec<u32> {
    let mut out: Vec<u32> =
        state.iter().filter(|(m, p)| all[*m as usize].words.len() == *p as usize).map(|(m, _)| *m).collect();
    out.dedup();
    out
}

/// The states one word further, for each word that can tell keys apart
/// here (`None`: any word no live position names).
fn moves(all: &[Matcher<'_>], state: &State, wanted: Option<&FxHashSet<u32>>) -> Vec<(Option<Box<str>>, State)> {
    let word = |(m, p): &(u32, u16)| all[*m as usize].words.get(*p as usize);
    let mut by_word: FxHashMap<&str, Vec<(u32, u16)>> = FxHashMap::default();
    let mut wild: Vec<(u32, u16)> = Vec::new();
    let mut wanted_wild = false;
    for at in state {
        match word(at) {
            Some(Word::Lit(w)) => by_word.entry(*w).or_default().push((at.0, at.1 + 1)),
            Some(Word::Star) => {
                wild.push((at.0, at.1 + 1));
                wanted_wild |= wanted.is_none_or(|w| w.contains(&at.0));
            }
            Some(Word::Hash) => {
                wild.push(*at);
                wanted_wild |= wanted.is_none_or(|w| w.contains(&at.0));
            }
            None => {}
        }
    }
    let mut out = Vec::new();
    let mut words: Vec<&str> = by_word.keys().copied().collect();
    words.sort_unstable();
    for w in words {
        // Past a word only unwanted matchers name, with no wanted
        // wildcard, no wanted matcher is alive.
        if !wanted_wild && wanted.is_some_and(|set| by_word[w].iter().all(|(m, _)| !set.contains(m))) {
            continue;
        }
        let mut next = by_word[w].clone();
        next.extend(wild.iter().copied());
        out.push((Some(w.into()), closed(all, next)));
    }
    // Even with no wildcard: the keys no matcher takes are a class.
    out.push((None, closed(all, wild)));
    out
}

/// `state` with each `#` that can be passed without a word passed.
fn closed(all: &[Matcher<'_>], mut state: State) -> State {
    let mut i = 0;
    while i < state.len() {
        let (m, p) = state[i];
        if all[m as usize].words.get(p as usize) == Some(&Word::Hash) {
            state.push((m, p + 1));
        }
        i += 1;
    }
    state.sort_unstable();
    state.dedup();
    state
}

/// A word that no matcher names: `x`, else `x1`, `x2`…
pub(super) fn fresh_word<'a, 't: 'a>(matchers: impl Iterator<Item = &'a Matcher<'t>>) -> String {
    let mut used: FxHashSet<&str> = FxHashSet::default();
    for m in matchers {
        for w in &m.words {
            if let Word::Lit(w) = w {
                used.insert(w);
            }
        }
    }
    (0..).map(|i| if i == 0 { "x".to_string() } else { format!("x{i}") }).find(|w| !used.contains(w.as_str())).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes(patterns: &[(&str, bool)]) -> Vec<(Vec<u32>, String)> {
        let all: Vec<Matcher> = patterns.iter().map(|(p, l)| Matcher::new(p, *l)).collect();
        let ids: Vec<u32> = (0..all.len() as u32).collect();
        let fresh = fresh_word(all.iter());
        let atoms = atoms(&all, &ids, None, &fresh, 10_000).unwrap();
        atoms.into_iter().map(|a| (a.accepts, a.key)).collect()
    }

    /// The comparison of the matchers' heads refuses only pairs that
    /// their words refuse.
    #[test]
    fn heads_refuse_as_words_do() {
        let mut texts = vec![String::new()];
        for _ in 0..3 {
            let longer: Vec<String> = texts
                .iter()
                .flat_map(|t| {
                    ["a", "b", "ab", "", "*", "#"]
                        .map(|w| if t.is_empty() { w.to_string() } else { format!("{t}.{w}") })
                })
                .collect();
            texts.extend(longer);
        }
        texts.sort();
        texts.dedup();
        let all: Vec<Matcher> = texts.iter().flat_map(|t| [Matcher::new(t, true), Matcher::new(t, false)]).collect();
        for a in &all {
            for b in &all {
                assert_eq!(may_meet(a, b), words_agree(a, b), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn each_class_key_answers_as_its_class() {
        let patterns = [("a.*", false), ("a.b", true), ("#.b", false), ("#", false), ("*", true)];
        let all: Vec<Matcher> = patterns.iter().map(|(p, l)| Matcher::new(p, *l)).collect();
        let found = classes(&patterns);
        assert!(found.len() >= 5, "{found:?}");
        for (accepts, key) in found {
            let expect: Vec<u32> = (0..all.len() as u32).filter(|i| all[*i as usize].takes(&key)).collect();
            assert_eq!(accepts, expect, "{key:?}");
        }
    }
}
