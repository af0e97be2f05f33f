//! A queue property that never changes in place, changed in the files with
//! neither `replaces` nor `--replace`: refused, with both ways out.

use super::IMMUTABLE_CHANGE;
use crate::diagnostic::Diagnostic;
use crate::diff::policy_advice::Advice;
use crate::model::{Queue, QueueType};

/// The error for a queue whose immutable properties changed (live `have`,
/// the files' `want`) with no way chosen to carry it out: says both ways
/// out, the first being `policy` when one can do it.
pub(in crate::diff) fn immutable_change(
    have: &Queue,
    want: &Queue,
    fields: &[String],
    policy: Option<Advice>,
) -> Diagnostic {
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
    let name = &want.name;
    help += &if have.kind == QueueType::Stream {
        // A migration waits for the old queue to drain, which a stream's
        // consumers never do: they read it without removing a message.
        format!(
            "a stream cannot be migrated live, since reading it removes no message: declare the new queue under another name beside it, move its publishers and consumers over, then remove \"{name}\" from the files (its messages stay until then) (or pass --replace {name} to destroy and recreate it, losing its messages)"
        )
    } else {
        format!(
            "declare a new queue with `replaces = \"{name}\"`: warren moves the messages over by live migration, with no loss (or pass --replace {name} to destroy and recreate it, losing its messages)"
        )
    };
    Diagnostic::error(
        IMMUTABLE_CHANGE,
        format!(
            "queue \"{}\" cannot change {list} in place: RabbitMQ refuses to redeclare it (406 PRECONDITION_FAILED)",
            want.name
        ),
    )
    .help(help)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(kind: QueueType) -> Queue {
        Queue {
            name: "events".into(),
            kind,
            durable: true,
            auto_delete: false,
            arguments: Default::default(),
            replaces: None,
        }
    }

    #[test]
    fn a_stream_is_never_offered_a_migration_it_could_not_finish() {
        let fields = ["type".to_string()];
        let help =
            |have| immutable_change(&queue(have), &queue(QueueType::Quorum), &fields, None).help.unwrap_or_default();
        let classic = help(QueueType::Classic);
        assert!(classic.contains("`replaces = \"events\"`"), "{classic}");
        let stream = help(QueueType::Stream);
        assert!(!stream.contains("replaces"), "{stream}");
        assert!(stream.contains("a stream cannot be migrated live"), "{stream}");
        assert!(stream.contains("--replace events"), "{stream}");
    }
}
