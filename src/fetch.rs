//! The crawler's HTTP edge: one reqwest client, and one GET turned into one [`FetchOutcome`].
//!
//! It owns the client (pool, proxy, cookies, user agent), the limits (total patience, body cap)
//! and the phase a fetch is in, which the engine's snapshot reads from a [`PhaseCell`]. It never
//! follows a redirect, not even robots.txt's (RFC 9309 asks a crawler to follow those: the
//! engine does, each hop a contact of the site it lands on, under that site's politeness), never
//! holds more than the body cap of a body, never prints, and never panics on anything a server
//! sends: whatever happens ends as a value.
//!
//! Bodies are decoded here rather than by reqwest: reqwest's decompression removes
//! `Content-Encoding` from the headers, and the crawl needs it (stats, WARC records). Decoding
//! chunk by chunk into a capped buffer also makes the cap count decoded bytes, so a gzip bomb
//! costs no more memory than a plain page of the cap's size. Stacked codings are decoded in turn;
//! a body in any coding this client does not decode is kept whole as it came, and says so
//! ([`unsupported_coding`]), so that nothing downstream takes it for decoded.

use std::future::Future;
use std::io::Write as _;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use tokio::time::{Instant, timeout_at};
use url::Url;

pub mod kept;

/// RFC 9309, 2.3.1.2: crawlers should follow at least five consecutive redirects.
pub const ROBOTS_MAX_REDIRECTS: usize = 5;
/// RFC 9309, 2.5: a parsing limit of at least 500 kibibytes.
pub const ROBOTS_MAX_BYTES: u64 = 512_000;
/// Most a body buffer is sized for up front; longer bodies grow it as they arrive.
const RESERVE_LIMIT: usize = 1 << 20;
/// At most this many sends of one request ([`Fetcher::send`]): a stale pooled connection is
/// worth another try, an endless supply of them is not.
const MAX_SENDS: u32 = 8;

/// What the HTTP edge is allowed to do; the defaults are the documented ones.
#[derive(Debug, Clone)]
pub struct FetchConfig {
    /// The whole `User-Agent` header (the robots product token is the engine's business).
    pub user_agent: String,
    /// How long a new connection (DNS, TCP, TLS) may take.
    pub connect_timeout: Duration,
    /// Total patience for one fetch: connection, headers and body under one deadline.
    pub timeout: Duration,
    /// Body cap, counted after decoding; the rest of a longer body is never read.
    pub max_body_bytes: u64,
    /// Keep a cookie jar (cookies are scoped by domain, so effectively per site).
    pub cookies: bool,
    /// Send every request through this HTTP proxy; without it no proxy is used at all (the
    /// environment's proxy variables are never read).
    pub proxy: Option<Url>,
    /// Idle keep-alive connections kept per host.
    pub max_idle_per_host: usize,
    /// Sites that may keep a connection open between fetches, at once ([`kept`]).
    pub kept_sites: usize,
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            user_agent: concat!("crawltop/", env!("CARGO_PKG_VERSION")).to_string(),
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(30),
            max_body_bytes: 10 << 20,
            cookies: false,
            proxy: None,
            max_idle_per_host: 4,
            kept_sites: kept::MAX_KEPT / 4,
        }
    }
}

/// A client that cannot be built: the crawl cannot start with this configuration.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// reqwest would quietly read `file:///x` as `http://file/`: only plain proxy URLs pass.
    #[error("proxy {0}: only http:// and https:// proxies with a host are supported")]
    UnsupportedProxy(Url),
    #[error("proxy {url}: {source}")]
    Proxy {
        url: Url,
        #[source]
        source: reqwest::Error,
    },
    #[error("HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

/// Where a fetch stands, as the dashboard shows it. Stored in a [`PhaseCell`] as its `u8`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u8)]
pub enum Phase {
    Idle = 0,
    /// A new connection is being made (DNS, TCP, TLS); a pooled one skips this.
    Connecting = 1,
    /// The connection is up and the request sent; no response header yet.
    WaitingFirstByte = 2,
    /// Headers are in; the body is arriving.
    Receiving = 3,
    /// Set by the engine while it parses what arrived.
    Parsing = 4,
    /// The body is in; its parse waits for a thread of the parse pool (which is full).
    WaitingParse = 5,
}

impl Phase {
    fn from_u8(v: u8) -> Phase {
        match v {
            1 => Phase::Connecting,
            2 => Phase::WaitingFirstByte,
            3 => Phase::Receiving,
            4 => Phase::Parsing,
            5 => Phase::WaitingParse,
            _ => Phase::Idle,
        }
    }
}

/// One worker slot's current [`Phase`]: the fetch task writes it, the engine's snapshot reads it.
/// It also holds the status of the last response whose headers came in, so that the engine
/// counts a response the server sent even when its fetch then fails or is cut (a body that
/// timed out, a task cancelled by a stop): the server counted it.
///
/// Clones share the cell (it is an `Arc`), so the engine keeps one and hands one to the task;
/// the connector layer also needs an owned handle to mark a new connection.
#[derive(Debug, Clone, Default)]
pub struct PhaseCell(Arc<Cell>);

#[derive(Debug, Default)]
struct Cell {
    phase: AtomicU8,
    /// 0: no response headers since the last [`PhaseCell::take_answered`].
    answered: AtomicU16,
    /// New connections begun for this slot's fetches, ever (the connector layer counts them):
    /// a send that began none went out on a pooled connection.
    connects: AtomicU32,
}

impl PhaseCell {
    pub fn new() -> Self {
        PhaseCell::default()
    }

    pub fn set(&self, p: Phase) {
        self.0.phase.store(p as u8, Ordering::Relaxed);
    }

    pub fn get(&self) -> Phase {
        Phase::from_u8(self.0.phase.load(Ordering::Relaxed))
    }

    /// The status of the last response whose headers arrived since the last call, if any, and
    /// forgets it.
    pub fn take_answered(&self) -> Option<u16> {
        match self.0.answered.swap(0, Ordering::Relaxed) {
            0 => None,
            status => Some(status),
        }
    }

    fn set_answered(&self, status: u16) {
        self.0.answered.store(status, Ordering::Relaxed);
    }

    fn connects(&self) -> u32 {
        self.0.connects.load(Ordering::Relaxed)
    }

    /// Moves `from` to `to`, and leaves any other phase alone.
    fn advance(&self, from: Phase, to: Phase) {
        let _ = self.0.phase.compare_exchange(
            from as u8,
            to as u8,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }
}

/// A response, whatever its status: 3xx are returned, not followed.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The URL asked for (never a redirect target: none is followed).
    pub final_url: Url,
    /// The protocol version the server answered with, as a status line writes it
    /// (`HTTP/1.0`, `HTTP/1.1`, `HTTP/2.0`).
    pub version: &'static str,
    pub status: u16,
    pub content_type: Option<String>,
    pub location: Option<String>,
    pub retry_after: Option<String>,
    /// As the server sent it. The body is decoded when every coding listed is `gzip`,
    /// `x-gzip`, `deflate` or `br` (stacked ones too); when one is not, it is left as it came
    /// ([`Fetched::unsupported_coding`]).
    pub content_encoding: Option<String>,
    /// Every response header as received (non-UTF-8 bytes replaced), in order: for the WARC
    /// record.
    pub headers: Vec<(String, String)>,
    /// The decoded body, at most `max_body_bytes` long.
    pub body: Bytes,
    /// The body went past the cap: the rest was not read and the connection was dropped.
    pub truncated: bool,
    /// Why the body is not all here. A redirect stands without its body, as in a browser,
    /// which never reads it; for any other status a body that timed out or broke is a failure
    /// that keeps what came ([`FetchOutcome::Unfinished`]), and one that does not decode is
    /// [`FetchOutcome::Other`].
    pub dropped_body: Option<DroppedBody>,
    /// Body bytes as they came off the wire (before decoding): what the transfer cost.
    pub wire_bytes: u64,
    /// From the start of the fetch to the response headers.
    pub ttfb: Duration,
    /// From the start of the fetch to the end of the body.
    pub elapsed: Duration,
    /// The address the response came from (the proxy's, through a proxy), when the
    /// connection knows it: the WARC record's `WARC-IP-Address`.
    pub ip: Option<std::net::IpAddr>,
}

impl Fetched {
    /// A response as its headers say, its body still to come.
    fn headers_of(resp: &reqwest::Response, ttfb: Duration) -> Fetched {
        let headers = resp.headers();
        Fetched {
            ip: resp.remote_addr().map(|a| a.ip()),
            final_url: resp.url().clone(),
            version: version_name(resp.version()),
            status: resp.status().as_u16(),
            content_type: header_text(headers, &header::CONTENT_TYPE),
            location: header_text(headers, &header::LOCATION),
            retry_after: header_text(headers, &header::RETRY_AFTER),
            content_encoding: header_text(headers, &header::CONTENT_ENCODING),
            headers: headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.as_str().to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                    )
                })
                .collect(),
            body: Bytes::new(),
            truncated: false,
            dropped_body: None,
            wire_bytes: 0,
            ttfb,
            elapsed: Duration::ZERO,
        }
    }
}

/// Why a response's body is not all here ([`Fetched::dropped_body`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DroppedBody {
    /// It did not decode; dropped whole, since no part of it is known good.
    Undecodable(String),
    /// The connection ended before it did; what came is kept.
    Cut(String),
    /// The fetch's total patience ran out while it came; what came is kept.
    TimedOut,
}

impl std::fmt::Display for DroppedBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DroppedBody::Undecodable(why) => write!(f, "{why}"),
            DroppedBody::Cut(why) => write!(f, "body cut short: {why}"),
            DroppedBody::TimedOut => write!(f, "body timed out"),
        }
    }
}

/// How one GET ended.
#[derive(Debug, Clone)]
pub enum FetchOutcome {
    /// Any HTTP status, including 3xx (not followed), 4xx and 5xx.
    Response(Box<Fetched>),
    /// The total patience ran out in this phase before the headers came, or a new connection
    /// took longer than `connect_timeout` (`during: Connecting`).
    Timeout { during: Phase },
    /// No response at all: refused, reset or closed before a response, DNS failure.
    Connect(String),
    /// Anything else (an invalid response, a body that does not decode), with the error chain
    /// as text.
    Other(String),
    /// The headers of anything but a redirect came, then its body did not: the total patience
    /// ran out while it came ([`DroppedBody::TimedOut`]: a timeout while receiving) or the
    /// connection ended first ([`DroppedBody::Cut`], with the error chain: another failure).
    /// A failure of the fetch, but the server answered: what came (decoded as far as it came,
    /// at most the cap) is kept, for an archive to say so (WARC `time` or `disconnect`).
    Unfinished(Box<Fetched>),
}

