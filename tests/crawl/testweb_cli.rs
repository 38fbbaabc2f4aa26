//! `crawltop gen-site` and `crawltop serve` from the command line, as a user runs them.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Output, Stdio};

use crawltop::testweb::{Listening, Manifest};

use crate::util::{COMMAND_PATIENCE, PATIENCE, bin};

/// `crawltop ARGS` run to its end, bounded by [`COMMAND_PATIENCE`]: a `serve` that should have
/// been refused and serves instead would never end, so it is killed and the test fails.
fn crawltop(args: &[&str]) -> Output {
    let child = Command::new(bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    // Not reaped before `wait_with_output` returns, so the pid is still the child's when a
    // kill comes.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    let Ok(output) = rx.recv_timeout(COMMAND_PATIENCE) else {
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        panic!("crawltop {args:?} ran over {COMMAND_PATIENCE:?}");
    };
    output.expect("runs")
}

/// Waits for `child` to exit, at most [`PATIENCE`]; kills it and fails the test after that.
fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().expect("exits") {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the process did not exit within {PATIENCE:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn gen_site_writes_a_web_and_its_manifest() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("web");
    let o = crawltop(&[
        "gen-site",
        "--out",
        out.to_str().expect("utf8"),
        "--sites",
        "3",
        "--pages",
        "12",
        "--seed",
        "9",
        "--hostile",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let m = Manifest::load(&out).expect("manifest");
    assert_eq!(m.seed, 9);
    assert_eq!(m.sites.len(), 7);
    assert!(out.join("site02/index.html").is_file());
    assert!(out.join("hostile/malformed.html").is_file());
}

#[test]
fn gen_site_bad_input_gives_a_clear_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("web");
    let out_s = out.to_str().expect("utf8");
    let cases: &[(&[&str], &str)] = &[
        (&["--sites", "0"], "--sites must be at least 1"),
        (&["--pages", "0"], "--pages must be at least 1"),
        (&["--pages", "5000000"], "limit"),
        (&["--text", "/no/such/book.txt"], "/no/such/book.txt"),
        (&["--crawl-delay=-3"], "--crawl-delay"),
        (&["--crawl-delay", "99999999"], "from 0 to 86400 (a day)"),
        (&["--crawl-delay", "inf"], "--crawl-delay"),
        (&["--sites", "many"], "invalid value"),
        (&["--frobnicate"], "unexpected argument"),
        (&["--heavy", "--heavy-mb", "0"], "0 is not in 1..=64"),
        (&["--heavy", "--heavy-mb", "65"], "65 is not in 1..=64"),
        (&["--heavy", "--heavy-mb", "lots"], "invalid value 'lots'"),
        (
            &["--heavy", "--heavy-mb", "99999999999999999999999"],
            "--heavy-mb",
        ),
        (&["--heavy-mb", "4"], "--heavy"),
        (&["--link-farm", "0"], "0 is not in 1..=64"),
        (&["--link-farm", "65"], "65 is not in 1..=64"),
        (&["--link-farm", "eight"], "invalid value 'eight'"),
        (&["--farm-links", "5"], "--link-farm"),
        (&["--farm-pages", "5"], "--link-farm"),
        (&["--link-farm", "1", "--farm-links", "0"], "--farm-links"),
        (
            &["--link-farm", "1", "--farm-links", "100001"],
            "not in 1..=100000",
        ),
        (&["--link-farm", "1", "--farm-pages=-3"], "--farm-pages"),
        (
            &[
                "--link-farm",
                "1",
                "--farm-pages",
                "100000000",
                "--farm-links",
                "100000",
            ],
            "more than 10000000000 URLs a site",
        ),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["gen-site", "--out", out_s];
        args.extend_from_slice(extra);
        let o = crawltop(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        assert!(stderr(&o).contains(expected), "{extra:?}: {}", stderr(&o));
        assert!(!out.exists(), "{extra:?} left {out_s} behind");
    }
    std::fs::create_dir(&out).expect("mkdir");
    std::fs::write(out.join("mine.txt"), "x").expect("write");
    let o = crawltop(&["gen-site", "--out", out_s]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
}

/// A `crawltop serve` child and what it printed first.
struct Served {
    child: Child,
    listening: Listening,
}

/// A server a failed test leaves behind would serve forever: it is killed with the test.
impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &std::path::Path, extra: &[&str]) -> Served {
    let mut child = Command::new(bin())
        .arg("serve")
        .arg(dir)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // The first line is read on a thread of its own, so that a server that never prints it
    // fails the test within PATIENCE (killed, its stdout ends and the thread with it).
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = BufReader::new(stdout).read_line(&mut line).map(|_| line);
        let _ = tx.send(read);
    });
    let Ok(line) = rx.recv_timeout(PATIENCE) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("serve printed no line within {PATIENCE:?}");
    };
    let line = line.expect("first line");
    let listening: Listening = serde_json::from_str(&line).expect("machine-readable line");
    Served { child, listening }
}

