//! A vhost, or the users, as the text of a topology file: grouped (vhost
//! settings, external names, exchanges, queues, bindings, policies, operator
//! policies, permissions), sorted by name, defaults left unsaid. A vhost
//! with many queues has them, with the bindings to them, in further files.

use super::select::LeftOut;
use crate::desired::is_named;
use crate::live::Skipped;
use crate::model::kinds::{
    Attribute, KINDS, Name, Objects, Phase, Presence, Type, bindings, exchanges, has_password, password_keys,
    permissions, queues, users, vhosts,
};
use crate::model::{Binding, Exchange, External, Partitions, Queue, SuperStream, Table, Value, Vhost, VhostSettings};
use crate::toml_text::{WIDTH, inline_table, key, list_field, path, string, value};

/// What of its vhost the vhost's own file holds.
pub(super) enum Share<'a> {
    /// All of it.
    Whole,
    /// All but its queues and the bindings to them, which are in the files
    /// `parts`: these `bindings` are the others.
    Own { bindings: Vec<&'a Binding>, parts: &'a [String] },
}

/// What a vhost's own file says besides its objects: what it leaves out
/// and what the export held that RabbitMQ skips (at its top), and the
/// services it proposes, uncommented (`services.rs`; at its end).
pub(super) struct Tail<'a> {
    pub left_out: &'a [&'a LeftOut],
    pub skipped: &'a [&'a Skipped],
    pub proposal: &'a [String],
}

/// The text of a vhost's own file.
pub(super) fn vhost_file(vhost: &Vhost, streams: &[SuperStream], share: &Share, tail: &Tail, source: &str) -> String {
    let Tail { left_out, skipped, proposal } = tail;
    let mut w = Writer::default();
    w.comment(&format!("vhost \"{}\", as `warren import` read it from {source}.", vhost.name));
    if let Share::Own { parts, .. } = share {
        let files = match parts {
            [first, .., last] => format!("{first} to {last}"),
            _ => parts.join(""),
        };
        w.comment(&format!("Its queues, and the bindings to them, are in {files}."));
    }
    w.left_out(left_out);
    w.skipped(skipped, source);
    w.blank();
    w.list("vhosts", [&vhost.name].into_iter());
    w.settings(&vhost.name, &vhost.settings);
    w.external(&vhost.external, matches!(share, Share::Whole));
    for x in vhost.exchanges.values() {
        w.exchange(x);
    }
    for ss in streams {
        w.super_stream(ss);
    }
    match share {
        Share::Whole => {
            for q in vhost.queues.values() {
                w.queue(q, vhost);
            }
            for b in &vhost.bindings {
                w.binding(b);
            }
        }
        Share::Own { bindings, .. } => {
            for b in bindings {
                w.binding(b);
            }
        }
    }
    // Policies, then the other objects a plan sets with them, kind by kind.
    let (with_policies, rest): (Objects, Objects) =
        vhost.objects.clone().into_iter().partition(|(n, _)| n.kind.phase == Phase::PutPolicy);
    for kind in KINDS.iter().filter(|k| k.phase == Phase::PutPolicy) {
        w.objects(
            &with_policies.iter().filter(|(n, _)| n.kind == *kind).map(|(n, b)| (n.clone(), b.clone())).collect(),
        );
    }
    // The permissions, written as any kind's objects, before the other kinds'.
    let (permissions, rest): (Objects, Objects) = rest.into_iter().partition(|(n, _)| n.kind == &permissions::KIND);
    w.objects(&permissions);
    w.objects(&rest);
    if !proposal.is_empty() {
        w.blank();
        for line in proposal.iter() {
            w.comment(line);
        }
    }
    w.finish()
}

/// The body of shape `shape`: the exchanges, queues and bindings of `body`
/// (one stamp's) as tables of `shapes.NAME`, each queue's type left out
/// when it is the default of `vhost`, which stamps it.
pub(super) fn shape_body(shape: &str, body: &Vhost, vhost: &Vhost) -> String {
    let mut w = Writer { within: vec!["shapes".to_string(), shape.to_string()], ..Writer::default() };
    for x in body.exchanges.values() {
        w.exchange(x);
    }
    for q in body.queues.values() {
        w.queue(q, vhost);
    }
    for b in &body.bindings {
        w.binding(b);
    }
    w.finish()
}

