//! The page store: what a crawl with `--out` keeps, read back by an independent WARC reader
//! and compared with what the server serves.

use std::process::{Command, Stdio};

use crawltop::store::committer::StoreKind;
use crawltop::store::mirror::mirror_path;
use crawltop::testweb::manifest::SiteKind;
use crawltop::testweb::{GenOptions, TestWeb};

use crate::engine::{config, crawl, seeds};
use crate::util::{
    Finish, PATIENCE, bin, client, crawl_with_fault, depth_one_page, read_warc,
    stats_after_a_failure_pause,
};

#[tokio::test]
async fn a_crawl_keeps_every_response_once_in_warc_and_mirror() {
    let web = TestWeb::start(GenOptions::new(2, 15).seed(9).crawl_delay_s(0.01))
        .await
        .expect("web");
    let out = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(seeds(&web, SiteKind::Normal));
    cfg.delay_ms = 0;
    cfg.out = Some(out.path().to_path_buf());
    cfg.store = StoreKind::Both;
    let crawled = crawl(cfg).await;
    let commit = &crawled.summary.snapshot.commit;
    let page_requests: Vec<_> = web
        .log()
        .records()
        .into_iter()
        .filter(|r| r.path != "/robots.txt")
        .collect();
    assert_eq!(commit.store, "both");
    assert_eq!(commit.error, None);
    assert_eq!((commit.waiting, commit.in_flight), (0, 0));
    assert_eq!(
        commit.next_seq,
        page_requests.len() as u64,
        "every fetch decided"
    );
    assert_eq!(
        commit.committed,
        page_requests.len() as u64,
        "every response stored"
    );

    let warc = read_warc(&out.path().join("warc"));
    // Where each answer came from, as archives keep it.
    for (url, ip) in &warc.ips {
        assert_eq!(ip.as_deref(), Some("127.0.0.1"), "{url}");
    }
    let (bodies, counts) = (warc.bodies, warc.counts);
    assert!(
        counts.values().all(|n| *n == 1),
        "a response stored twice: {counts:?}"
    );
    assert_eq!(bodies.len(), page_requests.len());
    let http = client();
    for r in &page_requests {
        let url = web.url(&r.site, &r.path);
        let stored = bodies
            .get(&url)
            .unwrap_or_else(|| panic!("{url} not in the WARC"));
        assert_eq!(
            stored.len() as u64,
            r.bytes,
            "{url}: the server sent another length"
        );
        let served = crate::util::served_body(&http, &url).await;
        assert_eq!(stored.as_slice(), &served[..], "{url}");
        // 2xx pages are mirrored too, with the same bytes.
        if (200..300).contains(&r.status) {
            let rel = mirror_path(&url::Url::parse(&url).expect("url")).expect("mirrorable");
            let file = std::fs::read(out.path().join("pages").join(rel)).expect("mirrored");
            assert_eq!(file, *stored, "{url}");
        }
    }
}

#[tokio::test]
async fn a_second_crawltop_on_the_same_folder_refuses_naming_the_first() {
    let web = TestWeb::start(GenOptions::new(1, 300)).await.expect("web");
    let out = tempfile::tempdir().expect("tempdir");
    let url = web.url("site00", "/");
    let mut first = tokio::process::Command::new(bin())
        .args(["crawl", &url, "--delay-ms", "100", "--headless", "--out"])
        .arg(out.path())
        .stderr(Stdio::null())
        // A test that fails early does not leave it crawling.
        .kill_on_drop(true)
        .spawn()
        .expect("first");
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= 2))
        .await
        .expect("the first crawl runs");
    // Async and bounded (`finish`): were it not refused, this crawl would need the in-process
    // server, which a blocking wait here would starve, and could run forever.
    let second = tokio::process::Command::new(bin())
        .args(["crawl", &url, "--headless", "--out"])
        .arg(out.path())
        .finish()
        .await
        .expect("second");
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{err}");
    let pid = first.id().expect("pid").to_string();
    assert!(
        err.contains("in use by another crawltop") && err.contains(&pid),
        "{err}"
    );
    first.kill().await.expect("kill");
}

#[tokio::test]
async fn a_store_write_error_pauses_the_crawl_and_keeps_what_was_committed() {
    let web = TestWeb::start(GenOptions::new(1, 60).crawl_delay_s(0.01))
        .await
        .expect("web");
    let out = tempfile::tempdir().expect("tempdir");
    let stats = out.path().join("stats.json");
    let child = crawl_with_fault(
        &web,
        out.path(),
        &stats,
        (crawltop::store::committer::FAIL_AFTER_ENV, "5"),
        &[],
    );
    // The progress line says "paused" once the failure has reached the committer.
    let json = stats_after_a_failure_pause(child, &stats).await;
    let error = json["commit"]["error"]
        .as_str()
        .expect("the error is in the stats");
    assert!(error.contains("failing on purpose"), "{error}");
    assert_eq!(json["commit"]["committed"], 5);
    let log = crate::util::log_messages(&json);
    assert!(
        log.iter().any(|m| m.contains("the crawl is paused")),
        "{log:?}"
    );
    // The five committed exchanges are whole and readable.
    let counts = read_warc(&out.path().join("crawl").join("warc")).counts;
    assert_eq!(counts.len(), 5);
}