fn command(addr: std::net::SocketAddr, cmd: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    // A server that takes the command and never answers fails the test, not hangs it.
    s.set_read_timeout(Some(PATIENCE)).expect("read timeout");
    writeln!(s, "{cmd}").expect("write");
    let mut line = String::new();
    BufReader::new(s)
        .read_line(&mut line)
        .expect("an answer within PATIENCE");
    line
}

fn http_get(origin: &str, path: &str) -> String {
    let addr = origin.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).expect("connect");
    // A server that takes the request and never ends its answer fails the test, not hangs it.
    s.set_read_timeout(Some(PATIENCE)).expect("read timeout");
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: cli-test\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut out = String::new();
    std::io::Read::read_to_string(&mut s, &mut out).expect("the whole answer within PATIENCE");
    out
}

/// The JSON lines of a `serve --log` file.
fn read_log(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("log file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn gen_web(dir: &std::path::Path) {
    gen_sites(dir, 2, 5);
}

/// `gen-site --out DIR --sites W --pages P`, which must succeed; what it printed.
fn gen_sites(dir: &std::path::Path, sites: usize, pages: usize) -> Output {
    let (sites, pages) = (sites.to_string(), pages.to_string());
    let out = dir.to_str().expect("utf8");
    let o = crawltop(&[
        "gen-site", "--out", out, "--sites", &sites, "--pages", &pages,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

#[test]
fn serve_prints_ports_logs_requests_and_shuts_down_on_command() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let web = tmp.path().join("web");
    gen_web(&web);
    let log = tmp.path().join("requests.jsonl");
    let mut s = serve(&web, &["--log", log.to_str().expect("utf8")]);
    let on_disk = crawltop::testweb::read_listening(&web).expect("ports.json");
    assert_eq!(on_disk, s.listening, "ports.json says what was printed");
    assert_eq!(s.listening.sites.len(), 2);
    let origin = s.listening.sites["site01"].clone();
    let page = http_get(&origin, "/?from=cli");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains(&s.listening.sites["site00"]) || page.contains(&origin));
    let cmd = s.listening.command.expect("command port");
    let stats: serde_json::Value = serde_json::from_str(&command(cmd, "STATS")).expect("json");
    assert_eq!(stats["requests"], 1);
    assert_eq!(command(cmd, "SHUTDOWN").trim(), "OK shutting down");
    let status = wait_exit(&mut s.child);
    assert!(status.success());
    let recs = read_log(&log);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["path"], "/?from=cli");
    assert_eq!(recs[0]["site"], "site01");
    assert_eq!(recs[0]["user_agent"], "cli-test");
    assert_eq!(recs[0]["status"], 200);
}

#[test]
fn serve_stops_gracefully_on_sigterm() {
    stops_gracefully_on(nix::sys::signal::Signal::SIGTERM);
}

#[test]
fn serve_stops_gracefully_on_ctrl_c() {
    stops_gracefully_on(nix::sys::signal::Signal::SIGINT);
}

fn stops_gracefully_on(signal: nix::sys::signal::Signal) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let web = tmp.path().join("web");
    gen_web(&web);
    let log = tmp.path().join("requests.jsonl");
    let mut s = serve(&web, &["--log", log.to_str().expect("utf8")]);
    let page = http_get(&s.listening.sites["site00"], "/robots.txt");
    assert!(page.starts_with("HTTP/1.1 200"));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(s.child.id()).expect("pid"));
    nix::sys::signal::kill(pid, signal).expect("signal");
    let status = wait_exit(&mut s.child);
    assert!(status.success(), "{status:?}");
    let lines = std::fs::read_to_string(&log).expect("log");
    assert_eq!(lines.lines().count(), 1, "the log was flushed before exit");
}

