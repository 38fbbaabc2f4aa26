//! The control rooms: `crawltop crawl --control ADDR` serves the crawl's snapshot and takes its
//! commands over HTTP with JSON (this file: serving and routes), and `--command-port ADDR`
//! takes the same commands as lines of text ([`port`]). `crawltop ctl` is the HTTP API's
//! client (`client`).
//!
//! Rooms: `auth` (token rules, the bearer check), `commands` (the handlers both doors share:
//! validation, renderings, sending), `metrics` (`/metrics` through `prometheus-client`),
//! `index` (queries on the crawl's index), [`port`] (the line protocol), `places` (how many
//! clients a door serves, and which idle one goes when a newcomer finds them all taken),
//! `keepalive` (when an HTTP connection is idle), `client` (reqwest).
//!
//! They are observers of the engine's handle, like the dashboard: they read the latest
//! [`Snapshot`] (cloning the `Arc` out of the watch channel and dropping the borrow at once)
//! and send [`Command`]s with [`CommandSource::Api`] or [`CommandSource::Port`]. They must never
//! reach into engine internals, never hold a snapshot borrow across an await, never let a
//! client (slow, stalled, silent or many) hold up the crawl, never let idle clients keep a
//! newcomer out (`places`), and never listen off loopback without a token.

mod auth;
mod client;
mod commands;
mod index;
mod keepalive;
mod metrics;
mod places;
pub mod port;
#[cfg(test)]
mod tests;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use client::client_request;
pub use commands::{MAX_DELAY_MS, MAX_WORKERS};
pub use metrics::{METRICS_SITE_LIMIT, metrics_text, metrics_text_live};
pub use port::serve_port;

use crate::engine::{Command, Commander};
use crate::snapshot::{CommandSource, Snapshot};
use commands::{Handlers, View};
use index::{IndexQuery, QueryError};
use keepalive::{Watch, WatchedBody, WatchedIo};
use places::{Place, Places};

/// A client has this long to send a request's headers, and an idle keep-alive connection
/// this long to start the next one; then the connection is closed.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// A connection is asked to close after this long even if busy: the bound on a client that
/// sends requests and never reads the answers (hyper has no write timeout).
const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
/// What a connection gets to finish its response at shutdown or at the end of its lifetime.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// Connections served at once, so that a flood of stalled clients costs a bounded number of
/// tasks and buffers. A newcomer beyond them takes the place of the longest idle keep-alive
/// connection, or waits while every one is busy (`places`).
const MAX_CONNECTIONS: usize = 256;

/// Where and how a control room listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlOptions {
    pub addr: SocketAddr,
    /// Required on every request as `Authorization: Bearer TOKEN` (on the command port: a
    /// first line `AUTH TOKEN`) when set; mandatory off loopback.
    pub token: Option<String>,
}

/// Why a control room could not start.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error(
        "the control API on {0} would listen beyond loopback: give --control-token, or bind 127.0.0.1"
    )]
    NeedsToken(SocketAddr),
    #[error(
        "the control token must be non-empty visible ASCII without spaces (it is sent in a header)"
    )]
    BadToken,
    #[error("cannot listen on {addr} for the control API: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error(
        "the command port on {0} would listen beyond loopback: give --control-token, or bind 127.0.0.1"
    )]
    PortNeedsToken(SocketAddr),
    #[error("cannot listen on {addr} for the command port: {source}")]
    PortBind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// A running control room. Stops accepting when [`ControlServer::shutdown`] is called or when
/// it is dropped; open connections then get a short grace to finish their answer.
#[derive(Debug)]
pub struct ControlServer {
    local_addr: SocketAddr,
    stop: CancellationToken,
    tasks: TaskTracker,
}

impl ControlServer {
    /// The address actually bound (the port the OS chose for `:0`).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Starts the shutdown: no new connections; open ones finish within a short grace.
    pub fn shutdown(&self) {
        self.stop.cancel();
    }

    /// Resolves when the listener and every connection are gone (after a shutdown).
    pub async fn finished(&self) {
        self.tasks.wait().await;
    }

