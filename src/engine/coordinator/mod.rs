//! The coordinator: the one task that owns all mutable crawl state.
//!
//! It owns the frontier, the site table, the resources and the counters; workers are tasks in a
//! `JoinSet` that fetch (and parse) one URL and hand back a value. It decides what is fetched
//! next and when, and publishes snapshots. It is a user of the object model (`model.rs`: the
//! rows and their states) and of the frontier boundary ([`Schedule`]: it never reaches into a
//! frontier's queues, spill store or heap). It never blocks on I/O itself (files are written
//! only at export; the page store and the checkpoint are the committer thread's; the built-in
//! frontier's spill file is its spill thread's), with two bounded exceptions: a take whose
//! spilled chunk was not read ahead in time waits for that read (and a spill write waits for
//! room when the spill thread is a whole channel behind); and with a crawl folder, a URL row
//! that left memory is read back (a block of 256 rows from `state.redb`) on the spot, by the
//! URL table. It never holds state that a worker could change
//! behind its back: the only shared cells are the workers' phases, written by each worker and
//! read here.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use url::Url;

mod checkpoint;
pub(super) mod cluster;
mod publish;

use super::export;
use super::model::{Failure, Resource, ResourceState, RobotsMemo, Site, StateCounts};
use super::url_table::UrlTable;
use super::{Command, EngineError, Summary};
use crate::backoff::{Backoff, parse_retry_after};
use crate::canonical::canonicalize;
use crate::config::{CrawlConfig, product_token};
use crate::extract::{ExtractLine, Extraction, Extractor};
use crate::fetch::{
    DroppedBody, FetchConfig, FetchOutcome, Fetched, Fetcher, Phase, PhaseCell,
    ROBOTS_MAX_REDIRECTS, RobotsFetch, RobotsFetched,
};
use crate::frontier::spill::DiskStore;
use crate::frontier::{Frontier, FrontierConfig, Queued, Schedule, SeenMap, SiteId};
use crate::parse::pool::ParsePool;
use crate::parse::{MetaRobots, ParsedPage, Text, Verdict};
use crate::robots::{RobotsOutcome, RobotsPolicy, RobotsResponse, RobotsState, RobotsVerdict};
use crate::scope::{IgnoreReason, ScopeRules};
use crate::snapshot::{
    CommandRecord, CommandSource, DelaySource, Ended, Errors, Fault, FaultKind, Http, LogLine,
    RunState, Shares, Snapshot,
};
use crate::store::checkpoint::{Checkpoint, Found};
use crate::store::commit::{Seq, Window};
use crate::store::committer::{
    CommitItem, CommitStatus, Committer, FetchRecord, FolderLock, Start, StoreError, StoreOptions,
};
use crate::store::warc::Truncation;

/// How often a snapshot is published.
const SNAPSHOT_EVERY: Duration = Duration::from_millis(100);
/// Warnings kept for the log pane.
const LOG_LINES: usize = 50;

/// What a user does about a failed page store, which this run cannot write again.
const STORE_FAILED_HINT: &str = "Stop the crawl and run the same command again once the cause \
    is fixed: it resumes from its last checkpoint, and what this run fetched after it is fetched \
    again.";
/// How long a stop waits for in-flight work before cutting it (a stalled server must not
/// hold the user's terminal for a whole fetch patience).
const STOP_GRACE: Duration = Duration::from_secs(3);
/// A site whose robots.txt redirected to an origin that may not be contacted yet asks again
/// after this (or that origin's next allowed contact, if later).
const HOP_RETRY: Duration = Duration::from_millis(100);

/// How soon a site whose lease may have run out is looked at again (shared crawls).
const LEASE_RECHECK: Duration = Duration::from_millis(50);

/// What a worker hands back.
enum TaskDone {
    Robots { site: SiteId, fetch: RobotsFetched },
    Page(Box<PageDone>),
}

struct PageDone {
    id: u32,
    site: SiteId,
    outcome: FetchOutcome,
    parsed: Option<Result<ParsedPage, String>>,
    /// What `--extract` found on the page, when it is HTML and fields are asked for.
    extracted: Option<Extraction>,
}

/// A worker slot: its phase cell (written by the worker) and whether it holds a task.
#[derive(Debug)]
struct Slots {
    cells: Vec<Arc<PhaseCell>>,
    used: Vec<bool>,
    target: usize,
    in_use: usize,
}

impl Slots {
    fn new(n: usize) -> Slots {
        let mut s = Slots {
            cells: Vec::new(),
            used: Vec::new(),
            target: 0,
            in_use: 0,
        };
        s.resize(n);
        s
    }

    fn resize(&mut self, n: usize) {
        while self.cells.len() < n {
            self.cells.push(Arc::new(PhaseCell::new()));
            self.used.push(false);
        }
        self.target = n;
    }

    fn has_free(&self) -> bool {
        self.in_use < self.target
    }

    fn free(&self) -> usize {
        self.target.saturating_sub(self.in_use)
    }

    fn take(&mut self) -> Option<usize> {
        if !self.has_free() {
            return None;
        }
        let i = self.used.iter().take(self.target).position(|u| !u)?;
        self.used[i] = true;
        self.in_use += 1;
        Some(i)
    }

    /// Frees slot `i`; returns the status of a response its task got headers for and did not
    /// hand back (see [`PhaseCell::take_answered`]), for the caller to count.
    fn release(&mut self, i: usize) -> Option<u16> {
        if self.used.get(i).copied().unwrap_or(false) {
            self.used[i] = false;
            self.in_use -= 1;
            self.cells[i].set(Phase::Idle);
            return self.cells[i].take_answered();
        }
        None
    }
}

/// Per-task bookkeeping, so a task that panics still frees its slot and its site.
#[derive(Debug)]
struct Running {
    slot: usize,
    site: SiteId,
    page: Option<u32>,
    /// The page fetch's place in the commit order.
    seq: Option<Seq>,
    /// Cuts the task when its result is overdue.
    abort: tokio::task::AbortHandle,
}

/// Generic over its frontier, so the per-URL calls to it stay direct.
pub(super) struct Coordinator<F = Frontier<u32>> {
    cfg: CrawlConfig,
    /// Admitted when the run starts, then gone.
    seeds: Vec<Url>,
    /// The seeds for the crawl folder's state, until this run's first checkpoint takes them.
    seeds_unwritten: Option<Vec<u8>>,
    scope: ScopeRules,
    fetcher: Fetcher,
    policy: RobotsPolicy,
    backoff: Backoff,
    frontier: F,
    sites: Vec<Site>,
    /// Every URL's row, packed.
    resources: UrlTable,
    /// Exactly-once: URL fingerprint to row.
    by_url: SeenMap,
    state_counts: StateCounts,
    slots: Slots,
    tasks: JoinSet<TaskDone>,
    running: HashMap<tokio::task::Id, Running>,
    start: Instant,
    paused: bool,
    stopping: bool,
    /// When a stop stops waiting for in-flight work.
    stop_deadline: Option<Instant>,
    delay: Duration,
    admitted: u64,
    errors: Errors,
    http: Http,
    spider_done: u64,
    thinker_done: u64,
    mailto: BTreeSet<String>,
    commands: Vec<CommandRecord>,
    log: VecDeque<LogLine>,
    samples: VecDeque<Shares>,
    /// (seconds since start, pages fetched, bytes, responses) once a second, for rates.
    per_second: VecDeque<(f64, u64, u64, u64)>,
    pages_fetched: u64,
    /// Results in dispatch order, for the committer.
    window: Window<CommitItem>,
    committer: Option<Committer>,
    /// Held while the crawl runs: a second crawltop on the same folder refuses.
    _lock: Option<FolderLock>,
    /// What the crawl is paused on by the engine itself, until a resume takes it back.
    fault: Option<Fault>,
    /// The committer's counters after it finished (for the last snapshot).
    committer_final: Option<Arc<CommitStatus>>,
    /// Sites changed since the last checkpoint (tracked only with a crawl folder).
    dirty_sites: Vec<SiteId>,
    last_checkpoint: Instant,
    runs: checkpoint::Runs,
    /// Bytes of the results waiting in the reorder window.
    window_bytes: u64,
    /// URLs whose overdue fetch was cut: the place in the commit order they keep.
    reserved: HashMap<u32, Seq>,
    /// Fault injection: see [`HANG_ENV`].
    hang_after_fetch: Option<String>,
    /// The threads that parse fetched pages; shut down (joined) when the crawl ends.
    parse_pool: Arc<ParsePool>,
    /// The product token of the crawl's User-Agent, as robots.txt groups are matched against
    /// it: the name a page's robots `<meta>` and `X-Robots-Tag` address the crawl by too.
    agent: Arc<str>,
    /// `--extract`'s fields, run in the parse pool on every HTML page.
    extractor: Option<Arc<Extractor>>,
    /// Fault injection: see [`PARSE_WAITS_ENV`] and [`PARSE_PANICS_ENV`].
    parse_hook: ParseHook,
    /// The crawl folder, when it held an unfinished crawl and this one goes on with it.
    resuming: Option<std::path::PathBuf>,
    /// URLs a resumed crawl's first run left out, to judge again once this run's seeds are in
    /// (`checkpoint::rejudge`): a new seed goes before them under a raised limit.
    rejudge: Vec<u32>,
    /// The live site table and what changed since the last tick.
    live: publish::LiveSites,
    /// The shared crawl this member works on (`--cluster`), through its agent.
    cluster: Option<cluster::Link>,
    /// The site [`Coordinator::site_for`] answered last.
    last_site: Option<SiteId>,
}

/// Added to a fetch's patience (`--timeout-ms`) before its result counts as overdue.
const COMMIT_MARGIN: Duration = Duration::from_secs(1);
/// Most bytes of results waiting in the reorder window behind an earlier one before new
/// fetches wait (the count is `--commit-window`).
const WINDOW_MAX_BYTES: u64 = 64 << 20;

/// Dispatches of one fetch whose result never comes before the URL is given up.
const MAX_ATTEMPTS: u32 = 3;

/// Set in the environment to a number of bytes, the budget of URL rows a crawl with a folder
/// keeps in memory: how the tests make rows leave memory and come back all the time.
pub const URL_CACHE_ENV: &str = "CRAWLTOP_TEST_URL_CACHE_BYTES";

/// Set in the environment to a number N: once N chunks of URL rows were read back from the
/// state file, every read back fails (how the tests prove a row that cannot be read back
/// pauses the crawl instead of going out as an empty URL). Needs a crawl folder.
pub const URL_READ_FAILS_ENV: &str = "CRAWLTOP_TEST_URL_READ_FAILS_AFTER";

/// Set in the environment to a URL, the worker that fetched it never answers: how the tests
/// prove that an overdue result is dispatched again (a hung parser cannot be had on demand).
pub const HANG_ENV: &str = "CRAWLTOP_TEST_HANG_AFTER_FETCH";

/// Set in the environment to `URL PATH`, the parse of URL waits (on its pool thread) until PATH
/// exists: how the tests hold the parse pool full on demand and watch workers wait for it.
pub const PARSE_WAITS_ENV: &str = "CRAWLTOP_TEST_PARSE_WAITS";

