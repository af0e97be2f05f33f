//! One test judged: where the model says its message or dead letters go,
//! and each stated outcome that does not hold, said at the place it is
//! written.

use std::collections::BTreeSet;

use crate::desired::expect::{Expectation, Subject, Want, WantKind};
use crate::diagnostic::Diagnostic;
use crate::routing::{Hop, Keys, Message, Reason, Route, Router};
use crate::source::Location;

/// Where the message (or the dead letters) went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actual {
    pub route: Route,
    /// Why nothing was routed at all, when the route does not say it: a
    /// queue without a dead-letter exchange, or that never dead-letters
    /// for the reason.
    pub note: Option<String>,
}

/// A stated outcome that does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub want: WantKind,
    pub at: Location,
    /// Listed to be reached, and not reached.
    pub missing: Vec<String>,
    /// Reached, and not to be.
    pub unexpected: Vec<String>,
    /// The model cannot tell where some exchange on the way routes, so the
    /// outcome cannot be shown to hold.
    pub uncertain: bool,
}

/// A test's result: the vhost it ran in, where its message went, and what
/// failed (nothing when it passed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub vhost: String,
    pub actual: Actual,
    pub failures: Vec<Failure>,
}

impl Outcome {
    pub(super) fn judge(e: &Expectation, vhost: &str, router: &Router) -> Outcome {
        let actual = match &e.subject {
            Subject::Route { exchange, keys, headers } => {
                let message = Message {
                    exchange: exchange.name.clone(),
                    keys: Keys::Exact(keys.clone()),
                    headers: Some(headers.clone()),
                };
                Actual { route: router.route(&message), note: None }
            }
            Subject::DeadLetters { queue, reason, key, exchange, headers } => {
                let reason = Reason::parse(&reason.name).expect("the names were checked");
                let original = key.as_ref().map(|k| Message {
                    exchange: exchange.clone().unwrap_or_default(),
                    keys: Keys::one(k),
                    headers: Some(headers.clone()),
                });
                dead_letters(router, &queue.name, reason, original.as_ref())
            }
        };
        let failures = e.wants.iter().filter_map(|w| failure(w, &actual)).collect();
        Outcome { vhost: vhost.to_string(), actual, failures }
    }

    /// The outcome of a test whose message reaches nothing, for `note`.
    pub(super) fn nowhere(e: &Expectation, vhost: &str, note: String) -> Outcome {
        let actual = Actual { route: Route::default(), note: Some(note) };
        let failures = e.wants.iter().filter_map(|w| failure(w, &actual)).collect();
        Outcome { vhost: vhost.to_string(), actual, failures }
    }

    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// Each failure as a diagnostic at the outcome it states.
    pub fn diagnostics(&self, e: &Expectation) -> Vec<Diagnostic> {
        let what = format!("{} {}", subject(e), self.actual.describe_for(e));
        self.failures
            .iter()
            .map(|f| {
                let mut help = Vec::new();
                if !f.missing.is_empty() {
                    help.push(format!("not reached: {}", quoted(&f.missing)));
                }
                if !f.unexpected.is_empty() {
                    help.push(format!("reached, and not expected: {}", quoted(&f.unexpected)));
                }
                if f.uncertain {
                    help.push("the model cannot tell all the queues reached, so this cannot be shown to hold".into());
                }
                if !self.actual.route.path.is_empty() {
                    help.push(format!("path: {}", path(&self.actual.route)));
                }
                Diagnostic::error("route-test", format!("routing test failed: {what}"))
                    .at(f.at.clone())
                    .label(expected(f.want))
                    .help(help.join("\n"))
            })
            .collect()
    }
}

/// Where a queue's dead letters for `reason` go; `original`: the message
/// that died, else every message the queue can hold.
fn dead_letters(router: &Router, queue: &str, reason: Reason, original: Option<&Message>) -> Actual {
    let nowhere = |note: String| Actual { route: Route::default(), note: Some(note) };
    if !router.queue_exists(queue) {
        return nowhere(format!("no queue \"{queue}\""));
    }
    // A publisher's per-message TTL expires messages in any queue.
    if reason != Reason::Expired && !router.dead_letters_for(queue, reason) {
        let why = match reason {
            Reason::Maxlen => "it has no length limit, or its overflow rejects publishes",
            Reason::DeliveryLimit => "only quorum queues with a delivery limit (on RabbitMQ 4, every quorum queue) do",
            _ => "streams never dead-letter",
        };
        return nowhere(format!("queue \"{queue}\" does not dead-letter for \"{}\": {why}", reason.as_str()));
    }
    match router.dead_letters(queue, reason, original) {
        Some(d) => Actual { route: d.route, note: None },
        None => nowhere(format!("queue \"{queue}\" has no dead-letter exchange: the broker drops its dead letters")),
    }
}

