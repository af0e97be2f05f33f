//! The pipeline every plan takes: the desired files and the live side to a
//! plan, with every diagnostic placed, ready to show, save or apply.

use std::collections::BTreeMap;
use std::path::Path;

use super::live_side::LiveSide;
use crate::desired::Desired;
use crate::diagnostic::{self, Diagnostic};
use crate::diff::{self, Action, BrokerFacts, Options};
use crate::model::Password;
use crate::plan::{self, Plan};
use crate::render::PlanDocument;

/// A plan with everything needed to show or apply it.
pub struct Planned {
    pub plan: Plan,
    pub document: PlanDocument,
    pub desired: Desired,
    pub live: LiveSide,
    /// Passwords read from the environment, by user.
    pub passwords: BTreeMap<String, String>,
    /// With `--target`: the objects whose changes the plan leaves out.
    pub left_out: std::collections::BTreeSet<crate::model::ObjectKey>,
}

/// Plans valid desired files against `live`.
pub fn compute(desired: Desired, path: &Path, live: LiveSide, replace: &[String]) -> Planned {
    let drafted = draft(&desired, &live, replace);
    assemble(desired, path, live, drafted)
}

/// What a plan is made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    /// To carry out.
    Plan,
    /// A change reviewed offline (`diff OLD NEW`): what applying it would do.
    Review,
    /// Two desired states compared (two environments): what differs.
    Compare,
}

/// A change from `before` to `desired` reviewed offline (`diff OLD NEW`):
/// the plan applying it would make, its losses said in the conditional.
pub fn review(desired: Desired, path: &Path, before: LiveSide, replace: &[String]) -> Planned {
    let drafted = drafted(&desired, &before, replace, Purpose::Review);
    assemble(desired, path, before, drafted)
}

/// Two desired states compared for review (two environments, `old` and
/// `new`): what differs, shown as a difference even where a broker could
/// not change it in place, and each reason said as one ("only in prod",
/// "differs"), never as an action.
pub fn compare(desired: Desired, path: &Path, before: LiveSide, old: &str, new: &str) -> Planned {
    let mut drafted = drafted(&desired, &before, &[], Purpose::Compare);
    for c in &mut drafted.plan.changes {
        c.reason = match c.action {
            Action::Create => format!("only in {new}"),
            Action::Destroy => format!("only in {old}"),
            Action::Update if c.reason.ends_with(diff::NOT_IN_PLACE) => std::mem::take(&mut c.reason),
            Action::Update => "differs".to_string(),
            Action::Migrate => format!("only in {new}, where it {}", c.reason),
            _ => std::mem::take(&mut c.reason),
        };
    }
    assemble(desired, path, before, drafted)
}

/// The plan before it is shown: what [`draft`] computes from its inputs alone.
pub struct Draft {
    plan: Plan,
    passwords: BTreeMap<String, String>,
    notes: Vec<Diagnostic>,
    left_out: std::collections::BTreeSet<crate::model::ObjectKey>,
    /// The plan's routing change, worked out with the plan: against an
    /// export, beside the whole-topology checks (see `plan_command`).
    routing: Vec<crate::render::routing::RoutingDoc>,
}

/// The plan of the files against `live`. It only reads them, so that it can
/// run beside the whole-topology checks; it must not fail on files those
/// checks refuse, whose plan is then not shown.
pub fn draft(desired: &Desired, live: &LiveSide, replace: &[String]) -> Draft {
    drafted(desired, live, replace, Purpose::Plan)
}

fn drafted(desired: &Desired, live: &LiveSide, replace: &[String], purpose: Purpose) -> Draft {
    let mut notes = live.notes.clone();
    let options = Options {
        replace: replace.iter().cloned().collect(),
        comparing: purpose == Purpose::Compare,
        review: purpose == Purpose::Review,
        destroy: desired.destroy,
    };
    let mut facts = BrokerFacts {
        queue_counts: live.queue_counts.clone(),
        broker_version: live.broker_version,
        plugins: live.plugins.clone(),
        connected_user: live.user.clone(),
        in_flight: live.migrations.clone(),
        last_applies: live.last_applies.clone(),
        ..BrokerFacts::default()
    };
    let mut passwords = BTreeMap::new();
    // Offline, both sides are files: no password is compared or set, and
    // an unset variable is nothing to say.
    let users = desired.topology.users().into_values().filter(|_| purpose == Purpose::Plan);
    for user in users {
        let Password::Env(var) = &user.password else { continue };
        match std::env::var(var) {
            Ok(p) if !p.is_empty() => {
                if let Some(Password::Hash { hash, algorithm }) = live.topology.user(&user.name).map(|u| u.password)
                    && !crate::password::verify(&p, &hash, algorithm.as_deref())
                {
                    facts.stale_passwords.insert(user.name.clone());
                }
                passwords.insert(user.name.clone(), p);
            }
            _ => notes.push(
                Diagnostic::warning(
                    "password-unknown",
                    format!("the password of user \"{}\" comes from ${var}, which is not set here", user.name),
                )
                .help(format!("set {var} to compare the password with the broker's and to create the user")),
            ),
        }
    }
    // Offline, both sides are files and name the same variables.
    let (desired_topology, unset) = match purpose {
        Purpose::Plan => crate::secrets::resolve(&desired.topology, &live.topology, |v| std::env::var_os(v)),
        _ => (std::borrow::Cow::Borrowed(&*desired.topology), Vec::new()),
    };
    for u in unset {
        notes.push(
            Diagnostic::warning(
                "secret-unknown",
                format!("the `{}` of {} comes from ${}, which is not set here", u.attribute, u.object, u.variable),
            )
            .help(format!("set {} to compare it with the broker's and to write it", u.variable)),
        );
    }
    notes.extend(diff::moved::notes(&desired.topology, &live.topology));
    let d = diff::diff(&desired_topology, &live.topology, &live.ownership, desired.project.name(), &options, &facts);
    let (d, left_out) = targeted(d, &desired.targets, &mut notes);
    let plan = plan::build(d, &live.topology);
    let routing = routing(live, &plan);
    Draft { plan, passwords, notes, left_out, routing }
}

