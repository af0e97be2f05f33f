//! A parsed export to the model, normalised so that a topology nobody
//! changed compares equal to the files that declared it (RabbitMQ 4.0's
//! `rabbit_amqqueue:augment_declare_args` adds `x-queue-type`): defaults filled in, `x-queue-type` moved to the queue's type, the
//! broker's own objects and federation artefacts left out.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashSet;
use serde_json::value::RawValue;
use serde_json::{Map, Value as Json, json};

use super::Live;
use super::definitions::{
    BindingDef, Definitions, DestinationType, ExchangeDef, GlobalParameterDef, ParameterDef, PolicyBody, PolicyDef,
    QueueDef,
};
use super::notes::Notes;
use super::skipped::{self, Scope, Skipped, Text};
use super::users::{default_algorithm, user};
use super::vhosts::{add_limits, settings};
use crate::diagnostic::Diagnostic;
use crate::model::kinds::{KINDS, Name, Scope as KindScope, operator_policies, permissions, policies};
use crate::model::{
    ApplyTo, BROKER_GLOBAL_PARAMETERS, Binding, DestinationKind, Exchange, Generations, INVENTORY_PARAMETER, Inventory,
    Ownership, Policy, Queue, QueueType, RECORD_ARGUMENT, RecordError, RecordKind, Records, SPLIT_FORMAT, SetBuilder,
    SplitIndex, Table, Topology, Value, Vhost, exchange_part_of, is_part_of, joined_text, part_slot, policy_key,
};

/// Federation's upstream exchanges and queues are named `federation: …`.
const FEDERATION_PREFIX: &str = "federation: ";
/// The exchange type of federation's upstream exchanges.
const FEDERATION_EXCHANGE_TYPE: &str = "x-federation-upstream";

/// Why an item of a cluster-wide export that names no vhost is skipped.
const NO_VHOST: &str = "it names no vhost, and RabbitMQ skips such items of a cluster-wide export";
const NO_VHOST_HELP: &str = "give the item its `vhost` in the export and read it again. An export of one vhost (GET /api/definitions/{vhost}) names no vhost in any item: give its vhost with --vhost";

/// Reads `defs`; `single` names the vhost of a single-vhost export. `text`
/// is the text `defs` was parsed from, to say where skipped items are.
pub(super) fn read(
    mut defs: Definitions,
    origin: &str,
    single: Option<String>,
    text: Text,
) -> Result<Live, Diagnostic> {
    let mut r = Normaliser {
        origin,
        default_algorithm: default_algorithm(defs.version()),
        listed: defs.vhosts.as_ref().map(|l| l.iter().map(|v| v.name.clone()).collect()),
        single,
        topology: Topology::default(),
        records: Records::default(),
        vhost_inventories: BTreeMap::new(),
        record_parts: BTreeMap::new(),
        migrations: Default::default(),
        progress: Vec::new(),
        last_applies: Default::default(),
        notes: Notes::default(),
        artefacts: BTreeSet::new(),
        exchanges: BTreeMap::new(),
        queues: BTreeMap::new(),
        bindings: BTreeMap::new(),
        skipped: Vec::new(),
    };
    r.vhosts(&mut defs);
    r.global_parameters(&defs)?;
    for (i, p) in defs.parameters.iter().enumerate() {
        r.parameter(i, p)?;
    }
    // Taken, not borrowed: their strings move into the topology.
    for (i, x) in std::mem::take(&mut defs.exchanges).into_iter().enumerate() {
        r.exchange(i, x)?;
    }
    r.vhost_inventories()?;
    for (v, exchanges) in std::mem::take(&mut r.exchanges) {
        let built = by_name(exchanges, |name| r.duplicate(&v, "exchanges", name));
        r.vhost(&v).exchanges = built;
    }
    for (i, q) in std::mem::take(&mut defs.queues).into_iter().enumerate() {
        r.queue(i, q)?;
    }
    for (v, queues) in std::mem::take(&mut r.queues) {
        let built = by_name(queues, |name| r.duplicate(&v, "queues", name));
        r.vhost(&v).queues = built;
    }
    for (i, b) in std::mem::take(&mut defs.bindings).into_iter().enumerate() {
        r.binding(i, b)?;
    }
    for (v, bindings) in std::mem::take(&mut r.bindings) {
        r.vhost(&v).bindings = bindings.finish();
    }
    for (i, p) in defs.policies.iter().enumerate() {
        r.policy(i, p)?;
    }
    // Read once the listings above are dropped: at 100,000 queues the
    // inventory's keys are tens of MB, which a plan's peak need not hold
    // beside the parsed listings.
    r.broker_inventory(&mut defs.global_parameters)?;
    r.users(&defs);
    r.dangling_bindings();
    skipped::locate(&mut r.skipped, text);
    // In the order of the file, as a reader walks it.
    r.skipped.sort_by_key(|s| (s.at.is_none(), s.at));
    crate::journal::add_progress(&mut r.migrations, &r.progress);
    let mut notes: Vec<Diagnostic> = r.skipped.iter().map(|s| s.diagnostic(origin)).collect();
    notes.extend(r.notes.into_diagnostics());
    Ok(Live {
        topology: r.topology,
        ownership: r.records.ownership(),
        records: r.records,
        migrations: r.migrations,
        last_applies: r.last_applies,
        notes,
        skipped: r.skipped,
    })
}

