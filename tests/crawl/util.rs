//! Helpers shared by the integration tests: an HTTP client, raw requests, the binary.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Generous bound for waiting on an event; a test that needs it has failed anyway.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// How long a test lets a command it runs to its end take: far more than any of them needs,
/// but a bound, so a command that never ends fails its test instead of hanging the run.
pub const COMMAND_PATIENCE: Duration = Duration::from_secs(300);

/// Runs a command to its end, bounded by [`COMMAND_PATIENCE`]: what `output()` does, with the
/// child killed and the test failed should it run over.
pub trait Finish {
    async fn finish(&mut self) -> std::io::Result<std::process::Output>;
}

impl Finish for tokio::process::Command {
    async fn finish(&mut self) -> std::io::Result<std::process::Output> {
        self.kill_on_drop(true);
        let shown = format!("{:?}", self.as_std());
        tokio::time::timeout(COMMAND_PATIENCE, self.output())
            .await
            .unwrap_or_else(|_| panic!("{shown} ran over {COMMAND_PATIENCE:?}"))
    }
}

/// An HTTP client for tests: no redirects followed, no decompression, loopback only.
pub fn client() -> reqwest::Client {
    // reqwest is built without a default crypto provider; install ring once per process.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent("crawltop-tests/1")
        .no_proxy()
        // A server that takes a request and never answers fails the test, not hangs it.
        .timeout(PATIENCE * 4)
        .build()
        .expect("client builds")
}

/// The body the test server sends for `url`.
pub async fn served_body(http: &reqwest::Client, url: &str) -> bytes::Bytes {
    http.get(url)
        .send()
        .await
        .expect("get")
        .bytes()
        .await
        .expect("body")
}

/// The body of a GET of `url` as text (the test fails if the server cannot be reached).
pub async fn get_text(http: &reqwest::Client, url: &str) -> String {
    http.get(url)
        .send()
        .await
        .expect("get")
        .text()
        .await
        .expect("body")
}

/// A raw HTTP/1.1 exchange: sends `request` as is and reads until the server closes.
pub async fn raw(addr: std::net::SocketAddr, request: &[u8]) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request).await.expect("write");
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut buf)).await;
    let status = std::str::from_utf8(&buf[..buf.len().min(12)])
        .ok()
        .and_then(|s| s.get(9..12))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, buf)
}

/// A GET for `path` on its own connection that closes after the answer.
pub async fn raw_get(addr: std::net::SocketAddr, path: &str) -> (u16, Vec<u8>) {
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    raw(addr, req.as_bytes()).await
}

/// The path of the crawltop binary built for these tests.
/// The path of the request whose head arrives on `stream` (read up to its blank line), for the
/// tests' small servers; `None` when the client closes first.
pub async fn request_path(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    Some(head.split(' ').nth(1).unwrap_or_default().to_owned())
}

/// The messages of a stats file's `log` (the crawl's warnings and notes), in order.
pub fn log_messages(stats: &serde_json::Value) -> Vec<&str> {
    stats["log"]
        .as_array()
        .expect("the stats have a log")
        .iter()
        .map(|l| l["message"].as_str().expect("a message is text"))
        .collect()
}

pub fn bin() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_crawltop"))
}

