//! `serve`: the project's own web server, one loopback port per site folder.
//!
//! It owns sockets, HTTP semantics (GET and HEAD, 301/400/403/404/405, `Host` required on
//! HTTP/1.1, keep-alive, an optional latency before every response), the origin placeholders
//! it fills in, the link farm's pages it makes on request ([`super::farm`]), the command port
//! and graceful shutdown. It must never serve a byte from outside the folder it was given, and
//! never listen on anything but loopback.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Component, Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::farm::LinkFarm;
use super::hostile::{self, Hostile};
use super::log::{RequestLog, RequestRecord, ServerStats};
use super::manifest::{MANIFEST_FILE, SiteKind};
use super::reply::{Payload, Reply};
use super::{SITE_CONFIG_FILE, SiteConfig, fill_origins};

/// How to serve a web.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The folder holding one sub-folder per site.
    pub dir: PathBuf,
    /// A loopback address.
    pub bind: IpAddr,
    /// `None`: the OS picks each site's port. `Some(N)`: sites get N, N+1, ... in name order.
    pub base_port: Option<u16>,
    /// `None`: no command port. `Some(0)`: the OS picks.
    pub command_port: Option<u16>,
    /// Write every request as a JSON line here.
    pub log_file: Option<PathBuf>,
    /// Keep every record in memory (tests read them); off for long command-line runs.
    pub keep_records: bool,
    /// How long in-flight responses may take to finish at shutdown.
    pub grace: Duration,
    pub hostile: hostile::HostileOptions,
    /// Some pages answer late: how tests make a result arrive after later ones.
    pub slow: Option<SlowPages>,
    /// Every response waits this long before its first byte, as a distant or busy server's
    /// would: a crawl of this web is then bound by its workers, not by the CPU. Zero: none.
    pub latency: Duration,
}

/// One page in `one_in` (chosen by a hash of its path, so always the same ones) waits `delay`
/// before answering; robots.txt never does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlowPages {
    pub one_in: u64,
    pub delay: Duration,
}

impl SlowPages {
    fn delays(self, path: &str) -> bool {
        path != "/robots.txt"
            && self.one_in > 0
            && xxhash_rust::xxh3::xxh3_64(path.as_bytes()).is_multiple_of(self.one_in)
    }
}

