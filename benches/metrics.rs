//! Rendering cost of `/metrics` with 1,000 sites in the snapshot (criterion): the exposition
//! is rebuilt from the snapshot on every scrape that finds a new snapshot.
//! Run: `cargo bench --bench metrics`.

use crawltop::control::metrics_text;
use crawltop::snapshot::{SiteRow, Snapshot};
use criterion::{Criterion, criterion_group, criterion_main};

fn snapshot(sites: usize) -> Snapshot {
    let mut s = Snapshot::default();
    s.workers.total = 64;
    s.resources.fetched = 123_456;
    s.http.status.insert("200".into(), 120_000);
    s.http.status.insert("404".into(), 3_456);
    s.rates.pages_per_s = 1482.5;
    s.sites = (0..sites)
        .map(|i| SiteRow {
            origin: format!("http://127.0.0.1:{}", 10_000 + i),
            delay_ms: 100 + (i % 7) as u64 * 250,
            queued: (i * 7919 % 1000) as u64,
            fetched: (i * 104_729 % 5000) as u64,
            errors: (i % 3) as u64,
            ..SiteRow::default()
        })
        .collect();
    s
}

fn render(c: &mut Criterion) {
    let snap = std::sync::Arc::new(snapshot(1000));
    c.bench_function("metrics_text, 1000 sites", |b| {
        b.iter(|| metrics_text(std::hint::black_box(&snap)));
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = render
}
criterion_main!(benches);
