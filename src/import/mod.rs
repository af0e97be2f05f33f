//! The live state to topology files: one file per vhost, plus `users.toml`;
//! a vhost of more than [`QUEUES_PER_FILE`] queues has them, with the
//! bindings to them, in further files. Loaded back with
//! [`crate::desired::load`], the files give exactly
//! [`Import::topology`]: the live topology less what topology files cannot
//! declare ([`Import::left_out`]), with the names that bindings use but the
//! export lacks listed as external.

mod names;
pub mod object;
mod parts;
mod render;
mod select;
mod services;
mod shapes;
mod super_streams;

use std::collections::{BTreeMap, BTreeSet};

pub use names::{USERS_FILE, slug};
pub use select::LeftOut;
pub use services::Consumed;

use crate::diagnostic::Diagnostic;
use crate::live::notes::Notes;
use crate::live::{Scope, Skipped};
use crate::model::{Topology, User, Vhost};
use render::Share;

/// The most queues in one file. A vhost with more has them, with the
/// bindings to them, in files of this many, in name order; its own file
/// keeps the rest. Parsing a file takes about 30 times its size at once
/// (the toml crate holds all of its tokens), and files are parsed one per
/// core at a time: a file of 1,000 queues, with two bindings each, is
/// about 270 kB and 8 MB to parse, and 13,000 lines to read.
pub const QUEUES_PER_FILE: usize = 1_000;

/// One file to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// A file name, no directories.
    pub name: String,
    pub text: String,
    /// The vhost the file declares; `None` for the users' file.
    pub vhost: Option<String>,
    pub counts: Counts,
    /// What it proposes, commented out at its end: shapes, services.
    pub proposed: Proposed,
}

/// How many shapes and services a vhost's file proposes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Proposed {
    pub shapes: usize,
    pub services: usize,
}

/// How many objects of each kind a file declares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub exchanges: usize,
    pub queues: usize,
    pub bindings: usize,
    pub permissions: usize,
    pub users: usize,
    /// Of each kind of `model::kinds` it declares, by the kind's name.
    pub kinds: Vec<(&'static str, usize)>,
}

impl Counts {
    /// A vhost's own objects, with `queues` and `bindings` as given.
    fn of(v: &Vhost, queues: usize, bindings: usize) -> Counts {
        Counts {
            exchanges: v.exchanges.len(),
            queues,
            bindings,
            permissions: v.permission_users().count(),
            users: 0,
            kinds: of_kinds(&v.objects),
        }
    }
}

/// How many `objects` of each kind there are, in the order of `KINDS`
/// (policies first).
fn of_kinds(objects: &crate::model::kinds::Objects) -> Vec<(&'static str, usize)> {
    let count = |k: &crate::model::kinds::Kind| objects.keys().filter(|n| n.kind == k).count();
    // Users and permissions are counted apart (`Counts::users`, first;
    // `Counts::permissions`, after bindings).
    let apart = [&crate::model::kinds::users::KIND, &crate::model::kinds::permissions::KIND];
    let kinds = crate::model::kinds::KINDS.iter().filter(|k| !apart.contains(k));
    kinds.map(|k| (k.name, count(k))).filter(|(_, n)| *n > 0).collect()
}

/// The files of an import and what they hold.
#[derive(Debug)]
pub struct Import {
    pub files: Vec<File>,
    /// What the files declare, `external` names included.
    pub topology: Topology,
    pub left_out: Vec<LeftOut>,
    /// Warnings (code `left-out`): what the files leave out. Names made
    /// external are the live notes' bindings to undeclared objects.
    pub notes: Vec<Diagnostic>,
}

/// Topology files for the `vhosts` of `live` (every vhost when empty).
/// `source` names the export in the files' first comment. An error names
/// the vhosts `live` does not have.
pub fn import(live: &Topology, vhosts: &[String], source: &str) -> Result<Import, Diagnostic> {
    import_knowing(live, vhosts, source, &Known::default())
}

