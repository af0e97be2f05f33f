//! Access is not data, but losing it is as hard to undo: removing a user or
//! its permissions needs --allow-destroy, and taking access away from the
//! user warren connects as needs --allow-lockout. That user is the one an
//! apply's remaining steps, its records and the next run depend on; an
//! apply that removed it would stop halfway with nobody able to finish.

use std::collections::BTreeSet;

use super::{Action, Change, Declared};
use crate::model::kinds::users;
use crate::model::{ObjectKey, Password, Topology, User};

/// Marks the changes to users and permissions that remove access, and
/// those that take it from `connected` (the user warren runs as), saying
/// why in their reasons.
/// `stale` names the users whose password from the environment does not
/// match the live hash.
pub(super) fn guard(changes: &mut [Change], live: &Topology, connected: Option<&str>, stale: &BTreeSet<String>) {
    for c in changes.iter_mut() {
        let user = match (&c.key, users::name_of(&c.key)) {
            (_, Some(name)) => name,
            (ObjectKey::Permission { user, .. }, _) => user.as_str(),
            _ => continue,
        };
        if c.action == Action::Destroy {
            c.requires_allow_destroy = true;
        }
        if connected == Some(user) && takes_access(c, live, stale) {
            c.requires_allow_lockout = true;
            c.reason = format!(
                "{}; warren connects as user \"{user}\": this takes its own access away, and the rest of this apply, and every later one, may fail with it",
                c.reason
            );
        } else if c.action == Action::Destroy {
            let what = if users::name_of(&c.key).is_some() { "whoever logs in as it" } else { "the user" };
            c.reason = format!("{}; {what} loses this access", c.reason);
        }
    }
}

/// Whether a change to the connected user's user or permissions reduces
/// what it may do: destroying either, removing a tag, a new password (the
/// one warren holds stops working), a limit lowered (warren's own AMQP
/// connection and channels count against it), or any change of its
/// permissions (a regular expression cannot be proven to still cover what
/// it did).
/// Whether `want` sets a limit below `have`'s: a number where there was
/// none or `-1` (no limit), or a smaller one.
fn lowers_a_limit(want: &User, have: &User) -> bool {
    let had = |name: &str| have.limits.as_ref().and_then(|l| l.get(name)).copied().filter(|n| *n >= 0);
    want.limits.iter().flatten().any(|(name, n)| *n >= 0 && had(name).is_none_or(|h| *n < h))
}

fn takes_access(c: &Change, live: &Topology, stale: &BTreeSet<String>) -> bool {
    match (&c.action, &c.key, &c.declared) {
        (Action::Destroy, _, _) => true,
        (Action::Update, key, Some(Declared::User(want))) if users::name_of(key).is_some() => {
            let Some(have) = users::name_of(key).and_then(|name| live.users.get(name)) else { return false };
            let lost_tag = have.tags.iter().any(|t| !want.tags.contains(t));
            let new_password = match &want.password {
                Password::None => false,
                Password::Env(_) => stale.contains(&have.name),
                hash => *hash != have.password,
            };
            lost_tag || new_password || lowers_a_limit(want, have)
        }
        (Action::Update, ObjectKey::Permission { .. }, _) => true,
        _ => false,
    }
}
