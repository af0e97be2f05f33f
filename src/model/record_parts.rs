//! A broker-wide record too large for one global parameter, kept in parts.
//!
//! RabbitMQ refuses an HTTP request body above its limit
//! (`management.http.max_body_size`: 10 MB on Debian's 3.10.8 and on
//! 4.x), and the broker's cost of taking a parameter grows with the JSON
//! terms it holds. The inventory of 100,000 queues and 200,000 bindings is
//! about 16 MB of JSON: too large for one request. A record whose JSON
//! text is longer than [`PART_BYTES`] is therefore written as parts, each
//! holding a piece of that text as one string (which the broker takes as
//! one binary, not as hundreds of thousands of terms), and the record's
//! own parameter holds an index of them:
//!
//! ```text
//! warren.inventory      {"format": 4, "slot": "a", "parts": 17, "other": 16, "bytes": …, "sha256": …}
//! warren.inventory.a.1  {"format": 4, "part": 1, "text": "{\"format\":3,\"projects\":…"}
//! …
//! warren.inventory.a.17
//! ```
//!
//! The text, joined, is the record as a record of [`RECORD_FORMAT`] is
//! written whole; a smaller record is still written whole, as before, so a
//! warren of the earlier format reads it. Format [`SPLIT_FORMAT`] is the
//! index's: a warren that reads only format 3 refuses it with its own
//! message ("written in record format 4").
//!
//! Two slots, `a` and `b`: a write puts its parts in the slot the index
//! does not name, then the index, so a reader that took the old index still
//! finds the old parts; the slot written deletes its parts beyond the new
//! count (`other` says how many the other slot holds, for the next write).
//! Each global parameter's name becomes an Erlang atom on the broker, which
//! is never freed: the names are fixed, at most twice the largest count of
//! parts. A reader checks the joined text's length and SHA-256 against the
//! index, so a read that met two writes at once is refused, never misread.
//!
//! A record inside a vhost (`records`) is an exchange whose argument holds
//! it, and each write is a generation of its own, since an argument cannot
//! change in place: the same pieces go into exchanges named after the
//! generation, and the record's exchange, declared last, holds the index
//! without a slot:
//!
//! ```text
//! warren.records.team.7         {"format": 4, "parts": 3, "bytes": …, "sha256": …}
//! warren.records.team.7.part-1  {"format": 4, "part": 1, "text": "{\"format\":3,…"}
//! …
//! warren.records.team.7.part-3
//! ```
//!
//! No slots there: an exchange's name is a binary on the broker, not an
//! atom, so names may be new on every write, as the generations already
//! are. `part-` keeps a part's name from ever being a record's
//! (`warren.records.<project>.<digits>`, with dots in project names): the
//! part 1 of project `p`'s generation 3 is `warren.records.p.3.part-1`, and
//! project `p.3`'s generation 1 is `warren.records.p.3.1`.

use serde_json::{Value as Json, json};

use super::record_format::{RECORD_FORMAT, RecordError};

/// The format of a split record's index and parts.
pub const SPLIT_FORMAT: u64 = 4;

/// The longest JSON text kept whole in one parameter, and the longest
/// piece of text in one part (a tenth of RabbitMQ's default body limit,
/// with room for the escaping of the text's quotes).
pub const PART_BYTES: usize = 1_000_000;

/// Where a split record's parts are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitIndex {
    /// `a` or `b` for a broker-wide record; `None` for a record exchange's,
    /// whose parts are named after its generation.
    pub slot: Option<char>,
    /// Parts 1 to `parts` of `slot` hold the record.
    pub parts: usize,
    /// Parts 1 to `other` of the other slot are left from the write before.
    pub other: usize,
    pub bytes: usize,
    pub sha256: String,
}

impl SplitIndex {
    /// The index a broker-wide record's parameter holds, when it is one;
    /// `None` for a record kept whole.
    pub fn of(value: &Json) -> Option<Result<SplitIndex, RecordError>> {
        SplitIndex::read(value, true)
    }

    /// The index a record exchange's argument holds (inside a vhost), when
    /// it is one; `None` for a record kept whole.
    pub fn of_exchange(value: &Json) -> Option<Result<SplitIndex, RecordError>> {
        SplitIndex::read(value, false)
    }

