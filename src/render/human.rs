//! The plan as a person reads it, with terraform's symbols and wording.

use std::fmt::Write;

use serde_json::Value as Json;
use similar::{ChangeTag, TextDiff};

use super::document::{ChangeDoc, MigrationDoc, PlanDocument};
use crate::diff::{Action, Attributes};
use crate::model::kinds::{KINDS, Name};

/// Draws the document; `color` adds ANSI colours.
pub fn render(doc: &PlanDocument, color: bool) -> String {
    let p = Painter { color };
    let mut out = String::new();
    if !doc.changed_outside.is_empty() {
        // First, as terraform does: it explains the changes below.
        out += "Changed outside warren since its last apply:\n";
        for o in &doc.changed_outside {
            let symbol = if o.what == "deleted" { p.symbol(Action::Destroy) } else { p.symbol(Action::Update) };
            let since = o.since.as_ref().map(|s| format!("; last applied by {} at {}", s.by, s.at)).unwrap_or_default();
            let _ = writeln!(out, "  {symbol} {} ({}{since})", o.address, o.what);
        }
        out += "\n";
    }
    let acting: Vec<&ChangeDoc> =
        doc.changes.iter().filter(|c| !matches!(c.action, Action::Unmanaged | Action::OtherProject)).collect();
    let voice = Voice::of(doc);
    if !acting.is_empty() {
        match voice {
            Voice::Plan => out += "warren will perform the following actions:\n\n",
            Voice::Review => out += "If this change were applied, warren would perform the following actions:\n\n",
            Voice::Compare { old, new } => {
                let _ = writeln!(out, "How environment {new} differs from environment {old}:\n");
            }
        }
        let outside: std::collections::BTreeSet<&str> =
            doc.changed_outside.iter().map(|o| o.address.as_str()).collect();
        for c in &acting {
            change(&mut out, c, outside.contains(c.address.as_str()), &p, voice);
        }
    }
    out += &super::routing::human(&doc.routing);
    left_alone(&mut out, doc, &p);
    not_read(&mut out, doc);
    if !doc.migrations_in_flight.is_empty() {
        out += "Migrations in flight:\n";
        for m in &doc.migrations_in_flight {
            let _ = writeln!(
                out,
                "  {}  vhost \"{}\": queue \"{}\" >> \"{}\", step {} of {} done ({})",
                m.id, m.vhost, m.old, m.new, m.done, m.total, m.state
            );
        }
        out += "\n";
    }
    if doc.summary.requires_allow_lockout {
        let _ = writeln!(
            out,
            "{}\n",
            p.paint("Warning: this plan takes access away from the user warren connects as; apply refuses it without --allow-lockout.", RED)
        );
    }
    if doc.summary.requires_allow_destroy {
        let warning = match voice {
            Voice::Review => format!(
                "Warning: applied, this change can lose {}; apply refuses it without --allow-destroy.",
                losses(doc)
            ),
            _ => format!("Warning: this plan can lose {}; apply refuses it without --allow-destroy.", losses(doc)),
        };
        let _ = writeln!(out, "{}\n", p.paint(&warning, RED));
    }
    out + &summary_line(doc) + "\n"
}

/// The live objects the plan leaves alone, each group under its heading:
/// nobody's, this project's from vhosts the files no longer declare, and
/// other projects'.
fn left_alone(out: &mut String, doc: &PlanDocument, p: &Painter) {
    let (left, unmanaged): (Vec<&ChangeDoc>, Vec<&ChangeDoc>) =
        doc.changes.iter().filter(|c| c.action == Action::Unmanaged).partition(|c| c.owner.is_some());
    for (group, heading) in [
        (unmanaged, "Unmanaged (live, neither in the files nor created by warren; never touched):"),
        (left, "This project's, made with vhosts the files no longer declare (never touched):"),
    ] {
        if !group.is_empty() {
            *out += heading;
            *out += "\n";
            for c in group {
                let _ = writeln!(out, "  {} {}", p.symbol(Action::Unmanaged), c.address);
            }
            *out += "\n";
        }
    }
    let theirs: Vec<&ChangeDoc> = doc.changes.iter().filter(|c| c.action == Action::OtherProject).collect();
    if !theirs.is_empty() {
        *out += "Owned by other projects (never touched):\n";
        for c in theirs {
            let owner = c.owner.as_deref().unwrap_or_default();
            let _ = writeln!(out, "  {} {} (project {owner})", p.symbol(Action::OtherProject), c.address);
        }
        *out += "\n";
    }
}