/// Set in the environment to a URL, its parse panics: how the tests prove a parser failure
/// ends the URL with a reason and costs the pool no thread.
pub const PARSE_PANICS_ENV: &str = "CRAWLTOP_TEST_PARSE_PANICS";

/// The parse faults the tests inject, read from the environment once.
#[derive(Debug, Clone, Default)]
struct ParseHook {
    waits: Option<(String, std::path::PathBuf)>,
    panics: Option<String>,
}

impl ParseHook {
    fn from_env() -> ParseHook {
        let waits = std::env::var(PARSE_WAITS_ENV).ok().and_then(|v| {
            let (url, path) = v.split_once(' ')?;
            Some((url.to_string(), std::path::PathBuf::from(path)))
        });
        ParseHook {
            waits,
            panics: std::env::var(PARSE_PANICS_ENV).ok(),
        }
    }

    /// What the parse of `url` must do before parsing, run on its pool thread.
    fn for_url(&self, url: &Url) -> impl FnOnce() + Send + 'static {
        let wait = self
            .waits
            .as_ref()
            .filter(|(u, _)| u == url.as_str())
            .map(|(_, path)| path.clone());
        let panic = self.panics.as_deref() == Some(url.as_str());
        move || {
            if let Some(path) = wait {
                // Bounded, so a test that fails before opening the gate still ends.
                let until = std::time::Instant::now() + Duration::from_secs(60);
                while !path.exists() && std::time::Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            assert!(!panic, "injected parser panic");
        }
    }
}

/// Whether `url` has the origin of `site` (a site's origin URL): for http(s), what comparing
/// their `origin()`s says, without building either.
fn same_origin(site: &Url, url: &Url) -> bool {
    matches!(url.scheme(), "http" | "https")
        && site.scheme() == url.scheme()
        && site.host_str() == url.host_str()
        && site.port_or_known_default() == url.port_or_known_default()
}

/// Whether a URL left out for `reason` may come back: a shorter path, a seed added on a resume,
/// or (in a shared crawl) another member's push may change it.
fn readmissible(reason: Option<IgnoreReason>) -> bool {
    matches!(
        reason,
        Some(
            IgnoreReason::TooDeep
                | IgnoreReason::OutOfScope
                | IgnoreReason::PageLimit
                | IgnoreReason::SitePageLimit
        )
    )
}

fn fingerprint(url: &str) -> u64 {
    crate::frontier::fingerprint(url)
}

impl Coordinator {
    /// A coordinator over today's frontier (Mercator's queues, spilling under a crawl folder).
    pub(super) fn new(cfg: CrawlConfig) -> Result<Coordinator, EngineError> {
        Coordinator::with_frontier(cfg, frontier)
    }
}

impl<F: Schedule> Coordinator<F> {
    /// A coordinator over the frontier `make` builds from the settings and the global delay,
    /// once the crawl folder (if any) is locked and read.
    pub(super) fn with_frontier(
        mut cfg: CrawlConfig,
        make: impl FnOnce(&CrawlConfig, Duration) -> Result<F, EngineError>,
    ) -> Result<Coordinator<F>, EngineError> {
        // Nowhere to put the stats is known now, not after the crawl.
        super::export::check_writable(&cfg)?;
        // The crawl folder first: a resume brings its own seeds.
        let (lock, restored, start) = match &cfg.out {
            Some(dir) => {
                let (lock, restored, start) = open_folder(dir, cfg.fresh)?;
                (Some(lock), restored, start)
            }
            None => (None, None, Start::Fresh),
        };
        if let Some(r) = &restored {
            cfg.seeds = with_seeds_of(r, std::mem::take(&mut cfg.seeds));
        }
        let seeds = cfg.validate()?;
        let (include, exclude) = cfg.regexes()?;
        let scope = ScopeRules::new(cfg.scope, &seeds, include, exclude, cfg.depth);
        let fetcher = fetcher(&cfg)?;
        let agent: Arc<str> = Arc::from(product_token(&cfg.user_agent));
        let mut policy = RobotsPolicy::new(&*agent);
        policy.max_crawl_delay = Duration::from_millis(cfg.max_crawl_delay_ms);
        policy.max_retries = cfg.robots_retries;
        let delay = cfg.delay();
        let frontier = make(&cfg, delay)?;
        let workers = cfg.workers;
        let (parse_pool, extractor) = (parse_pool(&cfg)?, cfg.extractor()?.map(Arc::new));
        let committer = committer(&cfg, &start)?;
        let first_seq = match &start {
            Start::Resume(mark) => mark.seq,
            Start::Fresh => 0,
        };
        let seeds_unwritten = committer.as_ref().map(|_| {
            let seeds: Vec<&str> = seeds.iter().map(Url::as_str).collect();
            serde_json::to_vec(&seeds).unwrap_or_default()
        });
        let mut coordinator = Coordinator {
            cfg,
            seeds,
            seeds_unwritten,
            scope,
            fetcher,
            policy,
            backoff: Backoff::default(),
            frontier,
            sites: Vec::new(),
            resources: UrlTable::default(),
            by_url: SeenMap::new(),
            state_counts: StateCounts::default(),
            slots: Slots::new(workers),
            tasks: JoinSet::new(),
            running: HashMap::new(),
            start: Instant::now(),
            paused: false,
            stopping: false,
            stop_deadline: None,
            delay,
            admitted: 0,
            errors: Errors::default(),
            http: Http::default(),
            spider_done: 0,
            thinker_done: 0,
            mailto: BTreeSet::new(),
            commands: Vec::new(),
            log: VecDeque::new(),
            samples: VecDeque::new(),
            per_second: VecDeque::new(),
            pages_fetched: 0,
            window: Window::new(first_seq),
            committer,
            _lock: lock,
            fault: None,
            committer_final: None,
            dirty_sites: Vec::new(),
            last_checkpoint: Instant::now(),
            window_bytes: 0,
            reserved: HashMap::new(),
            hang_after_fetch: std::env::var(HANG_ENV).ok(),
            parse_pool,
            agent,
            extractor,
            parse_hook: ParseHook::from_env(),
            resuming: None,
            rejudge: Vec::new(),
            live: publish::LiveSites::new(),
            cluster: None,
            last_site: None,
            runs: checkpoint::Runs {
                run: 1,
                ..checkpoint::Runs::default()
            },
        };
        if let Some(r) = restored {
            coordinator.resuming.clone_from(&coordinator.cfg.out);
            coordinator.restore(r);
            coordinator.note_unmirrored();
        }
        if let Some(c) = &coordinator.committer {
            read_back_rows(&mut coordinator.resources, c);
        }
        Ok(coordinator)
    }

    /// Says how many files the resume removed from the mirror, if any.
    fn note_unmirrored(&mut self) {
        let n = (self.committer.as_ref()).map_or(0, Committer::unmirrored);
        if n > 0 {
            let files = if n == 1 { "file" } else { "files" };
            self.note(format!(
                "{n} {files} mirrored after the last checkpoint removed from pages/: their pages \
                 are fetched again"
            ));
        }
    }

    /// `--max-pages`, crawl-wide in a shared crawl.
    pub(super) fn max_pages(&self) -> Option<u64> {
        self.cfg.max_pages
    }

    /// `--max-pages-per-site`, crawl-wide in a shared crawl.
    pub(super) fn max_pages_per_site(&self) -> Option<u64> {
        self.cfg.max_pages_per_site
    }

    /// Whether an export has a file to write.
    pub(super) fn exports(&self) -> bool {
        export::files(&self.cfg).next().is_some()
    }

    /// The crawl folder whose unfinished crawl this one goes on with.
    pub(super) fn resuming(&self) -> Option<&std::path::Path> {
        self.resuming.as_deref()
    }

    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    pub(super) async fn run(
        mut self,
        mut commands: mpsc::UnboundedReceiver<(Command, CommandSource)>,
        snapshots: watch::Sender<Arc<Snapshot>>,
        abort: CancellationToken,
    ) -> Result<Summary, EngineError> {
        self.start = Instant::now();
        self.admit_seeds();
        let left_out = std::mem::take(&mut self.rejudge);
        self.rejudge(left_out);
        let mut tick = tokio::time::interval(SNAPSHOT_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut commands_open = true;
        let completed = loop {
            self.dispatch();
            self.flush_cluster();
            // In a shared crawl, an empty frontier here is not the end: the crawl-wide one is.
            let ended = self.frontier.is_empty()
                && self.cluster.as_ref().is_none_or(cluster::Link::finished);
            if self.tasks.is_empty() && (self.stopping || ended) {
                break !self.stopping;
            }
            let store_full = self.store_full();
            let wake = (!self.paused
                && !self.stopping
                && self.slots.has_free()
                && !store_full
                && !self.cluster_waits())
            .then(|| self.frontier.next_ready_at())
            .flatten()
            .map(|t| self.start + t);
            let status = self.committer.as_ref().map(|c| c.status().clone());
            tokio::select! {
                biased;
                () = abort.cancelled() => {
                    self.tasks.abort_all();
                    break false;
                }
                cmd = commands.recv(), if commands_open => match cmd {
                    Some((c, source)) => self.command(c, source),
                    None => commands_open = false,
                },
                // Before the results: while results keep coming faster than they are handled
                // (a page of a thousand links, a slow build), a later arm would never fire, and
                // the snapshots, checkpoints and overdue checks would stop.
                _ = tick.tick() => {
                    // Before the checkpoint, so that its rows carry the reasons.
                    self.note_text_cuts();
                    if self.last_checkpoint.elapsed() >= self.cfg.checkpoint_every() {
                        self.last_checkpoint = Instant::now();
                        self.checkpoint();
                    }
                    self.reschedule_overdue();
                    self.check_store();
                    self.check_read_back();
                    self.publish_sites();
                    self.sample();
                    self.beat(false);
                    snapshots.send_replace(Arc::new(self.snapshot_now()));
                }
                Some(done) = self.tasks.join_next_with_id() => self.on_task(done),
                Some(msg) = cluster::from_agent(self.cluster.as_mut()) => self.on_agent(msg),
                () = sleep_until(wake) => {}
                () = drained(status.as_deref()), if store_full => {}
                () = sleep_until(self.stop_deadline), if !self.tasks.is_empty() => {
                    self.end_grace();
                }
            }
        };
        self.forget_aborted();
        // Where the crawl stands while it winds down (a hand-back may take its patience's
        // worth): observers see it stopping with its numbers, not an older snapshot.
        self.sample();
        snapshots.send_replace(Arc::new(self.snapshot_now()));
        // What ended is finished crawl-wide once stored, the rest handed back, before the stats
        // are final.
        if !abort.is_cancelled() {
            self.store_before_leaving().await;
        }
        self.leave_cluster().await;
        // No thread left behind: the pool's threads finish what they hold and are joined.
        self.parse_pool.shutdown();
        // Every page durable, the crawl not yet marked finished: that comes after the exports,
        // so that a crawl killed before them is resumed and writes them.
        self.checkpoint();
        let stored = self.close_store();
        // The index has seen every page now: the last cuts reach the records the URL file and
        // the stats are written from.
        self.note_text_cuts();
        self.sample();
        let mut last = self.snapshot_full();
        last.state = RunState::Finished;
        last.ended = Some(if completed {
            Ended::Completed
        } else {
            Ended::Stopped
        });
        let last = Arc::new(last);
        snapshots.send_replace(last.clone());
        let summary = Summary {
            snapshot: last,
            completed,
            mailto: self.mailto.iter().cloned().collect(),
        };
        self.export(&summary)?;
        if completed
            && let Some(state) = stored
            && let Err(e) = state.mark_finished()
        {
            // Left unfinished: the same command again resumes it, finds nothing to do, and
            // marks it.
            self.warn(format!("the crawl could not be marked finished: {e}"));
        }
        Ok(summary)
    }

    /// Ends the page store once it has written everything handed over. Returns the state file,
    /// to be marked finished after the exports, when the store holds every page.
    fn close_store(&mut self) -> Option<crate::store::checkpoint::UrlReader> {
        let c = self.committer.take()?;
        let status = c.status().clone();
        let state = c.url_reader();
        let failed = c.finish();
        self.committer_final = Some(status);
        match failed {
            Some(e) => {
                self.warn(format!("the page store failed: {e}"));
                None
            }
            None => Some(state),
        }
    }

    /// Aborted tasks are gone: frees what they held so the final numbers add up (an answer
    /// one of them had is counted, as the server counted it).
    fn forget_aborted(&mut self) {
        let running = std::mem::take(&mut self.running);
        if !running.is_empty() {
            self.warn(format!(
                "ended at once: {} under way cut{}",
                plural(running.len(), "request"),
                self.fetched_again()
            ));
        }
        let now = self.now();
        for (_, r) in running {
            if let Some(status) = self.slots.release(r.slot) {
                self.count_answer(r.site, r.page, status);
            }
            // Not in flight any more: the final site rows say so.
            self.frontier.complete(r.site, now);
            self.live.mark(r.site);
            if let Some(seq) = r.seq {
                self.window.skip(seq);
            }
        }
        for (_, seq) in std::mem::take(&mut self.reserved) {
            self.window.skip(seq);
        }
        self.flush_window();
    }

    /// The stop's grace is over: what is still under way is cut, and the log says so.
    fn end_grace(&mut self) {
        let cut = self.tasks.len();
        self.tasks.abort_all();
        self.stop_deadline = None;
        self.warn(format!(
            "stopping: {} still under way after {} s cut{}",
            plural(cut, "request"),
            STOP_GRACE.as_secs(),
            self.fetched_again()
        ));
    }

    /// What becomes of requests a stop cut, for the line that says so.
    fn fetched_again(&self) -> &'static str {
        if self.cfg.out.is_some() {
            "; a resume of this folder asks them again"
        } else {
            " (no crawl folder: they are not asked again)"
        }
    }

