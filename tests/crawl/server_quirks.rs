//! What a crawl keeps of what real servers send oddly: URLs that spell one character two ways
//! (two pages, so two mirror files), bodies in several gzip members or in codings crawltop
//! does not decode, and HTML sent without a Content-Type. Each site is a small server written
//! here, since the test web serves none of these on purpose.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use crawltop::store::committer::StoreKind;
use crawltop::store::mirror::mirror_path;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;

use crate::engine::{config, crawl};

/// One answer: its status line's version and code, its headers (Content-Length is added) and
/// its body.
#[derive(Debug, Clone)]
struct Answer {
    /// How long the server waits before it answers.
    after: std::time::Duration,
    version: &'static str,
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// The Content-Length said, when it is not the body's (a body cut short by the server).
    claimed_length: Option<usize>,
    /// The answer to every later request of the path, when it differs from the first.
    then: Option<Box<Answer>>,
    /// Sends only this many bytes of the body, then nothing more, holding the connection open
    /// until the client leaves (a body that stalls).
    stall_after: Option<usize>,
}

impl Answer {
    fn new(headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Answer {
        Answer {
            after: std::time::Duration::ZERO,
            version: "HTTP/1.1",
            status: 200,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            body: body.into(),
            claimed_length: None,
            then: None,
            stall_after: None,
        }
    }

    fn html(body: impl Into<Vec<u8>>) -> Answer {
        Answer::new(&[("Content-Type", "text/html")], body)
    }

    /// A 301 to `to`.
    fn moved(to: &str) -> Answer {
        Answer {
            status: 301,
            ..Answer::new(&[("Location", to)], "")
        }
    }
}

/// Every request a quirky site got: its path, and when it came, in order; and a bell rung at
/// each, for a test that waits on them.
#[derive(Clone, Default)]
struct Log(
    Arc<Mutex<Vec<(String, std::time::Instant)>>>,
    Arc<tokio::sync::Notify>,
);

impl Log {
    /// Waits (at most `PATIENCE`) until the paths asked so far satisfy `done`.
    async fn wait_until(&self, done: impl Fn(&[String]) -> bool) {
        let waited = tokio::time::timeout(crate::util::PATIENCE, async {
            loop {
                let rung = self.1.notified();
                if done(&self.paths()) {
                    return;
                }
                rung.await;
            }
        });
        waited
            .await
            .expect("the site was asked what the test waits for");
    }

    fn timed(&self) -> Vec<(String, std::time::Instant)> {
        self.0.lock().expect("no test thread panicked").clone()
    }

    fn paths(&self) -> Vec<String> {
        self.timed().into_iter().map(|(p, _)| p).collect()
    }
}

/// A site on 127.0.0.1 (port chosen by the OS) that answers each request path from `answers`
/// as it is spelled on the request line, 404 for any other (robots.txt too: everything is
/// allowed). One request per connection. Returns the origin and every path asked, in order.
async fn quirky_site(answers: BTreeMap<String, Answer>) -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("bound"));
    let asked = Log::default();
    let log = asked.clone();
    let answers = Arc::new(answers);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (log, answers) = (log.clone(), answers.clone());
            tokio::spawn(async move {
                let Some(path) = crate::util::request_path(&mut stream).await else {
                    return;
                };
                let answer = answers.get(&path).cloned().unwrap_or(Answer {
                    status: 404,
                    ..Answer::new(&[("Content-Type", "text/plain")], "not here")
                });
                let again = {
                    let mut asked = log.0.lock().expect("no test thread panicked");
                    let again = asked.iter().any(|(p, _)| *p == path);
                    asked.push((path, std::time::Instant::now()));
                    again
                };
                log.1.notify_waiters();
                let answer = match answer.then {
                    Some(later) if again => *later,
                    _ => answer,
                };
                let mut reply = format!(
                    "{} {} X\r\nConnection: close\r\n",
                    answer.version, answer.status
                );
                for (k, v) in &answer.headers {
                    let _ = write!(reply, "{k}: {v}\r\n");
                }
                let length = answer.claimed_length.unwrap_or(answer.body.len());
                let _ = write!(reply, "Content-Length: {length}\r\n\r\n");
                let mut reply = reply.into_bytes();
                let sent = answer.stall_after.map_or(usize::MAX, |n| reply.len() + n);
                reply.extend_from_slice(&answer.body);
                tokio::time::sleep(answer.after).await;
                let _ = stream.write_all(&reply[..sent.min(reply.len())]).await;
                if answer.stall_after.is_some() {
                    let mut buf = [0u8; 512];
                    while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
                }
                let _ = stream.shutdown().await;
            });
        }
    });
    (origin, asked)
}

/// `crawltop index --replace DIR`: the crawl folder's index built again from its WARC files.
fn index_again(dir: &std::path::Path) {
    let index = std::process::Command::new(crate::util::bin())
        .args(["index", "--replace"])
        .arg(dir)
        .output()
        .expect("index runs");
    assert!(
        index.status.success(),
        "{}",
        String::from_utf8_lossy(&index.stderr)
    );
}

