//! Where each declared object is, by its key, each key held as a few
//! bytes rather than as an `ObjectKey`: a large topology's places were
//! mostly keys (a binding's key is five strings and a map), 133 MB of a
//! 340 MB heap at 100,000 queues (docs/development.md, Benchmarks).

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use crate::model::kinds::{KINDS, Name};
use crate::model::{Binding, DestinationKind, ObjectKey, Table, Value};

/// The places of objects (`V`), by key.
#[derive(Debug, Clone)]
pub struct Sites<V>(HashMap<Box<[u8]>, V, rustc_hash::FxBuildHasher>);

impl<V> Default for Sites<V> {
    fn default() -> Self {
        Sites(HashMap::default())
    }
}

impl<V> Sites<V> {
    pub fn get(&self, key: &ObjectKey) -> Option<&V> {
        self.0.get(encode(key).as_slice())
    }

    pub fn insert(&mut self, key: &ObjectKey, site: V) -> Option<V> {
        self.0.insert(encode(key).into_boxed_slice(), site)
    }

    pub fn remove(&mut self, key: &ObjectKey) -> Option<V> {
        self.0.remove(encode(key).as_slice())
    }

    /// Records `site` as `key`'s place unless it has one: then that one.
    pub fn claim(&mut self, key: &ObjectKey, site: V) -> Option<&V> {
        self.claim_encoded(encode(key), site)
    }

    /// [`Sites::claim`] of a binding, without making its key.
    pub fn claim_binding(&mut self, vhost: &str, binding: &Binding, site: V) -> Option<&V> {
        self.claim_encoded(encode_binding(vhost, binding), site)
    }

    fn claim_encoded(&mut self, key: Vec<u8>, site: V) -> Option<&V> {
        match self.0.entry(key.into_boxed_slice()) {
            Entry::Vacant(e) => {
                e.insert(site);
                None
            }
            Entry::Occupied(e) => Some(e.into_mut()),
        }
    }

    /// Takes in the places of `later`, declared after these; returns those
    /// whose object already had one here.
    pub fn join(&mut self, later: Sites<V>) -> Vec<(ObjectKey, V)> {
        let mut repeats = Vec::new();
        for (key, site) in later.0 {
            match self.0.entry(key) {
                Entry::Vacant(e) => _ = e.insert(site),
                Entry::Occupied(e) => repeats.push((decode(e.key()), site)),
            }
        }
        repeats
    }

    pub fn reserve(&mut self, n: usize) {
        self.0.reserve(n);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.len()
    }

    /// Keeps the places whose key `keep` holds true of.
    pub fn retain(&mut self, mut keep: impl FnMut(&ObjectKey) -> bool) {
        self.0.retain(|k, _| keep(&decode(k)));
    }

    /// Each key made anew by `to`.
    pub fn rekey(&mut self, mut to: impl FnMut(ObjectKey) -> ObjectKey) {
        let old = std::mem::take(&mut self.0);
        self.0.reserve(old.len());
        for (k, site) in old {
            self.0.insert(encode(&to(decode(&k))).into_boxed_slice(), site);
        }
    }
}

// An encoded key is a tag, then its parts: a text ends with 0xFF, which
// UTF-8 never holds, so no two keys share an encoding.
const VHOST: u8 = 0;
const EXCHANGE: u8 = 1;
const QUEUE: u8 = 2;
const BINDING: u8 = 3;
const OBJECT: u8 = 4;
const BROKER_OBJECT: u8 = 5;
const END: u8 = 0xFF;

fn encode(key: &ObjectKey) -> Vec<u8> {
    if let ObjectKey::Binding { vhost, binding } = key {
        return encode_binding(vhost, binding);
    }
    let mut out = Vec::with_capacity(64);
    match key {
        ObjectKey::Vhost(v) => {
            out.push(VHOST);
            text(&mut out, v);
        }
        ObjectKey::Exchange { vhost, name } | ObjectKey::Queue { vhost, name } => {
            out.push(if matches!(key, ObjectKey::Exchange { .. }) { EXCHANGE } else { QUEUE });
            text(&mut out, vhost);
            text(&mut out, name);
        }
        ObjectKey::Binding { .. } => unreachable!("encoded above"),
        ObjectKey::Object { vhost, name } => {
            match vhost {
                Some(v) => {
                    out.push(OBJECT);
                    text(&mut out, v);
                }
                None => out.push(BROKER_OBJECT),
            }
            text(&mut out, name.kind.table);
            count(&mut out, name.id.len());
            for part in &name.id {
                text(&mut out, part);
            }
        }
    }
    out
}

