//! Frontier throughput and memory: push 1,000,000 items over 10,000 sites, then pop them all
//! (slot, take, complete with delay 0 while time advances); and the resident memory one queued
//! item costs with a realistic payload. `cargo bench --bench frontier`; about a minute.

use std::hint::black_box;
use std::time::Duration;

use crawltop::frontier::{Frontier, FrontierConfig, SiteId, Tick};
use criterion::{BatchSize, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};

const ITEMS: usize = 1_000_000;
const SITES: usize = 10_000;
/// B = 3 × 64 workers, as the engine sizes it: most sites wait in the front queues.
const WORKERS: usize = 64;

/// What the engine is expected to queue per URL.
#[expect(dead_code, reason = "only its memory is measured")]
struct Payload {
    url: Box<str>,
    depth: u16,
    referrer: u32,
}

fn config() -> FrontierConfig {
    FrontierConfig::for_workers(WORKERS, Duration::ZERO)
}

fn intern_sites<T>(frontier: &mut Frontier<T>) -> Vec<SiteId> {
    (0..SITES)
        .map(|i| frontier.site(&format!("https://site-{i:05}.example.org")))
        .collect()
}

/// Round robin over the sites, depth rising in four bands, as a breadth-first crawl finds them.
fn depth(i: usize) -> usize {
    i * 4 / ITEMS
}

fn fill<T>(frontier: &mut Frontier<T>, sites: &[SiteId], mut item: impl FnMut(usize) -> T) {
    for i in 0..ITEMS {
        frontier.push(sites[i % SITES], depth(i), item(i));
    }
}

fn filled_small() -> Frontier<u32> {
    let mut frontier = Frontier::new(config());
    let sites = intern_sites(&mut frontier);
    fill(&mut frontier, &sites, |i| i as u32);
    frontier
}

/// The engine's loop with instant fetches: each slot takes one item and completes at once.
fn drain<T>(frontier: &mut Frontier<T>) -> usize {
    let mut now = Tick::ZERO;
    let mut taken = 0;
    loop {
        if let Some(site) = frontier.next_site(now) {
            if let Some(item) = frontier.take(site) {
                black_box(item);
                taken += 1;
            }
            frontier.complete(site, now);
        } else if let Some(at) = frontier.next_ready_at() {
            now = now.max(at);
        } else {
            return taken;
        }
        now += Duration::from_micros(1);
    }
}

fn push_and_pop(c: &mut Criterion) {
    let mut group = c.benchmark_group("frontier_1m_items_10k_sites");
    group.throughput(Throughput::Elements(ITEMS as u64));
    group.sampling_mode(SamplingMode::Flat);
    group.bench_function("push", |b| {
        b.iter_batched(
            || {
                let mut frontier = Frontier::new(config());
                let sites = intern_sites(&mut frontier);
                (frontier, sites)
            },
            |(mut frontier, sites)| {
                fill(&mut frontier, &sites, |i| i as u32);
                frontier
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("pop", |b| {
        b.iter_batched(
            filled_small,
            |mut frontier| {
                assert_eq!(drain(&mut frontier), ITEMS);
                frontier
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

/// Resident set size from /proc/self/status; `None` where there is no procfs.
fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Not a timing: prints what one queued item costs in resident memory. Runs first, so that
/// memory freed by the timed benchmarks cannot be reused and hide part of the growth. Both
/// frontiers stay alive until the end, so the two deltas do not overlap.
fn memory_per_item(_: &mut Criterion) {
    let Some(start) = rss_bytes() else {
        eprintln!("memory per item: no /proc/self/status here, not measured");
        return;
    };
    let small = filled_small();
    let after_small = rss_bytes().unwrap_or(start);

    let mut frontier = Frontier::new(config());
    let sites = intern_sites(&mut frontier);
    let before = rss_bytes().unwrap_or(after_small);
    let mut url_bytes = 0;
    fill(&mut frontier, &sites, |i| {
        let url = format!(
            "https://site-{:05}.example.org/section/{:08}/page.html",
            i % SITES,
            i
        );
        url_bytes += url.len();
        Payload {
            url: url.into_boxed_str(),
            depth: depth(i) as u16,
            referrer: i as u32,
        }
    });
    let after = rss_bytes().unwrap_or(before);
    assert_eq!(frontier.len(), ITEMS);

    let per_item = |from: u64, to: u64| to.saturating_sub(from) as f64 / ITEMS as f64;
    eprintln!(
        "memory per queued item, {ITEMS} items over {SITES} sites, B = {}:",
        config().back_queues
    );
    eprintln!(
        "  payload u32:                               {:6.1} bytes/item (RSS delta)",
        per_item(start, after_small)
    );
    eprintln!(
        "  payload Box<str> URL ({:.0} B) + u16 + u32: {:6.1} bytes/item (RSS delta; payload inline {} B)",
        url_bytes as f64 / ITEMS as f64,
        per_item(before, after),
        std::mem::size_of::<Payload>()
    );
    black_box((small.len(), frontier.len()));
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = memory_per_item, push_and_pop
}
criterion_main!(benches);
