//! End-to-end benchmark of `crawltop crawl` (not a test: it measures and prints, and asserts
//! nothing about speed). Three parts, each against a web generated here and served by a
//! `crawltop serve` child process on loopback:
//!
//! 1. fast: a 20 x 500 web, delay 0, 4 connections per site, 64 workers (and a second point,
//!    16 workers, 1 per site), beside `wget -r` on the same web in the same run;
//! 2. polite: a 10 x 60 web, delay 100 ms, one connection per site: wall time against the ideal
//!    schedule, the busiest site's requests (robots.txt included) minus one, times the delay;
//! 3. hostile bodies: a 50 MB page and a 1 GiB gzip bomb under a 1 MiB body cap: peak memory;
//! 4. index: the fast crawl (64 workers, 4 per site) without a crawl folder, with `--out DIR
//!    --store none` (the full-text index only) and with `--out DIR --store warc` (WARC files and
//!    the index), and with `--out DIR --store warc --no-index` (WARC files only), in rotated
//!    order over several rounds; each run's figures and the medians.
//!
//! `CRAWL_E2E_PARTS=index` (a comma list of fast, polite, hostile, index) runs only those parts;
//! `CRAWL_E2E_ROUNDS` sets the index part's rounds (default 3). `CRAWL_E2E_BEFORE=PATH` (a
//! crawltop binary built from an earlier commit) makes the index part run every configuration
//! with that binary too, in the same rotation, so before and after are measured in one sitting
//! against the same server binary (but for `--no-index`, which a before build runs only with
//! `CRAWL_E2E_BEFORE_NO_INDEX` set).
//!
//! How the figures are taken. Each client (crawltop or wget) runs under GNU time
//! (`/usr/bin/time -f '%e %U %S %M'`), which waits for exactly that process with `wait4` and
//! writes the kernel's account of it: wall seconds, user and system CPU seconds, maximum
//! resident set size in KiB. It is read at exit, so nothing is sampled and nothing races with
//! the exit; `/proc` cannot do that for a child that must also be reaped. The server is a fresh
//! process for every run (its own log; the same files on disk, which the generator has just
//! written, so the page cache is equally warm for all). Its CPU comes from `/proc/PID/stat`
//! before and after the run, to show whether it was the bottleneck, and the request counts from
//! its `--log` JSON lines. Run: `cargo bench --bench crawl_e2e`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::BufRead as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crawltop::testweb::{GenOptions, Listening, RequestRecord, generate};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use serde_json::Value;

const CRAWLTOP: &str = env!("CARGO_BIN_EXE_crawltop");
const GNU_TIME: &str = "/usr/bin/time";
const WGET: &str = "/usr/bin/wget";
/// No client runs longer than this: past it, its process group is killed and its row says so.
const CHILD_LIMIT: Duration = Duration::from_secs(300);
/// How long a server may take to finish in-flight responses after SIGTERM.
const SERVER_STOP_LIMIT: Duration = Duration::from_secs(40);
const POLITE_DELAY_MS: u64 = 100;
const BODY_CAP: u64 = 1 << 20;

/// utime + stime of a live process, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("proc stat");
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 =
        fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    ticks / 100.0 // USER_HZ is 100 on Linux
}

fn pid_of(id: u32) -> Pid {
    Pid::from_raw(i32::try_from(id).expect("a pid fits in i32"))
}

/// A `crawltop serve` child and the file it logs every request to.
struct Served {
    child: Child,
    sites: BTreeMap<String, String>,
    log: PathBuf,
}

impl Served {
    fn start(web: &Path, log: PathBuf) -> Served {
        let mut child = Command::new(CRAWLTOP)
            .arg("serve")
            .arg(web)
            .arg("--log")
            .arg(&log)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("serve starts");
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("the listening line");
        let listening: Listening = serde_json::from_str(&first).expect("listening JSON");
        Served {
            child,
            sites: listening.sites,
            log,
        }
    }

    /// The index URL of every site whose name starts with `prefix`, in name order.
    fn index_urls(&self, prefix: &str) -> Vec<String> {
        self.sites
            .iter()
            .filter(|(name, _)| name.starts_with(prefix))
            .map(|(_, origin)| format!("{origin}/"))
            .collect()
    }

    fn cpu(&self) -> f64 {
        cpu_seconds(self.child.id())
    }

