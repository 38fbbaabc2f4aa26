//! The full-text index of a crawl, judged against a brute-force scan of the pages the server
//! serves, parsed by the same parser.

use std::collections::{BTreeMap, BTreeSet};

use crawltop::index::IndexReader;
use crawltop::store::committer::StoreKind;
use crawltop::testweb::manifest::{ContentKind, SiteKind};
use crawltop::testweb::{GenOptions, TestWeb};

use crate::engine::{config, crawl, seeds};
use crate::util::{
    Finish, bin, client, crawl_with_fault, json_of, listing, read_warc, stats_after_a_failure_pause,
};

/// Whether `c` continues a word (a letter, digit, combining mark or default-ignorable code
/// point but the zero-width space), and whether it may start one (a letter or digit).
fn word_char(c: char) -> (bool, bool) {
    use icu_properties::props::{DefaultIgnorableCodePoint, GeneralCategory, GeneralCategoryGroup};
    let mark = GeneralCategoryGroup::Mark
        .contains(icu_properties::CodePointMapData::<GeneralCategory>::new().get(c));
    let ignorable = c != '\u{200b}'
        && icu_properties::CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c);
    (
        mark || ignorable || c.is_alphanumeric(),
        !mark && !ignorable && c.is_alphanumeric(),
    )
}

/// Tokens as a new index makes them: the text in NFD, then runs of letters, digits, combining
/// marks and default-ignorables (only a letter or digit starts one), the ignorables left out,
/// case-folded, in NFC, `i` + U+0307 made `i`, under 40 bytes.
fn tokens(text: &str) -> Vec<String> {
    use icu_properties::props::DefaultIgnorableCodePoint;
    let nfc = icu_normalizer::ComposingNormalizerBorrowed::new_nfc();
    let text = icu_normalizer::DecomposingNormalizerBorrowed::new_nfd().normalize(text);
    let ignorable = icu_properties::CodePointSetData::new::<DefaultIgnorableCodePoint>();
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars().chain([' ']) {
        let (continues, starts) = word_char(c);
        if starts || (continues && !word.is_empty()) {
            if !ignorable.contains(c) {
                word.push(c);
            }
            continue;
        }
        if !word.is_empty() {
            let folded = icu_casemap::CaseMapper::new().fold_string(&word);
            let token = nfc
                .normalize(&nfc.normalize(&folded).replace("i\u{307}", "i"))
                .into_owned();
            if token.len() < 40 {
                out.push(token);
            }
        }
        word.clear();
    }
    out
}

/// `line` as a hit shows it: whole up to `LINE_WINDOW` characters, else that many from
/// `LINE_LEAD` before the first token that is `word`, `…` at each cut.
fn shown(line: &str, word: &str) -> String {
    use crawltop::index::{LINE_LEAD, LINE_WINDOW};
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= LINE_WINDOW {
        return line.to_string();
    }
    let mut at = 0;
    let mut start = None;
    for i in 0..=chars.len() {
        let (continues, starts) = chars.get(i).map_or((false, false), |&c| word_char(c));
        if starts || (continues && start.is_some()) {
            start.get_or_insert(i);
            continue;
        }
        if let Some(from) = start.take()
            && tokens(&chars[from..i].iter().collect::<String>()) == [word]
        {
            at = from;
            break;
        }
    }
    let from = at.saturating_sub(LINE_LEAD);
    let to = (from + LINE_WINDOW).min(chars.len());
    let mut out: String = chars[from..to].iter().collect();
    if from > 0 {
        out.insert(0, '…');
    }
    if to < chars.len() {
        out.push('…');
    }
    out
}

