//! Larger than memory (issue 5): 5,000,000 URLs over 50,000 sites pushed into a spilling
//! frontier (`Frontier<Box<str>>` over the redb `DiskStore`) and popped through the slot API
//! until empty; the same without spilling; and 5,000,000 fingerprints in the seen set, against
//! a `HashSet<u64>`. Prints resident memory per URL at the peak, spill file size, and
//! operations per second. A one-shot measurement, not a criterion run:
//! `cargo bench --bench frontier_spill` (a few minutes; about 1 GB of RAM for the run without
//! spilling, 0.5 GB of disk in the temp directory for the one with).
//!
//! Each measurement runs in a child process of its own (this binary, re-run with `--phase`),
//! so memory freed by one cannot be reused by the next and hide part of its growth, and the
//! peak (`VmHWM`) is that phase's own.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use crawltop::frontier::{DiskStore, Frontier, FrontierConfig, SeenSet, SiteId, Tick, fingerprint};

const URLS: usize = 5_000_000;
const SITES: usize = 50_000;
/// B = 3 × 64 workers, as the engine sizes it: most sites wait in the front queues.
const WORKERS: usize = 64;
/// Items each queue (4 front, 192 back) keeps in memory when spilling. Chunks are half of it:
/// 950 items of about 66 encoded bytes, just under 64 KiB. redb gives a large value a
/// power-of-two run of pages: at 1,024 (chunks of about 34 KiB) the spill file was 1,028 MiB
/// for 313 MiB of items, at 1,900 it is 514 MiB.
const IN_MEMORY: usize = 1_900;

const PHASES: [&str; 5] = ["spill", "no-spill", "seen", "hashset", "urls"];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--phase") {
        let phase = args.get(i + 1).map_or("", String::as_str);
        run_phase(phase);
        return;
    }
    // `cargo bench` passes `--bench`; a name filter (`cargo bench --bench frontier_spill seen`)
    // runs only the phases it names.
    let wanted: Vec<&str> = args[1..]
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let exe = std::env::current_exe().expect("the running benchmark has a path");
    println!(
        "frontier_spill: {URLS} URLs over {SITES} sites, F = {}, B = {}, {IN_MEMORY} items in memory per queue when spilling",
        FrontierConfig::DEFAULT_FRONT_QUEUES,
        config().back_queues
    );
    for phase in PHASES {
        if !wanted.is_empty() && !wanted.contains(&phase) {
            continue;
        }
        let status = Command::new(&exe)
            .args(["--phase", phase])
            .status()
            .expect("the benchmark can run itself");
        assert!(status.success(), "phase {phase} failed: {status}");
    }
}

fn config() -> FrontierConfig {
    FrontierConfig::for_workers(WORKERS, Duration::ZERO)
}

/// Round robin over the sites (as a breadth-first crawl finds them), depth rising in four bands.
fn url(i: usize, out: &mut String) -> usize {
    use std::fmt::Write;
    out.clear();
    let depth = i * 4 / URLS;
    write!(
        out,
        "http://site-{:05}.example:8080/section/{depth}/page-{i:07}.html",
        i % SITES
    )
    .expect("writing to a String cannot fail");
    depth
}

fn origin(site: usize) -> String {
    format!("http://site-{site:05}.example:8080")
}

struct Mem {
    rss: u64,
    hwm: u64,
}

