//! A user the files list in `[external] users` that the broker does not
//! have: warren never creates it, so the permissions (and the services'
//! permissions) given to it cannot be set.

use super::EXTERNAL_USER_MISSING;
use crate::diagnostic::Diagnostic;
use crate::diff::Problem;
use crate::diff::differ::Differ;
use crate::model::Topology;

impl Differ<'_> {
    /// Before any write: each missing external user, once per vhost, at
    /// the permissions given to it there. Not when two topologies are
    /// compared offline, where the old side is not a broker.
    pub(in crate::diff) fn external_users_missing(&mut self, desired: &Topology, live: &Topology) {
        if self.options.comparing || self.options.review {
            return;
        }
        for (v, vhost) in &desired.vhosts {
            let missing = vhost.permission_users().filter(|u| vhost.external.users.contains(*u));
            for user in missing.filter(|u| !live.has_user(u) && !desired.has_user(u)) {
                let diagnostic = Diagnostic::error(
                    EXTERNAL_USER_MISSING,
                    format!("user \"{user}\" is external, and the broker has no such user: its permissions in vhost \"{v}\" cannot be set"),
                )
                .help("warren never creates an external user: create it where it is made (a directory, another tool), or declare it under [users] for warren to make");
                let key = crate::model::kinds::permissions::key(v, user);
                self.out.problems.push(Problem { key, field: None, diagnostic });
            }
        }
    }
}
