//! AMQP 0-9-1, for what the management API cannot do: the apply lock, and
//! a queue's ready messages and consumers, fresh, by a passive declare.
//!
//! Every connection goes through [`Amqp::connect`], which first checks that
//! the AMQP address reaches the broker of the management API: the lock and
//! warren's records (global parameters, written over HTTP) must be on one
//! broker, or a second apply could lock another broker and overwrite the
//! records beside the real holder.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use lapin::options::QueueDeclareOptions;
use lapin::types::{AMQPValue, FieldTable};
use lapin::{Connection, ConnectionProperties};
use serde_json::Value as Json;
use url::Url;

use super::endpoint::segment;
use super::error::BrokerError;
use super::http::Http;

/// How long the unauthenticated look at an AMQP server may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection's close may wait for the broker's answer. A
/// broker that stops answering (a 3.10.8 node out of file handles was
/// seen to, its AMQP listener taking connections it never read) kept an
/// apply that had finished from ending; the process ends anyway, and the
/// broker drops the connection, and the lock's exclusive queue with it,
/// when its socket closes.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Closes `connection`, waiting at most [`CLOSE_TIMEOUT`] for the broker.
pub(super) async fn close(connection: &Connection, reason: &str) {
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, connection.close(200, reason.into())).await;
}

/// Where to open AMQP connections; credentials never leave this type.
#[derive(Clone)]
pub(super) struct Amqp {
    http: Http,
    /// `--amqp-url` without its vhost; `None`: the broker's own listener.
    given: Option<Url>,
    /// Where the apply lock lives: the URL's vhost, `/` when it names none.
    pub(super) lock_vhost: String,
    /// The AMQP address and the management API's broker, read once.
    target: Arc<tokio::sync::OnceCell<Target>>,
    /// One connection per vhost for passive declares, made when first
    /// needed and again once lost: a hundred drain waits reading every
    /// second would otherwise open a hundred connections a second.
    probes: Arc<tokio::sync::Mutex<HashMap<String, Connection>>>,
}

/// The AMQP address to use and the broker the management API reaches.
struct Target {
    /// `amqp(s)://user:password@host:port/`.
    base: Url,
    management: Cluster,
}

/// A broker as the management API describes it (`GET /api/overview`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Cluster {
    pub name: String,
    /// Every node with a listener, sorted.
    pub nodes: Vec<String>,
}

/// One entry of the overview's `listeners`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Listener {
    pub node: String,
    pub protocol: String,
    pub ip: String,
    pub port: u16,
}

/// What an AMQP server says of itself in `connection.start`, before any
/// login. RabbitMQ (3.10 to 4.x) sends its cluster name, product and
/// version there, but no node name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Server {
    pub cluster: Option<String>,
    pub product: Option<String>,
    pub version: Option<String>,
}

impl Amqp {
    /// From `--amqp-url`, or, when none is given, from the broker's own
    /// AMQP listener (read when first needed) with the management URL's
    /// host and credentials.
    pub(super) fn new(url: Option<&str>, http: Http) -> Result<Amqp, BrokerError> {
        let (given, lock_vhost) = match url {
            Some(u) => {
                let mut base =
                    Url::parse(u).map_err(|e| BrokerError::Setup(format!("the AMQP URL is not valid: {e}")))?;
                if !matches!(base.scheme(), "amqp" | "amqps") {
                    return Err(BrokerError::Setup("the AMQP URL must start with amqp:// or amqps://".into()));
                }
                let named = base.path().trim_start_matches('/');
                let vhost = match percent_encoding::percent_decode_str(named).decode_utf8_lossy().into_owned() {
                    v if v.is_empty() => "/".to_string(),
                    v => v,
                };
                base.set_path("/");
                base.set_query(None);
                (Some(base), vhost)
            }
            None => (None, "/".to_string()),
        };
        Ok(Amqp { http, given, lock_vhost, target: Arc::default(), probes: Arc::default() })
    }

