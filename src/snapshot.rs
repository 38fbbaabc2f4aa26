//! The snapshot: what the engine publishes a few times a second, and the stats file's schema.
//!
//! One plain, serializable value read by every observer (dashboard, headless reporter, control
//! API, stats export), so what the screen shows and what the file says are the same numbers. It
//! holds no engine internals and no locks; renaming a top-level key is a breaking change
//! (docs/ARCHITECTURE.md, "Snapshot and stats file"): add keys, never rename them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Where the crawl stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    #[default]
    Running,
    Paused,
    /// Stop was asked for: in-flight work finishes, nothing new starts.
    Stopping,
    Finished,
}

/// The whole picture at one moment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    pub state: RunState,
    /// Seconds since this run started: a resumed crawl's clock starts again at 0.
    pub elapsed_s: f64,
    /// Seconds crawled by every run of this crawl, this one included: `elapsed_s` plus the
    /// runs before it, carried over the checkpoint (up to each one's last checkpoint). The
    /// counts (`resources`, `http`) are the whole crawl's, so they are divided by this, never by
    /// `elapsed_s` (audit 33 F4). Equal to `elapsed_s` for a crawl that never resumed; 0 in
    /// files written before it.
    #[serde(default)]
    pub crawl_elapsed_s: f64,
    pub workers: Workers,
    pub scheduler: Scheduler,
    pub resources: Resources,
    pub errors: Errors,
    pub http: Http,
    pub politeness: Politeness,
    /// One row per site, in the order sites were discovered: in the stats file, exports and
    /// `/stats`. Live snapshots leave it empty (a crawl may know 100,000 sites): observers read
    /// the live site table (`engine::CrawlHandle::sites`, `crate::site_table`) instead.
    pub sites: Vec<SiteRow>,
    /// How many sites the crawl knows (`sites.len()` when `sites` is filled).
    #[serde(default)]
    pub site_count: u64,
    /// The top of the back-queue heap: which sites the crawler touches next, soonest first.
    pub heap: Vec<HeapRow>,
    pub rates: Rates,
    /// The whole crawl's average rates: its counts over `crawl_elapsed_s`. What the dashboard
    /// shows once the crawl ended (`avg 95 p/s`) and the headless summary's last line says;
    /// `rates` stays the last seconds', which a crawl that ended paused leaves at 0.
    #[serde(default)]
    pub averages: Averages,
    /// The ordered commit of fetched pages to the store.
    #[serde(default)]
    pub commit: Commit,
    /// Every command given while running, oldest first.
    pub commands: Vec<CommandRecord>,
    /// Recent warnings (e.g. a capped Crawl-delay), newest last.
    pub log: Vec<LogLine>,
    /// The shared crawl this member belongs to (`crawl --cluster`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterView>,
    /// The failure the engine paused the crawl on by itself, until a resume takes it back (a
    /// failed page store is never taken back: this run cannot write again).
    #[serde(default)]
    pub fault: Option<Fault>,
    /// How the crawl ended, on the final snapshot only (`state` is `finished` either way):
    /// whether it ran out of work or was stopped. The stats file's `totals.completed` says the
    /// same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ended>,
}

/// How a finished crawl ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    /// Nothing was left queued or in flight.
    Completed,
    /// Stopped before its work ran out: a stop or quit, a signal, an abort.
    Stopped,
}

/// A failure on which the engine paused the crawl by itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fault {
    pub what: FaultKind,
    /// The failure's own words.
    pub error: String,
}

/// What failed, in [`Fault`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The page store: this run cannot write again; a resume keeps the crawl paused.
    Store,
    /// The frontier's spill file: a resume tries it again.
    Spill,
    /// URL rows could not be read back from the state file: a resume reads again.
    State,
}

impl FaultKind {
    /// What failed, as a sentence's subject and verb.
    pub fn failed(self) -> &'static str {
        match self {
            FaultKind::Store => "the page store failed",
            FaultKind::Spill => "the frontier's spill file failed",
            FaultKind::State => "URL rows could not be read back from the state file",
        }
    }
}

