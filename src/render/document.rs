//! The plan as a versioned, documented JSON document (`--format json`).
//! The human and markdown views are drawn from this same document, so the
//! three can never disagree. Schema: docs/guide.md, "Plan JSON".

use serde::{Deserialize, Serialize};

use crate::diagnostic::Diagnostic;
use crate::diff::{Action, Attributes, Change};
use crate::plan::{MigrationPlan, Op, Plan, RollbackPlan};
use crate::source::Sources;

/// Bumped on any incompatible change to this document.
pub const FORMAT_VERSION: &str = "1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanDocument {
    pub format_version: String,
    /// What was compared: the files, and the live state's origin.
    pub desired: String,
    pub live: String,
    pub summary: SummaryDoc,
    pub changes: Vec<ChangeDoc>,
    pub errors: Vec<DiagnosticDoc>,
    pub warnings: Vec<DiagnosticDoc>,
    /// The migrations in flight in the vhosts the files declare.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub migrations_in_flight: Vec<InFlightDoc>,
    /// The objects that differ because they were changed (or deleted)
    /// outside warren since its last apply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_outside: Vec<OutsideDoc>,
    /// The messages that go elsewhere once the plan is applied: by
    /// exchange, the classes of keys whose queues change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routing: Vec<super::routing::RoutingDoc>,
    /// The vhosts read by name rather than whole: how much of each the
    /// plan did not read (objects the project neither declares, owns nor
    /// references, which it never touches).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_read: Vec<NotReadDoc>,
    /// Who made it, for the pull-request comment's marker and wording: not
    /// part of the JSON document.
    #[serde(skip)]
    pub origin: Origin,
}

/// What made a plan document: the command, the project, the environment.
/// Not part of the JSON document; a saved plan keeps it beside the
/// document, so that `warren show` draws the plan as it was shown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// `diff` compares two topologies offline: no broker is involved.
    pub diff: bool,
    /// With `diff`: the two environments compared (`--env A --env B`), old
    /// and new; none for a change reviewed (`diff OLD NEW`).
    pub compared: Option<(String, String)>,
    pub project: String,
    pub environment: Option<String>,
    /// The routing around what changes, as a mermaid flowchart with its
    /// legend, for the pull-request comment; none when nothing routed
    /// changes.
    pub picture: Option<super::graph::Picture>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InFlightDoc {
    /// What `warren abort` takes.
    pub id: String,
    pub vhost: String,
    pub old: String,
    pub new: String,
    /// Steps done, of `total`.
    pub done: usize,
    pub total: usize,
    /// running, paused, stopped.
    pub state: String,
}

/// A vhost read by name: at most how many of its queues and exchanges
/// were not read (see [`crate::model::Unread`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotReadDoc {
    pub vhost: String,
    pub queues_at_most: u64,
    pub exchanges_at_most: u64,
}

/// An object changed outside warren since its last apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutsideDoc {
    pub address: String,
    pub kind: String,
    pub vhost: Option<String>,
    pub name: String,
    /// `changed` or `deleted`.
    pub what: String,
    /// The last apply to its vhost (who, and when it ended), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<crate::journal::LastApply>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryDoc {
    pub add: usize,
    pub change: usize,
    pub destroy: usize,
    pub migrate: usize,
    /// Migrations in flight rolled back (`<<`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rollback: usize,
    pub unmanaged: usize,
    /// Live objects held by other projects: never touched.
    #[serde(default)]
    pub other_project: usize,
    /// Objects named in `[removed]` that leave this project's inventory
    /// and stay on the broker.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub forget: usize,
    /// Objects that differ because they changed outside warren since its
    /// last apply (see `changed_outside`): what a drift alert counts.
    #[serde(default)]
    pub outside: usize,
    /// True when apply would refuse without --allow-destroy.
    pub requires_allow_destroy: bool,
    /// True when apply would refuse without --allow-lockout: the plan takes
    /// access away from the user warren connects as.
    #[serde(default)]
    pub requires_allow_lockout: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChangeDoc {
    /// `queue "orders" in vhost "/"`.
    pub address: String,
    pub kind: String,
    pub vhost: Option<String>,
    /// The object's name; for bindings a description of the binding.
    pub name: String,
    pub action: Action,
    pub reason: String,
    pub requires_allow_destroy: bool,
    /// Present, and true, only on a change that needs --allow-lockout.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requires_allow_lockout: bool,
    pub before: Option<Attributes>,
    pub after: Option<Attributes>,
    /// Bindings put back after the object is recreated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rebind: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migration: Option<MigrationDoc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<RollbackDoc>,
    /// For `other_project`: the project that holds the object; for
    /// `unmanaged`, this project, when its inventory holds the object but
    /// the plan does not speak for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The super stream the object is part of, when it is one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub super_stream: Option<String>,
    /// The services whose needs made the object: permissions made from them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<String>,
    /// The shape whose stamp made the object, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<ShapeDoc>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigrationDoc {
    pub replaces: String,
    pub changed: Vec<String>,
    pub bindings_moved: Vec<String>,
    pub bindings_dropped: Vec<String>,
    pub bindings_added: Vec<String>,
    /// A policy that would have done the same without a migration.
    pub policy_instead: Option<String>,
    /// The numbered steps apply carries out, in order.
    #[serde(default)]
    pub steps: Vec<MigrationStepDoc>,
    /// The number of the step after which the migration cannot be undone.
    #[serde(default)]
    pub point_of_no_return: usize,
}