impl ServeOptions {
    /// Serve `dir` on 127.0.0.1, OS-chosen ports, records kept, no command port.
    pub fn new(dir: impl Into<PathBuf>) -> ServeOptions {
        ServeOptions {
            dir: dir.into(),
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            base_port: None,
            command_port: None,
            log_file: None,
            keep_records: true,
            grace: Duration::from_secs(5),
            hostile: hostile::HostileOptions::default(),
            slow: None,
            latency: Duration::ZERO,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{}: not a folder holding site folders: {source}", path.display())]
    Dir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} holds no site folders", .0.display())]
    NoSites(PathBuf),
    #[error(
        "{} is not a web made by `crawltop gen-site` (it has no manifest.json); serve only \
         serves such a folder, each of its subfolders as a site",
        .0.display()
    )]
    NotAWeb(PathBuf),
    #[error("{}: bad site configuration: {reason}", path.display())]
    SiteConfig { path: PathBuf, reason: String },
    #[error(
        "{0} is not a loopback address: the test web only listens on loopback (127.0.0.0/8, ::1)"
    )]
    NotLoopback(IpAddr),
    #[error("--base-port {base} leaves no room for {sites} sites below port 65536")]
    PortRange { base: u16, sites: usize },
    #[error("cannot listen on {addr} for {what}: {source}")]
    Bind {
        what: String,
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The line printed on start and written to `ports.json`: where everything listens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listening {
    pub event: String,
    pub dir: PathBuf,
    /// Site name -> origin, e.g. `"site00": "http://127.0.0.1:41234"`.
    pub sites: BTreeMap<String, String>,
    /// The command port, if any.
    pub command: Option<SocketAddr>,
}

/// File name of the listening record inside the served folder.
pub const PORTS_FILE: &str = "ports.json";

#[derive(Debug)]
struct SiteState {
    name: String,
    root: PathBuf,
    kind: SiteKind,
    /// A link farm's shape (its pages are made on request).
    farm: Option<LinkFarm>,
    in_flight: AtomicU32,
}

#[derive(Debug)]
struct Shared {
    sites: Vec<SiteState>,
    /// site name -> origin, for the placeholders.
    origins: BTreeMap<String, String>,
    conn_ids: AtomicU64,
    log: Arc<RequestLog>,
    shutdown: CancellationToken,
    hostile: Hostile,
    slow: Option<SlowPages>,
    latency: Duration,
}

/// A running server. Dropping it does not stop it: call [`Server::shutdown`].
#[derive(Debug)]
pub struct Server {
    shared: Arc<Shared>,
    listening: Listening,
    sites: BTreeMap<String, SocketAddr>,
    command: Option<SocketAddr>,
    done: watch::Receiver<bool>,
}

impl Server {
    /// Binds every port, then serves until shutdown (`SHUTDOWN` on the command port or
    /// [`Server::shutdown`]). Writes `ports.json` into the folder.
    pub async fn start(opts: ServeOptions) -> Result<Server, ServeError> {
        if !opts.bind.is_loopback() {
            return Err(ServeError::NotLoopback(opts.bind));
        }
        let sites = discover_sites(&opts.dir)?;
        if let Some(base) = opts.base_port
            && usize::from(base) + sites.len() > usize::from(u16::MAX) + 1
        {
            return Err(ServeError::PortRange {
                base,
                sites: sites.len(),
            });
        }
        let listeners = bind_sites(&opts, &sites).await?;
        let command_listener = match opts.command_port {
            Some(port) => Some(bind(opts.bind, port, "the command port").await?),
            None => None,
        };
        let mut addrs = BTreeMap::new();
        let mut origins = BTreeMap::new();
        for (site, listener) in sites.iter().zip(&listeners) {
            let addr = listener.local_addr().map_err(|source| ServeError::Io {
                path: site.root.clone(),
                source,
            })?;
            addrs.insert(site.name.clone(), addr);
            origins.insert(site.name.clone(), format!("http://{addr}"));
        }
        let command = match &command_listener {
            Some(l) => Some(l.local_addr().map_err(|source| ServeError::Io {
                path: opts.dir.clone(),
                source,
            })?),
            None => None,
        };
        let log_path = opts.log_file.as_deref();
        let log =
            RequestLog::new(opts.keep_records, log_path).map_err(|source| ServeError::Io {
                path: log_path.map_or_else(PathBuf::new, Path::to_path_buf),
                source,
            })?;
        let listening = Listening {
            event: "listening".into(),
            dir: opts.dir.clone(),
            sites: origins.clone(),
            command,
        };
        let ports_path = opts.dir.join(PORTS_FILE);
        write_atomically(
            &ports_path,
            &serde_json::to_vec_pretty(&listening).unwrap_or_default(),
        )
        .map_err(|source| ServeError::Io {
            path: ports_path,
            source,
        })?;

        let shutdown = CancellationToken::new();
        let shared = Arc::new(Shared {
            sites,
            origins,
            conn_ids: AtomicU64::new(0),
            log: Arc::new(log),
            hostile: Hostile::new(opts.hostile.clone(), shutdown.clone()),
            shutdown,
            slow: opts.slow,
            latency: opts.latency,
        });
        let tracker = TaskTracker::new();
        for (i, listener) in listeners.into_iter().enumerate() {
            tracker.spawn(accept_loop(
                shared.clone(),
                i,
                listener,
                tracker.clone(),
                opts.grace,
            ));
        }
        if let Some(listener) = command_listener {
            tracker.spawn(command_loop(shared.clone(), listener, tracker.clone()));
        }
        let (done_tx, done) = watch::channel(false);
        let sup = shared.clone();
        let grace = opts.grace;
        tokio::spawn(async move {
            sup.shutdown.cancelled().await;
            tracker.close();
            // Connections get `grace` to finish; whatever is left after that is cut.
            let _ = tokio::time::timeout(grace + Duration::from_secs(1), tracker.wait()).await;
            let log = sup.log.clone();
            let _ = tokio::task::spawn_blocking(move || log.close()).await;
            let _ = done_tx.send(true);
        });
        Ok(Server {
            shared,
            listening,
            sites: addrs,
            command,
            done,
        })
    }

    /// Site name -> socket address.
    pub fn sites(&self) -> &BTreeMap<String, SocketAddr> {
        &self.sites
    }

    /// `http://127.0.0.1:PORT` of a site.
    pub fn origin(&self, site: &str) -> Option<&str> {
        self.shared.origins.get(site).map(String::as_str)
    }

    pub fn command_addr(&self) -> Option<SocketAddr> {
        self.command
    }

    /// What was printed on start.
    pub fn listening(&self) -> &Listening {
        &self.listening
    }

    pub fn log(&self) -> &Arc<RequestLog> {
        &self.shared.log
    }

    pub fn stats(&self) -> ServerStats {
        self.shared.log.stats()
    }

    /// Starts a graceful shutdown: stop accepting, let in-flight responses finish (endless
    /// hostile bodies end at once), close the log.
    pub fn shutdown(&self) {
        self.shared.shutdown.cancel();
    }

    /// Whether a shutdown was asked for (by [`Server::shutdown`] or `SHUTDOWN`).
    pub fn is_shutting_down(&self) -> bool {
        self.shared.shutdown.is_cancelled()
    }

    /// Resolves when a shutdown was asked for.
    pub async fn shutdown_requested(&self) {
        self.shared.shutdown.cancelled().await;
    }

    /// Resolves when the server has shut down completely and the log is flushed.
    pub async fn finished(&self) {
        let mut done = self.done.clone();
        // The sender lives until it has sent `true`; an error means the task is gone anyway.
        let _ = done.wait_for(|d| *d).await;
    }
}

async fn bind(ip: IpAddr, port: u16, what: &str) -> Result<TcpListener, ServeError> {
    let addr = SocketAddr::new(ip, port);
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind {
            what: what.to_string(),
            addr,
            source,
        })
}

