//! Objects of the kinds of [`crate::model::kinds`] in a topology file, read
//! from the kind alone: a new kind needs nothing here.
//!
//! A kind named by one attribute is a table of named tables, as queues are
//! (`[shovels.NAME]`, the body inside); a kind named by several is an
//! array of tables with the identity inside (`[[topic_permissions]]` with
//! `user` and `exchange`). Each attribute is checked by its type and
//! presence: a missing required one is a `missing-key` error at the object,
//! a default is filled in (so that the files and the broker compare equal),
//! an optional one absent is left out.

use std::ops::Range;
use std::sync::LazyLock;

use super::decl::{Decl, ObjectDecl};
use super::parse::{MAX_NAME_BYTES, Parser};
use super::reader::{Fields, What};
use super::tree::{Item, Node};
use crate::diagnostic::Diagnostic;
use crate::model::Table;
use crate::model::Value;
use crate::model::kinds::{
    Attribute, Finding, Fixed, KINDS, Kind, Name, Object, PASSWORD_KEYS, Presence, Scope, Type, env_var, has_password,
};

/// Whether objects of `kind` are written `[table.NAME]` (one identity
/// attribute, the table's name), rather than `[[table]]` with the identity
/// attributes inside.
pub(crate) fn is_named(kind: &Kind) -> bool {
    kind.identity.len() == 1
}

/// The keys an object of `kind` may have: the identity attributes when
/// they are written inside, the body's, and `lint_allow`.
pub(crate) fn keys(kind: &Kind) -> &'static [&'static str] {
    static KEYS: LazyLock<Vec<(&'static str, Vec<&'static str>)>> =
        LazyLock::new(|| KINDS.iter().map(|k| (k.table, keys_of(k))).collect());
    match KEYS.iter().find(|(t, _)| *t == kind.table) {
        Some((_, keys)) => keys.as_slice(),
        // A kind of no file, which tests make: its own list, kept.
        None => Box::leak(keys_of(kind).into_boxed_slice()),
    }
}

fn keys_of(k: &Kind) -> Vec<&'static str> {
    let identity = if is_named(k) { &[][..] } else { k.identity };
    let mut keys: Vec<&str> = identity.iter().chain(k.attributes).flat_map(|a| a.file_keys().iter().copied()).collect();
    keys.push("lint_allow");
    keys
}

/// An example value of an attribute, for the help of a missing one.
pub(crate) fn example(a: &Attribute) -> String {
    match (a.presence, a.ty) {
        (Presence::Default(d), _) => crate::toml_text::value(&d.value()).unwrap_or_default(),
        (_, Type::String) => "\"…\"".into(),
        (_, Type::Integer) => "1".into(),
        (_, Type::Boolean) => "true".into(),
        (_, Type::Strings) => "[\"…\"]".into(),
        (_, Type::OneOf(words) | Type::OneOfOrInteger(words)) => {
            format!("\"{}\"", words.first().copied().unwrap_or_default())
        }
        (_, Type::Uris) => "{ env = \"VARIABLE\" }".into(),
        (_, Type::Password) => "\"VARIABLE\"".into(),
        (_, Type::Any) => "\"…\"".into(),
        (_, Type::Table) => "{ … }".into(),
    }
}

/// The name of the object at an entry, when it reads; reports nothing
/// (an overlay looks the object up before reading it).
pub(super) fn name_of(kind: &'static Kind, node: &Node, name: Option<&str>) -> Option<Name> {
    if let Some(n) = name {
        return Some(Name { kind, id: vec![n.to_string()] });
    }
    let Item::Table(t) = &node.item else { return None };
    let id = (kind.identity.iter())
        .map(|a| match (t.get(a.name).map(|n| &n.item), a.presence) {
            (Some(Item::String(s)), _) => Some(s.to_string()),
            (None, Presence::Default(Fixed::Str(s))) => Some(s.to_string()),
            _ => None,
        })
        .collect::<Option<Vec<String>>>()?;
    Some(Name { kind, id })
}