/// With `--target`, the diff limited to the targets and what they need,
/// and a warning that says so in every format, as terraform's does.
fn targeted(
    d: diff::Diff,
    targets: &[diff::target::Target],
    notes: &mut Vec<Diagnostic>,
) -> (diff::Diff, std::collections::BTreeSet<crate::model::ObjectKey>) {
    if targets.is_empty() {
        return (d, Default::default());
    }
    let (d, left_out) = diff::target::limit(d, targets);
    let named: Vec<&str> = targets.iter().map(|t| t.text.as_str()).collect();
    let others = match left_out.actions {
        0 => "no other change is left out".to_string(),
        1 => "1 other change is left out".to_string(),
        n => format!("{n} other changes are left out"),
    };
    notes.push(
        Diagnostic::warning(
            "target",
            if d.changes.is_empty() {
                format!("--target {} names nothing the plan would change: {others}", named.join(", "))
            } else {
                let what = if named.len() == 1 { "what it needs" } else { "what they need" };
                format!("the plan is limited to {} and {what}: {others}", named.join(", "))
            },
        )
        .help(
            "--target is for exceptional cases, such as a fix that cannot wait for the rest of a change: the broker \
             then matches neither the files before nor after. Plan without it as soon as you can.",
        ),
    );
    (d, left_out.keys)
}

/// Turns the plan's routing change off, for the benchmark's baseline
/// (docs/development.md).
const NO_ROUTING: &str = "WARREN_BENCH_NO_ROUTING_CHANGE";

/// The plan's routing change: the live side against it once applied.
fn routing(live: &LiveSide, plan: &Plan) -> Vec<crate::render::routing::RoutingDoc> {
    if std::env::var_os(NO_ROUTING).is_some() {
        return Vec::new();
    }
    let version =
        live.broker_version.map_or(crate::routing::Version::NEWEST, |(a, b)| crate::routing::Version::new(a, b));
    let change = plan::routing_change(&live.topology, plan, version);
    change.into_iter().map(|(v, c)| crate::render::routing::RoutingDoc::new(&v, c)).collect()
}

/// The drafted plan with every diagnostic placed, as a document to show.
pub fn assemble(desired: Desired, path: &Path, live: LiveSide, drafted: Draft) -> Planned {
    let Draft { plan, passwords, notes, left_out, routing } = drafted;
    let mut diagnostics: Vec<Diagnostic> = plan
        .problems
        .iter()
        .map(|p| match desired.locations.locate(&p.key, p.field.as_deref()) {
            Some(l) => p.diagnostic.clone().at(l),
            None => p.diagnostic.clone(),
        })
        .collect();
    diagnostics.extend(desired.diagnostics.iter().cloned());
    diagnostics.extend(notes);
    diagnostic::sort(&mut diagnostics);
    let mut document =
        PlanDocument::new(&plan, &path.display().to_string(), &live.origin, &diagnostics, &desired.sources);
    // What a stamp of a shape made says so (the objects themselves are
    // ordinary ones: the planner never sees shapes).
    for (doc, change) in document.changes.iter_mut().zip(&plan.changes) {
        let at = desired.locations.locate(&change.key, None);
        doc.shape = at.and_then(|l| crate::render::ShapeDoc::of(&l, &desired.sources));
    }
    document.origin.project = desired.project.name().to_string();
    document.routing = routing;
    document.not_read = live
        .topology
        .vhosts
        .iter()
        .filter_map(|(v, h)| {
            let u = h.unread?;
            Some(crate::render::NotReadDoc {
                vhost: v.clone(),
                queues_at_most: u.queues_at_most,
                exchanges_at_most: u.exchanges_at_most,
            })
        })
        .collect();
    document.origin.picture = super::picture::of_change(&desired.topology, &live.topology, &plan, &document.routing);
    Planned { plan, document, desired: Desired { diagnostics, ..desired }, live, passwords, left_out }
}