/// A headless crawl with no control room (no `--control`, no `--command-port`): nobody can act
/// on the pause a failed store causes, and this run cannot write again, so the reporter stops
/// it, saying why: a script sees it end (exit 1), instead of waiting on "paused" for ever.
/// The stats file of a crawl the headless reporter stopped on a failure `what`: not completed,
/// the stop's source `headless`.
fn stopped_by_the_reporter(stats: &std::path::Path, what: &str) -> serde_json::Value {
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(stats).expect("stats")).expect("json");
    assert_eq!(json["fault"]["what"], what, "{}", json["fault"]);
    assert_eq!(json["totals"]["completed"], false);
    let commands = json["commands"].as_array().expect("commands");
    assert!(
        commands
            .iter()
            .any(|c| c["command"] == "stop" && c["source"] == "headless"),
        "{commands:?}"
    );
    json
}

#[tokio::test]
async fn an_unattended_crawl_whose_store_failed_stops_and_says_why() {
    let web = TestWeb::start(GenOptions::new(1, 60).crawl_delay_s(0.01))
        .await
        .expect("web");
    let out = tempfile::tempdir().expect("tempdir");
    let stats = out.path().join("stats.json");
    let child = crate::util::fault_command(
        &web,
        out.path(),
        &stats,
        (crawltop::store::committer::FAIL_AFTER_ENV, "5"),
    )
    .spawn()
    .expect("spawn");
    let out_put = tokio::time::timeout(PATIENCE, child.wait_with_output())
        .await
        .expect("it ends by itself")
        .expect("output");
    let err = String::from_utf8_lossy(&out_put.stderr);
    assert_eq!(out_put.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the page store failed, so the crawl is paused"),
        "{err}"
    );
    assert!(
        err.contains("nothing here can resume the crawl (no dashboard, --control or --command-port): stopping it"),
        "{err}"
    );
    let last = err.lines().rfind(|l| l.starts_with('['));
    assert!(last.is_some_and(|l| l.contains("] stopped ")), "{err}");
    let json = stopped_by_the_reporter(&stats, "store");
    assert_eq!(json["commit"]["committed"], 5);
    assert_eq!(
        read_warc(&out.path().join("crawl").join("warc"))
            .counts
            .len(),
        5
    );
}

#[tokio::test]
async fn an_unattended_crawl_whose_spill_file_failed_stops_and_its_resume_loses_nothing() {
    let web = TestWeb::start(GenOptions::new(1, 60).crawl_delay_s(0.01))
        .await
        .expect("web");
    let out = tempfile::tempdir().expect("tempdir");
    let stats = out.path().join("stats.json");
    // Queues of more than one URL wait on disk, and the spill file refuses its first write.
    let run = |fail: bool| {
        let mut cmd = crate::util::fault_command(
            &web,
            out.path(),
            &stats,
            (crawltop::frontier::spill::FAIL_AFTER_ENV, "0"),
        );
        cmd.args(["--queue-memory", "1"]);
        if !fail {
            cmd.env_remove(crawltop::frontier::spill::FAIL_AFTER_ENV);
        }
        cmd
    };
    let failed = tokio::time::timeout(PATIENCE, run(true).output())
        .await
        .expect("it ends by itself")
        .expect("output");
    let err = String::from_utf8_lossy(&failed.stderr);
    assert_eq!(failed.status.code(), Some(1), "{err}");
    for says in [
        "the frontier's spill file failed, so the crawl is paused",
        "nothing here can resume the crawl (no dashboard, --control or --command-port): stopping it",
        "crawltop: error: the frontier's spill file failed:",
    ] {
        assert!(err.contains(says), "{says:?} in {err}");
    }
    stopped_by_the_reporter(&stats, "spill");
    let before = web.log().records().len();

    // The same command, the disk fixed: the crawl resumes from its checkpoint and ends with
    // every page fetched and stored once.
    let resumed = tokio::time::timeout(PATIENCE, run(false).output())
        .await
        .expect("it ends")
        .expect("output");
    let err = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{err}");
    let records = web.log().records();
    assert!(records.len() > before, "the resume fetched the rest");
    let mut asked = std::collections::BTreeMap::new();
    for r in records.iter().filter(|r| r.path != "/robots.txt") {
        *asked.entry(r.path.clone()).or_insert(0) += 1;
    }
    assert!(asked.len() > 40, "{asked:?}");
    assert!(asked.values().all(|&n| n == 1), "{asked:?}");
    let counts = read_warc(&out.path().join("crawl").join("warc")).counts;
    assert!(counts.values().all(|n| *n == 1), "{counts:?}");
    let pages = counts.keys().filter(|u| !u.ends_with("/robots.txt"));
    assert_eq!(pages.count(), asked.len(), "every answer stored");
}