    fn command(&mut self, command: Command, source: CommandSource) {
        // Leaving a crawl of one's own is stopping it.
        let command = match command {
            Command::Leave if self.cluster.is_none() => Command::Stop,
            other => other,
        };
        // In a shared crawl, a command for the whole crawl is applied when it comes back from
        // the crawl's command log, here as in every member.
        if self.share_command(command, source) {
            return;
        }
        self.record_command(command, source, None);
        self.apply(command);
    }

    fn record_command(&mut self, command: Command, source: CommandSource, by: Option<String>) {
        self.commands.push(CommandRecord {
            at_s: self.now().as_secs_f64(),
            source,
            command: command.to_string(),
            by,
        });
    }

    fn apply(&mut self, command: Command) {
        match command {
            Command::Pause => self.paused = true,
            Command::Resume => {
                if let Some(e) = self.committer.as_ref().and_then(|c| c.status().error()) {
                    // The committer ended on its error: whatever is fetched from here on could
                    // not be stored, only fetched again by the next run.
                    self.warn(format!(
                        "the crawl stays paused: the page store failed ({e}) and this run cannot \
                         store pages any more. {STORE_FAILED_HINT}"
                    ));
                    return;
                }
                self.paused = false;
                if self.frontier.spill_error().is_some() {
                    // The user freed space (say): try the spill file again; a new failure
                    // pauses again.
                    self.frontier.retry_spill();
                }
                // The state file is read again as rows are needed; a new failure pauses again.
                self.fault = None;
            }
            Command::SetDelay(d) => {
                self.delay = d;
                self.frontier.set_default_delay(d);
                self.live.mark_all(self.sites.len());
            }
            Command::SetWorkers(n) => {
                let n = n.clamp(1, crate::config::MAX_WORKERS);
                self.slots.resize(n);
                // Mercator's B follows the workers: more sites may be scheduled at once.
                self.frontier.set_back_queues(back_queues(n));
            }
            Command::Stop | Command::Leave => {
                if !self.stopping {
                    self.stopping = true;
                    self.stop_deadline = Some(Instant::now() + STOP_GRACE);
                }
            }
            Command::Export => {
                let mut snap = self.snapshot_full();
                snap.state = self.run_state();
                let summary = Summary {
                    snapshot: Arc::new(snap),
                    completed: false,
                    mailto: self.mailto.iter().cloned().collect(),
                };
                if let Err(e) = self.export(&summary) {
                    self.warn(format!("export failed: {e}"));
                }
            }
        }
    }

    fn export(&self, summary: &Summary) -> Result<(), EngineError> {
        export::write_all(&self.cfg, summary, &self.resources, self.start_wall())
    }

    fn start_wall(&self) -> SystemTime {
        crate::clock::wall() - self.now()
    }

    fn warn(&mut self, message: String) {
        tracing::warn!("{message}");
        self.show_warning(message);
    }

    /// What the user should know and need not act on, in the crawl's log and the snapshot's.
    fn note(&mut self, message: String) {
        tracing::info!("{message}");
        self.push_log("info", message);
    }

    /// A warning for the snapshot's log (the dashboard's log pane, the stats file) only: for
    /// what another thread already wrote to the crawl's log.
    fn show_warning(&mut self, message: String) {
        self.push_log("warn", message);
    }

    fn push_log(&mut self, level: &str, message: String) {
        self.log.push_back(LogLine {
            at_s: self.now().as_secs(),
            level: level.into(),
            message,
        });
        while self.log.len() > LOG_LINES {
            self.log.pop_front();
        }
    }

    fn set_state(&mut self, id: u32, state: ResourceState) {
        let counts = &mut self.state_counts;
        self.resources.update(id, |r| counts.change(r, state));
        self.touch(id);
        self.pulled_ended(id, state);
    }

    fn ignore(&mut self, id: u32, reason: IgnoreReason) {
        self.errors.ignored += 1;
        if matches!(reason, IgnoreReason::TooManyRedirects) {
            self.errors.too_many_redirects += 1;
        }
        self.resources.update(id, |r| {
            r.reason = Some(reason.to_string().into());
            r.ignored = Some(reason);
        });
        self.set_state(id, ResourceState::FetchIgnored);
    }

    fn site_for(&mut self, url: &Url) -> SiteId {
        // The links of one page mostly share its origin: the last site answers most of them
        // without building the origin's text.
        if let Some(site) = self.last_site
            && self
                .sites
                .get(site.index())
                .is_some_and(|s| same_origin(&s.origin, url))
        {
            return site;
        }
        let origin = url.origin().ascii_serialization();
        let id = self.frontier.site(&origin);
        if id.index() == self.sites.len() {
            let mut o = url.clone();
            o.set_path("/");
            o.set_query(None);
            self.sites.push(Site::new(o, self.cfg.ignore_robots));
        }
        self.last_site = Some(id);
        id
    }

    /// Admits this run's seeds, and says which of them are left out and why (a URL too long,
    /// an `--exclude` that matches one, a `--max-pages` below their number): the first few by
    /// URL.
    fn admit_seeds(&mut self) {
        const NAMED: usize = 3;
        let (mut named, mut ignored) = (Vec::new(), 0u64);
        for mut seed in std::mem::take(&mut self.seeds) {
            canonicalize(&mut seed);
            let key = fingerprint(seed.as_str());
            self.admit_canonical(&seed, key, 0, None, 0);
            let Some(reason) = self
                .by_url
                .get(key)
                .and_then(|id| self.resources.get(id).ignored)
            else {
                continue;
            };
            ignored += 1;
            if named.len() < NAMED {
                // A URL of thousands of bytes is named by its start.
                let mut shown = seed.to_string();
                if shown.len() > 200 {
                    let cut = (0..=200).rev().find(|&i| shown.is_char_boundary(i));
                    shown.truncate(cut.unwrap_or(0));
                    shown.push_str("...");
                }
                named.push(format!("{shown} ({reason})"));
            }
        }
        if ignored > 0 {
            let more = ignored - named.len() as u64;
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            let seeds = if ignored == 1 { "seed" } else { "seeds" };
            self.warn(format!(
                "{ignored} {seeds} left out: {}{more}",
                named.join(", ")
            ));
        }
    }

    /// Decides on a URL: new or seen, in scope or not, under the limits; queues it if so.
    fn admit(&mut self, mut url: Url, depth: u32, referrer: Option<u32>, hops: u8) {
        canonicalize(&mut url);
        let key = fingerprint(url.as_str());
        self.admit_canonical(&url, key, depth, referrer, hops);
    }

    /// [`Coordinator::admit`] for a canonical URL and its fingerprint.
    fn admit_canonical(
        &mut self,
        url: &Url,
        key: u64,
        depth: u32,
        referrer: Option<u32>,
        hops: u8,
    ) {
        if let Some(id) = self.by_url.get(key) {
            self.rediscover(id, depth, referrer);
            return;
        }
        // Shared: it becomes a row here when this member pulls it (or is ignored, below).
        if self.cluster.is_some() && self.admit_shared(url, key, depth, referrer, hops) {
            return;
        }
        // Decided before the row is written, so that a new URL's row is written once.
        let verdict = if hops > 0 && u32::from(hops) > self.cfg.max_redirects {
            Err(IgnoreReason::TooManyRedirects)
        } else {
            (self.scope.check(url, depth)).and_then(|()| self.placement(url))
        };
        let mut r = Resource::discovered(depth, referrer, hops);
        r.site = verdict.ok();
        self.state_counts.add(&r);
        let id = self.resources.push(url.as_str(), &r);
        self.by_url.insert(key, id);
        self.touch(id);
        match verdict {
            Ok(site) => self.queue(id, site, url, depth),
            Err(reason) => self.ignore(id, reason),
        }
    }

    /// A URL seen before, found again: a shorter path lowers its depth (and makes its referrer
    /// the page on that path), and a URL cut as too deep comes back when the shorter path
    /// brings it within the limit.
    fn rediscover(&mut self, id: u32, depth: u32, referrer: Option<u32>) {
        if depth >= self.resources.depth(id) {
            return;
        }
        let mut r = self.resources.get(id);
        if matches!(
            r.state,
            ResourceState::Parsed | ResourceState::ParseIgnored | ResourceState::ParseError
        ) {
            // Its links were judged at its depth already: the row keeps it, so that their
            // depths (and those past the limit) follow from it (audit 27: rows said 2 where
            // the links had been judged at 3 + 1).
            return;
        }
        self.touch(id);
        r.depth = depth;
        // The page that led to it at this depth (its record says depth = referrer's + 1).
        r.referrer = referrer;
        self.resources.set(id, &r);
        if readmissible(r.ignored) {
            self.readmit(id);
        } else if r.state == ResourceState::Discovered
            && self.pulled_here(id)
            && let Ok(url) = Url::parse(&self.resources.url(id))
        {
            // Pulled here, not fetched yet: the crawl learns the shorter depth too, so that the
            // URL goes back at it if this member hands the site back before fetching it.
            self.push_shared(&url, fingerprint(url.as_str()), depth, referrer, r.hops);
        }
    }

