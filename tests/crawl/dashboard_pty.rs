//! The real binary in a pseudo-terminal (the `portable-pty` crate, no installed program),
//! driven by keys, judged at the server and on the screen (`vt100`).

use std::io::{Read as _, Write as _};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crawltop::testweb::{GenOptions, TestWeb};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};

use crate::util::{Finish, PATIENCE, bin};

/// Everything the program wrote to its terminal, raw and as a screen.
#[derive(Clone)]
pub(crate) struct Screen {
    raw: Arc<Mutex<Vec<u8>>>,
    parser: Arc<Mutex<vt100::Parser>>,
    changed: Arc<tokio::sync::Notify>,
    /// Set when the terminal's output reached its end (the program closed it).
    closed: Arc<std::sync::atomic::AtomicBool>,
}

impl Screen {
    pub(crate) fn text(&self) -> String {
        self.parser.lock().expect("parser").screen().contents()
    }

    fn raw(&self) -> Vec<u8> {
        self.raw.lock().expect("raw").clone()
    }

    /// Waits until the screen shows `needle` (case-insensitive).
    pub(crate) async fn wait_for(&self, needle: &str) {
        let needle = needle.to_lowercase();
        tokio::time::timeout(PATIENCE, async {
            loop {
                let notified = self.changed.notified();
                if self.text().to_lowercase().contains(&needle) {
                    return;
                }
                notified.await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("the screen never showed {needle:?}:\n{}", self.text()));
    }
}

pub(crate) type Child = Box<dyn portable_pty::Child + Send + Sync>;

/// Starts the binary in a 100x30 pseudo-terminal; its output feeds a `Screen`.
pub(crate) fn spawn_in_pty(
    args: &[&str],
    cwd: &std::path::Path,
) -> (Child, Screen, Box<dyn std::io::Write + Send>) {
    spawn_in_pty_env(args, cwd, &[])
}

/// As `spawn_in_pty`, with extra environment variables.
fn spawn_in_pty_env(
    args: &[&str],
    cwd: &std::path::Path,
    env: &[(&str, &str)],
) -> (Child, Screen, Box<dyn std::io::Write + Send>) {
    let env: Vec<(&str, &std::ffi::OsStr)> = env.iter().map(|(k, v)| (*k, v.as_ref())).collect();
    let (child, master) = spawn_in_unread_pty(args, cwd, &env);
    let mut reader = master.try_clone_reader().expect("reader");
    let keys = master.take_writer().expect("writer");
    let screen = Screen {
        raw: Arc::new(Mutex::new(Vec::new())),
        parser: Arc::new(Mutex::new(vt100::Parser::new(30, 100, 0))),
        changed: Arc::new(tokio::sync::Notify::new()),
        closed: Arc::new(std::sync::atomic::AtomicBool::new(false)),
    };
    let s = screen.clone();
    std::thread::spawn(move || {
        // The master must outlive the child's output: it moves here and drops at EOF.
        let _master = master;
        let mut buf = [0u8; 8192];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            s.raw.lock().expect("raw").extend_from_slice(&buf[..n]);
            s.parser.lock().expect("parser").process(&buf[..n]);
            s.changed.notify_waiters();
        }
        s.closed.store(true, std::sync::atomic::Ordering::SeqCst);
        s.changed.notify_waiters();
    });
    (child, screen, keys)
}

/// The terminal was given back: the alternate screen left after it was entered, the cursor
/// shown after it was last hidden.
async fn assert_restored(screen: &Screen) {
    // The program has exited; read its output to the end before judging it.
    tokio::time::timeout(PATIENCE, async {
        loop {
            let notified = screen.changed.notified();
            if screen.closed.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    })
    .await
    .expect("the terminal's output ends");
    let raw = screen.raw();
    let text = String::from_utf8_lossy(&raw);
    let entered = text
        .rfind("\x1b[?1049h")
        .expect("entered the alternate screen");
    let left = text
        .rfind("\x1b[?1049l")
        .expect("left the alternate screen");
    assert!(left > entered);
    let shown = text.rfind("\x1b[?25h").expect("cursor shown again");
    let hidden = text.rfind("\x1b[?25l").unwrap_or(0);
    assert!(shown > hidden, "the cursor is visible at the end");
}

pub(crate) async fn wait_exit(mut child: Child) -> portable_pty::ExitStatus {
    let mut killer = child.clone_killer();
    let waiting = tokio::task::spawn_blocking(move || child.wait());
    let Ok(waited) = tokio::time::timeout(PATIENCE, waiting).await else {
        // The blocking wait holds the test's runtime open until the process ends: ended here,
        // the test fails instead of hanging.
        let _ = killer.kill();
        panic!("the process did not exit within {PATIENCE:?}");
    };
    waited.expect("join").expect("exit status")
}

#[tokio::test]
async fn keys_pause_throttle_and_quit_are_seen_at_the_server() {
    let web = TestWeb::start(GenOptions::new(1, 400).seed(4))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let stats = tmp.path().join("stats.json");

    let (child, screen, mut keys) = spawn_in_pty(
        &[
            "crawl",
            &web.url("site00", "/"),
            "--delay-ms",
            "50",
            "--stats-out",
            stats.to_str().expect("utf8"),
        ],
        tmp.path(),
    );
    let mut press = |k: &str| {
        keys.write_all(k.as_bytes()).expect("key");
        keys.flush().expect("flush");
    };

    screen.wait_for("running").await;
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= 8))
        .await
        .expect("crawling");

