//! Drawing cost of the dashboard with 10,000 sites (criterion). Only the visible rows should
//! be built, so a frame costs about the same with 10 sites or 10,000.
//! Run: `cargo bench --bench dashboard_draw`.

use std::collections::BTreeMap;
use std::sync::Arc;

use crawltop::dashboard::app::App;
use crawltop::robots::RobotsState;
use crawltop::snapshot::{DelaySource, HeapRow, SiteRow, Snapshot, WorkerState};
use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn snapshot(sites: usize) -> Snapshot {
    let mut s = Snapshot::default();
    s.workers.total = 64;
    s.workers.slots = vec![WorkerState::Receiving; 64];
    s.rates.history = (0..60).map(|i| f64::from(i % 17) * 90.0).collect();
    s.sites = (0..sites)
        .map(|i| SiteRow {
            origin: format!("http://127.0.0.1:{}", 10_000 + i),
            robots_state: RobotsState::Handled,
            crawl_delay_ms: None,
            delay_ms: 100,
            delay_source: DelaySource::Configured,
            queued: (i * 7919 % 1000) as u64,
            in_flight: 0,
            fetched: (i * 104_729 % 5000) as u64,
            errors: (i % 3) as u64,
            next_allowed_in_ms: (i % 250) as u64,
            status: BTreeMap::new(),
            recent_errors: Vec::new(),
            robots_rules: String::new(),
        })
        .collect();
    s.heap = (0..32)
        .map(|i| HeapRow {
            origin: format!("http://127.0.0.1:{}", 10_000 + i),
            ready_in_ms: i * 3,
            queue_len: 100 + i,
        })
        .collect();
    s
}

fn draw(c: &mut Criterion) {
    for sites in [10, 10_000] {
        let mut app = App::new(100, 64);
        app.resize(100, 30);
        app.set_snapshot(Arc::new(snapshot(sites)));
        let mut terminal = Terminal::new(TestBackend::new(100, 30)).expect("terminal");
        c.bench_function(&format!("draw 100x30, {sites} sites"), |b| {
            b.iter(|| {
                terminal
                    .draw(|f| f.render_widget(&app, f.area()))
                    .expect("draw");
            });
        });
        // A new snapshot re-sorts the sites once; drawing does not.
        let snap = Arc::new(snapshot(sites));
        c.bench_function(&format!("set_snapshot, {sites} sites"), |b| {
            b.iter(|| app.set_snapshot(snap.clone()));
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = draw
}
criterion_main!(benches);