    /// Serves every accepted connection with `serve`, at most `max` at once (`places`).
    fn start<F, Fut>(listener: TcpListener, local_addr: SocketAddr, max: usize, serve: F) -> Self
    where
        F: Fn(TcpStream, Place, CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let stop = CancellationToken::new();
        let tasks = TaskTracker::new();
        tasks.spawn(accept_loop(
            listener,
            Arc::new(Places::new(max)),
            serve,
            stop.clone(),
            tasks.clone(),
        ));
        // Closing only lets `wait` resolve once the tasks are gone; spawning still works.
        tasks.close();
        ControlServer {
            local_addr,
            stop,
            tasks,
        }
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Checks the options, binds, and serves on the current tokio runtime until shutdown.
///
/// The token rules are checked before anything is bound: an address off loopback without a
/// token never listens, not even for a moment.
pub async fn serve(
    opts: ControlOptions,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    commander: Commander,
) -> Result<ControlServer, ControlError> {
    serve_with_index(opts, None, snapshots, commander).await
}

/// As [`serve`], with the crawl's index folder for `/search`, `/maxcount`, `/mincount`, `/wc`.
pub async fn serve_with_index(
    opts: ControlOptions,
    index: Option<std::path::PathBuf>,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    commander: Commander,
) -> Result<ControlServer, ControlError> {
    let token = auth::checked_token(&opts)?;
    let bind_error = |source| ControlError::Bind {
        addr: opts.addr,
        source,
    };
    let listener = TcpListener::bind(opts.addr).await.map_err(bind_error)?;
    let local_addr = listener.local_addr().map_err(bind_error)?;
    let shared = Arc::new(Shared {
        token,
        handlers: Arc::new(Handlers::new(
            snapshots,
            commander,
            CommandSource::Api,
            index,
        )),
    });
    Ok(ControlServer::start(
        listener,
        local_addr,
        MAX_CONNECTIONS,
        move |stream, place, stop| serve_connection(shared.clone(), stream, place, stop),
    ))
}

struct Shared {
    token: Option<String>,
    handlers: Arc<Handlers>,
}

/// Accepts, then finds the newcomer a place: with every place held, the longest idle client
/// gives up its own. While every holder is busy the newcomer waits here, accepted but not
/// served, and nobody else is accepted.
async fn accept_loop<F, Fut>(
    listener: TcpListener,
    places: Arc<Places>,
    serve: F,
    stop: CancellationToken,
    tasks: TaskTracker,
) where
    F: Fn(TcpStream, Place, CancellationToken) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, _)) => {
                let place = tokio::select! {
                    () = stop.cancelled() => return,
                    p = places.make_room() => p,
                };
                let _ = stream.set_nodelay(true);
                tasks.spawn(serve(stream, place, stop.clone()));
            }
            Err(e) => {
                // Out of file descriptors and the like: wait a little instead of spinning.
                tracing::warn!("control: accept: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

async fn serve_connection(
    shared: Arc<Shared>,
    stream: TcpStream,
    place: Place,
    stop: CancellationToken,
) {
    let watch = Arc::new(Watch::new(place));
    let answers = watch.clone();
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let shared = shared.clone();
        let watch = answers.clone();
        async move {
            // Queries read the index on the blocking pool; everything else answers at once.
            let reply = match IndexQuery::from_path(req.uri().path()) {
                Some(query) => search_reply(&shared, &req, query).await,
                None => respond(&shared, &req),
            };
            Ok::<_, Infallible>(reply.map(|body| WatchedBody::new(body, watch)))
        }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .keep_alive(true)
        .serve_connection(TokioIo::new(WatchedIo::new(stream, watch.clone())), service);
    tokio::pin!(conn);
    // An evicted connection is idle: hyper's graceful shutdown closes it at once.
    let ended = tokio::select! {
        r = conn.as_mut() => Some(r),
        () = stop.cancelled() => None,
        () = watch.place.evicted() => None,
        () = tokio::time::sleep(CONNECTION_LIFETIME) => None,
    };
    match ended {
        Some(Err(e)) => tracing::debug!("control API: connection: {e}"),
        Some(Ok(())) => {}
        None => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(CLOSE_GRACE, conn).await;
        }
    }
}

/// The endpoints, each with the methods it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Stats,
    Metrics,
    Pause,
    Resume,
    Stop,
    Export,
    Delay,
    Workers,
    Sites,
}

impl Endpoint {
    fn from_path(path: &str) -> Option<Endpoint> {
        Some(match path {
            "/stats" => Endpoint::Stats,
            "/metrics" => Endpoint::Metrics,
            "/pause" => Endpoint::Pause,
            "/resume" => Endpoint::Resume,
            "/stop" => Endpoint::Stop,
            "/export" => Endpoint::Export,
            "/delay" => Endpoint::Delay,
            "/workers" => Endpoint::Workers,
            "/sites" => Endpoint::Sites,
            _ => return None,
        })
    }

    fn is_read(self) -> bool {
        matches!(self, Endpoint::Stats | Endpoint::Metrics | Endpoint::Sites)
    }

    fn allows(self, method: &Method) -> bool {
        if self.is_read() {
            method == Method::GET || method == Method::HEAD
        } else {
            method == Method::POST
        }
    }

