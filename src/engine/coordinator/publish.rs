//! What the coordinator publishes: the snapshot, worker states, shares and rates.
//!
//! Read-only views of the coordinator's state, built a few times a second; nothing here changes
//! what the crawl does.

use std::time::Duration;

use super::Coordinator;
use crate::engine::model::ResourceState;
use crate::fetch::Phase;
use crate::frontier::Schedule;
use crate::snapshot::{
    BlockedBy, BusyBy, Commit, HeapRow, Politeness, Rates, Resources, RunState, Scheduler, Shares,
    SiteRow, Snapshot, TaskCounts, WorkerState, Workers,
};

/// Samples kept for the 10-second averages (one per snapshot).
const SAMPLES_10S: usize = 100;
/// Rows of the heap in a snapshot.
const HEAP_ROWS: usize = 32;

impl<F: Schedule> Coordinator<F> {
    pub(super) fn run_state(&self) -> RunState {
        if self.stopping {
            RunState::Stopping
        } else if self.paused {
            RunState::Paused
        } else {
            RunState::Running
        }
    }

    /// Each worker's state: a slot with a task is busy in its phase; free slots are blocked
    /// on the store while its backlog is full, else while some site has queued work it may not
    /// start yet (one per such site, as a thread-per-worker crawler would park one), else idle.
    fn worker_states(&self) -> Vec<WorkerState> {
        let now = self.now();
        let mut waiting_politeness = 0usize;
        let mut waiting_robots = 0usize;
        if !self.paused && !self.stopping {
            for v in self.frontier.sites() {
                if v.queued == 0 {
                    continue;
                }
                // Waiting on robots.txt: being fetched, or failed and waiting for a retry.
                if self.needs_robots(v.id) {
                    waiting_robots += 1;
                } else if v.next_allowed > now || v.in_flight >= self.frontier.per_site() {
                    waiting_politeness += 1;
                }
            }
        }
        // New fetches wait for the store: every free worker holding queued work waits on it.
        let store_full = self.store_full() && !self.frontier.is_empty();
        let mut states = Vec::with_capacity(self.slots.target);
        for i in 0..self.slots.target.max(self.slots.used.len()) {
            if self.slots.used[i] {
                states.push(match self.slots.cells[i].get() {
                    Phase::Connecting | Phase::Idle => WorkerState::Connecting,
                    Phase::WaitingFirstByte => WorkerState::WaitingFirstByte,
                    Phase::Receiving => WorkerState::Receiving,
                    Phase::Parsing => WorkerState::Parsing,
                    Phase::WaitingParse => WorkerState::BlockedParse,
                });
            } else if i < self.slots.target {
                states.push(if store_full && !self.paused && !self.stopping {
                    WorkerState::BlockedStore
                } else if waiting_politeness > 0 {
                    waiting_politeness -= 1;
                    WorkerState::BlockedPoliteness
                } else if waiting_robots > 0 {
                    waiting_robots -= 1;
                    WorkerState::BlockedRobots
                } else {
                    WorkerState::Idle
                });
            }
        }
        states
    }

    pub(super) fn sample(&mut self) {
        let states = self.worker_states();
        self.samples.push_back(shares(&states));
        while self.samples.len() > SAMPLES_10S {
            self.samples.pop_front();
        }
        let t = self.now().as_secs_f64();
        if self
            .per_second
            .back()
            .is_none_or(|(last, _, _)| t - last >= 1.0)
        {
            self.per_second
                .push_back((t, self.pages_fetched, self.http.bytes));
            while self.per_second.len() > 61 {
                self.per_second.pop_front();
            }
        }
    }

