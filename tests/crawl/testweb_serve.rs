//! serve: HTTP semantics, path escapes, the hostile paths, the request log, the command port.

use std::io::Read as _;
use std::net::SocketAddr;
use std::time::Duration;

use crawltop::testweb::{GenOptions, HostileOptions, TestWeb};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::util::{PATIENCE, client, contains, get_text, raw, raw_get};

fn addr(web: &TestWeb, site: &str) -> SocketAddr {
    web.server().sites()[site]
}

async fn small_web() -> TestWeb {
    TestWeb::start(GenOptions::new(2, 10))
        .await
        .expect("web starts")
}

#[tokio::test]
async fn status_codes_headers_and_keep_alive() {
    let web = small_web().await;
    let http = client();
    let ok = http.get(web.url("site00", "/")).send().await.expect("get");
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.headers()["content-type"], "text/html");
    let len: usize = ok.headers()["content-length"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("n");
    let body = ok.text().await.expect("body");
    assert_eq!(body.len(), len);
    // Placeholders are filled with the OS-chosen ports.
    assert!(!body.contains("{{origin:"), "placeholder left in the page");
    assert!(
        body.contains(&web.origin("site01")),
        "cross-site link to site01"
    );

    let folder = web.manifest().sites[0].redirects[0].from.clone();
    let moved = http
        .get(web.url("site00", &folder))
        .send()
        .await
        .expect("get");
    assert_eq!(moved.status(), 301);
    assert_eq!(moved.headers()["location"], format!("{folder}/").as_str());

    let missing = http
        .get(web.url("site00", "/nope.html"))
        .send()
        .await
        .expect("get");
    assert_eq!(missing.status(), 404);

    let post = http
        .post(web.url("site00", "/"))
        .send()
        .await
        .expect("post");
    assert_eq!(post.status(), 405);
    assert_eq!(post.headers()["allow"], "GET, HEAD");

    let head = http
        .head(web.url("site00", "/"))
        .send()
        .await
        .expect("head");
    assert_eq!(head.status(), 200);
    assert_eq!(head.headers()["content-length"], len.to_string().as_str());
    assert!(head.bytes().await.expect("empty").is_empty());

    let txt = http
        .get(web.url("site00", "/files/notes.txt"))
        .send()
        .await
        .expect("get");
    assert_eq!(txt.headers()["content-type"], "text/plain; charset=utf-8");
    let png = http
        .get(web.url("site00", "/img/logo.png"))
        .send()
        .await
        .expect("get");
    assert_eq!(png.headers()["content-type"], "image/png");
    assert!(png.bytes().await.expect("png").starts_with(b"\x89PNG"));

    // A malformed request line gets 400 from the HTTP layer.
    let (status, _) = raw(addr(&web, "site00"), b"NONSENSE\r\n\r\n").await;
    assert_eq!(status, 400);

    // Keep-alive: two requests on one connection, and the log says so.
    let mut stream = TcpStream::connect(addr(&web, "site00"))
        .await
        .expect("connect");
    for _ in 0..2 {
        stream
            .write_all(
                b"HEAD /robots.txt HTTP/1.1\r\nHost: x\r\nUser-Agent: keepalive-test\r\n\r\n",
            )
            .await
            .expect("write");
        let mut buf = [0u8; 512];
        // Bounded: a server that keeps the connection and never answers fails the test.
        let n = tokio::time::timeout(PATIENCE, stream.read(&mut buf))
            .await
            .expect("an answer on the kept-alive connection")
            .expect("read");
        assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    }
    drop(stream);
    tokio::time::timeout(
        PATIENCE,
        web.log().wait_until(|r| {
            r.iter()
                .filter(|r| r.user_agent.as_deref() == Some("keepalive-test"))
                .count()
                == 2
        }),
    )
    .await
    .expect("both logged");
    let conns: Vec<u64> = web
        .log()
        .records()
        .iter()
        .filter(|r| r.user_agent.as_deref() == Some("keepalive-test"))
        .map(|r| r.conn)
        .collect();
    assert_eq!(conns[0], conns[1], "one connection for both");
}

