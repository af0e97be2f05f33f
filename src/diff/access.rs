//! Access is not data, but losing it is as hard to undo: removing a user or
//! its permissions, or narrowing what they grant, needs --allow-destroy, and
//! taking access away from the user warren connects as needs --allow-lockout. That user is the one an
//! apply's remaining steps, its records and the next run depend on; an
//! apply that removed it would stop halfway with nobody able to finish.

use std::collections::BTreeSet;

use super::{Action, Change, Declared};
use crate::model::kinds::{self, Object, users};
use crate::model::{Narrowed, ObjectKey, Password, Permission, Topology, User, Vhost, grants, narrowed};

/// Marks the changes to users and permissions that remove access, and
/// those that take it from `connected` (the user warren runs as), saying
/// why in their reasons.
/// `stale` names the users whose password from the environment does not
/// match the live hash.
pub(super) fn guard(
    changes: &mut [Change],
    desired: &Topology,
    live: &Topology,
    connected: Option<&str>,
    stale: &BTreeSet<String>,
) {
    for c in changes.iter_mut() {
        let user = match (&c.key, users::name_of(&c.key)) {
            (_, Some(name)) => name,
            (key, _) if let Some((_, user)) = kinds::permissions::name_of(key) => user,
            (ObjectKey::Object { name, .. }, _) if name.kind.table == TOPIC_PERMISSIONS => name.id[0].as_str(),
            _ => continue,
        };
        if c.action == Action::Destroy {
            c.requires_allow_destroy = true;
        }
        let lost = narrowing(c, desired, live);
        let narrows = lost.is_some();
        if let Some(lost) = lost {
            c.requires_allow_destroy = true;
            c.reason = format!("{}; {lost}", c.reason);
        }
        if connected == Some(user) && takes_access(c, live, stale, narrows) {
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

const TOPIC_PERMISSIONS: &str = "topic_permissions";

/// What a change to permissions or a topic permission takes away, in
/// words, when the new expressions grant less than the live ones: then the
/// user's clients are refused what they did before. A topic permission
/// made where there was none narrows the keys of a user who could publish
/// to (or bind from) the exchange with any key.
fn narrowing(c: &Change, desired: &Topology, live: &Topology) -> Option<String> {
    let lost = match (&c.key, &c.declared) {
        (key, Some(Declared::Permission(want)))
            if c.action == Action::Update
                && let Some((vhost, user)) = kinds::permissions::name_of(key) =>
        {
            let have = live.vhosts.get(vhost)?.permission(user)?;
            permissions([desired.vhosts.get(vhost), live.vhosts.get(vhost)], &have, want)
        }
        (ObjectKey::Object { vhost: Some(vhost), name }, Some(Declared::Object(want)))
            if name.kind.table == TOPIC_PERMISSIONS =>
        {
            let v = live.vhosts.get(vhost)?;
            topic_permission(v.permission(&name.id[0]).as_ref(), v.objects.get(name), want, &name.id[1])
        }
        _ => return None,
    };
    if lost.is_empty() {
        return None;
    }
    // Parts that lose the same are named together.
    let mut grouped: Vec<(Vec<&str>, &Loss)> = Vec::new();
    for (part, loss) in &lost {
        match grouped.iter_mut().find(|(_, l)| *l == loss) {
            Some((parts, _)) => parts.push(part),
            None => grouped.push((vec![part], loss)),
        }
    }
    let said = grouped.iter().map(|(parts, loss)| loss.said(parts));
    Some(format!("the user loses access: {}", said.collect::<Vec<_>>().join("; ")))
}

/// What one part of a permission (`configure`, `write`, `read`) loses.
#[derive(PartialEq)]
enum Loss {
    /// Something it granted, said as a reader knows it (`queue "audit"`).
    Name(String),
    /// Not known: expressions warren cannot compare.
    Unknown { old: String, new: String },
}

impl Loss {
    /// The loss of `parts`, said with them.
    fn said(&self, parts: &[&str]) -> String {
        let parts: Vec<String> = parts.iter().map(|p| format!("`{p}`")).collect();
        let (last, rest) = parts.split_last().expect("one part at least");
        let named = match rest {
            [] => last.clone(),
            _ => format!("{} and {last}", rest.join(", ")),
        };
        match self {
            Loss::Name(what) => {
                format!("{named} no longer {} {what}", if rest.is_empty() { "grants" } else { "grant" })
            }
            Loss::Unknown { old, new } => format!("{named} may grant less: warren cannot compare {old:?} with {new:?}"),
        }
    }
}

/// What each of `configure`, `write` and `read` loses, named by an object
/// of the vhost (declared or live) where one is lost, so that a reader
/// recognises it.
fn permissions(sides: [Option<&Vhost>; 2], have: &Permission, want: &Permission) -> Vec<(&'static str, Loss)> {
    let sides = sides.into_iter().flatten();
    let queues: BTreeSet<&str> = sides.clone().flat_map(|v| v.queues.keys()).map(String::as_str).collect();
    let exchanges: BTreeSet<&str> = sides.flat_map(|v| v.exchanges.keys()).map(String::as_str).collect();
    // The empty name is lost only when no other is (`grant::narrowed`),
    // and losing it loses nothing: RabbitMQ checks no empty name. A
    // publish to the default exchange checks `write` on "amq.default", a
    // server-named queue its name, and a queue named "" is the channel's
    // last declared one, named before the check (3.10.8 and 4.0.5).
    let object = |name: &str| match (queues.contains(name), exchanges.contains(name)) {
        _ if name.is_empty() => None,
        (true, _) => Some(format!("queue \"{name}\"")),
        (_, true) => Some(format!("exchange \"{name}\"")),
        _ => Some(format!("a name such as \"{name}\"")),
    };
    let parts = [
        ("configure", &have.configure, &want.configure),
        ("write", &have.write, &want.write),
        ("read", &have.read, &want.read),
    ];
    let known = || queues.iter().chain(&exchanges).copied();
    parts.into_iter().filter_map(|(part, old, new)| lost(part, old, new, known(), object)).collect()
}

/// What a topic permission's `write` and `read` lose on `exchange`; with
/// none live, what the user's permissions let it do there with any key.
fn topic_permission(
    access: Option<&Permission>,
    had: Option<&crate::model::Table>,
    want: &Object,
    exchange: &str,
) -> Vec<(&'static str, Loss)> {
    let key = |k: &str| Some(format!("routing key \"{k}\" on exchange \"{exchange}\""));
    let old = |part: &str| match had {
        Some(body) => body.get(part).and_then(|v| v.as_str()).map(str::to_string),
        // No topic permission: every key, where the user may use the
        // exchange at all (an expression warren cannot read counts as may).
        None => access
            .map(|p| if part == "write" { &p.write } else { &p.read })
            .filter(|e| grants(e, exchange) != Some(false))
            .map(|_| ".*".to_string()),
    };
    ["write", "read"]
        .into_iter()
        .filter_map(|part| lost(part, &old(part)?, want.text(part)?, std::iter::empty(), key))
        .collect()
}

/// What `part` loses going from `old` to `new`, a name lost said by
/// `object` (`None`: losing that name loses nothing).
fn lost<'a>(
    part: &'static str,
    old: &str,
    new: &str,
    known: impl IntoIterator<Item = &'a str>,
    object: impl Fn(&str) -> Option<String>,
) -> Option<(&'static str, Loss)> {
    match narrowed(old, new, known) {
        Narrowed::No => None,
        Narrowed::Loses(name) => Some((part, Loss::Name(object(&name)?))),
        Narrowed::Unknown => Some((part, Loss::Unknown { old: old.to_string(), new: new.to_string() })),
    }
}

/// Whether `want` sets a limit below `have`'s: a number where there was
/// none or `-1` (no limit), or a smaller one.
fn lowers_a_limit(want: &User, have: &User) -> bool {
    let had = |name: &str| have.limits.as_ref().and_then(|l| l.get(name)).copied().filter(|n| *n >= 0);
    want.limits.iter().flatten().any(|(name, n)| *n >= 0 && had(name).is_none_or(|h| *n < h))
}

/// Whether a change to the connected user's user or permissions reduces
/// what it may do: destroying either, removing a tag, a new password (the
/// one warren holds stops working), a limit lowered (warren's own AMQP
/// connection and channels count against it), or permissions that grant
/// less (`narrows`, as [`narrowing`] found: one it cannot compare counts).
fn takes_access(c: &Change, live: &Topology, stale: &BTreeSet<String>, narrows: bool) -> bool {
    match (&c.action, &c.key, &c.declared) {
        (Action::Destroy, _, _) => true,
        (Action::Update, key, Some(Declared::User(want))) if users::name_of(key).is_some() => {
            let Some(have) = users::name_of(key).and_then(|name| live.user(name)) else { return false };
            let lost_tag = have.tags.iter().any(|t| !want.tags.contains(t));
            let new_password = match &want.password {
                Password::None => false,
                Password::Env(_) => stale.contains(&have.name),
                hash => *hash != have.password,
            };
            lost_tag || new_password || lowers_a_limit(want, &have)
        }
        (Action::Update, key, _) if kinds::permissions::name_of(key).is_some() => narrows,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn permission(configure: &str, write: &str, read: &str) -> Permission {
        Permission { user: "app".into(), configure: configure.into(), write: write.into(), read: read.into() }
    }

    fn said(losses: &[(&str, Loss)]) -> Vec<String> {
        losses.iter().map(|(part, loss)| loss.said(&[part])).collect()
    }

    /// Going from `^$` (the empty expression) to one name loses only the
    /// empty name, which RabbitMQ never checks: nothing is lost.
    #[test]
    fn losing_only_the_empty_name_loses_nothing() {
        let (have, want) = (permission("^$", "^$", "^$"), permission("^a$", "^a$", "^a$"));
        assert!(permissions([None, None], &have, &want).is_empty());
        let losses = permissions([None, None], &permission("", "", ".*"), &permission("^a$", "^a$", "^a$"));
        assert_eq!(said(&losses), ["`read` no longer grants a name such as \"b\""]);
    }
}
