//! Why a queue dead-letters for a reason or not, in words: the settings
//! behind [`Router::dead_letters_for`], for `warren route --dead-letters`.

use super::{Reason, Router};
use crate::model::{QueueType, SetBy, Value};

impl Router<'_> {
    /// For each reason, whether `queue` dead-letters for it (`Ok`) or not
    /// (`Err`), with the setting that decides it; empty for a queue the
    /// vhost does not hold. Agrees with [`Router::dead_letters_for`].
    pub fn dead_letter_reasons(&self, queue: &str) -> Vec<(Reason, Result<String, String>)> {
        let Some(q) = self.vhost.queues.get(queue) else { return Vec::new() };
        let said = |argument: &str, key: &str| {
            self.policies.setting(q, argument, key).map(|(v, by)| {
                let by = match by {
                    SetBy::Argument => format!("argument {argument}"),
                    SetBy::Policy(p, false) => format!("policy \"{}\"", p.name),
                    SetBy::Policy(p, true) => format!("operator policy \"{}\"", p.name),
                };
                (v, format!("{key} {v} ({by})"))
            })
        };
        Reason::ALL
            .into_iter()
            .map(|reason| {
                let why = if q.kind == QueueType::Stream {
                    Err("a stream never dead-letters".to_string())
                } else {
                    match reason {
                        Reason::Rejected => Ok("a consumer rejects or nacks a message without requeueing it".into()),
                        Reason::Expired => match said("x-message-ttl", "message-ttl") {
                            Some((_, s)) => Ok(format!("a message outlives its {s}")),
                            None => Err("it sets no message-ttl (a message published with its own expiration \
                                         still dead-letters when it expires)"
                                .into()),
                        },
                        Reason::Maxlen => self.maxlen(&said),
                        Reason::DeliveryLimit => self.delivery_limit(q.kind, &said),
                    }
                };
                debug_assert_eq!(why.is_ok(), self.dead_letters_for(queue, reason), "{queue} {reason:?}");
                (reason, why)
            })
            .collect()
    }

    fn maxlen<'v>(&self, said: &impl Fn(&str, &str) -> Option<(&'v Value, String)>) -> Result<String, String> {
        let limit = said("x-max-length", "max-length").or_else(|| said("x-max-length-bytes", "max-length-bytes"));
        let Some((_, limit)) = limit else { return Err("it sets no max-length or max-length-bytes".into()) };
        match said("x-overflow", "overflow") {
            Some((v, s)) if v.as_str().is_some_and(|o| !matches!(o, "drop-head" | "reject-publish-dlx")) => {
                Err(format!("with {s}, a full queue refuses new messages rather than dead-letter old ones"))
            }
            Some((_, s)) => Ok(format!("the queue is over its {limit}, with {s}")),
            None => Ok(format!("the queue is over its {limit}, and drops its oldest message (overflow drop-head)")),
        }
    }

    fn delivery_limit<'v>(
        &self,
        kind: QueueType,
        said: &impl Fn(&str, &str) -> Option<(&'v Value, String)>,
    ) -> Result<String, String> {
        if kind != QueueType::Quorum {
            return Err("only quorum queues have a delivery limit".into());
        }
        match said("x-delivery-limit", "delivery-limit") {
            Some((_, s)) => Ok(format!("a message is delivered more often than its {s}")),
            None if self.version.major >= 4 => {
                Ok(format!("a message is delivered more than 20 times (RabbitMQ {}'s default limit)", self.version))
            }
            None => Err(format!("it sets no delivery-limit, and RabbitMQ {} has no default one", self.version)),
        }
    }
}
