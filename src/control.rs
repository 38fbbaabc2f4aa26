//! The control API: `crawltop crawl --control ADDR` serves the crawl's snapshot and takes its
//! commands over HTTP with JSON, and the tiny client `crawltop ctl` talks to it.
//!
//! It is one more observer of the engine's handle, like the dashboard: it reads the latest
//! [`Snapshot`] (cloning the `Arc` out of the watch channel and dropping the borrow at once)
//! and sends [`Command`]s with [`CommandSource::Api`]. It owns its listener, its connections and
//! the bearer-token check. It must never reach into engine internals, never hold a snapshot
//! borrow across an await, never let a client (slow, stalled or many) hold up the crawl, and
//! never listen off loopback without a token.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::engine::{Command, Commander};
use crate::snapshot::{CommandSource, RunState, Snapshot};

/// The largest delay `/delay?ms=N` accepts: an hour.
pub const MAX_DELAY_MS: u64 = 3_600_000;
/// The most workers `/workers?n=N` accepts.
pub const MAX_WORKERS: usize = 4096;
/// Per-site series in `/metrics` are cut here, so a crawl of a million sites cannot make a
/// scrape of a million lines.
pub const METRICS_SITE_LIMIT: usize = 1000;

/// A client has this long to send a request's headers, and an idle keep-alive connection
/// this long to start the next one; then the connection is closed.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// A connection is asked to close after this long even if busy: the bound on a client that
/// sends requests and never reads the answers (hyper has no write timeout).
const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
/// What a connection gets to finish its response at shutdown or at the end of its lifetime.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// Connections served at once; more wait in the listen backlog, so a flood of stalled clients
/// costs a bounded number of tasks and buffers.
const MAX_CONNECTIONS: usize = 256;
/// The client's patience for a whole exchange.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);
/// The client refuses answers larger than this.
const CLIENT_MAX_RESPONSE: usize = 256 * 1024 * 1024;

/// Where and how the control API listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlOptions {
    pub addr: SocketAddr,
    /// Required on every request as `Authorization: Bearer TOKEN` when set; mandatory off
    /// loopback.
    pub token: Option<String>,
}

/// Why the control API could not start.
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
}

/// A running control API. Stops accepting when [`ControlServer::shutdown`] is called or when
/// it is dropped; open connections then get a short grace to finish their response.
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
    let token = checked_token(&opts)?;
    let listener = TcpListener::bind(opts.addr)
        .await
        .map_err(|source| ControlError::Bind {
            addr: opts.addr,
            source,
        })?;
    let local_addr = listener.local_addr().map_err(|source| ControlError::Bind {
        addr: opts.addr,
        source,
    })?;
    let shared = Arc::new(Shared {
        token,
        snapshots,
        commander,
        rendered: Mutex::new(Rendered::default()),
        index,
        reader: Mutex::new(None),
    });
    let stop = CancellationToken::new();
    let tasks = TaskTracker::new();
    tasks.spawn(accept_loop(listener, shared, stop.clone(), tasks.clone()));
    // Closing only lets `wait` resolve once the tasks are gone; spawning still works.
    tasks.close();
    Ok(ControlServer {
        local_addr,
        stop,
        tasks,
    })
}

fn checked_token(opts: &ControlOptions) -> Result<Option<String>, ControlError> {
    match &opts.token {
        Some(t) if t.is_empty() || !t.bytes().all(|b| b.is_ascii_graphic()) => {
            Err(ControlError::BadToken)
        }
        Some(t) => Ok(Some(t.clone())),
        // `to_canonical`: an IPv4-mapped ::ffff:127.0.0.1 is loopback too.
        None if opts.addr.ip().to_canonical().is_loopback() => Ok(None),
        None => Err(ControlError::NeedsToken(opts.addr)),
    }
}

struct Shared {
    token: Option<String>,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    commander: Commander,
    rendered: Mutex<Rendered>,
    /// The crawl's index folder (`--out DIR` gives `DIR/index`), for the search endpoints.
    index: Option<std::path::PathBuf>,
    /// Opened on the first query; reloaded before each one to see new commits.
    reader: Mutex<Option<Arc<crate::index::IndexReader>>>,
}

/// The last rendering of each view, keyed by the snapshot it was made from: many clients
/// polling between two publications cost one serialization, not one each.
#[derive(Default)]
struct Rendered {
    stats: Option<(Arc<Snapshot>, Bytes)>,
    metrics: Option<(Arc<Snapshot>, Bytes)>,
}

#[derive(Debug, Clone, Copy)]
enum View {
    Stats,
    Metrics,
}

impl Shared {
    fn snapshot(&self) -> Arc<Snapshot> {
        // The borrow holds the channel's read lock: clone the Arc and let it go at once.
        self.snapshots.borrow().clone()
    }

    fn render(&self, view: View) -> Result<Bytes, serde_json::Error> {
        let snap = self.snapshot();
        let slot = |r: &mut Rendered| -> Option<Bytes> {
            let cached = match view {
                View::Stats => &r.stats,
                View::Metrics => &r.metrics,
            };
            cached
                .as_ref()
                .filter(|(s, _)| Arc::ptr_eq(s, &snap))
                .map(|(_, b)| b.clone())
        };
        if let Some(bytes) = slot(&mut self.lock_rendered()) {
            return Ok(bytes);
        }
        // Rendered outside the lock: a big snapshot must not make other connections wait.
        let bytes = match view {
            View::Stats => Bytes::from(serde_json::to_vec(&*snap)?),
            View::Metrics => Bytes::from(metrics_text(&snap)),
        };
        let mut rendered = self.lock_rendered();
        let entry = Some((snap, bytes.clone()));
        match view {
            View::Stats => rendered.stats = entry,
            View::Metrics => rendered.metrics = entry,
        }
        Ok(bytes)
    }

