//! The command line: clap arguments, validated into the library's options, one function a verb.
//!
//! It owns argument parsing, the runtime, signals and what is printed for a person or a script.
//! It never holds crawl logic: every verb calls the library.

use std::io::{IsTerminal as _, Write as _};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};

use crate::config::CrawlConfig;
use crate::dashboard::DashboardOptions;
use crate::engine::{self, Command as EngineCommand, Summary};
use crate::headless;
use crate::signals::Signals;
use crate::snapshot::CommandSource;
use crate::testweb::{self, GenOptions, ServeOptions, Server};

#[derive(Debug, Parser)]
#[command(
    name = "crawltop",
    version,
    about = "A polite, fast web crawler with a live terminal dashboard"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a synthetic web: W sites of P pages with links inside and across sites, robots.txt
    /// files, and optionally a hostile site. A manifest.json beside them holds the right answers.
    GenSite(GenSiteArgs),
    /// Serve a generated web on loopback, one port per site, logging every request.
    Serve(ServeArgs),
    /// Crawl from the seeds, politely: robots.txt obeyed, one connection per site, a delay
    /// between contacts. Prints progress on stderr; writes the stats files on every exit.
    Crawl(Box<CrawlArgs>),
    /// Generate a small web in a temporary folder, serve it on loopback, and crawl it with the
    /// dashboard: the quickest way to see crawltop work. Cleans up on exit unless --keep.
    Demo(DemoArgs),
    /// Talk to a running crawl's control API: stats, metrics, sites, pause, resume, stop,
    /// export, delay MS, workers N.
    Ctl(CtlArgs),
    /// Search the pages a crawl stored in DIR (its --out): ranked pages with their matching
    /// lines. Ties go to the page committed first.
    Search(SearchArgs),
    /// The page of DIR's crawl where WORD occurs most, with the count (ties: committed first).
    Maxcount(CountArgs),
    /// The page where WORD occurs least but at least once, with the count (ties: committed first).
    Mincount(CountArgs),
    /// Pages, bytes, words and lines of the text indexed in DIR.
    Wc(WcArgs),
    /// Run --extract fields over the pages DIR's WARC files hold up to its checkpoint (a killed
    /// crawl's up to its last one): one JSON line per HTML page that matched anything, in commit
    /// order.
    Extract(ExtractArgs),
    /// Build DIR's full-text index from its WARC files, up to its checkpoint: for a crawl made
    /// with --no-index, or one whose index/ was lost. Pages are parsed as the crawl parses them;
    /// the folder is then searchable, and a resume of it indexes.
    Index(IndexArgs),
    /// Start a Redis Cluster on loopback from Debian's redis-server (for trying the cluster mode
    /// on one machine): --masters N masters, --replicas R replicas each, data in DIR. Prints
    /// the nodes' URLs. Run again on the same DIR after cluster-down to restart it with its data.
    ClusterUp(ClusterUpArgs),
    /// Stop the Redis Cluster started from DIR (its data stays in DIR).
    ClusterDown(ClusterDownArgs),
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// The crawl folder (--out of a crawl with --store warc or both).
    pub dir: PathBuf,
    /// A field: NAME=CSS for the matching elements' text, NAME=CSS@attr for an attribute's
    /// value (repeatable), e.g. --extract 'title=h1' --extract 'links=a@href'.
    #[arg(long = "extract", value_name = "NAME=CSS[@attr]", required = true)]
    pub fields: Vec<String>,
    /// Pages larger than this are not parsed; their line says "skipped": "too large" (as does
    /// "an element has over 10000 attributes" for such a page). A page's values stop at 8 MiB
    /// ("cut" in its line).
    #[arg(long, default_value_t = crate::extract::DEFAULT_MAX_BYTES, value_name = "BYTES")]
    pub extract_max_bytes: usize,
    /// Write the lines to FILE (atomically: a temporary file, then a rename) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub extract_out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    /// The crawl folder (--out of a crawl with --store warc or both), not being crawled.
    pub dir: PathBuf,
    /// Build it again when DIR already has an index (the old one stays until the new one is
    /// whole).
    #[arg(long)]
    pub replace: bool,
    /// What the index writer buffers before it writes a segment, in MB.
    #[arg(long, default_value_t = crate::index::DEFAULT_MEMORY_MB, value_name = "MB",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new()
              .range(crate::index::MIN_MEMORY_MB as u64..=4096))]
    pub index_memory_mb: usize,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// DIR [DIR...] WORDS: the crawl folder (--out of the crawl), or several (the members of a
    /// shared crawl: one ranking over all), then words; quotes make a phrase, AND/OR/NOT,
    /// +word, -word and `title:` work as in tantivy's query syntax (quote a query with -word,
    /// or put -- before the words: it would be read as a flag).
    #[arg(required = true, num_args = 1.., value_name = "DIR [DIR...] WORDS")]
    pub args: Vec<std::ffi::OsString>,
    /// At most this many pages (1 or more).
    #[arg(long, default_value_t = 10, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub limit: usize,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CountArgs {
    /// DIR [DIR...] WORD: the crawl folder (--out of the crawl), or several (a shared crawl's
    /// members, counted as one crawl), then the word.
    #[arg(required = true, num_args = 1.., value_name = "DIR [DIR...] WORD")]
    pub args: Vec<std::ffi::OsString>,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct WcArgs {
    /// The crawl folder (--out of the crawl), or several (a shared crawl's members, summed).
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `crawltop demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Generate the web into DIR and keep it (it must be empty or absent).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Number of sites (a Crawl-delay site, a site without robots.txt, and a disallowed folder
    /// are among them; a hostile site, a robots.txt-500 site and two sites whose robots.txt
    /// redirects are added).
    #[arg(long, default_value_t = 8)]
    pub sites: usize,
    /// Pages per site.
    #[arg(long, default_value_t = 400)]
    pub pages: usize,
    /// Politeness delay, in ms.
    #[arg(long, default_value_t = 100)]
    pub delay_ms: u64,
    /// Concurrent fetches.
    #[arg(long, default_value_t = 16)]
    pub workers: usize,
    /// No dashboard: progress lines on stderr (also when stdout is no terminal, or TERM is
    /// dumb, empty or unset).
    #[arg(long)]
    pub headless: bool,
    /// Where the stats go [default: crawltop-stats-TIMESTAMP.json in the current folder].
    #[arg(long)]
    pub stats_out: Option<PathBuf>,
    /// Keep the crawl folder (pages as WARC, the search index) in DIR. Without it the pages are
    /// indexed in a temporary folder, removed at exit, so that `/` can search them meanwhile.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `crawltop crawl`: every flag is optional and overrides the same key of `--config`.
#[derive(Debug, Clone, Args)]
#[allow(clippy::struct_excessive_bools)] // command-line switches are bools by nature
pub struct CrawlArgs {
    /// Seed URLs (http or https).
    pub seeds: Vec<String>,
    /// A file of seed URLs, one a line; blank lines and lines starting with # are skipped.
    #[arg(long)]
    pub seeds_file: Option<PathBuf>,
    /// A TOML file of the flags, named with `_` (`delay_ms = 100`, `scope = "host"`, `index =
    /// false` for --no-index, `seeds_file = "seeds.txt"`, `headless = true`, ...); flags win.
    /// Unknown keys are an error. Paths are read from the working directory.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Concurrent fetches [default: 16].
    #[arg(long)]
    pub workers: Option<usize>,
    /// Connections to one site at a time [default: 1].
    #[arg(long)]
    pub per_site: Option<usize>,
    /// Politeness delay between two contacts of one site, in ms [default: 1000].
    #[arg(long)]
    pub delay_ms: Option<u64>,
    /// Cap on a robots.txt Crawl-delay, in ms [default: 30000].
    #[arg(long)]
    pub max_crawl_delay_ms: Option<u64>,
    /// Also wait FACTOR times a site's last response time between its contacts [default: off].
    #[arg(long, value_name = "FACTOR")]
    pub adaptive_delay: Option<f64>,
    /// Link depth limit: seeds are 0, links on a depth-d page are d+1 [default: 20].
    #[arg(long)]
    pub depth: Option<u32>,
    /// Queue at most N URLs in all [default: no limit].
    #[arg(long)]
    pub max_pages: Option<u64>,
    /// Queue at most N URLs of one site [default: no limit].
    #[arg(long)]
    pub max_pages_per_site: Option<u64>,
    /// What may be crawled: the seeds' origins, hosts, registrable domains, or anything
    /// [default: origin].
    #[arg(long, value_enum)]
    pub scope: Option<crate::scope::ScopeKind>,
    /// Only URLs matching this regex (repeatable: any of them).
    #[arg(long)]
    pub include: Vec<String>,
    /// Never URLs matching this regex (repeatable; wins over --include).
    #[arg(long)]
    pub exclude: Vec<String>,
    /// The User-Agent header [default: crawltop/VERSION (+<https://github.com/crawltop/crawltop>)].
    /// robots.txt groups, robots meta tags (besides name=robots) and X-Robots-Tag names are
    /// matched against its product token: the letters, - and _ it starts with (auditbot for
    /// "auditbot/1.0 (+https://...)").
    #[arg(long)]
    pub user_agent: Option<String>,
    /// Do not fetch or obey robots.txt (only for sites you own).
    #[arg(long)]
    pub ignore_robots: bool,
    /// Patience for a connection, in ms [default: 10000].
    #[arg(long)]
    pub connect_timeout_ms: Option<u64>,
    /// Total patience for one fetch, headers and body, in ms [default: 30000].
    #[arg(long)]
    pub timeout_ms: Option<u64>,
    /// Body cap after decompression; the rest is dropped and the URL says so [default: 10 MiB].
    #[arg(long)]
    pub max_body_bytes: Option<u64>,
    /// Redirect hops followed from one URL [default: 10].
    #[arg(long)]
    pub max_redirects: Option<u32>,
    /// Retries of one URL after 429/503 answers [default: 3].
    #[arg(long)]
    pub max_retries: Option<u32>,
    /// Retries of a robots.txt that answers 5xx or cannot be reached; then nothing is fetched
    /// from that site [default: 4].
    #[arg(long)]
    pub robots_retries: Option<u32>,
    /// How long a robots.txt answer is obeyed before the site is asked again (at most a day, as
    /// RFC 9309 asks; a refresh that fails keeps the old answer) [default: 86400000].
    #[arg(long)]
    pub robots_max_age_ms: Option<u64>,
    /// Keep cookies, one jar per site [default: off].
    #[arg(long)]
    pub cookies: bool,
    /// Send every request through this HTTP proxy.
    #[arg(long)]
    pub proxy: Option<String>,
    /// No dashboard, progress lines on stderr (the default when stdout is not a terminal).
    #[arg(long)]
    pub headless: bool,
    /// The crawl folder: pages are stored here (see --store); a second crawltop on the same
    /// folder refuses to start.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Which page stores to write into --out [default: warc]. A crawl folder keeps it: a
    /// resume with another is refused.
    #[arg(long, value_enum)]
    pub store: Option<crate::store::committer::StoreKind>,
    /// Start over in --out: delete the crawl kept there (WARC files, mirror, index,
    /// checkpoint) instead of resuming it. Asks first when stdin is a terminal.
    #[arg(long, requires = "out")]
    pub fresh: bool,
    /// Start a new WARC file past this size [default: 1 GiB].
    #[arg(long)]
    pub warc_max_bytes: Option<u64>,
    /// Write the checkpoint in --out this often [default: 1000]. After a kill, what was fetched
    /// after the last checkpoint is fetched again: this much crawling, plus whatever finished
    /// while the oldest fetch then in flight was still running (pages are committed in the
    /// order they were scheduled, so one slow fetch, up to --timeout-ms, holds the mark).
    #[arg(long, value_name = "MS")]
    pub checkpoint_ms: Option<u64>,
    /// With --out: URLs each frontier queue keeps in memory; longer queues wait on disk in
    /// DIR/frontier-spill.redb [default: 4096].
    #[arg(long, value_name = "N")]
    pub queue_memory: Option<usize>,
    /// With --out: results that may wait in memory for an earlier, slower one before new
    /// fetches wait (commit order is dispatch order) [default: 4096; and 64 MiB].
    #[arg(long, value_name = "N")]
    pub commit_window: Option<usize>,
    /// With --out: what the index writer buffers before it writes a segment, in MB (15 to
    /// 4096). Less memory means more, smaller segments to merge: 15 indexed at half the speed
    /// of 32 in our measurement [default: 32].
    #[arg(long, value_name = "MB")]
    pub index_memory_mb: Option<usize>,
    /// With --out: store the pages and keep the checkpoint, but build no full-text index (and
    /// extract no page text), for an archive that is not searched here: in our measurement,
    /// more than twice the pages a second of the same crawl with the index, in half the memory.
    /// A crawl folder keeps its choice: resuming it the other way is refused.
    #[arg(long, requires = "out")]
    pub no_index: bool,
    /// Threads that parse fetched pages (and run --extract), fed by a bounded queue; while it
    /// is full, workers holding a fetched page wait, shown as blocked by parse [default: the
    /// number of cores].
    #[arg(long, value_name = "N")]
    pub parse_threads: Option<usize>,
    /// Extract a field from every HTML page as it is crawled: NAME=CSS takes each match's
    /// text, NAME=CSS@attr an attribute's value (repeatable), e.g. --extract 'title=h1'
    /// --extract 'links=a@href'. Needs --extract-out and --out. A bad selector is an error
    /// before anything is fetched.
    #[arg(long = "extract", value_name = "NAME=CSS[@attr]")]
    pub extract: Vec<String>,
    /// With --out: one JSON line per HTML page that matched a field, {"url", "seq",
    /// "fields": {NAME: [values]}}, appended in commit order as pages are committed (the same
    /// lines `crawltop extract DIR` writes from the WARC files); a resumed crawl continues the
    /// file without repeating or losing a line.
    #[arg(long, value_name = "FILE")]
    pub extract_out: Option<PathBuf>,
    /// Pages larger than this are not extracted (no tree is built): their line says
    /// "skipped": "too large" [default: 2 MiB] (as does "an element has over 10000
    /// attributes" for such a page). A page's values stop at 8 MiB ("cut" in its line).
    #[arg(long, value_name = "BYTES")]
    pub extract_max_bytes: Option<usize>,
    /// Write the final statistics (JSON) here, on every exit.
    #[arg(long)]
    pub stats_out: Option<PathBuf>,
    /// Write one CSV row per site here.
    #[arg(long)]
    pub sites_out: Option<PathBuf>,
    /// Write one JSON line per URL here.
    #[arg(long)]
    pub urls_out: Option<PathBuf>,
    /// Write the crawl's log (warnings, errors) to FILE; nothing is ever printed over the
    /// dashboard.
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Serve the control API (HTTP, JSON) on ADDR, e.g. 127.0.0.1:7070; anything but loopback
    /// needs --control-token.
    #[arg(long, value_name = "ADDR")]
    pub control: Option<std::net::SocketAddr>,
    /// Every control API request must carry `Authorization: Bearer TOKEN`; a command port
    /// client must send `AUTH TOKEN` first. Better from the environment, `CRAWLTOP_CONTROL_TOKEN`
    /// (the flag wins): a command line is visible to every user of the machine (ps).
    #[arg(long, value_name = "TOKEN")]
    pub control_token: Option<String>,
    /// Take commands as lines of text on ADDR, e.g. 127.0.0.1:7071: STATS, PAUSE, RESUME,
    /// DELAY MS, WORKERS N, EXPORT, SITES, SHUTDOWN, SEARCH WORDS, MAXCOUNT W, MINCOUNT W,
    /// WORDCOUNT, QUIT; anything but loopback needs --control-token.
    #[arg(long, value_name = "ADDR")]
    pub command_port: Option<std::net::SocketAddr>,
    /// Join a shared crawl on Redis (Cluster, or one plain server): seed nodes, e.g.
    /// redis://127.0.0.1:7000,redis://127.0.0.1:7001. Needs --crawl-id. A password: better
    /// `redis_password` in --config or `CRAWLTOP_REDIS_PASSWORD` than in a URL (ps shows it).
    #[arg(long, value_name = "URLS", value_delimiter = ',')]
    pub cluster: Vec<String>,
    /// The shared crawl's name (letters, digits, '-', '_', '.'); the first member creates it.
    #[arg(long, value_name = "NAME")]
    pub crawl_id: Option<String>,
    /// How long a member's lease on a site lasts without renewal, in ms [default: 10000]:
    /// how long a killed member's sites wait before another member takes them.
    #[arg(long, value_name = "MS")]
    pub lease_ms: Option<u64>,
    /// The Redis password from `--config` (`redis_password`): deliberately no flag, since a
    /// command line is readable by every user of the machine (ps).
    #[arg(skip)]
    pub redis_password: Option<String>,
}

