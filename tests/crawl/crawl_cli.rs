//! `crawltop crawl` from the command line: errors, files written, signals.

use std::process::{Command, Stdio};
use std::time::Duration;

use crawltop::testweb::{GenOptions, TestWeb};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::util::{Finish, PATIENCE, bin, read_stderr_until};

fn crawltop(args: &[&str]) -> std::process::Output {
    Command::new(bin()).args(args).output().expect("runs")
}

#[test]
fn bad_input_is_named_and_exits_2() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let bad_toml = tmp.path().join("bad.toml");
    std::fs::write(&bad_toml, "workers = [oops").expect("write");
    let typo_toml = tmp.path().join("typo.toml");
    std::fs::write(&typo_toml, "wrokers = 4\n").expect("write");
    let bad_toml_s = bad_toml.to_str().expect("utf8");
    let typo_toml_s = typo_toml.to_str().expect("utf8");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["crawl"], "no seed URL"),
        (
            vec!["crawl", "not a url"],
            "\"not a url\" is not a valid URL",
        ),
        (
            vec!["crawl", "ftp://127.0.0.1/"],
            "not an http or https URL",
        ),
        (
            vec!["crawl", "http://127.0.0.1:9/", "--include", "("],
            "--include \"(\"",
        ),
        (
            vec!["crawl", "http://127.0.0.1:9/", "--exclude", "[z-a]"],
            "--exclude",
        ),
        (
            vec!["crawl", "http://127.0.0.1:9/", "--workers", "0"],
            "--workers",
        ),
        (
            vec!["crawl", "http://127.0.0.1:9/", "--parse-threads", "0"],
            "--parse-threads must be between 1",
        ),
        (
            vec!["crawl", "http://127.0.0.1:9/", "--parse-threads", "many"],
            "invalid value 'many' for '--parse-threads",
        ),
        (
            vec!["crawl", "http://127.0.0.1:9/", "--frobnicate"],
            "unexpected argument",
        ),
        (
            vec!["crawl", "http://127.0.0.1:9/", "--scope", "planet"],
            "invalid value 'planet'",
        ),
        (vec!["crawl", "--config", bad_toml_s], "does not parse"),
        (vec!["crawl", "--config", typo_toml_s], "wrokers"),
        (vec!["crawl", "--config", "/no/such.toml"], "/no/such.toml"),
        (
            vec!["crawl", "--seeds-file", "/no/seeds.txt"],
            "/no/seeds.txt",
        ),
    ];
    for (args, needle) in cases {
        let o = crawltop(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// The run's keys in a `--config` file (audit 25 f2: only the crawl's settings were taken, and
/// `seeds_file` was an unknown key): the seeds file, headless, the log and the control API,
/// each as its flag would do; a flag still wins, and a wrong value is named.
#[tokio::test]
async fn a_config_file_takes_the_runs_keys_too() {
    let web = TestWeb::start(GenOptions::new(2, 8).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let seeds = tmp.path().join("seeds.txt");
    std::fs::write(&seeds, format!("{}\n", web.url("site00", "/"))).expect("write");
    let log = tmp.path().join("crawl.log");
    let stats = tmp.path().join("stats.json");
    let config = tmp.path().join("crawl.toml");
    let toml = |p: &std::path::Path| p.to_str().expect("utf8").replace('\\', "\\\\");
    std::fs::write(
        &config,
        format!(
            "seeds_file = \"{}\"\nheadless = true\nlog = \"{}\"\ncontrol = \"127.0.0.1:0\"\n\
             control_token = \"s3cret\"\ndelay_ms = 10\nstats_out = \"{}\"\n",
            toml(&seeds),
            toml(&log),
            toml(&stats)
        ),
    )
    .expect("write");
    let out = tokio::process::Command::new(bin())
        .args(["crawl", "--config", config.to_str().expect("utf8")])
        .stdin(Stdio::null())
        .finish()
        .await
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Headless: the summary on stderr, no screen; the control API listened.
    assert!(err.contains("crawltop: done after"), "{err}");
    assert!(err.contains("control API on http://127.0.0.1:"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\u{1b}'));
    // The seeds file's site was crawled, and only it.
    let asked: std::collections::BTreeSet<String> =
        web.log().records().iter().map(|r| r.site.clone()).collect();
    assert_eq!(asked.into_iter().collect::<Vec<_>>(), ["site00"]);
    assert!(std::fs::metadata(&log).is_ok(), "the log file was made");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    assert_eq!(written["ended"], "completed");
    // The file's keys never reach the stats: the token least of all.
    assert!(
        !std::fs::read_to_string(&stats)
            .expect("stats")
            .contains("s3cret")
    );

    // A flag wins: another seeds file on the command line.
    let other = tmp.path().join("other.txt");
    std::fs::write(&other, format!("{}\n", web.url("site01", "/"))).expect("write");
    let out = tokio::process::Command::new(bin())
        .args(["crawl", "--config", config.to_str().expect("utf8")])
        .args([
            "--seeds-file",
            other.to_str().expect("utf8"),
            "--depth",
            "0",
        ])
        .stdin(Stdio::null())
        .finish()
        .await
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(web.log().records().iter().any(|r| r.site == "site01"));

    // A wrong value is named, as a flag's would be.
    std::fs::write(&config, "headless = \"yes\"\n").expect("write");
    let o = crawltop(&["crawl", "--config", config.to_str().expect("utf8")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("does not parse") && err.contains("headless"),
        "{err}"
    );

    // Both parts of the file are read with their places: a wrong run key's value and an
    // unknown setting are shown on their lines.
    // An unknown key's message lists the run's keys beside the settings'.
    for (text, place, listed) in [
        (
            "workers = 4\n\nheadless = \"yes\"\n",
            "3 | headless = \"yes\"",
            "bool",
        ),
        (
            "lease_ms = 10\nworkers = 4\nwrokers = 5\n",
            "3 | wrokers = 5",
            "`seeds_file`",
        ),
    ] {
        std::fs::write(&config, text).expect("write");
        let o = crawltop(&["crawl", "--config", config.to_str().expect("utf8")]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("line 3") && err.contains(place), "{err}");
        assert!(
            err.contains(listed) && err.contains("`workers`") == (listed != "bool"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn a_crawl_writes_its_files_and_reports_progress() {
    let web = TestWeb::start(GenOptions::new(2, 8).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let seeds = tmp.path().join("seeds.txt");
    std::fs::write(
        &seeds,
        format!(
            "# the two sites\n{}\n\n{}\n",
            web.url("site00", "/"),
            web.url("site01", "/")
        ),
    )
    .expect("write");
    let config = tmp.path().join("crawl.toml");
    // The file says 1 s; the flag wins with 10 ms.
    std::fs::write(&config, "delay_ms = 1000\nworkers = 4\n").expect("write");
    let stats = tmp.path().join("stats.json");
    let sites = tmp.path().join("sites.csv");
    let urls = tmp.path().join("urls.jsonl");
    let path = |p: &std::path::Path| p.to_str().expect("utf8").to_string();
    let out = tokio::process::Command::new(bin())
        .args([
            "crawl",
            "--seeds-file",
            &path(&seeds),
            "--config",
            &path(&config),
        ])
        .args(["--delay-ms", "10", "--headless"])
        .args(["--stats-out", &path(&stats), "--sites-out", &path(&sites)])
        .args(["--urls-out", &path(&urls)])
        .finish()
        .await
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("crawltop: done after"), "{err}");
    assert!(err.contains("finished pages"), "{err}");
    // The last progress line counts every response, robots.txt's and redirects' too: as many
    // as the server answered.
    let last = err
        .lines()
        .rfind(|l| l.contains("finished pages"))
        .expect("a last progress line");
    let responses = last
        .split("responses ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("no response count in {last}"));
    assert_eq!(responses, web.log().records().len(), "{last}");
    // Written through a temporary file, each has the mode any new file gets under the umask,
    // not the temporary file's private 0600 (audit 25).
    for file in [&stats, &sites, &urls] {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(file)
            .expect("written")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o666 & !umask(), "{}", file.display());
    }
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    assert_eq!(stats["config"]["delay_ms"], 10);
    assert_eq!(stats["config"]["workers"], 4);
    assert_eq!(stats["totals"]["completed"], true);
    let want: usize = web.manifest().normal_sites().map(|s| s.pages.len()).sum();
    let fetched_pages = stats["resources"]["fetched"].as_u64().expect("n") as usize;
    let redirects: usize = web
        .manifest()
        .normal_sites()
        .map(|s| s.redirects.len())
        .sum();
    assert_eq!(fetched_pages, want + redirects);
    let csv = std::fs::read_to_string(&sites).expect("sites");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "origin,robots_state,crawl_delay_ms,delay_ms,delay_source,queued,fetched,errors,\
             crawl_delay_asked_ms"
        )
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2);
    // site01's robots.txt asks a Crawl-delay of 10 ms (as given and as obeyed); site00's none.
    let delays: Vec<(&str, &str)> = rows.iter().map(|r| (r[2], r[8])).collect();
    assert_eq!(delays, [("", ""), ("10", "10")], "{csv}");
    let url_lines = std::fs::read_to_string(&urls).expect("urls");
    let first: serde_json::Value =
        serde_json::from_str(url_lines.lines().next().expect("a line")).expect("json");
    for key in [
        "url",
        "depth",
        "state",
        "status",
        "bytes",
        "content_type",
        "referrer",
        "reason",
    ] {
        assert!(first.get(key).is_some(), "urls-out line lacks {key}");
    }
}

/// Seeds an `--exclude` or `--max-pages` leaves out are named on stderr, never asked for; the
/// stats file shows the first 100 seeds of many and how many there are.
#[tokio::test]
async fn seeds_left_out_are_named_and_the_stats_show_the_first_hundred() {
    let web = TestWeb::start(GenOptions::new(1, 4).crawl_delay_s(0.0))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let seeds = tmp.path().join("seeds.txt");
    let root = web.url("site00", "/");
    let lines: Vec<String> = (0..150).map(|n| format!("{root}?n={n}")).collect();
    std::fs::write(&seeds, lines.join("\n")).expect("write");
    let stats = tmp.path().join("stats.json");
    // On the command line (in a file it would be a malformed line): admitted, and left out.
    let long = format!("{root}{}", "x".repeat(3000));
    let out = tokio::process::Command::new(bin())
        .arg("crawl")
        .arg(&long)
        .arg("--seeds-file")
        .arg(&seeds)
        .args(["--headless", "--delay-ms", "0", "--depth", "0"])
        .args(["--exclude", "n=7$", "--max-pages", "140"])
        .arg("--stats-out")
        .arg(&stats)
        .stdin(std::process::Stdio::null())
        .finish()
        .await
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!(
            "11 seeds left out: {}... (URL too long), {root}?n=7 (matches an exclude pattern), \
             {root}?n=141 (page limit reached) and 8 more",
            &long[..200]
        )),
        "{err}"
    );
    let asked: Vec<String> = web.log().records().into_iter().map(|r| r.path).collect();
    assert!(!asked.iter().any(|p| p == "/?n=7"), "{asked:?}");
    assert!(!asked.iter().any(|p| p == "/?n=149"), "{asked:?}");
    assert!(asked.iter().any(|p| p == "/?n=140"), "{asked:?}");
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    let shown = stats["config"]["seeds"].as_array().expect("seeds");
    assert_eq!(shown.len(), 100);
    assert_eq!(shown[0], long);
    assert_eq!(shown[99], format!("{root}?n=98"));
    assert_eq!(stats["config"]["seeds_total"], 151);
}

#[tokio::test]
async fn an_export_file_that_cannot_be_written_is_refused_before_any_request() {
    let web = TestWeb::start(GenOptions::new(1, 4).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("no-such-folder");
    let seed = web.url("site00", "/");
    for flag in ["--stats-out", "--sites-out", "--urls-out"] {
        let path = missing.join("file");
        let path = path.to_str().expect("utf8");
        let out = tokio::process::Command::new(bin())
            .args(["crawl", &seed, "--headless", "--delay-ms", "0", flag, path])
            .finish()
            .await
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(
            err.contains(&format!("cannot write {path}")),
            "{flag}: {err}"
        );
    }
    // Refused at the start: the site never heard from the crawler.
    assert_eq!(web.log().len(), 0, "{:?}", web.log().records());
    assert!(!missing.exists());
}

async fn wait_for_requests(web: &TestWeb, n: usize) {
    tokio::time::timeout(PATIENCE, web.log().wait_until(|r| r.len() >= n))
        .await
        .expect("the crawl reached the server");
}

/// A crawl whose stderr has no reader any more (`crawltop crawl ... 2>&1 | head`) still stops
/// on SIGTERM and writes its stats: its progress lines and "stopping" line are dropped, where
/// `eprintln!` panicked and left a process that SIGTERM could not stop.
#[tokio::test]
async fn a_crawl_whose_stderr_reader_left_stops_on_sigterm() {
    let web = TestWeb::start(GenOptions::new(1, 300).crawl_delay_s(0.05))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let stats = tmp.path().join("stats.json");
    let mut child = tokio::process::Command::new(bin())
        .args(["crawl", &web.url("site00", "/"), "--headless"])
        .args(["--delay-ms", "300", "--stats-out"])
        .arg(&stats)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    drop(child.stderr.take());
    // Past the first progress line (every 2 s): at least 9 requests 300 ms apart.
    wait_for_requests(&web, 9).await;
    crate::util::stop_gracefully(&mut child).await;
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    assert_eq!(stats["commands"][0]["source"], "signal");
}

#[tokio::test]
async fn sigterm_stops_gracefully_and_writes_the_stats() {
    let web = TestWeb::start(GenOptions::new(1, 300).crawl_delay_s(0.05))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let stats = tmp.path().join("stats.json");
    let mut child = tokio::process::Command::new(bin())
        .args([
            "crawl",
            &web.url("site00", "/"),
            "--delay-ms",
            "50",
            "--stats-out",
        ])
        .arg(&stats)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    wait_for_requests(&web, 5).await;
    let pid = Pid::from_raw(i32::try_from(child.id().expect("pid")).expect("pid"));
    kill(pid, Signal::SIGTERM).expect("signal");
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("exits")
        .expect("status");
    assert!(status.success(), "{status:?}");
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    assert_eq!(stats["state"], "finished");
    assert_eq!(stats["totals"]["completed"], false);
    assert_eq!(stats["commands"][0]["command"], "stop");
    assert_eq!(stats["commands"][0]["source"], "signal");
    let fetched = stats["resources"]["fetched"].as_u64().expect("n");
    assert!(fetched < 300, "stopped early: {fetched}");
}

#[tokio::test]
async fn a_hangup_stops_a_crawl_as_sigterm_does_unless_it_was_started_ignoring_hangups() {
    let web = TestWeb::start(GenOptions::new(1, 300).crawl_delay_s(0.0))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let stats = tmp.path().join("stats.json");
    let crawl = |program: &str, before: &[&str]| {
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(before)
            .arg(bin())
            .args([
                "crawl",
                &web.url("site00", "/"),
                "--delay-ms",
                "20",
                "--stats-out",
            ])
            .arg(&stats)
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    };
    let signal = |child: &tokio::process::Child, signal: Signal| {
        let pid = Pid::from_raw(i32::try_from(child.id().expect("pid")).expect("pid"));
        kill(pid, signal).expect("signal");
    };
    let ends = |child: tokio::process::Child| {
        let stats = stats.clone();
        async move {
            let out = tokio::time::timeout(PATIENCE, child.wait_with_output())
                .await
                .expect("exits")
                .expect("status");
            assert!(out.status.success(), "{out:?}");
            let stats: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats"))
                    .expect("json");
            assert_eq!(stats["totals"]["completed"], false);
            assert_eq!(stats["commands"].as_array().map(Vec::len), Some(1));
            assert_eq!(stats["commands"][0]["command"], "stop");
            assert_eq!(stats["commands"][0]["source"], "signal");
        }
    };

    // `env` runs the binary as it is: the hangup stops the crawl, stats written.
    let child = crawl("env", &[]).spawn().expect("spawn");
    wait_for_requests(&web, 5).await;
    signal(&child, Signal::SIGHUP);
    ends(child).await;

    // Its stderr a file (`2> crawl.log`): the file still gets the summary after the hangup
    // (audit 25: nothing at all was written to stderr then).
    std::fs::remove_file(&stats).expect("stats");
    let log = tmp.path().join("crawl.log");
    let child = crawl("env", &[])
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("spawn");
    let seen = web.log().records().len();
    wait_for_requests(&web, seen + 5).await;
    signal(&child, Signal::SIGHUP);
    ends(child).await;
    let logged = std::fs::read_to_string(&log).expect("log");
    assert!(
        logged.contains("crawltop: stopped after") && logged.contains("stats written to"),
        "{logged}"
    );

    // Started with hangups ignored (as `nohup` starts it), it crawls on after one.
    std::fs::remove_file(&stats).expect("stats");
    let ignoring = ["-c", "trap '' HUP; exec \"$0\" \"$@\""];
    let child = crawl("sh", &ignoring).spawn().expect("spawn");
    let seen = web.log().records().len();
    wait_for_requests(&web, seen + 5).await;
    signal(&child, Signal::SIGHUP);
    let after = web.log().records().len();
    wait_for_requests(&web, after + 10).await;
    signal(&child, Signal::SIGTERM);
    ends(child).await;
}

#[tokio::test]
async fn a_second_interrupt_ends_at_once_with_stats() {
    // Stalled answers keep requests in flight, so a graceful stop would wait on them.
    let web = TestWeb::start_with(GenOptions::new(1, 2).hostile(true), |o| {
        o.hostile.stall = Duration::from_secs(60);
    })
    .await
    .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let stats = tmp.path().join("stats.json");
    let mut child = tokio::process::Command::new(bin())
        .args([
            "crawl",
            &web.url("hostile", "/stall.html"),
            "--timeout-ms",
            "120000",
        ])
        .arg("--stats-out")
        .arg(&stats)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // robots.txt, then the stalled page is in flight.
    tokio::time::timeout(
        PATIENCE,
        web.log()
            .wait_until(|r| r.iter().any(|r| r.path == "/robots.txt")),
    )
    .await
    .expect("robots fetched");
    let pid = Pid::from_raw(i32::try_from(child.id().expect("pid")).expect("pid"));
    // robots.txt and then the stalled page have arrived: the page is in flight.
    tokio::time::timeout(PATIENCE, web.log().wait_arrivals(2))
        .await
        .expect("the stalled page is asked for");
    kill(pid, Signal::SIGINT).expect("first");
    let mut stderr = child.stderr.take().expect("stderr");
    read_stderr_until(&mut stderr, |s| s.contains("stopping")).await;
    // The process may already be gone if the stop was quick: that is fine too.
    let _ = kill(pid, Signal::SIGINT);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("ended at once, not after the 60 s stall")
        .expect("status");
    assert!(status.success(), "{status:?}");
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    assert_eq!(stats["state"], "finished");
    assert_eq!(stats["totals"]["completed"], false);
}

#[test]
fn demo_crawls_its_own_web_and_cleans_up_unless_kept() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let stats = tmp.path().join("stats.json");
    let o = crawltop(&[
        "demo",
        "--sites",
        "2",
        "--pages",
        "6",
        "--delay-ms",
        "0",
        "--headless",
        "--stats-out",
        stats.to_str().expect("utf8"),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // The web was generated in a temporary folder, named on stderr, and removed at the end.
    let dir = err
        .lines()
        .find_map(|l| l.split(" pages in ").nth(1))
        .expect("the demo says where the web is");
    assert!(
        !std::path::Path::new(dir.trim()).exists(),
        "{dir} left behind"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    assert_eq!(json["totals"]["completed"], true);
    // Two sites, the hostile one, robots500, robotsmoved and robotsaway: every kind of
    // robots.txt state shows up.
    let states: Vec<&str> = json["sites"]
        .as_array()
        .expect("sites")
        .iter()
        .map(|s| s["robots_state"].as_str().expect("state"))
        .collect();
    assert_eq!(states.len(), 6, "{states:?}");
    assert!(states.contains(&"error"), "{states:?}");
    assert!(json["errors"]["timeout"].as_u64().expect("n") >= 1);

    // Without --stats-out, headless too, the stats go where `demo --help` says: a timestamped
    // file in the current folder, named on stderr.
    let keep = tmp.path().join("kept");
    let cwd = tmp.path().join("cwd");
    std::fs::create_dir(&cwd).expect("mkdir");
    let o = std::process::Command::new(bin())
        .args(["demo", "--sites", "1", "--pages", "3", "--delay-ms", "0"])
        .args(["--headless", "--keep", keep.to_str().expect("utf8")])
        .current_dir(&cwd)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(keep.join("manifest.json").is_file(), "--keep keeps the web");
    let written: Vec<String> = std::fs::read_dir(&cwd)
        .expect("cwd")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    let [name] = &written[..] else {
        panic!("one stats file: {written:?}\n{err}");
    };
    assert!(
        name.starts_with("crawltop-stats-") && name.ends_with(".json"),
        "{name}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cwd.join(name)).expect("stats"))
            .expect("json");
    assert_eq!(json["totals"]["completed"], true);
    assert!(err.contains(&format!("stats written to {name}")), "{err}");
}

#[tokio::test]
async fn ctl_talks_to_a_running_crawl() {
    let web = TestWeb::start(GenOptions::new(1, 300)).await.expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let stats = tmp.path().join("stats.json");
    let mut child = tokio::process::Command::new(bin())
        .args([
            "crawl",
            &web.url("site00", "/"),
            "--delay-ms",
            "50",
            "--headless",
        ])
        .args(["--control", "127.0.0.1:0", "--stats-out"])
        .arg(&stats)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stderr = child.stderr.take().expect("stderr");
    let mark = "control API on http://";
    let seen = read_stderr_until(&mut stderr, |s| {
        s.split(mark).nth(1).is_some_and(|rest| rest.contains('\n'))
    })
    .await;
    let addr = seen
        .split(mark)
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the control address is printed")
        .to_string();
    let ctl = |args: &[&str]| {
        let mut all = vec!["ctl", addr.as_str()];
        all.extend_from_slice(args);
        crawltop(&all)
    };
    let o = ctl(&["stats"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let snap: serde_json::Value = serde_json::from_slice(&o.stdout).expect("stats json");
    assert!(snap.get("workers").is_some());
    let o = ctl(&["delay", "abc"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("ms"),
        "names the parameter"
    );
    let o = ctl(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    for (verb, value) in [("delay", "MS"), ("workers", "N")] {
        let o = ctl(&[verb]);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        let says = format!("{verb} needs a value: ctl ADDR {verb} {value}");
        assert!(err.contains(&says), "{err}");
    }
    let o = ctl(&["stats", "extra"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("too many arguments"), "{err}");
    // The address as the crawl prints it, a URL, is taken too (http, no path).
    let url = format!("http://{addr}");
    for form in [url.clone(), format!("{url}/")] {
        let o = crawltop(&["ctl", &form, "stats"]);
        assert!(
            o.status.success(),
            "{form}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    for (form, says) in [
        (format!("https://{addr}"), "http://"),
        (format!("{url}/stats"), "no path"),
        ("http://localhost:7070".to_string(), "an IP address"),
    ] {
        let o = crawltop(&["ctl", &form, "stats"]);
        assert_eq!(o.status.code(), Some(2), "{form}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{form}: {err}");
    }
    let o = ctl(&["stop"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let status = tokio::time::timeout(PATIENCE, child.wait())
        .await
        .expect("the crawl ends after stop")
        .expect("status");
    assert!(status.success());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    assert_eq!(json["commands"][0]["command"], "stop");
    assert_eq!(json["commands"][0]["source"], "api");
}

/// A seed nobody answers at: RFC 9309 makes its unreadable robots.txt forbid the whole site, but
/// the user is told it could not be read (a warning as it happens, and in the summary), not
/// left to think the site forbids crawling. Also a crawl that ends before its reporter looked
/// shows its warnings.
#[test]
fn a_seed_nobody_answers_at_says_its_robots_txt_could_not_be_read() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr")
    };
    let seed = format!("http://{closed}/");
    let tmp = tempfile::tempdir().expect("tempdir");
    let stats = tmp.path().join("stats.json");
    let o = crawltop(&[
        "crawl",
        &seed,
        "--headless",
        "--robots-retries",
        "0",
        "--stats-out",
        stats.to_str().expect("a UTF-8 path"),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    assert_eq!(
        json["errors"]["robots_unreachable"], 1,
        "{}",
        json["errors"]
    );
    assert_eq!(json["errors"]["robots_forbidden"], 0, "{}", json["errors"]);
    assert_eq!(
        json["resources"]["fetch_forbidden"], 1,
        "{}",
        json["resources"]
    );
    assert!(
        err.contains("crawltop: warning: ")
            && err.contains("robots.txt unreachable after retries; nothing is fetched there"),
        "{err}"
    );
    assert!(
        err.contains(
            "0 forbidden by robots.txt, 1 not fetched (1 site's robots.txt could not be read: \
             nothing is fetched there)"
        ),
        "{err}"
    );
}

#[test]
fn demo_checks_its_flags_before_it_writes_a_web() {
    let tmp = tempfile::tempdir().expect("tempdir");
    for (flag, value, expected) in [
        ("--workers", "0", "--workers"),
        ("--delay-ms", "99999999", "--delay-ms"),
        ("--sites", "0", "--sites"),
    ] {
        let o = crawltop(&["demo", "--headless", flag, value]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag}: {err}");
        assert!(err.contains(expected), "{flag}: {err}");
        assert!(!err.contains("generating"), "{flag}: {err}");
    }
    let keep = tmp.path().join("full");
    std::fs::create_dir(&keep).expect("mkdir");
    std::fs::write(keep.join("mine.txt"), "x").expect("write");
    let o = crawltop(&["demo", "--headless", "--keep", keep.to_str().expect("utf8")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("--force"), "demo has no --force: {err}");
    assert!(err.contains("not empty"), "{err}");
    assert!(keep.join("mine.txt").is_file());
    // A folder an earlier demo crawled into: each demo serves a new web on new ports, so it is
    // refused before a web is written, not resumed against servers that are gone (audit 25).
    let earlier = tmp.path().join("earlier");
    std::fs::create_dir(&earlier).expect("mkdir");
    std::fs::write(earlier.join("state.redb"), "x").expect("write");
    let o = crawltop(&[
        "demo",
        "--headless",
        "--out",
        earlier.to_str().expect("utf8"),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("is not empty: demo --out"), "{err}");
    assert!(!err.contains("generating"), "{err}");
    assert!(
        !err.contains("--fresh") && !err.contains("is kept"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(earlier.join("state.redb")).expect("kept"),
        "x"
    );
}

/// This process's umask (Linux: `/proc/self/status`), which the crawls it starts inherit.
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .expect("a Umask line");
    u32::from_str_radix(line.trim(), 8).expect("octal")
}

/// Audit 32 H1: a crawl kept an idle connection open for every site it had contacted in the
/// last 90 s; at the process's limit of open files (here 256, the crawl cannot raise it) new
/// connections failed, robots.txt of live sites ended "unreachable" and their pages were never
/// fetched, and the stats file could not be written (exit 2). Now only a budget of sites keeps
/// a connection, sized to the limit: every page of 300 sites is fetched and the stats written.
#[tokio::test]
async fn a_crawl_of_more_sites_than_it_may_open_files_fetches_every_page() {
    let web = TestWeb::start(GenOptions::new(300, 2).seed(3).crawl_delay_s(0.01))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let seeds = crate::cluster_crawl::seeds_file(&web, tmp.path());
    let stats = tmp.path().join("stats.json");
    // The soft and the hard limit at once: the crawl cannot raise it.
    let run = tokio::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 256 && exec \"$0\" \"$@\"")
        .arg(bin())
        .args(["crawl", "--headless", "--delay-ms", "0", "--workers", "16"])
        .arg("--seeds-file")
        .arg(&seeds)
        .arg("--stats-out")
        .arg(&stats)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .expect("the crawl runs");
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{err}");
    assert!(!err.contains("nreachable"), "{err}");
    let served: std::collections::BTreeSet<(String, String)> = web
        .log()
        .records()
        .into_iter()
        .filter(|r| r.status == 200)
        .map(|r| (r.site, r.path))
        .collect();
    let mut missing = Vec::new();
    for site in &web.manifest().sites {
        for page in &site.pages {
            if !served.contains(&(site.name.clone(), page.path.clone())) {
                missing.push(format!("{}{}", site.name, page.path));
            }
        }
    }
    assert!(missing.is_empty(), "never fetched: {missing:?}\n{err}");
    let stats = crate::cluster_crawl::stats(&stats);
    assert_eq!(stats["ended"], "completed");
}

/// Audit 34: `--stats-out DIR/stats.json` in a crawl folder not yet made failed as the crawl
/// started, with the OS's words about a temporary file; the crawl makes that folder, and the
/// stats go there. A folder that nothing makes is named.
#[tokio::test]
async fn stats_may_go_into_the_crawl_folder_a_new_crawl_makes() {
    let web = TestWeb::start(GenOptions::new(1, 5).seed(2).crawl_delay_s(0.0))
        .await
        .expect("web");
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("new");
    let run = |out: &std::path::Path, stats: &std::path::Path| {
        tokio::process::Command::new(bin())
            .args([
                "crawl",
                &web.url("site00", "/"),
                "--headless",
                "--delay-ms",
                "0",
            ])
            .arg("--out")
            .arg(out)
            .arg("--stats-out")
            .arg(stats)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .output()
    };
    let made = run(&out, &out.join("stats.json")).await.expect("runs");
    let err = String::from_utf8_lossy(&made.stderr);
    assert_eq!(made.status.code(), Some(0), "{err}");
    let stats = crate::cluster_crawl::stats(&out.join("stats.json"));
    assert_eq!(stats["ended"], "completed");
    let requests = web.log().records().len();
    let nowhere = tmp.path().join("nowhere").join("stats.json");
    let refused = run(&tmp.path().join("other"), &nowhere)
        .await
        .expect("runs");
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(err.contains("does not exist"), "{err}");
    assert_eq!(web.log().records().len(), requests, "nothing fetched");
}