fn encode_binding(vhost: &str, b: &Binding) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.push(BINDING);
    text(&mut out, vhost);
    binding_fields(&mut out, b);
    out
}

fn binding_fields(out: &mut Vec<u8>, b: &Binding) {
    text(out, &b.source);
    out.push(matches!(b.destination_kind, DestinationKind::Exchange) as u8);
    text(out, &b.destination);
    text(out, &b.routing_key);
    table(out, &b.arguments);
}

fn text(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    out.push(END);
}

fn count(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&u32::try_from(n).expect("fewer than 2^32 parts").to_le_bytes());
}

fn table(out: &mut Vec<u8>, t: &Table) {
    count(out, t.len());
    for (k, v) in t.iter() {
        text(out, k);
        value(out, v);
    }
}

/// As `Value`'s equality tells values apart: a float by its bits.
fn value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.push(0),
        Value::Bool(b) => out.extend_from_slice(&[1, *b as u8]),
        Value::Int(i) => {
            out.push(2);
            out.extend_from_slice(&i.to_le_bytes());
        }
        Value::Float(f) => {
            out.push(3);
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Value::String(s) => {
            out.push(4);
            text(out, s);
        }
        Value::List(items) => {
            out.push(5);
            count(out, items.len());
            items.iter().for_each(|i| value(out, i));
        }
        Value::Table(t) => {
            out.push(6);
            table(out, t);
        }
    }
}

/// The key `encode` made `bytes` of.
fn decode(bytes: &[u8]) -> ObjectKey {
    let mut r = Reader(bytes);
    let key = match r.byte() {
        VHOST => ObjectKey::Vhost(r.text()),
        EXCHANGE => ObjectKey::Exchange { vhost: r.text(), name: r.text() },
        QUEUE => ObjectKey::Queue { vhost: r.text(), name: r.text() },
        BINDING => {
            let vhost = r.text();
            let source = r.text();
            let destination_kind = if r.byte() == 1 { DestinationKind::Exchange } else { DestinationKind::Queue };
            let (destination, routing_key) = (r.text(), r.text());
            let binding = Binding { source, destination_kind, destination, routing_key, arguments: r.table() };
            ObjectKey::Binding { vhost, binding }
        }
        tag @ (OBJECT | BROKER_OBJECT) => {
            let vhost = (tag == OBJECT).then(|| r.text());
            let table = r.text();
            let kind = KINDS.iter().find(|k| k.table == table).expect("a key's kind is one of KINDS");
            let id = (0..r.count()).map(|_| r.text()).collect();
            ObjectKey::Object { vhost, name: Name { kind, id } }
        }
        tag => unreachable!("no key is encoded with tag {tag}"),
    };
    debug_assert!(r.0.is_empty(), "a key is read to its end");
    key
}