/// `--cluster`, `--crawl-id`, `--lease-ms`, checked.
#[derive(Debug, Clone)]
pub struct ClusterArgs {
    pub nodes: Vec<String>,
    pub crawl_id: crate::cluster::shared::CrawlId,
    pub lease: std::time::Duration,
    /// For URLs that carry none: `redis_password` in `--config`, else [`REDIS_PASSWORD_ENV`].
    pub password: Option<Secret>,
}

/// A password: shown as `***` by `Debug`, so no debug print of the arguments gives it away.
#[derive(Clone)]
pub struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// Where the Redis password of a shared crawl may come from besides `--config`'s
/// `redis_password` (which wins) and the URLs themselves (`redis://:PASSWORD@HOST`, which win
/// over both but show in ps). Named for crawltop rather than read from redis-cli's
/// `REDISCLI_AUTH`: a password exported for redis-cli's server must not be sent, unasked, to
/// every Redis a crawl is pointed at.
pub const REDIS_PASSWORD_ENV: &str = "CRAWLTOP_REDIS_PASSWORD";

/// The Redis password in [`REDIS_PASSWORD_ENV`], if set and not empty.
fn redis_password_from_env() -> Option<Secret> {
    std::env::var(REDIS_PASSWORD_ENV)
        .ok()
        .filter(|p| !p.is_empty())
        .map(Secret)
}

/// `nodes` with `password` put in each URL that has none.
fn nodes_with(nodes: &[String], password: Option<&Secret>) -> anyhow::Result<Vec<String>> {
    Ok(match password {
        Some(p) => crate::cluster::shared::with_password(nodes, &p.0)?,
        None => nodes.to_vec(),
    })
}

/// The shortest and longest lease a member may ask for.
const LEASE_MS: (u64, u64) = (1_000, 3_600_000);

impl CrawlArgs {
    /// The shared crawl to join, if any: both --cluster and --crawl-id, or neither.
    pub fn cluster_args(&self) -> anyhow::Result<Option<ClusterArgs>> {
        let nodes: Vec<String> = self
            .cluster
            .iter()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect();
        match (nodes.is_empty(), &self.crawl_id) {
            (true, None) => {
                if self.lease_ms.is_some() {
                    anyhow::bail!("--lease-ms needs --cluster and --crawl-id");
                }
                Ok(None)
            }
            (true, Some(_)) => anyhow::bail!("--crawl-id needs --cluster URL[,URL...]"),
            (false, None) => anyhow::bail!("--cluster needs --crawl-id NAME"),
            (false, Some(id)) => {
                let lease_ms = self.lease_ms.unwrap_or(
                    u64::try_from(crate::cluster::shared::DEFAULT_LEASE.as_millis())
                        .unwrap_or(10_000),
                );
                if !(LEASE_MS.0..=LEASE_MS.1).contains(&lease_ms) {
                    anyhow::bail!(
                        "--lease-ms is {lease_ms}; it must be from {} to {}",
                        LEASE_MS.0,
                        LEASE_MS.1
                    );
                }
                Ok(Some(ClusterArgs {
                    nodes,
                    crawl_id: crate::cluster::shared::CrawlId::new(id)?,
                    lease: std::time::Duration::from_millis(lease_ms),
                    password: self
                        .redis_password
                        .clone()
                        .filter(|p| !p.is_empty())
                        .map(Secret)
                        .or_else(redis_password_from_env),
                }))
            }
        }
    }
}

/// Where a control token may come from besides a flag, which every user of the machine can
/// read (`ps`, `/proc/PID/cmdline`).
pub const TOKEN_ENV: &str = "CRAWLTOP_CONTROL_TOKEN";

/// The control token in [`TOKEN_ENV`], if set and not empty.
fn token_from_env() -> Option<String> {
    std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty())
}

/// This process's id in a shared crawl: `host:pid`.
pub fn member_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_string());
    format!("{host}:{}", std::process::id())
}