/// How one robots.txt request ended; interpreting the status is the robots module's job, and
/// following a redirect the engine's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RobotsFetch {
    /// The answer: its status, and the body cut at [`ROBOTS_MAX_BYTES`].
    Response {
        status: u16,
        body: Bytes,
        retry_after: Option<String>,
    },
    /// A redirect to an `http` or `https` URL (the Location resolved against the request's
    /// URL). One without a usable Location is a `Response`: its status stands.
    Redirect(Url),
    /// Network failure or timeout: no status to go by. Also a 2xx whose body is in a content
    /// coding this client does not decode: no rules to go by.
    Unreachable(String),
    /// More than [`ROBOTS_MAX_REDIRECTS`] consecutive redirects (the engine counts them).
    TooManyRedirects,
}

/// A robots.txt request: how it ended, and the response it got (none when no server answered),
/// which a crawl keeps in its WARC files as it keeps a page's.
#[derive(Debug, Clone)]
pub struct RobotsFetched {
    pub fetch: RobotsFetch,
    /// The body cut at [`ROBOTS_MAX_BYTES`], as the answer's.
    pub responses: Vec<Fetched>,
}

/// The HTTP client and its limits. Cheap to clone: the client is shared.
#[derive(Debug, Clone)]
pub struct Fetcher {
    client: reqwest::Client,
    timeout: Duration,
    max_body_bytes: u64,
    kept: Arc<kept::KeptSites>,
}

impl Fetcher {
    pub fn new(cfg: &FetchConfig) -> Result<Fetcher, FetchError> {
        // reqwest is built without a default crypto provider; installing twice is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("gzip, deflate, br"),
        );
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(cfg.user_agent.as_str())
            .default_headers(headers)
            .connect_timeout(cfg.connect_timeout)
            .pool_max_idle_per_host(cfg.max_idle_per_host)
            .pool_idle_timeout(kept::IDLE)
            .cookie_store(cfg.cookies)
            .connector_layer(PhaseLayer);
        builder = match &cfg.proxy {
            Some(url) if !matches!(url.scheme(), "http" | "https") || !url.has_host() => {
                return Err(FetchError::UnsupportedProxy(url.clone()));
            }
            Some(url) => {
                let proxy =
                    reqwest::Proxy::all(url.as_str()).map_err(|source| FetchError::Proxy {
                        url: url.clone(),
                        source,
                    })?;
                builder.proxy(proxy)
            }
            None => builder.no_proxy(),
        };
        let client = builder.build().map_err(FetchError::Client)?;
        Ok(Fetcher {
            client,
            timeout: cfg.timeout,
            max_body_bytes: cfg.max_body_bytes,
            kept: Arc::new(kept::KeptSites::new(cfg.kept_sites)),
        })
    }

    /// One GET, redirects not followed, under the total patience and the body cap.
    pub async fn get(&self, url: &Url, phase: &PhaseCell) -> FetchOutcome {
        let deadline = Instant::now() + self.timeout;
        let outcome = self.fetch(url, phase, deadline, self.max_body_bytes).await;
        phase.set(Phase::Idle);
        outcome
    }

    /// GET `url`, a site's `/robots.txt` or a hop of its redirects, under the total patience;
    /// the body is cut at [`ROBOTS_MAX_BYTES`]. A redirect is returned, not followed.
    pub async fn robots(&self, url: &Url, phase: &PhaseCell) -> RobotsFetched {
        let deadline = Instant::now() + self.timeout;
        let outcome = self.fetch(url, phase, deadline, ROBOTS_MAX_BYTES).await;
        phase.set(Phase::Idle);
        let fetched = match outcome {
            // A status that is not 2xx stands on its own, whatever became of the body (a 404
            // allows all, a 503 is retried after its Retry-After); no rules can be read from
            // part of a 2xx file. Either way the response is kept for the WARC files, marked cut.
            FetchOutcome::Unfinished(f) if (200..300).contains(&f.status) => {
                let why = match &f.dropped_body {
                    Some(DroppedBody::Cut(why)) => format!("{url}: answered {}: {why}", f.status),
                    _ => format!("{url}: answered {}: body timed out", f.status),
                };
                return RobotsFetched {
                    fetch: RobotsFetch::Unreachable(why),
                    responses: vec![*f],
                };
            }
            FetchOutcome::Response(f) | FetchOutcome::Unfinished(f) => f,
            FetchOutcome::Timeout { during } => {
                let fetch = RobotsFetch::Unreachable(format!("{url}: timed out ({during:?})"));
                return RobotsFetched {
                    fetch,
                    responses: Vec::new(),
                };
            }
            FetchOutcome::Connect(e) | FetchOutcome::Other(e) => {
                return RobotsFetched {
                    fetch: RobotsFetch::Unreachable(e),
                    responses: Vec::new(),
                };
            }
        };
        // A redirect without a usable Location (or to another scheme) has nowhere to go: its
        // status stands.
        let next = is_redirect(fetched.status)
            .then_some(fetched.location.as_deref())
            .flatten()
            .and_then(|loc| url.join(loc).ok())
            .filter(|next| matches!(next.scheme(), "http" | "https") && next.has_host());
        let fetch = match next {
            Some(next) => RobotsFetch::Redirect(next),
            // Rules that cannot be read are not "no rules": as unreachable, retried, and in the
            // end a full disallow (RFC 9309 2.3.1.4), never allow-all from garbage.
            None if (200..300).contains(&fetched.status)
                && let Some(coding) = fetched.unsupported_coding() =>
            {
                RobotsFetch::Unreachable(format!(
                    "{url}: answered {} in a content coding crawltop does not decode ({coding})",
                    fetched.status
                ))
            }
            None => RobotsFetch::Response {
                status: fetched.status,
                body: fetched.body.clone(),
                retry_after: fetched.retry_after.clone(),
            },
        };
        RobotsFetched {
            fetch,
            responses: vec![*fetched],
        }
    }

    /// Sends the request and waits for the response's headers. A pooled connection the server
    /// closed as the request arrived on it (its idle timeout firing then) answers nothing: the
    /// request was not served, and it is sent again, as browsers do, until it goes out on a new
    /// connection (each failed try drops one stale connection from the pool). A new connection
    /// that fails is the server's answer, and is not retried.
    async fn send(
        &self,
        url: &Url,
        phase: &PhaseCell,
        deadline: Instant,
    ) -> Result<reqwest::Response, FetchOutcome> {
        let origin = url.origin().ascii_serialization();
        let mut tries = 0;
        loop {
            tries += 1;
            let connects = phase.connects();
            let mut request = self.client.get(url.clone());
            if !self.kept.admit(&origin, std::time::Instant::now()) {
                request = request.header(header::CONNECTION, "close");
            }
            let send = CURRENT_PHASE.scope(phase.clone(), request.send());
            match timeout_at(deadline, send).await {
                Err(_) => {
                    return Err(FetchOutcome::Timeout {
                        during: phase.get(),
                    });
                }
                Ok(Err(e)) if hung_up(&e) && phase.connects() == connects && tries < MAX_SENDS => {
                    phase.set(Phase::WaitingFirstByte);
                }
                Ok(Err(e)) => return Err(classify(&e)),
                Ok(Ok(resp)) => {
                    if closes(resp.headers()) {
                        self.kept.closed(&origin);
                    }
                    return Ok(resp);
                }
            }
        }
    }

    async fn fetch(
        &self,
        url: &Url,
        phase: &PhaseCell,
        deadline: Instant,
        cap: u64,
    ) -> FetchOutcome {
        let started = Instant::now();
        // A response of an earlier hop (robots.txt) is the caller's; this one starts unanswered.
        phase.take_answered();
        // A pooled connection goes straight to waiting; the connector layer marks Connecting
        // only when a new connection is really being made.
        phase.set(Phase::WaitingFirstByte);
        let mut resp = match self.send(url, phase, deadline).await {
            Ok(resp) => resp,
            Err(outcome) => return outcome,
        };
        let ttfb = started.elapsed();
        phase.set_answered(resp.status().as_u16());
        phase.set(Phase::Receiving);

        let mut fetched = Fetched::headers_of(&resp, ttfb);
        let cap = usize::try_from(cap).unwrap_or(usize::MAX);
        // The server's length is only a hint for the first allocation: never trusted past the
        // cap, nor past RESERVE_LIMIT, so a lying Content-Length cannot make a huge allocation.
        let hint = resp
            .content_length()
            .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let reserve = hint.min(cap).min(RESERVE_LIMIT);
        let mut decoder = Decoder::new(fetched.content_encoding.as_deref(), cap, reserve);

        // A redirect is followed on its headers, whatever becomes of its body.
        let redirect = is_redirect(fetched.status) && fetched.location.is_some();
        let mut dropped = None;
        let mut end = loop {
            let chunk = match timeout_at(deadline, resp.chunk()).await {
                Err(_) => {
                    dropped = Some(DroppedBody::TimedOut);
                    break Ok(());
                }
                Ok(Err(e)) => {
                    dropped = Some(DroppedBody::Cut(error_chain(&e)));
                    break Ok(());
                }
                Ok(Ok(None)) => break Ok(()),
                Ok(Ok(Some(chunk))) => chunk,
            };
            fetched.wire_bytes += chunk.len() as u64;
            if let Err(stop) = decoder.write(&chunk) {
                break Err(stop);
            }
        };
        // Dropping the response before its end closes the connection instead of draining it.
        drop(resp);
        if end.is_ok() && dropped.is_none() {
            end = decoder.finish();
        }
        match end {
            Ok(()) => {}
            Err(Stop::Full) => fetched.truncated = true,
            Err(Stop::Invalid(why)) => {
                let why = format!(
                    "body does not decode as {}: {why}",
                    fetched.content_encoding.as_deref().unwrap_or("identity")
                );
                if !redirect {
                    return FetchOutcome::Other(format!("{url}: {why}"));
                }
                fetched.dropped_body = Some(DroppedBody::Undecodable(why));
                fetched.elapsed = started.elapsed();
                return FetchOutcome::Response(Box::new(fetched));
            }
        }
        fetched.body = Bytes::from(match dropped {
            Some(_) => decoder.take_partial(),
            None => decoder.take_body(),
        });
        fetched.elapsed = started.elapsed();
        let unfinished = dropped.is_some() && !redirect;
        fetched.dropped_body = dropped;
        if unfinished {
            return FetchOutcome::Unfinished(Box::new(fetched));
        }
        FetchOutcome::Response(Box::new(fetched))
    }
}