    // p: pause. After the screen says so and the request in flight is done, silence.
    press("p");
    screen.wait_for("paused").await;
    // Every request that reached the server has been answered: nothing in flight.
    tokio::time::timeout(
        PATIENCE,
        web.log()
            .wait_until(|r| r.len() as u64 == web.log().arrivals()),
    )
    .await
    .expect("in-flight requests end");
    let mark = web.log().now_us();
    tokio::time::sleep(Duration::from_millis(500)).await; // the observation window
    let during: Vec<String> = web
        .log()
        .records_after(mark)
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert!(during.is_empty(), "requests while paused: {during:?}");

    // p again: resume; + twice: 50 -> 100 -> 250 ms, shown at once, and seen at the server.
    press("p");
    press("+");
    press("+");
    screen.wait_for("250 ms").await;
    let mark = web.log().now_us();
    tokio::time::timeout(
        PATIENCE,
        web.log()
            .wait_until(|r| r.iter().filter(|r| r.t_us > mark).count() >= 4),
    )
    .await
    .expect("crawling again");
    let after: Vec<u64> = web
        .log()
        .site_records("site00")
        .iter()
        .map(|r| r.t_us)
        .filter(|t| *t > mark)
        .collect();
    for pair in after.windows(2) {
        assert!(
            pair[1] - pair[0] >= 250_000,
            "{} us apart after +",
            pair[1] - pair[0]
        );
    }

    // q: stop, then exit; the terminal is given back as it was.
    press("q");
    let status = wait_exit(child).await;
    assert!(status.success(), "{status:?}");
    assert_restored(&screen).await;
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    for key in [
        "state",
        "workers",
        "scheduler",
        "resources",
        "http",
        "politeness",
        "sites",
        "heap",
        "rates",
    ] {
        assert!(stats.get(key).is_some(), "stats lack {key}");
    }
    let commands: Vec<(&str, &str)> = stats["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .map(|c| {
            (
                c["command"].as_str().expect("s"),
                c["source"].as_str().expect("s"),
            )
        })
        .collect();
    assert_eq!(
        commands,
        [
            ("pause", "key"),
            ("resume", "key"),
            ("delay 100 ms", "key"),
            ("delay 250 ms", "key"),
            ("stop", "key")
        ]
    );
}

#[tokio::test]
async fn ctrl_c_twice_ends_at_once_and_restores_the_terminal() {
    // A stalled answer keeps a request in flight: a graceful stop would wait out its 3 s grace.
    let web = TestWeb::start_with(GenOptions::new(1, 2).hostile(true), |o| {
        o.hostile.stall = Duration::from_secs(60);
    })
    .await
    .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let url = web.url("hostile", "/stall.html");
    let (child, screen, mut keys) = spawn_in_pty(
        &["crawl", &url, "--timeout-ms", "120000", "--delay-ms", "0"],
        tmp.path(),
    );
    screen.wait_for("running").await;
    tokio::time::timeout(
        PATIENCE,
        web.log()
            .wait_until(|r| r.iter().any(|r| r.path == "/robots.txt")),
    )
    .await
    .expect("robots.txt fetched");
    // robots.txt and then the stalled page have arrived: the page is in flight.
    tokio::time::timeout(PATIENCE, web.log().wait_arrivals(2))
        .await
        .expect("the stalled page is asked for");
    keys.write_all(b"\x03").expect("ctrl-c");
    keys.flush().expect("flush");
    screen.wait_for("stopping").await;
    keys.write_all(b"\x03").expect("ctrl-c");
    let _ = keys.flush();
    let status = wait_exit(child).await;
    assert!(status.success(), "{status:?}");
    assert_restored(&screen).await;
    // No --stats-out: the stats went to crawltop-stats-<timestamp>.json here, as the shell says.
    let stats: Vec<_> = std::fs::read_dir(tmp.path())
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("crawltop-stats-") && n.ends_with(".json"))
        .collect();
    assert_eq!(stats.len(), 1, "{stats:?}");
    assert!(
        screen.text().contains(&stats[0])
            || String::from_utf8_lossy(&screen.raw()).contains(&stats[0])
    );
}

