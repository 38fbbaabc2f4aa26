//! What odd servers do to robots.txt and politeness, judged at the server: robots.txt
//! redirected, in codings crawltop cannot decode, stalled, failing when asked again; Crawl-delay
//! and Retry-After too long to count; groups, meta robots and `X-Robots-Tag` for the name
//! crawltop sends. Each site is a small server ([`crate::quirky`]).

use std::collections::BTreeMap;

use crawltop::store::committer::StoreKind;

use crate::engine::{config, crawl};
use crate::quirky::*;

/// RFC 9309 2.3.1.2: five redirects of robots.txt are followed and the rules at the end
/// obeyed; past five the file is taken as unavailable (everything allowed), as the site's
/// state says.
#[tokio::test]
async fn robots_txt_redirects_are_followed_five_times_and_no_more() {
    for (hops, secret_asked, state) in [(5, false, "handled"), (6, true, "unexisting")] {
        let mut answers = BTreeMap::new();
        answers.insert("/".to_owned(), linking(&["/secret.html", "/ok.html"]));
        for page in ["/secret.html", "/ok.html"] {
            answers.insert(page.to_owned(), Answer::html("<p>a page</p>"));
        }
        answers.insert("/robots.txt".to_owned(), Answer::moved("/r/1"));
        for n in 1..hops {
            answers.insert(format!("/r/{n}"), Answer::moved(&format!("/r/{}", n + 1)));
        }
        answers.insert(
            format!("/r/{hops}"),
            Answer::new(&[], "User-agent: *\nDisallow: /secret.html\n"),
        );
        let (origin, asked) = quirky_site(answers).await;
        let mut cfg = config(vec![format!("{origin}/")]);
        cfg.delay_ms = 0;
        let crawled = crawl(cfg).await;
        assert!(crawled.summary.completed);
        let asked = asked.paths();
        let robots_hops = asked
            .iter()
            .filter(|p| *p == "/robots.txt" || p.starts_with("/r/"))
            .count();
        assert_eq!(robots_hops, 6.min(hops + 1), "{hops} redirects: {asked:?}");
        assert_eq!(
            asked.iter().any(|p| p == "/secret.html"),
            secret_asked,
            "{hops} redirects: {asked:?}"
        );
        assert!(asked.iter().any(|p| p == "/ok.html"), "{asked:?}");
        assert_eq!(
            crawled.stats["sites"][0]["robots_state"], state,
            "{hops} redirects"
        );
    }
}

/// A robots.txt that redirects to another crawled origin's own robots.txt (`http://` to
/// `https://` of one host, on the real web) is answered by that origin's answer: the file is
/// asked once, and its rules hold for both sites.
#[tokio::test]
async fn a_robots_txt_redirected_to_another_sites_robots_txt_is_asked_there_once() {
    let site = |robots: Answer| {
        let mut answers = BTreeMap::new();
        answers.insert("/".to_owned(), linking(&["/secret.html", "/ok.html"]));
        for page in ["/secret.html", "/ok.html"] {
            answers.insert(page.to_owned(), Answer::html("<p>a page</p>"));
        }
        answers.insert("/robots.txt".to_owned(), robots);
        answers
    };
    let rules = Answer::new(&[], "User-agent: *\nDisallow: /secret.html\n");
    let (x, x_asked) = quirky_site(site(rules)).await;
    let (a, a_asked) = quirky_site(site(Answer::moved(&format!("{x}/robots.txt")))).await;
    let mut cfg = config(vec![format!("{x}/"), format!("{a}/")]);
    cfg.delay_ms = 0;
    let crawled = crawl(cfg).await;
    assert!(crawled.summary.completed);
    for (origin, asked, robots) in [(&x, &x_asked, 1), (&a, &a_asked, 1)] {
        let asked = asked.paths();
        let count = |p: &str| asked.iter().filter(|a| *a == p).count();
        assert_eq!(count("/robots.txt"), robots, "{origin}: {asked:?}");
        assert_eq!(count("/secret.html"), 0, "{origin}: {asked:?}");
        assert_eq!(count("/ok.html"), 1, "{origin}: {asked:?}");
    }
    for row in crawled.stats["sites"].as_array().expect("sites") {
        assert_eq!(row["robots_state"], "handled", "{row}");
    }
}

