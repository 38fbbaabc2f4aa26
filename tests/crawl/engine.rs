//! The crawl engine against the test web, judged where a site owner would judge it: at the
//! server's request log.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use crawltop::config::CrawlConfig;
use crawltop::engine::{self, Command, Summary};
use crawltop::scope::IgnoreReason;
use crawltop::snapshot::{CommandSource, Ended, RunState, Snapshot};
use crawltop::testweb::manifest::SiteKind;
use crawltop::testweb::{GenOptions, RequestRecord, TestWeb};

use crate::util::{PATIENCE, expected_within};

/// A crawl's outcome: the summary and the urls-out lines, keyed by URL.
pub struct Crawled {
    pub summary: Summary,
    pub urls: BTreeMap<String, serde_json::Value>,
    pub stats: serde_json::Value,
    _dir: tempfile::TempDir,
}

pub fn config(seeds: Vec<String>) -> CrawlConfig {
    CrawlConfig {
        seeds,
        workers: 8,
        delay_ms: 5,
        timeout_ms: 5_000,
        ..CrawlConfig::default()
    }
}

pub fn seeds(web: &TestWeb, kind: SiteKind) -> Vec<String> {
    web.manifest()
        .sites
        .iter()
        .filter(|s| s.kind == kind)
        .map(|s| web.url(&s.name, "/"))
        .collect()
}

pub async fn crawl(mut cfg: CrawlConfig) -> Crawled {
    let dir = tempfile::tempdir().expect("tempdir");
    cfg.stats_out = Some(dir.path().join("stats.json"));
    cfg.urls_out = Some(dir.path().join("urls.jsonl"));
    let handle = engine::spawn(cfg).expect("crawl starts");
    let summary = tokio::time::timeout(Duration::from_secs(120), handle.finished())
        .await
        .expect("the crawl ends by itself")
        .expect("no engine error");
    read_outputs(summary, dir)
}

fn read_outputs(summary: Summary, dir: tempfile::TempDir) -> Crawled {
    let urls = std::fs::read_to_string(dir.path().join("urls.jsonl"))
        .expect("urls-out")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json line");
            (v["url"].as_str().expect("url").to_string(), v)
        })
        .collect();
    let stats = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("stats.json")).expect("stats-out"),
    )
    .expect("stats json");
    Crawled {
        summary,
        urls,
        stats,
        _dir: dir,
    }
}

/// Page requests (not robots.txt) per site and path.
fn requests_by_site(records: &[RequestRecord]) -> BTreeMap<String, BTreeMap<String, usize>> {
    let mut out: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for r in records {
        if r.path != "/robots.txt" {
            *out.entry(r.site.clone())
                .or_default()
                .entry(r.path.clone())
                .or_default() += 1;
        }
    }
    out
}

/// Asserts the two politeness rules on a site's records: consecutive arrivals at least
/// `delay` apart, and never more than `per_site` in flight.
fn assert_polite(records: &[RequestRecord], site: &str, delay: Duration, per_site: u32) {
    let mut recs: Vec<&RequestRecord> = records.iter().filter(|r| r.site == site).collect();
    recs.sort_by_key(|r| r.t_us);
    for pair in recs.windows(2) {
        let gap = pair[1].t_us - pair[0].t_us;
        assert!(
            gap >= delay.as_micros() as u64,
            "{site}: {} then {} only {gap} us apart (delay {delay:?})",
            pair[0].path,
            pair[1].path
        );
    }
    for r in &recs {
        assert!(
            r.in_flight <= per_site,
            "{site}: {} in flight at {}",
            r.in_flight,
            r.path
        );
    }
}

#[tokio::test]
async fn every_allowed_page_exactly_once_robots_first_and_polite() {
    let web = TestWeb::start(GenOptions::new(5, 25).seed(3).crawl_delay_s(0.3))
        .await
        .expect("web");
    let mut cfg = config(seeds(&web, SiteKind::Normal));
    cfg.delay_ms = 40;
    cfg.workers = 6;
    let crawled = crawl(cfg).await;
    assert!(crawled.summary.completed);
    let records = web.log().records();
    let by_site = requests_by_site(&records);
    for site in web.manifest().normal_sites() {
        let got = by_site.get(&site.name).cloned().unwrap_or_default();
        // Exactly once: every allowed reachable page, no duplicates.
        for page in &site.pages {
            assert_eq!(got.get(&page.path), Some(&1), "{} {}", site.name, page.path);
        }
        // Nothing else but dead links and redirects.
        let mut expected: BTreeSet<&str> = site.page_paths();
        expected.extend(site.dead.iter().map(String::as_str));
        expected.extend(site.redirects.iter().map(|r| r.from.as_str()));
        for (path, n) in &got {
            assert!(
                expected.contains(path.as_str()),
                "{}: unexpected {path}",
                site.name
            );
            assert_eq!(*n, 1, "{}: {path} fetched {n} times", site.name);
        }
        for path in site.disallowed.iter().chain(&site.nofollow_only) {
            assert!(
                !got.contains_key(path),
                "{}: {path} must never be asked",
                site.name
            );
        }
        // robots.txt first, once.
        let mut recs: Vec<&RequestRecord> =
            records.iter().filter(|r| r.site == site.name).collect();
        recs.sort_by_key(|r| r.t_us);
        assert_eq!(recs[0].path, "/robots.txt", "{}", site.name);
        assert_eq!(
            recs.iter().filter(|r| r.path == "/robots.txt").count(),
            1,
            "{}",
            site.name
        );
        let delay = match site.crawl_delay_s {
            Some(s) => Duration::from_secs_f64(s),
            None => Duration::from_millis(40),
        };
        assert_polite(&records, &site.name, delay, 1);
    }
    // The crawl's mailto addresses are the manifest's.
    let want: BTreeSet<String> = web
        .manifest()
        .normal_sites()
        .flat_map(|s| s.mailto.iter().cloned())
        .collect();
    let got: BTreeSet<String> = crawled.summary.mailto.iter().cloned().collect();
    assert_eq!(got, want);
}

