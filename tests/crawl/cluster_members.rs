//! Members of a shared crawl as others see them and as they come and go: a killed member shown
//! silent, a command given to a crawl with no member running, a member joining a paused crawl,
//! the Redis password kept off the command line and out of everything a member writes, a
//! member refused by its Redis leaving no folder behind, and a late member getting its share
//! of a few sites. Judged from outside: what `ctl` and a member print, what is on disk and in
//! Redis, and the test server's log.
//!
//! They need Debian's `redis-server`; see `cluster::redis_here`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crawltop::testweb::{GenOptions, TestWeb};
use tokio::process::{Child, Command};

use crate::cluster::redis_here;
use crate::cluster_crawl::{
    CRAWL_PATIENCE, covered, ends_well, member, plain_redis, polite, seeds_file, sites_fetched,
    stats,
};
use crate::util::{bin, log_messages, read_stderr_until, signal};

/// How long a change the fix makes visible may take to show; on the code before it, the
/// wait fails here rather than after [`CRAWL_PATIENCE`].
const SHOWS_WITHIN: Duration = Duration::from_secs(30);

/// `crawltop ctl --cluster NODES --crawl-id ID WORDS...` with `env`: its exit code, stdout as
/// JSON (null when it is not), and stderr.
fn ctl(
    nodes: &[String],
    id: &str,
    words: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, serde_json::Value, String) {
    let out = std::process::Command::new(bin())
        .arg("ctl")
        .args(words)
        .args(["--cluster", &nodes.join(","), "--crawl-id", id])
        .envs(env.iter().copied())
        .output()
        .expect("ctl runs");
    (
        out.status.code(),
        serde_json::from_slice(&out.stdout).unwrap_or_default(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// The row of `ctl stats`' members whose beat names `pid`.
fn row_of(shown: &serde_json::Value, pid: u32) -> Option<&serde_json::Value> {
    shown["members"]
        .as_array()?
        .iter()
        .find(|m| m["beat"]["pid"] == pid)
}

/// Asks `ctl stats` until `done` holds for what it shows, at most [`SHOWS_WITHIN`].
async fn ctl_stats_until(
    nodes: &[String],
    id: &str,
    env: &[(&str, &str)],
    what: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let shown = async {
        loop {
            let (code, shown, err) = ctl(nodes, id, &["stats"], env);
            // Members just started may not have made the crawl yet (a flake in CI).
            let not_yet = code == Some(2) && err.contains("there is no crawl");
            assert!(code == Some(0) || not_yet, "{err}");
            if code == Some(0) && done(&shown) {
                return shown;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(SHOWS_WITHIN, shown)
        .await
        .unwrap_or_else(|_| {
            let (_, last, _) = ctl(nodes, id, &["stats"], env);
            panic!("ctl stats never showed {what}: {last:#}")
        })
}

/// A member killed (SIGKILL) never says it left: `ctl stats` shows it `silent` once its own
/// lease has passed without a beat, `gone` staying false (`gone` is a member that left
/// properly). A pause given then says no member is running and that a member joining later
/// starts paused; one that joins says so on stderr and in its stats' log, naming who paused
/// and when, and a resume frees it. Before, the killed member read `gone: false` forever, the
/// pause said only ok, and the later member sat paused without a word (audit 30).
#[tokio::test]
async fn a_killed_member_shows_silent_and_a_pause_no_member_runs_holds_a_later_member_saying_so() {
    if !redis_here("a_killed_member_shows_silent...") {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let (server, _, _, nodes) = plain_redis(tmp.path(), &["--save", ""]).await;
    let web = TestWeb::start(GenOptions::new(2, 40).seed(21).crawl_delay_s(0.03))
        .await
        .expect("web");
    let seeds = seeds_file(&web, tmp.path());
    let id = "quiet";
    let lease = ["--lease-ms", "1000"];
    let mut a = member(
        &nodes,
        id,
        &tmp.path().join("a.json"),
        &[
            "--seeds-file",
            seeds.to_str().expect("utf8"),
            lease[0],
            lease[1],
        ],
    );
    let a_pid = a.id().expect("pid");
    tokio::time::timeout(CRAWL_PATIENCE, web.log().wait_until(|r| r.len() >= 6))
        .await
        .expect("member a crawls");
    ctl_stats_until(&nodes, id, &[], "member a beating", |s| {
        row_of(s, a_pid).is_some()
    })
    .await;
    signal(&a, nix::sys::signal::Signal::SIGKILL);
    let _ = a.wait().await;

    let shown = ctl_stats_until(&nodes, id, &[], "member a silent", |s| {
        row_of(s, a_pid).is_some_and(|m| m["silent"] == true)
    })
    .await;
    let row = row_of(&shown, a_pid).expect("a's row");
    assert_eq!(row["gone"], false, "killed, not left: {row}");
    assert_eq!(row["silent_after_s"], 1.0, "its own lease: {row}");
    assert!(row["last_beat_s"].as_f64() >= Some(1.0), "{row}");

    // A pause now reaches nobody: it is stored, and the answer says what it will do.
    let (code, answer, err) = ctl(&nodes, id, &["pause"], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(answer["live_members"], 0, "{answer}");
    let note = "no member is running; a member joining later starts paused";
    assert_eq!(answer["note"], note, "{answer}");
    assert!(err.contains(note), "{err}");

    let stats_b = tmp.path().join("b.json");
    let mut b = member(
        &nodes,
        id,
        &stats_b,
        &["--control", "127.0.0.1:0", lease[0], lease[1]],
    );
    let said = read_stderr_until(b.stderr.as_mut().expect("stderr"), |s| {
        s.split("control API on http://")
            .nth(1)
            .is_some_and(|rest| rest.contains('\n'))
    })
    .await;
    let line = said
        .lines()
        .find(|l| l.contains("is paused"))
        .unwrap_or_else(|| panic!("member b says it joined paused: {said}"));
    assert!(
        line.contains(&format!("the shared crawl {id} is paused (by ctl@")),
        "{line}"
    );
    assert!(line.contains(" GMT)"), "when: {line}");
    let addr = said
        .split("control API on http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("control address");
    let http = crate::util::client();
    let in_its_log = async {
        loop {
            let text = crate::util::get_text(&http, &format!("http://{addr}/stats")).await;
            let s: serde_json::Value = serde_json::from_str(&text).expect("stats JSON");
            if s["state"] == "paused"
                && log_messages(&s)
                    .iter()
                    .any(|l| l.contains("is paused (by ctl@") && l.contains("joined paused"))
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(SHOWS_WITHIN, in_its_log)
        .await
        .expect("member b is paused and its log says why");

    let (code, answer, err) = ctl(&nodes, id, &["resume"], &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(answer["live_members"], 1, "{answer}");
    assert!(answer.get("note").is_none(), "{answer}");
    ends_well(b, "member b").await;
    let sb = stats(&stats_b);
    let a_row = sb["cluster"]["members"]
        .as_array()
        .expect("members")
        .iter()
        .find(|m| m["pid"] == a_pid)
        .expect("a in b's view");
    assert_eq!(
        (&a_row["gone"], &a_row["silent"]),
        (&false.into(), &true.into())
    );
    let records = web.log().records();
    // What a had under way at the kill, at most its four workers' fetches and the ends
    // Redis did not have, is fetched again by b.
    assert!(covered(&web, &records) <= 8);
    drop(server);
}

/// Everything a member wrote that a password could land in: its files under `dir` (gzip
/// files read unpacked), but not `skip` (the config file that holds it).
fn written_text(dir: &Path, skip: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    use std::io::Read as _;
    crate::util::listing(dir)
        .into_keys()
        .filter(|p| p.is_file() && p != skip)
        .map(|p| {
            let raw = std::fs::read(&p).expect("readable");
            let text = if p.extension().is_some_and(|e| e == "gz") {
                let mut out = Vec::new();
                flate2::read::MultiGzDecoder::new(&raw[..])
                    .read_to_end(&mut out)
                    .expect("gzip");
                out
            } else {
                raw
            };
            (p, text)
        })
        .collect()
}

/// Every key of the Redis at `url` and every value it holds, as text.
async fn redis_text(url: &str) -> String {
    let client = redis::Client::open(url).expect("url");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("connects");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut conn)
        .await
        .expect("keys");
    assert!(!keys.is_empty(), "the crawl's keys");
    let mut all = String::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .expect("type");
        let mut read = match kind.as_str() {
            "string" => redis::cmd("GET"),
            "hash" => redis::cmd("HGETALL"),
            "list" | "zset" => redis::cmd(if kind == "list" { "LRANGE" } else { "ZRANGE" }),
            "set" => redis::cmd("SMEMBERS"),
            other => panic!("{key}: a {other}"),
        };
        read.arg(&key);
        if matches!(kind.as_str(), "list" | "zset") {
            read.arg(0).arg(-1);
        }
        let value: Vec<String> = if kind == "string" {
            vec![read.query_async(&mut conn).await.expect("value")]
        } else {
            read.query_async(&mut conn).await.expect("values")
        };
        all.push_str(&key);
        for v in value {
            all.push(' ');
            all.push_str(&v);
        }
        all.push('\n');
    }
    all
}

/// The password the test's Redis asks for, and a wrong one: each unlike anything else a
/// member writes, so that a search for it finds only it.
const PASSWORD: &str = "Pw-7f3a9c-secret";
const WRONG: &str = "Wrong-5e1d0b-guess";

/// A crawl member on `nodes` with `env` and `args`, headless.
fn crawltop(args: &[&str], env: &[(&str, &str)]) -> Child {
    Command::new(bin())
        .arg("crawl")
        .args(["--headless", "--workers", "4", "--per-site", "1"])
        .args(["--delay-ms", "20", "--timeout-ms", "5000"])
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("crawltop starts")
}

/// The Redis password of a shared crawl, given in `--config` (`redis_password`) or in
/// `CRAWLTOP_REDIS_PASSWORD`, not on the command line (which ps shows every user): both
/// members crawl, `ctl` reads the crawl with it, and the password is in nothing a member
/// wrote (folder, stats, log, URL list, stderr) nor in Redis. A member refused for its Redis
/// (no password, a wrong one) or by the crawl (other settings) leaves no folder it created,
/// and an existing folder as it was; a wrong password is not echoed. Before, the password
/// could be given only in the URL, and a refused member left a folder with a lock file
/// (audit 30).
#[tokio::test]
async fn the_redis_password_comes_from_the_config_or_environment_and_is_never_written() {
    if !redis_here("the_redis_password_comes_from...") {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let (server, _, port, nodes) = plain_redis(tmp.path(), &["--requirepass", PASSWORD]).await;
    let web = TestWeb::start(GenOptions::new(2, 40).seed(22).crawl_delay_s(0.02))
        .await
        .expect("web");
    let seeds = seeds_file(&web, tmp.path());
    let seeds = seeds.to_str().expect("utf8");
    let work = tmp.path().join("members");
    std::fs::create_dir(&work).expect("members folder");
    let at = |name: &str| work.join(name).to_str().expect("utf8").to_string();
    let id = "pw";
    let cluster = ["--cluster", &nodes[0], "--crawl-id", id];
    let kept = work.join("kept");
    std::fs::create_dir(&kept).expect("an existing folder");
    let refused = |args: &[&str], env: &[(&str, &str)]| {
        let out = std::process::Command::new(bin())
            .arg("crawl")
            .args(["--headless", "--workers", "4", "--per-site", "1"])
            .args(["--delay-ms", "20", "--timeout-ms", "5000"])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .expect("runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let wrong = [("CRAWLTOP_REDIS_PASSWORD", WRONG)];
    for (env, folder, needle) in [
        (&[][..], at("none"), "Authentication required"),
        (&wrong[..], at("wrong"), "cannot be reached"),
        (&wrong[..], at("kept"), "cannot be reached"),
        (&wrong[..], at("deep/er"), "cannot be reached"),
    ] {
        let mut args = cluster.to_vec();
        args.extend(["--out", &folder, "--seeds-file", seeds]);
        let (code, err) = refused(&args, env);
        assert_eq!(code, Some(2), "{folder}: {err}");
        assert!(err.contains(needle), "{folder}: {err}");
        assert!(
            !err.contains(WRONG),
            "the wrong password is not echoed: {err}"
        );
    }
    assert!(!work.join("none").exists() && !work.join("wrong").exists());
    assert!(!work.join("deep").exists(), "no parent folder left either");
    assert!(crate::util::listing(&kept).is_empty(), "left as it was");

    // Member a: the password in its config file; member b: in the environment.
    let config = work.join("a.toml");
    std::fs::write(
        &config,
        format!(
            "cluster = [\"redis://127.0.0.1:{port}\"]\ncrawl_id = \"{id}\"\nredis_password = \"{PASSWORD}\"\n"
        ),
    )
    .expect("config");
    let files = |m: &str| {
        [
            "--out".to_string(),
            at(m),
            "--stats-out".into(),
            at(&format!("{m}.json")),
            "--log".into(),
            at(&format!("{m}.log")),
            "--urls-out".into(),
            at(&format!("{m}.urls.jsonl")),
        ]
    };
    let (fa, fb) = (files("a"), files("b"));
    let mut args_a: Vec<&str> = vec!["--config", config.to_str().expect("utf8")];
    args_a.extend(fa.iter().map(String::as_str));
    args_a.extend(["--seeds-file", seeds]);
    let a = crawltop(&args_a, &[]);
    let good = [("CRAWLTOP_REDIS_PASSWORD", PASSWORD)];
    let mut args_b = cluster.to_vec();
    args_b.extend(fb.iter().map(String::as_str));
    let b = crawltop(&args_b, &good);
    tokio::time::timeout(CRAWL_PATIENCE, web.log().wait_until(|r| r.len() >= 4))
        .await
        .expect("the members crawl");
    // Refused by the crawl (other settings) after its folder was checked: no folder left.
    for folder in [at("other"), at("kept")] {
        let mut args = cluster.to_vec();
        args.extend(["--out", &folder, "--max-pages", "7"]);
        let (code, err) = refused(&args, &good);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("runs with other settings"), "{err}");
    }
    assert!(!work.join("other").exists());
    assert!(crate::util::listing(&kept).is_empty(), "left as it was");
    let err_a = ends_well(a, "member a").await;
    let err_b = ends_well(b, "member b").await;
    assert_eq!(covered(&web, &web.log().records()), 0);

    let (code, shown, err) = ctl(&nodes, id, &["stats"], &good);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        shown["members"].as_array().map(Vec::len),
        Some(2),
        "{shown}"
    );
    let (code, _, err) = ctl(&nodes, id, &["stats"], &[]);
    assert_eq!(code, Some(2), "no password, no answer: {err}");

    for (what, text) in [("member a's stderr", &err_a), ("member b's stderr", &err_b)] {
        assert!(!text.contains(PASSWORD), "{what}: {text}");
    }
    let written = written_text(&work, &config);
    assert!(written.len() > 10, "{} files", written.len());
    let needle = PASSWORD.as_bytes();
    for (path, bytes) in &written {
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle),
            "{} holds the password",
            path.display()
        );
    }
    let url = format!("redis://:{PASSWORD}@127.0.0.1:{port}");
    let stored = redis_text(&url).await;
    assert!(stored.contains(&format!("ct:{{{id}}}:members")), "{stored}");
    assert!(!stored.contains(PASSWORD), "Redis holds the password");
    drop(server);
}

/// Six sites and four members, the fourth joining once the three hold two each: rounded up,
/// the fair share is two, so before nobody gave the fourth a site (audit 30: it fetched
/// nothing for a whole crawl). Judged while the crawl is paused, so no site runs dry meanwhile
/// (which would free one anyway): the fourth gets a site from one of the three, each member
/// then holds one or two, and after a resume the crawl ends with every page once, politely.
#[tokio::test]
async fn a_fourth_member_joining_six_sites_held_two_by_two_gets_a_site() {
    if !redis_here("a_fourth_member_joining_six_sites...") {
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let (server, _, _, nodes) = plain_redis(tmp.path(), &["--save", ""]).await;
    let web = TestWeb::start(GenOptions::new(6, 300).seed(23).crawl_delay_s(0.05))
        .await
        .expect("web");
    let sites = web.manifest().normal_sites().count();
    assert_eq!(sites, 6);
    let seeds = seeds_file(&web, tmp.path());
    let id = "six";
    let stats_of = |m: &str| tmp.path().join(format!("{m}.json"));
    let mut three: Vec<Child> = ["b", "c"]
        .iter()
        .map(|m| member(&nodes, id, &stats_of(m), &[]))
        .collect();
    three.push(member(
        &nodes,
        id,
        &stats_of("a"),
        &["--seeds-file", seeds.to_str().expect("utf8")],
    ));
    let pids: Vec<u32> = three.iter().map(|c| c.id().expect("pid")).collect();
    let held = |s: &serde_json::Value, pid: u32| {
        row_of(s, pid).and_then(|m| m["beat"]["sites_leased"].as_u64())
    };
    ctl_stats_until(
        &nodes,
        id,
        &[],
        "three members holding two sites each",
        |s| pids.iter().all(|p| held(s, *p) == Some(2)),
    )
    .await;
    let (code, _, err) = ctl(&nodes, id, &["pause"], &[]);
    assert_eq!(code, Some(0), "{err}");
    let d = member(&nodes, id, &stats_of("d"), &[]);
    let d_pid = d.id().expect("pid");
    let shown = ctl_stats_until(&nodes, id, &[], "the fourth member holding a site", |s| {
        held(s, d_pid).is_some_and(|n| n >= 1)
    })
    .await;
    let (code, _, err) = ctl(&nodes, id, &["resume"], &[]);
    assert_eq!(code, Some(0), "{err}");
    let all: Vec<u64> = pids
        .iter()
        .chain([&d_pid])
        .map(|p| held(&shown, *p).unwrap_or(0))
        .collect();
    assert!(all.iter().all(|n| (1..=2).contains(n)), "{all:?}");
    for (child, who) in three.into_iter().zip(["member b", "member c", "member a"]) {
        ends_well(child, who).await;
    }
    ends_well(d, "member d").await;
    let records = web.log().records();
    assert_eq!(
        covered(&web, &records),
        0,
        "a site given back repeats nothing"
    );
    polite(&web, &records, Duration::from_millis(20));
    let of_d = sites_fetched(&stats(&stats_of("d")));
    assert!(!of_d.is_empty(), "member d fetched pages");
    drop(server);
}