#[tokio::test]
async fn http11_without_host_is_a_bad_request() {
    let web = small_web().await;
    let site = addr(&web, "site00");
    // RFC 9112 §3.2: an HTTP/1.1 request without Host, or with two, MUST get 400.
    let (status, body) = raw(
        site,
        b"GET / HTTP/1.1\r\nUser-Agent: no-host-11\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(
        status,
        400,
        "{}",
        String::from_utf8_lossy(&body[..body.len().min(200)])
    );
    assert!(contains(&body, b"Host"), "the body says why");
    let (status, _) = raw(
        site,
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\nUser-Agent: two-hosts\r\n\
          Connection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status, 400);
    // HTTP/1.0 predates Host: without it the page is served.
    let (status, body) = raw(site, b"GET / HTTP/1.0\r\nUser-Agent: no-host-10\r\n\r\n").await;
    assert_eq!(
        status,
        200,
        "{}",
        String::from_utf8_lossy(&body[..body.len().min(200)])
    );
    assert!(contains(&body, b"<html"), "the home page itself");

    let agents = ["no-host-11", "two-hosts", "no-host-10"];
    tokio::time::timeout(
        PATIENCE,
        web.log().wait_until(|r| {
            agents
                .iter()
                .all(|a| r.iter().any(|r| r.user_agent.as_deref() == Some(*a)))
        }),
    )
    .await
    .expect("all three logged");
    let status_of = |agent: &str| {
        let records = web.log().records();
        let r = records
            .iter()
            .find(|r| r.user_agent.as_deref() == Some(agent))
            .expect("logged")
            .clone();
        (r.path, r.status, r.complete)
    };
    assert_eq!(status_of("no-host-11"), ("/".into(), 400, true));
    assert_eq!(status_of("two-hosts"), ("/".into(), 400, true));
    assert_eq!(status_of("no-host-10"), ("/".into(), 200, true));
}

#[tokio::test]
async fn latency_delays_every_response() {
    const LATENCY: Duration = Duration::from_millis(80);
    let web = TestWeb::start_with_latency(GenOptions::new(2, 10), LATENCY)
        .await
        .expect("web starts");
    let site = addr(&web, "site00");
    // Every kind of answer waits: a page, robots.txt, a 404, a redirect, a 405, a 400, a HEAD;
    // and the second request on a keep-alive connection too.
    let folder = web.manifest().sites[0].redirects[0].from.clone();
    let requests = [
        "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /robots.txt HTTP/1.1\r\nHost: x\r\n\
         Connection: close\r\n\r\n"
            .to_string(),
        "GET /nope.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_string(),
        format!("GET {folder} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
        "GET / HTTP/1.1\r\nConnection: close\r\n\r\n".to_string(),
        "HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_string(),
    ];
    let answers = futures_join(
        requests
            .into_iter()
            .map(|r| async move { raw(site, r.as_bytes()).await }),
    )
    .await;
    let statuses: Vec<u16> = answers.iter().map(|(s, _)| *s).collect();
    assert_eq!(statuses, [200, 404, 301, 405, 400, 200]);
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() == 7))
        .await
        .expect("all logged");
    let records = web.log().records();
    let mut seen: Vec<u16> = records.iter().map(|r| r.status).collect();
    seen.sort_unstable();
    assert_eq!(seen, [200, 200, 200, 301, 400, 404, 405]);
    for r in &records {
        let took = Duration::from_micros(r.done_us - r.t_us);
        assert!(took >= LATENCY, "{} {} took {took:?}", r.method, r.path);
    }
}

#[tokio::test]
async fn unreadable_and_special_files_are_forbidden() {
    let web = small_web().await;
    let site = web.dir().join("site00");
    // A socket file is no regular file, whoever runs the test (root reads any mode).
    let _sock = std::os::unix::net::UnixListener::bind(site.join("socket.html")).expect("bind");
    let (status, _) = raw_get(addr(&web, "site00"), "/socket.html").await;
    assert_eq!(status, 403);
    let locked = site.join("locked.html");
    std::fs::write(&locked, "secret").expect("write");
    std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000))
        .expect("chmod");
    let readable_anyway = std::fs::File::open(&locked).is_ok(); // true when run as root
    let (status, _) = raw_get(addr(&web, "site00"), "/locked.html").await;
    assert_eq!(status, if readable_anyway { 200 } else { 403 });
}