#[tokio::test]
async fn per_site_connections_are_never_exceeded() {
    // Slow answers, so that requests overlap at the server: ten stalled URLs on one site.
    let web = TestWeb::start_with(GenOptions::new(1, 2).hostile(true), |o| {
        o.hostile.stall = Duration::from_millis(200);
    })
    .await
    .expect("web");
    let seeds = (0..10)
        .map(|i| web.url("hostile", &format!("/stall.html?n={i}")))
        .collect();
    let mut cfg = config(seeds);
    cfg.delay_ms = 0;
    cfg.per_site = 3;
    cfg.workers = 12;
    cfg.depth = Some(0);
    crawl(cfg).await;
    let records = web.log().site_records("hostile");
    assert_eq!(
        records
            .iter()
            .filter(|r| r.path.starts_with("/stall"))
            .count(),
        10
    );
    assert_polite(&records, "hostile", Duration::ZERO, 3);
    let max = records.iter().map(|r| r.in_flight).max().unwrap_or(0);
    assert_eq!(max, 3, "three connections at once, never more");
}

#[tokio::test]
async fn depth_limit_cuts_where_it_should() {
    let web = TestWeb::start(GenOptions::new(2, 80).seed(11).crawl_delay_s(0.01))
        .await
        .expect("web");
    for max_depth in [0, 1, 2] {
        let before = web.log().len();
        let mut cfg = config(vec![web.url("site00", "/")]);
        cfg.depth = Some(max_depth);
        cfg.workers = 16;
        cfg.delay_ms = 0;
        crawl(cfg).await;
        let records: Vec<RequestRecord> = web
            .log()
            .records()
            .into_iter()
            .skip(before as usize)
            .collect();
        let fetched: BTreeSet<String> = records
            .iter()
            .filter(|r| r.site == "site00" && (200..300).contains(&r.status))
            .filter(|r| r.path != "/robots.txt")
            .map(|r| r.path.clone())
            .collect();
        assert_eq!(
            fetched,
            expected_within(&web, "site00", max_depth),
            "depth {max_depth}"
        );
        assert!(
            records.iter().all(|r| r.site == "site00"),
            "scope origin stays on site00"
        );
    }
}

/// Each URL's record names the page that led to it at its depth: the referrer's depth plus one
/// (the same depth after a redirect, whose target keeps its source's), also for URLs found
/// again by a shorter path after a longer one (the audit saw 25 whose referrer was the page of
/// the longer path).
#[tokio::test]
async fn a_urls_referrer_is_the_page_one_level_above_it() {
    let web = TestWeb::start(GenOptions::new(3, 100).seed(24).crawl_delay_s(0.0))
        .await
        .expect("web");
    let mut cfg = config(seeds(&web, SiteKind::Normal));
    cfg.delay_ms = 0;
    cfg.workers = 16;
    let crawled = crawl(cfg).await;
    let mut checked = 0;
    for (url, row) in &crawled.urls {
        let Some(referrer) = row["referrer"].as_str() else {
            assert_eq!(row["depth"], 0, "{url}: no referrer, so a seed");
            continue;
        };
        let above = &crawled.urls[referrer];
        let redirect = above["status"]
            .as_u64()
            .is_some_and(|s| (300..400).contains(&s));
        let step = u64::from(!redirect);
        assert_eq!(
            row["depth"].as_u64(),
            above["depth"].as_u64().map(|d| d + step),
            "{url} (depth {}) found from {referrer} (depth {}, status {})",
            row["depth"],
            above["depth"],
            above["status"]
        );
        checked += 1;
    }
    assert!(checked > 200, "{checked}");
}

/// Audit 27: a page parsed at depth 3, found again by a shorter path (2) afterwards, had its row
/// lowered to 2, though its links had been judged at 3 + 1: a link past `--depth 3` said
/// "deeper than the depth limit" under a referrer at depth 2. A row keeps the depth its links
/// were judged at. Here site01 asks for a Crawl-delay of 2 s, so its page with the shorter path
/// comes after site00's chain to `/p.html` (and were it to come first, `/p.html` would simply be
/// at depth 2: the rows must agree either way).
#[tokio::test]
async fn a_page_found_by_a_shorter_path_after_its_parse_keeps_the_depth_its_links_follow() {
    let web = TestWeb::start(GenOptions::new(2, 5).seed(3))
        .await
        .expect("web");
    let (a, b) = (web.dir().join("site00"), web.dir().join("site01"));
    let page = |links: &[String]| {
        links
            .iter()
            .fold(String::from("<title>t</title>"), |page, href| {
                page + "<a href=\"" + href + "\">l</a>"
            })
    };
    for (name, links) in [
        ("index.html", vec!["/a1.html".to_string()]),
        ("a1.html", vec!["/a2.html".into()]),
        ("a2.html", vec!["/p.html".into()]),
        ("p.html", vec!["/c.html".into()]),
        ("c.html", vec![]),
        ("q.html", vec!["/p.html".into()]),
    ] {
        std::fs::write(a.join(name), page(&links)).expect("write");
    }
    std::fs::write(b.join("index.html"), page(&[web.url("site00", "/q.html")])).expect("write");
    std::fs::write(b.join("robots.txt"), "User-agent: *\nCrawl-delay: 2\n").expect("write");
    let mut cfg = config(vec![web.url("site00", "/"), web.url("site01", "/")]);
    cfg.scope = crawltop::scope::ScopeKind::Any;
    cfg.depth = Some(3);
    cfg.delay_ms = 0;
    let crawled = crawl(cfg).await;
    let row = |path: &str| &crawled.urls[&web.url("site00", path)];
    let depth = |path: &str| row(path)["depth"].as_u64().expect("a depth");
    assert_eq!(row("/p.html")["state"], "parsed");
    assert_eq!(
        row("/q.html")["state"],
        "parsed",
        "the shorter path was found"
    );
    assert_eq!(
        row("/c.html")["referrer"].as_str(),
        Some(web.url("site00", "/p.html").as_str())
    );
    assert_eq!(
        depth("/c.html"),
        depth("/p.html") + 1,
        "/c.html: {}; /p.html: {}",
        row("/c.html"),
        row("/p.html")
    );
    if depth("/p.html") == 3 {
        assert_eq!(row("/c.html")["reason"], "deeper than the depth limit");
    }
}

