//! One plain-HTTP exchange, for the daemon health and sentinel checks.
//!
//! The daemon serves plain `http://` on its frozen ports, so the client is
//! `ureq` without TLS, compression or proxy (an `HTTP_PROXY` in the
//! environment is never honoured: the check talks to the daemon itself).
//! Every bound is explicit:
//!
//! - the whole exchange, from the name lookup to the last body byte, within
//!   the caller's timeout (ureq's global timeout; the lookup also has its
//!   own bound, so a hanging resolver cannot outlive it);
//! - one connect within [`HTTP_CONNECT_TIMEOUT_MS`] (or what is left);
//! - status line and headers within [`HTTP_HEADER_BYTES_MAX`] bytes, the
//!   body within [`HTTP_RESPONSE_BYTES_MAX`];
//! - no redirect is followed (a 3xx is the answer), no connection is kept.
//!
//! The URL is checked here first ([`parse_http_url`]): `http://` only, no
//! user info (a credential in a URL), no fragment, bounded.

use std::time::{Duration, Instant};

use ureq::config::AutoHeaderValue;
use ureq::http;

/// Longest wait for one TCP connect, in milliseconds.
pub const HTTP_CONNECT_TIMEOUT_MS: u64 = 5_000;
pub use crate::limits::HTTP_HEADER_BYTES_MAX;
pub use crate::limits::HTTP_RESPONSE_BYTES_MAX;
pub use crate::limits::URL_BYTES_MAX;

// ---------------------------------------------------------------------------
// URLs
// ---------------------------------------------------------------------------

/// A parsed `http://host[:port][/path]` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpUrl {
    /// Host name or IP literal (IPv6 without brackets).
    pub host: String,
    /// Port (80 when the URL has none).
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
}

impl HttpUrl {
    /// The URL as text, always with its port.
    pub fn text(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("http://{host}:{}{}", self.port, self.path)
    }
}

/// Parses a plain-HTTP URL. Refuses `https://` (this client has no TLS),
/// user info (a credential in a URL), fragments and control characters.
pub fn parse_http_url(url: &str) -> Result<HttpUrl, String> {
    if url.len() > URL_BYTES_MAX {
        return Err(format!(
            "url is {} bytes, over the limit of {URL_BYTES_MAX}",
            url.len()
        ));
    }
    if url.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err("url contains a space or control character".into());
    }
    let rest =
        match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => return Err(
                "https urls are not supported: the daemon serves plain http on its frozen ports"
                    .into(),
            ),
            _ => return Err(format!("url {url:?} is not http://host[:port][/path]")),
        };
    if url.contains('#') {
        return Err("url must not contain a fragment".into());
    }
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    if authority.contains('@') {
        return Err("url must not contain user info (never put a credential in a url)".into());
    }
    let (host, port) = split_authority(authority)?;
    if host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-_:".contains(&b))
    {
        return Err(format!("url host {host:?} is empty or malformed"));
    }
    let port = match port {
        None => 80,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(format!("url port {p:?} is not 1..=65535")),
        },
    };
    Ok(HttpUrl { host, port, path })
}

/// `host[:port]` or `[v6][:port]`: the host (without brackets) and the port
/// text, if any.
fn split_authority(authority: &str) -> Result<(String, Option<&str>), String> {
    let Some(v6) = authority.strip_prefix('[') else {
        return Ok(match authority.split_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        });
    };
    let (h, after) = v6
        .split_once(']')
        .ok_or_else(|| format!("url host {authority:?} lacks its closing ']'"))?;
    let port = match after {
        "" => None,
        p => Some(
            p.strip_prefix(':')
                .ok_or_else(|| format!("url authority {authority:?} is malformed"))?,
        ),
    };
    if h.is_empty()
        || !h
            .bytes()
            .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
    {
        return Err(format!("url host {h:?} is not an IPv6 literal"));
    }
    Ok((h.to_string(), port))
}

// ---------------------------------------------------------------------------
// One exchange
// ---------------------------------------------------------------------------

/// The request methods the checks use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET` (no body).
    Get,
    /// `POST` with a body.
    Post,
    /// `PUT` with a body.
    Put,
}

impl Method {
    fn as_http(self) -> http::Method {
        match self {
            Method::Get => http::Method::GET,
            Method::Post => http::Method::POST,
            Method::Put => http::Method::PUT,
        }
    }
}

/// A complete HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    /// Header names (lowercase) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body (chunked encoding removed).
    pub body: Vec<u8>,
    /// From before the name lookup to the last byte of the answer, ms.
    pub latency_ms: u64,
}

impl HttpResponse {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why an exchange gave no complete answer. `latency_ms` is how long it
/// took to fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpFailure {
    /// What went wrong (lowercase, never a credential).
    pub error: String,
    /// Elapsed, ms.
    pub latency_ms: u64,
}

/// The agent of one exchange: every bound of the module doc, no proxy, no
/// redirect, no pool, statuses as answers (not errors).
fn agent(timeout: Duration) -> ureq::Agent {
    let connect = timeout.min(Duration::from_millis(HTTP_CONNECT_TIMEOUT_MS));
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .timeout_resolve(Some(timeout))
        .timeout_connect(Some(connect))
        .proxy(None)
        .http_status_as_error(false)
        .max_redirects(0)
        .max_redirects_will_error(false)
        .max_idle_connections(0)
        .max_idle_connections_per_host(0)
        .max_response_header_size(HTTP_HEADER_BYTES_MAX)
        .user_agent(format!("benchledger/{}", env!("CARGO_PKG_VERSION")))
        .accept("*/*")
        .accept_encoding(AutoHeaderValue::None)
        .build();
    ureq::Agent::new_with_config(config)
}