/// A robots.txt hop owed to a busy site goes first on that site's next turn: it does not wait
/// behind the site's own queue (30 pages at 100 ms there), which is polite all the same.
#[tokio::test]
async fn a_robots_txt_hop_to_a_busy_site_goes_first_on_its_next_turn() {
    let rules = Answer::new(&[], "User-agent: *\nDisallow: /secret.html\n");
    // Its pages take a while to answer, so its next turn is always a little later than the
    // turn the hop was told to wait for.
    let slow = std::time::Duration::from_millis(30);
    let (z, z_asked) = quirky_site(site_of_slow_pages(30, slow, &[("/policy.txt", rules)])).await;
    let moved = Answer {
        status: 302,
        ..Answer::new(&[("Location", &format!("{z}/policy.txt"))], "")
    };
    let (a, a_asked) = quirky_site(site_of_pages(2, &[("/robots.txt", moved)])).await;
    let mut cfg = config(vec![format!("{z}/"), format!("{a}/")]);
    cfg.delay_ms = 100;
    let crawled = crawl(cfg).await;
    assert!(crawled.summary.completed);
    let at_z = z_asked.paths();
    let hop = at_z
        .iter()
        .position(|p| p == "/policy.txt")
        .expect("the hop was made");
    assert!(hop <= 2, "the hop waited behind z's queue: {at_z:?}");
    assert_eq!(at_z.len(), 2 + 30 + 1, "{at_z:?}");
    assert!(a_asked.paths().iter().any(|p| p == "/p1.html"));
}

