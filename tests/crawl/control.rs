//! The control rooms of a running `crawltop crawl`, from outside: the command port's lines and
//! `crawltop ctl`, judged at the test web's request log, in the stats file and against the
//! search verbs on the same folder.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use crawltop::testweb::manifest::ContentKind;
use crawltop::testweb::{GenOptions, TestWeb};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;

use crate::util::{PATIENCE, bin, read_stderr_until};

/// A client of the command port's line protocol.
struct Port {
    stream: BufReader<TcpStream>,
}

impl Port {
    async fn connect(addr: SocketAddr) -> Port {
        let stream = TcpStream::connect(addr).await.expect("connect");
        Port {
            stream: BufReader::new(stream),
        }
    }

    async fn line(&mut self) -> String {
        let mut line = String::new();
        tokio::time::timeout(PATIENCE, self.stream.read_line(&mut line))
            .await
            .expect("an answer in time")
            .expect("read");
        line.trim_end_matches('\n').to_string()
    }

    async fn ask(&mut self, command: &str) -> String {
        self.stream
            .get_mut()
            .write_all(format!("{command}\n").as_bytes())
            .await
            .expect("write");
        self.line().await
    }

    /// A block's lines, each parsed as JSON, up to its empty line.
    async fn block(&mut self, command: &str) -> Vec<serde_json::Value> {
        let mut line = self.ask(command).await;
        assert!(!line.starts_with("ERR"), "{command}: {line}");
        let mut values = Vec::new();
        while !line.is_empty() {
            values.push(serde_json::from_str(&line).expect("a JSON line"));
            line = self.line().await;
        }
        values
    }

    async fn stats(&mut self) -> serde_json::Value {
        serde_json::from_str(&self.ask("STATS").await).expect("STATS is one JSON line")
    }

