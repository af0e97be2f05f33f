//! Who a view of the in-memory broker logs in as, and what its tags and
//! permissions let it do, as a real broker decides it.

use regex::Regex;

use super::state::{ORIGIN, State, VhostState};
use crate::broker::{Answer, BrokerError};
use crate::model::{Binding, Permission};

/// The user a view logs in as, and what its tags allow.
pub(super) struct Who {
    pub name: String,
    pub admin: bool,
    pub policymaker: bool,
}

/// What a call needs of the user's permissions in a vhost.
#[derive(Clone, Copy)]
pub(super) enum Need<'a> {
    /// Any permission at all: a listing.
    Access,
    Configure(&'a str),
    /// Write on the destination and read on the source of a binding.
    Bind(&'a Binding),
}

/// The user `user`, or the refusal a real broker gives at login.
pub(super) fn who(user: &str, s: &State) -> Answer<Who> {
    let Some(u) = s.users.get(user) else {
        return Err(BrokerError::BadCredentials { endpoint: ORIGIN.into(), user: user.to_string() });
    };
    let admin = u.has_tag("administrator");
    let policymaker = admin || u.has_tag("policymaker");
    if !(policymaker || u.has_tag("management") || u.has_tag("monitoring")) {
        return Err(BrokerError::NotManagementUser { user: user.to_string() });
    }
    Ok(Who { name: user.to_string(), admin, policymaker })
}

/// Whether the user sees vhost `name` (administrators see them all).
pub(super) fn sees(s: &State, who: &Who, name: &str) -> bool {
    who.admin || s.vhosts.get(name).is_some_and(|v| v.permissions.contains_key(&who.name))
}

/// Every permission: what a vhost's creator gets in it.
pub(super) fn full_permission(user: &str) -> Permission {
    Permission { user: user.into(), configure: ".*".into(), write: ".*".into(), read: ".*".into() }
}

/// Whether user `who`'s permissions in `v` allow `need`. A permission is a
/// regular expression the name must match anywhere; `""` allows nothing.
pub(super) fn permits(v: &VhostState, who: &str, need: Need) -> bool {
    let Some(p) = v.permissions.get(who) else { return false };
    let fits = |re: &str, name: &str| !re.is_empty() && Regex::new(re).is_ok_and(|r| r.is_match(name));
    match need {
        Need::Access => true,
        Need::Configure(name) => fits(&p.configure, name),
        Need::Bind(b) => fits(&p.write, &b.destination) && fits(&p.read, &b.source),
    }
}