/// A page linking every path of `links`.
fn linking(links: &[&str]) -> Answer {
    let mut anchors = String::new();
    for l in links {
        let _ = writeln!(anchors, "<a href=\"{l}\">{l}</a>");
    }
    Answer::html(format!("<html><body>{anchors}</body></html>"))
}

#[tokio::test]
async fn a_mirror_keeps_one_file_for_each_spelling_of_a_reserved_character() {
    // Each pair is two URLs (the crawl keeps them apart) that decode to the same bytes.
    let pages = [
        "/n/plus+sign.html",
        "/n/plus%2Bsign.html",
        "/n/eq=x.html",
        "/n/eq%3Dx.html",
        "/n/a,b;c&d@e$f!g'h(i)j.html",
        "/n/a%2Cb%3Bc%26d%40e%24f%21g%27h%28i%29j.html",
        "/n/Talk:Page",
        "/n/Talk%3APage",
        "/n/star*.html",
        "/n/star%2A.html",
        "/n/pipe|/x.html",
        "/n/pipe%7C/x.html",
    ];
    let mut answers: BTreeMap<String, Answer> = pages
        .iter()
        .map(|p| {
            (
                (*p).to_owned(),
                Answer::html(format!("<p>the page {p}</p>")),
            )
        })
        .collect();
    answers.insert("/".into(), linking(&pages));
    let (origin, asked) = quirky_site(answers.clone()).await;
    let out = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(vec![format!("{origin}/")]);
    cfg.delay_ms = 0;
    cfg.out = Some(out.path().to_path_buf());
    cfg.store = StoreKind::Mirror;
    let crawled = crawl(cfg).await;

    let asked = asked.paths();
    for (path, answer) in &answers {
        assert_eq!(
            asked.iter().filter(|a| *a == path).count(),
            1,
            "{path} asked once: {asked:?}"
        );
        let url = url::Url::parse(&format!("{origin}{path}")).expect("url");
        assert_eq!(
            crawled.urls[url.as_str()]["state"],
            "parsed",
            "{url}: {:?}",
            crawled.urls[url.as_str()]
        );
        let file = out
            .path()
            .join("pages")
            .join(mirror_path(&url).expect("mirrorable"));
        let stored = std::fs::read(&file).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(
            String::from_utf8_lossy(&stored),
            String::from_utf8_lossy(&answer.body),
            "{url} in {}",
            file.display()
        );
    }
    let pages = out.path().join("pages");
    let list = pages.join(crawltop::store::mirror::SITES_LIST);
    let site = mirror_path(&url::Url::parse(&origin).expect("origin")).expect("mirrorable");
    let site = site.components().next().expect("a site folder");
    assert_eq!(
        std::fs::read_to_string(&list).expect("the list of site folders"),
        format!("{}\n", site.as_os_str().to_string_lossy()),
    );
    // The list of files made since the last checkpoint is empty: the crawl's last one holds
    // every page.
    let created = pages.join(crawltop::store::mirror::CREATED_LIST);
    assert_eq!(std::fs::read(&created).expect("the list of new files"), b"");
    let files = crate::util::files_under(&pages);
    assert_eq!(
        files
            .iter()
            .filter(|f| **f != list && **f != created)
            .count(),
        answers.len(),
        "one file per page: {files:?}"
    );
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).expect("in memory");
    e.finish().expect("in memory")
}

/// A crawl of `origin` storing WARC files and the index in a new folder.
async fn crawl_into_warc(origin: &str) -> (crate::engine::Crawled, tempfile::TempDir) {
    let out = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(vec![format!("{origin}/")]);
    cfg.delay_ms = 0;
    cfg.out = Some(out.path().to_path_buf());
    cfg.store = StoreKind::Warc;
    (crawl(cfg).await, out)
}

#[tokio::test]
async fn a_gzip_body_of_two_members_is_parsed_stored_and_its_links_followed() {
    let page = b"<html><body><p>zebramultione</p><a href=\"/from-first.html\">x</a>\
                 <p>zebramultitwo</p><a href=\"/from-second.html\">y</a></body></html>";
    let (first, second) = page.split_at(page.len() / 2);
    let wire = [gzip(first), gzip(second)].concat();
    let answers = BTreeMap::from([
        ("/".to_owned(), linking(&["/multi.html"])),
        (
            "/multi.html".to_owned(),
            Answer::new(
                &[("Content-Type", "text/html"), ("Content-Encoding", "gzip")],
                wire,
            ),
        ),
        ("/from-first.html".to_owned(), Answer::html("<p>first</p>")),
        (
            "/from-second.html".to_owned(),
            Answer::html("<p>second</p>"),
        ),
    ]);
    let (origin, asked) = quirky_site(answers).await;
    let (crawled, out) = crawl_into_warc(&origin).await;

    let multi = &crawled.urls[&format!("{origin}/multi.html")];
    assert_eq!(multi["state"], "parsed", "{multi}");
    let asked = asked.paths();
    for linked in ["/from-first.html", "/from-second.html"] {
        assert!(
            asked.iter().any(|a| a == linked),
            "{linked} not asked: {asked:?}"
        );
    }
    let warc = crate::util::read_warc(&out.path().join("warc"));
    assert_eq!(
        warc.bodies[&format!("{origin}/multi.html")],
        page,
        "stored decoded, both members"
    );
    let reader = crawltop::index::IndexReader::open(&out.path().join("index")).expect("index");
    for word in ["zebramultione", "zebramultitwo"] {
        let hits = reader.search(word, 10).expect("search");
        assert_eq!(hits.len(), 1, "{word}");
        assert_eq!(hits[0].url, format!("{origin}/multi.html"));
    }
}

