//! The headless face of a crawl: a progress line every few seconds on stderr, each warning of
//! the crawl's log as it appears (what the dashboard's log pane shows), a summary at the end. An
//! observer of snapshots like the dashboard, with one command of its own (a stop, when the crawl
//! paused on a failure and nobody else could act on the pause); it never touches the engine.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::engine::Summary;
use crate::snapshot::{LogLine, RunState, Snapshot};

/// How often a progress line is printed.
pub const EVERY: Duration = Duration::from_secs(2);

/// One progress line, e.g. `[   12.0s] running  pages 1234 (103.2/s)  responses 1301
/// (110.5/s)  queued 456  in flight 16  errors 3  delay 100 ms`. Pages are the URLs fetched;
/// responses are every answer the servers gave (robots.txt, redirects and errors too), so a
/// crawl that meets only 404s still shows it is working.
pub fn progress_line(s: &Snapshot) -> String {
    line_as(
        s,
        state_name(s.state),
        (s.rates.pages_per_s, s.rates.responses_per_s),
    )
}

/// The last line, as a crawl that ended says it: its rates are the whole crawl's averages
/// (`Snapshot::averages`, what the stats file and the dashboard's last screen say), not the
/// last seconds', which a crawl that ended paused leaves at 0 (audit 33 F4).
pub fn final_line(s: &Snapshot, state: &str) -> String {
    line_as(
        s,
        state,
        (s.averages.pages_per_s, s.averages.responses_per_s),
    )
}

/// `rates`: pages and responses a second.
fn line_as(s: &Snapshot, state: &str, rates: (f64, f64)) -> String {
    let errors = s.resources.fetch_error + s.resources.parse_error;
    let responses: u64 = s.http.status.values().sum();
    format!(
        "[{:>8.1}s] {:<8} pages {} ({:.1}/s)  responses {} ({:.1}/s)  queued {}  in flight {}  \
         errors {}  delay {} ms",
        s.elapsed_s,
        state,
        s.resources.fetched,
        rates.0,
        responses,
        rates.1,
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

/// Prints a progress line every [`EVERY`], and each new warning as soon as a snapshot holds it,
/// until the crawl finishes.
///
/// `unattended`: the crawl has no other face (no dashboard, `--control` or `--command-port`), so
/// nobody can act on a pause. A failure the engine pauses on (the page store, which this run
/// cannot write again; the spill file; the state file) waits for a resume nobody can give; paused,
/// the crawl would wait for a signal forever. So it is stopped, saying why (and the crawl exits
/// 1, as any crawl that ends on such a failure): a script sees it end, and the same command run
/// again resumes it from its checkpoint once the cause is fixed.
pub async fn report(
    mut snapshots: watch::Receiver<Arc<Snapshot>>,
    mut unattended: Option<crate::engine::Commander>,
) {
    let mut tick = tokio::time::interval(EVERY);
    tick.tick().await;
    let mut shown: Vec<LogLine> = Vec::new();
    loop {
        // The latest snapshot, seen or not: a crawl may end (its warnings in its last snapshot)
        // before this receiver was made, which marks that snapshot seen.
        let snap = snapshots.borrow_and_update().clone();
        print_warnings(&mut shown, &snap.log);
        if snap.state == RunState::Finished {
            return;
        }
        if snap.state == RunState::Paused
            && let Some(fault) = &snap.fault
            && let Some(commander) = unattended.take()
        {
            crate::say!(
                "crawltop: {} and nothing here can resume the crawl (no dashboard, --control \
                 or --command-port): stopping it",
                fault.what.failed()
            );
            commander.send(
                crate::engine::Command::Stop,
                crate::snapshot::CommandSource::Headless,
            );
        }
        tokio::select! {
            _ = tick.tick() => {
                let snap = snapshots.borrow_and_update().clone();
                print_warnings(&mut shown, &snap.log);
                crate::say!("{}", progress_line(&snap));
            }
            changed = snapshots.changed() => {
                if changed.is_err() {
                    let last = snapshots.borrow().clone();
                    print_warnings(&mut shown, &last.log);
                    return;
                }
            }
        }
    }
}

fn print_warnings(shown: &mut Vec<LogLine>, log: &[LogLine]) {
    for line in fresh_lines(shown, log) {
        crate::say!("{}", warning_line(line));
    }
    if shown.as_slice() != log {
        *shown = log.to_vec();
    }
}

/// One warning, e.g. `crawltop: warning: Crawl-delay 10 s of http://a/ capped to 1 s`: apart
/// from the progress lines (which start with the time), as the crawl's other messages are.
fn warning_line(line: &LogLine) -> String {
    format!("crawltop: {}: {}", warning_word(&line.level), line.message)
}

fn warning_word(level: &str) -> &str {
    match level {
        "warn" => "warning",
        other => other,
    }
}

/// The lines of `log` that `shown` (the log as last seen) did not hold. The log is a window
/// over the newest lines: lines are appended at its end and dropped from its front, so what
/// was shown is the longest end of `shown` that `log` starts with. More new lines than the
/// window holds between two looks lose the oldest, as the window itself does.
fn fresh_lines<'a>(shown: &[LogLine], log: &'a [LogLine]) -> &'a [LogLine] {
    let overlap = (0..=shown.len().min(log.len()))
        .rev()
        .find(|&k| shown[shown.len() - k..] == log[..k])
        .unwrap_or(0);
    &log[overlap..]
}

