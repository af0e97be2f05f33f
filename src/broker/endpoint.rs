//! Where the management API is and how to authenticate, with the secret
//! kept out of every message.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use url::Url;

/// TLS material for HTTPS: a private CA and a client certificate.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Tls {
    pub ca_cert: Option<PathBuf>,
    pub client_cert: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
}

/// How long a request may take by default, its answer read in full: as
/// long as the management listener keeps a request by default (two
/// minutes on 3.10.8), past which the broker closes the connection anyway.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// The management API's address and credentials.
#[derive(Clone)]
pub struct Endpoint {
    /// Scheme, host and port (and a path prefix, if any), never credentials.
    pub base: Url,
    pub user: String,
    password: String,
    pub tls: Tls,
    /// How long one request may take, its answer read in full; `None`:
    /// as long as it takes.
    pub timeout: Option<Duration>,
}

impl Endpoint {
    /// Parses `http(s)://user:password@host:port[/prefix][/api]`; the user
    /// and password fall back to `guest`.
    pub fn parse(url: &str, tls: Tls) -> Result<Endpoint, String> {
        let mut parsed = Url::parse(url).map_err(|e| format!("the management URL is not valid: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!("the management URL must start with http:// or https://, not {}://", parsed.scheme()));
        }
        let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
        let user = if parsed.username().is_empty() { "guest".to_string() } else { decode(parsed.username()) };
        let password = parsed.password().map(decode).unwrap_or_else(|| "guest".to_string());
        // Dropping credentials from a URL with a host cannot fail.
        let _ = parsed.set_username("");
        let _ = parsed.set_password(None);
        // The management API lives at `/api` under the base: a URL with that
        // path, as users copy it, is the same broker (`…/api/api/overview`
        // would be not found).
        let path = parsed.path().trim_end_matches('/');
        let base = match path.len().checked_sub(4) {
            Some(at) if path[at..].eq_ignore_ascii_case("/api") => path[..at].to_string(),
            _ => path.to_string(),
        };
        parsed.set_path(&format!("{base}/"));
        Ok(Endpoint { base: parsed, user, password, tls, timeout: Some(REQUEST_TIMEOUT) })
    }

    pub fn password(&self) -> &str {
        &self.password
    }

    /// `http://host:15672/api/<path>`.
    pub fn api(&self, path: &str) -> String {
        format!("{}api/{path}", self.base)
    }
}

impl fmt::Display for Endpoint {
    /// The address as users may see it: no password, ever.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.base.as_str().trim_end_matches('/'))
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Endpoint({self}, user {})", self.user)
    }
}

/// Percent-encodes one path segment (the vhost `/` becomes `%2F`).
pub fn segment(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_reach_the_display_form() {
        let e = Endpoint::parse("https://ops:s3cr%40t@rabbit.example:15671/", Tls::default()).unwrap();
        assert_eq!(e.to_string(), "https://rabbit.example:15671");
        assert_eq!(e.user, "ops");
        assert_eq!(e.password(), "s3cr@t");
        assert!(!format!("{e:?}").contains("s3cr"));
    }

    /// The address users paste from the management UI's own pages ends in
    /// `/api`: the API lives there, so it is the same broker.
    #[test]
    fn a_url_with_the_api_path_is_the_management_api_itself() {
        for url in ["http://h:15672/api", "http://h:15672/api/", "http://h:15672/API", "http://h:15672"] {
            let e = Endpoint::parse(url, Tls::default()).unwrap();
            assert_eq!(e.to_string(), "http://h:15672", "{url}");
            assert_eq!(e.api("overview"), "http://h:15672/api/overview", "{url}");
        }
        // Behind a proxy's path prefix too; a prefix that only ends in "api" stays.
        let e = Endpoint::parse("https://u:p@proxy.example/rabbit/api/", Tls::default()).unwrap();
        assert_eq!(e.api("overview"), "https://proxy.example/rabbit/api/overview");
        let e = Endpoint::parse("http://h/myapi", Tls::default()).unwrap();
        assert_eq!(e.api("overview"), "http://h/myapi/api/overview");
    }

    #[test]
    fn segments_are_fully_encoded() {
        assert_eq!(segment("/"), "%2F");
        assert_eq!(segment("q/with space+plus"), "q%2Fwith%20space%2Bplus");
    }
}
