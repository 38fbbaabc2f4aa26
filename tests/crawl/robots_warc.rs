//! robots.txt answers in the WARC files, judged at the server: every robots.txt request the
//! server answered (200, 404, 500) is one response record with its request record, built as a
//! page's are; across kills and resumes none is stored twice, and the files cut back to a
//! checkpoint's mark hold exactly the robots.txt answers the checkpoint holds.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

use crawltop::store::checkpoint::{Checkpoint, Found};
use crawltop::store::warc_reader::{Responses, WarcReadError, held_parts};
use crawltop::testweb::generator::MOVED_ROBOTS_TXT;
use crawltop::testweb::manifest::SiteKind;
use crawltop::testweb::{GenOptions, SplitMix64, TestWeb};

use crate::engine::{config, crawl, seeds};
use crate::util::{PATIENCE, RobotsRecord, bin, client, read_warc};

/// robots.txt requests the server answered whole, from `from_us` (its clock) on, before
/// `to_us`: by URL and status.
fn answered(web: &TestWeb, from_us: u64, to_us: u64) -> BTreeMap<(String, u16), usize> {
    let mut out = BTreeMap::new();
    for r in web.log().records() {
        let robots =
            r.path == "/robots.txt" || (r.site == "robotsmoved" && r.path == MOVED_ROBOTS_TXT);
        if robots && r.status != 499 && r.complete && (from_us..to_us).contains(&r.t_us) {
            *out.entry((web.url(&r.site, &r.path), r.status))
                .or_default() += 1;
        }
    }
    out
}

/// Records by URL and status.
fn by_url_and_status<'a>(
    records: impl IntoIterator<Item = (&'a str, u16)>,
) -> BTreeMap<(String, u16), usize> {
    let mut out = BTreeMap::new();
    for (uri, status) in records {
        *out.entry((uri.to_string(), status)).or_default() += 1;
    }
    out
}

/// Each robots.txt record is built as a page's: the body the server sends, its digest, its
/// request record linked both ways, no sequence number, the origin it answers for.
async fn assert_built_like_pages(web: &TestWeb, records: &[RobotsRecord]) {
    let http = client();
    for r in records {
        let served = crate::util::served_body(&http, &r.uri).await;
        assert_eq!(r.body.as_slice(), &served[..], "{}", r.uri);
        assert!(
            r.digest_ok,
            "{}: the payload digest is not the body's",
            r.uri
        );
        assert_eq!(r.seq, None, "{}: robots.txt is not a page", r.uri);
        // Each is the origin's /robots.txt, or where robotsmoved's redirects it (for that
        // origin).
        let own = format!("{}robots.txt", r.robots_for);
        let moved = web.url("robotsmoved", MOVED_ROBOTS_TXT);
        let path = if r.uri == moved {
            assert_eq!(own, web.url("robotsmoved", "/robots.txt"), "{}", r.uri);
            MOVED_ROBOTS_TXT
        } else {
            assert_eq!(own, r.uri);
            "/robots.txt"
        };
        assert!(
            web.manifest()
                .sites
                .iter()
                .any(|s| web.url(&s.name, "/robots.txt") == own),
            "{}",
            r.uri
        );
        let request = r
            .request
            .as_deref()
            .unwrap_or_else(|| panic!("{}: no request record linked", r.uri));
        let request = String::from_utf8_lossy(request);
        assert!(
            request.starts_with(&format!("GET {path} HTTP/1.1\r\n"))
                && request.contains("User-Agent: "),
            "{request}"
        );
    }
}

#[tokio::test]
async fn every_robots_txt_answer_the_server_gave_is_one_record_in_the_warc_files() {
    let web = TestWeb::start(GenOptions::new(4, 8).seed(5).hostile(true))
        .await
        .expect("web");
    let out = tempfile::tempdir().expect("tempdir");
    let mut seeds = seeds(&web, SiteKind::Normal);
    seeds.push(web.url("robots500", "/"));
    seeds.push(web.url("robotsmoved", "/"));
    let mut cfg = config(seeds);
    cfg.delay_ms = 0;
    cfg.robots_retries = 1;
    cfg.out = Some(out.path().to_path_buf());
    let crawled = crawl(cfg).await;
    assert!(crawled.summary.completed);

    let served = answered(&web, 0, u64::MAX);
    // Not vacuous: a 200, the 404 of the site without one, robotsmoved's 301, and robots500's
    // try and retry.
    let statuses: Vec<u16> = served.keys().map(|(_, s)| *s).collect();
    assert!(
        statuses.contains(&200) && statuses.contains(&404) && statuses.contains(&301),
        "{served:?}"
    );
    assert_eq!(
        served.get(&(web.url("robots500", "/robots.txt"), 500)),
        Some(&2),
        "{served:?}"
    );
    let warc = read_warc(&out.path().join("warc"));
    let stored = by_url_and_status(warc.robots.iter().map(|r| (r.uri.as_str(), r.status)));
    assert_eq!(stored, served, "one record per answered robots.txt request");
    assert_built_like_pages(&web, &warc.robots).await;
    // The pages are as they were: none of them is a robots.txt record.
    assert!(warc.counts.keys().all(|u| !u.ends_with("/robots.txt")));
    assert_eq!(
        warc.counts.len() as u64,
        crawled.summary.snapshot.commit.committed
    );
}

