//! A small client for the management HTTP API: every request warren makes
//! goes through [`Http::send`], which turns answers into [`BrokerError`]s.
//!
//! Why not the `rabbitmq_http_client` crate: it has no `internal` flag on
//! exchanges, no guarded (if-empty / if-unused) deletes, and typed
//! definitions that drop fields warren must see. The few endpoints warren
//! uses fit in this file.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value as Json;

use super::endpoint::{Endpoint, Tls};
use super::error::BrokerError;

/// How long a connection may wait in the pool, in seconds.
const IDLE_SECS: u64 = 30;

/// How long a TCP connection (and its TLS handshake) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// The most a body's buffer is made for at once from the length the peer
/// announces (a larger body still reads whole, its buffer growing): the
/// listings of a vhost of 100,000 queues are tens of MB.
const MAX_PRESIZED: u64 = 256 << 20;

#[derive(Clone)]
pub(super) struct Http {
    endpoint: Endpoint,
    client: reqwest::Client,
}

/// The HTTP clients of the run, by the TLS settings and timeout that set
/// them up; `None` outside a run ([`ClientsShared`]).
type Clients = HashMap<(Tls, Option<Duration>), reqwest::Client>;
static SHARED: Mutex<Option<Clients>> = Mutex::new(None);

/// While it is held, the brokers of the run that have the same TLS
/// settings and timeout share one HTTP client (each keeps its own
/// connections). Setting a client up reads the system's root
/// certificates: 16 million instructions, a fifth of a twelve-broker
/// plan's, when each broker set up its own. `run` holds it for its
/// runtime's life, since pooled connections belong to that runtime.
pub struct ClientsShared(());

impl ClientsShared {
    pub fn start() -> ClientsShared {
        *SHARED.lock().unwrap_or_else(PoisonError::into_inner) = Some(Clients::new());
        ClientsShared(())
    }
}

impl Drop for ClientsShared {
    fn drop(&mut self) {
        *SHARED.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// An HTTP client set up for `endpoint`'s TLS settings and timeout.
fn client(endpoint: &Endpoint) -> Result<reqwest::Client, BrokerError> {
    // reqwest is built without a crypto provider (Cargo.toml): ring is the
    // process's, which lapin's connections take too. Installed once; a
    // provider already there is kept.
    static RING: std::sync::Once = std::sync::Once::new();
    RING.call_once(|| drop(rustls::crypto::ring::default_provider().install_default()));
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("warren/", env!("CARGO_PKG_VERSION")))
        .pool_max_idle_per_host(64)
        // Below the management listener's idle timeout (cowboy's 60 s):
        // a connection the broker is closing is not picked for a request.
        .pool_idle_timeout(Duration::from_secs(IDLE_SECS))
        // A host that drops packets is said within seconds, whatever
        // time a large answer is given.
        .connect_timeout(CONNECT_TIMEOUT);
    if let Some(t) = endpoint.timeout {
        builder = builder.timeout(t);
    }
    let read = |p: &std::path::Path| {
        std::fs::read(p).map_err(|e| BrokerError::Setup(format!("cannot read {}: {e}", p.display())))
    };
    if let Some(ca) = &endpoint.tls.ca_cert {
        let pem = read(ca)?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem)
            .map_err(|e| BrokerError::Setup(format!("{} is not a PEM certificate bundle: {e}", ca.display())))?;
        for c in certs {
            builder = builder.add_root_certificate(c);
        }
    }
    match (&endpoint.tls.client_cert, &endpoint.tls.client_key) {
        (Some(cert), key) => {
            let mut pem = read(cert)?;
            if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
                return Err(BrokerError::Setup(format!(
                    "--client-cert {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                    cert.display()
                )));
            }
            if let Some(k) = key {
                pem.extend(b"\n");
                pem.extend(read(k)?);
            }
            if !String::from_utf8_lossy(&pem).contains("PRIVATE KEY-----") {
                return Err(BrokerError::Setup(format!(
                    "--client-cert {} holds no private key: give its key with --client-key FILE (or WARREN_CLIENT_KEY)",
                    cert.display()
                )));
            }
            let id = reqwest::Identity::from_pem(&pem).map_err(|e| {
                BrokerError::Setup(format!(
                    "the client certificate and key are not usable: {} (PEM certificate and a PKCS#8, PKCS#1 or SEC1 key)",
                    describe(&e)
                ))
            })?;
            builder = builder.identity(id);
        }
        (None, Some(_)) => return Err(BrokerError::Setup("--client-key needs --client-cert".into())),
        (None, None) => {}
    }
    builder.build().map_err(|e| BrokerError::Setup(format!("cannot set up HTTPS: {e}")))
}