fn failure(want: &Want, actual: &Actual) -> Option<Failure> {
    let reached = &actual.route.queues;
    let listed: BTreeSet<&str> = want.queues.iter().map(|q| q.name.as_str()).collect();
    let unsure = !actual.route.cannot_tell.is_empty();
    let missing = || listed.iter().filter(|q| !reached.contains(**q)).map(|q| q.to_string()).collect::<Vec<_>>();
    let (missing, unexpected, uncertain) = match want.kind {
        WantKind::Exactly => {
            (missing(), reached.iter().filter(|q| !listed.contains(q.as_str())).cloned().collect(), unsure)
        }
        WantKind::AtLeast => (missing(), Vec::new(), false),
        WantKind::NoneOf => {
            (Vec::new(), reached.iter().filter(|q| listed.contains(q.as_str())).cloned().collect(), unsure)
        }
        WantKind::Nothing => (Vec::new(), reached.iter().cloned().collect(), unsure),
    };
    let holds = missing.is_empty() && unexpected.is_empty() && !uncertain;
    (!holds).then(|| Failure { want: want.kind, at: want.at.clone(), missing, unexpected, uncertain })
}

impl Actual {
    /// One line: `reaches "a", "b"`, or `reaches no queue: why`.
    pub fn describe(&self) -> String {
        self.said(false)
    }

    /// [`Actual::describe`] of `e`'s message, or of its dead letters (`reach`).
    pub fn describe_for(&self, e: &Expectation) -> String {
        self.said(matches!(e.subject, Subject::DeadLetters { .. }))
    }

    fn said(&self, plural: bool) -> String {
        let reaches = if plural { "reach" } else { "reaches" };
        let route = &self.route;
        let unsure: Vec<String> =
            route.cannot_tell.iter().map(|c| format!("exchange \"{}\": {}", c.exchange, c.why)).collect();
        if !route.queues.is_empty() {
            let listed: Vec<String> = route.queues.iter().cloned().collect();
            let tail =
                if unsure.is_empty() { String::new() } else { format!(", and maybe more ({})", unsure.join("; ")) };
            return format!("{reaches} {}{tail}", quoted(&listed));
        }
        let why: Vec<String> = match &self.note {
            Some(note) => vec![note.clone()],
            None => route.dropped.iter().map(|d| Route::explain(&d.why, &d.exchange)).collect(),
        };
        match (why.is_empty(), unsure.is_empty()) {
            (_, false) => format!("{reaches} no queue the model can tell ({})", unsure.join("; ")),
            (true, true) => format!("{reaches} no queue"),
            (false, true) => format!("{reaches} no queue: {}", why.join("; ")),
        }
    }
}

/// How a user reads what a test routes.
pub fn subject(e: &Expectation) -> String {
    match &e.subject {
        Subject::Route { exchange, keys, .. } => {
            let x = if exchange.name.is_empty() || exchange.name == "amq.default" {
                "the default exchange".to_string()
            } else {
                format!("exchange \"{}\"", exchange.name)
            };
            format!("a message to {x} with {}", Keys::Exact(keys.clone()).describe())
        }
        Subject::DeadLetters { queue, reason, key, .. } => {
            let with = key.as_ref().map(|k| format!(" of messages with key \"{k}\"")).unwrap_or_default();
            format!("the dead letters ({}) of queue \"{}\"{with}", reason.name, queue.name)
        }
    }
}

fn expected(kind: WantKind) -> &'static str {
    match kind {
        WantKind::Exactly => "expected exactly these queues",
        WantKind::AtLeast => "expected at least these queues",
        WantKind::NoneOf => "expected none of these queues",
        WantKind::Nothing => "expected no queue",
    }
}

fn quoted(names: &[String]) -> String {
    names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
}

/// The hops of a route: `"x" -[key]-> "q"`, `"x" -(alternate)-> "ae"`.
pub fn path(route: &Route) -> String {
    let hop = |h: &Hop| match h {
        Hop::Binding { exchange, key, destination, .. } => format!("\"{exchange}\" -[{key}]-> \"{destination}\""),
        Hop::Default { queue } => format!("default exchange -> \"{queue}\""),
        Hop::Alternate { exchange, alternate } => format!("\"{exchange}\" -(alternate)-> \"{alternate}\""),
    };
    route.path.iter().map(hop).collect::<Vec<_>>().join(", ")
}
