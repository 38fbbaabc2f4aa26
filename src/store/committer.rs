//! The committer: writes finished exchanges to the page store (WARC, mirror) in the order the
//! engine hands them over, which is sequence order, on a thread of its own, and hands their text
//! to the index thread ([`crate::index::feed`]) in the same order. robots.txt responses, which
//! are not pages and take no sequence number, come between them as they arrive and go to the
//! WARC files only ([`Committer::send_robots`]): whatever was handed over before a checkpoint
//! is below its mark, and the engine hands a robots.txt response over in the step that marks
//! its site's row changed, so the files at a mark hold the robots.txt answers its checkpoint
//! holds.
//!
//! It owns the store's files and the crawl folder's lock. File I/O happens only on its thread
//! (and the index thread's), never on the async workers. It never reorders anything (the
//! reorder window in [`super::commit`] does that before handing items over) and never decides
//! what is fetched. At a checkpoint it syncs the WARC file, waits for the index thread to commit
//! everything handed to it, and only then writes the mark (with the index's count of pages it
//! cut, which is exact there): the one place it waits for the index.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;
use std::time::SystemTime;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::checkpoint::{
    Checkpoint, CheckpointError, Delta, Held, Mark, UrlReader, WarcMark, warc_held,
};
use super::commit::Seq;
use super::warc::{Exchange, Truncation, WarcWriter};
use crate::index::feed::{Cuts, IndexFeed};

/// Which page stores a crawl writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum StoreKind {
    /// WARC 1.1 files in `DIR/warc/`.
    #[default]
    Warc,
    /// One file per page under `DIR/pages/<host>_<port>/<path>`.
    Mirror,
    Both,
    None,
}

impl StoreKind {
    /// The value `--store` takes for it, as clap spells it.
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default()
    }

    /// Whether the crawl writes WARC files.
    pub fn warc(self) -> bool {
        matches!(self, StoreKind::Warc | StoreKind::Both)
    }

    fn mirror(self) -> bool {
        matches!(self, StoreKind::Mirror | StoreKind::Both)
    }
}

/// Why the store could not open or write.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "{} is in use by another crawltop (pid {pid}); wait for it to end or use another --out",
        dir.display()
    )]
    Locked { dir: PathBuf, pid: String },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("WARC: {0}")]
    Warc(#[from] super::warc::WarcError),
    #[error("mirror: {0}")]
    Mirror(#[from] super::mirror::MirrorError),
    #[error("index: {0}")]
    Index(#[from] crate::index::IndexError),
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error(
        "{} holds {has} bytes, but the crawl's checkpoint says {at} bytes of extract lines were \
         written there: the file was cut or replaced since. Put it back (or, from a crawl with \
         WARC files, write it again with `crawltop extract DIR --extract ... --extract-out \
         FILE`), then resume; or start over with --fresh",
        path.display()
    )]
    ExtractShort { path: PathBuf, at: u64, has: u64 },
    #[error(
        "{} holds a crawl {}; resume it {}, or start over with --fresh",
        dir.display(),
        if *indexed { "with a full-text index" } else { "made with --no-index" },
        if *indexed { "without --no-index" } else { "with --no-index" }
    )]
    IndexChoice { dir: PathBuf, indexed: bool },
    #[error(
        "{}/index was written by another crawl ({stamped}), not by the one its checkpoint \
         holds ({crawl}): its pages are not this crawl's. Put this crawl's index back, {}, or \
         start over with --fresh",
        dir.display(),
        rebuild_hint(dir, *rebuildable)
    )]
    IndexOfAnother {
        dir: PathBuf,
        stamped: String,
        crawl: String,
        rebuildable: bool,
    },
    #[error(
        "{}/index holds {found} pages below the checkpoint's mark, where the checkpoint counted \
         {counted}: it is not the index this crawl left (an older copy put back?). Put that \
         index back, {}, or start over with --fresh",
        dir.display(),
        rebuild_hint(dir, *rebuildable)
    )]
    IndexPages {
        dir: PathBuf,
        found: u64,
        counted: u64,
        rebuildable: bool,
    },
    #[error(
        "{} holds a crawl with --store {was}; resume it with --store {was}, or start over with \
         --fresh",
        dir.display(),
        was = was.name()
    )]
    StoreChoice { dir: PathBuf, was: StoreKind },
    #[error(
        "{} has no index/, but its crawl indexes pages: the pages of the {committed} \
         responses committed before would be missing from search; put the index back, {}or \
         start over with --fresh",
        dir.display(),
        if *warc {
            format!("build it again from the WARC files with `crawltop index {}`, ", dir.display())
        } else {
            String::new()
        }
    )]
    IndexMissing {
        dir: PathBuf,
        committed: u64,
        /// The crawl keeps WARC files, from which `crawltop index` builds the index again.
        warc: bool,
    },
    #[error(
        "{} has no pages/, but its crawl mirrors pages: the pages of the {committed} \
         responses committed before would be missing from the mirror; put pages/ back, or \
         start over with --fresh",
        dir.display()
    )]
    MirrorMissing { dir: PathBuf, committed: u64 },
    #[error(
        "{} {what}: the pages stored there would be lost, and a resume would not fetch them \
         again; put the file back as it was, or start over with --fresh",
        path.display()
    )]
    WarcDamaged { path: PathBuf, what: String },
    #[error(
        "{} is missing, though the checkpoint counts {files} WARC file(s) of the crawl in it, \
         up to byte {position} of {file}: the pages stored there would be lost, and a resume \
         would not fetch them again; put warc/ back as it was, or start over with --fresh",
        dir.display()
    )]
    WarcFolderMissing {
        dir: PathBuf,
        files: u64,
        file: String,
        position: u64,
    },
    #[error(
        "the crawl folder {} was removed or replaced while the crawl ran (its lock file is not \
         this crawl's any more): nothing more is stored, so as not to write into another \
         crawl's folder",
        dir.display()
    )]
    FolderGone { dir: PathBuf },
    #[error(
        "{}'s mirror (pages/) was written by an older crawltop (file-name rules {was}), which gave \
         `/p+` and `/p%2B` one file; this one (rules {}) keeps them apart, so going on would mix \
         the two and write pages over others. Finish the crawl with the crawltop that began it, \
         or start over with --fresh",
        dir.display(),
        super::mirror::NAMES
    )]
    MirrorNames { dir: PathBuf, was: u32 },
    #[error(
        "{} holds what a crawl stored ({}) but no checkpoint ({}): without it the crawl cannot be \
         resumed, and a new one would store its pages a second time; start over with --fresh \
         (it deletes only what crawltop keeps), or use another --out",
        dir.display(),
        found.join(", "),
        super::checkpoint::STATE_FILE
    )]
    NoCheckpoint {
        dir: PathBuf,
        found: Vec<&'static str>,
    },
    #[error(
        "{} holds a crawl made with {}; a resume crawls what the crawl's first run was told \
         to: give the same, or start over with --fresh",
        dir.display(),
        changed.join(", ")
    )]
    SettingsChanged { dir: PathBuf, changed: Vec<String> },
    #[error(
        "{} cannot be resumed by this run, in {} ways: {}",
        dir.display(),
        each.len(),
        numbered(each)
    )]
    Differs { dir: PathBuf, each: Vec<String> },
}

