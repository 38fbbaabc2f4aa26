//! `crawltop extract DIR --extract NAME=CSS[@attr]`: fields from a finished crawl's WARC files,
//! checked against the pages the server serves.

use std::collections::BTreeSet;
use std::process::Command;

use crawltop::store::committer::StoreKind;
use crawltop::testweb::manifest::SiteKind;
use crawltop::testweb::{GenOptions, TestWeb};

use crate::engine::{config, crawl, seeds};
use crate::util::{bin, client, get_text};

/// The text between the first `<title>` and `</title>`, found without an HTML parser.
fn title_of(body: &str) -> Option<&str> {
    let start = body.find("<title>")? + "<title>".len();
    let end = body[start..].find("</title>")?;
    Some(body[start..start + end].trim())
}

/// How many `<a ...href=` start tags a page has, counted without an HTML parser.
fn anchors_with_href(body: &str) -> usize {
    body.match_indices("<a ")
        .filter(|(i, _)| {
            let tag = &body[*i..];
            let end = tag.find('>').unwrap_or(tag.len());
            tag[..end].contains("href=")
        })
        .count()
}

#[tokio::test]
async fn extract_writes_a_line_per_matching_page_in_commit_order() {
    let web = TestWeb::start(GenOptions::new(2, 20).seed(5))
        .await
        .expect("web");
    let out = tempfile::tempdir().expect("tempdir");
    let mut cfg = config(seeds(&web, SiteKind::Normal));
    cfg.delay_ms = 0;
    cfg.out = Some(out.path().to_path_buf());
    cfg.store = StoreKind::Warc;
    let crawled = crawl(cfg).await;
    assert_eq!(crawled.summary.snapshot.commit.error, None);

    let lines_file = out.path().join("fields.jsonl");
    let run = Command::new(bin())
        .arg("extract")
        .arg(out.path())
        .args(["--extract", "heading=h1", "--extract", "links=a@href"])
        .arg("--extract-out")
        .arg(&lines_file)
        .output()
        .expect("runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&lines_file)
        .expect("the lines file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();

    // Every HTML page the server answered 200 for has a line (they all have an <h1>).
    let served: BTreeSet<String> = web
        .log()
        .records()
        .into_iter()
        .filter(|r| {
            let path = r.path.split('?').next().unwrap_or_default();
            r.status == 200 && (path.ends_with(".html") || path.ends_with('/'))
        })
        .map(|r| web.url(&r.site, &r.path))
        .collect();
    let extracted: BTreeSet<String> = lines
        .iter()
        .map(|l| l["url"].as_str().expect("url").to_string())
        .collect();
    assert_eq!(extracted, served, "one line per HTML page served");
    assert_eq!(lines.len(), served.len(), "no page twice");

    // In commit order: the sequence numbers rise.
    let seqs: Vec<u64> = lines
        .iter()
        .map(|l| l["seq"].as_u64().expect("seq"))
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");

    // The values are the page's, as served.
    let http = client();
    for line in &lines {
        let url = line["url"].as_str().expect("url");
        let body = get_text(&http, url).await;
        let heading = line["fields"]["heading"][0].as_str().expect("a heading");
        assert_eq!(Some(heading), title_of(&body), "{url}");
        let links = line["fields"]["links"].as_array().map_or(0, Vec::len);
        assert_eq!(links, anchors_with_href(&body), "{url}");
    }
}

#[test]
fn extract_refuses_bad_input_with_a_clear_error() {
    let empty = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(empty.path().join("warc")).expect("mkdir");
    let dir = empty.path().to_str().expect("utf8");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["extract", dir, "--extract", "h=div[[["],
            "not a CSS selector",
        ),
        (vec!["extract", dir, "--extract", "h1"], "expected NAME=CSS"),
        (
            vec!["extract", dir, "--extract", "a=h1", "--extract", "a=h2"],
            "given twice",
        ),
        (
            vec!["extract", dir, "--extract", "h=h1"],
            "holds no WARC files",
        ),
        (
            vec!["extract", "/nonexistent/crawl", "--extract", "h=h1"],
            "/nonexistent/crawl",
        ),
        (vec!["extract", dir], "--extract"),
    ];
    for (args, message) in cases {
        let out = Command::new(bin()).args(&args).output().expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}