struct Normaliser<'o> {
    origin: &'o str,
    /// What a `password_hash` without `hashing_algorithm` was made with.
    default_algorithm: &'static str,
    /// The vhost of a single-vhost export.
    single: Option<String>,
    /// The names in the file's `vhosts` list; `None` when it has none.
    listed: Option<BTreeSet<String>>,
    topology: Topology,
    records: Records,
    /// The inventories kept inside vhosts while the exchanges are read:
    /// (vhost, project) -> generation -> (exchange, value). The newest of
    /// each is read once every exchange is, its parts with it.
    vhost_inventories: BTreeMap<(String, String), BTreeMap<u64, (String, Json)>>,
    /// The parts of record exchanges while the exchanges are read: (vhost,
    /// project) -> (exchange, value), in any order.
    record_parts: BTreeMap<(String, String), Vec<(String, Json)>>,
    migrations: std::collections::BTreeMap<String, crate::journal::Migration>,
    /// The migrations' progress records, taken into their counts at the end.
    progress: Vec<crate::model::Progress>,
    last_applies: std::collections::BTreeMap<String, crate::journal::LastApply>,
    notes: Notes,
    /// Federation artefacts left out: (vhost, kind, name).
    artefacts: BTreeSet<(String, DestinationKind, String)>,
    /// Each vhost's exchanges and queues while they are read, by name.
    exchanges: BTreeMap<String, Vec<(String, Exchange)>>,
    queues: BTreeMap<String, Vec<(String, Queue)>>,
    /// Each vhost's bindings while they are read.
    bindings: BTreeMap<String, SetBuilder<Binding>>,
    /// Items RabbitMQ would not load either, in the order found.
    skipped: Vec<Skipped>,
}

/// Objects by name, built at once from a list that an export gives mostly
/// in order. Of a name listed more than once the last entry is used, as the
/// broker's import does; `repeated` hears of each such name.
fn by_name<T>(mut items: Vec<(String, T)>, mut repeated: impl FnMut(&str)) -> BTreeMap<String, T> {
    // Stable: of equal names, the last listed stays last.
    items.sort_by(|a, b| a.0.cmp(&b.0));
    let mut kept = Vec::with_capacity(items.len());
    let mut items = items.into_iter().peekable();
    while let Some((name, item)) = items.next() {
        if items.peek().is_some_and(|(next, _)| *next == name) {
            repeated(&name);
        } else {
            kept.push((name, item));
        }
    }
    kept.into_iter().collect()
}