/// An object's entry in its kind's table: its node, and for a named kind
/// its name with the name's place.
pub(super) type Entry<'t, 'i> = (&'t Node<'i>, Option<(&'t str, Range<usize>)>);

impl Parser<'_> {
    /// The objects of every kind a file declares.
    pub(super) fn objects(&mut self, top: &Fields) -> Vec<Decl<ObjectDecl>> {
        let mut out = Vec::new();
        for kind in KINDS.iter().filter(|k| !read_apart(k)) {
            for (node, name) in self.entries(top, kind) {
                out.extend(self.object(kind, name, node, None));
            }
        }
        out
    }

    /// The entries of `kind`'s table in a file.
    pub(super) fn entries<'t, 'i>(&mut self, top: &Fields<'t, 'i>, kind: &Kind) -> Vec<Entry<'t, 'i>> {
        let Some(node) = top.get(kind.table) else { return Vec::new() };
        if is_named(kind) {
            return self.named(top, kind.table).into_iter().map(|(name, node, at)| (node, Some((name, at)))).collect();
        }
        match &node.item {
            Item::Array(items) => items.iter().map(|i| (i, None)).collect(),
            _ => {
                let table = kind.table;
                self.r.wrong_type(node, format_args!("`{table}`"), &format!("an array of tables, written [[{table}]]"));
                Vec::new()
            }
        }
    }

    /// One object of `kind`; `base` is the body an overlay is merged over.
    pub(super) fn object(
        &mut self,
        kind: &'static Kind,
        name: Option<(&str, Range<usize>)>,
        node: &Node,
        base: Option<&Table>,
    ) -> Option<Decl<ObjectDecl>> {
        let said = match name_of(kind, node, None) {
            Some(n) if name.is_none() => n.to_string(),
            _ => format!("a {}", kind.name),
        };
        let what = match &name {
            Some((n, _)) => What::named(kind.name, n),
            None => What::said(&said),
        };
        let f = Fields::new(&mut self.r, node, what, keys(kind))?;
        let at = name.as_ref().map_or(node.span(), |(_, at)| at.clone());
        let mut fields_at = self.fields_at(&f);
        // A table attribute's keys are placed too, for what names one (lint, drift).
        if let Some(a) = kind.table_attribute()
            && let Some(Item::Table(t)) = f.get(a.name).map(|n| &n.item)
        {
            for (k, v) in t.iter() {
                fields_at.insert(format!("{}.{}", a.name, k.name), self.loc(v.span()));
            }
        }
        let id = match &name {
            Some((n, span)) => self.check_name(n, span, kind.name, false).then(|| vec![n.to_string()]),
            None => self.identity(kind, &f, &at),
        };
        let body = self.body(kind, &f, &at, base);
        let checked = match (&body, &id, kind.check) {
            (Some(b), Some(id), Some(check)) => {
                let mut findings = check(&Object { id: id.clone(), body: b.clone() });
                // A finding about a password is placed at the key that gave it.
                for x in &mut findings {
                    if let Some(a) = x.path.first().and_then(|n| kind.attribute(n)) {
                        x.path[0] = given_key(&f, a).to_string();
                    }
                }
                self.checked(&f, findings)
            }
            _ => true,
        };
        let value = ObjectDecl { name: Name { kind, id: id? }, body: body.filter(|_| checked)? };
        Some(Decl { value, at: self.loc(at), fields: fields_at.into() })
    }

    /// The identity attributes written inside an object's table.
    fn identity(&mut self, kind: &Kind, f: &Fields, at: &Range<usize>) -> Option<Vec<String>> {
        let mut id = Vec::with_capacity(kind.identity.len());
        let mut ok = true;
        for a in kind.identity {
            let value = match (f.get(a.name), a.presence) {
                (None, Presence::Default(Fixed::Str(s))) => Some(s.to_string()),
                (None, _) => {
                    self.missing(f, a, at);
                    None
                }
                (Some(_), _) => f.typed(&mut self.r, a.name, a.ty).and_then(|v| v.as_str().map(str::to_string)),
            };
            match value {
                Some(v) if self.identity_ok(kind, f, a, &v) => id.push(v),
                _ => ok = false,
            }
        }
        ok.then_some(id)
    }

    /// Whether an identity value can name an object: not empty, nor longer
    /// than a name RabbitMQ takes.
    fn identity_ok(&mut self, kind: &Kind, f: &Fields, a: &Attribute, value: &str) -> bool {
        let span = f.span(a.name).unwrap_or(0..0);
        let d = if value.is_empty() {
            Diagnostic::error("bad-value", format!("the `{}` of a {} cannot be empty", a.name, kind.name))
                .at(self.loc(span))
                .help(format!("give `{}`: {}", a.name, a.about))
        } else if value.len() > MAX_NAME_BYTES {
            Diagnostic::error(
                "name-too-long",
                format!("this `{}` is {} bytes long; RabbitMQ accepts at most {MAX_NAME_BYTES}", a.name, value.len()),
            )
            .at(self.loc(span))
            .help(format!("shorten it to {MAX_NAME_BYTES} bytes or fewer"))
        } else {
            return true;
        };
        self.r.report(d);
        false
    }

    /// The body attributes: given, else the base's, else the default.
    fn body(&mut self, kind: &Kind, f: &Fields, at: &Range<usize>, base: Option<&Table>) -> Option<Table> {
        let mut body = Table::with_capacity(kind.attributes.len());
        let mut ok = true;
        for a in kind.attributes {
            let given = match a.ty {
                // A password is given by its file keys, not its name.
                Type::Password => match self.password(f, a) {
                    Some(v) => v,
                    None => {
                        ok = false;
                        continue;
                    }
                },
                _ => None,
            };
            let value = match (f.get(a.name), base.and_then(|b| b.get(a.name)), a.presence) {
                _ if given.is_some() => given,
                (Some(_), base, _) => {
                    let v = f.typed(&mut self.r, a.name, a.ty).filter(|v| !a.secret || self.secret_ok(f, a, v));
                    ok &= v.is_some();
                    // An overlay's table merges over the base's key by key.
                    match (v, base) {
                        (Some(Value::Table(mut given)), Some(Value::Table(b))) if a.ty == Type::Table => {
                            for (k, bv) in b {
                                given.entry(k.clone()).or_insert_with(|| bv.clone());
                            }
                            Some(Value::Table(given))
                        }
                        (v, _) => v,
                    }
                }
                (None, Some(b), _) => Some(b.clone()),
                (None, None, Presence::Default(d)) => Some(d.value()),
                (None, None, Presence::Optional) => None,
                (None, None, Presence::Required) => {
                    self.missing(f, a, at);
                    ok = false;
                    None
                }
            };
            if let Some(v) = value {
                body.insert(a.name.to_string(), v);
            }
        }
        ok.then_some(body)
    }

    /// A [`Type::Password`] attribute from its file keys
    /// ([`PASSWORD_KEYS`]): `Some(None)` when none is given, `None` when
    /// what is given is wrong (reported). `password_env` and
    /// `password_hash` exclude each other; `hashing_algorithm` goes with a
    /// hash.
    fn password(&mut self, f: &Fields, a: &Attribute) -> Option<Option<Value>> {
        let [env_key, hash_key, algorithm_key] = PASSWORD_KEYS;
        let env = f.get(env_key).map(|_| f.string(&mut self.r, env_key));
        let hash = f.get(hash_key).map(|_| f.string(&mut self.r, hash_key));
        let algorithm = f.get(algorithm_key).map(|_| f.string(&mut self.r, algorithm_key));
        let text = |k: &str, v: String| (k.to_string(), Value::String(v));
        let value = match (env, hash) {
            (Some(_), Some(_)) => {
                let d = Diagnostic::error("bad-value", format!("{} has both `{env_key}` and `{hash_key}`", f.what))
                    .at(self.loc(f.span(hash_key).unwrap_or(0..0)))
                    .help("keep one of them");
                self.r.report(d);
                return None;
            }
            (Some(var), None) => Value::Table([text("env", var?)].into_iter().collect()),
            (None, Some(hash)) => {
                let algorithm = algorithm.map_or(Some(None), |a| a.map(Some))?;
                let parts = std::iter::once(text("hash", hash?)).chain(algorithm.map(|a| text("algorithm", a)));
                Value::Table(parts.collect())
            }
            (None, None) => {
                if algorithm.is_some() {
                    let d = Diagnostic::error(
                        "bad-value",
                        format!("{} has `{algorithm_key}` without `{hash_key}`", f.what),
                    )
                    .at(self.loc(f.span(algorithm_key).unwrap_or(0..0)))
                    .help(format!("`{algorithm_key}` says what `{hash_key}` was made with: give both, or neither"));
                    self.r.report(d);
                    return None;
                }
                return Some(None);
            }
        };
        (!a.secret || self.secret_ok(f, a, &value)).then_some(Some(value))
    }

    /// Whether a secret attribute's value keeps its secrets out of the
    /// file: a URI with a password is an error that never shows the line,
    /// and a variable must be one a shell can set.
    fn secret_ok(&mut self, f: &Fields, a: &Attribute, value: &Value) -> bool {
        let span = f.span(given_key(f, a)).unwrap_or(0..0);
        let items = match value {
            Value::List(items) => items.as_slice(),
            one => std::slice::from_ref(one),
        };
        let example = match a.ty {
            Type::Password => format!("`{} = \"VARIABLE\"`", PASSWORD_KEYS[0]),
            _ => format!("`{} = {{ env = \"VARIABLE\" }}`", a.name),
        };
        for item in items {
            let d = match (item, env_var(item)) {
                (Value::String(uri), _) if has_password(uri) => {
                    Diagnostic::error("secret-in-file", format!("the `{}` of {} holds a password", a.name, f.what))
                        .at(self.loc(span.clone()))
                        .redacted()
                        .help(format!(
                            "a secret in a file ends up in version control; write {example} and set VARIABLE to the URI where warren runs"
                        ))
                }
                (_, Some(var)) if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                    Diagnostic::error("bad-value", format!("\"{var}\" is not an environment variable name"))
                        .at(self.loc(span.clone()))
                        .help(format!("name the variable that holds the value, as in {example}"))
                }
                _ => continue,
            };
            self.r.report(d);
            return false;
        }
        true
    }

    /// Reports what a kind's check found, each at the attribute or key it
    /// names, in the order they are in the file; whether it found nothing.
    pub(super) fn checked(&mut self, f: &Fields, findings: Vec<Finding>) -> bool {
        let mut placed: Vec<(Range<usize>, Diagnostic)> = (findings.into_iter())
            .map(|finding| {
                let span = self.finding_span(f, &finding);
                let mut d = Diagnostic::error(finding.code, finding.message).at(self.loc(span.clone()));
                if finding.path.first().is_some_and(|k| k == PASSWORD_KEYS[1]) {
                    // A hash's line is not shown: the broker's reason would quote it.
                    d = d.redacted();
                }
                if let Some(label) = finding.label {
                    d = d.label(label);
                }
                (span, d.help(finding.help))
            })
            .collect();
        placed.sort_by_key(|(span, _)| span.start);
        let ok = placed.is_empty();
        for (_, d) in placed {
            self.r.report(d);
        }
        ok
    }

    /// Where a finding's path is in the file: the key within a table
    /// attribute (or its value), else the attribute.
    fn finding_span(&self, f: &Fields, finding: &Finding) -> Range<usize> {
        let Some(node) = finding.path.first().and_then(|a| f.get(a)) else { return 0..0 };
        if let (Some(key), Item::Table(t)) = (finding.path.get(1), &node.item)
            && let Some((k, v)) = t.iter().find(|(k, _)| k.name.as_ref() == key.as_str())
        {
            return if finding.at_key { k.span() } else { v.span() };
        }
        node.span()
    }

    fn missing(&mut self, f: &Fields, a: &Attribute, at: &Range<usize>) {
        // A password is asked for as its variable's key.
        let key = if a.ty == Type::Password { PASSWORD_KEYS[0] } else { a.name };
        let d = Diagnostic::error("missing-key", format!("{} has no `{key}`", f.what))
            .at(self.loc(at.clone()))
            .label(format!("`{key}` is required here"))
            .help(format!("add `{key} = {}`: {}", example(a), a.about));
        self.r.report(d);
    }
}