#[tokio::test]
async fn nothing_outside_the_folder_is_ever_served() {
    let web = small_web().await;
    let marker = b"TOP-SECRET-OUTSIDE-THE-WEB";
    // Beside the served folder, and one level above.
    let outside = web.dir().join("outside.txt");
    std::fs::write(&outside, marker).expect("write");
    std::fs::write(web.dir().join("..").join("outside.txt"), marker).expect("write");
    std::os::unix::fs::symlink(&outside, web.dir().join("site00").join("link-out.txt"))
        .expect("symlink");
    std::os::unix::fs::symlink(web.dir(), web.dir().join("site00").join("dir-out"))
        .expect("symlink");
    let a = addr(&web, "site00");
    let attempts = [
        "/../outside.txt",
        "/../../outside.txt",
        "/files/../../outside.txt",
        "/%2e%2e/outside.txt",
        "/%2E%2E/%2e%2e/outside.txt",
        "/.%2e/outside.txt",
        "/..%2foutside.txt",
        "/files%2f..%2f..%2foutside.txt",
        "/..%5coutside.txt",
        "/..\\outside.txt",
        "/link-out.txt",
        "/dir-out/outside.txt",
        "/outside.txt%00.html",
        "/%00",
        "/%c0%ae%c0%ae/outside.txt",
        "//..//outside.txt",
        "/./../outside.txt",
    ];
    for path in attempts {
        let (status, body) = raw_get(a, path).await;
        assert!((400..500).contains(&status), "{path} answered {status}");
        assert!(!contains(&body, marker), "{path} leaked the file");
    }
    // Absolute paths in every form a client can send.
    for request in [
        format!(
            "GET {} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            outside.display()
        ),
        format!("GET http://{a}/../outside.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
        "GET outside.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_string(),
    ] {
        let (status, body) = raw(a, request.as_bytes()).await;
        assert!(
            status == 404 || (400..500).contains(&status),
            "{request:?} answered {status}"
        );
        assert!(!contains(&body, marker), "{request:?} leaked the file");
    }
    // A NUL byte in the request line itself.
    let (status, body) = raw(a, b"GET /\0../outside.txt HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert_eq!(status, 400);
    assert!(!contains(&body, marker));
}

async fn hostile_web() -> TestWeb {
    TestWeb::start_with(GenOptions::new(1, 3).hostile(true), |o| {
        o.hostile = HostileOptions {
            stall: Duration::from_millis(300),
            trickle_interval: Duration::from_millis(50),
            big_body: 50_000_000,
            bomb_unpacked: 64 << 20,
            retry_failures: 2,
        };
    })
    .await
    .expect("web starts")
}

#[tokio::test]
async fn hostile_redirects_loop_and_chain() {
    let web = hostile_web().await;
    let http = client();
    let get = |path: &str| http.get(web.url("hostile", path)).send();
    let a = get("/loop/a").await.expect("get");
    assert_eq!(a.status(), 302);
    assert_eq!(a.headers()["location"], "/loop/b");
    let b = get("/loop/b").await.expect("get");
    assert_eq!(b.headers()["location"], "/loop/a");
    let mut path = "/chain/0".to_string();
    let mut hops = 0;
    loop {
        let r = get(&path).await.expect("get");
        if r.status() != 302 {
            assert_eq!(r.status(), 200);
            break;
        }
        path = r.headers()["location"].to_str().expect("ascii").to_string();
        hops += 1;
        assert!(hops <= 20);
    }
    assert_eq!(hops, 20, "a chain of 20 redirects");
    assert_eq!(get("/chain/21").await.expect("get").status(), 404);
}

#[tokio::test]
async fn hostile_calendar_never_ends() {
    let web = hostile_web().await;
    let http = client();
    let mut page = "2026-12-30.html".to_string();
    for expected in ["2026-12-31.html", "2027-01-01.html", "2027-01-02.html"] {
        let body = get_text(&http, &web.url("hostile", &format!("/calendar/{page}"))).await;
        assert!(body.contains(&format!("href=\"{expected}\"")), "{body}");
        page = expected.to_string();
    }
}

#[tokio::test]
async fn hostile_big_body_and_gzip_bomb() {
    let web = hostile_web().await;
    let http = client();
    let big = http
        .get(web.url("hostile", "/big.html"))
        .send()
        .await
        .expect("get");
    assert_eq!(big.headers()["content-length"], "50000000");
    assert_eq!(big.bytes().await.expect("body").len(), 50_000_000);

    let bomb = http
        .get(web.url("hostile", "/bomb.html"))
        .send()
        .await
        .expect("get");
    assert_eq!(bomb.headers()["content-encoding"], "gzip");
    let wire = bomb.bytes().await.expect("body");
    let mut unpacked = 0u64;
    let mut dec = flate2::read::GzDecoder::new(&wire[..]);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = dec.read(&mut buf).expect("valid gzip");
        if n == 0 {
            break;
        }
        unpacked += n as u64;
    }
    assert_eq!(unpacked, 64 << 20);
    assert!(
        unpacked > 500 * wire.len() as u64,
        "{} bytes on the wire",
        wire.len()
    );
}

#[tokio::test]
async fn default_gzip_bomb_is_a_gigabyte_in_about_a_megabyte() {
    let web = TestWeb::start(GenOptions::new(1, 2).hostile(true))
        .await
        .expect("web");
    let resp = client()
        .head(web.url("hostile", "/bomb.html"))
        .send()
        .await
        .expect("head");
    let len: u64 = resp.headers()["content-length"]
        .to_str()
        .expect("a")
        .parse()
        .expect("n");
    assert!(
        (500_000..2_000_000).contains(&len),
        "{len} bytes on the wire"
    );
}

#[tokio::test]
async fn hostile_trickle_and_stall() {
    let web = hostile_web().await;
    // The trickle sends drop after drop and never ends.
    let mut stream = TcpStream::connect(addr(&web, "hostile"))
        .await
        .expect("connect");
    stream
        .write_all(b"GET /trickle.html HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let mut reader = BufReader::new(stream);
    let mut drops = 0;
    let mut line = String::new();
    while drops < 5 {
        line.clear();
        let n = tokio::time::timeout(PATIENCE, reader.read_line(&mut line))
            .await
            .expect("a drop arrives")
            .expect("read");
        assert!(n > 0, "the trickle ended");
        if line.starts_with("<p>drop") {
            drops += 1;
        }
    }
    drop(reader);
    tokio::time::timeout(
        PATIENCE,
        web.log()
            .wait_until(|r| r.iter().any(|r| r.path == "/trickle.html")),
    )
    .await
    .expect("logged when the client left");
    let rec = web.log().site_records("hostile");
    let trickle = rec
        .iter()
        .find(|r| r.path == "/trickle.html")
        .expect("logged");
    assert!(!trickle.complete, "a trickle never completes");
    assert_eq!(trickle.status, 200);

    // The stall answers only after its delay (300 ms here, 30 s by default).
    let http = client();
    let resp = http
        .get(web.url("hostile", "/stall.html"))
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status(), 200);
    tokio::time::timeout(
        PATIENCE,
        web.log()
            .wait_until(|r| r.iter().any(|r| r.path == "/stall.html")),
    )
    .await
    .expect("logged");
    let stall = web
        .log()
        .site_records("hostile")
        .into_iter()
        .find(|r| r.path == "/stall.html")
        .expect("logged");
    assert!(
        stall.done_us - stall.t_us >= 300_000,
        "answered after {} us",
        stall.done_us - stall.t_us
    );
}

#[tokio::test]
async fn default_stall_sends_nothing_for_a_long_time() {
    let web = TestWeb::start(GenOptions::new(1, 2).hostile(true))
        .await
        .expect("web");
    let http = client();
    let resp = tokio::time::timeout(
        Duration::from_secs(2),
        http.get(web.url("hostile", "/stall.html")).send(),
    )
    .await;
    assert!(resp.is_err(), "the default stall answered within 2 s");
    // The client gave up: the request is logged as 499 with nothing sent.
    tokio::time::timeout(
        PATIENCE,
        web.log()
            .wait_until(|r| r.iter().any(|r| r.path == "/stall.html")),
    )
    .await
    .expect("logged");
    let rec = web.log().site_records("hostile");
    let stall = rec
        .iter()
        .find(|r| r.path == "/stall.html")
        .expect("logged");
    assert_eq!((stall.status, stall.bytes), (499, 0));
}

#[tokio::test]
async fn hostile_pushback_then_success() {
    let web = hostile_web().await;
    let http = client();
    let get = |path: &'static str| http.get(web.url("hostile", path)).send();
    for _ in 0..2 {
        let r = get("/retry/429.html").await.expect("get");
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers()["retry-after"], "1");
        let r = get("/retry/503.html").await.expect("get");
        assert_eq!(r.status(), 503);
        let date = r.headers()["retry-after"].to_str().expect("ascii");
        let when = httpdate::parse_http_date(date).expect("an HTTP date");
        #[allow(clippy::disallowed_methods)] // the test's own clock, like the server's
        let now = std::time::SystemTime::now();
        assert!(when > now - Duration::from_secs(1));
    }
    assert_eq!(get("/retry/429.html").await.expect("get").status(), 200);
    assert_eq!(get("/retry/503.html").await.expect("get").status(), 200);
}