/// `crawltop ARGS`' stdout as JSON.
pub fn json_of(args: &[&str]) -> serde_json::Value {
    let out = std::process::Command::new(bin())
        .args(args)
        .output()
        .expect("crawltop runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// What the response records of a crawl's WARC files hold, read by the `warc` crate (an
/// independent reader): the pages, and apart from them the robots.txt responses.
pub struct WarcRead {
    /// Target URI -> body, of the pages.
    pub bodies: std::collections::BTreeMap<String, Vec<u8>>,
    /// Target URI -> the HTTP head stored before the body (status line and headers), of the
    /// pages.
    pub heads: std::collections::BTreeMap<String, String>,
    /// How many response records each page's URI has.
    pub counts: std::collections::BTreeMap<String, usize>,
    /// The pages' URIs in file order: the commit order.
    pub order: Vec<String>,
    /// Target URI -> `WARC-IP-Address`, of the pages.
    pub ips: std::collections::BTreeMap<String, Option<String>>,
    /// Target URI -> `WARC-Truncated`, of the pages.
    pub truncated: std::collections::BTreeMap<String, Option<String>>,
    /// The robots.txt responses (each a response record naming the origin whose robots.txt it
    /// answers), in file order.
    pub robots: Vec<RobotsRecord>,
    /// Target URI -> how many request records it has (robots.txt requests too).
    pub requests: std::collections::BTreeMap<String, usize>,
}

/// The WARC field that marks a robots.txt response (crawltop's `ROBOTS_FIELD`).
pub const ROBOTS_FIELD: &str = "Crawltop-Robots-For";

/// A robots.txt response record, with the request record it names.
#[derive(Debug, Clone)]
pub struct RobotsRecord {
    pub uri: String,
    /// The origin whose robots.txt it answers.
    pub robots_for: String,
    pub status: u16,
    pub body: Vec<u8>,
    /// `WARC-Payload-Digest`, and whether it is the SHA-1 of the body.
    pub digest_ok: bool,
    /// A `Crawltop-Seq` field (pages have one; robots.txt responses must not).
    pub seq: Option<String>,
    /// `WARC-Truncated`, if the body is not whole.
    pub truncated: Option<String>,
    /// The request record linked both ways by `WARC-Concurrent-To`, with the same target URI:
    /// its block (the request as sent).
    pub request: Option<Vec<u8>>,
}

/// Every file below `dir`, in no particular order.
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("readable folder") {
            let path = entry.expect("readable entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}

/// Reads every WARC file in `dir`.
pub fn read_warc(dir: &std::path::Path) -> WarcRead {
    let mut out = WarcRead {
        bodies: std::collections::BTreeMap::new(),
        heads: std::collections::BTreeMap::new(),
        counts: std::collections::BTreeMap::new(),
        order: Vec::new(),
        ips: std::collections::BTreeMap::new(),
        truncated: std::collections::BTreeMap::new(),
        robots: Vec::new(),
        requests: std::collections::BTreeMap::new(),
    };
    // Request records by id: (target URI, the response they name, block).
    let mut requests = std::collections::HashMap::new();
    // Robots responses with the request id they name and their own id.
    let mut robots = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("warc folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".warc.gz"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no WARC file written");
    for path in files {
        let file = std::fs::File::open(&path).expect("open");
        let reader = warc::WarcReader::new(std::io::BufReader::new(
            flate2::read::MultiGzDecoder::new(file),
        ));
        for record in reader.iter_records() {
            let record = record.expect("a valid record");
            let field = |name: warc::WarcHeader| record.header(name).map(|v| v.to_string());
            if record.warc_type() == &warc::RecordType::Request {
                let uri = field(warc::WarcHeader::TargetURI).unwrap_or_default();
                *out.requests.entry(uri).or_default() += 1;
                requests.insert(
                    record.warc_id().to_string(),
                    (
                        field(warc::WarcHeader::TargetURI),
                        field(warc::WarcHeader::ConcurrentTo),
                        record.body().to_vec(),
                    ),
                );
            }
            if record.warc_type() != &warc::RecordType::Response {
                continue;
            }
            let uri = field(warc::WarcHeader::TargetURI).expect("target uri");
            let block = record.body();
            let split = block
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .expect("an HTTP message");
            let body = block[split + 4..].to_vec();
            if let Some(robots_for) = field(warc::WarcHeader::from(ROBOTS_FIELD)) {
                use sha1::Digest as _;
                let digest = format!(
                    "sha1:{}",
                    data_encoding::BASE32.encode(&sha1::Sha1::digest(&body))
                );
                let status = std::str::from_utf8(&block[..split])
                    .ok()
                    .and_then(|head| head.split(' ').nth(1))
                    .and_then(|s| s.parse().ok())
                    .expect("a status line");
                robots.push((
                    RobotsRecord {
                        uri,
                        robots_for,
                        status,
                        digest_ok: field(warc::WarcHeader::PayloadDigest) == Some(digest),
                        seq: field(warc::WarcHeader::from("Crawltop-Seq")),
                        truncated: field(warc::WarcHeader::Truncated),
                        body,
                        request: None,
                    },
                    field(warc::WarcHeader::ConcurrentTo),
                    record.warc_id().to_string(),
                ));
                continue;
            }
            let head = String::from_utf8_lossy(&block[..split]).into_owned();
            out.heads.insert(uri.clone(), head);
            out.ips
                .insert(uri.clone(), field(warc::WarcHeader::IPAddress));
            out.truncated
                .insert(uri.clone(), field(warc::WarcHeader::Truncated));
            out.bodies.insert(uri.clone(), body);
            *out.counts.entry(uri.clone()).or_default() += 1;
            out.order.push(uri);
        }
    }
    for (mut record, request_id, id) in robots {
        if let Some((uri, names, block)) = request_id.and_then(|r| requests.get(&r))
            && uri.as_deref() == Some(record.uri.as_str())
            && names.as_deref() == Some(id.as_str())
        {
            record.request = Some(block.clone());
        }
        out.robots.push(record);
    }
    out
}

/// Reads a child's stderr until `done` holds for all read so far, and returns it; panics
/// with what was seen if the stream ends or `PATIENCE` passes first.
pub async fn read_stderr_until(
    stderr: &mut tokio::process::ChildStderr,
    done: impl Fn(&str) -> bool,
) -> String {
    use tokio::io::AsyncReadExt;
    let mut seen = String::new();
    let mut buf = [0u8; 512];
    let read = tokio::time::timeout(PATIENCE, async {
        while !done(&seen) {
            let n = stderr.read(&mut buf).await.expect("read");
            if n == 0 {
                return false;
            }
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        true
    })
    .await;
    assert!(
        read == Ok(true),
        "stderr ended or stalled before the expected text: {seen}"
    );
    seen
}

/// The path of a page one link from site00's index page (no query): a page a test can single
/// out for a fault, knowing the crawl reaches it early.
pub fn depth_one_page(web: &crawltop::testweb::TestWeb) -> String {
    web.manifest()
        .site("site00")
        .expect("site00")
        .pages
        .iter()
        .find(|p| p.depth == 1 && p.path.ends_with(".html") && !p.path.contains('?'))
        .expect("a page one link from the index")
        .path
        .clone()
}

/// A headless crawl of site00 into `out/crawl` with the fault `env` set (a test knob naming
/// when the store fails), its stderr piped, and no control room: a failure stops it (nobody
/// could act on a pause).
pub fn fault_command(
    web: &crawltop::testweb::TestWeb,
    out: &std::path::Path,
    stats: &std::path::Path,
    env: (&str, &str),
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(bin());
    cmd.args([
        "crawl",
        &web.url("site00", "/"),
        "--delay-ms",
        "10",
        "--headless",
    ])
    .arg("--out")
    .arg(out.join("crawl"))
    .arg("--stats-out")
    .arg(stats)
    .env(env.0, env.1)
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped())
    .kill_on_drop(true);
    cmd
}

/// [`fault_command`] with a control room (`--command-port`, its address printed on stderr), so
/// a failure pauses it, and `extra` flags; running, for [`stats_after_a_failure_pause`].
pub fn crawl_with_fault(
    web: &crawltop::testweb::TestWeb,
    out: &std::path::Path,
    stats: &std::path::Path,
    env: (&str, &str),
    extra: &[&str],
) -> tokio::process::Child {
    fault_command(web, out, stats, env)
        .args(["--command-port", "127.0.0.1:0"])
        .args(extra)
        .spawn()
        .expect("spawn")
}

/// A crawl that must pause on a store failure: waits for "paused" on its progress line, stops
/// it with SIGTERM, checks it exits 1 (a failure is not a success), and returns its stats file.
pub async fn stats_after_a_failure_pause(
    child: tokio::process::Child,
    stats: &std::path::Path,
) -> serde_json::Value {
    let (status, _) = stop_when_paused(child).await;
    assert_eq!(status.code(), Some(1), "a store failure is not a success");
    serde_json::from_str(&std::fs::read_to_string(stats).expect("stats")).expect("json")
}

/// Asks a running crawl to stop gracefully, as `q` on the dashboard does: SIGTERM.
pub fn sigterm(child: &tokio::process::Child) {
    signal(child, nix::sys::signal::Signal::SIGTERM);
}

/// Sends `signal` to a running child.
pub fn signal(child: &tokio::process::Child, signal: nix::sys::signal::Signal) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id().expect("pid")).expect("pid"));
    nix::sys::signal::kill(pid, signal).unwrap_or_else(|e| panic!("{signal}: {e}"));
}

/// Stops a running crawl with SIGTERM and waits for it (at most [`PATIENCE`]): a graceful stop
/// is a success.
pub async fn stop_gracefully(child: &mut tokio::process::Child) {
    sigterm(child);
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("stops")
        .expect("status");
    assert!(
        status.success(),
        "a graceful stop is not a failure: {status:?}"
    );
}

/// Waits for "paused" on a crawl's progress line, stops it with SIGTERM, and returns how it
/// exited and what it wrote to stderr after the pause.
pub async fn stop_when_paused(
    mut child: tokio::process::Child,
) -> (std::process::ExitStatus, String) {
    let mut stderr = child.stderr.take().expect("stderr");
    read_stderr_until(&mut stderr, |s| s.contains(" paused ")).await;
    sigterm(&child);
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("exits")
        .expect("status");
    let mut rest = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut rest)
        .await
        .expect("stderr");
    (status, rest)
}