    fn lock_rendered(&self) -> std::sync::MutexGuard<'_, Rendered> {
        // The cache holds finished renderings only; a panic elsewhere leaves it valid.
        self.rendered.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    stop: CancellationToken,
    tasks: TaskTracker,
) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let slot = tokio::select! {
            () = stop.cancelled() => return,
            s = slots.clone().acquire_owned() => s.expect("the connection semaphore is never closed"),
        };
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                let (shared, stop) = (shared.clone(), stop.clone());
                tasks.spawn(async move {
                    serve_connection(shared, stream, stop).await;
                    drop(slot);
                });
            }
            Err(e) => {
                // Out of file descriptors and the like: wait a little instead of spinning.
                tracing::warn!("control API: accept: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

async fn serve_connection(shared: Arc<Shared>, stream: TcpStream, stop: CancellationToken) {
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let shared = shared.clone();
        async move {
            // Queries read the index on the blocking pool; everything else answers at once.
            if let Some(query) = search_query(&req) {
                return Ok::<_, Infallible>(search_reply(&shared, &req, query).await);
            }
            Ok(respond(&shared, &req))
        }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let ended = tokio::select! {
        r = conn.as_mut() => Some(r),
        () = stop.cancelled() => None,
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
    Delay,
    Workers,
}

impl Endpoint {
    fn from_path(path: &str) -> Option<Endpoint> {
        Some(match path {
            "/stats" => Endpoint::Stats,
            "/metrics" => Endpoint::Metrics,
            "/pause" => Endpoint::Pause,
            "/resume" => Endpoint::Resume,
            "/stop" => Endpoint::Stop,
            "/delay" => Endpoint::Delay,
            "/workers" => Endpoint::Workers,
            _ => return None,
        })
    }

    fn is_read(self) -> bool {
        matches!(self, Endpoint::Stats | Endpoint::Metrics)
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

/// Answers one request. Synchronous on purpose: nothing here can await, so no snapshot
/// borrow can ever be held across an await.
/// The 401 for a request without the right bearer token, when a token is set.
fn unauthorized(shared: &Shared, req: &Request<Incoming>) -> Option<Reply> {
    let token = shared.token.as_ref()?;
    if bearer_matches(req.headers(), token) {
        return None;
    }
    let mut reply = error(StatusCode::UNAUTHORIZED, "missing or wrong bearer token");
    reply
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    Some(reply)
}

fn respond(shared: &Shared, req: &Request<Incoming>) -> Reply {
    if let Some(reply) = unauthorized(shared, req) {
        return reply;
    }
    let Some(endpoint) = Endpoint::from_path(req.uri().path()) else {
        return error(
            StatusCode::NOT_FOUND,
            &format!(
                "no such endpoint: {}; try GET /stats, /metrics, /search?q=WORDS, /maxcount?word=W, /mincount?word=W, /wc, or POST /pause, /resume, /stop, /delay?ms=N, /workers?n=N",
                req.uri().path()
            ),
        );
    };
    if !endpoint.allows(req.method()) {
        let mut reply = error(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!(
                "{} {} is not allowed; use {}",
                req.method(),
                req.uri().path(),
                endpoint.allow_header()
            ),
        );
        reply.headers_mut().insert(
            header::ALLOW,
            HeaderValue::from_static(endpoint.allow_header()),
        );
        return reply;
    }
    match endpoint {
        Endpoint::Stats => rendered_reply(shared, View::Stats, "application/json"),
        Endpoint::Metrics => rendered_reply(
            shared,
            View::Metrics,
            "text/plain; version=0.0.4; charset=utf-8",
        ),
        _ => match command(endpoint, req.uri().query()) {
            Ok(cmd) => {
                if shared.commander.send(cmd, CommandSource::Api) {
                    json(StatusCode::OK, &command_reply(cmd))
                } else {
                    error(StatusCode::CONFLICT, "the crawl is over")
                }
            }
            Err(message) => error(StatusCode::BAD_REQUEST, &message),
        },
    }
}

fn rendered_reply(shared: &Shared, view: View, content_type: &'static str) -> Reply {
    match shared.render(view) {
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

fn command_reply(cmd: Command) -> serde_json::Value {
    match cmd {
        Command::Pause => serde_json::json!({"ok": true, "command": "pause"}),
        Command::Resume => serde_json::json!({"ok": true, "command": "resume"}),
        Command::Stop => serde_json::json!({"ok": true, "command": "stop"}),
        Command::Export => serde_json::json!({"ok": true, "command": "export"}),
        Command::SetDelay(d) => {
            serde_json::json!({"ok": true, "command": "delay", "ms": d.as_millis() as u64})
        }
        Command::SetWorkers(n) => serde_json::json!({"ok": true, "command": "workers", "n": n}),
    }
}

/// The command a POST asks for, or a message naming the parameter at fault.
fn command(endpoint: Endpoint, query: Option<&str>) -> Result<Command, String> {
    match endpoint {
        Endpoint::Pause => no_params(query, "/pause").map(|()| Command::Pause),
        Endpoint::Resume => no_params(query, "/resume").map(|()| Command::Resume),
        Endpoint::Stop => no_params(query, "/stop").map(|()| Command::Stop),
        Endpoint::Delay => {
            let ms = one_param(query, "/delay", "ms")?;
            match ms.parse::<u64>() {
                Ok(ms) if ms <= MAX_DELAY_MS => Ok(Command::SetDelay(Duration::from_millis(ms))),
                _ => Err(format!(
                    "parameter ms must be a whole number of milliseconds in 0..={MAX_DELAY_MS}, got {ms:?}"
                )),
            }
        }
        Endpoint::Workers => {
            let n = one_param(query, "/workers", "n")?;
            match n.parse::<usize>() {
                Ok(n) if (1..=MAX_WORKERS).contains(&n) => Ok(Command::SetWorkers(n)),
                _ => Err(format!(
                    "parameter n must be a whole number of workers in 1..={MAX_WORKERS}, got {n:?}"
                )),
            }
        }
        Endpoint::Stats | Endpoint::Metrics => {
            unreachable!("read endpoints are answered before commands are parsed")
        }
    }
}

fn no_params(query: Option<&str>, path: &str) -> Result<(), String> {
    match url::form_urlencoded::parse(query.unwrap_or("").as_bytes()).next() {
        None => Ok(()),
        Some((key, _)) => Err(format!("unknown parameter {key:?}: {path} takes none")),
    }
}

/// The value of the one parameter `name`, which must be given exactly once and alone.
fn one_param(query: Option<&str>, path: &str, name: &str) -> Result<String, String> {
    let mut value = None;
    for (key, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if key != name {
            return Err(format!(
                "unknown parameter {key:?}: {path} takes only {name}"
            ));
        }
        if value.replace(v.into_owned()).is_some() {
            return Err(format!("parameter {name} is given more than once"));
        }
    }
    value.ok_or_else(|| format!("missing parameter {name}: use {path}?{name}=N"))
}

/// Whether the request carries `Authorization: Bearer TOKEN` with the right token.
fn bearer_matches(headers: &HeaderMap, token: &str) -> bool {
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes)
    else {
        return false;
    };
    // RFC 6750: the scheme name is case-insensitive; the credentials follow one or more spaces.
    let Some(space) = given.iter().position(|&b| b == b' ') else {
        return false;
    };
    let (scheme, rest) = given.split_at(space);
    let credentials = rest.trim_ascii();
    scheme.eq_ignore_ascii_case(b"bearer") & same_secret(credentials, token.as_bytes())
}

/// Compares in time that depends on the lengths only, never on where the first difference
/// is: a timing side channel must not let a client guess the token byte by byte.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = u8::from(given.len() != expected.len());
    for (i, &e) in expected.iter().enumerate() {
        diff |= e ^ given.get(i).copied().unwrap_or(!e);
    }
    std::hint::black_box(diff) == 0
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

// ---------------------------------------------------------------------------------------------
// /metrics

#[derive(Debug, Clone, Copy)]
enum Kind {
    Counter,
    Gauge,
}

#[derive(Debug, Clone, Copy)]
enum Num {
    Int(u64),
    Float(f64),
}

impl From<u64> for Num {
    fn from(v: u64) -> Num {
        Num::Int(v)
    }
}

impl From<usize> for Num {
    fn from(v: usize) -> Num {
        Num::Int(v as u64)
    }
}

impl From<f64> for Num {
    fn from(v: f64) -> Num {
        Num::Float(v)
    }
}

fn millis_to_seconds(ms: u64) -> Num {
    Num::Float(ms as f64 / 1000.0)
}

/// The text exposition format 0.0.4, written family by family: HELP and TYPE once, then
/// every sample of that family.
struct Exposition {
    out: String,
}

impl Exposition {
    fn family<L: AsRef<str>>(
        &mut self,
        name: &str,
        kind: Kind,
        help: &str,
        samples: impl IntoIterator<Item = (Vec<(&'static str, L)>, Num)>,
    ) {
        let kind = match kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        };
        let out = &mut self.out;
        // Writing to a String cannot fail.
        let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(out, "# TYPE {name} {kind}");
        for (labels, value) in samples {
            out.push_str(name);
            if !labels.is_empty() {
                out.push('{');
                for (i, (key, val)) in labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{key}=\"{}\"", escape_label(val.as_ref()));
                }
                out.push('}');
            }
            out.push(' ');
            match value {
                Num::Int(v) => {
                    let _ = write!(out, "{v}");
                }
                Num::Float(v) => push_float(out, v),
            }
            out.push('\n');
        }
    }

    fn one(&mut self, name: &str, kind: Kind, help: &str, value: impl Into<Num>) {
        self.family::<&str>(name, kind, help, [(Vec::new(), value.into())]);
    }
}

fn push_float(out: &mut String, v: f64) {
    // Go's float syntax, which Prometheus parses: Rust writes "inf" where it wants "+Inf".
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else {
        let _ = write!(out, "{v}");
    }
}

fn escape_help(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The snapshot's numbers in the Prometheus text exposition format 0.0.4: every family has
/// HELP and TYPE lines, units in the names, `_total` on counters; per-site series are bounded
/// by [`METRICS_SITE_LIMIT`].
pub fn metrics_text(snap: &Snapshot) -> String {
    use Kind::Gauge;
    let s = snap;
    let mut e = Exposition { out: String::new() };

    let states = [
        (RunState::Running, "running"),
        (RunState::Paused, "paused"),
        (RunState::Stopping, "stopping"),
        (RunState::Finished, "finished"),
    ];
    e.family(
        "crawltop_state",
        Gauge,
        "Where the crawl stands: 1 for the current state, 0 for the others.",
        states.map(|(st, name)| (vec![("state", name)], Num::Int(u64::from(s.state == st)))),
    );
    e.one(
        "crawltop_elapsed_seconds",
        Gauge,
        "Time since the crawl started.",
        s.elapsed_s,
    );

    for section in [
        workers_metrics,
        scheduler_metrics,
        outcome_metrics,
        site_metrics,
        progress_metrics,
    ] {
        section(&mut e, snap);
    }
    e.out
}

fn workers_metrics(e: &mut Exposition, s: &Snapshot) {
    use Kind::Gauge;
    let w = &s.workers;
    e.one(
        "crawltop_workers",
        Gauge,
        "Worker slots (concurrent fetches allowed).",
        w.total,
    );
    e.family(
        "crawltop_workers_by_state",
        Gauge,
        "Workers idle, blocked (holding work that must wait) and busy, now.",
        [("idle", w.idle), ("blocked", w.blocked), ("busy", w.busy)]
            .map(|(st, n)| (vec![("state", st)], Num::from(n))),
    );
    e.family(
        "crawltop_workers_blocked_by",
        Gauge,
        "Blocked workers by what they wait for.",
        [
            ("politeness", w.blocked_by.politeness),
            ("robots", w.blocked_by.robots),
            ("store", w.blocked_by.store),
        ]
        .map(|(r, n)| (vec![("reason", r)], Num::from(n))),
    );
    e.family(
        "crawltop_workers_busy_by",
        Gauge,
        "Busy workers by phase of the fetch.",
        [
            ("connecting", w.busy_by.connecting),
            ("waiting_first_byte", w.busy_by.waiting_first_byte),
            ("receiving", w.busy_by.receiving),
            ("parsing", w.busy_by.parsing),
        ]
        .map(|(p, n)| (vec![("phase", p)], Num::from(n))),
    );
    let shares = |window: &'static str, idle: f64, blocked: f64, busy: f64| {
        [("idle", idle), ("blocked", blocked), ("busy", busy)].map(move |(st, pct)| {
            (
                vec![("state", st), ("window", window)],
                Num::from(pct / 100.0),
            )
        })
    };
    e.family(
        "crawltop_workers_share_ratio",
        Gauge,
        "Share of workers in each state (0 to 1), now and averaged over the last 10 seconds.",
        shares("now", w.idle_pct, w.blocked_pct, w.busy_pct)
            .into_iter()
            .chain(shares(
                "10s",
                w.avg_10s.idle_pct,
                w.avg_10s.blocked_pct,
                w.avg_10s.busy_pct,
            )),
    );
}

fn scheduler_metrics(e: &mut Exposition, s: &Snapshot) {
    use Kind::{Counter, Gauge};
    let sc = &s.scheduler;
    e.one(
        "crawltop_scheduler_queued_tasks",
        Gauge,
        "Tasks waiting for a worker, spider and thinker.",
        sc.queued,
    );
    e.one(
        "crawltop_scheduler_assigned_tasks",
        Gauge,
        "Tasks a worker is on now.",
        sc.assigned,
    );
    e.one(
        "crawltop_scheduler_blocked_tasks",
        Gauge,
        "Page fetches waiting for their site's robots.txt.",
        sc.blocked,
    );
    e.one(
        "crawltop_scheduler_done_tasks_total",
        Counter,
        "Tasks finished, spider and thinker.",
        sc.done,
    );
    let kinds = [("spider", sc.spider), ("thinker", sc.thinker)];
    e.family(
        "crawltop_tasks_queued",
        Gauge,
        "Queued tasks by kind (spider: touches the network; thinker: parses and decides).",
        kinds.map(|(k, c)| (vec![("kind", k)], Num::from(c.queued))),
    );
    e.family(
        "crawltop_tasks_assigned",
        Gauge,
        "Assigned tasks by kind.",
        kinds.map(|(k, c)| (vec![("kind", k)], Num::from(c.assigned))),
    );
    e.family(
        "crawltop_tasks_done_total",
        Counter,
        "Finished tasks by kind.",
        kinds.map(|(k, c)| (vec![("kind", k)], Num::from(c.done))),
    );

    let r = &s.resources;
    for (key, value, help) in [
        (
            "discovered",
            r.discovered,
            "Distinct URLs the crawl learned of.",
        ),
        (
            "fetched",
            r.fetched,
            "URLs fetched (whatever came of the parse).",
        ),
        ("parsed", r.parsed, "Fetched URLs parsed as HTML."),
        (
            "fetch_error",
            r.fetch_error,
            "URLs whose fetch failed for good.",
        ),
        (
            "fetch_ignored",
            r.fetch_ignored,
            "URLs not fetched: out of scope, too deep, over a limit or a trap.",
        ),
        (
            "fetch_forbidden",
            r.fetch_forbidden,
            "URLs not fetched because robots.txt disallows them.",
        ),
        (
            "parse_error",
            r.parse_error,
            "Fetched URLs whose parse failed.",
        ),
        (
            "parse_ignored",
            r.parse_ignored,
            "Fetched URLs not parsed (not HTML).",
        ),
    ] {
        e.one(
            &format!("crawltop_resources_{key}_total"),
            Counter,
            help,
            value,
        );
    }
}

fn outcome_metrics(e: &mut Exposition, s: &Snapshot) {
    use Kind::{Counter, Gauge};
    let er = &s.errors;
    e.family(
        "crawltop_errors_total",
        Counter,
        "Errors and skipped URLs by class.",
        [
            ("timeout", er.timeout),
            ("connect", er.connect),
            ("http_4xx", er.http_4xx),
            ("http_5xx", er.http_5xx),
            ("too_large", er.too_large),
            ("robots_forbidden", er.robots_forbidden),
            ("ignored", er.ignored),
            ("too_many_redirects", er.too_many_redirects),
            ("other", er.other),
        ]
        .map(|(c, n)| (vec![("class", c)], Num::from(n))),
    );
    e.one(
        "crawltop_retries_total",
        Counter,
        "Fetches repeated after a 429/503 or a failure.",
        er.retries,
    );

    e.family(
        "crawltop_http_responses_total",
        Counter,
        "HTTP responses by status code.",
        s.http
            .status
            .iter()
            .map(|(code, n)| (vec![("status", code.as_str())], Num::from(*n))),
    );
    e.one(
        "crawltop_http_body_bytes_total",
        Counter,
        "Response body bytes received (after decompression).",
        s.http.bytes,
    );

    let p = &s.politeness;
    e.one(
        "crawltop_politeness_delay_seconds",
        Gauge,
        "The global politeness delay between contacts of one site, as set now.",
        millis_to_seconds(p.delay_ms),
    );
    e.one(
        "crawltop_politeness_per_site_connections",
        Gauge,
        "Connections allowed to one site at a time.",
        p.per_site,
    );
    e.one(
        "crawltop_politeness_max_crawl_delay_seconds",
        Gauge,
        "The cap on a robots.txt Crawl-delay.",
        millis_to_seconds(p.max_crawl_delay_ms),
    );
    if let Some(factor) = p.adaptive_factor {
        e.one(
            "crawltop_politeness_adaptive_factor",
            Gauge,
            "Adaptive politeness: a site waits this factor times its last response time.",
            factor,
        );
    }
}

fn site_metrics(e: &mut Exposition, s: &Snapshot) {
    use Kind::{Counter, Gauge};
    e.one(
        "crawltop_sites",
        Gauge,
        "Sites (origins) discovered; the per-site series cover at most the first 1000 by queued URLs.",
        s.sites.len(),
    );
    let mut top: Vec<&crate::snapshot::SiteRow> = s.sites.iter().collect();
    // Ties by origin, so the cut is the same from one scrape to the next.
    top.sort_by(|a, b| {
        b.queued
            .cmp(&a.queued)
            .then_with(|| a.origin.cmp(&b.origin))
    });
    top.truncate(METRICS_SITE_LIMIT);
    let limit_note = format!("; at most the first {METRICS_SITE_LIMIT} sites by queued URLs.");
    let per_site = |f: fn(&crate::snapshot::SiteRow) -> Num| {
        top.iter()
            .map(move |row| (vec![("origin", row.origin.as_str())], f(row)))
    };
    e.family(
        "crawltop_site_queued_urls",
        Gauge,
        &format!("URLs queued for a site{limit_note}"),
        per_site(|r| Num::from(r.queued)),
    );
    e.family(
        "crawltop_site_in_flight_fetches",
        Gauge,
        &format!("Fetches in flight to a site{limit_note}"),
        per_site(|r| Num::from(r.in_flight)),
    );
    e.family(
        "crawltop_site_fetched_total",
        Counter,
        &format!("Pages fetched from a site{limit_note}"),
        per_site(|r| Num::from(r.fetched)),
    );
    e.family(
        "crawltop_site_errors_total",
        Counter,
        &format!("Errors on a site{limit_note}"),
        per_site(|r| Num::from(r.errors)),
    );
    e.family(
        "crawltop_site_delay_seconds",
        Gauge,
        &format!("The delay between contacts now in force for a site{limit_note}"),
        per_site(|r| millis_to_seconds(r.delay_ms)),
    );
}

fn progress_metrics(e: &mut Exposition, s: &Snapshot) {
    use Kind::{Counter, Gauge};
    e.one(
        "crawltop_fetch_rate_pages_per_second",
        Gauge,
        "Pages fetched per second over the last few seconds.",
        s.rates.pages_per_s,
    );
    e.one(
        "crawltop_receive_rate_bytes_per_second",
        Gauge,
        "Body bytes received per second over the last few seconds.",
        s.rates.bytes_per_s,
    );

    let c = &s.commit;
    e.one(
        "crawltop_commit_next_sequence",
        Gauge,
        "The next sequence number to commit: everything below it is decided.",
        c.next_seq,
    );
    e.one(
        "crawltop_commit_waiting_results",
        Gauge,
        "Results that arrived but wait for an earlier one.",
        c.waiting,
    );
    e.one(
        "crawltop_commit_in_flight_fetches",
        Gauge,
        "Dispatched fetches not back yet.",
        c.in_flight,
    );
    e.one(
        "crawltop_commit_rescheduled_total",
        Counter,
        "Fetches dispatched again because their result was overdue.",
        c.rescheduled,
    );
    e.one(
        "crawltop_commit_committed_total",
        Counter,
        "Exchanges written to the store.",
        c.committed,
    );
    e.one(
        "crawltop_store_failed",
        Gauge,
        "1 when the store has hit a write error (the crawl pauses on it), else 0.",
        u64::from(c.error.is_some()),
    );

    let sources = [
        (CommandSource::Key, "key"),
        (CommandSource::Api, "api"),
        (CommandSource::Signal, "signal"),
        (CommandSource::Library, "library"),
    ];
    e.family(
        "crawltop_commands_total",
        Counter,
        "Commands given while running, by source.",
        sources.map(|(src, name)| {
            let n = s.commands.iter().filter(|c| c.source == src).count();
            (vec![("source", name)], Num::from(n))
        }),
    );
}

// ---------------------------------------------------------------------------------------------
// The client

/// One exchange with a control API: `METHOD path` on its own connection, with the bearer
/// token if given. Returns the status and the body (lossy UTF-8). Gives up after 30 s.
pub async fn client_request(
    addr: SocketAddr,
    token: Option<&str>,
    method: &str,
    path: &str,
) -> Result<(u16, String), std::io::Error> {
    let (status, _, body) = exchange(addr, token, method, path).await?;
    Ok((status, body))
}

fn invalid_input(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, what.to_string())
}

fn invalid_data(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string())
}

/// Response header names (lowercased) and values, in order.
type Headers = Vec<(String, String)>;
/// Status, headers and body of one answer.
type Answer = (u16, Headers, String);

/// The client's exchange, with the response headers (lowercased names) for the tests.
async fn exchange(
    addr: SocketAddr,
    token: Option<&str>,
    method: &str,
    path: &str,
) -> Result<Answer, std::io::Error> {
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
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(token) = token {
        let _ = write!(request, "Authorization: Bearer {token}\r\n");
    }
    if method == "POST" {
        request.push_str("Content-Length: 0\r\n");
    }
    request.push_str("\r\n");
    let raw = tokio::time::timeout(CLIENT_TIMEOUT, async {
        let mut stream = TcpStream::connect(addr).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut raw = Vec::new();
        (&mut stream)
            .take(CLIENT_MAX_RESPONSE as u64 + 1)
            .read_to_end(&mut raw)
            .await?;
        Ok::<_, std::io::Error>(raw)
    })
    .await
    .map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no complete answer from {addr} within {CLIENT_TIMEOUT:?}"),
        )
    })??;
    if raw.len() > CLIENT_MAX_RESPONSE {
        return Err(invalid_data("the answer is too large"));
    }
    parse_response(&raw, method == "HEAD")
}