/// `crawltop ctl`: talk to a running crawl's control API.
#[derive(Debug, Args)]
pub struct CtlArgs {
    /// ADDR COMMAND [ARG]: the control API's address (127.0.0.1:7070, or the URL the crawl
    /// prints: `http://127.0.0.1:7070`), then stats | metrics | sites | pause | resume | stop |
    /// export | delay MS | workers N, or, on a crawl with --out, search WORDS... | maxcount
    /// WORD | mincount WORD | wc (JSON, as the API answers). With --cluster, no address: stats
    /// | pause | resume | stop | delay MS | workers N for the whole shared crawl.
    #[arg(num_args = 1.., required = true, value_name = "ADDR COMMAND")]
    pub words: Vec<String>,
    /// Talk to a shared crawl on Redis instead of one member (seed node URLs, comma-separated;
    /// a password from `CRAWLTOP_REDIS_PASSWORD` goes to URLs without one).
    #[arg(long, value_name = "URLS", value_delimiter = ',')]
    pub cluster: Vec<String>,
    /// The shared crawl's name (with --cluster).
    #[arg(long, value_name = "NAME")]
    pub crawl_id: Option<String>,
    /// The bearer token the crawl was started with [default: `CRAWLTOP_CONTROL_TOKEN` from the
    /// environment, which, unlike a flag, other users of the machine cannot read with ps].
    #[arg(long)]
    pub token: Option<String>,
    /// `sites`: the order (queued, fetched, errors, next, origin).
    #[arg(long)]
    pub sort: Option<String>,
    /// `sites`: how many rows (1 to 1000; the API's default is 50); `search`: how many pages
    /// (1 to 100; 20 by default).
    #[arg(long)]
    pub limit: Option<String>,
    /// `sites`: rows to skip.
    #[arg(long)]
    pub offset: Option<String>,
    /// `sites`: only origins containing this text.
    #[arg(long)]
    pub filter: Option<String>,
}

#[derive(Debug, Args)]
pub struct GenSiteArgs {
    /// Folder to write the web into (created; must be empty unless --force).
    #[arg(long)]
    pub out: PathBuf,
    /// Number of sites.
    #[arg(long, default_value_t = 4)]
    pub sites: usize,
    /// Pages in each site's link tree (the index page included). Each site also gets 6 more HTML
    /// pages (reachable only through nofollow links, a meta-nofollow page and what it links, a
    /// noindex page), 3 under /private/ when its robots.txt has rules (site00, site04 and up),
    /// a .txt and a .png.
    #[arg(long, default_value_t = 50)]
    pub pages: usize,
    /// Seed: the same seed and sizes give the same web, byte for byte.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A UTF-8 text file to take page text from, instead of the embedded book.
    #[arg(long)]
    pub text: Option<PathBuf>,
    /// Add the hostile site (misbehaving paths), a site whose robots.txt answers 500, one whose
    /// robots.txt redirects (301) to the file that holds its rules, and one whose robots.txt
    /// redirects to that file on the other site.
    #[arg(long)]
    pub hostile: bool,
    /// The Crawl-delay, in seconds, of the site that has one (the second: site01).
    #[arg(long, default_value_t = 1.0)]
    pub crawl_delay: f64,
    /// Replace a web generated in --out before (never a folder without manifest.json).
    #[arg(long)]
    pub force: bool,
    /// Add two heavy sites for parser benchmarks: `listings` (highlighted source listings of
    /// 1 to 8 MB) and `docs` (300+ links a page, a 100-page rel=next chain).
    #[arg(long)]
    pub heavy: bool,
    /// With --heavy: the largest listing in MB (the smallest is an eighth of it) [default: 8].
    #[arg(long, value_name = "MB", requires = "heavy",
          value_parser = clap::value_parser!(u64).range(1..=MAX_HEAVY_MB))]
    pub heavy_mb: Option<u64>,
    /// Add N link farm sites (farm00, ...): pages of many links to mostly missing pages, made
    /// by `serve` on request (nothing on disk), for crawls that learn millions of URLs. The
    /// defaults (1,250 pages of 1,000 links) make 1,250,001 URLs a site.
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=testweb::generator::MAX_FARM_SITES as u64))]
    pub link_farm: Option<u64>,
    /// With --link-farm: links on every farm page [default: 1000].
    #[arg(long, value_name = "N", requires = "link_farm",
          value_parser = clap::value_parser!(u64).range(1..=testweb::farm::MAX_LINKS_PER_PAGE))]
    pub farm_links: Option<u64>,
    /// With --link-farm: pages that exist (answer 200) on each farm site; the other linked
    /// pages answer 404 [default: 1250].
    #[arg(long, value_name = "N", requires = "link_farm",
          value_parser = clap::value_parser!(u64).range(1..=testweb::farm::MAX_PAGES))]
    pub farm_pages: Option<u64>,
}

/// `gen-site --heavy-mb`'s ceiling: the generator's bound on a listing's size.
const MAX_HEAVY_MB: u64 = (testweb::generator::MAX_LISTING_BYTES >> 20) as u64;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The folder gen-site wrote (it holds manifest.json; any other folder is refused).
    pub dir: PathBuf,
    /// Let the OS choose each site's port (the default; only 0 is accepted).
    #[arg(long, value_parser = clap::value_parser!(u16).range(0..=0), conflicts_with = "base_port")]
    pub port: Option<u16>,
    /// Give the sites consecutive ports from N, in name order.
    #[arg(long)]
    pub base_port: Option<u16>,
    /// Loopback address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// The command port (STATS, SHUTDOWN), on the same address; 0 lets the OS choose.
    #[arg(long, default_value_t = 0)]
    pub command_port: u16,
    /// Write every request as a JSON line to FILE.
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// Every response waits MS milliseconds before its first byte, like a slow server's
    /// (0: none; at most 60000).
    #[arg(long, value_name = "MS", default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..=MAX_LATENCY_MS))]
    pub latency_ms: u64,
}

/// `serve --latency-ms`'s ceiling: a minute is slower than any crawler waits for a first byte.
const MAX_LATENCY_MS: u64 = 60_000;

/// Runs one verb.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::GenSite(args) => gen_site(&args),
        Command::Serve(args) => serve(args),
        Command::Crawl(args) => crawl(&args),
        Command::Demo(args) => demo(&args),
        Command::Ctl(args) => ctl(&args),
        Command::Search(args) => search(&args),
        Command::Maxcount(args) => count(&args, true),
        Command::Mincount(args) => count(&args, false),
        Command::Wc(args) => wc(&args),
        Command::Extract(args) => extract(&args),
        Command::Index(args) => index(&args),
        Command::ClusterUp(args) => cluster_up(&args),
        Command::ClusterDown(args) => cluster_down(&args),
    }
}

#[derive(Debug, Args)]
pub struct ClusterUpArgs {
    /// The cluster's folder: one sub-folder per node, and cluster.json naming the ports.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Masters (a Redis Cluster needs at least 3).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub masters: usize,
    /// Replicas per master.
    #[arg(long, value_name = "R", default_value_t = 0)]
    pub replicas: usize,
}

#[derive(Debug, Args)]
pub struct ClusterDownArgs {
    /// The folder cluster-up was given.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
}