/// Bytes after the end of a compressed body (a newline, padding: some servers and proxies
/// append them) are dropped as browsers and curl drop them: the page is parsed and stored as
/// they show it. Before, such a page was a fetch error and its links were never followed.
#[tokio::test]
async fn bytes_after_a_compressed_body_are_dropped_and_the_page_kept() {
    let page = |n: u32| {
        format!("<html><body><p>zebratrail{n}</p><a href=\"/after{n}.html\">x</a></body></html>")
    };
    let zlib = |data: &[u8]| {
        use std::io::Write as _;
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).expect("in memory");
        e.finish().expect("in memory")
    };
    let coded = [
        ("gzip", [gzip(page(1).as_bytes()), b"\n".to_vec()].concat()),
        ("gzip", [gzip(page(2).as_bytes()), vec![0; 512]].concat()),
        (
            "deflate",
            [zlib(page(3).as_bytes()), b"\r\n".to_vec()].concat(),
        ),
    ];
    let mut answers = BTreeMap::from([(
        "/".to_owned(),
        linking(&["/c1.html", "/c2.html", "/c3.html"]),
    )]);
    for (n, (coding, wire)) in (1..).zip(coded) {
        answers.insert(
            format!("/c{n}.html"),
            Answer::new(
                &[("Content-Type", "text/html"), ("Content-Encoding", coding)],
                wire,
            ),
        );
        answers.insert(format!("/after{n}.html"), Answer::html("<p>after</p>"));
    }
    let (origin, asked) = quirky_site(answers).await;
    let (crawled, out) = crawl_into_warc(&origin).await;
    let warc = crate::util::read_warc(&out.path().join("warc"));
    let asked = asked.paths();
    for n in 1..=3 {
        let url = format!("{origin}/c{n}.html");
        assert_eq!(
            crawled.urls[&url]["state"], "parsed",
            "{}",
            crawled.urls[&url]
        );
        assert!(asked.contains(&format!("/after{n}.html")), "{asked:?}");
        assert_eq!(warc.bodies[&url], page(n).as_bytes(), "stored decoded");
    }
}

/// A redirect is followed whatever becomes of its body (a browser never reads it): one whose
/// body does not decode, or whose connection ends before its body does, used to end as a fetch
/// error, and its target was never asked for. The WARC keeps each redirect with what is left of
/// its body, and says why it is not what the server sent.
#[tokio::test]
async fn a_redirect_whose_body_does_not_decode_or_is_cut_is_followed() {
    let answers = BTreeMap::from([
        ("/".to_owned(), linking(&["/moved.html", "/cut.html"])),
        (
            "/moved.html".to_owned(),
            Answer {
                status: 302,
                ..Answer::new(
                    &[("Location", "/there.html"), ("Content-Encoding", "gzip")],
                    "not gzip at all",
                )
            },
        ),
        (
            "/cut.html".to_owned(),
            Answer {
                status: 301,
                claimed_length: Some(1000),
                ..Answer::new(&[("Location", "/also-there.html")], "moved to")
            },
        ),
        (
            "/there.html".to_owned(),
            Answer::html("<p>zebraarrived</p>"),
        ),
        ("/also-there.html".to_owned(), Answer::html("<p>also</p>")),
    ]);
    let (origin, asked) = quirky_site(answers).await;
    let (crawled, out) = crawl_into_warc(&origin).await;
    let asked = asked.paths();
    let warc = crate::util::read_warc(&out.path().join("warc"));
    for (path, status, target, body, why) in [
        ("/moved.html", 302, "/there.html", "", "unspecified"),
        (
            "/cut.html",
            301,
            "/also-there.html",
            "moved to",
            "disconnect",
        ),
    ] {
        assert!(asked.contains(&target.to_owned()), "{target}: {asked:?}");
        let url = format!("{origin}{path}");
        assert_eq!(
            crawled.urls[&url]["status"], status,
            "{}",
            crawled.urls[&url]
        );
        assert_eq!(warc.bodies[&url], body.as_bytes(), "{path}");
        assert_eq!(warc.truncated[&url].as_deref(), Some(why), "{path}");
        assert!(
            warc.heads[&url].contains(&format!("location: {target}")),
            "{}",
            warc.heads[&url]
        );
        let there = format!("{origin}{target}");
        assert_eq!(crawled.urls[&there]["state"], "parsed", "{target}");
        assert_eq!(warc.truncated[&there], None);
    }
}

