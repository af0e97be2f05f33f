//! Topic keys and patterns (`rabbit_exchange_type_topic`): words split at
//! dots, `*` one word, `#` zero or more. A key of zero length has zero
//! words (the broker's `split_topic_key(<<>>)` is `[]`), so the pattern
//! `#` takes it and `*` does not.
//!
//! Besides matching one key, the model asks two questions of patterns as
//! key classes: whether every key of one class is in another ([`covers`])
//! and whether two classes share a key ([`intersects`]). A key's `*` and
//! `#` are literal words.

fn words(s: &str) -> Vec<&str> {
    if s.is_empty() { Vec::new() } else { s.split('.').collect() }
}

/// The words of a key or pattern, as [`words`] has them, without a
/// vector: a router asks this of every topic binding a message meets.
#[derive(Clone)]
struct Words<'a>(Option<std::str::Split<'a, char>>);

impl<'a> Words<'a> {
    fn of(s: &'a str) -> Self {
        Words((!s.is_empty()).then(|| s.split('.')))
    }
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        self.0.as_mut()?.next()
    }
}

/// Whether `pattern` takes `key`: `#` as a glob's star over words, taking
/// one more word each time what follows it fails (the last `#` is the only
/// one worth retrying: the words before it are matched already), without
/// allocating.
pub fn matches(pattern: &str, key: &str) -> bool {
    let (mut p, mut k) = (Words::of(pattern), Words::of(key));
    // The pattern after the last `#` met, and the key where it resumes.
    let mut retry: Option<(Words, Words)> = None;
    loop {
        let (mut p_next, mut k_next) = (p.clone(), k.clone());
        match (p_next.next(), k_next.next()) {
            (Some("#"), _) => {
                retry = Some((p_next.clone(), k.clone()));
                p = p_next;
                continue;
            }
            (Some(w), Some(word)) if w == "*" || w == word => {
                (p, k) = (p_next, k_next);
                continue;
            }
            (None, None) => return true,
            _ => {}
        }
        let Some((after_hash, from)) = &mut retry else { return false };
        // The `#` takes one more word.
        if from.next().is_none() {
            return false;
        }
        (p, k) = (after_hash.clone(), from.clone());
    }
}

/// [`matches`] as an automaton: the reference it is checked against.
#[cfg(test)]
fn matches_by_states(pattern: &str, key: &str) -> bool {
    let pattern = Pattern::new(pattern);
    let mut states = pattern.start();
    for word in words(key) {
        states = pattern.step(&states, Some(word));
        if states.is_empty() {
            return false;
        }
    }
    pattern.accepts(&states)
}

/// Whether every key `inner` takes, `outer` takes too.
pub fn covers(outer: &str, inner: &str) -> bool {
    // Two answers without the search, which a walk asks of each topic
    // binding a message with any key meets (`covers(binding, "#")`): a
    // pattern of `#` alone takes every key; one with a word of its own
    // misses the keys made of other words, which `#` takes.
    // (The empty pattern has no word, and takes the empty key alone.)
    if !outer.is_empty() && outer.split('.').all(|w| w == "#") {
        return true;
    }
    if inner == "#" && outer.split('.').any(|w| w != "*" && w != "#") {
        return false;
    }
    !reachable(outer, inner, |outer, inner| inner && !outer)
}

/// Whether some key is taken by both patterns.
pub fn intersects(a: &str, b: &str) -> bool {
    reachable(a, b, |a, b| a && b)
}

/// Whether some key brings the two patterns to states for which `found`
/// (whether each accepts) holds. Words the patterns do not name behave
/// alike, so the keys to try are made of the patterns' words and one
/// other word (`None`), and the states of both patterns at once are
/// finitely many: a search over them answers for every key.
///
/// One sequence of words is no key: the empty word alone, whose string
/// is the empty key, which has no word. The search counts the words taken
/// (none, one, more) so that it never answers with that one.
fn reachable(a: &str, b: &str, found: impl Fn(bool, bool) -> bool) -> bool {
    let (a, b) = (Pattern::new(a), Pattern::new(b));
    let mut alphabet: Vec<Option<&str>> =
        a.words.iter().chain(&b.words).filter(|w| !matches!(**w, "*" | "#")).map(|w| Some(*w)).collect();
    alphabet.sort_unstable();
    alphabet.dedup();
    alphabet.push(None);
    let start = (a.start(), b.start(), Taken::None);
    let mut seen = std::collections::BTreeSet::from([start.clone()]);
    let mut work = vec![start];
    while let Some((sa, sb, taken)) = work.pop() {
        if taken != Taken::EmptyWord && found(a.accepts(&sa), b.accepts(&sb)) {
            return true;
        }
        for word in &alphabet {
            let taken = match (taken, word) {
                (Taken::None, Some("")) => Taken::EmptyWord,
                (Taken::None, _) => Taken::OneWord,
                _ => Taken::More,
            };
            let next = (a.step(&sa, *word), b.step(&sb, *word), taken);
            if seen.insert(next.clone()) {
                work.push(next);
            }
        }
    }
    false
}

/// The words a search has taken, as far as they tell a key from none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Taken {
    None,
    /// The empty word alone: no key.
    EmptyWord,
    OneWord,
    More,
}

/// A pattern as an automaton: its states are the positions between its
/// words, and a `#` may be passed without taking a word.
struct Pattern<'a> {
    words: Vec<&'a str>,
}

impl<'a> Pattern<'a> {
    fn new(pattern: &'a str) -> Self {
        Pattern { words: words(pattern) }
    }

    fn start(&self) -> Vec<usize> {
        self.closed(vec![0])
    }

