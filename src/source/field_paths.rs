//! Field paths (`durable`, `arguments.x-message-ttl`) as numbers. A large
//! topology records about a million field places but a few dozen distinct
//! paths, so each place holds a number and each path is kept once, for
//! the whole process: the paths are the user's own keys, bounded by the
//! files read.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{LazyLock, PoisonError, RwLock};

/// A field path's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PathId(u32);

#[derive(Default)]
struct Paths {
    names: Vec<&'static str>,
    ids: HashMap<&'static str, PathId, rustc_hash::FxBuildHasher>,
}

static PATHS: LazyLock<RwLock<Paths>> = LazyLock::new(RwLock::default);

/// The number of `path`, if any place has been recorded at it.
pub(super) fn find(path: &str) -> Option<PathId> {
    PATHS.read().unwrap_or_else(PoisonError::into_inner).ids.get(path).copied()
}

/// The number of `path`, given one if it has none yet.
pub(super) fn intern(path: Cow<'static, str>) -> PathId {
    if let Some(id) = find(&path) {
        return id;
    }
    let mut paths = PATHS.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(id) = paths.ids.get(path.as_ref()) {
        return *id;
    }
    // Kept for the process: one copy of each distinct path, however many
    // places name it.
    let name: &'static str = match path {
        Cow::Borrowed(s) => s,
        Cow::Owned(s) => Box::leak(s.into_boxed_str()),
    };
    let id = PathId(u32::try_from(paths.names.len()).expect("fewer than 2^32 distinct field paths"));
    paths.names.push(name);
    paths.ids.insert(name, id);
    id
}

/// The path numbered `id`.
pub(super) fn name(id: PathId) -> &'static str {
    PATHS.read().unwrap_or_else(PoisonError::into_inner).names[id.0 as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_has_one_number_however_it_is_given() {
        let a = intern(Cow::Borrowed("test-path.a"));
        let b = intern(Cow::Owned("test-path.a".to_string()));
        assert_eq!(a, b);
        assert_eq!(find("test-path.a"), Some(a));
        assert_eq!(name(a), "test-path.a");
        assert_eq!(find("test-path.never-recorded"), None);
        assert_ne!(intern(Cow::Borrowed("test-path.b")), a);
    }
}