#[tokio::test]
async fn a_crawl_whose_queues_wait_on_disk_stores_what_one_in_memory_stores() {
    let web = TestWeb::start(GenOptions::new(2, 40).seed(4).crawl_delay_s(0.01))
        .await
        .expect("web");
    let mut stored = Vec::new();
    for queue_memory in [4096, 1] {
        let out = tempfile::tempdir().expect("tempdir");
        let mut cfg = config(seeds(&web, SiteKind::Normal));
        cfg.delay_ms = 0;
        cfg.out = Some(out.path().to_path_buf());
        cfg.queue_memory = queue_memory;
        let crawled = crawl(cfg).await;
        let snap = &crawled.summary.snapshot;
        assert_eq!(snap.commit.error, None);
        assert_eq!(
            snap.scheduler.spilled_bytes > 0,
            queue_memory == 1,
            "queues of more than one URL wait on disk, only then"
        );
        assert!(
            !out.path()
                .join(crawltop::frontier::spill::DiskStore::FILE_NAME)
                .exists(),
            "the spill file is scratch, gone after the crawl"
        );
        let counts = read_warc(&out.path().join("warc")).counts;
        assert!(counts.values().all(|n| *n == 1), "{counts:?}");
        stored.push(counts.into_keys().collect::<Vec<_>>());
    }
    assert!(!stored[0].is_empty());
    assert_eq!(stored[0], stored[1]);
}

#[tokio::test]
async fn an_overdue_result_is_dispatched_again_in_its_place_then_given_up() {
    let web = TestWeb::start(GenOptions::new(1, 20).seed(6))
        .await
        .expect("web");
    let hung = depth_one_page(&web);
    let out = tempfile::tempdir().expect("tempdir");
    let stats = out.path().join("stats.json");
    let urls = out.path().join("urls.jsonl");
    let output = tokio::process::Command::new(bin())
        .args([
            "crawl",
            &web.url("site00", "/"),
            "--headless",
            "--delay-ms",
            "0",
            "--timeout-ms",
            "300",
        ])
        .arg("--out")
        .arg(out.path().join("crawl"))
        .arg("--stats-out")
        .arg(&stats)
        .arg("--urls-out")
        .arg(&urls)
        .env(crawltop::engine::HANG_ENV, web.url("site00", &hung))
        .finish()
        .await
        .expect("crawl");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The server saw the page three times: the first dispatch and two reschedules.
    let asked = web
        .log()
        .records()
        .iter()
        .filter(|r| r.path == hung)
        .count();
    assert_eq!(asked, 3);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    assert_eq!(json["commit"]["rescheduled"], 2);
    assert_eq!(
        json["commit"]["waiting"], 0,
        "nothing left behind the hung page"
    );
    let line = std::fs::read_to_string(&urls)
        .expect("urls")
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json line"))
        .find(|v| v["url"] == web.url("site00", &hung))
        .expect("the hung page is listed");
    assert_eq!(line["state"], "fetch_error", "{line}");
    assert!(
        line["reason"]
            .as_str()
            .is_some_and(|r| r.contains("no result after 3 attempts")),
        "{line}"
    );
    // Every other response was stored once; the hung one never came back, so it is not.
    let counts = read_warc(&out.path().join("crawl").join("warc")).counts;
    assert!(counts.values().all(|n| *n == 1), "{counts:?}");
    assert!(!counts.contains_key(&web.url("site00", &hung)));
    let other_pages = web
        .log()
        .records()
        .iter()
        .filter(|r| r.path != "/robots.txt" && r.path != hung)
        .count();
    assert_eq!(counts.len(), other_pages);
}

