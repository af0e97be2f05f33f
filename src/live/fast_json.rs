//! A quick reader for the common shape of a definitions export. Queues,
//! exchanges and bindings (nearly all of a large export) are read here
//! straight into their items; every other top-level entry, and any argument
//! table that is not empty, goes to the derived reader as it is. It gives
//! exactly what [`super::definitions`]'s derived reader gives, or `None` for
//! anything else (escapes in strings, a repeated field, a value of the wrong
//! kind, any error): the caller then reads the text with the derived reader,
//! whose messages stay the only ones.

use super::definitions::{BindingDef, Definitions, DestinationType, ExchangeDef, QueueDef};
use crate::model::{Table, Value};

/// Deeper nesting is left to the derived reader and its recursion limit.
const MAX_DEPTH: usize = 64;

/// Bytes a string holds as they are: not its quote, not a backslash, not a
/// control character (which JSON does not allow in a string).
const PLAIN: [bool; 256] = {
    let mut table = [true; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = false;
        b += 1;
    }
    table[b'"' as usize] = false;
    table[b'\\' as usize] = false;
    table
};

/// The length of the run of bytes a string holds as they are, up to its
/// quote, a backslash or a control character.
fn plain_run(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| !PLAIN[b as usize])
}

/// JSON's whitespace.
const SPACE: [bool; 256] = {
    let mut table = [false; 256];
    table[b' ' as usize] = true;
    table[b'\t' as usize] = true;
    table[b'\n' as usize] = true;
    table[b'\r' as usize] = true;
    table
};

/// The export `json`, as the derived reader reads it, or `None`.
pub fn parse(json: &str) -> Option<Definitions> {
    let mut r = Reader { text: json, bytes: json.as_bytes(), pos: 0 };
    let (mut queues, mut exchanges, mut bindings) = (None, None, None);
    // The other entries, as an object of their own for the derived reader.
    let mut rest = String::from("{");
    r.space();
    r.fields(|r, key| match key {
        "queues" => once(&mut queues, r.list(Reader::queue)?),
        "exchanges" => once(&mut exchanges, r.list(Reader::exchange)?),
        "bindings" => once(&mut bindings, r.list(Reader::binding)?),
        _ => {
            let start = r.pos;
            r.skip(0)?;
            if rest.len() > 1 {
                rest.push(',');
            }
            // A key has no escapes (`string` leaves those): quoted, it is as written.
            rest.push_str(&format!("\"{key}\":{}", &json[start..r.pos]));
            Some(())
        }
    })?;
    r.space();
    if r.pos != json.len() {
        return None;
    }
    rest.push('}');
    let mut defs: Definitions = serde_json::from_str(&rest).ok()?;
    defs.queues = queues.unwrap_or_default();
    defs.exchanges = exchanges.unwrap_or_default();
    defs.bindings = bindings.unwrap_or_default();
    Some(defs)
}

/// Sets `slot` to `value`; `None` when it is set already (a field given
/// twice, which the derived reader refuses).
fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    slot.is_none().then(|| *slot = Some(value))
}

struct Reader<'i> {
    text: &'i str,
    bytes: &'i [u8],
    pos: usize,
}