    /// Queues row `id`, ignored before, if the scope and the limits let it in now (as if found
    /// now, at its depth); otherwise it takes the reason that holds now (a URL no longer too
    /// deep may be over a page limit).
    pub(super) fn readmit(&mut self, id: u32) {
        let Ok(url) = Url::parse(&self.resources.url(id)) else {
            return;
        };
        let depth = self.resources.depth(id);
        if self.cluster.is_some() {
            // Shared: the crawl's queue says who fetches it, under its site's lease; the row
            // stays ignored until it is pulled here (`take_back_ignored`), if ever.
            let r = self.resources.get(id);
            if self.admit_shared(&url, fingerprint(url.as_str()), depth, r.referrer, r.hops) {
                return;
            }
        }
        let site = match (self.scope.check(&url, depth)).and_then(|()| self.placement(&url)) {
            Ok(site) => site,
            Err(reason) => {
                // Still ignored, and counted once: only its reason may change.
                if self.resources.get(id).ignored != Some(reason) {
                    self.resources.update(id, |r| {
                        r.reason = Some(reason.to_string().into());
                        r.ignored = Some(reason);
                    });
                    self.touch(id);
                }
                return;
            }
        };
        self.resources.update(id, |r| {
            r.reason = None;
            r.ignored = None;
            r.site = Some(site);
        });
        self.errors.ignored = self.errors.ignored.saturating_sub(1);
        self.set_state(id, ResourceState::Discovered);
        self.queue(id, site, &url, depth);
    }

    /// Queues row `id` (written before) under the limits, or ignores it.
    fn enqueue(&mut self, id: u32, url: &Url) {
        match self.placement(url) {
            Ok(site) => {
                let depth = self.resources.update(id, |r| {
                    r.site = Some(site);
                    r.depth
                });
                self.queue(id, site, url, depth);
            }
            Err(reason) => self.ignore(id, reason),
        }
    }

    /// The site a URL in scope is queued under, or the limit that stops it. In a shared crawl
    /// the limits are the crawl's, kept by the pulls (a URL over one never comes to be queued
    /// here), not this member's own count.
    fn placement(&mut self, url: &Url) -> Result<SiteId, IgnoreReason> {
        let shared = self.cluster.is_some();
        if !shared && self.cfg.max_pages.is_some_and(|max| self.admitted >= max) {
            return Err(IgnoreReason::PageLimit);
        }
        let site = self.site_for(url);
        if !shared
            && self
                .cfg
                .max_pages_per_site
                .is_some_and(|max| self.sites[site.index()].admitted >= max)
        {
            return Err(IgnoreReason::SitePageLimit);
        }
        Ok(site)
    }

    /// Queues row `id`, whose row already names `site`.
    fn queue(&mut self, id: u32, site: SiteId, url: &Url, depth: u32) {
        self.admitted += 1;
        self.sites[site.index()].admitted += 1;
        let queued = Queued {
            id,
            url: url.as_str(),
            depth,
        };
        self.frontier.push(site, queued);
        self.touch(id);
        self.touch_site(site);
    }

    /// RFC 9309 section 2.4: a robots.txt asked again for its age that cannot be had
    /// (unreachable, 5xx, 429) may be obeyed as it was: `kept` (its rules and memo) is put back,
    /// for another age. The failure still backs the site off for `after` (its Retry-After or
    /// the first backoff), as on a first try, and the age counts from the end of that wait, so
    /// that the site's pages are taken before it is asked again.
    fn keep_robots(
        &mut self,
        site: SiteId,
        kept: (crate::robots::SiteRobots, RobotsMemo),
        wall_ms: u64,
        after: Duration,
        now: Duration,
    ) {
        let s = &mut self.sites[site.index()];
        let (robots, memo) = kept;
        s.robots = robots;
        let after_ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
        s.robots_memo = memo.dated(wall_ms.saturating_add(after_ms));
        if !after.is_zero() {
            s.pushback = Some((DelaySource::Backoff, now + after));
            self.frontier.defer(site, now + after);
        }
        let origin = s.origin.clone();
        self.warn(format!(
            "{origin}: robots.txt could not be fetched again; its last answer is obeyed for \
             another {} s",
            self.cfg.robots_max_age_ms / 1_000
        ));
        self.frontier.unhold(site, now);
        self.share_politeness(site);
        if !after.is_zero() {
            self.share_next_contact(site);
        }
    }

    fn needs_robots(&self, site: SiteId) -> bool {
        let s = &self.sites[site.index()];
        match s.robots.state() {
            RobotsState::Discovered => true,
            RobotsState::Error => !s.robots_gave_up,
            // An answer older than `--robots-max-age-ms` is asked again (RFC 9309 2.4).
            RobotsState::Handled | RobotsState::Unexisting => {
                s.robots_memo.answered_ms().is_some_and(|at| {
                    let now = crate::clock::ms_since_epoch(crate::clock::wall());
                    now.saturating_sub(at) >= self.cfg.robots_max_age_ms
                })
            }
            RobotsState::Skipped => false,
        }
    }

    /// Hands out every slot the frontier has ready, while workers are free.
    fn dispatch(&mut self) {
        if self.paused || self.stopping || self.store_full() || self.cluster_waits() {
            return;
        }
        let now = self.now();
        // A contact may pause the crawl (a URL row that cannot be read back).
        while self.slots.has_free() && !self.paused {
            let Some(site) = self.frontier.next_site(now) else {
                break;
            };
            if self.lease_stale(site) {
                // The contact is not used: given back (it counted as one in flight, and a
                // site at its `--per-site` limit would never be given one again), and the site
                // looked at again shortly: by then renewed, or lost and handed over.
                self.frontier.complete(site, now);
                self.frontier.defer(site, now + LEASE_RECHECK);
                continue;
            }
            self.use_contact(site, now);
        }
    }

    /// A site may be contacted once now: for its robots.txt, or for its next allowed page.
    fn use_contact(&mut self, site: SiteId, now: Duration) {
        self.live.mark(site);
        if self.owed_hop(site, now) {
            return;
        }
        if self.needs_robots(site) {
            self.robots_contact(site, now);
            return;
        }
        // Resolved here or elsewhere (skipped, a resume, another member of a shared crawl).
        self.frontier.answered(site);
        loop {
            let Some(id) = self.frontier.take(site) else {
                // Everything queued here was forbidden: the contact was not used.
                self.frontier.complete(site, now);
                return;
            };
            let Ok(url) = self.resources.try_url(id) else {
                // Its row is in the state file and cannot be read: the URL keeps its place and
                // the crawl pauses, saying why; it is never fetched as an empty URL.
                self.frontier.push_first(site, id);
                self.frontier.complete(site, now);
                self.check_read_back();
                return;
            };
            let Ok(url) = Url::parse(&url) else {
                self.set_state(id, ResourceState::FetchError);
                continue;
            };
            match self.sites[site.index()].robots.verdict(&url) {
                RobotsVerdict::Allowed => {
                    self.spawn_page(site, id, url);
                    return;
                }
                RobotsVerdict::Disallowed | RobotsVerdict::Pending => {
                    let s = &self.sites[site.index()];
                    let reason = if s.robots_gave_up {
                        self.errors.robots_unreachable += 1;
                        gave_up_reason(s.robots.summary().last_response)
                    } else {
                        self.errors.robots_forbidden += 1;
                        "disallowed by robots.txt".to_string()
                    };
                    self.resources
                        .update(id, |r| r.reason = Some(reason.into()));
                    self.set_state(id, ResourceState::FetchForbidden);
                }
            }
        }
    }

    /// The contact `site` was given goes to its robots.txt: `/robots.txt`, or where it
    /// redirected. A hop to another origin is a contact of that origin instead, under its
    /// politeness (RFC 9309 lets redirects cross origins; the site they land on is owed its
    /// delay and its `--per-site` limit like any other): when that origin may not be contacted
    /// now, `site` waits for it.
    fn robots_contact(&mut self, site: SiteId, now: Duration) {
        let s = &self.sites[site.index()];
        let url = match s.robots_next() {
            Some((url, _)) => url.clone(),
            None => match s.origin.join("/robots.txt") {
                Ok(url) => url,
                // An origin always takes a path; should it not, there is nothing to ask.
                Err(e) => {
                    let fetch = RobotsFetch::Unreachable(format!("{}: {e}", s.origin));
                    self.frontier.complete(site, now);
                    let fetched = RobotsFetched {
                        fetch,
                        responses: Vec::new(),
                    };
                    self.on_robots(site, site, fetched, None, now);
                    return;
                }
            },
        };
        let target = if same_origin(&s.origin, &url) {
            site
        } else {
            let target = self.site_for(&url);
            // This site's contact is not used: the request goes to the other origin.
            self.frontier.complete(site, now);
            if let Some(answer) = self.robots_answer_of(target, &url) {
                // That origin's own robots.txt, already answered in this crawl: the same file,
                // so no request (`http://` to `https://` of one host is the common case).
                let fetched = RobotsFetched {
                    fetch: answer,
                    responses: Vec::new(),
                };
                self.on_robots(site, site, fetched, None, now);
                return;
            }
            if !self.frontier.try_contact(target, now) {
                // It waits in that origin's line: its next turn goes to the hop first (else its
                // own URLs could take every turn), or, with none queued there, this site asks
                // again when the origin's time comes.
                // Once in the line (its own mark, not a search: 100,000 sites may wait there).
                if self.sites[site.index()].waiting_at != Some(target) {
                    self.sites[site.index()].waiting_at = Some(target);
                    self.sites[target.index()].hops_waiting.push_back(site);
                }
                let at = self.frontier.next_allowed(target).max(now + HOP_RETRY);
                self.frontier.defer(site, at);
                self.touch_site(target);
                return;
            }
            // Out of the line, if it was in it: its entry is passed over when it comes up.
            self.sites[site.index()].waiting_at = None;
            target
        };
        self.spawn_robots(site, url, target, now);
    }

    /// The contact `target` was given goes to a robots.txt hop another site waits to make
    /// there, if one does (the longest waiting first). False when none is owed.
    fn owed_hop(&mut self, target: SiteId, now: Duration) -> bool {
        while let Some(waiting) = self.sites[target.index()].hops_waiting.pop_front() {
            // An entry it left (its hop was made another way) is passed over.
            if self.sites[waiting.index()].waiting_at.take() != Some(target) {
                continue;
            }
            let owed = self.sites[waiting.index()]
                .robots_next()
                .filter(|(url, _)| same_origin(&self.sites[target.index()].origin, url))
                .map(|(url, _)| url.clone());
            // Resolved meanwhile, or its chain went on elsewhere.
            let Some(url) = owed.filter(|_| self.needs_robots(waiting)) else {
                continue;
            };
            self.spawn_robots(waiting, url, target, now);
            return true;
        }
        false
    }

