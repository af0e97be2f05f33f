//! One topology file's text to a [`FileDecl`], with a diagnostic for every
//! problem of syntax, keys, types and values.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::LazyLock;

use toml::de::DeTable;

use super::decl::{Decl, Failed, FileDecl, QueueDecl};
use super::reader::{Fields, Reader, What, did_you_mean};
use super::tree::{Item, Node, Tree};
use crate::diagnostic::Diagnostic;
pub(crate) use crate::model::check_expect;
use crate::model::kinds::{KINDS, Object, Scope, bindings, permissions, policies, users};
use crate::model::{
    ApplyTo, Binding, DestinationKind, Exchange, External, Password, Permission, Policy, Queue, QueueType, Table, User,
    Value, VhostSettings,
};
use crate::source::FieldLocations;
use crate::source::{FileId, Location};

/// The top-level keys of a topology file: the objects warren had before
/// `model::kinds`, each kind's table, and `external`. A kind's table is
/// taken from the kind, so that a kind is its own file alone.
pub(super) static TOP_KEYS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let mut keys = vec![
        "vhosts",
        "vhost",
        "exchanges",
        "queues",
        "bindings",
        "policies",
        "operator_policies",
        "users",
        "permissions",
        "super_streams",
    ];
    // A kind that moved onto the seam keeps its place among the old ones.
    let of_kinds: Vec<&str> = KINDS.iter().map(|k| k.table).filter(|t| !keys.contains(t)).collect();
    keys.extend(of_kinds);
    keys.push("external");
    keys.push("removed");
    keys.push("moved");
    keys.push("services");
    keys.push("shapes");
    keys.push("stamps");
    keys
});
/// The keys of an overlay file: a topology file's, and `rename_vhosts`.
/// Shapes are expanded before overlays apply: an overlay changes what
/// stamps made as it changes what is written out.
pub(super) static OVERLAY_KEYS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let mut keys: Vec<&str> = TOP_KEYS.iter().copied().filter(|k| !matches!(*k, "shapes" | "stamps")).collect();
    keys.push("rename_vhosts");
    keys
});
/// The keys of a shape's body: the objects a file declares, and stamps of
/// other shapes; the file that stamps it says the vhosts.
pub(super) static SHAPE_BODY_KEYS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let settings = ["vhosts", "vhost", "external", "removed", "moved", "shapes"];
    TOP_KEYS.iter().copied().filter(|k| !settings.contains(k)).collect()
});
pub(super) const VHOST_KEYS: &[&str] =
    &["description", "default_queue_type", "limits", "tags", "protected_from_deletion"];
pub(super) const EXCHANGE_KEYS: &[&str] = &["type", "durable", "auto_delete", "internal", "arguments", "lint_allow"];
pub(super) const QUEUE_KEYS: &[&str] = &["type", "durable", "auto_delete", "arguments", "replaces", "lint_allow"];
pub(super) const BINDING_KEYS: &[&str] = &["source", "queue", "exchange", "routing_key", "arguments", "lint_allow"];
pub(super) const POLICY_KEYS: &[&str] = &["pattern", "apply_to", "priority", "definition", "lint_allow"];
pub(super) const USER_KEYS: &[&str] =
    &["password_env", "password_hash", "hashing_algorithm", "tags", "limits", "password", "lint_allow"];
pub(super) const PERMISSION_KEYS: &[&str] = &["configure", "write", "read", "lint_allow"];
pub(super) const EXTERNAL_KEYS: &[&str] = &["exchanges", "queues", "users"];
pub(crate) const LIMIT_KEYS: &[&str] = &["max-queues", "max-connections"];
/// The limits of a user the broker knows (`rabbit_auth_backend_internal`).
pub(crate) const USER_LIMIT_KEYS: &[&str] = &["max-connections", "max-channels"];
pub(crate) use crate::model::kinds::exchanges::BUILT_IN as EXCHANGE_TYPES;
pub(crate) const HASHING_ALGORITHMS: &[&str] =
    &["rabbit_password_hashing_sha256", "rabbit_password_hashing_sha512", "rabbit_password_hashing_md5"];

/// The longest name RabbitMQ accepts (AMQP short string).
pub const MAX_NAME_BYTES: usize = 255;

/// Parses one file. Returns `None` only when the file is not TOML at all.
#[cfg(test)]
pub(super) fn parse_file(file: FileId, text: &str, diagnostics: &mut Vec<Diagnostic>) -> Option<FileDecl> {
    parse_with_shapes(file, text, diagnostics).decl
}