impl Http {
    pub(super) fn new(endpoint: Endpoint) -> Result<Http, BrokerError> {
        // Held while a client is set up: the brokers of a fleet, read at
        // once, wait for the first one's rather than each making its own.
        let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
        let client = match shared.as_mut() {
            None => client(&endpoint)?,
            Some(clients) => match clients.entry((endpoint.tls.clone(), endpoint.timeout)) {
                Entry::Occupied(e) => e.get().clone(),
                Entry::Vacant(e) => e.insert(client(&endpoint)?).clone(),
            },
        };
        Ok(Http { endpoint, client })
    }

    pub(super) fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Sends one request; `action` completes "could not …" in errors.
    /// Returns the status and the body text. A request that can be
    /// repeated safely ([`repeatable`]) is sent again, twice, after a
    /// connection lost before its answer (a pooled connection the broker
    /// closed, a node restarting), and a read after a 5xx answer too.
    pub(super) async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Json>,
        action: &str,
    ) -> Result<(StatusCode, String), BrokerError> {
        let repeatable = repeatable(&method, path);
        const PAUSES: [u64; 2] = [300, 1000];
        let mut tries = PAUSES.iter();
        loop {
            let result = self.send_once(method.clone(), path, body, action).await;
            let again = match &result {
                Err(BrokerError::Unreachable { .. }) => repeatable,
                // A write's 5xx may come after it took effect: said, not repeated.
                Err(BrokerError::Refused { status: 500..=599, .. }) => method == Method::GET,
                _ => false,
            };
            match tries.next() {
                Some(ms) if again => tokio::time::sleep(std::time::Duration::from_millis(*ms)).await,
                _ => return self.named(result).await,
            }
        }
    }

    /// A failed request whose server does not speak HTTP (an answer HTTP
    /// cannot read, a TLS handshake met by plain text) is named by asking
    /// the port itself: an AMQP listener answers in AMQP.
    async fn named<T>(&self, result: Result<T, BrokerError>) -> Result<T, BrokerError> {
        let unclear = match &result {
            Err(BrokerError::NotHttp { amqp: false, .. }) => true,
            Err(BrokerError::Tls { problem, .. }) => problem.contains(NOT_TLS),
            _ => false,
        };
        if unclear && answers_amqp(&self.endpoint).await {
            let detail = match result {
                Err(BrokerError::NotHttp { detail, .. }) => detail,
                Err(BrokerError::Tls { problem, .. }) => problem,
                _ => String::new(),
            };
            return Err(BrokerError::NotHttp { endpoint: self.endpoint.to_string(), amqp: true, detail });
        }
        result
    }

    async fn send_once(
        &self,
        method: Method,
        path: &str,
        body: Option<&Json>,
        action: &str,
    ) -> Result<(StatusCode, String), BrokerError> {
        let mut req = self
            .client
            .request(method.clone(), self.endpoint.api(path))
            .basic_auth(&self.endpoint.user, Some(self.endpoint.password()));
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await.map_err(|e| self.transport_error(&e, action))?;
        let status = resp.status();
        let body = self.body(resp, action).await?;
        // The body checked as UTF-8 where it is (the management API answers
        // in UTF-8), not decoded into a copy as `text()` does: a large
        // vhost's listing is tens of MB, and the check was 5% of a fleet's
        // plan's instructions.
        let text = String::from_utf8(body).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        if status.is_success() {
            return Ok((status, text));
        }
        // A shovel's or an upstream's URI the broker found invalid comes
        // back quoted in its reason, password and all.
        let reason = readable(
            &serde_json::from_str::<Json>(&text)
                .ok()
                .and_then(|j| j.get("reason").cloned())
                .map(|r| match r {
                    Json::String(s) => s,
                    other => other.to_string(),
                })
                .unwrap_or_else(|| text.trim().to_string()),
        );
        let reason = crate::model::kinds::mask_passwords(&reason).into_owned();
        let user = self.endpoint.user.clone();
        Err(match status {
            // 3.x says "Login failed"; 4.0 answers a wrong user or password
            // with {"error":"not_authorized","reason":"Not_Authorized"}.
            StatusCode::UNAUTHORIZED if reason.contains("Login failed") || reason == "Not_Authorized" => {
                BrokerError::BadCredentials { endpoint: self.endpoint.to_string(), user }
            }
            StatusCode::UNAUTHORIZED if reason.contains("Not management user") => {
                BrokerError::NotManagementUser { user }
            }
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                BrokerError::Forbidden { user, action: action.to_string(), needs: super::access::needed(&method, path) }
            }
            // A read of the broker as a whole (`overview`, `vhosts`) that
            // is not found: the URL is not the management API.
            StatusCode::NOT_FOUND if method == Method::GET && broker_wide(path) => BrokerError::NotManagementApi {
                endpoint: self.endpoint.to_string(),
                path: path.split('?').next().unwrap_or(path).to_string(),
            },
            StatusCode::NOT_FOUND => BrokerError::NotFound { action: action.to_string() },
            s => BrokerError::Refused { action: action.to_string(), status: s.as_u16(), reason },
        })
    }

    /// A response's body, each chunk copied into one buffer as it comes
    /// and then dropped, the buffer sized by the response's length when it
    /// says one: `bytes()` holds every chunk until the last, then copies
    /// them all, twice a body's size at once (a large vhost's listing of
    /// bindings is tens of MB, and a plan reads its listings at once).
    async fn body(&self, mut resp: reqwest::Response, action: &str) -> Result<Vec<u8>, BrokerError> {
        let failed = |e: reqwest::Error| match self.timed_out(&e, action) {
            Some(late) => late,
            None => BrokerError::Unreachable { endpoint: self.endpoint.to_string(), detail: describe(&e) },
        };
        let sized = resp.content_length().map_or(0, |n| n.min(MAX_PRESIZED) as usize);
        let mut body = Vec::with_capacity(sized);
        while let Some(chunk) = resp.chunk().await.map_err(failed)? {
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// No answer: one that took longer than the request may, a TLS
    /// handshake that failed, said in words, or no connection at all.
    fn transport_error(&self, e: &reqwest::Error, action: &str) -> BrokerError {
        if let Some(late) = self.timed_out(e, action) {
            return late;
        }
        let endpoint = self.endpoint.to_string();
        let detail = describe(e);
        match tls_problem(&detail, &self.endpoint.tls) {
            Some((problem, help)) => BrokerError::Tls { endpoint, problem, help },
            None if not_http(&detail) => BrokerError::NotHttp { endpoint, amqp: false, detail },
            None => BrokerError::Unreachable { endpoint, detail },
        }
    }

    /// A request that outlasted `--request-timeout`: not a connection
    /// refused, and not sent again (a broker slow to answer a large read
    /// would only be asked it twice more).
    fn timed_out(&self, e: &reqwest::Error, action: &str) -> Option<BrokerError> {
        let after = self.endpoint.timeout.filter(|_| e.is_timeout() && !e.is_connect())?;
        Some(BrokerError::TimedOut { endpoint: self.endpoint.to_string(), action: action.to_string(), after })
    }

    /// GET and parse JSON (a lost connection is tried again by `send`: the
    /// broker also closes idle keep-alive connections).
    pub(super) async fn get_json(&self, path: &str, action: &str) -> Result<Json, BrokerError> {
        let (_, text) = self.send(Method::GET, path, None, action).await?;
        serde_json::from_str(&text)
            .map_err(|e| BrokerError::Unreadable { action: action.to_string(), reason: format!("it is not JSON: {e}") })
    }
}

/// Whether a request leaves the broker as it was when sent twice: what
/// HTTP makes idempotent (GET, PUT, DELETE), and the POST that creates a
/// binding (a member of a set: created twice, there is one). Any other
/// POST is sent once.
fn repeatable(method: &Method, path: &str) -> bool {
    match *method {
        Method::GET | Method::PUT | Method::DELETE => true,
        Method::POST => path.starts_with("bindings/"),
        _ => false,
    }
}

/// Whether `path` reads the broker as a whole, naming no vhost or object:
/// the management API always has it.
fn broker_wide(path: &str) -> bool {
    !path.split('?').next().unwrap_or(path).contains('/')
}

/// Whether the HTTP client could not read the answer as HTTP (hyper's
/// parse errors: `invalid HTTP version parsed`, `invalid HTTP status-code
/// parsed`, …): something else listens on the port.
fn not_http(detail: &str) -> bool {
    detail.starts_with("invalid HTTP") || detail.contains("message head is too large")
}

/// How the problem of a TLS handshake met by plain text begins.
const NOT_TLS: &str = "the broker does not speak TLS on this port";

/// Whether the endpoint's port is an AMQP listener: RabbitMQ's answers
/// anything that is not an AMQP protocol header with its own
/// (`AMQP\0\0\x09\x01`), then closes. Asked over plain TCP, for a
/// request that already failed; no answer within a second is no.
async fn answers_amqp(endpoint: &Endpoint) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (Some(host), Some(port)) = (endpoint.base.host_str(), endpoint.base.port_or_known_default()) else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    let ask = async {
        let mut socket = tokio::net::TcpStream::connect((host.as_str(), port)).await.ok()?;
        socket.write_all(b"GET / HTTP/1.0\r\n\r\n").await.ok()?;
        let mut answer = [0u8; 4];
        socket.read_exact(&mut answer).await.ok()?;
        Some(&answer == b"AMQP")
    };
    tokio::time::timeout(std::time::Duration::from_secs(1), ask).await.ok().flatten().unwrap_or(false)
}