/// Reads what `encode` wrote, which is well formed by construction.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().expect("an encoded key is whole");
        self.0 = rest;
        *b
    }

    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let (head, rest) = self.0.split_at(N);
        self.0 = rest;
        head.try_into().expect("split at N")
    }

    fn count(&mut self) -> usize {
        u32::from_le_bytes(self.bytes()) as usize
    }

    fn text(&mut self) -> String {
        let end = self.0.iter().position(|&b| b == END).expect("a text ends with END");
        let s = std::str::from_utf8(&self.0[..end]).expect("encoded from a str");
        self.0 = &self.0[end + 1..];
        s.to_string()
    }

    fn table(&mut self) -> Table {
        (0..self.count()).map(|_| (self.text(), self.value())).collect()
    }

    fn value(&mut self) -> Value {
        match self.byte() {
            0 => Value::Null,
            1 => Value::Bool(self.byte() == 1),
            2 => Value::Int(i64::from_le_bytes(self.bytes())),
            3 => Value::Float(f64::from_bits(u64::from_le_bytes(self.bytes()))),
            4 => Value::String(self.text()),
            5 => Value::List((0..self.count()).map(|_| self.value()).collect()),
            6 => Value::Table(self.table()),
            tag => unreachable!("no value is encoded with tag {tag}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Vec<ObjectKey> {
        let binding = |rk: &str, arguments: Table| Binding {
            source: "x".into(),
            destination_kind: DestinationKind::Queue,
            destination: "q".into(),
            routing_key: rk.into(),
            arguments,
        };
        let args = |v: Value| Table::from_iter([("x-match".to_string(), v)]);
        let nested = Value::List(vec![Value::Null, Value::Bool(true), Value::Table(args(Value::Int(-1)))]);
        vec![
            ObjectKey::Vhost("/".into()),
            ObjectKey::Vhost("".into()),
            ObjectKey::Exchange { vhost: "/".into(), name: "q".into() },
            ObjectKey::Queue { vhost: "/".into(), name: "q".into() },
            // The parts' ends are kept: "a" + "bc" is not "ab" + "c".
            ObjectKey::Queue { vhost: "a".into(), name: "bc".into() },
            ObjectKey::Queue { vhost: "ab".into(), name: "c".into() },
            ObjectKey::Queue { vhost: "/".into(), name: "ünï ☃".into() },
            ObjectKey::Binding { vhost: "/".into(), binding: binding("k", Table::new()) },
            ObjectKey::Binding {
                vhost: "/".into(),
                binding: Binding { destination_kind: DestinationKind::Exchange, ..binding("k", Table::new()) },
            },
            ObjectKey::Binding { vhost: "/".into(), binding: binding("k", args(Value::String("all".into()))) },
            ObjectKey::Binding { vhost: "/".into(), binding: binding("k", args(Value::Int(1))) },
            ObjectKey::Binding { vhost: "/".into(), binding: binding("k", args(Value::Float(1.0))) },
            ObjectKey::Binding { vhost: "/".into(), binding: binding("k", args(Value::Float(-0.0))) },
            ObjectKey::Binding { vhost: "/".into(), binding: binding("k", args(nested)) },
            crate::model::kinds::users::key("app"),
            crate::model::kinds::permissions::key("/", "app"),
        ]
    }

    #[test]
    fn every_key_reads_back_as_itself_and_no_two_share_an_encoding() {
        let keys = keys();
        for k in &keys {
            assert_eq!(&decode(&encode(k)), k);
        }
        let encoded: std::collections::BTreeSet<Vec<u8>> = keys.iter().map(encode).collect();
        assert_eq!(encoded.len(), keys.len());
    }

    #[test]
    fn a_place_is_claimed_once_and_found_by_its_key() {
        let mut sites = Sites::<usize>::default();
        let keys = keys();
        for (i, k) in keys.iter().enumerate() {
            assert!(sites.claim(k, i).is_none());
        }
        assert_eq!(sites.claim(&keys[3], 99).copied(), Some(3));
        let ObjectKey::Binding { vhost, binding } = &keys[7] else { unreachable!() };
        assert_eq!(sites.claim_binding(vhost, binding, 99).copied(), Some(7));
        assert_eq!(sites.get(&keys[5]).copied(), Some(5));

        let mut later = Sites::default();
        later.insert(&keys[2], 50);
        later.insert(&ObjectKey::Queue { vhost: "/".into(), name: "new".into() }, 51);
        let repeats = sites.join(later);
        assert_eq!(repeats.iter().map(|(k, s)| (k, *s)).collect::<Vec<_>>(), [(&keys[2], 50)]);
        assert_eq!(sites.len(), keys.len() + 1);

        sites.retain(|k| k.vhost() != Some("/"));
        sites.rekey(|k| k.in_vhost("b"));
        assert!(sites.get(&ObjectKey::Queue { vhost: "b".into(), name: "bc".into() }).is_some());
        assert!(sites.get(&ObjectKey::Queue { vhost: "a".into(), name: "bc".into() }).is_none());
        assert!(sites.get(&crate::model::kinds::users::key("app")).is_some(), "a broker-wide object stays");
    }
}