    /// Fetches `url` for `site`'s robots.txt under a contact of `target` (the site itself, or
    /// the origin a hop lands on), holding `site` until the answer is in.
    fn spawn_robots(&mut self, site: SiteId, url: Url, target: SiteId, now: Duration) {
        // No other contact until robots.txt is resolved.
        self.frontier.hold(site);
        let Some(slot) = self.slots.take() else {
            // Unreachable by construction (dispatch checks for a free slot).
            self.frontier.complete(target, now);
            self.frontier.unhold(site, now);
            return;
        };
        let fetcher = self.fetcher.clone();
        let cell = self.slots.cells[slot].clone();
        let handle = self.tasks.spawn(async move {
            let fetch = fetcher.robots(&url, &cell).await;
            TaskDone::Robots { site, fetch }
        });
        self.running.insert(
            handle.id(),
            Running {
                slot,
                site: target,
                page: None,
                seq: None,
                abort: handle,
            },
        );
    }

    /// The answer `target`'s robots.txt gave in this crawl, when `url` is that file and it was
    /// resolved by it (a redirect chain that ended there is resolved too: its memo is the end).
    fn robots_answer_of(&self, target: SiteId, url: &Url) -> Option<RobotsFetch> {
        if url.path() != "/robots.txt" || url.query().is_some() {
            return None;
        }
        match &self.sites[target.index()].robots_memo {
            RobotsMemo::Response { status, body, .. } => Some(RobotsFetch::Response {
                status: *status,
                body: data_encoding::BASE64.decode(body.as_bytes()).ok()?.into(),
                retry_after: None,
            }),
            RobotsMemo::TooManyRedirects { .. } => Some(RobotsFetch::TooManyRedirects),
            RobotsMemo::Unresolved | RobotsMemo::Failing { .. } => None,
        }
    }

    fn spawn_page(&mut self, site: SiteId, id: u32, url: Url) {
        let Some(slot) = self.slots.take() else {
            // Unreachable by construction (dispatch checks for a free slot); keep it queued.
            let url = self.resources.url(id);
            self.frontier.push(
                site,
                Queued {
                    id,
                    url: &url,
                    depth: 0,
                },
            );
            self.frontier.complete(site, self.now());
            return;
        };
        let now = self.now();
        let deadline = now + Duration::from_millis(self.cfg.timeout_ms) + COMMIT_MARGIN;
        // A fetch dispatched again after its result was overdue keeps its place in the order.
        let seq = match self.reserved.remove(&id) {
            Some(seq) => {
                self.window.redispatch(seq, deadline);
                seq
            }
            None => self.window.dispatch(now, deadline),
        };
        self.resources.update(id, |r| r.seq = Some(seq));
        self.touch(id);
        let fetcher = self.fetcher.clone();
        let cell = self.slots.cells[slot].clone();
        let hang = self.hang_after_fetch.as_deref() == Some(url.as_str());
        let parse = ParseWork {
            pool: self.parse_pool.clone(),
            // Only the index reads a page's text, and only a crawl folder has one.
            text: if self.committer.is_some() && self.cfg.index {
                Text::Extract
            } else {
                Text::Skip
            },
            agent: Arc::clone(&self.agent),
            extractor: self.extractor.clone(),
            hook: self.parse_hook.for_url(&url),
        };
        let handle = self.tasks.spawn(async move {
            let outcome = fetcher.get(&url, &cell).await;
            if hang {
                std::future::pending::<()>().await;
            }
            let (parsed, extracted) = match &outcome {
                FetchOutcome::Response(f)
                    if (200..300).contains(&f.status) && verdict(f) == Verdict::Html =>
                {
                    match parse.run(f, &cell).await {
                        Ok((page, extracted)) => (Some(Ok(page)), extracted),
                        Err(e) => (Some(Err(e)), None),
                    }
                }
                _ => (None, None),
            };
            cell.set(Phase::Idle);
            TaskDone::Page(Box::new(PageDone {
                id,
                site,
                outcome,
                parsed,
                extracted,
            }))
        });
        self.running.insert(
            handle.id(),
            Running {
                slot,
                site,
                page: Some(id),
                seq: Some(seq),
                abort: handle,
            },
        );
    }

    /// Fetches whose result is overdue (patience plus margin passed, yet no answer: a worker
    /// hung) are cut and queued again, politely, keeping their place in the commit order;
    /// after [`MAX_ATTEMPTS`] the URL ends as an error and its place is skipped.
    fn reschedule_overdue(&mut self) {
        let now = self.now();
        for seq in self.window.overdue(now) {
            let Some(task) = self
                .running
                .iter()
                .find_map(|(task, r)| (r.seq == Some(seq)).then_some(*task))
            else {
                continue;
            };
            let Some(r) = self.running.remove(&task) else {
                continue;
            };
            r.abort.abort();
            if let Some(status) = self.slots.release(r.slot) {
                self.count_answer(r.site, r.page, status);
            }
            self.frontier.complete(r.site, now);
            self.live.mark(r.site);
            let Some(id) = r.page else { continue };
            let attempts = self.window.attempts(seq).unwrap_or(1);
            let url = self.resources.url(id);
            if attempts >= MAX_ATTEMPTS {
                self.window.skip(seq);
                self.flush_window();
                let reason = format!("no result after {attempts} attempts");
                self.fail(id, r.site, reason, Failure::Other);
                self.warn(format!(
                    "{url}: no result after {attempts} attempts; given up"
                ));
            } else {
                self.reserved.insert(id, seq);
                self.frontier.push_first(r.site, id);
                self.warn(format!("{url}: no result in time; dispatched again"));
            }
        }
    }

    fn on_task(&mut self, done: Result<(tokio::task::Id, TaskDone), tokio::task::JoinError>) {
        let now = self.now();
        let (task_id, result) = match done {
            Ok((id, r)) => (id, Some(r)),
            Err(e) => (e.id(), None),
        };
        let Some(running) = self.running.remove(&task_id) else {
            return;
        };
        // The answer of a fetch that ended without a response (its body timed out or broke,
        // or the task was cut); a response handed back is counted from itself.
        let answered = self.slots.release(running.slot);
        self.frontier.complete(running.site, now);
        self.touch_site(running.site);
        if let Some(id) = running.page {
            self.touch(id);
        }
        if result.is_some() {
            self.spider_done += 1;
        }
        match result {
            Some(TaskDone::Robots { site, fetch }) => {
                self.on_robots(site, running.site, fetch, answered, now);
            }
            Some(TaskDone::Page(p)) => {
                let PageDone {
                    id,
                    site,
                    outcome,
                    parsed,
                    extracted,
                } = *p;
                if let Some(seq) = running.seq {
                    // Without a crawl folder nothing is stored: the window keeps no bodies. An
                    // unfinished response is stored (the server sent it) but is no page: never
                    // parsed, so no text and no extract line, and the mirror passes it over.
                    if self.committer.is_some()
                        && let FetchOutcome::Response(f) | FetchOutcome::Unfinished(f) = &outcome
                    {
                        let mut item = self.commit_item(seq, f);
                        if let Some(Ok(page)) = &parsed
                            && !page.meta_robots.noindex
                        {
                            item.text =
                                Some((page.title.clone().unwrap_or_default(), page.text.clone()));
                        }
                        item.extract =
                            extracted.and_then(|x| ExtractLine::new(f.final_url.as_str(), seq, x));
                        self.window_bytes += item_bytes(&item);
                        self.window.complete(seq, item);
                    } else {
                        self.window.skip(seq);
                    }
                    self.flush_window();
                }
                if !matches!(outcome, FetchOutcome::Response(_))
                    && let Some(status) = answered
                {
                    self.count_answer(site, Some(id), status);
                }
                self.on_page(id, site, outcome, parsed, now);
            }
            None => {
                if let Some(seq) = running.seq {
                    self.window.skip(seq);
                    self.flush_window();
                }
                if let Some(status) = answered {
                    self.count_answer(running.site, running.page, status);
                }
                if let Some(id) = running.page {
                    if self.stopping {
                        // Cut at the end of the stop's grace: not fetched, not an error.
                        self.resources.update(id, |r| {
                            r.reason = Some("cancelled when the crawl stopped".into());
                        });
                    } else {
                        // The task panicked: the URL ends as an error, the site goes on.
                        self.errors.other += 1;
                        self.resources.update(id, |r| {
                            r.reason = Some("worker failed".into());
                            r.failure = Some(Failure::Other);
                        });
                        self.set_state(id, ResourceState::FetchError);
                    }
                } else {
                    self.frontier.unhold(running.site, now);
                }
            }
        }
    }

    /// What the store keeps of one response.
    fn commit_item(&self, seq: Seq, f: &Fetched) -> CommitItem {
        let mut fetch = self.fetch_record(f, crate::clock::wall() - f.elapsed);
        // The index takes the text; with no page store the body is not kept.
        if self.cfg.store == crate::store::committer::StoreKind::None {
            fetch.body = bytes::Bytes::new();
        }
        CommitItem {
            seq,
            fetch,
            text: None,
            extract: None,
        }
    }