/// A broker's reason on one line, as written: the management API
/// HTML-escapes it (`&lt;&lt;"key"&gt;&gt;`) and breaks it into paragraphs
/// (`Validation failed\n\n…`).
fn readable(reason: &str) -> String {
    let text = reason
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(": ")
}

/// A failed TLS handshake, from the innermost error's text (rustls names
/// its errors, e.g. `invalid peer certificate: UnknownIssuer`), as what
/// went wrong and what to do.
fn tls_problem(detail: &str, tls: &super::endpoint::Tls) -> Option<(String, &'static str)> {
    let has = |s: &str| detail.contains(s);
    let (problem, help) = if has("UnknownIssuer") {
        let help = if tls.ca_cert.is_some() {
            "the CA in --ca-cert did not sign the broker's certificate: give the one that did"
        } else {
            "give the CA that signed the broker's certificate with --ca-cert FILE (or WARREN_CA_CERT)"
        };
        ("the broker's certificate is not signed by a CA warren trusts", help)
    } else if has("NotValidForName") {
        (
            "the broker's certificate is not issued for the host in the URL",
            "use a host name the certificate names in --url, or have a certificate issued for this one",
        )
    } else if has("Expired") || has("NotValidYet") {
        (
            "the broker's certificate has expired or is not valid yet",
            "renew the broker's certificate (or check the clock)",
        )
    } else if has("CertificateRequired") || (tls.client_cert.is_none() && has("HandshakeFailure")) {
        (
            "the broker requires a client certificate",
            "give one with --client-cert FILE and its key with --client-key FILE (or WARREN_CLIENT_CERT, WARREN_CLIENT_KEY)",
        )
    } else if has("BadCertificate") || has("UnknownCA") || has("DecryptError") {
        (
            "the broker refused warren's client certificate",
            "give --client-cert a certificate signed by a CA the broker trusts (its ssl cacertfile)",
        )
    } else if has("InvalidContentType") || has("corrupt message") {
        (NOT_TLS, "use http:// in --url, or the port of the management TLS listener")
    } else if has("certificate") || has("CertificateError") || has("alert") {
        ("the certificates were not accepted", "check --ca-cert, --client-cert and --client-key")
    } else {
        return None;
    };
    Some((format!("{problem} ({detail})"), help))
}