#[tokio::test]
async fn search_counts_and_wc_agree_with_a_brute_force_scan() {
    let web = TestWeb::start(GenOptions::new(3, 20).seed(12).crawl_delay_s(0.01))
        .await
        .expect("web");
    let out = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(seeds(&web, SiteKind::Normal));
    cfg.delay_ms = 0;
    cfg.out = Some(out.path().to_path_buf());
    cfg.store = StoreKind::Warc;
    crawl(cfg).await;

    // The pages that must be indexed: HTML, answered 200, not noindex; in commit order.
    let order = read_warc(&out.path().join("warc")).order;
    let http = client();
    let mut pages: Vec<(String, String, String)> = Vec::new(); // (url, title, text)
    for site in web.manifest().normal_sites() {
        for p in site.pages.iter().filter(|p| p.content == ContentKind::Html) {
            if site.noindex.contains(&p.path) {
                continue;
            }
            let url = web.url(&site.name, &p.path);
            let body = crate::util::served_body(&http, &url).await;
            let parsed = crawltop::parse::parse_html(
                &body,
                Some("text/html"),
                &url::Url::parse(&url).expect("url"),
            );
            pages.push((url, parsed.title.unwrap_or_default(), parsed.text));
        }
    }
    let position: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, u)| (u.as_str(), i))
        .collect();
    pages.sort_by_key(|(u, _, _)| position.get(u.as_str()).copied().unwrap_or(usize::MAX));
    assert!(pages.len() > 40, "{} pages", pages.len());

    let reader = IndexReader::open(&out.path().join("index")).expect("index");
    let wc = reader.word_count().expect("wc");
    assert_eq!(wc.pages, pages.len() as u64);
    assert_eq!(
        wc.bytes,
        pages.iter().map(|p| p.2.len() as u64).sum::<u64>()
    );
    assert_eq!(
        wc.words,
        pages.iter().map(|p| tokens(&p.2).len() as u64).sum::<u64>()
    );
    assert_eq!(
        wc.lines,
        pages
            .iter()
            .map(|p| p.2.lines().count() as u64)
            .sum::<u64>()
    );

    for word in [
        "alice", "rabbit", "queen", "the", "hatter", "dormouse", "said", "zebra",
    ] {
        let counts: Vec<(usize, &str)> = pages
            .iter()
            .map(|(u, _, t)| (tokens(t).iter().filter(|w| *w == word).count(), u.as_str()))
            .collect();
        // The first page in commit order wins a tie.
        let max = counts.iter().map(|c| c.0).max().unwrap_or(0);
        let want_max = counts.iter().find(|c| c.0 == max && max > 0);
        let got = reader.max_count(word).expect("maxcount");
        assert_eq!(
            got.as_ref().map(|c| (c.count as usize, c.url.as_str())),
            want_max.copied(),
            "maxcount {word}"
        );
        let min = counts.iter().map(|c| c.0).filter(|n| *n > 0).min();
        let want_min = min.and_then(|m| counts.iter().find(|c| c.0 == m));
        let got = reader.min_count(word).expect("mincount");
        assert_eq!(
            got.as_ref().map(|c| (c.count as usize, c.url.as_str())),
            want_min.copied(),
            "mincount {word}"
        );
        // Search finds exactly the pages with the word in the title or the text, and shows the
        // text lines that hold it, with their numbers.
        let hits = reader.search(word, 10_000).expect("search");
        let got: BTreeSet<&str> = hits.iter().map(|h| h.url.as_str()).collect();
        let want: BTreeSet<&str> = pages
            .iter()
            .filter(|(_, title, text)| {
                tokens(title).iter().any(|w| w == word) || tokens(text).iter().any(|w| w == word)
            })
            .map(|(u, _, _)| u.as_str())
            .collect();
        assert_eq!(got, want, "search {word}");
        for hit in &hits {
            let text = &pages.iter().find(|p| p.0 == hit.url).expect("page").2;
            let want_lines: Vec<(usize, String)> = text
                .lines()
                .enumerate()
                .filter(|(_, l)| tokens(l).iter().any(|w| w == word))
                .map(|(i, l)| (i + 1, shown(l, word)))
                .collect();
            // The first of them, and how many there are.
            let first = want_lines.len().min(crawltop::index::MAX_HIT_LINES);
            assert_eq!(
                hit.lines,
                want_lines[..first],
                "lines of {} for {word}",
                hit.url
            );
            assert_eq!(hit.line_count, want_lines.len(), "{} for {word}", hit.url);
        }
    }

    // The command line says the same, and a folder without an index gets a clear error.
    let o = std::process::Command::new(bin())
        .args(["wc", out.path().to_str().expect("utf8"), "--json"])
        .output()
        .expect("wc");
    assert!(o.status.success());
    let cli: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(cli["pages"], wc.pages);
    let empty = tempfile::tempdir().expect("tempdir");
    let o = std::process::Command::new(bin())
        .args(["search", empty.path().to_str().expect("utf8"), "alice"])
        .output()
        .expect("search");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("holds no search index"));
    let o = std::process::Command::new(bin())
        .args(["search", out.path().to_str().expect("utf8"), "\"unbalanced"])
        .output()
        .expect("search");
    assert_eq!(o.status.code(), Some(2), "a clear error, not a panic");
    // A reader that stops early (`| head`): the answer is cut, not a panic.
    for args in [vec!["search", "the", "--limit", "1000"], vec!["wc"]] {
        let mut child = std::process::Command::new(bin())
            .arg(args[0])
            .arg(out.path())
            .args(&args[1..])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawns");
        drop(child.stdout.take());
        let o = child.wait_with_output().expect("ends");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{args:?}: {:?} {err}", o.status);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// Issue 13 point 5: over several folders, equal scores and counts go to the earlier commit
/// time. The same web crawled twice, one crawl after the other: every page scores and counts
/// the same in both folders, and every tie goes to the folder crawled first, whichever folder
/// is named first.
#[tokio::test]
async fn over_two_folders_ties_go_to_the_folder_crawled_first_whichever_is_named_first() {
    let web = TestWeb::start(GenOptions::new(2, 12).seed(31).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (early, late) = (tmp.path().join("early"), tmp.path().join("late"));
    for dir in [&early, &late] {
        let mut cfg = config(seeds(&web, SiteKind::Normal));
        cfg.delay_ms = 0;
        cfg.out = Some(dir.clone());
        cfg.store = StoreKind::Warc;
        crawl(cfg).await;
    }
    let (early, late) = (
        early.to_str().expect("utf8").to_string(),
        late.to_str().expect("utf8").to_string(),
    );
    for (named, early_at) in [([&early, &late], 0), ([&late, &early], 1)] {
        let [first, second] = named.map(String::as_str);
        for verb in ["maxcount", "mincount"] {
            for word in ["rabbit", "alice", "the"] {
                let found = json_of(&[verb, first, second, word, "--json"]);
                assert_eq!(
                    found["crawl"], early_at,
                    "{verb} {word} over {named:?}: {found}"
                );
            }
        }
        for word in ["rabbit", "queen"] {
            let hits = json_of(&["search", first, second, word, "--limit", "1000", "--json"]);
            let hits = hits.as_array().expect("hits");
            // url -> (place, crawl, score) of each of its two hits.
            let mut by_url: BTreeMap<&str, Vec<(usize, u64, f64)>> = BTreeMap::new();
            for (place, h) in hits.iter().enumerate() {
                let url = h["url"].as_str().expect("url");
                let crawl = h["crawl"].as_u64().expect("crawl");
                by_url.entry(url).or_default().push((
                    place,
                    crawl,
                    h["score"].as_f64().expect("score"),
                ));
            }
            assert!(by_url.len() > 5, "{word}: {} pages", by_url.len());
            for (url, both) in by_url {
                let [(place_a, crawl_a, score_a), (_, crawl_b, score_b)] = both[..] else {
                    panic!("{url} is not in both folders: {both:?}");
                };
                assert_eq!(
                    score_a.to_bits(),
                    score_b.to_bits(),
                    "{url}: the same page, the same score"
                );
                assert_eq!(
                    (crawl_a, crawl_b),
                    (early_at, 1 - early_at),
                    "search {word} over {named:?}: {url}'s early copy comes first \
                     (places {place_a} and after)"
                );
            }
        }
    }
}

/// The query verbs as a user types them (the audit's slips): options anywhere after the verb,
/// a limit of no pages refused, and one word too many for a count named as such, not taken for
/// a folder.
#[tokio::test]
async fn the_query_verbs_take_options_anywhere_and_name_a_slip() {
    let web = TestWeb::start(GenOptions::new(1, 20).seed(3))
        .await
        .expect("web");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(seeds(&web, SiteKind::Normal));
    cfg.delay_ms = 0;
    cfg.out = Some(dir.path().to_path_buf());
    crawl(cfg).await;
    let out = dir.path().to_str().expect("utf8");

    let hits = json_of(&["search", out, "--json", "rabbit", "--limit", "2"]);
    assert_eq!(hits.as_array().map(Vec::len), Some(2), "{hits}");
    let found = json_of(&["maxcount", out, "--json", "rabbit"]);
    assert!(found["count"].as_u64().is_some_and(|n| n > 0), "{found}");

    let failed = |args: &[&str], says: &str| {
        let o = std::process::Command::new(bin())
            .args(args)
            .output()
            .expect("crawltop runs");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {says:?} in {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    };
    failed(&["search", out, "--limit", "0", "rabbit"], "--limit");
    // The same folder twice (here once through a `..` path) would count its pages twice.
    let again = format!(
        "{out}/../{}",
        dir.path()
            .file_name()
            .and_then(|n| n.to_str())
            .expect("name")
    );
    failed(&["wc", out, &again], "is named twice");
    failed(&["search", out, out, "rabbit"], "is named twice");
    failed(&["search", out], "which words?");
    for verb in ["maxcount", "mincount"] {
        failed(
            &[verb, out, "white", "rabbit"],
            &format!("{verb} counts one word"),
        );
        failed(&[verb, out], "which word?");
    }
}

/// What audit 22 found the query verbs did with a slip, each now said (exit 2) instead of
/// answered as something else: a folder among the words, Lucene's `&&` and `!`, a word found
/// only in titles, a lost index, a path that is no folder, a folder name that is not UTF-8. A
/// page of many matching lines shows the first of them and how many more there are.
#[tokio::test]
async fn the_query_verbs_say_what_a_slip_would_have_searched_for() {
    use std::os::unix::ffi::OsStrExt as _;
    let lines = (0..100)
        .map(|i| format!("<p>dormouse line {i}</p>"))
        .collect::<Vec<_>>()
        .concat();
    let titled = "<!DOCTYPE html><html><head><title>Zanzibarquux</title></head><body>\
                  <p>nothing else</p></body></html>";
    let web = TestWeb::start_with(GenOptions::new(1, 10).seed(4), |o| {
        let site = o.dir.join("site00");
        std::fs::write(site.join("titled.html"), titled).expect("write");
        let many = format!("<!DOCTYPE html><html><body>{lines}</body></html>");
        std::fs::write(site.join("many.html"), many).expect("write");
    })
    .await
    .expect("web");
    let dir = tempfile::tempdir().expect("tempdir");
    let crawled = dir.path().join("crawl");
    let mut cfg = config(vec![
        web.url("site00", "/"),
        web.url("site00", "/titled.html"),
        web.url("site00", "/many.html"),
    ]);
    cfg.delay_ms = 0;
    cfg.out = Some(crawled.clone());
    crawl(cfg).await;
    let out = crawled.to_str().expect("utf8");
    let empty = dir.path().join("notcrawl");
    std::fs::create_dir(&empty).expect("an empty folder");
    let empty = empty.to_str().expect("utf8");
    let run = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new(bin())
            .args(args)
            .output()
            .expect("crawltop runs")
    };
    let failed = |args: &[&str], says: &str| {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        let o = run(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {says:?} in {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    };
    let answered = |args: &[&str]| {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        let o = run(&args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    failed(
        &["search", out, empty, "rabbit"],
        "is a folder but no crawl folder",
    );
    failed(
        &["search", out, "rabbit", out],
        "is a crawl folder after the words",
    );
    failed(
        &["search", out, "./nowhere", "rabbit"],
        "there is no such folder",
    );
    // Audit 33 F8: a mistyped folder as a shell completes it, or a path under a folder here
    // (the tests run in the crate's folder, which has `src/`), were searched for as words.
    failed(
        &["search", out, "nowhere/", "rabbit"],
        "there is no such folder",
    );
    failed(
        &["search", out, "src/x", "rabbit"],
        "there is no such folder",
    );
    answered(&["search", out, "km/h"]);
    failed(&["maxcount", out, empty], "is a folder but no crawl folder");
    // Quoted, a word that names a folder is looked for.
    answered(&["search", out, &format!("\"{empty}\"")]);
    failed(&["search", out, "rabbit && alice"], "write AND, OR and NOT");
    failed(&["search", out, "rabbit !alice"], "write AND, OR and NOT");
    assert!(answered(&["search", out, "zanzibarquux"]).contains("titled.html"));
    assert_eq!(
        answered(&["maxcount", out, "zanzibarquux"]),
        "\"zanzibarquux\" occurs in no page's text (it is in 1 page's title, which the counts \
         leave out)\n"
    );
    let shown = answered(&["search", out, "dormouse"]);
    assert_eq!(
        shown.matches(": dormouse line").count(),
        crawltop::index::MAX_HIT_LINES,
        "{shown}"
    );
    assert!(shown.contains("… and 80 more lines"), "{shown}");
    failed(&["wc", "/nonexistent/crawl"], "no such folder");

    // A folder whose name is not UTF-8 is searched like any other; a word must be UTF-8.
    let odd = dir.path().join(std::ffi::OsStr::from_bytes(b"crawl\xff"));
    std::fs::rename(&crawled, &odd).expect("renamed");
    let o = run(&["search".as_ref(), odd.as_os_str(), "rabbit".as_ref()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&[
        "search".as_ref(),
        odd.as_os_str(),
        std::ffi::OsStr::from_bytes(b"r\xffbbit"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not UTF-8"));
    std::fs::rename(&odd, &crawled).expect("renamed back");

    // An index lost from a crawled folder: the way to a new one.
    std::fs::rename(crawled.join("index"), dir.path().join("lost")).expect("index away");
    failed(
        &["wc", out],
        &format!("`crawltop index {out}` builds it again"),
    );
}

#[tokio::test]
async fn pages_are_searchable_while_the_crawl_runs() {
    let web = TestWeb::start(GenOptions::new(1, 200).seed(3))
        .await
        .expect("web");
    let out = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(vec![web.url("site00", "/")]);
    cfg.delay_ms = 100;
    cfg.out = Some(out.path().to_path_buf());
    // No page store: the folder still gets the index (and the checkpoint).
    cfg.store = crawltop::store::committer::StoreKind::None;
    let handle = crawltop::engine::spawn(cfg).expect("starts");
    // Wait (on events) until the index holds pages: commits happen about once a second.
    let dir = out.path().join("index");
    let found = tokio::time::timeout(crate::util::PATIENCE, async {
        loop {
            web.log().wait_until(|r| r.len() >= 5).await;
            if let Ok(r) = IndexReader::open(&dir)
                && r.word_count().is_ok_and(|w| w.pages > 0)
            {
                return r.word_count().expect("wc").pages;
            }
            let n = web.log().len();
            web.log().wait_until(|r| r.len() as u64 > n).await;
        }
    })
    .await
    .expect("the index fills while crawling");
    assert!(found > 0);
    let snap = handle.snapshots().borrow().clone();
    assert_eq!(snap.commit.store, "index");
    assert!(
        !out.path().join("warc").exists(),
        "no WARC with --store none"
    );
    assert_ne!(
        snap.state,
        crawltop::snapshot::RunState::Finished,
        "still crawling"
    );
    handle.abort();
    // Bounded: an abort that never ends the crawl fails the test instead of hanging it.
    let _ = tokio::time::timeout(crate::util::PATIENCE, handle.finished())
        .await
        .expect("the aborted crawl ends");
}

#[tokio::test]
async fn the_control_api_answers_queries_on_the_index() {
    use crawltop::control::{ControlOptions, client_request, serve, serve_with_index};
    let web = TestWeb::start(GenOptions::new(1, 20).seed(5))
        .await
        .expect("web");
    let out = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(vec![web.url("site00", "/")]);
    cfg.delay_ms = 0;
    cfg.out = Some(out.path().to_path_buf());
    let handle = crawltop::engine::spawn(cfg).expect("starts");
    let local = ControlOptions {
        addr: "127.0.0.1:0".parse().expect("addr"),
        token: None,
    };
    let api = serve_with_index(
        local.clone(),
        Some(out.path().join("index")),
        handle.snapshots(),
        handle.commander(),
    )
    .await
    .expect("serves");
    let bare = serve(local, handle.snapshots(), handle.commander())
        .await
        .expect("serves");
    // Bounded: a crawl that never ends fails the test instead of hanging it.
    let summary = tokio::time::timeout(std::time::Duration::from_secs(120), handle.finished())
        .await
        .expect("the crawl ends by itself")
        .expect("crawl");
    assert!(summary.completed);
    let reader = IndexReader::open(&out.path().join("index")).expect("index");
    let addr = api.local_addr();
    let get = |path: &'static str| client_request(addr, None, "GET", path);

    let (status, body) = get("/search?q=rabbit").await.expect("search");
    assert_eq!(status, 200, "{body}");
    let hits: Vec<serde_json::Value> = serde_json::from_str(&body).expect("json");
    let want: Vec<String> = reader
        .search("rabbit", 20)
        .expect("search")
        .into_iter()
        .map(|h| h.url)
        .collect();
    let got: Vec<&str> = hits
        .iter()
        .map(|h| h["url"].as_str().expect("url"))
        .collect();
    assert_eq!(got, want);
    assert!(!want.is_empty());
    let (status, body) = get("/maxcount?word=rabbit").await.expect("maxcount");
    assert_eq!(status, 200);
    let max: serde_json::Value = serde_json::from_str(&body).expect("json");
    let want = reader.max_count("rabbit").expect("max").expect("some");
    assert_eq!(
        (max["url"].as_str(), max["count"].as_u64()),
        (Some(want.url.as_str()), Some(want.count))
    );
    let (status, body) = get("/wc").await.expect("wc");
    assert_eq!(status, 200);
    let wc: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(wc["pages"], reader.word_count().expect("wc").pages);
    // A limit of the client's, within bounds.
    let (status, body) = get("/search?q=rabbit&limit=2").await.expect("search");
    assert_eq!(status, 200, "{body}");
    let two: Vec<serde_json::Value> = serde_json::from_str(&body).expect("json");
    let two: Vec<&str> = two
        .iter()
        .map(|h| h["url"].as_str().expect("url"))
        .collect();
    let want: Vec<String> = (reader.search("rabbit", 2).expect("search").into_iter())
        .map(|h| h.url)
        .collect();
    assert_eq!(two, want);
    for bad in ["0", "101", "many"] {
        let path = format!("/search?q=rabbit&limit={bad}");
        let (status, body) = client_request(addr, None, "GET", &path)
            .await
            .expect("search");
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body.contains("from 1 to 100"), "{body}");
    }
    let (status, body) = get("/search?q=%22unbalanced").await.expect("bad");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("error"));
    let (status, body) = get("/search").await.expect("no q");
    assert_eq!(status, 400);
    assert!(body.contains("use /search?q=WORDS"), "{body}");
    let (status, body) = get("/maxcount").await.expect("no word");
    assert_eq!(status, 400);
    assert!(body.contains("use /maxcount?word=WORD"), "{body}");
    let (status, _) = client_request(addr, None, "POST", "/search?q=x")
        .await
        .expect("post");
    assert_eq!(status, 405);
    let (status, body) = client_request(bare.local_addr(), None, "GET", "/wc")
        .await
        .expect("wc");
    assert_eq!(status, 404, "{body}");
}

#[tokio::test]
async fn an_index_error_pauses_the_crawl_with_its_message() {
    let web = TestWeb::start(GenOptions::new(1, 200).crawl_delay_s(0.01))
        .await
        .expect("web");
    let out = tempfile::tempdir().expect("tempdir");
    let stats = out.path().join("stats.json");
    let child = crawl_with_fault(
        &web,
        out.path(),
        &stats,
        (crawltop::index::feed::FAIL_AFTER_ENV, "5"),
        &["--checkpoint-ms", "100"],
    );
    // The progress line says "paused" once the failure has reached the committer.
    let json = stats_after_a_failure_pause(child, &stats).await;
    let error = json["commit"]["error"]
        .as_str()
        .expect("the error is in the stats");
    assert!(error.starts_with("index:"), "{error}");
    assert!(error.contains("failing on purpose"), "{error}");
    let log = crate::util::log_messages(&json);
    assert!(
        log.iter().any(|m| m.contains("the crawl is paused")),
        "{log:?}"
    );
    // What the index holds was committed before the failure: at most the five pages.
    let index = IndexReader::open(&out.path().join("crawl").join("index")).expect("index");
    assert!(index.word_count().expect("wc").pages <= 5);
}

/// Issue 11's bad input "a page of a million distinct words", made smaller: a page of more
/// distinct words than the index takes of one page. The crawl indexes it up to the word that
/// would pass the cap, answers for the words before the cut only, and its log says so.
#[tokio::test]
async fn a_page_of_more_distinct_words_than_the_cap_is_indexed_up_to_it_and_the_log_says_so() {
    let cap = crawltop::index::MAX_DISTINCT_WORDS;
    let words = cap + 20_000;
    let lines: Vec<String> = (0..words)
        .collect::<Vec<_>>()
        .chunks(1000)
        .map(|line| {
            let line: Vec<String> = line.iter().map(|i| format!("w{i}")).collect();
            format!("<p>{}</p>\n", line.join(" "))
        })
        .collect();
    let body = format!(
        "<!DOCTYPE html><html><head><title>Many words</title></head><body>\n{}</body></html>\n",
        lines.concat()
    );
    let out = tempfile::tempdir().expect("tempdir");
    let log = out.path().join("crawl.log");
    let (web, url) = crawl_one_page(
        "distinct-words.html",
        &body,
        &out.path().join("crawl"),
        &["--log".as_ref(), log.as_os_str()],
    )
    .await;
    let served: Vec<u64> = web
        .log()
        .records()
        .iter()
        .filter(|r| r.path == "/distinct-words.html")
        .map(|r| r.bytes)
        .collect();
    assert_eq!(served, vec![body.len() as u64], "served whole, once");

    let reader = IndexReader::open(&out.path().join("crawl").join("index")).expect("index");
    let found = |word: &str| -> Vec<String> {
        let hits = reader.search(word, 10).expect("search");
        hits.into_iter().map(|h| h.url).collect()
    };
    for word in ["w0", "w54321", &format!("w{}", cap - 1), "many"] {
        assert_eq!(found(word), vec![url.clone()], "{word} is before the cut");
    }
    for word in [format!("w{cap}"), format!("w{}", words - 1)] {
        assert_eq!(
            found(&word),
            Vec::<String>::new(),
            "{word} is after the cut"
        );
    }
    assert_eq!(reader.word_count().expect("wc").words, cap as u64);

    let log = std::fs::read_to_string(&log).expect("the crawl's log");
    let said = format!(
        "{url}: text cut at {cap} distinct words for the index ({cap} words of {words} kept)"
    );
    assert!(log.contains(&said), "{said:?} not in the log:\n{log}");
}

#[tokio::test]
async fn a_page_cut_for_the_index_is_counted_and_says_so_and_a_huge_title_is_kept_short() {
    let web = TestWeb::start(GenOptions::new(1, 2).hostile(true))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("crawl");
    let stats = tmp.path().join("stats.json");
    let urls = tmp.path().join("urls.jsonl");
    let path = |p: &std::path::Path| p.to_str().expect("utf8").to_string();
    let distinct = web.url("hostile", "/distinct.html");
    let long_title = web.url("hostile", "/long-title.html");
    let o = tokio::process::Command::new(bin())
        .args([
            "crawl",
            &distinct,
            &long_title,
            "--headless",
            "--delay-ms",
            "0",
        ])
        .args(["--out", &path(&out), "--stats-out", &path(&stats)])
        .args(["--urls-out", &path(&urls)])
        .finish()
        .await
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // The stats file and the metrics made of the same snapshot count the one page cut.
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    assert_eq!(stats["resources"]["text_cut"], 1, "{}", stats["resources"]);
    let snapshot: crawltop::snapshot::Snapshot =
        serde_json::from_value(stats.clone()).expect("the stats file holds a snapshot");
    let metrics = crawltop::control::metrics_text(&std::sync::Arc::new(snapshot));
    assert!(
        metrics
            .lines()
            .any(|l| l == "crawltop_resources_text_cut_total 1"),
        "{}",
        metrics
            .lines()
            .filter(|l| l.contains("resources"))
            .collect::<Vec<_>>()
            .join("\n")
    );

    // The URL's record says what the index kept; the other page has no reason.
    let lines = std::fs::read_to_string(&urls).expect("urls");
    let reason_of = |url: &str| -> serde_json::Value {
        lines
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json line"))
            .find(|v| v["url"] == url)
            .unwrap_or_else(|| panic!("no line for {url} in {lines}"))["reason"]
            .clone()
    };
    let max = crawltop::index::MAX_DISTINCT_WORDS;
    let all = crawltop::testweb::DISTINCT_WORDS;
    assert_eq!(
        reason_of(&distinct),
        format!("text cut at {max} distinct words for the index ({max} words of {all} kept)")
    );
    assert_eq!(reason_of(&long_title), serde_json::Value::Null);
    // The snapshot's log (the dashboard's log pane) says it too, once.
    let said = format!(
        "{distinct}: text cut at {max} distinct words for the index ({max} words of {all} kept)"
    );
    let shown: Vec<&serde_json::Value> = stats["log"]
        .as_array()
        .expect("a log")
        .iter()
        .filter(|line| line["message"] == said.as_str())
        .collect();
    assert_eq!(shown.len(), 1, "{said:?} in {}", stats["log"]);
    assert_eq!(shown[0]["level"], "warn");

    // What the index answers: the cut text's words, and the title cut at 1024 bytes, at a
    // character boundary ("tïtle " is 7 bytes: the 147th word's "ï" straddles the cap).
    let dir = path(&out);
    let wc = json_of(&["wc", &dir, "--json"]);
    assert_eq!(wc["pages"], 2);
    let hits = json_of(&["search", &dir, "needle", "--json"]);
    let title = hits[0]["title"].as_str().expect("a title").to_string();
    assert_eq!(title.len(), 1023, "{} bytes", title.len());
    assert_eq!(title, format!("{}t", "tïtle ".repeat(146)));
    assert_eq!(hits[0]["url"], long_title.as_str());
    let last_kept = format!("w{}", max - 1);
    assert_eq!(
        json_of(&["search", &dir, &last_kept, "--json"])[0]["url"],
        distinct.as_str()
    );
    let first_cut = format!("w{max}");
    assert_eq!(
        json_of(&["search", &dir, &first_cut, "--json"]),
        serde_json::json!([])
    );
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[tokio::test]
async fn a_crawl_that_writes_an_index_sets_the_allocator_unless_the_environment_does() {
    let web = TestWeb::start(GenOptions::new(1, 5).seed(4).crawl_delay_s(0.0))
        .await
        .expect("web");
    let url = web.url("site00", "/");
    let dir = tempfile::tempdir().expect("tempdir");
    // The crawl's log, for a crawl with or without `--out` and with GLIBC_TUNABLES set or not.
    let log_of = |name: &str, out: bool, tunables: Option<&str>| {
        let log = dir.path().join(format!("{name}.log"));
        let mut command = tokio::process::Command::new(bin());
        command
            .args(["crawl", &url, "--delay-ms", "0", "--headless", "--log"])
            .arg(&log)
            .env_remove("GLIBC_TUNABLES")
            .env_remove("MALLOC_ARENA_MAX")
            .env_remove("MALLOC_MMAP_THRESHOLD_");
        if out {
            command.arg("--out").arg(dir.path().join(name));
        }
        if let Some(value) = tunables {
            command.env("GLIBC_TUNABLES", value);
        }
        async move {
            let o = command.finish().await.expect("runs");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            std::fs::read_to_string(&log).expect("the crawl's log")
        }
    };
    let set = "malloc: mmap threshold 1024 KiB, 2 arenas";
    let left = "malloc: left as the environment sets it";

    let indexed = log_of("indexed", true, None).await;
    assert!(indexed.contains(set), "{set:?} not in the log:\n{indexed}");
    let chosen = log_of("chosen", true, Some("")).await;
    assert!(chosen.contains(left), "{left:?} not in the log:\n{chosen}");
    assert!(!chosen.contains(set), "{chosen}");
    let plain = log_of("plain", false, None).await;
    assert!(
        !plain.contains("malloc:"),
        "a crawl without an index: {plain}"
    );
    // Every page was fetched in each of the three crawls.
    let fetched = web.log().records().iter().filter(|r| r.path == "/").count();
    assert_eq!(fetched, 3, "the seed once a crawl");
}

/// Sets the mode of `dir` and everything under it: `folders` for folders, `files` for files.
fn chmod_all(dir: &std::path::Path, folders: u32, files: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    let set = |path: &std::path::Path, mode| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    for path in listing(dir).into_keys() {
        if path.is_dir() {
            set(&path, folders);
        } else {
            set(&path, files);
        }
    }
    set(dir, folders);
}

/// Gives a folder made unwritable back to its owner, so that it can be deleted, however the test
/// ends.
struct WritableAgain<'a>(&'a std::path::Path);

impl Drop for WritableAgain<'_> {
    fn drop(&mut self) {
        chmod_all(self.0, 0o755, 0o644);
    }
}

/// A query is a reader: it works on a crawl folder its user may not write (an archive, a
/// read-only mount, another user's crawl), and it writes nothing to one it may, not even
/// tantivy's lock file.
#[tokio::test]
async fn queries_answer_from_a_folder_they_may_not_write_and_write_nothing_to_one_they_may() {
    use std::os::unix::process::CommandExt as _;
    let web = TestWeb::start(GenOptions::new(1, 20).seed(8).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("crawl");
    let mut cfg = config(seeds(&web, SiteKind::Normal));
    cfg.delay_ms = 0;
    cfg.out = Some(out.clone());
    cfg.store = StoreKind::Warc;
    crawl(cfg).await;
    let dir = out.to_str().expect("utf8");
    let queries: [&[&str]; 4] = [
        &["search", dir, "rabbit", "--json"],
        &["maxcount", dir, "rabbit", "--json"],
        &["mincount", dir, "rabbit", "--json"],
        &["wc", dir, "--json"],
    ];
    // nobody must reach the binary: a copy beside the folder (the build's may sit under a
    // home folder only root may enter).
    let own_bin = tmp.path().join("crawltop");
    let run = |args: &[&str], uid: Option<u32>| {
        let mut cmd = std::process::Command::new(if uid.is_some() {
            own_bin.clone()
        } else {
            bin()
        });
        cmd.args(args);
        if let Some(uid) = uid {
            cmd.uid(uid).gid(uid);
        }
        let out = cmd.output().expect("crawltop runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success(),
            "{args:?} exits {:?}: {stderr}",
            out.status
        );
        assert_eq!(stderr, "", "{args:?}");
        String::from_utf8(out.stdout).expect("utf8")
    };

    // A folder the user may write, whose index lacks tantivy's meta lock file (as a copy that
    // left out dot files would): the queries answer and nothing in it changes.
    let lock = out.join("index").join(".tantivy-meta.lock");
    assert!(lock.is_file(), "the crawl's writer made the lock file");
    std::fs::remove_file(&lock).expect("remove");
    let before = listing(&out);
    let answers: Vec<String> = queries.iter().map(|q| run(q, None)).collect();
    let wc: serde_json::Value = serde_json::from_str(&answers[3]).expect("json");
    assert!(wc["pages"].as_u64() > Some(0), "{wc}");
    assert_eq!(listing(&out), before, "the queries wrote to the folder");

    // The same folder, the lock file back, made unwritable: files r--, folders r-x. root writes
    // whatever the modes say, so as root the queries run as nobody (uid 65534), who may read it.
    std::fs::File::create(&lock).expect("the lock file back");
    chmod_all(&out, 0o555, 0o444);
    let _restore = WritableAgain(&out);
    let uid = nix::unistd::geteuid().is_root().then(|| {
        use std::os::unix::fs::PermissionsExt as _;
        let traversable = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(tmp.path(), traversable.clone()).expect("chmod");
        std::fs::copy(bin(), &own_bin).expect("copy the binary");
        std::fs::set_permissions(&own_bin, traversable).expect("chmod");
        65534
    });
    let before = listing(&out);
    let unwritable: Vec<String> = queries.iter().map(|q| run(q, uid)).collect();
    assert_eq!(
        unwritable, answers,
        "the same answers from the unwritable folder"
    );
    assert_eq!(listing(&out), before, "nothing changed");
}

/// An index error is said once: its message is not repeated as its cause.
#[test]
fn an_index_error_is_printed_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("index")).expect("mkdir");
    std::fs::write(dir.path().join("index").join("meta.json"), "not json").expect("write");
    let out = std::process::Command::new(bin())
        .arg("wc")
        .arg(dir.path())
        .output()
        .expect("crawltop runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.matches("cannot be deserialized").count(),
        1,
        "{stderr}"
    );
}

/// Audit 29, findings 2, 3 and 7, at the command line: words a reader sees whole (a soft
/// hyphen, a ZWNJ inside them) are one word, found and counted as typed, capitals fold as
/// Unicode folds them, and `maxcount` reads punctuation around a word one way.
#[tokio::test]
async fn words_are_as_a_reader_sees_them_whole_and_in_any_case() {
    let page = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Νόμοι ZANZIBARQUUX\
                </title></head><body>\
                <p>Donau&shy;dampf&shy;schiff&shy;fahrt and Donaudampfschifffahrt; \
                in&shy;ter&shy;na&shy;tion&shy;al</p>\
                <p>من کتاب\u{200c}ها را می\u{200c}خواهم. کتاب\u{200c}ها خوب هستند.</p>\
                <h1>ΝΟΜΟΣ ΚΑΙ ΚΟΣΜΟΣ</h1><p>Ο νόμος και ο κόσμος. Ο νόμος.</p>\
                <p>İSTANBUL İstanbul istanbul, zebra zebra</p></body></html>";
    let web = TestWeb::start_with(GenOptions::new(1, 3).seed(29), |o| {
        let site = o.dir.join("site00");
        std::fs::write(site.join("words.html"), page).expect("write");
    })
    .await
    .expect("web");
    let dir = tempfile::tempdir().expect("tempdir");
    let crawled = dir.path().join("crawl");
    let mut cfg = config(vec![web.url("site00", "/words.html")]);
    cfg.delay_ms = 0;
    cfg.out = Some(crawled.clone());
    crawl(cfg).await;
    let out = crawled.to_str().expect("utf8");
    let answered = |args: &[&str]| {
        let o = std::process::Command::new(bin())
            .args(args)
            .output()
            .expect("crawltop runs");
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let url = web.url("site00", "/words.html");
    for (word, count) in [
        ("Donaudampfschifffahrt", 2),
        ("international", 1),
        ("in\u{ad}ter\u{ad}na\u{ad}tion\u{ad}al", 1),
        ("کتاب\u{200c}ها", 2),
        ("کتابها", 2),
        ("می\u{200c}خواهم", 1),
        ("ΝΌΜΟΣ", 2),
        ("νόμος", 2),
        ("istanbul", 3),
        ("İstanbul", 3),
        ("zebra", 2),
        ("zebra!", 2),
        ("zebra*", 2),
    ] {
        assert_eq!(
            answered(&["maxcount", out, word]),
            format!("{count}  {url}\n"),
            "{word:?}"
        );
    }
    // A half of a word is no word of the page.
    assert_eq!(
        answered(&["maxcount", out, "ها"]),
        "\"ها\" occurs in no page's text\n"
    );
    for query in ["international", "کتابها", "ΝΌΜΟΣ", "İSTANBUL"] {
        let found = answered(&["search", out, query]);
        assert!(found.contains(&url), "{query:?}: {found}");
    }
    // The title note, for a word in any case and with any punctuation around it.
    for word in ["zanzibarquux", "ZANZIBARQUUX)", "νόμοι!"] {
        assert_eq!(
            answered(&["maxcount", out, word]),
            format!(
                "{word:?} occurs in no page's text (it is in 1 page's title, which the counts \
                 leave out)\n"
            ),
        );
    }
}

/// Audit 29: hand-written markup a browser shows as separate lines (`Line one</br>Line two`,
/// a stray `</p>`, a heading closed by another rank's end tag, `</p>` after `<b>…<p>…</b>`)
/// is indexed as separate words, at the crawl and when the index is rebuilt: the word after
/// each break is found, the two words on either side joined are not.
#[tokio::test]
async fn words_on_either_side_of_a_misnested_line_break_are_found_apart() {
    let body = "<!DOCTYPE html><html><head><title>Hand written</title></head><body>\n\
                <div>Line one</br>Line two</div>\n\
                <div>alphaone</p>betaone</div>\n\
                <h2>headtwo<h3>headthree</h2>afterheads</h2>\n\
                <b>boldone<p>boldtwo</b>boldthree</p>tailword\n\
                </body></html>\n";
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("crawl");
    let (_web, url) = crawl_one_page("misnested.html", body, &out, &[]).await;
    let out = out.to_str().expect("utf8");
    let check = |when: &str| {
        // "line" twice: `Line one</br>Line two` is not `oneline`.
        for (word, count) in [
            ("line", 2),
            ("betaone", 1),
            ("afterheads", 1),
            ("tailword", 1),
        ] {
            let found = json_of(&["maxcount", out, "--json", word]);
            assert_eq!(found["count"], count, "{word} {when}: {found}");
            assert_eq!(found["url"], url.as_str(), "{word} {when}: {found}");
        }
        for joined in [
            "oneline",
            "alphaonebetaone",
            "headthreeafterheads",
            "boldtwoboldthreetailword",
        ] {
            let o = std::process::Command::new(bin())
                .args(["maxcount", out, joined])
                .output()
                .expect("crawltop runs");
            let said = String::from_utf8_lossy(&o.stdout);
            assert!(
                said.contains("occurs in no page's text"),
                "{joined} {when}: {said}"
            );
        }
        let hits = json_of(&["search", out, "--json", "\"line two\""]);
        assert_eq!(hits.as_array().map(Vec::len), Some(1), "{when}: {hits}");
    };
    check("after the crawl");
    let o = std::process::Command::new(bin())
        .args(["index", "--replace", out])
        .output()
        .expect("crawltop runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    check("after the index is rebuilt");
}

/// Serves `body` as `/NAME` on a small generated site and crawls that page alone (`--depth 0`,
/// no delay, headless) into `out` with the command line and `extra` arguments; the crawl must
/// succeed. The web (its request log) and the page's URL.
async fn crawl_one_page(
    name: &str,
    body: &str,
    out: &std::path::Path,
    extra: &[&std::ffi::OsStr],
) -> (TestWeb, String) {
    let web = TestWeb::start_with(GenOptions::new(1, 5).seed(2), |o| {
        std::fs::write(o.dir.join("site00").join(name), body).expect("write the page");
    })
    .await
    .expect("web");
    let url = web.url("site00", &format!("/{name}"));
    let o = tokio::process::Command::new(bin())
        .args([
            "crawl",
            &url,
            "--depth",
            "0",
            "--delay-ms",
            "0",
            "--headless",
        ])
        .arg("--out")
        .arg(out)
        .args(extra)
        .finish()
        .await
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (web, url)
}
