//! A shared crawl stays polite when a site's lease changes hands uncleanly (audit 28 #2): the
//! member that takes the lease of a holder killed right after a request waits the site's delay,
//! and a Retry-After, from that request, as one process would; a holder that hands its site
//! back passes it on at its stored next contact, with no wait added. Judged at a one-site
//! server that logs when each request came and when its answer ended.
//!
//! They need Debian's `redis-server`; see `cluster::redis_here`.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpListener;
use tokio::process::{Child, Command};
use tokio::sync::watch;

use crate::cluster::redis_here;
use crate::util::{KillOnDrop, bin, plain_redis, sigterm};

/// Long enough for a loaded machine; a step that never comes fails the test here.
const PATIENCE: Duration = Duration::from_secs(60);

/// One request the site got: its path, when it came, and when its answer ended (written, or
/// the crawler gone).
#[derive(Debug, Clone)]
struct Asked {
    path: String,
    came: Instant,
    ended: Option<Instant>,
}

/// A site on 127.0.0.1 (port chosen by the OS): no robots.txt (404: everything allowed), `/`
/// links `/p1` to `/p6`, which link nothing. Every page's answer waits `hold` (robots.txt's
/// does not), so that a member killed as a request comes never hears its answer. With
/// `refuse`, the first request for a `/pN` page is answered 503 with that `Retry-After` (s).
struct Site {
    origin: String,
    log: watch::Receiver<Vec<Asked>>,
}

impl Site {
    async fn start(hold: Duration, refuse: Option<u64>) -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let origin = format!("http://{}", listener.local_addr().expect("bound"));
        let (tx, log) = watch::channel(Vec::<Asked>::new());
        let tx = Arc::new(tx);
        let refused = Arc::new(AtomicBool::new(false));
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (tx, refused) = (tx.clone(), refused.clone());
                tokio::spawn(async move {
                    let Some(path) = crate::util::request_path(&mut stream).await else {
                        return;
                    };
                    let mut at = 0;
                    tx.send_modify(|log| {
                        at = log.len();
                        log.push(Asked {
                            path: path.clone(),
                            came: Instant::now(),
                            ended: None,
                        });
                    });
                    let page = path.starts_with("/p");
                    let (status, extra, body) = match path.as_str() {
                        "/robots.txt" => ("404 Not Found", String::new(), String::new()),
                        "/" => {
                            let mut links = String::new();
                            for i in 1..=6 {
                                let _ = writeln!(links, "<a href=\"/p{i}\">p{i}</a>");
                            }
                            ("200 OK", String::new(), links)
                        }
                        _ if page && refuse.is_some() && !refused.swap(true, Ordering::SeqCst) => {
                            let after = refuse.unwrap_or(0);
                            (
                                "503 Busy",
                                format!("Retry-After: {after}\r\n"),
                                String::new(),
                            )
                        }
                        _ if page => ("200 OK", String::new(), "<p>a page</p>".into()),
                        _ => ("404 Not Found", String::new(), String::new()),
                    };
                    if path != "/robots.txt" {
                        tokio::time::sleep(hold).await;
                    }
                    let reply = format!(
                        "HTTP/1.1 {status}\r\nConnection: close\r\nContent-Type: text/html\r\n\
                         {extra}Content-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(reply.as_bytes()).await;
                    let _ = stream.shutdown().await;
                    tx.send_modify(|log| log[at].ended = Some(Instant::now()));
                });
            }
        });
        Site { origin, log }
    }

    /// Waits until the log holds what `done` wants.
    async fn until(&self, done: impl FnMut(&Vec<Asked>) -> bool) -> Vec<Asked> {
        let mut log = self.log.clone();
        let seen = tokio::time::timeout(PATIENCE, log.wait_for(done))
            .await
            .expect("the site was asked in time")
            .expect("the site runs");
        seen.clone()
    }
}

/// A member of crawl `id` on `nodes` with `--delay-ms delay_ms --lease-ms 1000`, then `extra`.
fn member(nodes: &[String], id: &str, stats: &Path, delay_ms: u64, extra: &[&str]) -> Child {
    Command::new(bin())
        .arg("crawl")
        .args(["--cluster", &nodes.join(","), "--crawl-id", id])
        .args(["--headless", "--workers", "2", "--per-site", "1"])
        .args(["--delay-ms", &delay_ms.to_string(), "--lease-ms", "1000"])
        .args(["--timeout-ms", "10000", "--stats-out"])
        .arg(stats)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("crawltop starts")
}