/// Splits a whole HTTP/1.1 response (read until the server closed) into status, headers and
/// body; understands `Content-Length` and chunked bodies.
fn parse_response(raw: &[u8], head_only: bool) -> Result<Answer, std::io::Error> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| invalid_data("the answer has no complete header"))?;
    let head = std::str::from_utf8(&raw[..end])
        .map_err(|_| invalid_data("the answer's header is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|s| s.get(2..5))
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| invalid_data("the answer has no HTTP/1.x status line"))?;
    let headers: Headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let rest = &raw[end + 4..];
    let find = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v);
    let body: Vec<u8> = if head_only {
        Vec::new()
    } else if find("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        dechunk(rest)?
    } else if let Some(len) = find("content-length") {
        let len: usize = len
            .parse()
            .map_err(|_| invalid_data("the answer's Content-Length is not a number"))?;
        rest.get(..len)
            .ok_or_else(|| invalid_data("the answer's body is cut short"))?
            .to_vec()
    } else {
        rest.to_vec()
    };
    Ok((status, headers, String::from_utf8_lossy(&body).into_owned()))
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, std::io::Error> {
    let mut body = Vec::new();
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| invalid_data("a chunk size line is cut short"))?;
        let size_text = std::str::from_utf8(&rest[..line_end])
            .ok()
            .map(|s| s.split(';').next().unwrap_or_default().trim())
            .ok_or_else(|| invalid_data("a chunk size is not text"))?;
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| invalid_data("a chunk size is not hexadecimal"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        let chunk = rest
            .get(..size)
            .ok_or_else(|| invalid_data("a chunk is cut short"))?;
        body.extend_from_slice(chunk);
        rest = rest.get(size + 2..).unwrap_or_default();
    }
}