impl Normaliser<'_> {
    fn vhosts(&mut self, defs: &mut Definitions) {
        if let Some(v) = self.single.clone() {
            let s = settings(&defs.take_vhost_settings(), &v, &mut self.notes);
            self.vhost(&v).settings = s;
            return;
        }
        for def in defs.vhosts.iter().flatten() {
            let s = settings(&def.fields, &def.name, &mut self.notes);
            self.vhost(&def.name).settings = s;
        }
    }

    /// The vhost of an item: the export's vhost, or the item's own; `None`
    /// (and the item skipped, as RabbitMQ skips it) when it names none.
    /// Takes the item's own `vhost`: its string moves rather than copies.
    /// `what` describes the item, made only when it is skipped.
    fn vhost_of(
        &mut self,
        item: Option<String>,
        list: &'static str,
        index: usize,
        what: impl FnOnce() -> String,
    ) -> Option<String> {
        if let Some(v) = &self.single {
            return Some(v.clone());
        }
        if item.is_none() {
            self.skip(Scope::NoVhost, what(), list, index, NO_VHOST.into(), NO_VHOST_HELP);
        }
        item
    }

    /// Leaves an item out, with a warning at its place in the file.
    fn skip(&mut self, scope: Scope, what: String, list: &'static str, index: usize, why: String, help: &str) {
        self.skipped.push(Skipped { scope, what, list, index, at: None, why, help: help.to_string() });
    }

    /// The vhost named `name`, created (and noted) if the file does not list it.
    fn vhost(&mut self, name: &str) -> &mut Vhost {
        if !self.topology.vhosts.contains_key(name) && self.single.is_none() {
            let help = "a complete export lists every vhost; this one is read as having no settings";
            match &self.listed {
                None => self.notes.add(
                    "the file has no `vhosts` list; made these vhosts from the objects that name them",
                    help,
                    name,
                ),
                Some(l) if !l.contains(name) => self.notes.add(
                    "objects name vhosts that the file's `vhosts` list lacks; added these vhosts",
                    help,
                    name,
                ),
                Some(_) => {}
            }
        }
        // Looked up first: `entry` would allocate the name on every call.
        if !self.topology.vhosts.contains_key(name) {
            self.topology.vhosts.insert(name.to_string(), Vhost::new(name));
        }
        self.topology.vhosts.get_mut(name).expect("just ensured")
    }

    fn duplicate(&mut self, vhost: &str, kind: &str, name: &str) {
        self.notes.add(
            format!("vhost \"{vhost}\": {kind} listed more than once (the last entry is used)"),
            "an export lists each object once; the file was probably edited by hand",
            name,
        );
    }

    fn global_parameters(&mut self, defs: &Definitions) -> Result<(), Diagnostic> {
        for (index, g) in defs.global_parameters.iter().enumerate() {
            let what = |record: &str| format!("{}: warren's {record} (global parameter `{}`)", self.origin, g.name);
            let clear = format!("`rabbitmqctl clear_global_parameter {}`", g.name);
            if g.name == INVENTORY_PARAMETER || is_part_of(INVENTORY_PARAMETER, &g.name) {
                // Read last, with its parts (`broker_inventory`).
            } else if g.name == crate::model::JOURNAL_PARAMETER {
                let journal = crate::journal::Journal::from_json(Some(g.value.clone())).map_err(|e| {
                    unreadable(
                        what("journal"),
                        e,
                        &clear,
                        &format!("it records in-flight migrations; if none is in flight, remove it with {clear}"),
                    )
                })?;
                crate::journal::newest_applies(&mut self.last_applies, journal.last_applies());
                self.migrations.extend(journal.migrations);
            } else if self.kind_item("global_parameters", index, &json!({ "name": g.name, "value": g.value })) {
            } else if !BROKER_GLOBAL_PARAMETERS.contains(&g.name.as_str()) {
                self.notes.add(
                    "global parameters are not modelled by warren and were left out",
                    "warren manages topology, users and permissions; other global parameters stay as they are",
                    &g.name,
                );
            }
        }
        Ok(())
    }

    /// Reads the broker-wide inventory (global parameter
    /// `warren.inventory`) with its parts, which leave `params`.
    fn broker_inventory(&mut self, params: &mut Vec<GlobalParameterDef>) -> Result<(), Diagnostic> {
        let parts: Vec<GlobalParameterDef> =
            params.extract_if(.., |g| is_part_of(INVENTORY_PARAMETER, &g.name)).collect();
        let Some(g) = params.iter_mut().find(|g| g.name == INVENTORY_PARAMETER) else { return Ok(()) };
        let index = g.inventory.take();
        let what = format!("{}: warren's inventory (global parameter `{INVENTORY_PARAMETER}`)", self.origin);
        let clear = format!("`rabbitmqctl clear_global_parameter {INVENTORY_PARAMETER}`");
        self.records.broker = ownership(parts, INVENTORY_PARAMETER, index.as_deref()).map_err(|e| {
            unreadable(what, e, &clear, "the inventory says which objects warren manages; without it nothing could be destroyed safely. Export the definitions again, or remove the parameter to start afresh")
        })?;
        Ok(())
    }

    fn parameter(&mut self, index: usize, p: &ParameterDef) -> Result<(), Diagnostic> {
        let what = || format!("{} parameter {}", p.component, quoted(&p.name));
        let Some(v) = self.vhost_of(p.vhost.clone(), "parameters", index, what) else {
            return Ok(());
        };
        match p.component.as_str() {
            "operator_policy" => {
                let body = operator_policy(&parameter_json(&v, p)).map_err(|why| {
                    Diagnostic::error(
                        "definitions",
                        format!("{}: operator policy \"{}\" (`parameters[{index}].value`) is malformed: {why}", self.origin, p.name),
                    )
                    .help("an operator policy's value has `pattern`, `definition`, and optionally `priority` and `apply-to`")
                })?;
                self.add_policy(&v, &p.name, &body, true);
            }
            "vhost-limits" => {
                let mut limits = self.vhost(&v).settings.limits.take().unwrap_or_default();
                add_limits(&mut limits, &p.value, &format!("vhost \"{v}\""), &mut self.notes);
                self.vhost(&v).settings.limits = (!limits.is_empty()).then_some(limits);
            }
            _ if self.kind_item("parameters", index, &parameter_json(&v, p)) => {}
            other => self.notes.add(
                format!("vhost \"{v}\": `{other}` parameters are not modelled by warren and were left out"),
                "warren has no kind for this plugin's parameters (docs/format.md lists the kinds); they stay as they are",
                &p.name,
            ),
        }
        Ok(())
    }

    fn exchange(&mut self, index: usize, mut x: ExchangeDef) -> Result<(), Diagnostic> {
        let Some(v) = self.vhost_of(x.vhost.take(), "exchanges", index, || format!("exchange {}", quoted(&x.name)))
        else {
            return Ok(());
        };
        if x.name.is_empty() || x.name.starts_with("amq.") {
            return Ok(()); // the broker's own; exports leave them out too
        }
        if x.kind == FEDERATION_EXCHANGE_TYPE || x.name.starts_with(FEDERATION_PREFIX) {
            self.artefacts.insert((v, DestinationKind::Exchange, x.name.clone()));
            return Ok(());
        }
        if let Some(Value::String(text)) = x.arguments.get(RECORD_ARGUMENT) {
            if let Some(record) = RecordKind::parse(&x.name) {
                return self.record(&v, &x.name, record, text);
            }
            if let Some((of, _)) = exchange_part_of(&x.name)
                && let Some((kind, project, _)) = RecordKind::parse(of)
            {
                return self.record_part(&v, &x.name, kind, project, text);
            }
        }
        let exchange = Exchange {
            name: x.name,
            kind: x.kind,
            durable: x.durable.unwrap_or(true),
            auto_delete: x.auto_delete.unwrap_or(false),
            internal: x.internal.unwrap_or(false),
            arguments: x.arguments,
        };
        // The vhost is made (and noted if unlisted) as the first item names it.
        self.vhost(&v);
        self.exchanges.entry(v).or_default().push((exchange.name.clone(), exchange));
        Ok(())
    }

    /// A record exchange inside a vhost (`model::records`): an inventory
    /// joins the records (once every exchange is read, [`Self::vhost_inventories`]),
    /// a journal's migrations those in flight, and a migration's progress
    /// record the count of its steps done.
    fn record(
        &mut self,
        vhost: &str,
        name: &str,
        (kind, project, generation): (RecordKind, &str, u64),
        text: &str,
    ) -> Result<(), Diagnostic> {
        let malformed = |e| self.unreadable_record(vhost, name, e);
        let value: Json = serde_json::from_str(text).map_err(|e| malformed(RecordError::Malformed(e.to_string())))?;
        match kind {
            RecordKind::Inventory => {
                let key = (vhost.to_string(), project.to_string());
                self.vhost_inventories.entry(key).or_default().insert(generation, (name.to_string(), value));
            }
            RecordKind::Journal => {
                let journal = crate::journal::Journal::from_json(Some(value)).map_err(malformed)?;
                crate::journal::newest_applies(&mut self.last_applies, journal.last_applies());
                self.migrations.extend(journal.migrations);
            }
            RecordKind::Progress => {
                let progress = crate::model::Progress::from_json(vhost, project, generation, value);
                self.progress.push(progress.map_err(malformed)?);
            }
        }
        Ok(())
    }

    /// A part of a record exchange (`model::record_parts`): kept for its
    /// inventory, never topology. Only inventories are written in parts.
    fn record_part(
        &mut self,
        vhost: &str,
        name: &str,
        kind: RecordKind,
        project: &str,
        text: &str,
    ) -> Result<(), Diagnostic> {
        if kind != RecordKind::Inventory {
            return Ok(());
        }
        let value: Json = serde_json::from_str(text)
            .map_err(|e| self.unreadable_record(vhost, name, RecordError::Malformed(e.to_string())))?;
        let key = (vhost.to_string(), project.to_string());
        self.record_parts.entry(key).or_default().push((name.to_string(), value));
        Ok(())
    }

    /// The inventories inside vhosts, once every exchange is read: of each
    /// project and vhost the newest generation, joined from its parts when
    /// it is split, with every generation and part found, for the next
    /// write to delete.
    fn vhost_inventories(&mut self) -> Result<(), Diagnostic> {
        let mut parts = std::mem::take(&mut self.record_parts);
        for ((vhost, project), mut generations) in std::mem::take(&mut self.vhost_inventories) {
            let found = generations.keys().copied().collect();
            let (_, (name, value)) = generations.pop_last().expect("a generation per entry");
            let mine = parts.remove(&(vhost.clone(), project.clone())).unwrap_or_default();
            let newest = match SplitIndex::of_exchange(&value) {
                None => Inventory::from_json(&value),
                Some(index) => {
                    let by_name: BTreeMap<&str, &Json> = mine.iter().map(|(n, v)| (n.as_str(), v)).collect();
                    index
                        .and_then(|index| joined_text(&name, &index, |p| by_name.get(p).copied()))
                        .and_then(|text| Inventory::from_text(&text))
                }
            };
            let newest = newest.map_err(|e| self.unreadable_record(&vhost, &name, e))?;
            let mut g = Generations::whole(found, newest);
            g.parts = highest_parts(&mine);
            self.records.in_vhosts.insert((vhost, project), g);
        }
        // Parts whose generation's exchange is gone: a run stopped between.
        for (key, left) in parts {
            let mut g = Generations::whole(BTreeSet::new(), Inventory::default());
            g.parts = highest_parts(&left);
            self.records.in_vhosts.insert(key, g);
        }
        Ok(())
    }

    /// Why the record exchange `name` in `vhost` cannot be read.
    fn unreadable_record(&self, vhost: &str, name: &str, e: RecordError) -> Diagnostic {
        unreadable(
            format!("{}: warren's record \"{name}\" in vhost \"{vhost}\"", self.origin),
            e,
            &format!("delete the exchange \"{name}\" (and its other generations) in vhost \"{vhost}\""),
            "warren keeps its records there when run by a user without the administrator tag; export the definitions again, or delete the exchange to start afresh",
        )
    }

    fn queue(&mut self, index: usize, mut q: QueueDef) -> Result<(), Diagnostic> {
        let Some(v) = self.vhost_of(q.vhost.take(), "queues", index, || format!("queue {}", quoted(&q.name))) else {
            return Ok(());
        };
        if q.name.starts_with(FEDERATION_PREFIX) {
            self.artefacts.insert((v, DestinationKind::Queue, q.name.clone()));
            return Ok(());
        }
        let mut arguments = std::mem::take(&mut q.arguments);
        let from_argument = arguments.remove("x-queue-type");
        let default = self.vhost(&v).settings.default_queue_type;
        let Some(kind) = self.queue_type(&v, &q, from_argument, default) else {
            return Ok(());
        };
        let queue = Queue {
            name: std::mem::take(&mut q.name),
            kind,
            durable: q.durable.unwrap_or(true),
            auto_delete: q.auto_delete.unwrap_or(false),
            arguments,
            replaces: None,
        };
        self.queues.entry(v).or_default().push((queue.name.clone(), queue));
        Ok(())
    }

    /// `x-queue-type`, else the item's `type`, else the vhost's default,
    /// else classic. `None` (noted) for a type the model does not know.
    fn queue_type(
        &mut self,
        v: &str,
        q: &QueueDef,
        from_argument: Option<Value>,
        default: Option<QueueType>,
    ) -> Option<QueueType> {
        let argument = match from_argument {
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                self.notes.one(
                    format!(
                        "queue \"{}\" in vhost \"{v}\" has `x-queue-type` {other}, which is not a type name; ignored",
                        q.name
                    ),
                    "`x-queue-type` is \"classic\", \"quorum\" or \"stream\"",
                );
                None
            }
            None => None,
        };
        if let (Some(a), Some(t)) = (&argument, &q.kind)
            && a != t
        {
            self.notes.one(
                format!(
                    "queue \"{}\" in vhost \"{v}\" has `x-queue-type` \"{a}\" but `type` \"{t}\"; read as {a}",
                    q.name
                ),
                "the broker decides a queue's type by its `x-queue-type` argument",
            );
        }
        let Some(name) = argument.or(q.kind.clone()) else {
            return Some(default.unwrap_or(QueueType::Classic));
        };
        let parsed = QueueType::parse(&name);
        if parsed.is_none() {
            self.notes.one(
                format!(
                    "queue \"{}\" in vhost \"{v}\" has type \"{name}\", which warren does not know; left out",
                    q.name
                ),
                "warren knows the classic, quorum and stream queue types",
            );
        }
        parsed
    }

    fn binding(&mut self, index: usize, mut b: BindingDef) -> Result<(), Diagnostic> {
        let what = || {
            let kind = match b.destination_type {
                DestinationType::Queue => "queue",
                DestinationType::Exchange => "exchange",
            };
            format!("binding from {} to {kind} {}", quoted(&b.source), quoted(&b.destination))
        };
        let Some(v) = self.vhost_of(b.vhost.take(), "bindings", index, what) else {
            return Ok(());
        };
        if b.source.is_empty() {
            return Ok(()); // the default exchange's implicit binding
        }
        let destination_kind = match b.destination_type {
            DestinationType::Queue => DestinationKind::Queue,
            DestinationType::Exchange => DestinationKind::Exchange,
        };
        // Most exports have no federation artefacts: skip the keys' copies.
        let federation = !self.artefacts.is_empty()
            && (self.artefacts.contains(&(v.clone(), DestinationKind::Exchange, b.source.clone()))
                || self.artefacts.contains(&(v.clone(), destination_kind, b.destination.clone())));
        if federation {
            return Ok(());
        }
        let binding = Binding {
            source: b.source,
            destination_kind,
            destination: b.destination,
            routing_key: b.routing_key,
            arguments: b.arguments,
        };
        // Empty but for the first binding of the vhost: the rest are built apart.
        let earlier = std::mem::take(&mut self.vhost(&v).bindings);
        if !self.bindings.contains_key(&v) {
            self.bindings.insert(v.clone(), SetBuilder::from_set(earlier));
        }
        let bindings = self.bindings.get_mut(&v).expect("just ensured");
        // Described only when it is a duplicate: formatting each is costly.
        if let Err(binding) = bindings.insert(binding) {
            self.duplicate(&v, "bindings", &binding.to_string());
        }
        Ok(())
    }

    fn policy(&mut self, index: usize, p: &PolicyDef) -> Result<(), Diagnostic> {
        let Some(v) = self.vhost_of(p.vhost.clone(), "policies", index, || format!("policy {}", quoted(&p.name)))
        else {
            return Ok(());
        };
        self.add_policy(&v, &p.name, &p.body, false);
        Ok(())
    }

    /// Adds a policy (or operator policy), with `apply-to` "all" and
    /// priority 0 by default. Keys RabbitMQ does not know are kept and noted;
    /// an unknown `apply-to` leaves the policy out.
    fn add_policy(&mut self, v: &str, name: &str, body: &PolicyBody, operator: bool) {
        let what = if operator { "operator policy" } else { "policy" };
        let apply_to = match body.apply_to.as_deref() {
            None => ApplyTo::All,
            Some(a) => match ApplyTo::parse(a) {
                Some(a) => a,
                None => {
                    self.notes.one(
                        format!("{what} \"{name}\" in vhost \"{v}\" applies to \"{a}\", which RabbitMQ does not know; left out"),
                        "`apply-to` is all, queues, exchanges, classic_queues, quorum_queues or streams",
                    );
                    return;
                }
            },
        };
        let unknown: Vec<String> =
            body.definition.keys().filter(|k| policy_key(k).is_none()).map(|k| format!("`{k}`")).collect();
        if !unknown.is_empty() {
            self.notes.one(
                format!(
                    "{what} \"{name}\" in vhost \"{v}\" sets {}, which RabbitMQ does not know (kept; `warren import` leaves the policy out)",
                    unknown.join(", ")
                ),
                "a plugin's key works only where the plugin is enabled; RabbitMQ rejects a new policy with a key it does not know",
            );
        }
        let policy = Policy {
            name: name.to_string(),
            pattern: body.pattern.clone(),
            apply_to,
            priority: body.priority.unwrap_or(0),
            definition: table(&body.definition),
        };
        // Held as its kind's object, through the typed view.
        let kind = if operator { &operator_policies::KIND } else { &policies::KIND };
        let o = policies::object(&policy);
        let again = self.vhost(v).objects.insert(Name { kind, id: o.id }, o.body).is_some();
        if again {
            self.duplicate(v, if operator { "operator policies" } else { "policies" }, name);
        }
    }

    /// Users and their permissions. A user whose hash RabbitMQ cannot use
    /// is skipped, and so are its permissions.
    fn users(&mut self, defs: &Definitions) {
        let mut skipped = BTreeSet::new();
        for (i, def) in defs.users.iter().enumerate() {
            let u = match user(def, self.default_algorithm, &mut self.notes) {
                Ok(u) => u,
                Err(why) => {
                    let help = format!(
                        "set the user's password again on the broker (`rabbitmqctl change_password {}`), or declare the user in the topology files with a `password_env`",
                        def.name.escape_debug()
                    );
                    self.skip(Scope::Users, format!("user {}", quoted(&def.name)), "users", i, why, &help);
                    skipped.insert(def.name.as_str());
                    continue;
                }
            };
            if self.topology.set_user(&u) {
                self.notes.add(
                    "users listed more than once (the last entry is used)",
                    "an export lists each user once; the file was probably edited by hand",
                    &def.name,
                );
            }
        }
        // A user listed again with a usable hash is not skipped.
        skipped.retain(|name| !self.topology.has_user(name));
        self.permissions(defs, &skipped);
        self.topic_permissions(defs);
    }

    /// Permissions, less those of the `skipped` users.
    fn permissions(&mut self, defs: &Definitions, skipped: &BTreeSet<&str>) {
        for (i, p) in defs.permissions.iter().enumerate() {
            let what = || format!("permissions of {}", quoted(&p.user));
            let Some(v) = self.vhost_of(p.vhost.clone(), "permissions", i, what) else {
                continue;
            };
            if skipped.contains(p.user.as_str()) {
                let what = format!("permissions of {} in vhost {}", quoted(&p.user), quoted(&v));
                let why = format!("user {} is skipped", quoted(&p.user));
                let help = "declare the user, with a `password_env`, and its permissions in the topology files";
                self.skip(Scope::Vhost(v), what, "permissions", i, why, help);
                continue;
            }
            if !self.topology.has_user(&p.user) {
                self.notes.add(
                    format!("vhost \"{v}\": permissions of users that the file does not list (kept; `warren import` leaves them out)"),
                    "permissions of a user who does not exist have no effect; the file was probably edited by hand",
                    &p.user,
                );
            }
            // Serde checked the item's shape: the kind's read takes it.
            let item = serde_json::to_value(p).unwrap_or_default();
            let read = (permissions::KIND.read)(&item).and_then(Result::ok);
            let Some(permission) = read.and_then(|o| permissions::permission(&o.id[0], &o.body)) else {
                continue;
            };
            if self.vhost(&v).set_permission(&permission) {
                self.duplicate(&v, "permissions of", &p.user);
            }
        }
    }

    fn topic_permissions(&mut self, defs: &Definitions) {
        for (i, item) in defs.topic_permissions.iter().enumerate() {
            self.kind_item("topic_permissions", i, item);
        }
    }

    /// An item of definitions list `list` read by the kind that holds it
    /// (`model::kinds`); false when no kind does.
    fn kind_item(&mut self, list: &'static str, index: usize, item: &Json) -> bool {
        let Some((kind, read)) =
            KINDS.iter().filter(|k| k.definitions == list).find_map(|k| Some((*k, (k.read)(item)?)))
        else {
            return false;
        };
        let what = || {
            format!("{} {}", kind.name, item.get("name").or(item.get("user")).map_or(String::new(), |n| n.to_string()))
        };
        let vhost = match kind.scope {
            KindScope::Broker => None,
            KindScope::Vhost => {
                let named = item.get("vhost").and_then(Json::as_str).map(str::to_string);
                match self.vhost_of(named, list, index, what) {
                    Some(v) => Some(v),
                    None => return true,
                }
            }
        };
        let object = match read {
            Ok(o) => o,
            Err(why) => {
                let scope = vhost.clone().map_or(Scope::NoVhost, Scope::Vhost);
                let help = format!(
                    "an export's {} have the fields of docs/format.md; the file was probably edited by hand",
                    kind.table
                );
                self.skip(scope, what(), list, index, why, &help);
                return true;
            }
        };
        let name = Name { kind, id: object.id };
        let shown = name.id.join(" on ");
        let objects = match &vhost {
            Some(v) => &mut self.vhost(v).objects,
            None => &mut self.topology.objects,
        };
        if objects.insert(name, kind.with_defaults(object.body)).is_some() {
            match &vhost {
                Some(v) => self.duplicate(&v.clone(), kind.table, &shown),
                None => self.notes.add(
                    format!("{} listed more than once (the last entry is used)", kind.table),
                    "an export lists each object once; the file was probably edited by hand",
                    &shown,
                ),
            }
        }
        true
    }

    /// Notes bindings whose ends the file does not declare; they are kept.
    fn dangling_bindings(&mut self) {
        let mut found: Vec<(String, &str, String)> = Vec::new();
        for (v, vh) in &self.topology.vhosts {
            // Hashed: a search of the ordered maps compares long names that
            // share their prefix at every level, twice per binding.
            let exchanges: FxHashSet<&str> = vh.exchanges.keys().map(String::as_str).collect();
            let queues: FxHashSet<&str> = vh.queues.keys().map(String::as_str).collect();
            for b in &vh.bindings {
                if b.source.starts_with("amq.") {
                    found.push((
                        v.clone(),
                        "from the broker's own exchanges (kept: topology files may bind from built-ins)",
                        b.source.clone(),
                    ));
                } else if !exchanges.contains(b.source.as_str()) {
                    found.push((v.clone(), "from exchanges that the file does not declare (kept)", b.source.clone()));
                }
                match b.destination_kind {
                    DestinationKind::Queue if !queues.contains(b.destination.as_str()) => {
                        found.push((
                            v.clone(),
                            "to queues that the file does not declare (kept)",
                            b.destination.clone(),
                        ));
                    }
                    DestinationKind::Exchange if b.destination.starts_with("amq.") => {
                        found.push((v.clone(), "to the broker's own exchanges (kept)", b.destination.clone()));
                    }
                    DestinationKind::Exchange if !exchanges.contains(b.destination.as_str()) => {
                        found.push((
                            v.clone(),
                            "to exchanges that the file does not declare (kept)",
                            b.destination.clone(),
                        ));
                    }
                    _ => {}
                }
            }
        }
        for (v, what, name) in found {
            let help = if name.starts_with("amq.") {
                "nothing to do: the broker declares its own exchanges"
            } else {
                "the export is incomplete or was edited by hand; `warren import` lists these names under [external]"
            };
            self.notes.add(format!("vhost \"{v}\": bindings {what}"), help, &name);
        }
    }
}