/// One line per vhost read by name: what the plan did not read, in words.
fn not_read(out: &mut String, doc: &PlanDocument) {
    for n in &doc.not_read {
        let _ = writeln!(
            out,
            "Not read: vhost \"{}\" was read by name, for what this project declares, owns or references; its other objects (at most {} queue{} and {} exchange{}: the broker's in all, less those read), with their bindings, are left out of this plan, untouched.\n",
            n.vhost.escape_debug(),
            n.queues_at_most,
            if n.queues_at_most == 1 { "" } else { "s" },
            n.exchanges_at_most,
            if n.exchanges_at_most == 1 { "" } else { "s" },
        );
    }
}

/// What the plan's changes that need --allow-destroy can lose, in words
/// (apply's refusal says it too).
pub fn losses(doc: &PlanDocument) -> &'static str {
    let destroying = doc.changes.iter().filter(|c| c.requires_allow_destroy);
    let (access, data): (Vec<_>, Vec<_>) = destroying.partition(|c| is_access(c));
    match (data.is_empty(), access.is_empty()) {
        (false, true) => "messages or routes",
        (true, false) => "access",
        _ => "messages, routes or access",
    }
}

/// Whether a change is to a user or its permissions: access, not data.
fn is_access(c: &ChangeDoc) -> bool {
    matches!(c.kind.as_str(), "user" | "permissions" | "topic permission")
}

/// The last line, in terraform's words so CI tooling can read it.
pub fn summary_line(doc: &PlanDocument) -> String {
    let s = &doc.summary;
    let outside = match s.outside {
        0 => String::new(),
        n => format!(" {n} changed outside warren."),
    };
    if !doc.errors.is_empty() {
        let n = doc.errors.len();
        return format!("No plan: {n} error{} must be fixed first.{outside}", if n == 1 { "" } else { "s" });
    }
    if let Voice::Compare { old, new } = Voice::of(doc) {
        if !doc.has_changes() {
            return format!("No differences. Environments {old} and {new} match.");
        }
        let differ = if s.change == 1 { "differs" } else { "differ" };
        return format!(
            "Differences: {} only in {old}, {} {differ}, {} only in {new}.{outside}",
            s.destroy,
            s.change,
            s.add + s.migrate
        );
    }
    if !doc.has_changes() {
        return if doc.origin.diff {
            "No changes. The two topologies match."
        } else {
            "No changes. The broker matches the topology."
        }
        .to_string();
    }
    let mut rollback = if s.rollback > 0 { format!(", {} to roll back", s.rollback) } else { String::new() };
    if s.forget > 0 {
        rollback.push_str(&format!(", {} to stop managing (left on the broker)", s.forget));
    }
    format!(
        "Plan: {} to add, {} to change, {} to destroy, {} to migrate{rollback}.{outside}",
        s.add, s.change, s.destroy, s.migrate
    )
}

/// How a plan speaks: of what warren will do (`plan`), of what applying
/// a change would do (`diff OLD NEW`), or of what differs between two
/// environments (`diff --env A --env B`), never of actions or losses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Voice<'a> {
    Plan,
    Review,
    Compare { old: &'a str, new: &'a str },
}