/// The key of a file that gives attribute `a`: its name, or for a
/// [`Type::Password`] the one of `password_env` and `password_hash` given.
fn given_key<'a>(f: &Fields, a: &'a Attribute) -> &'a str {
    match a.ty {
        Type::Password => PASSWORD_KEYS[..2].iter().copied().find(|k| f.get(k).is_some()).unwrap_or(a.name),
        _ => a.name,
    }
}

/// Whether docs/format.md and the JSON schema describe `kind` by hand: a
/// policy's and an operator policy's `definition` take the policy keys
/// (an operator policy only some), which the page lists in its own table
/// and the schema key by key, and which an attribute's type cannot say;
/// users, whose section and schema (the password's three keys, the
/// algorithms, the limits' keys) are the page's own; permissions, whose
/// section (`[permissions.USER]`, with `lint_allow`) is too.
pub fn documented_apart(kind: &Kind) -> bool {
    ["policies", "operator_policies", "users", "permissions"].contains(&kind.table)
}

/// Whether the files' reader reads `kind` with a parser of its own rather
/// than the kinds' generic one: policies, users and permissions, whose
/// diagnostics (a missing `pattern`'s help; `plaintext-password`,
/// `hashing_algorithm`'s choices, the limits' keys; `permissions of
/// "app"`, not `permission "app"`) and overlays' merges are the old
/// parser's, typed (`parse.rs`).
pub(super) fn read_apart(kind: &Kind) -> bool {
    ["policies", "users", "permissions"].contains(&kind.table)
}

