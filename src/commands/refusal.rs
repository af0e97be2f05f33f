//! What stops an apply before its first write: rules over the plan and the
//! records, each with its exit code and its words. Pure: apply asks, shows
//! the answer and stops.

use std::collections::BTreeMap;
use std::fmt;

use super::planned::Planned;
use crate::error::{Error, Kind};
use crate::journal::Migration;
use crate::model::{Password, Topology};
use crate::plan::Op;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Refusal {
    /// Every error is one of the checks that refuse a plan (`diff::REFUSALS`).
    Checks,
    /// Errors that the files must fix first: how many.
    Errors(usize),
    /// Changes that could lose messages, routes or access, without
    /// --allow-destroy: what they can lose, in words, and each as
    /// `symbol key: reason`.
    Destroys { losses: &'static str, lines: Vec<String> },
    /// Changes that take access away from the user warren connects as,
    /// without --allow-lockout: each as `symbol key`.
    Lockout(Vec<String>),
    /// A user whose password comes from a variable that is not set.
    PasswordUnset { user: String, var: String },
    /// An object to write whose secret comes from a variable that is not set.
    SecretUnset { object: String, var: String },
    /// A migration of a queue the files declare, recorded in another journal
    /// than this run's (`at` says where this run's is).
    OtherJournal { migration: Box<Migration>, at: String },
}

impl Refusal {
    /// Refused for safety, or invalid input; the error says why.
    pub(super) fn error(&self) -> Error {
        let kind = match self {
            Refusal::Checks | Refusal::Destroys { .. } | Refusal::Lockout(_) | Refusal::OtherJournal { .. } => {
                Kind::Refused
            }
            Refusal::Errors(_) | Refusal::PasswordUnset { .. } | Refusal::SecretUnset { .. } => Kind::Invalid,
        };
        Error::new(kind).line(self.to_string())
    }
}

/// The first rule the plan breaks, if any, in the order apply checks them.
pub(super) fn of_plan(planned: &Planned, allow_destroy: bool, allow_lockout: bool) -> Option<Refusal> {
    let (plan, doc) = (&planned.plan, &planned.document);
    if !doc.errors.is_empty() {
        if doc.errors.iter().all(|e| crate::diff::REFUSALS.contains(&e.code.as_str())) {
            return Some(Refusal::Checks);
        }
        return Some(Refusal::Errors(doc.errors.len()));
    }
    if plan.is_empty() {
        return None;
    }
    if doc.summary.requires_allow_lockout && !allow_lockout {
        let lines = plan
            .changes
            .iter()
            .filter(|c| c.requires_allow_lockout)
            .map(|c| format!("{} {}", c.action.symbol(), c.key));
        return Some(Refusal::Lockout(lines.collect()));
    }
    if doc.summary.requires_allow_destroy && !allow_destroy {
        let lines = plan
            .changes
            .iter()
            .filter(|c| c.requires_allow_destroy)
            .map(|c| format!("{} {}: {}", c.action.symbol(), c.key, c.reason))
            .collect();
        return Some(Refusal::Destroys { losses: crate::render::human::losses(doc), lines });
    }
    plan.steps.iter().find_map(|s| match &s.op {
        Op::PutUser { user, .. } if !planned.passwords.contains_key(&user.name) => match &user.password {
            Password::Env(var) => Some(Refusal::PasswordUnset { user: user.name.clone(), var: var.clone() }),
            _ => None,
        },
        Op::PutObject { vhost, name, object } => crate::secrets::unread(&object.body)
            .map(|var| Refusal::SecretUnset { object: name.at(vhost.as_deref()), var: var.to_string() }),
        _ => None,
    })
}

/// A migration in flight of a queue `desired` declares that is in `live`
/// (every journal read) but not in `mine` (this run's journal): a run by
/// the other kind of user (an administrator keeps the records broker-wide,
/// other users inside the vhosts) started it, and only a run with that
/// journal can go on.
pub(super) fn of_journals(
    live: &BTreeMap<String, Migration>,
    mine: &BTreeMap<String, Migration>,
    desired: &Topology,
    at: String,
) -> Option<Refusal> {
    let declared = |v: &str, q: &str| desired.vhosts.get(v).is_some_and(|x| x.queues.contains_key(q));
    let m = live
        .values()
        .find(|m| !mine.contains_key(&m.id) && (declared(&m.vhost, &m.old) || declared(&m.vhost, &m.new)))?;
    Some(Refusal::OtherJournal { migration: Box::new(m.clone()), at })
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Checks => write!(f, "Refused: the checks above failed. Nothing was changed."),
            Refusal::Errors(n) => write!(f, "Nothing was changed: {} must be fixed first.", super::plan::errors(*n)),
            Refusal::Destroys { losses, lines } => listed(
                f,
                &format!("Refused: this plan can lose {losses}, and --allow-destroy was not given. It would:"),
                lines,
                "Nothing was changed. Re-run with --allow-destroy if that is what you want.",
            ),
            Refusal::Lockout(lines) => listed(
                f,
                "Refused: this plan takes access away from the user warren connects as, and --allow-lockout was not given. It would:",
                lines,
                "Nothing was changed. Keep that user and its permissions in the files; to change them, apply as another administrator, or re-run with --allow-lockout if warren may lose its own access.",
            ),
            Refusal::PasswordUnset { user, var } => {
                write!(f, "Nothing was changed: the password of user \"{user}\" comes from ${var}, which is not set.")
            }
            Refusal::SecretUnset { object, var } => {
                write!(f, "Nothing was changed: a secret of {object} comes from ${var}, which is not set.")
            }
            Refusal::OtherJournal { migration: m, at } => write!(
                f,
                "error: migration {} (queue \"{}\" to \"{}\" in vhost \"{}\") is in flight, recorded in another journal than this run's ({at}).\n  help: an administrator's runs keep warren's records broker-wide, other users' inside the project's vhosts; finish or abort the migration as the kind of user that started it (`warren status` shows where it is recorded).\nNothing was changed.",
                m.id, m.old, m.new, m.vhost
            ),
        }
    }
}