    /// A response and the request that asked for it, sent at `date`, for the WARC files.
    fn fetch_record(&self, f: &Fetched, date: SystemTime) -> FetchRecord {
        let url = &f.final_url;
        let target = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        let host = match url.port() {
            Some(p) => format!("{}:{p}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        // The request as the fetch module sends it.
        let request = format!(
            "GET {target} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {}\r\nAccept: */*\r\nAccept-Encoding: gzip, deflate, br\r\n\r\n",
            self.cfg.user_agent
        );
        FetchRecord {
            url: url.clone(),
            date,
            request: request.into_bytes(),
            version: f.version,
            status: f.status,
            headers: f.headers.clone(),
            body: f.body.clone(),
            truncated: match &f.dropped_body {
                _ if f.truncated => Some(Truncation::Length),
                None => None,
                Some(DroppedBody::Cut(_)) => Some(Truncation::Disconnect),
                Some(DroppedBody::TimedOut) => Some(Truncation::Time),
                // Dropped whole, for a reason WARC has no word for.
                Some(DroppedBody::Undecodable(_)) => Some(Truncation::Unspecified),
            },
            ip: f.ip,
        }
    }

    /// Counts a robots.txt request's response (as the server counts it: each redirect too),
    /// says when its rules could not be read, and keeps it for the WARC files. A redirect's
    /// response waits with the site until its chain ends; then the whole chain is stored, with
    /// the row marked changed in the same step, so the next checkpoint holds both. A chain a
    /// kill cut is asked again from its start, and stored once.
    fn keep_robots_responses(
        &mut self,
        site: SiteId,
        fetch: &RobotsFetch,
        responses: Vec<Fetched>,
        answered: Option<u16>,
    ) {
        // An answer cut short (its headers came, its body did not) has no response to count;
        // one that came whole but unreachable was in a form its rules cannot be read from.
        let cut = answered
            .filter(|_| matches!(fetch, RobotsFetch::Unreachable(_)) && responses.is_empty());
        if let RobotsFetch::Unreachable(why) = fetch
            && !responses.is_empty()
        {
            self.warn(format!("robots.txt not read: {why}"));
        }
        for f in &responses {
            let redirect = crate::fetch::is_redirect(f.status);
            // A 2xx cut short was named above, as rules not read.
            if let Some(why) = &f.dropped_body
                && (redirect || !(200..300).contains(&f.status))
            {
                let what = if redirect { "redirect" } else { "answer" };
                self.warn(format!(
                    "{}: a robots.txt {what} ({}) without its whole body: {why}",
                    f.final_url, f.status
                ));
            }
        }
        // Every body that came counts, a redirect's too, as the server counts what it sent.
        self.http.bytes += responses.iter().map(|f| f.body.len() as u64).sum::<u64>();
        for status in responses.iter().map(|f| f.status).chain(cut) {
            *self.http.status.entry(status.to_string()).or_default() += 1;
        }
        let sent = crate::clock::wall();
        let dated = responses.into_iter().map(|f| {
            let date = sent - f.elapsed;
            (f, date)
        });
        let s = &mut self.sites[site.index()];
        let hopping = matches!(fetch, RobotsFetch::Redirect(_))
            && s.robots_next().map_or(0, |(_, n)| *n) < ROBOTS_MAX_REDIRECTS;
        if hopping {
            s.redirects_mut().chain.extend(dated);
        } else {
            let mut chain = s
                .redirects
                .as_mut()
                .map(|r| std::mem::take(&mut r.chain))
                .unwrap_or_default();
            chain.extend(dated);
            self.store_robots(site, &chain);
        }
        self.touch_site(site);
    }

    /// Hands the committer every response of `site`'s robots.txt chain (its redirects and its
    /// answer, each with when it was sent), for the WARC files, before anything else of it can
    /// reach a checkpoint: the caller marks the site's row changed in the same step.
    fn store_robots(&self, site: SiteId, responses: &[(Fetched, SystemTime)]) {
        let Some(committer) = &self.committer else {
            return;
        };
        let origin = &self.sites[site.index()].origin;
        for (f, date) in responses {
            committer.send_robots(origin, self.fetch_record(f, *date));
        }
    }

    /// Hands every result that is next in order to the committer.
    fn flush_window(&mut self) {
        while let Some((_, item)) = self.window.pop_ready() {
            self.window_bytes = self.window_bytes.saturating_sub(item_bytes(&item));
            if let Some(c) = &self.committer {
                c.send(item);
            }
        }
    }

    /// The store is behind: new fetches wait (the committer's backlog is bounded).
    ///
    /// Or the reorder window is: results behind a slow fetch wait in memory, so past a bound
    /// nothing new starts until the head arrives (or is rescheduled: a URL queued again to keep
    /// its place must be dispatched, so the bound yields to it).
    fn store_full(&self) -> bool {
        let Some(c) = &self.committer else {
            return false;
        };
        let window_full = self.reserved.is_empty()
            && (self.window.waiting() >= self.cfg.commit_window
                || self.window_bytes >= WINDOW_MAX_BYTES);
        c.status().error().is_none() && (c.status().is_full() || window_full)
    }

    /// A store that cannot write pauses the crawl, once, with the reason in the log; so does a
    /// spill file that failed (once until a resume tries it again).
    fn check_store(&mut self) {
        if self
            .fault
            .as_ref()
            .is_some_and(|f| f.what == FaultKind::Store)
        {
            return;
        }
        let store = self.committer.as_ref().and_then(|c| c.status().error());
        let (fault, hint) = if let Some(e) = store {
            (
                Fault {
                    what: FaultKind::Store,
                    error: e,
                },
                STORE_FAILED_HINT,
            )
        } else if let (None, Some(e)) = (&self.fault, self.frontier.spill_error()) {
            (
                Fault {
                    what: FaultKind::Spill,
                    error: e.to_string(),
                },
                "Resuming retries it; nothing is lost.",
            )
        } else {
            return;
        };
        self.pause_on(fault, hint);
    }

    /// A URL row that could not be read back from the state file pauses the crawl with the
    /// reason, as a store write error does (a resume tries again).
    fn check_read_back(&mut self) {
        if let Some(e) = self.resources.take_read_error() {
            let fault = Fault {
                what: FaultKind::State,
                error: e,
            };
            self.pause_on(fault, "");
        }
    }

    /// Pauses the crawl on `fault`, saying so in the log; a failed page store outranks the
    /// faults a resume takes back.
    fn pause_on(&mut self, fault: Fault, hint: &str) {
        self.paused = true;
        let hint = if hint.is_empty() {
            String::new()
        } else {
            format!(". {hint}")
        };
        self.warn(format!(
            "{}, so the crawl is paused: {}{hint}",
            fault.what.failed(),
            fault.error
        ));
        if self
            .fault
            .as_ref()
            .is_none_or(|f| f.what != FaultKind::Store)
        {
            self.fault = Some(fault);
        }
    }

    /// A robots.txt fetch ended; `answered` is the status of the last response whose headers
    /// came, which is among `responses` unless its body then failed.
    ///
    /// `contacted` is the site the request went to: `site` itself, or the origin a hop of its
    /// redirects landed on.
    fn on_robots(
        &mut self,
        site: SiteId,
        contacted: SiteId,
        fetched: RobotsFetched,
        answered: Option<u16>,
        now: Duration,
    ) {
        let RobotsFetched { fetch, responses } = fetched;
        let pushed_back = pushed_back(&fetch);
        self.keep_robots_responses(site, &fetch, responses, answered);
        let wall = crate::clock::wall();
        let s = &mut self.sites[site.index()];
        let asked = s.redirects.as_mut().and_then(|r| r.next.take());
        let hops = asked.as_ref().map_or(0, |(_, n)| *n);
        // The file that answered, when a redirect led there (the rules text names it).
        let via = asked.map(|(url, _)| url);
        if via.is_some() || s.redirects.is_some() {
            s.redirects_mut().via = via;
        }
        let wall_ms = crate::clock::ms_since_epoch(wall);
        // Asked again because its answer grew old: kept, in case the new one cannot be had.
        let refreshed = (s.robots_memo.answered_ms().is_some())
            .then(|| (s.robots.clone(), s.robots_memo.clone()));
        let outcome = match fetch {
            RobotsFetch::Redirect(next) if hops < ROBOTS_MAX_REDIRECTS => {
                // The next hop is the site's next contact for robots.txt (or a contact of the
                // origin it lands on), after the delay.
                s.redirects_mut().next = Some((next, hops + 1));
                self.frontier.unhold(site, now);
                return;
            }
            RobotsFetch::Response {
                status,
                body,
                retry_after,
            } => {
                let ra = retry_after
                    .as_deref()
                    .and_then(|v| parse_retry_after(v, wall));
                let outcome = s.robots.on_response(status, &body, ra, &self.policy);
                s.robots_memo = RobotsMemo::Response {
                    status,
                    body: data_encoding::BASE64.encode(&body),
                    at_ms: Some(wall_ms),
                };
                outcome
            }
            RobotsFetch::Unreachable(_) => s.robots.on_unreachable(&self.policy),
            RobotsFetch::Redirect(_) | RobotsFetch::TooManyRedirects => {
                s.robots_memo = RobotsMemo::TooManyRedirects {
                    at_ms: Some(wall_ms),
                };
                s.robots.on_too_many_redirects()
            }
        };
        if let Some(kept) = refreshed
            && !matches!(outcome, RobotsOutcome::Resolved)
        {
            let after = match outcome {
                RobotsOutcome::Retry { after } => after,
                RobotsOutcome::Resolved | RobotsOutcome::GaveUp => Duration::ZERO,
            };
            self.keep_robots(site, kept, wall_ms, after, now);
            return;
        }
        if !matches!(outcome, RobotsOutcome::Resolved) {
            // Kept so that a resume goes on with the retries where they were.
            s.robots_memo = failing_memo(&s.robots);
        }
        match outcome {
            RobotsOutcome::Resolved => {
                s.crawl_delay = s.robots.crawl_delay();
                let own = s.own_delay();
                let capped = s.crawl_delay.filter(|c| c.capped && !s.cap_logged);
                if capped.is_some() {
                    s.cap_logged = true;
                }
                let origin = s.origin.clone();
                self.frontier.set_site_delay(site, own);
                self.frontier.answered(site);
                if let Some(c) = capped {
                    self.warn(format!(
                        "{origin}: Crawl-delay {} capped to {} s",
                        c.asked(),
                        c.effective.as_secs_f64()
                    ));
                }
            }
            RobotsOutcome::Retry { after } => {
                s.pushback = Some((DelaySource::Backoff, now + after));
                self.frontier.defer(site, now + after);
                self.share_next_contact(site);
                // A hop's origin that pushed back is backed off too, as for its own pages.
                if let Some(source) = pushed_back.filter(|_| contacted != site) {
                    self.sites[contacted.index()].pushback = Some((source, now + after));
                    self.frontier.defer(contacted, now + after);
                    self.share_next_contact(contacted);
                    self.touch_site(contacted);
                }
            }
            RobotsOutcome::GaveUp => self.robots_given_up(site),
        }
        self.frontier.unhold(site, now);
        if !matches!(outcome, RobotsOutcome::Retry { .. }) {
            self.share_politeness(site);
        }
    }

    /// robots.txt stayed unreachable through every retry: the site's queued URLs end as
    /// forbidden, and nothing is fetched there.
    fn robots_given_up(&mut self, site: SiteId) {
        let s = &mut self.sites[site.index()];
        s.robots_gave_up = true;
        let origin = s.origin.clone();
        let last = s.robots.summary().last_response;
        let reason: Arc<str> = gave_up_reason(last).into();
        let ids = self.frontier.remove_site_items(site);
        for id in ids {
            self.errors.robots_unreachable += 1;
            self.resources
                .update(id, |r| r.reason = Some(reason.clone()));
            self.set_state(id, ResourceState::FetchForbidden);
        }
        self.warn(match last {
            Some(RobotsResponse::Status(code)) => format!(
                "{origin}: robots.txt answered {code} on every try; nothing is fetched there"
            ),
            _ => {
                format!("{origin}: robots.txt unreachable after retries; nothing is fetched there")
            }
        });
    }

    fn on_page(
        &mut self,
        id: u32,
        site: SiteId,
        outcome: FetchOutcome,
        parsed: Option<Result<ParsedPage, String>>,
        now: Duration,
    ) {
        match outcome {
            FetchOutcome::Response(f) => self.on_response(id, site, &f, parsed, now),
            FetchOutcome::Timeout { during } => self.timed_out(id, site, during),
            FetchOutcome::Connect(e) => {
                self.fail(id, site, format!("connect: {e}"), Failure::Connect);
            }
            FetchOutcome::Other(e) => self.fail(id, site, e, Failure::Other),
            // Its response is in the store (and its status counted, as the server counts it):
            // the URL ends as the failure it is.
            FetchOutcome::Unfinished(f) => {
                // Its row says what came, as the store keeps it (audit 33: no content type,
                // 0 bytes, for a body that timed out after its headers).
                // Its bytes came, as a whole body's do (and a resume that takes the row back
                // takes them back from `http.bytes`).
                self.http.bytes += f.body.len() as u64;
                let content_type = f.content_type.as_deref().map(Arc::from);
                self.resources.update(id, |r| {
                    r.bytes = f.body.len() as u64;
                    r.content_type = content_type;
                });
                match f.dropped_body {
                    Some(DroppedBody::Cut(why)) => self.fail(id, site, why, Failure::Other),
                    // Timed out: the only other way a body is unfinished.
                    _ => self.timed_out(id, site, Phase::Receiving),
                }
            }
        }
    }

    /// The fetch's total patience ran out `during` a phase.
    fn timed_out(&mut self, id: u32, site: SiteId, during: Phase) {
        // It took at least the whole patience: a server slowed past `--timeout-ms` is given
        // room as one that answers slowly is, not the last fast answer's delay.
        self.adapt(site, Duration::from_millis(self.cfg.timeout_ms));
        let reason = format!("timeout while {}", phase_name(during));
        self.fail(id, site, reason, Failure::Timeout);
    }

    /// With `--adaptive-delay F`, the site's delay becomes F times `elapsed`, the time its last
    /// page took.
    fn adapt(&mut self, site: SiteId, elapsed: Duration) {
        if let Some(factor) = self.cfg.adaptive_delay {
            let s = &mut self.sites[site.index()];
            s.adaptive = Some(elapsed.mul_f64(factor));
            let own = s.own_delay();
            self.frontier.set_site_delay(site, own);
        }
    }

    /// A response the server sent whose fetch then ended without it (its body timed out or
    /// broke, or the task was cut): counted as the server counts it, and kept on the URL's row
    /// (so that taking the row back for a resume takes the count back too).
    fn count_answer(&mut self, site: SiteId, page: Option<u32>, status: u16) {
        *self.http.status.entry(status.to_string()).or_default() += 1;
        if let Some(id) = page {
            *self.sites[site.index()].status.entry(status).or_default() += 1;
            self.resources.update(id, |r| r.status = Some(status));
        }
    }

    /// A fetch failed: counted by kind, remembered on the URL and its site.
    fn fail(&mut self, id: u32, site: SiteId, reason: String, kind: Failure) {
        *kind.counter(&mut self.errors) += 1;
        let path = Url::parse(&self.resources.url(id))
            .map_or_else(|_| String::new(), |u| u.path().to_string());
        self.sites[site.index()].record_error(format!("{path}: {reason}"));
        self.resources.update(id, |r| {
            r.failure = Some(kind);
            r.reason = Some(reason.into());
        });
        self.set_state(id, ResourceState::FetchError);
    }

    fn on_response(
        &mut self,
        id: u32,
        site: SiteId,
        f: &Fetched,
        parsed: Option<Result<ParsedPage, String>>,
        now: Duration,
    ) {
        let status = f.status;
        *self.http.status.entry(status.to_string()).or_default() += 1;
        self.http.bytes += f.body.len() as u64;
        *self.sites[site.index()].status.entry(status).or_default() += 1;
        self.adapt(site, f.elapsed);
        let content_type = f.content_type.as_deref().map(Arc::from);
        self.resources.update(id, |r| {
            r.status = Some(status);
            r.bytes = f.body.len() as u64;
            r.content_type = content_type;
            r.truncated = f.truncated;
        });
        if f.truncated {
            self.errors.too_large += 1;
        }
        match status {
            429 | 503 => self.pushback(id, site, f, now),
            300..=399 => {
                self.sites[site.index()].backoff_attempt = 0;
                self.count_fetched(id, site);
                if let Some(why) = &f.dropped_body {
                    self.warn(format!(
                        "{}: a redirect without its whole body: {why}",
                        f.final_url
                    ));
                }
                // Only a redirect's Location is a request the site asks for (a 304 or a 300
                // may carry one too).
                let target = (f.location.as_deref())
                    .filter(|_| crate::fetch::is_redirect(status))
                    .and_then(|l| f.final_url.join(l).ok());
                if let Some(target) = target {
                    let r = self.resources.get(id);
                    let (depth, hops) = (r.depth, r.hops.saturating_add(1));
                    self.admit(target, depth, Some(id), hops);
                }
            }
            200..=299 => {
                self.sites[site.index()].backoff_attempt = 0;
                self.count_fetched(id, site);
                self.on_parsed(id, f, parsed);
            }
            _ => self.fail(
                id,
                site,
                format!("http {status}"),
                Failure::for_status(status),
            ),
        }
    }

    fn count_fetched(&mut self, id: u32, site: SiteId) {
        self.pages_fetched += 1;
        self.sites[site.index()].fetched += 1;
        self.set_state(id, ResourceState::Fetched);
    }

    fn on_parsed(&mut self, id: u32, f: &Fetched, parsed: Option<Result<ParsedPage, String>>) {
        let Some(parsed) = parsed else {
            if let Verdict::Ignored(reason) = verdict(f) {
                self.resources
                    .update(id, |r| r.reason = Some(reason.into()));
            }
            self.set_state(id, ResourceState::ParseIgnored);
            return;
        };
        self.thinker_done += 1;
        let page = match parsed {
            Ok(p) => p,
            Err(e) => {
                self.resources.update(id, |r| r.reason = Some(e.into()));
                self.set_state(id, ResourceState::ParseError);
                return;
            }
        };
        self.set_state(id, ResourceState::Parsed);
        // A page cut by a parse limit is still parsed (what came before the cut counts); its
        // record says where and why.
        let reason = page.coverage.reason().map(Arc::from);
        self.resources.update(id, |r| r.reason = reason);
        self.mailto.extend(page.mailto);
        let depth = self.resources.depth(id) + 1;
        let links: Vec<(Url, u64)> = (page.links.into_iter())
            .filter(|link| !link.nofollow)
            .map(|link| {
                let mut url = link.url;
                canonicalize(&mut url);
                let key = fingerprint(url.as_str());
                (url, key)
            })
            .collect();
        // A page's links are mostly new URLs, each one a miss in the exactly-once map: its
        // memory is read for all of them at once before they are admitted one by one.
        self.by_url.warm(links.iter().map(|&(_, key)| key));
        for (url, key) in links {
            self.admit_canonical(&url, key, depth, Some(id), 0);
        }
    }

    /// Writes on each URL whose text the index cut since the last call how much it kept (the
    /// parse is long done: the index sees a page only once it is committed), and shows it in
    /// the snapshot's log. The row is touched, so the next checkpoint holds the reason; the
    /// count itself is the committer's, stamped on the mark.
    fn note_text_cuts(&mut self) {
        let Some(status) = self.commit_status() else {
            return;
        };
        for (url, cut) in status.take_text_cuts() {
            if self.write_cut(&url, cut) {
                // The index thread wrote this line to the crawl's log (`--log`).
                self.show_warning(format!("{url}: {cut}"));
            }
        }
    }

    /// Writes on `url`'s row what the index kept of its text, unless the row says it already
    /// (a resume writes again what its checkpoint lists); touches the row for the next
    /// checkpoint. False when no row has the URL, or it said so already.
    pub(super) fn write_cut(&mut self, url: &str, cut: crate::index::Cut) -> bool {
        // The committed URL is the one asked for, canonical, as the row has it.
        let Some(id) = self.by_url.get(fingerprint(url)) else {
            return false;
        };
        if !self.resources.try_url(id).is_ok_and(|known| known == url) {
            return false;
        }
        let said = cut.to_string();
        let mut wrote = false;
        self.resources.update(id, |r| {
            r.reason = match r.reason.take() {
                Some(before) if before.contains(said.as_str()) => Some(before),
                // A parse cut came first: both are said.
                Some(parse) => {
                    wrote = true;
                    Some(format!("{parse}; {said}").into())
                }
                None => {
                    wrote = true;
                    Some(said.clone().into())
                }
            };
        });
        if wrote {
            self.touch(id);
        }
        wrote
    }

    /// 429 or 503: the site backs off (Retry-After or exponential), the URL is tried again a
    /// bounded number of times.
    fn pushback(&mut self, id: u32, site: SiteId, f: &Fetched, now: Duration) {
        let wall = crate::clock::wall();
        let retry_after = f
            .retry_after
            .as_deref()
            .and_then(|v| parse_retry_after(v, wall));
        let s = &mut self.sites[site.index()];
        s.backoff_attempt += 1;
        let wait = self
            .backoff
            .with_retry_after(s.backoff_attempt, retry_after);
        let source = if retry_after.is_some() {
            DelaySource::RetryAfter
        } else {
            DelaySource::Backoff
        };
        s.pushback = Some((source, now + wait));
        self.frontier.defer(site, now + wait);
        // The wait is capped (a hostile header must not park a site for days): say so, since
        // the site will be asked again before the time it gave.
        if let Some(asked) = retry_after.filter(|asked| *asked > wait) {
            let origin = s.origin.clone();
            self.warn(format!(
                "{origin}: Retry-After {} s capped to {} s",
                asked.as_secs(),
                wait.as_secs()
            ));
        }
        self.share_next_contact(site);
        let mut r = self.resources.get(id);
        if u32::from(r.retries) < self.cfg.max_retries {
            r.retries += 1;
            self.resources.set(id, &r);
            self.errors.retries += 1;
            let url = self.resources.url(id);
            let queued = Queued {
                id,
                url: &url,
                depth: r.depth,
            };
            self.frontier.push(site, queued);
            self.touch(id);
        } else {
            let status = f.status;
            let retries = r.retries;
            let reason = format!("http {status} after {retries} retries");
            self.fail(id, site, reason, Failure::for_status(status));
        }
    }
}

/// What a result waiting in the window holds in memory, roughly.
fn item_bytes(item: &CommitItem) -> u64 {
    let text = item.text.as_ref().map_or(0, |(t, x)| t.len() + x.len());
    (item.fetch.body.len() + text + item.fetch.request.len()) as u64
}

/// B, the back queues, for `workers` workers: three times as many (docs/ARCHITECTURE.md, "The
/// frontier"), so a free worker finds a ready site while the others wait out their delay.
pub(super) fn back_queues(workers: usize) -> usize {
    workers.saturating_mul(3).max(1)
}

fn frontier(cfg: &CrawlConfig, delay: Duration) -> Result<Frontier<u32>, EngineError> {
    let frontier_cfg = FrontierConfig {
        front_queues: FrontierConfig::DEFAULT_FRONT_QUEUES,
        back_queues: back_queues(cfg.workers),
        per_site: cfg.per_site,
        default_delay: delay,
    };
    // With a crawl folder, queues longer than the bound wait on disk (scratch: a resume
    // rebuilds them from the checkpoint).
    Ok(match &cfg.out {
        Some(dir) => {
            let store = DiskStore::create(dir).map_err(|source| StoreError::Io {
                path: dir.join(DiskStore::FILE_NAME),
                source,
            })?;
            Frontier::with_spill(frontier_cfg, cfg.queue_memory, store)
        }
        None => Frontier::new(frontier_cfg),
    })
}

/// The committer of a crawl folder; it also feeds the index, so it runs even with
/// `--store none`.
/// With a crawl folder, URL rows a checkpoint holds leave memory (issue 12), within the
/// tests' budget and fault when they set them.
fn read_back_rows(resources: &mut UrlTable, committer: &Committer) {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse().ok());
    let budget = env(URL_CACHE_ENV).unwrap_or(super::url_table::CACHE_BYTES);
    resources.read_back_from(committer.url_reader(), budget);
    if let Some(n) = env(URL_READ_FAILS_ENV) {
        resources.fail_reads_after(n as u64);
    }
}

fn committer(cfg: &CrawlConfig, start: &Start) -> Result<Option<Committer>, EngineError> {
    let Some(dir) = &cfg.out else {
        return Ok(None);
    };
    let opts = StoreOptions {
        kind: cfg.store,
        warc_max_bytes: cfg.warc_max_bytes,
        index_memory_mb: cfg.index_memory_mb,
        index: cfg.index,
        extract_out: cfg.extract_out.clone(),
        settings: cfg.resume_settings(),
    };
    Ok(Some(Committer::start(dir, opts, start)?))
}

fn parse_pool(cfg: &CrawlConfig) -> Result<Arc<ParsePool>, EngineError> {
    // As many jobs may wait as run: enough to keep the threads fed between two results.
    ParsePool::new(cfg.parse_threads, cfg.parse_threads)
        .map(Arc::new)
        .map_err(EngineError::ParsePool)
}

fn fetcher(cfg: &CrawlConfig) -> Result<Fetcher, EngineError> {
    let fetch_cfg = FetchConfig {
        user_agent: cfg.user_agent.clone(),
        connect_timeout: Duration::from_millis(cfg.connect_timeout_ms),
        timeout: Duration::from_millis(cfg.timeout_ms),
        max_body_bytes: cfg.max_body_bytes,
        cookies: cfg.cookies,
        proxy: cfg.proxy.as_deref().and_then(|p| Url::parse(p).ok()),
        max_idle_per_host: cfg.per_site.max(1),
        kept_sites: crate::fetch::kept::budget(
            crate::fetch::kept::raise_open_files(),
            cfg.workers,
            cfg.per_site,
        ),
    };
    Fetcher::new(&fetch_cfg).map_err(|e| EngineError::Client(e.to_string()))
}

/// The seeds of a resumed crawl, then the new ones of `given` it lacks (a set: seeds files hold
/// hundreds of thousands).
fn with_seeds_of(restored: &checkpoint::Restored, given: Vec<String>) -> Vec<String> {
    let mut seeds: Vec<String> = restored.seeds().to_vec();
    let mut known: std::collections::HashSet<String> = seeds.iter().cloned().collect();
    for s in given {
        if known.insert(s.clone()) {
            seeds.push(s);
        }
    }
    seeds
}

/// Takes the crawl folder's lock, then finds what it holds: nothing (or `--fresh`) starts a
/// new crawl, an unfinished crawl is resumed, a finished one is refused.
fn open_folder(
    dir: &std::path::Path,
    fresh: bool,
) -> Result<(FolderLock, Option<checkpoint::Restored>, Start), EngineError> {
    let lock = FolderLock::take(dir)?;
    if fresh {
        clear_folder(dir)?;
    }
    match Checkpoint::find(dir).map_err(StoreError::from)? {
        Found::Nothing => {
            let found = crate::store::committer::stored(dir);
            if found.is_empty() {
                Ok((lock, None, Start::Fresh))
            } else {
                Err(StoreError::NoCheckpoint {
                    dir: dir.to_path_buf(),
                    found,
                }
                .into())
            }
        }
        Found::Finished(_) => Err(EngineError::Finished(dir.to_path_buf())),
        Found::Unfinished(loaded) => {
            let path = dir.join(crate::store::checkpoint::STATE_FILE);
            let restored =
                checkpoint::Restored::decode(&loaded, &path).map_err(StoreError::from)?;
            Ok((lock, Some(restored), Start::Resume(loaded.mark.clone())))
        }
    }
}

/// `--fresh`: removes what crawltop keeps in a crawl folder (never anything else in it): the
/// crawl's WARC files, the mirror's site folders, the index (and what a rebuild of it left),
/// the state. A folder left empty goes too; one holding files of the user's stays.
fn clear_folder(dir: &std::path::Path) -> Result<(), StoreError> {
    let io = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| StoreError::Io { path, source }
    };
    // Everything to remove is known before anything is: a store that cannot be read (a list
    // of site folders that is not a file) stops `--fresh` with the folder as it was.
    let mut doomed = Vec::new();
    for folder in crate::store::committer::STORES {
        let path = dir.join(folder);
        let entries = crate::store::committer::stored_entries(dir, folder).map_err(io(&path))?;
        doomed.push((path, entries));
    }
    for (path, entries) in doomed {
        for at in entries {
            let kind = std::fs::symlink_metadata(&at).map_err(io(&at))?.file_type();
            let removed = if kind.is_dir() {
                std::fs::remove_dir_all(&at)
            } else {
                std::fs::remove_file(&at)
            };
            removed.map_err(io(&at))?;
        }
        // Empty now unless the user keeps something there.
        let _ = std::fs::remove_dir(&path);
    }
    for leftover in [crate::reindex::BUILDING, crate::reindex::OLD] {
        let path = dir.join(leftover);
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(io(&path))?;
        }
    }
    let state = dir.join(crate::store::checkpoint::STATE_FILE);
    if state.exists() {
        std::fs::remove_file(&state).map_err(|source| StoreError::Io {
            path: state,
            source,
        })?;
    }
    Ok(())
}