    /// The states after taking `word` (`None`: a word the pattern does not name).
    fn step(&self, states: &[usize], word: Option<&str>) -> Vec<usize> {
        let mut next = Vec::new();
        for &i in states {
            match self.words.get(i) {
                Some(&"#") => next.push(i),
                Some(&"*") => next.push(i + 1),
                Some(w) if Some(*w) == word => next.push(i + 1),
                _ => {}
            }
        }
        self.closed(next)
    }

    /// The states with every `#` that can be passed without a word passed.
    fn closed(&self, mut states: Vec<usize>) -> Vec<usize> {
        let mut i = 0;
        while i < states.len() {
            let s = states[i];
            if self.words.get(s) == Some(&"#") {
                states.push(s + 1);
            }
            i += 1;
        }
        states.sort_unstable();
        states.dedup();
        states
    }

    fn accepts(&self, states: &[usize]) -> bool {
        states.contains(&self.words.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_stars_and_hashes() {
        assert!(matches("a.*.c", "a.b.c"));
        assert!(!matches("a.*.c", "a.c"));
        assert!(matches("a.#", "a"));
        assert!(matches("#", ""));
        assert!(!matches("*", ""));
        assert!(matches("", ""));
        assert!(!matches("", "a"));
        assert!(matches("#.b.#", "a.b.c.b"));
        assert!(matches("a..b", "a..b"));
        assert!(matches("*.*", "."));
        // A key's `*` is a word like any other.
        assert!(!matches("a.b", "a.*"));
        assert!(matches("a.*", "a.*"));
    }

    #[test]
    fn covering() {
        assert!(covers("#", "a.*.#"));
        assert!(covers("a.#", "a.*"));
        assert!(!covers("a.*", "a.#"));
        assert!(!covers("*.#", "#"));
        assert!(covers("#.#", "#"));
        assert!(covers("*", "*"));
        assert!(!covers("a", "*"));
        assert!(covers("*.b", "a.b"));
    }

    #[test]
    fn intersecting() {
        assert!(intersects("a.*", "*.b"));
        assert!(!intersects("a.*", "b.#"));
        assert!(intersects("#", ""));
        assert!(intersects("a.#", "#.b"));
        assert!(!intersects("*", ""));
        assert!(intersects("#.a.#", "b.#"));
        assert!(!intersects("a.b", "a.c"));
        assert!(intersects("*.*", "#.x"));
    }

    /// The three questions agree with brute force over short keys.
    /// Patterns with empty words, over keys with empty words: the empty
    /// word alone is no key (its string is the empty key), which the
    /// search must not try. `*.*.#` covers `#.`: every key `#.` takes has
    /// two words or more.
    #[test]
    fn patterns_with_empty_words_agree_with_every_short_key() {
        assert!(covers("*.*.#", "#."));
        let patterns = sequences(&["a", "*", "#", ""], 3);
        let keys = sequences(&["a", "c", ""], 4);
        for p in &patterns {
            for q in &patterns {
                let taken_by_q: Vec<&String> = keys.iter().filter(|k| matches(q, k)).collect();
                assert_eq!(covers(p, q), taken_by_q.iter().all(|k| matches(p, k)), "covers({p:?}, {q:?})");
                assert_eq!(intersects(p, q), taken_by_q.iter().any(|k| matches(p, k)), "intersects({p:?}, {q:?})");
            }
        }
    }

    #[test]
    fn patterns_agree_with_every_short_key() {
        let patterns = sequences(&["a", "b", "*", "#"], 3);
        let keys = sequences(&["a", "b", "c"], 5);
        for p in &patterns {
            for q in &patterns {
                let taken_by_q: Vec<&String> = keys.iter().filter(|k| matches(q, k)).collect();
                let every = taken_by_q.iter().all(|k| matches(p, k));
                let some = taken_by_q.iter().any(|k| matches(p, k));
                assert_eq!(covers(p, q), every, "covers({p:?}, {q:?})");
                assert_eq!(intersects(p, q), some, "intersects({p:?}, {q:?})");
            }
        }
    }

    /// The answers `covers` gives without the search (a pattern of `#`
    /// alone covers all; `#` is covered by no pattern with a word of its
    /// own) agree with brute force, patterns with empty words included.
    #[test]
    fn covering_without_the_search_agrees_with_every_short_key() {
        let patterns = sequences(&["a", "*", "#", ""], 3);
        let keys = sequences(&["a", "c", ""], 4);
        let hashes = |p: &str| !p.is_empty() && p.split('.').all(|w| w == "#");
        for p in &patterns {
            for q in patterns.iter().filter(|q| hashes(p) || *q == "#") {
                let every = keys.iter().filter(|k| matches(q, k)).all(|k| matches(p, k));
                assert_eq!(covers(p, q), every, "covers({p:?}, {q:?})");
            }
        }
    }

    /// The matcher without states answers as the automaton, over every
    /// short pattern and key, empty words and literal `*` and `#` included.
    #[test]
    fn matching_without_states_agrees_with_the_automaton() {
        let patterns = sequences(&["a", "b", "*", "#", ""], 4);
        let keys = sequences(&["a", "b", "", "*", "#"], 4);
        for p in &patterns {
            for k in &keys {
                assert_eq!(matches(p, k), matches_by_states(p, k), "matches({p:?}, {k:?})");
            }
        }
    }

    /// Every dot-joined sequence of up to `len` of `words`.
    fn sequences(words: &[&str], len: usize) -> Vec<String> {
        let mut all = vec![Vec::<&str>::new()];
        let mut last = all.clone();
        for _ in 0..len {
            last = last.iter().flat_map(|s| words.iter().map(move |w| [s.as_slice(), &[*w]].concat())).collect();
            all.extend(last.clone());
        }
        all.into_iter().map(|s| s.join(".")).collect()
    }
}