/// One file read: what it declares, and its shapes and stamps, which are
/// expanded once every file is read (`shapes.rs`, `stamps.rs`).
pub(super) struct ParsedFile<'i> {
    pub decl: Option<FileDecl>,
    pub shapes: Option<Node<'i>>,
    pub stamps: Option<Node<'i>>,
}

/// [`parse_file`], keeping the file's shapes and stamps.
pub(super) fn parse_with_shapes<'i>(file: FileId, text: &'i str, diagnostics: &mut Vec<Diagnostic>) -> ParsedFile<'i> {
    let mut r = Reader { file, diagnostics };
    let none = ParsedFile { decl: None, shapes: None, stamps: None };
    let Some(whole) = document(&mut r, text) else { return none };
    let Some(top) = Fields::new(&mut r, &whole, "the file", TOP_KEYS.as_slice()) else { return none };
    let (shapes, stamps) = (top.get("shapes").cloned(), top.get("stamps").cloned());
    let mut p = Parser { r };
    ParsedFile { decl: Some(p.file(&top, text.len())), shapes, stamps }
}

/// The objects one stamp of a shape made (`body`, the shape's body with
/// the stamp's values), in the vhosts of the file that stamped it. `file`
/// is the stamp's own id (see `Sources::add_stamped`). The body's keys
/// were checked once, with the shape.
pub(super) fn parse_stamped(
    file: FileId,
    body: &Node,
    vhosts: Vec<(String, Location)>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<FileDecl> {
    let mut r = Reader { file, diagnostics };
    let top = Fields::new(&mut r, body, "the shape", SHAPE_BODY_KEYS.as_slice())?;
    let mut p = Parser { r };
    Some(p.declared(&top, vhosts))
}

/// A file's whole table, or `None` (with the syntax errors) when it is not
/// TOML.
pub(super) fn document<'i>(r: &mut Reader, text: &'i str) -> Option<Node<'i>> {
    let (doc, errors) = DeTable::parse_recoverable(text);
    for e in &errors {
        let span = e.span().unwrap_or(0..0);
        let message = e.message().trim().to_string();
        let help = if message.contains("duplicate key") {
            "a key, or a table header, may appear once per file; remove or rename one of them"
        } else {
            "fix the TOML syntax; https://toml.io describes it"
        };
        let d = Diagnostic::error("syntax", format!("invalid TOML: {message}")).at(r.loc(span)).help(help);
        r.report(d);
    }
    errors.is_empty().then(|| Node { span: 0..0, item: Item::Table(Tree::from_toml(doc.into_inner())) })
}

/// Reads the objects of one file. Each object function takes the object an
/// overlay is merged over, if any: its fields are the defaults of the
/// overlay's, so a field the overlay leaves out keeps the base's value and
/// a table (arguments, definition, limits) merges entry by entry.
pub(super) struct Parser<'d> {
    pub r: Reader<'d>,
}