/// The text of a further file of a vhost: `queues`, part `part` (from 1)
/// of `parts`, with the `bindings` to them; `own` names the vhost's file.
pub(super) fn queues_file(
    vhost: &Vhost,
    queues: &[&Queue],
    bindings: &[&Binding],
    (part, parts): (usize, usize),
    own: &str,
    source: &str,
) -> String {
    let mut w = Writer::default();
    let span = match queues {
        [first, .., last] => format!("queues \"{}\" to \"{}\"", first.name, last.name),
        [only] => format!("queue \"{}\"", only.name),
        [] => "no queues".to_string(),
    };
    w.comment(&format!("vhost \"{}\", part {part} of {parts} of its queues: {span},", vhost.name));
    w.comment(&format!("and the bindings to them, as `warren import` read them from {source}."));
    w.comment(&format!("The rest of the vhost is in {own}."));
    w.blank();
    w.list("vhosts", [&vhost.name].into_iter());
    for q in queues {
        w.queue(q, vhost);
    }
    for b in bindings {
        w.binding(b);
    }
    w.finish()
}

/// The text of the users' file: the broker-wide `objects` of kinds of
/// `model::kinds`, users first.
pub(super) fn users_file(objects: &Objects, left_out: &[&LeftOut], skipped: &[&Skipped], source: &str) -> String {
    let mut w = Writer::default();
    w.comment(&format!("Users, as `warren import` read them from {source}."));
    w.comment("Users are cluster-wide: each is declared once, in one file, for every vhost.");
    w.left_out(left_out);
    w.skipped(skipped, source);
    // The users first, each as its kind's object, written as any kind's.
    let (users, others): (Objects, Objects) = objects.clone().into_iter().partition(|(n, _)| n.kind == &users::KIND);
    w.objects(&users);
    w.objects(&others);
    w.finish()
}

/// Builds the text; every line ends with a newline.
#[derive(Default)]
struct Writer {
    out: String,
    /// Sub-tables to write once the current table's plain fields are done.
    pending: Vec<String>,
    /// The table the objects are written in: none for a file's own,
    /// `shapes.NAME` for a shape's body.
    within: Vec<String>,
}