    /// The AMQP address and the management API's broker, read from
    /// `GET /api/overview` once per run.
    async fn target(&self) -> Result<&Target, BrokerError> {
        self.target
            .get_or_try_init(|| async {
                let overview = self.http.get_json("overview", "read the broker overview").await?;
                let management = Cluster::of(&overview);
                let base = match &self.given {
                    Some(u) => u.clone(),
                    None => self.default_url(&overview)?,
                };
                Ok(Target { base, management })
            })
            .await
    }

    /// The management URL's host (a port-forward keeps the host the user
    /// reached) and credentials, with the port of the listener
    /// [`choose_listener`] picks.
    fn default_url(&self, overview: &Json) -> Result<Url, BrokerError> {
        let endpoint = self.http.endpoint();
        let https = endpoint.base.scheme() == "https";
        let node = overview["node"].as_str().unwrap_or_default();
        let (scheme, port) = choose_listener(&listeners(overview), node, https)
            .map_err(|why| BrokerError::NoAmqpAddress { management: endpoint.to_string(), why })?;
        let host = endpoint.base.host_str().unwrap_or("localhost");
        let host = if host.contains(':') && !host.starts_with('[') { format!("[{host}]") } else { host.to_string() };
        let mut u = Url::parse(&format!("{scheme}://{host}:{port}/")).map_err(|e| BrokerError::NoAmqpAddress {
            management: endpoint.to_string(),
            why: format!("no AMQP URL can be made for host {host}: {e}"),
        })?;
        let _ = u.set_username(&endpoint.user);
        let _ = u.set_password(Some(endpoint.password()));
        Ok(u)
    }

    /// `amqp://host:port`, never credentials.
    fn shown(base: &Url) -> String {
        let port = base.port().unwrap_or(if base.scheme() == "amqps" { 5671 } else { 5672 });
        format!("{}://{}:{port}", base.scheme(), base.host_str().unwrap_or(""))
    }

    /// The one way warren opens an AMQP connection: to `vhost`, named
    /// `name` in the broker's connection list. Before it logs in, it reads
    /// what the server says of itself and refuses a broker whose cluster
    /// name is not the management API's, so no credentials, lock or
    /// declare reach another broker.
    pub(super) async fn connect(&self, vhost: &str, name: &str) -> Result<Connection, BrokerError> {
        let site = self.target().await?;
        let shown = Amqp::shown(&site.base);
        let unreachable = |detail: String| BrokerError::AmqpUnreachable { endpoint: shown.clone(), detail };
        let server = tokio::time::timeout(PROBE_TIMEOUT, look_at(&site.base))
            .await
            .map_err(|_| unreachable(format!("no answer within {} s", PROBE_TIMEOUT.as_secs())))?
            .map_err(unreachable)?;
        if server.cluster.as_deref() != Some(site.management.name.as_str()) {
            return Err(BrokerError::OtherBroker {
                management: format!("{} is {}", self.http.endpoint(), site.management),
                amqp: format!("{shown} is {server}"),
            });
        }
        let uri = format!("{}{}?heartbeat=10", site.base, segment(vhost));
        let props = ConnectionProperties::default().with_connection_name(name.into());
        Connection::connect(&uri, props).await.map_err(|e| unreachable(e.to_string()))
    }

    /// How errors name the AMQP address, once it is known.
    pub(super) fn address(&self) -> String {
        match (self.target.get(), &self.given) {
            (Some(site), _) => Amqp::shown(&site.base),
            (None, Some(u)) => Amqp::shown(u),
            (None, None) => "the broker's AMQP listener".into(),
        }
    }

