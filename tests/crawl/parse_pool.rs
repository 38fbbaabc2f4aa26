//! The parse pool from outside: workers that wait for it are seen waiting (stats, metrics), a
//! parser that fails costs one URL and no thread, and the pool's size never changes what a
//! crawl finds.

use std::process::Stdio;
use std::time::Duration;

use crawltop::testweb::{GenOptions, TestWeb};

use crate::util::{Finish, PATIENCE, bin, client, depth_one_page, get_text, read_stderr_until};

/// The URL lines of a `--urls-out` file: (url, state, reason).
fn url_lines(path: &std::path::Path) -> Vec<(String, String, String)> {
    std::fs::read_to_string(path)
        .expect("urls file")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            let text = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            (text("url"), text("state"), text("reason"))
        })
        .collect()
}

/// The value of the metric line that starts with `name` (labels included).
fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|rest| rest.trim().parse().ok())
}

#[tokio::test]
async fn workers_holding_pages_the_full_parse_pool_cannot_take_are_blocked_by_parse() {
    let web = TestWeb::start(GenOptions::new(4, 20).seed(11).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let gate = tmp.path().join("gate");
    let urls = tmp.path().join("urls.jsonl");
    let seeds: Vec<String> = ["site00", "site01", "site02", "site03"]
        .iter()
        .map(|s| web.url(s, "/"))
        .collect();
    let mut child = tokio::process::Command::new(bin())
        .arg("crawl")
        .args(&seeds)
        .args(["--headless", "--delay-ms", "0", "--workers", "8"])
        .args(["--parse-threads", "1", "--control", "127.0.0.1:0"])
        .arg("--urls-out")
        .arg(&urls)
        .env(
            crawltop::engine::PARSE_WAITS_ENV,
            format!("{} {}", seeds[0], gate.display()),
        )
        .stderr(Stdio::piped())
        // A test that fails before the gate opens must not leave the crawl waiting for it.
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut stderr = child.stderr.take().expect("stderr");
    let mark = "control API on http://";
    let seen = read_stderr_until(&mut stderr, |s| {
        s.split(mark).nth(1).is_some_and(|rest| rest.contains('\n'))
    })
    .await;
    let base = format!(
        "http://{}",
        seen.split(mark)
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .expect("the control address is printed")
    );
    let http = client();
    // site00's index holds the one parse thread; one more page fits in the queue, and the
    // other sites' next pages wait for room (one connection a site): the three workers
    // holding them wait for the parse pool.
    let stats = tokio::time::timeout(PATIENCE, async {
        loop {
            let stats: serde_json::Value =
                serde_json::from_str(&get_text(&http, &format!("{base}/stats")).await)
                    .expect("stats json");
            if stats["workers"]["blocked_by"]["parse"] == 3 {
                return stats;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("workers wait for the parse pool");
    assert_eq!(stats["workers"]["busy_by"]["parsing"], 1, "{stats}");
    assert_eq!(stats["scheduler"]["thinker"]["queued"], 3, "{stats}");
    assert_eq!(stats["scheduler"]["thinker"]["assigned"], 1, "{stats}");
    let metrics = get_text(&http, &format!("{base}/metrics")).await;
    assert_eq!(
        metric(&metrics, "crawltop_workers_blocked_by{reason=\"parse\"}"),
        Some(3.0),
        "{metrics}"
    );

    std::fs::write(&gate, b"open").expect("open the gate");
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("the crawl ends once the parse goes on")
        .expect("status");
    assert!(status.success());
    let lines = url_lines(&urls);
    assert!(lines.len() > 20, "{lines:?}");
    assert!(
        lines.iter().all(|(_, state, _)| state != "parse_error"),
        "{lines:?}"
    );
}

#[tokio::test]
async fn a_parser_panic_ends_its_url_with_the_reason_and_the_pool_goes_on() {
    let web = TestWeb::start(GenOptions::new(1, 40).seed(12).crawl_delay_s(0.01))
        .await
        .expect("web");
    let victim = depth_one_page(&web);
    let tmp = tempfile::tempdir().expect("tempdir");
    let urls = tmp.path().join("urls.jsonl");
    let output = tokio::process::Command::new(bin())
        .args(["crawl", &web.url("site00", "/"), "--headless"])
        .args(["--delay-ms", "0", "--parse-threads", "1", "--urls-out"])
        .arg(&urls)
        .env(
            crawltop::engine::PARSE_PANICS_ENV,
            web.url("site00", &victim),
        )
        .finish()
        .await
        .expect("crawl");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines = url_lines(&urls);
    let victim_url = web.url("site00", &victim);
    let (_, state, reason) = lines
        .iter()
        .find(|(u, _, _)| *u == victim_url)
        .expect("the page is listed");
    assert_eq!(state, "parse_error");
    assert_eq!(reason, "parser failed: injected parser panic");
    // The one pool thread took every page after it: each fetched page but the victim parsed.
    let log = web.log().records();
    let victim_at = log
        .iter()
        .position(|r| r.path == victim)
        .expect("the victim was fetched");
    assert!(
        log[victim_at + 1..]
            .iter()
            .any(|r| r.path.ends_with(".html")),
        "pages were fetched after the victim"
    );
    for (url, state, _) in &lines {
        assert!(
            *url == victim_url || !url.ends_with(".html") || state != "fetched",
            "{url} was fetched but never parsed"
        );
    }
    let parsed = lines.iter().filter(|(_, s, _)| s == "parsed").count();
    assert!(parsed > 20, "{parsed} parsed: {lines:?}");
}

#[tokio::test]
async fn one_parse_thread_or_four_find_the_same_pages_and_index_the_same_words() {
    let web = TestWeb::start(GenOptions::new(3, 60).seed(13).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut results = Vec::new();
    for threads in ["1", "4"] {
        let out = tmp.path().join(format!("crawl-{threads}"));
        let urls = tmp.path().join(format!("urls-{threads}.jsonl"));
        let stats = tmp.path().join(format!("stats-{threads}.json"));
        let output = tokio::process::Command::new(bin())
            .args(["crawl", &web.url("site00", "/"), "--headless"])
            .args(["--delay-ms", "0", "--workers", "8", "--per-site", "2"])
            .args(["--parse-threads", threads, "--out"])
            .arg(&out)
            .arg("--urls-out")
            .arg(&urls)
            .arg("--stats-out")
            .arg(&stats)
            .finish()
            .await
            .expect("crawl");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut lines = url_lines(&urls);
        lines.sort();
        let stats: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
        let wc = std::process::Command::new(bin())
            .arg("wc")
            .arg(&out)
            .output()
            .expect("wc");
        assert!(
            wc.status.success(),
            "{}",
            String::from_utf8_lossy(&wc.stderr)
        );
        results.push((lines, stats["resources"].clone(), wc.stdout));
    }
    let parsed = results[0]
        .0
        .iter()
        .filter(|(_, s, _)| s == "parsed")
        .count();
    assert!(parsed > 50, "{parsed} parsed");
    assert_eq!(results[0].0, results[1].0, "the same URLs end the same way");
    assert_eq!(results[0].1, results[1].1, "the same counts");
    assert_eq!(
        String::from_utf8_lossy(&results[0].2),
        String::from_utf8_lossy(&results[1].2),
        "the same index"
    );
}