/// The sections of docs/format.md on the kinds, one per kind, made from
/// the kinds themselves (tests/suite/docs.rs keeps the page in step).
pub fn reference() -> String {
    let mut out = String::new();
    for k in KINDS.iter().filter(|k| !documented_apart(k)) {
        out.push_str(&section(k));
    }
    out
}

fn section(k: &Kind) -> String {
    let mut form = if is_named(k) {
        format!("`[{}.NAME]` declares the {} NAME, with its keys inside.", k.table, k.name)
    } else {
        let identity: Vec<String> = k.identity.iter().map(|a| format!("`{}`", a.name)).collect();
        format!("Each `[[{}]]` declares one {}, named by its {}.", k.table, k.name, identity.join(" and "))
    };
    form.push_str(match k.scope {
        Scope::Vhost => " It is declared in each vhost of its file.",
        Scope::Broker => " It is broker-wide: a file of users and broker-wide objects alone needs no `vhosts`.",
    });
    form.push_str(&format!(" RabbitMQ has {} from {}.{}", k.table.replace('_', " "), k.since.0, k.since.1));
    if let Some(p) = k.plugin {
        form.push_str(&format!(", with the `{p}` plugin enabled"));
    }
    form.push('.');
    let scope = if k.scope == Scope::Vhost { "vhost" } else { "broker" };
    let checks = format!(
        "A missing required key is a `missing-key` error, a value of another type a `wrong-type` error, an \
         unknown key an `unknown-key` error. One {} declared twice in one {scope}, in one file or in two, is a \
         `duplicate` error.",
        k.name
    );
    let mut out = format!("\n### `{}`\n\n{}\n\n{}\n\n", k.table, wrap(k.about), wrap(&form));
    out.push_str("| key | TOML type | default | meaning | notes |\n|---|---|---|---|---|\n");
    for a in k.identity.iter().chain(k.attributes) {
        out.push_str(&row(k, a));
    }
    out.push_str(&format!(
        "| `lint_allow` | array of strings | `[]` | lint rules allowed at this {} | see [`lint_allow`](#lint_allow) |\n",
        k.name
    ));
    out.push_str(&format!("\n{}\n", wrap(&checks)));
    out
}