    /// Ready messages and consumers of a queue, as the queue itself reports
    /// them now (quorum queues: 0/0 when they have no leader).
    pub(super) async fn queue_state(&self, vhost: &str, queue: &str) -> Result<(u64, u64), BrokerError> {
        let unreachable =
            |e: lapin::Error| BrokerError::AmqpUnreachable { endpoint: self.address(), detail: e.to_string() };
        // A channel of its own: a declare of a missing queue closes it.
        let channel = {
            let mut probes = self.probes.lock().await;
            if !probes.get(vhost).is_some_and(|c| c.status().connected()) {
                let conn = self.connect(vhost, "warren (drain readings)").await?;
                probes.insert(vhost.to_string(), conn);
            }
            probes[vhost].create_channel().await.map_err(unreachable)?
        };
        let options = QueueDeclareOptions { passive: true, ..QueueDeclareOptions::default() };
        let result = channel.queue_declare(queue.into(), options, FieldTable::default()).await;
        if result.is_ok() {
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, channel.close(200, "done".into())).await;
        }
        let q = result.map_err(|e| BrokerError::Refused {
            action: format!("read queue \"{queue}\" in vhost \"{vhost}\" over AMQP"),
            status: 0,
            reason: e.to_string(),
        })?;
        Ok((u64::from(q.message_count()), u64::from(q.consumer_count())))
    }

    /// Closes the connections [`Amqp::queue_state`] kept open.
    pub(super) async fn close_probes(&self) {
        for (_, conn) in self.probes.lock().await.drain() {
            close(&conn, "done").await;
        }
    }
}

impl Cluster {
    fn of(overview: &Json) -> Cluster {
        let mut nodes: Vec<String> = listeners(overview).into_iter().map(|l| l.node).collect();
        nodes.extend(overview["node"].as_str().map(str::to_string));
        nodes.sort();
        nodes.dedup();
        Cluster { name: overview["cluster_name"].as_str().unwrap_or_default().to_string(), nodes }
    }
}

impl std::fmt::Display for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cluster \"{}\" (node {})", self.name, self.nodes.join(", "))
    }
}

impl std::fmt::Display for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.cluster {
            Some(c) => write!(f, "cluster \"{c}\"")?,
            None => f.write_str("a server that names no cluster")?,
        }
        match (&self.product, &self.version) {
            (Some(p), Some(v)) => write!(f, " ({p} {v})"),
            (Some(p), None) => write!(f, " ({p})"),
            _ => Ok(()),
        }
    }
}

/// The overview's `listeners`.
pub(super) fn listeners(overview: &Json) -> Vec<Listener> {
    overview["listeners"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| {
            Some(Listener {
                node: l["node"].as_str()?.to_string(),
                protocol: l["protocol"].as_str()?.to_string(),
                ip: l["ip_address"].as_str().unwrap_or_default().to_string(),
                port: u16::try_from(l["port"].as_u64()?).ok()?,
            })
        })
        .collect()
}