/// `VmRSS` and `VmHWM` from /proc/self/status, in bytes.
fn mem() -> Mem {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kib| kib.parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024)
    };
    Mem {
        rss: field("VmRSS:"),
        hwm: field("VmHWM:"),
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn per_url(bytes: u64) -> f64 {
    bytes as f64 / URLS as f64
}

fn rate(n: usize, d: Duration) -> String {
    format!("{:.2} M/s", n as f64 / d.as_secs_f64() / 1e6)
}

fn run_phase(phase: &str) {
    match phase {
        "spill" => frontier_run(true),
        "no-spill" => frontier_run(false),
        "seen" => seen_run(),
        "hashset" => hashset_run(),
        "urls" => urls_run(),
        other => panic!("unknown phase {other:?}"),
    }
}

fn frontier_run(spill: bool) {
    let dir = tempfile::tempdir().expect("a temp directory");
    let before = mem();
    let mut frontier: Frontier<Box<str>> = if spill {
        let store = DiskStore::create(dir.path()).expect("the spill file");
        Frontier::with_spill(config(), IN_MEMORY, store)
    } else {
        Frontier::new(config())
    };
    let sites: Vec<SiteId> = (0..SITES).map(|s| frontier.site(&origin(s))).collect();

    let mut buf = String::new();
    let mut url_bytes = 0;
    let start = Instant::now();
    for i in 0..URLS {
        let depth = url(i, &mut buf);
        url_bytes += buf.len();
        frontier.push(sites[i % SITES], depth, buf.as_str().into());
    }
    let push_time = start.elapsed();
    assert_eq!(frontier.len(), URLS);
    assert!(
        frontier.spill_error().is_none(),
        "{:?}",
        frontier.spill_error()
    );
    let after_push = mem();
    let (spilled, in_memory) = (frontier.spilled(), frontier.in_memory());
    let disk_after_push = frontier.spill_disk_bytes();
    let written_by_push = frontier.spill_written_bytes();
    let mut disk_peak = disk_after_push;

    // The engine's loop with instant fetches: each slot takes one item and completes at once.
    let start = Instant::now();
    let mut now = Tick::ZERO;
    let mut taken = 0;
    loop {
        if let Some(site) = frontier.next_site(now) {
            if let Some(item) = frontier.take(site) {
                black_box(item);
                taken += 1;
                if taken % 250_000 == 0 {
                    disk_peak = disk_peak.max(frontier.spill_disk_bytes());
                }
            }
            frontier.complete(site, now);
        } else if let Some(at) = frontier.next_ready_at() {
            now = now.max(at);
        } else {
            break;
        }
        now += Duration::from_micros(1);
    }
    let pop_time = start.elapsed();
    assert_eq!(taken, URLS, "{:?}", frontier.spill_error());
    assert!(frontier.is_empty());
    let end = mem();

    let name = if spill {
        "spilling (redb)"
    } else {
        "not spilling"
    };
    println!(
        "\n{name}: {URLS} URLs, {:.1} bytes of URL each",
        url_bytes as f64 / URLS as f64
    );
    println!(
        "  push: {:.2} s, {} (URL formatting included)",
        push_time.as_secs_f64(),
        rate(URLS, push_time)
    );
    println!(
        "  pop:  {:.2} s, {} (next_site + take + complete)",
        pop_time.as_secs_f64(),
        rate(URLS, pop_time)
    );
    println!(
        "  RSS after all pushes: +{:.1} MiB = {:.1} bytes per queued URL",
        mib(after_push.rss - before.rss),
        per_url(after_push.rss - before.rss)
    );
    println!(
        "  peak RSS (VmHWM) over the run: +{:.1} MiB = {:.1} bytes per queued URL",
        mib(end.hwm - before.rss),
        per_url(end.hwm - before.rss)
    );
    if spill {
        println!(
            "  after all pushes: {spilled} items spilled, {in_memory} in memory; spill file {:.1} MiB = {:.1} bytes per URL; largest seen while popping {:.1} MiB",
            mib(disk_after_push),
            per_url(disk_after_push),
            mib(disk_peak)
        );
        println!(
            "  encoded items written by the pushes: {:.1} MiB = {:.1} bytes per URL; by the whole run (refills respill): {:.1} MiB",
            mib(written_by_push),
            per_url(written_by_push),
            mib(frontier.spill_written_bytes())
        );
    }
}

fn seen_run() {
    let before = mem();
    let mut seen = SeenSet::new();
    let start = Instant::now();
    let mut buf = String::new();
    for i in 0..URLS {
        url(i, &mut buf);
        assert!(seen.insert(&buf));
    }
    let insert_time = start.elapsed();
    let start = Instant::now();
    let mut hits = 0;
    for i in 0..URLS {
        url(i, &mut buf);
        hits += usize::from(seen.contains(&buf));
    }
    let lookup_time = start.elapsed();
    assert_eq!((hits, seen.len()), (URLS, URLS));
    let end = mem();
    println!("\nseen set (SeenSet, grown from empty): {URLS} fingerprints");
    println!(
        "  table {:.1} MiB = {:.1} bytes per URL; RSS +{:.1} MiB = {:.1} bytes per URL; peak (while growing) +{:.1} MiB",
        mib(seen.table_bytes() as u64),
        per_url(seen.table_bytes() as u64),
        mib(end.rss - before.rss),
        per_url(end.rss - before.rss),
        mib(end.hwm - before.rss)
    );
    println!(
        "  insert {}, contains {} (xxh3 of the URL included)",
        rate(URLS, insert_time),
        rate(URLS, lookup_time)
    );
}

/// The old seen set's hasher: xxh3 fingerprints are already uniform.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// What `SeenSet` was before: a `HashSet<u64>` (hashbrown) with an identity hasher.
fn hashset_run() {
    let before = mem();
    let mut seen: HashSet<u64, BuildHasherDefault<Identity>> = HashSet::default();
    let start = Instant::now();
    let mut buf = String::new();
    for i in 0..URLS {
        url(i, &mut buf);
        assert!(seen.insert(fingerprint(&buf)));
    }
    let insert_time = start.elapsed();
    let end = mem();
    println!(
        "\nHashSet<u64> (the seen set before this change), grown from empty: {URLS} fingerprints"
    );
    println!(
        "  RSS +{:.1} MiB = {:.1} bytes per URL; peak (while growing) +{:.1} MiB; insert {}",
        mib(end.rss - before.rss),
        per_url(end.rss - before.rss),
        mib(end.hwm - before.rss),
        rate(URLS, insert_time)
    );
}

/// The cost of making the URLs alone, to read the push rates against.
fn urls_run() {
    let mut buf = String::new();
    let start = Instant::now();
    for i in 0..URLS {
        black_box(url(i, &mut buf));
        black_box(Box::<str>::from(buf.as_str()));
    }
    let time = start.elapsed();
    println!(
        "\nformatting and boxing {URLS} URLs alone: {:.2} s, {}",
        time.as_secs_f64(),
        rate(URLS, time)
    );
}
