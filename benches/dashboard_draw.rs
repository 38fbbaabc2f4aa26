//! Drawing cost of the dashboard with up to 100,000 sites (criterion). Only the visible rows
//! are built, so a frame costs about the same with 10 sites or 100,000, filter on or off; the
//! order is rebuilt only when the live site table changed (once per snapshot at most).
//! Run: `cargo bench --bench dashboard_draw`.

use std::collections::BTreeMap;
use std::sync::Arc;

use crawltop::dashboard::app::{Action, App};
use crawltop::dashboard::search::Edit;
use crawltop::robots::RobotsState;
use crawltop::site_table::SiteTable;
use crawltop::snapshot::{DelaySource, HeapRow, SiteRow, Snapshot, WorkerState};
use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn rows(sites: usize) -> Vec<SiteRow> {
    (0..sites)
        .map(|i| SiteRow {
            origin: format!("http://127.0.0.1:{}", 10_000 + i),
            robots_state: RobotsState::Handled,
            crawl_delay_ms: None,
            crawl_delay_asked_ms: None,
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
        .collect()
}

/// A live snapshot: no site rows (they are in the table), the count of them.
fn snapshot(sites: usize) -> Snapshot {
    let mut s = Snapshot::default();
    s.workers.total = 64;
    s.workers.slots = vec![WorkerState::Receiving; 64];
    s.rates.history = (0..60).map(|i| f64::from(i % 17) * 90.0).collect();
    s.site_count = sites as u64;
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
    for sites in [10, 10_000, 100_000] {
        let table = Arc::new(SiteTable::from_rows(rows(sites)));
        let mut app = App::new(100, 64);
        app.resize(100, 30);
        app.set_table(table.clone());
        app.set_snapshot(Arc::new(snapshot(sites)));
        let mut terminal = Terminal::new(TestBackend::new(100, 30)).expect("terminal");
        c.bench_function(&format!("draw 100x30, {sites} sites"), |b| {
            b.iter(|| {
                terminal
                    .draw(|f| f.render_widget(&app, f.area()))
                    .expect("draw");
            });
        });
        // A snapshot while the table did not change: nothing is sorted.
        let snap = Arc::new(snapshot(sites));
        c.bench_function(
            &format!("set_snapshot, table unchanged, {sites} sites"),
            |b| {
                b.iter(|| app.set_snapshot(snap.clone()));
            },
        );
        // The table changed since the last snapshot: the order is built again, once.
        c.bench_function(
            &format!("set_snapshot, table changed, {sites} sites"),
            |b| {
                b.iter(|| {
                    table.publish(0, true);
                    app.set_snapshot(snap.clone());
                });
            },
        );
        if sites == 100_000 {
            // Filter on (":1234" matches 1 in about 100 of these origins).
            app.apply(Action::OpenFilter);
            for ch in ":1234".chars() {
                app.apply(Action::FilterPrompt(Edit::Insert(ch)));
            }
            app.apply(Action::ApplyFilter);
            c.bench_function("draw 100x30, 100000 sites, filter on", |b| {
                b.iter(|| {
                    terminal
                        .draw(|f| f.render_widget(&app, f.area()))
                        .expect("draw");
                });
            });
            c.bench_function(
                "set_snapshot, table changed, 100000 sites, filter on",
                |b| {
                    b.iter(|| {
                        table.publish(0, true);
                        app.set_snapshot(snap.clone());
                    });
                },
            );
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(3));
    targets = draw
}
criterion_main!(benches);