/// Sends one request and reads the whole answer within `timeout` (name
/// lookup included), `HTTP_CONNECT_TIMEOUT_MS` per connect,
/// `HTTP_HEADER_BYTES_MAX` and `HTTP_RESPONSE_BYTES_MAX`.
pub fn exchange(
    method: Method,
    url: &HttpUrl,
    headers: &[(String, String)],
    body: &[u8],
    timeout: Duration,
) -> Result<HttpResponse, HttpFailure> {
    exchange_limited(
        method,
        url,
        headers,
        body,
        timeout,
        HTTP_RESPONSE_BYTES_MAX as u64,
    )
}

/// `exchange` with the caller's bound on the response body, in bytes
/// (a tiles log's record bundle is larger than `HTTP_RESPONSE_BYTES_MAX`).
pub fn exchange_limited(
    method: Method,
    url: &HttpUrl,
    headers: &[(String, String)],
    body: &[u8],
    timeout: Duration,
    limit: u64,
) -> Result<HttpResponse, HttpFailure> {
    let start = Instant::now();
    let fail = |error: String| HttpFailure {
        error,
        latency_ms: start.elapsed().as_millis() as u64,
    };
    let mut request = http::Request::builder()
        .method(method.as_http())
        .uri(url.text());
    for (k, v) in headers {
        if k.bytes().chain(v.bytes()).any(|b| b == b'\r' || b == b'\n') {
            return Err(fail(format!("header {k} contains a line break")));
        }
        request = request.header(k.as_str(), v.as_str());
    }
    let agent = agent(timeout);
    let answer = match method {
        Method::Get => request.body(()).map(|r| agent.run(r)),
        Method::Post | Method::Put => request.body(body).map(|r| agent.run(r)),
    }
    .map_err(|e| fail(format!("cannot build the request: {e}")))?;
    let response = answer.map_err(|e| fail(describe(&e, url, timeout)))?;
    let (parts, mut response_body) = response.into_parts();
    if let Some(length) = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|n| *n > limit)
    {
        return Err(fail(format!(
            "response body of {length} bytes is over the limit of {limit}"
        )));
    }
    let body = response_body
        .with_config()
        .limit(limit)
        .read_to_vec()
        .map_err(|e| fail(describe(&e, url, timeout)))?;
    Ok(HttpResponse {
        status: parts.status.as_u16(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                let value = String::from_utf8_lossy(v.as_bytes()).trim().to_string();
                (k.as_str().to_string(), value)
            })
            .collect(),
        body,
        latency_ms: start.elapsed().as_millis() as u64,
    })
}

/// One line saying why an exchange failed, naming the bound it hit.
fn describe(error: &ureq::Error, url: &HttpUrl, timeout: Duration) -> String {
    let host = &url.host;
    let port = url.port;
    match error {
        ureq::Error::Timeout(ureq::Timeout::Connect) => format!(
            "cannot connect to {host}:{port} within {} ms",
            timeout
                .min(Duration::from_millis(HTTP_CONNECT_TIMEOUT_MS))
                .as_millis()
        ),
        ureq::Error::Timeout(ureq::Timeout::Resolve) => {
            format!("cannot resolve {host} within {} ms", timeout.as_millis())
        }
        ureq::Error::Timeout(phase) => format!(
            "no complete answer within {} ms (timed out in phase: {phase})",
            timeout.as_millis()
        ),
        ureq::Error::HostNotFound => format!("cannot resolve {host}: no address found"),
        // std's getaddrinfo failure has no stable kind, only this text.
        ureq::Error::Io(e) if e.to_string().starts_with("failed to lookup address") => {
            format!("cannot resolve {host}: {e}")
        }
        ureq::Error::Io(e) if is_connect_error(e.kind()) => {
            format!("cannot connect to {host}:{port}: {e}")
        }
        ureq::Error::Io(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            format!("the connection to {host}:{port} closed before a complete answer")
        }
        ureq::Error::Io(e) => format!("exchange with {host}:{port} failed: {e}"),
        ureq::Error::LargeResponseHeader(_, _) => {
            format!("response headers over {HTTP_HEADER_BYTES_MAX} bytes")
        }
        ureq::Error::BodyExceedsLimit(_) => {
            format!("response body over the limit of {HTTP_RESPONSE_BYTES_MAX} bytes")
        }
        ureq::Error::Protocol(e) => format!("malformed answer from {host}:{port}: {e}"),
        other => format!("exchange with {host}:{port} failed: {other}"),
    }
}

fn is_connect_error(kind: std::io::ErrorKind) -> bool {
    use std::io::ErrorKind;
    matches!(
        kind,
        ErrorKind::ConnectionRefused
            | ErrorKind::HostUnreachable
            | ErrorKind::NetworkUnreachable
            | ErrorKind::AddrNotAvailable
    )
}

#[cfg(test)]
#[path = "http_tests.rs"]
mod tests;