#[tokio::test]
async fn hostile_malformed_latin1_and_robots500() {
    let web = hostile_web().await;
    let http = client();
    let latin1 = http
        .get(web.url("hostile", "/latin1.html"))
        .send()
        .await
        .expect("get");
    assert_eq!(
        latin1.headers()["content-type"],
        "text/html",
        "no charset in the header"
    );
    let bytes = latin1.bytes().await.expect("body");
    assert!(std::str::from_utf8(&bytes).is_err(), "not UTF-8");
    assert!(contains(&bytes, b"charset=iso-8859-1"));
    assert!(contains(&bytes, b"caf\xe9"));
    // The page's link, decoded as Latin-1 and encoded as a URL, exists.
    let cafe = http
        .get(web.url("hostile", "/caf%C3%A9.html"))
        .send()
        .await
        .expect("get");
    assert_eq!(cafe.status(), 200);

    let malformed = get_text(&http, &web.url("hostile", "/malformed.html")).await;
    assert!(malformed.contains("<a href=/m/unquoted.html>"));
    assert!(
        malformed.ends_with("<a href=\"/m/eof.html\""),
        "cut off at the end"
    );

    let robots = http
        .get(web.url("robots500", "/robots.txt"))
        .send()
        .await
        .expect("get");
    assert_eq!(robots.status(), 500);
    let index = http
        .get(web.url("robots500", "/"))
        .send()
        .await
        .expect("get");
    assert_eq!(
        index.status(),
        200,
        "the pages exist; only robots.txt keeps crawlers out"
    );
}