#[tokio::test]
async fn scope_and_page_limits() {
    let web = TestWeb::start(GenOptions::new(3, 20).seed(2).crawl_delay_s(0.01))
        .await
        .expect("web");
    // Scope any from site00 reaches the other sites through cross-site links.
    let mut cfg = config(vec![web.url("site00", "/")]);
    cfg.scope = crawltop::scope::ScopeKind::Any;
    cfg.delay_ms = 0;
    crawl(cfg).await;
    let sites: BTreeSet<String> = web.log().records().iter().map(|r| r.site.clone()).collect();
    assert_eq!(sites.len(), 3, "{sites:?}");

    // A page limit: exactly N URLs requested, robots.txt aside.
    let before = web.log().len() as usize;
    let mut cfg = config(seeds(&web, SiteKind::Normal));
    cfg.max_pages = Some(10);
    cfg.delay_ms = 0;
    let crawled = crawl(cfg).await;
    let pages = web.log().records()[before..]
        .iter()
        .filter(|r| r.path != "/robots.txt")
        .count();
    assert_eq!(pages, 10);
    assert!(crawled.summary.snapshot.resources.fetch_ignored > 0);
    let limited = crawled
        .urls
        .values()
        .filter(|u| u["reason"] == IgnoreReason::PageLimit.to_string().as_str())
        .count();
    assert!(limited > 0, "some URLs say they hit the page limit");

    // A per-site limit.
    let before = web.log().len() as usize;
    let mut cfg = config(seeds(&web, SiteKind::Normal));
    cfg.max_pages_per_site = Some(4);
    cfg.delay_ms = 0;
    crawl(cfg).await;
    let per_site = requests_by_site(&web.log().records()[before..]);
    for (site, paths) in per_site {
        assert_eq!(paths.values().sum::<usize>(), 4, "{site}");
    }

    // Include and exclude.
    let before = web.log().len() as usize;
    let mut cfg = config(vec![web.url("site00", "/")]);
    cfg.exclude = vec!["/guide/".into()];
    cfg.delay_ms = 0;
    crawl(cfg).await;
    let asked: Vec<String> = web.log().records()[before..]
        .iter()
        .map(|r| r.path.clone())
        .collect();
    assert!(asked.iter().all(|p| !p.starts_with("/guide/")), "{asked:?}");
    assert!(asked.len() > 3);
}

async fn wait_for_snapshot(
    rx: &mut tokio::sync::watch::Receiver<Arc<Snapshot>>,
    mut done: impl FnMut(&Snapshot) -> bool,
) {
    tokio::time::timeout(PATIENCE, async {
        loop {
            if done(&rx.borrow_and_update()) {
                return;
            }
            rx.changed().await.expect("crawl alive");
        }
    })
    .await
    .expect("snapshot condition reached");
}

#[tokio::test]
async fn pause_resume_delay_and_stop_are_seen_at_the_server() {
    let web = TestWeb::start(GenOptions::new(2, 200).seed(8).crawl_delay_s(0.02))
        .await
        .expect("web");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(seeds(&web, SiteKind::Normal));
    cfg.delay_ms = 20;
    cfg.stats_out = Some(dir.path().join("stats.json"));
    cfg.urls_out = Some(dir.path().join("urls.jsonl"));
    let handle = engine::spawn(cfg).expect("starts");
    let cmd = handle.commander();
    let mut snaps = handle.snapshots();
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= 10))
        .await
        .expect("crawl under way");

    // Pause: once nothing is in flight, nothing reaches the server until resume.
    cmd.send(Command::Pause, CommandSource::Library);
    wait_for_snapshot(&mut snaps, |s| {
        s.state == RunState::Paused && s.scheduler.assigned == 0
    })
    .await;
    let paused_at = web.log().now_us();
    let count_at_pause = web.log().len();
    tokio::time::sleep(Duration::from_millis(400)).await; // an observation window, not a wait
    assert_eq!(
        web.log().len(),
        count_at_pause,
        "requests arrived while paused"
    );
    cmd.send(Command::Resume, CommandSource::Library);
    tokio::time::timeout(
        PATIENCE,
        web.log()
            .wait_until(|r| r.len() as u64 >= count_at_pause + 4),
    )
    .await
    .expect("resumed");
    let resumed: Vec<u64> = web
        .log()
        .records()
        .iter()
        .map(|r| r.t_us)
        .filter(|t| *t > paused_at)
        .collect();
    assert!(resumed.iter().all(|t| *t >= paused_at + 400_000));

    // Throttle: after the new delay is set, a site's requests are at least 150 ms apart.
    cmd.send(
        Command::SetDelay(Duration::from_millis(150)),
        CommandSource::Library,
    );
    let set_at = web.log().now_us();
    let count_at_set = web.log().len();
    tokio::time::timeout(
        PATIENCE,
        web.log().wait_until(|r| r.len() as u64 >= count_at_set + 6),
    )
    .await
    .expect("crawl goes on");
    for site in ["site00", "site01"] {
        let recs = web.log().site_records(site);
        for pair in recs.windows(2) {
            if pair[1].t_us > set_at + 1_000 && pair[0].t_us > set_at {
                let gap = pair[1].t_us - pair[0].t_us;
                assert!(
                    gap >= 150_000,
                    "{site}: {gap} us after the delay went to 150 ms"
                );
            }
        }
    }

    // Stop: in-flight finish, the crawl ends, the stats are written and say stopped.
    cmd.send(Command::Stop, CommandSource::Library);
    let summary = tokio::time::timeout(PATIENCE, handle.finished())
        .await
        .expect("stops")
        .expect("no error");
    assert!(!summary.completed);
    assert_eq!(summary.snapshot.state, RunState::Finished);
    let stats: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("stats.json")).expect("stats written"),
    )
    .expect("json");
    let commands: Vec<&str> = stats["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .map(|c| c["command"].as_str().expect("text"))
        .collect();
    assert_eq!(commands, ["pause", "resume", "delay 150 ms", "stop"]);
    assert_eq!(stats["totals"]["completed"], false);
}

/// robots.txt redirects' bodies are bytes the server sent: `http.bytes` counts them as it
/// counts every other body (audit 31: 78 bytes short on the two redirecting sites).
#[tokio::test]
async fn the_bytes_of_robots_txt_redirects_count_as_the_server_counts_them() {
    let web = TestWeb::start(GenOptions::new(1, 3).hostile(true))
        .await
        .expect("web");
    let mut seeds = seeds(&web, SiteKind::RobotsMoved);
    seeds.extend(self::seeds(&web, SiteKind::RobotsAway));
    let mut cfg = config(seeds);
    cfg.delay_ms = 0;
    let crawled = crawl(cfg).await;
    let records = web.log().records();
    assert!(
        records.iter().any(|r| r.status == 301) && records.iter().any(|r| r.status == 302),
        "both robots.txt redirects were asked: {records:?}"
    );
    let server_bytes: u64 = records.iter().map(|r| r.bytes).sum();
    assert_eq!(crawled.stats["http"]["bytes"], server_bytes, "{records:?}");
}