/// A robots.txt hop answered 429 with Retry-After backs off the site it landed on, as that
/// site's own 429 would: no request there until the wait is over.
#[tokio::test]
async fn a_robots_txt_hop_answered_429_backs_off_the_site_it_landed_on() {
    let busy = Answer {
        status: 429,
        ..Answer::new(&[("Retry-After", "2")], "slow down")
    };
    let (z, z_asked) = quirky_site(site_of_pages(10, &[("/policy.txt", busy)])).await;
    let moved = Answer {
        status: 302,
        ..Answer::new(&[("Location", &format!("{z}/policy.txt"))], "")
    };
    let (a, _) = quirky_site(site_of_pages(2, &[("/robots.txt", moved)])).await;
    let mut cfg = config(vec![format!("{z}/"), format!("{a}/")]);
    cfg.delay_ms = 50;
    cfg.robots_retries = 1;
    let crawled = crawl(cfg).await;
    assert!(crawled.summary.completed);
    let at_z = z_asked.timed();
    let (first_429, at) = at_z
        .iter()
        .enumerate()
        .find(|(_, (p, _))| p == "/policy.txt")
        .map(|(i, (_, t))| (i, *t))
        .expect("the hop was made");
    let next = at_z.get(first_429 + 1).expect("z was crawled on");
    assert!(
        next.1.duration_since(at) >= std::time::Duration::from_secs(2),
        "{} came {:?} after the 429: {:?}",
        next.0,
        next.1.duration_since(at),
        at_z.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
}

/// A Crawl-delay too long for a number of seconds to hold (`inf`, `1e300`, 2^64) asks for the
/// slowest pace there is: the cap, as a merely huge one gets, not the crawler's fastest.
#[tokio::test]
async fn a_crawl_delay_too_long_to_count_is_obeyed_at_the_cap() {
    for value in ["inf", "1e300", "18446744073709551616"] {
        let robots = Answer::new(&[], format!("User-agent: *\nCrawl-delay: {value}\n"));
        let (origin, asked) = quirky_site(site_of_pages(3, &[("/robots.txt", robots)])).await;
        let mut cfg = config(vec![format!("{origin}/")]);
        cfg.delay_ms = 10;
        cfg.max_crawl_delay_ms = 300;
        let crawled = crawl(cfg).await;
        assert!(crawled.summary.completed, "{value}");
        let pages: Vec<_> = asked
            .timed()
            .into_iter()
            .filter(|(p, _)| p != "/robots.txt")
            .collect();
        assert_eq!(pages.len(), 4, "{value}: {pages:?}");
        for pair in pages.windows(2) {
            let gap = pair[1].1.duration_since(pair[0].1);
            assert!(
                gap >= std::time::Duration::from_millis(300),
                "{value}: {} came {gap:?} after {}",
                pair[1].0,
                pair[0].0
            );
        }
        let row = &crawled.summary.snapshot.sites[0];
        assert_eq!(row.crawl_delay_ms, Some(300), "{value}");
        assert_eq!(row.crawl_delay_asked_ms, Some(u64::MAX), "{value}");
        let said = crawled.summary.snapshot.log.iter().any(|l| {
            l.message
                .contains("Crawl-delay too long to count capped to 0.3 s")
        });
        assert!(said, "{value}: {:?}", crawled.summary.snapshot.log);
    }
}

/// A robots.txt in a content coding crawltop does not decode (zstd, never asked for) holds
/// rules that cannot be read: it is retried as an unreachable one, then read as a full
/// disallow. Before, its bytes were parsed as they came: garbage, so "no rules", every page
/// allowed. The responses are kept and counted once each.
#[tokio::test]
async fn a_robots_txt_in_a_coding_crawltop_cannot_decode_disallows_the_site() {
    let zstd = Answer::new(
        &[("Content-Encoding", "zstd"), ("Content-Type", "text/plain")],
        b"\x28\xb5\x2f\xfd\x00\x58\x31\x00\x00".to_vec(),
    );
    let (origin, asked) = quirky_site(site_of_pages(3, &[("/robots.txt", zstd)])).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(vec![format!("{origin}/")]);
    cfg.delay_ms = 0;
    cfg.robots_retries = 1;
    cfg.out = Some(dir.path().join("crawl"));
    cfg.store = StoreKind::Warc;
    let crawled = crawl(cfg).await;
    assert!(crawled.summary.completed);
    assert_eq!(
        asked.paths(),
        ["/robots.txt", "/robots.txt"],
        "asked once and retried once; no page"
    );
    let seed = &crawled.urls[&format!("{origin}/")];
    assert_eq!(seed["reason"], "robots.txt unreachable", "{seed}");
    let snapshot = &crawled.summary.snapshot;
    assert_eq!(
        snapshot.http.status.get("200"),
        Some(&2),
        "{:?}",
        snapshot.http
    );
    let said = snapshot.log.iter().any(|l| {
        l.message
            .contains("content coding crawltop does not decode (zstd)")
    });
    assert!(said, "{:?}", snapshot.log);
    let warc = crate::util::read_warc(&dir.path().join("crawl/warc"));
    let kept: Vec<_> = warc
        .robots
        .iter()
        .map(|r| (r.status, r.body.len()))
        .collect();
    assert_eq!(kept, [(200, 9), (200, 9)], "each answer kept as it came");
}

/// Audit 28 #5: a Retry-After past the crawl's 5-minute cap is waited only that long, so the
/// site is asked again before the time it gave: the crawl says so rather than stay silent.
#[tokio::test]
async fn a_retry_after_past_the_cap_is_named_when_it_is_cut() {
    let refused = Answer {
        status: 503,
        ..Answer::new(&[("Retry-After", "400")], "come back later")
    };
    let (origin, asked) = quirky_site(site_of_pages(0, &[("/", refused)])).await;
    let output = crawl_by_cli(&origin, &["--max-retries", "0"]).await;
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{err}");
    assert_eq!(
        asked.paths(),
        ["/robots.txt", "/"],
        "{err}: {:?}",
        asked.paths()
    );
    assert!(
        err.contains(&format!("{origin}/: Retry-After 400 s capped to 300 s")),
        "{err}"
    );
}

/// Audit 28 #3: a crawl sent under another name (`--user-agent`) obeys the robots.txt group of
/// that name, as its owner, who reads the name in their logs, expects; a group naming a version
/// (`crawltop/1.0`) applies to crawltop.
#[tokio::test]
async fn a_crawl_obeys_the_group_of_the_name_it_sends() {
    let robots = Answer::new(
        &[],
        "User-agent: auditbot\nDisallow: /\n\nUser-agent: crawltop/1.0\nDisallow: /p1.html\n\n\
         User-agent: *\nAllow: /\n",
    );
    let (origin, asked) = quirky_site(site_of_pages(3, &[("/robots.txt", robots.clone())])).await;
    let mut cfg = config(vec![format!("{origin}/")]);
    cfg.user_agent = "auditbot/1.0 (+mailto:audit@example.invalid)".into();
    let crawled = crawl(cfg).await;
    assert!(crawled.summary.completed);
    assert_eq!(asked.paths(), ["/robots.txt"]);

    let (origin, asked) = quirky_site(site_of_pages(3, &[("/robots.txt", robots)])).await;
    let crawled = crawl(config(vec![format!("{origin}/")])).await;
    assert!(crawled.summary.completed);
    let paths = asked.paths();
    assert!(paths.iter().any(|p| p == "/p2.html"), "{paths:?}");
    assert!(!paths.iter().any(|p| p == "/p1.html"), "{paths:?}");
}

/// Audit 28 #6: with `--adaptive-delay`, a page that times out took at least the whole
/// `--timeout-ms`, and the site's delay grows as for a slow answer: it was left at the last
/// fast answer's pace, so a server slowed past the patience was asked again at once (every
/// 1.9 s under a 1.5 s timeout in the audit, three requests still being worked on at once).
#[tokio::test]
async fn an_adaptive_delay_grows_when_a_page_times_out() {
    let slow = std::time::Duration::from_secs(2);
    let (origin, asked) = quirky_site(site_of_slow_pages(4, slow, &[])).await;
    let mut cfg = config(vec![format!("{origin}/")]);
    cfg.delay_ms = 0;
    cfg.timeout_ms = 300;
    cfg.adaptive_delay = Some(2.0);
    let crawled = crawl(cfg).await;
    assert!(crawled.summary.completed);
    let pages: Vec<_> = asked
        .timed()
        .into_iter()
        .filter(|(path, _)| path.starts_with("/p"))
        .collect();
    assert_eq!(pages.len(), 4, "{pages:?}");
    for pair in pages.windows(2) {
        let gap = pair[1].1.duration_since(pair[0].1);
        // The timeout (300 ms), then twice it as the delay.
        assert!(
            gap >= std::time::Duration::from_millis(900),
            "{} came {gap:?} after {}",
            pair[1].0,
            pair[0].0
        );
    }
}

/// Audit 28 #4, the other side: a robots.txt asked again for its age that cannot be had (503)
/// leaves its last answer obeyed, as RFC 9309 section 2.4 allows, and the crawl says so; it
/// does not stop the site as a first answer's 503 would.
#[tokio::test]
async fn a_robots_txt_that_fails_when_asked_again_keeps_its_last_answer() {
    let rules = Answer {
        then: Some(Box::new(Answer {
            status: 503,
            ..Answer::new(&[], "down for maintenance")
        })),
        ..Answer::new(&[], "User-agent: *\nDisallow: /p1.html\n")
    };
    let slow = std::time::Duration::from_millis(150);
    let (origin, asked) =
        quirky_site(site_of_slow_pages(12, slow, &[("/robots.txt", rules)])).await;
    let output = crawl_by_cli(&origin, &["--delay-ms", "0", "--robots-max-age-ms", "1000"]).await;
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{err}");
    let paths = asked.paths();
    let again = paths
        .iter()
        .skip(1)
        .position(|p| p == "/robots.txt")
        .map(|i| i + 1)
        .expect("asked again");
    let after: Vec<&String> = paths[again..]
        .iter()
        .filter(|p| p.ends_with(".html"))
        .collect();
    assert!(!after.is_empty(), "{paths:?}");
    assert!(!paths.contains(&"/p1.html".to_owned()), "{paths:?}");
    for i in [0, 2, 11] {
        assert!(paths.contains(&format!("/p{i}.html")), "{paths:?}");
    }
    assert!(
        err.contains("robots.txt could not be fetched again; its last answer is obeyed"),
        "{err}"
    );
}

/// `X-Robots-Tag` is obeyed as the meta tag is: a page whose response says `noindex` is not
/// searchable (at the crawl, nor once the index is built again from the WARC files), one that
/// says `nofollow` has its links left alone (judged at the server), and directives for another
/// agent change nothing.
#[tokio::test]
async fn x_robots_tag_headers_are_obeyed_at_the_crawl_and_when_the_index_is_built_again() {
    let tagged = |value: &str, body: &str| {
        Answer::new(
            &[("Content-Type", "text/html"), ("X-Robots-Tag", value)],
            body,
        )
    };
    let answers = BTreeMap::from([
        (
            "/".to_owned(),
            linking(&[
                "/noindex.html",
                "/nofollow.html",
                "/other.html",
                "/none.html",
            ]),
        ),
        (
            "/noindex.html".to_owned(),
            tagged(
                "noindex",
                "<p>zebranoindex</p><a href=\"/after-noindex.html\">x</a>",
            ),
        ),
        (
            "/nofollow.html".to_owned(),
            tagged(
                "nofollow",
                "<p>zebranofollow</p><a href=\"/behind.html\">x</a>",
            ),
        ),
        (
            "/other.html".to_owned(),
            tagged(
                "otherbot: none",
                "<p>zebraother</p><a href=\"/after-other.html\">x</a>",
            ),
        ),
        (
            "/none.html".to_owned(),
            tagged(
                "crawltop: none",
                "<p>zebranone</p><a href=\"/behind-none.html\">x</a>",
            ),
        ),
        ("/after-noindex.html".to_owned(), Answer::html("<p>x</p>")),
        ("/after-other.html".to_owned(), Answer::html("<p>x</p>")),
        ("/behind.html".to_owned(), Answer::html("<p>x</p>")),
        ("/behind-none.html".to_owned(), Answer::html("<p>x</p>")),
    ]);
    let (origin, asked) = quirky_site(answers).await;
    let out = tempfile::tempdir().expect("tempdir");
    let dir = out.path().join("crawl");
    let mut cfg = config(vec![format!("{origin}/")]);
    cfg.delay_ms = 0;
    cfg.out = Some(dir.clone());
    cfg.store = StoreKind::Warc;
    let crawled = crawl(cfg).await;
    assert!(crawled.summary.completed);

    let paths = asked.paths();
    for followed in ["/after-noindex.html", "/after-other.html"] {
        assert!(paths.iter().any(|p| p == followed), "{followed}: {paths:?}");
    }
    for behind in ["/behind.html", "/behind-none.html"] {
        assert!(!paths.iter().any(|p| p == behind), "{behind}: {paths:?}");
    }

    let url = |path: &str| format!("{origin}{path}");
    let found = |after: &str| {
        let reader = crawltop::index::IndexReader::open(&dir.join("index")).expect("index");
        let searched = |word: &str| {
            let hits = reader.search(word, 10).expect("search");
            hits.into_iter().map(|h| h.url).collect::<Vec<_>>()
        };
        assert_eq!(
            searched("zebranofollow"),
            [url("/nofollow.html")],
            "{after}"
        );
        assert_eq!(searched("zebraother"), [url("/other.html")], "{after}");
        for word in ["zebranoindex", "zebranone"] {
            assert_eq!(searched(word), Vec::<String>::new(), "{word} {after}");
        }
    };
    found("at the crawl");
    index_again(&dir);
    found("built again");
}

/// A crawl sent under another name (`--user-agent auditbot/1.0 ...`) obeys the robots `<meta>`
/// and `X-Robots-Tag` directives addressed to that name, as it obeys its robots.txt group, and
/// no longer those addressed to `crawltop`: judged at the server (which links were followed)
/// and by `crawltop search`, at the crawl and once `crawltop index --replace` has built the
/// index again from the WARC files (which read the name from each page's request record).
#[tokio::test]
async fn a_crawl_obeys_the_meta_robots_and_x_robots_tag_of_the_name_it_sends() {
    let meta = |name: &str, word: &str, link: &str| {
        Answer::html(format!(
            "<html><head><meta name=\"{name}\" content=\"noindex\"></head>\
             <body><p>{word}</p><a href=\"{link}\">x</a></body></html>"
        ))
    };
    let tagged = |value: &str, word: &str, link: &str| {
        Answer::new(
            &[("Content-Type", "text/html"), ("X-Robots-Tag", value)],
            format!("<p>{word}</p><a href=\"{link}\">x</a>"),
        )
    };
    let answers = BTreeMap::from([
        (
            "/".to_owned(),
            linking(&[
                "/meta-auditbot.html",
                "/meta-crawltop.html",
                "/tag-auditbot.html",
                "/tag-crawltop.html",
            ]),
        ),
        (
            "/meta-auditbot.html".to_owned(),
            meta("AuditBot", "zebrametaaudit", "/after-meta-auditbot.html"),
        ),
        (
            "/meta-crawltop.html".to_owned(),
            meta("crawltop", "zebrametacrawltop", "/after-meta-crawltop.html"),
        ),
        (
            "/tag-auditbot.html".to_owned(),
            tagged(
                "otherbot: noindex, auditbot: nofollow",
                "zebratagaudit",
                "/behind-tag-auditbot.html",
            ),
        ),
        (
            "/tag-crawltop.html".to_owned(),
            tagged(
                "crawltop: none",
                "zebratagcrawltop",
                "/after-tag-crawltop.html",
            ),
        ),
        (
            "/after-meta-auditbot.html".to_owned(),
            Answer::html("<p>x</p>"),
        ),
        (
            "/after-meta-crawltop.html".to_owned(),
            Answer::html("<p>x</p>"),
        ),
        (
            "/behind-tag-auditbot.html".to_owned(),
            Answer::html("<p>x</p>"),
        ),
        (
            "/after-tag-crawltop.html".to_owned(),
            Answer::html("<p>x</p>"),
        ),
    ]);
    let (origin, asked) = quirky_site(answers).await;
    let out = tempfile::tempdir().expect("tempdir");
    let dir = out.path().join("crawl");
    let dir_s = dir.to_str().expect("a UTF-8 temp path");
    let output = crawl_by_cli(
        &origin,
        &[
            "--user-agent",
            "auditbot/1.0 (+mailto:audit@example.invalid)",
            "--out",
            dir_s,
            "--delay-ms",
            "0",
        ],
    )
    .await;
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{err}");

    // A noindex page's links are followed; a nofollow page's are not, for auditbot only.
    let paths = asked.paths();
    for followed in [
        "/after-meta-auditbot.html",
        "/after-meta-crawltop.html",
        "/after-tag-crawltop.html",
    ] {
        assert!(paths.iter().any(|p| p == followed), "{followed}: {paths:?}");
    }
    assert!(
        !paths.iter().any(|p| p == "/behind-tag-auditbot.html"),
        "{paths:?}"
    );

    let found = |after: &str| {
        let searched = |word: &str| {
            let hits = crate::util::json_of(&["search", dir_s, word, "--json"]);
            hits.as_array()
                .expect("hits")
                .iter()
                .map(|h| h["url"].as_str().expect("url").to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(searched("zebrametaaudit"), Vec::<String>::new(), "{after}");
        for (word, path) in [
            ("zebrametacrawltop", "/meta-crawltop.html"),
            ("zebratagaudit", "/tag-auditbot.html"),
            ("zebratagcrawltop", "/tag-crawltop.html"),
        ] {
            assert_eq!(
                searched(word),
                [format!("{origin}{path}")],
                "{word} {after}"
            );
        }
    };
    found("at the crawl");
    index_again(&dir);
    found("built again");
}

/// A robots.txt whose status came but whose body stalled: a 404 still allows the site (its
/// status says there are no rules, whatever its body), a 200 cut short still gives no rules
/// (the site is retried, then given up). Both responses are in the WARC files, marked cut.
#[tokio::test]
async fn a_robots_txt_whose_body_stalls_stands_on_its_status_and_is_archived_cut() {
    let stalling = |status: u16| Answer {
        status,
        stall_after: Some(10),
        ..Answer::new(
            &[("Content-Type", "text/plain")],
            "User-agent: *\nDisallow: /a.html\n",
        )
    };
    let site = |status: u16| {
        BTreeMap::from([
            ("/robots.txt".to_owned(), stalling(status)),
            ("/".to_owned(), linking(&["/a.html"])),
            ("/a.html".to_owned(), Answer::html("<p>x</p>")),
        ])
    };
    let (missing, missing_asked) = quirky_site(site(404)).await;
    let (cut, cut_asked) = quirky_site(site(200)).await;
    let out = tempfile::tempdir().expect("tempdir");
    let dir = out.path().join("crawl");
    let mut cfg = config(vec![format!("{missing}/"), format!("{cut}/")]);
    cfg.delay_ms = 0;
    cfg.timeout_ms = 500;
    cfg.robots_retries = 0;
    cfg.out = Some(dir.clone());
    cfg.store = StoreKind::Warc;
    let crawled = crawl(cfg).await;
    assert!(crawled.summary.completed);

    assert_eq!(
        missing_asked.paths(),
        ["/robots.txt", "/", "/a.html"],
        "a 404 allows all"
    );
    assert_eq!(
        cut_asked.paths(),
        ["/robots.txt"],
        "no rules from part of a 200"
    );

    let warc = crate::util::read_warc(&dir.join("warc"));
    let robots: Vec<_> = warc
        .robots
        .iter()
        .map(|r| {
            (
                r.uri.as_str(),
                r.status,
                r.truncated.as_deref(),
                r.body.len(),
            )
        })
        .collect();
    let missing_robots = format!("{missing}/robots.txt");
    let cut_robots = format!("{cut}/robots.txt");
    for (uri, status) in [(&missing_robots, 404), (&cut_robots, 200)] {
        assert!(
            robots.contains(&(uri.as_str(), status, Some("time"), 10)),
            "{uri}: {robots:?}"
        );
    }
}