#[tokio::test]
async fn the_log_holds_what_clients_sent() {
    let web = TestWeb::start_with(GenOptions::new(1, 3).hostile(true), |o| {
        o.hostile.stall = Duration::from_millis(400);
    })
    .await
    .expect("web");
    let http = reqwest::Client::builder()
        .user_agent("log-test/2.0 (+https://example.invalid/bot)")
        .no_proxy()
        // A server that takes a request and never answers fails the test, not hangs it.
        .timeout(PATIENCE * 4)
        .build()
        .expect("client");
    let resp = http
        .get(web.url("site00", "/?q=1&r=two"))
        .send()
        .await
        .expect("get");
    let len = resp.bytes().await.expect("body").len() as u64;
    let _ = http
        .head(web.url("site00", "/robots.txt"))
        .send()
        .await
        .expect("head");
    // Three concurrent stalls on one site: the server sees them in flight together.
    let stalls = (0..3).map(|_| http.get(web.url("hostile", "/stall.html")).send());
    for r in futures_join(stalls).await {
        assert_eq!(r.expect("get").status(), 200);
    }
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() == 5))
        .await
        .expect("five logged");
    let recs = web.log().site_records("site00");
    assert_eq!(recs.len(), 2);
    let get = &recs[0];
    assert_eq!(
        (
            get.method.as_str(),
            get.path.as_str(),
            get.status,
            get.bytes
        ),
        ("GET", "/?q=1&r=two", 200, len)
    );
    assert_eq!(
        get.user_agent.as_deref(),
        Some("log-test/2.0 (+https://example.invalid/bot)")
    );
    assert!(get.complete);
    let head = &recs[1];
    assert_eq!(
        (head.method.as_str(), head.status, head.bytes),
        ("HEAD", 200, 0)
    );
    assert!(head.t_us >= get.t_us, "arrival times are monotonic");
    let stalls = web.log().site_records("hostile");
    let max_in_flight = stalls.iter().map(|r| r.in_flight).max();
    assert_eq!(max_in_flight, Some(3));
    let stats = web.server().stats();
    assert_eq!(stats.requests, 5);
    assert_eq!(stats.sites["site00"].requests, 2);
    assert_eq!(stats.sites["hostile"].by_status["200"], 3);
}