/// `text` in lines of at most 76 characters, as docs/format.md writes them.
fn wrap(text: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= 76 => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines.join("\n")
}

/// One attribute's row of its kind's table.
fn row(k: &Kind, a: &Attribute) -> String {
    let ty = a.ty.describe();
    let ty = ty.strip_prefix("a ").or_else(|| ty.strip_prefix("an ")).unwrap_or(&ty);
    let key = if is_named(k) && k.identity.iter().any(|i| i.name == a.name) {
        "`NAME`, the table's name".to_string()
    } else if a.ty == Type::Password {
        let [env, hash, algorithm] = PASSWORD_KEYS;
        format!("`{env}`, or `{hash}` with `{algorithm}`")
    } else {
        format!("`{}`", a.name)
    };
    let default = match a.presence {
        Presence::Required => "none: required".to_string(),
        Presence::Optional => "none: optional".to_string(),
        Presence::Default(d) => format!("`{}`", crate::toml_text::value(&d.value()).unwrap_or_default()),
    };
    let mut notes = Vec::new();
    if k.identity.iter().any(|i| i.name == a.name) {
        notes.push("names the object");
    } else if a.immutable {
        notes.push("a change deletes the object and declares it again");
    }
    if a.secret {
        notes.push("secret: plans show a digest of it, never the value");
    }
    format!("| {key} | {ty} | {default} | {} | {} |\n", a.about, notes.join("; "))
}

/// A kind of the shape no kind of `KINDS` has yet (named by one
/// attribute, broker-wide, of every type), for the tests of the generic
/// reading, merging, writing and docs.
#[cfg(test)]
pub(crate) mod testing {
    use crate::model::kinds::{Attribute, Fixed, Kind, Presence, Request, Scope, Type};

    const fn attribute(name: &'static str, ty: Type, presence: Presence, secret: bool) -> Attribute {
        Attribute { name, ty, presence, immutable: false, secret, about: "what it is" }
    }

    pub(crate) static LINK: Kind = Kind {
        name: "link",
        table: "links",
        scope: Scope::Broker,
        identity: &[attribute("name", Type::String, Presence::Required, false)],
        attributes: &[
            attribute("uri", Type::String, Presence::Required, true),
            attribute("prefetch", Type::Integer, Presence::Default(Fixed::Int(1000)), false),
            attribute("ack_mode", Type::OneOf(&["on-confirm", "on-publish", "no-ack"]), Presence::Optional, false),
            attribute("queues", Type::Strings, Presence::Optional, false),
            attribute("delete", Type::Boolean, Presence::Default(Fixed::Bool(false)), false),
            attribute("password", Type::Password, Presence::Optional, true),
        ],
        about: "Moves messages.",
        since: (3, 8),
        plugin: Some("rabbitmq_shovel"),
        definitions: "parameters",
        listing: None,
        portable: true,
        destroy_loses: None,
        read: |_| None,
        write: |_, _| serde_json::Value::Null,
        put: |_, _| Vec::<Request>::new(),
        delete: |_, _| Vec::new(),
        check: None,
        phase: crate::model::kinds::Phase::PutObject,
    };
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::desired::{Desired, load_texts};
    use crate::model::kinds::{KINDS, Name, by_table};
    use crate::model::{ObjectKey, Password, Value};

    fn load(files: &[(&str, &str)]) -> Desired {
        let files = files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect();
        load_texts(Path::new("."), files)
    }

    /// Each error as `file:line:column code message`.
    fn errors(d: &Desired) -> Vec<String> {
        (d.diagnostics.iter().filter(|x| x.is_error()))
            .map(|x| format!("{} {} {}", d.sources.position(x.location.as_ref().unwrap()), x.code, x.message))
            .collect()
    }