/// `(1) first; (2) second`.
fn numbered(each: &[String]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for (i, e) in each.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        let _ = write!(out, "({}) {e}", i + 1);
    }
    out
}

/// Each setting `now` gives otherwise than `was`, as `--name WAS (this run: NOW)`; a setting
/// one side lacks counts as empty (a crawltop that keeps a new one compares it from then on).
fn changed_settings(was: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Vec<String> {
    // `--extract-max-bytes` is kept only when it is not the default (a folder crawled before it
    // was kept resumes): absent, it is the default, not nothing (audit 27).
    let shown = |k: &str, v: Option<&String>| match (k, v.map(String::as_str)) {
        ("extract-max-bytes", None) => {
            format!("{} (the default)", crate::extract::DEFAULT_MAX_BYTES)
        }
        (_, None | Some("")) => "nothing".to_string(),
        (_, Some(v)) => v.to_string(),
    };
    was.keys()
        .chain(now.keys().filter(|k| !was.contains_key(*k)))
        .filter(|k| shown(k, was.get(*k)) != shown(k, now.get(*k)))
        .map(|k| {
            format!(
                "--{k} {} (this run: {})",
                shown(k, was.get(k)),
                shown(k, now.get(k))
            )
        })
        .collect()
}

/// What a crawl stores in its folder beside the checkpoint: the WARC files, the mirror, the
/// index.
pub const STORES: [&str; 3] = ["warc", "pages", "index"];

/// Which of [`STORES`] `dir` holds with something of a crawl's in it ([`stored_entries`]).
pub fn stored(dir: &Path) -> Vec<&'static str> {
    STORES
        .into_iter()
        .filter(|store| stored_entries(dir, store).is_ok_and(|found| !found.is_empty()))
        .collect()
}

/// The entries of `dir`'s store folder `store` (one of [`STORES`]) that are a crawl's: its WARC
/// files, the mirror's site folders and its lists ([`super::mirror::made_by_crawls`]), anything
/// in its index. Anything else there is the user's: `--fresh` leaves it. A store folder that is
/// not there holds none.
pub fn stored_entries(dir: &Path, store: &str) -> std::io::Result<Vec<PathBuf>> {
    let folder = dir.join(store);
    if std::fs::symlink_metadata(&folder).is_err() {
        return Ok(Vec::new());
    }
    if store == "pages" {
        let list = folder.join(super::mirror::SITES_LIST);
        let created = folder.join(super::mirror::CREATED_LIST);
        let temp = folder.join(super::mirror::TEMP_FOLDER);
        let mut found: Vec<PathBuf> = super::mirror::made_by_crawls(&folder)?
            .into_iter()
            .map(|site| folder.join(site))
            .chain([created, temp, list])
            .filter(|at| std::fs::symlink_metadata(at).is_ok())
            .collect();
        // The list goes last, so a removal cut short leaves it naming what is left.
        found.sort_by_key(|at| at.ends_with(super::mirror::SITES_LIST));
        return Ok(found);
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&folder)? {
        let entry = entry?;
        let name = entry.file_name();
        let ours = store != "warc"
            || super::warc::file_number(&name.to_string_lossy())
                .is_some_and(|(prefix, _)| prefix == WARC_PREFIX);
        if ours {
            found.push(entry.path());
        }
    }
    Ok(found)
}

/// The crawl folder's lock: held for the crawl's life, released by the OS on any exit.
#[derive(Debug)]
pub struct FolderLock {
    _file: File,
}

/// The lock file's name inside the crawl folder.
pub const LOCK_FILE: &str = "crawltop.lock";

/// The crawl folder's lock file as this crawl took it (device and inode): a folder removed or
/// replaced under a running crawl (`rm -rf`, a move) no longer has it, and another crawl may
/// have taken the path since. The lock alone cannot tell: it locks the old file.
#[derive(Debug, Clone)]
struct LockId {
    dir: PathBuf,
    dev: u64,
    ino: u64,
}