/// A member's view of the shared crawl it works on (`crawl --cluster`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClusterView {
    pub crawl_id: String,
    /// This member's id (`host:pid`).
    pub member: String,
    /// Sites this member holds a lease on now.
    pub sites_leased: u64,
    /// Sites this member has held at some time in this run.
    pub sites_served: u64,
    /// Pages this member fetched.
    pub pages: u64,
    /// Every member that ever beat, this one included, by id.
    pub members: Vec<MemberRow>,
    /// Crawl-wide counters, all members together (`pages`, `bytes`, `errors`, `shared`: URLs
    /// admitted to a site's shared queue), as of the last read (about once a second).
    pub totals: BTreeMap<String, i64>,
    /// Requests this member sent to Redis (a pipeline or a script call is one).
    #[serde(default)]
    pub round_trips: u64,
    /// Redis does not answer: what the member's agent said (it retries with backoff). In the
    /// last snapshot: why the member left without handing its sites back (Redis did not answer
    /// as it left), which makes the crawl exit 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<String>,
}

/// One member of a shared crawl, as its last heartbeat says.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemberRow {
    pub id: String,
    pub host: String,
    pub pid: u32,
    pub sites_leased: u64,
    pub pages: u64,
    pub pages_per_s: f64,
    pub busy: u32,
    pub blocked: u32,
    pub idle: u32,
    /// Seconds since its last heartbeat, by Redis's clock.
    pub last_beat_s: f64,
    /// It left gracefully; a member that died just stops beating (see `last_beat_s`).
    pub gone: bool,
    /// Not gone, yet silent for at least its own `--lease-ms` (10 s by default): killed,
    /// stalled or cut off from Redis; its leases have run out and other members take its sites.
    #[serde(default)]
    pub silent: bool,
}

/// What each worker is doing, now and on average over the last seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Workers {
    pub total: usize,
    pub idle: usize,
    pub blocked: usize,
    pub busy: usize,
    pub idle_pct: f64,
    pub blocked_pct: f64,
    pub busy_pct: f64,
    /// Why blocked workers wait.
    pub blocked_by: BlockedBy,
    /// What busy workers are doing.
    pub busy_by: BusyBy,
    /// The same shares averaged over the last 10 seconds.
    pub avg_10s: Shares,
    /// One entry per worker, for the dashboard's strip.
    pub slots: Vec<WorkerState>,
}

/// Blocked workers by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockedBy {
    /// Work is queued for a site, but its next allowed contact is still ahead.
    pub politeness: usize,
    /// Work is queued for a site whose robots.txt is not resolved yet.
    pub robots: usize,
    /// Work is queued, but the page store is behind (its backlog is full).
    #[serde(default)]
    pub store: usize,
    /// A page is fetched, but the parse pool is full: its parse waits for a thread.
    #[serde(default)]
    pub parse: usize,
}

/// Busy workers by phase.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BusyBy {
    pub connecting: usize,
    pub waiting_first_byte: usize,
    pub receiving: usize,
    pub parsing: usize,
}

/// Idle, blocked and busy shares in percent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Shares {
    pub idle_pct: f64,
    pub blocked_pct: f64,
    pub busy_pct: f64,
}

/// One worker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum WorkerState {
    #[default]
    Idle,
    BlockedPoliteness,
    BlockedRobots,
    BlockedStore,
    BlockedParse,
    Connecting,
    WaitingFirstByte,
    Receiving,
    Parsing,
}

impl WorkerState {
    pub fn is_busy(self) -> bool {
        matches!(
            self,
            WorkerState::Connecting
                | WorkerState::WaitingFirstByte
                | WorkerState::Receiving
                | WorkerState::Parsing
        )
    }

    pub fn is_blocked(self) -> bool {
        matches!(
            self,
            WorkerState::BlockedPoliteness
                | WorkerState::BlockedRobots
                | WorkerState::BlockedStore
                | WorkerState::BlockedParse
        )
    }
}