#[tokio::test]
async fn sigterm_stops_the_dashboard_and_restores_the_terminal() {
    let stats = stopped_by(nix::sys::signal::Signal::SIGTERM).await;
    assert_eq!(stats["commands"][0]["source"], "signal");
}

/// `crawltop crawl` of `web`'s site00 with the dashboard in a pty, in `dir`, with `env`: the
/// child, its screen, its keys (kept: a dropped writer types a newline and EOF) and where its
/// stats go.
fn crawl_in_pty(
    web: &TestWeb,
    dir: &std::path::Path,
    env: &[(&str, &str)],
) -> (
    Child,
    Screen,
    Box<dyn std::io::Write + Send>,
    std::path::PathBuf,
) {
    let stats = dir.join("stats.json");
    let url = web.url("site00", "/");
    let (child, screen, keys) = spawn_in_pty_env(
        &[
            "crawl",
            &url,
            "--delay-ms",
            "50",
            "--stats-out",
            stats.to_str().expect("utf8"),
        ],
        dir,
        env,
    );
    (child, screen, keys, stats)
}

/// Whether a SIGINT sent to the child is still pending for the process (`ShdPnd` in
/// /proc/PID/status; bit 1 is signal 2).
fn sigint_pending(child: &Child) -> bool {
    let pid = child.process_id().expect("pid");
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            let mask = status.lines().find_map(|l| l.strip_prefix("ShdPnd:"))?;
            u64::from_str_radix(mask.trim(), 16).ok()
        })
        .is_some_and(|mask| mask & (1 << 1) != 0)
}

/// A dashboard crawl of a 300-page site, sent `signal` once it runs: it exits 0 with the
/// terminal restored. Returns its stats file.
async fn stopped_by(signal: nix::sys::signal::Signal) -> serde_json::Value {
    let web = TestWeb::start(GenOptions::new(1, 300)).await.expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (child, screen, _keys, stats) = crawl_in_pty(&web, tmp.path(), &[]);
    screen.wait_for("running").await;
    send_signal(&child, signal);
    let status = wait_exit(child).await;
    assert!(status.success(), "{status:?}");
    assert_restored(&screen).await;
    serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json")
}

#[tokio::test]
async fn a_finished_crawl_stays_on_screen_until_a_key() {
    let web = TestWeb::start(GenOptions::new(1, 3)).await.expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let url = web.url("site00", "/");
    let (child, screen, mut keys) = spawn_in_pty(&["crawl", &url, "--delay-ms", "0"], tmp.path());
    screen.wait_for("finished").await;
    keys.write_all(b"x").expect("a key");
    keys.flush().expect("flush");
    let status = wait_exit(child).await;
    assert!(status.success(), "{status:?}");
    assert_restored(&screen).await;
}

#[tokio::test]
async fn a_panic_gives_the_terminal_back() {
    let web = TestWeb::start(GenOptions::new(1, 3)).await.expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let url = web.url("site00", "/");
    let (child, screen, _keys) = spawn_in_pty_env(
        &["crawl", &url, "--delay-ms", "0"],
        tmp.path(),
        &[(crawltop::dashboard::PANIC_ENV, "1")],
    );
    let status = wait_exit(child).await;
    assert!(!status.success(), "the panic ends the process");
    assert_restored(&screen).await;
    let raw = screen.raw();
    let text = String::from_utf8_lossy(&raw);
    let restored_at = text
        .rfind("\x1b[?1049l")
        .expect("left the alternate screen");
    let panic_at = text
        .find("panicking on purpose")
        .expect("the panic message is shown");
    assert!(
        panic_at > restored_at,
        "the message is printed on the restored terminal"
    );
}