impl LockId {
    /// The lock file of `dir` as it is now; `None` without one (a store opened without the
    /// crawl's lock, as in tests of the committer alone).
    fn of(dir: &Path) -> Option<LockId> {
        use std::os::unix::fs::MetadataExt as _;
        let meta = std::fs::metadata(dir.join(LOCK_FILE)).ok()?;
        Some(LockId {
            dir: dir.to_path_buf(),
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }

    /// The folder still holds this crawl's lock file.
    fn check(&self) -> Result<(), StoreError> {
        match LockId::of(&self.dir) {
            Some(now) if (now.dev, now.ino) == (self.dev, self.ino) => Ok(()),
            _ => Err(StoreError::FolderGone {
                dir: self.dir.clone(),
            }),
        }
    }
}

impl FolderLock {
    /// Whether another process holds `dir`'s lock now. A probe for what to say before the
    /// engine starts: the lock is taken shared and let go at once, so a crawl that takes it in
    /// that instant is refused as if this one held it.
    pub fn held_elsewhere(dir: &Path) -> bool {
        std::fs::File::open(dir.join(LOCK_FILE)).is_ok_and(|f| f.try_lock_shared().is_err())
    }

    /// Creates `dir` if needed and takes its lock, or names the process that holds it.
    pub fn take(dir: &Path) -> Result<FolderLock, StoreError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let path = dir.join(LOCK_FILE);
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io(&path))?;
        if file.try_lock().is_err() {
            let mut pid = String::new();
            let _ = file.read_to_string(&mut pid);
            let pid = pid.trim();
            return Err(StoreError::Locked {
                dir: dir.to_path_buf(),
                pid: if pid.is_empty() {
                    "unknown".into()
                } else {
                    pid.to_string()
                },
            });
        }
        file.set_len(0).map_err(io(&path))?;
        file.rewind().map_err(io(&path))?;
        writeln!(file, "{}", std::process::id()).map_err(io(&path))?;
        file.flush().map_err(io(&path))?;
        Ok(FolderLock { _file: file })
    }
}

/// One request and its response, as the WARC files keep them.
#[derive(Debug, Clone)]
pub struct FetchRecord {
    pub url: url::Url,
    pub date: SystemTime,
    /// The request as crawltop sent it (request line and headers).
    pub request: Vec<u8>,
    /// The version of the response's status line (`HTTP/1.1`).
    pub version: &'static str,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
    /// Why `body` is shorter than what the server sent, if it is (`WARC-Truncated`).
    pub truncated: Option<Truncation>,
    /// The address the response came from, when known (`WARC-IP-Address`).
    pub ip: Option<std::net::IpAddr>,
}

impl FetchRecord {
    /// Whether the mirror keeps it: a 2xx answer (only those are pages), unless its fetch
    /// failed mid-body ([`Truncation::failed`]): such a response is in the WARC files only.
    pub fn is_mirrored(&self) -> bool {
        (200..300).contains(&self.status) && !self.truncated.is_some_and(Truncation::failed)
    }
}

/// One fetch of a page, ready to be stored.
#[derive(Debug, Clone)]
pub struct CommitItem {
    pub seq: Seq,
    pub fetch: FetchRecord,
    /// The page's title and visible text, when it is HTML to index (not `noindex`).
    pub text: Option<(String, String)>,
    /// Its `--extract` line, when it is an HTML page that matched a field (or was too large).
    pub extract: Option<crate::extract::ExtractLine>,
}

/// How the committer keeps pages: which stores, WARC rotation, the index writer's budget,
/// the `--extract-out` file.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub kind: StoreKind,
    pub warc_max_bytes: u64,
    pub index_memory_mb: usize,
    /// Build the full-text index in `index/`; a resume must make the same choice as the crawl's
    /// first run.
    pub index: bool,
    pub extract_out: Option<PathBuf>,
    /// What the crawl is told to crawl ([`crate::config::CrawlConfig::resume_settings`]): kept
    /// on the mark by the first run, and a resume must agree.
    pub settings: BTreeMap<String, String>,
}

/// What the committer has done, readable from any thread.
#[derive(Debug, Default)]
pub struct CommitStatus {
    committed: AtomicU64,
    checkpoints: AtomicU64,
    /// Jobs handed to the thread, and jobs it finished: their difference is the backlog.
    sent: AtomicU64,
    done: AtomicU64,
    /// Told when the backlog falls to half of [`BACKLOG_LIMIT`].
    drained: tokio::sync::Notify,
    error: Mutex<Option<String>>,
    /// Pages whose text the index cut, shared with the index thread.
    cuts: Arc<Cuts>,
    /// Everything below this sequence number is in the last checkpoint written.
    stored_below: tokio::sync::watch::Sender<u64>,
}

impl CommitStatus {
    pub fn committed(&self) -> u64 {
        self.committed.load(Ordering::Relaxed)
    }

    /// Jobs handed over and not written yet.
    pub fn backlog(&self) -> u64 {
        let done = self.done.load(Ordering::Acquire);
        self.sent.load(Ordering::Acquire).saturating_sub(done)
    }

    /// Whether the engine should hold back new fetches until the store catches up.
    pub fn is_full(&self) -> bool {
        self.backlog() >= BACKLOG_LIMIT
    }

    /// Resolves once the backlog has fallen to half the limit (or at once, if it fell since
    /// the last call).
    pub async fn drained(&self) {
        self.drained.notified().await;
    }

    /// Everything below this sequence number is in the last checkpoint written (or the one this
    /// run resumed from): stored for good, whatever happens to the process now.
    pub fn stored_below(&self) -> u64 {
        *self.stored_below.borrow()
    }