fn discover_sites(dir: &Path) -> Result<Vec<SiteState>, ServeError> {
    let entries = std::fs::read_dir(dir).map_err(|source| ServeError::Dir {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut sites = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| ServeError::Dir {
            path: dir.to_path_buf(),
            source,
        })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.starts_with('.') || !path.is_dir() {
            continue;
        }
        let root = std::fs::canonicalize(&path).map_err(|source| ServeError::Io {
            path: path.clone(),
            source,
        })?;
        let config_path = root.join(SITE_CONFIG_FILE);
        let config = match std::fs::read(&config_path) {
            Ok(bytes) => serde_json::from_slice::<SiteConfig>(&bytes).map_err(|e| {
                ServeError::SiteConfig {
                    path: config_path.clone(),
                    reason: e.to_string(),
                }
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => SiteConfig {
                kind: SiteKind::Normal,
                farm: None,
            },
            Err(source) => {
                return Err(ServeError::Io {
                    path: config_path,
                    source,
                });
            }
        };
        let farm_problem = match (config.kind, &config.farm) {
            (SiteKind::LinkFarm, None) => Some("a link farm needs its parameters (farm)".into()),
            (SiteKind::LinkFarm, Some(farm)) => farm.problem(),
            (_, Some(_)) => Some("only a link farm has farm parameters".into()),
            (_, None) => None,
        };
        if let Some(reason) = farm_problem {
            return Err(ServeError::SiteConfig {
                path: config_path,
                reason,
            });
        }
        sites.push(SiteState {
            name,
            root,
            kind: config.kind,
            farm: config.farm,
            in_flight: AtomicU32::new(0),
        });
    }
    if sites.is_empty() {
        return Err(ServeError::NoSites(dir.to_path_buf()));
    }
    // Any folder's subfolders would do as sites, and `ports.json` is written into it: only a
    // generated web is served, never a folder aimed at by mistake.
    if !dir.join(MANIFEST_FILE).is_file() {
        return Err(ServeError::NotAWeb(dir.to_path_buf()));
    }
    sites.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(sites)
}

pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

async fn accept_loop(
    shared: Arc<Shared>,
    site: usize,
    listener: TcpListener,
    tracker: TaskTracker,
    grace: Duration,
) {
    loop {
        let accepted = tokio::select! {
            () = shared.shutdown.cancelled() => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                tracker.spawn(serve_connection(shared.clone(), site, stream, grace));
            }
            Err(e) => {
                // Out of file descriptors and the like: wait a little instead of spinning.
                tracing::warn!("accept on {}: {e}", shared.sites[site].name);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

async fn serve_connection(shared: Arc<Shared>, site: usize, stream: TcpStream, grace: Duration) {
    let conn_id = shared.conn_ids.fetch_add(1, Ordering::Relaxed) + 1;
    let svc_shared = shared.clone();
    let service = hyper::service::service_fn(move |req| {
        let shared = svc_shared.clone();
        async move { Ok::<_, Infallible>(handle(shared, site, conn_id, req).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        () = shared.shutdown.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(grace, conn).await;
        }
    }
}

/// Records a request when dropped: after the body ends, or when the client goes away.
struct LogGuard {
    shared: Arc<Shared>,
    site: usize,
    conn: u64,
    t_us: u64,
    method: String,
    path: String,
    user_agent: Option<String>,
    in_flight: u32,
    status: u16,
    bytes: u64,
    complete: bool,
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        let site = &self.shared.sites[self.site];
        site.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.shared.log.push(RequestRecord {
            t_us: self.t_us,
            done_us: self.shared.log.now_us(),
            site: site.name.clone(),
            method: std::mem::take(&mut self.method),
            path: std::mem::take(&mut self.path),
            status: self.status,
            bytes: self.bytes,
            complete: self.complete,
            user_agent: self.user_agent.take(),
            conn: self.conn,
            in_flight: self.in_flight,
        });
    }
}

/// A response body that counts what it sends and logs the request when it is dropped.
struct ServedBody {
    payload: Payload,
    guard: Option<LogGuard>,
}

impl ServedBody {
    fn count(&mut self, n: usize) {
        if let Some(g) = &mut self.guard {
            g.bytes += n as u64;
        }
    }

    fn finish(&mut self) {
        if let Some(g) = &mut self.guard {
            g.complete = true;
        }
    }
}

impl Body for ServedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let next = match &mut this.payload {
            Payload::Empty => None,
            Payload::Full(bytes) => {
                let b = std::mem::take(bytes);
                this.payload = Payload::Empty;
                (!b.is_empty()).then_some(b)
            }
            Payload::Repeat { chunk, remaining } => {
                if *remaining == 0 {
                    None
                } else {
                    let n = (*remaining).min(chunk.len() as u64) as usize;
                    *remaining -= n as u64;
                    Some(chunk.slice(..n))
                }
            }
            Payload::Channel(rx) => match rx.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(b) => b,
            },
        };
        if let Some(b) = next {
            this.count(b.len());
            Poll::Ready(Some(Ok(Frame::data(b))))
        } else {
            this.finish();
            Poll::Ready(None)
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.payload {
            Payload::Empty => true,
            Payload::Full(b) => b.is_empty(),
            Payload::Repeat { remaining, .. } => *remaining == 0,
            Payload::Channel(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.payload {
            Payload::Empty => SizeHint::with_exact(0),
            Payload::Full(b) => SizeHint::with_exact(b.len() as u64),
            Payload::Repeat { remaining, .. } => SizeHint::with_exact(*remaining),
            Payload::Channel(_) => SizeHint::default(),
        }
    }
}

impl Drop for ServedBody {
    fn drop(&mut self) {
        // A body that was never polled to its end but had nothing to send is complete too.
        if self.is_end_stream()
            && let Some(g) = &mut self.guard
        {
            g.complete = true;
        }
    }
}

/// One listener per site, on the configured ports or ones the OS picks.
async fn bind_sites(
    opts: &ServeOptions,
    sites: &[SiteState],
) -> Result<Vec<TcpListener>, ServeError> {
    let mut listeners = Vec::with_capacity(sites.len());
    for (i, site) in sites.iter().enumerate() {
        let port = opts.base_port.map_or(0, |b| b + i as u16);
        listeners.push(bind(opts.bind, port, &format!("site {}", site.name)).await?);
    }
    Ok(listeners)
}

async fn handle(
    shared: Arc<Shared>,
    site: usize,
    conn: u64,
    req: Request<Incoming>,
) -> Response<ServedBody> {
    let state = &shared.sites[site];
    let in_flight = state.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
    shared.log.note_arrival();
    let path_and_query = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().to_string(), ToString::to_string);
    let mut guard = LogGuard {
        shared: shared.clone(),
        site,
        conn,
        t_us: shared.log.now_us(),
        method: req.method().to_string(),
        path: path_and_query,
        user_agent: req
            .headers()
            .get(header::USER_AGENT)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        in_flight,
        // 499 until a response exists: if this future is dropped first, the client left.
        status: 499,
        bytes: 0,
        complete: false,
    };
    if !shared.latency.is_zero() {
        tokio::select! {
            () = tokio::time::sleep(shared.latency) => {}
            () = shared.shutdown.cancelled() => {}
        }
    }
    let head = req.method() == Method::HEAD;
    let reply = if let Some(why) = host_problem(&req) {
        Reply::text(StatusCode::BAD_REQUEST, why)
    } else if req.method() != Method::GET && !head {
        Reply::text(
            StatusCode::METHOD_NOT_ALLOWED,
            "only GET and HEAD are served",
        )
        .header(header::ALLOW, HeaderValue::from_static("GET, HEAD"))
    } else {
        if let Some(slow) = shared.slow
            && slow.delays(req.uri().path())
        {
            tokio::select! {
                () = tokio::time::sleep(slow.delay) => {}
                () = shared.shutdown.cancelled() => {}
            }
        }
        route(&shared, site, req.uri()).await
    };
    guard.status = reply.status.as_u16();
    build_response(reply, guard, head)
}

/// Why a request's `Host` makes it a bad request, if it does. RFC 9112 §3.2: a server MUST
/// answer 400 to an HTTP/1.1 request that has no `Host` or more than one. HTTP/1.0 predates
/// `Host`, so a 1.0 request may leave it out (it still may not send two).
fn host_problem<B>(req: &Request<B>) -> Option<&'static str> {
    let mut hosts = req.headers().get_all(header::HOST).iter();
    match (hosts.next(), hosts.next()) {
        (Some(_), Some(_)) => Some("more than one Host header"),
        (None, _) if req.version() >= hyper::Version::HTTP_11 => {
            Some("an HTTP/1.1 request must carry a Host header")
        }
        _ => None,
    }
}

fn build_response(reply: Reply, guard: LogGuard, head: bool) -> Response<ServedBody> {
    let mut payload = reply.payload;
    let length = match &payload {
        Payload::Empty => Some(0),
        Payload::Full(b) => Some(b.len() as u64),
        Payload::Repeat { remaining, .. } => Some(*remaining),
        Payload::Channel(_) => None,
    };
    if head {
        payload = Payload::Empty;
    }
    let mut response = Response::new(ServedBody {
        payload,
        guard: Some(guard),
    });
    *response.status_mut() = reply.status;
    let headers = response.headers_mut();
    headers.insert(header::SERVER, HeaderValue::from_static("crawltop-testweb"));
    for (name, value) in reply.headers {
        headers.append(name, value);
    }
    if let Some(len) = length {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    response
}

async fn route(shared: &Arc<Shared>, site: usize, uri: &hyper::Uri) -> Reply {
    let state = &shared.sites[site];
    match state.kind {
        SiteKind::Robots500 if uri.path() == "/robots.txt" => {
            return Reply::text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "robots.txt is broken on purpose",
            );
        }
        SiteKind::RobotsMoved if uri.path() == "/robots.txt" => {
            return Reply::redirect(
                StatusCode::MOVED_PERMANENTLY,
                super::generator::MOVED_ROBOTS_TXT,
            );
        }
        SiteKind::RobotsAway if uri.path() == "/robots.txt" => {
            return match shared.origins.get("robotsmoved") {
                Some(origin) => Reply::redirect(
                    StatusCode::FOUND,
                    &format!("{origin}{}", super::generator::MOVED_ROBOTS_TXT),
                ),
                None => Reply::text(StatusCode::NOT_FOUND, "not found"),
            };
        }
        SiteKind::Hostile => {
            if let Some(reply) = hostile::route(&shared.hostile, uri).await {
                return reply;
            }
        }
        SiteKind::LinkFarm if uri.path() != "/robots.txt" => {
            let page = state.farm.as_ref().and_then(|farm| {
                LinkFarm::id_of(uri.path()).and_then(|id| farm.render(&state.name, id))
            });
            return match page {
                Some(html) => Reply::new(StatusCode::OK, "text/html", html),
                None => Reply::text(StatusCode::NOT_FOUND, "not found"),
            };
        }
        SiteKind::Normal
        | SiteKind::Robots500
        | SiteKind::RobotsMoved
        | SiteKind::RobotsAway
        | SiteKind::Listings
        | SiteKind::Docs
        | SiteKind::LinkFarm => {}
    }
    match resolve(&state.root, uri.path()) {
        Ok(Resolved::Redirect(location)) => {
            let location = match uri.query() {
                Some(q) => format!("{location}?{q}"),
                None => location,
            };
            Reply::redirect(StatusCode::MOVED_PERMANENTLY, &location)
        }
        Ok(Resolved::File(path)) => serve_file(shared, &path),
        Err(Refusal::BadRequest(why)) => Reply::text(StatusCode::BAD_REQUEST, why),
        Err(Refusal::Forbidden(why)) => Reply::text(StatusCode::FORBIDDEN, why),
        Err(Refusal::NotFound) => Reply::text(StatusCode::NOT_FOUND, "not found"),
    }
}

fn serve_file(shared: &Shared, path: &Path) -> Reply {
    // Small files from the page cache: a blocking read of microseconds is cheaper here than a
    // hop to the blocking pool, and keeps the server from being a crawl benchmark's bottleneck.
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Reply::text(StatusCode::FORBIDDEN, "not readable");
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Reply::text(StatusCode::NOT_FOUND, "not found");
        }
        Err(_) => return Reply::text(StatusCode::INTERNAL_SERVER_ERROR, "read error"),
    };
    let content_type = content_type(path);
    let body = if content_type.starts_with("text/") {
        fill_origins(&bytes, &shared.origins).map_or_else(|| Bytes::from(bytes), Bytes::from)
    } else {
        Bytes::from(bytes)
    };
    Reply::new(StatusCode::OK, content_type, body)
}

/// The Content-Type for a file, by its extension. HTML carries no charset: the page's own
/// `<meta charset>` decides, as it does on many real servers.
fn content_type(path: &Path) -> &'static str {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("html" | "htm") => "text/html",
        Some("txt") => "text/plain; charset=utf-8",
        Some("png") => "image/png",
        Some("css") => "text/css",
        Some("js") => "text/javascript",
        Some("json") => "application/json",
        Some("xml") => "application/xml",
        Some("gz") => "application/gzip",
        _ => "application/octet-stream",
    }
}