    /// Stops the server the way an operator would (SIGTERM: in-flight responses finish and the
    /// log is closed), then reads back every request it served.
    fn stop(mut self) -> Vec<RequestRecord> {
        let _ = kill(pid_of(self.child.id()), Signal::SIGTERM);
        let started = Instant::now();
        while self.child.try_wait().expect("try_wait").is_none() {
            if started.elapsed() > SERVER_STOP_LIMIT {
                eprintln!("crawl_e2e: the server did not stop in time; killed");
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let text = std::fs::read_to_string(&self.log).expect("the request log");
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).expect("a request record"))
            .collect()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // After `stop` the child is reaped and std makes this a no-op; on a panic it ends it.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What GNU time wrote about one client process.
#[derive(Debug, Clone, Default)]
struct Usage {
    wall_s: f64,
    user_s: f64,
    sys_s: f64,
    max_rss_kib: u64,
    /// Empty when the client exited 0; else how it ended.
    ended: String,
}

impl Usage {
    fn cpu_s(&self) -> f64 {
        self.user_s + self.sys_s
    }

    fn rss_mb(&self) -> f64 {
        self.max_rss_kib as f64 * 1024.0 / 1e6
    }
}

/// Runs `program args` under GNU time in its own process group, stdout discarded, stderr to
/// `stderr_to`; waits at most [`CHILD_LIMIT`].
fn timed(program: &str, args: &[String], stderr_to: &Path, time_to: &Path) -> Usage {
    let mut child = Command::new(GNU_TIME)
        .args(["-f", "%e %U %S %M", "-o"])
        .arg(time_to)
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(stderr_to).expect("stderr file"))
        .process_group(0)
        .spawn()
        .expect("GNU time starts");
    let started = Instant::now();
    let ended = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break if status.success() {
                String::new()
            } else {
                status.to_string()
            };
        }
        if started.elapsed() > CHILD_LIMIT {
            // The group is the one this call created: GNU time and the client under it.
            let _ = killpg(pid_of(child.id()), Signal::SIGKILL);
            let _ = child.wait();
            break format!("killed after {} s", CHILD_LIMIT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let text = std::fs::read_to_string(time_to).unwrap_or_default();
    // With a non-zero exit GNU time first writes "Command exited with ..."; the figures are last.
    let fields: Vec<f64> = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    if fields.len() != 4 {
        return Usage {
            ended: format!("{ended} (no figures from GNU time: {text:?})"),
            ..Usage::default()
        };
    }
    Usage {
        wall_s: fields[0],
        user_s: fields[1],
        sys_s: fields[2],
        max_rss_kib: fields[3] as u64,
        ended,
    }
}

/// Runs `crawltop crawl` with these seeds and flags; returns its usage and its stats file.
fn crawl(seeds: &[String], flags: &[&str], work: &Path, label: &str) -> (Usage, Value) {
    crawl_with(CRAWLTOP, seeds, flags, work, label)
}

/// [`crawl`] with another crawltop binary as the client.
fn crawl_with(
    program: &str,
    seeds: &[String],
    flags: &[&str],
    work: &Path,
    label: &str,
) -> (Usage, Value) {
    let stats = work.join(format!("{label}.stats.json"));
    let mut args = vec!["crawl".to_string()];
    args.extend(seeds.iter().cloned());
    args.extend(flags.iter().map(|f| (*f).to_string()));
    args.extend(["--headless".into(), "--stats-out".into()]);
    args.push(stats.display().to_string());
    let usage = timed(
        program,
        &args,
        &work.join(format!("{label}.stderr")),
        &work.join(format!("{label}.time")),
    );
    let value = std::fs::read_to_string(&stats)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (usage, value)
}

fn count(v: &Value, path: &[&str]) -> u64 {
    path.iter().fold(v, |v, k| &v[*k]).as_u64().unwrap_or(0)
}

/// What the server saw of one run.
#[derive(Debug, Default)]
struct Seen {
    requests: usize,
    /// 200 answers for anything but robots.txt.
    ok: usize,
    /// Distinct (site, path and query) among those.
    distinct_ok: usize,
    sites: usize,
}

fn seen(records: &[RequestRecord]) -> Seen {
    let ok: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.status == 200 && r.path != "/robots.txt")
        .collect();
    let distinct: BTreeSet<(&str, &str)> = ok
        .iter()
        .map(|r| (r.site.as_str(), r.path.as_str()))
        .collect();
    let sites: BTreeSet<&str> = records.iter().map(|r| r.site.as_str()).collect();
    Seen {
        requests: records.len(),
        ok: ok.len(),
        distinct_ok: distinct.len(),
        sites: sites.len(),
    }
}

/// One client's run over the fast web.
struct FastRow {
    label: String,
    /// crawltop: `resources.fetched` of its stats file; wget: the server's 200 answers.
    pages: u64,
    usage: Usage,
    server_cpu_s: f64,
    seen: Seen,
    /// Anything the reader should know: wget's own count, crawltop's errors.
    note: String,
}

impl FastRow {
    fn pages_per_s(&self) -> f64 {
        self.pages as f64 / self.usage.wall_s
    }

