//! A network link with latency, for benchmarks on one machine: a TCP proxy
//! in front of a broker that holds back each direction's bytes for a fixed
//! delay, as a long wire does, without limiting how many bytes are in
//! flight. This machine's kernel has no `netem` queueing discipline, which
//! would be the usual way. It counts the HTTP requests that cross it, so a
//! benchmark can tell how many round trips a command makes.
//!
//! Plain threads, four per connection (a reader and a writer each way): a
//! benchmark's few dozen connections need no runtime, and the bench stays
//! free of the tool's own async stack it measures.
//!
//! [`Link::replay`] turns a link into a broker on a machine of its own: it
//! answers a request it has answered before with the broker's recorded
//! answer, after the link's round trip, without asking the broker. On this
//! machine a dozen brokers share two cores, and a fleet's plan waits on
//! their CPU more than on its links; replayed, it waits on the links and on
//! warren alone, as it does when each broker has its own machine.
//! [`Link::replay_definitions`] does the same for an apply, which writes:
//! only a vhost's definitions (its export, or its listings of queues,
//! exchanges, bindings and policies: the reads that cost a broker CPU in
//! proportion to the vhost) are answered from the record; every other
//! request, each write and each read of warren's records among them,
//! reaches the broker.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// A link to one address, listening on a port of its own until the
/// process ends.
pub(crate) struct Link {
    pub(crate) port: u16,
    counts: Arc<Counts>,
}

#[derive(Default)]
struct Counts {
    /// HTTP/1.1 request lines sent through the link.
    requests: AtomicU64,
    /// Bytes in both directions.
    bytes: AtomicU64,
    /// Requests answered from the record.
    replayed: AtomicU64,
    /// What connections made from now on answer from the record: one of
    /// [`LIVE`], [`REPLAY`], [`DEFINITIONS`].
    mode: AtomicU8,
    /// Each request's answer, as the broker gave it, by the request's bytes.
    answers: Mutex<HashMap<Vec<u8>, Vec<u8>>>,
}

/// Every request reaches the broker.
const LIVE: u8 = 0;
/// A read answered before is answered from the record; any other request
/// reaches the broker, and a read's answer is recorded.
const REPLAY: u8 = 1;
/// A vhost's definitions answered before are answered from the record;
/// any other request reaches the broker, and nothing is recorded.
const DEFINITIONS: u8 = 2;

/// What crossed a link, read with [`Link::counts`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Crossed {
    pub(crate) requests: u64,
    pub(crate) bytes: u64,
    /// Of the requests, those answered from the record.
    pub(crate) replayed: u64,
}

impl std::ops::Sub for Crossed {
    type Output = Crossed;
    fn sub(self, before: Crossed) -> Crossed {
        Crossed {
            requests: self.requests - before.requests,
            bytes: self.bytes - before.bytes,
            replayed: self.replayed - before.replayed,
        }
    }
}

impl Link {
    /// A link to `target` that delays each direction by `one_way` (half
    /// the round trip it adds).
    pub(crate) fn start(target: SocketAddr, one_way: Duration) -> Link {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free local port");
        let port = listener.local_addr().expect("a bound listener has an address").port();
        let counts = Arc::new(Counts::default());
        let shared = Arc::clone(&counts);
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let counts = Arc::clone(&shared);
                match counts.mode.load(Ordering::Relaxed) {
                    LIVE => thread::spawn(move || connect(client, target, one_way, counts)),
                    mode => thread::spawn(move || replaying(client, target, one_way, counts, mode)),
                };
            }
        });
        Link { port, counts }
    }

    /// From now on, a request the link has answered before is answered
    /// again from its record; one it has not is asked of the broker and
    /// recorded. Each answer comes a round trip after its request.
    pub(crate) fn replay(&self) {
        self.counts.mode.store(REPLAY, Ordering::Relaxed);
    }

    /// From now on, a vhost's definitions recorded before (by
    /// [`Link::replay`]) are answered again from the record, a round trip
    /// after each request; every other request reaches the broker, and
    /// nothing more is recorded. For applies that start from the state
    /// they were recorded in.
    pub(crate) fn replay_definitions(&self) {
        self.counts.mode.store(DEFINITIONS, Ordering::Relaxed);
    }

    pub(crate) fn counts(&self) -> Crossed {
        Crossed {
            requests: self.counts.requests.load(Ordering::Relaxed),
            bytes: self.counts.bytes.load(Ordering::Relaxed),
            replayed: self.counts.replayed.load(Ordering::Relaxed),
        }
    }
}

/// Joins `client` to `target` through two delayed pipes; a failed connect
/// drops the client, which sees the connection refused as it would be.
fn connect(client: TcpStream, target: SocketAddr, one_way: Duration, counts: Arc<Counts>) {
    let Ok(server) = TcpStream::connect(target) else { return };
    for s in [&client, &server] {
        let _ = s.set_nodelay(true);
    }
    let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone()) else { return };
    pipe(client, server, one_way, Arc::clone(&counts), true);
    pipe(server2, client2, one_way, counts, false);
}

/// The request line's end, as HTTP/1.1 clients write it: counted in the
/// client's bytes (a JSON body never holds a bare CR LF after it).
const REQUEST_LINE_END: &[u8] = b" HTTP/1.1\r\n";