/// A page whose server sent its headers and part of its body, then stalled past `--timeout-ms`
/// or closed the connection: the WARC files keep it as the server sent it, marked
/// `WARC-Truncated: time` or `disconnect`, with the bytes that came and its request, as
/// Heritrix and wget do (before, the response was lost). Its URL ends as the failure it was
/// (a timeout, another failure), and it is no page: its links are not followed, a search finds
/// none of its words (nor after `crawltop index` builds the index again), the mirror has no file
/// of it and `--extract` no line. A page cut at `--max-body-bytes` still is one, as before.
#[tokio::test]
async fn a_page_whose_body_stalled_or_broke_is_archived_as_cut_and_is_no_page() {
    let stalled = "<html><body><p>zebrastalled</p><a href=\"/behind-stall.html\">x</a>";
    let broken = "<html><body><p>zebrabroken</p><a href=\"/behind-break.html\">x</a>";
    let answers = BTreeMap::from([
        (
            "/".to_owned(),
            linking(&["/stalled.html", "/broken.html", "/whole.html", "/big.html"]),
        ),
        (
            "/big.html".to_owned(),
            Answer::html(format!("<p>zebrabig</p><p>{}</p>", "filler ".repeat(200))),
        ),
        (
            "/stalled.html".to_owned(),
            Answer {
                stall_after: Some(stalled.len()),
                ..Answer::html(format!("{stalled}<p>never sent</p></body></html>"))
            },
        ),
        (
            "/broken.html".to_owned(),
            Answer {
                claimed_length: Some(broken.len() + 1000),
                ..Answer::html(broken)
            },
        ),
        ("/whole.html".to_owned(), Answer::html("<p>zebrawhole</p>")),
        ("/behind-stall.html".to_owned(), Answer::html("<p>x</p>")),
        ("/behind-break.html".to_owned(), Answer::html("<p>x</p>")),
    ]);
    let (origin, asked) = quirky_site(answers).await;
    let out = tempfile::tempdir().expect("tempdir");
    let lines = out.path().join("extract.jsonl");
    let dir = out.path().join("crawl");
    let mut cfg = config(vec![format!("{origin}/")]);
    cfg.delay_ms = 0;
    cfg.timeout_ms = 500;
    cfg.max_body_bytes = 600;
    cfg.out = Some(dir.clone());
    cfg.store = StoreKind::Both;
    cfg.extract = vec!["para=p".into()];
    cfg.extract_out = Some(lines.clone());
    let crawled = crawl(cfg).await;
    assert!(crawled.summary.completed);
    let url = |path: &str| format!("{origin}{path}");

    // The URL rows and the counts, as before.
    let row = &crawled.urls[&url("/stalled.html")];
    assert_eq!(row["state"], "fetch_error", "{row}");
    assert_eq!(row["reason"], "timeout while receiving the body", "{row}");
    assert_eq!(row["status"], 200, "{row}");
    let row = &crawled.urls[&url("/broken.html")];
    assert_eq!(row["state"], "fetch_error", "{row}");
    assert_eq!(row["status"], 200, "{row}");
    let errors = &crawled.stats["errors"];
    assert_eq!(
        (errors["timeout"].as_u64(), errors["other"].as_u64()),
        (Some(1), Some(1)),
        "{errors}"
    );
    assert_eq!(
        crawled.stats["http"]["status"]["200"], 5,
        "{}",
        crawled.stats["http"]
    );
    let asked = asked.paths();
    for behind in ["/behind-stall.html", "/behind-break.html"] {
        assert!(
            !asked.iter().any(|a| a == behind),
            "{behind} followed: {asked:?}"
        );
    }

    // The WARC files hold each response once, cut as it was, with its request.
    let warc = crate::util::read_warc(&dir.join("warc"));
    for (path, body, why) in [
        ("/stalled.html", stalled, "time"),
        ("/broken.html", broken, "disconnect"),
    ] {
        let u = url(path);
        assert_eq!(warc.counts[&u], 1, "{path}");
        assert_eq!(warc.requests[&u], 1, "{path}");
        assert_eq!(String::from_utf8_lossy(&warc.bodies[&u]), body, "{path}");
        assert_eq!(warc.truncated[&u].as_deref(), Some(why), "{path}");
        assert!(
            warc.heads[&u].starts_with("HTTP/1.1 200 "),
            "{}",
            warc.heads[&u]
        );
    }
    assert_eq!(warc.truncated[&url("/whole.html")], None);
    assert_eq!(warc.truncated[&url("/big.html")].as_deref(), Some("length"));
    assert_eq!(warc.bodies[&url("/big.html")].len(), 600);
    assert_eq!(warc.order.len(), 5, "{:?}", warc.order);

    // No page: not searchable, before or after the index is built again from the WARC files.
    let searched = |word: &str| {
        let reader = crawltop::index::IndexReader::open(&dir.join("index")).expect("index");
        let hits = reader.search(word, 10).expect("search");
        hits.into_iter().map(|h| h.url).collect::<Vec<_>>()
    };
    let found = |after: &str| {
        assert_eq!(searched("zebrawhole"), [url("/whole.html")], "{after}");
        assert_eq!(searched("zebrabig"), [url("/big.html")], "{after}");
        for word in ["zebrastalled", "zebrabroken"] {
            assert_eq!(searched(word), Vec::<String>::new(), "{word} {after}");
        }
    };
    found("at the crawl");
    index_again(&dir);
    found("built again");

    // Neither mirrored nor extracted, at the crawl or later.
    let pages = dir.join("pages");
    for (path, mirrored) in [
        ("/stalled.html", false),
        ("/broken.html", false),
        ("/whole.html", true),
        ("/big.html", true),
    ] {
        let u = url::Url::parse(&url(path)).expect("url");
        let file = pages.join(mirror_path(&u).expect("mirrorable"));
        assert_eq!(file.is_file(), mirrored, "{}", file.display());
    }
    let urls_of = |jsonl: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(jsonl)
            .lines()
            .map(|l| {
                let line: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
                line["url"].as_str().expect("a url").to_owned()
            })
            .collect()
    };
    let at_crawl = urls_of(&std::fs::read(&lines).expect("extract lines"));
    let mut sorted = at_crawl.clone();
    sorted.sort();
    assert_eq!(sorted, [url("/big.html"), url("/whole.html")]);
    let later = std::process::Command::new(crate::util::bin())
        .arg("extract")
        .arg(&dir)
        .args(["--extract", "para=p"])
        .output()
        .expect("extract runs");
    assert!(
        later.status.success(),
        "{}",
        String::from_utf8_lossy(&later.stderr)
    );
    assert_eq!(urls_of(&later.stdout), at_crawl);
}

