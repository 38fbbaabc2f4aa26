//! `crawltop extract DIR --extract NAME=CSS[@attr]`: fields from a finished crawl's WARC files,
//! checked against the pages the server serves.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crawltop::store::committer::StoreKind;
use crawltop::testweb::manifest::SiteKind;
use crawltop::testweb::{GenOptions, TestWeb};

use crate::engine::{config, crawl, seeds};
use crate::util::{Finish, PATIENCE, bin, client, get_text, stop_gracefully};

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
    let lines = read_lines(&lines_file);
    check_against_the_server(&web, &lines, usize::MAX).await;

    // A WARC folder without a checkpoint (made by hand, or by an older crawltop): every record.
    std::fs::remove_file(out.path().join("state.redb")).expect("remove");
    let without = out.path().join("without-state.jsonl");
    extract_from_warc(out.path(), crawltop::extract::DEFAULT_MAX_BYTES, &without);
    assert_eq!(
        std::fs::read_to_string(&without).expect("lines"),
        std::fs::read_to_string(&lines_file).expect("lines")
    );
}

fn read_lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("the lines file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The lines of a crawl with `heading=h1` and `links=a@href`: one per HTML page served (they
/// all have an `<h1>`), in commit order, each with the page's values as served, or skipped when
/// the page is over `max_bytes`.
async fn check_against_the_server(web: &TestWeb, lines: &[serde_json::Value], max_bytes: usize) {
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
    for line in lines {
        let url = line["url"].as_str().expect("url");
        let body = get_text(&http, url).await;
        if body.len() > max_bytes {
            assert_eq!(line["skipped"], "too large", "{line}");
            assert!(line.get("fields").is_none(), "{line}");
            continue;
        }
        assert!(line.get("skipped").is_none(), "{line}");
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
    // A checkpoint that does not read: named, not passed over to read every record.
    let with_bad_state = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(with_bad_state.path().join("warc")).expect("mkdir");
    std::fs::write(with_bad_state.path().join("state.redb"), b"not a state").expect("write");
    let corrupt = with_bad_state.path().to_str().expect("utf8");
    // A mirror-only folder: no warc/ (audit 25: the OS's "No such file or directory").
    let mirrored = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(mirrored.path().join("pages")).expect("mkdir");
    let mirrored = mirrored.path().to_str().expect("utf8");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["extract", mirrored, "--extract", "h=h1"],
            "keeps no WARC files (no warc/ folder",
        ),
        (
            vec!["extract", corrupt, "--extract", "h=h1"],
            "state.redb is corrupt",
        ),
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
        // Audit 33: accepted by `extract`, refused by `crawl` (every page "too large").
        (
            vec![
                "extract",
                dir,
                "--extract",
                "h=h1",
                "--extract-max-bytes",
                "0",
            ],
            "--extract-max-bytes must be between 1 and",
        ),
        (vec!["extract", dir, "--extract", "é=h1"], "ASCII letters"),
    ];
    for (args, message) in cases {
        let out = Command::new(bin()).args(&args).output().expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

/// `crawltop extract DIR` over a crawl folder's WARC files, with the fields these tests use.
fn extract_from_warc(dir: &Path, max_bytes: usize, out: &Path) {
    let run = Command::new(bin())
        .arg("extract")
        .arg(dir)
        .args(["--extract", "heading=h1", "--extract", "links=a@href"])
        .arg("--extract-max-bytes")
        .arg(max_bytes.to_string())
        .arg("--extract-out")
        .arg(out)
        .output()
        .expect("runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// `crawltop extract` over `out`'s WARC files writes, byte for byte, the lines a crawl wrote
/// to `lines_file` (no line twice, none lost); returns the file it wrote, beside `lines_file`.
fn same_lines_as_the_warc_files(out: &Path, max_bytes: usize, lines_file: &Path) -> PathBuf {
    let from_warc = lines_file.with_file_name("from-warc.jsonl");
    extract_from_warc(out, max_bytes, &from_warc);
    assert_eq!(
        std::fs::read_to_string(lines_file).expect("lines"),
        std::fs::read_to_string(&from_warc).expect("lines from the WARC files"),
        "the crawl's file is what the WARC files give: no line twice, none lost"
    );
    from_warc
}

/// A headless crawl of `web`'s normal sites into `out` with the fields these tests use.
fn crawl_extracting(
    web: &TestWeb,
    out: &Path,
    lines: &Path,
    max_bytes: usize,
) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(bin());
    cmd.arg("crawl")
        .args(seeds(web, SiteKind::Normal))
        .args(["--headless", "--delay-ms", "10", "--workers", "4"])
        // Rare enough that lines are written past the mark before a kill.
        .args(["--checkpoint-ms", "150"])
        .args(["--extract", "heading=h1", "--extract", "links=a@href"])
        .arg("--extract-max-bytes")
        .arg(max_bytes.to_string())
        .arg("--extract-out")
        .arg(lines)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// Audit 27: a new crawl given another crawl's `--extract-out` emptied it without a word, and
/// that crawl could not resume any more (nor, without WARC files, write its lines again). A new
/// crawl now refuses a file that holds lines, and leaves it as it was; `--fresh` replaces it.
#[tokio::test]
async fn a_new_crawl_refuses_an_extract_file_that_holds_lines_unless_fresh() {
    let web = TestWeb::start(GenOptions::new(1, 10).seed(5).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let lines = tmp.path().join("lines.jsonl");
    let theirs = "{\"url\":\"http://127.0.0.1:1/\",\"seq\":0,\"fields\":{}}\n";
    std::fs::write(&lines, theirs).expect("write");
    let out = crawl_extracting(&web, &tmp.path().join("new"), &lines, 2 << 20)
        .stderr(Stdio::piped())
        .finish()
        .await
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("already holds") && err.contains("another crawl's") && err.contains("--fresh"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&lines).expect("kept"), theirs);
    assert!(web.log().records().is_empty(), "nothing fetched");

    let out = crawl_extracting(&web, &tmp.path().join("new"), &lines, 2 << 20)
        .arg("--fresh")
        .stderr(Stdio::piped())
        .finish()
        .await
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read_to_string(&lines).expect("written");
    assert!(!written.contains("127.0.0.1:1/"), "replaced: {written}");
    assert!(written.lines().count() > 0);
}

#[tokio::test]
async fn a_crawl_extracts_as_it_commits_the_lines_crawltop_extract_gives() {
    let web = TestWeb::start(GenOptions::new(2, 20).seed(5).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (out, lines_file) = (tmp.path().join("crawl"), tmp.path().join("lines.jsonl"));
    // About half the generated pages are larger than this.
    let max_bytes = 7000;
    // Bounded (`finish`): a crawl that never ends fails the test instead of hanging it.
    let status = crawl_extracting(&web, &out, &lines_file, max_bytes)
        .finish()
        .await
        .expect("crawl")
        .status;
    assert!(status.success());
    let lines = read_lines(&lines_file);
    check_against_the_server(&web, &lines, max_bytes).await;
    let skipped = lines.iter().filter(|l| l["skipped"] == "too large").count();
    assert!(
        skipped > 0 && skipped < lines.len(),
        "{skipped} of {} skipped",
        lines.len()
    );
    let from_warc = same_lines_as_the_warc_files(&out, max_bytes, &lines_file);
    // Written through a temporary file, it is as readable as the crawl's own (audit 25: 0600).
    let mode = |p: &Path| {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(p).expect("written").permissions().mode() & 0o777
    };
    assert_eq!(mode(&from_warc), mode(&lines_file));
}

/// Audit 33 F1, F2: an output written into the crawl folder's own files destroyed them (the
/// extract lines on `state.redb`: the checkpoint cut to 2 KB at the resume; `extract` over the
/// only WARC file), and two outputs on one file lost one. Each is refused before anything is
/// fetched or written, and the folder stays byte for byte as it was.
#[tokio::test]
async fn outputs_on_the_crawl_folders_files_or_on_each_other_are_refused() {
    let web = TestWeb::start(GenOptions::new(1, 10).seed(5).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (out, lines) = (tmp.path().join("crawl"), tmp.path().join("lines.jsonl"));
    let done = crawl_extracting(&web, &out, &lines, 2 << 20)
        .finish()
        .await
        .expect("crawl");
    assert!(done.status.success());
    let requests = web.log().records().len();
    let snapshot = |dir: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut files: Vec<(PathBuf, Vec<u8>)> = crate::util::files_under(dir)
            .into_iter()
            .map(|p| {
                let bytes = std::fs::read(&p).expect("read");
                (p, bytes)
            })
            .collect();
        files.sort();
        files
    };
    let before = snapshot(&out);
    let warc = out.join("warc/crawltop-00000.warc.gz");
    assert!(warc.is_file(), "the crawl wrote {}", warc.display());
    for target in [warc.clone(), out.join("state.redb")] {
        let (code, _, err) = extract_run(
            &out,
            &[
                "--extract",
                "h=h1",
                "--extract-out",
                &target.display().to_string(),
            ],
        );
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("in the crawl folder's"), "{err}");
    }
    // The crawl itself, as a resume of the finished folder would start (refused first for its
    // output) and as a new crawl with two outputs on one file.
    let inside = out.join("state.redb").display().to_string();
    let same = tmp.path().join("same.json").display().to_string();
    for (args, says) in [
        (
            vec![
                "--out",
                path(&out),
                "--extract",
                "h=h1",
                "--extract-out",
                &inside,
            ],
            "in the crawl folder's",
        ),
        (
            vec![
                "--out",
                path(&tmp.path().join("other")),
                "--extract",
                "h=h1",
                "--extract-out",
                &same,
                "--stats-out",
                &same,
            ],
            "--stats-out and --extract-out name the same file",
        ),
        (
            vec!["--stats-out", &same, "--urls-out", &same],
            "--stats-out and --urls-out name the same file",
        ),
    ] {
        let run = tokio::process::Command::new(bin())
            .arg("crawl")
            .args(seeds(&web, SiteKind::Normal))
            .arg("--headless")
            .args(&args)
            .output()
            .await
            .expect("runs");
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert_eq!(snapshot(&out), before, "the crawl folder is as it was");
    assert!(!tmp.path().join("same.json").exists());
    assert!(!tmp.path().join("other").exists());
    assert_eq!(
        web.log().records().len(),
        requests,
        "nothing more was fetched"
    );
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temporary path")
}

#[tokio::test]
async fn a_crawl_killed_and_resumed_extracts_every_page_exactly_once() {
    let web = TestWeb::start(GenOptions::new(3, 120).seed(22).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (out, lines_file) = (tmp.path().join("crawl"), tmp.path().join("lines.jsonl"));
    let max_bytes = 7000;
    let mut kills = 0;
    loop {
        let mut child = crawl_extracting(&web, &out, &lines_file, max_bytes)
            .spawn()
            .expect("spawn");
        if kills == 3 {
            let status = tokio::time::timeout(PATIENCE * 2, child.wait())
                .await
                .expect("the last run ends")
                .expect("status");
            assert!(status.success());
            break;
        }
        // Killed once lines were written in this run: some of them are above the last mark.
        let len = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
        let grown = len(&lines_file) + 16 * 1024;
        let written = async {
            while len(&lines_file) < grown {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        };
        tokio::select! {
            () = written => {
                child.start_kill().expect("SIGKILL");
                child.wait().await.expect("reaped");
                kills += 1;
            }
            status = child.wait() => {
                assert!(status.expect("status").success());
                break;
            }
            () = tokio::time::sleep(PATIENCE) => panic!("the crawl stalled"),
        }
    }
    assert!(kills >= 2, "the crawl ended before it was killed twice");
    let lines = read_lines(&lines_file);
    check_against_the_server(&web, &lines, max_bytes).await;
    same_lines_as_the_warc_files(&out, max_bytes, &lines_file);
}

/// A resume whose extract file lost lines its checkpoint counts (removed, cut) is refused with
/// the file's name and what to do, and creates nothing (audit 24: "the checkpoint ... is
/// corrupt", and an empty file left behind); the file written again by `crawltop extract` from
/// the WARC files is resumed, and ends as an uninterrupted crawl's would.
#[tokio::test]
async fn a_resume_whose_extract_file_lost_lines_is_refused_and_a_rebuilt_file_goes_on() {
    let web = TestWeb::start(GenOptions::new(3, 120).seed(22).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let (out, lines_file) = (tmp.path().join("crawl"), tmp.path().join("lines.jsonl"));
    let max_bytes = 7000;
    let mut child = crawl_extracting(&web, &out, &lines_file, max_bytes)
        .spawn()
        .expect("spawn");
    let len = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let written = async {
        while len(&lines_file) < 16 * 1024 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(PATIENCE, written)
        .await
        .expect("lines written");
    // A graceful stop: its last checkpoint counts every line written.
    stop_gracefully(&mut child).await;
    let counted = len(&lines_file);
    assert!(counted >= 16 * 1024);
    std::fs::remove_file(&lines_file).expect("removed");
    // A resume with `max_bytes` that must be refused: its stderr.
    let refused = |max_bytes: usize| {
        let mut cmd = crawl_extracting(&web, &out, &lines_file, max_bytes);
        cmd.stderr(Stdio::piped());
        async move {
            let run = cmd.finish().await.expect("runs");
            let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
            assert_eq!(run.status.code(), Some(2), "{stderr}");
            stderr
        }
    };
    let stderr = refused(max_bytes).await;
    assert!(
        stderr.contains(&format!(
            "lines.jsonl holds 0 bytes, but the crawl's checkpoint says {counted} bytes of extract lines"
        )) && stderr.contains("crawltop extract"),
        "{stderr}"
    );
    assert!(!lines_file.exists(), "the refused resume created the file");
    // Another size cap would mix two caps in one file (audit 24): refused, naming both.
    let stderr = refused(max_bytes + 1).await;
    assert!(
        stderr.contains(&format!(
            "--extract-max-bytes {max_bytes} (this run: {})",
            max_bytes + 1
        )),
        "{stderr}"
    );
    // Written again from the WARC files, it is resumed.
    extract_from_warc(&out, max_bytes, &lines_file);
    let status = crawl_extracting(&web, &out, &lines_file, max_bytes)
        .finish()
        .await
        .expect("resumes")
        .status;
    assert!(status.success());
    let lines = read_lines(&lines_file);
    check_against_the_server(&web, &lines, max_bytes).await;
    same_lines_as_the_warc_files(&out, max_bytes, &lines_file);
}

#[tokio::test]
async fn a_crawl_with_a_bad_field_exits_2_before_any_request() {
    let web = TestWeb::start(GenOptions::new(1, 5)).await.expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let seed = web.url("site00", "/");
    let (out, lines) = (tmp.path().join("crawl"), tmp.path().join("lines.jsonl"));
    let (out, lines) = (out.to_str().expect("utf8"), lines.to_str().expect("utf8"));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "--extract",
                "h=div[[[",
                "--extract-out",
                lines,
                "--out",
                out,
            ],
            "not a CSS selector",
        ),
        (
            vec!["--extract", "h1", "--extract-out", lines, "--out", out],
            "expected NAME=CSS",
        ),
        (
            vec!["--extract", "h=h1", "--out", out],
            "--extract needs --extract-out",
        ),
        (
            vec!["--extract-out", lines, "--out", out],
            "--extract-out needs at least one --extract",
        ),
        (
            vec!["--extract", "h=h1", "--extract-out", lines],
            "--extract-out needs --out",
        ),
    ];
    for (args, message) in cases {
        // Async and bounded: a crawl that started after all would need the in-process server,
        // which a blocking wait here would starve.
        let run = tokio::process::Command::new(bin())
            .args(["crawl", &seed, "--headless"])
            .args(&args)
            .finish()
            .await
            .expect("runs");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    assert!(web.log().records().is_empty(), "nothing was fetched");
    assert!(!Path::new(lines).exists(), "no lines file was made");
}

/// `crawltop extract DIR ARGS`: its exit code, stdout and stderr.
fn extract_run(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let run = Command::new(bin())
        .arg("extract")
        .arg(dir)
        .args(args)
        .output()
        .expect("runs");
    (
        run.status.code(),
        String::from_utf8(run.stdout).expect("utf8"),
        String::from_utf8_lossy(&run.stderr).into_owned(),
    )
}

/// The total size of the files in `dir`.
fn folder_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum()
    })
}

/// What a killed crawl wrote past its last checkpoint is not extracted: a resume cuts it and
/// fetches those pages again. A crawl stopped gracefully (its checkpoint holds everything) is
/// resumed with no checkpoint but the one its start writes, and killed once it has written
/// records past it, into more than one WARC file: `extract` gives what it gave before the
/// resume, and `wc` agrees; while the crawl runs, `extract` says it is being crawled rather than
/// read a checkpoint that is not there yet. Resumed to its end, the crawl keeps those lines first.
#[tokio::test]
async fn extract_stops_at_the_checkpoint_of_a_killed_crawl_and_refuses_a_running_one() {
    let web = TestWeb::start(GenOptions::new(2, 150).seed(41).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("crawl");
    let crawl = |checkpoint_ms: &str| {
        let mut cmd = tokio::process::Command::new(bin());
        cmd.arg("crawl")
            .args(seeds(&web, SiteKind::Normal))
            .args(["--headless", "--delay-ms", "20", "--workers", "4"])
            .args([
                "--warc-max-bytes",
                "65536",
                "--checkpoint-ms",
                checkpoint_ms,
            ])
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        cmd
    };
    let fields = ["--extract", "heading=h1", "--extract", "links=a@href"];
    let wc = || {
        let run = Command::new(bin())
            .arg("wc")
            .arg(&out)
            .output()
            .expect("runs");
        assert!(run.status.success());
        String::from_utf8(run.stdout).expect("utf8")
    };

    // Run 1, stopped gracefully: its last checkpoint holds everything it wrote.
    let mut first = crawl("100").spawn().expect("spawn");
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= 30))
        .await
        .expect("the crawl runs");
    stop_gracefully(&mut first).await;
    let (code, stopped, stderr) = extract_run(&out, &fields);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stopped.lines().count() > 5, "{stopped}");
    let stopped_wc = wc();

    // Run 2 resumes it without a checkpoint of its own, and writes records past the mark.
    let warc = out.join("warc");
    let written_before = folder_bytes(&warc);
    let mut second = crawl("600000").spawn().expect("spawn");
    let past_the_mark = async {
        while folder_bytes(&warc) < written_before + 150_000 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    };
    tokio::select! {
        () = past_the_mark => {}
        status = second.wait() => panic!("the crawl ended before it was killed: {status:?}"),
        () = tokio::time::sleep(PATIENCE) => panic!("the crawl stalled"),
    }
    let (code, lines, stderr) = extract_run(&out, &fields);
    let pid = second.id().expect("running").to_string();
    assert_eq!(code, Some(2), "a running crawl's folder: {stderr}");
    assert!(
        stderr.contains("is being crawled") && stderr.contains(&pid),
        "{stderr}"
    );
    assert_eq!(lines, "", "nothing extracted");
    second.start_kill().expect("SIGKILL");
    second.wait().await.expect("reaped");

    let (code, killed, stderr) = extract_run(&out, &fields);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("unfinished"), "{stderr}");
    assert_eq!(
        killed, stopped,
        "the lines the checkpoint holds, none past it"
    );
    assert_eq!(wc(), stopped_wc, "wc counts the same pages");

    // Resumed to its end, the crawl keeps those lines and adds every other page once.
    let status = tokio::time::timeout(PATIENCE * 2, crawl("100").status())
        .await
        .expect("the last run ends")
        .expect("status");
    assert!(status.success());
    let (code, finished, stderr) = extract_run(&out, &fields);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("unfinished"), "{stderr}");
    assert!(
        finished.starts_with(&killed),
        "the resumed crawl kept them first"
    );
    let lines: Vec<serde_json::Value> = finished
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    check_against_the_server(&web, &lines, usize::MAX).await;
}