    fn read(value: &Json, slotted: bool) -> Option<Result<SplitIndex, RecordError>> {
        if value.get("format").and_then(Json::as_u64) != Some(SPLIT_FORMAT) {
            return None;
        }
        let count = |key: &str| value[key].as_u64().map(|n| n as usize).ok_or(format!("its index has no \"{key}\""));
        let read = || -> Result<SplitIndex, String> {
            let (slot, other) = match (slotted, value.get("slot").map(Json::as_str)) {
                (false, None) => (None, 0),
                (false, Some(_)) => return Err("its index names a slot, which a record exchange's does not".into()),
                (true, Some(Some("a"))) => (Some('a'), count("other")?),
                (true, Some(Some("b"))) => (Some('b'), count("other")?),
                (true, other) => {
                    let other = other.flatten();
                    return Err(format!("its index names slot {other:?}, not \"a\" or \"b\""));
                }
            };
            let sha256 = value["sha256"].as_str().ok_or("its index has no \"sha256\"")?.to_string();
            Ok(SplitIndex { slot, parts: count("parts")?, other, bytes: count("bytes")?, sha256 })
        };
        Some(read().map_err(RecordError::Malformed))
    }

    fn to_json(&self) -> Json {
        let mut out =
            json!({ "format": SPLIT_FORMAT, "parts": self.parts, "bytes": self.bytes, "sha256": self.sha256 });
        if let Some(slot) = self.slot {
            out["slot"] = json!(slot.to_string());
            out["other"] = json!(self.other);
        }
        out
    }

    fn other_slot(&self) -> char {
        if self.slot == Some('a') { 'b' } else { 'a' }
    }

    /// The name of part `i` (from 1) of the record `record` this indexes.
    pub fn part_name(&self, record: &str, i: usize) -> String {
        match self.slot {
            Some(slot) => part_name(record, slot, i),
            None => exchange_part_name(record, i),
        }
    }
}

/// The name of part `i` (from 1) of the broker-wide record `record` in `slot`.
pub fn part_name(record: &str, slot: char, i: usize) -> String {
    format!("{record}.{slot}.{i}")
}

/// The name of part `i` (from 1) of the record exchange `record`.
pub fn exchange_part_name(record: &str, i: usize) -> String {
    format!("{record}.part-{i}")
}

/// The record exchange whose part `name` is, and the part's number; `None`
/// for any other name.
pub fn exchange_part_of(name: &str) -> Option<(&str, usize)> {
    let (record, i) = name.rsplit_once(".part-")?;
    let valid = !record.is_empty() && !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit());
    i.parse().ok().filter(|_| valid).map(|i| (record, i))
}

/// Whether `name` is a part of `record`.
pub fn is_part_of(record: &str, name: &str) -> bool {
    part_slot(record, name).is_some()
}

/// The slot of `name` when it is a part of the broker-wide `record`.
pub fn part_slot(record: &str, name: &str) -> Option<char> {
    let rest = name.strip_prefix(record)?.strip_prefix('.')?;
    match rest.split_once('.')? {
        (slot @ ("a" | "b"), n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => slot.chars().next(),
        _ => None,
    }
}

/// The requests that store a record: parameters to put, in order (the
/// parts, then the record's own parameter last), then parameters to
/// delete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub puts: Vec<(String, Json)>,
    pub deletes: Vec<String>,
    /// The index the record's parameter holds after, `None` when whole.
    pub index: Option<SplitIndex>,
}

/// How to store `value` as the record `name`, which is now split as
/// `now` says (`None`: whole, or absent).
pub fn layout(name: &str, value: &Json, now: Option<&SplitIndex>) -> Layout {
    let text = value.to_string();
    if text.len() <= PART_BYTES {
        // Whole, as before: the parts of both slots go after it.
        let deletes = now
            .map(|n| {
                let parts = (1..=n.parts).map(|i| n.part_name(name, i));
                parts.chain((1..=n.other).map(|i| part_name(name, n.other_slot(), i))).collect()
            })
            .unwrap_or_default();
        return Layout { puts: vec![(name.to_string(), value.clone())], deletes, index: None };
    }
    let slot = now.map_or('a', SplitIndex::other_slot);
    let (puts, index) = split(name, &text, Some(slot), now.map_or(0, |n| n.parts));
    // What the slot written held before, beyond the new count.
    let held = now.map_or(0, |n| n.other);
    let deletes = (index.parts + 1..=held).map(|i| part_name(name, slot, i)).collect();
    Layout { puts, deletes, index: Some(index) }
}