#[tokio::test]
async fn stats_file_has_every_key_and_agrees_with_the_server() {
    let web = TestWeb::start(GenOptions::new(4, 15).seed(21).crawl_delay_s(0.01))
        .await
        .expect("web");
    let mut cfg = config(seeds(&web, SiteKind::Normal));
    cfg.delay_ms = 0;
    let crawled = crawl(cfg).await;
    let stats = &crawled.stats;
    for key in [
        "state",
        "elapsed_s",
        "workers",
        "scheduler",
        "resources",
        "http",
        "politeness",
        "sites",
        "heap",
        "rates",
        "totals",
        "config",
        "commands",
    ] {
        assert!(stats.get(key).is_some(), "missing {key}");
    }
    for key in [
        "total",
        "idle",
        "blocked",
        "busy",
        "idle_pct",
        "blocked_pct",
        "busy_pct",
    ] {
        assert!(stats["workers"].get(key).is_some(), "workers.{key}");
    }
    for key in ["queued", "assigned", "blocked", "done", "spider", "thinker"] {
        assert!(stats["scheduler"].get(key).is_some(), "scheduler.{key}");
    }
    for key in [
        "discovered",
        "fetched",
        "parsed",
        "fetch_error",
        "fetch_ignored",
        "fetch_forbidden",
        "parse_error",
        "parse_ignored",
    ] {
        assert!(stats["resources"].get(key).is_some(), "resources.{key}");
    }
    for key in [
        "origin",
        "robots_state",
        "crawl_delay_ms",
        "queued",
        "fetched",
        "errors",
        "next_allowed_in_ms",
    ] {
        assert!(stats["sites"][0].get(key).is_some(), "sites[].{key}");
    }
    assert_eq!(stats["state"], "finished");
    // Responses by status: the crawler's count is the server's.
    let mut server: BTreeMap<String, u64> = BTreeMap::new();
    let records = web.log().records();
    for r in &records {
        *server.entry(r.status.to_string()).or_default() += 1;
    }
    let crawler: BTreeMap<String, u64> =
        serde_json::from_value(stats["http"]["status"].clone()).expect("status map");
    assert_eq!(crawler, server);
    let server_bytes: u64 = records.iter().map(|r| r.bytes).sum();
    assert_eq!(stats["http"]["bytes"], server_bytes);
    // Per site: fetched = 2xx and 3xx page responses at the server.
    for row in stats["sites"].as_array().expect("sites") {
        let origin = row["origin"].as_str().expect("origin");
        let site = web.site_of(origin).expect("our site");
        let fetched = records
            .iter()
            .filter(|r| r.site == site && r.path != "/robots.txt" && r.status < 400)
            .count();
        assert_eq!(row["fetched"], fetched as u64, "{site}");
        // Dead links are this site's errors, and its detail lists the latest.
        let dead = &web.manifest().site(site).expect("site").dead;
        let recent: Vec<&str> = row["recent_errors"]
            .as_array()
            .expect("recent_errors")
            .iter()
            .map(|e| e.as_str().expect("text"))
            .collect();
        assert_eq!(recent.len(), dead.len().min(5), "{site}: {recent:?}");
        for e in &recent {
            assert!(
                e.ends_with(": http 404")
                    && dead
                        .iter()
                        .any(|d| e.starts_with(d.split('?').next().unwrap_or(d))),
                "{site}: {e}"
            );
        }
        assert!(row["robots_state"] == "handled" || row["robots_state"] == "unexisting");
        // The site detail's rules summary says what robots.txt answered.
        let rules = row["robots_rules"].as_str().expect("robots_rules");
        let status = if row["robots_state"] == "handled" {
            "200"
        } else {
            "404"
        };
        assert!(
            rules.contains(&format!("last answer {status}")),
            "{site}: {rules}"
        );
        if site == "site00" {
            assert!(
                rules.contains("group \"*\": 1 allow, 2 disallow"),
                "{rules}"
            );
        }
    }
    let page_requests = records.iter().filter(|r| r.path != "/robots.txt").count() as u64;
    let r = &stats["resources"];
    assert_eq!(
        r["fetched"].as_u64().expect("n") + r["fetch_error"].as_u64().expect("n"),
        page_requests
    );
    assert_eq!(stats["scheduler"]["spider"]["done"], records.len() as u64);
}