/// A parameter as its definitions item, in vhost `vhost`.
/// An `operator_policy` parameter, as its kind reads it, in the shape a
/// policy of the `policies` list has: both are normalised alike.
fn operator_policy(item: &Json) -> Result<PolicyBody, String> {
    let o = (operator_policies::KIND.read)(item).unwrap_or_else(|| Err("it is not an operator policy".into()))?;
    let definition = match o.body.get("definition").map(Json::from) {
        Some(Json::Object(d)) => d,
        _ => Map::new(),
    };
    Ok(PolicyBody {
        pattern: o.text("pattern").unwrap_or_default().to_string(),
        apply_to: o.text("apply_to").map(str::to_string),
        priority: o.body.get("priority").and_then(Value::as_int),
        definition,
    })
}

fn parameter_json(vhost: &str, p: &ParameterDef) -> Json {
    json!({ "vhost": vhost, "component": p.component, "name": p.name, "value": p.value })
}

/// A name in quotes, control characters escaped.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.escape_debug())
}

/// Arguments or a definition as model values (integral floats become integers).
fn table(map: &Map<String, Json>) -> Table {
    map.iter().map(|(k, v)| (k.clone(), Value::from(v))).collect()
}

/// The records in the parameter `name` whose value is the JSON text
/// `value`: read from that text when kept whole (a fleet's plan reads one
/// per broker), or from the text of its `parts` joined
/// (`model::record_parts`). The parts are dropped once joined, before the
/// joined text is read: at 100,000 queues they are 17 MB, beside the keys
/// read from the text, the read's peak.
fn ownership(parts: Vec<GlobalParameterDef>, name: &str, value: Option<&RawValue>) -> Result<Ownership, RecordError> {
    let text = value.map_or("null", RawValue::get);
    // Written as a string by some exports.
    if let Ok(inner) = serde_json::from_str::<String>(text) {
        return Ownership::from_text(&inner);
    }
    // Read as a whole record first, in one pass over its text: an index
    // is the record of the split format.
    let index = match Ownership::from_text(text) {
        Err(e) if e.found_format(SPLIT_FORMAT) => {
            let value: Json = serde_json::from_str(text).map_err(|e| RecordError::Malformed(e.to_string()))?;
            SplitIndex::of(&value).ok_or_else(|| RecordError::Malformed("its index cannot be read".into()))?
        }
        whole => return whole,
    };
    let by_name: std::collections::HashMap<&str, &Json> = parts.iter().map(|g| (g.name.as_str(), &g.value)).collect();
    let joined = joined_text(name, &index?, |p| by_name.get(p).copied())?;
    drop(by_name);
    drop(parts);
    Ownership::from_text(&joined)
}