/// Why the URLs of a site whose robots.txt was given up are not fetched: the status it kept
/// answering, if it answered (RFC 9309 calls a 5xx "unreachable" too, but a user reads that
/// as no answer at all).
fn gave_up_reason(last: Option<RobotsResponse>) -> String {
    match last {
        Some(RobotsResponse::Status(code)) => format!("robots.txt answered {code}"),
        _ => "robots.txt unreachable".to_string(),
    }
}

/// `1 request`, `2 requests`.
fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn phase_name(p: Phase) -> &'static str {
    match p {
        Phase::Idle | Phase::Connecting => "connecting",
        Phase::WaitingFirstByte => "waiting for the first byte",
        Phase::Receiving => "receiving the body",
        Phase::Parsing => "parsing",
        Phase::WaitingParse => "waiting for the parse pool",
    }
}

/// What the parse of one fetched page needs, taken on the fetch's task to the parse pool.
struct ParseWork<H> {
    pool: Arc<ParsePool>,
    text: Text,
    /// The product token meta robots and `X-Robots-Tag` are read for.
    agent: Arc<str>,
    extractor: Option<Arc<Extractor>>,
    /// What a test asks of the parse first ([`ParseHook::for_url`]).
    hook: H,
}

impl<H: FnOnce() + Send + 'static> ParseWork<H> {
    /// Parses a fetched page on the parse pool (its text only if `text` asks for it; the robots
    /// `<meta>` and `X-Robots-Tag` directives for `agent`, the crawl's product token), and runs
    /// `--extract` on it in the same job. The worker waits (blocked by parse, in
    /// [`Phase::WaitingParse`]) until a pool thread takes the job.
    async fn run(
        self,
        f: &Fetched,
        cell: &PhaseCell,
    ) -> Result<(ParsedPage, Option<Extraction>), String> {
        let ParseWork {
            pool,
            text,
            agent,
            extractor,
            hook,
        } = self;
        cell.set(Phase::WaitingParse);
        let body = f.body.clone();
        let ctype = f.content_type.clone();
        let base = f.final_url.clone();
        let header_robots =
            MetaRobots::from_headers(f.headers.iter().map(|(k, v)| (&**k, &**v)), &agent);
        let running = cell.clone();
        let job = move || {
            running.set(Phase::Parsing);
            hook();
            let options = crate::parse::Options {
                text,
                agent: &agent,
            };
            let mut page = crate::parse::parse_html_with(&body, ctype.as_deref(), &base, options);
            page.obey(header_robots);
            let extracted = extractor.map(|x| x.run(&body, ctype.as_deref()));
            (page, extracted)
        };
        pool.submit(job)
            .await
            .result()
            .await
            .map_err(|e| e.to_string())
    }
}