/// The job counters of `JSpider`. Spider tasks touch the network (robots.txt and page fetches);
/// thinker tasks do not (parsing a page and deciding on its links).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scheduler {
    pub queued: u64,
    pub assigned: u64,
    /// Page fetches waiting for their site's robots.txt.
    pub blocked: u64,
    pub done: u64,
    pub spider: TaskCounts,
    pub thinker: TaskCounts,
    /// Queued URLs waiting on disk now (with `--out`, past `--queue-memory` per queue).
    #[serde(default)]
    pub on_disk: u64,
    /// Bytes of queued URLs written to the spill file so far.
    #[serde(default)]
    pub spilled_bytes: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskCounts {
    pub queued: u64,
    pub assigned: u64,
    pub done: u64,
}

/// Resources (URLs) by state; `discovered` counts every distinct URL the crawl learned of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    pub discovered: u64,
    pub fetched: u64,
    pub parsed: u64,
    pub fetch_error: u64,
    pub fetch_ignored: u64,
    pub fetch_forbidden: u64,
    pub parse_error: u64,
    pub parse_ignored: u64,
    /// Parsed pages whose text the index took only in part (more than
    /// [`crate::index::MAX_DISTINCT_WORDS`] distinct words); each URL's record says how much.
    /// Only a crawl with a crawl folder (`--out`) indexes, so only it counts.
    #[serde(default)]
    pub text_cut: u64,
}

/// Errors by class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Errors {
    pub timeout: u64,
    pub connect: u64,
    pub http_4xx: u64,
    pub http_5xx: u64,
    /// Bodies cut at the body cap.
    pub too_large: u64,
    /// URLs a robots.txt's rules disallow.
    pub robots_forbidden: u64,
    /// URLs not fetched because their site's robots.txt could not be read (RFC 9309 then
    /// disallows the whole site); apart from `robots_forbidden`, so that a site nobody answers
    /// at does not read as one that forbids crawling. 0 in states written before it.
    #[serde(default)]
    pub robots_unreachable: u64,
    /// URLs ignored by scope, depth, limits or trap rules.
    pub ignored: u64,
    pub other: u64,
    /// Fetches repeated after a 429/503 or a failure.
    pub retries: u64,
    /// Redirect chains cut by the hop limit.
    pub too_many_redirects: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Http {
    /// Responses by status code, e.g. `"200": 1234`: every response whose status line came,
    /// robots.txt's and each redirect's included, and one whose body then timed out, broke or
    /// was cut by a stop (the server counted it).
    pub status: BTreeMap<String, u64>,
    /// Body bytes received (after decompression).
    pub bytes: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Politeness {
    /// The global politeness delay, as set now.
    pub delay_ms: u64,
    pub per_site: usize,
    pub max_crawl_delay_ms: u64,
    pub adaptive_factor: Option<f64>,
}

/// Where a site's effective delay comes from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DelaySource {
    /// The configured (global) delay.
    #[default]
    Configured,
    /// The site's robots.txt Crawl-delay.
    CrawlDelay,
    /// The Crawl-delay, capped at the maximum.
    CappedCrawlDelay,
    /// Adaptive politeness: a factor times the last response time.
    Adaptive,
    /// The server said Retry-After.
    RetryAfter,
    /// Exponential backoff after errors.
    Backoff,
}

/// One site in the sites table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SiteRow {
    pub origin: String,
    pub robots_state: crate::robots::RobotsState,
    /// The robots.txt Crawl-delay as applied (after the cap), if any.
    pub crawl_delay_ms: Option<u64>,
    /// The Crawl-delay as the site asked for it, before the cap (`--max-crawl-delay-ms`):
    /// above `crawl_delay_ms` when it was capped.
    #[serde(default)]
    pub crawl_delay_asked_ms: Option<u64>,
    /// The delay between contacts now in force for this site.
    pub delay_ms: u64,
    pub delay_source: DelaySource,
    pub queued: u64,
    pub in_flight: u64,
    pub fetched: u64,
    pub errors: u64,
    /// Milliseconds until the site may next be contacted (0: now).
    pub next_allowed_in_ms: u64,
    /// Responses by status code.
    pub status: BTreeMap<String, u64>,
    /// The last few errors on this site (`path: reason`), oldest first.
    #[serde(default)]
    pub recent_errors: Vec<String>,
    /// A one-line summary of the robots.txt rules obeyed, e.g.
    /// `group "*": 2 allow, 3 disallow; 312 bytes; last answer 200`.
    #[serde(default)]
    pub robots_rules: String,
}

