//! The crawl engine: a library with a handle. `spawn(config)` starts a crawl and returns a
//! [`CrawlHandle`]: snapshots out, commands in, a summary at the end.
//!
//! It owns the crawl: the coordinator task (the one owner of the frontier, the site table and
//! the counters), the object model they are made of (`model.rs`), the worker tasks that fetch
//! and parse, and the stats files. The frontier is the built-in one, or any other behind the
//! frontier boundary ([`spawn_with_frontier`]). It never knows a terminal exists: the
//! dashboard, the headless reporter and the control API only read snapshots and send commands.

mod coordinator;

pub use coordinator::{
    HANG_ENV, PARSE_PANICS_ENV, PARSE_WAITS_ENV, URL_CACHE_ENV, URL_READ_FAILS_ENV,
};
pub mod export;
mod leftover;
mod model;
mod url_table;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::{ConfigError, CrawlConfig};
use crate::frontier::Schedule;
use crate::snapshot::{CommandSource, Snapshot};

/// What an observer may ask of a running crawl.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Command {
    /// In-flight fetches finish; nothing new starts until `Resume`.
    Pause,
    Resume,
    /// The global politeness delay, applied to every site's next contact.
    SetDelay(Duration),
    SetWorkers(usize),
    /// In-flight fetches finish, then the crawl ends and the stats are written.
    Stop,
    /// Stop this process's part: in a crawl of its own the same as `Stop`; a member of a
    /// shared crawl hands its sites back and leaves while the others go on (the dashboard's
    /// `q` and Ctrl-C, as a signal does).
    Leave,
    /// Write the stats files now, without stopping.
    Export,
}

impl std::fmt::Display for Command {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::Pause => write!(f, "pause"),
            Command::Resume => write!(f, "resume"),
            Command::SetDelay(d) => write!(f, "delay {} ms", d.as_millis()),
            Command::SetWorkers(n) => write!(f, "workers {n}"),
            Command::Stop => write!(f, "stop"),
            Command::Leave => write!(f, "leave"),
            Command::Export => write!(f, "export"),
        }
    }
}

/// A command as [`Command`]'s `Display` writes it (`pause`, `delay 250 ms`, `workers 8`, ...):
/// how a shared crawl's command log holds them.
impl std::str::FromStr for Command {
    type Err = String;

    fn from_str(s: &str) -> Result<Command, String> {
        let words: Vec<&str> = s.split_whitespace().collect();
        let number = |w: &str| {
            w.parse::<u64>()
                .map_err(|_| format!("{w:?} is not a number"))
        };
        match words.as_slice() {
            ["pause"] => Ok(Command::Pause),
            ["resume"] => Ok(Command::Resume),
            ["stop"] => Ok(Command::Stop),
            ["leave"] => Ok(Command::Leave),
            ["export"] => Ok(Command::Export),
            ["delay", ms, "ms"] | ["delay", ms] => {
                Ok(Command::SetDelay(Duration::from_millis(number(ms)?)))
            }
            ["workers", n] => Ok(Command::SetWorkers(
                usize::try_from(number(n)?).map_err(|e| e.to_string())?,
            )),
            _ => Err(format!("{s:?} is not a command")),
        }
    }
}

/// Why a crawl could not start or could not go on.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// Like `Store`, the cause is in the message and not behind `source()`: a report that
    /// prints the chain (`{:#}`) would say it twice.
    #[error("cannot write {}: {error}", path.display())]
    Write {
        path: std::path::PathBuf,
        error: std::io::Error,
    },
    /// The store's error is in the message, not behind `source()` (see `Write`).
    #[error("the page store: {0}")]
    Store(crate::store::committer::StoreError),
    #[error("cannot start the parse pool: {0}")]
    ParsePool(std::io::Error),
    #[error("the crawl task ended abnormally: {0}")]
    Task(String),
    #[error(
        "{} holds a finished crawl; start over with --fresh, or use another --out",
        .0.display()
    )]
    Finished(std::path::PathBuf),
    #[error(
        "{} holds an unfinished crawl (a member that was killed?), and a member of a shared crawl \
         does not resume one: its unfinished URLs are in the shared crawl already. Keep the \
         folder and start this member with another --out: the pages it holds are done for the \
         shared crawl and stored nowhere else (--fresh would delete them)",
        .0.display()
    )]
    ClusterResume(std::path::PathBuf),
}