#[tokio::test]
async fn a_panic_on_a_terminal_that_is_gone_unwinds_and_the_demo_removes_its_folder() {
    // Giving a gone terminal back fails; a hook that panicked on that (ratatui's prints the
    // failure, and printing to a closed terminal panics) aborted the process, and an abort
    // removes nothing.
    let tmp = tempfile::tempdir().expect("tempdir");
    let temp = tmp.path().join("temp");
    std::fs::create_dir(&temp).expect("mkdir");
    let hold = tmp.path().join("hold");
    let env = [
        ("TMPDIR", temp.as_os_str()),
        (crawltop::dashboard::HOLD_ENV, hold.as_os_str()),
        (
            crawltop::dashboard::PANIC_ENV,
            std::ffi::OsStr::new("input"),
        ),
    ];
    let args = ["demo", "--sites", "2", "--pages", "50"];
    let (child, master) = spawn_in_unread_pty(&args, tmp.path(), &env);
    let held = async {
        while !hold.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(PATIENCE, held)
        .await
        .expect("the dashboard holds before its input");
    drop(master);
    std::fs::remove_file(&hold).expect("let the dashboard go on");
    let status = wait_exit(child).await;
    assert_eq!(
        status.exit_code(),
        101,
        "a panic's exit, not an abort: {status:?}"
    );
    assert!(status.signal().is_none(), "{status:?}");
    let left: Vec<_> = std::fs::read_dir(&temp)
        .expect("temp")
        .map(|e| e.expect("entry").path())
        .collect();
    assert!(left.is_empty(), "the demo left {left:?}");
}

/// Writes `text` to the terminal as typed keys.
fn type_keys(keys: &mut Box<dyn std::io::Write + Send>, text: &str) {
    keys.write_all(text.as_bytes()).expect("keys");
    keys.flush().expect("flush");
}

/// The first result URL starting with `prefix` on the screen and the line under it (the first
/// matching line, "N: text"), as the search pane shows them.
fn first_result(screen: &str, prefix: &str) -> Option<(String, String)> {
    let lines: Vec<&str> = screen.lines().collect();
    lines.windows(2).find_map(|pair| {
        let url = pair[0]
            .split_whitespace()
            .find(|word| word.starts_with(prefix))?;
        let below = pair[1].trim_start_matches(['│', ' ']);
        let (number, _) = below.split_once(": ")?;
        number
            .parse::<usize>()
            .ok()
            .map(|_| (url.to_owned(), below.to_owned()))
    })
}

#[tokio::test]
async fn slash_searches_the_pages_committed_while_the_crawl_goes_on() {
    let web = TestWeb::start(GenOptions::new(1, 400).seed(6))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("out");
    let origin = web.origin("site00");
    let (child, screen, mut keys) = spawn_in_pty(
        &[
            "crawl",
            &web.url("site00", "/"),
            "--delay-ms",
            "20",
            "--out",
            out.to_str().expect("utf8"),
        ],
        tmp.path(),
    );
    screen.wait_for("running").await;
    // While the prompt is open, q and p are letters: the crawl neither quits nor pauses.
    type_keys(&mut keys, "/quip");
    screen.wait_for("/ quip").await;
    screen.wait_for("Enter search · Esc cancel").await;
    type_keys(&mut keys, "\x7f\x7f\x7f\x7frabbit\r");
    // Nothing found yet is asked again as pages are committed (about once a second).
    screen.wait_for("indexed match «rabbit»").await;
    let text = screen.text();
    let (url, line) = first_result(&text, &format!("{origin}/"))
        .unwrap_or_else(|| panic!("a result of {origin} with its line:\n{text}"));
    assert!(
        line.to_lowercase().contains("rabbit"),
        "{url}: the matching line is shown: {line}"
    );
    assert!(!text.contains("PAUSED"), "{text}");
    // Esc closes the pane: the sites table is back; the crawl went on all along.
    type_keys(&mut keys, "\x1b");
    screen.wait_for("sort: queued").await;
    type_keys(&mut keys, "q");
    let status = wait_exit(child).await;
    assert!(status.success(), "{status:?}");
    assert_restored(&screen).await;
    assert!(out.join("index").is_dir());
}

#[tokio::test]
async fn f_filters_the_sites_pane_by_origin_and_esc_shows_all_again() {
    let web = TestWeb::start(GenOptions::new(3, 300).seed(8).crawl_delay_s(0.05))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (one, two, three) = (
        web.url("site00", "/"),
        web.url("site01", "/"),
        web.url("site02", "/"),
    );
    let (child, screen, mut keys) = spawn_in_pty(
        &["crawl", &one, &two, &three, "--delay-ms", "50"],
        tmp.path(),
    );
    screen.wait_for("Sites 3 ·").await;
    let wanted = web.origin("site01");
    let port = wanted.rsplit(':').next().expect("port").to_string();
    // While the prompt is open, q is a letter: the crawl does not quit.
    type_keys(&mut keys, "fq");
    screen.wait_for(" f q").await;
    screen.wait_for("Enter filter sites").await;
    type_keys(&mut keys, &format!("\x7f:{port}\r"));
    screen
        .wait_for(&format!("Sites 1 of 3 matching «:{port}»"))
        .await;
    let text = screen.text();
    assert!(text.contains(&wanted), "{text}");
    for other in ["site00", "site02"] {
        assert!(
            !text.contains(&web.origin(other)),
            "{other} hidden:\n{text}"
        );
    }
    // Esc in the prompt clears the filter: every site again.
    type_keys(&mut keys, "f\x1b");
    screen.wait_for("Sites 3 ·").await;
    type_keys(&mut keys, "q");
    let status = wait_exit(child).await;
    assert!(status.success(), "{status:?}");
    assert_restored(&screen).await;
}

#[tokio::test]
async fn slash_without_a_crawl_folder_says_what_is_needed() {
    let web = TestWeb::start(GenOptions::new(1, 300)).await.expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (child, screen, mut keys) = spawn_in_pty(
        &["crawl", &web.url("site00", "/"), "--delay-ms", "50"],
        tmp.path(),
    );
    screen.wait_for("running").await;
    type_keys(&mut keys, "/rabbit\r");
    screen
        .wait_for("search needs an index: run with --out DIR, without --no-index")
        .await;
    type_keys(&mut keys, "\x1b");
    screen.wait_for("sort: queued").await;
    type_keys(&mut keys, "q");
    let status = wait_exit(child).await;
    assert!(status.success(), "{status:?}");
    assert_restored(&screen).await;
}

#[tokio::test]
async fn the_demo_is_searchable_and_removes_its_folder() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let stats = tmp.path().join("stats.json");
    let (child, screen, mut keys) = spawn_in_pty(
        &[
            "demo",
            "--sites",
            "2",
            "--pages",
            "40",
            "--delay-ms",
            "20",
            "--stats-out",
            stats.to_str().expect("utf8"),
        ],
        tmp.path(),
    );
    // The dashboard's own text: keys typed before it reads them raw would be taken cooked.
    screen.wait_for("Workers").await;
    type_keys(&mut keys, "/alice\r");
    screen.wait_for("indexed match «alice»").await;
    assert!(
        first_result(&screen.text(), "http://127.0.0.1:").is_some(),
        "{}",
        screen.text()
    );
    // Esc apart from the next key (together they read as Alt-q). Then, running, q stops and
    // exits; finished, any key exits.
    type_keys(&mut keys, "\x1b");
    screen.wait_for("sort: queued").await;
    type_keys(&mut keys, "q");
    let status = wait_exit(child).await;
    assert!(status.success(), "{status:?}");
    assert_restored(&screen).await;
    let raw = String::from_utf8_lossy(&screen.raw()).into_owned();
    let web = raw
        .lines()
        .find_map(|l| l.split(" pages in ").nth(1))
        .expect("the demo says where its web is")
        .trim()
        .to_owned();
    let folder = std::path::Path::new(&web)
        .parent()
        .expect("the demo's folder");
    assert!(!folder.exists(), "{} left behind", folder.display());
}

