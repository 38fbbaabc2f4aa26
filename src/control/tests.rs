//! The HTTP API against a live crawl of the test web on 127.0.0.1:0, and its pure parts.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::client::exchange;
use super::metrics::tests::{lenient_parse, strict_parse};
use super::*;
use crate::config::CrawlConfig;
use crate::engine::{self, CrawlHandle};
use crate::snapshot::RunState;
use crate::testweb::{GenOptions, TestWeb};

/// Generous bound for waiting on an event; a test that needs it has failed anyway.
pub(super) const PATIENCE: Duration = Duration::from_secs(30);
/// Well below the idle timeouts (5 s between HTTP requests, 10 s on the command port): a
/// newcomer answered within it did not wait for anyone's silence to end.
pub(super) const PROMPTLY: Duration = Duration::from_secs(2);

pub(super) fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// A crawl of `web` with 8 workers and the given delay, seeded with every normal site.
pub(super) async fn crawl(
    web: GenOptions,
    delay_ms: u64,
    out: Option<&std::path::Path>,
) -> (TestWeb, CrawlHandle) {
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
        out: out.map(std::path::Path::to_path_buf),
        ..CrawlConfig::default()
    };
    let handle = engine::spawn(cfg).expect("crawl starts");
    (web, handle)
}

/// A crawl of a test web with the control API beside it on 127.0.0.1:0.
struct Live {
    web: TestWeb,
    handle: CrawlHandle,
    server: ControlServer,
}

