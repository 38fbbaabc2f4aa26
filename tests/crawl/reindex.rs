//! `crawltop index DIR`: a crawl folder's index built again from its WARC files answers as the
//! index the crawl would have built, and the crawl goes on indexing after it.

use std::path::Path;
use std::process::{Command, Stdio};

use crawltop::index::IndexReader;
use crawltop::testweb::{GenOptions, TestWeb};

use crate::util::{Finish, PATIENCE, bin, listing, stop_gracefully};

/// Words whose most and least counts, and searches, the two indexes must agree on.
const WORDS: [&str; 6] = ["alice", "rabbit", "queen", "the", "turtle", "hatter"];

/// `crawltop ARGS`: its exit code and stderr.
fn run(args: &[&str], dir: &Path) -> (Option<i32>, String) {
    let out = Command::new(bin())
        .args(args)
        .arg(dir)
        .stdout(Stdio::null())
        .output()
        .expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What a user can ask the index in `dir`: `wc`, the counts of [`WORDS`], and searches (URL,
/// title, score to four places), every answer of each. Equal scores and counts go to the lower
/// seq, which only the same crawl shares: `Order::Ignored` compares two crawls of one web (the
/// hits of each search sorted, the counts without the page).
fn answers(dir: &Path, order: Order) -> Vec<String> {
    let reader = IndexReader::open(&dir.join("index")).expect("an index");
    let mut all = vec![format!("{:?}", reader.word_count().expect("wc"))];
    let count = |c: Option<crawltop::index::Count>| match order {
        Order::Kept => c.map(|c| format!("{} {}", c.url, c.count)),
        Order::Ignored => c.map(|c| c.count.to_string()),
    };
    for word in WORDS {
        all.push(format!(
            "max {word} {:?}",
            count(reader.max_count(word).expect("max"))
        ));
        all.push(format!(
            "min {word} {:?}",
            count(reader.min_count(word).expect("min"))
        ));
    }
    for query in [
        "alice rabbit",
        "\"mock turtle\"",
        "queen NOT alice",
        "title:alice",
    ] {
        let hits = reader.search_counted(query, 10_000).expect("search");
        all.push(format!("{query}: {}", hits.total));
        let mut lines: Vec<String> = hits
            .hits
            .iter()
            .map(|h| format!("  {} {:?} {:.4}", h.url, h.title, h.score))
            .collect();
        if order == Order::Ignored {
            lines.sort();
        }
        all.extend(lines);
    }
    all
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    /// One crawl's folder, its index made twice.
    Kept,
    /// Two crawls of one web.
    Ignored,
}

/// A site on 127.0.0.1 (port chosen by the OS) whose two pages, full of the words [`answers`]
/// asks about, never come whole: `/stalled.html` sends its headers and half its body, then
/// nothing until the client leaves; `/broken.html` closes the connection halfway. Anything else
/// is a 404 (robots.txt too: everything is allowed). Returns its origin.
async fn cut_site() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("bound"));
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
                let Some(path) = crate::util::request_path(&mut stream).await else {
                    return;
                };
                let half = "<html><head><title>alice the queen</title></head><body><p>alice \
                            rabbit queen the mock turtle hatter</p>";
                let head = |length: usize| {
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: \
                         {length}\r\nConnection: close\r\n\r\n"
                    )
                };
                let reply = match path.as_str() {
                    "/stalled.html" | "/broken.html" => head(half.len() * 2) + half,
                    _ => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_owned(),
                };
                let _ = stream.write_all(reply.as_bytes()).await;
                if path == "/stalled.html" {
                    let mut buf = [0u8; 512];
                    while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
                }
                let _ = stream.shutdown().await;
            });
        }
    });
    origin
}