    fn topic(user: &str, exchange: &str) -> Name {
        Name { kind: by_table("topic_permissions").unwrap(), id: vec![user.into(), exchange.into()] }
    }

    const APP: &str = "[users.app]\npassword_env = \"APP_PASSWORD\"\n";

    #[test]
    fn a_topic_permission_lands_in_each_vhost_of_its_file_and_is_placed() {
        let text = format!(
            "vhosts = [\"a\", \"b\"]\n{APP}[[topic_permissions]]\nuser = \"app\"\nexchange = \"amq.topic\"\nwrite = \"^order\\\\.\"\nread = \".*\"\n"
        );
        let d = load(&[("t.toml", &text)]);
        assert!(errors(&d).is_empty(), "{:?}", errors(&d));
        for v in ["a", "b"] {
            let objects = &d.topology.vhosts[v].objects;
            assert_eq!(objects.len(), 1, "{v}");
            let body = &objects[&topic("app", "amq.topic")];
            assert_eq!(body.get("write"), Some(&Value::String("^order\\.".into())));
            assert_eq!(body.get("read"), Some(&Value::String(".*".into())));
            let key = ObjectKey::Object { vhost: Some(v.into()), name: topic("app", "amq.topic") };
            assert_eq!(d.sources.position(&d.locations.locate(&key, None).unwrap()), "t.toml:4:1");
            assert_eq!(d.sources.position(&d.locations.locate(&key, Some("write")).unwrap()), "t.toml:7:9");
        }
        let broker_wide = d.topology.objects.keys().filter(|n| n.kind != &crate::model::kinds::users::KIND);
        assert_eq!(broker_wide.count(), 0, "vhost-scoped objects are not broker-wide");
    }

    /// Users are a kind of `KINDS`, read by their own parser and kept as
    /// the broker-wide objects of their kind; a `password` key is still
    /// the old parser's `plaintext-password`.
    #[test]
    fn users_are_read_apart_and_kept_as_objects() {
        let users = by_table("users").unwrap();
        assert!(super::read_apart(users) && super::documented_apart(users));
        let d = load(&[("t.toml", &format!("vhosts = [\"/\"]\n{APP}tags = [\"management\"]\n"))]);
        assert!(errors(&d).is_empty(), "{:?}", errors(&d));
        assert_eq!(d.topology.user_names().collect::<Vec<_>>(), ["app"]);
        assert_eq!(d.topology.objects.keys().map(|n| n.kind).collect::<Vec<_>>(), [users]);
        let app = d.topology.user("app").unwrap();
        assert_eq!((app.password, app.tags), (Password::Env("APP_PASSWORD".into()), ["management".to_string()].into()));
        let plain = load(&[("t.toml", "vhosts = [\"/\"]\n[users.app]\npassword = \"s3cret\"\n")]);
        let codes: Vec<&str> = plain.diagnostics.iter().map(|x| x.code).collect();
        assert!(codes.contains(&"plaintext-password"), "{codes:?}");
    }

    /// Permissions are a kind of `KINDS`, read by their own parser: its
    /// diagnostics name them as `permissions of "app"`, as before.
    #[test]
    fn permissions_are_read_apart() {
        let permissions = by_table("permissions").unwrap();
        assert!(super::read_apart(permissions) && super::documented_apart(permissions));
        let text = format!("vhosts = [\"/\"]\n{APP}[permissions.app]\nconfigure = \"^$\"\nwrite = \"^$\"\n");
        let d = load(&[("t.toml", &text)]);
        let [e] = <[String; 1]>::try_from(errors(&d)).unwrap();
        assert!(e.contains("missing-key") && e.contains("permissions of \"app\""), "{e}");
    }

    #[test]
    fn every_kind_table_is_a_top_level_key() {
        for k in KINDS {
            assert!(super::super::parse::TOP_KEYS.contains(&k.table), "{}", k.table);
            assert!(super::super::parse::OVERLAY_KEYS.contains(&k.table), "{}", k.table);
        }
    }

    #[test]
    fn mistakes_are_each_said_at_their_place() {
        let text = format!(
            "vhosts = [\"/\"]\n{APP}[[topic_permissions]]\nuser = \"\"\nexchange = \"amq.topic\"\nwrite = true\nread = \"^$\"\n[[topic_permissions]]\nuser = \"app\"\nwrite = \"^$\"\nread = \"^$\"\n[[topic_permissions]]\nuser = \"app\"\nexchange = \"x\"\nwrite = \"^$\"\nread = \"^$\"\n[[topic_permissions]]\nuser = \"app\"\nexchange = \"x\"\nwrite = \"^$\"\nread = \"^$\"\n"
        );
        let d = load(&[("t.toml", &text)]);
        assert_eq!(
            errors(&d),
            [
                "t.toml:5:8 bad-value the `user` of a topic permission cannot be empty",
                "t.toml:7:9 wrong-type `write` of topic permission (user \"\", exchange \"amq.topic\") must be a string, not a boolean",
                "t.toml:9:1 missing-key a topic permission has no `exchange`",
                "t.toml:18:1 duplicate topic permission (user \"app\", exchange \"x\") in vhost \"/\" is declared twice",
            ]
        );
        assert_eq!(d.topology.vhosts["/"].objects.len(), 1);
        let d = load(&[("t.toml", "vhosts = [\"/\"]\n[topic_permissions]\nuser = \"app\"\n")]);
        assert_eq!(
            errors(&d),
            [
                "t.toml:2:1 wrong-type `topic_permissions` must be an array of tables, written [[topic_permissions]], not a table"
            ]
        );
    }

