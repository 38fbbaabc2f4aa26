//! What the coordinator publishes: the snapshot, the live site table, worker states, shares
//! and rates.
//!
//! Read-only views of the coordinator's state, built a few times a second; nothing here changes
//! what the crawl does. A tick costs what changed: the site table ([`crate::site_table`]) gets
//! only the rows of the sites marked since the last tick, and the counts of sites waiting (on
//! robots.txt, on politeness) that the worker states need are kept up to date as those rows are
//! written, never counted by a walk over every site. Live snapshots carry no site rows
//! (`sites` is empty, `site_count` says how many there are); the final snapshot, an export and
//! `/stats` fill `sites` from the table.

use std::sync::Arc;
use std::time::Duration;

use super::Coordinator;
use crate::engine::model::ResourceState;
use crate::fetch::Phase;
use crate::frontier::{Schedule, SiteId};
use crate::site_table::SiteTable;
use crate::snapshot::{
    Averages, BlockedBy, BusyBy, Commit, HeapRow, Politeness, Rates, Resources, RunState,
    Scheduler, Shares, SiteRow, Snapshot, TaskCounts, WorkerState, Workers,
};
use crate::store::committer::CommitStatus;

/// Samples kept for the 10-second averages (one per snapshot).
const SAMPLES_10S: usize = 100;
/// Rows of the heap in a snapshot.
const HEAP_ROWS: usize = 32;

/// Why a site with queued work is not being fetched, as of its row's last write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Waiting {
    /// Nothing queued, or free to go.
    #[default]
    No,
    /// Its robots.txt is being fetched or waits for a retry.
    Robots,
    /// Its next contact is ahead, or its connections are all in use.
    Politeness,
}

/// The coordinator's side of the live site table: which sites changed since the last tick,
/// and the waiting counts kept up to date as their rows are written.
#[derive(Debug)]
pub(super) struct LiveSites {
    table: Arc<SiteTable>,
    changed: Vec<SiteId>,
    /// By site index: marked in `changed` already.
    marked: Vec<bool>,
    /// By site index: what its row said last.
    waiting: Vec<Waiting>,
    waiting_robots: usize,
    waiting_politeness: usize,
    /// By site index: URLs queued behind its unresolved robots.txt.
    blocked: Vec<u64>,
    /// Their sum: the scheduler's `blocked`.
    blocked_urls: u64,
}

impl LiveSites {
    pub(super) fn new() -> LiveSites {
        LiveSites {
            table: Arc::new(SiteTable::new()),
            changed: Vec::new(),
            marked: Vec::new(),
            waiting: Vec::new(),
            waiting_robots: 0,
            waiting_politeness: 0,
            blocked: Vec::new(),
            blocked_urls: 0,
        }
    }

    pub(super) fn table(&self) -> Arc<SiteTable> {
        self.table.clone()
    }

    /// Notes that a site's row changed: it is written at the next tick.
    pub(super) fn mark(&mut self, site: SiteId) {
        let i = site.index();
        if i >= self.marked.len() {
            self.marked.resize(i + 1, false);
        }
        if !self.marked[i] {
            self.marked[i] = true;
            self.changed.push(site);
        }
    }

    /// Every row changes (the global delay moved): once per command, not per tick.
    pub(super) fn mark_all(&mut self, sites: usize) {
        for i in 0..sites {
            self.mark(SiteId::from_index(i as u32));
        }
    }