#[tokio::test]
async fn fresh_asks_on_a_terminal_and_a_no_keeps_the_crawl() {
    let web = TestWeb::start(GenOptions::new(1, 8)).await.expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("crawl");
    let out_arg = out.to_str().expect("utf-8 path");
    let url = web.url("site00", "/");
    let args = [
        "crawl",
        &url,
        "--headless",
        "--delay-ms",
        "0",
        "--out",
        out_arg,
        "--fresh",
    ];
    let first = tokio::process::Command::new(bin())
        .args(&args[..args.len() - 1])
        .finish()
        .await
        .expect("first crawl");
    assert!(first.status.success());
    let requests = web.log().records().len();
    let warc = out.join("warc");
    let kept = |dir: &std::path::Path| -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .expect("warc folder")
            .map(|e| {
                let p = e.expect("entry").path();
                let bytes = std::fs::read(&p).expect("read");
                (p, bytes)
            })
            .collect();
        files.sort();
        files
    };
    let before = kept(&warc);

    // "n": nothing deleted, nothing fetched, a failure exit.
    let (child, screen, mut keys) = spawn_in_pty(&args, tmp.path());
    screen.wait_for("holds a finished crawl (").await;
    screen.wait_for("start over? [y/N]").await;
    type_keys(&mut keys, "n\r");
    let status = wait_exit(child).await;
    assert_eq!(status.exit_code(), 1);
    screen.wait_for("nothing deleted").await;
    assert!(kept(&warc) == before, "the WARC files changed after a no");
    assert_eq!(web.log().records().len(), requests);

    // "y": the crawl starts over and stores every page once.
    let (child, screen, mut keys) = spawn_in_pty(&args, tmp.path());
    screen.wait_for("start over? [y/N]").await;
    type_keys(&mut keys, "y\r");
    let status = wait_exit(child).await;
    assert!(status.success(), "{status:?}");
    assert_eq!(web.log().records().len(), 2 * requests);
    let counts = crate::util::read_warc(&warc).counts;
    assert!(counts.values().all(|n| *n == 1), "{counts:?}");
}

/// Not a test: refreshes the README's captures of a running `demo` (the main screen and the
/// search pane) from the real binary. Run with
/// `cargo test --test crawl capture_the_demo -- --ignored`.
#[tokio::test]
#[ignore = "writes assets/dashboard*.txt; run by hand to refresh the README's captures"]
async fn capture_the_demo_for_the_readme() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (child, screen, mut keys) = spawn_in_pty(&["demo"], tmp.path());
    // Some seconds into the crawl: wait for the header's page count to pass 500.
    tokio::time::timeout(PATIENCE, async {
        loop {
            let notified = screen.changed.notified();
            let fetched = screen
                .text()
                .lines()
                .next()
                .and_then(|l| l.split("fetched ").nth(1))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.replace(',', "").parse::<u64>().ok());
            if fetched.is_some_and(|n| n >= 500) {
                return;
            }
            notified.await;
        }
    })
    .await
    .expect("the demo crawls");
    let assets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
    std::fs::write(assets.join("dashboard.txt"), trimmed(&screen.text())).expect("write");
    type_keys(&mut keys, "/rabbit\r");
    screen.wait_for("indexed match «rabbit»").await;
    std::fs::write(assets.join("dashboard-search.txt"), trimmed(&screen.text())).expect("write");
    type_keys(&mut keys, "\x1b");
    screen.wait_for("sort: queued").await;
    type_keys(&mut keys, "q");
    assert!(wait_exit(child).await.success());
}