/// How to store `value` as the record exchange `name`, a generation
/// written once (inside a vhost): the exchanges to declare, in order. One,
/// `name` holding `value`, as before, when its JSON text is at most
/// [`PART_BYTES`]; else the parts, then `name` holding their index, last.
pub fn exchange_layout(name: &str, value: &Json) -> Vec<(String, Json)> {
    let text = value.to_string();
    if text.len() <= PART_BYTES {
        return vec![(name.to_string(), value.clone())];
    }
    split(name, &text, None, 0).0
}

/// How many part exchanges [`exchange_layout`] makes of `value`: none when
/// it is kept whole.
pub fn exchange_parts(value: &Json) -> usize {
    let text = value.to_string();
    if text.len() <= PART_BYTES { 0 } else { chunks(&text).len() }
}

/// `text`, the record `name`'s, as parts in `slot` (`None`: a record
/// exchange's) and their index, which comes last.
fn split(name: &str, text: &str, slot: Option<char>, other: usize) -> (Vec<(String, Json)>, SplitIndex) {
    let chunks = chunks(text);
    let index = SplitIndex { slot, parts: chunks.len(), other, bytes: text.len(), sha256: sha256(text.as_bytes()) };
    let mut puts: Vec<(String, Json)> = chunks
        .iter()
        .enumerate()
        .map(|(i, chunk)| {
            (index.part_name(name, i + 1), json!({ "format": SPLIT_FORMAT, "part": i + 1, "text": chunk }))
        })
        .collect();
    puts.push((name.to_string(), index.to_json()));
    (puts, index)
}

/// The record `name` whose parameter (or exchange) holds the index
/// `index`, from its parts (`part` finds a part's value by name).
pub fn join<'a>(name: &str, index: &SplitIndex, part: impl Fn(&str) -> Option<&'a Json>) -> Result<Json, RecordError> {
    let text = joined_text(name, index, part)?;
    let value: Json = serde_json::from_str(&text)
        .map_err(|e| RecordError::Malformed(format!("its parts joined are not JSON: {e}")))?;
    // The parts hold a record of the format kept whole.
    if value.get("format").and_then(Json::as_u64) != Some(RECORD_FORMAT) {
        return Err(RecordError::Malformed(format!("its parts joined are not a record of format {RECORD_FORMAT}")));
    }
    Ok(value)
}

/// The text of the record [`join`] reads, its parts checked against the
/// index but not parsed: an inventory is read from it with no JSON tree.
pub fn joined_text<'a>(
    name: &str,
    index: &SplitIndex,
    part: impl Fn(&str) -> Option<&'a Json>,
) -> Result<String, RecordError> {
    let mut text = String::with_capacity(index.bytes);
    for i in 1..=index.parts {
        let p = index.part_name(name, i);
        let value =
            part(&p).ok_or_else(|| format!("its part \"{p}\" is missing (written while it was read? run again)"))?;
        let piece = match (value["format"].as_u64(), value["part"].as_u64(), value["text"].as_str()) {
            (Some(SPLIT_FORMAT), Some(n), Some(piece)) if n as usize == i => piece,
            _ => {
                return Err(RecordError::Malformed(format!(
                    "its part \"{p}\" is not a part {i} of format {SPLIT_FORMAT}"
                )));
            }
        };
        text.push_str(piece);
    }
    if text.len() != index.bytes || sha256(text.as_bytes()) != index.sha256 {
        return Err(RecordError::Malformed(
            "its parts do not add up to what its index says (written while it was read? run again)".into(),
        ));
    }
    Ok(text)
}