/// The innermost cause of a transport error, which is the useful part.
fn describe(e: &reqwest::Error) -> String {
    let mut msg = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        msg = s.to_string();
        source = s.source();
    }
    msg
}

#[cfg(test)]
pub(super) mod tests {
    use super::readable;

    #[test]
    fn tls_failures_are_named() {
        use super::super::endpoint::Tls;
        let none = Tls::default();
        let (p, h) = super::tls_problem("invalid peer certificate: UnknownIssuer", &none).unwrap();
        assert!(p.starts_with("the broker's certificate is not signed by a CA warren trusts"), "{p}");
        assert!(h.contains("--ca-cert"));
        let (p, h) = super::tls_problem("received fatal alert: CertificateRequired", &none).unwrap();
        assert!(p.contains("requires a client certificate") && h.contains("--client-cert"), "{p}");
        assert!(super::tls_problem("Connection refused (os error 111)", &none).is_none());
    }

    #[test]
    fn broker_reasons_read_as_written() {
        let r = "Validation failed\n\n[{&lt;&lt;\"federation-upstream-set\"&gt;&gt;,&lt;&lt;\"all\"&gt;&gt;}] are not recognised policy settings\n";
        assert_eq!(
            readable(r),
            "Validation failed: [{<<\"federation-upstream-set\">>,<<\"all\">>}] are not recognised policy settings"
        );
        assert_eq!(readable("queue 'q' in vhost 'v' not empty"), "queue 'q' in vhost 'v' not empty");
    }