    /// A file's objects of the test kind `links`, with its errors.
    fn links(text: &str) -> (Vec<super::super::decl::Decl<super::super::decl::ObjectDecl>>, Vec<String>) {
        use super::super::parse::{Parser, document};
        use super::super::reader::{Fields, Reader};
        let mut found = Vec::new();
        let mut r = Reader { file: crate::source::FileId(0), diagnostics: &mut found };
        let whole = document(&mut r, text).unwrap();
        let top = Fields::new(&mut r, &whole, "the file", &["links"]).unwrap();
        let mut p = Parser { r };
        let mut out = Vec::new();
        for (node, name) in p.entries(&top, &super::testing::LINK) {
            out.extend(p.object(&super::testing::LINK, name, node, None));
        }
        let mut sources = crate::source::Sources::default();
        sources.add(Path::new("t.toml"), text.to_string());
        let said = found
            .iter()
            .map(|x| format!("{} {} {}", sources.position(x.location.as_ref().unwrap()), x.code, x.message))
            .collect();
        (out, said)
    }

    #[test]
    fn a_kind_named_by_one_attribute_is_a_table_of_named_tables_checked_by_type() {
        let (objects, said) = links(
            "[links.a]\nuri = \"amqp://\"\nack_mode = \"on-confrim\"\nqueues = [\"q\", 1]\n[links.b]\nuri = \"amqp://\"\nprefetch = 5.0\nqueues = [\"q\"]\ndelete = true\n[links.c]\nprefetch = \"5\"\nurl = \"x\"\n",
        );
        assert_eq!(
            said,
            [
                "t.toml:3:12 bad-value \"on-confrim\" is not a valid `ack_mode` of link \"a\"",
                "t.toml:4:16 wrong-type each item of `queues` of link \"a\" must be a string, not an integer",
                "t.toml:12:1 unknown-key unknown key `url` in link \"c\"",
                "t.toml:10:8 missing-key link \"c\" has no `uri`",
                "t.toml:11:12 wrong-type `prefetch` of link \"c\" must be an integer, not a string",
            ]
        );
        let [b] = objects.as_slice() else { panic!("{objects:?}") };
        assert_eq!(b.value.name.id, ["b"]);
        let body: Vec<(&str, &Value)> = b.value.body.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let q = Value::List(vec![Value::String("q".into())]);
        assert_eq!(
            body,
            [
                ("delete", &Value::Bool(true)),
                ("prefetch", &Value::Int(5)),
                ("queues", &q),
                ("uri", &Value::String("amqp://".into()))
            ]
        );
        let (objects, _) = links("[links.d]\nuri = \"amqp://\"\n");
        let body = &objects[0].value.body;
        assert_eq!((body.get("prefetch"), body.get("delete")), (Some(&Value::Int(1000)), Some(&Value::Bool(false))));
        assert_eq!(body.get("ack_mode"), None, "an optional attribute left out is not set");
    }

    #[test]
    fn a_password_is_read_from_its_file_keys_and_a_finding_placed_at_the_key_that_gave_it() {
        let password = |text: &str| {
            let (objects, said) = links(&format!("[links.a]\nuri = \"amqp://\"\n{text}"));
            (objects.first().and_then(|o| o.value.body.get("password").cloned()), said)
        };
        let table = |pairs: &[(&str, &str)]| {
            Value::Table(pairs.iter().map(|(k, v)| (k.to_string(), Value::String(v.to_string()))).collect())
        };
        assert_eq!(password(""), (None, vec![]));
        assert_eq!(password("password_env = \"LINK_PASSWORD\"\n"), (Some(table(&[("env", "LINK_PASSWORD")])), vec![]));
        assert_eq!(password("password_hash = \"aGFzaA==\"\n"), (Some(table(&[("hash", "aGFzaA==")])), vec![]));
        let md5 = "password_hash = \"aGFzaA==\"\nhashing_algorithm = \"rabbit_password_hashing_md5\"\n";
        assert_eq!(
            password(md5),
            (Some(table(&[("hash", "aGFzaA=="), ("algorithm", "rabbit_password_hashing_md5")])), vec![])
        );
        let (_, said) = password("password_env = \"A\"\npassword_hash = \"aGFzaA==\"\n");
        assert_eq!(said, ["t.toml:4:17 bad-value link \"a\" has both `password_env` and `password_hash`"]);
        let (_, said) = password("hashing_algorithm = \"rabbit_password_hashing_md5\"\n");
        assert_eq!(said, ["t.toml:3:21 bad-value link \"a\" has `hashing_algorithm` without `password_hash`"]);
        let (_, said) = password("password_env = \"LINK-PASSWORD\"\n");
        assert_eq!(said, ["t.toml:3:16 bad-value \"LINK-PASSWORD\" is not an environment variable name"]);
        let (_, said) = password("password_env = 1\n");
        assert_eq!(said, ["t.toml:3:16 wrong-type `password_env` of link \"a\" must be a string, not an integer"]);
        assert!(super::keys(&super::testing::LINK).ends_with(&[
            "password_env",
            "password_hash",
            "hashing_algorithm",
            "lint_allow"
        ]));
    }