    fn set_waiting(&mut self, i: usize, now: Waiting, blocked: u64) {
        if i >= self.waiting.len() {
            self.waiting.resize(i + 1, Waiting::No);
            self.blocked.resize(i + 1, 0);
        }
        self.blocked_urls = self.blocked_urls.saturating_sub(self.blocked[i]) + blocked;
        self.blocked[i] = blocked;
        let count = |c: &mut Self, w: Waiting, up: bool| {
            let n = match w {
                Waiting::No => return,
                Waiting::Robots => &mut c.waiting_robots,
                Waiting::Politeness => &mut c.waiting_politeness,
            };
            *n = if up { *n + 1 } else { n.saturating_sub(1) };
        };
        let before = std::mem::replace(&mut self.waiting[i], now);
        if before != now {
            count(self, before, false);
            count(self, now, true);
        }
    }
}

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
    /// The sites waiting are counted as their rows are written ([`LiveSites`]), not by a walk.
    pub(super) fn worker_states(&self) -> Vec<WorkerState> {
        let (mut waiting_politeness, mut waiting_robots) = if self.paused || self.stopping {
            (0, 0)
        } else {
            (self.live.waiting_politeness, self.live.waiting_robots)
        };
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
            .is_none_or(|(last, ..)| t - last >= 1.0)
        {
            let responses = self.http.status.values().sum();
            self.per_second
                .push_back((t, self.pages_fetched, self.http.bytes, responses));
            while self.per_second.len() > 61 {
                self.per_second.pop_front();
            }
        }
    }

    pub(super) fn workers_view(&self, states: Vec<WorkerState>) -> Workers {
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
        let blocked_urls = self.live.blocked_urls;
        let parsing = workers.busy_by.parsing as u64;
        // A page waiting for the parse pool is a thinker task queued.
        let waiting_parse = workers.blocked_by.parse as u64;
        let spider_assigned = (self.running.len() as u64).saturating_sub(parsing + waiting_parse);
        let spider = TaskCounts {
            queued: (self.frontier.len() as u64).saturating_sub(blocked_urls),
            assigned: spider_assigned,
            done: self.spider_done,
        };
        let thinker = TaskCounts {
            queued: waiting_parse,
            assigned: parsing,
            done: self.thinker_done,
        };
        let st = |s: ResourceState| self.state_counts.get(s);
        let crawl_elapsed_s = self.runs.elapsed_before_s + now.as_secs_f64();
        let mut snap = Snapshot {
            state: self.run_state(),
            elapsed_s: now.as_secs_f64(),
            crawl_elapsed_s,
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
                text_cut: self.commit_status().map_or(0, |c| c.text_cut()),
            },
            errors: self.errors,
            http: self.http.clone(),
            politeness: Politeness {
                delay_ms: self.delay.as_millis() as u64,
                per_site: self.frontier.per_site(),
                max_crawl_delay_ms: self.cfg.max_crawl_delay_ms,
                adaptive_factor: self.cfg.adaptive_delay,
            },
            sites: Vec::new(),
            site_count: self.sites.len() as u64,
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
            cluster: self.cluster_view(),
            fault: self.fault.clone(),
            ended: None,
            averages: Averages::default(),
        };
        snap.averages = Averages::of(&snap);
        snap
    }

    /// Writes the rows of the sites changed since the last tick (and of sites the table has not
    /// seen yet, e.g. restored from a checkpoint) into the live table.
    pub(super) fn publish_sites(&mut self) {
        let now = self.now();
        for i in self.live.table.len()..self.sites.len() {
            self.live.mark(SiteId::from_index(i as u32));
        }
        let changed = std::mem::take(&mut self.live.changed);
        for &site in &changed {
            let i = site.index();
            if i >= self.sites.len() {
                continue;
            }
            self.live.marked[i] = false;
            let Some(v) = self.frontier.site_view(site) else {
                continue;
            };
            let s = &self.sites[i];
            let needs_robots = self.needs_robots(site);
            let waiting = if v.queued == 0 {
                Waiting::No
            } else if needs_robots {
                Waiting::Robots
            } else if v.next_allowed > now || v.in_flight >= self.frontier.per_site() {
                Waiting::Politeness
            } else {
                Waiting::No
            };
            let blocked = if needs_robots { v.queued as u64 } else { 0 };
            let row = SiteRow {
                origin: v.origin.to_string(),
                robots_state: s.robots.state(),
                crawl_delay_ms: s.crawl_delay.map(|c| c.effective.as_millis() as u64),
                crawl_delay_asked_ms: s
                    .crawl_delay
                    .map(|c| u64::try_from(c.requested.as_millis()).unwrap_or(u64::MAX)),
                delay_ms: v.delay.as_millis() as u64,
                delay_source: s.delay_source(self.delay, now),
                queued: v.queued as u64,
                in_flight: v.in_flight as u64,
                fetched: s.fetched,
                errors: s.errors,
                next_allowed_in_ms: 0,
                status: s.status.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                recent_errors: s.recent_errors.iter().cloned().collect(),
                robots_rules: robots_line(
                    &s.robots.summary(),
                    s.robots_via(),
                    &self.policy.user_agent_token,
                ),
            };
            let next_at = v.next_allowed.as_millis() as u64;
            self.live.set_waiting(i, waiting, blocked);
            self.live.table.write(i as u32, row, next_at);
        }
        self.live
            .table
            .publish(now.as_millis() as u64, !changed.is_empty());
        // Keep the allocation for the next tick.
        self.live.changed = changed;
        self.live.changed.clear();
    }

    /// The live site table, for the engine's handle.
    pub(in crate::engine) fn site_table(&self) -> Arc<SiteTable> {
        self.live.table()
    }

    /// A snapshot with every site's row, for the stats file and exports.
    pub(super) fn snapshot_full(&mut self) -> Snapshot {
        self.publish_sites();
        let mut snap = self.snapshot_now();
        snap.sites = self.live.table.rows();
        snap
    }

    /// The committer's status, while it runs or once it has finished.
    pub(super) fn commit_status(&self) -> Option<Arc<CommitStatus>> {
        self.committer
            .as_ref()
            .map(|c| c.status().clone())
            .or_else(|| self.committer_final.clone())
    }

    fn commit_view(&self) -> Commit {
        let status = self.commit_status();
        Commit {
            store: match (&self.cfg.out, self.cfg.store) {
                (None, _) => "none".into(),
                // A folder with no page store still gets the index and the checkpoint.
                (Some(_), crate::store::committer::StoreKind::None) if self.cfg.index => {
                    "index".into()
                }
                (Some(_), crate::store::committer::StoreKind::None) => "checkpoint".into(),
                (Some(_), kind) => kind.name(),
            },
            next_seq: self.window.next_to_commit(),
            waiting: self.window.waiting() as u64,
            in_flight: self.window.in_flight() as u64,
            rescheduled: self.window.reschedules(),
            committed: status.as_ref().map_or(0, |s| s.committed()),
            checkpoints: status.as_ref().map_or(0, |s| s.checkpoints()),
            index: self.cfg.out.is_some() && self.cfg.index,
            error: status.and_then(|s| s.error()),
            run: self.runs.run,
            resumed_from: self.runs.resumed_from,
            refetched: self.runs.refetched,
        }
    }

    pub(super) fn rates(&self, now: Duration) -> Rates {
        let t = now.as_secs_f64();
        // Over the last ~3 seconds, from the once-a-second samples and the live counters.
        let window = self
            .per_second
            .iter()
            .rev()
            .find(|(ts, ..)| t - ts >= 3.0)
            .or(self.per_second.front());
        let responses_now: u64 = self.http.status.values().sum();
        let (pages_per_s, bytes_per_s, responses_per_s) = match window {
            Some(&(ts, pages, bytes, responses)) if t > ts => (
                (self.pages_fetched - pages) as f64 / (t - ts),
                (self.http.bytes - bytes) as f64 / (t - ts),
                responses_now.saturating_sub(responses) as f64 / (t - ts),
            ),
            _ => (0.0, 0.0, 0.0),
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
            responses_per_s,
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
/// The site detail's rules line; `via` is the file that answered when redirects led there,
/// `token` the product token groups are matched against.
fn robots_line(r: &crate::robots::RobotsSummary, via: Option<&url::Url>, token: &str) -> String {
    use crate::robots::RobotsResponse;
    let mut parts = Vec::new();
    match (&r.group, r.rules) {
        (Some(g), Some(c)) => parts.push(format!(
            "group \"{g}\": {} allow, {} disallow",
            c.allow, c.disallow
        )),
        (None, Some(c)) if c.allow + c.disallow == 0 => {
            parts.push(format!("no group for {token}: all allowed"));
        }
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
    if let Some(url) = via {
        parts.push(format!("via {url}"));
    }
    parts.join("; ")
}