impl Live {
    async fn start(web: GenOptions, delay_ms: u64, token: Option<&str>) -> Live {
        let (web, handle) = crawl(web, delay_ms, None).await;
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

    async fn wait_snapshot(&self, done: impl FnMut(&Snapshot) -> bool) -> Arc<Snapshot> {
        wait_snapshot(&self.handle, done).await
    }

    async fn wait_records(&self, done: impl FnMut(&[crate::testweb::RequestRecord]) -> bool) {
        wait_records(&self.web, done).await;
    }
}

pub(super) async fn wait_snapshot(
    handle: &CrawlHandle,
    mut done: impl FnMut(&Snapshot) -> bool,
) -> Arc<Snapshot> {
    let mut rx = handle.snapshots();
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

pub(super) async fn wait_records(
    web: &TestWeb,
    done: impl FnMut(&[crate::testweb::RequestRecord]) -> bool,
) {
    tokio::time::timeout(PATIENCE, web.log().wait_until(done))
        .await
        .expect("request log condition reached");
}

pub(super) fn commands_from(snap: &Snapshot, source: CommandSource) -> Vec<String> {
    snap.commands
        .iter()
        .filter(|c| c.source == source)
        .map(|c| c.command.clone())
        .collect()
}

fn api_commands(snap: &Snapshot) -> Vec<String> {
    commands_from(snap, CommandSource::Api)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

// ---- pure parts -----------------------------------------------------------------------------

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

/// Every endpoint's parameters are decoded to bytes before UTF-8: one that is not UTF-8 is
/// refused and named, never searched or counted as the word before the bad byte.
#[test]
fn query_parameters_that_are_not_utf8_are_refused_everywhere() {
    assert_eq!(
        search_params(Some("q=white+rabbit&limit=3")),
        Ok(("white rabbit".to_owned(), 3))
    );
    assert_eq!(
        search_params(Some("q=caf%C3%A9")),
        Ok(("café".to_owned(), index::SEARCH_LIMIT))
    );
    // U+FFFD itself, sent as UTF-8, is a character like any other.
    assert_eq!(
        one_param(Some("word=%EF%BF%BD"), "/maxcount", "word"),
        Ok("\u{fffd}".to_owned())
    );
    for (got, what) in [
        (search_params(Some("q=rabbit%FF")).map(|_| ()), "q"),
        (
            search_params(Some("q=rabbit&limit=%C3")).map(|_| ()),
            "limit",
        ),
        (
            one_param(Some("word=rabbit%C3"), "/maxcount", "word").map(|_| ()),
            "word",
        ),
        (
            one_param(Some("word%FF=rabbit"), "/maxcount", "word").map(|_| ()),
            "word\u{fffd}",
        ),
        (no_params(Some("x=%FF"), "/wc"), "x"),
        (command(Endpoint::Delay, Some("ms=1%FF")).map(|_| ()), "ms"),
    ] {
        let message = got.expect_err(what);
        assert!(
            message.contains(&format!("parameter {what:?} is not UTF-8")),
            "{what}: {message}"
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

#[tokio::test]
async fn a_refused_connection_is_named_as_such() {
    let closed = std::net::TcpListener::bind(loopback())
        .and_then(|l| l.local_addr())
        .expect("a port");
    // The listener is gone: nothing listens there now.
    let err = client_request(closed, None, "GET", "/stats")
        .await
        .expect_err("refused");
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused, "{err}");
    assert!(err.to_string().contains("refused"), "{err}");
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
    // 192.0.2.1 is TEST-NET-1, on no interface here: binding it would fail with `Bind` (and
    // send nothing), so `NeedsToken` shows the check came first. No test gives an address that
    // would bind off loopback (0.0.0.0): a broken check would open the port to the network;
    // `auth`'s unit tests judge those addresses without binding.
    for addr in ["192.0.2.1:7070"] {
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
    let late = log.records_after(mark);
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
        for gap in log.gaps_after(site, set_at) {
            assert!(gap >= 150_000, "{site}: {gap} us apart after /delay?ms=150");
            pairs += 1;
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
    // The reads refuse a parameter they do not take, as the rest do (audit 33 F6: they
    // answered 200 and ignored it).
    for (method, path, names) in [
        (
            "GET",
            "/stats?x=1",
            "unknown parameter \"x\": /stats takes none",
        ),
        ("HEAD", "/stats?site=a", "site"),
        (
            "GET",
            "/metrics?x=1",
            "unknown parameter \"x\": /metrics takes none",
        ),
        ("GET", "/stats?%FF=1", "not UTF-8"),
    ] {
        let (status, _, body) = exchange(addr, None, method, path).await.expect("answer");
        assert_eq!(status, 400, "{method} {path}");
        if method == "GET" {
            let body: serde_json::Value = serde_json::from_str(&body).expect("a JSON body");
            let message = body["error"].as_str().expect("an error message");
            assert!(message.contains(names), "{path}: {message}");
        }
    }
    // A crawl without --stats-out, --sites-out or --urls-out has nothing to export: a 409
    // that says so, where an ok wrote nothing (audit 33 F7).
    let (status, body) = live.call("POST", "/export").await;
    assert_eq!(status, 409);
    let message = body["error"].as_str().expect("an error message");
    assert!(
        message.starts_with("nothing to export")
            && message.contains("--stats-out, --sites-out or --urls-out"),
        "{message}"
    );
    // None of those reached the engine: the next good command is the first it saw.
    let (status, _) = live.call("POST", "/delay?ms=7").await;
    assert_eq!(status, 200);
    let snap = live.wait_snapshot(|s| s.politeness.delay_ms == 7).await;
    assert_eq!(api_commands(&snap), ["delay 7 ms"]);
    live.handle.abort();
}

/// One keep-alive connection to the API, spoken to in raw HTTP/1.1.
struct KeepAlive {
    stream: tokio::io::BufReader<TcpStream>,
}

impl KeepAlive {
    async fn connect(addr: SocketAddr) -> KeepAlive {
        let stream = TcpStream::connect(addr).await.expect("connect");
        KeepAlive {
            stream: tokio::io::BufReader::new(stream),
        }
    }

    async fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.get_mut().write_all(bytes).await
    }

    /// The next response's status (its body read), or None when the server closed (or broke)
    /// first.
    async fn response(&mut self) -> Option<u16> {
        let mut status_line = String::new();
        if self.stream.read_line(&mut status_line).await.unwrap_or(0) == 0 {
            return None;
        }
        let status = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("a status line");
        let mut length = 0;
        loop {
            let mut line = String::new();
            self.stream
                .read_line(&mut line)
                .await
                .expect("a header line");
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
        self.stream.read_exact(&mut body).await.expect("a body");
        Some(status)
    }

    /// Sends `request` and waits for its answer's status.
    async fn status(&mut self, request: &str) -> u16 {
        self.send(request.as_bytes()).await.expect("write");
        let answer = tokio::time::timeout(PATIENCE, self.response()).await;
        answer.expect("an answer in time").expect("an answer")
    }

    /// What the server sends until it closes.
    async fn rest(&mut self) -> std::io::Result<Vec<u8>> {
        let mut rest = Vec::new();
        tokio::time::timeout(PATIENCE, self.stream.read_to_end(&mut rest))
            .await
            .expect("the server closes in time")?;
        Ok(rest)
    }
}

/// Requests `/stats` over one keep-alive connection until `stop`; returns the 200s seen.
async fn hammer(addr: SocketAddr, stop: CancellationToken) -> u64 {
    let mut conn = KeepAlive::connect(addr).await;
    let mut ok = 0;
    while !stop.is_cancelled() {
        let req = format!("GET /stats HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        if conn.send(req.as_bytes()).await.is_err() {
            break;
        }
        match conn.response().await {
            Some(200) => ok += 1,
            Some(_) => {}
            None => break,
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
        let _ =
            tokio::time::timeout(Duration::from_millis(200), s.write_all(reqs.as_bytes())).await;
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
async fn a_full_api_lets_a_newcomer_in_by_closing_the_longest_idle_keep_alive() {
    let live = Live::start(GenOptions::new(1, 3), 5, None).await;
    let addr = live.addr();
    let get = format!("GET /stats HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    // In first, so the longest idle were it idle: a connection in the middle of its second
    // request's headers (sent well before the newcomer comes, a few hundred exchanges later).
    let mut half = KeepAlive::connect(addr).await;
    assert_eq!(half.status(&get).await, 200);
    half.send(b"GET /stats HTTP/1.1\r\nHost:")
        .await
        .expect("write");
    // Then one that has sent nothing since it came: accepted before the next is answered, so
    // idle the longest.
    let mut silent = KeepAlive::connect(addr).await;
    let silent_came = std::time::Instant::now();
    // The other places, each connection idle after one answer, the first the longest.
    let mut idle = Vec::new();
    for _ in 2..MAX_CONNECTIONS {
        let mut c = KeepAlive::connect(addr).await;
        assert_eq!(c.status(&get).await, 200);
        idle.push(c);
    }

    // A newcomer takes the silent one's place, once its grace as a newcomer is over (the
    // rule is a time: a client that has said nothing for that long is idle)...
    tokio::time::sleep_until((silent_came + super::places::FRESH_GRACE).into()).await;
    let mut newcomer = KeepAlive::connect(addr).await;
    let status = tokio::time::timeout(PROMPTLY, newcomer.status(&get))
        .await
        .expect("a newcomer to a full API is answered at once");
    assert_eq!(status, 200);
    assert_eq!(silent.rest().await.expect("a clean close"), b"");
    // ...and the next one that of the keep-alive idle longest, closed gracefully: no answer,
    // no reset, the end of the stream.
    let answer = tokio::time::timeout(PROMPTLY, client_request(addr, None, "GET", "/stats"))
        .await
        .expect("a newcomer to a full API is answered at once")
        .expect("an answer");
    assert_eq!(answer.0, 200);
    let mut first = idle.remove(0);
    assert_eq!(first.rest().await.expect("a clean close"), b"");
    // The one mid-request was not: it gets its answer.
    half.send(b" x\r\n\r\n").await.expect("write");
    let answer = tokio::time::timeout(PATIENCE, half.response()).await;
    assert_eq!(answer.expect("an answer in time"), Some(200));
    // Nor any other.
    for c in idle.iter_mut().chain([&mut newcomer]) {
        assert_eq!(c.status(&get).await, 200);
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