    fn allow_header(self) -> &'static str {
        if self.is_read() { "GET, HEAD" } else { "POST" }
    }
}

type Reply = Response<Full<Bytes>>;

/// The 401 for a request without the right bearer token, when a token is set.
fn unauthorized(shared: &Shared, req: &Request<Incoming>) -> Option<Reply> {
    let token = shared.token.as_ref()?;
    if auth::bearer_matches(req.headers(), token) {
        return None;
    }
    let mut reply = error(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
    reply
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    Some(reply)
}

fn method_not_allowed(req: &Request<Incoming>, allow: &'static str, hint: &str) -> Reply {
    let mut reply = error(
        StatusCode::METHOD_NOT_ALLOWED,
        &format!(
            "{} {} is not allowed; use {hint}",
            req.method(),
            req.uri().path()
        ),
    );
    reply
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    reply
}

/// Answers one request. Synchronous on purpose: nothing here can await, so no snapshot
/// borrow can ever be held across an await.
fn respond(shared: &Shared, req: &Request<Incoming>) -> Reply {
    if let Some(reply) = unauthorized(shared, req) {
        return reply;
    }
    let Some(endpoint) = Endpoint::from_path(req.uri().path()) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!(
                "no such endpoint: {}; try GET /stats, /metrics, /sites?sort=queued&limit=50&offset=0&filter=SUB, /search?q=WORDS, /maxcount?word=W, /mincount?word=W, /wc, or POST /pause, /resume, /stop, /export, /delay?ms=N, /workers?n=N",
                req.uri().path()
            ),
        );
    };
    if !endpoint.allows(req.method()) {
        return method_not_allowed(req, endpoint.allow_header(), endpoint.allow_header());
    }
    match endpoint {
        // Like every other endpoint, a parameter they do not take is refused, not ignored: a
        // mistyped `/stats?site=...` would look like an answer to it (audit 33 F6).
        Endpoint::Stats | Endpoint::Metrics => match no_params(req.uri().query(), req.uri().path())
        {
            Err(message) => error(StatusCode::BAD_REQUEST, &message),
            Ok(()) if endpoint == Endpoint::Stats => {
                rendered_reply(shared, View::Stats, "application/json")
            }
            Ok(()) => rendered_reply(
                shared,
                View::Metrics,
                "text/plain; version=0.0.4; charset=utf-8",
            ),
        },
        Endpoint::Sites => sites_reply(shared, req.uri().query()),
        _ => match command(endpoint, req.uri().query()) {
            Ok(cmd) => match shared.handlers.send(cmd) {
                Ok(reply) => json(StatusCode::OK, &reply),
                Err(refused) => error(StatusCode::CONFLICT, &refused.to_string()),
            },
            Err(message) => error(StatusCode::BAD_REQUEST, &message),
        },
    }
}

fn rendered_reply(shared: &Shared, view: View, content_type: &'static str) -> Reply {
    match shared.handlers.render(view) {
        Ok(body) => {
            let mut reply = Response::new(Full::new(body));
            let headers = reply.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            reply
        }
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("cannot serialize the snapshot: {e}"),
        ),
    }
}

/// The command a POST asks for, or a message naming the parameter at fault.
fn command(endpoint: Endpoint, query: Option<&str>) -> Result<Command, String> {
    match endpoint {
        Endpoint::Pause => no_params(query, "/pause").map(|()| Command::Pause),
        Endpoint::Resume => no_params(query, "/resume").map(|()| Command::Resume),
        Endpoint::Stop => no_params(query, "/stop").map(|()| Command::Stop),
        Endpoint::Export => no_params(query, "/export").map(|()| Command::Export),
        Endpoint::Delay => commands::delay(&one_param(query, "/delay", "ms")?),
        Endpoint::Workers => commands::workers(&one_param(query, "/workers", "n")?),
        Endpoint::Stats | Endpoint::Metrics | Endpoint::Sites => {
            unreachable!("read endpoints are answered before commands are parsed")
        }
    }
}

/// `GET /sites`: a page of the live site table.
fn sites_reply(shared: &Shared, query: Option<&str>) -> Reply {
    let params = match params(query) {
        Ok(params) => params,
        Err(message) => return error(StatusCode::BAD_REQUEST, &message),
    };
    match commands::site_query(params.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
        Ok(q) => json(StatusCode::OK, &shared.handlers.sites(&q)),
        Err(message) => error(StatusCode::BAD_REQUEST, &message),
    }
}