#[tokio::test]
async fn results_behind_a_hung_fetch_wait_in_a_bounded_window() {
    // Three sites: while site00's page hangs (holding site00's one connection), the others
    // go on, and their results wait behind it.
    let web = TestWeb::start(GenOptions::new(3, 150).seed(8).crawl_delay_s(0.01))
        .await
        .expect("web");
    let hung = depth_one_page(&web);
    let out = tempfile::tempdir().expect("tempdir");
    let (window, workers) = (5, 4);
    let output = tokio::process::Command::new(bin())
        .arg("crawl")
        .args(seeds(&web, SiteKind::Normal))
        .args([
            "--headless",
            "--delay-ms",
            "0",
            "--timeout-ms",
            "300",
            "--workers",
            &workers.to_string(),
            "--commit-window",
            &window.to_string(),
        ])
        .arg("--out")
        .arg(out.path())
        .env(crawltop::engine::HANG_ENV, web.url("site00", &hung))
        .finish()
        .await
        .expect("crawl");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // While the first attempt hangs, the results after it wait in memory: at most the window,
    // plus what was already in flight when it filled, reach the server before the retry.
    let records = web.log().records();
    let hung_url = web.url("site00", &hung);
    let attempts: Vec<usize> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| web.url(&r.site, &r.path) == hung_url)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(attempts.len(), 3, "first dispatch and two reschedules");
    let between = attempts[1] - attempts[0] - 1;
    assert!(
        between <= window + workers,
        "{between} requests reached the server while the head hung"
    );
    // And the crawl went on to its end afterwards: every page but the hung one was stored.
    let counts = read_warc(&out.path().join("warc")).counts;
    let pages = records
        .iter()
        .filter(|r| r.path != "/robots.txt" && web.url(&r.site, &r.path) != hung_url)
        .count();
    assert_eq!(counts.len(), pages);
    assert!(pages > 400, "the crawl stopped early: {pages} pages");
}

/// A crawl folder moved away (or removed) under a running crawl is no longer the crawl's: a
/// second crawl may take the path, and the first would go on writing its index there (an
/// audit saw the two leave an index that no longer opens). The first crawl notices at its
/// next checkpoint (its lock file is not its own), stores nothing more, and stops saying
/// why; the second crawl's index opens.
#[tokio::test]
async fn a_crawl_whose_folder_was_moved_away_stops_and_leaves_the_path_alone() {
    let web = TestWeb::start(GenOptions::new(1, 300).crawl_delay_s(0.0))
        .await
        .expect("web");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("crawl");
    let url = web.url("site00", "/");
    let crawl = || {
        let mut cmd = tokio::process::Command::new(bin());
        cmd.args(["crawl", &url, "--headless", "--delay-ms", "50"])
            .args(["--checkpoint-ms", "100", "--out"])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    };
    let first = crawl().spawn().expect("spawn");
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= 5))
        .await
        .expect("the crawl runs");
    std::fs::rename(&out, dir.path().join("moved")).expect("move the folder away");
    // A second crawl takes the path at once.
    let second = crawl().spawn().expect("spawn");
    let ended = tokio::time::timeout(PATIENCE, first.wait_with_output())
        .await
        .expect("it ends by itself")
        .expect("output");
    let err = String::from_utf8_lossy(&ended.stderr);
    assert_eq!(ended.status.code(), Some(1), "{err}");
    assert!(
        err.contains("was removed or replaced while the crawl ran"),
        "{err}"
    );
    crate::util::sigterm(&second);
    let second = tokio::time::timeout(PATIENCE, second.wait_with_output())
        .await
        .expect("the second crawl stops")
        .expect("output");
    assert!(second.status.success(), "{second:?}");
    // The second crawl's folder is its own: its index opens and answers.
    let wc = Command::new(bin())
        .arg("wc")
        .arg(&out)
        .output()
        .expect("wc");
    assert!(
        wc.status.success(),
        "{}",
        String::from_utf8_lossy(&wc.stderr)
    );
}

/// The mirror writes by path: a mirror crawl whose folder was replaced by another crawl's
/// folder must not write its pages there, even between checkpoints (an audit saw 840 of
/// another crawl's files overwritten in the 4.7 s before a checkpoint noticed).
#[tokio::test]
async fn a_mirror_crawl_writes_nothing_into_a_folder_put_in_its_place() {
    let web = TestWeb::start(GenOptions::new(1, 300).crawl_delay_s(0.0))
        .await
        .expect("web");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("crawl");
    let url = web.url("site00", "/");
    let first = tokio::process::Command::new(bin())
        .args(["crawl", &url, "--headless", "--delay-ms", "30"])
        .args([
            "--store",
            "mirror",
            "--no-index",
            "--checkpoint-ms",
            "60000",
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= 5))
        .await
        .expect("the crawl runs");
    std::fs::rename(&out, dir.path().join("moved")).expect("move the folder away");
    // Another crawl's folder, as far as a path can tell: a lock file and a mirror.
    std::fs::create_dir_all(out.join("pages")).expect("mkdir");
    std::fs::write(out.join(crawltop::store::committer::LOCK_FILE), b"1\n").expect("lock");
    let ended = tokio::time::timeout(PATIENCE, first.wait_with_output())
        .await
        .expect("it ends by itself")
        .expect("output");
    let err = String::from_utf8_lossy(&ended.stderr);
    assert!(
        err.contains("was removed or replaced while the crawl ran"),
        "{err}"
    );
    let written = crate::util::listing(&out.join("pages"));
    assert!(
        written.is_empty(),
        "written into the other folder: {written:?}"
    );
}