    /// Asks for STATS until `done` holds.
    async fn wait_stats(&mut self, done: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        tokio::time::timeout(PATIENCE, async {
            loop {
                let stats = self.stats().await;
                if done(&stats) {
                    return stats;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("the stats reach the condition")
    }
}

/// The addresses printed after each of `marks` on the crawl's stderr.
async fn printed_addrs<const N: usize>(
    stderr: &mut tokio::process::ChildStderr,
    marks: [&str; N],
) -> [SocketAddr; N] {
    let seen = read_stderr_until(stderr, |s| {
        marks
            .iter()
            .all(|mark| s.split(mark).nth(1).is_some_and(|rest| rest.contains('\n')))
    })
    .await;
    marks.map(|mark| {
        seen.split(mark)
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address after {mark:?} in {seen}"))
    })
}

/// Waits until `path` exists and parses as JSON.
async fn stats_file(path: &std::path::Path) -> serde_json::Value {
    tokio::time::timeout(PATIENCE, async {
        loop {
            if let Some(json) = std::fs::read_to_string(path)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
            {
                return json;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the stats file appears")
}

fn port_commands(stats: &serde_json::Value) -> Vec<String> {
    stats["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .filter(|c| c["source"] == "port")
        .map(|c| c["command"].as_str().expect("command").to_string())
        .collect()
}

#[tokio::test]
async fn the_command_port_pauses_delays_exports_and_shuts_down_the_crawl() {
    let web = TestWeb::start(GenOptions::new(2, 300).crawl_delay_s(0.01))
        .await
        .expect("web");
    let log = web.log();
    let tmp = tempfile::tempdir().expect("tempdir");
    let stats = tmp.path().join("stats.json");
    let mut child = tokio::process::Command::new(bin())
        .args(["crawl", &web.url("site00", "/"), &web.url("site01", "/")])
        .args(["--delay-ms", "20", "--headless", "--stats-out"])
        .arg(&stats)
        .args(["--command-port", "127.0.0.1:0", "--control-token", "s3cret"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stderr = child.stderr.take().expect("stderr");
    let [addr] = printed_addrs(&mut stderr, ["command port on "]).await;
    let mut port = Port::connect(addr).await;
    assert_eq!(port.ask("AUTH s3cret").await, "OK auth");
    tokio::time::timeout(PATIENCE, log.wait_until(|r| r.len() >= 10))
        .await
        .expect("crawling");

    // PAUSE: once in-flight requests are done, nothing more arrives at the server.
    assert_eq!(port.ask("PAUSE").await, "OK pause");
    port.wait_stats(|s| s["state"] == "paused" && s["scheduler"]["assigned"] == 0)
        .await;
    tokio::time::timeout(
        PATIENCE,
        log.wait_until(|r| r.len() as u64 == log.arrivals()),
    )
    .await
    .expect("in-flight requests finish");
    let mark = log.now_us();
    tokio::time::sleep(Duration::from_millis(400)).await; // an observation window
    let late = log.records_after(mark);
    assert!(late.is_empty(), "requests while paused: {late:?}");

    // RESUME and DELAY 300: later requests to one site are at least 300 ms apart.
    assert_eq!(port.ask("RESUME").await, "OK resume");
    assert_eq!(port.ask("DELAY 300").await, "OK delay 300 ms");
    port.wait_stats(|s| s["state"] == "running" && s["politeness"]["delay_ms"] == 300)
        .await;
    let set_at = log.now_us();
    tokio::time::timeout(
        PATIENCE,
        log.wait_until(|r| r.iter().filter(|r| r.t_us > set_at).count() >= 6),
    )
    .await
    .expect("crawling again");
    let mut pairs = 0;
    for site in ["site00", "site01"] {
        for gap in log.gaps_after(site, set_at) {
            assert!(gap >= 300_000, "{site}: {gap} us apart after DELAY 300");
            pairs += 1;
        }
    }
    assert!(pairs >= 3, "only {pairs} pairs observed");

    // EXPORT: the stats file is written now, while the crawl runs.
    assert!(!stats.exists());
    assert_eq!(port.ask("EXPORT").await, "OK export");
    let exported = stats_file(&stats).await;
    assert_eq!(exported["state"], "running");
    assert_eq!(
        port_commands(&exported),
        ["pause", "resume", "delay 300 ms", "export"]
    );

    // SHUTDOWN: the crawl stops, exits 0, and the stats say who stopped it.
    assert_eq!(port.ask("SHUTDOWN").await, "OK stop");
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("the crawl ends after SHUTDOWN")
        .expect("status");
    assert!(status.success());
    let last = stats_file(&stats).await;
    assert_eq!(last["state"], "finished");
    assert_eq!(
        port_commands(&last),
        ["pause", "resume", "delay 300 ms", "export", "stop"]
    );
}

fn verb_json(args: &[&str]) -> serde_json::Value {
    let o = std::process::Command::new(bin())
        .args(args)
        .arg("--json")
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("json")
}

#[tokio::test]
async fn queries_on_the_command_port_match_the_search_verbs_and_ctl_exports() {
    let web = TestWeb::start(GenOptions::new(1, 60).seed(5))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("crawl");
    let out_s = out.to_str().expect("utf8");
    let stats = tmp.path().join("stats.json");
    let mut child = tokio::process::Command::new(bin())
        .args(["crawl", &web.url("site00", "/"), "--headless"])
        .args([
            "--delay-ms",
            "100",
            "--checkpoint-ms",
            "100",
            "--out",
            out_s,
        ])
        .args(["--command-port", "127.0.0.1:0", "--control", "127.0.0.1:0"])
        .arg("--stats-out")
        .arg(&stats)
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut stderr = child.stderr.take().expect("stderr");
    let [control, addr] =
        printed_addrs(&mut stderr, ["control API on http://", "command port on "]).await;
    let mut port = Port::connect(addr).await;
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= 15))
        .await
        .expect("crawling");

    // Paused with everything committed, and checkpoints (index commits) after that.
    assert_eq!(port.ask("PAUSE").await, "OK pause");
    let idle = port
        .wait_stats(|s| {
            s["state"] == "paused"
                && s["scheduler"]["assigned"] == 0
                && s["commit"]["in_flight"] == 0
                && s["commit"]["waiting"] == 0
        })
        .await;
    let k = idle["commit"]["checkpoints"].as_u64().expect("checkpoints");
    port.wait_stats(|s| s["commit"]["checkpoints"].as_u64() >= Some(k + 2))
        .await;

    // The comparison counts only over a window in which the index held still: the page count
    // (it only grows while crawling) is the same before and after both sides answered.
    let urls = |v: &[serde_json::Value]| -> Vec<String> {
        v.iter()
            .map(|h| h["url"].as_str().expect("url").to_string())
            .collect()
    };
    let (hits, want, max, max_want, min, min_want, wc, wc_want) =
        tokio::time::timeout(PATIENCE, async {
            loop {
                let before = port.block("WORDCOUNT").await;
                let hits = port.block("SEARCH rabbit").await;
                let want = verb_json(&["search", out_s, "rabbit", "--limit", "20"]);
                let max = port.block("maxcount rabbit").await;
                let max_want = verb_json(&["maxcount", out_s, "rabbit"]);
                let min = port.block("MINCOUNT rabbit").await;
                let min_want = verb_json(&["mincount", out_s, "rabbit"]);
                let wc = port.block("WORDCOUNT").await;
                let wc_want = verb_json(&["wc", out_s]);
                if port.block("WORDCOUNT").await == before && wc == before {
                    return (hits, want, max, max_want, min, min_want, wc, wc_want);
                }
            }
        })
        .await
        .expect("the index holds still while paused");
    assert_eq!(urls(&hits), urls(want.as_array().expect("hits")));
    assert!(!hits.is_empty());
    assert_eq!(max, std::slice::from_ref(&max_want));
    assert_ne!(max[0], serde_json::Value::Null);
    assert_eq!(min, std::slice::from_ref(&min_want));
    assert_eq!(wc, std::slice::from_ref(&wc_want));
    // Every HTML page the server answered before the pause (and that does not say noindex) was
    // committed and indexed: the count is the server's, not the crawl's own.
    let site = &web.manifest().sites[0];
    let html: std::collections::BTreeSet<&str> = site
        .pages
        .iter()
        .filter(|p| p.content == ContentKind::Html && !site.noindex.contains(&p.path))
        .map(|p| p.path.as_str())
        .collect();
    let answered = web
        .log()
        .records()
        .iter()
        .filter(|r| r.status == 200 && html.contains(r.path.as_str()))
        .count() as u64;
    assert!(answered > 0);
    assert_eq!(wc[0]["pages"].as_u64(), Some(answered), "{wc:?}");
    // `crawltop ctl ADDR search|maxcount|mincount|wc`: the same answers over the HTTP API
    // (still paused, the index still holding still).
    let ctl = |words: &[&str]| -> serde_json::Value {
        let o = std::process::Command::new(bin())
            .args(["ctl", &control.to_string()])
            .args(words)
            .output()
            .expect("runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).expect("json")
    };
    let ctl_hits = ctl(&["search", "rabbit", "--limit", "20"]);
    assert_eq!(
        urls(ctl_hits.as_array().expect("hits")),
        urls(want.as_array().expect("hits"))
    );
    assert_eq!(ctl(&["maxcount", "rabbit"]), max_want);
    assert_eq!(ctl(&["mincount", "rabbit"]), min_want);
    assert_eq!(ctl(&["wc"]), wc_want);
    // Several words are one query; a word that starts with - after the flags' end.
    let two = ctl(&["search", "--", "white", "rabbit", "-rabbit"]);
    let two_want = verb_json(&["search", "--limit", "20", out_s, "white rabbit -rabbit"]);
    assert_eq!(
        urls(two.as_array().expect("hits")),
        urls(two_want.as_array().expect("hits"))
    );
    assert_eq!(wc_want, ctl(&["wc"]), "the index held still");

    let none = port.block("MAXCOUNT zzyzxqq").await;
    assert_eq!(none, [serde_json::Value::Null]);
    let bad = port.ask("SEARCH \"unbalanced").await;
    assert!(bad.starts_with("ERR "), "{bad}");

    // `crawltop ctl ADDR export`: the HTTP API's POST /export writes the stats file now.
    let o = std::process::Command::new(bin())
        .args(["ctl", &control.to_string(), "export"])
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let answer: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(answer, serde_json::json!({"ok": true, "command": "export"}));
    let exported = stats_file(&stats).await;
    assert_eq!(exported["state"], "paused");
    assert_eq!(exported["commands"][1]["command"], "export");
    assert_eq!(exported["commands"][1]["source"], "api");

    assert_eq!(port.ask("SHUTDOWN").await, "OK stop");
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("the crawl ends")
        .expect("status");
    assert!(status.success());
}

#[test]
fn a_control_token_needs_somewhere_to_be_used() {
    let o = std::process::Command::new(bin())
        .args(["crawl", "http://127.0.0.1:9/", "--control-token", "s3cret"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--control-token needs --control or --command-port"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Off loopback without a token, the command port refuses before anything is bound.
    let o = std::process::Command::new(bin())
        .args([
            "crawl",
            "http://127.0.0.1:9/",
            "--headless",
            "--command-port",
            "0.0.0.0:0",
        ])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("the command port on 0.0.0.0:0 would listen beyond loopback"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A control token from the environment (`CRAWLTOP_CONTROL_TOKEN`), where `ps` cannot show it
/// as it shows a flag: the crawl's API asks for it, `ctl` sends it from its own environment,
/// and a crawl without a listener is not refused for a token exported for every crawl.
#[tokio::test]
async fn a_control_token_from_the_environment_guards_the_api_and_ctl_sends_it() {
    const TOKEN_ENV: &str = "CRAWLTOP_CONTROL_TOKEN";
    let web = TestWeb::start(GenOptions::new(1, 300).crawl_delay_s(0.01))
        .await
        .expect("web");
    let mut child = tokio::process::Command::new(bin())
        .args([
            "crawl",
            &web.url("site00", "/"),
            "--delay-ms",
            "50",
            "--headless",
        ])
        .args(["--control", "127.0.0.1:0"])
        .env(TOKEN_ENV, "s3cret")
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stderr = child.stderr.take().expect("stderr");
    let [addr] = printed_addrs(&mut stderr, ["control API on http://"]).await;
    let ctl = |token: Option<&str>, command: &str| {
        let mut ctl = tokio::process::Command::new(bin());
        ctl.args(["ctl", &addr.to_string(), command])
            .env_remove(TOKEN_ENV);
        if let Some(token) = token {
            ctl.env(TOKEN_ENV, token);
        }
        ctl.output()
    };
    for token in [None, Some("s3cre"), Some("")] {
        let o = ctl(token, "stats").await.expect("ctl runs");
        assert_eq!(o.status.code(), Some(1), "token {token:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("the control API answered 401"),
            "token {token:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = ctl(Some("s3cret"), "stats").await.expect("ctl runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stats: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stats are JSON");
    assert_eq!(stats["state"], "running");
    // A flag wins over the environment.
    let mut flagged = tokio::process::Command::new(bin());
    let o = flagged
        .args(["ctl", &addr.to_string(), "stop", "--token", "s3cret"])
        .env(TOKEN_ENV, "wrong")
        .output()
        .await
        .expect("ctl runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("the crawl ends after stop")
        .expect("waits");
    assert!(status.success());

    let o = tokio::process::Command::new(bin())
        .args([
            "crawl",
            &web.url("site00", "/"),
            "--depth",
            "0",
            "--headless",
        ])
        .env(TOKEN_ENV, "s3cret")
        .output()
        .await
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        web.log()
            .records()
            .iter()
            .filter(|r| r.path == "/" && r.status == 200)
            .count(),
        2,
        "the second crawl fetched its seed"
    );
}

/// A page store that failed cannot write again in this run: a resume must not send the crawl
/// on fetching pages nobody can keep (the audit saw every page of a site fetched and dropped,
/// then fetched again by the next run). The crawl stays paused and says why, on stderr too: a
/// headless crawl has no log pane.
#[tokio::test]
async fn after_a_store_failure_a_resume_keeps_the_crawl_paused_and_stderr_says_why() {
    let web = TestWeb::start(GenOptions::new(1, 60).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let stats = tmp.path().join("stats.json");
    let mut child = crate::util::crawl_with_fault(
        &web,
        tmp.path(),
        &stats,
        (crawltop::store::committer::FAIL_AFTER_ENV, "5"),
        &[],
    );
    let mut stderr = child.stderr.take().expect("stderr");
    let [addr] = printed_addrs(&mut stderr, ["command port on "]).await;
    let mut port = Port::connect(addr).await;
    // The failure's warning reaches stderr, with the reason and what to do.
    let seen = read_stderr_until(&mut stderr, |s| s.contains("so the crawl is paused")).await;
    assert!(
        seen.contains("crawltop: warning: the page store failed, so the crawl is paused"),
        "{seen}"
    );
    assert!(seen.contains("failing on purpose"), "{seen}");
    assert!(seen.contains("run the same command again"), "{seen}");
    port.wait_stats(|s| s["state"] == "paused" && s["scheduler"]["assigned"] == 0)
        .await;
    let before = web.log().len();

    assert_eq!(port.ask("RESUME").await, "OK resume");
    let seen = read_stderr_until(&mut stderr, |s| {
        s.contains("stays paused") || s.contains(" running ")
    })
    .await;
    assert!(seen.contains("the crawl stays paused"), "{seen}");
    // Asked after the resume was applied (the warning), answered from a later snapshot.
    let after = port.stats().await;
    assert_eq!(after["state"], "paused", "{after}");
    assert_eq!(
        web.log().len(),
        before,
        "nothing is fetched after the failure: {:?}",
        &web.log().records()[before as usize..]
    );
    crate::util::sigterm(&child);
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("exits")
        .expect("status");
    assert_eq!(status.code(), Some(1), "a store failure is not a success");
    assert_eq!(web.log().len(), before);
    // The last progress line says the crawl was stopped, not that it finished.
    let mut rest = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut rest)
        .await
        .expect("stderr");
    let last = rest.lines().rfind(|l| l.starts_with('['));
    assert!(last.is_some_and(|l| l.contains("] stopped ")), "{rest}");
}

/// Audit 28 #8: a delay set while the crawl ran (`ctl delay`, a site owner's complaint
/// answered) survives a stop and a resume given the same `--delay-ms`: the resumed run asked
/// at the flag's pace again (302 ms gaps after a 3,000 ms throttle). Another `--delay-ms` on
/// the resume wins.
#[tokio::test]
async fn a_throttle_set_while_running_is_kept_by_a_resume() {
    const THROTTLE_MS: u64 = 900;
    let web = TestWeb::start(GenOptions::new(1, 60).crawl_delay_s(0.0))
        .await
        .expect("web");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("crawl");
    let command = |delay: &str| {
        let mut cmd = tokio::process::Command::new(bin());
        cmd.args(["crawl", &web.url("site00", "/"), "--headless"])
            .args(["--delay-ms", delay, "--checkpoint-ms", "100"])
            .args(["--control", "127.0.0.1:0", "--out"])
            .arg(&out)
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    };
    let mut first = command("40").spawn().expect("spawn");
    let mut stderr = first.stderr.take().expect("stderr");
    let [addr] = printed_addrs(&mut stderr, ["control API on http://"]).await;
    let ctl = |args: &[&str]| {
        tokio::process::Command::new(bin())
            .args(["ctl", &addr.to_string()])
            .args(args)
            .output()
    };
    let o = ctl(&["delay", &THROTTLE_MS.to_string()])
        .await
        .expect("ctl");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = ctl(&["stop"]).await.expect("ctl");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let status = tokio::time::timeout(PATIENCE, first.wait())
        .await
        .expect("the crawl stops")
        .expect("waits");
    assert!(status.success());

    // The same command again: three requests at the throttle's pace.
    let seen = web.log().records().len();
    let mut second = command("40").spawn().expect("spawn");
    let mut stderr = second.stderr.take().expect("stderr");
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= seen + 3))
        .await
        .expect("the resumed crawl runs");
    second.start_kill().expect("SIGKILL");
    second.wait().await.expect("reaped");
    let mut records = web.log().site_records("site00");
    records.sort_by_key(|r| r.t_us);
    for pair in records[seen.saturating_sub(1)..].windows(2) {
        let gap_us = pair[1].t_us.saturating_sub(pair[0].done_us);
        assert!(
            gap_us >= THROTTLE_MS * 1_000,
            "{} came {} ms after {}",
            pair[1].path,
            gap_us / 1_000,
            pair[0].path
        );
    }
    let said = read_stderr_until(&mut stderr, |s| s.contains("is kept")).await;
    assert!(
        said.contains("the delay set while the crawl ran, 900 ms, is kept"),
        "{said}"
    );

    // Another --delay-ms wins: back to a quick pace.
    let seen = web.log().records().len();
    let mut third = command("30").spawn().expect("spawn");
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= seen + 4))
        .await
        .expect("the crawl runs");
    third.start_kill().expect("SIGKILL");
    third.wait().await.expect("reaped");
    let mut records = web.log().site_records("site00");
    records.sort_by_key(|r| r.t_us);
    let quick = records[seen..]
        .windows(2)
        .filter(|pair| pair[1].t_us.saturating_sub(pair[0].done_us) < THROTTLE_MS * 1_000)
        .count();
    assert!(quick > 0, "the flag's delay applies");
}

/// `a / b` is `want`, to the last few units of a double (the file's numbers went through JSON).
fn assert_ratio(a: f64, b: f64, want: f64, what: &str) {
    assert!(b > 0.0, "{what}: over {b} s");
    assert!(
        (a / b - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{what}: {a} / {b} = {}, the file says {want}",
        a / b
    );
}

fn number(v: &serde_json::Value, path: &[&str]) -> f64 {
    let mut at = v;
    for key in path {
        at = &at[*key];
    }
    at.as_f64()
        .unwrap_or_else(|| panic!("{} is no number: {at}", path.join(".")))
}

/// The stats file of a crawl that ended paused gives the crawl's own average rates, as the
/// dashboard's last screen and the headless last line do, not the last seconds' (0 p/s for a
/// crawl of 1,605 pages, audit 33 F4); a resumed crawl's file gives every run's seconds beside
/// this run's, so that its counts (the whole crawl's) divide into its real rate.
#[tokio::test]
async fn the_stats_file_gives_the_crawls_own_averages_over_every_run() {
    let web = TestWeb::start(GenOptions::new(1, 300).crawl_delay_s(0.01))
        .await
        .expect("web");
    let log = web.log();
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("crawl");
    let stats = tmp.path().join("stats.json");
    let run = || {
        tokio::process::Command::new(bin())
            .args(["crawl", &web.url("site00", "/"), "--headless"])
            .args(["--delay-ms", "20", "--out"])
            .arg(&out)
            .arg("--stats-out")
            .arg(&stats)
            .args(["--command-port", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn")
    };
    // Ends paused: SHUTDOWN once nothing is in flight.
    let mut child = run();
    let mut stderr = child.stderr.take().expect("stderr");
    let [addr] = printed_addrs(&mut stderr, ["command port on "]).await;
    let mut port = Port::connect(addr).await;
    tokio::time::timeout(PATIENCE, log.wait_until(|r| r.len() >= 15))
        .await
        .expect("crawling");
    assert_eq!(port.ask("PAUSE").await, "OK pause");
    port.wait_stats(|s| s["state"] == "paused" && s["scheduler"]["assigned"] == 0)
        .await;
    assert_eq!(port.ask("SHUTDOWN").await, "OK stop");
    let said = ended(child, stderr).await;
    let first: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    assert_eq!(first["commit"]["run"], 1);
    let fetched = number(&first, &["resources", "fetched"]);
    let secs = number(&first, &["crawl_elapsed_s"]);
    assert!(fetched >= 10.0, "{first}");
    assert_ratio(secs, number(&first, &["elapsed_s"]), 1.0, "one run");
    assert_ratio(
        secs,
        number(&first, &["totals", "crawl_elapsed_s"]),
        1.0,
        "totals",
    );
    let avg = number(&first, &["averages", "pages_per_s"]);
    assert!(avg > 0.0);
    assert_ratio(fetched, secs, avg, "pages");
    let responses = number(&first, &["totals", "requests"]);
    assert_ratio(
        responses,
        secs,
        number(&first, &["averages", "responses_per_s"]),
        "responses",
    );
    assert_ratio(
        number(&first, &["http", "bytes"]),
        secs,
        number(&first, &["averages", "bytes_per_s"]),
        "bytes",
    );
    // The headless last line says the same averages.
    let last = said
        .lines()
        .rfind(|l| l.contains("stopped  pages"))
        .unwrap_or_else(|| panic!("no last line in {said}"));
    assert!(
        last.contains(&format!("pages {fetched} ({avg:.1}/s)")),
        "{last}: the file says {avg}"
    );

    // Resumed, then stopped: the counts are the whole crawl's, and so are the seconds they are
    // divided by; this run's own seconds stay in `elapsed_s`.
    let before = log.records().len();
    let mut child = run();
    let mut stderr = child.stderr.take().expect("stderr");
    let [addr] = printed_addrs(&mut stderr, ["command port on "]).await;
    let mut port = Port::connect(addr).await;
    tokio::time::timeout(PATIENCE, log.wait_until(|r| r.len() >= before + 15))
        .await
        .expect("crawling again");
    assert_eq!(port.ask("SHUTDOWN").await, "OK stop");
    let said = ended(child, stderr).await;
    let second: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    assert_eq!(second["commit"]["run"], 2);
    let all = number(&second, &["crawl_elapsed_s"]);
    let this_run = number(&second, &["elapsed_s"]);
    assert_ratio(
        this_run,
        number(&second, &["totals", "elapsed_s"]),
        1.0,
        "this run",
    );
    assert_ratio(
        all,
        number(&second, &["totals", "crawl_elapsed_s"]),
        1.0,
        "every run",
    );
    // The first run's seconds as its last checkpoint had them: written just before its final
    // snapshot, so at most the first file's figure and not far below it.
    let carried = all - this_run;
    assert!(
        carried <= secs + 1e-6 && carried > secs - 5.0 && carried > 0.0,
        "carried {carried} s over the checkpoint; the first run took {secs} s"
    );
    let pages = number(&second, &["totals", "pages_fetched"]);
    assert!(pages > fetched, "{pages} after {fetched}");
    // The README's recipe, pages / seconds, gives the crawl's rate.
    assert_ratio(
        pages,
        all,
        number(&second, &["averages", "pages_per_s"]),
        "pages over both runs",
    );
    assert!(
        said.contains(&format!("({all:.1} s over 2 runs)")),
        "{said}"
    );
}

/// Waits for a crawl that was told to stop, and returns what it said on stderr after the
/// addresses.
async fn ended(
    mut child: tokio::process::Child,
    mut stderr: tokio::process::ChildStderr,
) -> String {
    use tokio::io::AsyncReadExt as _;
    let mut said = String::new();
    tokio::time::timeout(PATIENCE, stderr.read_to_string(&mut said))
        .await
        .expect("stderr ends")
        .expect("read");
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("the crawl ends")
        .expect("status");
    assert!(status.success(), "{said}");
    said
}

/// A crawl with no file to export (no `--stats-out`, `--sites-out`, `--urls-out`, headless)
/// says so to `ctl export` (exit 1) and to `EXPORT` (`ERR`), where both answered ok and wrote
/// nothing (audit 33 F7); nothing appears in its folder.
#[tokio::test]
async fn an_export_with_nothing_to_write_is_refused_by_both_rooms() {
    let web = TestWeb::start(GenOptions::new(1, 300).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut child = tokio::process::Command::new(bin())
        .args(["crawl", &web.url("site00", "/"), "--headless"])
        .args(["--delay-ms", "50"])
        .args(["--command-port", "127.0.0.1:0", "--control", "127.0.0.1:0"])
        .current_dir(tmp.path())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut stderr = child.stderr.take().expect("stderr");
    let [control, addr] =
        printed_addrs(&mut stderr, ["control API on http://", "command port on "]).await;
    let o = std::process::Command::new(bin())
        .args(["ctl", &control.to_string(), "export"])
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(1));
    let answer = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        answer.contains("nothing to export")
            && answer.contains("--stats-out, --sites-out or --urls-out"),
        "{answer}"
    );
    let mut port = Port::connect(addr).await;
    let export = port.ask("EXPORT").await;
    assert!(
        export.starts_with("ERR nothing to export") && export.contains("--urls-out"),
        "{export}"
    );
    let stats = port.stats().await;
    assert!(
        stats["commands"]
            .as_array()
            .is_some_and(|c| c.iter().all(|c| c["command"] != "export")),
        "{stats}"
    );
    assert_eq!(port.ask("SHUTDOWN").await, "OK stop");
    ended(child, stderr).await;
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