/// `redis-cli` against the plain server at `node`.
fn redis_cli(node: &str, args: &[&str]) -> String {
    let port = node.rsplit(':').next().expect("a port");
    let out = std::process::Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", port])
        .args(args)
        .output()
        .expect("redis-cli runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Two members of crawl `id` (the first brings the site as its seed), and which of them holds
/// the site once its first page was asked for: (holder, other).
async fn two_members(
    nodes: &[String],
    id: &str,
    site: &Site,
    dir: &Path,
    delay_ms: u64,
) -> (Child, Child) {
    let seed = format!("{}/", site.origin);
    let a = member(nodes, id, &dir.join("a.json"), delay_ms, &[seed.as_str()]);
    let b = member(nodes, id, &dir.join("b.json"), delay_ms, &[]);
    site.until(|log| log.iter().any(|r| r.path == "/")).await;
    let key = format!("ct:{{{id}|{}}}:lease", site.origin);
    let holder = redis_cli(&nodes[0], &["GET", &key]);
    let pid = |c: &Child| c.id().expect("running").to_string();
    if holder.ends_with(&format!(":{}", pid(&a))) {
        (a, b)
    } else {
        assert!(holder.ends_with(&format!(":{}", pid(&b))), "{holder:?}");
        (b, a)
    }
}

/// The first request after request `at`, once it came.
async fn next_after(site: &Site, at: usize) -> Asked {
    site.until(|log| log.len() > at + 1).await[at + 1].clone()
}

/// Stops a member with SIGTERM and waits for it (a stop is a success).
async fn stop(child: Child) {
    sigterm(&child);
    stopped(child).await;
}

/// Waits for a member told to stop (a stop is a success).
async fn stopped(child: Child) {
    let status = tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .expect("the member stops")
        .expect("waits")
        .status;
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn a_member_taking_a_killed_holders_site_waits_the_delay_from_its_last_request() {
    if !redis_here("a_member_taking_a_killed_holders_site_waits_the_delay...") {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let (redis, nodes) = plain_redis(tmp.path()).await;
    // Stopped however the test ends: a failing one must not leave it running.
    let _redis = KillOnDrop(redis);
    let site = Site::start(Duration::from_millis(100), None).await;
    // A delay twice the lease: the lease running out is no wait enough.
    let delay = Duration::from_secs(2);
    let (mut holder, other) = two_members(&nodes, "killed", &site, tmp.path(), 2000).await;
    // The holder is killed as its next page request comes, before it hears the answer: the
    // next contact Redis has is the one stored when the page before ended.
    let at = site.log.borrow().len();
    site.until(|log| log.len() > at).await;
    holder.start_kill().expect("SIGKILL");
    let next = next_after(&site, at).await;
    let last = site.until(|log| log[at].ended.is_some()).await[at].clone();
    let ended = last.ended.expect("ended");
    let gap = next.came.saturating_duration_since(ended);
    assert!(
        gap >= delay,
        "{} asked {gap:?} after {} ended, under a delay of {delay:?}",
        next.path,
        last.path
    );
    let _ = holder.wait().await;
    stop(other).await;
}

#[tokio::test]
async fn a_member_taking_a_killed_holders_site_waits_out_the_retry_after_it_got() {
    if !redis_here("a_member_taking_a_killed_holders_site_waits_out_the_retry_after...") {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let (redis, nodes) = plain_redis(tmp.path()).await;
    // Stopped however the test ends: a failing one must not leave it running.
    let _redis = KillOnDrop(redis);
    // Retry-After: 3 under a lease of 1 s and a delay of 300 ms.
    let site = Site::start(Duration::ZERO, Some(3)).await;
    let (mut holder, other) = two_members(&nodes, "refused", &site, tmp.path(), 300).await;
    let log = site
        .until(|log| {
            log.iter()
                .any(|r| r.path.starts_with("/p") && r.ended.is_some())
        })
        .await;
    let refused = log
        .iter()
        .position(|r| r.path.starts_with("/p"))
        .expect("a page asked");
    let answered = log[refused].ended.expect("ended");
    // The holder is killed once Redis has the site's next contact past the lease (the
    // Retry-After is stored when it is received, not with a later fetch's end).
    let pol = format!("ct:{{refused|{}}}:pol", site.origin);
    let stored = async {
        loop {
            let next: u64 = redis_cli(&nodes[0], &["HGET", &pol, "next_ms"])
                .parse()
                .unwrap_or(0);
            let now = redis_cli(&nodes[0], &["TIME"]);
            let mut t = now.lines().map(|l| l.trim().parse::<u64>().unwrap_or(0));
            let now_ms = t.next().unwrap_or(0) * 1000 + t.next().unwrap_or(0) / 1000;
            if next > now_ms + 1500 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), stored)
        .await
        .expect("the holder stores its Retry-After in Redis when it gets it");
    holder.start_kill().expect("SIGKILL");
    let next = next_after(&site, refused).await;
    let gap = next.came.saturating_duration_since(answered);
    assert!(
        gap >= Duration::from_secs(3),
        "{} asked {gap:?} after a 503 with Retry-After: 3",
        next.path
    );
    let _ = holder.wait().await;
    stop(other).await;
}

#[tokio::test]
async fn a_holder_that_hands_its_site_back_passes_it_on_at_its_next_contact_with_no_wait_added() {
    if !redis_here("a_holder_that_hands_its_site_back_passes_it_on...") {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let (redis, nodes) = plain_redis(tmp.path()).await;
    // Stopped however the test ends: a failing one must not leave it running.
    let _redis = KillOnDrop(redis);
    let site = Site::start(Duration::ZERO, None).await;
    let delay = Duration::from_millis(2500);
    let (holder, other) = two_members(&nodes, "handed", &site, tmp.path(), 2500).await;
    // Stopped well into the delay after its last request: the other member may contact the
    // site at the next contact the holder stored (a delay after that request), not a whole
    // delay after the hand-back (which would be 1.5 s later still).
    let log = site
        .until(|log| log.iter().any(|r| r.path == "/" && r.ended.is_some()))
        .await;
    let at = log.iter().position(|r| r.path == "/").expect("/ asked");
    let ended = log[at].ended.expect("ended");
    tokio::time::sleep_until((ended + Duration::from_millis(1500)).into()).await;
    sigterm(&holder);
    let next = next_after(&site, at).await;
    let gap = next.came.saturating_duration_since(ended);
    assert!(
        gap >= delay && gap < delay + Duration::from_millis(1200),
        "{} asked {gap:?} after {} ended, under a delay of {delay:?}",
        next.path,
        log[at].path
    );
    stopped(holder).await;
    stop(other).await;
}