impl Writer {
    fn line(&mut self, text: &str) {
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn blank(&mut self) {
        self.flush();
        if !self.out.is_empty() && !self.out.ends_with("\n\n") {
            self.out.push('\n');
        }
    }

    /// A comment line; control characters in names are shown escaped.
    fn comment(&mut self, text: &str) {
        let text: String = text
            .chars()
            .flat_map(|c| {
                let shown: Vec<char> = if c.is_control() { c.escape_default().collect() } else { vec![c] };
                shown
            })
            .collect();
        self.line(format!("# {text}").trim_end());
    }

    fn left_out(&mut self, left_out: &[&LeftOut]) {
        if left_out.is_empty() {
            return;
        }
        self.comment("");
        self.comment("Left out: topology files cannot declare these live objects. They stay on the");
        self.comment("broker as they are, and warren does not manage them.");
        for l in left_out {
            let what = match &l.part {
                Some(part) => format!("{part} of {}", l.key),
                None => l.key.to_string(),
            };
            self.comment(&format!("- {what}: {}", l.why));
        }
    }

    /// The items of the export RabbitMQ skips too, each with its place.
    fn skipped(&mut self, skipped: &[&Skipped], source: &str) {
        if skipped.is_empty() {
            return;
        }
        self.comment("");
        self.comment("Skipped: RabbitMQ does not load these items of the export either.");
        for s in skipped {
            let place = match s.at {
                Some((line, column)) => format!(" ({source}:{line}:{column})"),
                None => String::new(),
            };
            self.comment(&format!("- {}{place}: {}", s.what, s.why));
        }
    }

    /// The `[vhost]` table, if the vhost sets anything: the object of the
    /// vhost settings' kind, written as the other kinds' are.
    fn settings(&mut self, name: &str, s: &VhostSettings) {
        let o = vhosts::object(name, s);
        if o.body.is_empty() {
            return;
        }
        self.header("vhost");
        self.attributes(&vhosts::name(name), &o.body, Some(&["vhost"][..]));
    }

    /// The `[external]` table, if any; `whole`: the bindings that use its
    /// names are all in this file.
    fn external(&mut self, ext: &External, whole: bool) {
        if ext.exchanges.is_empty() && ext.queues.is_empty() {
            return;
        }
        self.blank();
        if whole {
            self.comment("Bindings below use these, but the export does not declare them (or they are");
            self.comment("left out above). warren never creates, changes or deletes external objects.");
        } else {
            self.comment("Bindings of this vhost use these, but the export does not declare them (or");
            self.comment("they are left out above). warren never creates, changes or deletes external");
            self.comment("objects.");
        }
        self.line("[external]");
        if !ext.exchanges.is_empty() {
            self.list("exchanges", ext.exchanges.iter());
        }
        if !ext.queues.is_empty() {
            self.list("queues", ext.queues.iter());
        }
    }

    /// `keys` inside the table the objects are written in.
    fn at(&self, keys: &[&str]) -> Vec<String> {
        self.within.iter().map(String::as_str).chain(keys.iter().copied()).map(str::to_string).collect()
    }

    /// An exchange, as its kind's object: defaults and empty arguments
    /// left unsaid.
    fn exchange(&mut self, x: &Exchange) {
        let at = self.at(&["exchanges", x.name.as_str()]);
        let at: Vec<&str> = at.iter().map(String::as_str).collect();
        self.header(&path(&at));
        let o = exchanges::object(x);
        self.attributes(&exchanges::name(&x.name), &o.body, Some(&at));
    }

    /// A queue of `vhost`, as its kind's object: its type left out when it
    /// is the vhost's default, and the other defaults and empty arguments
    /// left unsaid. An imported queue is the broker's, which has no
    /// `replaces` (a migration's instruction, which only files give).
    fn queue(&mut self, q: &Queue, vhost: &Vhost) {
        let at = self.at(&["queues", q.name.as_str()]);
        let at: Vec<&str> = at.iter().map(String::as_str).collect();
        self.header(&path(&at));
        let o = queues::object_in(q, vhost.settings.default_queue_type);
        self.attributes(&queues::name(&q.name), &o.body, Some(&at));
    }

    /// A super stream as the parser reads it: its partitions by count when
    /// they are `NAME-0`…, else by their keys.
    fn super_stream(&mut self, ss: &SuperStream) {
        let at = ["super_streams", ss.name.as_str()];
        self.header(&path(&at));
        match &ss.partitions {
            Partitions::Count(n) => self.field("partitions", &n.to_string()),
            Partitions::Keys(keys) => self.list("binding_keys", keys.iter()),
        }
        if !ss.arguments.is_empty() {
            self.table_field(&at, "arguments", &ss.arguments);
        }
    }

    /// A binding, as its kind's object: all of it is its identity, written
    /// as attributes are (the routing key's default left unsaid, long
    /// arguments a table of their own) from the values the files give.
    fn binding(&mut self, b: &Binding) {
        let at = self.at(&["bindings"]);
        let at: Vec<&str> = at.iter().map(String::as_str).collect();
        self.blank();
        self.line(&format!("[[{}]]", path(&at)));
        // Its body is empty: there is nothing else to write.
        let o = bindings::object(b);
        let identity = bindings::identity(&o.id);
        let name = Name { kind: &bindings::KIND, id: o.id };
        self.values(&name, bindings::KIND.identity, &identity, Some(&at));
    }

    /// Objects of kinds of `model::kinds` as the parser reads them: a
    /// named table, or an array item with the identity inside; defaults
    /// left unsaid.
    fn objects(&mut self, objects: &Objects) {
        for (name, body) in objects {
            let k = name.kind;
            let at = [k.table, name.id[0].as_str()];
            if is_named(k) {
                self.header(&path(&at));
            } else {
                self.blank();
                self.line(&format!("[[{}]]", key(k.table)));
                for (a, id) in k.identity.iter().zip(&name.id) {
                    self.field(a.name, &string(id));
                }
            }
            self.attributes(name, body, is_named(k).then_some(&at[..]));
        }
    }

    /// An object's attributes, defaults left unsaid; `table`: the table
    /// they are in, when a table attribute too long for one line may be a
    /// table of its own there (`[policies.NAME.definition]`), as a
    /// policy's definition is.
    fn attributes(&mut self, name: &Name, body: &Table, table: Option<&[&str]>) {
        self.values(name, name.kind.attributes, body, table);
    }

    /// What [`Writer::attributes`] writes, of `attributes` of the kind.
    fn values(&mut self, name: &Name, attributes: &[Attribute], body: &Table, table: Option<&[&str]>) {
        for a in attributes {
            let Some(v) = body.get(a.name) else {
                if a.ty == Type::Password {
                    self.comment("no password in the export: add `password_env = \"VARIABLE\"` to give it one");
                }
                continue;
            };
            if matches!(a.presence, Presence::Default(d) if d.value() == *v) {
                continue;
            }
            // A password is its file keys: a variable's name, or a hash.
            if a.ty == Type::Password {
                for (k, text) in password_keys(v) {
                    self.field(k, &string(text));
                }
                continue;
            }
            if let (Value::Table(t), Some(at), false) = (v, table, a.secret) {
                self.table_field(at, a.name, t);
                continue;
            }
            let v = if a.secret { self.secret_from_env(name, a.name, v) } else { v.clone() };
            if let Some(line) = field_line(a.name, &v) {
                self.line(&line);
            }
        }
    }

    /// A secret attribute as the files must hold it: each URI that carries
    /// a password replaced by `{ env = "VARIABLE" }`, named after the
    /// object, with a comment that says what to set. The password read
    /// from the broker is never written.
    fn secret_from_env(&mut self, name: &Name, attribute: &str, v: &Value) -> Value {
        let base: String = format!("{}_{}_{attribute}", name.kind.name, name.id.join("_"))
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' })
            .collect();
        let mut named = Vec::new();
        let mut replace = |item: &Value, n: usize| match item {
            Value::String(uri) if has_password(uri) => {
                let var = if n == 0 { base.clone() } else { format!("{base}_{n}") };
                named.push(var.clone());
                Value::Table([("env".to_string(), Value::String(var))].into_iter().collect())
            }
            other => other.clone(),
        };
        let out = match v {
            Value::List(items) => Value::List(items.iter().enumerate().map(|(i, item)| replace(item, i + 1)).collect()),
            one => replace(one, 0),
        };
        if !named.is_empty() {
            self.comment(&format!(
                "`{attribute}` holds a password on the broker: set {} to it where warren runs.",
                named.join(", ")
            ));
        }
        out
    }

    fn header(&mut self, table: &str) {
        self.blank();
        self.line(&format!("[{table}]"));
    }

    fn field(&mut self, name: &str, text: &str) {
        self.line(&format!("{} = {text}", key(name)));
    }

    /// A list of strings, one per line when it is long (as `warren fmt`
    /// lays lists out).
    fn list<'a>(&mut self, name: &str, items: impl Iterator<Item = &'a String>) {
        let items: Vec<String> = items.map(|i| string(i)).collect();
        self.line(&list_field(name, &items));
    }