    fn workers_view(&self, states: Vec<WorkerState>) -> Workers {
        let total = states.len();
        let count = |f: fn(WorkerState) -> bool| states.iter().filter(|s| f(**s)).count();
        let busy = count(WorkerState::is_busy);
        let blocked = count(WorkerState::is_blocked);
        let now_shares = shares(&states);
        let avg = if self.samples.is_empty() {
            now_shares
        } else {
            let n = self.samples.len() as f64;
            Shares {
                idle_pct: self.samples.iter().map(|s| s.idle_pct).sum::<f64>() / n,
                blocked_pct: self.samples.iter().map(|s| s.blocked_pct).sum::<f64>() / n,
                busy_pct: self.samples.iter().map(|s| s.busy_pct).sum::<f64>() / n,
            }
        };
        Workers {
            total,
            idle: total - busy - blocked,
            blocked,
            busy,
            idle_pct: now_shares.idle_pct,
            blocked_pct: now_shares.blocked_pct,
            busy_pct: now_shares.busy_pct,
            blocked_by: BlockedBy {
                politeness: states
                    .iter()
                    .filter(|s| **s == WorkerState::BlockedPoliteness)
                    .count(),
                robots: states
                    .iter()
                    .filter(|s| **s == WorkerState::BlockedRobots)
                    .count(),
                store: states
                    .iter()
                    .filter(|s| **s == WorkerState::BlockedStore)
                    .count(),
                parse: states
                    .iter()
                    .filter(|s| **s == WorkerState::BlockedParse)
                    .count(),
            },
            busy_by: BusyBy {
                connecting: states
                    .iter()
                    .filter(|s| **s == WorkerState::Connecting)
                    .count(),
                waiting_first_byte: states
                    .iter()
                    .filter(|s| **s == WorkerState::WaitingFirstByte)
                    .count(),
                receiving: states
                    .iter()
                    .filter(|s| **s == WorkerState::Receiving)
                    .count(),
                parsing: states
                    .iter()
                    .filter(|s| **s == WorkerState::Parsing)
                    .count(),
            },
            avg_10s: avg,
            slots: states,
        }
    }

    pub(in crate::engine) fn snapshot_now(&self) -> Snapshot {
        let now = self.now();
        let workers = self.workers_view(self.worker_states());
        let mut blocked_urls = 0u64;
        let mut sites = Vec::with_capacity(self.sites.len());
        for v in self.frontier.sites() {
            let s = &self.sites[v.id.index()];
            if self.needs_robots(v.id) {
                blocked_urls += v.queued as u64;
            }
            sites.push(SiteRow {
                origin: v.origin.to_string(),
                robots_state: s.robots.state(),
                crawl_delay_ms: s.crawl_delay.map(|c| c.effective.as_millis() as u64),
                delay_ms: v.delay.as_millis() as u64,
                delay_source: s.delay_source(self.delay, now),
                queued: v.queued as u64,
                in_flight: v.in_flight as u64,
                fetched: s.fetched,
                errors: s.errors,
                next_allowed_in_ms: v.next_allowed.saturating_sub(now).as_millis() as u64,
                status: s.status.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                recent_errors: s.recent_errors.iter().cloned().collect(),
                robots_rules: robots_line(&s.robots.summary()),
            });
        }
        let parsing = workers.busy_by.parsing as u64;
        // A page waiting for the parse pool is a thinker task queued.
        let waiting_parse = workers.blocked_by.parse as u64;
        let spider_assigned = (self.running.len() as u64).saturating_sub(parsing + waiting_parse);
        let spider = TaskCounts {
            queued: self.frontier.len() as u64 - blocked_urls,
            assigned: spider_assigned,
            done: self.spider_done,
        };
        let thinker = TaskCounts {
            queued: waiting_parse,
            assigned: parsing,
            done: self.thinker_done,
        };
        let st = |s: ResourceState| self.state_counts.get(s);
        Snapshot {
            state: self.run_state(),
            elapsed_s: now.as_secs_f64(),
            workers,
            scheduler: Scheduler {
                queued: spider.queued + thinker.queued,
                assigned: spider.assigned + thinker.assigned,
                blocked: blocked_urls,
                done: spider.done + thinker.done,
                spider,
                thinker,
                on_disk: self.frontier.spilled() as u64,
                spilled_bytes: self.frontier.spill_written_bytes(),
            },
            resources: Resources {
                discovered: self.resources.len() as u64,
                fetched: st(ResourceState::Fetched)
                    + st(ResourceState::Parsed)
                    + st(ResourceState::ParseIgnored)
                    + st(ResourceState::ParseError),
                parsed: st(ResourceState::Parsed),
                fetch_error: st(ResourceState::FetchError),
                fetch_ignored: st(ResourceState::FetchIgnored),
                fetch_forbidden: st(ResourceState::FetchForbidden),
                parse_error: st(ResourceState::ParseError),
                parse_ignored: st(ResourceState::ParseIgnored),
            },
            errors: self.errors,
            http: self.http.clone(),
            politeness: Politeness {
                delay_ms: self.delay.as_millis() as u64,
                per_site: self.frontier.per_site(),
                max_crawl_delay_ms: self.cfg.max_crawl_delay_ms,
                adaptive_factor: self.cfg.adaptive_delay,
            },
            sites,
            heap: self
                .frontier
                .heap_top(HEAP_ROWS)
                .into_iter()
                .map(|h| HeapRow {
                    origin: self.frontier.origin(h.site).to_string(),
                    ready_in_ms: h.ready_at.saturating_sub(now).as_millis() as u64,
                    queue_len: h.queue_len as u64,
                })
                .collect(),
            rates: self.rates(now),
            commit: self.commit_view(),
            commands: self.commands.clone(),
            log: self.log.iter().cloned().collect(),
        }
    }