impl<'i> Reader<'i> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek() == Some(byte)).then(|| self.pos += 1)
    }

    fn space(&mut self) {
        while self.peek().is_some_and(|b| SPACE[b as usize]) {
            self.pos += 1;
        }
    }

    fn word(&mut self, word: &str) -> Option<()> {
        self.text[self.pos..].starts_with(word).then(|| self.pos += word.len())
    }

    /// A string without escapes, borrowed.
    fn string(&mut self) -> Option<&'i str> {
        self.eat(b'"')?;
        let start = self.pos;
        let len = plain_run(&self.bytes[start..])?;
        self.pos = start + len;
        self.eat(b'"')?;
        Some(&self.text[start..start + len])
    }

    fn null(&mut self) -> Option<bool> {
        if self.peek() == Some(b'n') {
            self.word("null")?;
            return Some(true);
        }
        Some(false)
    }

    fn optional_string(&mut self) -> Option<Option<String>> {
        Some(if self.null()? { None } else { Some(self.string()?.to_string()) })
    }

    fn optional_bool(&mut self) -> Option<Option<bool>> {
        Some(match self.peek()? {
            b't' => self.word("true").map(|_| Some(true))?,
            b'f' => self.word("false").map(|_| Some(false))?,
            _ => self.word("null").map(|_| None)?,
        })
    }

    /// An argument table. Strings, booleans and integers are read here;
    /// a table with anything else (a float, a list, a repeated key) is
    /// read again by the derived reader, whose numbers and nesting it alone
    /// reads.
    fn arguments(&mut self) -> Option<Table> {
        if self.null()? {
            return Some(Table::new());
        }
        let start = self.pos;
        if let Some(table) = self.plain_table() {
            return Some(table);
        }
        self.pos = start;
        self.skip(0)?;
        serde_json::from_str(&self.text[start..self.pos]).ok()
    }

    fn plain_table(&mut self) -> Option<Table> {
        let mut table = Table::new();
        self.fields(|r, key| {
            let value = match r.peek()? {
                b'"' => Value::String(r.string()?.to_string()),
                b't' => r.word("true").map(|_| Value::Bool(true))?,
                b'f' => r.word("false").map(|_| Value::Bool(false))?,
                _ => Value::Int(r.integer()?),
            };
            table.insert(key.to_string(), value).is_none().then_some(())
        })?;
        Some(table)
    }

    /// An integer that fits in 64 bits, written without a fraction or an
    /// exponent.
    fn integer(&mut self) -> Option<i64> {
        let start = self.pos;
        self.number()?;
        let token = &self.text[start..self.pos];
        // `-0` is a float to the derived reader.
        if token.starts_with("-0") || token.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) {
            return None;
        }
        token.parse().ok()
    }

    /// `[item, …]` or `null`, read by `item`.
    fn list<T>(&mut self, item: fn(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        if self.null()? {
            return Some(Vec::new());
        }
        self.items(item)
    }

    /// `[item, …]`, read by `item`.
    fn items<T>(&mut self, mut item: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        self.eat(b'[')?;
        let mut out = Vec::new();
        self.space();
        if self.eat(b']').is_some() {
            return Some(out);
        }
        loop {
            self.space();
            out.push(item(self)?);
            self.space();
            if self.eat(b',').is_none() {
                self.eat(b']')?;
                return Some(out);
            }
        }
    }

    /// The fields of an object, each given to `field` with its key; `field`
    /// reads the value (or skips it) and says whether the key was new.
    fn fields(&mut self, mut field: impl FnMut(&mut Self, &'i str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        self.space();
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            self.space();
            let key = self.string()?;
            self.space();
            self.eat(b':')?;
            self.space();
            field(self, key)?;
            self.space();
            if self.eat(b',').is_none() {
                return self.eat(b'}');
            }
        }
    }

    fn queue(&mut self) -> Option<QueueDef> {
        let (mut name, mut vhost, mut durable, mut auto_delete, mut arguments, mut kind) =
            (None, None, None, None, None, None);
        self.fields(|r, key| match key {
            "name" => once(&mut name, r.string()?.to_string()),
            "vhost" => once(&mut vhost, r.optional_string()?),
            "durable" => once(&mut durable, r.optional_bool()?),
            "auto_delete" => once(&mut auto_delete, r.optional_bool()?),
            "arguments" => once(&mut arguments, r.arguments()?),
            "type" => once(&mut kind, r.optional_string()?),
            _ => r.skip(0),
        })?;
        Some(QueueDef {
            name: name?,
            vhost: vhost.flatten(),
            durable: durable.flatten(),
            auto_delete: auto_delete.flatten(),
            arguments: arguments.unwrap_or_default(),
            kind: kind.flatten(),
        })
    }

    fn exchange(&mut self) -> Option<ExchangeDef> {
        let (mut name, mut vhost, mut kind, mut durable, mut auto_delete, mut internal, mut arguments) =
            (None, None, None, None, None, None, None);
        self.fields(|r, key| match key {
            "name" => once(&mut name, r.string()?.to_string()),
            "vhost" => once(&mut vhost, r.optional_string()?),
            "type" => once(&mut kind, r.string()?.to_string()),
            "durable" => once(&mut durable, r.optional_bool()?),
            "auto_delete" => once(&mut auto_delete, r.optional_bool()?),
            "internal" => once(&mut internal, r.optional_bool()?),
            "arguments" => once(&mut arguments, r.arguments()?),
            _ => r.skip(0),
        })?;
        Some(ExchangeDef {
            name: name?,
            vhost: vhost.flatten(),
            kind: kind?,
            durable: durable.flatten(),
            auto_delete: auto_delete.flatten(),
            internal: internal.flatten(),
            arguments: arguments.unwrap_or_default(),
        })
    }

    fn binding(&mut self) -> Option<BindingDef> {
        let (mut source, mut vhost, mut destination, mut destination_type, mut routing_key, mut arguments) =
            (None, None, None, None, None, None);
        self.fields(|r, key| match key {
            "source" => once(&mut source, r.string()?.to_string()),
            "vhost" => once(&mut vhost, r.optional_string()?),
            "destination" => once(&mut destination, r.string()?.to_string()),
            "destination_type" => once(
                &mut destination_type,
                match r.string()? {
                    "queue" => DestinationType::Queue,
                    "exchange" => DestinationType::Exchange,
                    _ => return None,
                },
            ),
            "routing_key" => once(&mut routing_key, r.optional_string()?),
            "arguments" => once(&mut arguments, r.arguments()?),
            _ => r.skip(0),
        })?;
        Some(BindingDef {
            source: source?,
            vhost: vhost.flatten(),
            destination: destination?,
            destination_type: destination_type?,
            routing_key: routing_key.flatten().unwrap_or_default(),
            arguments: arguments.unwrap_or_default(),
        })
    }

    /// Passes over one value, checking it as the derived reader would.
    fn skip(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.skip_string(),
            b't' => self.word("true"),
            b'f' => self.word("false"),
            b'n' => self.word("null"),
            b'-' | b'0'..=b'9' => self.number(),
            // A list of `()` holds nothing: skipping allocates nothing.
            b'[' => self.items(|r| r.skip(depth + 1)).map(|_| ()),
            b'{' => self.fields(|r, _| r.skip(depth + 1)),
            _ => None,
        }
    }

    /// A string, escapes and all: a policy's pattern has them. A `\u`
    /// escape of half a surrogate pair is left to the derived reader.
    fn skip_string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            self.pos += plain_run(&self.bytes[self.pos..])?;
            match self.peek()? {
                b'"' => {
                    self.pos += 1;
                    return Some(());
                }
                b'\\' => {
                    self.pos += 1;
                    match self.peek()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.pos += 1,
                        b'u' => {
                            let hex = self.text.get(self.pos + 1..self.pos + 5)?;
                            let code = u16::from_str_radix(hex, 16).ok()?;
                            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) || (0xd800..0xe000).contains(&code) {
                                return None;
                            }
                            self.pos += 5;
                        }
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Option<()> {
        let digits = |r: &mut Self| {
            let start = r.pos;
            while r.peek().is_some_and(|b| b.is_ascii_digit()) {
                r.pos += 1;
            }
            (r.pos > start).then_some(())
        };
        let _ = self.eat(b'-');
        if self.eat(b'0').is_none() {
            digits(self)?;
        }
        if self.eat(b'.').is_some() {
            digits(self)?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            digits(self)?;
        }
        Some(())
    }
}
