//! The real binary in a pseudo-terminal (the `portable-pty` crate, no installed program),
//! driven by keys, judged at the server and on the screen (`vt100`).

use std::io::{Read as _, Write as _};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crawltop::testweb::{GenOptions, TestWeb};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};

use crate::util::{PATIENCE, bin};

/// Everything the program wrote to its terminal, raw and as a screen.
#[derive(Clone)]
struct Screen {
    raw: Arc<Mutex<Vec<u8>>>,
    parser: Arc<Mutex<vt100::Parser>>,
    changed: Arc<tokio::sync::Notify>,
}

impl Screen {
    fn text(&self) -> String {
        self.parser.lock().expect("parser").screen().contents()
    }

    fn raw(&self) -> Vec<u8> {
        self.raw.lock().expect("raw").clone()
    }

    /// Waits until the screen shows `needle` (case-insensitive).
    async fn wait_for(&self, needle: &str) {
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

#[tokio::test]
async fn keys_pause_throttle_and_quit_are_seen_at_the_server() {
    let web = TestWeb::start(GenOptions::new(1, 400).seed(4))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let stats = tmp.path().join("stats.json");

    let pty = native_pty_system()
        .openpty(PtySize {
            rows: 30,
            cols: 100,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("pty");
    let mut cmd = CommandBuilder::new(bin());
    cmd.args([
        "crawl",
        &web.url("site00", "/"),
        "--delay-ms",
        "50",
        "--stats-out",
    ]);
    cmd.arg(stats.as_os_str());
    cmd.cwd(tmp.path());
    cmd.env("TERM", "xterm-256color");
    let mut child = pty.slave.spawn_command(cmd).expect("spawn in the pty");
    drop(pty.slave);
    let mut reader = pty.master.try_clone_reader().expect("reader");
    let mut keys = pty.master.take_writer().expect("writer");
    let screen = Screen {
        raw: Arc::new(Mutex::new(Vec::new())),
        parser: Arc::new(Mutex::new(vt100::Parser::new(30, 100, 0))),
        changed: Arc::new(tokio::sync::Notify::new()),
    };
    let s = screen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            s.raw.lock().expect("raw").extend_from_slice(&buf[..n]);
            s.parser.lock().expect("parser").process(&buf[..n]);
            s.changed.notify_waiters();
        }
    });
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
    tokio::time::sleep(Duration::from_millis(200)).await; // the one in-flight request ends
    let mark = web.log().now_us();
    tokio::time::sleep(Duration::from_millis(500)).await; // the observation window
    let during: Vec<String> = web
        .log()
        .records()
        .iter()
        .filter(|r| r.t_us > mark)
        .map(|r| r.path.clone())
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
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("join")
        .expect("exit status");
    assert!(status.success(), "{status:?}");
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