    /// An inline table, or a sub-table `[at.name]` after the plain fields
    /// when the line would be too wide.
    fn table_field(&mut self, at: &[&str], name: &str, table: &Table) {
        let inline = inline_table(table.iter()).unwrap_or_default();
        let line = format!("{} = {inline}", key(name));
        if line.len() <= WIDTH {
            self.line(&line);
            return;
        }
        let mut sub = vec![String::new(), format!("[{}]", path(&[at, &[name]].concat()))];
        for (k, v) in table {
            sub.push(field_line(k, v).unwrap_or_default());
        }
        self.pending.push(sub.join("\n") + "\n");
    }

    fn flush(&mut self) {
        for sub in std::mem::take(&mut self.pending) {
            self.out.push_str(&sub);
        }
    }

    fn finish(mut self) -> String {
        self.flush();
        self.out
    }
}

/// `name = value`, a list one item a line when it is long; `None` for a
/// null, which TOML cannot write.
fn field_line(name: &str, v: &Value) -> Option<String> {
    Some(match v {
        Value::List(items) => list_field(name, &items.iter().map(value).collect::<Option<Vec<String>>>()?),
        v => format!("{} = {}", key(name), value(v)?),
    })
}

#[cfg(test)]
mod tests {
    use crate::desired::kinds::testing::LINK;
    use crate::model::kinds::{Name, Objects};
    use crate::model::{Table, Value};