/// Awaits all futures concurrently (a tiny `join_all` without another crate).
async fn futures_join<F>(futs: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futs.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("task"));
    }
    out
}

#[tokio::test]
async fn command_port_stats_and_shutdown() {
    let web = TestWeb::start_with(GenOptions::new(2, 3), |o| o.command_port = Some(0))
        .await
        .expect("web");
    let http = client();
    for _ in 0..3 {
        http.get(web.url("site01", "/")).send().await.expect("get");
    }
    http.get(web.url("site00", "/nope"))
        .send()
        .await
        .expect("get");
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() == 4))
        .await
        .expect("logged");
    let cmd = web.server().command_addr().expect("command port");
    let stream = TcpStream::connect(cmd).await.expect("connect");
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    // Each answer is awaited at most PATIENCE: a command port that never answers fails the
    // test instead of hanging it.
    let mut answer = async || {
        tokio::time::timeout(PATIENCE, lines.next_line())
            .await
            .expect("the command port answers")
            .expect("read")
            .expect("line")
    };
    write.write_all(b"STATS\n").await.expect("write");
    let stats: serde_json::Value = serde_json::from_str(&answer().await).expect("json");
    assert_eq!(stats["requests"], 4);
    assert_eq!(stats["by_status"]["200"], 3);
    assert_eq!(stats["by_status"]["404"], 1);
    assert_eq!(stats["sites"]["site01"]["requests"], 3);
    assert!(stats["uptime_s"].as_f64().expect("number") > 0.0);
    write.write_all(b"FROBNICATE\n").await.expect("write");
    let err = answer().await;
    assert!(err.starts_with("ERR unknown command"), "{err}");
    write.write_all(b"SHUTDOWN\n").await.expect("write");
    let ok = answer().await;
    assert_eq!(ok, "OK shutting down");
    tokio::time::timeout(PATIENCE, web.server().finished())
        .await
        .expect("server finished");
    let refused = TcpStream::connect(web.server().sites()["site00"]).await;
    assert!(refused.is_err(), "the port is closed after shutdown");
}

#[tokio::test]
async fn shutdown_ends_endless_responses() {
    let web = hostile_web().await;
    let mut stream = TcpStream::connect(addr(&web, "hostile"))
        .await
        .expect("connect");
    stream
        .write_all(b"GET /trickle.html HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let mut first = [0u8; 64];
    let _ = tokio::time::timeout(PATIENCE, stream.read(&mut first))
        .await
        .expect("headers arrive")
        .expect("read");
    web.server().shutdown();
    tokio::time::timeout(PATIENCE, web.server().finished())
        .await
        .expect("shutdown does not wait on a trickle");
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut rest))
        .await
        .expect("the connection closes");
}