/// Killed with SIGKILL right after a page whose body stalled or broke, three times, and resumed
/// to its end: the WARC files hold one record of every response, the cut ones marked as they
/// were (the record is written with its page's commit, and a resume cuts the files back to the
/// mark, so it is never lost nor doubled), and the failures add up as in one run.
#[tokio::test]
async fn a_crawl_killed_after_cut_pages_stores_each_once_when_resumed() {
    let stalled = |n: usize| format!("<html><body><p>stalled {n}</p>");
    let broken = |n: usize| format!("<html><body><p>broken {n}</p>");
    let mut extra = Vec::new();
    for n in 0..30 {
        let answer = match n % 5 {
            1 => Answer {
                stall_after: Some(stalled(n).len()),
                ..Answer::html(format!("{}never sent</body></html>", stalled(n)))
            },
            3 => Answer {
                claimed_length: Some(broken(n).len() + 1000),
                ..Answer::html(broken(n))
            },
            _ => continue,
        };
        extra.push((format!("/p{n}.html"), answer));
    }
    let extra: Vec<(&str, Answer)> = extra.iter().map(|(p, a)| (p.as_str(), a.clone())).collect();
    let (origin, asked) = quirky_site(site_of_pages(30, &extra)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, stats) = (dir.path().join("crawl"), dir.path().join("stats.json"));
    let run = || {
        tokio::process::Command::new(crate::util::bin())
            .args(["crawl", &format!("{origin}/"), "--headless"])
            .args([
                "--delay-ms",
                "10",
                "--timeout-ms",
                "400",
                "--checkpoint-ms",
                "100",
            ])
            .arg("--out")
            .arg(&out)
            .arg("--stats-out")
            .arg(&stats)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn")
    };
    let is_cut = |path: &str| {
        (0..30)
            .filter(|n| n % 5 == 1 || n % 5 == 3)
            .any(|n| path == format!("/p{n}.html"))
    };
    let mut kills = 0;
    while kills < 3 {
        let start = asked.paths().len();
        let mut child = run();
        // A cut page asked in this run, and a request after it: its result is in.
        let past_a_cut = |paths: &[String]| {
            let this_run = paths.get(start..).unwrap_or_default();
            this_run.iter().rev().skip(1).any(|p| is_cut(p))
        };
        tokio::select! {
            () = asked.wait_until(past_a_cut) => {
                child.start_kill().expect("SIGKILL");
                child.wait().await.expect("reaped");
                kills += 1;
            }
            status = child.wait() => {
                assert!(status.expect("status").success());
                break;
            }
        }
    }
    assert!(kills >= 2, "the crawl ended before it was killed twice");
    let ended = tokio::time::timeout(crate::util::PATIENCE, run().wait())
        .await
        .expect("the last run ends")
        .expect("status");
    assert!(ended.success(), "{ended:?}");

    let warc = crate::util::read_warc(&out.join("warc"));
    let twice: Vec<_> = warc.counts.iter().filter(|(_, n)| **n != 1).collect();
    assert!(twice.is_empty(), "stored more than once: {twice:?}");
    for n in 0..30 {
        let url = format!("{origin}/p{n}.html");
        assert_eq!(warc.counts.get(&url), Some(&1), "{url}");
        assert_eq!(warc.requests.get(&url), Some(&1), "{url}");
        let (why, body) = match n % 5 {
            1 => (Some("time"), stalled(n)),
            3 => (Some("disconnect"), broken(n)),
            _ => (None, "<p>a page</p>".to_owned()),
        };
        assert_eq!(warc.truncated[&url].as_deref(), why, "{url}");
        assert_eq!(String::from_utf8_lossy(&warc.bodies[&url]), body, "{url}");
    }
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    let errors = &stats["errors"];
    assert_eq!(
        (errors["timeout"].as_u64(), errors["other"].as_u64()),
        (Some(6), Some(6)),
        "{errors}"
    );
}