/// A plain (not cluster) `redis-server` on a free loopback port, its data in `dir`, answering;
/// and its URL as the members' nodes.
pub async fn plain_redis(dir: &std::path::Path) -> (std::process::Child, Vec<String>) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port();
    let server = redis_on(dir, port, &["--save", ""]).await;
    (server, vec![format!("redis://127.0.0.1:{port}")])
}

/// A server process killed (and reaped) when dropped, as a `tokio` child with `kill_on_drop`
/// is: a `redis-server` a failing test stopped with SIGSTOP must not outlive it (it keeps the
/// test's output open).
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A plain `redis-server` on loopback `port` with `args`, its data in `dir`, once it answers.
/// With `--appendonly yes`, one started again on the same `dir` and port has the data of the
/// last (as `cluster-up` nodes do).
pub async fn redis_on(dir: &std::path::Path, port: u16, args: &[&str]) -> std::process::Child {
    let server = std::process::Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(args)
        .arg("--dir")
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("redis-server starts");
    let answering = async {
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(PATIENCE * 4, answering)
        .await
        .expect("redis-server answers");
    server
}

/// Every file and folder under `dir` with its length, modification time and mode: what a
/// command that must not write leaves as it found it.
pub fn listing(
    dir: &std::path::Path,
) -> std::collections::BTreeMap<std::path::PathBuf, (u64, std::time::SystemTime, u32)> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut out = std::collections::BTreeMap::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a folder") {
            let path = entry.expect("an entry").path();
            let meta = std::fs::metadata(&path).expect("metadata");
            if meta.is_dir() {
                folders.push(path.clone());
            }
            let modified = meta.modified().expect("mtime");
            out.insert(path, (meta.len(), modified, meta.permissions().mode()));
        }
    }
    out
}

