//! Users and their permissions. What losing access needs (--allow-destroy,
//! --allow-lockout) is decided after, by `access.rs`.

use super::attributes;
use super::change::Declared;
use super::differ::Differ;
use super::sides::Sides;
use crate::model::kinds::{permissions, users};
use crate::model::{Password, Topology, User};

/// The live user's limits as the files manage them: none when the files
/// do not set `limits`, else all of the live ones (none read as empty).
pub(super) fn managed_limits(have: &User, want: &User) -> Option<std::collections::BTreeMap<String, i64>> {
    want.limits.as_ref().map(|_| have.limits.clone().unwrap_or_default())
}

impl Differ<'_> {
    pub(super) fn users(&mut self, desired: &Topology, live: &Topology) {
        // Users are compared typed, not as the generic objects are: a
        // password by its hash and algorithm, or its variable's against the
        // live hash, and only the limits the files give.
        let (desired_users, live_users) = (desired.users(), live.users());
        for (name, w) in &desired_users {
            let key = users::key(name);
            match live_users.get(name) {
                None => {
                    self.created(key, attributes::user(w), "declared in the files", Some(Declared::User(w.clone())))
                }
                Some(h) if h.tags != w.tags || managed_limits(h, w) != w.limits || !self.same_password(w, h) => {
                    let before = User { limits: managed_limits(h, w), ..h.clone() };
                    self.updated(key, attributes::user(&before), attributes::user(w), Declared::User(w.clone()))
                }
                Some(_) => {}
            }
        }
        // An external user is the files' to name and never warren's to
        // touch, as an external exchange or queue is.
        let external = |n: &str| desired.vhosts.values().any(|v| v.external.users.contains(n));
        for (name, h) in live_users.iter().filter(|(n, _)| !desired_users.contains_key(*n) && !external(n)) {
            self.absent(users::key(name), attributes::user(h), false);
        }
    }

    /// Whether the live password is already the desired one. A password
    /// from the environment can only be checked against the live hash by
    /// the caller, who reads the environment.
    fn same_password(&self, want: &User, have: &User) -> bool {
        const DEFAULT: &str = "rabbit_password_hashing_sha256";
        match (&want.password, &have.password) {
            (Password::Env(_), _) => !self.facts.stale_passwords.contains(&want.name),
            (Password::Hash { hash: a, algorithm: x }, Password::Hash { hash: b, algorithm: y }) => {
                a == b && x.as_deref().unwrap_or(DEFAULT) == y.as_deref().unwrap_or(DEFAULT)
            }
            (a, b) => a == b,
        }
    }

    /// The permissions of a vhost's users.
    pub(super) fn permissions(&mut self, s: &Sides) {
        // Compared typed, as before permissions were objects: the plan's
        // attributes and `Op::PutPermission` are the typed permission's.
        let v = s.v;
        self.mutable(
            &s.want.permissions(),
            &s.have.permissions(),
            |u| permissions::key(v, u),
            attributes::permission,
            |p| Declared::Permission(p.clone()),
        );
    }
}