/// A screen's text with trailing spaces cut, ending in one newline.
fn trimmed(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// Starts the binary in a pseudo-terminal nobody reads, and gives the terminal's master side:
/// dropping it hangs the terminal up, as closing a terminal window or losing an ssh session
/// does (SIGHUP, and every write to the terminal fails from then on).
fn spawn_in_unread_pty(
    args: &[&str],
    cwd: &std::path::Path,
    env: &[(&str, &std::ffi::OsStr)],
) -> (Child, Box<dyn portable_pty::MasterPty + Send>) {
    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 30,
            cols: 100,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("pty");
    let mut cmd = CommandBuilder::new(bin());
    cmd.args(args);
    cmd.cwd(cwd);
    cmd.env("TERM", "xterm-256color");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = pty.slave.spawn_command(cmd).expect("spawn in the pty");
    drop(pty.slave);
    (child, pty.master)
}

#[tokio::test]
async fn a_closed_terminal_stops_the_crawl_which_writes_its_stats_and_resumes_later() {
    let web = TestWeb::start(GenOptions::new(1, 300).crawl_delay_s(0.0))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let stats = tmp.path().join("stats.json");
    let out = tmp.path().join("crawl");
    let url = web.url("site00", "/");
    let args = [
        "crawl",
        &url,
        "--delay-ms",
        "20",
        "--stats-out",
        stats.to_str().expect("utf8"),
        "--out",
        out.to_str().expect("utf8"),
    ];
    let (child, master) = spawn_in_unread_pty(&args, tmp.path(), &[]);
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= 10))
        .await
        .expect("the crawl runs");
    drop(master);
    let status = wait_exit(child).await;
    assert!(
        status.success(),
        "a hangup stops the crawl as SIGTERM does: {status:?}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats written"))
            .expect("json");
    assert_eq!(json["totals"]["completed"], false, "stopped, not finished");
    assert!(
        json["commands"]
            .as_array()
            .expect("commands")
            .iter()
            .any(|c| c["command"] == "stop" && c["source"] == "signal"),
        "{}",
        json["commands"]
    );
    let fetched = json["resources"]["fetched"].as_u64().expect("fetched");
    // Ten requests at the server: robots.txt and nine pages.
    assert!((9..300).contains(&fetched), "{fetched}");
    // The folder was left as a stop leaves it: the same command resumes it to its end.
    let resumed = tokio::process::Command::new(bin())
        .args(["crawl", &url, "--headless", "--delay-ms", "0", "--out"])
        .arg(&out)
        .finish()
        .await
        .expect("resume");
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{err}");
    assert!(err.contains("resuming the crawl"), "{err}");
}
#[tokio::test]
async fn a_demo_whose_terminal_closes_removes_its_folder() {
    // Closed while the demo writes its web; between the dashboard taking the terminal and
    // reading its first key (crossterm's reader then cannot open it: this once aborted the
    // demo); and while it crawls.
    for stage in ["web", "input", "crawl"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let temp = tmp.path().join("temp");
        std::fs::create_dir(&temp).expect("mkdir");
        let hold = tmp.path().join("hold");
        let mut env = vec![("TMPDIR", temp.as_os_str())];
        if stage == "input" {
            env.push((crawltop::dashboard::HOLD_ENV, hold.as_os_str()));
        }
        let args = ["demo", "--sites", "2", "--pages", "200", "--delay-ms", "20"];
        let (child, master) = spawn_in_unread_pty(&args, tmp.path(), &env);
        // Its folder made; for the second stage the dashboard held before its input; for the
        // third its crawl's index: the crawl runs.
        let made = async {
            loop {
                let folder = std::fs::read_dir(&temp)
                    .expect("temp")
                    .next()
                    .map(|e| e.expect("entry").path());
                let there = match stage {
                    "web" => folder.is_some(),
                    "input" => hold.exists(),
                    _ => folder.is_some_and(|f| f.join("crawl/index").is_dir()),
                };
                if there {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(PATIENCE, made)
            .await
            .expect("the demo gets there");
        drop(master);
        if stage == "input" {
            std::fs::remove_file(&hold).expect("let the dashboard go on");
        }
        let status = wait_exit(child).await;
        assert!(status.success(), "{stage}: {status:?}");
        let left: Vec<_> = std::fs::read_dir(&temp)
            .expect("temp")
            .map(|e| e.expect("entry").path())
            .collect();
        assert!(left.is_empty(), "{stage}: the demo left {left:?}");
    }
}

/// Sends `signal` to the child as another process would (`kill`, `timeout`, a supervisor).
fn send_signal(child: &Child, signal: nix::sys::signal::Signal) {
    let pid = child.process_id().expect("pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid")),
        signal,
    )
    .expect("signal");
}

/// The stats file's `commands` as (command, source) pairs.
fn commands(stats: &std::path::Path) -> Vec<(String, String)> {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(stats).expect("stats")).expect("json");
    json["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .map(|c| {
            let field = |k: &str| c[k].as_str().expect("a string").to_owned();
            (field("command"), field("source"))
        })
        .collect()
}