/// The pages of every site of `web` within `max_depth` links (redirects keep the depth) of
/// `site`'s `/`, following links across sites: what a crawl of that seed under `--scope host`
/// (every site of the test web is on 127.0.0.1) and `--depth` must fetch. As (site, path).
pub fn expected_across(
    web: &crawltop::testweb::TestWeb,
    site: &str,
    max_depth: u32,
) -> std::collections::BTreeSet<(String, String)> {
    reach(web, &[site], |_| true, max_depth, |_, _| false)
}

/// The pages within `max_depth` links (redirects keep the depth) of the `/`s of `seeds`,
/// following links to the sites `within` admits only, and leaving out the links `cut` names
/// (from, to): what a crawl of those seeds with `--depth` fetches, as (site, path).
pub fn reach(
    web: &crawltop::testweb::TestWeb,
    seeds: &[&str],
    within: impl Fn(&str) -> bool,
    max_depth: u32,
    cut: impl Fn((&str, &str), (&str, &str)) -> bool,
) -> std::collections::BTreeSet<(String, String)> {
    use std::collections::{HashMap, VecDeque};
    let manifest = web.manifest();
    let mut links: HashMap<(&str, &str), &Vec<(String, String)>> = HashMap::new();
    let mut redirects: HashMap<(&str, &str), (&str, &str)> = HashMap::new();
    let mut pages = std::collections::HashSet::new();
    for s in &manifest.sites {
        for p in &s.pages {
            links.insert((s.name.as_str(), p.path.as_str()), &p.links);
            pages.insert((s.name.as_str(), p.path.as_str()));
        }
        for r in &s.redirects {
            redirects.insert(
                (s.name.as_str(), r.from.as_str()),
                (s.name.as_str(), r.to.as_str()),
            );
        }
    }
    let mut depth: HashMap<(&str, &str), u32> = seeds.iter().map(|s| ((*s, "/"), 0)).collect();
    let mut queue: VecDeque<((&str, &str), u32)> = seeds.iter().map(|s| ((*s, "/"), 0)).collect();
    while let Some((at, d)) = queue.pop_front() {
        if let Some(&to) = redirects.get(&at) {
            if depth.get(&to).is_none_or(|&old| d < old) {
                depth.insert(to, d);
                queue.push_front((to, d));
            }
            continue;
        }
        for (target_site, target) in links.get(&at).into_iter().flat_map(|v| v.iter()) {
            let to = (target_site.as_str(), target.as_str());
            if within(to.0) && !cut(at, to) && depth.get(&to).is_none_or(|&old| d + 1 < old) {
                depth.insert(to, d + 1);
                queue.push_back((to, d + 1));
            }
        }
    }
    depth
        .into_iter()
        .filter(|(at, d)| *d <= max_depth && pages.contains(at))
        .map(|((s, p), _)| (s.to_string(), p.to_string()))
        .collect()
}