    /// Resolves once a written checkpoint holds everything below `seq` (at once if one does;
    /// never, if the committer ends first: bound the wait).
    pub async fn stored(&self, seq: u64) {
        let mut below = self.stored_below.subscribe();
        if below.wait_for(|&b| b >= seq).await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Checkpoints written by this run.
    pub fn checkpoints(&self) -> u64 {
        self.checkpoints.load(Ordering::Relaxed)
    }

    /// Pages whose text the index cut ([`crate::index::MAX_DISTINCT_WORDS`]), this crawl's
    /// earlier runs included.
    pub fn text_cut(&self) -> u64 {
        self.cuts.count()
    }

    /// The URLs the index cut since the last call, each with what it kept.
    pub fn take_text_cuts(&self) -> Vec<(String, crate::index::Cut)> {
        self.cuts.take()
    }

    pub fn error(&self) -> Option<String> {
        self.error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// What the engine hands the committer, in order.
#[derive(Debug)]
enum Job {
    Item(Box<CommitItem>),
    /// A robots.txt response of the site `origin` (or a redirect on the way to it): WARC
    /// records only, without a sequence number (robots.txt is not a page).
    Robots {
        origin: String,
        fetch: Box<FetchRecord>,
    },
    /// Everything handed over before this is below the delta's mark: sync, then checkpoint.
    Checkpoint(Box<Delta>),
}

/// How a crawl folder's store starts.
#[derive(Debug, Clone)]
pub enum Start {
    /// A new crawl: the state is created.
    Fresh,
    /// Going on from a checkpoint: what was written above its mark is cut away first.
    Resume(Mark),
}

/// The committer thread's handle.
#[derive(Debug)]
pub struct Committer {
    tx: Option<mpsc::Sender<Job>>,
    /// The crawl writes WARC files (robots.txt responses go nowhere else).
    warc: bool,
    thread: Option<JoinHandle<()>>,
    status: Arc<CommitStatus>,
    /// Reads URL rows back from the last committed checkpoint (the engine's URL table).
    url_reader: UrlReader,
    /// Files a resume removed from the mirror: mirrored for pages above its mark.
    unmirrored: usize,
}

/// Most jobs waiting for the committer before the engine holds back new fetches: the store
/// (WARC compression, indexing) sets the pace, and memory stays bounded.
pub const BACKLOG_LIMIT: u64 = 256;

/// How often (in items) the WARC file is flushed and synced.
const SYNC_EVERY: u64 = 256;

/// Set in the environment to N, the store fails after N items: how the tests prove that a
/// write error pauses the crawl and keeps what was committed (a full disk cannot be had on
/// demand).
pub const FAIL_AFTER_ENV: &str = "CRAWLTOP_TEST_STORE_FAIL_AFTER";

impl Committer {
    /// Opens the stores in `dir` (`warc/`, `pages/`, `index/`) and the checkpoint, and starts
    /// the thread. A resume first cuts the WARC files, the extract lines and the index back to
    /// the mark.
    // One story from the mark to the running thread; the index's move off this thread (issue
    // 11, item 4) is where it splits.
    #[allow(clippy::too_many_lines)]
    pub fn start(dir: &Path, opts: StoreOptions, start: &Start) -> Result<Committer, StoreError> {
        let StoreOptions {
            kind,
            warc_max_bytes,
            index_memory_mb,
            index: indexed,
            extract_out,
            settings,
        } = opts;
        // Before anything in the folder is touched: a run writes what the crawl's first run
        // wrote, or the folder would hold some pages in one store and the rest in another.
        if let Start::Resume(mark) = start {
            // Every difference at once: one a try made the user run it again for each (audit
            // 32).
            let mut differ = Vec::new();
            if mark.index != indexed {
                differ.push(StoreError::IndexChoice {
                    dir: dir.to_path_buf(),
                    indexed: mark.index,
                });
            }
            if let Some(was) = mark.store
                && was != kind
            {
                differ.push(StoreError::StoreChoice {
                    dir: dir.to_path_buf(),
                    was,
                });
            }
            if let Some(was) = &mark.settings {
                let changed = changed_settings(was, &settings);
                if !changed.is_empty() {
                    differ.push(StoreError::SettingsChanged {
                        dir: dir.to_path_buf(),
                        changed,
                    });
                }
            }
            // tantivy's own mark of an index; the first run created it before its first mark,
            // so a crawl that indexes and has none lost it (opening would make an empty one).
            if indexed
                && mark.index
                && mark.seq > 0
                && !dir.join("index").join("meta.json").is_file()
            {
                differ.push(StoreError::IndexMissing {
                    dir: dir.to_path_buf(),
                    committed: mark.seq,
                    warc: kind.warc(),
                });
            }
            if differ.len() > 1 {
                return Err(StoreError::Differs {
                    dir: dir.to_path_buf(),
                    each: differ.iter().map(ToString::to_string).collect(),
                });
            }
            if let Some(e) = differ.pop() {
                return Err(e);
            }
            // The same for the mirror, whose folder every run makes at its start (below). A
            // folder of an older crawltop that never mirrored a page has none either: it is
            // refused the same way, and an empty `pages/` lets it go on.
            if kind.mirror() && mark.seq > 0 && !dir.join("pages").is_dir() {
                return Err(StoreError::MirrorMissing {
                    dir: dir.to_path_buf(),
                    committed: mark.seq,
                });
            }
            // A mirror written under older naming rules: this run would name some pages the
            // way the older one named others, and write one over another.
            if kind.mirror() && mark.seq > 0 && mark.mirror_names != super::mirror::NAMES {
                return Err(StoreError::MirrorNames {
                    dir: dir.to_path_buf(),
                    was: mark.mirror_names,
                });
            }
        }
        // Opened and checked before anything else of the folder is touched: a refused index
        // leaves the folder as it was.
        let mut index = indexed
            .then(|| {
                crate::index::IndexWriter::open_with_memory(&dir.join("index"), index_memory_mb)
            })
            .transpose()?;
        let crawl = match start {
            Start::Resume(mark) => mark.crawl.clone(),
            Start::Fresh => None,
        }
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        if let Some(index) = index.as_mut() {
            if let Start::Resume(mark) = start {
                this_crawls_index(dir, mark, index)?;
            }
            index.stamp(&crawl);
        }
        let mut extract = (extract_out.as_deref())
            .map(|path| ExtractFile::open(path, start))
            .transpose()?;
        let extract_mark = extract.as_ref().map(|x| x.len);
        let warc_dir = dir.join("warc");
        if let Start::Resume(mark) = start
            && (mark.warc.is_some() || kind.warc())
        {
            cut_warc_back(&warc_dir, mark.warc.as_ref())?;
        }
        // The writer opens its first file with its first record; until then a mark says where
        // the run started (a resume's mark, its file cut back there; nothing for a new crawl),
        // never a file that is not there.
        let mut warc = if kind.warc() {
            Some(WarcWriter::new(&warc_dir, WARC_PREFIX, warc_max_bytes)?)
        } else {
            None
        };
        let warc_start = match start {
            Start::Resume(mark) if kind.warc() => mark.warc.clone(),
            Start::Resume(_) | Start::Fresh => None,
        };
        let warc_before = lens_at_start(&warc_dir, start);
        let lock = LockId::of(dir);
        let lock_after = lock.clone();
        // Made before the first mark, so a resume can tell a lost mirror from one that never
        // held a page (only 2xx answers are mirrored).
        // A resume first removes the files mirrored for pages above its mark, as the WARC
        // files were cut back above.
        let opening = match start {
            Start::Fresh => super::mirror::Opening::Fresh,
            Start::Resume(mark) => super::mirror::Opening::Resume(mark.seq),
        };
        let (mut mirror, unmirrored) = if kind.mirror() {
            let (mirror, removed) = super::mirror::Mirror::open(&dir.join("pages"), opening)?;
            (Some(mirror), removed)
        } else {
            (None, 0)
        };
        let warc_mark = warc_start.clone();
        let mut checkpoint = match start {
            Start::Fresh => Checkpoint::create(
                dir,
                &Mark {
                    seq: 0,
                    warc: warc_mark,
                    finished: false,
                    runs: 1,
                    extract: extract_mark,
                    text_cut: 0,
                    index: indexed,
                    store: Some(kind),
                    settings: Some(settings),
                    mirror_names: super::mirror::NAMES,
                    crawl: Some(crawl),
                    indexed: indexed.then_some(0),
                },
            )?,
            Start::Resume(mark) => {
                if let Some(index) = index.as_mut() {
                    index.rollback_from(mark.seq)?;
                }
                Checkpoint::reopen(
                    dir,
                    &Mark {
                        seq: mark.seq,
                        warc: warc_mark,
                        finished: false,
                        runs: mark.runs + 1,
                        extract: extract_mark,
                        text_cut: mark.text_cut,
                        index: indexed,
                        store: Some(kind),
                        // An older state, which kept none, keeps this run's from now on.
                        settings: Some(settings),
                        // Refused above for a mirror of older rules; WARC-only folders take
                        // these rules from now on.
                        mirror_names: super::mirror::NAMES,
                        crawl: Some(crawl),
                        // Checked above where the mark had it; an older state's from now on.
                        indexed: index.as_ref().map(crate::index::IndexWriter::pages),
                    },
                )?
            }
        };
        let url_reader = checkpoint.url_reader();
        // The pages above a resume's mark were rolled back out of the index; they are cut (and
        // counted) again when they come back.
        let cut_before = match start {
            Start::Fresh => 0,
            Start::Resume(mark) => mark.text_cut,
        };
        let status = Arc::new(CommitStatus {
            cuts: Arc::new(Cuts::starting_at(cut_before)),
            stored_below: tokio::sync::watch::Sender::new(match start {
                Start::Fresh => 0,
                Start::Resume(mark) => mark.seq,
            }),
            ..CommitStatus::default()
        });
        let fail_after = env_number(FAIL_AFTER_ENV);
        let mut index = index
            .map(|index| {
                IndexFeed::start_counting(
                    index,
                    env_number(crate::index::feed::FAIL_AFTER_ENV),
                    status.cuts.clone(),
                )
            })
            .transpose()?;
        let (tx, rx) = mpsc::channel::<Job>();
        let st = status.clone();
        let thread = std::thread::Builder::new()
            .name("crawltop-committer".into())
            .spawn(move || {
                let result = write_loop(
                    &rx,
                    Stores {
                        warc: warc.as_mut(),
                        warc_start,
                        warc_before,
                        mirror: mirror.as_mut(),
                        pages_unsynced: false,
                        lock,
                        index: index.as_mut(),
                        extract: extract.as_mut(),
                        checkpoint: &mut checkpoint,
                    },
                    &st,
                    fail_after,
                );
                // A store that failed because its folder went away (a file it wrote to is
                // gone) says that, not which file was missing.
                let fail = |e: String| {
                    let e = match lock_after.as_ref().map(LockId::check) {
                        Some(Err(gone)) => gone.to_string(),
                        _ => e,
                    };
                    let mut error = st.error.lock().unwrap_or_else(PoisonError::into_inner);
                    error.get_or_insert(e);
                };
                // Said at once, before the syncs below (the index may take seconds to finish):
                // the engine pauses on it at its next tick.
                if let Err(e) = &result {
                    fail(e.to_string());
                }
                let synced = warc.as_mut().map_or(Ok(()), WarcWriter::sync);
                let indexed = index.take().map_or(Ok(()), IndexFeed::finish);
                if let Some(e) = synced
                    .err()
                    .map(StoreError::from)
                    .or(indexed.err().map(StoreError::from))
                {
                    fail(e.to_string());
                }
            })
            .map_err(|source| StoreError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        Ok(Committer {
            tx: Some(tx),
            warc: kind.warc(),
            thread: Some(thread),
            status,
            url_reader,
            unmirrored,
        })
    }

    /// How many files this run's start removed from the mirror: a resume's, made for pages
    /// above its mark (they are fetched again, and written again if they still answer 2xx).
    pub fn unmirrored(&self) -> usize {
        self.unmirrored
    }

    /// Hands an item to the thread; never blocks.
    pub fn send(&self, item: CommitItem) {
        self.job(Job::Item(Box::new(item)));
    }

    /// Hands the thread a robots.txt response of the site `origin` (each response of its
    /// redirect chain is one); never blocks. Sent as it arrives, it is written before the
    /// checkpoint whose site rows first hold the answer (the engine marks the site's row changed
    /// with it), so a WARC file cut back to a mark holds exactly the robots.txt answers the
    /// checkpoint holds, and one a kill loses is fetched again by the resume and written then.
    /// With no WARC files it is dropped here.
    pub fn send_robots(&self, origin: &url::Url, fetch: FetchRecord) {
        if self.warc {
            self.job(Job::Robots {
                origin: origin.as_str().to_owned(),
                fetch: Box::new(fetch),
            });
        }
    }

    /// Asks for a checkpoint after every item sent so far; never blocks.
    pub fn checkpoint(&self, delta: Delta) {
        self.job(Job::Checkpoint(Box::new(delta)));
    }

    fn job(&self, job: Job) {
        if let Some(tx) = &self.tx {
            // Counted first, so the thread never finishes a job not counted as sent.
            self.status.sent.fetch_add(1, Ordering::AcqRel);
            // A send error means the thread ended on a write error, which `status` says.
            if tx.send(job).is_err() {
                self.status.sent.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// A reader of the URL rows the committed checkpoints hold.
    pub fn url_reader(&self) -> UrlReader {
        self.url_reader.clone()
    }

    pub fn status(&self) -> &Arc<CommitStatus> {
        &self.status
    }

    /// Writes what is queued, syncs, and stops the thread; the first write error, if any.
    pub fn finish(mut self) -> Option<String> {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.status.error()
    }
}

/// What the thread writes to: files of its own, and the index thread it feeds.
struct Stores<'a> {
    warc: Option<&'a mut WarcWriter>,
    /// The mark this run started from, for marks taken before its first WARC record.
    warc_start: Option<WarcMark>,
    /// The lengths of the crawl's WARC files before the current one ([`warc_mark`]).
    warc_before: Option<Vec<u64>>,
    mirror: Option<&'a mut super::mirror::Mirror>,
    /// A page was mirrored since the last checkpoint: the next one syncs the mirror.
    pages_unsynced: bool,
    /// The crawl folder's lock file as the crawl took it, checked at every checkpoint.
    lock: Option<LockId>,
    index: Option<&'a mut IndexFeed>,
    extract: Option<&'a mut ExtractFile>,
    checkpoint: &'a mut Checkpoint,
}

/// The `--extract-out` file: lines appended in commit order, its length in every mark.
struct ExtractFile {
    path: PathBuf,
    file: std::io::BufWriter<File>,
    /// Bytes written, buffered ones included.
    len: u64,
}

impl ExtractFile {
    /// A fresh crawl starts the file empty; a resume cuts it back to the mark's length (lines
    /// of pages above the mark are written again as those pages are committed again).
    fn open(path: &Path, start: &Start) -> Result<ExtractFile, StoreError> {
        let io = |source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        };
        let at = match start {
            Start::Fresh => 0,
            Start::Resume(mark) => mark.extract.unwrap_or(0),
        };
        if at > 0 {
            // Checked before anything is created: a refused resume leaves no empty file.
            let has = match std::fs::metadata(path) {
                Ok(meta) => meta.len(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
                Err(e) => return Err(io(e)),
            };
            if has < at {
                return Err(StoreError::ExtractShort {
                    path: path.to_path_buf(),
                    at,
                    has,
                });
            }
        }
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        let len = at;
        file.set_len(len).map_err(io)?;
        let mut file = std::io::BufWriter::new(file);
        file.seek(std::io::SeekFrom::Start(len)).map_err(io)?;
        Ok(ExtractFile {
            path: path.to_path_buf(),
            file,
            len,
        })
    }

    fn append(&mut self, line: &crate::extract::ExtractLine) -> Result<(), StoreError> {
        let mut bytes = serde_json::to_vec(line).map_err(|e| self.error(e.into()))?;
        bytes.push(b'\n');
        self.file.write_all(&bytes).map_err(|e| self.error(e))?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Everything appended is on disk: its length can go into a mark.
    fn sync(&mut self) -> Result<(), StoreError> {
        self.file.flush().map_err(|e| self.error(e))?;
        self.file.get_ref().sync_data().map_err(|e| self.error(e))
    }

    fn error(&self, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: self.path.clone(),
            source,
        }
    }
}

/// A test knob's number from the environment, if set.
fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The WARC files' name prefix.
pub const WARC_PREFIX: &str = "crawltop";

/// Where the file this run writes ends, once it has one, with the lengths of the crawl's
/// files before it. `before` holds those known so far (`None`: unknown, a state of an older
/// crawltop); a file closed since is measured now: it was synced when it was closed, and
/// nothing writes to it again.
fn warc_mark(w: &WarcWriter, before: &mut Option<Vec<u64>>) -> Option<WarcMark> {
    let path = w.current_file()?;
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let number = super::warc::file_number(&file).map_or(0, |(_, n)| n);
    if let (Some(lens), Some(dir)) = (before.as_mut(), path.parent()) {
        while (lens.len() as u64) < number {
            let name = super::warc::file_name(WARC_PREFIX, lens.len() as u64);
            if let Ok(meta) = std::fs::metadata(dir.join(name)) {
                lens.push(meta.len());
            } else {
                *before = None;
                break;
            }
        }
    }
    Some(WarcMark {
        file,
        position: w.position()?,
        before: before.clone().filter(|lens| lens.len() as u64 == number),
    })
}

/// The lengths of the crawl's files before the one a run writes first, as its start knows
/// them: none for a new crawl (or a resume from a mark that held no file, whose files were all
/// removed); a resume's mark's, and the marked file's, cut back to the mark. A state of an
/// older crawltop kept none (nor does a list that does not fit its mark): the files are
/// measured as they are now, checked from here on.
fn lens_at_start(warc_dir: &Path, start: &Start) -> Option<Vec<u64>> {
    let Start::Resume(Mark { warc: Some(at), .. }) = start else {
        return Some(Vec::new());
    };
    let (prefix, marked) = super::warc::file_number(&at.file)?;
    let mut lens = match &at.before {
        Some(lens) if lens.len() as u64 == marked => lens.clone(),
        _ => (0..marked)
            .map(|n| std::fs::metadata(warc_dir.join(super::warc::file_name(prefix, n))))
            .map(|meta| meta.map(|m| m.len()).ok())
            .collect::<Option<Vec<u64>>>()?,
    };
    lens.push(at.position);
    Some(lens)
}

/// Counts a job as done when it is dropped, whichever way the loop leaves it, and wakes the
/// engine when the backlog has fallen to half the limit.
struct Finished<'a>(&'a CommitStatus);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.done.fetch_add(1, Ordering::AcqRel);
        if self.0.backlog() <= BACKLOG_LIMIT / 2 {
            self.0.drained.notify_one();
        }
    }
}

fn write_loop(
    rx: &mpsc::Receiver<Job>,
    mut stores: Stores<'_>,
    status: &CommitStatus,
    fail_after: Option<u64>,
) -> Result<(), StoreError> {
    let mut since_sync = 0u64;
    while let Ok(job) = rx.recv() {
        let _done = Finished(status);
        let mut item = match job {
            Job::Item(item) => item,
            Job::Robots { origin, fetch } => {
                if let Some(w) = stores.warc.as_deref_mut() {
                    write_fetch(w, &fetch, None, Some(&origin))?;
                    since_sync += 1;
                }
                continue;
            }
            Job::Checkpoint(delta) => {
                // A mark written into a folder that is another crawl's now would be a lie.
                if let Some(lock) = &stores.lock {
                    lock.check()?;
                }
                // The order makes the mark true: the store and the index are durable up to
                // here before the state says so. The index thread has every page handed over
                // before this job, and `commit` returns once they are durable.
                let warc = match stores.warc.as_deref_mut() {
                    Some(w) => {
                        w.sync()?;
                        since_sync = 0;
                        warc_mark(w, &mut stores.warc_before).or_else(|| stores.warc_start.clone())
                    }
                    None => None,
                };
                if let Some(ix) = stores.index.as_deref_mut() {
                    let pages = ix.commit()?;
                    // Every page below the mark has been through the index thread.
                    stores.checkpoint.set_indexed(pages);
                    stores.checkpoint.set_text_cut(status.text_cut());
                    stores.checkpoint.add_text_cuts(status.cuts.take_unmarked());
                }
                let extract = match stores.extract.as_deref_mut() {
                    Some(x) => {
                        x.sync()?;
                        Some(x.len)
                    }
                    None => None,
                };
                if let Some(root) = (stores.mirror.as_deref())
                    .filter(|_| stores.pages_unsynced)
                    .map(super::mirror::Mirror::root)
                {
                    super::mirror::sync(root).map_err(|source| StoreError::Io {
                        path: root.to_path_buf(),
                        source,
                    })?;
                    stores.pages_unsynced = false;
                }
                stores.checkpoint.write(&delta, warc, extract)?;
                if let Some(mirror) = stores.mirror.as_deref_mut() {
                    mirror.checkpointed()?;
                }
                status.checkpoints.fetch_add(1, Ordering::Relaxed);
                status.stored_below.send_replace(delta.seq);
                continue;
            }
        };
        if fail_after.is_some_and(|n| status.committed() >= n) {
            return Err(StoreError::Io {
                path: PathBuf::from("(injected)"),
                source: std::io::Error::new(
                    std::io::ErrorKind::StorageFull,
                    format!("{FAIL_AFTER_ENV} is set: failing on purpose"),
                ),
            });
        }
        // One commit time for the page's record and its index entry (which breaks ties across
        // crawl folders with it): an index built again from the files keeps the same.
        let committed_ms = crate::clock::wall()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        if let Some(w) = stores.warc.as_deref_mut() {
            write_fetch(w, &item.fetch, Some((item.seq, committed_ms)), None)?;
            since_sync += 1;
            if since_sync >= SYNC_EVERY {
                w.sync()?;
                since_sync = 0;
            }
        }
        if let Some(mirror) = stores.mirror.as_deref_mut()
            && item.fetch.is_mirrored()
        {
            // The mirror writes by path: into a folder that another crawl's now, it would write
            // over that crawl's pages. One stat of the lock file a page.
            if let Some(lock) = &stores.lock {
                lock.check()?;
            }
            mirror.write_page(&item.fetch.url, &item.fetch.body, item.seq)?;
            stores.pages_unsynced = true;
        }
        if let (Some(ix), Some((title, text))) = (stores.index.as_deref_mut(), item.text.take()) {
            ix.add(crate::index::OwnedPage {
                seq: item.seq,
                url: item.fetch.url.as_str().to_owned(),
                title,
                text,
                committed_ms,
            })?;
        }
        if let (Some(x), Some(line)) = (stores.extract.as_deref_mut(), &item.extract) {
            x.append(line)?;
        }
        status.committed.fetch_add(1, Ordering::Relaxed);
    }
    stores.extract.map_or(Ok(()), ExtractFile::sync)
}

/// Writes a fetch's request and response records: a page's with its sequence number, a
/// robots.txt response with the origin whose robots.txt it answers.
fn write_fetch(
    w: &mut WarcWriter,
    fetch: &FetchRecord,
    page: Option<(Seq, u64)>,
    robots_for: Option<&str>,
) -> Result<(), StoreError> {
    let reason = hyper::StatusCode::from_u16(fetch.status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    w.write_exchange(&Exchange {
        target_uri: fetch.url.as_str(),
        seq: page.map(|(seq, _)| seq),
        committed_ms: page.map(|(_, ms)| ms),
        robots_for,
        date: fetch.date,
        ip: fetch.ip,
        request_line_and_headers: &fetch.request,
        version: fetch.version,
        status: fetch.status,
        reason,
        response_headers: &fetch.headers,
        body: &fetch.body,
        truncated: fetch.truncated,
    })?;
    Ok(())
}

/// A resume's index must be the one its checkpoint speaks of. Another crawl's (its stamp), or one
/// holding another number of pages below the mark (an older copy put back), would leave this
/// crawl's pages out of search, or put another web's in, and the crawl would end "completed"
/// (audit 27). Checks only what the mark knows: states written before it kept the crawl's name
/// or the index's count are not checked.
fn this_crawls_index(
    dir: &Path,
    mark: &Mark,
    index: &crate::index::IndexWriter,
) -> Result<(), StoreError> {
    let rebuildable = mark.store.is_none_or(StoreKind::warc);
    if let (Some(crawl), Some(stamped)) = (&mark.crawl, index.stamped())
        && crawl != stamped
    {
        return Err(StoreError::IndexOfAnother {
            dir: dir.to_path_buf(),
            stamped: stamped.to_owned(),
            crawl: crawl.clone(),
            rebuildable,
        });
    }
    if let Some(counted) = mark.indexed {
        let found = index.pages_below(mark.seq)?;
        if found != counted {
            return Err(StoreError::IndexPages {
                dir: dir.to_path_buf(),
                found,
                counted,
                rebuildable,
            });
        }
    }
    Ok(())
}

/// How a crawl folder's index can be built again: from its WARC files, or not at all.
fn rebuild_hint(dir: &Path, rebuildable: bool) -> String {
    if rebuildable {
        format!(
            "build it again from the WARC files with `crawltop index {} --replace`",
            dir.display()
        )
    } else {
        "(this crawl keeps no WARC files to build it again from)".to_string()
    }
}

/// A resume: cuts the WARC file named by the mark back to the mark's position and removes every
/// later file of the crawl, so nothing written above the mark stays in the store
/// ([`warc_held`], which readers of the folder follow too). A mark that names no file (the
/// crawl had written no record at its checkpoint) holds none of the crawl's files.
fn cut_warc_back(warc_dir: &Path, at: Option<&WarcMark>) -> Result<(), StoreError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StoreError::Io { path, source }
    };
    if let Some(at) = at {
        cut_marked_file(warc_dir, at)?;
    } else if !warc_dir.exists() {
        return Ok(());
    }
    for entry in std::fs::read_dir(warc_dir).map_err(io(warc_dir))? {
        let entry = entry.map_err(io(warc_dir))?;
        let name = entry.file_name();
        if name.to_str().and_then(|n| warc_held(at, n)) == Some(Held::Nothing) {
            std::fs::remove_file(entry.path()).map_err(io(&entry.path()))?;
        }
    }
    Ok(())
}

/// Cuts the file the mark names back to the mark's position, which it must reach.
fn cut_marked_file(warc_dir: &Path, at: &WarcMark) -> Result<(), StoreError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| StoreError::Io { path, source }
    };
    let ours = super::warc::file_number(&at.file).is_some_and(|(p, _)| p == WARC_PREFIX);
    if !ours {
        return Err(StoreError::Checkpoint(CheckpointError::Corrupt {
            path: warc_dir.to_path_buf(),
            reason: format!(
                "its mark names {:?}, not a WARC file of this crawl",
                at.file
            ),
        }));
    }
    // Gone whole, it is named whole (audit 32 M4), not by its first file.
    if !warc_dir.exists() {
        return Err(StoreError::WarcFolderMissing {
            dir: warc_dir.to_path_buf(),
            files: super::warc::file_number(&at.file).map_or(1, |(_, n)| n + 1),
            file: at.file.clone(),
            position: at.position,
        });
    }
    if let Some((name, what)) = super::warc_reader::damaged_before(warc_dir, at) {
        return Err(StoreError::WarcDamaged {
            path: warc_dir.join(name),
            what,
        });
    }
    let path = warc_dir.join(&at.file);
    let file = match std::fs::OpenOptions::new().write(true).open(&path) {
        Ok(file) => file,
        // Deleted, it is a cut file's case, cut to nothing: the same explanation and way out,
        // not a bare "No such file or directory" (audit 32 M4).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(StoreError::WarcDamaged {
                path,
                what: format!(
                    "is missing, where the checkpoint counted {} bytes of it durable",
                    at.position
                ),
            });
        }
        Err(e) => return Err(io(&path)(e)),
    };
    let len = file.metadata().map_err(io(&path))?.len();
    if len < at.position {
        // The file was cut, not the checkpoint: the other files are whole, and --fresh would
        // delete them too.
        return Err(StoreError::WarcDamaged {
            path: path.clone(),
            what: format!(
                "has {len} bytes, where the checkpoint counted {} durable",
                at.position
            ),
        });
    }
    file.set_len(at.position).map_err(io(&path))?;
    file.sync_all().map_err(io(&path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A changed setting is named with both values; an `--extract-max-bytes` the first run
    /// kept no value of is the default, not "nothing" (audit 27).
    #[test]
    fn a_changed_setting_names_both_values_and_a_default_as_the_default() {
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            (pairs.iter())
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect()
        };
        let was = map(&[("depth", "3"), ("include", "")]);
        let now = map(&[
            ("depth", "4"),
            ("include", ""),
            ("extract-max-bytes", "1000"),
        ]);
        assert_eq!(
            changed_settings(&was, &now),
            [
                "--depth 3 (this run: 4)".to_string(),
                format!(
                    "--extract-max-bytes {} (the default) (this run: 1000)",
                    crate::extract::DEFAULT_MAX_BYTES
                ),
            ]
        );
        assert!(changed_settings(&now, &now).is_empty());
    }

    #[test]
    fn a_second_lock_on_a_folder_names_the_first_holder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = FolderLock::take(dir.path()).expect("first");
        let err = FolderLock::take(dir.path()).expect_err("second");
        let text = err.to_string();
        assert!(text.contains(&std::process::id().to_string()), "{text}");
        assert!(text.contains("in use by another crawltop"), "{text}");
        drop(first);
        FolderLock::take(dir.path()).expect("free again");
    }
}