/// A query on the crawl's index.
#[derive(Debug, Clone, PartialEq, Eq)]
enum IndexQuery {
    Search,
    MaxCount,
    MinCount,
    WordCount,
}

fn search_query(req: &Request<Incoming>) -> Option<IndexQuery> {
    Some(match req.uri().path() {
        "/search" => IndexQuery::Search,
        "/maxcount" => IndexQuery::MaxCount,
        "/mincount" => IndexQuery::MinCount,
        "/wc" => IndexQuery::WordCount,
        _ => return None,
    })
}

async fn search_reply(shared: &Arc<Shared>, req: &Request<Incoming>, query: IndexQuery) -> Reply {
    if let Some(reply) = unauthorized(shared, req) {
        return reply;
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut reply = error(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!(
                "{} {} is not allowed; use GET",
                req.method(),
                req.uri().path()
            ),
        );
        reply
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return reply;
    }
    let Some(dir) = shared.index.clone() else {
        return error(
            StatusCode::NOT_FOUND,
            "this crawl keeps no index: start it with --out DIR",
        );
    };
    let params = match query {
        IndexQuery::Search => one_param(req.uri().query(), "/search", "q").map(Some),
        IndexQuery::MaxCount => one_param(req.uri().query(), "/maxcount", "word").map(Some),
        IndexQuery::MinCount => one_param(req.uri().query(), "/mincount", "word").map(Some),
        IndexQuery::WordCount => no_params(req.uri().query(), "/wc").map(|()| None),
    };
    let param = match params {
        Ok(p) => p,
        Err(message) => return error(StatusCode::BAD_REQUEST, &message),
    };
    let shared = shared.clone();
    let answer = tokio::task::spawn_blocking(
        move || -> Result<serde_json::Value, crate::index::IndexError> {
            let reader = {
                let mut slot = shared
                    .reader
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some(r) = slot.as_ref() {
                    r.clone()
                } else {
                    let r = Arc::new(crate::index::IndexReader::open(&dir)?);
                    *slot = Some(r.clone());
                    r
                }
            };
            reader.reload()?;
            let word = param.unwrap_or_default();
            Ok(match query {
                IndexQuery::Search => serde_json::to_value(reader.search(&word, 20)?),
                IndexQuery::MaxCount => serde_json::to_value(reader.max_count(&word)?),
                IndexQuery::MinCount => serde_json::to_value(reader.min_count(&word)?),
                IndexQuery::WordCount => serde_json::to_value(reader.word_count()?),
            }
            .unwrap_or(serde_json::Value::Null))
        },
    )
    .await;
    match answer {
        Ok(Ok(value)) => json(StatusCode::OK, &value),
        Ok(Err(crate::index::IndexError::NoIndex(_))) => {
            error(StatusCode::NOT_FOUND, "the index holds nothing yet")
        }
        Ok(Err(e)) => error(StatusCode::BAD_REQUEST, &e.to_string()),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the query failed: {e}"),
        ),
    }
}