/// The pages of `site` reachable from its index within `max_depth`, over links that stay on
/// the site (redirects keep depth), from the manifest's link graph.
pub fn expected_within(
    web: &crawltop::testweb::TestWeb,
    site: &str,
    max_depth: u32,
) -> std::collections::BTreeSet<String> {
    let s = web.manifest().site(site).expect("site");
    let links: std::collections::HashMap<&str, &Vec<(String, String)>> = s
        .pages
        .iter()
        .map(|p| (p.path.as_str(), &p.links))
        .collect();
    let redirects: std::collections::HashMap<&str, &str> = s
        .redirects
        .iter()
        .map(|r| (r.from.as_str(), r.to.as_str()))
        .collect();
    let mut depth: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
    let mut queue = std::collections::VecDeque::from([("/".to_string(), 0u32)]);
    depth.insert("/".into(), 0);
    while let Some((path, d)) = queue.pop_front() {
        if let Some(to) = redirects.get(path.as_str()) {
            if depth.get(*to).is_none_or(|&old| d < old) {
                depth.insert((*to).to_string(), d);
                queue.push_front(((*to).to_string(), d));
            }
            continue;
        }
        for (target_site, target) in links.get(path.as_str()).into_iter().flat_map(|v| v.iter()) {
            if target_site == site && depth.get(target).is_none_or(|&old| d + 1 < old) {
                depth.insert(target.clone(), d + 1);
                queue.push_back((target.clone(), d + 1));
            }
        }
    }
    depth
        .into_iter()
        .filter(|(p, d)| *d <= max_depth && s.page_paths().contains(p.as_str()))
        .map(|(p, _)| p)
        .collect()
}