impl From<crate::store::committer::StoreError> for EngineError {
    fn from(e: crate::store::committer::StoreError) -> Self {
        EngineError::Store(e)
    }
}

/// How a crawl ended.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The last snapshot (state `Finished`), the same numbers the stats file holds.
    pub snapshot: Arc<Snapshot>,
    /// True when the queue ran dry; false when stopped or aborted first.
    pub completed: bool,
    /// `mailto:` addresses found on crawled pages.
    pub mailto: Vec<String>,
}

/// Sends commands to a running crawl, and reads its live site table; cheap to clone.
///
/// An observer that sends commands (the control rooms) also answers questions about sites;
/// the table travels with the commander so that every room gets it by the one value it
/// already holds.
#[derive(Debug, Clone)]
pub struct Commander {
    tx: mpsc::UnboundedSender<(Command, CommandSource)>,
    sites: Arc<crate::site_table::SiteTable>,
    exports: bool,
}

impl Commander {
    /// Whether [`Command::Export`] has a file to write: the crawl was given `--stats-out`,
    /// `--sites-out` or `--urls-out` (the dashboard gives itself a stats file). Without one an
    /// export writes nothing, and a control room says so instead of answering ok.
    pub fn exports(&self) -> bool {
        self.exports
    }

    /// The crawl's live site table (see [`CrawlHandle::sites`]).
    pub fn sites(&self) -> Arc<crate::site_table::SiteTable> {
        self.sites.clone()
    }

    /// Sends a command; false if the crawl is already over.
    pub fn send(&self, command: Command, source: CommandSource) -> bool {
        self.tx.send((command, source)).is_ok()
    }
}

/// A running crawl.
#[derive(Debug)]
pub struct CrawlHandle {
    commands: Commander,
    snapshots: watch::Receiver<Arc<Snapshot>>,
    sites: Arc<crate::site_table::SiteTable>,
    abort: CancellationToken,
    task: JoinHandle<Result<Summary, EngineError>>,
    resuming: Option<std::path::PathBuf>,
}

impl CrawlHandle {
    pub fn commander(&self) -> Commander {
        self.commands.clone()
    }

    /// The latest snapshot and every new one: `rx.borrow_and_update().clone()`, then drop the
    /// borrow at once.
    pub fn snapshots(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.snapshots.clone()
    }

    /// The live per-site table: read a row by id or a sorted, filtered page of ids, in place.
    /// Live snapshots carry no site rows (see `Snapshot::sites`).
    pub fn sites(&self) -> Arc<crate::site_table::SiteTable> {
        self.sites.clone()
    }

    /// Ends the crawl at once: in-flight work is dropped, the stats are still written.
    pub fn abort(&self) {
        self.abort.cancel();
    }

    /// A token that aborts the crawl when cancelled (for a second Ctrl-C).
    pub fn abort_token(&self) -> CancellationToken {
        self.abort.clone()
    }

    /// The crawl folder whose unfinished crawl this one resumes (known once its lock is held,
    /// so a crawl that refuses a locked folder never says it resumes).
    pub fn resuming(&self) -> Option<&std::path::Path> {
        self.resuming.as_deref()
    }

    /// Waits for the end of the crawl.
    pub async fn finished(self) -> Result<Summary, EngineError> {
        self.task
            .await
            .map_err(|e| EngineError::Task(e.to_string()))?
    }
}