/// With pages whose body stalled or broke (in the WARC files, marked `time` and `disconnect`,
/// but no pages): the crawl's own index and the one built again both leave them out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_built_from_the_warc_files_answers_as_the_crawls_own() {
    // A plain web, with a page of more distinct words than the index takes.
    let words: Vec<String> = (0..crawltop::index::MAX_DISTINCT_WORDS + 100)
        .map(|i| format!("w{i}"))
        .collect();
    let page = format!(
        "<!DOCTYPE html><html><head><title>Many words</title></head><body><p>{}</p></body></html>",
        words.join(" ")
    );
    let web = TestWeb::start_with(GenOptions::new(2, 40).seed(21).crawl_delay_s(0.0), |o| {
        std::fs::write(o.dir.join("site00").join("distinct-words.html"), &page).expect("write");
    })
    .await
    .expect("web");
    let cut = cut_site().await;
    let cut_pages = [format!("{cut}/stalled.html"), format!("{cut}/broken.html")];
    let dir = tempfile::tempdir().expect("tempdir");
    let crawl = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut cmd = tokio::process::Command::new(bin());
        cmd.args(["crawl", &web.url("site00", "/distinct-words.html")])
            .args([web.url("site00", "/"), web.url("site01", "/")])
            .args(&cut_pages)
            // Ample for a loopback page on a loaded machine; the stalled page waits it out.
            .args(["--headless", "--delay-ms", "0", "--timeout-ms", "3000"])
            .args(extra)
            .arg("--out")
            .arg(&out)
            .stderr(Stdio::null());
        // Awaited and bounded (`finish`): a crawl that never ends fails the test instead of
        // hanging it, and the in-process server is not starved while it runs.
        async move {
            let status = cmd.finish().await.expect("crawl").status;
            assert!(status.success(), "{status:?}");
            out
        }
    };
    // The crawl's own index, made again from its WARC files: the same answers, ties and all.
    let indexed = crawl("indexed", &[]).await;
    let expected = answers(&indexed, Order::Kept);
    assert!(expected.len() > 50, "{expected:#?}");
    let warc = crate::util::read_warc(&indexed.join("warc"));
    for (page, why) in cut_pages.iter().zip(["time", "disconnect"]) {
        assert_eq!(
            warc.truncated.get(page).map(Option::as_deref),
            Some(Some(why)),
            "{page}: the pages stored are {:?}",
            warc.order
        );
    }
    assert!(
        !expected.iter().any(|a| a.contains(&cut)),
        "no cut page answers: {expected:#?}"
    );
    let before = listing(&indexed.join("index"));
    let (code, err) = run(&["index"], &indexed);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("already has an index") && err.contains("--replace"),
        "{err}"
    );
    assert_eq!(
        listing(&indexed.join("index")),
        before,
        "a refusal changes nothing"
    );
    let (code, err) = run(&["index", "--replace"], &indexed);
    assert_eq!(code, Some(0), "{err}");
    let max = crawltop::index::MAX_DISTINCT_WORDS;
    assert!(
        err.contains(&format!("1 cut at {max} distinct words")),
        "{err}"
    );
    assert_eq!(answers(&indexed, Order::Kept), expected);
    let names: Vec<_> = std::fs::read_dir(&indexed)
        .expect("folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("index"))
        .collect();
    assert_eq!(names, ["index"], "nothing of the build left beside it");

    // A crawl made with --no-index, then indexed: as searchable as one made with the index.
    let bare = crawl("bare", &["--no-index"]).await;
    let (code, err) = run(&["wc"], &bare);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("crawltop index"), "the way to an index: {err}");
    let (code, err) = run(&["index"], &bare);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        answers(&bare, Order::Ignored),
        answers(&indexed, Order::Ignored)
    );
}

/// A crawl started with `--no-index`, stopped, indexed, resumed with the index, stopped, its
/// index lost, refused, indexed again, resumed to its end: its index answers as the index of
/// the same crawl made in one run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_indexed_after_a_stop_or_a_lost_index_resumes_and_ends_as_one_run_would() {
    let web = TestWeb::start(GenOptions::new(2, 60).seed(22).crawl_delay_s(0.0))
        .await
        .expect("web");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("crawl");
    let crawl = |out: &Path, extra: &[&str]| {
        let mut cmd = tokio::process::Command::new(bin());
        cmd.args(["crawl", &web.url("site00", "/"), &web.url("site01", "/")])
            .args(["--headless", "--delay-ms", "15", "--checkpoint-ms", "100"])
            .args(extra)
            .arg("--out")
            .arg(out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    };
    // Stopped after `n` more requests than the server has seen.
    let stopped_after = |n: usize, extra: &'static [&'static str]| {
        let mut child = crawl(&out, extra).spawn().expect("spawn");
        let web = &web;
        async move {
            let seen = web.log().records().len();
            tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= seen + n))
                .await
                .expect("the crawl runs");
            stop_gracefully(&mut child).await;
        }
    };

    stopped_after(15, &["--no-index"]).await;
    let (code, err) = run(&["index"], &out);
    assert_eq!(code, Some(0), "{err}");
    // The folder now indexes: a run without --no-index resumes it (one with it is refused).
    let refused = crawl(&out, &["--no-index"]).finish().await.expect("run");
    assert_eq!(refused.status.code(), Some(2));
    stopped_after(15, &[]).await;

    std::fs::rename(out.join("index"), dir.path().join("lost")).expect("index away");
    let refused = crawl(&out, &[]).finish().await.expect("run");
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("crawltop index {}", out.display())),
        "{err}"
    );
    let (code, err) = run(&["index"], &out);
    assert_eq!(code, Some(0), "{err}");
    let ended = tokio::time::timeout(PATIENCE * 2, crawl(&out, &[]).output())
        .await
        .expect("it ends")
        .expect("run");
    assert!(
        ended.status.success(),
        "{}",
        String::from_utf8_lossy(&ended.stderr)
    );

    let whole = dir.path().join("whole");
    let one_run = crawl(&whole, &[]).finish().await.expect("run");
    assert!(one_run.status.success());
    let expected = answers(&whole, Order::Ignored);
    assert!(expected.len() > 50, "{expected:#?}");
    assert_eq!(answers(&out, Order::Ignored), expected);
}