impl<'a> Voice<'a> {
    pub fn of(doc: &'a PlanDocument) -> Voice<'a> {
        match (&doc.origin.compared, doc.origin.diff) {
            (Some((old, new)), _) => Voice::Compare { old, new },
            (None, true) => Voice::Review,
            (None, false) => Voice::Plan,
        }
    }
}

/// One change; `outside`: its object was changed outside warren since its
/// last apply, which its reason says (a create or an update says no
/// reason otherwise, the files say it, unless it loses something: a
/// permission that grants less says what is lost).
fn change(out: &mut String, c: &ChangeDoc, outside: bool, p: &Painter, voice: Voice) {
    let _ = writeln!(out, "  {}", p.paint(&format!("# {} {}", c.address, what(c, outside, voice)), BOLD));
    if let Some(s) = &c.super_stream {
        let _ = writeln!(out, "  # part of super stream \"{s}\"");
    }
    if let Some(s) = &c.shape {
        let _ = writeln!(out, "  # from shape \"{}\" at {} (the shape: {})", s.name, s.stamped_at, s.defined_at);
    }
    if !c.services.is_empty() {
        let named: Vec<String> = c.services.iter().map(|s| format!("\"{s}\"")).collect();
        let _ = writeln!(out, "  # made for services {}: what they publish, consume and declare", named.join(", "));
    }
    if c.requires_allow_lockout {
        let _ = writeln!(out, "  {}", p.paint("# needs --allow-lockout: warren's own user loses access", RED));
    }
    if c.requires_allow_destroy {
        let lost = if is_access(c) { "access is removed" } else { "messages or routes can be lost" };
        let needs = match voice {
            Voice::Review => format!(
                "# apply would need --allow-destroy: {}",
                lost.replace("can be", "could be").replace("is removed", "would be removed")
            ),
            _ => format!("# needs --allow-destroy: {lost}"),
        };
        let _ = writeln!(out, "  {}", p.paint(&needs, RED));
    }
    let _ = writeln!(out, "  {} {} {{", p.symbol(c.action), title(c));
    let before = c.before.as_ref().map(lines).unwrap_or_default();
    let after = c.after.as_ref().map(lines).unwrap_or_default();
    match c.action {
        Action::Create => attribute_lines(out, &after, '+', p),
        Action::Destroy => attribute_lines(out, &before, '-', p),
        // Left as it is: shown unchanged.
        Action::Forget => attribute_lines(out, &before, ' ', p),
        _ => diff_lines(out, &before, &after, p),
    }
    if let Some(m) = &c.migration {
        migration(out, m);
    }
    if let Some(r) = &c.rollback {
        let _ = writeln!(out, "      # steps back to queue \"{}\" (migration {}):", r.to, r.id);
        for s in &r.steps {
            let _ = writeln!(out, "      #   {:>2}. {}", s.n, s.text);
        }
        let _ = writeln!(out, "      #   then delete queue \"{}\" if it is empty and unused", c.name);
    }
    if !c.rebind.is_empty() {
        let _ = writeln!(out, "      # bindings put back after it is recreated:");
        for b in &c.rebind {
            let _ = writeln!(out, "      #   {b}");
        }
    }
    out.push_str("    }\n\n");
}

/// What becomes of a change's object, in `voice`.
fn what(c: &ChangeDoc, outside: bool, voice: Voice) -> String {
    match (voice, c.action) {
        (_, Action::Unmanaged | Action::OtherProject) => unreachable!("objects left alone are listed apart"),
        // The reasons of a comparison say how it differs.
        (Voice::Compare { .. }, _) => c.reason.clone(),
        (Voice::Plan, Action::Create) if outside || c.requires_allow_destroy => {
            format!("will be created: {}", c.reason)
        }
        (Voice::Plan, Action::Update) if outside || c.requires_allow_destroy => {
            format!("will be updated in place: {}", c.reason)
        }
        (Voice::Plan, Action::Create) => "will be created".to_string(),
        (Voice::Plan, Action::Update) => "will be updated in place".to_string(),
        (Voice::Plan, Action::Destroy) => format!("will be destroyed: {}", c.reason),
        (Voice::Plan, Action::Replace) => format!("must be replaced: {}", c.reason),
        (Voice::Plan, Action::Migrate) => format!("will be migrated live: {}", c.reason),
        (Voice::Plan, Action::Rollback) => format!("will be rolled back: {}", c.reason),
        (Voice::Plan, Action::Forget) => format!("will no longer be managed by warren: {}", c.reason),
        (Voice::Review, Action::Forget) => format!("would no longer be managed by warren: {}", c.reason),
        (Voice::Review, Action::Create) if c.requires_allow_destroy => format!("would be created: {}", c.reason),
        (Voice::Review, Action::Update) if c.requires_allow_destroy => {
            format!("would be updated in place: {}", c.reason)
        }
        (Voice::Review, Action::Create) => "would be created".to_string(),
        (Voice::Review, Action::Update) => "would be updated in place".to_string(),
        (Voice::Review, Action::Destroy) => format!("would be destroyed if applied: {}", c.reason),
        (Voice::Review, Action::Replace) => format!("would have to be replaced: {}", c.reason),
        (Voice::Review, Action::Migrate) => format!("would be migrated live: {}", c.reason),
        (Voice::Review, Action::Rollback) => format!("would be rolled back: {}", c.reason),
    }
}

/// A migration's notes in its change: the bindings it moves, adds and
/// drops, its steps, and the policy that could do without it.
fn migration(out: &mut String, m: &MigrationDoc) {
    let _ = writeln!(out, "      # replaces queue \"{}\", whose messages move over with no loss", m.replaces);
    for (label, list) in [
        ("bindings that move to the new queue", &m.bindings_moved),
        ("bindings created directly", &m.bindings_added),
        ("bindings that go away with the old queue", &m.bindings_dropped),
    ] {
        if !list.is_empty() {
            let _ = writeln!(out, "      # {label}:");
            for b in list {
                let _ = writeln!(out, "      #   {b}");
            }
        }
    }
    if !m.steps.is_empty() {
        let _ = writeln!(out, "      # steps:");
        for s in &m.steps {
            let _ = writeln!(out, "      #   {:>2}. [{}] {}", s.n, s.stage, s.text);
            if s.n + 1 == m.point_of_no_return {
                let _ = writeln!(out, "      #   --- point of no return: the next step deletes the old queue ---");
            }
        }
    }
    if let Some(policy) = &m.policy_instead {
        let _ = writeln!(
            out,
            "      # every change here could be set on queue \"{}\" by a policy instead, with no migration:",
            m.replaces
        );
        for l in policy.lines() {
            let _ = writeln!(out, "      #   {l}");
        }
    }
}

fn title(c: &ChangeDoc) -> String {
    let vhost = c.vhost.as_deref().map(|v| format!(" (vhost \"{v}\")")).unwrap_or_default();
    let compound = || KINDS.iter().find(|k| k.name == c.kind && k.identity.len() > 1);
    match c.kind.as_str() {
        "binding" => format!("binding {}{vhost}", c.name),
        _ if let (Some(kind), Ok(id)) = (compound(), serde_json::from_str::<Vec<String>>(&c.name)) => {
            format!("{}{vhost}", Name { kind, id })
        }
        kind => format!("{kind} \"{}\"{vhost}", c.name),
    }
}

/// `key = value` lines, tables flattened to `arguments."x-…" = value`.
fn lines(attrs: &Attributes) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (k, v) in attrs {
        match v {
            Json::Object(m) if !m.is_empty() => {
                for (sub, sv) in m {
                    out.push((format!("{k}.\"{sub}\""), sv.to_string()));
                }
            }
            _ => out.push((k.clone(), v.to_string())),
        }
    }
    out
}