/// The AMQP listener to use when no AMQP URL is given: `(scheme, port)`.
/// Behind an HTTPS management API only a TLS listener (`amqp/ssl`), so
/// the password never travels in the clear by default; behind plain HTTP
/// a plain listener, else a TLS one. The node that answered the overview
/// first (the host reached is most likely that node), then the others by
/// name; on one node, a listener on every address (`0.0.0.0`, `::`) first.
pub(super) fn choose_listener(listeners: &[Listener], node: &str, https: bool) -> Result<(&'static str, u16), String> {
    let wanted: &[(&str, &'static str)] =
        if https { &[("amqp/ssl", "amqps")] } else { &[("amqp", "amqp"), ("amqp/ssl", "amqps")] };
    for (protocol, scheme) in wanted {
        let best = listeners
            .iter()
            .filter(|l| l.protocol == *protocol)
            .min_by_key(|l| (l.node != node, &l.node, !matches!(l.ip.as_str(), "0.0.0.0" | "::"), l.port));
        if let Some(l) = best {
            return Ok((scheme, l.port));
        }
    }
    let plain: Vec<String> = listeners.iter().filter(|l| l.protocol == "amqp").map(|l| l.port.to_string()).collect();
    Err(if https && !plain.is_empty() {
        format!(
            "the management API is HTTPS but the broker reports only plain AMQP listeners (port {}), which would carry the password in the clear",
            plain.join(", ")
        )
    } else {
        NO_LISTENER.to_string()
    })
}

/// Why no default AMQP address can be made. The overview lists listeners
/// only to users with the administrator or monitoring tag.
const NO_LISTENER: &str = "the broker reports no AMQP listener (it shows them only to users with the `administrator` or `monitoring` tag; a user without either gives --amqp-url, with a vhost it may use, e.g. amqp://user:password@host:5672/VHOST)";

/// Opens a connection of its own to `base`, sends the protocol header and
/// reads the server's `connection.start`, then hangs up: no credentials
/// are sent. (lapin does not keep the server properties it receives.)
async fn look_at(base: &Url) -> Result<Server, String> {
    use futures_lite::{AsyncReadExt, AsyncWriteExt};
    use lapin::tcp::{AMQPUriTcpExt, TLSConfig};
    let bare = Amqp::shown(base);
    let uri: lapin::uri::AMQPUri = bare.parse()?;
    let runtime = lapin::runtime::default_runtime().map_err(|e| e.to_string())?;
    let mut stream = uri.connect_with_config_async(TLSConfig::default(), &runtime).await.map_err(|e| e.to_string())?;
    stream.write_all(b"AMQP\x00\x00\x09\x01").await.map_err(|e| e.to_string())?;
    stream.flush().await.map_err(|e| e.to_string())?;
    // A frame: type (1), channel (2), size (4), payload, end (0xCE).
    let mut header = [0u8; 7];
    stream.read_exact(&mut header).await.map_err(|e| format!("no AMQP 0-9-1 greeting: {e}"))?;
    if header[0] != 1 {
        return Err("not an AMQP 0-9-1 server (its first frame is not a method)".into());
    }
    let size = u32::from_be_bytes([header[3], header[4], header[5], header[6]]) as usize;
    if size > 1 << 20 {
        return Err("not an AMQP 0-9-1 server (its first frame is too large)".into());
    }
    let mut payload = vec![0u8; size];
    stream.read_exact(&mut payload).await.map_err(|e| format!("a cut AMQP greeting: {e}"))?;
    drop(stream);
    server_of(&payload)
}

/// The server properties of a `connection.start` method frame's payload.
pub(super) fn server_of(payload: &[u8]) -> Result<Server, String> {
    use lapin::protocol::{AMQPClass, connection::AMQPMethod};
    let start = match lapin::protocol::parse_class(payload) {
        Ok((_, AMQPClass::Connection(AMQPMethod::Start(start)))) => start,
        _ => return Err("not an AMQP 0-9-1 server (its greeting is not connection.start)".into()),
    };
    let text = |k: &str| match start.server_properties.inner().get(k) {
        Some(AMQPValue::LongString(s)) => Some(s.to_string()),
        Some(AMQPValue::ShortString(s)) => Some(s.to_string()),
        _ => None,
    };
    Ok(Server { cluster: text("cluster_name"), product: text("product"), version: text("version") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listener(node: &str, protocol: &str, ip: &str, port: u16) -> Listener {
        Listener { node: node.into(), protocol: protocol.into(), ip: ip.into(), port }
    }

    #[test]
    fn the_answering_node_s_plain_listener_is_chosen_behind_http() {
        let ls = [
            listener("rabbit@b", "amqp", "::", 5673),
            listener("rabbit@a", "clustering", "::", 25672),
            listener("rabbit@a", "amqp/ssl", "::", 5671),
            listener("rabbit@a", "amqp", "::", 5672),
            listener("rabbit@a", "http", "::", 15672),
        ];
        assert_eq!(choose_listener(&ls, "rabbit@a", false), Ok(("amqp", 5672)));
        assert_eq!(choose_listener(&ls, "rabbit@b", false), Ok(("amqp", 5673)));
        // A node with no listener of its own (or an unknown one): the others by name.
        assert_eq!(choose_listener(&ls, "rabbit@c", false), Ok(("amqp", 5672)));
    }

    #[test]
    fn https_takes_only_a_tls_listener() {
        let both = [listener("rabbit@a", "amqp", "::", 5672), listener("rabbit@a", "amqp/ssl", "::", 5671)];
        assert_eq!(choose_listener(&both, "rabbit@a", true), Ok(("amqps", 5671)));
        let plain = [listener("rabbit@a", "amqp", "0.0.0.0", 5672)];
        let why = choose_listener(&plain, "rabbit@a", true).unwrap_err();
        assert!(why.contains("only plain AMQP listeners (port 5672)"), "{why}");
        // Behind plain HTTP a TLS listener is taken when it is the only one.
        let tls = [listener("rabbit@a", "amqp/ssl", "::", 5671)];
        assert_eq!(choose_listener(&tls, "rabbit@a", false), Ok(("amqps", 5671)));
    }

    #[test]
    fn a_listener_on_every_address_comes_first() {
        let ls = [listener("rabbit@a", "amqp", "127.0.0.1", 5731), listener("rabbit@a", "amqp", "0.0.0.0", 5672)];
        assert_eq!(choose_listener(&ls, "rabbit@a", false), Ok(("amqp", 5672)));
        let one = [listener("rabbit@a", "amqp", "127.0.0.1", 5731)];
        assert_eq!(choose_listener(&one, "rabbit@a", false), Ok(("amqp", 5731)));
    }

    #[test]
    fn no_amqp_listener_is_an_error() {
        let ls = [listener("rabbit@a", "http", "::", 15672), listener("rabbit@a", "mqtt", "::", 1883)];
        assert_eq!(choose_listener(&ls, "rabbit@a", false), Err(NO_LISTENER.into()));
        assert_eq!(choose_listener(&[], "rabbit@a", true), Err(NO_LISTENER.into()));
    }

    #[test]
    fn listeners_and_the_cluster_come_from_the_overview() {
        // As RabbitMQ 3.10.8 answers, cut down.
        let overview = serde_json::json!({
            "cluster_name": "warren-test31@vm",
            "node": "warren-test31@localhost",
            "listeners": [
                {"node": "warren-test31@localhost", "protocol": "amqp", "ip_address": "127.0.0.1", "port": 5731,
                 "socket_opts": {"backlog": 128}},
                {"node": "warren-test31@localhost", "protocol": "http", "ip_address": "::", "port": 15731},
            ],
        });
        let ls = listeners(&overview);
        assert_eq!(ls[0], listener("warren-test31@localhost", "amqp", "127.0.0.1", 5731));
        assert_eq!(choose_listener(&ls, "warren-test31@localhost", false), Ok(("amqp", 5731)));
        let c = Cluster::of(&overview);
        assert_eq!(c.to_string(), "cluster \"warren-test31@vm\" (node warren-test31@localhost)");
    }

    /// A `connection.start` payload with these long-string server properties.
    fn start(properties: &[(&str, &str)]) -> Vec<u8> {
        let mut table = vec![];
        for (k, v) in properties {
            table.push(k.len() as u8);
            table.extend(k.as_bytes());
            table.push(b'S');
            table.extend((v.len() as u32).to_be_bytes());
            table.extend(v.as_bytes());
        }
        let mut p = vec![0, 10, 0, 10, 0, 9];
        p.extend((table.len() as u32).to_be_bytes());
        p.extend(table);
        for s in ["PLAIN AMQPLAIN", "en_US"] {
            p.extend((s.len() as u32).to_be_bytes());
            p.extend(s.as_bytes());
        }
        p
    }

    #[test]
    fn the_server_names_its_cluster_in_connection_start() {
        let payload = start(&[("cluster_name", "warren-test32@vm"), ("product", "RabbitMQ"), ("version", "3.10.8")]);
        let s = server_of(&payload).unwrap();
        assert_eq!(s.cluster.as_deref(), Some("warren-test32@vm"));
        assert_eq!(s.to_string(), "cluster \"warren-test32@vm\" (RabbitMQ 3.10.8)");
        let anonymous = server_of(&start(&[("product", "SomeMQ")])).unwrap();
        assert_eq!(anonymous.to_string(), "a server that names no cluster (SomeMQ)");
        assert!(server_of(b"HTTP/1.1 400 Bad Request").is_err());
    }
}