    /// A server that reads each request on a new connection and closes it
    /// unanswered the first `drops` times, then answers 204: a connection
    /// lost before any answer. Gives its address and the requests it read.
    async fn dropping_server(drops: usize) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = format!("http://guest:guest@{}", listener.local_addr().unwrap());
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                let mut buf = vec![0u8; 4096];
                let n = socket.read(&mut buf).await.unwrap_or(0);
                let line = String::from_utf8_lossy(&buf[..n]).lines().next().unwrap_or_default().to_string();
                let count = {
                    let mut l = log.lock().unwrap();
                    l.push(line);
                    l.len()
                };
                if count > drops {
                    let answer = b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n";
                    let _ = socket.write_all(answer).await;
                }
                drop(socket);
            }
        });
        (address, seen)
    }

    fn client(address: &str) -> super::Http {
        let endpoint = super::super::endpoint::Endpoint::parse(address, Default::default()).unwrap();
        super::Http::new(endpoint).unwrap()
    }

    #[tokio::test]
    async fn an_idempotent_write_is_sent_again_after_a_connection_lost_before_its_answer() {
        let (address, seen) = dropping_server(2).await;
        let http = client(&address);
        let body = serde_json::json!({"durable": true});
        let sent = http.send(reqwest::Method::PUT, "queues/v/q", Some(&body), "declare queue \"q\"").await;
        assert!(sent.is_ok(), "{sent:?}");
        assert_eq!(seen.lock().unwrap().len(), 3, "twice lost, then answered");

        let (address, seen) = dropping_server(1).await;
        let bound = client(&address).send(reqwest::Method::POST, "bindings/v/e/x/q/q", None, "bind").await;
        assert!(bound.is_ok(), "a binding is created twice safely: {bound:?}");
        assert_eq!(seen.lock().unwrap().len(), 2);
    }

    /// A server that answers every connection with `answer` and closes it:
    /// an AMQP listener, another HTTP server. Gives its address.
    async fn answering_server(answer: &'static [u8]) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = format!("http://guest:guest@{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let _ = socket.read(&mut buf).await;
                    let _ = socket.write_all(answer).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        address
    }

    /// `--url` at an AMQP port: RabbitMQ's AMQP listener answers what is
    /// not an AMQP header with its own protocol header, and closes.
    #[tokio::test]
    async fn an_amqp_port_is_named_as_such() {
        let address = answering_server(b"AMQP\x00\x00\x09\x01").await;
        let e = client(&address).get_json("overview", "read the broker overview").await.unwrap_err();
        assert!(matches!(e, super::BrokerError::NotHttp { amqp: true, .. }), "{e:?}");
        assert!(e.to_string().contains("AMQP"), "{e}");
        assert!(!e.to_string().contains("guest:guest"), "{e}");
        assert_eq!(
            e.help(),
            "this looks like an AMQP port; --url is the management API, usually port 15672 (https 15671)"
        );

        let address = answering_server(b"SSH-2.0-OpenSSH_9.2\r\n").await;
        let e = client(&address).get_json("overview", "read the broker overview").await.unwrap_err();
        assert!(matches!(e, super::BrokerError::NotHttp { amqp: false, .. }), "{e:?}");
        assert!(e.help().contains("15672"), "{}", e.help());
    }

    /// A 404 on a broker-wide read (the overview, the vhosts): the URL is
    /// not the management API; a 404 on an object stays "not found".
    #[tokio::test]
    async fn a_missing_management_api_is_not_a_changed_object() {
        let address = answering_server(
            b"HTTP/1.1 404 Not Found\r\ncontent-type: text/html\r\ncontent-length: 9\r\nconnection: close\r\n\r\nNot Found",
        )
        .await;
        let http = client(&format!("{address}/prefix"));
        for (path, action) in [("overview", "read the broker overview"), ("vhosts?columns=name", "list the vhosts")] {
            let e = http.get_json(path, action).await.unwrap_err();
            assert!(matches!(e, super::BrokerError::NotManagementApi { .. }), "{e:?}");
            let said = e.to_string();
            assert!(said.contains("is not a RabbitMQ management API"), "{said}");
            assert!(said.contains("/prefix/api/"), "{said}");
            assert!(!said.contains("guest"), "{said}");
            assert!(!e.help().contains("since the plan"), "{}", e.help());
            assert!(e.help().contains("http://HOST:15672"), "{}", e.help());
        }
        let e = http.get_json("exchanges/v/x", "read exchange \"x\"").await.unwrap_err();
        assert!(matches!(e, super::BrokerError::NotFound { .. }), "{e:?}");
    }

    #[tokio::test]
    async fn a_post_is_not_repeated_blindly() {
        let (address, seen) = dropping_server(1).await;
        let sent = client(&address).send(reqwest::Method::POST, "exchanges/v/x/publish", None, "publish").await;
        assert!(matches!(sent, Err(super::BrokerError::Unreachable { .. })), "{sent:?}");
        assert_eq!(seen.lock().unwrap().len(), 1, "sent once");
    }

    /// A server that reads each request and never answers it. Gives its
    /// address and how many connections it took.
    pub(in crate::broker) async fn silent_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = format!("http://guest:guest@{}", listener.local_addr().unwrap());
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = seen.clone();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    while socket.read(&mut buf).await.is_ok_and(|n| n > 0) {}
                });
            }
        });
        (address, seen)
    }

    /// A read that outlasts `--request-timeout` is said as such, once: a
    /// broker slow to answer a large read is not asked it twice more.
    #[tokio::test]
    async fn a_read_longer_than_the_request_timeout_is_said_and_not_sent_again() {
        let (address, seen) = silent_server().await;
        let mut endpoint = super::super::endpoint::Endpoint::parse(&address, Default::default()).unwrap();
        endpoint.timeout = Some(std::time::Duration::from_millis(300));
        let http = super::Http::new(endpoint).unwrap();
        let e = http.get_json("definitions/v", "read the definitions of vhost \"v\"").await.unwrap_err();
        assert!(matches!(e, super::BrokerError::TimedOut { .. }), "{e:?}");
        let said = e.to_string();
        assert!(said.contains("did not answer within 0.3 s (--request-timeout)"), "{said}");
        assert!(said.starts_with("could not read the definitions of vhost \"v\""), "{said}");
        assert!(!said.contains("guest"), "{said}");
        assert!(e.help().contains("--request-timeout"), "{}", e.help());
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 1, "asked once");
    }
}