/// Starts a crawl on the current tokio runtime. Fails only when it cannot start: a bad
/// setting, an HTTP client that cannot be built, or a crawl folder that is locked, finished,
/// of another format or corrupt, or cannot be written. With a crawl folder it opens the
/// store and, on a resume, reads the checkpoint and cuts the store back to its mark before it
/// returns: blocking file work, once, in the caller.
pub fn spawn(config: CrawlConfig) -> Result<CrawlHandle, EngineError> {
    Ok(start(coordinator::Coordinator::new(config)?))
}

/// As [`spawn`], over a frontier of the caller's (another implementation of the frontier
/// boundary, or a test double) instead of the built-in one. The coordinator gives it the
/// global delay and the back-queue count for the configured workers before the first push.
pub fn spawn_with_frontier<F>(config: CrawlConfig, frontier: F) -> Result<CrawlHandle, EngineError>
where
    F: Schedule + Send + 'static,
{
    let coordinator = coordinator::Coordinator::with_frontier(config, |cfg, delay| {
        let mut frontier = frontier;
        frontier.set_default_delay(delay);
        frontier.set_back_queues(coordinator::back_queues(cfg.workers));
        Ok(frontier)
    })?;
    Ok(start(coordinator))
}

/// What a member of a shared crawl checks of its crawl folder before it joins the crawl (and,
/// for the first member, creates it with its settings): a folder in use by another crawl, or
/// holding a crawl of its own (finished, or unfinished: a member does not resume one), is
/// refused here, so that a refused member leaves nothing in Redis. `--fresh` starts the folder
/// over, so only the lock is checked then.
///
/// Taking the lock to check it creates the folder (and its lock file): the [`FolderTrace`]
/// returned says what was there before, so that a member refused after this (by Redis: other
/// settings, another format) leaves the folder as it found it ([`FolderTrace::undo`]).
pub fn check_member_folder(config: &CrawlConfig) -> Result<FolderTrace, EngineError> {
    let Some(dir) = &config.out else {
        return Ok(FolderTrace::default());
    };
    let trace = FolderTrace::before(dir);
    let checked = (|| {
        drop(crate::store::committer::FolderLock::take(dir)?);
        if config.fresh {
            return Ok(());
        }
        match crate::store::checkpoint::Checkpoint::find_mark(dir) {
            Ok(Some(mark)) if mark.finished => Err(EngineError::Finished(dir.clone())),
            Ok(Some(_)) => Err(EngineError::ClusterResume(dir.clone())),
            // No crawl there, or a state the engine will name when it opens it.
            Ok(None) | Err(_) => Ok(()),
        }
    })();
    match checked {
        Ok(()) => Ok(trace),
        Err(e) => {
            trace.undo();
            Err(e)
        }
    }
}

/// What a member's crawl folder was before [`check_member_folder`] took its lock: the folders
/// it had to create (the deepest first), and whether the lock file was there.
#[derive(Debug, Default)]
pub struct FolderTrace {
    dir: Option<std::path::PathBuf>,
    created: Vec<std::path::PathBuf>,
    had_lock: bool,
}

impl FolderTrace {
    fn before(dir: &std::path::Path) -> FolderTrace {
        let created: Vec<std::path::PathBuf> = dir
            .ancestors()
            .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
            .map(std::path::Path::to_path_buf)
            .collect();
        FolderTrace {
            dir: Some(dir.to_path_buf()),
            had_lock: dir.join(crate::store::committer::LOCK_FILE).exists(),
            created,
        }
    }

    /// Takes back what the check made: the lock file if it was not there, then the folders it
    /// created, each only while empty (so nothing another process put there meanwhile goes).
    /// The lock was let go before: a crawl that took it in the instant between would find
    /// its lock file gone, as after `rm -rf` of its folder, and say so at its next checkpoint.
    pub fn undo(self) {
        let Some(dir) = self.dir else {
            return;
        };
        if !self.had_lock {
            let _ = std::fs::remove_file(dir.join(crate::store::committer::LOCK_FILE));
        }
        for folder in &self.created {
            if std::fs::remove_dir(folder).is_err() {
                break;
            }
        }
    }
}

