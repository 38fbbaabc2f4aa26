//! Index benchmark (not a test): pages indexed per second and query latency (p50, p99) over
//! 100,000 generated pages of 20 to 120 lines from the embedded book.
//! Run: `cargo bench --bench index`. `INDEX_MEMORY_MB=N` sets the writer's budget;
//! `INDEX_HOSTILE=1` instead indexes the hostile pages of issue 11 (10 MiB of one word, a
//! million distinct words), each in a fresh folder, and prints the process's peak RSS after
//! each: run it once per page kind (`INDEX_HOSTILE=one-word` or `distinct`) for a clean peak.
//! `INDEX_DISTINCT_WORDS=N` makes the `distinct` page N words long (default a million): how
//! the cost of one page grows with its distinct words, below and above
//! `index::MAX_DISTINCT_WORDS`.

use std::time::{Duration, Instant};

use crawltop::index::{IndexReader, IndexWriter, IndexedPage};

const PAGES: u64 = 100_000;
const QUERIES: usize = 2_000;

/// `SplitMix64`, so the pages and the queries are the same every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

/// This process's peak resident set so far (`VmHWM`), in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// User plus system CPU seconds of this process so far (all its threads).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("proc stat");
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 =
        fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    ticks / 100.0 // USER_HZ is 100 on Linux
}

/// Indexes one hostile page and reports the time and this process's peak RSS.
fn hostile(kind: &str, memory_mb: usize) {
    let text = match kind {
        "one-word" => "rabbit ".repeat((10 << 20) / 7),
        "distinct" => (0..distinct_words())
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" "),
        other => panic!("INDEX_HOSTILE is one-word or distinct, not {other:?}"),
    };
    let baseline_kib = peak_rss_kib();
    let dir = tempfile::tempdir().expect("tempdir");
    let started = Instant::now();
    let mut writer =
        IndexWriter::open_with_memory(&dir.path().join("index"), memory_mb).expect("index");
    let added = writer
        .add(&IndexedPage {
            seq: 1,
            url: "http://127.0.0.1:8000/hostile",
            title: kind,
            text: &text,
            committed_ms: 1,
        })
        .expect("add");
    writer.commit().expect("commit");
    writer.close().expect("close");
    let words = IndexReader::open(&dir.path().join("index"))
        .expect("reader")
        .word_count()
        .expect("wc")
        .words;
    println!("{added:?}");
    println!(
        "hostile page {kind:?}: {:.1} MB of text, {words} words, indexed in {:.2} s; \
         peak RSS {:.1} MB ({:.1} MB before the index was opened, the text included), budget {memory_mb} MB",
        text.len() as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        peak_rss_kib() as f64 / 1024.0,
        baseline_kib as f64 / 1024.0,
    );
}

/// Words of the `distinct` page (`INDEX_DISTINCT_WORDS`, default a million).
fn distinct_words() -> usize {
    std::env::var("INDEX_DISTINCT_WORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

fn main() {
    let memory_mb = std::env::var("INDEX_MEMORY_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(crawltop::index::DEFAULT_MEMORY_MB);
    if let Ok(kind) = std::env::var("INDEX_HOSTILE") {
        hostile(&kind, memory_mb);
        return;
    }
    let words: Vec<&str> = crawltop::testweb::generator::DEFAULT_TEXT
        .split_whitespace()
        .collect();
    let mut rng = Rng(7);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("index");
    println!("index memory budget: {memory_mb} MB");
    let mut writer = IndexWriter::open_with_memory(&path, memory_mb).expect("index");
    let mut bytes = 0u64;
    let started = Instant::now();
    for seq in 0..PAGES {
        let lines = 20 + rng.below(100);
        let mut text = String::new();
        for _ in 0..lines {
            let n = 5 + rng.below(12);
            let start = rng.below(words.len() - n);
            text.push_str(&words[start..start + n].join(" "));
            text.push('\n');
        }
        bytes += text.len() as u64;
        let url = format!("http://127.0.0.1:8000/p{seq}.html");
        writer
            .add(&IndexedPage {
                seq,
                url: &url,
                title: "a page",
                text: &text,
                committed_ms: seq,
            })
            .expect("add");
        // The committer commits about once a second; here every 10,000 pages.
        if seq % 10_000 == 9_999 {
            writer.commit().expect("commit");
        }
    }
    writer.commit().expect("commit");
    let in_flight = writer.peak_in_flight_bytes();
    writer.close().expect("close");
    let indexing = started.elapsed();
    let cpu = cpu_seconds();
    let peak_kib = peak_rss_kib();

    let reader = IndexReader::open(&path).expect("reader");
    let query_words: Vec<String> = (0..QUERIES)
        .map(|_| {
            words[rng.below(words.len())]
                .chars()
                .filter(|c| c.is_alphanumeric())
                .collect::<String>()
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    let mut search = Vec::new();
    let mut counts = Vec::new();
    for w in &query_words {
        let t = Instant::now();
        let _ = reader.search(w, 10);
        search.push(t.elapsed());
        let t = Instant::now();
        let _ = reader.max_count(w);
        counts.push(t.elapsed());
    }
    search.sort();
    counts.sort();
    println!(
        "index: {PAGES} pages, {:.0} MB of text, indexed in {:.1} s: {:.0} pages/s; \
         {:.2} CPU-s per 1,000 pages; peak RSS {:.1} MB; at most {:.1} MB of pages waited inside tantivy",
        bytes as f64 / 1e6,
        indexing.as_secs_f64(),
        PAGES as f64 / indexing.as_secs_f64(),
        cpu / PAGES as f64 * 1000.0,
        peak_kib as f64 / 1024.0,
        in_flight as f64 / 1e6
    );
    println!(
        "search (top 10, one word, {} queries): p50 {:?}  p99 {:?}",
        search.len(),
        percentile(&search, 0.5),
        percentile(&search, 0.99)
    );
    println!(
        "maxcount (one word, {} queries): p50 {:?}  p99 {:?}",
        counts.len(),
        percentile(&counts, 0.5),
        percentile(&counts, 0.99)
    );
}