/// Only a redirect's Location is followed: a 304 or a 300 that carries one is an answer, and
/// the site never asked for its Location (a browser would not ask either).
#[tokio::test]
async fn a_location_on_a_status_that_is_no_redirect_is_not_followed() {
    let with_location = |status: u16, to: &str| Answer {
        status,
        ..Answer::new(&[("Location", to)], "")
    };
    let answers = BTreeMap::from([
        (
            "/".to_owned(),
            linking(&["/n304.html", "/n300.html", "/r307.html"]),
        ),
        (
            "/n304.html".to_owned(),
            with_location(304, "/never304.html"),
        ),
        (
            "/n300.html".to_owned(),
            with_location(300, "/never300.html"),
        ),
        ("/r307.html".to_owned(), with_location(307, "/target.html")),
        ("/target.html".to_owned(), Answer::html("<p>here</p>")),
    ]);
    let (origin, asked) = quirky_site(answers).await;
    let (crawled, _out) = crawl_into_warc(&origin).await;
    let asked = asked.paths();
    assert!(asked.contains(&"/target.html".to_owned()), "{asked:?}");
    for never in ["/never304.html", "/never300.html"] {
        assert!(!asked.contains(&never.to_owned()), "{never}: {asked:?}");
    }
    assert_eq!(crawled.urls[&format!("{origin}/n304.html")]["status"], 304);
}

#[tokio::test]
async fn stacked_codings_are_decoded_and_a_coding_crawltop_cannot_decode_is_kept_as_sent() {
    let page = |word: &str, link: &str| {
        format!("<html><body><p>{word}</p><a href=\"{link}\">x</a></body></html>").into_bytes()
    };
    let double = page("zebradouble", "/from-double.html");
    // zstd's magic number, then what a parse would read as HTML if it took the bytes as they are.
    let zstd = [
        b"\x28\xb5\x2f\xfd".as_slice(),
        &page("zebrazstd", "/from-zstd.html"),
    ]
    .concat();
    let gzip_zstd = gzip(&page("zebragzipzstd", "/from-gzip-zstd.html"));
    let encoded = |coding: &str, body: &[u8]| {
        Answer::new(
            &[("Content-Type", "text/html"), ("Content-Encoding", coding)],
            body.to_vec(),
        )
    };
    let answers = BTreeMap::from([
        (
            "/".to_owned(),
            linking(&["/double.html", "/zstd.html", "/gzip-zstd.html"]),
        ),
        (
            "/double.html".to_owned(),
            encoded("gzip, gzip", &gzip(&gzip(&double))),
        ),
        ("/zstd.html".to_owned(), encoded("zstd", &zstd)),
        (
            "/gzip-zstd.html".to_owned(),
            encoded("gzip, zstd", &gzip_zstd),
        ),
        ("/from-double.html".to_owned(), Answer::html("<p>x</p>")),
    ]);
    let (origin, asked) = quirky_site(answers).await;
    let (crawled, out) = crawl_into_warc(&origin).await;
    let asked = asked.paths();
    let warc = crate::util::read_warc(&out.path().join("warc"));
    let reader = crawltop::index::IndexReader::open(&out.path().join("index")).expect("index");
    let hits = |word: &str| reader.search(word, 10).expect("search").len();

    // Decoded right to left: parsed, indexed, its link followed, stored decoded.
    let url = format!("{origin}/double.html");
    assert_eq!(
        crawled.urls[&url]["state"], "parsed",
        "{}",
        crawled.urls[&url]
    );
    assert!(asked.iter().any(|a| a == "/from-double.html"), "{asked:?}");
    assert_eq!(hits("zebradouble"), 1);
    assert_eq!(warc.bodies[&url], double);
    let head = warc.heads[&url].to_ascii_lowercase();
    assert!(
        head.contains("\r\nx-crawltop-original-content-encoding: gzip, gzip\r\n")
            && !head.contains("\r\ncontent-encoding"),
        "{head}"
    );

    // Not decoded: not parsed nor indexed, its links not followed, the row says why, and the
    // record keeps the bytes and the Content-Encoding the server sent.
    for (path, coding, sent, word, link) in [
        ("/zstd.html", "zstd", &zstd, "zebrazstd", "/from-zstd.html"),
        (
            "/gzip-zstd.html",
            "gzip, zstd",
            &gzip_zstd,
            "zebragzipzstd",
            "/from-gzip-zstd.html",
        ),
    ] {
        let url = format!("{origin}{path}");
        let row = &crawled.urls[&url];
        assert_eq!(row["state"], "parse_ignored", "{row}");
        assert_eq!(
            row["reason"], "content-encoding zstd is not supported",
            "{row}"
        );
        assert_eq!(hits(word), 0, "{word} indexed");
        assert!(!asked.iter().any(|a| a == link), "{link} asked: {asked:?}");
        assert_eq!(&warc.bodies[&url], sent, "{url} stored as sent");
        let head = &warc.heads[&url];
        assert!(
            head.contains(&format!("\r\ncontent-encoding: {coding}\r\n"))
                && !head
                    .to_ascii_lowercase()
                    .contains("original-content-encoding"),
            "{head}"
        );
    }
    let resources = &crawled.stats["resources"];
    assert_eq!(resources["parse_ignored"], 2, "{resources}");

    // An index built again from the WARC files takes the same pages.
    drop(reader);
    let rebuilt = crawltop::reindex::reindex(out.path(), 64, true, |_| {}).expect("reindex");
    assert_eq!(rebuilt.pages, 3, "/, /double.html, /from-double.html");
    let reader = crawltop::index::IndexReader::open(&out.path().join("index")).expect("index");
    for (word, pages) in [("zebradouble", 1), ("zebrazstd", 0), ("zebragzipzstd", 0)] {
        assert_eq!(
            reader.search(word, 10).expect("search").len(),
            pages,
            "{word}"
        );
    }
}