/// Where a request path leads inside a site folder.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Resolved {
    File(PathBuf),
    /// A folder asked for without its trailing slash: the location with it.
    Redirect(String),
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    BadRequest(&'static str),
    Forbidden(&'static str),
    NotFound,
}

/// Maps a request path to a file inside `root` (canonical), refusing every way out: `..`,
/// encoded separators, backslashes, NUL bytes, invalid encodings, hidden files, and symlinks
/// that lead outside `root`.
pub(crate) fn resolve(root: &Path, raw_path: &str) -> Result<Resolved, Refusal> {
    if !raw_path.starts_with('/') {
        return Err(Refusal::BadRequest("the path must start with /"));
    }
    let lower = raw_path.to_ascii_lowercase();
    if lower.contains("%2f") || lower.contains("%5c") {
        return Err(Refusal::Forbidden("encoded path separators are refused"));
    }
    let decoded = percent_encoding::percent_decode_str(raw_path).collect::<Vec<u8>>();
    let Ok(decoded) = String::from_utf8(decoded) else {
        return Err(Refusal::BadRequest("the path is not UTF-8"));
    };
    if decoded.contains('\0') {
        return Err(Refusal::BadRequest("NUL in path"));
    }
    if decoded.contains('\\') {
        return Err(Refusal::Forbidden("backslashes are refused"));
    }
    let mut path = root.to_path_buf();
    for segment in decoded.split('/') {
        match segment {
            "" | "." => {}
            ".." => return Err(Refusal::Forbidden("parent segments are refused")),
            s if s.starts_with('.') => return Err(Refusal::NotFound),
            s => {
                // A segment is one plain name; anything that parses otherwise is refused.
                let mut comps = Path::new(s).components();
                match (comps.next(), comps.next()) {
                    (Some(Component::Normal(_)), None) => path.push(s),
                    _ => return Err(Refusal::Forbidden("not a plain name")),
                }
            }
        }
    }
    let real = match std::fs::canonicalize(&path) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Err(Refusal::Forbidden("not readable"));
        }
        Err(_) => return Err(Refusal::NotFound),
    };
    if !real.starts_with(root) {
        return Err(Refusal::Forbidden("leads outside the site"));
    }
    let meta = std::fs::metadata(&real).map_err(|_| Refusal::NotFound)?;
    if meta.is_dir() {
        if !raw_path.ends_with('/') {
            return Ok(Resolved::Redirect(format!("{raw_path}/")));
        }
        let index = real.join("index.html");
        return match std::fs::metadata(&index) {
            Ok(m) if m.is_file() => Ok(Resolved::File(index)),
            _ => Err(Refusal::NotFound),
        };
    }
    if !meta.is_file() {
        return Err(Refusal::Forbidden("not a regular file"));
    }
    Ok(Resolved::File(real))
}