    #[test]
    fn a_kind_s_password_finding_is_placed_at_the_key_that_gave_it() {
        use super::super::parse::{Parser, document};
        use super::super::reader::{Fields, Reader};
        // The users' kind's check: a variable that is no name, a hash that is not base64.
        let kind = &crate::model::kinds::users::KIND;
        for (text, at, redacted) in [
            ("[users.a]\npassword_env = \"A-B\"\n", "t.toml:2:16", false),
            ("[users.a]\ntags = []\npassword_hash = \"not base64!\"\n", "t.toml:3:17", true),
        ] {
            let mut found = Vec::new();
            let mut r = Reader { file: crate::source::FileId(0), diagnostics: &mut found };
            let whole = document(&mut r, text).unwrap();
            let top = Fields::new(&mut r, &whole, "the file", &["users"]).unwrap();
            let mut p = Parser { r };
            let entries = p.entries(&top, kind);
            let objects: Vec<_> =
                entries.into_iter().filter_map(|(node, name)| p.object(kind, name, node, None)).collect();
            assert!(objects.is_empty(), "{text}");
            let mut sources = crate::source::Sources::default();
            sources.add(Path::new("t.toml"), text.to_string());
            let [d] = found.as_slice() else { panic!("{found:?}") };
            assert_eq!(sources.position(d.location.as_ref().unwrap()), at, "{text}");
            assert_eq!(d.redact, redacted, "{text}");
        }
    }

    #[test]
    fn a_broker_wide_object_is_the_topology_s_and_a_second_one_a_duplicate() {
        use super::super::decl::{Decl, ObjectDecl};
        use super::super::parse::parse_file;
        let name = Name { kind: &super::testing::LINK, id: vec!["orders".into()] };
        let mut sources = crate::source::Sources::default();
        let mut found = Vec::new();
        let mut decls = Vec::new();
        for (file, text) in [("a.toml", "[users.a]\n"), ("b.toml", "vhosts = [\"v\"]\n[users.b]\n")] {
            let id = sources.add(Path::new(file), text.to_string());
            let mut decl = parse_file(id, text, &mut found).unwrap();
            let at = crate::source::Location { file: id, span: 0..1 };
            let value = ObjectDecl { name: name.clone(), body: crate::model::Table::new() };
            decl.objects.push(Decl { value, at, fields: Default::default() });
            decls.push(decl);
        }
        assert!(found.is_empty(), "{found:?}");
        let (topology, locations) = super::super::merge::merge(decls, &sources, &mut found);
        assert!(topology.objects.contains_key(&name));
        assert!(topology.vhosts["v"].objects.is_empty());
        let key = ObjectKey::Object { vhost: None, name };
        assert_eq!(sources.position(&locations.locate(&key, None).unwrap()), "a.toml:1:1");
        let said: Vec<String> = found.iter().map(|d| format!("{} {}", d.code, d.message)).collect();
        assert_eq!(said, ["duplicate link \"orders\" is declared twice"]);
    }

    #[test]
    fn a_kind_s_docs_say_its_form_types_defaults_secrets_and_plugin() {
        let section = super::section(&super::testing::LINK);
        for said in [
            "### `links`",
            "`[links.NAME]` declares the link NAME",
            "broker-wide",
            "`rabbitmq_shovel` plugin",
            "| `NAME`, the table's name | string | none: required |",
            "| `uri` | string | none: required | what it is | secret:",
            "| `prefetch` | integer | `1000` |",
            "| `ack_mode` | one of \"on-confirm\", \"on-publish\", \"no-ack\" | none: optional |",
            "| `queues` | array of strings |",
        ] {
            assert!(section.contains(said), "{said}:\n{section}");
        }
    }
}