/// A refusal that lists what the plan would do: `head`, the lines
/// indented, then `tail`.
fn listed(f: &mut fmt::Formatter<'_>, head: &str, lines: &[String], tail: &str) -> fmt::Result {
    writeln!(f, "{head}")?;
    for l in lines {
        writeln!(f, "  {l}")?;
    }
    write!(f, "{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn migration(id: &str, old: &str) -> Migration {
        Migration { id: id.into(), vhost: "v".into(), old: old.into(), new: format!("{old}.v2"), ..Default::default() }
    }

    #[test]
    fn a_migration_in_another_journal_refuses_only_when_the_files_declare_its_queues() {
        let mut desired = Topology::default();
        let mut v = crate::model::Vhost::new("v");
        let q = crate::model::Queue {
            name: "q.v2".into(),
            kind: crate::model::QueueType::Quorum,
            durable: true,
            auto_delete: false,
            arguments: Default::default(),
            replaces: Some("q".into()),
        };
        v.queues.insert("q.v2".into(), q);
        desired.vhosts.insert("v".into(), v);
        let live = BTreeMap::from([("a".to_string(), migration("a", "q")), ("b".to_string(), migration("b", "other"))]);
        let refused = of_journals(&live, &BTreeMap::new(), &desired, "here".into()).expect("a refusal");
        assert_eq!(refused.error().kind, Kind::Refused);
        assert!(refused.to_string().contains("migration a (queue \"q\" to \"q.v2\""), "{refused}");
        let mine = BTreeMap::from([("a".to_string(), migration("a", "q"))]);
        assert_eq!(of_journals(&live, &mine, &desired, "here".into()), None, "this run's own");
    }
}