async fn command_loop(shared: Arc<Shared>, listener: TcpListener, tracker: TaskTracker) {
    loop {
        let accepted = tokio::select! {
            () = shared.shutdown.cancelled() => return,
            a = listener.accept() => a,
        };
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        };
        tracker.spawn(command_connection(shared.clone(), stream));
    }
}

/// The command protocol: one word a line, one JSON or text line back. `STATS`, `SHUTDOWN`.
async fn command_connection(shared: Arc<Shared>, stream: TcpStream) {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    loop {
        let line = tokio::select! {
            () = shared.shutdown.cancelled() => return,
            l = lines.next_line() => l,
        };
        let Ok(Some(line)) = line else { return };
        let reply = match line.trim().to_ascii_uppercase().as_str() {
            "STATS" => {
                serde_json::to_string(&shared.log.stats()).unwrap_or_else(|e| format!("ERR {e}"))
            }
            "SHUTDOWN" => {
                let _ = write.write_all(b"OK shutting down\n").await;
                shared.shutdown.cancel();
                return;
            }
            "" => continue,
            other => format!("ERR unknown command {other:?}; commands: STATS, SHUTDOWN"),
        };
        if write
            .write_all(format!("{reply}\n").as_bytes())
            .await
            .is_err()
        {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("site");
        std::fs::create_dir_all(root.join("a")).expect("mkdir");
        std::fs::write(root.join("index.html"), "i").expect("write");
        std::fs::write(root.join("a/index.html"), "a").expect("write");
        std::fs::write(root.join("a/p.html"), "p").expect("write");
        std::fs::write(dir.path().join("secret.txt"), "s").expect("write");
        let root = std::fs::canonicalize(root).expect("canonicalize");
        (dir, root)
    }

    #[test]
    fn plain_paths_resolve() {
        let (_d, root) = site();
        assert_eq!(
            resolve(&root, "/"),
            Ok(Resolved::File(root.join("index.html")))
        );
        assert_eq!(
            resolve(&root, "/a/p.html"),
            Ok(Resolved::File(root.join("a/p.html")))
        );
        assert_eq!(
            resolve(&root, "/a/"),
            Ok(Resolved::File(root.join("a/index.html")))
        );
        assert_eq!(resolve(&root, "/a"), Ok(Resolved::Redirect("/a/".into())));
        assert_eq!(
            resolve(&root, "//a//p.html"),
            Ok(Resolved::File(root.join("a/p.html")))
        );
        assert_eq!(resolve(&root, "/missing.html"), Err(Refusal::NotFound));
    }

    #[test]
    fn escapes_are_refused() {
        let (_d, root) = site();
        for path in [
            "/../secret.txt",
            "/a/../../secret.txt",
            "/%2e%2e/secret.txt",
            "/%2E%2E/secret.txt",
            "/a%2f..%2f..%2fsecret.txt",
            "/..%5csecret.txt",
            "/..\\secret.txt",
            "/a/%00.html",
            "/%ff.html",
            "relative.html",
        ] {
            let r = resolve(&root, path);
            assert!(
                matches!(r, Err(Refusal::Forbidden(_) | Refusal::BadRequest(_))),
                "{path} gave {r:?}"
            );
        }
    }

    #[test]
    fn symlinks_out_are_refused_and_in_are_served() {
        let (d, root) = site();
        std::os::unix::fs::symlink(d.path().join("secret.txt"), root.join("out.txt"))
            .expect("symlink");
        std::os::unix::fs::symlink(root.join("a/p.html"), root.join("in.html")).expect("symlink");
        assert!(matches!(
            resolve(&root, "/out.txt"),
            Err(Refusal::Forbidden(_))
        ));
        assert_eq!(
            resolve(&root, "/in.html"),
            Ok(Resolved::File(root.join("a/p.html")))
        );
    }

    #[test]
    fn hidden_files_are_not_served() {
        let (_d, root) = site();
        std::fs::write(root.join(".crawltop-site.json"), "{}").expect("write");
        assert_eq!(
            resolve(&root, "/.crawltop-site.json"),
            Err(Refusal::NotFound)
        );
    }
}
