//! `[super_streams.NAME]`: one partitioned stream, read into the exchange,
//! streams and bindings RabbitMQ makes of it (`model::SuperStream`), each
//! placed at the super stream's name so that diagnostics and plans point
//! there.

use std::ops::Range;

use super::decl::{Decl, FileDecl, QueueDecl};
use super::parse::Parser;
use super::reader::{Fields, What};
use super::tree::{Item, Node};
use crate::diagnostic::Diagnostic;
use crate::model::{Partitions, QueueType, SuperStream, argument_rule};
use crate::source::FieldLocations;

pub(super) const SUPER_STREAM_KEYS: &[&str] = &["partitions", "binding_keys", "arguments"];

impl Parser<'_> {
    /// Each super stream of the file, expanded into `decl`'s exchanges,
    /// queues and bindings; a super stream with errors is still declared
    /// (as its exchange and queues that failed) so that nothing else
    /// reports its names as unknown.
    pub(super) fn super_streams(&mut self, top: &Fields, decl: &mut FileDecl) {
        for (name, node, at) in self.named(top, "super_streams") {
            match self.super_stream(name, node, at.clone(), None) {
                Some((ss, fields)) => {
                    let expanded = ss.expand();
                    let at = self.loc(at);
                    let fields = std::sync::Arc::new(fields);
                    let placed = |value| Decl { value, at: at.clone(), fields: fields.clone() };
                    decl.exchanges.push(placed(expanded.exchange));
                    for queue in expanded.queues {
                        let value = QueueDecl { queue, declared_type: Some(QueueType::Stream) };
                        decl.queues.push(Decl { value, at: at.clone(), fields: fields.clone() });
                    }
                    for b in expanded.bindings {
                        decl.bindings.push(Decl { value: b, at: at.clone(), fields: fields.clone() });
                    }
                }
                None => {
                    decl.failed.exchanges.insert(name.to_string());
                }
            }
        }
    }

    /// One super stream, with the places of its fields; `None` (reported)
    /// when it has errors. Over `base` (an overlay's), its partitions are
    /// the base's unless it gives its own, and its arguments merge over the
    /// base's.
    pub(super) fn super_stream(
        &mut self,
        name: &str,
        node: &Node,
        at: Range<usize>,
        base: Option<&SuperStream>,
    ) -> Option<(SuperStream, FieldLocations)> {
        let f = Fields::new(&mut self.r, node, What::named("super stream", name), SUPER_STREAM_KEYS)?;
        let mut ok = self.check_name(name, &at, "super stream", true);
        let fields_at = self.fields_at(&f);
        let partitions = match base {
            Some(b) if f.get("partitions").is_none() && f.get("binding_keys").is_none() => Some(b.partitions.clone()),
            _ => self.partitions(&f, name, &at),
        };
        let arguments = f.values(&mut self.r, "arguments");
        let mut argument_at = FieldLocations::default();
        if let Some(Item::Table(t)) = f.get("arguments").map(|n| &n.item) {
            for (k, v) in t.iter() {
                argument_at.insert(format!("arguments.{}", k.name), self.loc(v.span()));
            }
        }
        let arguments = arguments?;
        for (arg, value) in &arguments {
            let at = argument_at.get(&format!("arguments.{arg}")).unwrap_or_else(|| self.loc(at.clone()));
            let problem = match argument_rule(arg) {
                Some(rule) if rule.types.contains(&QueueType::Stream) => {
                    super::parse::check_expect(rule.expect, value).map(|p| (p, rule.expect.describe()))
                }
                _ if arg == "x-queue-type" => Some(("is always \"stream\" for a super stream's partitions".into(), "left out".into())),
                _ => Some(("is not a stream argument".into(), "one of the stream arguments (x-max-age, x-max-length-bytes, x-stream-max-segment-size-bytes, x-initial-cluster-size, x-queue-leader-locator, x-stream-filter-size-bytes)".into())),
            };
            if let Some((problem, want)) = problem {
                let d = Diagnostic::error("bad-argument", format!("`{arg}` {problem}"))
                    .at(at)
                    .label(format!("must be {want}"))
                    .help("a super stream's arguments are those of its partition streams, as for a stream queue");
                self.r.report(d);
                ok = false;
            }
        }
        let mut fields = fields_at;
        fields.insert(super::merge::SUPER_STREAM_MARK, self.loc(at.clone()));
        for (k, v) in argument_at.iter() {
            fields.insert(k, v);
        }
        let arguments = match base {
            Some(b) => b.arguments.iter().map(|(k, v)| (k.clone(), v.clone())).chain(arguments).collect(),
            None => arguments,
        };
        let ss = SuperStream { name: name.to_string(), partitions: partitions?, arguments };
        ok &= self.partition_names(&ss, &at);
        ok.then_some((ss, fields))
    }

    /// Exactly one of `partitions = N` and `binding_keys = [...]`.
    fn partitions(&mut self, f: &Fields, name: &str, at: &Range<usize>) -> Option<Partitions> {
        match (f.get("partitions"), f.get("binding_keys")) {
            (Some(_), Some(_)) => {
                let d = Diagnostic::error(
                    "bad-value",
                    format!("super stream \"{name}\" has both `partitions` and `binding_keys`"),
                )
                .at(self.loc(f.span("binding_keys")?))
                .help("keep one: `partitions = 3` names the streams NAME-0, NAME-1…; `binding_keys = [\"eu\", \"us\"]` names them NAME-eu, NAME-us");
                self.r.report(d);
                None
            }
            (None, None) => {
                let d = Diagnostic::error("missing-key", format!("super stream \"{name}\" has no partitions"))
                    .at(self.loc(at.clone()))
                    .help("add `partitions = 3` (streams NAME-0, NAME-1, NAME-2) or `binding_keys = [\"eu\", \"us\"]` (streams NAME-eu, NAME-us)");
                self.r.report(d);
                None
            }
            (Some(_), None) => {
                let n = f.int(&mut self.r, "partitions")?;
                if n < 1 {
                    let d = Diagnostic::error("bad-value", format!("a super stream cannot have {n} partitions"))
                        .at(self.loc(f.span("partitions")?))
                        .help("give at least 1 partition, as RabbitMQ requires");
                    self.r.report(d);
                    return None;
                }
                Some(Partitions::Count(n as usize))
            }
            (None, Some(node)) => {
                let keys = f.strings(&mut self.r, "binding_keys")?;
                if keys.is_empty() {
                    let d = Diagnostic::error("bad-value", "`binding_keys` is empty")
                        .at(self.loc(node.span()))
                        .help("give at least one key, e.g. `binding_keys = [\"eu\", \"us\"]`");
                    self.r.report(d);
                    return None;
                }
                let mut seen: Vec<&str> = Vec::new();
                for (k, span) in &keys {
                    if k.is_empty() || seen.contains(&k.as_str()) {
                        let what = if k.is_empty() { "an empty binding key" } else { "a binding key given twice" };
                        let d = Diagnostic::error("bad-value", format!("super stream \"{name}\" has {what}"))
                            .at(self.loc(span.clone()))
                            .help("each key names one partition stream, NAME-KEY: give each once");
                        self.r.report(d);
                        return None;
                    }
                    seen.push(k);
                }
                Some(Partitions::Keys(keys.into_iter().map(|(k, _)| k).collect()))
            }
        }
    }

    /// The partitions' names must be names RabbitMQ accepts.
    fn partition_names(&mut self, ss: &SuperStream, at: &Range<usize>) -> bool {
        let mut ok = true;
        for key in ss.keys() {
            ok &= self.check_name(&ss.partition(&key), at, "partition stream", false);
        }
        ok
    }
}