#[tokio::test]
async fn hostile_paths_end_in_clear_states_and_the_crawl_finishes() {
    let web = TestWeb::start_with(GenOptions::new(1, 3).hostile(true), |o| {
        o.hostile.stall = Duration::from_secs(10);
        o.hostile.trickle_interval = Duration::from_millis(100);
    })
    .await
    .expect("web");
    let mut cfg = config(vec![web.url("hostile", "/"), web.url("robots500", "/")]);
    cfg.depth = Some(4);
    cfg.timeout_ms = 1_000;
    cfg.max_body_bytes = 1 << 20;
    cfg.delay_ms = 0;
    cfg.robots_retries = 1;
    let crawled = crawl(cfg).await;
    assert!(crawled.summary.completed);
    assert_eq!(crawled.summary.snapshot.ended, Some(Ended::Completed));
    let state = |path: &str| {
        let url = web.url("hostile", path);
        let v = crawled
            .urls
            .get(&url)
            .unwrap_or_else(|| panic!("{url} not recorded"));
        (
            v["state"].as_str().expect("state").to_string(),
            v["reason"].as_str().map(str::to_string),
            v["truncated"].as_bool().expect("bool"),
        )
    };
    assert_eq!(state("/loop/a").0, "fetched");
    assert_eq!(state("/loop/b").0, "fetched");
    assert_eq!(state("/chain/10").0, "fetched");
    let (s, reason, _) = state("/chain/11");
    assert_eq!(s, "fetch_ignored");
    assert_eq!(reason, Some(IgnoreReason::TooManyRedirects.to_string()));
    // The seed is depth 0, the calendar's first day 1: day 4 is the last within depth 4.
    assert_eq!(state("/calendar/2026-01-04.html").0, "parsed");
    assert_eq!(
        state("/calendar/2026-01-05.html").1,
        Some(IgnoreReason::TooDeep.to_string())
    );
    assert_eq!(state("/big.html"), ("parsed".into(), None, true));
    assert_eq!(state("/bomb.html"), ("parsed".into(), None, true));
    let (s, reason, _) = state("/trickle.html");
    assert_eq!(s, "fetch_error");
    assert!(reason.expect("reason").contains("timeout"));
    let (s, reason, _) = state("/stall.html");
    assert_eq!(s, "fetch_error");
    assert!(reason.expect("reason").contains("timeout"));
    assert_eq!(state("/malformed.html").0, "parsed");
    assert_eq!(state("/m/unquoted.html").0, "parsed");
    assert_eq!(state("/m/in-table.html").0, "parsed");
    assert!(
        !crawled
            .urls
            .contains_key(&web.url("hostile", "/m/eof.html"))
    );
    assert_eq!(state("/latin1.html").0, "parsed");
    // Reachable only through a `<meta http-equiv=refresh>`: asked at the server.
    assert_eq!(state("/refreshed.html").0, "parsed");
    assert!(
        web.log()
            .site_records("hostile")
            .iter()
            .any(|r| r.path == "/refreshed.html" && r.status == 200)
    );
    assert_eq!(
        state("/caf%C3%A9.html").0,
        "parsed",
        "the Latin-1 link was decoded right"
    );
    let retried = &crawled.urls[&web.url("hostile", "/retry/429.html")];
    assert_eq!(
        (retried["state"].as_str(), retried["retries"].as_u64()),
        (Some("parsed"), Some(2))
    );
    let s = &crawled.summary.snapshot;
    assert!(s.errors.timeout >= 2);
    assert!(s.errors.too_large >= 2);
    assert!(s.errors.retries >= 4);
    assert!(s.errors.too_many_redirects >= 1);
    // robots500: the site is in Error and nothing but robots.txt was asked.
    let r500: Vec<String> = web
        .log()
        .site_records("robots500")
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert!(r500.iter().all(|p| p == "/robots.txt"), "{r500:?}");
    assert_eq!(r500.len(), 2, "one try and one retry");
    let row = s
        .sites
        .iter()
        .find(|r| r.origin == web.origin("robots500"))
        .expect("row");
    assert_eq!(row.robots_state, crawltop::robots::RobotsState::Error);
    // It answered: the reason and the warning say with what, not "unreachable".
    assert_eq!(
        crawled.urls[&web.url("robots500", "/")]["reason"],
        "robots.txt answered 500"
    );
    let said = s.log.iter().map(|l| l.message.as_str()).collect::<Vec<_>>();
    assert!(
        said.iter()
            .any(|m| m.contains("robots.txt answered 500 on every try")),
        "{said:?}"
    );
}

/// RFC 9309 2.3.1.2: a crawler follows robots.txt's redirects and obeys the rules at the end.
/// Judged at the server: `/private/secret.html` exists and is linked, only the moved rules keep
/// a crawler out.
#[tokio::test]
async fn a_robots_txt_that_redirects_is_followed_and_its_rules_obeyed() {
    let web = TestWeb::start(GenOptions::new(1, 3).hostile(true))
        .await
        .expect("web");
    let mut cfg = config(vec![web.url("robotsmoved", "/")]);
    cfg.delay_ms = 0;
    let crawled = crawl(cfg).await;
    assert!(crawled.summary.completed);
    let asked: Vec<(String, u16)> = web
        .log()
        .site_records("robotsmoved")
        .into_iter()
        .map(|r| (r.path, r.status))
        .collect();
    let moved = crawltop::testweb::generator::MOVED_ROBOTS_TXT;
    assert_eq!(
        asked[..2],
        [("/robots.txt".to_string(), 301), (moved.to_string(), 200)],
        "robots.txt and its redirect first: {asked:?}"
    );
    let site = web.manifest().site("robotsmoved").expect("site");
    let pages: BTreeSet<&str> = asked[2..].iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(pages, site.page_paths(), "{asked:?}");
    for path in &site.disallowed {
        let url = web.url("robotsmoved", path);
        assert_eq!(crawled.urls[&url]["reason"], "disallowed by robots.txt");
    }
    // Counted as disallowed by rules, not as a robots.txt that could not be read.
    let errors = &crawled.summary.snapshot.errors;
    assert_eq!(errors.robots_forbidden, site.disallowed.len() as u64);
    assert_eq!(errors.robots_unreachable, 0);
    let row = crawled
        .summary
        .snapshot
        .sites
        .iter()
        .find(|r| r.origin == web.origin("robotsmoved"))
        .expect("row");
    assert_eq!(row.robots_state, crawltop::robots::RobotsState::Handled);
    assert!(
        row.robots_rules.contains("1 disallow"),
        "{}",
        row.robots_rules
    );
    // The rules line names the file that answered.
    let via = format!("via {}", web.url("robotsmoved", moved));
    assert!(row.robots_rules.ends_with(&via), "{}", row.robots_rules);
}

/// Each hop of a robots.txt's redirects is a request to the site it lands on, and keeps that
/// site's politeness: robotsmoved's own hop waits its delay, and robotsaway's hop to
/// robotsmoved's policy file (another origin) neither overlaps robotsmoved's requests nor
/// comes sooner than its delay. Judged at the server.
#[tokio::test]
async fn robots_txt_redirects_keep_the_politeness_of_the_site_they_land_on() {
    let web = TestWeb::start(GenOptions::new(1, 3).hostile(true))
        .await
        .expect("web");
    let delay = Duration::from_millis(300);
    let mut cfg = config(vec![
        web.url("robotsmoved", "/"),
        web.url("robotsaway", "/"),
    ]);
    cfg.delay_ms = delay.as_millis() as u64;
    let crawled = crawl(cfg).await;
    assert!(crawled.summary.completed);
    let records = web.log().records();
    assert_polite(&records, "robotsmoved", delay, 1);
    assert_polite(&records, "robotsaway", delay, 1);
    let moved = crawltop::testweb::generator::MOVED_ROBOTS_TXT;
    let policy_asked = records
        .iter()
        .filter(|r| r.site == "robotsmoved" && r.path == moved)
        .count();
    assert_eq!(policy_asked, 2, "once for each site whose rules it holds");
    // robotsaway obeys the rules it was sent to.
    let away = web.manifest().site("robotsaway").expect("site");
    let asked: BTreeSet<&str> = records
        .iter()
        .filter(|r| r.site == "robotsaway" && r.path != "/robots.txt")
        .map(|r| r.path.as_str())
        .collect();
    assert_eq!(asked, away.page_paths());
    for path in &away.disallowed {
        let url = web.url("robotsaway", path);
        assert_eq!(crawled.urls[&url]["reason"], "disallowed by robots.txt");
    }
}