#[tokio::test]
async fn index_refuses_what_it_cannot_build_from_and_a_folder_being_crawled() {
    let web = TestWeb::start(GenOptions::new(1, 40).seed(23).crawl_delay_s(0.01))
        .await
        .expect("web");
    let dir = tempfile::tempdir().expect("tempdir");

    let (code, err) = run(&["index"], &dir.path().join("nothing-here"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("nothing-here"), "{err}");

    let (code, err) = run(&["index"], dir.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("holds no checkpoint (state.redb)"), "{err}");

    let crawl = |name: &str, extra: &[&str]| {
        let mut cmd = tokio::process::Command::new(bin());
        cmd.args(["crawl", &web.url("site00", "/"), "--headless"])
            .args(extra)
            .arg("--out")
            .arg(dir.path().join(name))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        cmd
    };
    // Bounded (`finish`): a crawl that never ends fails the test instead of hanging it.
    let status = crawl("mirror", &["--delay-ms", "0", "--store", "mirror"])
        .finish()
        .await
        .expect("crawl")
        .status;
    assert!(status.success());
    let (code, err) = run(&["index", "--replace"], &dir.path().join("mirror"));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("keeps no WARC files (its crawl stored with --store mirror)"),
        "{err}"
    );

    let (code, err) = run(
        &["index", "--index-memory-mb", "1"],
        &dir.path().join("mirror"),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--index-memory-mb"), "{err}");

    // A crawl at work: refused, naming it; nothing of the folder touched.
    let seen = web.log().records().len();
    let mut running = crawl("running", &["--delay-ms", "20", "--no-index"])
        .spawn()
        .expect("spawn");
    let pid = running.id().expect("pid");
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= seen + 10))
        .await
        .expect("the crawl runs");
    let (code, err) = run(&["index"], &dir.path().join("running"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("pid {pid}")), "{err}");
    assert!(!dir.path().join("running").join("index").exists());
    assert!(
        !dir.path()
            .join("running")
            .join(crawltop::reindex::BUILDING)
            .exists()
    );
    stop_gracefully(&mut running).await;
}

/// Two crawls of one web at the same time, as two members of a shared crawl make them: across
/// their folders, equal counts and scores go to the page committed earlier. An index built
/// again from the WARC files keeps each page's commit time (the record carries it), so the
/// answers over both folders, in either order, are what they were (audit 22: with the
/// request's date, to the second, the rebuilt folders gave ties to the folder named first).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ties_across_folders_are_broken_as_before_once_their_indexes_are_built_again() {
    let web = TestWeb::start(GenOptions::new(2, 40).seed(24).crawl_delay_s(0.0))
        .await
        .expect("web");
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let crawl = |out: &Path| {
        let mut cmd = tokio::process::Command::new(bin());
        cmd.args(["crawl", &web.url("site00", "/"), &web.url("site01", "/")])
            .args(["--headless", "--delay-ms", "0"])
            .arg("--out")
            .arg(out)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    };
    // Bounded (`finish`): a crawl that never ends fails the test instead of hanging it.
    let (mut crawl_a, mut crawl_b) = (crawl(&a), crawl(&b));
    let (ran_a, ran_b) = tokio::join!(crawl_a.finish(), crawl_b.finish());
    assert!(ran_a.expect("a").status.success() && ran_b.expect("b").status.success());
    let ask = |args: &[&str]| {
        let out = Command::new(bin()).args(args).output().expect("run");
        assert!(out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let answers = || {
        let (a, b) = (a.to_str().expect("UTF-8"), b.to_str().expect("UTF-8"));
        let mut all = Vec::new();
        for (first, second) in [(a, b), (b, a)] {
            for word in ["alice", "rabbit", "queen", "turtle", "said"] {
                for verb in ["maxcount", "mincount"] {
                    all.push(ask(&[verb, first, second, word, "--json"]));
                }
                all.push(ask(&[
                    "search", first, second, word, "--json", "--limit", "30",
                ]));
            }
        }
        all
    };
    let before = answers();
    for out in [&a, &b] {
        let (code, err) = run(&["index", "--replace"], out);
        assert_eq!(code, Some(0), "{err}");
    }
    let after = answers();
    let differ = before.iter().zip(&after).filter(|(x, y)| x != y).count();
    assert_eq!(differ, 0, "{differ} of {} answers changed", before.len());
}