/// `text` cut into pieces of at most [`PART_BYTES`], at character boundaries.
fn chunks(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = PART_BYTES.min(rest.len());
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (piece, tail) = rest.split_at(end);
        out.push(piece);
        rest = tail;
    }
    out
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::record_kind::RecordKind;
    use super::*;

    /// A record of `n` bytes or more of JSON text, with characters of
    /// several bytes so that pieces end at character boundaries.
    fn record(n: usize) -> Json {
        let names: Vec<String> = (0..n / 20 + 1).map(|i| format!("q.é€{i:08}")).collect();
        json!({ "format": RECORD_FORMAT, "projects": { "p": { "queues": names } } })
    }

    /// The broker's parameters after `layout` is carried out on `params`.
    fn carry(params: &mut BTreeMap<String, Json>, l: &Layout) {
        for (name, value) in &l.puts {
            params.insert(name.clone(), value.clone());
        }
        for name in &l.deletes {
            params.remove(name);
        }
    }

    fn read(params: &BTreeMap<String, Json>) -> Json {
        let value = &params["warren.inventory"];
        match SplitIndex::of(value) {
            None => value.clone(),
            Some(index) => join("warren.inventory", &index.unwrap(), |p| params.get(p)).unwrap(),
        }
    }

    #[test]
    fn a_small_record_stays_whole_as_before() {
        let value = record(1_000);
        let l = layout("warren.inventory", &value, None);
        assert_eq!(l.puts, vec![("warren.inventory".to_string(), value)]);
        assert!(l.deletes.is_empty() && l.index.is_none());
    }

    #[test]
    fn a_large_record_is_split_and_joined_back_across_writes_of_every_size() {
        let mut params = BTreeMap::new();
        let mut now: Option<SplitIndex> = None;
        // Large, larger, smaller, small again, large again.
        for size in [2_500_000, 4_200_000, 1_300_000, 10_000, 3_100_000] {
            let value = record(size);
            let l = layout("warren.inventory", &value, now.as_ref());
            let before = params.clone();
            carry(&mut params, &l);
            assert_eq!(read(&params), value, "{size} bytes");
            if let Some(index) = &l.index {
                assert!(l.puts.iter().all(|(_, v)| v.to_string().len() < 2 * PART_BYTES));
                // A reader of the index before still finds its parts.
                if let Some(old) = now.as_ref().filter(|_| before.contains_key("warren.inventory")) {
                    let joined = join("warren.inventory", old, |p| params.get(p)).unwrap();
                    assert_eq!(joined, read(&before));
                }
                assert_ne!(index.slot, now.as_ref().and_then(|n| n.slot));
            }
            now = l.index.clone();
            // Nothing is left beyond what the index and the slot before hold.
            let held = now.as_ref().map_or(0, |n| n.parts + n.other);
            assert_eq!(params.len(), 1 + held, "{size} bytes: {:?}", params.keys().collect::<Vec<_>>());
            assert!(params.keys().filter(|k| *k != "warren.inventory").all(|k| is_part_of("warren.inventory", k)));
        }
    }

    #[test]
    fn a_torn_or_foreign_read_is_refused() {
        let value = record(2_500_000);
        let l = layout("warren.inventory", &value, None);
        let mut params = BTreeMap::new();
        carry(&mut params, &l);
        let index = l.index.unwrap();
        let mut torn = params.clone();
        torn.insert("warren.inventory.a.2".into(), params["warren.inventory.a.1"].clone());
        let e = join("warren.inventory", &index, |p| torn.get(p)).unwrap_err().to_string();
        assert!(e.contains("not a part 2"), "{e}");
        torn.insert("warren.inventory.a.2".into(), json!({"format": 4, "part": 2, "text": "x"}));
        let e = join("warren.inventory", &index, |p| torn.get(p)).unwrap_err().to_string();
        assert!(e.contains("do not add up"), "{e}");
        torn.remove("warren.inventory.a.3");
        let e = join("warren.inventory", &index, |p| torn.get(p)).unwrap_err().to_string();
        assert!(e.contains("\"warren.inventory.a.3\" is missing"), "{e}");
        let bad = SplitIndex::of(&json!({"format": 4, "slot": "c"})).unwrap().unwrap_err();
        assert!(bad.to_string().contains("slot Some(\"c\")"), "{bad}");
        assert!(SplitIndex::of(&json!({"format": 3, "projects": {}})).is_none());
    }

    #[test]
    fn a_record_exchange_is_whole_when_small_and_else_in_parts_named_after_its_generation() {
        let small = record(1_000);
        assert_eq!(
            exchange_layout("warren.records.p.3", &small),
            vec![("warren.records.p.3".to_string(), small.clone())]
        );
        assert_eq!(exchange_parts(&small), 0);

        let value = record(2_500_000);
        let puts = exchange_layout("warren.records.p.3", &value);
        let ((name, index_json), parts) = puts.split_last().unwrap();
        assert_eq!(name, "warren.records.p.3", "the index is declared last");
        let index = SplitIndex::of_exchange(index_json).unwrap().unwrap();
        assert_eq!((index.slot, index.parts, index.other), (None, parts.len(), 0));
        assert!(parts.len() >= 3 && exchange_parts(&value) == parts.len());
        assert!(index_json.get("slot").is_none() && index_json.get("other").is_none(), "{index_json}");
        for (i, (part, v)) in parts.iter().enumerate() {
            assert_eq!(*part, format!("warren.records.p.3.part-{}", i + 1));
            assert_eq!(exchange_part_of(part), Some(("warren.records.p.3", i + 1)));
            assert_eq!(RecordKind::parse(part), None, "a part is never taken for a record");
            assert!(v.to_string().len() < 2 * PART_BYTES);
        }
        let exchanges: BTreeMap<String, Json> = puts.iter().cloned().collect();
        assert_eq!(join("warren.records.p.3", &index, |p| exchanges.get(p)).unwrap(), value);

        // Torn: a part of another generation in its place, or one missing.
        let mut torn = exchanges.clone();
        let third = exchange_layout("warren.records.p.2", &json!({ "format": RECORD_FORMAT, "v": record(2_600_000) }));
        torn.insert("warren.records.p.3.part-2".into(), third[1].1.clone());
        let e = join("warren.records.p.3", &index, |p| torn.get(p)).err().unwrap().to_string();
        assert!(e.contains("do not add up"), "{e}");
        torn.remove("warren.records.p.3.part-1");
        let e = join("warren.records.p.3", &index, |p| torn.get(p)).err().unwrap().to_string();
        assert!(e.contains("\"warren.records.p.3.part-1\" is missing"), "{e}");

        // Each place reads only its own kind of index.
        let e = SplitIndex::of(index_json).unwrap().unwrap_err().to_string();
        assert!(e.contains("names slot None"), "{e}");
        let broker_wide = layout("warren.inventory", &value, None).index.unwrap().to_json();
        let e = SplitIndex::of_exchange(&broker_wide).unwrap().unwrap_err().to_string();
        assert!(e.contains("names a slot"), "{e}");
        assert!(SplitIndex::of_exchange(&small).is_none());
    }

    #[test]
    fn a_record_exchanges_parts_are_never_another_records_names() {
        // Project names hold dots: project "p"'s generation 3, part 1, and
        // project "p.3"'s generation 1 are two names.
        let part = exchange_part_name(&RecordKind::Inventory.exchange("p", 3), 1);
        assert_ne!(part, RecordKind::Inventory.exchange("p.3", 1));
        assert_eq!(exchange_part_of(&part), Some(("warren.records.p.3", 1)));
        let dotted = exchange_part_name(&RecordKind::Inventory.exchange("x.part-2", 5), 12);
        assert_eq!(exchange_part_of(&dotted), Some(("warren.records.x.part-2.5", 12)));
        assert_eq!(RecordKind::parse("warren.records.x.part-2.5"), Some((RecordKind::Inventory, "x.part-2", 5)));
        for other in
            ["warren.records.p.3", "warren.records.p.3.part-", "warren.records.p.3.part-x", ".part-1", "orders"]
        {
            assert_eq!(exchange_part_of(other), None, "{other}");
        }
    }

    #[test]
    fn parts_are_told_apart_from_other_parameters() {
        assert!(is_part_of("warren.inventory", "warren.inventory.a.1"));
        assert!(is_part_of("warren.inventory", "warren.inventory.b.17"));
        for other in [
            "warren.inventory",
            "warren.inventory.c.1",
            "warren.inventory.a.",
            "warren.inventory.a.x",
            "warren.journal.a.1",
        ] {
            assert!(!is_part_of("warren.inventory", other), "{other}");
        }
    }
}