#[cfg(test)]
// The values compared are exact decimal renderings of the fixture's numbers.
#[allow(clippy::float_cmp)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use tokio::io::AsyncBufReadExt as _;

    use super::*;
    use crate::config::CrawlConfig;
    use crate::engine::{self, CrawlHandle};
    use crate::snapshot::{CommandRecord, SiteRow};
    use crate::testweb::{GenOptions, TestWeb};

    /// Generous bound for waiting on an event; a test that needs it has failed anyway.
    const PATIENCE: Duration = Duration::from_secs(30);

    fn loopback() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 0))
    }

    /// A crawl of a test web with the control API beside it on 127.0.0.1:0.
    struct Live {
        web: TestWeb,
        handle: CrawlHandle,
        server: ControlServer,
    }

    impl Live {
        async fn start(web: GenOptions, delay_ms: u64, token: Option<&str>) -> Live {
            let web = TestWeb::start(web).await.expect("test web starts");
            let seeds = web
                .manifest()
                .normal_sites()
                .map(|s| web.url(&s.name, "/"))
                .collect();
            let cfg = CrawlConfig {
                seeds,
                workers: 8,
                delay_ms,
                timeout_ms: 5_000,
                ..CrawlConfig::default()
            };
            let handle = engine::spawn(cfg).expect("crawl starts");
            let opts = ControlOptions {
                addr: loopback(),
                token: token.map(str::to_string),
            };
            let server = serve(opts, handle.snapshots(), handle.commander())
                .await
                .expect("control API starts");
            Live {
                web,
                handle,
                server,
            }
        }

        fn addr(&self) -> SocketAddr {
            self.server.local_addr()
        }

        async fn call(&self, method: &str, path: &str) -> (u16, serde_json::Value) {
            let (status, body) = client_request(self.addr(), None, method, path)
                .await
                .expect("the control API answers");
            let value = serde_json::from_str(&body).expect("a JSON body");
            (status, value)
        }

        async fn wait_snapshot(&self, mut done: impl FnMut(&Snapshot) -> bool) -> Arc<Snapshot> {
            let mut rx = self.handle.snapshots();
            tokio::time::timeout(PATIENCE, async {
                loop {
                    let snap = rx.borrow_and_update().clone();
                    if done(&snap) {
                        return snap;
                    }
                    rx.changed().await.expect("the crawl is alive");
                }
            })
            .await
            .expect("snapshot condition reached")
        }

        async fn wait_records(&self, done: impl FnMut(&[crate::testweb::RequestRecord]) -> bool) {
            tokio::time::timeout(PATIENCE, self.web.log().wait_until(done))
                .await
                .expect("request log condition reached");
        }
    }

    fn api_commands(snap: &Snapshot) -> Vec<String> {
        snap.commands
            .iter()
            .filter(|c| c.source == CommandSource::Api)
            .map(|c| c.command.clone())
            .collect()
    }

    fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    // ---- options and pure parts -------------------------------------------------------------

    #[test]
    fn loopback_needs_no_token_but_anything_else_does() {
        let check = |addr: &str, token: Option<&str>| {
            checked_token(&ControlOptions {
                addr: addr.parse().expect("addr"),
                token: token.map(str::to_string),
            })
        };
        assert!(matches!(check("127.0.0.1:0", None), Ok(None)));
        assert!(matches!(check("127.9.9.9:0", None), Ok(None)));
        assert!(matches!(check("[::1]:0", None), Ok(None)));
        assert!(matches!(check("[::ffff:127.0.0.1]:0", None), Ok(None)));
        for addr in [
            "0.0.0.0:7000",
            "192.0.2.1:80",
            "[::]:0",
            "[::ffff:10.0.0.1]:1",
        ] {
            assert!(
                matches!(check(addr, None), Err(ControlError::NeedsToken(a)) if a.to_string() == addr),
                "{addr}"
            );
            assert!(matches!(check(addr, Some("s3cret")), Ok(Some(t)) if t == "s3cret"));
        }
        assert!(matches!(check("127.0.0.1:0", Some("tok")), Ok(Some(_))));
    }

    #[test]
    fn empty_or_unsendable_tokens_are_refused() {
        for bad in ["", "two words", "tab\there", "new\nline", "caf\u{e9}"] {
            let opts = ControlOptions {
                addr: loopback(),
                token: Some(bad.to_string()),
            };
            assert!(
                matches!(checked_token(&opts), Err(ControlError::BadToken)),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn command_parameters_are_checked_and_named() {
        let ok = |ep, q| command(ep, q).expect("a valid command");
        let bad = |ep, q| command(ep, q).expect_err("a refused command");
        assert_eq!(ok(Endpoint::Pause, None), Command::Pause);
        assert_eq!(ok(Endpoint::Resume, Some("")), Command::Resume);
        assert_eq!(ok(Endpoint::Stop, None), Command::Stop);
        assert_eq!(
            ok(Endpoint::Delay, Some("ms=0")),
            Command::SetDelay(Duration::ZERO)
        );
        assert_eq!(
            ok(Endpoint::Delay, Some("ms=3600000")),
            Command::SetDelay(Duration::from_hours(1))
        );
        assert_eq!(ok(Endpoint::Workers, Some("n=1")), Command::SetWorkers(1));
        assert_eq!(
            ok(Endpoint::Workers, Some("n=4096")),
            Command::SetWorkers(4096)
        );
        for q in [
            "ms=abc",
            "ms=-1",
            "ms=3600001",
            "ms=1.5",
            "ms=",
            "ms=99999999999999999999999",
        ] {
            let msg = bad(Endpoint::Delay, Some(q));
            assert!(msg.contains("parameter ms"), "{q}: {msg}");
        }
        for q in ["n=0", "n=4097", "n=x", "n=-3", "n="] {
            let msg = bad(Endpoint::Workers, Some(q));
            assert!(msg.contains("parameter n"), "{q}: {msg}");
        }
        assert!(bad(Endpoint::Delay, None).contains("missing parameter ms"));
        assert!(bad(Endpoint::Delay, Some("ms=1&ms=2")).contains("more than once"));
        assert!(bad(Endpoint::Delay, Some("ms=1&x=2")).contains("unknown parameter \"x\""));
        assert!(bad(Endpoint::Workers, Some("ms=5")).contains("unknown parameter \"ms\""));
        assert!(bad(Endpoint::Pause, Some("now=1")).contains("unknown parameter \"now\""));
    }

    #[test]
    fn bearer_token_must_match_exactly() {
        let with = |value: &str| {
            let mut h = HeaderMap::new();
            h.insert(
                header::AUTHORIZATION,
                HeaderValue::from_str(value).expect("header value"),
            );
            bearer_matches(&h, "s3cret")
        };
        assert!(with("Bearer s3cret"));
        assert!(with("bearer s3cret"));
        assert!(with("BEARER   s3cret "));
        for wrong in [
            "Bearer s3cre",
            "Bearer s3crett",
            "Bearer S3CRET",
            "Bearer ",
            "Bearer",
            "Basic s3cret",
            "s3cret",
            "Bearers3cret",
            "Token s3cret",
        ] {
            assert!(!with(wrong), "{wrong:?}");
        }
        assert!(!bearer_matches(&HeaderMap::new(), "s3cret"));
    }

    #[test]
    fn secrets_compare_equal_only_when_identical() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(same_secret(b"", b""));
        assert!(!same_secret(b"abd", b"abc"));
        assert!(!same_secret(b"ab", b"abc"));
        assert!(!same_secret(b"abcd", b"abc"));
        assert!(!same_secret(b"", b"abc"));
        // A byte that is the complement of the expected one must not pass for a missing byte.
        assert!(!same_secret(&[!b'a'], b"a"));
    }

    #[test]
    fn client_reads_length_chunked_and_refuses_garbage() {
        let (status, headers, body) = parse_response(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: a/b\r\n\r\nhelloEXTRA",
            false,
        )
        .expect("parses");
        assert_eq!((status, body.as_str()), (200, "hello"));
        assert_eq!(header(&headers, "content-type"), Some("a/b"));
        let (_, _, body) = parse_response(
            b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
            false,
        )
        .expect("parses");
        assert_eq!(body, "abcde");
        let (status, _, body) =
            parse_response(b"HTTP/1.0 204 No Content\r\n\r\n", false).expect("parses");
        assert_eq!((status, body.as_str()), (204, ""));
        for garbage in [
            &b""[..],
            b"HTTP/1.1 200 OK\r\n",
            b"SSH-2.0-OpenSSH\r\n\r\n",
            b"HTTP/1.1 2x0 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
            b"HTTP/1.1 200 OK\r\nContent-Length: many\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nab",
        ] {
            assert!(
                parse_response(garbage, false).is_err(),
                "{:?}",
                String::from_utf8_lossy(garbage)
            );
        }
    }

    #[tokio::test]
    async fn client_refuses_requests_it_cannot_send_safely() {
        let addr = loopback();
        for (method, path, token) in [
            ("GET", "stats", None),
            ("GET", "/stats HTTP/1.1\r\nX: y", None),
            ("get", "/stats", None),
            ("GET", "/stats", Some("a\r\nX-Injected: 1")),
            ("GET", "/stats", Some("")),
        ] {
            let err = client_request(addr, token, method, path)
                .await
                .expect_err("refused before connecting");
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{path:?}");
        }
    }

    // ---- /metrics, offline ------------------------------------------------------------------

    fn fixture() -> Snapshot {
        let mut s = Snapshot {
            state: RunState::Paused,
            elapsed_s: 12.5,
            ..Snapshot::default()
        };
        s.workers.total = 8;
        s.workers.busy = 5;
        s.workers.idle = 3;
        s.workers.busy_pct = 62.5;
        s.scheduler.queued = 40;
        s.scheduler.done = 900;
        s.scheduler.spider.done = 450;
        s.resources.discovered = 1000;
        s.resources.fetched = 450;
        s.errors.timeout = 2;
        s.errors.retries = 4;
        s.http.status.insert("200".into(), 440);
        s.http.status.insert("404".into(), 10);
        s.http.bytes = 123_456_789;
        s.politeness.delay_ms = 1500;
        s.politeness.per_site = 1;
        s.politeness.adaptive_factor = Some(2.0);
        s.rates.pages_per_s = f64::NAN;
        s.rates.bytes_per_s = f64::INFINITY;
        s.commands.push(CommandRecord {
            at_s: 1.0,
            source: CommandSource::Api,
            command: "pause".into(),
        });
        s.sites.push(SiteRow {
            origin: "http://a.example".into(),
            queued: 7,
            fetched: 300,
            errors: 1,
            delay_ms: 250,
            ..SiteRow::default()
        });
        s
    }

    /// One sample as the strict reader saw it.
    #[derive(Debug, Clone, PartialEq)]
    struct StrictSample {
        name: String,
        labels: Vec<(String, String)>,
        value: f64,
    }

    fn valid_name(n: &str) -> bool {
        let mut cs = n.chars();
        cs.next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    }

    /// Labels after the `{`: decoded pairs and the text after the `}`.
    fn strict_labels(mut rest: &str) -> Result<(Headers, &str), String> {
        let mut labels = Vec::new();
        loop {
            let eq = rest.find('=').ok_or("a label without =")?;
            let name = &rest[..eq];
            if !valid_name(name) || name.contains(':') {
                return Err(format!("bad label name {name:?}"));
            }
            rest = rest[eq + 1..]
                .strip_prefix('"')
                .ok_or("an unquoted label value")?;
            let mut value = String::new();
            let mut chars = rest.char_indices();
            let close = loop {
                match chars.next() {
                    None => return Err("an unterminated label value".into()),
                    Some((_, '\\')) => match chars.next() {
                        Some((_, '\\')) => value.push('\\'),
                        Some((_, '"')) => value.push('"'),
                        Some((_, 'n')) => value.push('\n'),
                        _ => return Err("a bad escape".into()),
                    },
                    Some((i, '"')) => break i,
                    Some((_, c)) => value.push(c),
                }
            };
            labels.push((name.to_string(), value));
            rest = &rest[close + 1..];
            if let Some(r) = rest.strip_prefix(',') {
                rest = r;
            } else if let Some(r) = rest.strip_prefix('}') {
                return Ok((labels, r));
            } else {
                return Err("labels not closed".into());
            }
        }
    }

    /// A strict reader of the text format 0.0.4, for what the lenient `prometheus-parse`
    /// skips silently: every family opens with HELP then TYPE, once; its samples follow
    /// without interruption; names, labels, escapes and values are well formed; counters and
    /// only counters end in `_total`; no series twice.
    fn strict_parse(text: &str) -> Result<(BTreeMap<String, String>, Vec<StrictSample>), String> {
        if !text.ends_with('\n') {
            return Err("the text must end with a newline".into());
        }
        let mut types = BTreeMap::new();
        let mut help: Option<&str> = None;
        let mut current: Option<&str> = None;
        let mut series = BTreeSet::new();
        let mut samples = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, doc) = rest.split_once(' ').ok_or(format!("bare HELP: {line}"))?;
                if !valid_name(name) || doc.trim().is_empty() || types.contains_key(name) {
                    return Err(format!("bad or repeated HELP: {line}"));
                }
                help = Some(name);
                current = None;
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').ok_or(format!("bare TYPE: {line}"))?;
                if help.take() != Some(name) {
                    return Err(format!("TYPE without its HELP just before: {line}"));
                }
                match kind {
                    "counter" if name.ends_with("_total") => {}
                    "gauge" if !name.ends_with("_total") => {}
                    _ => return Err(format!("bad type, or a name that does not fit it: {line}")),
                }
                types.insert(name.to_string(), kind.to_string());
                current = Some(name);
            } else if line.starts_with('#') || line.is_empty() {
                return Err(format!("stray line: {line:?}"));
            } else {
                let name_end = line.find(['{', ' ']).ok_or(format!("no value: {line}"))?;
                let name = &line[..name_end];
                if current != Some(name) {
                    return Err(format!("sample outside its family: {line}"));
                }
                let rest = &line[name_end..];
                let (labels, rest) = match rest.strip_prefix('{') {
                    Some(after) => strict_labels(after).map_err(|e| format!("{e}: {line}"))?,
                    None => (Vec::new(), rest),
                };
                let text = rest.strip_prefix(' ').ok_or(format!("no space: {line}"))?;
                let value = match text {
                    "NaN" => f64::NAN,
                    "+Inf" => f64::INFINITY,
                    "-Inf" => f64::NEG_INFINITY,
                    t if !t.contains(char::is_alphabetic) => {
                        t.parse().map_err(|_| format!("bad value: {line}"))?
                    }
                    _ => return Err(format!("bad value: {line}")),
                };
                if !series.insert(format!("{name}{labels:?}")) {
                    return Err(format!("series twice: {line}"));
                }
                samples.push(StrictSample {
                    name: name.to_string(),
                    labels,
                    value,
                });
            }
        }
        if help.is_some() {
            return Err("HELP without TYPE at the end".into());
        }
        Ok((types, samples))
    }

    fn lenient_parse(text: &str) -> prometheus_parse::Scrape {
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
            .expect("prometheus-parse reads it")
    }

    fn sample<'a>(
        samples: &'a [StrictSample],
        name: &str,
        labels: &[(&str, &str)],
    ) -> Option<&'a StrictSample> {
        samples.iter().find(|s| {
            s.name == name
                && s.labels.len() == labels.len()
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.iter().any(|(k2, v2)| k2 == k && v2 == v))
        })
    }

    #[test]
    fn metrics_are_well_formed_and_hold_the_snapshot_numbers() {
        let snap = fixture();
        let text = metrics_text(&snap);
        let (types, samples) = strict_parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let scrape = lenient_parse(&text);
        assert_eq!(
            scrape.samples.len(),
            samples.len(),
            "prometheus-parse skipped lines"
        );
        assert_eq!(scrape.docs.len(), types.len());
        for name in types.keys() {
            assert!(name.starts_with("crawltop_"), "{name}");
        }
        let value = |name: &str, labels: &[(&str, &str)]| {
            sample(&samples, name, labels)
                .unwrap_or_else(|| panic!("{name} {labels:?} missing"))
                .value
        };
        assert_eq!(value("crawltop_resources_fetched_total", &[]), 450.0);
        assert_eq!(value("crawltop_resources_discovered_total", &[]), 1000.0);
        assert_eq!(
            value("crawltop_http_responses_total", &[("status", "200")]),
            440.0
        );
        assert_eq!(
            value("crawltop_http_responses_total", &[("status", "404")]),
            10.0
        );
        assert_eq!(value("crawltop_http_body_bytes_total", &[]), 123_456_789.0);
        assert_eq!(value("crawltop_errors_total", &[("class", "timeout")]), 2.0);
        assert_eq!(value("crawltop_retries_total", &[]), 4.0);
        assert_eq!(value("crawltop_politeness_delay_seconds", &[]), 1.5);
        assert_eq!(value("crawltop_politeness_adaptive_factor", &[]), 2.0);
        assert_eq!(value("crawltop_elapsed_seconds", &[]), 12.5);
        assert_eq!(value("crawltop_state", &[("state", "paused")]), 1.0);
        assert_eq!(value("crawltop_state", &[("state", "running")]), 0.0);
        assert_eq!(
            value("crawltop_workers_by_state", &[("state", "busy")]),
            5.0
        );
        assert_eq!(
            value(
                "crawltop_workers_share_ratio",
                &[("state", "busy"), ("window", "now")]
            ),
            0.625
        );
        assert_eq!(
            value("crawltop_tasks_done_total", &[("kind", "spider")]),
            450.0
        );
        assert_eq!(value("crawltop_commands_total", &[("source", "api")]), 1.0);
        assert_eq!(value("crawltop_sites", &[]), 1.0);
        assert_eq!(
            value(
                "crawltop_site_fetched_total",
                &[("origin", "http://a.example")]
            ),
            300.0
        );
        assert_eq!(
            value(
                "crawltop_site_delay_seconds",
                &[("origin", "http://a.example")]
            ),
            0.25
        );
        assert!(value("crawltop_fetch_rate_pages_per_second", &[]).is_nan());
        assert_eq!(
            value("crawltop_receive_rate_bytes_per_second", &[]),
            f64::INFINITY
        );
        assert_eq!(types["crawltop_site_queued_urls"], "gauge");
        assert_eq!(types["crawltop_http_responses_total"], "counter");
    }

    #[test]
    fn hostile_origins_are_escaped_in_labels() {
        // `prometheus-parse` cannot read a `}` inside a label value (its regex stops there):
        // this one is judged by the strict reader alone.
        let mut snap = fixture();
        snap.sites.push(SiteRow {
            origin: "http://evil.example/\"}\\\nx=\"1".into(),
            queued: 9,
            fetched: 150,
            ..SiteRow::default()
        });
        let text = metrics_text(&snap);
        let (_, samples) = strict_parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let evil = &snap.sites[1].origin;
        let got = sample(&samples, "crawltop_site_queued_urls", &[("origin", evil)])
            .expect("the hostile origin round-trips through the escapes");
        assert_eq!(got.value, 9.0);
        // One line per sample: the newline in the origin did not break a line.
        assert!(
            text.lines()
                .all(|l| l.starts_with("crawltop_") || l.starts_with("# "))
        );
    }

    #[test]
    fn per_site_series_stop_at_the_limit_keeping_the_most_queued() {
        let mut snap = Snapshot::default();
        for i in 0..(METRICS_SITE_LIMIT as u64 + 500) {
            snap.sites.push(SiteRow {
                origin: format!("http://s{i}.example"),
                queued: i,
                ..SiteRow::default()
            });
        }
        let text = metrics_text(&snap);
        let (_, samples) = strict_parse(&text).unwrap_or_else(|e| panic!("{e}"));
        let queued: Vec<&StrictSample> = samples
            .iter()
            .filter(|s| s.name == "crawltop_site_queued_urls")
            .collect();
        assert_eq!(queued.len(), METRICS_SITE_LIMIT);
        assert!(queued.iter().all(|s| s.value >= 500.0));
        assert_eq!(queued[0].value, (METRICS_SITE_LIMIT + 499) as f64);
        for family in [
            "crawltop_site_fetched_total",
            "crawltop_site_errors_total",
            "crawltop_site_in_flight_fetches",
            "crawltop_site_delay_seconds",
        ] {
            assert_eq!(
                samples.iter().filter(|s| s.name == family).count(),
                METRICS_SITE_LIMIT,
                "{family}"
            );
        }
        assert_eq!(
            sample(&samples, "crawltop_sites", &[]).map(|s| s.value),
            Some((METRICS_SITE_LIMIT + 500) as f64)
        );
        assert!(text.contains("at most the first 1000 sites by queued"));
    }

    #[test]
    fn an_empty_snapshot_still_makes_valid_metrics() {
        let text = metrics_text(&Snapshot::default());
        let (types, _) = strict_parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        // Families without samples keep their HELP and TYPE: a scraper learns them at once.
        assert!(types.contains_key("crawltop_http_responses_total"));
        assert!(types.contains_key("crawltop_site_queued_urls"));
        assert!(!types.contains_key("crawltop_politeness_adaptive_factor"));
    }

    #[test]
    fn the_strict_reader_catches_what_it_should() {
        for bad in [
            "crawltop_x 1\n",
            "# HELP a_total h\n# TYPE a_total gauge\na_total 1\n",
            "# HELP a h\n# TYPE a counter\na 1\n",
            "# HELP a h\n# TYPE a gauge\na{x=\"1} 1\n",
            "# HELP a h\n# TYPE a gauge\na{x=\"\\q\"} 1\n",
            "# HELP a h\n# TYPE a gauge\na inf\n",
            "# HELP a h\n# TYPE a gauge\na 1\na 2\n",
            "# HELP a h\n# TYPE a gauge\n# HELP b h\n# TYPE b gauge\na 1\n",
            "# HELP a h\n# TYPE a gauge\na 1",
        ] {
            assert!(strict_parse(bad).is_err(), "{bad:?}");
        }
    }

    // ---- live: a crawl of the test web with the control API on 127.0.0.1:0 -----------------

    /// A web big enough to be still crawling when a test acts on it.
    fn busy_web() -> GenOptions {
        GenOptions::new(2, 200).seed(8).crawl_delay_s(0.02)
    }

    fn expected_fetches(web: &TestWeb) -> u64 {
        web.manifest()
            .normal_sites()
            .map(|s| (s.pages.len() + s.redirects.len()) as u64)
            .sum()
    }

    #[tokio::test]
    async fn a_token_is_required_off_loopback_before_anything_is_bound() {
        let live = Live::start(GenOptions::new(1, 3), 5, None).await;
        // 192.0.2.1 is TEST-NET-1, on no interface here: binding it would fail with `Bind`, so
        // `NeedsToken` shows the check came first. 0.0.0.0:0 would bind: it must not either.
        for addr in ["192.0.2.1:7070", "0.0.0.0:0"] {
            let addr: SocketAddr = addr.parse().expect("addr");
            let got = serve(
                ControlOptions { addr, token: None },
                live.handle.snapshots(),
                live.handle.commander(),
            )
            .await;
            assert!(
                matches!(got, Err(ControlError::NeedsToken(a)) if a == addr),
                "{addr}"
            );
        }
        let taken = serve(
            ControlOptions {
                addr: live.addr(),
                token: None,
            },
            live.handle.snapshots(),
            live.handle.commander(),
        )
        .await;
        assert!(matches!(taken, Err(ControlError::Bind { addr, .. }) if addr == live.addr()));
        live.handle.abort();
    }

    #[tokio::test]
    async fn stats_serve_the_snapshot_as_json() {
        let live = Live::start(GenOptions::new(2, 30).crawl_delay_s(0.01), 5, None).await;
        let rx = live.handle.snapshots();
        live.wait_records(|r| r.len() >= 5).await;
        let before = rx.borrow().clone();
        let (status, headers, body) = exchange(live.addr(), None, "GET", "/stats")
            .await
            .expect("answer");
        let after = rx.borrow().clone();
        assert_eq!(status, 200);
        assert_eq!(header(&headers, "content-type"), Some("application/json"));
        let mid: Snapshot = serde_json::from_str(&body).expect("a Snapshot");
        assert!(before.resources.fetched <= mid.resources.fetched);
        assert!(mid.resources.fetched <= after.resources.fetched);
        assert!(before.elapsed_s <= mid.elapsed_s && mid.elapsed_s <= after.elapsed_s);

        let summary = tokio::time::timeout(PATIENCE, live.handle.finished())
            .await
            .expect("the crawl ends")
            .expect("no engine error");
        let (status, body) = client_request(live.server.local_addr(), None, "GET", "/stats")
            .await
            .expect("answer after the end");
        assert_eq!(status, 200);
        let last: Snapshot = serde_json::from_str(&body).expect("a Snapshot");
        // Compared as JSON parsed the same way on both sides: serde_json's float parsing may
        // be a unit in the last place off, which is not what this test is about.
        let want: serde_json::Value =
            serde_json::from_str(&serde_json::to_string(&*summary.snapshot).expect("json"))
                .expect("json");
        let got: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(got, want);
        assert_eq!(last.state, RunState::Finished);
        let (status, headers, body) = exchange(live.server.local_addr(), None, "HEAD", "/stats")
            .await
            .expect("answer");
        assert_eq!((status, body.as_str()), (200, ""));
        assert!(header(&headers, "content-length").is_some_and(|l| l != "0"));
    }

    #[tokio::test]
    async fn metrics_over_http_parse_and_carry_the_counters() {
        use prometheus_parse::Value;
        let live = Live::start(GenOptions::new(2, 30).crawl_delay_s(0.01), 5, None).await;
        let addr = live.addr();
        let summary = tokio::time::timeout(PATIENCE, live.handle.finished())
            .await
            .expect("the crawl ends")
            .expect("no engine error");
        let snap = summary.snapshot;
        let (status, headers, text) = exchange(addr, None, "GET", "/metrics")
            .await
            .expect("answer");
        assert_eq!(status, 200);
        assert!(
            header(&headers, "content-type")
                .is_some_and(|t| t.starts_with("text/plain; version=0.0.4")),
            "{headers:?}"
        );
        let (_, strict) = strict_parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let scrape = lenient_parse(&text);
        assert_eq!(scrape.samples.len(), strict.len());
        let counter = |name: &str, label: Option<(&str, &str)>| {
            scrape
                .samples
                .iter()
                .find(|s| s.metric == name && label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
                .map_or_else(|| panic!("{name} missing"), |s| s.value.clone())
        };
        assert_eq!(
            counter("crawltop_resources_fetched_total", None),
            Value::Counter(snap.resources.fetched as f64)
        );
        assert!(snap.resources.fetched > 0);
        assert_eq!(
            counter("crawltop_http_responses_total", Some(("status", "200"))),
            Value::Counter(snap.http.status["200"] as f64)
        );
        assert_eq!(
            counter("crawltop_http_body_bytes_total", None),
            Value::Counter(snap.http.bytes as f64)
        );
        assert_eq!(
            counter("crawltop_state", Some(("state", "finished"))),
            Value::Gauge(1.0)
        );
        let origin = &snap.sites[0].origin;
        assert_eq!(
            counter("crawltop_site_fetched_total", Some(("origin", origin))),
            Value::Counter(snap.sites[0].fetched as f64)
        );
    }

    #[tokio::test]
    async fn pause_silences_the_crawl_at_the_server_and_resume_restarts_it() {
        let live = Live::start(busy_web(), 20, None).await;
        let log = live.web.log();
        live.wait_records(|r| r.len() >= 10).await;

        let (status, body) = live.call("POST", "/pause").await;
        assert_eq!(status, 200);
        assert_eq!(body, serde_json::json!({"ok": true, "command": "pause"}));
        live.wait_snapshot(|s| s.state == RunState::Paused && s.scheduler.assigned == 0)
            .await;
        // Nothing in flight at the server: every arrival has its record.
        live.wait_records(|r| r.len() as u64 == log.arrivals())
            .await;
        let mark = log.now_us();
        let arrivals = log.arrivals();
        tokio::time::sleep(Duration::from_millis(400)).await; // an observation window
        let late: Vec<_> = log
            .records()
            .into_iter()
            .filter(|r| r.t_us > mark)
            .collect();
        assert!(late.is_empty(), "requests while paused: {late:?}");
        assert_eq!(log.arrivals(), arrivals);

        let (status, body) = live.call("POST", "/resume").await;
        assert_eq!(status, 200);
        assert_eq!(body["command"], "resume");
        live.wait_records(|r| r.iter().filter(|r| r.t_us > mark).count() >= 3)
            .await;
        let snap = live.wait_snapshot(|s| s.state == RunState::Running).await;
        assert_eq!(api_commands(&snap), ["pause", "resume"]);
        live.handle.abort();
    }

    #[tokio::test]
    async fn delay_spaces_the_requests_to_each_site() {
        let live = Live::start(busy_web(), 20, None).await;
        let log = live.web.log();
        live.wait_records(|r| r.len() >= 6).await;
        let (status, body) = live.call("POST", "/delay?ms=150").await;
        assert_eq!(status, 200);
        assert_eq!(
            body,
            serde_json::json!({"ok": true, "command": "delay", "ms": 150})
        );
        live.wait_snapshot(|s| s.politeness.delay_ms == 150).await;
        let set_at = log.now_us();
        live.wait_records(|r| r.iter().filter(|r| r.t_us > set_at).count() >= 6)
            .await;
        let mut pairs = 0;
        for site in ["site00", "site01"] {
            for pair in log.site_records(site).windows(2) {
                if pair[0].t_us > set_at {
                    let gap = pair[1].t_us - pair[0].t_us;
                    assert!(gap >= 150_000, "{site}: {gap} us apart after /delay?ms=150");
                    pairs += 1;
                }
            }
        }
        assert!(pairs >= 3, "only {pairs} pairs observed");
        live.handle.abort();
    }

    #[tokio::test]
    async fn workers_sets_the_worker_slots() {
        let live = Live::start(busy_web(), 20, None).await;
        live.wait_records(|r| r.len() >= 3).await;
        let (status, body) = live.call("POST", "/workers?n=3").await;
        assert_eq!(status, 200);
        assert_eq!(
            body,
            serde_json::json!({"ok": true, "command": "workers", "n": 3})
        );
        let snap = live.wait_snapshot(|s| s.workers.total == 3).await;
        assert_eq!(api_commands(&snap), ["workers 3"]);
        live.handle.abort();
    }

    #[tokio::test]
    async fn stop_ends_the_crawl_and_later_commands_are_refused() {
        let live = Live::start(busy_web(), 20, None).await;
        live.wait_records(|r| r.len() >= 3).await;
        let (status, body) = live.call("POST", "/stop").await;
        assert_eq!((status, body["command"].as_str()), (200, Some("stop")));
        let addr = live.addr();
        let Live {
            handle,
            server,
            web,
        } = live;
        let summary = tokio::time::timeout(PATIENCE, handle.finished())
            .await
            .expect("the crawl stops")
            .expect("no engine error");
        assert!(!summary.completed);
        assert_eq!(summary.snapshot.state, RunState::Finished);
        assert_eq!(api_commands(&summary.snapshot), ["stop"]);
        let (status, body) = client_request(addr, None, "POST", "/pause")
            .await
            .expect("answer");
        assert_eq!(status, 409, "{body}");
        assert!(body.contains("the crawl is over"));
        drop((server, web));
    }

    #[tokio::test]
    async fn a_token_on_loopback_is_enforced_on_every_request() {
        let live = Live::start(GenOptions::new(1, 3), 5, Some("s3cret")).await;
        let addr = live.addr();
        for (token, path) in [
            (None, "/stats"),
            (Some("wrong"), "/stats"),
            (Some("s3cre"), "/metrics"),
            (None, "/nowhere"),
            (Some("s3cret-and-more"), "/stats"),
        ] {
            let (status, headers, body) = exchange(addr, token, "GET", path).await.expect("answer");
            assert_eq!(status, 401, "{token:?} {path}");
            assert_eq!(header(&headers, "www-authenticate"), Some("Bearer"));
            assert!(body.contains("\"error\""), "{body}");
        }
        // Only a POST without the token: it must not reach the engine.
        let (status, _) = client_request(addr, None, "POST", "/pause")
            .await
            .expect("answer");
        assert_eq!(status, 401);
        let (status, body) = client_request(addr, Some("s3cret"), "GET", "/stats")
            .await
            .expect("answer");
        assert_eq!(status, 200);
        let snap: Snapshot = serde_json::from_str(&body).expect("a Snapshot");
        assert!(api_commands(&snap).is_empty());
        let (status, _) = client_request(addr, Some("s3cret"), "GET", "/metrics")
            .await
            .expect("answer");
        assert_eq!(status, 200);
        live.handle.abort();
    }

    #[tokio::test]
    async fn wrong_paths_methods_and_parameters_get_clear_errors() {
        let live = Live::start(busy_web(), 20, None).await;
        let addr = live.addr();
        for path in ["/", "/stats/", "/STATS", "/pause/now"] {
            let (status, body) = live.call("GET", path).await;
            assert_eq!(status, 404, "{path}");
            assert!(
                body["error"]
                    .as_str()
                    .is_some_and(|e| e.contains("no such endpoint"))
            );
        }
        for (method, path, allow) in [
            ("GET", "/pause", "POST"),
            ("GET", "/delay?ms=5", "POST"),
            ("PUT", "/workers?n=2", "POST"),
            ("POST", "/stats", "GET, HEAD"),
            ("DELETE", "/metrics", "GET, HEAD"),
        ] {
            let (status, headers, body) = exchange(addr, None, method, path).await.expect("answer");
            assert_eq!(status, 405, "{method} {path}");
            assert_eq!(header(&headers, "allow"), Some(allow), "{method} {path}");
            assert_eq!(header(&headers, "content-type"), Some("application/json"));
            assert!(body.contains("not allowed"), "{body}");
        }
        for (path, names) in [
            ("/delay?ms=abc", "parameter ms"),
            ("/delay?ms=3600001", "parameter ms"),
            ("/delay", "missing parameter ms"),
            ("/workers?n=0", "parameter n"),
            ("/workers?n=9999", "parameter n"),
            ("/workers?count=2", "unknown parameter \"count\""),
            ("/stop?force=1", "unknown parameter \"force\""),
        ] {
            let (status, body) = live.call("POST", path).await;
            assert_eq!(status, 400, "{path}");
            let message = body["error"].as_str().expect("an error message");
            assert!(message.contains(names), "{path}: {message}");
        }
        // None of those reached the engine: the next good command is the first it saw.
        let (status, _) = live.call("POST", "/delay?ms=7").await;
        assert_eq!(status, 200);
        let snap = live.wait_snapshot(|s| s.politeness.delay_ms == 7).await;
        assert_eq!(api_commands(&snap), ["delay 7 ms"]);
        live.handle.abort();
    }

    /// Requests `/stats` over one keep-alive connection until `stop`; returns the 200s seen.
    async fn hammer(addr: SocketAddr, stop: CancellationToken) -> u64 {
        let stream = TcpStream::connect(addr).await.expect("connect");
        let mut stream = tokio::io::BufReader::new(stream);
        let mut ok = 0;
        while !stop.is_cancelled() {
            let req = format!("GET /stats HTTP/1.1\r\nHost: {addr}\r\n\r\n");
            if stream.get_mut().write_all(req.as_bytes()).await.is_err() {
                break;
            }
            let mut status_line = String::new();
            if stream.read_line(&mut status_line).await.unwrap_or(0) == 0 {
                break;
            }
            let mut length = 0;
            loop {
                let mut line = String::new();
                stream.read_line(&mut line).await.expect("a header line");
                if line == "\r\n" {
                    break;
                }
                if let Some((k, v)) = line.split_once(':')
                    && k.eq_ignore_ascii_case("content-length")
                {
                    length = v.trim().parse().expect("a length");
                }
            }
            let mut body = vec![0; length];
            stream.read_exact(&mut body).await.expect("a body");
            if status_line.starts_with("HTTP/1.1 200") {
                ok += 1;
            }
        }
        ok
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn busy_stalled_and_deaf_clients_do_not_hold_up_the_crawl() {
        let live = Live::start(GenOptions::new(2, 50).crawl_delay_s(0.01), 5, None).await;
        let addr = live.addr();
        let stop = CancellationToken::new();
        let hammers: Vec<_> = (0..50)
            .map(|_| tokio::spawn(hammer(addr, stop.clone())))
            .collect();
        // Half a request, then silence.
        let mut stalled = Vec::new();
        for _ in 0..10 {
            let mut s = TcpStream::connect(addr).await.expect("connect");
            s.write_all(b"GET /stats HTTP/1.1\r\nHost: x\r\nX-Slow:")
                .await
                .expect("write");
            stalled.push(s);
        }
        // Many requests, answers never read: the server's writes block on a full socket.
        let mut deaf = Vec::new();
        for _ in 0..5 {
            let mut s = TcpStream::connect(addr).await.expect("connect");
            let reqs = "GET /stats HTTP/1.1\r\nHost: x\r\n\r\n".repeat(2000);
            let _ = tokio::time::timeout(Duration::from_millis(200), s.write_all(reqs.as_bytes()))
                .await;
            deaf.push(s);
        }
        let want = expected_fetches(&live.web);
        let summary = tokio::time::timeout(Duration::from_mins(2), live.handle.finished())
            .await
            .expect("the crawl finishes despite the clients")
            .expect("no engine error");
        stop.cancel();
        assert!(summary.completed);
        assert_eq!(summary.snapshot.resources.fetched, want);
        let mut answered = 0;
        for h in hammers {
            answered += h.await.expect("hammer task");
        }
        assert!(
            answered >= 50,
            "only {answered} answers to the hammering clients"
        );
        // The server is still at the service of a newcomer.
        let (status, _) = client_request(addr, None, "GET", "/stats")
            .await
            .expect("answer");
        assert_eq!(status, 200);
        drop((stalled, deaf));
    }

    #[tokio::test]
    async fn half_sent_and_idle_connections_are_closed_by_the_server() {
        let live = Live::start(GenOptions::new(1, 3), 5, None).await;
        let addr = live.addr();
        let mut half = TcpStream::connect(addr).await.expect("connect");
        half.write_all(b"GET /stats HTTP/1.1\r\nHost:")
            .await
            .expect("write");
        let mut idle = TcpStream::connect(addr).await.expect("connect");
        idle.write_all(format!("GET /stats HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
            .await
            .expect("write");
        let bound = HEADER_READ_TIMEOUT + Duration::from_secs(10);
        for (what, stream) in [
            ("half a request", &mut half),
            ("an idle keep-alive", &mut idle),
        ] {
            let mut buf = Vec::new();
            let read = tokio::time::timeout(bound, stream.read_to_end(&mut buf)).await;
            assert!(read.is_ok(), "{what}: still open after {bound:?}");
        }
        live.handle.abort();
    }

    #[tokio::test]
    async fn shutdown_and_drop_stop_listening() {
        let live = Live::start(GenOptions::new(1, 3), 5, None).await;
        let addr = live.addr();
        live.server.shutdown();
        tokio::time::timeout(PATIENCE, live.server.finished())
            .await
            .expect("the server ends");
        assert!(TcpStream::connect(addr).await.is_err());

        let second = serve(
            ControlOptions {
                addr: loopback(),
                token: None,
            },
            live.handle.snapshots(),
            live.handle.commander(),
        )
        .await
        .expect("starts");
        let addr2 = second.local_addr();
        let tasks = second.tasks.clone();
        drop(second);
        tokio::time::timeout(PATIENCE, tasks.wait())
            .await
            .expect("the server ends");
        assert!(TcpStream::connect(addr2).await.is_err());
        live.handle.abort();
    }
}