#[tokio::test]
async fn html_sent_without_a_content_type_is_sniffed_and_every_page_left_unparsed_says_why() {
    let page = |word: &str, link: &str| {
        format!("\n<!DOCTYPE html><html><body><p>{word}</p><a href=\"{link}\">x</a></body></html>")
    };
    let answers = BTreeMap::from([
        (
            "/".to_owned(),
            linking(&["/notype.html", "/octet.html", "/image.png", "/notype.bin"]),
        ),
        (
            "/notype.html".to_owned(),
            Answer::new(&[], page("zebranotype", "/from-notype.html")),
        ),
        (
            "/octet.html".to_owned(),
            Answer::new(
                &[("Content-Type", "application/octet-stream")],
                page("zebraoctet", "/from-octet.html"),
            ),
        ),
        (
            "/image.png".to_owned(),
            Answer::new(
                &[("Content-Type", "image/png")],
                b"\x89PNG\r\n\x1a\n".to_vec(),
            ),
        ),
        (
            "/notype.bin".to_owned(),
            Answer::new(
                &[],
                b"\x00\x01 <a href=\"/from-bin.html\">zebrabin</a>".to_vec(),
            ),
        ),
        ("/from-notype.html".to_owned(), Answer::html("<p>x</p>")),
    ]);
    let (origin, asked) = quirky_site(answers).await;
    let (crawled, out) = crawl_into_warc(&origin).await;
    let asked = asked.paths();
    let row = |path: &str| crawled.urls[&format!("{origin}{path}")].clone();

    assert_eq!(
        row("/notype.html")["state"],
        "parsed",
        "{}",
        row("/notype.html")
    );
    assert!(asked.iter().any(|a| a == "/from-notype.html"), "{asked:?}");
    let reader = crawltop::index::IndexReader::open(&out.path().join("index")).expect("index");
    assert_eq!(reader.search("zebranotype", 10).expect("search").len(), 1);

    for (path, reason) in [
        ("/octet.html", "not HTML: application/octet-stream"),
        ("/image.png", "not HTML: image/png"),
        (
            "/notype.bin",
            "not HTML: no Content-Type, and the body does not start like HTML",
        ),
    ] {
        let row = row(path);
        assert_eq!(
            (row["state"].as_str(), row["reason"].as_str()),
            (Some("parse_ignored"), Some(reason)),
            "{row}"
        );
    }
    for unfollowed in ["/from-octet.html", "/from-bin.html"] {
        assert!(!asked.iter().any(|a| a == unfollowed), "{asked:?}");
    }
    for word in ["zebraoctet", "zebrabin"] {
        assert_eq!(reader.search(word, 10).expect("search").len(), 0, "{word}");
    }

    // An index built again from the WARC files sniffs the same page.
    drop(reader);
    let rebuilt = crawltop::reindex::reindex(out.path(), 64, true, |_| {}).expect("reindex");
    assert_eq!(rebuilt.pages, 3, "/, /notype.html, /from-notype.html");
    let reader = crawltop::index::IndexReader::open(&out.path().join("index")).expect("index");
    assert_eq!(reader.search("zebranotype", 10).expect("search").len(), 1);
}

/// A WARC response record's status line says the version the server answered with.
#[tokio::test]
async fn a_warc_record_keeps_the_http_version_the_server_answered_with() {
    let mut answers = BTreeMap::new();
    answers.insert("/".to_owned(), linking(&["/old.html"]));
    answers.insert(
        "/old.html".to_owned(),
        Answer {
            version: "HTTP/1.0",
            ..Answer::html("<p>from an old server</p>")
        },
    );
    let (origin, _) = quirky_site(answers).await;
    let (_, out) = crawl_into_warc(&origin).await;
    let warc = crate::util::read_warc(&out.path().join("warc"));
    let head = |path: &str| warc.heads[&format!("{origin}{path}")].clone();
    assert!(
        head("/old.html").starts_with("HTTP/1.0 200 "),
        "{}",
        head("/old.html")
    );
    assert!(head("/").starts_with("HTTP/1.1 200 "), "{}", head("/"));
}

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

