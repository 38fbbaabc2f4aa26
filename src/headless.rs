//! The headless face of a crawl: a progress line every few seconds on stderr, a summary at the
//! end. An observer of snapshots like the dashboard; it never touches the engine.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::engine::Summary;
use crate::snapshot::{RunState, Snapshot};

/// How often a progress line is printed.
pub const EVERY: Duration = Duration::from_secs(2);

/// One progress line, e.g.
/// `[   12.0s] running  pages 1234 (103.2/s)  queued 456  in flight 16  errors 3  delay 100 ms`.
pub fn progress_line(s: &Snapshot) -> String {
    let errors = s.resources.fetch_error + s.resources.parse_error;
    format!(
        "[{:>8.1}s] {:<8} pages {} ({:.1}/s)  queued {}  in flight {}  errors {}  delay {} ms",
        s.elapsed_s,
        state_name(s.state),
        s.resources.fetched,
        s.rates.pages_per_s,
        s.scheduler.spider.queued + s.scheduler.blocked,
        s.scheduler.assigned,
        errors,
        s.politeness.delay_ms,
    )
}

fn state_name(s: RunState) -> &'static str {
    match s {
        RunState::Running => "running",
        RunState::Paused => "paused",
        RunState::Stopping => "stopping",
        RunState::Finished => "finished",
    }
}

/// Prints a progress line every [`EVERY`] until the crawl finishes.
pub async fn report(mut snapshots: watch::Receiver<Arc<Snapshot>>) {
    let mut tick = tokio::time::interval(EVERY);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let snap = snapshots.borrow_and_update().clone();
                eprintln!("{}", progress_line(&snap));
            }
            changed = snapshots.changed() => {
                if changed.is_err() || snapshots.borrow_and_update().state == RunState::Finished {
                    return;
                }
            }
        }
    }
}

/// The closing summary.
pub fn print_summary(summary: &Summary) {
    let s = &summary.snapshot;
    eprintln!("{}", progress_line(s));
    eprintln!(
        "crawltop: {} after {:.1} s: {} pages fetched, {} URLs discovered, {} bytes, {} sites; \
         {} errors, {} forbidden by robots.txt, {} ignored",
        if summary.completed { "done" } else { "stopped" },
        s.elapsed_s,
        s.resources.fetched,
        s.resources.discovered,
        s.http.bytes,
        s.sites.len(),
        s.resources.fetch_error + s.resources.parse_error,
        s.resources.fetch_forbidden,
        s.resources.fetch_ignored,
    );
}