#[test]
fn serve_bad_input_gives_a_clear_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let o = crawltop(&["serve", "/no/such/web"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/no/such/web"), "{}", stderr(&o));
    // The cause is said once, though the message holds it and anyhow's chain too.
    assert_eq!(
        stderr(&o).matches("No such file or directory").count(),
        1,
        "{}",
        stderr(&o)
    );
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let o = crawltop(&["serve", empty.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no site folders"), "{}", stderr(&o));
    let web = tmp.path().join("web");
    gen_web(&web);
    let o = crawltop(&["serve", web.to_str().expect("utf8"), "--bind", "0.0.0.0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("not a loopback address"),
        "{}",
        stderr(&o)
    );
    let o = crawltop(&["serve", web.to_str().expect("utf8"), "--port", "8080"]);
    assert_eq!(o.status.code(), Some(2));
    let o = crawltop(&["serve", web.to_str().expect("utf8"), "--base-port", "65535"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("leaves no room"), "{}", stderr(&o));
}

#[test]
fn serve_latency_delays_every_response() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let web = tmp.path().join("web");
    gen_web(&web);
    let log = tmp.path().join("requests.jsonl");
    let mut s = serve(
        &web,
        &["--latency-ms", "60", "--log", log.to_str().expect("utf8")],
    );
    let origin = s.listening.sites["site00"].clone();
    assert!(http_get(&origin, "/").starts_with("HTTP/1.1 200"));
    assert!(http_get(&origin, "/missing.html").starts_with("HTTP/1.1 404"));
    command(s.listening.command.expect("command port"), "SHUTDOWN");
    assert!(wait_exit(&mut s.child).success());
    let recs = read_log(&log);
    assert_eq!(recs.len(), 2);
    for r in &recs {
        let took_us = r["done_us"].as_u64().expect("n") - r["t_us"].as_u64().expect("n");
        assert!(took_us >= 60_000, "{r}");
    }
}

#[test]
fn serve_latency_bad_input_gives_a_clear_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let web = tmp.path().join("web");
    gen_web(&web);
    let web_s = web.to_str().expect("utf8");
    for (value, expected) in [
        ("abc", "invalid value 'abc' for '--latency-ms <MS>'"),
        ("-5", "--latency-ms"),
        ("1.5", "invalid value '1.5'"),
        ("60001", "60001 is not in 0..=60000"),
        ("99999999999999999999999", "--latency-ms"),
        ("", "--latency-ms"),
    ] {
        let o = crawltop(&["serve", web_s, &format!("--latency-ms={value}")]);
        assert_eq!(o.status.code(), Some(2), "{value:?}");
        assert!(stderr(&o).contains(expected), "{value:?}: {}", stderr(&o));
    }
}

#[test]
fn serve_refuses_a_link_farm_without_sane_parameters() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let web = tmp.path().join("web");
    gen_web(&web);
    let config = web.join("site01").join(crawltop::testweb::SITE_CONFIG_FILE);
    for (text, expected) in [
        (r#"{"kind": "link_farm"}"#, "needs its parameters"),
        (
            r#"{"kind": "link_farm", "farm": {"pages": 0, "links_per_page": 9}}"#,
            "pages must be",
        ),
        (
            r#"{"kind": "normal", "farm": {"pages": 1, "links_per_page": 9}}"#,
            "only a link farm",
        ),
        (
            r#"{"kind": "link_farm", "farm": {"pages": 1, "links": 9}}"#,
            "unknown field",
        ),
    ] {
        std::fs::write(&config, text).expect("write");
        let o = crawltop(&["serve", web.to_str().expect("utf8")]);
        assert_eq!(o.status.code(), Some(2), "{text}");
        assert!(stderr(&o).contains(expected), "{text}: {}", stderr(&o));
    }
}

#[test]
fn serve_with_a_base_port_uses_consecutive_ports() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let web = tmp.path().join("web");
    gen_web(&web);
    // Find a free pair of ports by asking the OS, then release them for the server.
    // Bounded: a machine where no such pair is found fails the test instead of spinning.
    let base = (0..10_000)
        .find_map(|_| {
            let a = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            let port = a.local_addr().expect("addr").port();
            (port < 65_000 && std::net::TcpListener::bind(("127.0.0.1", port + 1)).is_ok())
                .then_some(port)
        })
        .expect("a free pair of consecutive ports");
    let mut s = serve(&web, &["--base-port", &base.to_string()]);
    assert_eq!(
        s.listening.sites["site00"],
        format!("http://127.0.0.1:{base}")
    );
    assert_eq!(
        s.listening.sites["site01"],
        format!("http://127.0.0.1:{}", base + 1)
    );
    let cmd = s.listening.command.expect("command port");
    command(cmd, "SHUTDOWN");
    assert!(wait_exit(&mut s.child).success());
}

#[test]
fn serve_refuses_a_folder_that_is_not_a_generated_web() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("home");
    for sub in ["docs", "music"] {
        std::fs::create_dir_all(dir.join(sub)).expect("mkdir");
    }
    let o = crawltop(&["serve", dir.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("manifest.json"), "{}", stderr(&o));
    assert!(stderr(&o).contains("gen-site"), "{}", stderr(&o));
    assert!(
        !dir.join("ports.json").exists(),
        "nothing is written into it"
    );
}

#[test]
fn gen_site_names_sort_as_numbers_and_counts_read_as_english() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("web");
    gen_sites(&out, 101, 1);
    let names: Vec<String> = Manifest::load(&out)
        .expect("manifest")
        .sites
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names.first().map(String::as_str), Some("site000"));
    assert_eq!(names.last().map(String::as_str), Some("site100"));
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "name order is index order");
    // Up to 100 sites the names keep two digits.
    let small = tmp.path().join("small");
    let o = gen_sites(&small, 1, 1);
    assert!(small.join("site00").is_dir());
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.starts_with("wrote 1 site to "), "{said}");
    let book = tmp.path().join("book.txt");
    std::fs::write(&book, "word").expect("write");
    let o = crawltop(&[
        "gen-site",
        "--out",
        tmp.path().join("w").to_str().expect("utf8"),
        "--text",
        book.to_str().expect("utf8"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the text has 1 word;"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn gen_site_help_says_how_many_pages_a_site_gets() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("web");
    gen_sites(&out, 5, 10);
    let html = |site: &str| {
        let mut n = 0;
        let mut dirs = vec![out.join(site)];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(d).expect("dir") {
                let p = e.expect("entry").path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "html") {
                    n += 1;
                }
            }
        }
        n
    };
    let help = String::from_utf8_lossy(&crawltop(&["gen-site", "--help"]).stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    // site04 has robots.txt rules (and /private/ pages); site03 has no robots.txt.
    assert_eq!(html("site04"), 10 + 9);
    assert_eq!(html("site03"), 10 + 6);
    assert!(help.contains("6 more HTML pages"), "{help}");
    assert!(help.contains("3 under /private/"), "{help}");
}