/// A site of `pages` pages (`/p0.html`, ...) linked from its index, whose robots.txt allows
/// all, with `extra` answers besides.
fn site_of_pages(pages: usize, extra: &[(&str, Answer)]) -> BTreeMap<String, Answer> {
    site_of_slow_pages(pages, std::time::Duration::ZERO, extra)
}

/// [`site_of_pages`] whose pages each take `after` to answer.
fn site_of_slow_pages(
    pages: usize,
    after: std::time::Duration,
    extra: &[(&str, Answer)],
) -> BTreeMap<String, Answer> {
    let paths: Vec<String> = (0..pages).map(|i| format!("/p{i}.html")).collect();
    let mut answers = BTreeMap::new();
    let links: Vec<&str> = paths.iter().map(String::as_str).collect();
    answers.insert("/".to_owned(), linking(&links));
    for p in &paths {
        let page = Answer::html("<p>a page</p>");
        answers.insert(p.clone(), Answer { after, ..page });
    }
    answers.insert(
        "/robots.txt".to_owned(),
        Answer::new(&[], "User-agent: *\nDisallow:\n"),
    );
    for (path, answer) in extra {
        answers.insert((*path).to_owned(), answer.clone());
    }
    answers
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

/// Two Content-Type headers (stacked proxies send them): the last that names a type decides,
/// as in a browser, so an HTML page is parsed and its links followed.
#[tokio::test]
async fn of_two_content_type_headers_the_last_decides() {
    let mut answers = BTreeMap::new();
    answers.insert(
        "/".to_owned(),
        Answer::new(
            &[
                ("Content-Type", "text/plain"),
                ("Content-Type", "text/html"),
            ],
            r#"<html><body><a href="/linked.html">x</a></body></html>"#,
        ),
    );
    answers.insert("/linked.html".to_owned(), Answer::html("<p>found</p>"));
    let (origin, asked) = quirky_site(answers).await;
    let mut cfg = config(vec![format!("{origin}/")]);
    cfg.delay_ms = 0;
    let crawled = crawl(cfg).await;
    assert!(crawled.summary.completed);
    assert_eq!(crawled.urls[&format!("{origin}/")]["state"], "parsed");
    assert!(asked.paths().iter().any(|p| p == "/linked.html"));
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

/// `crawltop crawl ORIGIN/ --headless` with `args`, its stderr kept: for what a crawl says.
async fn crawl_by_cli(origin: &str, args: &[&str]) -> std::process::Output {
    let output = tokio::process::Command::new(crate::util::bin())
        .args(["crawl", &format!("{origin}/"), "--headless"])
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(crate::util::PATIENCE, output)
        .await
        .expect("the crawl ends")
        .expect("it runs")
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

/// A site whose server keeps a connection after its first answer and closes it as the second
/// request arrives, unanswered (an idle timeout firing just then, common with short keep-alive
/// limits): every request the crawl sends on a kept connection meets a closed one. Each page is
/// still fetched, stored and followed: the unanswered request is sent again on a new
/// connection. Before, such a page failed ("connection closed before message completed") and
/// was lost, a flake of the reindex test's too. Returns the origin and the paths the server
/// answered.
async fn site_closing_kept_connections(pages: usize) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("bound"));
    let answered = Arc::new(Mutex::new(Vec::new()));
    let log = answered.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let Some(path) = crate::util::request_path(&mut stream).await else {
                    return;
                };
                let (status, body) = match path.as_str() {
                    "/" => {
                        let mut links = String::new();
                        for i in 0..pages {
                            let _ = write!(links, "<a href=\"/p{i}.html\">p{i}</a>");
                        }
                        ("200 OK", format!("<html><body>{links}</body></html>"))
                    }
                    p if p.starts_with("/p") => ("200 OK", format!("<p>page {p}</p>")),
                    _ => ("404 Not Found", String::new()),
                };
                log.lock().expect("no test thread panicked").push(path);
                let reply = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes()).await;
                // The next request on this connection is read, then the connection closed.
                let _ = crate::util::request_path(&mut stream).await;
            });
        }
    });
    (origin, answered)
}

#[tokio::test]
async fn pages_asked_on_connections_the_server_closes_are_asked_again_and_kept() {
    let (origin, answered) = site_closing_kept_connections(6).await;
    let (crawled, out) = crawl_into_warc(&origin).await;
    assert!(crawled.summary.completed);
    let mut pages: Vec<String> = (0..6).map(|i| format!("/p{i}.html")).collect();
    pages.push("/".to_owned());
    let mut served = answered.lock().expect("no test thread panicked").clone();
    served.sort();
    served.dedup();
    let mut expected = pages.clone();
    expected.push("/robots.txt".to_owned());
    expected.sort();
    assert_eq!(served, expected, "every path answered");
    let warc = crate::util::read_warc(&out.path().join("warc"));
    for page in &pages {
        let url = format!("{origin}{page}");
        assert_eq!(
            crawled.urls[&url]["state"], "parsed",
            "{}",
            crawled.urls[&url]
        );
        assert!(
            warc.bodies.contains_key(&url),
            "{url} stored: {:?}",
            warc.order
        );
    }
}