impl Parser<'_> {
    pub(super) fn loc(&self, span: Range<usize>) -> Location {
        self.r.loc(span)
    }

    fn file(&mut self, top: &Fields, len: usize) -> FileDecl {
        let vhosts = self.vhosts(top, len);
        self.declared(top, vhosts)
    }

    /// What a file (or a stamp) declares in `vhosts`. Its shapes and
    /// stamps are read apart (`shapes.rs`).
    fn declared(&mut self, top: &Fields, vhosts: Vec<(String, Location)>) -> FileDecl {
        let mut decl = FileDecl {
            vhosts,
            settings: None,
            exchanges: Vec::new(),
            queues: Vec::new(),
            bindings: Vec::new(),
            policies: Vec::new(),
            users: Vec::new(),
            permissions: Vec::new(),
            objects: Vec::new(),
            external: External::default(),
            removed: Vec::new(),
            moved: Vec::new(),
            services: Vec::new(),
            failed: Failed::default(),
        };
        if let Some(node) = top.get("vhost") {
            decl.settings = self.settings(node, None);
            let given = matches!(&node.item, Item::Table(t) if t.iter().any(|(k, _)| k.name == "default_queue_type"));
            decl.failed.default_queue_type =
                given && decl.settings.as_ref().is_none_or(|s| s.value.default_queue_type.is_none());
        }
        for (name, node, at) in self.named(top, "exchanges") {
            match self.exchange(name, node, at, None) {
                Some(x) => decl.exchanges.push(x),
                None => _ = decl.failed.exchanges.insert(name.to_string()),
            }
        }
        for (name, node, at) in self.named(top, "queues") {
            match self.queue(name, node, at, None) {
                Some(q) => decl.queues.push(q),
                None => _ = decl.failed.queues.insert(name.to_string()),
            }
        }
        if let Some(node) = top.get("bindings") {
            decl.bindings = self.bindings(node);
        }
        self.super_streams(top, &mut decl);
        for (name, node, at) in self.named(top, "policies") {
            if let Some(p) = self.policy(name, node, at, None) {
                decl.policies.push(p);
            }
        }
        for (name, node, at) in self.named(top, "users") {
            match self.user(name, node, at, None) {
                Some(u) => decl.users.push(u),
                None => decl.failed.users.push(name.to_string()),
            }
        }
        for (name, node, at) in self.named(top, "permissions") {
            if let Some(p) = self.permission(name, node, at, None) {
                decl.permissions.push(p);
            }
        }
        decl.objects = self.objects(top);
        if let Some(node) = top.get("external") {
            decl.external = self.external(node);
        }
        if let Some(node) = top.get("removed") {
            decl.removed = self.removed(node);
        }
        if let Some(node) = top.get("moved") {
            decl.moved = self.moved(node);
        }
        for (name, node, at) in self.named(top, "services") {
            decl.services.extend(self.service(name, node, at));
        }
        decl
    }

    /// The `vhosts` list, which every file must have.
    pub(super) fn vhosts(&mut self, top: &Fields, len: usize) -> Vec<(String, Location)> {
        let Some(node) = top.get("vhosts") else {
            // A file that declares only users and other broker-wide objects
            // needs no vhosts.
            // Nor does a file of shapes alone: the files that stamp them say theirs.
            let broker_wide = |k: &str| {
                k == "users" || k == "shapes" || KINDS.iter().any(|x| x.table == k && x.scope == Scope::Broker)
            };
            if TOP_KEYS.iter().all(|k| *k == "vhosts" || broker_wide(k) || top.get(k).is_none()) {
                return Vec::new();
            }
            let d = Diagnostic::error("missing-key", "this file does not say which vhosts its objects belong to")
                .at(self.loc(0..len.min(1)))
                .label("`vhosts` is required in every file that declares more than users")
                .help("add `vhosts = [\"/\"]` (or the names of your vhosts) as the first line");
            self.r.report(d);
            return Vec::new();
        };
        let Some(items) = top.strings(&mut self.r, "vhosts") else {
            return Vec::new();
        };
        if items.is_empty() {
            let d = Diagnostic::error("bad-value", "`vhosts` is empty, so nothing in this file would be declared")
                .at(self.loc(node.span()))
                .help("name at least one vhost, e.g. `vhosts = [\"/\"]`");
            self.r.report(d);
        }
        let mut out: Vec<(String, Location)> = Vec::new();
        for (name, span) in items {
            if !self.check_name(&name, &span, "vhost", false) {
                continue;
            }
            if out.iter().any(|(n, _)| *n == name) {
                let d = Diagnostic::error("duplicate", format!("vhost \"{name}\" is listed twice"))
                    .at(self.loc(span))
                    .help("list each vhost once");
                self.r.report(d);
                continue;
            }
            out.push((name, self.loc(span)));
        }
        out
    }

    /// Checks a name's length and reserved prefix; false if unusable.
    pub(super) fn check_name(&mut self, name: &str, span: &Range<usize>, kind: &str, amq_reserved: bool) -> bool {
        if name.is_empty() {
            let d = Diagnostic::error("bad-value", format!("a {kind} name cannot be empty"))
                .at(self.loc(span.clone()))
                .help(format!("give the {kind} a name"));
            self.r.report(d);
            return false;
        }
        if name.len() > MAX_NAME_BYTES {
            let d = Diagnostic::error(
                "name-too-long",
                format!("this {kind} name is {} bytes long; RabbitMQ accepts at most {MAX_NAME_BYTES}", name.len()),
            )
            .at(self.loc(span.clone()))
            .help(format!("shorten the name to {MAX_NAME_BYTES} bytes or fewer"));
            self.r.report(d);
            return false;
        }
        if amq_reserved && name.starts_with("amq.") {
            let d = Diagnostic::error("reserved-name", format!("{kind} names starting with `amq.` belong to the broker"))
                .at(self.loc(span.clone()))
                .label("RabbitMQ refuses to declare this name")
                .help(if kind == "exchange" {
                    "rename the exchange; to bind from a built-in one such as amq.topic, name it as a binding's source without declaring it".to_string()
                } else {
                    format!("rename the {kind}")
                });
            self.r.report(d);
            return false;
        }
        true
    }

    /// The entries of a table of named objects (`[queues."name"]`).
    pub(super) fn named<'t, 'i>(
        &mut self,
        top: &Fields<'t, 'i>,
        key: &str,
    ) -> Vec<(&'t str, &'t Node<'i>, Range<usize>)> {
        let Some(table) = top.table(&mut self.r, key) else {
            return Vec::new();
        };
        table.iter().map(|(k, v)| (k.name.as_ref(), v, k.span())).collect()
    }

    pub(super) fn settings(&mut self, node: &Node, base: Option<&VhostSettings>) -> Option<Decl<VhostSettings>> {
        let f = Fields::new(&mut self.r, node, "[vhost]", VHOST_KEYS)?;
        let mut fields_at = FieldLocations::default();
        let description = f.string(&mut self.r, "description").or_else(|| base?.description.clone());
        let default_queue_type =
            self.queue_type(&f, "default_queue_type", &mut fields_at).or_else(|| base?.default_queue_type);
        let limits = self.limits(&f, "`limits` of [vhost]", LIMIT_KEYS, base.and_then(|b| b.limits.as_ref()))?;
        let tags = match f.get("tags") {
            None => base.and_then(|b| b.tags.clone()),
            Some(_) => Some(f.strings(&mut self.r, "tags")?.into_iter().map(|(s, _)| s).collect()),
        };
        let protected_from_deletion =
            f.bool(&mut self.r, "protected_from_deletion").or_else(|| base?.protected_from_deletion);
        self.spot(&f, "protected_from_deletion", &mut fields_at);
        self.spot(&f, "description", &mut fields_at);
        Some(Decl {
            value: VhostSettings { description, default_queue_type, limits, tags, protected_from_deletion },
            at: self.loc(node.span()),
            fields: fields_at.into(),
        })
    }

    /// The `limits` table of `f` (named `what` in messages) over `base`'s:
    /// each of `keys` an integer of at least -1; the base's when `f` has no
    /// `limits` table.
    #[allow(clippy::option_option)]
    fn limits(
        &mut self,
        f: &Fields,
        what: &str,
        keys: &'static [&'static str],
        base: Option<&BTreeMap<String, i64>>,
    ) -> Option<Option<BTreeMap<String, i64>>> {
        let Some(t) = f.table(&mut self.r, "limits") else {
            // Not a table: reported, and the base's limits stand.
            return Some(base.cloned());
        };
        let lf = Fields::new(&mut self.r, f.get("limits")?, What::said(what), keys)?;
        let mut out = base.cloned().unwrap_or_default();
        for (k, _) in t.iter() {
            let name = k.name.as_ref();
            if !keys.contains(&name) {
                continue;
            }
            if let Some(v) = lf.int(&mut self.r, name) {
                if v < -1 {
                    let d = Diagnostic::error("bad-value", format!("limit `{name}` cannot be {v}"))
                        .at(self.loc(lf.span(name)?))
                        .help("use a number of at least 0, or -1 for no limit");
                    self.r.report(d);
                    continue;
                }
                out.insert(name.to_string(), v);
            }
        }
        Some(Some(out))
    }

    /// The places of the fields an object has, in one pass over its table,
    /// with each code of its `lint_allow` as field `lint_allow.CODE`: the
    /// exceptions travel with the object's places through merges and
    /// overlays, and say where each was made.
    pub(super) fn fields_at(&mut self, f: &Fields) -> FieldLocations {
        let mut fields_at = FieldLocations::with_capacity(f.table.len());
        for (k, v) in f.table.iter() {
            if let Some(key) = f.known_key(&k.name) {
                fields_at.push(key, self.loc(v.span()));
            }
        }
        if f.get("lint_allow").is_some() {
            for (code, span) in f.strings(&mut self.r, "lint_allow").unwrap_or_default() {
                let at = self.loc(span);
                if crate::lint::rules::rule_of(&code).is_none() {
                    self.r.report(crate::lint::unknown_rule(&code, at.clone()));
                }
                fields_at.insert(format!("lint_allow.{code}"), at);
            }
        }
        fields_at
    }

    fn spot(&self, f: &Fields, key: &'static str, fields_at: &mut FieldLocations) {
        if let Some(span) = f.span(key) {
            fields_at.insert(key, self.loc(span));
        }
    }

    fn queue_type(&mut self, f: &Fields, key: &'static str, fields_at: &mut FieldLocations) -> Option<QueueType> {
        let s = f.string(&mut self.r, key)?;
        self.spot(f, key, fields_at);
        match QueueType::parse(&s) {
            Some(t) => Some(t),
            None => {
                self.bad_choice(f, key, &s, crate::model::kinds::queues::TYPES);
                None
            }
        }
    }

    /// Reports a value that is not one of `choices`, suggesting the closest.
    fn bad_choice(&mut self, f: &Fields, key: &str, value: &str, choices: &[&str]) {
        let span = f.span(key).unwrap_or(0..0);
        let help = match did_you_mean(value, choices.iter().copied()) {
            Some(s) => format!("did you mean \"{s}\"?"),
            None => format!("use one of: {}", choices.join(", ")),
        };
        let d = Diagnostic::error("bad-value", format!("\"{value}\" is not a valid `{key}` of {}", f.what))
            .at(self.loc(span))
            .help(help);
        self.r.report(d);
    }

    pub(super) fn exchange(
        &mut self,
        name: &str,
        node: &Node,
        at: Range<usize>,
        base: Option<&Exchange>,
    ) -> Option<Decl<Exchange>> {
        let f = Fields::new(&mut self.r, node, What::named("exchange", name), EXCHANGE_KEYS)?;
        let name_ok = self.check_name(name, &at, "exchange", true);
        let mut fields_at = self.fields_at(&f);
        let kind = self.string_or(&f, "type", at.clone(), "\"topic\"", base.map(|b| b.kind.as_str()));
        if let Some(k) = &kind
            && !crate::model::kinds::exchanges::is_type(k)
        {
            let mut choices = EXCHANGE_TYPES.to_vec();
            choices.push("x-<plugin type>");
            self.bad_choice(&f, "type", k, &choices);
        }
        let durable = f.bool(&mut self.r, "durable");
        let auto_delete = f.bool(&mut self.r, "auto_delete");
        let internal = f.bool(&mut self.r, "internal");
        let arguments = f.values(&mut self.r, "arguments");
        self.argument_spots(&f, &mut fields_at);
        let value = Exchange {
            name: name.to_string(),
            kind: kind.clone()?,
            durable: durable.unwrap_or(base.is_none_or(|b| b.durable)),
            auto_delete: auto_delete.unwrap_or(base.is_some_and(|b| b.auto_delete)),
            internal: internal.unwrap_or(base.is_some_and(|b| b.internal)),
            arguments: merged(base.map(|b| &b.arguments), arguments?),
        };
        let kind_ok = crate::model::kinds::exchanges::is_type(&value.kind);
        let typed_ok = f.get("durable").is_none_or(|_| durable.is_some())
            && f.get("auto_delete").is_none_or(|_| auto_delete.is_some())
            && f.get("internal").is_none_or(|_| internal.is_some());
        (name_ok && kind_ok && typed_ok).then(|| Decl { value, at: self.loc(at), fields: fields_at.into() })
    }

    fn argument_spots(&self, f: &Fields, fields_at: &mut FieldLocations) {
        if let Some(Item::Table(t)) = f.get("arguments").map(|n| &n.item) {
            // Room for exactly these: a large topology has one list per queue.
            fields_at.reserve_exact(t.len());
            for (k, v) in t.iter() {
                fields_at.insert(format!("arguments.{}", k.name), self.loc(v.span()));
            }
        }
    }

    pub(super) fn queue(
        &mut self,
        name: &str,
        node: &Node,
        at: Range<usize>,
        base: Option<&QueueDecl>,
    ) -> Option<Decl<QueueDecl>> {
        let f = Fields::new(&mut self.r, node, What::named("queue", name), QUEUE_KEYS)?;
        let name_ok = self.check_name(name, &at, "queue", true);
        let mut fields_at = self.fields_at(&f);
        let has_type = f.get("type").is_some();
        let declared_type = self.queue_type(&f, "type", &mut fields_at);
        let durable = f.bool(&mut self.r, "durable");
        let auto_delete = f.bool(&mut self.r, "auto_delete");
        let replaces = f.string(&mut self.r, "replaces");
        let mut arguments = f.values(&mut self.r, "arguments");
        self.argument_spots(&f, &mut fields_at);
        let mut ok = name_ok && (!has_type || declared_type.is_some());
        ok &= f.get("durable").is_none_or(|_| durable.is_some());
        ok &= f.get("auto_delete").is_none_or(|_| auto_delete.is_some());
        ok &= f.get("replaces").is_none_or(|_| replaces.is_some());
        let mut declared_type = declared_type;
        if let Some(args) = arguments.as_mut() {
            ok &= self.checked(&f, crate::model::kinds::queues::argument_findings(args));
            // `x-queue-type` in arguments is the same as `type`.
            if let Some(v) = args.remove("x-queue-type") {
                let from_args = v.as_str().and_then(QueueType::parse);
                let span = fields_at.get("arguments.x-queue-type").expect("each argument has its place").clone();
                match (from_args, declared_type) {
                    (None, _) => {
                        let d = Diagnostic::error("bad-argument", format!("`x-queue-type` cannot be {v}"))
                            .at(span)
                            .help("use `type = \"classic\"`, \"quorum\" or \"stream\" instead of the argument");
                        self.r.report(d);
                        ok = false;
                    }
                    (Some(a), Some(t)) if a != t => {
                        let d =
                            Diagnostic::error("bad-argument", format!("`x-queue-type` says {a} but `type` says {t}"))
                                .at(span)
                                .help("remove the `x-queue-type` argument; `type` is enough");
                        self.r.report(d);
                        ok = false;
                    }
                    (Some(a), _) => declared_type = Some(a),
                }
            }
        }
        if let Some(rep) = &replaces
            && let Some(span) = f.span("replaces")
        {
            ok &= self.check_name(rep, &span, "queue", false);
        }
        let declared_type = declared_type.or_else(|| base?.declared_type);
        let queue = Queue {
            name: name.to_string(),
            kind: declared_type.or_else(|| Some(base?.queue.kind)).unwrap_or(QueueType::Classic),
            durable: durable.unwrap_or(base.is_none_or(|b| b.queue.durable)),
            auto_delete: auto_delete.unwrap_or(base.is_some_and(|b| b.queue.auto_delete)),
            arguments: merged(base.map(|b| &b.queue.arguments), arguments?),
            replaces: replaces.or_else(|| base?.queue.replaces.clone()),
        };
        ok.then(|| Decl { value: QueueDecl { queue, declared_type }, at: self.loc(at), fields: fields_at.into() })
    }

    pub(super) fn bindings(&mut self, node: &Node) -> Vec<Decl<Binding>> {
        let Item::Array(items) = &node.item else {
            self.r.wrong_type(node, "`bindings`", "an array of tables, written [[bindings]]");
            return Vec::new();
        };
        items.iter().filter_map(|item| self.binding(item)).collect()
    }

    pub(super) fn binding(&mut self, node: &Node) -> Option<Decl<Binding>> {
        let f = Fields::new(&mut self.r, node, "a binding", BINDING_KEYS)?;
        let fields_at = self.fields_at(&f);
        let at = self.loc(node.span());
        let source = f.required_string(&mut self.r, "source", node.span(), "\"exchange.name\"");
        let queue = f.string(&mut self.r, "queue");
        let exchange = f.string(&mut self.r, "exchange");
        let routing_key = f.string(&mut self.r, "routing_key");
        let arguments = f.values(&mut self.r, "arguments");
        let (destination_kind, destination) = match (queue, exchange) {
            (Some(q), None) => (DestinationKind::Queue, q),
            (None, Some(x)) => (DestinationKind::Exchange, x),
            (q, x) => {
                let both = q.is_some() && x.is_some();
                if both || (f.get("queue").is_none() && f.get("exchange").is_none()) {
                    let (msg, span) = if both {
                        ("a binding has both `queue` and `exchange`", f.span("exchange").unwrap_or(node.span()))
                    } else {
                        ("a binding has no destination", f.span("source").unwrap_or(node.span()))
                    };
                    let d = Diagnostic::error("binding-destination", msg)
                        .at(self.loc(span))
                        .help("give exactly one of `queue = \"…\"` or `exchange = \"…\"`");
                    self.r.report(d);
                }
                return None;
            }
        };
        let source = source?;
        let routing_key = match f.get("routing_key") {
            Some(_) => routing_key?,
            None => String::new(),
        };
        let arguments = arguments?;
        let binding = Binding { source, destination_kind, destination, routing_key, arguments };
        // What the types cannot say, the kind's check says.
        let mut ok = self.checked(&f, bindings::check(&bindings::object(&binding)));
        ok &= self.check_name(
            &binding.destination,
            &f.span(destination_kind.as_str()).expect("the destination has its place"),
            "destination",
            false,
        );
        ok.then_some(Decl { value: binding, at, fields: fields_at.into() })
    }

    pub(super) fn policy(
        &mut self,
        name: &str,
        node: &Node,
        at: Range<usize>,
        base: Option<&Policy>,
    ) -> Option<Decl<Policy>> {
        let kind = "policy";
        let f = Fields::new(&mut self.r, node, What::named(kind, name), POLICY_KEYS)?;
        let mut ok = self.check_name(name, &at, kind, false);
        let mut fields_at = self.fields_at(&f);
        let pattern = self.string_or(&f, "pattern", at.clone(), "\"^orders\\\\.\"", base.map(|b| b.pattern.as_str()));
        let apply_to = match f.string(&mut self.r, "apply_to") {
            None => {
                ok &= f.get("apply_to").is_none();
                Some(base.map_or(ApplyTo::All, |b| b.apply_to))
            }
            Some(s) => {
                let parsed = ApplyTo::parse(&s);
                if parsed.is_none() {
                    let choices: Vec<&str> = ApplyTo::ALL.iter().map(|a| a.as_str()).collect();
                    self.bad_choice(&f, "apply_to", &s, &choices);
                }
                parsed
            }
        };
        let priority = match f.get("priority") {
            None => Some(base.map_or(0, |b| b.priority)),
            Some(_) => f.int(&mut self.r, "priority"),
        };
        let definition = if f.get("definition").is_none() && base.is_some() {
            Some(Table::new())
        } else if f.get("definition").is_none() {
            let d = Diagnostic::error("missing-key", format!("{} has no `definition`", f.what))
                .at(self.loc(at.clone()))
                .help("add `definition = { \"max-length\" = 1000 }` with the settings the policy applies");
            self.r.report(d);
            None
        } else {
            f.values(&mut self.r, "definition")
        };
        // What the types cannot say, the kind's check says (over an
        // overlay's definition merged with the base's, never empty then).
        let definition = definition.map(|d| merged(base.map(|b| &b.definition), d));
        if let Some(def) = &definition {
            let body = [("definition".to_string(), Value::Table(def.clone()))].into_iter().collect();
            ok &= self.checked(
                &f,
                (policies::KIND.check.expect("a policy's check"))(&Object { id: vec![name.into()], body }),
            );
        }
        let value = Policy {
            name: name.to_string(),
            pattern: pattern?,
            apply_to: apply_to?,
            priority: priority?,
            definition: definition?,
        };
        if let Some(Item::Table(t)) = f.get("definition").map(|n| &n.item) {
            for (k, v) in t.iter() {
                fields_at.insert(format!("definition.{}", k.name), self.loc(v.span()));
            }
        }
        ok.then(|| Decl { value, at: self.loc(at), fields: fields_at.into() })
    }

    pub(super) fn user(
        &mut self,
        name: &str,
        node: &Node,
        at: Range<usize>,
        base: Option<&User>,
    ) -> Option<Decl<User>> {
        let f = Fields::new(&mut self.r, node, What::named("user", name), USER_KEYS)?;
        let mut ok = self.check_name(name, &at, "user", false);
        let fields_at = self.fields_at(&f);
        if let Some(span) = f.span("password") {
            let d = Diagnostic::error("plaintext-password", format!("user \"{name}\" has a plaintext password"))
                .at(self.loc(span))
                .redacted()
                .help("a secret in a file ends up in version control; use `password_env = \"VARIABLE\"` to read it from the environment at apply time, or `password_hash`");
            self.r.report(d);
            ok = false;
        }
        let env = f.string(&mut self.r, "password_env");
        let hash = f.string(&mut self.r, "password_hash");
        let algorithm = f.string(&mut self.r, "hashing_algorithm");
        if let Some(a) = &algorithm
            && !HASHING_ALGORITHMS.contains(&a.as_str())
        {
            self.bad_choice(&f, "hashing_algorithm", a, HASHING_ALGORITHMS);
            ok = false;
        }
        let given = env.is_some() || hash.is_some();
        let password = match (env, hash) {
            (Some(_), Some(_)) => {
                let d = Diagnostic::error(
                    "bad-value",
                    format!("user \"{name}\" has both `password_env` and `password_hash`"),
                )
                .at(self.loc(f.span("password_hash")?))
                .help("keep one of them");
                self.r.report(d);
                return None;
            }
            (Some(var), None) => Password::Env(var),
            (None, Some(hash)) => Password::Hash { hash, algorithm },
            (None, None) => base.map_or(Password::None, |b| b.password.clone()),
        };
        if given {
            // The kind's check, placed at the key that gives the password.
            let user =
                User { name: name.to_string(), password: password.clone(), tags: Default::default(), limits: None };
            let (key, hidden) = match password {
                Password::Env(_) => ("password_env", false),
                _ => ("password_hash", true),
            };
            for finding in users::check(&users::object(&user)) {
                let mut d =
                    Diagnostic::error(finding.code, finding.message).at(self.loc(f.span(key)?)).help(finding.help);
                if hidden {
                    // The broker would refuse it with a reason that quotes it.
                    d = d.redacted();
                }
                self.r.report(d);
                ok = false;
            }
        }
        let tags = match f.get("tags") {
            None => Some(base.map(|b| b.tags.clone()).unwrap_or_default()),
            Some(_) => f.strings(&mut self.r, "tags").map(|t| t.into_iter().map(|(s, _)| s).collect()),
        };
        let what = format!("`limits` of user \"{name}\"");
        let limits = self.limits(&f, &what, USER_LIMIT_KEYS, base.and_then(|b| b.limits.as_ref()));
        let value = User { name: name.to_string(), password, tags: tags?, limits: limits? };
        ok.then(|| Decl { value, at: self.loc(at), fields: fields_at.into() })
    }

    pub(super) fn permission(
        &mut self,
        user: &str,
        node: &Node,
        at: Range<usize>,
        base: Option<&Permission>,
    ) -> Option<Decl<Permission>> {
        let f = Fields::new(&mut self.r, node, What::named("permissions of", user), PERMISSION_KEYS)?;
        let fields_at = self.fields_at(&f);
        let configure = self.string_or(&f, "configure", at.clone(), "\"^$\"", base.map(|b| b.configure.as_str()));
        let write = self.string_or(&f, "write", at.clone(), "\"^$\"", base.map(|b| b.write.as_str()));
        let read = self.string_or(&f, "read", at.clone(), "\"^$\"", base.map(|b| b.read.as_str()));
        let value = Permission { user: user.to_string(), configure: configure?, write: write?, read: read? };
        // The kind's check, on the expressions this table gives (a base's
        // were checked where they are).
        let mut findings = permissions::check(&permissions::object(&value));
        findings.retain(|finding| f.get(&finding.path[0]).is_some());
        if !self.checked(&f, findings) {
            return None;
        }
        Some(Decl { value, at: self.loc(at), fields: fields_at.into() })
    }

    /// A string field, required unless the base has it.
    fn string_or(
        &mut self,
        f: &Fields,
        key: &str,
        at: Range<usize>,
        example: &str,
        base: Option<&str>,
    ) -> Option<String> {
        match (f.get(key), base) {
            (None, Some(b)) => Some(b.to_string()),
            _ => f.required_string(&mut self.r, key, at, example),
        }
    }

    pub(super) fn external(&mut self, node: &Node) -> External {
        let mut out = External::default();
        let Some(f) = Fields::new(&mut self.r, node, "[external]", EXTERNAL_KEYS) else {
            return out;
        };
        for (name, _) in f.strings(&mut self.r, "exchanges").unwrap_or_default() {
            out.exchanges.insert(name);
        }
        for (name, _) in f.strings(&mut self.r, "queues").unwrap_or_default() {
            out.queues.insert(name);
        }
        for (name, _) in f.strings(&mut self.r, "users").unwrap_or_default() {
            out.users.insert(name);
        }
        out
    }
}

/// An overlay's table of values over the base's: entry by entry.
fn merged(base: Option<&Table>, over: Table) -> Table {
    match base {
        None => over,
        Some(b) => {
            let mut out = b.clone();
            out.extend(over);
            out
        }
    }
}
