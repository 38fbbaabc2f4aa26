//! The live site table from outside: `GET /sites` and `crawltop ctl sites` against what the
//! test web's request log says each site was asked, the robots.txt wording of a site whose
//! file speaks only to other agents, a seeds file of a million lines, and a site that answers
//! among thousands of dead origins.

use std::collections::BTreeMap;
use std::io::Write as _;

use crawltop::config::CrawlConfig;
use crawltop::control::{ControlOptions, client_request, serve};
use crawltop::testweb::{GenOptions, TestWeb};

use crate::util::{Finish, PATIENCE, bin};

/// Per origin, what the server answered for pages (robots.txt aside): (2xx/3xx, 4xx/5xx).
fn seen_by_server(web: &TestWeb, sites: &[&str]) -> BTreeMap<String, (u64, u64)> {
    let mut seen = BTreeMap::new();
    for &site in sites {
        let records = web.log().records();
        let pages = records
            .iter()
            .filter(|r| r.site == site && r.path != "/robots.txt");
        let ok = pages.clone().filter(|r| r.status < 400).count() as u64;
        let failed = pages.filter(|r| r.status >= 400).count() as u64;
        seen.insert(web.origin(site), (ok, failed));
    }
    seen
}

fn rows(page: &serde_json::Value) -> Vec<&serde_json::Value> {
    page["rows"].as_array().expect("rows").iter().collect()
}

fn origins(page: &serde_json::Value) -> Vec<String> {
    rows(page)
        .iter()
        .map(|r| r["origin"].as_str().expect("origin").to_string())
        .collect()
}