    fn cpu_per_1000(&self) -> f64 {
        self.usage.cpu_s() / self.pages as f64 * 1000.0
    }
}

enum Client {
    Crawltop {
        /// The binary: this build's, or `CRAWL_E2E_BEFORE`'s.
        program: String,
        workers: usize,
        per_site: usize,
        /// More flags, after the others.
        extra: Vec<String>,
    },
    /// wget's recursion compares hosts, not ports, so from any index it follows the cross-site
    /// links into every site here; with all 20 indexes as seeds it walks the web 20 times over.
    /// `all_sites: false` gives it site00's index alone, from which every page is reachable.
    Wget { all_sites: bool },
}

/// Serves `web` with a fresh server and runs one client over all of its sites.
fn fast_run(web: &Path, work: &Path, label: &str, client: &Client) -> FastRow {
    let server = Served::start(web, work.join(format!("{label}.requests.jsonl")));
    let all_seeds = server.index_urls("site");
    let cpu_before = server.cpu();
    let (usage, pages, note) = match client {
        Client::Crawltop {
            program,
            workers,
            per_site,
            extra,
        } => {
            let (workers, per_site) = (workers.to_string(), per_site.to_string());
            let mut flags = vec![
                "--delay-ms",
                "0",
                "--per-site",
                &per_site,
                "--workers",
                &workers,
            ];
            flags.extend(extra.iter().map(String::as_str));
            let (usage, stats) = crawl_with(program, &all_seeds, &flags, work, label);
            let note = format!(
                "discovered {}, fetch errors {}, requests {}, completed {}",
                count(&stats, &["resources", "discovered"]),
                count(&stats, &["resources", "fetch_error"]),
                count(&stats, &["totals", "requests"]),
                stats["totals"]["completed"],
            );
            (usage, Some(count(&stats, &["resources", "fetched"])), note)
        }
        Client::Wget { all_sites } => {
            let out = work.join(format!("{label}.files"));
            let mut args: Vec<String> = [
                "-r",
                "-l",
                "inf",
                "-np",
                "-nv",
                "--delete-after",
                "-P",
                &out.display().to_string(),
                "-e",
                "robots=on",
            ]
            .iter()
            .map(|s| (*s).to_string())
            .collect();
            let seeds = if *all_sites {
                &all_seeds[..]
            } else {
                &all_seeds[..1]
            };
            args.extend(seeds.iter().cloned());
            let stderr = work.join(format!("{label}.stderr"));
            let usage = timed(WGET, &args, &stderr, &work.join(format!("{label}.time")));
            let log = std::fs::read_to_string(&stderr).unwrap_or_default();
            let summary = log
                .lines()
                .rev()
                .find(|l| l.starts_with("Downloaded:"))
                .unwrap_or("no summary line")
                .trim()
                .to_string();
            let note = format!("{} seed(s); wget says \"{summary}\"", seeds.len());
            (usage, None, note)
        }
    };
    let server_cpu_s = server.cpu() - cpu_before;
    let records = server.stop();
    let seen = seen(&records);
    FastRow {
        label: label.to_string(),
        pages: pages.unwrap_or(seen.ok as u64),
        usage,
        server_cpu_s,
        seen,
        note,
    }
}

/// The 20 x 500 web of parts 1 and 4, generated once; its path and its reachable URLs.
fn fast_web(tmp: &Path) -> (PathBuf, usize) {
    let web = tmp.join("web-fast");
    let manifest = if web.join("manifest.json").is_file() {
        serde_json::from_str::<crawltop::testweb::manifest::Manifest>(
            &std::fs::read_to_string(web.join("manifest.json")).expect("manifest"),
        )
        .expect("manifest JSON")
    } else {
        generate(&web, &GenOptions::new(20, 500).crawl_delay_s(0.0), false)
            .expect("generate the fast web")
    };
    let reachable = manifest.normal_sites().map(|s| s.pages.len()).sum();
    (web, reachable)
}

fn part_fast(tmp: &Path) -> (Vec<FastRow>, usize) {
    let (web, reachable) = fast_web(tmp);
    let work = tmp.join("fast");
    std::fs::create_dir_all(&work).expect("work dir");
    let mut rows = vec![fast_run(
        &web,
        &work,
        "crawltop w64 ps4",
        &Client::Crawltop {
            program: CRAWLTOP.into(),
            workers: 64,
            per_site: 4,
            extra: Vec::new(),
        },
    )];
    if Path::new(WGET).exists() {
        let one = Client::Wget { all_sites: false };
        rows.push(fast_run(&web, &work, "wget -r 1 seed", &one));
        let all = Client::Wget { all_sites: true };
        rows.push(fast_run(&web, &work, "wget -r 20 seeds", &all));
    } else {
        println!("crawl_e2e: no {WGET}; the wget comparison is skipped");
    }
    rows.push(fast_run(
        &web,
        &work,
        "crawltop w16 ps1",
        &Client::Crawltop {
            program: CRAWLTOP.into(),
            workers: 16,
            per_site: 1,
            extra: Vec::new(),
        },
    ));
    (rows, reachable)
}

/// The fast crawl's ways of keeping pages, by label: the flags after the crawl's own.
const INDEX_CONFIGS: [(&str, &[&str]); 4] = [
    ("no --out", &[]),
    ("--store none", &["--store", "none"]),
    ("--store warc", &["--store", "warc"]),
    ("warc no index", &["--store", "warc", "--no-index"]),
];

/// Whether a build given as `CRAWL_E2E_BEFORE` can run a configuration: `--no-index` is newer
/// than most of them (it exits 2 on an unknown flag).
fn before_knows(flags: &[&str]) -> bool {
    !flags.contains(&"--no-index") || std::env::var_os("CRAWL_E2E_BEFORE_NO_INDEX").is_some()
}

/// One run of the index part: its row and the size of its crawl folder.
struct IndexRun {
    /// "after" (this build) or "before" (`CRAWL_E2E_BEFORE`).
    build: &'static str,
    config: usize,
    row: FastRow,
    out_bytes: u64,
}

fn folder_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => folder_bytes(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

fn part_index(tmp: &Path, rounds: usize) -> (Vec<IndexRun>, usize) {
    let (web, reachable) = fast_web(tmp);
    let work = tmp.join("index");
    std::fs::create_dir_all(&work).expect("work dir");
    let mut builds = vec![("after", CRAWLTOP.to_string())];
    if let Ok(before) = std::env::var("CRAWL_E2E_BEFORE") {
        builds.insert(0, ("before", before));
    }
    let mut runs = Vec::new();
    for round in 0..rounds {
        // Rotated, so that no configuration (or build) always runs first (cold) or last.
        let slots = INDEX_CONFIGS.len() * builds.len();
        for k in 0..slots {
            let slot = (round + k) % slots;
            let (config, (build, program)) = (
                slot % INDEX_CONFIGS.len(),
                &builds[slot / INDEX_CONFIGS.len()],
            );
            let (name, flags) = INDEX_CONFIGS[config];
            if *build == "before" && !before_knows(flags) {
                continue;
            }
            let label = format!("{build} {name} #{}", round + 1);
            let file_label = format!("index-{build}-{config}-{round}");
            let out = work.join(format!("{file_label}.out"));
            let mut extra: Vec<String> = Vec::new();
            if !flags.is_empty() {
                extra.extend(["--out".to_string(), out.display().to_string()]);
                extra.extend(flags.iter().map(|f| (*f).to_string()));
            }
            let mut row = fast_run(
                &web,
                &work,
                &file_label,
                &Client::Crawltop {
                    program: program.clone(),
                    workers: 64,
                    per_site: 4,
                    extra,
                },
            );
            row.label = label;
            let out_bytes = folder_bytes(&out);
            // The next run must not read this one's pages back from the page cache's memory.
            let _ = std::fs::remove_dir_all(&out);
            runs.push(IndexRun {
                build,
                config,
                row,
                out_bytes,
            });
        }
    }
    (runs, reachable)
}

/// The polite crawl: wall time against the ideal schedule.
struct Polite {
    usage: Usage,
    elapsed_s: f64,
    pages: u64,
    busiest: String,
    busiest_requests: usize,
    ideal_s: f64,
    /// First to last arrival at the busiest site.
    busiest_span_s: f64,
    /// The shortest gap between two arrivals at one site, over all sites.
    min_gap_ms: f64,
    /// The busiest site's mean gap between arrivals.
    busiest_mean_gap_ms: f64,
    /// The most requests in flight at one site.
    max_in_flight: u32,
    /// When the first request arrived, in seconds after the server started (which was before
    /// the crawl started): an upper bound on the crawl's start-up.
    first_arrival_s: f64,
}

fn part_polite(tmp: &Path) -> Polite {
    let web = tmp.join("web-polite");
    let delay_s = POLITE_DELAY_MS as f64 / 1000.0;
    generate(&web, &GenOptions::new(10, 60).crawl_delay_s(delay_s), false)
        .expect("generate the polite web");
    let work = tmp.join("polite");
    std::fs::create_dir_all(&work).expect("work dir");
    let server = Served::start(&web, work.join("requests.jsonl"));
    let seeds = server.index_urls("site");
    let delay = POLITE_DELAY_MS.to_string();
    let flags = ["--delay-ms", &delay, "--per-site", "1", "--workers", "16"];
    let (usage, stats) = crawl(&seeds, &flags, &work, "polite");
    let records = server.stop();

    let mut by_site: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for r in &records {
        by_site.entry(&r.site).or_default().push(r.t_us);
    }
    let mut min_gap_us = u64::MAX;
    for times in by_site.values_mut() {
        times.sort_unstable();
        for w in times.windows(2) {
            min_gap_us = min_gap_us.min(w[1] - w[0]);
        }
    }
    let (busiest, times) = by_site
        .iter()
        .max_by_key(|(_, t)| t.len())
        .map(|(s, t)| ((*s).to_string(), t.clone()))
        .unwrap_or_default();
    let span_us = match (times.first(), times.last()) {
        (Some(a), Some(b)) => b - a,
        _ => 0,
    };
    let gaps = times.len().saturating_sub(1);
    Polite {
        elapsed_s: stats["elapsed_s"].as_f64().unwrap_or(f64::NAN),
        pages: count(&stats, &["resources", "fetched"]),
        busiest_requests: times.len(),
        ideal_s: gaps as f64 * delay_s,
        busiest_span_s: span_us as f64 / 1e6,
        min_gap_ms: min_gap_us as f64 / 1000.0,
        busiest_mean_gap_ms: if gaps == 0 {
            f64::NAN
        } else {
            span_us as f64 / gaps as f64 / 1000.0
        },
        max_in_flight: records.iter().map(|r| r.in_flight).max().unwrap_or(0),
        first_arrival_s: records.iter().map(|r| r.t_us).min().unwrap_or(0) as f64 / 1e6,
        busiest,
        usage,
    }
}

/// The hostile-body crawl: peak memory under a body cap.
struct Hostile {
    usage: Usage,
    stats: Value,
    /// Per seed path: status, bytes the server wrote, whether the body was complete.
    served: Vec<(String, u16, u64, bool)>,
}

fn part_hostile(tmp: &Path) -> Hostile {
    let web = tmp.join("web-hostile");
    generate(&web, &GenOptions::new(1, 3).hostile(true), false).expect("generate hostile web");
    let work = tmp.join("hostile");
    std::fs::create_dir_all(&work).expect("work dir");
    let server = Served::start(&web, work.join("requests.jsonl"));
    let origin = server.sites["hostile"].clone();
    let seeds = [format!("{origin}/big.html"), format!("{origin}/bomb.html")];
    let cap = BODY_CAP.to_string();
    let flags = ["--depth", "0", "--max-body-bytes", &cap, "--delay-ms", "0"];
    let (usage, stats) = crawl(&seeds, &flags, &work, "hostile");
    let served = server
        .stop()
        .into_iter()
        .map(|r| (r.path, r.status, r.bytes, r.complete))
        .collect();
    Hostile {
        usage,
        stats,
        served,
    }
}

fn print_fast(rows: &[FastRow], reachable: usize) {
    println!(
        "\n1. fast: 20 x 500 web ({reachable} reachable URLs in the manifest), delay 0, one fresh server a run"
    );
    println!(
        "{:<18} {:>7} {:>7} {:>8} {:>7} {:>7} {:>9} {:>8} {:>8} {:>14}",
        "client",
        "pages",
        "wall s",
        "pages/s",
        "CPU s",
        "CPU/1k",
        "peak RSS",
        "srv CPU",
        "srv reqs",
        "200s (distinct)"
    );
    for r in rows {
        println!(
            "{:<18} {:>7} {:>7.2} {:>8.0} {:>7.2} {:>7.3} {:>6.1} MB {:>8.2} {:>8} {:>7} ({:>5})",
            r.label,
            r.pages,
            r.usage.wall_s,
            r.pages_per_s(),
            r.usage.cpu_s(),
            r.cpu_per_1000(),
            r.usage.rss_mb(),
            r.server_cpu_s,
            r.seen.requests,
            r.seen.ok,
            r.seen.distinct_ok,
        );
    }
    for r in rows {
        println!(
            "  {}: user {:.2} s, sys {:.2} s; {} sites contacted; {}{}",
            r.label,
            r.usage.user_s,
            r.usage.sys_s,
            r.seen.sites,
            r.note,
            if r.usage.ended.is_empty() {
                String::new()
            } else {
                format!("; ENDED: {}", r.usage.ended)
            }
        );
    }
    let Some(c) = rows.iter().find(|r| r.label.starts_with("crawltop w64")) else {
        return;
    };
    for w in rows.iter().filter(|r| r.label.starts_with("wget")) {
        println!(
            "  crawltop w64 ps4 / {} pages/s: {:.2} (aim >= 2)",
            w.label,
            c.pages_per_s() / w.pages_per_s(),
        );
    }
    println!(
        "  crawltop w64 ps4: CPU/1k pages {:.3} s (aim <= 0.4); peak RSS {:.1} MB (aim < 100)",
        c.cpu_per_1000(),
        c.usage.rss_mb(),
    );
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => f64::midpoint(values[n / 2 - 1], values[n / 2]),
    }
}

fn print_index(runs: &[IndexRun], reachable: usize) {
    println!(
        "\n4. index: the 20 x 500 web ({reachable} reachable URLs), --delay-ms 0 --per-site 4 --workers 64; runs in rotated order"
    );
    println!(
        "{:<24} {:>7} {:>7} {:>8} {:>7} {:>7} {:>9} {:>10}",
        "run", "pages", "wall s", "pages/s", "CPU s", "CPU/1k", "peak RSS", "folder"
    );
    for r in runs {
        println!(
            "{:<24} {:>7} {:>7.2} {:>8.0} {:>7.2} {:>7.3} {:>6.1} MB {:>7.1} MB{}",
            r.row.label,
            r.row.pages,
            r.row.usage.wall_s,
            r.row.pages_per_s(),
            r.row.usage.cpu_s(),
            r.row.cpu_per_1000(),
            r.row.usage.rss_mb(),
            r.out_bytes as f64 / 1e6,
            if r.row.usage.ended.is_empty() {
                String::new()
            } else {
                format!("  ENDED: {}", r.row.usage.ended)
            }
        );
    }
    println!("  medians:");
    for build in ["before", "after"] {
        let mut no_out = None;
        for (config, (name, _)) in INDEX_CONFIGS.iter().enumerate() {
            let mine: Vec<&IndexRun> = runs
                .iter()
                .filter(|r| r.config == config && r.build == build)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let of = |f: &dyn Fn(&IndexRun) -> f64| median(mine.iter().map(|r| f(r)).collect());
            let pages_per_s = of(&|r| r.row.pages_per_s());
            let base = *no_out.get_or_insert(pages_per_s);
            println!(
                "  {build:<6} {:<14} {:>8.0} pages/s ({:.2}x)  {:.3} CPU-s/1k pages  {:.1} MB peak RSS  {:.1} MB folder  ({} runs)",
                name,
                pages_per_s,
                pages_per_s / base,
                of(&|r| r.row.cpu_per_1000()),
                of(&|r| r.row.usage.rss_mb()),
                of(&|r| r.out_bytes as f64 / 1e6),
                mine.len(),
            );
        }
    }
}

fn print_polite(p: &Polite) {
    let ratio = |x: f64| x / p.ideal_s;
    println!(
        "\n2. polite: 10 x 60 web, --delay-ms {POLITE_DELAY_MS} --per-site 1 --workers 16 (site01 Crawl-delay {POLITE_DELAY_MS} ms)"
    );
    println!(
        "  pages {}; busiest site {} with {} requests (robots.txt included): ideal {:.2} s",
        p.pages, p.busiest, p.busiest_requests, p.ideal_s
    );
    println!(
        "  process wall {:.2} s (ratio {:.3}, aim <= 1.1); crawl elapsed_s {:.2} s (ratio {:.3}); busiest site first-to-last arrival {:.2} s (ratio {:.3})",
        p.usage.wall_s,
        ratio(p.usage.wall_s),
        p.elapsed_s,
        ratio(p.elapsed_s),
        p.busiest_span_s,
        ratio(p.busiest_span_s),
    );
    println!(
        "  busiest site mean gap {:.1} ms; shortest gap at any site {:.1} ms; most in flight at a site {}; first request {:.3} s after the server started; CPU {:.2} s, peak RSS {:.1} MB{}",
        p.busiest_mean_gap_ms,
        p.min_gap_ms,
        p.max_in_flight,
        p.first_arrival_s,
        p.usage.cpu_s(),
        p.usage.rss_mb(),
        if p.usage.ended.is_empty() {
            String::new()
        } else {
            format!("; ENDED: {}", p.usage.ended)
        }
    );
}

fn print_hostile(h: &Hostile) {
    println!(
        "\n3. hostile bodies: seeds /big.html (50 MB) and /bomb.html (1 GiB unpacked), --depth 0 --max-body-bytes {BODY_CAP} --delay-ms 0"
    );
    println!(
        "  peak RSS {:.1} MB; wall {:.2} s; CPU {:.2} s; fetched {}, too_large {}, body bytes kept {}{}",
        h.usage.rss_mb(),
        h.usage.wall_s,
        h.usage.cpu_s(),
        count(&h.stats, &["resources", "fetched"]),
        count(&h.stats, &["errors", "too_large"]),
        count(&h.stats, &["http", "bytes"]),
        if h.usage.ended.is_empty() {
            String::new()
        } else {
            format!("; ENDED: {}", h.usage.ended)
        }
    );
    for (path, status, bytes, complete) in &h.served {
        println!("  server: {path} {status}, {bytes} bytes written, complete {complete}");
    }
}

fn main() {
    if !Path::new(GNU_TIME).exists() {
        println!("crawl_e2e: needs GNU time at {GNU_TIME} for each client's rusage; skipped");
        return;
    }
    let parts = std::env::var("CRAWL_E2E_PARTS")
        .unwrap_or_else(|_| "fast,polite,hostile,index".to_string());
    let wanted = |part: &str| parts.split(',').any(|p| p.trim() == part);
    let rounds = std::env::var("CRAWL_E2E_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let tmp = tempfile::tempdir().expect("tempdir");
    let fast = wanted("fast").then(|| part_fast(tmp.path()));
    let polite = wanted("polite").then(|| part_polite(tmp.path()));
    let hostile = wanted("hostile").then(|| part_hostile(tmp.path()));
    let index = wanted("index").then(|| part_index(tmp.path(), rounds));
    println!("crawl_e2e: crawltop {CRAWLTOP}; each client measured by GNU time (wait4 rusage)");
    if let Some((rows, reachable)) = &fast {
        print_fast(rows, *reachable);
    }
    if let Some(p) = &polite {
        print_polite(p);
    }
    if let Some(h) = &hostile {
        print_hostile(h);
    }
    if let Some((runs, reachable)) = &index {
        print_index(runs, *reachable);
    }
    if std::env::var_os("CRAWL_E2E_KEEP").is_some() {
        println!("\nkept the work files in {}", tmp.keep().display());
    }
}