/// A robots.txt that failed, as the checkpoint keeps it: how many tries, and the last answer.
fn failing_memo(robots: &crate::robots::SiteRobots) -> RobotsMemo {
    let summary = robots.summary();
    RobotsMemo::Failing {
        tries: summary.failures,
        status: match summary.last_response {
            Some(RobotsResponse::Status(code)) => Some(code),
            _ => None,
        },
    }
}

/// A 429 or 503 is the server pushing back, whoever asked: with its Retry-After or not.
fn pushed_back(fetch: &RobotsFetch) -> Option<DelaySource> {
    match fetch {
        RobotsFetch::Response {
            status: 429 | 503,
            retry_after,
            ..
        } => Some(if retry_after.is_some() {
            DelaySource::RetryAfter
        } else {
            DelaySource::Backoff
        }),
        _ => None,
    }
}

/// What becomes of a 2xx body: decided in the fetch task, and again (same inputs, same answer)
/// for the row of a page it left unparsed.
fn verdict(f: &Fetched) -> Verdict {
    crate::parse::verdict(
        f.content_type.as_deref(),
        f.unsupported_coding().as_deref(),
        &f.body,
    )
}

/// Waits for the committer's backlog to drain.
async fn drained(status: Option<&CommitStatus>) {
    match status {
        Some(s) => s.drained().await,
        None => std::future::pending().await,
    }
}

/// Sleeps until `at`, or forever when there is nothing to wake for.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use url::Url;

    use super::same_origin;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("test URL parses")
    }

    /// The last-site shortcut answers exactly when the origins' texts are equal.
    #[test]
    fn same_origin_agrees_with_the_origins_text() {
        let site = url("http://127.0.0.1:8001/");
        let cases = [
            "http://127.0.0.1:8001/a?b#c",
            "http://user:pw@127.0.0.1:8001/x",
            "http://127.0.0.1:8002/a",
            "https://127.0.0.1:8001/a",
            "http://127.0.0.2:8001/a",
            "ftp://127.0.0.1:8001/a",
            "http://example.com/",
            "http://example.com:80/",
            "https://example.com:443/",
            "http://EXAMPLE.com/a",
            "http://ex%41mple.com/a",
            "http://xn--bcher-kva.example/",
            "http://bücher.example/",
            "http://[::1]:8001/",
            "mailto:a@example.com",
        ];
        for s in cases {
            let u = url(s);
            let by_text = site.origin().ascii_serialization() == u.origin().ascii_serialization();
            assert_eq!(same_origin(&site, &u), by_text, "{s}");
            for t in cases {
                let site = url(t);
                if !matches!(site.scheme(), "http" | "https") {
                    continue;
                }
                let by_text =
                    site.origin().ascii_serialization() == u.origin().ascii_serialization();
                assert_eq!(same_origin(&site, &u), by_text, "{t} and {s}");
            }
        }
    }
}
