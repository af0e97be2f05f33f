//! Queues: created, destroyed as far as their counts allow, migrated into
//! when they replace another, recreated on --replace, or refused when a
//! property the broker never changes in place differs.

use std::cell::OnceCell;
use std::collections::BTreeSet;

use super::Problem;
use super::attributes;
use super::change::{Action, Change, Declared};
use super::differ::Differ;
use super::immutable::{self, NOT_IN_PLACE};
use super::in_flight::Held;
use super::policy_advice;
use super::refusals;
use super::sides::Sides;
use super::walk::Walk;
use crate::model::{Binding, Matcher, Node, ObjectKey, Queue, QueueType};

impl Differ<'_> {
    /// The queues of a vhost; `held` is what its rollbacks take care of.
    /// Returns the bindings that migrations and rollbacks take care of,
    /// which the bindings' diff leaves alone.
    pub(super) fn queues(&mut self, s: &Sides, held: &Held) -> BTreeSet<Binding> {
        let mut migrating = held.bindings.clone();
        // Compiled for the first queue whose arguments change: most plans have none.
        let in_force = OnceCell::new();
        let mut live_queues = Walk::new(&s.have.queues);
        for (name, q) in &s.want.queues {
            // Made only for a change: most queues of a large vhost have none.
            let key = || ObjectKey::Queue { vhost: s.v.into(), name: name.clone() };
            if let Some(old) = q.replaces.as_deref().and_then(|p| s.have.queues.get(p)) {
                let policies = in_force.get_or_init(|| self.policies_in_force(s));
                migrating.extend(self.migrate(s, q, old, policies));
                continue;
            }
            match live_queues.get(name) {
                None => {
                    let reason = match &q.replaces {
                        Some(old) => format!("declared in the files (it replaces \"{old}\", which does not exist)"),
                        None => "declared in the files".to_string(),
                    };
                    self.created(key(), attributes::queue(q), &reason, Some(Declared::Queue(q.clone())));
                }
                Some(h) if same_queue(h, q) => {}
                Some(h) => {
                    let policies = in_force.get_or_init(|| self.policies_in_force(s));
                    self.queue_changed(s, key(), h, q, policies)
                }
            }
        }
        self.queues_absent(s, held);
        migrating
    }

    /// Live queue `have` differs from `want` where the broker changes
    /// nothing in place: recreated on --replace, else refused.
    fn queue_changed(&mut self, s: &Sides, key: ObjectKey, have: &Queue, want: &Queue, in_force: &[Matcher]) {
        let fields = immutable::queue_fields(have, want);
        if self.options.comparing {
            let mut c = Change::new(key, Action::Update, format!("differs in {}, {NOT_IN_PLACE}", fields.join(", ")));
            c.before = Some(attributes::queue(have));
            c.after = Some(attributes::queue(want));
            self.push(c);
            return;
        }
        if self.options.replace.contains(&want.name) {
            let node = Node::Queue(want.name.clone());
            let mut c = Change::new(
                key.clone(),
                Action::Replace,
                format!(
                    "{} cannot change in place and --replace asks to recreate it: its messages {}",
                    fields.join(", "),
                    if self.options.review { "would be lost" } else { "are lost" }
                ),
            );
            c.before = Some(attributes::queue(have));
            c.after = Some(attributes::queue(want));
            c.declared = Some(Declared::Queue(want.clone()));
            c.requires_allow_destroy = true;
            c.rebind = s.graph.get().inbound(&node).into_iter().cloned().collect();
            self.push(c);
            return;
        }
        let policy = policy_advice::policy_alternative(have, want, in_force);
        let diagnostic = refusals::immutable_change(have, want, &fields, policy);
        self.out.problems.push(Problem { key, field: None, diagnostic });
    }

    /// The live queues the files do not declare (nor replace, nor list as
    /// external, nor leave to a rollback): destroyed when warren owns them,
    /// and said to lose messages unless their counts show them idle.
    fn queues_absent(&mut self, s: &Sides, held: &Held) {
        let replaced: BTreeSet<&str> = s.want.queues.values().filter_map(|q| q.replaces.as_deref()).collect();
        let mut declared = Walk::new(&s.want.queues);
        for (name, h) in &s.have.queues {
            if declared.get(name).is_some()
                || replaced.contains(name.as_str())
                || s.want.external.queues.contains(name)
                || held.queues.contains(name)
            {
                continue;
            }
            let key = ObjectKey::Queue { vhost: s.v.into(), name: name.clone() };
            let counts = self.facts.queue_counts.as_ref().map(|c| c.get(&(s.v.to_string(), name.clone())).copied());
            let before = attributes::queue(h);
            match counts {
                // A stream's count is the broker's periodic figure, which
                // even the stream itself answers with (its passive declare):
                // a message published a moment ago is not in it yet, so a
                // zero proves nothing (seen: 3 messages read as 0).
                Some(Some(c)) if c.is_idle() && h.kind == QueueType::Stream => {
                    self.absent(key, before, true);
                    let lost = if self.options.review { "would be lost" } else { "are lost" };
                    self.explain_last(&format!(
                        "{}; its messages, if any, {lost} with it: a stream's count lags by seconds, so reading 0 does not prove it empty",
                        self.gone()
                    ));
                }
                // Known empty and unused: nothing can be lost.
                Some(Some(c)) if c.is_idle() => self.absent(key, before, false),
                Some(Some(c)) => {
                    self.absent(key, before, true);
                    self.explain_last(&format!("{}; {}", self.gone(), c.describe()));
                }
                _ => {
                    self.absent(key, before, true);
                    let lost = if self.options.review { "would be lost" } else { "are lost" };
                    self.explain_last(&format!("{}; its messages, if any, {lost} with it", self.gone()));
                }
            }
        }
    }
}

/// Queues compare on everything the broker stores (not on `replaces`).
fn same_queue(a: &Queue, b: &Queue) -> bool {
    a.kind == b.kind && a.durable == b.durable && a.auto_delete == b.auto_delete && a.arguments == b.arguments
}