/// How a status line names an HTTP version.
fn version_name(version: reqwest::Version) -> &'static str {
    match version {
        reqwest::Version::HTTP_09 => "HTTP/0.9",
        reqwest::Version::HTTP_10 => "HTTP/1.0",
        reqwest::Version::HTTP_2 => "HTTP/2.0",
        reqwest::Version::HTTP_3 => "HTTP/3.0",
        _ => "HTTP/1.1",
    }
}

/// The statuses a browser follows the Location of (the Fetch standard's redirect statuses): not
/// 300, 304 or 305, whatever headers they carry.
pub fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// All values of a header, joined as HTTP joins repeated fields; bytes that are not UTF-8
/// are replaced rather than failing the fetch.
fn header_text(headers: &HeaderMap, name: &HeaderName) -> Option<String> {
    let mut values = headers.get_all(name).iter();
    let first = String::from_utf8_lossy(values.next()?.as_bytes()).into_owned();
    Some(values.fold(first, |mut acc, v| {
        acc.push_str(", ");
        acc.push_str(&String::from_utf8_lossy(v.as_bytes()));
        acc
    }))
}

/// Sorts an error from sending the request (no response yet) into the outcome.
fn classify(e: &reqwest::Error) -> FetchOutcome {
    if e.is_connect() && e.is_timeout() {
        return FetchOutcome::Timeout {
            during: Phase::Connecting,
        };
    }
    if e.is_connect() || hung_up(e) {
        return FetchOutcome::Connect(error_chain(e));
    }
    FetchOutcome::Other(error_chain(e))
}

/// The server closes the connection after this answer (`Connection: close`).
fn closes(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("close"))
}

/// Whether the peer closed or reset the connection before any response came.
fn hung_up(e: &reqwest::Error) -> bool {
    use std::io::ErrorKind;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(h) = err.downcast_ref::<hyper::Error>()
            && h.is_incomplete_message()
        {
            return true;
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::BrokenPipe
                    | ErrorKind::UnexpectedEof
            )
        {
            return true;
        }
        source = err.source();
    }
    false
}

/// The error and its sources, outermost first, as one line.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(err) = source {
        let part = err.to_string();
        // Some layers repeat their source's message; once is enough.
        if !text.ends_with(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = err.source();
    }
    text
}

// ---------------------------------------------------------------------------------------------
// Connect / first-byte split.

tokio::task_local! {
    /// The cell of the fetch being sent, for the connector layer to mark a new connection.
    static CURRENT_PHASE: PhaseCell;
}

/// A connector layer: hyper calls the connector only when no pooled connection serves the
/// request, so this is where a fetch really is `Connecting`.
#[derive(Debug, Clone, Copy)]
struct PhaseLayer;

impl<S> tower_layer::Layer<S> for PhaseLayer {
    type Service = PhaseConnect<S>;

    fn layer(&self, inner: S) -> PhaseConnect<S> {
        PhaseConnect(inner)
    }
}

