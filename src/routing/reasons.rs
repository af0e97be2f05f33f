//! Why a queue dead-letters for a reason or not, in words: the decision
//! behind [`Router::dead_letters_for`], for `warren route --dead-letters`.

use super::{Decision, Reason, Router, Setting};
use crate::model::SetBy;

impl Router<'_> {
    /// For each reason, whether `queue` dead-letters for it (`Ok`) or not
    /// (`Err`), with the setting that decides it; empty for a queue the
    /// vhost does not hold.
    pub fn dead_letter_reasons(&self, queue: &str) -> Vec<(Reason, Result<String, String>)> {
        Reason::ALL
            .into_iter()
            .filter_map(|reason| Some((reason, words(self.dead_letter_decision(queue, reason)?))))
            .collect()
    }
}

/// A setting as `key value (where)`.
fn said(s: &Setting) -> String {
    let by = match s.by {
        SetBy::Argument => format!("argument {}", s.argument),
        SetBy::Policy(p, false) => format!("policy \"{}\"", p.name),
        SetBy::Policy(p, true) => format!("operator policy \"{}\"", p.name),
    };
    format!("{} {} ({by})", s.key, s.value)
}

fn words(decision: Decision) -> Result<String, String> {
    let yes = decision.dead_letters();
    match decision {
        Decision::Stream => Err("a stream never dead-letters".into()),
        Decision::Rejected => Ok("a consumer rejects or nacks a message without requeueing it".into()),
        Decision::Ttl(Some(ttl)) => Ok(format!("a message outlives its {}", said(&ttl))),
        Decision::Ttl(None) => Err("it sets no message-ttl (a message published with its own expiration \
                                    still dead-letters when it expires)"
            .into()),
        Decision::Maxlen { limit: None, .. } => Err("it sets no max-length or max-length-bytes".into()),
        Decision::Maxlen { limit: Some(limit), overflow } => match overflow {
            Some(o) if !yes => {
                Err(format!("with {}, a full queue refuses new messages rather than dead-letter old ones", said(&o)))
            }
            Some(o) => Ok(format!("the queue is over its {}, with {}", said(&limit), said(&o))),
            None => {
                Ok(format!("the queue is over its {}, and drops its oldest message (overflow drop-head)", said(&limit)))
            }
        },
        Decision::NotQuorum => Err("only quorum queues have a delivery limit".into()),
        Decision::DeliveryLimit { limit: Some(l), .. } => {
            Ok(format!("a message is delivered more often than its {}", said(&l)))
        }
        Decision::DeliveryLimit { limit: None, version } if yes => {
            Ok(format!("a message is delivered more than 20 times (RabbitMQ {version}'s default limit)"))
        }
        Decision::DeliveryLimit { limit: None, version } => {
            Err(format!("it sets no delivery-limit, and RabbitMQ {version} has no default one"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{QueueType, Value, Vhost};
    use crate::routing::Version;
    use crate::testing::objects::{queue, table, text};

    /// The words say yes where the model dead-letters, no where it does
    /// not, each with the setting that decides it.
    #[test]
    fn the_words_follow_the_decision() {
        let mut v = Vhost::new("v");
        let full = table(&[("x-max-length", Value::Int(10)), ("x-overflow", text("reject-publish"))]);
        let limited = table(&[("x-delivery-limit", Value::Int(3))]);
        for q in [
            queue("full", QueueType::Classic, full),
            queue("limited", QueueType::Quorum, limited),
            queue("plain", QueueType::Quorum, Default::default()),
            queue("stream", QueueType::Stream, Default::default()),
        ] {
            v.queues.insert(q.name.clone(), q);
        }
        for version in [Version::new(3, 10), Version::new(4, 0)] {
            let router = Router::new(&v, version);
            for q in v.queues.keys() {
                for (reason, why) in router.dead_letter_reasons(q) {
                    assert_eq!(why.is_ok(), router.dead_letters_for(q, reason), "{q} {reason:?} {why:?}");
                }
            }
        }
        let on = |version, q: &str, reason| {
            let router = Router::new(&v, version);
            router.dead_letter_reasons(q).into_iter().find(|(r, _)| *r == reason).unwrap().1
        };
        let old = Version::new(3, 10);
        assert_eq!(
            on(old, "full", Reason::Maxlen),
            Err("with overflow \"reject-publish\" (argument x-overflow), a full queue refuses new messages \
                 rather than dead-letter old ones"
                .into())
        );
        assert_eq!(
            on(old, "limited", Reason::DeliveryLimit),
            Ok("a message is delivered more often than its delivery-limit 3 (argument x-delivery-limit)".into())
        );
        assert!(on(old, "plain", Reason::DeliveryLimit).is_err());
        assert!(on(Version::new(4, 0), "plain", Reason::DeliveryLimit).is_ok());
        assert_eq!(on(old, "stream", Reason::Rejected), Err("a stream never dead-letters".into()));
        assert!(Router::new(&v, old).dead_letter_reasons("nope").is_empty());
    }
}