/// A crawl of the normal sites and robots500 (whose retries, 1 s and 2 s apart, spread its
/// robots.txt requests over the run), checkpointing often.
fn crawl_command(web: &TestWeb, out: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(bin());
    cmd.arg("crawl");
    for site in web.manifest().normal_sites() {
        if site.kind == SiteKind::Normal {
            cmd.arg(web.url(&site.name, "/"));
        }
    }
    cmd.arg(web.url("robots500", "/"))
        .args([
            "--headless",
            "--delay-ms",
            "15",
            "--workers",
            "4",
            "--checkpoint-ms",
            "100",
            "--robots-retries",
            "2",
            "--out",
        ])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// A robots.txt record a checkpoint holds: URL, status, body.
type Held = (String, u16, Vec<u8>);

/// What a checkpoint's site rows say robots.txt answered: URL -> status and body.
type Answers = BTreeMap<String, (u16, Vec<u8>)>;

/// What the killed crawl's checkpoint holds: its robots.txt records (read up to the mark, as a
/// resume keeps them), and what each site's row says robots.txt answered (URL -> status and
/// body, for the answers the crawl obeys).
fn held(out: &Path) -> (Vec<Held>, Answers) {
    let loaded = match Checkpoint::find(out).expect("the checkpoint reads") {
        Found::Unfinished(loaded) | Found::Finished(loaded) => loaded,
        Found::Nothing => panic!("no checkpoint"),
    };
    let mut answers = BTreeMap::new();
    for (_, row) in &loaded.sites {
        let row: serde_json::Value = serde_json::from_slice(row).expect("a site row");
        let robots = &row["robots"];
        if robots["kind"] == "response" {
            let body = data_encoding::BASE64
                .decode(robots["body"].as_str().expect("body").as_bytes())
                .expect("base64");
            let status = u16::try_from(robots["status"].as_u64().expect("status")).expect("u16");
            let origin = row["origin"].as_str().expect("origin");
            answers.insert(format!("{origin}robots.txt"), (status, body));
        }
    }
    let parts = match held_parts(&out.join("warc"), Some(&loaded.mark)) {
        Ok(parts) => parts,
        Err(WarcReadError::NoWarc(_)) => Vec::new(),
        Err(e) => panic!("{e}"),
    };
    let records = Responses::of(parts)
        .map(|r| r.expect("a record below the mark reads"))
        .filter(|r| r.robots_for.is_some())
        .map(|r| (r.target_uri, r.status, r.body))
        .collect();
    (records, answers)
}

#[tokio::test]
async fn killed_and_resumed_crawls_store_each_robots_txt_answer_once() {
    let web = TestWeb::start(GenOptions::new(5, 20).seed(31).hostile(true))
        .await
        .expect("web");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("crawl");
    // Kill points, random but the same on every run of the test: early in each run, where
    // robots.txt is fetched.
    let mut rng = SplitMix64::new(0x0b07);
    let mut held_before: BTreeMap<(String, u16), usize> = BTreeMap::new();
    let mut kills = 0;
    loop {
        let started = web.log().now_us();
        let mut child = crawl_command(&web, &out).spawn().expect("spawn");
        let ended = if kills == 4 {
            let status = tokio::time::timeout(PATIENCE * 2, child.wait())
                .await
                .expect("the last run ends")
                .expect("status");
            assert!(status.success(), "the last run failed: {status:?}");
            true
        } else {
            let at = web.log().records().len() + 1 + usize::try_from(rng.below(40)).expect("small");
            tokio::select! {
                () = web.log().wait_until(|r| r.len() >= at) => {
                    child.start_kill().expect("SIGKILL");
                    child.wait().await.expect("reaped");
                    kills += 1;
                    false
                }
                status = child.wait() => {
                    assert!(status.expect("status").success());
                    true
                }
                () = tokio::time::sleep(PATIENCE) => panic!("the crawl stalled"),
            }
        };
        if ended {
            // Every robots.txt request of the last run, uninterrupted, is stored once, and
            // nothing the checkpoint held before it is lost or stored again.
            let all = read_warc(&out.join("warc"));
            let total = by_url_and_status(all.robots.iter().map(|r| (r.uri.as_str(), r.status)));
            let mut added = total.clone();
            for (key, n) in &held_before {
                let now = added.get_mut(key).expect("a held record is kept");
                *now = now.checked_sub(*n).expect("a held record is kept");
            }
            added.retain(|_, n| *n > 0);
            assert_eq!(
                added,
                answered(&web, started, u64::MAX),
                "the last run's robots.txt answers, once each"
            );
            // A site's answer (200, 404) is stored once however often the crawl was killed.
            for site in web.manifest().normal_sites() {
                let url = web.url(&site.name, "/robots.txt");
                let answers: usize = total
                    .iter()
                    .filter(|((u, s), _)| *u == url && *s < 500)
                    .map(|(_, n)| n)
                    .sum();
                assert_eq!(answers, 1, "{url}: {total:?}");
            }
            assert_built_like_pages(&web, &all.robots).await;
            break;
        }

        // The files cut back to the mark hold exactly the answers the checkpoint holds ...
        let (records, answers) = held(&out);
        for (url, (status, body)) in &answers {
            let same: Vec<_> = records
                .iter()
                .filter(|(u, s, _)| u == url && s == status)
                .collect();
            assert_eq!(same.len(), 1, "{url}: the checkpoint holds {status}");
            assert_eq!(&same[0].2, body, "{url}");
        }
        for (url, status, _) in &records {
            if *status < 500 {
                assert_eq!(
                    answers.get(url).map(|a| a.0),
                    Some(*status),
                    "{url}: a stored answer the checkpoint does not hold"
                );
            }
        }
        // ... what they held before, and no more than this run's server answered.
        let held_now = by_url_and_status(records.iter().map(|(u, s, _)| (u.as_str(), *s)));
        let answered_now = answered(&web, started, u64::MAX);
        for (key, n) in &held_now {
            let before = held_before.get(key).copied().unwrap_or(0);
            assert!(*n >= before, "{key:?}: {before} held before, {n} now");
            let ran = answered_now.get(key).copied().unwrap_or(0);
            assert!(
                n - before <= ran,
                "{key:?}: {} stored by a run whose server answered {ran}",
                n - before
            );
        }
        assert!(held_before.keys().all(|k| held_now.contains_key(k)));
        held_before = held_now;
    }
    assert!(
        kills >= 3,
        "the crawl ended before it was killed three times"
    );
}

/// A robots.txt chain a kill cuts (robotsmoved's 301 in, its hop not made yet) is asked again
/// from its start by the resume, and stored once: the redirect waits with the site until the
/// chain ends, so the killed run's answer never reached the files.
#[tokio::test]
async fn a_robots_txt_chain_cut_by_a_kill_is_stored_once() {
    let web = TestWeb::start(GenOptions::new(1, 2).hostile(true))
        .await
        .expect("web");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let command = || {
        let mut cmd = tokio::process::Command::new(bin());
        cmd.arg("crawl")
            .arg(web.url("robotsmoved", "/"))
            // The hop waits the site's delay: long enough to kill the crawl between the two.
            .args(["--headless", "--delay-ms", "4000", "--checkpoint-ms", "100"])
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::null())
            .kill_on_drop(true);
        cmd
    };
    let asked = |path: &str| {
        web.log()
            .records()
            .iter()
            .filter(|r| r.site == "robotsmoved" && r.path == path)
            .count()
    };
    let mut first = command().stderr(Stdio::piped()).spawn().expect("spawn");
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| !r.is_empty()))
        .await
        .expect("robots.txt asked");
    // The first progress line comes 2 s in: many checkpoints after the 301, before the hop.
    let mut stderr = first.stderr.take().expect("stderr");
    crate::util::read_stderr_until(&mut stderr, |s| s.contains("] running ")).await;
    first.start_kill().expect("SIGKILL");
    first.wait().await.expect("reaped");
    assert_eq!(
        (asked("/robots.txt"), asked(MOVED_ROBOTS_TXT)),
        (1, 0),
        "killed between the redirect and its hop"
    );
    let status = tokio::time::timeout(PATIENCE, command().stderr(Stdio::null()).status())
        .await
        .expect("the resume ends")
        .expect("status");
    assert!(status.success(), "{status:?}");
    assert_eq!((asked("/robots.txt"), asked(MOVED_ROBOTS_TXT)), (2, 1));
    let warc = read_warc(&out.join("warc"));
    let stored = by_url_and_status(warc.robots.iter().map(|r| (r.uri.as_str(), r.status)));
    let want: BTreeMap<(String, u16), usize> = [
        ((web.url("robotsmoved", "/robots.txt"), 301), 1),
        ((web.url("robotsmoved", MOVED_ROBOTS_TXT), 200), 1),
    ]
    .into();
    assert_eq!(stored, want, "the chain once");
}
