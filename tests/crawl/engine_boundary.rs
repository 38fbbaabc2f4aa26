//! The engine's edges, judged from the outside: a locked crawl folder is refused before
//! anything else is said, more workers mean more back queues (more sites at once), and a
//! frontier of the test's own making drives the coordinator through the frontier boundary.

use std::process::Stdio;

use crawltop::testweb::{GenOptions, TestWeb};

use crate::util::{PATIENCE, bin, read_stderr_until};

#[tokio::test]
async fn a_locked_folder_is_refused_once_before_any_resuming() {
    let web = TestWeb::start(GenOptions::new(1, 300)).await.expect("web");
    let out = tempfile::tempdir().expect("tempdir");
    let url = web.url("site00", "/");
    let crawl = |extra: &[&str]| {
        let mut cmd = tokio::process::Command::new(bin());
        cmd.args(["crawl", &url, "--headless", "--checkpoint-ms", "100"])
            .args(extra)
            .arg("--out")
            .arg(out.path())
            .stdout(Stdio::null())
            .kill_on_drop(true);
        cmd
    };
    // A crawl that leaves an unfinished checkpoint behind.
    let mut first = crawl(&["--delay-ms", "100"])
        .stderr(Stdio::null())
        .spawn()
        .expect("first");
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= 6))
        .await
        .expect("the first crawl runs");
    first.kill().await.expect("kill");
    // A second one resumes it and holds the folder.
    let mut holder = crawl(&["--delay-ms", "100"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("holder");
    let mut holder_err = holder.stderr.take().expect("stderr");
    read_stderr_until(&mut holder_err, |s| s.contains("resuming the crawl in")).await;
    // A third one must refuse, and say only that.
    let third = crawl(&[]).output().await.expect("third");
    let err = String::from_utf8_lossy(&third.stderr);
    assert_eq!(third.status.code(), Some(2), "{err}");
    assert!(!err.contains("resuming"), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "one line, not {}: {err}", lines.len());
    assert_eq!(
        err.matches("in use by another crawltop").count(),
        1,
        "said once: {err}"
    );
    let pid = holder.id().expect("pid").to_string();
    assert!(
        err.contains(&format!("pid {pid}")),
        "names the holder: {err}"
    );
    holder.kill().await.expect("kill");
}