/// As [`spawn`], as a member of a shared crawl (`crawl --cluster`): `shared` has joined the
/// crawl (its settings compared, `crawl_seeds` every member's seeds: the crawl's scope), and
/// its agent starts here. The member's seeds go to the
/// shared queues; it fetches what its leased sites hold, and ends with the whole crawl.
pub fn spawn_in_cluster(
    config: CrawlConfig,
    shared: crate::cluster::shared::SharedCrawl,
    agent: crate::cluster::agent::AgentConfig,
    crawl_id: &str,
    crawl_seeds: &[String],
) -> Result<CrawlHandle, EngineError> {
    let mut coordinator = coordinator::Coordinator::new(config)?;
    if let Some(dir) = coordinator.resuming() {
        return Err(EngineError::ClusterResume(dir.to_path_buf()));
    }
    let member = shared.member().to_string();
    let mut shared = shared;
    shared.set_limits(crate::cluster::shared::Limits {
        pages: coordinator.max_pages(),
        per_site: coordinator.max_pages_per_site(),
    });
    let agent = crate::cluster::agent::spawn(shared, agent);
    let link = coordinator::cluster::Link::new(agent, crawl_id, &member);
    coordinator.join_cluster(link, crawl_seeds);
    Ok(start(coordinator))
}

fn start<F: Schedule + Send + 'static>(coordinator: coordinator::Coordinator<F>) -> CrawlHandle {
    let resuming = coordinator.resuming().map(std::path::Path::to_path_buf);
    let (tx, rx) = mpsc::unbounded_channel();
    let sites = coordinator.site_table();
    let exports = coordinator.exports();
    let (snap_tx, snap_rx) = watch::channel(Arc::new(coordinator.snapshot_now()));
    let abort = CancellationToken::new();
    let task = tokio::spawn(coordinator.run(rx, snap_tx, abort.clone()));
    CrawlHandle {
        commands: Commander {
            tx,
            sites: sites.clone(),
            exports,
        },
        snapshots: snap_rx,
        sites,
        abort,
        task,
        resuming,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Command, EngineError};

    /// A shared crawl's command log holds commands as `Display` writes them.
    #[test]
    fn commands_read_back_as_written_and_nonsense_is_refused() {
        for c in [
            Command::Pause,
            Command::Resume,
            Command::Stop,
            Command::Leave,
            Command::Export,
            Command::SetDelay(Duration::from_millis(250)),
            Command::SetWorkers(8),
        ] {
            assert_eq!(c.to_string().parse::<Command>(), Ok(c), "{c}");
        }
        assert_eq!(
            "delay 40".parse(),
            Ok(Command::SetDelay(Duration::from_millis(40)))
        );
        for bad in [
            "",
            "paws",
            "delay",
            "delay -1 ms",
            "workers many",
            "stop now",
        ] {
            assert!(bad.parse::<Command>().is_err(), "{bad:?}");
        }
    }
    use crate::store::committer::StoreError;

    /// A report that prints the whole chain (`{:#}`) says each cause once.
    #[test]
    fn errors_say_their_cause_once_in_a_chain() {
        let locked = EngineError::from(StoreError::Locked {
            dir: "/tmp/crawl".into(),
            pid: "4242".into(),
        });
        let shown = format!("{:#}", anyhow::Error::from(locked));
        assert_eq!(
            shown.matches("in use by another crawltop").count(),
            1,
            "{shown}"
        );
        assert!(shown.contains("pid 4242"), "{shown}");
        let write = EngineError::Write {
            path: "/tmp/stats.json".into(),
            error: std::io::Error::other("disk full"),
        };
        let shown = format!("{:#}", anyhow::Error::from(write));
        assert_eq!(shown.matches("disk full").count(), 1, "{shown}");
    }
}
