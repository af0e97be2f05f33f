//! A queue property that never changes in place, changed in the files with
//! neither `replaces` nor `--replace`: refused, with both ways out.

use super::IMMUTABLE_CHANGE;
use crate::diagnostic::Diagnostic;
use crate::diff::policy_advice::Advice;
use crate::model::Queue;

/// The error for a queue whose immutable properties changed with no way
/// chosen to carry it out: says both ways out, the first being `policy`
/// when one can do it.
pub(in crate::diff) fn immutable_change(want: &Queue, fields: &[String], policy: Option<Advice>) -> Diagnostic {
    let list = fields.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ");
    let mut help = String::new();
    if let Some(policy) = policy {
        // Said in prose: a comment in the policy would be wrapped.
        let carries = match &policy.carries {
            Some(p) => {
                format!(" (it carries the keys of policy \"{p}\", which applies to the queue today, and wins over it)")
            }
            None => String::new(),
        };
        help += &format!(
            "either keep the queue's arguments as they are live and set the change by policy{carries}:\n\n{}\n\nor ",
            policy.toml
        );
    }
    help += &format!(
        "declare a new queue with `replaces = \"{}\"`: warren moves the messages over by live migration, with no loss (or pass --replace {} to destroy and recreate it, losing its messages)",
        want.name, want.name
    );
    Diagnostic::error(
        IMMUTABLE_CHANGE,
        format!(
            "queue \"{}\" cannot change {list} in place: RabbitMQ refuses to redeclare it (406 PRECONDITION_FAILED)",
            want.name
        ),
    )
    .help(help)
}