#[tokio::test]
async fn a_capped_crawl_delay_is_obeyed_at_the_cap_and_logged_once() {
    // site01 asks for a 1 s Crawl-delay; the cap is 200 ms.
    let web = TestWeb::start(GenOptions::new(2, 8).crawl_delay_s(1.0))
        .await
        .expect("web");
    let mut cfg = config(vec![web.url("site01", "/")]);
    cfg.delay_ms = 10;
    cfg.max_crawl_delay_ms = 200;
    let crawled = crawl(cfg).await;
    let records = web.log().records();
    assert_polite(&records, "site01", Duration::from_millis(200), 1);
    let row = &crawled.summary.snapshot.sites[0];
    assert_eq!(row.delay_ms, 200);
    assert_eq!(row.crawl_delay_ms, Some(200));
    assert_eq!(row.crawl_delay_asked_ms, Some(1_000), "what the site asked");
    assert_eq!(
        row.delay_source,
        crawltop::snapshot::DelaySource::CappedCrawlDelay
    );
    let capped: Vec<_> = crawled
        .summary
        .snapshot
        .log
        .iter()
        .filter(|l| l.message.contains("capped"))
        .collect();
    assert_eq!(capped.len(), 1, "{capped:?}");
}

#[tokio::test]
async fn adaptive_delay_follows_the_response_time() {
    // Each answer takes 200 ms; with factor 1 the next request waits at least as long again.
    let web = TestWeb::start_with(GenOptions::new(1, 2).hostile(true), |o| {
        o.hostile.stall = Duration::from_millis(200);
    })
    .await
    .expect("web");
    let seeds = (0..4)
        .map(|i| web.url("hostile", &format!("/stall.html?n={i}")))
        .collect();
    let mut cfg = config(seeds);
    cfg.delay_ms = 0;
    cfg.depth = Some(0);
    cfg.adaptive_delay = Some(1.0);
    let crawled = crawl(cfg).await;
    let stalls: Vec<RequestRecord> = web
        .log()
        .site_records("hostile")
        .into_iter()
        .filter(|r| r.path.starts_with("/stall"))
        .collect();
    assert_eq!(stalls.len(), 4);
    for pair in stalls.windows(2) {
        let gap = pair[1].t_us - pair[0].t_us;
        assert!(
            gap >= 400_000,
            "{gap} us: 200 ms answer + 200 ms adaptive delay"
        );
    }
    let row = &crawled.summary.snapshot.sites[0];
    assert_eq!(row.delay_source, crawltop::snapshot::DelaySource::Adaptive);
    assert!(row.delay_ms >= 200, "{}", row.delay_ms);
}

#[tokio::test]
async fn observers_that_never_read_do_not_slow_the_crawl() {
    let web = TestWeb::start(GenOptions::new(2, 30).crawl_delay_s(0.01))
        .await
        .expect("web");
    let mut cfg = config(seeds(&web, SiteKind::Normal));
    cfg.delay_ms = 0;
    let handle = engine::spawn(cfg).expect("starts");
    // A dozen stuck dashboards: receivers that are never read.
    let stuck: Vec<_> = (0..12).map(|_| handle.snapshots()).collect();
    let summary = tokio::time::timeout(PATIENCE, handle.finished())
        .await
        .expect("finished while nobody read a snapshot")
        .expect("no error");
    assert!(summary.completed);
    let want: usize = web.manifest().normal_sites().map(|s| s.pages.len()).sum();
    assert!(summary.snapshot.resources.fetched as usize >= want);
    drop(stuck);
}

/// A crawl of the hostile site's `path` alone (patience 120 s), stopped once a snapshot shows
/// `ready`: it must end without waiting for the page.
async fn stopped_once(
    web: &TestWeb,
    path: &str,
    ready: impl Fn(&crawltop::snapshot::Snapshot) -> bool,
) -> Crawled {
    stopped(web, path, ready, false).await
}

/// A crawl of `path` on the hostile site stopped once `ready` holds, and `at_once` also ended
/// at once (a second Ctrl-C).
async fn stopped(
    web: &TestWeb,
    path: &str,
    ready: impl Fn(&crawltop::snapshot::Snapshot) -> bool,
    at_once: bool,
) -> Crawled {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(vec![web.url("hostile", path)]);
    cfg.delay_ms = 0;
    cfg.timeout_ms = 120_000;
    cfg.stats_out = Some(dir.path().join("stats.json"));
    cfg.urls_out = Some(dir.path().join("urls.jsonl"));
    let handle = engine::spawn(cfg).expect("starts");
    let mut snaps = handle.snapshots();
    wait_for_snapshot(&mut snaps, ready).await;
    handle
        .commander()
        .send(Command::Stop, CommandSource::Library);
    if at_once {
        handle.abort_token().cancel();
    }
    let summary = tokio::time::timeout(PATIENCE, handle.finished())
        .await
        .expect("the stop did not wait for the page")
        .expect("no error");
    read_outputs(summary, dir)
}