    #[test]
    fn a_kind_named_by_one_attribute_is_written_as_a_named_table_defaults_left_unsaid() {
        let body: Table = [
            ("uri", Value::String("amqp://".into())),
            ("prefetch", Value::Int(1000)),
            ("queues", Value::List(vec![Value::String("q".into())])),
            ("delete", Value::Bool(false)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let objects: Objects = [(Name { kind: &LINK, id: vec!["orders.eu".into()] }, body)].into_iter().collect();
        let text = super::users_file(&objects, &[], &[], "test");
        let none = "# no password in the export: add `password_env = \"VARIABLE\"` to give it one";
        assert!(
            text.ends_with(&format!("\n[links.\"orders.eu\"]\nuri = \"amqp://\"\nqueues = [\"q\"]\n{none}\n")),
            "{text}"
        );
    }

    #[test]
    fn a_binding_is_written_as_its_kinds_identity_defaults_left_unsaid_long_arguments_a_table() {
        use crate::model::{Binding, DestinationKind};
        let text = |b: &Binding| {
            let mut w = super::Writer::default();
            w.binding(b);
            w.finish()
        };
        let to_exchange = Binding {
            source: "shop.orders".into(),
            destination_kind: DestinationKind::Exchange,
            destination: "shop.audit".into(),
            routing_key: String::new(),
            arguments: Table::new(),
        };
        assert_eq!(text(&to_exchange), "[[bindings]]\nsource = \"shop.orders\"\nexchange = \"shop.audit\"\n");
        let long = "a value long enough that the inline table goes past the line's width";
        let arguments: Table = [("x-match", "all"), ("country", long)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.into())))
            .collect();
        let headers = Binding {
            source: "shop.headers".into(),
            destination_kind: DestinationKind::Queue,
            destination: "orders.pl".into(),
            routing_key: "k".into(),
            arguments,
        };
        assert_eq!(
            text(&headers),
            format!(
                "[[bindings]]\nsource = \"shop.headers\"\nqueue = \"orders.pl\"\nrouting_key = \"k\"\n\n\
                 [bindings.arguments]\ncountry = \"{long}\"\nx-match = \"all\"\n"
            )
        );
    }

    #[test]
    fn a_password_is_written_as_its_file_keys() {
        let text = |password: &[(&str, &str)]| {
            let p = password.iter().map(|(k, v)| (k.to_string(), Value::String(v.to_string()))).collect();
            let body: Table =
                [("uri".to_string(), Value::String("amqp://".into())), ("password".into(), Value::Table(p))]
                    .into_iter()
                    .collect();
            let objects: Objects = [(Name { kind: &LINK, id: vec!["a".into()] }, body)].into_iter().collect();
            let text = super::users_file(&objects, &[], &[], "test");
            text[text.find("[links.a]").unwrap()..].to_string()
        };
        assert_eq!(
            text(&[("env", "LINK_PASSWORD")]),
            "[links.a]\nuri = \"amqp://\"\npassword_env = \"LINK_PASSWORD\"\n"
        );
        assert_eq!(
            text(&[("hash", "aGFzaA=="), ("algorithm", "rabbit_password_hashing_md5")]),
            "[links.a]\nuri = \"amqp://\"\npassword_hash = \"aGFzaA==\"\nhashing_algorithm = \"rabbit_password_hashing_md5\"\n"
        );
    }
}