/// Copies `from` to `to`, each chunk written `one_way` after it was read.
/// A reader and a writer apart, so that a chunk waiting its time never
/// holds back the reading of the next: the delay adds latency only.
fn pipe(mut from: TcpStream, mut to: TcpStream, one_way: Duration, counts: Arc<Counts>, requests: bool) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    thread::spawn(move || {
        for (due, chunk) in rx {
            thread::sleep(due.saturating_duration_since(Instant::now()));
            if to.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
    thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        // The end of the last chunk, so that a request line cut between
        // two reads is counted once.
        let mut tail: Vec<u8> = Vec::new();
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            counts.bytes.fetch_add(n as u64, Ordering::Relaxed);
            if requests {
                tail.extend_from_slice(&buf[..n]);
                let found = tail.windows(REQUEST_LINE_END.len()).filter(|w| *w == REQUEST_LINE_END).count();
                counts.requests.fetch_add(found as u64, Ordering::Relaxed);
                let keep = tail.len().min(REQUEST_LINE_END.len() - 1);
                tail.drain(..tail.len() - keep);
            }
            if tx.send((Instant::now() + one_way, buf[..n].to_vec())).is_err() {
                break;
            }
        }
        // Dropping `tx` lets the writer finish what is in flight, then
        // close its side.
    });
}

/// Serves `client`'s requests one after another (HTTP/1.1 without
/// pipelining, as warren's client sends them): each from the record of
/// its answer, or from the broker (one connection, made when first needed)
/// and recorded; each answer written a round trip after its request came.
fn replaying(client: TcpStream, target: SocketAddr, one_way: Duration, counts: Arc<Counts>, mode: u8) {
    let _ = client.set_nodelay(true);
    let Ok(mut writer) = client.try_clone() else { return };
    let mut requests = BufReader::new(client);
    let mut broker: Option<(TcpStream, BufReader<TcpStream>)> = None;
    while let Some(request) = message(&mut requests) {
        let came = Instant::now();
        counts.requests.fetch_add(1, Ordering::Relaxed);
        let replayed = mode == REPLAY || reads_definitions(&request);
        let recorded = if replayed { counts.answers.lock().unwrap().get(&request).cloned() } else { None };
        let (answer, due) = match recorded {
            Some(a) => {
                counts.replayed.fetch_add(1, Ordering::Relaxed);
                (a, came + 2 * one_way)
            }
            None => {
                if broker.is_none() {
                    let Ok(s) = TcpStream::connect(target) else { return };
                    let _ = s.set_nodelay(true);
                    let Ok(r) = s.try_clone() else { return };
                    broker = Some((s, BufReader::new(r)));
                }
                let (to, from) = broker.as_mut().unwrap();
                // The request crosses the link, the broker answers, the
                // answer crosses back.
                thread::sleep(one_way);
                if to.write_all(&request).is_err() {
                    return;
                }
                let Some(a) = message(from) else { return };
                // Reads only: a write's answer is never served again.
                if mode == REPLAY && request.starts_with(b"GET ") {
                    counts.answers.lock().unwrap().insert(request.clone(), a.clone());
                }
                (a, Instant::now() + one_way)
            }
        };
        counts.bytes.fetch_add((request.len() + answer.len()) as u64, Ordering::Relaxed);
        thread::sleep(due.saturating_duration_since(Instant::now()));
        if writer.write_all(&answer).is_err() {
            return;
        }
    }
}

/// Whether `request` reads a whole vhost's definitions: `GET
/// /api/definitions/{vhost}`, or `GET
/// /api/{queues,exchanges,bindings,policies,operator-policies}/{vhost}`
/// with any query but a filter by name (warren's record exchanges are read
/// so, and change with every apply).
fn reads_definitions(request: &[u8]) -> bool {
    let line = request.split(|b| *b == b'\n').next().unwrap_or_default();
    let Some(target) = std::str::from_utf8(line).ok().and_then(|l| l.strip_prefix("GET /api/")) else {
        return false;
    };
    let target = target.split(' ').next().unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let kinds = ["definitions", "queues", "exchanges", "bindings", "policies", "operator-policies"];
    let Some((kind, vhost)) = path.split_once('/') else { return false };
    kinds.contains(&kind) && !vhost.contains('/') && !query.split('&').any(|p| p.starts_with("name="))
}

/// One HTTP/1.1 message as it came, head and body: a body of
/// `content-length` bytes or in chunks; `None` at the connection's end.
fn message(from: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let (mut length, mut chunked) = (0usize, false);
    loop {
        let start = out.len();
        if from.read_until(b'\n', &mut out).ok()? == 0 {
            return None;
        }
        let line = String::from_utf8_lossy(&out[start..]).trim_end().to_ascii_lowercase();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("content-length:") {
            length = n.trim().parse().ok()?;
        }
        chunked |= line.starts_with("transfer-encoding:") && line.contains("chunked");
    }
    if !chunked {
        let start = out.len();
        out.resize(start + length, 0);
        from.read_exact(&mut out[start..]).ok()?;
        return Some(out);
    }
    loop {
        let start = out.len();
        from.read_until(b'\n', &mut out).ok()?;
        let size = String::from_utf8_lossy(&out[start..]);
        let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
        let data = out.len();
        // The chunk and its CR LF; the last, empty, chunk's CR LF ends it.
        out.resize(data + size + 2, 0);
        from.read_exact(&mut out[data..]).ok()?;
        if size == 0 {
            return Some(out);
        }
    }
}