/// Drops the parts of the broker-wide inventory that its index does not
/// read: those of the other slot, left from the write before. At 100,000
/// queues they are 17 MB, which the read would otherwise hold to its end.
pub(super) fn drop_stale_parts(params: &mut Vec<GlobalParameterDef>) {
    let slot_of = |name: &str| part_slot(INVENTORY_PARAMETER, name);
    if !params.iter().any(|g| slot_of(&g.name).is_some()) {
        return;
    }
    // With parts beside it, the parameter is an index (or a record kept
    // whole, under a part's size): small to parse.
    let index = params.iter().find(|g| g.name == INVENTORY_PARAMETER).and_then(|g| g.inventory.as_deref());
    let slot = index
        .and_then(|raw| serde_json::from_str::<Json>(raw.get()).ok())
        .and_then(|value| SplitIndex::of(&value)?.ok()?.slot);
    // No index, or not one: every part stays, for the read to say why.
    let Some(slot) = slot else { return };
    params.retain(|g| slot_of(&g.name).is_none_or(|s| s == slot));
}

/// Of record parts (`warren.records.P.N.part-I`), the highest part number
/// of each generation.
fn highest_parts(parts: &[(String, Json)]) -> BTreeMap<u64, usize> {
    let mut out = BTreeMap::new();
    for (name, _) in parts {
        if let Some((of, i)) = exchange_part_of(name)
            && let Some((_, _, g)) = RecordKind::parse(of)
        {
            let highest: &mut usize = out.entry(g).or_default();
            *highest = (*highest).max(i);
        }
    }
    out
}

/// Why warren's record `what` cannot be read, and what to do: a record of
/// another format is refused as such (its message says what to do; `delete`
/// says how to delete it), a malformed one with `malformed_help`.
fn unreadable(what: String, e: RecordError, delete: &str, malformed_help: &str) -> Diagnostic {
    match e {
        RecordError::Malformed(e) => {
            Diagnostic::error("records", format!("{what} is malformed: {e}")).help(malformed_help)
        }
        other @ RecordError::OtherFormat { .. } => {
            Diagnostic::error("records", format!("{what} is of another format: {other}"))
                .help(format!("to delete it: {delete}"))
        }
    }
}
