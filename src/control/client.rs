//! The client of the HTTP control API, for `crawltop ctl` and the tests: one request on its
//! own connection through reqwest.
//!
//! It owns the checks on what it is asked to send and the bound on what it reads. It must
//! never follow a redirect, use a proxy or talk TLS: the API is plain HTTP at a known address.

use std::io::{Error, ErrorKind};
use std::net::SocketAddr;
use std::time::Duration;

/// The client's patience for a whole exchange.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);
/// The client refuses answers larger than this.
const CLIENT_MAX_RESPONSE: usize = 256 * 1024 * 1024;

/// Response header names (lowercased) and values, in order.
pub(super) type Headers = Vec<(String, String)>;
/// Status, headers and body of one answer.
pub(super) type Answer = (u16, Headers, String);

/// One exchange with a control API: `METHOD path` on its own connection, with the bearer
/// token if given. Returns the status and the body (lossy UTF-8). Gives up after 30 s.
pub async fn client_request(
    addr: SocketAddr,
    token: Option<&str>,
    method: &str,
    path: &str,
) -> Result<(u16, String), Error> {
    let (status, _, body) = exchange(addr, token, method, path).await?;
    Ok((status, body))
}

/// The client's exchange, with the response headers (lowercased names) for the tests.
pub(super) async fn exchange(
    addr: SocketAddr,
    token: Option<&str>,
    method: &str,
    path: &str,
) -> Result<Answer, Error> {
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(invalid_input("the method must be upper-case letters"));
    }
    if !path.starts_with('/') || !path.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid_input(
            "the path must start with / and hold no spaces or control characters",
        ));
    }
    if token.is_some_and(|t| t.is_empty() || !t.bytes().all(|b| b.is_ascii_graphic())) {
        return Err(invalid_input(
            "the token must be non-empty visible ASCII without spaces",
        ));
    }
    let method = reqwest::Method::from_bytes(method.as_bytes())
        .map_err(|_| invalid_input("the method must be upper-case letters"))?;
    // reqwest is built without a default crypto provider; installing twice is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(CLIENT_TIMEOUT)
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| Error::other(format!("cannot build the HTTP client: {e}")))?;
    let mut request = client.request(method, format!("http://{addr}{path}"));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let mut response = request.send().await.map_err(|e| from_reqwest(addr, &e))?;
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| from_reqwest(addr, &e))? {
        if body.len() + chunk.len() > CLIENT_MAX_RESPONSE {
            return Err(Error::new(
                ErrorKind::InvalidData,
                "the answer is too large",
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((status, headers, String::from_utf8_lossy(&body).into_owned()))
}

fn invalid_input(what: &str) -> Error {
    Error::new(ErrorKind::InvalidInput, what.to_string())
}

/// An I/O error with the kind and the words of the deepest I/O cause (refused, reset: what a
/// person can act on), else the whole chain's words.
fn from_reqwest(addr: SocketAddr, e: &reqwest::Error) -> Error {
    if e.is_timeout() {
        return Error::new(
            ErrorKind::TimedOut,
            format!("no complete answer from {addr} within {CLIENT_TIMEOUT:?}"),
        );
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut deepest_io = None;
    let mut words = Vec::new();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<Error>() {
            deepest_io = Some(io);
        }
        words.push(s.to_string());
        source = s.source();
    }
    match deepest_io {
        Some(io) => Error::new(io.kind(), io.to_string()),
        None => Error::other(words.join(": ")),
    }
}