fn cluster_up(args: &ClusterUpArgs) -> anyhow::Result<ExitCode> {
    use crate::cluster::local::{LocalCluster, Shape};
    let shape = Shape {
        masters: args.masters,
        replicas: args.replicas,
    };
    let cluster = LocalCluster::up(&args.dir, shape)?;
    let dir = cluster.dir().to_path_buf();
    let urls = cluster.detach();
    println!("{}", urls.join(","));
    crate::say!(
        "a Redis Cluster of {} masters and {} replicas each runs on loopback, data in {}; \
         stop it with: crawltop cluster-down --dir {}",
        args.masters,
        args.replicas,
        dir.display(),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn cluster_down(args: &ClusterDownArgs) -> anyhow::Result<ExitCode> {
    let stopped = crate::cluster::local::LocalCluster::down(&args.dir)?;
    if stopped.is_empty() {
        crate::say!("no node of {} was running", args.dir.display());
    } else {
        crate::say!(
            "stopped {} nodes of {} (their data stays there)",
            stopped.len(),
            args.dir.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn gen_site(args: &GenSiteArgs) -> anyhow::Result<ExitCode> {
    let mut opts = GenOptions::new(args.sites, args.pages)
        .seed(args.seed)
        .hostile(args.hostile)
        .crawl_delay_s(args.crawl_delay);
    if args.heavy {
        let mut heavy = testweb::HeavyOptions::default();
        if let Some(mb) = args.heavy_mb {
            // At most MAX_HEAVY_MB (64): the parser above keeps the product small.
            heavy.listing_max_bytes = usize::try_from(mb << 20)?;
        }
        opts = opts.heavy(Some(heavy));
    }
    if let Some(sites) = args.link_farm {
        let mut farm = testweb::LinkFarm::default();
        farm.links_per_page = args.farm_links.unwrap_or(farm.links_per_page);
        farm.pages = args.farm_pages.unwrap_or(farm.pages);
        // At most MAX_FARM_SITES (64), as the parser above checked.
        opts = opts.link_farm(usize::try_from(sites)?, farm);
    }
    if let Some(path) = &args.text {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the text file {}", path.display()))?;
        opts = opts.text(text);
    }
    let manifest = testweb::generate(&args.out, &opts, args.force)?;
    let pages: usize = manifest.sites.iter().map(|s| s.pages.len()).sum();
    let sites = manifest.sites.len();
    println!(
        "wrote {sites} site{} to {} ({pages} reachable URLs); the right answers are in {}",
        if sites == 1 { "" } else { "s" },
        args.out.display(),
        args.out.join(testweb::manifest::MANIFEST_FILE).display()
    );
    let farms: Vec<_> = manifest
        .sites
        .iter()
        .filter_map(|s| s.farm.as_ref())
        .collect();
    if let Some(first) = farms.first() {
        let known: u64 = farms.iter().map(|f| f.known_urls).sum();
        println!(
            "link farm: {} sites of {} pages x {} links, {known} URLs to learn; serve makes \
             the pages on request",
            farms.len(),
            first.farm.pages,
            first.farm.links_per_page
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut opts = ServeOptions::new(&args.dir);
    opts.bind = args.bind;
    opts.base_port = args.base_port;
    opts.command_port = Some(args.command_port);
    opts.log_file = args.log;
    opts.latency = Duration::from_millis(args.latency_ms);
    // A long-running server keeps counters, not every record.
    opts.keep_records = false;
    runtime()?.block_on(async move {
        // Before the ports are printed: a script may signal as soon as it reads them.
        let mut signals = Signals::new()?;
        let server = Server::start(opts).await?;
        let line = serde_json::to_string(server.listening())?;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{line}")?;
        stdout.flush()?;
        drop(stdout);
        crate::say!(
            "serving {} sites from {}; stop with Ctrl-C, SIGTERM or SHUTDOWN on {}",
            server.sites().len(),
            args.dir.display(),
            server
                .command_addr()
                .map_or_else(|| "-".into(), |a| a.to_string())
        );
        tokio::select! {
            () = server.shutdown_requested() => {}
            _ = signals.next() => {}
        }
        server.shutdown();
        tokio::select! {
            () = server.finished() => {}
            () = signals.interrupt() => {
                crate::say!("second interrupt: exiting without waiting");
            }
            () = tokio::time::sleep(Duration::from_secs(30)) => {}
        }
        let stats = server.stats();
        crate::say!(
            "served {} requests, {} bytes in {:.1} s",
            stats.requests,
            stats.bytes,
            stats.uptime_s
        );
        Ok(ExitCode::SUCCESS)
    })
}

/// The keys of a `--config` file that say how this run starts, not what the crawl is: the
/// flags of the same names, which win. They are not the crawl's settings, so they are never
/// stored with a crawl, compared on a resume or between members, or exported.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct RunKeys {
    seeds_file: Option<PathBuf>,
    headless: Option<bool>,
    log: Option<PathBuf>,
    control: Option<std::net::SocketAddr>,
    control_token: Option<String>,
    cluster: Option<Vec<String>>,
    crawl_id: Option<String>,
    lease_ms: Option<u64>,
    redis_password: Option<String>,
}

/// [`RunKeys`]'s names, taken out of the file before the rest is read as the crawl's settings.
const RUN_KEYS: [&str; 9] = [
    "seeds_file",
    "headless",
    "log",
    "control",
    "control_token",
    "cluster",
    "crawl_id",
    "lease_ms",
    "redis_password",
];

/// A `--config` file: the crawl's settings and the run's keys.
///
/// The file is parsed once, with the place of every key and value; the run's keys are taken
/// out of the parsed table before the rest is read as the crawl's settings, so an error in
/// either part (an unknown key, a wrong type) names its line and column in the file.
fn read_config(path: &std::path::Path) -> anyhow::Result<(CrawlConfig, RunKeys)> {
    use serde::Deserialize;
    use toml::de::{DeTable, Deserializer};
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the config file {}", path.display()))?;
    let bad = || format!("the config file {} does not parse", path.display());
    // Errors from a table built here carry places but not the text: give it back to them.
    let placed = |mut err: toml::de::Error| {
        err.set_input(Some(&text));
        err
    };
    let parsed = DeTable::parse(&text).with_context(bad)?;
    let span = parsed.span();
    let mut settings = parsed.into_inner();
    let mut run = DeTable::new();
    for key in RUN_KEYS {
        if let Some((key, value)) = settings.remove_entry(key) {
            run.insert(key, value);
        }
    }
    let run = RunKeys::deserialize(Deserializer::from(toml::Spanned::new(span.clone(), run)))
        .map_err(placed)
        .with_context(bad)?;
    let cfg = CrawlConfig::deserialize(Deserializer::from(toml::Spanned::new(span, settings)))
        .map_err(|err| {
            // The settings' list of keys leaves out the run's: name them too.
            if err.message().starts_with("unknown field") {
                let keys = RUN_KEYS.map(|key| format!("`{key}`")).join(", ");
                let shown = placed(err).to_string();
                anyhow::anyhow!("{}, or one of the run's keys {keys}", shown.trim_end())
            } else {
                anyhow::Error::new(placed(err))
            }
        })
        .with_context(bad)?;
    Ok((cfg, run))
}

impl CrawlArgs {
    /// These flags with the run's keys of `file` where no flag gave them.
    fn over(&self, file: RunKeys) -> CrawlArgs {
        let mut args = self.clone();
        args.seeds_file = args.seeds_file.or(file.seeds_file);
        args.headless |= file.headless.unwrap_or(false);
        args.log = args.log.or(file.log);
        args.control = args.control.or(file.control);
        args.control_token = args.control_token.or(file.control_token);
        if args.cluster.is_empty() {
            args.cluster = file.cluster.unwrap_or_default();
        }
        args.crawl_id = args.crawl_id.or(file.crawl_id);
        args.lease_ms = args.lease_ms.or(file.lease_ms);
        args.redis_password = file.redis_password;
        args
    }
}

/// The configuration a `crawl` runs with, and its flags: the `--config` file, then the flags
/// over it.
pub fn crawl_config(args: &CrawlArgs) -> anyhow::Result<(CrawlConfig, CrawlArgs)> {
    let (mut cfg, args) = match &args.config {
        Some(path) => {
            let (cfg, run) = read_config(path)?;
            (cfg, args.over(run))
        }
        None => (CrawlConfig::default(), args.clone()),
    };
    let args = &args;
    cfg.seeds.extend(args.seeds.iter().cloned());
    if let Some(path) = &args.seeds_file {
        let read = std::fs::File::open(path)
            .map(std::io::BufReader::new)
            .and_then(crate::config::SeedsFile::read)
            .with_context(|| format!("cannot read the seeds file {}", path.display()))?;
        if let Some(warning) = read.warning() {
            crate::say!("crawltop: the seeds file {}: {warning}", path.display());
        }
        cfg.seeds.extend(read.seeds);
    }
    macro_rules! set {
        ($($field:ident),*) => { $( if let Some(v) = args.$field.clone() { cfg.$field = v; } )* };
    }
    set!(
        workers,
        per_site,
        delay_ms,
        max_crawl_delay_ms,
        connect_timeout_ms,
        timeout_ms,
        max_body_bytes,
        max_redirects,
        max_retries,
        robots_retries,
        robots_max_age_ms,
        user_agent,
        store,
        warc_max_bytes,
        checkpoint_ms,
        queue_memory,
        commit_window,
        index_memory_mb,
        parse_threads,
        extract_max_bytes,
        scope
    );
    macro_rules! set_opt {
        ($($field:ident),*) => { $( if args.$field.is_some() { cfg.$field = args.$field.clone(); } )* };
    }
    set_opt!(
        adaptive_delay,
        max_pages,
        max_pages_per_site,
        proxy,
        stats_out,
        sites_out,
        urls_out,
        depth,
        out,
        extract_out,
        command_port
    );
    cfg.extract.extend(args.extract.iter().cloned());
    cfg.include.extend(args.include.iter().cloned());
    cfg.exclude.extend(args.exclude.iter().cloned());
    cfg.ignore_robots |= args.ignore_robots;
    cfg.cookies |= args.cookies;
    cfg.fresh |= args.fresh;
    cfg.index &= !args.no_index;
    cfg.shared = !args.cluster.is_empty();
    // A resume may leave out the seeds: the checkpoint has them, and the engine checks again.
    let resumes = !cfg.fresh
        && cfg
            .out
            .as_ref()
            .is_some_and(|d| d.join(crate::store::checkpoint::STATE_FILE).exists());
    if !(resumes && cfg.seeds.is_empty()) {
        cfg.validate()?;
    }
    // A resume too: an output on another, or in the crawl folder, loses one of them (audit 33).
    crate::config::check_outputs(
        cfg.out.as_deref(),
        &[
            ("--stats-out", cfg.stats_out.as_deref()),
            ("--sites-out", cfg.sites_out.as_deref()),
            ("--urls-out", cfg.urls_out.as_deref()),
            ("--extract-out", cfg.extract_out.as_deref()),
            ("--log", args.log.as_deref()),
        ],
    )?;
    // A new crawl starts its extract file empty: one that holds lines may be another crawl's,
    // whose resume needs them (audit 27).
    if let (false, false, Some(_), Some(path)) = (resumes, cfg.fresh, &cfg.out, &cfg.extract_out)
        && let Ok(meta) = std::fs::metadata(path)
        && meta.len() > 0
    {
        anyhow::bail!(
            "{} already holds {} bytes of extracted lines, perhaps another crawl's, and a new \
             crawl would empty it: remove it, give another --extract-out, or start over with \
             --fresh to replace it",
            path.display(),
            meta.len()
        );
    }
    Ok((cfg, args.clone()))
}

/// `--fresh` on a folder that holds a crawl: on a terminal, the user says yes first.
fn confirm_fresh(dir: &std::path::Path) -> anyhow::Result<bool> {
    use crate::store::checkpoint::{Checkpoint, Found};
    let stored = crate::store::committer::stored(dir);
    let state = dir.join(crate::store::checkpoint::STATE_FILE).exists();
    if !state && stored.is_empty() {
        return Ok(true);
    }
    let what = match Checkpoint::find(dir) {
        Ok(Found::Unfinished(l)) => {
            format!("an unfinished crawl ({} URLs known)", l.urls)
        }
        Ok(Found::Finished(l)) => format!("a finished crawl ({} URLs known)", l.urls),
        Ok(Found::Nothing) => format!(
            "what a crawl stored ({}) without its checkpoint",
            stored.join(", ")
        ),
        Err(e) => format!("a crawl whose checkpoint cannot be used ({e})"),
    };
    if !std::io::stdin().is_terminal() {
        // Nobody to ask: a script's log says what went (audit 30).
        crate::say!(
            "crawltop: --fresh, no terminal to ask: {} holds {what}, deleted to start over",
            dir.display()
        );
        return Ok(true);
    }
    eprint!(
        "{} holds {what}. Delete its pages, index and checkpoint and start over? [y/N] ",
        dir.display()
    );
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}

/// `crawltop-stats-20261121-063000.json`: the stats file's name when none was given.
pub fn default_stats_path() -> PathBuf {
    let secs = crate::clock::wall()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    PathBuf::from(format!(
        "crawltop-stats-{y:04}{m:02}{d:02}-{:02}{:02}{:02}.json",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    ))
}

/// Whether the terminal can show the dashboard; when it cannot, says why in one line.
fn terminal_draws() -> bool {
    let term = std::env::var_os("TERM");
    let Some(why) = crate::dashboard::terminal::unfit(term.as_deref()) else {
        return true;
    };
    crate::say!("crawltop: {why}: progress lines instead of the dashboard");
    false
}

/// Runs a crawl with the dashboard when stdout is a terminal that can draw it (and not
/// `headless`), else with progress lines; returns the summary.
async fn crawl_with_face(
    mut cfg: CrawlConfig,
    headless: bool,
    control: Option<std::net::SocketAddr>,
    token: Option<String>,
    cluster: Option<ClusterArgs>,
    signals: Signals,
) -> anyhow::Result<Option<Summary>> {
    let options = |addr| crate::control::ControlOptions {
        addr,
        token: token.clone(),
    };
    let control = control.map(options);
    let command_port = cfg.command_port.map(options);
    let control_room = control.is_some() || command_port.is_some();
    let dashboard = !headless && std::io::stdout().is_terminal() && terminal_draws();
    if dashboard && cfg.stats_out.is_none() {
        cfg.stats_out = Some(default_stats_path());
    }
    let stats_path = cfg.stats_out.as_ref().map(|p| p.display().to_string());
    let index_dir = (cfg.out.as_ref())
        .filter(|_| cfg.index)
        .map(|d| d.join("index"));
    let opts = DashboardOptions {
        delay_ms: cfg.delay_ms,
        workers: cfg.workers,
        stats_path: stats_path.clone(),
        index_dir: index_dir.clone(),
    };
    // A big crawl's checkpoint takes seconds to read (about 5 at 10 million URLs known): said
    // before, so the wait is not silent. A folder another crawl holds is refused first, alone.
    if let Some(dir) = (cfg.out.as_ref()).filter(|d| {
        !cfg.fresh
            && d.join(crate::store::checkpoint::STATE_FILE).exists()
            && !crate::store::committer::FolderLock::held_elsewhere(d)
    }) {
        crate::say!("crawltop: reading the checkpoint in {}", dir.display());
    }
    let handle = match cluster {
        Some(c) => join_cluster(cfg, c).await?,
        None => engine::spawn(cfg)?,
    };
    // Said once the engine holds the folder's lock: a locked folder is refused first.
    if let Some(dir) = handle.resuming() {
        crate::say!(
            "crawltop: resuming the crawl in {} (--fresh starts over)",
            dir.display()
        );
    }
    // Lives as long as this function: the API answers until the crawl is over.
    let _control = match control {
        Some(opts) => {
            let server = crate::control::serve_with_index(
                opts,
                index_dir.clone(),
                handle.snapshots(),
                handle.commander(),
            )
            .await?;
            crate::say!("crawltop: control API on http://{}", server.local_addr());
            Some(server)
        }
        None => None,
    };
    let _port = match command_port {
        Some(opts) => {
            let port =
                crate::control::serve_port(opts, index_dir, handle.snapshots(), handle.commander())
                    .await?;
            crate::say!("crawltop: command port on {}", port.local_addr());
            Some(port)
        }
        None => None,
    };
    if dashboard {
        let summary = crate::dashboard::run(handle, opts, signals).await?;
        if let Some(s) = &summary {
            headless::print_summary(s);
        }
        if let Some(p) = stats_path {
            crate::say!("crawltop: stats written to {p}");
        }
        return Ok(summary);
    }
    let commander = handle.commander();
    let abort = handle.abort_token();
    // First Ctrl-C or SIGTERM: stop gracefully; a second Ctrl-C: end at once.
    let signals = tokio::spawn(async move {
        let mut signals = signals;
        signals.next().await;
        crate::say!("crawltop: stopping (in-flight requests finish; Ctrl-C again to end now)");
        commander.send(EngineCommand::Stop, CommandSource::Signal);
        signals.interrupt().await;
        crate::say!("crawltop: ending now");
        abort.cancel();
    });
    // Nobody can resume a paused crawl without a control room; the reporter stops one whose
    // store failed.
    let unattended = (!control_room).then(|| handle.commander());
    let reporter = tokio::spawn(headless::report(handle.snapshots(), unattended));
    let summary = handle.finished().await;
    signals.abort();
    let _ = reporter.await;
    let summary = summary?;
    headless::print_summary(&summary);
    if let Some(p) = stats_path {
        crate::say!("crawltop: stats written to {p}");
    }
    Ok(Some(summary))
}

/// Joins the shared crawl (settings compared, seeds added to the crawl's) and starts this
/// member on it.
async fn join_cluster(cfg: CrawlConfig, c: ClusterArgs) -> anyhow::Result<engine::CrawlHandle> {
    use crate::cluster::agent::AgentConfig;
    use crate::cluster::shared::SharedCrawl;
    let member = member_id();
    let nodes = nodes_with(&c.nodes, c.password.as_ref())?;
    // Redis first, which a connection does not write to: a member refused for its Redis (not
    // there, not a Redis, a wrong password) has not touched its folder (audit 30: an empty
    // folder with a lock file was left).
    let mut shared = SharedCrawl::connect(&nodes, c.crawl_id.clone(), &member, c.lease).await?;
    // Then the folder: a member refused for it must not have created the crawl; one refused by
    // the crawl after this (other settings) leaves the folder as it found it.
    let folder = engine::check_member_folder(&cfg)?;
    let joined = async {
        let created = shared.join(&cfg.shared_settings()).await?;
        // Asked before this member's seeds go in (a pass over the sites' backlogs that stops
        // at the first with work): the same command run again on an ended crawl would fetch
        // nothing and say only "done" (audit 21).
        let ended = !created && shared.finished().await?;
        let seeds = shared.add_seeds(&cfg.seeds).await?;
        let commands = shared.commands_since(0).await?;
        Ok::<_, crate::cluster::shared::SharedError>((created, ended, seeds, commands))
    }
    .await;
    let (created, ended, seeds, commands) = match joined {
        Ok(joined) => joined,
        Err(e) => {
            folder.undo();
            return Err(e.into());
        }
    };
    let id = c.crawl_id.as_str();
    crate::say!(
        "crawltop: {} the shared crawl {id} as {member} ({} seeds crawl-wide)",
        if created { "created" } else { "joined" },
        seeds.len()
    );
    if ended {
        crate::say!(
            "crawltop: the shared crawl {id} has ended: every URL it found was fetched or left \
             out. This member fetches only URLs the crawl has not seen (new seeds); to crawl \
             again, use another --crawl-id"
        );
    } else if seeds.is_empty() {
        crate::say!(
            "crawltop: no member has given the shared crawl {id} seeds yet: this member waits \
             for one that does (a mistyped --crawl-id starts a new crawl)"
        );
    }
    // A pause in the crawl's log holds every member that joins after it (audit 30: one
    // started paused with no word).
    if let Some(pause) = crate::cluster::shared::paused_by(&commands) {
        crate::say!(
            "crawltop: the shared crawl {id} is paused ({}): this member starts paused; \
             `crawltop ctl --cluster ... --crawl-id {id} resume` (or any member's resume) \
             starts it",
            pause.said()
        );
    }
    // A member takes its fair share of the sites with work, but holds at most four a worker
    // (each held site costs a lease renewal) unless its workers sit free.
    let agent = AgentConfig {
        lease: c.lease,
        max_sites: cfg.workers.saturating_mul(4).max(1),
        ..AgentConfig::default()
    };
    let crawl_id = c.crawl_id.as_str().to_string();
    Ok(engine::spawn_in_cluster(
        cfg, shared, agent, &crawl_id, &seeds,
    )?)
}

/// `ctl --cluster URLS --crawl-id NAME COMMAND`: a command for every member of a shared crawl,
/// through its command log (no member's address needed), or the crawl's members and counters.
fn ctl_cluster(args: &CtlArgs) -> anyhow::Result<ExitCode> {
    use crate::cluster::shared::{CrawlId, SharedCrawl};
    let Some(id) = &args.crawl_id else {
        anyhow::bail!("ctl --cluster needs --crawl-id NAME");
    };
    if args.cluster.is_empty() {
        anyhow::bail!("ctl --crawl-id needs --cluster URL[,URL...]");
    }
    let crawl = CrawlId::new(id)?;
    let words: Vec<&str> = args.words.iter().map(String::as_str).collect();
    let command = match words.as_slice() {
        ["stats"] => None,
        ["pause" | "resume" | "stop"] | ["workers", _] => Some(words.join(" ")),
        ["delay", ms] => Some(format!("delay {ms} ms")),
        _ => anyhow::bail!(
            "unknown command {:?} for a shared crawl: use stats, pause, resume, stop, delay MS or workers N",
            words.join(" ")
        ),
    };
    if let Some(c) = &command {
        c.parse::<EngineCommand>()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let who = format!("ctl@{}", member_id());
    let nodes = nodes_with(&args.cluster, redis_password_from_env().as_ref())?;
    runtime()?.block_on(async move {
        let mut shared = SharedCrawl::connect(
            &nodes,
            crawl.clone(),
            &who,
            crate::cluster::shared::DEFAULT_LEASE,
        )
        .await?;
        if !shared.exists().await? {
            anyhow::bail!(
                "there is no crawl {:?} on {}",
                crawl.as_str(),
                args.cluster.join(",")
            );
        }
        if let Some(c) = command {
            let n = shared.command(&c).await?;
            let live = shared
                .members()
                .await?
                .iter()
                .filter(|m| !m.beat.gone && !m.silent())
                .count();
            let mut answer = serde_json::json!({
                "ok": true, "command": c, "number": n, "live_members": live
            });
            // Stored all the same (a member that joins later replays it), but nobody applies
            // it now: said, not left to be found (audit 30: a pause on an ended crawl said
            // only ok, and held a later member with no word).
            if live == 0 {
                let later = match c.as_str() {
                    "pause" => "a member joining later starts paused",
                    "stop" => "a stop does not hold members that join later",
                    _ => "a member joining later applies it",
                };
                let note = format!("no member is running; {later}");
                crate::say!(
                    "crawltop: {c} stored in the shared crawl {}'s command log, but {note}",
                    crawl.as_str()
                );
                answer["note"] = note.into();
            }
            println!("{answer}");
            return Ok(ExitCode::SUCCESS);
        }
        // `gone`: it left properly; `silent`: it has not beaten for its whole lease (killed,
        // stalled, cut off) and its sites go to others.
        let members: Vec<serde_json::Value> = shared
            .members()
            .await?
            .into_iter()
            .map(|m| {
                serde_json::json!({
                    "id": m.id,
                    "last_beat_s": m.age.as_secs_f64(),
                    "gone": m.beat.gone,
                    "silent": m.silent(),
                    "silent_after_s": m.silent_after().as_secs_f64(),
                    "beat": m.beat,
                })
            })
            .collect();
        let totals = shared.counters().await?;
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "crawl_id": crawl.as_str(),
                "members": members,
                "totals": totals,
            }))?
        );
        Ok(ExitCode::SUCCESS)
    })
}

/// An error and its causes on one line, each cause said once: many of our errors put their
/// cause in their own message (`PATH: CAUSE`), and tantivy's repeat theirs, so a cause whose
/// text the line already holds is left out.
pub fn error_message(err: &anyhow::Error) -> String {
    let mut line = err.to_string();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}

/// Sends `tracing` output to a file (never to the terminal, which the dashboard owns).
fn log_to(path: &std::path::Path) -> anyhow::Result<()> {
    let file = std::fs::File::create(path)
        .with_context(|| format!("cannot write the log file {}", path.display()))?;
    tracing_subscriber::fmt()
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init()
        .map_err(|e| anyhow::anyhow!("cannot start the log: {e}"))
}

fn crawl(args: &CrawlArgs) -> anyhow::Result<ExitCode> {
    let (cfg, args) = crawl_config(args)?;
    let args = &args;
    // A crawl that writes an index, before any of its threads start.
    let tuned = (cfg.out.is_some() && cfg.index).then(crate::allocator::tune);
    if let Some(dir) = &cfg.out
        && cfg.fresh
        && !confirm_fresh(dir)?
    {
        crate::say!("crawltop: nothing deleted; {} is as it was", dir.display());
        return Ok(ExitCode::from(1));
    }
    if let Some(path) = &args.log {
        log_to(path)?;
    }
    if let Some(tuned) = tuned {
        tracing::info!("{tuned}");
    }
    let headless = args.headless;
    let control = args.control;
    if args.control_token.is_some() && control.is_none() && cfg.command_port.is_none() {
        anyhow::bail!("--control-token needs --control or --command-port");
    }
    // From the environment it is only used where something listens: a token exported for
    // every crawl does not stop one without the API.
    let token = args.control_token.clone().or_else(token_from_env);
    let cluster = args.cluster_args()?;
    runtime()?.block_on(async move {
        // Registered before anything starts: an early signal stops the crawl instead of
        // killing it.
        let signals = Signals::new()?;
        let summary = crawl_with_face(cfg, headless, control, token, cluster, signals).await?;
        // A crawl that ended paused on a failure, or whose store failed as it ended, did not do
        // its work: exit 1, saying which. So does a member that left its sites to their leases,
        // Redis not answering as it left.
        let snapshot = summary.as_ref().map(|s| &s.snapshot);
        let failed = snapshot.and_then(|s| match (&s.fault, &s.commit.error) {
            (Some(f), _) => Some(format!("{}: {}", f.what.failed(), f.error)),
            (None, Some(e)) => Some(format!("the page store failed: {e}")),
            (None, None) => s.cluster.as_ref().and_then(|c| c.fault.clone()),
        });
        if let Some(failed) = failed {
            crate::say!("crawltop: error: {failed}");
            return Ok(ExitCode::from(1));
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn demo(args: &DemoArgs) -> anyhow::Result<ExitCode> {
    let temp = tempfile::Builder::new()
        .prefix("crawltop-demo-")
        .tempdir()?;
    let dir = args.keep.clone().unwrap_or_else(|| temp.path().join("web"));
    let gen_opts = GenOptions::new(args.sites, args.pages)
        .hostile(true)
        .crawl_delay_s(0.5);
    // Every value is checked before the web is written: a bad flag costs nothing.
    gen_opts.validate()?;
    let not_empty = |dir: &Path| std::fs::read_dir(dir).is_ok_and(|mut e| e.next().is_some());
    if let Some(keep) = args.keep.as_deref().filter(|keep| not_empty(keep)) {
        anyhow::bail!(
            "{} is not empty: demo --keep writes the web into an empty or absent folder",
            keep.display()
        );
    }
    // Each demo serves a new web on new ports: resuming an earlier demo's crawl would queue
    // its URLs against servers that are gone, and mix two webs in one folder (audit 25).
    if let Some(out) = args.out.as_deref().filter(|out| not_empty(out)) {
        anyhow::bail!(
            "{} is not empty: demo --out writes a new crawl folder (each demo serves a new web, \
             on new ports, so an earlier demo's crawl cannot go on); use another --out, or \
             remove it",
            out.display()
        );
    }
    // Searching the pages is the point of a crawl: the demo always indexes them. A folder of
    // the user's keeps WARC files too; a temporary one only the index.
    let (out, store) = match &args.out {
        Some(out) => (out.clone(), crate::store::committer::StoreKind::Warc),
        None => (
            temp.path().join("crawl"),
            crate::store::committer::StoreKind::None,
        ),
    };
    let cfg = CrawlConfig {
        workers: args.workers,
        delay_ms: args.delay_ms,
        // The hostile site stalls for 30 s; the demo's patience is shorter.
        timeout_ms: 10_000,
        max_body_bytes: 2 * 1024 * 1024,
        // Written on every exit, with a dashboard or without (`demo --help` says so).
        stats_out: Some(args.stats_out.clone().unwrap_or_else(default_stats_path)),
        out: Some(out),
        store,
        ..CrawlConfig::default()
    };
    // The seeds are the web's own, known once it is served; a stand-in lets the rest be
    // checked now (nothing is fetched from it).
    CrawlConfig {
        seeds: vec!["http://127.0.0.1/".into()],
        ..cfg.clone()
    }
    .validate()?;
    let headless = args.headless;
    // The demo always writes an index; no thread has started yet.
    crate::allocator::tune();
    let rt = runtime()?;
    let result = rt.block_on(async move {
        // From here a signal (a hangup too) stops the demo, which then removes its folder.
        let mut signals = Signals::new()?;
        crate::say!(
            "crawltop demo: generating {} sites of {} pages in {}",
            args.sites,
            args.pages,
            dir.display()
        );
        let web = dir.clone();
        let generating =
            tokio::task::spawn_blocking(move || testweb::generate(&web, &gen_opts, false));
        let manifest = tokio::select! {
            made = generating => made.context("the generator stopped")??,
            _ = signals.next() => {
                crate::say!("crawltop demo: stopped while its web was being written");
                return Ok(None);
            }
        };
        // The same listeners go on to the crawl: a signal while the web is being served is
        // kept for it, and stops it as it starts.
        let mut serve = ServeOptions::new(&dir);
        serve.keep_records = false;
        let server = Server::start(serve).await?;
        let mut cfg = cfg;
        cfg.seeds = manifest
            .sites
            .iter()
            .filter_map(|s| server.origin(&s.name).map(|o| format!("{o}/")))
            .collect();
        let result = crawl_with_face(cfg, headless, None, None, None, signals).await;
        server.shutdown();
        server.finished().await;
        result
    });
    // The runtime waits for a generator cut short by a signal before its folder goes.
    drop(rt);
    drop(temp);
    if let Some(keep) = &args.keep {
        crate::say!("crawltop demo: the web is kept in {}", keep.display());
    }
    if let Some(out) = args.out.as_ref().filter(|_| result.is_ok()) {
        crate::say!(
            "crawltop demo: the crawl folder is kept in {0}; search it with: crawltop search {0} WORDS",
            out.display()
        );
    }
    result.map(|_| ExitCode::SUCCESS)
}

fn ctl(args: &CtlArgs) -> anyhow::Result<ExitCode> {
    if !args.cluster.is_empty() || args.crawl_id.is_some() {
        return ctl_cluster(args);
    }
    let addr = control_addr(&args.words[0])?;
    let Some(word) = args.words.get(1).map(String::as_str) else {
        anyhow::bail!(
            "ctl {addr}: which command? stats, metrics, sites, pause, resume, stop, export, delay MS, workers N, search WORDS, maxcount WORD, mincount WORD or wc"
        );
    };
    let (method, path) = ctl_request(word, &args.words[2..], args)?;
    let (status, body) = runtime()?
        .block_on(crate::control::client_request(
            addr,
            args.token.clone().or_else(token_from_env).as_deref(),
            method,
            &path,
        ))
        .with_context(|| format!("cannot reach the control API at {addr}"))?;
    println!("{}", body.trim_end());
    if (200..300).contains(&status) {
        Ok(ExitCode::SUCCESS)
    } else {
        crate::say!("crawltop: the control API answered {status}");
        Ok(ExitCode::from(1))
    }
}

/// The method and path `ctl ADDR WORD ARGS...` asks the control API for.
fn ctl_request(
    word: &str,
    rest: &[String],
    args: &CtlArgs,
) -> anyhow::Result<(&'static str, String)> {
    let site_params = [
        ("sort", &args.sort),
        ("limit", &args.limit),
        ("offset", &args.offset),
        ("filter", &args.filter),
    ];
    let limit_only =
        word == "search" && args.sort.is_none() && args.offset.is_none() && args.filter.is_none();
    if word != "sites" && !limit_only && site_params.iter().any(|(_, v)| v.is_some()) {
        anyhow::bail!(
            "--sort, --limit, --offset and --filter go with `ctl ADDR sites` (and --limit with `search`)"
        );
    }
    let query = |pairs: &[(&str, &str)]| {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        for (name, value) in pairs {
            query.append_pair(name, value);
        }
        let query = query.finish();
        if query.is_empty() {
            query
        } else {
            format!("?{query}")
        }
    };
    // `search` takes its words whole (below); every other command at most one value.
    let arg = match rest {
        [one] => Some(one.as_str()),
        [_, _, ..] if word != "search" => {
            let takes = match word {
                "delay" | "workers" | "maxcount" | "mincount" => "one value",
                _ => "none",
            };
            anyhow::bail!(
                "too many arguments: {word} takes {takes}, got {:?}",
                rest.join(" ")
            )
        }
        _ => None,
    };
    Ok(match (word, arg) {
        ("stats", None) => ("GET", "/stats".to_string()),
        ("sites", None) => {
            let given: Vec<(&str, &str)> = (site_params.iter())
                .filter_map(|(name, value)| value.as_deref().map(|v| (*name, v)))
                .collect();
            ("GET", format!("/sites{}", query(&given)))
        }
        ("metrics", None) => ("GET", "/metrics".to_string()),
        ("wc", None) => ("GET", "/wc".to_string()),
        ("pause" | "resume" | "stop" | "export", None) => ("POST", format!("/{word}")),
        ("delay", Some(ms)) => ("POST", format!("/delay{}", query(&[("ms", ms)]))),
        ("workers", Some(n)) => ("POST", format!("/workers{}", query(&[("n", n)]))),
        ("maxcount" | "mincount", Some(w)) => ("GET", format!("/{word}{}", query(&[("word", w)]))),
        ("search", _) if !rest.is_empty() => {
            let words = rest.join(" ");
            let mut pairs = vec![("q", words.as_str())];
            if let Some(limit) = &args.limit {
                pairs.push(("limit", limit));
            }
            ("GET", format!("/search{}", query(&pairs)))
        }
        ("delay" | "workers" | "maxcount" | "mincount" | "search", None) => {
            let what = match word {
                "delay" => "MS",
                "workers" => "N",
                "search" => "WORDS (end the flags with -- before a word that starts with -)",
                _ => "WORD",
            };
            anyhow::bail!("{word} needs a value: ctl ADDR {word} {what}")
        }
        (
            "stats" | "sites" | "metrics" | "wc" | "pause" | "resume" | "stop" | "export",
            Some(extra),
        ) => {
            anyhow::bail!("too many arguments: {word} takes none, got {extra:?}")
        }
        _ => anyhow::bail!(
            "unknown command {:?}: use stats, metrics, sites, pause, resume, stop, export, delay MS, workers N, search WORDS, maxcount WORD, mincount WORD or wc",
            std::iter::once(word)
                .chain(rest.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    })
}

/// The control API's address as `ctl` takes it: `127.0.0.1:7070`, or the URL the crawl prints,
/// `http://127.0.0.1:7070` (plain HTTP, an IP address and no path, as the API is served).
fn control_addr(text: &str) -> anyhow::Result<std::net::SocketAddr> {
    let plain = "(or give --cluster URLS --crawl-id NAME)";
    if !text.contains("://") {
        return text.parse().map_err(|_| {
            anyhow::anyhow!("{text:?} is not an address like 127.0.0.1:7070 {plain}")
        });
    }
    let url = url::Url::parse(text)
        .map_err(|e| anyhow::anyhow!("{text:?} is not an address like 127.0.0.1:7070: {e}"))?;
    if url.scheme() != "http" {
        anyhow::bail!(
            "{text:?}: the control API speaks plain HTTP: give http://ADDR or just ADDR, like 127.0.0.1:7070"
        );
    }
    if !matches!(url.path(), "" | "/")
        || url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        anyhow::bail!(
            "{text:?}: give the address with no path (http://127.0.0.1:7070); the command goes after it"
        );
    }
    let ip = match url.host() {
        Some(url::Host::Ipv4(ip)) => std::net::IpAddr::V4(ip),
        Some(url::Host::Ipv6(ip)) => std::net::IpAddr::V6(ip),
        _ => anyhow::bail!(
            "{text:?}: give the control API's address as an IP address, like 127.0.0.1:7070"
        ),
    };
    let port = url
        .port_or_known_default()
        .ok_or_else(|| anyhow::anyhow!("{text:?}: no port"))?;
    Ok(std::net::SocketAddr::new(ip, port))
}

/// A query's crawl folders: the first argument, then each next one that is a crawl folder (an
/// index or a checkpoint: one crawled with `--no-index` is named as such, not searched for as a
/// word); the rest is the query, in words that must be UTF-8 (a folder's name need not be). A
/// word that names a folder, or looks like a path, is refused rather than searched for: a
/// mistyped or misplaced crawl folder would otherwise be taken as a word, and the answer look
/// right.
fn split_dirs(args: &[std::ffi::OsString]) -> anyhow::Result<(Vec<PathBuf>, Vec<String>)> {
    let state = crate::store::checkpoint::STATE_FILE;
    let crawl_folder =
        |dir: &std::path::Path| dir.join("index").is_dir() || dir.join(state).is_file();
    let n = 1 + args[1..]
        .iter()
        .take_while(|a| crawl_folder(std::path::Path::new(a)))
        .count();
    let dirs = args[..n].iter().map(PathBuf::from).collect();
    let mut words = Vec::new();
    for arg in &args[n..] {
        let Some(word) = arg.to_str() else {
            anyhow::bail!(
                "\"{}\" is not UTF-8: a word of the query must be (a crawl folder's name need \
                 not, but folders come first, before the words)",
                arg.to_string_lossy()
            );
        };
        let path = std::path::Path::new(word);
        let quote = format!("to look for the word, quote it: '\"{word}\"'");
        if crawl_folder(path) {
            anyhow::bail!(
                "{word:?} is a crawl folder after the words: name every crawl folder first, \
                 then the words ({quote})"
            );
        }
        if path.is_dir() {
            anyhow::bail!(
                "{word:?} is a folder but no crawl folder (it holds no index/ or {state}), so it \
                 would be searched for as a word ({quote})"
            );
        }
        // A slash at the end (as a shell's completion leaves it), or after the name of a
        // folder here (`crawls/b`), is a path's, not a word's (`km/h` stays a word).
        let under_a_folder = word
            .split_once('/')
            .is_some_and(|(first, _)| !first.is_empty() && std::path::Path::new(first).is_dir());
        if ["/", "./", "../", "~/"].iter().any(|p| word.starts_with(p))
            || word.ends_with('/')
            || under_a_folder
        {
            anyhow::bail!("{word:?} looks like a folder, and there is no such folder ({quote})");
        }
        words.push(word.to_owned());
    }
    Ok((dirs, words))
}

/// Writes a command's answer to stdout. A reader that stopped early (`| head`) is not an
/// error: the answer is cut there.
fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// The indexes of the crawl folders, for a query. A folder crawled with `--no-index` has none,
/// and the error says so (its checkpoint is read only then, not on every query).
fn open_crawls(dirs: &[PathBuf]) -> anyhow::Result<crate::index::Crawls> {
    use crate::store::checkpoint::Checkpoint;
    // One folder named twice would count its pages twice (`wc A A`).
    let mut seen = std::collections::HashSet::new();
    for dir in dirs {
        let same = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        if !seen.insert(same) {
            anyhow::bail!(
                "{} is named twice: each crawl folder counts once",
                dir.display()
            );
        }
    }
    match crate::index::Crawls::open(dirs) {
        Err(crate::index::IndexError::NoIndex(missing)) => {
            for dir in dirs {
                if !dir.is_dir() {
                    anyhow::bail!("{}: no such folder", dir.display());
                }
            }
            // The error names the folder's `index/`; what to say depends on the folder.
            let dir = missing.parent().unwrap_or(&missing);
            let mark = Checkpoint::find_mark(dir).ok().flatten();
            if let Some(mark) = mark.as_ref().filter(|mark| !mark.index) {
                // Only WARC files can be indexed again: a mirror keeps no headers or order.
                let remedy = if mark.warc.is_some() {
                    format!(
                        "`crawltop index {}` builds one from its WARC files",
                        dir.display()
                    )
                } else {
                    "it keeps no WARC files (--store mirror), so none can be built: crawl again \
                     with --store warc or both"
                        .to_string()
                };
                anyhow::bail!(
                    "{} was crawled with --no-index: it holds pages but no search index ({remedy})",
                    dir.display(),
                );
            }
            // Before its first page is indexed, a crawl's `index/` may be missing or hold no
            // commit yet, whether or not it has a checkpoint.
            if crate::store::committer::FolderLock::held_elsewhere(dir) {
                anyhow::bail!(
                    "{}'s crawl is running and has indexed no page yet: ask again in a moment",
                    dir.display()
                );
            }
            if mark.is_some() {
                anyhow::bail!(
                    "{} was crawled, but its search index (index/) is missing or empty: \
                     `crawltop index {}` builds it again from its WARC files",
                    dir.display(),
                    dir.display()
                );
            }
            Err(crate::index::IndexError::NoIndex(missing).into())
        }
        other => Ok(other?),
    }
}

fn search(args: &SearchArgs) -> anyhow::Result<ExitCode> {
    use std::fmt::Write as _;
    let (dirs, words) = split_dirs(&args.args)?;
    if words.is_empty() {
        anyhow::bail!("search: which words? (after the crawl folders)");
    }
    let (_, hits) = open_crawls(&dirs)?.search(&words.join(" "), args.limit)?;
    if args.json {
        // One folder: the hits as they always were; several: each names its folder's place.
        let json = if dirs.len() == 1 {
            serde_json::to_string_pretty(&hits.iter().map(|h| &h.hit).collect::<Vec<_>>())?
        } else {
            serde_json::to_string_pretty(&hits)?
        };
        emit(&format!("{json}\n"))?;
    } else if hits.is_empty() {
        emit("no page matches\n")?;
    } else {
        let mut text = String::new();
        for crate::index::CrawlHit { hit, .. } in &hits {
            let _ = writeln!(text, "{:.3}  {}  {}", hit.score, hit.url, hit.title);
            for (n, line) in &hit.lines {
                let _ = writeln!(text, "    {n:>5}: {line}");
            }
            // At most the first lines a hit carries (`index::MAX_HIT_LINES`).
            match hit.line_count.saturating_sub(hit.lines.len()) {
                0 => {}
                1 => text.push_str("           … and 1 more line\n"),
                more => {
                    let _ = writeln!(text, "           … and {more} more lines");
                }
            }
        }
        emit(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn count(args: &CountArgs, most: bool) -> anyhow::Result<ExitCode> {
    let verb = if most { "maxcount" } else { "mincount" };
    let (dirs, rest) = split_dirs(&args.args)?;
    let word = match rest.as_slice() {
        [word] => word,
        [] => anyhow::bail!("{verb}: which word? (after the crawl folders)"),
        [first, ..] => anyhow::bail!(
            "{verb} counts one word, after the crawl folders; {first:?} is no crawl folder (it \
             holds no index/ or {}), so the word would be {:?}",
            crate::store::checkpoint::STATE_FILE,
            rest.join(" ")
        ),
    };
    let crawls = open_crawls(&dirs)?;
    let found = if most {
        crawls.max_count(word)?
    } else {
        crawls.min_count(word)?
    };
    if args.json {
        let json = if dirs.len() == 1 {
            serde_json::to_string_pretty(&found.map(|c| c.count))?
        } else {
            serde_json::to_string_pretty(&found)?
        };
        emit(&format!("{json}\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(c) = found {
        emit(&format!("{}  {}\n", c.count.count, c.count.url))?;
    } else {
        // The counts are of the page text; a word only in titles is found by `search`.
        let titles = crawls.in_titles(word)?;
        let also = match titles {
            0 => String::new(),
            1 => " (it is in 1 page's title, which the counts leave out)".to_string(),
            n => format!(" (it is in {n} pages' titles, which the counts leave out)"),
        };
        emit(&format!("{word:?} occurs in no page's text{also}\n"))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn wc(args: &WcArgs) -> anyhow::Result<ExitCode> {
    let w = open_crawls(&args.dirs)?.word_count()?;
    if args.json {
        emit(&format!("{}\n", serde_json::to_string_pretty(&w)?))?;
    } else {
        emit(&format!(
            "pages {}  bytes {}  words {}  lines {}\n",
            w.pages, w.bytes, w.words, w.lines
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn extract(args: &ExtractArgs) -> anyhow::Result<ExitCode> {
    use std::io::Write as _;

    use crate::extract::{ExtractLine, Extractor};
    use crate::store::warc_reader::{Responses, held_parts};

    crate::config::check_extract_max_bytes(args.extract_max_bytes)?;
    let extractor = Extractor::new(&args.fields, args.extract_max_bytes)?;
    let mark = committed(&args.dir)?;
    let warc = args.dir.join("warc");
    if args.dir.is_dir() && !warc.is_dir() {
        // A mirror-only crawl (audit 25: the OS's "No such file or directory" on warc/).
        anyhow::bail!(
            "{} keeps no WARC files (no warc/ folder: a crawl stored with --store mirror or \
             none): extract reads them",
            args.dir.display()
        );
    }
    // Written by replacing the file: one of the folder's would be lost (audit 33).
    crate::config::check_outputs(
        Some(&args.dir),
        &[("--extract-out", args.extract_out.as_deref())],
    )?;
    let parts = held_parts(&warc, mark.as_ref())?;
    let (mut out, temp): (Box<dyn std::io::Write>, _) = match &args.extract_out {
        Some(path) => {
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => std::path::Path::new("."),
            };
            let temp = tempfile::Builder::new()
                .permissions(crate::engine::export::shared_file())
                .tempfile_in(parent)
                .with_context(|| format!("cannot write beside {}", path.display()))?;
            let file = temp.reopen()?;
            (Box::new(std::io::BufWriter::new(file)), Some(temp))
        }
        None => (
            Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
            None,
        ),
    };
    let (mut pages, mut lines) = (0u64, 0u64);
    // robots.txt responses are stored too, but they are not pages (a server may call one
    // text/html); the fallback numbering of files older than sequence numbers counts pages.
    let pages_read =
        Responses::of(parts).filter(|r| r.as_ref().map_or(true, |r| r.robots_for.is_none()));
    for (i, response) in pages_read.enumerate() {
        let response = response?;
        if !response.is_html_page() {
            continue;
        }
        pages += 1;
        let extraction = extractor.run(&response.body, response.header("content-type"));
        let seq = response.seq.unwrap_or(i as u64);
        if let Some(line) = ExtractLine::new(&response.target_uri, seq, extraction) {
            serde_json::to_writer(&mut out, &line)?;
            out.write_all(b"\n")?;
            lines += 1;
        }
    }
    out.flush()?;
    drop(out);
    if let (Some(temp), Some(path)) = (temp, &args.extract_out) {
        temp.persist(path)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let unfinished = if mark.is_some_and(|m| !m.finished) {
        " (the crawl is unfinished: up to its last checkpoint)"
    } else {
        ""
    };
    crate::say!("crawltop: {pages} HTML pages read, {lines} lines written{unfinished}");
    Ok(ExitCode::SUCCESS)
}

/// The mark of the crawl folder's checkpoint: what `extract` reads is what it holds, neither
/// the records a killed crawl wrote above it (a resume cuts them) nor those of a crawl still
/// writing (refused, naming it: its checkpoint cannot be read until it ends). `None` for a
/// folder without one (every WARC file is read whole).
fn index(args: &IndexArgs) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    let shown = |done: &crate::reindex::Reindexed| {
        crate::say!(
            "crawltop: indexed {} pages ({} responses read)",
            done.pages,
            done.responses
        );
    };
    let done = crate::reindex::reindex(&args.dir, args.index_memory_mb, args.replace, shown)
        .with_context(|| format!("cannot build the index of {}", args.dir.display()))?;
    let cut = match done.cut {
        0 => String::new(),
        n => format!(
            "; {n} cut at {} distinct words",
            crate::index::MAX_DISTINCT_WORDS
        ),
    };
    crate::say!(
        "crawltop: indexed {} pages of {} ({} responses read{cut}) in {:.1} s",
        done.pages,
        args.dir.display(),
        done.responses,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

fn committed(dir: &std::path::Path) -> anyhow::Result<Option<crate::store::checkpoint::Mark>> {
    use crate::store::checkpoint::{Checkpoint, CheckpointError};
    match Checkpoint::find_mark(dir) {
        Err(CheckpointError::InUse { .. }) => {
            let pid = std::fs::read_to_string(dir.join(crate::store::committer::LOCK_FILE))
                .map(|pid| pid.trim().to_string())
                .ok()
                .filter(|pid| !pid.is_empty())
                .unwrap_or_else(|| "unknown".into());
            anyhow::bail!(
                "{} is being crawled (crawltop pid {pid}); extract reads what its checkpoint \
                 holds, once the crawl has stopped: stop it (what it committed is kept) and run \
                 extract again, or crawl with --extract-out to have the lines as pages are \
                 committed",
                dir.display()
            )
        }
        other => other
            .with_context(|| format!("{}: extract reads what its checkpoint holds", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Audit 33: gen-site's help gave no default for three flags whose defaults live in the
    /// generator; the help's numbers are checked against them.
    #[test]
    fn gen_sites_help_says_the_generators_defaults() {
        use clap::CommandFactory as _;
        let cli = Cli::command();
        let gen_site = cli.find_subcommand("gen-site").expect("gen-site");
        let help = |flag: &str| {
            let arg = gen_site.get_arguments().find(|a| a.get_id() == flag);
            arg.and_then(clap::Arg::get_help)
                .map(ToString::to_string)
                .unwrap_or_default()
        };
        let heavy_mb = testweb::HeavyOptions::default().listing_max_bytes >> 20;
        let farm = testweb::LinkFarm::default();
        assert!(
            help("heavy_mb").ends_with(&format!("[default: {heavy_mb}]")),
            "{}",
            help("heavy_mb")
        );
        let links = farm.links_per_page;
        assert!(
            help("farm_links").ends_with(&format!("[default: {links}]")),
            "{}",
            help("farm_links")
        );
        let pages = farm.pages;
        assert!(
            help("farm_pages").ends_with(&format!("[default: {pages}]")),
            "{}",
            help("farm_pages")
        );
    }

    /// `ctl ADDR COMMAND ARGS...` as the control API is asked: the queries with their words
    /// encoded, the limit with `search` only, and clear refusals.
    #[test]
    fn ctl_commands_become_api_requests() {
        let args = |limit: Option<&str>, sort: Option<&str>| CtlArgs {
            words: Vec::new(),
            cluster: Vec::new(),
            crawl_id: None,
            token: None,
            sort: sort.map(str::to_owned),
            limit: limit.map(str::to_owned),
            offset: None,
            filter: None,
        };
        let ask = |word: &str, rest: &[&str], args: &CtlArgs| {
            let rest: Vec<String> = rest.iter().map(|w| (*w).to_owned()).collect();
            ctl_request(word, &rest, args).map_err(|e| e.to_string())
        };
        let plain = args(None, None);
        for (word, rest, want) in [
            ("stats", &[][..], ("GET", "/stats")),
            ("wc", &[], ("GET", "/wc")),
            (
                "search",
                &["white", "rabbit"],
                ("GET", "/search?q=white+rabbit"),
            ),
            (
                "search",
                &["caf\u{e9} & -tea"],
                ("GET", "/search?q=caf%C3%A9+%26+-tea"),
            ),
            ("maxcount", &["rabbit"], ("GET", "/maxcount?word=rabbit")),
            ("mincount", &["a&b"], ("GET", "/mincount?word=a%26b")),
            ("delay", &["250"], ("POST", "/delay?ms=250")),
        ] {
            let (method, path) = ask(word, rest, &plain).expect(word);
            assert_eq!((method, path.as_str()), want);
        }
        let limited = ask("search", &["rabbit"], &args(Some("5"), None)).expect("limit");
        assert_eq!(limited.1, "/search?q=rabbit&limit=5");
        for (word, rest, args, message) in [
            ("search", &[][..], &plain, "search needs a value"),
            ("maxcount", &[], &plain, "maxcount needs a value"),
            (
                "maxcount",
                &["a", "b"],
                &plain,
                "maxcount takes one value, got \"a b\"",
            ),
            (
                "stats",
                &["a", "b"],
                &plain,
                "stats takes none, got \"a b\"",
            ),
            ("wc", &["x"], &plain, "too many arguments: wc takes none"),
            (
                "search",
                &["x"],
                &args(Some("5"), Some("queued")),
                "go with `ctl ADDR sites`",
            ),
            (
                "stats",
                &[],
                &args(Some("5"), None),
                "go with `ctl ADDR sites`",
            ),
            ("find", &["x"], &plain, "unknown command \"find x\""),
        ] {
            let err = ask(word, rest, args).expect_err(word);
            assert!(err.contains(message), "{word}: {err}");
        }
    }

    /// A crawl that has not indexed its first page yet says so, whether its `index/` is still
    /// to be made or made without a commit; a folder no crawl holds says it holds no index.
    #[test]
    fn a_query_in_a_crawls_first_moment_says_it_is_running() {
        let out = tempfile::tempdir().expect("tempdir");
        let dir = out.path().join("crawl");
        let message = |dir: &std::path::Path| match open_crawls(&[dir.to_path_buf()]) {
            Ok(_) => panic!("no index yet"),
            Err(err) => error_message(&err),
        };
        let lock = crate::store::committer::FolderLock::take(&dir).expect("lock");
        assert!(message(&dir).contains("running and has indexed no page yet"));
        std::fs::create_dir(dir.join("index")).expect("index/");
        assert!(message(&dir).contains("running and has indexed no page yet"));
        drop(lock);
        assert!(
            message(&dir).contains("holds no search index"),
            "{}",
            message(&dir)
        );
    }

    #[test]
    fn an_error_line_says_each_cause_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        // A context adds its cause after it.
        let err = anyhow::Error::new(io()).context("cannot read /x");
        assert_eq!(error_message(&err), "cannot read /x: no such file");
        // An error whose message holds its source: the source is not said again.
        let err = anyhow::Error::new(crate::store::committer::StoreError::Io {
            path: "/x".into(),
            source: io(),
        });
        assert_eq!(error_message(&err), "/x: no such file");
        let err = err.context("the page store");
        assert_eq!(error_message(&err), "the page store: /x: no such file");
    }
}
