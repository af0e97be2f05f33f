//! A small client for the management HTTP API: every request warren makes
//! goes through [`Http::send`], which turns answers into [`BrokerError`]s.
//!
//! Why not the `rabbitmq_http_client` crate: it has no `internal` flag on
//! exchanges, no guarded (if-empty / if-unused) deletes, and typed
//! definitions that drop fields warren must see. The few endpoints warren
//! uses fit in this file.

use reqwest::{Method, StatusCode};
use serde_json::Value as Json;

use super::endpoint::Endpoint;
use super::error::BrokerError;

/// How long a connection may wait in the pool, in seconds.
const IDLE_SECS: u64 = 30;

#[derive(Clone)]
pub struct Http {
    endpoint: Endpoint,
    client: reqwest::Client,
}

impl Http {
    pub fn new(endpoint: Endpoint) -> Result<Http, BrokerError> {
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("warren/", env!("CARGO_PKG_VERSION")))
            .pool_max_idle_per_host(64)
            // Below the management listener's idle timeout (cowboy's 60 s):
            // a connection the broker is closing is not picked for a request.
            .pool_idle_timeout(std::time::Duration::from_secs(IDLE_SECS))
            .timeout(std::time::Duration::from_secs(120));
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
        let client = builder.build().map_err(|e| BrokerError::Setup(format!("cannot set up HTTPS: {e}")))?;
        Ok(Http { endpoint, client })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Sends one request; `action` completes "could not …" in errors.
    /// Returns the status and the body text. A request that can be
    /// repeated safely ([`repeatable`]) is sent again, twice, after a
    /// connection lost before its answer (a pooled connection the broker
    /// closed, a node restarting), and a read after a 5xx answer too.
    pub async fn send(
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
                _ => return result,
            }
        }
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
        let resp = req.send().await.map_err(|e| self.transport_error(&e))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| BrokerError::Unreachable { endpoint: self.endpoint.to_string(), detail: describe(&e) })?;
        if status.is_success() {
            return Ok((status, text));
        }
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
            StatusCode::NOT_FOUND => BrokerError::NotFound { action: action.to_string() },
            s => BrokerError::Refused { action: action.to_string(), status: s.as_u16(), reason },
        })
    }

    /// No answer: a TLS handshake that failed, said in words, or no
    /// connection at all.
    fn transport_error(&self, e: &reqwest::Error) -> BrokerError {
        let endpoint = self.endpoint.to_string();
        let detail = describe(e);
        match tls_problem(&detail, &self.endpoint.tls) {
            Some((problem, help)) => BrokerError::Tls { endpoint, problem, help },
            None => BrokerError::Unreachable { endpoint, detail },
        }
    }

    /// GET and parse JSON (a lost connection is tried again by `send`: the
    /// broker also closes idle keep-alive connections).
    pub async fn get_json(&self, path: &str, action: &str) -> Result<Json, BrokerError> {
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
        (
            "the broker does not speak TLS on this port",
            "use http:// in --url, or the port of the management TLS listener",
        )
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
mod tests {
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

    #[tokio::test]
    async fn a_post_is_not_repeated_blindly() {
        let (address, seen) = dropping_server(1).await;
        let sent = client(&address).send(reqwest::Method::POST, "exchanges/v/x/publish", None, "publish").await;
        assert!(matches!(sent, Err(super::BrokerError::Unreachable { .. })), "{sent:?}");
        assert_eq!(seen.lock().unwrap().len(), 1, "sent once");
    }
}