#[tokio::test]
async fn stop_cuts_in_flight_work_after_a_grace_period() {
    // A 60 s stall with a 120 s patience: a stop must not wait for it.
    let web = TestWeb::start_with(GenOptions::new(1, 2).hostile(true), |o| {
        o.hostile.stall = Duration::from_secs(60);
    })
    .await
    .expect("web");
    let crawled = stopped_once(&web, "/stall.html", |s| {
        s.scheduler.spider.done == 1 && s.scheduler.assigned == 1
    })
    .await;
    assert!(!crawled.summary.completed);
    // The final snapshot says so too (the dashboard's last screen reads it).
    assert_eq!(crawled.summary.snapshot.ended, Some(Ended::Stopped));
    assert_eq!(crawled.stats["ended"], "stopped");
    let stall = &crawled.urls[&web.url("hostile", "/stall.html")];
    assert_eq!(stall["state"], "discovered");
    assert_eq!(stall["reason"], "cancelled when the crawl stopped");
    // The log says what the stop cut (audit 31: nothing did), and the site holds none in flight.
    let log = crate::util::log_messages(&crawled.stats);
    let said = "stopping: 1 request still under way after 3 s cut (no crawl folder: they are not \
                asked again)";
    assert!(log.contains(&said), "{log:?}");
    let sites = crawled.stats["sites"].as_array().expect("sites");
    assert!(sites.iter().all(|s| s["in_flight"] == 0), "{sites:?}");
}

#[tokio::test]
async fn ending_at_once_says_what_it_cut_and_leaves_nothing_in_flight() {
    let web = TestWeb::start_with(GenOptions::new(1, 2).hostile(true), |o| {
        o.hostile.stall = Duration::from_secs(60);
    })
    .await
    .expect("web");
    let ready = |s: &crawltop::snapshot::Snapshot| {
        s.scheduler.spider.done == 1 && s.scheduler.assigned == 1
    };
    let crawled = stopped(&web, "/stall.html", ready, true).await;
    assert_eq!(crawled.stats["ended"], "stopped");
    let log = crate::util::log_messages(&crawled.stats);
    let said = "ended at once: 1 request under way cut (no crawl folder: they are not asked again)";
    assert!(log.contains(&said), "{log:?}");
    let sites = crawled.stats["sites"].as_array().expect("sites");
    assert!(sites.iter().all(|s| s["in_flight"] == 0), "{sites:?}");
}

#[tokio::test]
async fn trap_rules_end_urls_as_ignored_with_the_reason() {
    let web = TestWeb::start(GenOptions::new(1, 3)).await.expect("web");
    let long = format!("/{}.html", "x".repeat(2_100));
    let deep = format!("{}/p.html", "/s".repeat(17).replace("/s", "/seg"));
    let deep = deep.replacen("/seg", "/first", 1);
    let traps = [
        ("/a/b/a/b/a/p.html", IgnoreReason::RepeatedSegment),
        (long.as_str(), IgnoreReason::UrlTooLong),
        (deep.as_str(), IgnoreReason::PathTooDeep),
    ];
    let mut seeds: Vec<String> = traps.iter().map(|(p, _)| web.url("site00", p)).collect();
    seeds.push(web.url("site00", "/"));
    let mut cfg = config(seeds);
    cfg.depth = Some(0);
    cfg.delay_ms = 0;
    let crawled = crawl(cfg).await;
    for (path, reason) in traps {
        let rec = &crawled.urls[&web.url("site00", path)];
        assert_eq!(rec["state"], "fetch_ignored", "{path}");
        assert_eq!(rec["reason"], reason.to_string().as_str(), "{path}");
    }
    let asked: Vec<String> = web.log().records().iter().map(|r| r.path.clone()).collect();
    assert_eq!(asked.len(), 2, "robots.txt and the index only: {asked:?}");
}

#[tokio::test]
async fn a_page_cut_by_a_parse_limit_ends_parsed_with_the_reason() {
    let web = TestWeb::start(GenOptions::new(1, 5).seed(2))
        .await
        .expect("web");
    // Pages the generator does not make, served from the site's folder as they are.
    let site = web.dir().join("site00");
    let deep = format!(
        "<title>deep</title><a href=\"p1.html\">x</a>{}",
        "<div>".repeat(100_000)
    );
    std::fs::write(site.join("deep.html"), deep).expect("write");
    let huge_tag = format!(
        "<title>tag</title><a href=\"p2.html\">y</a><a title=\"{}",
        "z".repeat(9 << 20)
    );
    std::fs::write(site.join("tag.html"), huge_tag).expect("write");
    let mut cfg = config(vec![
        web.url("site00", "/deep.html"),
        web.url("site00", "/tag.html"),
    ]);
    cfg.depth = Some(0);
    let crawled = crawl(cfg).await;
    let reason = |path: &str| {
        let row = &crawled.urls[&web.url("site00", path)];
        assert_eq!(row["state"], "parsed", "{path}: {row}");
        row["reason"].as_str().unwrap_or_default().to_string()
    };
    // 100,000 open elements outgrow `lol_html`'s stack, not a depth limit: the crawl's parse
    // flattens past 512 nested elements (see the next test).
    assert!(
        reason("/deep.html").contains("outgrew 8 MiB"),
        "{}",
        reason("/deep.html")
    );
    assert!(
        reason("/tag.html").contains("outgrew 8 MiB"),
        "{}",
        reason("/tag.html")
    );
}

#[tokio::test]
async fn links_past_512_nested_elements_are_fetched_and_hidden_ones_are_not() {
    let web = TestWeb::start(GenOptions::new(1, 5).seed(2))
        .await
        .expect("web");
    let site = web.dir().join("site00");
    for page in ["late1.html", "late2.html"] {
        std::fs::write(site.join(page), "<title>late</title><p>reached").expect("write");
    }
    let nested = format!(
        "<title>nested</title>{}<p>late <a href=\"late1.html\">one</a></p>\
         <script>var s = '<a href=\"/hidden-in-script.html\">';</script>\
         <template><a href=\"/hidden-in-template.html\">t</a></template>\
         <a href=\"late2.html\">two</a>{}",
        "<div>".repeat(600),
        "</div>".repeat(600)
    );
    std::fs::write(site.join("nested.html"), nested).expect("write");
    let mut cfg = config(vec![web.url("site00", "/nested.html")]);
    cfg.depth = Some(1);
    let crawled = crawl(cfg).await;
    let row = &crawled.urls[&web.url("site00", "/nested.html")];
    assert_eq!(row["state"], "parsed", "{row}");
    assert!(row["reason"].is_null(), "parsed whole: {row}");
    let asked: Vec<String> = web.log().records().iter().map(|r| r.path.clone()).collect();
    for path in ["/late1.html", "/late2.html"] {
        assert!(asked.iter().any(|p| p == path), "{path} in {asked:?}");
        assert_eq!(crawled.urls[&web.url("site00", path)]["state"], "parsed");
    }
    for path in ["/hidden-in-script.html", "/hidden-in-template.html"] {
        assert!(!asked.iter().any(|p| p == path), "{path} in {asked:?}");
        assert!(
            !crawled.urls.contains_key(&web.url("site00", path)),
            "{path}"
        );
    }
}