#[tokio::test]
async fn the_sites_api_pages_sorts_and_filters_what_the_server_saw() {
    // site01 has a Crawl-delay; site02's robots.txt has a group only for "otherbot".
    let web = TestWeb::start(GenOptions::new(3, 12).seed(3).crawl_delay_s(0.01))
        .await
        .expect("web");
    let names = ["site00", "site01", "site02"];
    let cfg = CrawlConfig {
        seeds: names.iter().map(|s| web.url(s, "/")).collect(),
        workers: 8,
        // Slow enough for many snapshot ticks: a row left stale by a tick would show.
        delay_ms: 30,
        ..CrawlConfig::default()
    };
    let handle = crawltop::engine::spawn(cfg).expect("starts");
    let api = serve(
        ControlOptions {
            addr: "127.0.0.1:0".parse().expect("addr"),
            token: None,
        },
        handle.snapshots(),
        handle.commander(),
    )
    .await
    .expect("serves");
    // Bounded: a crawl that never ends fails the test instead of hanging it.
    let summary = tokio::time::timeout(std::time::Duration::from_secs(120), handle.finished())
        .await
        .expect("the crawl ends by itself")
        .expect("crawl");
    assert!(summary.completed);
    let addr = api.local_addr();
    let get = |path: String| async move {
        let (status, body) = client_request(addr, None, "GET", &path)
            .await
            .expect("answer");
        let json: serde_json::Value = serde_json::from_str(&body).expect("json");
        (status, json)
    };

    // Every site, with what the server saw of it.
    let (status, all) = get("/sites?sort=origin&limit=1000".into()).await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(
        (all["total"].as_u64(), all["matched"].as_u64()),
        (Some(3), Some(3))
    );
    let seen = seen_by_server(&web, &names);
    let table: BTreeMap<String, (u64, u64)> = rows(&all)
        .iter()
        .map(|r| {
            assert_eq!(r["queued"], 0, "{r}");
            (
                r["origin"].as_str().expect("origin").to_string(),
                (
                    r["fetched"].as_u64().expect("fetched"),
                    r["errors"].as_u64().expect("errors"),
                ),
            )
        })
        .collect();
    assert_eq!(table, seen);
    let mut by_origin: Vec<String> = seen.keys().cloned().collect();
    by_origin.sort();
    assert_eq!(origins(&all), by_origin);
    let other = rows(&all)
        .into_iter()
        .find(|r| r["origin"] == web.origin("site02"))
        .expect("site02");
    let rules = other["robots_rules"].as_str().expect("rules");
    assert!(
        rules.starts_with("no group for crawltop: all allowed;"),
        "{rules}"
    );
    assert!(!rules.contains("group \"*\""), "{rules}");

    // Sort, limit and offset: the same order the server's counts give.
    let mut most_fetched: Vec<(u64, String)> =
        seen.iter().map(|(o, (ok, _))| (*ok, o.clone())).collect();
    // Most first; ties in discovery order (the seeds' order here, site00 first).
    most_fetched.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| names_index(&web, &a.1).cmp(&names_index(&web, &b.1)))
    });
    let (_, page) = get("/sites?sort=fetched&limit=2".into()).await;
    assert_eq!(
        origins(&page),
        [most_fetched[0].1.clone(), most_fetched[1].1.clone()]
    );
    let (_, page) = get("/sites?sort=fetched&limit=2&offset=2".into()).await;
    assert_eq!(origins(&page), [most_fetched[2].1.clone()]);
    assert_eq!(page["matched"], 3);

    // A filter is a substring of the origin, %-escapes decoded.
    let port = web.origin("site01");
    let port = port.rsplit(':').next().expect("port");
    let (status, page) = get(format!("/sites?filter=%3A{port}")).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        (page["total"].as_u64(), page["matched"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(origins(&page), [web.origin("site01")]);
    let (_, none) = get("/sites?filter=no-such-site".into()).await;
    assert_eq!(none["matched"], 0);
    assert!(rows(&none).is_empty());

    // Hostile queries: refused with a message naming the parameter, or an empty page.
    for (query, word) in [
        ("limit=-1", "parameter limit"),
        ("limit=0", "parameter limit"),
        ("limit=99999999999999999999999", "parameter limit"),
        ("limit=1001", "parameter limit"),
        ("offset=-5", "parameter offset"),
        ("sort=nonsense", "parameter sort"),
        ("sort=", "parameter sort"),
        ("filter=%FF%FE", "not UTF-8"),
        ("limit=5&limit=6", "more than once"),
        ("page=2", "unknown parameter"),
    ] {
        let (status, body) = get(format!("/sites?{query}")).await;
        assert_eq!(status, 400, "{query}: {body}");
        let message = body["error"].as_str().expect("error");
        assert!(message.contains(word), "{query}: {message}");
    }
    let (status, past) = get("/sites?offset=18446744073709551615".into()).await;
    assert_eq!(status, 200, "{past}");
    assert!(rows(&past).is_empty());
    assert_eq!(past["matched"], 3);
    let (status, _) = client_request(addr, None, "POST", "/sites")
        .await
        .expect("answer");
    assert_eq!(status, 405);

    // `crawltop ctl ADDR sites` asks the same, its flags as the query.
    // Run off this test's runtime thread: the API answers on it.
    let out = tokio::process::Command::new(bin())
        .args(["ctl", &addr.to_string(), "sites", "--sort", "origin"])
        .args(["--limit", "1", "--offset", "1", "--filter", "127.0.0.1"])
        .finish()
        .await
        .expect("ctl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(origins(&page), [by_origin[1].clone()]);
    let out = tokio::process::Command::new(bin())
        .args(["ctl", &addr.to_string(), "sites", "--sort", "size"])
        .finish()
        .await
        .expect("ctl runs");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("parameter sort"));
}

/// The position of an origin among the web's sites (discovery order of the seeds).
fn names_index(web: &TestWeb, origin: &str) -> usize {
    ["site00", "site01", "site02"]
        .iter()
        .position(|s| web.origin(s) == origin)
        .expect("a site of the web")
}

#[tokio::test]
async fn a_seeds_file_of_a_million_lines_names_its_bad_lines_and_crawls_the_rest_once() {
    let web = TestWeb::start(GenOptions::new(3, 4).seed(4).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = tmp.path().join("seeds.txt");
    let seeds = [
        web.url("site00", "/"),
        web.url("site01", "/"),
        web.url("site02", "/"),
    ];
    // Line numbers (from 1) of the malformed lines: 15 of them, so 10 are named.
    let bad: Vec<u64> = vec![
        2, 7, 1_000, 65_536, 400_000, 500_001, 600_000, 700_000, 800_000, 900_000, 950_000,
        990_000, 999_000, 999_999, 1_000_000,
    ];
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    for n in 1..=1_000_000u64 {
        if bad.contains(&n) {
            match n % 3 {
                0 => writeln!(file, "not a url at all"),
                1 => writeln!(file, "ftp://127.0.0.1/file"),
                _ => file.write_all(b"http://\xff\xfe/\n"),
            }
        } else {
            writeln!(file, "{}", seeds[(n % 3) as usize])
        }
        .expect("write");
    }
    file.flush().expect("flush");
    drop(file);
    let out = tokio::process::Command::new(bin())
        .args(["crawl", "--headless", "--delay-ms", "0", "--seeds-file"])
        .arg(&path)
        .finish()
        .await
        .expect("crawl runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("the seeds file"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning: {stderr}");
    let warning = warnings[0];
    let named: Vec<String> = bad[..10].iter().map(|n| format!("line {n} (")).collect();
    for n in &named {
        assert!(warning.contains(n.as_str()), "{n} in {warning}");
    }
    assert!(!warning.contains("line 950000 ("), "{warning}");
    assert!(
        warning.contains("15 malformed lines skipped")
            && warning.contains("and 5 more")
            && warning.contains(&format!(
                "{} duplicate lines counted once",
                1_000_000 - bad.len() - 3
            )),
        "{warning}"
    );
    assert!(stderr.len() < 10_000, "no line per bad line: {stderr}");
    // Every seed was fetched, once.
    let records = web.log().records();
    for (site, seed) in ["site00", "site01", "site02"].iter().zip(&seeds) {
        let asked = records
            .iter()
            .filter(|r| r.site == *site && r.path == "/")
            .count();
        assert_eq!(asked, 1, "{seed} fetched once");
    }
}

/// Crawls `seeds` until the live site's server has answered `requests` requests in all, pauses,
/// and returns how many sites have never been contacted once nothing is in flight.
async fn untried_sites_when_the_live_site_is_done(
    web: &TestWeb,
    seeds: Vec<String>,
    requests: usize,
) -> usize {
    use crawltop::engine::Command;
    use crawltop::robots::RobotsState;
    use crawltop::snapshot::{CommandSource, RunState};

    let cfg = CrawlConfig {
        seeds,
        workers: 8,
        delay_ms: 0,
        ..CrawlConfig::default()
    };
    let handle = crawltop::engine::spawn(cfg).expect("starts");
    let cmd = handle.commander();
    let mut snaps = handle.snapshots();
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= requests))
        .await
        .expect("the live site crawled");
    // The order of events, not speed: at this moment, which dead sites were still untried?
    cmd.send(Command::Pause, CommandSource::Library);
    tokio::time::timeout(
        PATIENCE,
        snaps.wait_for(|s| s.state == RunState::Paused && s.scheduler.assigned == 0),
    )
    .await
    .expect("paused in time")
    .expect("the crawl is running");
    // The table is written in the same tick as that snapshot, so it is as settled as it.
    let untried = handle
        .sites()
        .rows()
        .iter()
        .filter(|r| r.robots_state == RobotsState::Discovered)
        .count();
    cmd.send(Command::Stop, CommandSource::Library);
    // Bounded: a stop that is never carried out fails the test instead of hanging it.
    tokio::time::timeout(PATIENCE, handle.finished())
        .await
        .expect("the crawl ends within PATIENCE of the stop")
        .expect("stops");
    untried
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_that_answers_is_crawled_before_thousands_of_dead_origins_are_first_tried() {
    const DEAD: usize = 5_000;
    let web = TestWeb::start(GenOptions::new(1, 20).seed(12).crawl_delay_s(0.0))
        .await
        .expect("web");
    let live = web.url("site00", "/");
    // Alone, to learn what the live site's crawl asks of its server.
    let alone = CrawlConfig {
        seeds: vec![live.clone()],
        delay_ms: 0,
        ..CrawlConfig::default()
    };
    // Bounded: a crawl that never ends fails the test instead of hanging it.
    let summary = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        crawltop::engine::spawn(alone).expect("starts").finished(),
    )
    .await
    .expect("the crawl ends by itself")
    .expect("crawl");
    assert!(summary.completed);
    let requests = web.log().len() as usize;
    // Nothing listens on this port but on 127.0.0.1: a connection to 127.0.x.y there is
    // refused at once, and each such origin's robots.txt is retried with backoff.
    let guard = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = guard.local_addr().expect("its address").port();
    let mut seeds = vec![live];
    seeds
        .extend((0..DEAD).map(|i| format!("http://127.0.{}.{}:{port}/", 1 + i / 250, 1 + i % 250)));
    let untried = untried_sites_when_the_live_site_is_done(&web, seeds, 2 * requests).await;
    // The live site's links are at depth 1 and more, the dead seeds at depth 0: in Mercator's
    // order every dead origin gets its first contact before the live site's second page
    // (untried: 0). Sites that answered go first while those that never did hold their share.
    assert!(
        untried >= DEAD / 2,
        "{untried} of {DEAD} dead origins untried when the live site was done"
    );
    drop(guard);
}