/// What an import knows besides the topology it writes.
pub struct Known<'a> {
    /// The items of the export that RabbitMQ skips too
    /// ([`crate::live::Live::skipped`]), listed at the top of the file each
    /// would have gone to (those that name no vhost, in every vhost's file).
    pub skipped: &'a [Skipped],
    /// On a live broker, the queues each user was seen consuming: its
    /// proposed service consumes those (`services.rs`).
    pub consumed: Option<&'a Consumed>,
    /// What the files the import is added to declare (`import --object`):
    /// not listed as `[external]`.
    pub beside: Option<&'a Topology>,
    /// At most this many queues in a file.
    pub queues_per_file: usize,
}

impl Default for Known<'_> {
    fn default() -> Self {
        Known { skipped: &[], consumed: None, beside: None, queues_per_file: QUEUES_PER_FILE }
    }
}

/// [`import`], with what else is known.
pub fn import_knowing(live: &Topology, vhosts: &[String], source: &str, known: &Known) -> Result<Import, Diagnostic> {
    let Known { skipped, consumed, beside, queues_per_file } = *known;
    let none = Consumed::new();
    let consumed = consumed.unwrap_or(&none);
    let wanted: BTreeSet<String> = vhosts.iter().cloned().collect();
    importable(live, &wanted, source)?;
    let mut selection = select::select(live, &wanted);
    for (v, vh) in &mut selection.topology.vhosts {
        if let Some(declared) = beside.and_then(|b| b.vhosts.get(v)) {
            vh.external.exchanges.retain(|n| !declared.exchanges.contains_key(n));
            vh.external.queues.retain(|n| !declared.queues.contains_key(n));
        }
    }
    let mut files = Vec::new();
    let users = selection.topology.users();
    // Each vhost without its super streams' objects, and those super streams.
    let apart: std::collections::BTreeMap<&String, _> =
        selection.topology.vhosts.iter().map(|(name, v)| (name, super_streams::apart(v))).collect();
    let vhosts = apart.iter().map(|(name, (v, _))| (*name, parts::count(v, queues_per_file)));
    for (vhost, names) in names::vhost_files(vhosts) {
        let whole = &selection.topology.vhosts[vhost];
        let (v, streams) = &apart[vhost];
        let v: &Vhost = v;
        let left_out: Vec<&LeftOut> = selection.left_out.iter().filter(|l| l.key.vhost() == Some(vhost)).collect();
        let skipped: Vec<&Skipped> = skipped
            .iter()
            .filter(|s| match &s.scope {
                Scope::Vhost(v) => v == vhost,
                Scope::NoVhost => true,
                Scope::Users => false,
            })
            .collect();
        let file = |name: &String, text: String, counts: Counts| File {
            name: name.clone(),
            text,
            vhost: Some(vhost.clone()),
            counts,
            proposed: Proposed::default(),
        };
        let Some((own, further)) = names.split_first() else { continue };
        let (proposal, proposed) = proposals(v, whole, &users, consumed.get(vhost));
        let tail = render::Tail { left_out: &left_out, skipped: &skipped, proposal: &proposal };
        if further.is_empty() {
            let text = render::vhost_file(v, streams, &Share::Whole, &tail, source);
            let counts = Counts::of(whole, whole.queues.len(), whole.bindings.len());
            files.push(File { proposed, ..file(own, text, counts) });
            continue;
        }
        let cut = parts::cut(v, queues_per_file);
        let counts = Counts::of(v, 0, cut.own.len());
        let share = Share::Own { bindings: cut.own, parts: further };
        files.push(File { proposed, ..file(own, render::vhost_file(v, streams, &share, &tail, source), counts) });
        for (i, ((queues, bindings), name)) in cut.parts.iter().zip(further).enumerate() {
            let text = render::queues_file(v, queues, bindings, (i + 1, further.len()), own, source);
            let counts = Counts { queues: queues.len(), bindings: bindings.len(), ..Counts::default() };
            files.push(file(name, text, counts));
        }
    }
    let users_left_out: Vec<&LeftOut> = selection.left_out.iter().filter(|l| l.key.vhost().is_none()).collect();
    let users_skipped: Vec<&Skipped> = skipped.iter().filter(|s| s.scope == Scope::Users).collect();
    let t = &selection.topology;
    if !t.objects.is_empty() || !users_left_out.is_empty() || !users_skipped.is_empty() {
        files.push(File {
            name: USERS_FILE.into(),
            text: render::users_file(&t.objects, &users_left_out, &users_skipped, source),
            vhost: None,
            counts: Counts { users: t.user_names().count(), kinds: of_kinds(&t.objects), ..Counts::default() },
            proposed: Proposed::default(),
        });
    }
    let notes = notes(&selection);
    Ok(Import { files, topology: selection.topology, left_out: selection.left_out, notes })
}