/// The summary's note of URLs not fetched because their site's robots.txt could not be read,
/// and of how many sites that is.
fn unread_note(urls: u64, sites: usize) -> String {
    let whose = match sites {
        1 => "1 site's robots.txt".to_string(),
        n => format!("{n} sites' robots.txt"),
    };
    match (urls, sites) {
        (0, 0) => String::new(),
        (urls, 0) => format!(", {urls} not fetched (their robots.txt could not be read)"),
        // Stopped while a robots.txt was still being tried: nothing ended for it yet.
        (0, _) => format!(", {whose} could not be read"),
        (urls, _) => {
            format!(", {urls} not fetched ({whose} could not be read: nothing is fetched there)")
        }
    }
}

/// The closing summary.
pub fn print_summary(summary: &Summary) {
    let s = &summary.snapshot;
    // A crawl stopped before its queue ran dry is over, not finished.
    let state = if summary.completed || s.state != RunState::Finished {
        state_name(s.state)
    } else {
        "stopped"
    };
    crate::say!("{}", final_line(s, state));
    // RFC 9309: a robots.txt that cannot be read forbids the whole site; said apart, or an
    // unreachable seed would read as a site that forbids crawling.
    let unread_sites = (s.sites.iter())
        .filter(|site| site.robots_state == crate::robots::RobotsState::Error)
        .count();
    let unread = unread_note(s.errors.robots_unreachable, unread_sites);
    crate::say!(
        "crawltop: {} after {}: {} pages fetched, {} URLs discovered, {} bytes, {} sites; \
         {} errors, {} forbidden by robots.txt{unread}, {} ignored",
        if summary.completed { "done" } else { "stopped" },
        time_taken(s),
        s.resources.fetched,
        s.resources.discovered,
        s.http.bytes,
        s.sites.len(),
        s.resources.fetch_error + s.resources.parse_error,
        s.errors.robots_forbidden,
        s.resources.fetch_ignored,
    );
}

/// `12.3 s`, or for a resumed crawl, whose counts are the whole crawl's, `4.7 s (79.3 s over
/// 2 runs)`.
fn time_taken(s: &Snapshot) -> String {
    let run = format!("{:.1} s", s.elapsed_s);
    if s.commit.run > 1 {
        format!(
            "{run} ({:.1} s over {} runs)",
            s.crawl_elapsed_s, s.commit.run
        )
    } else {
        run
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last line gives the whole crawl's averages: a crawl of 1,605 pages that ended
    /// paused said `(0.0/s)` (audit 33 F4); and the summary names every run's seconds.
    #[test]
    fn a_crawl_that_ended_says_its_own_averages_and_every_runs_time() {
        let mut s = Snapshot {
            state: RunState::Finished,
            elapsed_s: 20.0,
            crawl_elapsed_s: 80.0,
            ..Snapshot::default()
        };
        s.resources.fetched = 1_605;
        s.http.status.insert("200".into(), 1_640);
        s.averages = crate::snapshot::Averages::over(1_605, 0, 1_640, 80.0);
        s.commit.run = 2;
        let line = final_line(&s, "stopped");
        assert!(
            line.contains("stopped  pages 1605 (20.1/s)  responses 1640 (20.5/s)"),
            "{line}"
        );
        // While running, the last seconds' rates.
        s.rates.pages_per_s = 3.0;
        assert!(progress_line(&s).contains("pages 1605 (3.0/s)"));
        assert_eq!(time_taken(&s), "20.0 s (80.0 s over 2 runs)");
        s.commit.run = 1;
        assert_eq!(time_taken(&s), "20.0 s");
    }

    #[test]
    fn the_unread_robots_note_says_what_was_not_fetched_and_where() {
        assert_eq!(unread_note(0, 0), "");
        assert_eq!(
            unread_note(4, 0),
            ", 4 not fetched (their robots.txt could not be read)"
        );
        assert_eq!(
            unread_note(4, 1),
            ", 4 not fetched (1 site's robots.txt could not be read: nothing is fetched there)"
        );
        assert_eq!(
            unread_note(7, 2),
            ", 7 not fetched (2 sites' robots.txt could not be read: nothing is fetched there)"
        );
        // Audit 25: a crawl stopped while a robots.txt was still tried said "0 not fetched".
        assert_eq!(unread_note(0, 1), ", 1 site's robots.txt could not be read");
    }

    fn lines(messages: &[&str]) -> Vec<LogLine> {
        messages
            .iter()
            .map(|m| LogLine {
                at_s: 1,
                level: "warn".into(),
                message: (*m).into(),
            })
            .collect()
    }

    fn fresh(shown: &[&str], log: &[&str]) -> Vec<String> {
        fresh_lines(&lines(shown), &lines(log))
            .iter()
            .map(|l| l.message.clone())
            .collect()
    }

    #[test]
    fn only_lines_not_shown_before_are_fresh() {
        assert_eq!(fresh(&[], &["a", "b"]), ["a", "b"]);
        assert_eq!(fresh(&["a", "b"], &["a", "b"]), Vec::<String>::new());
        assert_eq!(fresh(&["a", "b"], &["a", "b", "c"]), ["c"]);
        // The window dropped its oldest lines as new ones came.
        assert_eq!(fresh(&["a", "b", "c"], &["b", "c", "d", "e"]), ["d", "e"]);
        // The same message again is a new line.
        assert_eq!(fresh(&["a"], &["a", "a"]), ["a"]);
        assert_eq!(fresh(&["x", "a", "a"], &["a", "a", "a"]), ["a"]);
        // More new lines than the window holds: all of it is new.
        assert_eq!(fresh(&["a", "b"], &["c", "d"]), ["c", "d"]);
        assert_eq!(fresh(&["a"], &[]), Vec::<String>::new());
    }
}