/// The server's answers by status, as its log has them (499: the client left before any
/// answer, which a crawler cannot count as a response).
fn answered_by_status(records: &[RequestRecord]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for r in records.iter().filter(|r| r.status != 499) {
        *out.entry(r.status.to_string()).or_default() += 1;
    }
    out
}

/// Waits until the server has logged a record for `path` (written when the response is over).
async fn logged(web: &TestWeb, path: &str) {
    tokio::time::timeout(
        PATIENCE,
        web.log().wait_until(|r| r.iter().any(|r| r.path == path)),
    )
    .await
    .expect("the server logged the request");
}

#[tokio::test]
async fn a_response_whose_body_timed_out_is_counted_as_the_server_counts_it() {
    let web = TestWeb::start_with(GenOptions::new(1, 2).hostile(true), |o| {
        o.hostile.trickle_interval = Duration::from_millis(100);
    })
    .await
    .expect("web");
    let mut cfg = config(vec![web.url("hostile", "/trickle.html")]);
    cfg.delay_ms = 0;
    cfg.timeout_ms = 1_000;
    let crawled = crawl(cfg).await;
    logged(&web, "/trickle.html").await;
    let records = web.log().records();
    let trickle = &crawled.urls[&web.url("hostile", "/trickle.html")];
    assert_eq!(trickle["state"], "fetch_error");
    assert_eq!(trickle["status"], 200, "the server answered 200: {trickle}");
    // What came is on the row, as in the WARC files (audit 33: 0 bytes, no content type).
    assert!(
        trickle["content_type"]
            .as_str()
            .is_some_and(|t| t.starts_with("text/html")),
        "{trickle}"
    );
    assert!(
        trickle["bytes"].as_u64().is_some_and(|b| b > 0),
        "{trickle}"
    );
    // Counted in the bytes received, at most what the server sent.
    let received = crawled.stats["http"]["bytes"].as_u64().expect("bytes");
    let sent: u64 = records.iter().map(|r| r.bytes).sum();
    assert!(received >= trickle["bytes"].as_u64().expect("bytes") && received <= sent);
    let status: BTreeMap<String, u64> =
        serde_json::from_value(crawled.stats["http"]["status"].clone()).expect("status map");
    assert_eq!(status, answered_by_status(&records), "{records:?}");
    assert_eq!(crawled.stats["totals"]["requests"], records.len() as u64);
}

#[tokio::test]
async fn a_response_cut_by_a_stop_is_counted_as_the_server_counts_it() {
    let web = TestWeb::start_with(GenOptions::new(1, 2).hostile(true), |o| {
        o.hostile.trickle_interval = Duration::from_millis(100);
    })
    .await
    .expect("web");
    let crawled = stopped_once(&web, "/trickle.html", |s| s.workers.busy_by.receiving == 1).await;
    logged(&web, "/trickle.html").await;
    let records = web.log().records();
    let trickle = &crawled.urls[&web.url("hostile", "/trickle.html")];
    assert_eq!(trickle["reason"], "cancelled when the crawl stopped");
    let status: BTreeMap<String, u64> =
        serde_json::from_value(crawled.stats["http"]["status"].clone()).expect("status map");
    assert_eq!(status, answered_by_status(&records), "{records:?}");
    assert_eq!(crawled.stats["totals"]["requests"], records.len() as u64);
}

/// Audit 28 #4: a robots.txt answer is obeyed for `--robots-max-age-ms` (a day by default, as
/// RFC 9309 section 2.4 asks), then asked again at the site's next contact: a site that closed
/// itself meanwhile is obeyed from then on, on the URLs already queued too. Before, a crawl
/// (or a resume days later) obeyed its first answer forever.
#[tokio::test]
async fn a_robots_txt_older_than_its_max_age_is_asked_again_and_obeyed() {
    let web = TestWeb::start(GenOptions::new(1, 60).seed(5).crawl_delay_s(0.0))
        .await
        .expect("web");
    let mut cfg = config(seeds(&web, SiteKind::Normal));
    cfg.delay_ms = 60;
    cfg.robots_max_age_ms = 1_000;
    let pages =
        |records: &[RequestRecord]| records.iter().filter(|r| r.path != "/robots.txt").count();
    let close = async {
        tokio::time::timeout(PATIENCE, web.log().wait_until(|r| pages(r) >= 3))
            .await
            .expect("the crawl runs");
        let robots = web.dir().join("site00").join("robots.txt");
        std::fs::write(robots, "User-agent: *\nDisallow: /\n").expect("the site closes");
        web.log().records().iter().map(|r| r.done_us).max()
    };
    let (crawled, closed_at) = tokio::join!(crawl(cfg), close);
    let closed_at = closed_at.expect("requests before");
    assert!(crawled.summary.completed);
    let mut records = web.log().site_records("site00");
    records.sort_by_key(|r| r.t_us);
    let robots: Vec<&RequestRecord> = records.iter().filter(|r| r.path == "/robots.txt").collect();
    let asked_again = robots
        .iter()
        .find(|r| r.t_us > closed_at)
        .expect("robots.txt asked again after the site closed");
    assert!(
        asked_again.t_us - robots[0].done_us >= 1_000_000,
        "asked again before its age: {} us",
        asked_again.t_us - robots[0].done_us
    );
    let after: Vec<&str> = records
        .iter()
        .filter(|r| r.t_us > asked_again.t_us && r.path != "/robots.txt")
        .map(|r| r.path.as_str())
        .collect();
    assert!(after.is_empty(), "fetched after the site closed: {after:?}");
    assert!(
        pages(&records) < 60,
        "the site closed before the crawl ended"
    );
    // The first answer forbade only `/private/` and `*.cgi`: the rest is the new answer's.
    let forbidden = crawled
        .urls
        .iter()
        .filter(|(url, u)| {
            u["state"] == "fetch_forbidden" && !url.contains("/private/") && !url.ends_with(".cgi")
        })
        .count();
    assert!(forbidden > 0, "queued URLs are judged by the new answer");
}