/// A query's parameters, decoded as a form is (`+` a space, `%XX` a byte), in order. Decoded to
/// bytes first, so a parameter that is not UTF-8 (`q=rabbit%FF`) is refused with a message
/// instead of being guessed at (a lossy decoding would search for `rabbit`).
fn params(query: Option<&str>) -> Result<Vec<(String, String)>, String> {
    let decode = |part: &str| -> Result<String, Vec<u8>> {
        let spaced = part.replace('+', " ");
        let bytes: Vec<u8> = percent_encoding::percent_decode_str(&spaced).collect();
        String::from_utf8(bytes).map_err(std::string::FromUtf8Error::into_bytes)
    };
    let mut params = Vec::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(key).map_err(|raw| {
            format!(
                "parameter {:?} is not UTF-8 once its %-escapes are decoded",
                String::from_utf8_lossy(&raw)
            )
        })?;
        let value = decode(value).map_err(|_| {
            format!("parameter {key:?} is not UTF-8 once its %-escapes are decoded")
        })?;
        params.push((key, value));
    }
    Ok(params)
}

fn no_params(query: Option<&str>, path: &str) -> Result<(), String> {
    match params(query)?.into_iter().next() {
        None => Ok(()),
        Some((key, _)) => Err(format!("unknown parameter {key:?}: {path} takes none")),
    }
}

/// The value of the one parameter `name`, which must be given exactly once and alone.
fn one_param(query: Option<&str>, path: &str, name: &str) -> Result<String, String> {
    let mut value = None;
    for (key, v) in params(query)? {
        if key != name {
            return Err(format!(
                "unknown parameter {key:?}: {path} takes only {name}"
            ));
        }
        if value.replace(v).is_some() {
            return Err(format!("parameter {name} is given more than once"));
        }
    }
    let example = match name {
        "q" => "WORDS",
        "word" => "WORD",
        _ => "N",
    };
    value.ok_or_else(|| format!("missing parameter {name}: use {path}?{name}={example}"))
}

/// `/search`'s parameters: `q` (the words) and `limit` (1 to [`index::MAX_SEARCH_LIMIT`]
/// pages, [`index::SEARCH_LIMIT`] when not given).
fn search_params(query: Option<&str>) -> Result<(String, usize), String> {
    let (mut words, mut limit) = (None, None);
    for (key, v) in params(query)? {
        let slot = match key.as_str() {
            "q" => &mut words,
            "limit" => &mut limit,
            _ => {
                return Err(format!(
                    "unknown parameter {key:?}: /search takes q and limit"
                ));
            }
        };
        if slot.replace(v).is_some() {
            return Err(format!("parameter {key} is given more than once"));
        }
    }
    let words = words.ok_or("missing parameter q: use /search?q=WORDS")?;
    let limit = match limit {
        None => index::SEARCH_LIMIT,
        Some(n) => n
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=index::MAX_SEARCH_LIMIT).contains(n))
            .ok_or_else(|| {
                format!(
                    "limit {n:?}: give a number of pages from 1 to {}",
                    index::MAX_SEARCH_LIMIT
                )
            })?,
    };
    Ok((words, limit))
}

async fn search_reply(shared: &Shared, req: &Request<Incoming>, query: IndexQuery) -> Reply {
    if let Some(reply) = unauthorized(shared, req) {
        return reply;
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return method_not_allowed(req, "GET, HEAD", "GET");
    }
    if shared.handlers.index.is_none() {
        return error(StatusCode::NOT_FOUND, &QueryError::NoIndex.to_string());
    }
    let q = req.uri().query();
    let limit = index::SEARCH_LIMIT;
    let word = match query {
        IndexQuery::Search => search_params(q),
        IndexQuery::MaxCount => one_param(q, "/maxcount", "word").map(|w| (w, limit)),
        IndexQuery::MinCount => one_param(q, "/mincount", "word").map(|w| (w, limit)),
        IndexQuery::WordCount => no_params(q, "/wc").map(|()| (String::new(), limit)),
    };
    let (word, limit) = match word {
        Ok(w) => w,
        Err(message) => return error(StatusCode::BAD_REQUEST, &message),
    };
    match index::run(&shared.handlers, query, word, limit).await {
        Ok(value) => json(StatusCode::OK, &value),
        Err(e @ (QueryError::NoIndex | QueryError::Empty)) => {
            error(StatusCode::NOT_FOUND, &e.to_string())
        }
        Err(e @ QueryError::Bad(_)) => error(StatusCode::BAD_REQUEST, &e.to_string()),
        Err(e @ QueryError::Failed(_)) => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

fn json(status: StatusCode, value: &serde_json::Value) -> Reply {
    let mut reply = Response::new(Full::new(Bytes::from(value.to_string())));
    *reply.status_mut() = status;
    reply.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    reply
}

fn error(status: StatusCode, message: &str) -> Reply {
    json(status, &serde_json::json!({ "error": message }))
}