    fn commit_view(&self) -> Commit {
        let status = self
            .committer
            .as_ref()
            .map(|c| c.status().clone())
            .or_else(|| self.committer_final.clone());
        Commit {
            store: match (&self.cfg.out, self.cfg.store) {
                (None, _) => "none".into(),
                // A folder with no page store still gets the index and the checkpoint.
                (Some(_), crate::store::committer::StoreKind::None) => "index".into(),
                (Some(_), kind) => serde_json::to_value(kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
            },
            next_seq: self.window.next_to_commit(),
            waiting: self.window.waiting() as u64,
            in_flight: self.window.in_flight() as u64,
            rescheduled: self.window.reschedules(),
            committed: status.as_ref().map_or(0, |s| s.committed()),
            checkpoints: status.as_ref().map_or(0, |s| s.checkpoints()),
            error: status.and_then(|s| s.error()),
            run: self.runs.run,
            resumed_from: self.runs.resumed_from,
            refetched: self.runs.refetched,
        }
    }

    fn rates(&self, now: Duration) -> Rates {
        let t = now.as_secs_f64();
        // Over the last ~3 seconds, from the once-a-second samples and the live counters.
        let window = self
            .per_second
            .iter()
            .rev()
            .find(|(ts, _, _)| t - ts >= 3.0)
            .or(self.per_second.front());
        let (pages_per_s, bytes_per_s) = match window {
            Some(&(ts, pages, bytes)) if t > ts => (
                (self.pages_fetched - pages) as f64 / (t - ts),
                (self.http.bytes - bytes) as f64 / (t - ts),
            ),
            _ => (0.0, 0.0),
        };
        let history = self
            .per_second
            .iter()
            .zip(self.per_second.iter().skip(1))
            .map(|(a, b)| (b.1 - a.1) as f64 / (b.0 - a.0).max(1e-9))
            .collect();
        Rates {
            pages_per_s,
            bytes_per_s,
            history,
        }
    }
}

fn shares(states: &[WorkerState]) -> Shares {
    let n = states.len().max(1) as f64;
    let busy = states.iter().filter(|s| s.is_busy()).count() as f64;
    let blocked = states.iter().filter(|s| s.is_blocked()).count() as f64;
    Shares {
        idle_pct: 100.0 * (n - busy - blocked) / n,
        blocked_pct: 100.0 * blocked / n,
        busy_pct: 100.0 * busy / n,
    }
}

/// One line about a site's robots.txt, for the dashboard's site detail.
fn robots_line(r: &crate::robots::RobotsSummary) -> String {
    use crate::robots::RobotsResponse;
    let mut parts = Vec::new();
    match (&r.group, r.rules) {
        (Some(g), Some(c)) => parts.push(format!(
            "group \"{g}\": {} allow, {} disallow",
            c.allow, c.disallow
        )),
        (None, Some(c)) if c.allow + c.disallow == 0 => parts.push("no group for us".into()),
        _ => {}
    }
    if let Some(n) = r.size_bytes {
        parts.push(format!(
            "{n} bytes{}",
            if r.truncated { " (cut at 500 KiB)" } else { "" }
        ));
    }
    match r.last_response {
        Some(RobotsResponse::Status(s)) => parts.push(format!("last answer {s}")),
        Some(RobotsResponse::Unreachable) => parts.push("unreachable".into()),
        Some(RobotsResponse::TooManyRedirects) => parts.push("too many redirects".into()),
        None => {}
    }
    if r.failures > 0 {
        parts.push(format!("{} failed tries", r.failures));
    }
    if !r.sitemaps.is_empty() {
        parts.push(format!("{} sitemaps", r.sitemaps.len()));
    }
    parts.join("; ")
}