#[derive(Debug, Clone)]
struct PhaseConnect<S>(S);

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, R> tower_service::Service<R> for PhaseConnect<S>
where
    S: tower_service::Service<R>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        // Called from the fetch's own task, inside its scope.
        let _ = CURRENT_PHASE.try_with(|p| {
            p.0.connects.fetch_add(1, Ordering::Relaxed);
            p.set(Phase::Connecting);
        });
        let connecting = self.0.call(req);
        Box::pin(async move {
            let conn = connecting.await;
            // When a pooled connection won the race, hyper finishes this connect in a task of
            // its own: there the scope is absent and the fetch's phase is left alone.
            let _ =
                CURRENT_PHASE.try_with(|p| p.advance(Phase::Connecting, Phase::WaitingFirstByte));
            conn
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Body decoding under the cap.

/// Why writing to the body stopped early.
#[derive(Debug, PartialEq, Eq)]
enum Stop {
    /// The decoded body reached the cap with more to come.
    Full,
    /// The bytes do not decode as the announced coding.
    Invalid(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SinkState {
    Open,
    /// More was offered than the cap allows; every later write is refused.
    Overflowed,
}

/// The decoded body: takes bytes up to the cap and refuses the rest, so a decoder writing
/// into it stops as soon as the cap is passed.
#[derive(Debug)]
struct Sink {
    buf: Vec<u8>,
    cap: usize,
    state: SinkState,
}

impl Sink {
    fn new(cap: usize, reserve: usize) -> Sink {
        Sink {
            buf: Vec::with_capacity(reserve),
            cap,
            state: SinkState::Open,
        }
    }
}

impl std::io::Write for Sink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let room = self.cap - self.buf.len();
        if self.state == SinkState::Overflowed || data.len() > room {
            self.buf.extend_from_slice(&data[..room.min(data.len())]);
            self.state = SinkState::Overflowed;
            return Err(std::io::Error::other("body cap reached"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A content coding this client decodes (and asks for: `Accept-Encoding: gzip, deflate, br`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Coding {
    Gzip,
    Deflate,
    Brotli,
}

/// The codings of a `Content-Encoding` value in the order the server applied them, or the first
/// one this client does not decode. `identity` (no coding) and empty list elements are skipped.
fn codings(content_encoding: Option<&str>) -> Result<Vec<Coding>, String> {
    let Some(value) = content_encoding else {
        return Ok(Vec::new());
    };
    value
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty() && c != "identity")
        .map(|c| match c.as_str() {
            "gzip" | "x-gzip" => Ok(Coding::Gzip),
            "deflate" => Ok(Coding::Deflate),
            "br" => Ok(Coding::Brotli),
            _ => Err(c),
        })
        .collect()
}

/// The first content coding of `content_encoding` that this client does not decode, if any:
/// a body so labelled is kept as it came, every coding on it, and is no page to parse (nor
/// is its WARC record's `Content-Encoding` taken away).
pub fn unsupported_coding(content_encoding: Option<&str>) -> Option<String> {
    codings(content_encoding).err()
}

impl Fetched {
    /// The coding still on the body, named as in [`unsupported_coding`]: `None` when the body
    /// is decoded (or had no coding).
    pub fn unsupported_coding(&self) -> Option<String> {
        unsupported_coding(self.content_encoding.as_deref())
    }
}

/// One content coding as a streaming decoder writing into the next one; the last writes into
/// the [`Sink`]. Stacked codings (`Content-Encoding: gzip, br`) are decoded in the reverse
/// order of their listing (RFC 9110 8.4), so the wire goes into the last one listed.
enum Codec {
    Identity(Sink),
    /// Every member: RFC 1952 lets a gzip file be several members one after the other.
    Gzip(Box<GzipMembers>),
    /// `deflate` before its first two bytes are known: RFC 9110 says zlib-wrapped, but some
    /// servers send raw deflate, and the zlib header tells the two apart.
    DeflateUndecided(Box<Codec>, Vec<u8>),
    Zlib(Box<flate2::write::ZlibDecoder<Codec>>),
    RawDeflate(Box<flate2::write::DeflateDecoder<Codec>>),
    Brotli(Box<brotli_decompressor::DecompressorWriter<Codec>>),
}

impl Codec {
    /// `coding` decoded into `inner`.
    fn wrap(inner: Codec, coding: Coding) -> Codec {
        match coding {
            Coding::Gzip => Codec::Gzip(Box::new(GzipMembers::new(inner))),
            Coding::Deflate => Codec::DeflateUndecided(Box::new(inner), Vec::new()),
            Coding::Brotli => Codec::Brotli(Box::new(
                brotli_decompressor::DecompressorWriter::new(inner, 32 * 1024),
            )),
        }
    }

    fn sink(&self) -> &Sink {
        match self {
            Codec::Identity(s) => s,
            Codec::DeflateUndecided(inner, _) => inner.sink(),
            Codec::Gzip(d) => d.member.get_ref().sink(),
            Codec::Zlib(d) => d.get_ref().sink(),
            Codec::RawDeflate(d) => d.get_ref().sink(),
            Codec::Brotli(d) => d.get_ref().sink(),
        }
    }

    fn sink_mut(&mut self) -> &mut Sink {
        match self {
            Codec::Identity(s) => s,
            Codec::DeflateUndecided(inner, _) => inner.sink_mut(),
            Codec::Gzip(d) => d.member.get_mut().sink_mut(),
            Codec::Zlib(d) => d.get_mut().sink_mut(),
            Codec::RawDeflate(d) => d.get_mut().sink_mut(),
            Codec::Brotli(d) => d.get_mut().sink_mut(),
        }
    }

    /// Picks zlib or raw deflate from what is held, and feeds it on.
    fn decide_deflate(&mut self) -> std::io::Result<()> {
        let placeholder = Codec::Identity(Sink::new(0, 0));
        let Codec::DeflateUndecided(inner, held) = std::mem::replace(self, placeholder) else {
            unreachable!("decide_deflate is only called on an undecided deflate decoder");
        };
        // RFC 1950: method 8 in the low nibble, and the first two bytes a multiple of 31.
        let zlib = held.len() >= 2
            && held[0] & 0x0f == 8
            && (u16::from(held[0]) << 8 | u16::from(held[1])) % 31 == 0;
        *self = if zlib {
            Codec::Zlib(Box::new(flate2::write::ZlibDecoder::new(*inner)))
        } else {
            Codec::RawDeflate(Box::new(flate2::write::DeflateDecoder::new(*inner)))
        };
        self.write_all(&held)
    }

    /// The input is over: flushes what each decoder still holds, outermost first, and checks
    /// each stream ended.
    fn finish(&mut self) -> std::io::Result<()> {
        if matches!(self, Codec::DeflateUndecided(..)) {
            self.decide_deflate()?;
        }
        match self {
            Codec::Identity(_) | Codec::DeflateUndecided(..) => Ok(()),
            Codec::Gzip(d) => d.finish(),
            Codec::Zlib(d) => stream_ended(&d.write(&[0]))
                .and_then(|()| d.try_finish())
                .and_then(|()| d.get_mut().finish()),
            Codec::RawDeflate(d) => stream_ended(&d.write(&[0]))
                .and_then(|()| d.try_finish())
                .and_then(|()| d.get_mut().finish()),
            Codec::Brotli(d) => d.close().and_then(|()| d.get_mut().finish()),
        }
    }
}

impl std::io::Write for Codec {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        match self {
            Codec::Identity(s) => s.write(data),
            Codec::Gzip(d) => d.write(data),
            // After the end of the stream, bytes are ignored, as browsers and curl do.
            Codec::Zlib(d) => ignore_after_end(d.write(data), data),
            Codec::RawDeflate(d) => ignore_after_end(d.write(data), data),
            Codec::Brotli(d) => ignore_after_end(d.write(data), data),
            Codec::DeflateUndecided(_, held) => {
                held.extend_from_slice(data);
                if held.len() >= 2 {
                    self.decide_deflate()?;
                }
                Ok(data.len())
            }
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Codec::Identity(s) => s.flush(),
            Codec::Gzip(d) => d.member.flush(),
            Codec::Zlib(d) => d.flush(),
            Codec::RawDeflate(d) => d.flush(),
            Codec::Brotli(d) => d.flush(),
            Codec::DeflateUndecided(..) => Ok(()),
        }
    }
}

/// A decoder's answer to `data`: one that took nothing from a non-empty slice has ended its
/// stream, and what follows is trailing bytes, taken and dropped.
fn ignore_after_end(written: std::io::Result<usize>, data: &[u8]) -> std::io::Result<usize> {
    match written {
        Ok(0) if !data.is_empty() => Ok(data.len()),
        other => other,
    }
}

/// Whether a deflate stream reached its end, from a decoder's answer to one more byte: an ended
/// stream takes nothing more, one cut short takes it (or fails on it). flate2's `try_finish`
/// does not tell: it flushes what it has and says nothing of a stream that stops half-way.
fn stream_ended(probe: &std::io::Result<usize>) -> std::io::Result<()> {
    match probe {
        Ok(0) => Ok(()),
        _ => Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the compressed data stops before its end",
        )),
    }
}

/// The two bytes every gzip member starts with (RFC 1952 2.3.1).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// A gzip body of one member or several (RFC 1952 2.2), and after the last one anything that
/// does not start another member: trailing bytes some servers send, which browsers and curl
/// ignore, and so do we. (flate2's `MultiGzDecoder` takes them for a bad member header.)
struct GzipMembers {
    member: flate2::write::GzDecoder<Codec>,
    /// Members decoded whole before this one: a later "member" whose header does not read
    /// is trailing bytes that happen to start with the magic, not a body cut short.
    done: usize,
    /// The member's stream and footer are over: what comes next is another member or trailing
    /// bytes, which its first two bytes tell (`held` keeps them while they come).
    ended: bool,
    held: Vec<u8>,
    /// What followed the last member is not gzip: dropped.
    trailing: bool,
}

impl GzipMembers {
    fn new(inner: Codec) -> GzipMembers {
        GzipMembers {
            member: flate2::write::GzDecoder::new(inner),
            done: 0,
            ended: false,
            held: Vec::new(),
            trailing: false,
        }
    }

    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if data.is_empty() || self.trailing {
            return Ok(data.len());
        }
        if !self.ended {
            let n = match self.member.write(data) {
                Err(_) if self.in_trailing_bytes() => {
                    self.trailing = true;
                    return Ok(data.len());
                }
                written => written?,
            };
            if n > 0 {
                return Ok(n);
            }
            // The footer is whole: check it.
            self.member.try_finish()?;
            self.ended = true;
            self.done += 1;
        }
        let take = (GZIP_MAGIC.len() - self.held.len()).min(data.len());
        self.held.extend_from_slice(&data[..take]);
        if !GZIP_MAGIC.starts_with(&self.held) {
            self.trailing = true;
            return Ok(data.len());
        }
        if self.held.len() == GZIP_MAGIC.len() {
            // Another member: a new decoder over the same output, fed its magic.
            let placeholder = flate2::write::GzDecoder::new(Codec::Identity(Sink::new(0, 0)));
            let done = std::mem::replace(&mut self.member, placeholder);
            self.member = flate2::write::GzDecoder::new(done.finish()?);
            self.ended = false;
            let magic = std::mem::take(&mut self.held);
            self.member.write_all(&magic)?;
        }
        Ok(take)
    }

    /// The input is over: the last member must be whole (a lone first byte of another member
    /// counts as trailing).
    fn finish(&mut self) -> std::io::Result<()> {
        if !self.ended && !self.trailing && !self.in_trailing_bytes() {
            self.member.try_finish()?;
        }
        self.member.get_mut().finish()
    }

    /// A member after a whole one whose header has not read (yet): what follows the last
    /// member, if it goes wrong. A member whose header read and whose data then stops is a
    /// body cut short.
    fn in_trailing_bytes(&self) -> bool {
        self.done > 0 && self.member.header().is_none()
    }
}

/// Decodes a body chunk by chunk into a capped buffer.
struct Decoder {
    codec: Codec,
    /// Whether any byte came; an empty body (a 304, a redirect) has no stream to finish.
    fed: bool,
}

impl Decoder {
    /// A body in a coding this client does not decode ([`unsupported_coding`]) is kept as it came.
    fn new(content_encoding: Option<&str>, cap: usize, reserve: usize) -> Decoder {
        let sink = Codec::Identity(Sink::new(cap, reserve));
        let codec = match codings(content_encoding) {
            Ok(codings) => codings.into_iter().fold(sink, Codec::wrap),
            Err(_) => sink,
        };
        Decoder { codec, fed: false }
    }

    /// Feeds bytes as they came off the wire.
    fn write(&mut self, wire: &[u8]) -> Result<(), Stop> {
        self.fed |= !wire.is_empty();
        let written = self.codec.write_all(wire);
        self.check(written)
    }

    /// The body is over: flushes what the decoders still hold and checks the streams ended.
    fn finish(&mut self) -> Result<(), Stop> {
        if !self.fed {
            return Ok(());
        }
        let finished = self.codec.finish();
        self.check(finished)
    }

    fn check(&self, result: std::io::Result<()>) -> Result<(), Stop> {
        if self.codec.sink().state == SinkState::Overflowed {
            return Err(Stop::Full);
        }
        result.map_err(|e| {
            Stop::Invalid(match e.kind() {
                // A decoder whose stream has ended takes no more bytes, which `write_all` calls
                // "failed to write whole buffer".
                std::io::ErrorKind::WriteZero => {
                    "more bytes follow the end of the compressed data".to_owned()
                }
                _ => e.to_string(),
            })
        })
    }

    /// The decoded body of a stream that stopped before its end: what the decoders can give
    /// of the bytes that came (a flush; a stream that then fails to decode keeps what was
    /// decoded before), never more than the cap.
    fn take_partial(&mut self) -> Vec<u8> {
        let _ = std::io::Write::flush(&mut self.codec);
        self.take_body()
    }

    /// The decoded body; the decoder accepts nothing after this.
    fn take_body(&mut self) -> Vec<u8> {
        let sink = self.codec.sink_mut();
        // A decoder dropped later may still flush into the sink: refuse it.
        sink.state = SinkState::Overflowed;
        sink.cap = 0;
        std::mem::take(&mut sink.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    mod decoding {
        use super::*;

        fn decode(
            coding: Option<&str>,
            cap: usize,
            chunks: &[&[u8]],
        ) -> (Result<(), Stop>, Vec<u8>) {
            let mut d = Decoder::new(coding, cap, 0);
            let mut end = Ok(());
            for c in chunks {
                end = d.write(c);
                if end.is_err() {
                    break;
                }
            }
            if end.is_ok() {
                end = d.finish();
            }
            (end, d.take_body())
        }

        fn gzip(data: &[u8]) -> Vec<u8> {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).expect("in memory");
            e.finish().expect("in memory")
        }

        fn zlib(data: &[u8]) -> Vec<u8> {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).expect("in memory");
            e.finish().expect("in memory")
        }

        const PAGE: &[u8] = b"<html><body><p>hello, hello, hello</p></body></html>\n";

        #[test]
        fn identity_under_the_cap_arrives_whole() {
            let (end, body) = decode(None, 1000, &[&PAGE[..10], &PAGE[10..]]);
            assert_eq!(end, Ok(()));
            assert_eq!(body, PAGE);
        }

        #[test]
        fn a_body_exactly_at_the_cap_is_not_truncated() {
            let (end, body) = decode(None, PAGE.len(), &[PAGE]);
            assert_eq!(end, Ok(()));
            assert_eq!(body, PAGE);
        }

        #[test]
        fn a_body_over_the_cap_is_cut_exactly_at_it() {
            let (end, body) = decode(Some("identity"), 7, &[&PAGE[..5], &PAGE[5..]]);
            assert_eq!(end, Err(Stop::Full));
            assert_eq!(body, &PAGE[..7]);
        }

        #[test]
        fn gzip_is_decoded_across_chunks() {
            let wire = gzip(PAGE);
            let chunks: Vec<&[u8]> = wire.chunks(3).collect();
            let (end, body) = decode(Some("gzip"), 1000, &chunks);
            assert_eq!(end, Ok(()));
            assert_eq!(body, PAGE);
            let (end, body) = decode(Some(" X-GZIP "), 1000, &[&wire]);
            assert_eq!((end, body.as_slice()), (Ok(()), PAGE));
        }

        #[test]
        fn gzip_cap_counts_decoded_bytes() {
            let zeros = gzip(&vec![0u8; 8 << 20]);
            // Stacked, the cap counts the bytes of the last decoding.
            for (coding, wire) in [("gzip", zeros.clone()), ("gzip, gzip", gzip(&zeros))] {
                assert!(wire.len() < 64 << 10, "the test needs a small wire size");
                let (end, body) = decode(Some(coding), 1 << 20, &[&wire]);
                assert_eq!(end, Err(Stop::Full), "{coding}");
                assert_eq!(body.len(), 1 << 20);
                assert!(body.iter().all(|&b| b == 0));
            }
        }

        #[test]
        fn every_member_of_a_gzip_body_is_decoded() {
            let (first, second) = PAGE.split_at(PAGE.len() / 2);
            let wire = [gzip(first), gzip(second)].concat();
            for size in [1, 7, wire.len()] {
                let chunks: Vec<&[u8]> = wire.chunks(size).collect();
                let (end, body) = decode(Some("gzip"), 1000, &chunks);
                assert_eq!(end, Ok(()), "chunks of {size}");
                assert_eq!(body, PAGE, "chunks of {size}");
            }
            // The cap counts the decoded bytes of all members together.
            let (end, body) = decode(Some("gzip"), PAGE.len() - 1, &[&wire]);
            assert_eq!(end, Err(Stop::Full));
            assert_eq!(body, &PAGE[..PAGE.len() - 1]);
        }

        #[test]
        fn a_body_that_does_not_decode_says_why_plainly() {
            let cases = [
                ("gzip", b"this is not gzip at all".to_vec()),
                ("gzip", gzip(PAGE)[..20].to_vec()),
                // A second member whose header read, then cut: a body cut short.
                ("gzip", [gzip(PAGE), gzip(PAGE)[..20].to_vec()].concat()),
                (
                    "deflate",
                    [&zlib(PAGE)[..2], b"not deflate at all"].concat(),
                ),
                ("deflate", zlib(PAGE)[..10].to_vec()),
                ("deflate", zlib(PAGE)[..zlib(PAGE).len() - 4].to_vec()),
            ];
            for (coding, wire) in cases {
                let (end, _) = decode(Some(coding), 1000, &[&wire]);
                let Err(Stop::Invalid(why)) = end else {
                    panic!("{coding}: {end:?}");
                };
                assert!(!why.contains("whole buffer") && !why.is_empty(), "{why}");
            }
        }

        /// Bytes after the end of the compressed data (some servers append a newline or
        /// padding) are dropped, as browsers and curl drop them: the page is what they show.
        #[test]
        fn bytes_after_the_last_stream_are_ignored() {
            let two = [gzip(&PAGE[..10]), gzip(&PAGE[10..])].concat();
            let raw = {
                let mut e =
                    flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(PAGE).expect("in memory");
                e.finish().expect("in memory")
            };
            for junk in [
                &b"\n"[..],
                b"trailing junk",
                b"\x1f",
                b"\0\0\0\0",
                &[0x1f, 0x8b],
                b"\x1f\x8bbad",
            ] {
                for (coding, wire) in [
                    ("gzip", [gzip(PAGE), junk.to_vec()].concat()),
                    ("gzip", [two.clone(), junk.to_vec()].concat()),
                    ("deflate", [zlib(PAGE), junk.to_vec()].concat()),
                    ("deflate", [raw.clone(), junk.to_vec()].concat()),
                ] {
                    for size in [1, 3, wire.len()] {
                        let chunks: Vec<&[u8]> = wire.chunks(size).collect();
                        let (end, body) = decode(Some(coding), 1000, &chunks);
                        assert_eq!(end, Ok(()), "{coding} + {junk:?}, chunks of {size}");
                        assert_eq!(body, PAGE, "{coding} + {junk:?}, chunks of {size}");
                    }
                }
            }
        }

        #[test]
        fn gzip_garbage_is_invalid() {
            let (end, _) = decode(Some("gzip"), 1000, &[b"this is not gzip at all"]);
            assert!(matches!(end, Err(Stop::Invalid(_))), "{end:?}");
        }

        #[test]
        fn a_gzip_stream_cut_short_is_invalid() {
            let wire = gzip(PAGE);
            let (end, _) = decode(Some("gzip"), 1000, &[&wire[..wire.len() - 6]]);
            assert!(matches!(end, Err(Stop::Invalid(_))), "{end:?}");
        }

        #[test]
        fn an_empty_body_with_a_coding_is_empty() {
            for coding in ["gzip", "deflate", "br"] {
                let (end, body) = decode(Some(coding), 1000, &[]);
                assert_eq!(end, Ok(()), "{coding}");
                assert!(body.is_empty());
            }
        }

        #[test]
        fn deflate_is_decoded_zlib_wrapped_or_raw() {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(PAGE).expect("in memory");
            let zlib = z.finish().expect("in memory");
            let mut r =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            r.write_all(PAGE).expect("in memory");
            let raw = r.finish().expect("in memory");
            for wire in [zlib, raw] {
                // One byte at a time: the choice waits for two bytes.
                let chunks: Vec<&[u8]> = wire.chunks(1).collect();
                let (end, body) = decode(Some("deflate"), 1000, &chunks);
                assert_eq!(end, Ok(()));
                assert_eq!(body, PAGE);
            }
        }

        #[test]
        fn brotli_is_decoded() {
            let mut wire = Vec::new();
            {
                let mut w = brotli::CompressorWriter::new(&mut wire, 4096, 5, 22);
                w.write_all(PAGE).expect("in memory");
            }
            let chunks: Vec<&[u8]> = wire.chunks(4).collect();
            let (end, body) = decode(Some("br"), 1000, &chunks);
            assert_eq!(end, Ok(()));
            assert_eq!(body, PAGE);
            let (end, body) = decode(Some("br"), 10, &[&wire]);
            assert_eq!(end, Err(Stop::Full));
            assert_eq!(body, &PAGE[..10]);
            // Bytes after the stream's end are dropped, as for gzip and deflate; a stream cut
            // short is an error.
            let trailing = [wire.clone(), b"\n".to_vec()].concat();
            let (end, body) = decode(Some("br"), 1000, &[&trailing]);
            assert_eq!((end, body.as_slice()), (Ok(()), PAGE));
            let (end, _) = decode(Some("br"), 1000, &[&wire[..wire.len() - 3]]);
            assert!(matches!(end, Err(Stop::Invalid(_))), "{end:?}");
        }

        #[test]
        fn stacked_codings_are_decoded_last_listed_first() {
            let mut br = Vec::new();
            {
                let mut w = brotli::CompressorWriter::new(&mut br, 4096, 5, 22);
                w.write_all(&gzip(PAGE)).expect("in memory");
            }
            let mut raw =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            raw.write_all(PAGE).expect("in memory");
            let raw = raw.finish().expect("in memory");
            for (coding, wire) in [
                ("gzip, gzip", gzip(&gzip(PAGE))),
                ("gzip, br", br),
                ("deflate, gzip", gzip(&raw)),
                ("GZIP,deflate", zlib(&gzip(PAGE))),
                ("identity, gzip, identity", gzip(PAGE)),
                ("gzip,, gzip", gzip(&gzip(PAGE))),
            ] {
                for size in [1, wire.len()] {
                    let chunks: Vec<&[u8]> = wire.chunks(size).collect();
                    let (end, body) = decode(Some(coding), 1000, &chunks);
                    assert_eq!(
                        (end, body.as_slice()),
                        (Ok(()), PAGE),
                        "{coding}, chunks of {size}"
                    );
                }
                assert_eq!(unsupported_coding(Some(coding)), None, "{coding}");
            }
        }

        #[test]
        fn a_coding_this_client_does_not_decode_leaves_every_coding_on() {
            let wire = [b"\x28\xb5\x2f\xfd".as_slice(), &gzip(PAGE)].concat();
            for (coding, unsupported) in [
                ("zstd", "zstd"),
                ("gzip, zstd", "zstd"),
                ("compress , gzip", "compress"),
                ("x-unknown", "x-unknown"),
            ] {
                let (end, body) = decode(Some(coding), 1000, &[&wire]);
                assert_eq!(end, Ok(()), "{coding}");
                assert_eq!(body, wire, "{coding}: kept as it came");
                assert_eq!(
                    unsupported_coding(Some(coding)).as_deref(),
                    Some(unsupported),
                    "{coding}"
                );
            }
            for decoded in [None, Some(""), Some("identity"), Some(" Br ")] {
                assert_eq!(unsupported_coding(decoded), None, "{decoded:?}");
            }
        }
    }

    #[test]
    fn phase_cell_holds_every_phase() {
        let cell = PhaseCell::new();
        assert_eq!(cell.get(), Phase::Idle);
        for p in [
            Phase::Connecting,
            Phase::WaitingFirstByte,
            Phase::Receiving,
            Phase::Parsing,
            Phase::WaitingParse,
            Phase::Idle,
        ] {
            cell.set(p);
            assert_eq!(cell.get(), p);
            assert_eq!(cell.clone().get(), p, "clones share the cell");
        }
    }

    #[test]
    fn phases_serialize_in_snake_case() {
        let json = serde_json::to_string(&Phase::WaitingFirstByte).expect("serializes");
        assert_eq!(json, "\"waiting_first_byte\"");
    }

    #[test]
    fn repeated_headers_are_joined_and_bad_bytes_replaced() {
        let mut h = HeaderMap::new();
        h.append(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        h.append(header::CONTENT_ENCODING, HeaderValue::from_static("br"));
        h.append(
            header::LOCATION,
            HeaderValue::from_bytes(b"/caf\xe9").expect("obs-text is allowed"),
        );
        assert_eq!(
            header_text(&h, &header::CONTENT_ENCODING).as_deref(),
            Some("gzip, br")
        );
        assert_eq!(
            header_text(&h, &header::LOCATION).as_deref(),
            Some("/caf\u{fffd}")
        );
        assert_eq!(header_text(&h, &header::RETRY_AFTER), None);
    }

    mod phase_layer {
        use super::*;
        use tower_layer::Layer as _;
        use tower_service::Service as _;

        /// A connector that finishes when told to.
        #[derive(Clone)]
        struct Gate(Arc<tokio::sync::Notify>);

        impl tower_service::Service<()> for Gate {
            type Response = ();
            type Error = ();
            type Future = BoxFuture<Result<(), ()>>;

            fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ()>> {
                Poll::Ready(Ok(()))
            }

            fn call(&mut self, (): ()) -> Self::Future {
                let open = self.0.clone();
                Box::pin(async move {
                    open.notified().await;
                    Ok(())
                })
            }
        }

        #[tokio::test]
        async fn a_new_connection_is_connecting_until_it_is_up() {
            let open = Arc::new(tokio::sync::Notify::new());
            let mut svc = PhaseLayer.layer(Gate(open.clone()));
            let cell = PhaseCell::new();
            cell.set(Phase::WaitingFirstByte);
            let seen = CURRENT_PHASE
                .scope(cell.clone(), async {
                    let connecting = svc.call(());
                    let during = cell.get();
                    open.notify_one();
                    connecting.await.expect("gate opens");
                    (during, cell.get())
                })
                .await;
            assert_eq!(seen, (Phase::Connecting, Phase::WaitingFirstByte));
        }

        #[tokio::test]
        async fn a_connect_finished_in_the_background_leaves_the_phase_alone() {
            let open = Arc::new(tokio::sync::Notify::new());
            let mut svc = PhaseLayer.layer(Gate(open.clone()));
            let cell = PhaseCell::new();
            let connecting = CURRENT_PHASE.sync_scope(cell.clone(), || svc.call(()));
            assert_eq!(cell.get(), Phase::Connecting);
            // A pooled connection won; the fetch moved on, and hyper finishes this connect in a
            // task of its own.
            cell.set(Phase::Receiving);
            let background = tokio::spawn(connecting);
            open.notify_one();
            background.await.expect("no panic").expect("gate opens");
            assert_eq!(cell.get(), Phase::Receiving);
        }

        #[test]
        fn advance_moves_only_from_the_expected_phase() {
            let cell = PhaseCell::new();
            cell.set(Phase::Receiving);
            cell.advance(Phase::Connecting, Phase::WaitingFirstByte);
            assert_eq!(cell.get(), Phase::Receiving);
            cell.set(Phase::Connecting);
            cell.advance(Phase::Connecting, Phase::WaitingFirstByte);
            assert_eq!(cell.get(), Phase::WaitingFirstByte);
        }
    }

    #[test]
    fn a_proxy_that_is_not_http_is_refused_at_build_time() {
        let cfg = FetchConfig {
            proxy: Some(Url::parse("file:///tmp/proxy").expect("valid url")),
            ..FetchConfig::default()
        };
        assert!(matches!(
            Fetcher::new(&cfg),
            Err(FetchError::UnsupportedProxy(_))
        ));
    }

    #[test]
    fn a_user_agent_that_is_no_header_value_is_refused_at_build_time() {
        let cfg = FetchConfig {
            user_agent: "crawltop\r\nX-Injected: 1".into(),
            ..FetchConfig::default()
        };
        assert!(matches!(Fetcher::new(&cfg), Err(FetchError::Client(_))));
    }

    /// Against the project's test web and tiny servers on loopback; nothing else is contacted.
    mod network {
        use std::net::SocketAddr;

        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        use tokio::net::{TcpListener, TcpStream};
        use tokio::sync::mpsc;

        use super::*;
        use crate::testweb::manifest::RobotsRole;
        use crate::testweb::{GenOptions, HostileOptions, RequestRecord, TestWeb};

        /// Generous bound for waiting on an event; a test that needs it has failed anyway.
        const PATIENCE: Duration = Duration::from_secs(30);

        fn fetcher(tune: impl FnOnce(&mut FetchConfig)) -> Fetcher {
            let mut cfg = FetchConfig {
                user_agent: "crawltop-fetch-tests/1".into(),
                ..FetchConfig::default()
            };
            tune(&mut cfg);
            Fetcher::new(&cfg).expect("client builds")
        }

        fn url(s: &str) -> Url {
            Url::parse(s).expect("test URL")
        }

        async fn hostile_web(tune: impl FnOnce(&mut HostileOptions)) -> TestWeb {
            TestWeb::start_with(GenOptions::new(1, 3).hostile(true), |o| {
                o.hostile.stall = Duration::from_secs(5);
                o.hostile.trickle_interval = Duration::from_millis(50);
                tune(&mut o.hostile);
            })
            .await
            .expect("web starts")
        }

        async fn get(f: &Fetcher, u: &str) -> FetchOutcome {
            let phase = PhaseCell::new();
            let out = f.get(&url(u), &phase).await;
            assert_eq!(
                phase.get(),
                Phase::Idle,
                "a finished fetch leaves its slot idle"
            );
            out
        }

        fn response(out: FetchOutcome) -> Fetched {
            match out {
                FetchOutcome::Response(f) => *f,
                other => panic!("expected a response, got {other:?}"),
            }
        }

        async fn record_for(web: &TestWeb, path: &str) -> RequestRecord {
            tokio::time::timeout(
                PATIENCE,
                web.log().wait_until(|r| r.iter().any(|r| r.path == path)),
            )
            .await
            .expect("the request is logged");
            web.log()
                .records()
                .into_iter()
                .find(|r| r.path == path)
                .expect("logged above")
        }

        /// A tiny HTTP/1.1 server for what the test web lacks: one request per connection,
        /// answered by `answer` from the request head; every head goes to the receiver.
        async fn extra_server(
            answer: impl Fn(&str) -> Vec<u8> + Send + Sync + 'static,
        ) -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("bound");
            let (tx, rx) = mpsc::unbounded_channel();
            let answer = Arc::new(answer);
            tokio::spawn(async move {
                while let Ok((mut stream, _)) = listener.accept().await {
                    let (tx, answer) = (tx.clone(), answer.clone());
                    tokio::spawn(async move {
                        let Some(head) = read_head(&mut stream).await else {
                            return;
                        };
                        let reply = answer(&head);
                        let _ = tx.send(head);
                        let _ = stream.write_all(&reply).await;
                        let _ = stream.shutdown().await;
                    });
                }
            });
            (addr, rx)
        }

        async fn read_head(stream: &mut TcpStream) -> Option<String> {
            let mut head = Vec::new();
            let mut buf = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = stream.read(&mut buf).await.ok()?;
                if n == 0 || head.len() > 64 << 10 {
                    return None;
                }
                head.extend_from_slice(&buf[..n]);
            }
            Some(String::from_utf8_lossy(&head).into_owned())
        }

        fn reply(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
            let mut out = format!("HTTP/1.1 {status}\r\nConnection: close\r\n").into_bytes();
            for (k, v) in headers {
                out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
            }
            out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            out.extend_from_slice(body);
            out
        }

        fn path_of(head: &str) -> &str {
            head.split(' ').nth(1).unwrap_or("")
        }

        fn header_of<'a>(head: &'a str, name: &str) -> Option<&'a str> {
            head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim())
            })
        }

        async fn next_head(rx: &mut mpsc::UnboundedReceiver<String>) -> String {
            tokio::time::timeout(PATIENCE, rx.recv())
                .await
                .expect("a request arrives")
                .expect("server runs")
        }

        #[tokio::test]
        async fn a_plain_page_arrives_whole_with_its_type_and_timings() {
            let web = TestWeb::start(GenOptions::new(1, 3))
                .await
                .expect("web starts");
            let f = fetcher(|_| {});
            let page = response(get(&f, &web.url("site00", "/")).await);
            assert_eq!(page.status, 200);
            assert_eq!(page.content_type.as_deref(), Some("text/html"));
            assert_eq!(page.content_encoding, None);
            assert!(!page.truncated);
            assert!(page.ttfb <= page.elapsed);
            assert_eq!(page.final_url.as_str(), web.url("site00", "/"));
            let logged = record_for(&web, "/").await;
            assert!(logged.complete);
            assert_eq!(page.body.len() as u64, logged.bytes);
            assert_eq!(page.wire_bytes, logged.bytes);
            assert!(page.body.starts_with(b"<!DOCTYPE html>") || page.body.starts_with(b"<html"));
        }

        #[tokio::test]
        async fn a_redirect_is_returned_not_followed() {
            let web = hostile_web(|_| {}).await;
            let f = fetcher(|_| {});
            let moved = response(get(&f, &web.url("hostile", "/loop/a")).await);
            assert_eq!(moved.status, 302);
            assert_eq!(moved.location.as_deref(), Some("/loop/b"));
            // A later request's record proves the log has caught up with this client.
            let _ = get(&f, &web.url("hostile", "/robots.txt")).await;
            record_for(&web, "/robots.txt").await;
            let paths: Vec<String> = web.log().records().into_iter().map(|r| r.path).collect();
            assert_eq!(paths, ["/loop/a", "/robots.txt"]);
        }

        #[tokio::test]
        async fn a_huge_body_is_cut_at_the_cap_and_the_connection_dropped() {
            let web = hostile_web(|_| {}).await;
            let f = fetcher(|c| c.max_body_bytes = 1 << 20);
            let big = response(get(&f, &web.url("hostile", "/big.html")).await);
            assert_eq!(big.status, 200);
            assert_eq!(big.body.len(), 1 << 20);
            assert!(big.truncated);
            let logged = record_for(&web, "/big.html").await;
            assert!(!logged.complete, "the server saw the client go");
            // Of the 50 MB body: the 1 MiB taken, and what the loopback's socket buffers held
            // when the client left (they grow to several MB each; 10.98 MB sent was seen under
            // a full test run's load). Half the body would mean the client read on.
            assert!(logged.bytes < 25_000_000, "{} bytes sent", logged.bytes);
        }

        #[tokio::test]
        async fn a_gzip_bomb_is_cut_at_the_cap_after_decoding() {
            // The default bomb: 1 GiB of zeros unpacked.
            let web = hostile_web(|_| {}).await;
            let f = fetcher(|c| c.max_body_bytes = 1 << 20);
            let bomb = response(get(&f, &web.url("hostile", "/bomb.html")).await);
            assert_eq!(bomb.content_encoding.as_deref(), Some("gzip"));
            assert_eq!(bomb.body.len(), 1 << 20);
            assert!(bomb.body.iter().all(|&b| b == 0));
            assert!(bomb.truncated);
            assert!(
                bomb.wire_bytes < bomb.body.len() as u64,
                "the body was decoded"
            );
        }

        #[tokio::test]
        async fn a_trickling_body_times_out_while_receiving_and_keeps_what_came() {
            let web = hostile_web(|_| {}).await;
            // Long enough for the headers on a loaded machine; the body never ends anyway.
            let f = fetcher(|c| c.timeout = Duration::from_secs(1));
            let out = get(&f, &web.url("hostile", "/trickle.html")).await;
            let FetchOutcome::Unfinished(trickle) = out else {
                panic!("{out:?}");
            };
            assert_eq!(trickle.status, 200);
            assert_eq!(trickle.dropped_body, Some(DroppedBody::TimedOut));
            assert!(!trickle.body.is_empty(), "what came is kept");
            assert!(trickle.wire_bytes >= trickle.body.len() as u64);
        }

        #[tokio::test]
        async fn a_stalled_answer_times_out_waiting_for_the_first_byte() {
            let web = hostile_web(|_| {}).await;
            // Long enough for a loopback connect on a loaded machine; the stall is 5 s.
            let f = fetcher(|c| c.timeout = Duration::from_secs(1));
            let out = get(&f, &web.url("hostile", "/stall.html")).await;
            assert!(
                matches!(
                    out,
                    FetchOutcome::Timeout {
                        during: Phase::WaitingFirstByte
                    }
                ),
                "{out:?}"
            );
        }

        #[tokio::test]
        async fn a_handshake_that_never_ends_times_out_connecting() {
            // A TLS client hello to a server that never answers: the connector itself waits.
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("bound");
            tokio::spawn(async move {
                let mut held = Vec::new();
                while let Ok((stream, _)) = listener.accept().await {
                    held.push(stream);
                }
            });
            let f = fetcher(|c| c.timeout = Duration::from_millis(300));
            let out = get(&f, &format!("https://{addr}/")).await;
            assert!(
                matches!(
                    out,
                    FetchOutcome::Timeout {
                        during: Phase::Connecting
                    }
                ),
                "{out:?}"
            );
        }

        #[tokio::test]
        async fn a_slow_connection_is_cut_by_the_connect_timeout() {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("bound");
            tokio::spawn(async move {
                let mut held = Vec::new();
                while let Ok((stream, _)) = listener.accept().await {
                    held.push(stream);
                }
            });
            let f = fetcher(|c| c.connect_timeout = Duration::from_millis(200));
            let out = get(&f, &format!("https://{addr}/")).await;
            assert!(
                matches!(
                    out,
                    FetchOutcome::Timeout {
                        during: Phase::Connecting
                    }
                ),
                "{out:?}"
            );
        }

        #[tokio::test]
        async fn a_closed_port_is_a_connect_failure() {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("bound");
            drop(listener);
            let out = get(&fetcher(|_| {}), &format!("http://{addr}/")).await;
            assert!(matches!(out, FetchOutcome::Connect(_)), "{out:?}");
        }

        #[tokio::test]
        async fn a_hang_up_before_any_answer_is_a_connect_failure() {
            let (addr, _rx) = extra_server(|_| Vec::new()).await;
            let out = get(&fetcher(|_| {}), &format!("http://{addr}/")).await;
            assert!(matches!(out, FetchOutcome::Connect(_)), "{out:?}");
        }

        #[tokio::test]
        async fn a_garbage_answer_is_another_failure() {
            let (addr, _rx) = extra_server(|_| b"SPAM SPAM SPAM\r\n\r\n".to_vec()).await;
            let out = get(&fetcher(|_| {}), &format!("http://{addr}/")).await;
            assert!(matches!(out, FetchOutcome::Other(_)), "{out:?}");
        }

        #[tokio::test]
        async fn a_body_cut_short_is_unfinished_with_what_came() {
            let (addr, _rx) = extra_server(|_| {
                b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: close\r\n\r\nonly this"
                    .to_vec()
            })
            .await;
            let out = get(&fetcher(|_| {}), &format!("http://{addr}/")).await;
            let FetchOutcome::Unfinished(cut) = out else {
                panic!("{out:?}");
            };
            assert!(
                matches!(cut.dropped_body, Some(DroppedBody::Cut(_))),
                "{:?}",
                cut.dropped_body
            );
            assert_eq!(&cut.body[..], b"only this");
        }

        /// A gzip body cut mid-stream keeps what decodes of what came: the record of it is
        /// readable, never the compressed bytes under a removed coding.
        #[tokio::test]
        async fn a_compressed_body_cut_short_keeps_what_decodes() {
            let page: Vec<u8> = (0..4000u32)
                .flat_map(|i| format!("word{i} ").into_bytes())
                .collect();
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&page).expect("in memory");
            let wire = gz.finish().expect("in memory");
            let half = wire[..wire.len() / 2].to_vec();
            let (addr, _rx) = extra_server(move |_| {
                let mut r = format!(
                    "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    wire.len()
                )
                .into_bytes();
                r.extend_from_slice(&half);
                r
            })
            .await;
            let out = get(&fetcher(|_| {}), &format!("http://{addr}/")).await;
            let FetchOutcome::Unfinished(cut) = out else {
                panic!("{out:?}");
            };
            assert!(!cut.body.is_empty());
            assert!(page.starts_with(&cut.body), "a prefix of the page, decoded");
        }

        #[tokio::test]
        async fn a_gzip_body_that_does_not_decode_is_another_failure() {
            let (addr, _rx) =
                extra_server(|_| reply("200 OK", &[("Content-Encoding", "gzip")], b"not gzip"))
                    .await;
            let out = get(&fetcher(|_| {}), &format!("http://{addr}/")).await;
            assert!(matches!(out, FetchOutcome::Other(_)), "{out:?}");
        }

        #[tokio::test]
        async fn a_redirect_whose_body_does_not_decode_stands_without_its_body() {
            let (addr, _rx) = extra_server(|head| match path_of(head) {
                "/moved" => reply(
                    "302 Found",
                    &[("Content-Encoding", "gzip"), ("Location", "/there")],
                    b"not gzip",
                ),
                _ => reply(
                    "200 OK",
                    &[("Content-Encoding", "gzip")],
                    b"not gzip either",
                ),
            })
            .await;
            let f = fetcher(|_| {});
            let moved = response(get(&f, &format!("http://{addr}/moved")).await);
            assert_eq!(moved.status, 302);
            assert_eq!(moved.location.as_deref(), Some("/there"));
            assert!(moved.body.is_empty());
            let why = moved.dropped_body.expect("the body's loss is said");
            assert!(why.to_string().contains("does not decode as gzip"), "{why}");
            // Only a redirect stands without its body.
            let page = get(&f, &format!("http://{addr}/page")).await;
            assert!(matches!(page, FetchOutcome::Other(_)), "{page:?}");
        }

        /// A redirect whose body stalls (or whose connection ends early) stands on its headers
        /// with what came; a page whose body stalls is unfinished, with what came.
        #[tokio::test]
        async fn a_redirect_whose_body_stalls_or_is_cut_stands_with_what_came() {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("bound");
            let (held_tx, mut held) = mpsc::unbounded_channel();
            tokio::spawn(async move {
                while let Ok((mut stream, _)) = listener.accept().await {
                    let Some(head) = read_head(&mut stream).await else {
                        continue;
                    };
                    let status = match path_of(&head) {
                        "/page" => "200 OK",
                        _ => "301 Moved",
                    };
                    let reply = format!(
                        "HTTP/1.1 {status}\r\nLocation: /there\r\nContent-Length: 1000\r\n\r\nfirst"
                    );
                    let _ = stream.write_all(reply.as_bytes()).await;
                    if path_of(&head) == "/cut" {
                        let _ = stream.shutdown().await;
                    } else {
                        // Held open, the rest never sent, until the test ends.
                        let _ = held_tx.send(stream);
                    }
                }
            });
            let f = fetcher(|c| c.timeout = Duration::from_secs(1));
            let stalled = response(get(&f, &format!("http://{addr}/stall")).await);
            assert_eq!(stalled.status, 301);
            assert_eq!(stalled.dropped_body, Some(DroppedBody::TimedOut));
            assert_eq!(&stalled.body[..], b"first");
            let cut = response(get(&f, &format!("http://{addr}/cut")).await);
            assert!(
                matches!(cut.dropped_body, Some(DroppedBody::Cut(_))),
                "{:?}",
                cut.dropped_body
            );
            assert_eq!(&cut.body[..], b"first");
            let page = get(&f, &format!("http://{addr}/page")).await;
            let FetchOutcome::Unfinished(page) = page else {
                panic!("{page:?}");
            };
            assert_eq!(page.dropped_body, Some(DroppedBody::TimedOut));
            assert_eq!(&page.body[..], b"first");
            held.close();
        }

        #[tokio::test]
        async fn the_user_agent_and_accept_encoding_reach_the_server() {
            let web = hostile_web(|_| {}).await;
            let f = fetcher(|c| c.user_agent = "crawltop-ua-check/7 (+http://127.0.0.1/)".into());
            let _ = response(get(&f, &web.url("hostile", "/")).await);
            let logged = record_for(&web, "/").await;
            assert_eq!(
                logged.user_agent.as_deref(),
                Some("crawltop-ua-check/7 (+http://127.0.0.1/)")
            );
            let (addr, mut rx) = extra_server(|_| reply("200 OK", &[], b"ok")).await;
            let _ = response(get(&f, &format!("http://{addr}/")).await);
            let head = next_head(&mut rx).await;
            assert_eq!(
                header_of(&head, "accept-encoding"),
                Some("gzip, deflate, br")
            );
        }

        #[tokio::test]
        async fn sequential_fetches_to_a_site_reuse_one_connection() {
            let web = hostile_web(|_| {}).await;
            let f = fetcher(|_| {});
            let _ = response(get(&f, &web.url("hostile", "/")).await);
            let _ = response(get(&f, &web.url("hostile", "/latin1.html")).await);
            record_for(&web, "/latin1.html").await;
            let conns: Vec<u64> = web.log().records().iter().map(|r| r.conn).collect();
            assert_eq!(conns.len(), 2);
            assert_eq!(conns[0], conns[1], "one keep-alive connection");
        }

        /// Audit 32: one idle connection kept per site contacted took every file the process
        /// may open on a crawl of many sites. Past the budget of sites, a request asks the
        /// server to close the connection, and the client closes its end: the servers see
        /// which connections stay open.
        #[tokio::test]
        async fn past_the_budget_of_kept_sites_a_connection_is_closed_after_its_answer() {
            // What each server saw: ("request", its Connection header) or ("closed", "").
            let (tx, mut rx) = mpsc::unbounded_channel::<(usize, &'static str, String)>();
            let mut origins = Vec::new();
            for site in 0..4 {
                let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
                origins.push(format!("http://{}", listener.local_addr().expect("bound")));
                let tx = tx.clone();
                tokio::spawn(async move {
                    while let Ok((mut stream, _)) = listener.accept().await {
                        let tx = tx.clone();
                        tokio::spawn(async move {
                            // Answers and keeps the connection for as long as the client does.
                            while let Some(head) = read_head(&mut stream).await {
                                let asked = header_of(&head, "connection").unwrap_or("").to_owned();
                                let _ = tx.send((site, "request", asked));
                                let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                                let _ = stream.write_all(ok).await;
                            }
                            let _ = tx.send((site, "closed", String::new()));
                        });
                    }
                });
            }
            let f = fetcher(|c| c.kept_sites = 2);
            for origin in &origins {
                let _ = response(get(&f, &format!("{origin}/")).await);
            }
            let mut seen = Vec::new();
            // Four requests, and the two connections the client closed.
            while seen.len() < 6 {
                let event = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                    .await
                    .expect("the servers saw the requests and the closes")
                    .expect("servers run");
                seen.push(event);
            }
            seen.sort();
            let asked = |site: usize, what: &str| {
                seen.iter()
                    .filter(|(s, w, _)| *s == site && *w == what)
                    .map(|(_, _, v)| v.to_ascii_lowercase())
                    .collect::<Vec<_>>()
            };
            for site in [0, 1] {
                assert_eq!(
                    asked(site, "request"),
                    [""],
                    "site {site} keeps its connection"
                );
                assert!(asked(site, "closed").is_empty(), "site {site}: {seen:?}");
            }
            for site in [2, 3] {
                assert_eq!(asked(site, "request"), ["close"], "site {site}: {seen:?}");
                assert_eq!(asked(site, "closed").len(), 1, "site {site}: {seen:?}");
            }
            // A kept site's next fetch goes out on its kept connection: no new accept, so no
            // close event; the request arrives without `Connection: close`.
            let _ = response(get(&f, &format!("{}/again", origins[0])).await);
            let again = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .expect("the server saw it")
                .expect("servers run");
            assert_eq!(again, (0, "request", String::new()));
        }

        /// A server that closes a keep-alive connection as a request arrives on it (its idle
        /// timeout firing then) answers nothing: the request was never served, and the fetch
        /// sends it again on a new connection, as browsers do, instead of failing the URL.
        #[tokio::test]
        async fn a_request_on_a_kept_connection_the_server_closed_is_sent_again() {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("bound");
            // (connection number, path) of every request the server read.
            let (tx, mut rx) = mpsc::unbounded_channel::<(usize, String)>();
            tokio::spawn(async move {
                let mut conn = 0;
                while let Ok((mut stream, _)) = listener.accept().await {
                    conn += 1;
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        // The first request is answered and the connection kept; the second is
                        // read and the connection closed without an answer.
                        for served in [true, false] {
                            let Some(head) = read_head(&mut stream).await else {
                                return;
                            };
                            let _ = tx.send((conn, path_of(&head).to_owned()));
                            if served {
                                let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                                let _ = stream.write_all(ok).await;
                            }
                        }
                    });
                }
            });
            let f = fetcher(|_| {});
            let first = response(get(&f, &format!("http://{addr}/a.html")).await);
            assert_eq!(&first.body[..], b"ok");
            let second = get(&f, &format!("http://{addr}/b.html")).await;
            let second = match second {
                FetchOutcome::Response(f) => *f,
                other => panic!("the second page is fetched again, not failed: {other:?}"),
            };
            assert_eq!((second.status, &second.body[..]), (200, &b"ok"[..]));
            let mut seen = Vec::new();
            while let Ok(request) = rx.try_recv() {
                seen.push(request);
            }
            assert_eq!(
                seen,
                [(1, "/a.html"), (1, "/b.html"), (2, "/b.html")].map(|(c, p)| (c, p.to_owned())),
                "the server read /b.html twice, the second time on a new connection"
            );
        }

        #[tokio::test]
        async fn latin1_bytes_arrive_unchanged() {
            let web = hostile_web(|_| {}).await;
            let page = response(get(&fetcher(|_| {}), &web.url("hostile", "/latin1.html")).await);
            let on_disk =
                std::fs::read(web.dir().join("hostile").join("latin1.html")).expect("file");
            assert!(
                std::str::from_utf8(&on_disk).is_err(),
                "the page is not UTF-8"
            );
            assert_eq!(page.body.as_ref(), on_disk.as_slice());
        }

        #[tokio::test]
        async fn retry_after_is_kept() {
            let web = hostile_web(|_| {}).await;
            let slow =
                response(get(&fetcher(|_| {}), &web.url("hostile", "/retry/429.html")).await);
            assert_eq!(slow.status, 429);
            assert_eq!(slow.retry_after.as_deref(), Some("1"));
        }

        async fn robots(f: &Fetcher, origin: &str) -> RobotsFetch {
            robots_with_responses(f, origin).await.fetch
        }

        async fn robots_with_responses(f: &Fetcher, origin: &str) -> RobotsFetched {
            let phase = PhaseCell::new();
            let robots_txt = url(origin).join("/robots.txt").expect("url");
            let out = f.robots(&robots_txt, &phase).await;
            assert_eq!(phase.get(), Phase::Idle);
            out
        }

        fn robots_status(out: &RobotsFetch) -> Option<u16> {
            match out {
                RobotsFetch::Response { status, .. } => Some(*status),
                _ => None,
            }
        }

        #[tokio::test]
        async fn robots_200_404_and_500_are_returned_as_they_are() {
            let web = TestWeb::start(GenOptions::new(4, 3).hostile(true))
                .await
                .expect("web starts");
            let f = fetcher(|_| {});
            let RobotsFetch::Response { status, body, .. } =
                robots(&f, &web.origin("hostile")).await
            else {
                panic!("hostile has a robots.txt");
            };
            assert_eq!(status, 200);
            assert!(String::from_utf8_lossy(&body).contains("User-agent: *"));
            let none = web
                .manifest()
                .sites
                .iter()
                .find(|s| s.robots == RobotsRole::None)
                .expect("a site without robots.txt");
            assert_eq!(
                robots_status(&robots(&f, &web.origin(&none.name)).await),
                Some(404)
            );
            assert_eq!(
                robots_status(&robots(&f, &web.origin("robots500")).await),
                Some(500)
            );
        }

        /// `/robots.txt` redirects `hops` times (absolute and relative Locations), then 200.
        async fn redirecting_robots(hops: u32) -> SocketAddr {
            let (addr, _rx) = extra_server(move |head| {
                let path = path_of(head);
                let n: u32 = match path {
                    "/robots.txt" => 0,
                    p => p
                        .strip_prefix("/hop/")
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(u32::MAX),
                };
                if n == u32::MAX {
                    reply("404 Not Found", &[], b"")
                } else if n < hops {
                    // Relative from /hop/n, absolute-path from /robots.txt.
                    let to = if n == 0 {
                        "/hop/1".to_string()
                    } else {
                        format!("{}", n + 1)
                    };
                    let status = ["301 Moved", "302 Found", "307 Temporary", "308 Permanent"]
                        [n as usize % 4];
                    reply(status, &[("Location", &to)], b"")
                } else {
                    reply(
                        "200 OK",
                        &[("Content-Type", "text/plain")],
                        b"User-agent: *\nDisallow: /x\n",
                    )
                }
            })
            .await;
            addr
        }

        /// A redirect is handed back, its Location resolved against the URL asked (absolute
        /// path from `/robots.txt`, relative from `/hop/1`), with the response that said so.
        #[tokio::test]
        async fn robots_hands_back_a_redirect_resolved_against_the_url_asked() {
            let addr = redirecting_robots(3).await;
            let f = fetcher(|_| {});
            let mut url = Url::parse(&format!("http://{addr}/robots.txt")).expect("url");
            let mut statuses = Vec::new();
            let answer = loop {
                let phase = PhaseCell::new();
                let out = f.robots(&url, &phase).await;
                assert_eq!(phase.get(), Phase::Idle);
                assert_eq!(out.responses.len(), 1, "{url}: one request, one response");
                assert_eq!(out.responses[0].final_url, url);
                statuses.push(out.responses[0].status);
                match out.fetch {
                    RobotsFetch::Redirect(next) => url = next,
                    other => break other,
                }
            };
            assert_eq!(statuses, [301, 302, 307, 200]);
            assert_eq!(url.path(), "/hop/3");
            assert_eq!(
                answer,
                RobotsFetch::Response {
                    status: 200,
                    body: Bytes::from_static(b"User-agent: *\nDisallow: /x\n"),
                    retry_after: None
                }
            );
        }

        /// A redirect to another scheme, or without a Location, is an answer: its status stands.
        #[tokio::test]
        async fn robots_redirect_nowhere_usable_is_its_status() {
            let (addr, _rx) = extra_server(|head| match path_of(head) {
                "/robots.txt" => reply("301 Moved", &[("Location", "ftp://127.0.0.1/r.txt")], b""),
                _ => reply("302 Found", &[], b""),
            })
            .await;
            let f = fetcher(|_| {});
            for (path, status) in [("/robots.txt", 301), ("/other", 302)] {
                let url = Url::parse(&format!("http://{addr}{path}")).expect("url");
                let out = f.robots(&url, &PhaseCell::new()).await.fetch;
                assert_eq!(robots_status(&out), Some(status), "{path}: {out:?}");
            }
        }

        #[tokio::test]
        async fn robots_body_is_cut_at_500_kib() {
            let (addr, _rx) = extra_server(|_| {
                let mut body = b"User-agent: *\n".to_vec();
                body.resize(600 << 10, b'#');
                reply("200 OK", &[], &body)
            })
            .await;
            let out = robots(&fetcher(|_| {}), &format!("http://{addr}")).await;
            let RobotsFetch::Response { status, body, .. } = out else {
                panic!("{out:?}");
            };
            assert_eq!(status, 200);
            assert_eq!(body.len(), 512_000);
            assert!(body.starts_with(b"User-agent: *\n"));
        }

        #[tokio::test]
        async fn robots_on_a_closed_port_is_unreachable() {
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("bound");
            drop(listener);
            let out = robots(&fetcher(|_| {}), &format!("http://{addr}")).await;
            assert!(matches!(out, RobotsFetch::Unreachable(_)), "{out:?}");
        }

        #[tokio::test]
        async fn robots_that_stall_are_unreachable() {
            let web = hostile_web(|_| {}).await;
            let stall = Url::parse(&web.url("hostile", "/stall.html")).expect("url");
            let f = fetcher(|c| c.timeout = Duration::from_millis(300));
            let out = f.robots(&stall, &PhaseCell::new()).await;
            assert!(out.responses.is_empty());
            assert!(matches!(out.fetch, RobotsFetch::Unreachable(_)), "{out:?}");
        }

        async fn cookie_server() -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
            extra_server(|head| match path_of(head) {
                "/set" => reply("200 OK", &[("Set-Cookie", "session=42; Path=/")], b"set"),
                _ => reply("200 OK", &[], b"checked"),
            })
            .await
        }

        #[tokio::test]
        async fn cookies_are_not_kept_by_default() {
            let (addr, mut rx) = cookie_server().await;
            let f = fetcher(|_| {});
            let _ = response(get(&f, &format!("http://{addr}/set")).await);
            let _ = response(get(&f, &format!("http://{addr}/check")).await);
            let _set = next_head(&mut rx).await;
            let check = next_head(&mut rx).await;
            assert_eq!(path_of(&check), "/check");
            assert_eq!(header_of(&check, "cookie"), None);
        }

        #[tokio::test]
        async fn cookies_when_on_go_back_to_their_origin() {
            let (addr, mut rx) = cookie_server().await;
            let f = fetcher(|c| c.cookies = true);
            let _ = response(get(&f, &format!("http://{addr}/set")).await);
            let _ = response(get(&f, &format!("http://{addr}/check")).await);
            let _set = next_head(&mut rx).await;
            let check = next_head(&mut rx).await;
            assert_eq!(path_of(&check), "/check");
            assert_eq!(header_of(&check, "cookie"), Some("session=42"));
        }

        #[tokio::test]
        async fn a_proxy_gets_the_request_in_absolute_form() {
            let (proxy, mut rx) = extra_server(|_| reply("200 OK", &[], b"via proxy")).await;
            let f = fetcher(|c| c.proxy = Some(url(&format!("http://{proxy}"))));
            // Nothing listens on port 1: only the proxy can answer this.
            let page = response(get(&f, "http://127.0.0.1:1/proxied?q=1").await);
            assert_eq!(page.body.as_ref(), b"via proxy");
            let head = next_head(&mut rx).await;
            assert!(
                head.starts_with("GET http://127.0.0.1:1/proxied?q=1 HTTP/1.1\r\n"),
                "{head}"
            );
        }
    }
}