fn aligned(pairs: &[(String, String)]) -> Vec<String> {
    let width = pairs.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    pairs.iter().map(|(k, v)| format!("{k:<width$} = {v}")).collect()
}

fn attribute_lines(out: &mut String, pairs: &[(String, String)], sign: char, p: &Painter) {
    for l in aligned(pairs) {
        let _ = writeln!(out, "      {}", p.sign(sign, &l));
    }
}

/// Before and after as a line diff (similar), unchanged lines for context.
fn diff_lines(out: &mut String, before: &[(String, String)], after: &[(String, String)], p: &Painter) {
    let all: Vec<(String, String)> = before.iter().chain(after).cloned().collect();
    let width = all.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    let text =
        |pairs: &[(String, String)]| pairs.iter().map(|(k, v)| format!("{k:<width$} = {v}\n")).collect::<String>();
    let (old, new) = (text(before), text(after));
    for d in TextDiff::from_lines(&old, &new).iter_all_changes() {
        let line = d.value().trim_end_matches('\n');
        let sign = match d.tag() {
            ChangeTag::Delete => '-',
            ChangeTag::Insert => '+',
            ChangeTag::Equal => ' ',
        };
        let _ = writeln!(out, "      {}", p.sign(sign, line));
    }
}

const RED: &str = "31";
const GREEN: &str = "32";
const YELLOW: &str = "33";
const CYAN: &str = "36";
const DIM: &str = "2";
const BOLD: &str = "1";

struct Painter {
    color: bool,
}

impl Painter {
    fn paint(&self, text: &str, code: &str) -> String {
        if self.color { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
    }

    fn symbol(&self, a: Action) -> String {
        let code = match a {
            Action::Create => GREEN,
            Action::Update => YELLOW,
            Action::Destroy | Action::Replace => RED,
            Action::Migrate | Action::Rollback => CYAN,
            Action::Unmanaged | Action::OtherProject | Action::Forget => DIM,
        };
        self.paint(a.symbol(), code)
    }

    fn sign(&self, sign: char, line: &str) -> String {
        match sign {
            '+' => self.paint(&format!("+ {line}"), GREEN),
            '-' => self.paint(&format!("- {line}"), RED),
            _ => format!("  {line}"),
        }
    }
}