#[tokio::test]
async fn a_sigint_from_another_process_stops_the_dashboard_crawl_as_ctrl_c_does() {
    // Audit 31 F1: raw mode makes a typed Ctrl-C a key, and a SIGINT sent from outside
    // (`kill -INT`, `timeout -s INT`) was read by nobody: the crawl ran on to its end.
    let stats = stopped_by(nix::sys::signal::Signal::SIGINT).await;
    let commands: Vec<(&str, &str)> = (stats["commands"].as_array().expect("commands").iter())
        .map(|c| {
            let field = |k: &str| c[k].as_str().expect("a string");
            (field("command"), field("source"))
        })
        .collect();
    assert_eq!(commands, [("stop", "signal")]);
    assert_eq!(stats["totals"]["completed"], false, "stopped, not finished");
}

#[tokio::test]
async fn a_sigint_sent_before_the_dashboard_reads_its_signals_is_not_lost() {
    // The dashboard reads the listeners the command line registered before the crawl started:
    // a SIGINT sent meanwhile (here: while the dashboard holds before its input) still stops it.
    let web = TestWeb::start(GenOptions::new(1, 300)).await.expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let hold = tmp.path().join("hold");
    let env = [(crawltop::dashboard::HOLD_ENV, hold.to_str().expect("utf8"))];
    let (child, screen, _keys, stats) = crawl_in_pty(&web, tmp.path(), &env);
    tokio::time::timeout(PATIENCE, async {
        while !hold.exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the dashboard holds before its input");
    send_signal(&child, nix::sys::signal::Signal::SIGINT);
    // Delivered (and kept by its listener) before the dashboard goes on: the kernel no longer
    // holds it pending for the process.
    let delivered = async {
        while sigint_pending(&child) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(PATIENCE, delivered)
        .await
        .expect("the SIGINT is delivered");
    std::fs::remove_file(&hold).expect("let the dashboard go on");
    let status = wait_exit(child).await;
    assert!(status.success(), "{status:?}");
    assert_restored(&screen).await;
    assert_eq!(commands(&stats), [("stop".into(), "signal".into())]);
}

#[tokio::test]
async fn a_second_sigint_ends_a_dashboard_crawl_at_once() {
    // A stalled answer keeps a request in flight: a graceful stop would wait for it.
    let web = TestWeb::start_with(GenOptions::new(1, 2).hostile(true), |o| {
        o.hostile.stall = Duration::from_secs(60);
    })
    .await
    .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let url = web.url("hostile", "/stall.html");
    let (child, screen, _keys) = spawn_in_pty(
        &["crawl", &url, "--timeout-ms", "120000", "--delay-ms", "0"],
        tmp.path(),
    );
    screen.wait_for("running").await;
    tokio::time::timeout(PATIENCE, web.log().wait_arrivals(2))
        .await
        .expect("the stalled page is asked for");
    send_signal(&child, nix::sys::signal::Signal::SIGINT);
    screen.wait_for("stopping").await;
    let second = std::time::Instant::now();
    send_signal(&child, nix::sys::signal::Signal::SIGINT);
    let status = wait_exit(child).await;
    assert!(status.success(), "{status:?}");
    // A graceful stop gives in-flight fetches seconds; the second SIGINT does not wait.
    assert!(
        second.elapsed() < Duration::from_secs(2),
        "ended {:?} after the second SIGINT",
        second.elapsed()
    );
    assert_restored(&screen).await;
}

/// The address the program printed after `mark` (before the dashboard took the screen).
async fn printed_addr(screen: &Screen, mark: &str) -> std::net::SocketAddr {
    tokio::time::timeout(PATIENCE, async {
        loop {
            let notified = screen.changed.notified();
            let raw = String::from_utf8_lossy(&screen.raw()).into_owned();
            if let Some(addr) = raw
                .split(mark)
                .nth(1)
                .filter(|rest| rest.contains('\n'))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|a| a.parse().ok())
            {
                return addr;
            }
            notified.await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no address after {mark:?}"))
}

#[tokio::test]
async fn ctl_stop_ends_a_dashboard_crawl_and_frees_its_control_port() {
    // Audit 31 F2: stopped from the API, the dashboard waited on its final screen for a key
    // nobody would press, its control port held: a second run on the address failed.
    let web = TestWeb::start(GenOptions::new(1, 300)).await.expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let stats = tmp.path().join("stats.json");
    let url = web.url("site00", "/");
    let (child, screen, _keys) = spawn_in_pty(
        &[
            "crawl",
            &url,
            "--delay-ms",
            "50",
            "--control",
            "127.0.0.1:0",
            "--stats-out",
            stats.to_str().expect("utf8"),
        ],
        tmp.path(),
    );
    let addr = printed_addr(&screen, "control API on http://").await;
    screen.wait_for("running").await;
    let ctl = tokio::process::Command::new(bin())
        .args(["ctl", &addr.to_string(), "stop"])
        .finish()
        .await
        .expect("ctl stop");
    assert!(ctl.status.success(), "{ctl:?}");
    let status = wait_exit(child).await;
    assert!(status.success(), "{status:?}");
    assert_restored(&screen).await;
    assert_eq!(commands(&stats), [("stop".into(), "api".into())]);
    std::net::TcpListener::bind(addr).expect("the control port is free again");
}

#[tokio::test]
async fn a_paste_goes_into_the_search_prompt_and_is_never_taken_as_keys() {
    // Audit 31 F4: without bracketed paste, the `e`, space, `p` and `q` of pasted text
    // exported, paused and stopped the crawl.
    let web = TestWeb::start(GenOptions::new(1, 300)).await.expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let stats = tmp.path().join("stats.json");
    let (child, screen, mut keys) = spawn_in_pty(
        &[
            "crawl",
            &web.url("site00", "/"),
            "--delay-ms",
            "50",
            "--stats-out",
            stats.to_str().expect("utf8"),
        ],
        tmp.path(),
    );
    screen.wait_for("running").await;
    let raw = String::from_utf8_lossy(&screen.raw()).into_owned();
    assert!(raw.contains("\x1b[?2004h"), "bracketed paste is asked for");
    // Outside any prompt a paste does nothing: no export, pause or stop.
    type_keys(
        &mut keys,
        "\x1b[200~see the pause, quit and stop keys\x1b[201~",
    );
    // In the prompt it is the query; its line break is a space.
    type_keys(&mut keys, "/");
    screen.wait_for("Enter search · Esc cancel").await;
    type_keys(&mut keys, "\x1b[200~white\nrabbit\x1b[201~");
    screen.wait_for("/ white rabbit").await;
    assert!(!screen.text().contains("PAUSED"), "{}", screen.text());
    // Esc apart from the next key (together they read as Alt-q): the footer's keys are back.
    type_keys(&mut keys, "\x1b");
    screen.wait_for("]/[ workers").await;
    type_keys(&mut keys, "q");
    let status = wait_exit(child).await;
    assert!(status.success(), "{status:?}");
    assert_restored(&screen).await;
    let raw = String::from_utf8_lossy(&screen.raw()).into_owned();
    let on = raw.rfind("\x1b[?2004h").expect("on");
    let off = raw
        .rfind("\x1b[?2004l")
        .expect("bracketed paste is given back");
    assert!(off > on);
    assert_eq!(commands(&stats), [("stop".into(), "key".into())]);
}

#[tokio::test]
async fn a_dumb_or_empty_term_runs_headless_with_progress_lines() {
    // Audit 31 F5: TERM=dumb got the whole dashboard in 256 colours.
    for term in ["dumb", ""] {
        let web = TestWeb::start(GenOptions::new(1, 5)).await.expect("web");
        let tmp = tempfile::tempdir().expect("tempdir");
        let url = web.url("site00", "/");
        let (child, screen, _keys) = spawn_in_pty_env(
            &["crawl", &url, "--delay-ms", "0"],
            tmp.path(),
            &[("TERM", term)],
        );
        let status = wait_exit(child).await;
        assert!(status.success(), "{term:?}: {status:?}");
        tokio::time::timeout(PATIENCE, async {
            while !screen.closed.load(std::sync::atomic::Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the output ends");
        let raw = String::from_utf8_lossy(&screen.raw()).into_owned();
        assert!(
            !raw.contains("\x1b[?1049h"),
            "{term:?}: no alternate screen"
        );
        assert!(!raw.contains("\x1b[38;5"), "{term:?}: no colours");
        let why = if term.is_empty() {
            "TERM is empty"
        } else {
            "TERM is dumb"
        };
        assert!(
            raw.contains(&format!("{why}: progress lines instead of the dashboard")),
            "{raw}"
        );
        assert!(raw.contains("] finished "), "a progress line: {raw}");
    }
}