/// A migration in flight taken back to its old queue, as `warren abort`
/// does; the new queue is deleted after the steps if empty and unused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RollbackDoc {
    pub id: String,
    /// The old queue, which traffic goes back to.
    pub to: String,
    /// The numbered steps apply carries out, in order (stage "rollback"),
    /// before the one that deletes the new queue.
    pub steps: Vec<MigrationStepDoc>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigrationStepDoc {
    pub n: usize,
    /// bootstrap, swap, teardown or retire.
    pub stage: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagnosticDoc {
    pub code: String,
    pub message: String,
    pub help: Option<String>,
    pub file: Option<String>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    /// For what a stamp of a shape made (the place above is then in the
    /// shape): the shape, and the stamp the user wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<ShapeDoc>,
}

/// The shape an object or a finding comes from, and the stamp that used it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShapeDoc {
    pub name: String,
    /// `path:line:column` of the shape's table.
    pub defined_at: String,
    /// `path:line:column` of the stamp in the user's file (the outermost,
    /// when a shape stamps another).
    pub stamped_at: String,
}

impl ShapeDoc {
    /// The shape that made what is at `l`, when a stamp did.
    pub fn of(l: &crate::source::Location, sources: &Sources) -> Option<ShapeDoc> {
        let stamps = sources.stamps(l);
        let (inner, outer) = (stamps.first()?, stamps.last()?);
        Some(ShapeDoc {
            name: inner.shape.clone(),
            defined_at: sources.position(&inner.defined),
            stamped_at: sources.position(&outer.at),
        })
    }
}

impl DiagnosticDoc {
    pub fn new(d: &Diagnostic, sources: &Sources) -> Self {
        let at = d.location.as_ref().map(|l| (sources.get(l.file).path.display().to_string(), sources.line_col(l)));
        DiagnosticDoc {
            code: d.code.to_string(),
            message: d.message.clone(),
            help: d.help.clone(),
            file: at.as_ref().map(|(f, _)| f.clone()),
            line: at.as_ref().map(|(_, (l, _))| *l),
            column: at.as_ref().map(|(_, (_, c))| *c),
            shape: d.location.as_ref().and_then(|l| ShapeDoc::of(l, sources)),
        }
    }
}

/// Each change of `plan` with its compiled migration or rollback, if a
/// step carries one out: the steps looked up by change once, where a plan
/// of 30,000 changes searched every step for each (most of a 10,000-queue
/// `diff`'s time).
fn changes(plan: &Plan) -> Vec<ChangeDoc> {
    let mut compiled = std::collections::HashMap::new();
    let mut rollbacks = std::collections::HashMap::new();
    // The first step of each change, as a search from the start finds it.
    for s in &plan.steps {
        match &s.op {
            Op::Migrate(m) => {
                compiled.entry(s.change).or_insert(m.as_ref());
            }
            Op::Rollback(r) => {
                rollbacks.entry(s.change).or_insert(r);
            }
            _ => {}
        }
    }
    let doc = |(i, c): (usize, &crate::diff::Change)| {
        let rollback = rollbacks.get(&i).map(|r| rollback_doc(r));
        ChangeDoc { rollback, ..change_doc(c, compiled.get(&i).copied()) }
    };
    plan.changes.iter().enumerate().map(doc).collect()
}

