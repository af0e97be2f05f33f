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
                if let Some(k) = key {
                    pem.extend(read(k)?);
                }
                let id = reqwest::Identity::from_pem(&pem)
                    .map_err(|e| BrokerError::Setup(format!("the client certificate or key is not usable PEM: {e}")))?;
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
    /// Returns the status and the body text.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Json>,
        action: &str,
    ) -> Result<(StatusCode, String), BrokerError> {
        let mut req = self
            .client
            .request(method, self.endpoint.api(path))
            .basic_auth(&self.endpoint.user, Some(self.endpoint.password()));
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| BrokerError::Unreachable { endpoint: self.endpoint.to_string(), detail: describe(&e) })?;
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
            StatusCode::UNAUTHORIZED if reason.contains("Login failed") => {
                BrokerError::BadCredentials { endpoint: self.endpoint.to_string(), user }
            }
            StatusCode::UNAUTHORIZED if reason.contains("Not management user") => {
                BrokerError::NotManagementUser { user }
            }
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                BrokerError::Forbidden { user, action: action.to_string() }
            }
            StatusCode::NOT_FOUND => BrokerError::NotFound { action: action.to_string() },
            s => BrokerError::Refused { action: action.to_string(), status: s.as_u16(), reason },
        })
    }

    /// GET and parse JSON.
    pub async fn get_json(&self, path: &str, action: &str) -> Result<Json, BrokerError> {
        let (_, text) = self.send(Method::GET, path, None, action).await?;
        serde_json::from_str(&text).map_err(|e| BrokerError::Refused {
            action: action.to_string(),
            status: 200,
            reason: format!("the answer is not JSON: {e}"),
        })
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
    fn broker_reasons_read_as_written() {
        let r = "Validation failed\n\n[{&lt;&lt;\"federation-upstream-set\"&gt;&gt;,&lt;&lt;\"all\"&gt;&gt;}] are not recognised policy settings\n";
        assert_eq!(
            readable(r),
            "Validation failed: [{<<\"federation-upstream-set\">>,<<\"all\">>}] are not recognised policy settings"
        );
        assert_eq!(readable("queue 'q' in vhost 'v' not empty"), "queue 'q' in vhost 'v' not empty");
    }
}