/// The lines a vhost's file ends with, commented out: the shapes of `v`
/// (its own objects) and the services of `whole` it proposes; and how many.
fn proposals(
    v: &Vhost,
    whole: &Vhost,
    users: &BTreeMap<String, User>,
    consumed: Option<&BTreeMap<String, BTreeSet<String>>>,
) -> (Vec<String>, Proposed) {
    let (shapes, services) = (shapes::proposed(v), services::proposed(whole, users, consumed));
    let proposed = Proposed {
        shapes: shapes.len(),
        services: services.iter().filter(|p| matches!(p, services::Proposal::Service(..))).count(),
    };
    let mut lines = shapes::lines(&shapes, v);
    let services = services::lines(&services);
    if !lines.is_empty() && !services.is_empty() {
        lines.push(String::new());
    }
    lines.extend(services);
    (lines, proposed)
}

/// An error when `live` lacks a vhost of `wanted`, or holds nothing.
fn importable(live: &Topology, wanted: &BTreeSet<String>, source: &str) -> Result<(), Diagnostic> {
    let unknown: Vec<String> =
        wanted.iter().filter(|v| !live.vhosts.contains_key(*v)).map(|v| format!("\"{v}\"")).collect();
    if !unknown.is_empty() {
        let have: Vec<String> = live.vhosts.keys().map(|v| format!("\"{v}\"")).collect();
        return Err(Diagnostic::error("import", format!("{source} has no vhost {}", unknown.join(", "))).help(
            if have.is_empty() {
                "the export holds no vhost".to_string()
            } else {
                format!("its vhosts are {}", have.join(", "))
            },
        ));
    }
    if live.vhosts.is_empty() && live.user_names().next().is_none() {
        return Err(Diagnostic::error("import", format!("{source} holds no vhosts and no users: nothing to import"))
            .help("export the definitions again; an empty file imports nothing"));
    }
    Ok(())
}

fn notes(s: &select::Selection) -> Vec<Diagnostic> {
    let mut left = Notes::new("left-out");
    for l in &s.left_out {
        let scope = match l.key.vhost() {
            Some(v) => format!("vhost \"{v}\": "),
            None => String::new(),
        };
        let (group, name) = match &l.part {
            Some(part) => ("vhost settings".to_string(), part.clone()),
            None => (plural(l.key.kind()), l.key.name()),
        };
        left.add(
            format!("{scope}{group} left out, as topology files cannot declare them ({})", l.why),
            "they stay on the broker as they are, unmanaged; each file lists what it leaves out in a comment at its top, and left-out exchanges and queues under [external]",
            &name,
        );
    }
    left.into_diagnostics()
}

/// `queues`, `policies`, `permissions`: a kind of object, as a group.
fn plural(kind: &str) -> String {
    match kind.strip_suffix('y') {
        Some(stem) => format!("{stem}ies"),
        None if kind.ends_with('s') => kind.to_string(),
        None => format!("{kind}s"),
    }
}