impl PlanDocument {
    /// The document for a plan; `diagnostics` are the located problems and
    /// the files' warnings.
    pub fn new(plan: &Plan, desired: &str, live: &str, diagnostics: &[Diagnostic], sources: &Sources) -> Self {
        let s = plan.summary();
        // Format 1 has errors and warnings: findings of lint's info level
        // are among the warnings.
        let docs = |errors: bool| {
            diagnostics.iter().filter(|d| d.is_error() == errors).map(|d| DiagnosticDoc::new(d, sources)).collect()
        };
        PlanDocument {
            format_version: FORMAT_VERSION.to_string(),
            desired: desired.to_string(),
            live: live.to_string(),
            summary: SummaryDoc {
                add: s.add,
                change: s.change,
                destroy: s.destroy,
                migrate: s.migrate,
                rollback: s.rollback,
                unmanaged: s.unmanaged,
                other_project: s.other_project,
                forget: s.forget,
                outside: plan.outside.len(),
                requires_allow_destroy: plan.changes.iter().any(|c| c.requires_allow_destroy),
                requires_allow_lockout: plan.changes.iter().any(|c| c.requires_allow_lockout),
            },
            changes: changes(plan),
            errors: docs(true),
            warnings: docs(false),
            migrations_in_flight: plan
                .in_flight
                .iter()
                .map(|f| InFlightDoc {
                    id: f.id.clone(),
                    vhost: f.vhost.clone(),
                    old: f.old.clone(),
                    new: f.new.clone(),
                    done: f.done,
                    total: f.total,
                    state: f.state.clone(),
                })
                .collect(),
            changed_outside: plan
                .outside
                .iter()
                .map(|o| OutsideDoc {
                    address: o.key.to_string(),
                    kind: o.key.kind().to_string(),
                    vhost: o.key.vhost().map(str::to_string),
                    name: o.key.name(),
                    what: if o.deleted { "deleted" } else { "changed" }.to_string(),
                    since: o.since.clone(),
                })
                .collect(),
            routing: Vec::new(),
            not_read: Vec::new(),
            origin: Origin::default(),
        }
    }

    /// True when the plan would change nothing.
    pub fn has_changes(&self) -> bool {
        let s = &self.summary;
        s.add + s.change + s.destroy + s.migrate + s.rollback + s.forget > 0
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn rollback_doc(r: &RollbackPlan) -> RollbackDoc {
    // The new queue's retirement is told after them (`RollbackDoc`).
    let steps = r.steps_back().iter().enumerate();
    RollbackDoc {
        id: r.id.clone(),
        to: r.old.clone(),
        steps: steps
            .map(|(i, s)| MigrationStepDoc { n: i + 1, stage: "rollback".into(), text: s.to_string() })
            .collect(),
    }
}

fn change_doc(c: &Change, compiled: Option<&MigrationPlan>) -> ChangeDoc {
    let name = c.key.name();
    let texts = |bs: &[crate::model::Binding]| bs.iter().map(|b| b.to_string()).collect();
    ChangeDoc {
        address: c.key.to_string(),
        kind: c.key.kind().to_string(),
        vhost: c.key.vhost().map(str::to_string),
        name,
        action: c.action,
        reason: c.reason.clone(),
        requires_allow_destroy: c.requires_allow_destroy,
        requires_allow_lockout: c.requires_allow_lockout,
        before: c.before.clone(),
        after: c.after.clone(),
        rebind: texts(&c.rebind),
        owner: c.owner.clone(),
        super_stream: c.super_stream.clone(),
        services: c.services.clone(),
        shape: None,
        rollback: None,
        migration: c.migration.as_ref().map(|m| MigrationDoc {
            replaces: m.replaces.clone(),
            changed: m.changed.clone(),
            bindings_moved: texts(&m.moved),
            bindings_dropped: texts(&m.dropped),
            bindings_added: texts(&m.added),
            policy_instead: m.policy_instead.clone(),
            steps: compiled
                .map(|p| {
                    p.steps
                        .iter()
                        .enumerate()
                        .map(|(i, (stage, step))| MigrationStepDoc {
                            n: i + 1,
                            stage: format!("{stage:?}").to_lowercase(),
                            text: step.to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            point_of_no_return: compiled.map_or(0, |p| p.point_of_no_return() + 1),
        }),
    }
}