/// One entry of the back-queue heap.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeapRow {
    pub origin: String,
    pub ready_in_ms: u64,
    pub queue_len: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// Over the last few seconds.
    pub pages_per_s: f64,
    pub bytes_per_s: f64,
    /// Every response (a 404, a robots.txt, a redirect as well as a page), over the same
    /// seconds: a crawl whose answers are all errors still shows it is working.
    #[serde(default)]
    pub responses_per_s: f64,
    /// Pages per second, one value per second, oldest first (up to a minute).
    pub history: Vec<f64>,
}

/// A crawl's average rates since its start, over every run (see [`Snapshot::averages`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Averages {
    /// URLs fetched (`resources.fetched`) per second.
    pub pages_per_s: f64,
    /// Body bytes (`http.bytes`) per second.
    pub bytes_per_s: f64,
    /// Responses (the sum of `http.status`) per second.
    pub responses_per_s: f64,
}

impl Averages {
    /// A snapshot's own: its counts over its `crawl_elapsed_s`.
    pub fn of(s: &Snapshot) -> Averages {
        Averages::over(
            s.resources.fetched,
            s.http.bytes,
            s.http.status.values().sum(),
            s.crawl_elapsed_s,
        )
    }

    /// The counts over `secs` seconds; all 0 before the first moment has passed.
    pub fn over(pages: u64, bytes: u64, responses: u64, secs: f64) -> Averages {
        if secs <= 0.0 {
            return Averages::default();
        }
        Averages {
            pages_per_s: pages as f64 / secs,
            bytes_per_s: bytes as f64 / secs,
            responses_per_s: responses as f64 / secs,
        }
    }
}

/// The reorder window and the committer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    /// Which stores are written: `warc`, `mirror`, `both`, `index` (`--store none` in a crawl
    /// folder: the index and the checkpoint only), `checkpoint` (`--store none --no-index`),
    /// or `none` without `--out`.
    pub store: String,
    /// The next sequence number to commit: everything below it is decided (stored or skipped).
    pub next_seq: u64,
    /// Results that arrived but wait for an earlier one.
    pub waiting: u64,
    /// Dispatched fetches not back yet.
    pub in_flight: u64,
    /// Fetches dispatched again because their result was overdue.
    pub rescheduled: u64,
    /// Exchanges written to the store.
    pub committed: u64,
    /// The store's first write error, if any (the crawl pauses on it).
    pub error: Option<String>,
    /// This run's number in the crawl folder: 1 for a fresh crawl, 2 after one resume...
    #[serde(default)]
    pub run: u64,
    /// The committed high-water mark this run resumed from.
    #[serde(default)]
    pub resumed_from: Option<u64>,
    /// URLs the last checkpoint held as fetched above its mark, taken back and fetched again.
    /// URLs fetched after that checkpoint was written are fetched again too, but no checkpoint
    /// knew of them, so they are not counted: after a kill this is a lower bound.
    #[serde(default)]
    pub refetched: u64,
    /// Checkpoints written by this run.
    #[serde(default)]
    pub checkpoints: u64,
    /// Whether committed pages go to the full-text index: a crawl folder without
    /// `--no-index`.
    #[serde(default)]
    pub index: bool,
}

/// Who gave a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandSource {
    Key,
    Api,
    /// The command port (`crawl --command-port`).
    Port,
    Signal,
    Library,
    /// The shared crawl's command log (`crawl --cluster`): given by the member or `ctl` that
    /// [`CommandRecord::by`] names.
    Cluster,
    /// The headless reporter: a stop for a crawl whose page store failed when nobody could
    /// act on its pause (no dashboard, `--control` or `--command-port`).
    Headless,
}

/// A command given while running: what, when, by whom.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRecord {
    pub at_s: f64,
    pub source: CommandSource,
    pub command: String,
    /// Who gave a shared crawl's command: a member's id or `ctl@host:pid`, and how.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// A warning worth showing, e.g. a capped Crawl-delay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogLine {
    pub at_s: u64,
    pub level: String,
    pub message: String,
}
