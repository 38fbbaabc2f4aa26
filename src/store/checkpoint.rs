//! The checkpoint: what a killed crawl needs to resume, in `DIR/state.redb`.
//!
//! It owns the state file's layout, its format version and its integrity checks. The rows it
//! keeps (URLs, sites, the engine's counters) are opaque bytes here: the engine says what they
//! mean. Only the committer thread writes it, between two items of the commit order, so the
//! high-water mark it records is exactly what the store and the index hold; everyone else reads
//! it without writing to it ([`Checkpoint::find`], [`Checkpoint::find_mark`], through
//! `store::unwritten`), so a folder may be read where it may not be written. It never decides
//! what is fetched and never touches the page store's files.
//!
//! Why redb: one file, ACID transactions with checksummed pages, a crash at any moment reopens
//! with every committed transaction and none of the others, and nothing but Rust to build
//! (DEPENDENCIES.md). A checkpoint is one write transaction: the URL blocks and rows and the
//! site rows that changed since the last one, the engine's counters, the mark and the WARC
//! position, all or nothing.
//!
//! The layout (format 2): URL rows come in blocks of [`BLOCK_ROWS`] ids (`url_blocks`, key: the
//! block's number, `id / BLOCK_ROWS`), and a row that changed after its block was written is a
//! row of its own (`url_rows`, key: its id) until its block is written again, which removes
//! them. Format 1 kept one JSON row per URL; a state of format 1 is refused by name. The
//! `text_cuts` table lists the pages the index cut below the mark (added within format 2: a
//! state without it lists none).

use std::path::{Path, PathBuf};

use redb::{ReadableDatabase as _, ReadableTable as _, TableDefinition};
use serde::{Deserialize, Serialize};

use crate::index::feed::CutPage;
use crate::store::committer::StoreKind;

/// The state file's name inside the crawl folder.
pub const STATE_FILE: &str = "state.redb";

/// Bumped whenever a row's meaning changes; a state of another version is refused, never
/// guessed at.
pub const FORMAT_VERSION: u32 = 2;

/// URL rows a block of the `url_blocks` table holds.
pub const BLOCK_ROWS: u32 = 256;

/// redb's page cache for the state file. It is written a transaction a second and read
/// whole only at a resume, so caching buys little; redb's default (1 GiB) would show in a big
/// crawl's peak memory as a second copy of the rows.
const CACHE_BYTES: usize = 16 << 20;

const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
const URL_BLOCKS: TableDefinition<u32, &[u8]> = TableDefinition::new("url_blocks");
const URL_ROWS: TableDefinition<u32, &[u8]> = TableDefinition::new("url_rows");
const SITES: TableDefinition<u32, &[u8]> = TableDefinition::new("sites");
/// The pages the index cut below the mark (key: the page's sequence number; value: a JSON
/// [`CutPage`]): the reason their URL rows must carry, kept here because the engine writes it
/// on the row only after the index has cut the page, which may be after the checkpoint that
/// holds the page. A state without the table (written before it) has no cuts listed.
const TEXT_CUTS: TableDefinition<u64, &[u8]> = TableDefinition::new("text_cuts");

const KEY_FORMAT: &str = "format";
const KEY_MARK: &str = "mark";
const KEY_ENGINE: &str = "engine";
const KEY_URLS: &str = "urls";
const KEY_SEEDS: &str = "seeds";

/// Why the state could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error(
        "{} was written by a crawltop with state format {found}; this one reads format {expected}. \
         Resume it with the crawltop that wrote it, or start over with --fresh",
        path.display()
    )]
    Version {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    #[error(
        "the checkpoint {} is corrupt ({reason}); it is not used. Start over with --fresh, \
         or move the folder away",
        path.display()
    )]
    Corrupt { path: PathBuf, reason: String },
    #[error("checkpoint {}: {reason}", path.display())]
    Io { path: PathBuf, reason: String },
    /// Another crawltop has the state open: a crawl writing it (which keeps readers out), or,
    /// to a crawl starting, a command reading it.
    #[error(
        "the checkpoint {} is in use by another crawltop (a crawl writing it, or a command \
         reading it)",
        path.display()
    )]
    InUse { path: PathBuf },
}

/// Where the WARC files stood at the mark: everything after `position` in `file` (and every
/// later file) was written above the mark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WarcMark {
    /// The file's name inside `DIR/warc/`.
    pub file: String,
    pub position: u64,
    /// The lengths of the crawl's files before this one (`before[n]`: file `n`), each taken
    /// when the file was closed: a file found shorter or longer later was changed after the
    /// crawl wrote it. Absent in states written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Vec<u64>>,
}

/// How much of one WARC file a mark holds ([`WarcMark::holds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// A file written before the marked one, or one that is not the crawl's (another name:
    /// a resume leaves it be, and readers of the folder pass it over).
    Whole,
    /// The marked file: its first bytes, up to the mark's position.
    UpTo(u64),
    /// A file of the crawl written after the marked one.
    Nothing,
}

impl WarcMark {
    /// How much of the file `name` (in `DIR/warc/`) the mark holds: what a resume from it keeps
    /// (the committer cuts the marked file back to the position and deletes the crawl's later
    /// files), and so what a reader of the folder may take as committed. `None` when the mark
    /// names no numbered WARC file (`PREFIX-NNNNN.warc.gz`): a corrupt mark.
    pub fn holds(&self, name: &str) -> Option<Held> {
        let (prefix, marked) = crate::store::warc::file_number(&self.file)?;
        if name == self.file {
            return Some(Held::UpTo(self.position));
        }
        Some(match crate::store::warc::file_number(name) {
            Some((p, n)) if p == prefix && n > marked => Held::Nothing,
            _ => Held::Whole,
        })
    }
}

/// How much of the WARC file `name` (in `DIR/warc/`) a checkpoint's WARC mark holds, the mark
/// naming a file ([`WarcMark::holds`]) or none: a crawl that had written no WARC record at its
/// checkpoint (a run opens its first file with its first record) holds none of the crawl's
/// files (`PREFIX-NNNNN.warc.gz` of [`WARC_PREFIX`]) and any other file whole. `None` for a
/// corrupt mark.
///
/// [`WARC_PREFIX`]: crate::store::committer::WARC_PREFIX
pub fn warc_held(mark: Option<&WarcMark>, name: &str) -> Option<Held> {
    match mark {
        Some(mark) => mark.holds(name),
        None => Some(match crate::store::warc::file_number(name) {
            Some((prefix, _)) if prefix == crate::store::committer::WARC_PREFIX => Held::Nothing,
            _ => Held::Whole,
        }),
    }
}

/// The committed high-water mark and what the store looked like there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    /// Every sequence number below this one is in the store (or was skipped: no response).
    pub seq: u64,
    /// Where the WARC files stood; `None` for a crawl without them, and for one that had
    /// written no WARC record yet ([`warc_held`]: none of its files is held).
    pub warc: Option<WarcMark>,
    /// The crawl ran to its end: nothing is left to resume.
    pub finished: bool,
    /// How many runs wrote this state (1 after the first).
    pub runs: u64,
    /// With `--extract-out`: the lines file's length after the items below the mark (a
    /// resume cuts it back here). Absent in states written without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract: Option<u64>,
    /// Pages below the mark whose text the index cut ([`crate::index::feed::Cuts`]): counted
    /// by the index, so stamped here, where the index is durable, rather than with the
    /// engine's counters (which may run ahead of the mark). 0 in states written before it.
    #[serde(default)]
    pub text_cut: u64,
    /// The crawl builds the full-text index (not `--no-index`); every run of it must. True in
    /// states written before the choice existed (they all did).
    #[serde(default = "indexed")]
    pub index: bool,
    /// The page stores the crawl writes (`--store`); every run of it must write the same.
    /// Absent in states written before it was kept (not checked then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreKind>,
    /// What the crawl was told to crawl, by flag name
    /// ([`crate::config::CrawlConfig::resume_settings`]); every run of it must agree. Absent in
    /// states written before it was kept (not checked then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<std::collections::BTreeMap<String, String>>,
    /// The mirror's naming rules ([`crate::store::mirror::NAMES`]); 1 in states written before
    /// it was kept.
    #[serde(default = "first_names")]
    pub mirror_names: u32,
    /// The crawl's own name (a random UUID its first run made), stamped on every commit of its
    /// index too, so that a resume refuses an index another crawl wrote. Absent in states
    /// written before it was kept (a resume names the crawl then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crawl: Option<String>,
    /// Pages the index holds below the mark, stamped where the index is durable (as
    /// `text_cut`): a resume refuses an index holding another number below it (an older copy
    /// put back, another crawl's). Absent without an index, and in states written before it
    /// was kept (not checked then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexed: Option<u64>,
}

fn indexed() -> bool {
    true
}

fn first_names() -> u32 {
    1
}

/// What one checkpoint changes, built by the engine.
#[derive(Debug, Clone, Default)]
pub struct Delta {
    /// The mark's sequence number: everything below it was handed to the committer before
    /// this delta.
    pub seq: u64,
    pub finished: bool,
    /// Whole blocks of URL rows (key: block number); each replaces the single rows of its ids.
    pub url_blocks: Vec<(u32, Vec<u8>)>,
    /// Single URL rows (key: id), of blocks written before and not in `url_blocks`.
    pub url_rows: Vec<(u32, Vec<u8>)>,
    /// URLs known: the rows the blocks hold.
    pub urls: u64,
    pub sites: Vec<(u32, Vec<u8>)>,
    /// The engine's counters and anything else it keeps whole.
    pub engine: Vec<u8>,
    /// The crawl's seeds, opaque like `engine`, when they are new: each run's first checkpoint
    /// writes them, and later ones leave them as they are (a seeds file may hold millions, so
    /// they are not written once a second).
    pub seeds: Option<Vec<u8>>,
}

/// Everything a resume starts from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub mark: Mark,
    /// In block order.
    pub url_blocks: Vec<(u32, Vec<u8>)>,
    /// In id order: rows changed after their block was written.
    pub url_rows: Vec<(u32, Vec<u8>)>,
    /// URLs known at the mark.
    pub urls: u64,
    /// In id order.
    pub sites: Vec<(u32, Vec<u8>)>,
    pub engine: Vec<u8>,
    /// The seeds as the last run wrote them ([`Delta::seeds`]); `None` in a state written
    /// before they were kept apart (its engine blob holds them).
    pub seeds: Option<Vec<u8>>,
    /// Every page the index cut below the mark, in commit order.
    pub text_cuts: Vec<CutPage>,
}

/// The open state file; one per crawl folder (the folder's lock keeps other processes out).
pub struct Checkpoint {
    /// Shared with the [`UrlReader`]s: redb lets readers see the last committed transaction
    /// while the committer writes the next one.
    db: std::sync::Arc<redb::Database>,
    path: PathBuf,
    runs: u64,
    /// Pages the index has cut, as of the next mark ([`Checkpoint::set_text_cut`]).
    text_cut: u64,
    /// Whether the crawl builds the index, and which page stores it writes: every mark says it.
    index: bool,
    store: Option<StoreKind>,
    settings: Option<std::collections::BTreeMap<String, String>>,
    mirror_names: u32,
    crawl: Option<String>,
    /// Pages the index holds, as of the next mark ([`Checkpoint::set_indexed`]).
    indexed: Option<u64>,
    /// Cut pages for the next checkpoint's `text_cuts` table ([`Checkpoint::add_text_cuts`]);
    /// kept until a checkpoint holding them is committed.
    cut_pages: Vec<CutPage>,
    /// Checkpoints written by this value; see [`FAIL_AFTER_ENV`].
    written: u64,
    fail_after: Option<u64>,
}

/// Set in the environment to N, every checkpoint after the first N fails at its commit, its
/// rows written and then thrown away, as a full disk would make it: how the tests prove that
/// the crawl pauses and the last good checkpoint stays usable.
pub const FAIL_AFTER_ENV: &str = "CRAWLTOP_TEST_CHECKPOINT_FAIL_AFTER";

fn fail_after() -> Option<u64> {
    std::env::var(FAIL_AFTER_ENV).ok()?.parse().ok()
}

impl std::fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// Whether a folder holds a state, and what kind.
#[derive(Debug)]
pub enum Found {
    Nothing,
    Unfinished(Box<Loaded>),
    Finished(Box<Loaded>),
}

impl Checkpoint {
    /// Reads the state in `dir` without writing to it ([`crate::store::unwritten`]): what a
    /// folder holds, for a command that reads it. A missing file is `Nothing`; a file that is
    /// not a sound state of this format is an error, never a fresh start; one a running crawl
    /// holds is `InUse`.
    ///
    /// The crawl that holds the folder's lock reads it this way too, to decide whether to
    /// resume: a resume refused (a state cut short, a lost `index/`, another `--store`) leaves
    /// the file as it was (audit 32 M3: the repair of a killed crawl's state, made on disk, had
    /// rewritten its header and a commit slot before the refusal). An accepted one makes that
    /// repair on disk when it reopens the file ([`Checkpoint::reopen`]): a second pass over it.
    pub fn find(dir: &Path) -> Result<Found, CheckpointError> {
        let path = dir.join(STATE_FILE);
        if !path.exists() {
            return Ok(Found::Nothing);
        }
        let loaded = unpanicked(&path, || load(&mut open_unwritten(&path)?, &path))?;
        Ok(if loaded.mark.finished {
            Found::Finished(Box::new(loaded))
        } else {
            Found::Unfinished(Box::new(loaded))
        })
    }

    /// The mark of the state in `dir`, as [`Checkpoint::find`] reads and checks it, without
    /// the rows: what a reader of the folder needs to know what is committed. `None` without a
    /// state.
    pub fn find_mark(dir: &Path) -> Result<Option<Mark>, CheckpointError> {
        let path = dir.join(STATE_FILE);
        if !path.exists() {
            return Ok(None);
        }
        unpanicked(&path, || {
            let db = open_unwritten(&path)?;
            let txn = db.begin_read().map_err(|e| corrupt(&path, e.to_string()))?;
            Ok(Some(read_mark(&txn, &path)?))
        })
    }

    /// Creates a new state in `dir` (an existing one is replaced), with a first mark.
    pub fn create(dir: &Path, first: &Mark) -> Result<Checkpoint, CheckpointError> {
        let path = dir.join(STATE_FILE);
        if path.exists() {
            std::fs::remove_file(&path).map_err(|e| io(&path, &e))?;
        }
        let db = redb::Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(&path)
            .map_err(|e| io(&path, &e))?;
        let mut cp = Checkpoint {
            db: std::sync::Arc::new(db),
            path,
            runs: first.runs,
            text_cut: first.text_cut,
            index: first.index,
            store: first.store,
            mirror_names: first.mirror_names,
            settings: first.settings.clone(),
            crawl: first.crawl.clone(),
            indexed: first.indexed,
            cut_pages: Vec::new(),
            written: 0,
            fail_after: fail_after(),
        };
        cp.write_meta(first, true)?;
        Ok(cp)
    }

    /// Opens the state in `dir` to go on writing it after a resume, with the mark the resume
    /// starts from (its run count already raised).
    pub fn reopen(dir: &Path, mark: &Mark) -> Result<Checkpoint, CheckpointError> {
        let path = dir.join(STATE_FILE);
        let db = open(&path)?;
        let mut cp = Checkpoint {
            db: std::sync::Arc::new(db),
            path,
            runs: mark.runs,
            text_cut: mark.text_cut,
            index: mark.index,
            store: mark.store,
            settings: mark.settings.clone(),
            mirror_names: mark.mirror_names,
            crawl: mark.crawl.clone(),
            indexed: mark.indexed,
            cut_pages: Vec::new(),
            written: 0,
            fail_after: fail_after(),
        };
        cp.write_meta(mark, false)?;
        Ok(cp)
    }

    /// After the folder's index was built again from its WARC files ([`crate::reindex`]), by
    /// the holder of the folder's lock: writes `mark` (which says the crawl indexes, with the
    /// rebuilt index's count of cut pages) and makes `cuts` the checkpoint's whole list of pages
    /// the index cut, in one transaction. The URL rows, sites and counters stay as they are.
    pub fn mark_indexed(dir: &Path, mark: &Mark, cuts: &[CutPage]) -> Result<(), CheckpointError> {
        let path = dir.join(STATE_FILE);
        let db = open(&path)?;
        let err = |e: &dyn std::fmt::Display| io(&path, e);
        let txn = begin_write(&db).map_err(|e| err(&e))?;
        {
            let mut table = txn.open_table(TEXT_CUTS).map_err(|e| err(&e))?;
            table.retain(|_, _| false).map_err(|e| err(&e))?;
            for page in cuts {
                let bytes = serde_json::to_vec(page).map_err(|e| err(&e))?;
                table
                    .insert(page.seq, bytes.as_slice())
                    .map_err(|e| err(&e))?;
            }
            let mut meta = txn.open_table(META).map_err(|e| err(&e))?;
            let bytes = serde_json::to_vec(mark).map_err(|e| err(&e))?;
            meta.insert(KEY_MARK, bytes.as_slice())
                .map_err(|e| err(&e))?;
        }
        txn.commit().map_err(|e| err(&e))
    }

    /// A reader of the URL rows as the last committed checkpoint holds them.
    pub fn url_reader(&self) -> UrlReader {
        UrlReader {
            db: self.db.clone(),
            path: self.path.clone(),
        }
    }

    /// The index's count of cut pages for the next mark: set by the committer once the index is
    /// durable up to it.
    pub fn set_text_cut(&mut self, text_cut: u64) {
        self.text_cut = text_cut;
    }

    /// The index's count of pages for the next mark: set by the committer once the index is
    /// durable up to it.
    pub fn set_indexed(&mut self, pages: u64) {
        self.indexed = Some(pages);
    }

    /// Pages the index cut below the next mark, for its `text_cuts` table: set by the
    /// committer with [`Checkpoint::set_text_cut`].
    pub fn add_text_cuts(&mut self, cuts: Vec<CutPage>) {
        self.cut_pages.extend(cuts);
    }

    /// Writes one checkpoint, durably: the rows of `delta`, the engine's blob and the mark with
    /// `warc` (the WARC position after the items below the mark, already synced) and `extract`
    /// (the `--extract-out` file's length there, already synced).
    pub fn write(
        &mut self,
        delta: &Delta,
        warc: Option<WarcMark>,
        extract: Option<u64>,
    ) -> Result<(), CheckpointError> {
        let path = self.path.clone();
        let err = |e: &dyn std::fmt::Display| io(&path, e);
        let txn = begin_write(&self.db).map_err(|e| err(&e))?;
        {
            let mut blocks = txn.open_table(URL_BLOCKS).map_err(|e| err(&e))?;
            let mut rows = txn.open_table(URL_ROWS).map_err(|e| err(&e))?;
            for (block, bytes) in &delta.url_blocks {
                blocks
                    .insert(*block, bytes.as_slice())
                    .map_err(|e| err(&e))?;
                // The block holds its rows as they are now: their single rows are older.
                let first = block.saturating_mul(BLOCK_ROWS);
                rows.retain_in(first..first.saturating_add(BLOCK_ROWS), |_, _| false)
                    .map_err(|e| err(&e))?;
            }
            for (id, row) in &delta.url_rows {
                rows.insert(*id, row.as_slice()).map_err(|e| err(&e))?;
            }
            let mut sites = txn.open_table(SITES).map_err(|e| err(&e))?;
            for (id, row) in &delta.sites {
                sites.insert(*id, row.as_slice()).map_err(|e| err(&e))?;
            }
            let mut cuts = txn.open_table(TEXT_CUTS).map_err(|e| err(&e))?;
            for page in &self.cut_pages {
                let bytes = serde_json::to_vec(page).map_err(|e| err(&e))?;
                cuts.insert(page.seq, bytes.as_slice())
                    .map_err(|e| err(&e))?;
            }
            let mut meta = txn.open_table(META).map_err(|e| err(&e))?;
            meta.insert(KEY_ENGINE, delta.engine.as_slice())
                .map_err(|e| err(&e))?;
            if let Some(seeds) = &delta.seeds {
                meta.insert(KEY_SEEDS, seeds.as_slice())
                    .map_err(|e| err(&e))?;
            }
            meta.insert(KEY_URLS, delta.urls.to_le_bytes().as_slice())
                .map_err(|e| err(&e))?;
            let mark = Mark {
                seq: delta.seq,
                warc,
                finished: delta.finished,
                runs: self.runs,
                extract,
                text_cut: self.text_cut,
                index: self.index,
                store: self.store,
                settings: self.settings.clone(),
                mirror_names: self.mirror_names,
                crawl: self.crawl.clone(),
                indexed: self.indexed,
            };
            let bytes = serde_json::to_vec(&mark).map_err(|e| err(&e))?;
            meta.insert(KEY_MARK, bytes.as_slice())
                .map_err(|e| err(&e))?;
        }
        if self.fail_after.is_some_and(|n| self.written >= n) {
            // Dropped uncommitted: redb keeps the last committed transaction whole.
            drop(txn);
            return Err(err(&format!(
                "no space left on device ({FAIL_AFTER_ENV} is set: failing on purpose)"
            )));
        }
        txn.commit().map_err(|e| err(&e))?;
        self.written += 1;
        self.cut_pages.clear();
        Ok(())
    }

    fn write_meta(&mut self, mark: &Mark, create_tables: bool) -> Result<(), CheckpointError> {
        let path = self.path.clone();
        let err = |e: &dyn std::fmt::Display| io(&path, e);
        let txn = begin_write(&self.db).map_err(|e| err(&e))?;
        {
            if create_tables {
                txn.open_table(URL_BLOCKS).map_err(|e| err(&e))?;
                txn.open_table(URL_ROWS).map_err(|e| err(&e))?;
                txn.open_table(SITES).map_err(|e| err(&e))?;
            }
            let mut meta = txn.open_table(META).map_err(|e| err(&e))?;
            meta.insert(KEY_FORMAT, FORMAT_VERSION.to_le_bytes().as_slice())
                .map_err(|e| err(&e))?;
            let bytes = serde_json::to_vec(mark).map_err(|e| err(&e))?;
            meta.insert(KEY_MARK, bytes.as_slice())
                .map_err(|e| err(&e))?;
        }
        if self.fail_after.is_some_and(|n| self.written >= n) {
            // Dropped uncommitted: redb keeps the last committed transaction whole.
            drop(txn);
            return Err(err(&format!(
                "no space left on device ({FAIL_AFTER_ENV} is set: failing on purpose)"
            )));
        }
        txn.commit().map_err(|e| err(&e))?;
        self.written += 1;
        Ok(())
    }
}

/// Reads URL blocks back from the state file, for the engine's URL table when it dropped them
/// from memory (issue 12): what the last committed checkpoint holds, never what a checkpoint
/// being written holds.
#[derive(Clone)]
pub struct UrlReader {
    db: std::sync::Arc<redb::Database>,
    path: PathBuf,
}

impl UrlReader {
    /// Marks the crawl finished, nothing else changed: the one write made through a reader,
    /// which holds the state file open (a process opens it once). Made by the holder of the
    /// folder's lock after the crawl's last checkpoint and its exports, so that a crawl killed
    /// before its stats were written is resumed (and writes them), not refused as finished with
    /// no way to get them (audit 27).
    pub fn mark_finished(&self) -> Result<(), CheckpointError> {
        let path = &self.path;
        let err = |e: &dyn std::fmt::Display| io(path, e);
        let txn = begin_write(&self.db).map_err(|e| err(&e))?;
        {
            let mut meta = txn.open_table(META).map_err(|e| err(&e))?;
            let mut mark: Mark = {
                let bytes = meta
                    .get(KEY_MARK)
                    .map_err(|e| err(&e))?
                    .ok_or_else(|| corrupt(path, "it has no mark"))?;
                serde_json::from_slice(bytes.value()).map_err(|e| corrupt(path, e.to_string()))?
            };
            mark.finished = true;
            let bytes = serde_json::to_vec(&mark).map_err(|e| err(&e))?;
            meta.insert(KEY_MARK, bytes.as_slice())
                .map_err(|e| err(&e))?;
        }
        txn.commit().map_err(|e| err(&e))
    }
}

impl std::fmt::Debug for UrlReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UrlReader")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl UrlReader {
    /// Block `block` and the single rows written after it (in id order); `None` when the
    /// checkpoint has no such block.
    #[allow(clippy::type_complexity)]
    pub fn block(
        &self,
        block: u32,
    ) -> Result<Option<(Vec<u8>, Vec<(u32, Vec<u8>)>)>, CheckpointError> {
        let bad = |e: &dyn std::fmt::Display| io(&self.path, e);
        let txn = self.db.begin_read().map_err(|e| bad(&e))?;
        let blocks = txn.open_table(URL_BLOCKS).map_err(|e| bad(&e))?;
        let Some(bytes) = blocks.get(block).map_err(|e| bad(&e))? else {
            return Ok(None);
        };
        let bytes = bytes.value().to_vec();
        let rows = txn.open_table(URL_ROWS).map_err(|e| bad(&e))?;
        let first = block.saturating_mul(BLOCK_ROWS);
        let mut changed = Vec::new();
        for entry in rows
            .range(first..first.saturating_add(BLOCK_ROWS))
            .map_err(|e| bad(&e))?
        {
            let (k, v) = entry.map_err(|e| bad(&e))?;
            changed.push((k.value(), v.value().to_vec()));
        }
        Ok(Some((bytes, changed)))
    }
}

fn io(path: &Path, e: &dyn std::fmt::Display) -> CheckpointError {
    CheckpointError::Io {
        path: path.to_path_buf(),
        reason: e.to_string(),
    }
}

fn corrupt(path: &Path, reason: impl Into<String>) -> CheckpointError {
    CheckpointError::Corrupt {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// A write transaction committed in two phases (redb's `set_two_phase_commit`): the new commit
/// slot is made durable before the header points at it. Without it, redb takes a last commit
/// whose checksums fail for one a crash tore, and opens the commit before it without a word
/// (audit 32 M1: a resume from an older mark, the pages stored since cut and fetched again).
/// With it, a crash never leaves a last commit that fails its checksums, so one that does was
/// changed from outside, and redb refuses it ([`checked`] says so). The cost: one more `fsync`
/// a checkpoint, about one a second.
fn begin_write(db: &redb::Database) -> Result<redb::WriteTransaction, redb::TransactionError> {
    let mut txn = db.begin_write()?;
    txn.set_two_phase_commit(true);
    Ok(txn)
}

/// Opens the file to write it, and checks it ([`checked`]).
fn open(path: &Path) -> Result<redb::Database, CheckpointError> {
    checked(
        redb::Database::builder()
            .set_cache_size(CACHE_BYTES)
            .open(path),
        path,
    )
}

/// `read` over the state at `path`, a panic in it taken for what it is: redb meeting a file
/// damaged in a way its checks do not catch (audit 34: 4 bytes changed at offset 16384 made it
/// reach "unreachable code"), so the state is corrupt, named as any other, not a crash.
fn unpanicked<T>(
    path: &Path,
    read: impl FnOnce() -> Result<T, CheckpointError>,
) -> Result<T, CheckpointError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(corrupt(path, format!("redb failed on it: {why}")))
    })
}

/// Opens the file to read it, writing nothing to it ([`crate::store::unwritten`]), and checks
/// it ([`checked`]).
fn open_unwritten(path: &Path) -> Result<redb::Database, CheckpointError> {
    let file = crate::store::unwritten::Unwritten::open(path).map_err(|e| io(path, &e))?;
    checked(
        redb::Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create_with_backend(file),
        path,
    )
}

/// Checks an opened file end to end: redb's page checksums and tree structure. A file that
/// needed a repair was changed behind redb's back and is not trusted.
fn checked(
    opened: Result<redb::Database, redb::DatabaseError>,
    path: &Path,
) -> Result<redb::Database, CheckpointError> {
    let mut db = opened.map_err(|e| match e {
        // A file that ends before its own structures do (UnexpectedEof: "failed to fill whole
        // buffer") was cut: corrupt, not a failing disk.
        redb::DatabaseError::Storage(redb::StorageError::Io(io))
            if !matches!(
                io.kind(),
                std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof
            ) =>
        {
            CheckpointError::Io {
                path: path.to_path_buf(),
                reason: io.to_string(),
            }
        }
        redb::DatabaseError::DatabaseAlreadyOpen => CheckpointError::InUse {
            path: path.to_path_buf(),
        },
        other => corrupt(path, damage(&other)),
    })?;
    match db.check_integrity() {
        Ok(true) => Ok(db),
        Ok(false) => Err(corrupt(path, "it failed redb's integrity check")),
        Err(e) => Err(corrupt(path, damage(&e))),
    }
}

/// What is wrong with a state redb refuses, in its words, but for a last commit that fails its
/// checksums though written in two phases ([`begin_write`]): no crash tore it, so it says that,
/// and that the commit before it is not taken in its place.
fn damage(e: &redb::DatabaseError) -> String {
    match e {
        redb::DatabaseError::Storage(redb::StorageError::Corrupted(why))
            if why.contains("2-phase commit") =>
        {
            format!(
                "its last checkpoint was changed after crawltop wrote it, which neither a kill \
                 nor a power loss does, so the checkpoint before it is not taken in its place \
                 (redb: {why})"
            )
        }
        other => other.to_string(),
    }
}

/// The state's format, checked against this one's, and its mark.
fn read_mark(txn: &redb::ReadTransaction, path: &Path) -> Result<Mark, CheckpointError> {
    let bad = |e: &dyn std::fmt::Display| corrupt(path, e.to_string());
    let meta = txn.open_table(META).map_err(|e| bad(&e))?;
    let format = meta
        .get(KEY_FORMAT)
        .map_err(|e| bad(&e))?
        .ok_or_else(|| corrupt(path, "it has no format version"))?;
    let format = <[u8; 4]>::try_from(format.value())
        .map(u32::from_le_bytes)
        .map_err(|_| corrupt(path, "its format version is not 4 bytes"))?;
    if format != FORMAT_VERSION {
        return Err(CheckpointError::Version {
            path: path.to_path_buf(),
            found: format,
            expected: FORMAT_VERSION,
        });
    }
    let mark = meta
        .get(KEY_MARK)
        .map_err(|e| bad(&e))?
        .ok_or_else(|| corrupt(path, "it has no mark"))?;
    serde_json::from_slice(mark.value())
        .map_err(|e| corrupt(path, format!("its mark does not read: {e}")))
}

fn load(db: &mut redb::Database, path: &Path) -> Result<Loaded, CheckpointError> {
    let bad = |e: &dyn std::fmt::Display| corrupt(path, e.to_string());
    let txn = db.begin_read().map_err(|e| bad(&e))?;
    let mark = read_mark(&txn, path)?;
    let meta = txn.open_table(META).map_err(|e| bad(&e))?;
    let engine = meta
        .get(KEY_ENGINE)
        .map_err(|e| bad(&e))?
        .map(|v| v.value().to_vec())
        .unwrap_or_default();
    let seeds = meta
        .get(KEY_SEEDS)
        .map_err(|e| bad(&e))?
        .map(|v| v.value().to_vec());
    let rows =
        |table: TableDefinition<u32, &[u8]>| -> Result<Vec<(u32, Vec<u8>)>, CheckpointError> {
            let t = txn.open_table(table).map_err(|e| bad(&e))?;
            let mut out = Vec::new();
            for entry in t.iter().map_err(|e| bad(&e))? {
                let (k, v) = entry.map_err(|e| bad(&e))?;
                out.push((k.value(), v.value().to_vec()));
            }
            Ok(out)
        };
    let urls = meta
        .get(KEY_URLS)
        .map_err(|e| bad(&e))?
        .map_or(Ok(0), |v| {
            <[u8; 8]>::try_from(v.value()).map(u64::from_le_bytes)
        })
        .map_err(|_| corrupt(path, "its URL count is not 8 bytes"))?;
    let url_blocks = rows(URL_BLOCKS)?;
    let url_rows = rows(URL_ROWS)?;
    let sites = rows(SITES)?;
    let mut text_cuts = Vec::new();
    match txn.open_table(TEXT_CUTS) {
        Ok(table) => {
            for entry in table.iter().map_err(|e| bad(&e))? {
                let (seq, bytes) = entry.map_err(|e| bad(&e))?;
                let page: CutPage = serde_json::from_slice(bytes.value()).map_err(|e| {
                    corrupt(path, format!("cut page {} does not read: {e}", seq.value()))
                })?;
                if page.seq != seq.value() || page.seq >= mark.seq {
                    return Err(corrupt(
                        path,
                        format!("cut page {} is not where it should be", seq.value()),
                    ));
                }
                text_cuts.push(page);
            }
        }
        Err(redb::TableError::TableDoesNotExist(_)) => {}
        Err(e) => return Err(bad(&e)),
    }
    Ok(Loaded {
        mark,
        url_blocks,
        url_rows,
        urls,
        sites,
        engine,
        seeds,
        text_cuts,
    })
}

/// Writes a state of another format version: how the tests prove it is refused.
#[doc(hidden)]
pub fn write_foreign_version(dir: &Path, version: u32) -> Result<(), CheckpointError> {
    let path = dir.join(STATE_FILE);
    let db = redb::Database::create(&path).map_err(|e| io(&path, &e))?;
    let txn = db.begin_write().map_err(|e| io(&path, &e))?;
    {
        let mut meta = txn.open_table(META).map_err(|e| io(&path, &e))?;
        meta.insert(KEY_FORMAT, version.to_le_bytes().as_slice())
            .map_err(|e| io(&path, &e))?;
    }
    txn.commit().map_err(|e| io(&path, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_written_before_extract_lines_existed_reads_without_them() {
        let old = br#"{"seq":12,"warc":null,"finished":false,"runs":2}"#;
        let mark: Mark = serde_json::from_slice(old).expect("an older mark reads");
        assert_eq!(mark.extract, None);
        assert_eq!(
            mark.text_cut, 0,
            "a state from before the count starts it at 0"
        );
        assert_eq!(mark.seq, 12);
        assert!(mark.index, "every crawl before --no-index built the index");
        assert_eq!(mark.store, None, "not known, so not checked");
        assert_eq!(
            (mark.crawl, mark.indexed),
            (None, None),
            "not known, so not checked"
        );
        let mark: Mark = serde_json::from_slice(old).expect("an older mark reads");
        let text = serde_json::to_string(&mark).expect("writes");
        assert!(!text.contains("extract"), "{text}");
    }

    fn first() -> Mark {
        Mark {
            seq: 0,
            warc: Some(WarcMark {
                file: "crawl-00000.warc.gz".into(),
                position: 10,
                before: None,
            }),
            finished: false,
            runs: 1,
            extract: None,
            text_cut: 0,
            index: true,
            store: Some(StoreKind::Warc),
            settings: None,
            mirror_names: crate::store::mirror::NAMES,
            crawl: None,
            indexed: None,
        }
    }

    fn delta(seq: u64, rows: &[(u32, &str)]) -> Delta {
        Delta {
            seq,
            finished: false,
            url_blocks: Vec::new(),
            urls: 0,
            url_rows: rows
                .iter()
                .map(|(id, r)| (*id, r.as_bytes().to_vec()))
                .collect(),
            sites: vec![(0, b"site zero".to_vec())],
            engine: format!("engine at {seq}").into_bytes(),
            seeds: (seq == 3).then(|| b"seeds at 3".to_vec()),
        }
    }

    fn unfinished(dir: &Path) -> Loaded {
        match Checkpoint::find(dir).expect("find") {
            Found::Unfinished(l) => *l,
            Found::Nothing => panic!("expected an unfinished state, found nothing"),
            Found::Finished(_) => panic!("expected an unfinished state, found a finished one"),
        }
    }

    #[test]
    fn a_folder_without_a_state_has_nothing_to_resume() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(matches!(Checkpoint::find(dir.path()), Ok(Found::Nothing)));
    }

    #[test]
    fn checkpoints_accumulate_rows_and_keep_the_last_mark() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cp = Checkpoint::create(dir.path(), &first()).expect("create");
        cp.write(&delta(3, &[(0, "a"), (1, "b")]), None, None)
            .expect("write");
        let warc = WarcMark {
            file: "crawl-00001.warc.gz".into(),
            position: 999,
            before: None,
        };
        cp.write(&delta(7, &[(1, "b2"), (2, "c")]), Some(warc.clone()), None)
            .expect("write");
        drop(cp);
        let l = unfinished(dir.path());
        assert_eq!(l.mark.seq, 7);
        assert_eq!(l.mark.warc, Some(warc));
        assert_eq!(l.mark.runs, 1);
        let rows: Vec<(u32, &[u8])> = l.url_rows.iter().map(|(k, v)| (*k, v.as_slice())).collect();
        assert_eq!(rows, vec![(0, &b"a"[..]), (1, &b"b2"[..]), (2, &b"c"[..])]);
        assert_eq!(l.engine, b"engine at 7");
        // Written by the first checkpoint only, and kept by the next.
        assert_eq!(l.seeds.as_deref(), Some(&b"seeds at 3"[..]));
    }

    #[test]
    fn the_index_cut_count_is_on_the_mark_and_goes_on_after_a_reopen() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cp = Checkpoint::create(dir.path(), &first()).expect("create");
        cp.set_text_cut(3);
        cp.write(&delta(5, &[(0, "a")]), None, None).expect("write");
        drop(cp);
        let mark = unfinished(dir.path()).mark;
        assert_eq!(mark.text_cut, 3);
        // A resume reopens with the mark's count; a checkpoint that sets none keeps it.
        let mut cp = Checkpoint::reopen(dir.path(), &mark).expect("reopen");
        cp.write(&delta(6, &[(1, "b")]), None, None).expect("write");
        drop(cp);
        assert_eq!(unfinished(dir.path()).mark.text_cut, 3);
    }

    fn cut_page(seq: u64) -> CutPage {
        CutPage {
            seq,
            url: format!("http://127.0.0.1:1/{seq}.html"),
            cut: crate::index::Cut {
                kept_words: 100_000,
                words: 100_000 + seq,
            },
        }
    }

    /// The pages the index cut are listed with the mark that holds them; a checkpoint that
    /// fails keeps them for the next one; a state written before the list has none.
    #[test]
    fn the_index_cut_pages_are_listed_with_their_mark_and_survive_a_failed_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cp = Checkpoint::create(dir.path(), &first()).expect("create");
        drop(cp);
        assert_eq!(unfinished(dir.path()).text_cuts, Vec::new(), "no table yet");

        let mut cp = Checkpoint::reopen(dir.path(), &first()).expect("reopen");
        cp.add_text_cuts(vec![cut_page(2)]);
        cp.write(&delta(4, &[(0, "a")]), None, None).expect("write");
        cp.add_text_cuts(vec![cut_page(5), cut_page(6)]);
        cp.fail_after = Some(cp.written);
        assert!(cp.write(&delta(8, &[]), None, None).is_err(), "refused");
        cp.fail_after = None;
        cp.add_text_cuts(vec![cut_page(7)]);
        cp.write(&delta(9, &[]), None, None).expect("write");
        drop(cp);
        let l = unfinished(dir.path());
        assert_eq!(
            l.text_cuts,
            vec![cut_page(2), cut_page(5), cut_page(6), cut_page(7)]
        );
    }

    /// A listed page at or above its mark is not where the index put it: the state is corrupt.
    #[test]
    fn a_cut_page_above_the_mark_is_a_corrupt_state() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cp = Checkpoint::create(dir.path(), &first()).expect("create");
        cp.add_text_cuts(vec![cut_page(4)]);
        cp.write(&delta(4, &[]), None, None).expect("write");
        drop(cp);
        let err = Checkpoint::find(dir.path()).expect_err("refused");
        assert!(
            err.to_string()
                .contains("cut page 4 is not where it should be"),
            "{err}"
        );
    }

    /// A listed page that does not read (bytes written by something else) makes the state
    /// corrupt, named, never a resume without it.
    #[test]
    fn a_cut_page_that_does_not_read_is_a_corrupt_state() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cp = Checkpoint::create(dir.path(), &first()).expect("create");
        cp.write(&delta(4, &[]), None, None).expect("write");
        drop(cp);
        let db = redb::Database::open(dir.path().join(STATE_FILE)).expect("open");
        let txn = db.begin_write().expect("txn");
        txn.open_table(TEXT_CUTS)
            .expect("table")
            .insert(2, &b"{\"seq\":2,\"url\":"[..])
            .expect("insert");
        txn.commit().expect("commit");
        drop(db);
        let err = Checkpoint::find(dir.path()).expect_err("refused");
        assert!(
            err.to_string().contains("cut page 2 does not read"),
            "{err}"
        );
    }

    #[test]
    fn a_finished_crawl_is_found_as_finished() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cp = Checkpoint::create(dir.path(), &first()).expect("create");
        let mut d = delta(2, &[]);
        d.finished = true;
        cp.write(&d, None, None).expect("write");
        drop(cp);
        assert!(matches!(
            Checkpoint::find(dir.path()),
            Ok(Found::Finished(_))
        ));
    }

    #[test]
    fn reopening_counts_the_run_and_keeps_the_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cp = Checkpoint::create(dir.path(), &first()).expect("create");
        cp.write(&delta(5, &[(0, "a")]), None, None).expect("write");
        drop(cp);
        let mut mark = unfinished(dir.path()).mark;
        mark.runs += 1;
        let mut cp = Checkpoint::reopen(dir.path(), &mark).expect("reopen");
        cp.write(&delta(9, &[(1, "b")]), None, None).expect("write");
        drop(cp);
        let l = unfinished(dir.path());
        assert_eq!((l.mark.seq, l.mark.runs, l.url_rows.len()), (9, 2, 2));
    }

    /// A block written again holds its rows as they are now: the single rows of its ids,
    /// older, are gone with the same transaction; other blocks' rows stay.
    #[test]
    fn a_block_written_again_replaces_its_single_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cp = Checkpoint::create(dir.path(), &first()).expect("create");
        let mut d = delta(1, &[]);
        d.url_blocks = vec![(0, b"block 0".to_vec()), (1, b"block 1".to_vec())];
        cp.write(&d, None, None).expect("write");
        let (in_0, in_1) = (BLOCK_ROWS - 1, BLOCK_ROWS);
        cp.write(&delta(2, &[(3, "x"), (in_0, "y"), (in_1, "z")]), None, None)
            .expect("write");
        let mut d = delta(3, &[]);
        d.url_blocks = vec![(0, b"block 0 again".to_vec())];
        cp.write(&d, None, None).expect("write");
        drop(cp);
        let l = unfinished(dir.path());
        assert_eq!(
            l.url_blocks,
            vec![(0, b"block 0 again".to_vec()), (1, b"block 1".to_vec())]
        );
        assert_eq!(l.url_rows, vec![(in_1, b"z".to_vec())]);
    }

    /// A state file as format 1 wrote it (one JSON row per URL in `resources`) is refused by
    /// name, and nothing in it is changed.
    #[test]
    fn a_state_of_format_1_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(STATE_FILE);
        {
            let db = redb::Database::create(&path).expect("create");
            let txn = db.begin_write().expect("txn");
            {
                let mut meta = txn.open_table(META).expect("meta");
                meta.insert(KEY_FORMAT, 1u32.to_le_bytes().as_slice())
                    .expect("format");
                let mark = serde_json::to_vec(&first()).expect("mark");
                meta.insert(KEY_MARK, mark.as_slice()).expect("mark");
                let old: TableDefinition<u32, &[u8]> = TableDefinition::new("resources");
                let mut rows = txn.open_table(old).expect("resources");
                let row =
                    br#"{"url":"http://127.0.0.1:1/","site":0,"depth":0,"state":"discovered"}"#;
                rows.insert(0, row.as_slice()).expect("row");
            }
            txn.commit().expect("commit");
        }
        let Err(err) = Checkpoint::find(dir.path()) else {
            panic!("a format 1 state was read as format {FORMAT_VERSION}");
        };
        assert!(
            matches!(
                err,
                CheckpointError::Version {
                    found: 1,
                    expected: FORMAT_VERSION,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("state format 1"), "{err}");
        // Nothing was rewritten in this format: the old row and version are as they were.
        let db = redb::Database::open(&path).expect("open");
        let txn = db.begin_read().expect("txn");
        let old: TableDefinition<u32, &[u8]> = TableDefinition::new("resources");
        let rows = txn.open_table(old).expect("resources");
        assert!(rows.get(0).expect("get").is_some(), "the old row is gone");
        assert!(
            txn.open_table(URL_BLOCKS).is_err(),
            "a table of format 2 was added"
        );
        let meta = txn.open_table(META).expect("meta");
        let format = meta.get(KEY_FORMAT).expect("get").expect("a format");
        assert_eq!(format.value(), 1u32.to_le_bytes().as_slice());
    }

    #[test]
    fn a_state_of_another_format_version_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_foreign_version(dir.path(), FORMAT_VERSION + 1).expect("write");
        let Err(err) = Checkpoint::find(dir.path()) else {
            panic!("a state of another version was read");
        };
        assert!(
            matches!(err, CheckpointError::Version { found, .. } if found == FORMAT_VERSION + 1)
        );
        assert!(err.to_string().contains("--fresh"), "{err}");
    }

    /// A killed crawl leaves its state marked for a repair, which redb makes when it opens the
    /// file (its read-only open refuses such a file). Copied while its crawl holds it open (the
    /// file as a kill leaves it), it reads with its last mark, and is left as it was; the state
    /// its crawl holds open is refused by name instead of read as it changes.
    #[test]
    fn a_killed_crawls_state_reads_without_a_write_and_a_running_one_is_in_use() {
        let running = tempfile::tempdir().expect("tempdir");
        let mut cp = Checkpoint::create(running.path(), &first()).expect("create");
        let warc = WarcMark {
            file: "crawltop-00001.warc.gz".into(),
            position: 99,
            before: None,
        };
        cp.write(&delta(7, &[(0, "row")]), Some(warc.clone()), None)
            .expect("write");
        let killed = tempfile::tempdir().expect("tempdir");
        let path = killed.path().join(STATE_FILE);
        std::fs::copy(running.path().join(STATE_FILE), &path).expect("copy");
        for err in [
            Checkpoint::find_mark(running.path()).expect_err("in use"),
            Checkpoint::find(running.path()).expect_err("in use"),
        ] {
            assert!(matches!(err, CheckpointError::InUse { .. }), "{err}");
        }
        drop(cp);

        let bytes = std::fs::read(&path).expect("read");
        assert!(
            matches!(
                redb::ReadOnlyDatabase::open(&path),
                Err(redb::DatabaseError::RepairAborted)
            ),
            "the copy needs the repair a kill leaves to do"
        );
        let mark = Checkpoint::find_mark(killed.path())
            .expect("reads")
            .expect("a mark");
        assert_eq!((mark.seq, mark.warc, mark.finished), (7, Some(warc), false));
        let Found::Unfinished(loaded) = Checkpoint::find(killed.path()).expect("reads") else {
            panic!("not an unfinished crawl");
        };
        assert_eq!(loaded.url_rows, vec![(0, b"row".to_vec())]);
        assert!(
            std::fs::read(&path).expect("read") == bytes,
            "nothing written"
        );
    }

    /// redb's file header: which commit slot holds the last commit (bit 0 of the byte after
    /// its 9-byte magic number), each slot 128 bytes from offset 64 (redb 4's file format).
    fn primary_slot_offset(bytes: &[u8]) -> usize {
        64 + 128 * usize::from(bytes[9] & 1)
    }

    /// A state as a kill leaves it (copied while its crawl holds it open) after two
    /// checkpoints, the second one holding a row of its own; the copy's path.
    fn killed_after_two_checkpoints(running: &Path, killed: &Path) -> PathBuf {
        let mut cp = Checkpoint::create(running, &first()).expect("create");
        cp.write(&delta(3, &[(0, "the first checkpoint's row")]), None, None)
            .expect("write");
        cp.write(&delta(8, &[(1, "the second checkpoint's row")]), None, None)
            .expect("write");
        let path = killed.join(STATE_FILE);
        std::fs::copy(running.join(STATE_FILE), &path).expect("copy");
        drop(cp);
        path
    }

    /// Audit 32 M1: the last commit of a killed crawl's state damaged (its commit slot, or a
    /// page only it holds) made redb fall back to the commit before, and the resume started
    /// from that older mark without a word, cutting the pages stored since. Every commit is a
    /// 2-phase one now, so only a change from outside crawltop can damage the last one (a
    /// kill or a power loss cannot): the state is refused as corrupt, and left as it was.
    #[test]
    fn a_damaged_last_checkpoint_is_refused_not_replaced_by_the_one_before() {
        let cases = ["commit slot", "page of the last checkpoint"]
            .into_iter()
            .flat_map(|damage| [(damage, "killed"), (damage, "stopped")]);
        for (damage, ended) in cases {
            let running = tempfile::tempdir().expect("tempdir");
            let killed = tempfile::tempdir().expect("tempdir");
            let path = killed_after_two_checkpoints(running.path(), killed.path());
            if ended == "stopped" {
                std::fs::copy(running.path().join(STATE_FILE), &path).expect("copy");
            }
            let mut bytes = std::fs::read(&path).expect("read");
            let at = match damage {
                "commit slot" => primary_slot_offset(&bytes) + 36,
                _ => bytes
                    .windows(12)
                    .position(|w| w == b"the second c")
                    .expect("the row is in the file"),
            };
            for b in &mut bytes[at..at + 4] {
                *b ^= 0x5a;
            }
            std::fs::write(&path, &bytes).expect("write");
            for (how, found) in [
                ("find", Checkpoint::find(killed.path()).map(|_| ())),
                (
                    "find_mark",
                    Checkpoint::find_mark(killed.path()).map(|_| ()),
                ),
            ] {
                let Err(err) = found else {
                    panic!(
                        "{damage}, {ended}, {how}: an older checkpoint was taken for the last one"
                    );
                };
                assert!(
                    matches!(err, CheckpointError::Corrupt { .. }),
                    "{damage}, {ended}, {how}: {err}"
                );
                assert!(
                    err.to_string().contains("changed after crawltop wrote it"),
                    "{damage}, {ended}, {how}: {err}"
                );
            }
            assert!(
                std::fs::read(&path).expect("read") == bytes,
                "{damage}, {ended}: the state was written to"
            );
        }
    }

    /// Audit 34: 4 bytes changed at offset 16384 or 16400 of a stopped crawl's state made redb
    /// panic as it read it (exit 101). Such a state is named corrupt, as any other.
    #[test]
    fn a_state_redb_panics_on_is_named_corrupt() {
        let running = tempfile::tempdir().expect("tempdir");
        let mut cp = Checkpoint::create(running.path(), &first()).expect("create");
        for n in 0..40u32 {
            let row = format!("row {n} {}", "x".repeat(300));
            cp.write(&delta(u64::from(n) + 1, &[(n, row.as_str())]), None, None)
                .expect("write");
        }
        drop(cp);
        let clean = std::fs::read(running.path().join(STATE_FILE)).expect("read");
        let mut panicked_before = Vec::new();
        for at in [16384usize, 16400] {
            assert!(clean.len() > at + 4, "{} bytes", clean.len());
            let dir = tempfile::tempdir().expect("tempdir");
            let mut bytes = clean.clone();
            for b in &mut bytes[at..at + 4] {
                *b ^= 0x5a;
            }
            std::fs::write(dir.path().join(STATE_FILE), &bytes).expect("write");
            let found = std::panic::catch_unwind(|| Checkpoint::find(dir.path()).map(|_| ()));
            let Ok(found) = found else {
                panicked_before.push(at);
                continue;
            };
            if let Err(e) = found {
                assert!(matches!(e, CheckpointError::Corrupt { .. }), "{at}: {e}");
            }
        }
        assert!(
            panicked_before.is_empty(),
            "panicked at offsets {panicked_before:?}"
        );
    }

    #[test]
    fn a_mark_holds_earlier_files_whole_its_own_up_to_its_position_and_no_later_one() {
        let mark = WarcMark {
            file: "crawltop-00002.warc.gz".into(),
            position: 500,
            before: None,
        };
        assert_eq!(mark.holds("crawltop-00001.warc.gz"), Some(Held::Whole));
        assert_eq!(mark.holds("crawltop-00002.warc.gz"), Some(Held::UpTo(500)));
        assert_eq!(mark.holds("crawltop-00003.warc.gz"), Some(Held::Nothing));
        assert_eq!(mark.holds("crawltop-00010.warc.gz"), Some(Held::Nothing));
        assert_eq!(
            mark.holds("other-00009.warc.gz"),
            Some(Held::Whole),
            "not the crawl's: a resume leaves it"
        );
        let bad = WarcMark {
            file: "crawltop.warc.gz".into(),
            position: 0,
            before: None,
        };
        assert_eq!(bad.holds("crawltop-00001.warc.gz"), None);
    }

    #[test]
    fn a_file_that_is_not_a_state_is_corrupt_not_fresh() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(STATE_FILE), b"not a database at all").expect("write");
        let Err(err) = Checkpoint::find(dir.path()) else {
            panic!("a file that is not a state was read");
        };
        assert!(matches!(err, CheckpointError::Corrupt { .. }), "{err}");
    }

    /// A state cut short (a copy that stopped, a disk that filled) is corrupt, and says what
    /// to do, not "failed to fill whole buffer".
    #[test]
    fn a_state_cut_short_is_corrupt() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cp = Checkpoint::create(dir.path(), &first()).expect("create");
        let rows: Vec<(u32, String)> = (0..2000).map(|i| (i, format!("row {i}"))).collect();
        let rows: Vec<(u32, &str)> = rows.iter().map(|(i, s)| (*i, s.as_str())).collect();
        cp.write(&delta(3, &rows), None, None).expect("write");
        drop(cp);
        let path = dir.path().join(STATE_FILE);
        let len = std::fs::metadata(&path).expect("metadata").len();
        for cut in (1..40)
            .map(|k| len * k / 40)
            .chain([len - 1, 4096, 1000, 10])
        {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .expect("open");
            file.set_len(cut).expect("cut");
            for (how, found) in [
                ("find", Checkpoint::find(dir.path()).map(|_| ())),
                ("find_mark", Checkpoint::find_mark(dir.path()).map(|_| ())),
            ] {
                let Err(err) = found else {
                    panic!("{how}: a state cut to {cut} of {len} bytes was trusted");
                };
                assert!(
                    matches!(err, CheckpointError::Corrupt { .. }),
                    "{how}, {cut} of {len}: {err}"
                );
                assert!(err.to_string().contains("--fresh"), "{err}");
            }
        }
    }

    #[test]
    fn scribbled_pages_are_detected() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cp = Checkpoint::create(dir.path(), &first()).expect("create");
        let rows: Vec<(u32, String)> = (0..2000)
            .map(|i| (i, format!("row {i} {}", "x".repeat(100))))
            .collect();
        let rows: Vec<(u32, &str)> = rows.iter().map(|(i, s)| (*i, s.as_str())).collect();
        cp.write(&delta(3, &rows), None, None).expect("write");
        drop(cp);
        let path = dir.path().join(STATE_FILE);
        let mut bytes = std::fs::read(&path).expect("read");
        // Flip bytes inside a stored row, as a bad disk or a stray write would.
        let at = bytes
            .windows(9)
            .position(|w| w == b"row 1000 ")
            .expect("the row is in the file");
        for b in &mut bytes[at..at + 64] {
            *b ^= 0x5a;
        }
        std::fs::write(&path, &bytes).expect("write");
        let Err(err) = Checkpoint::find(dir.path()) else {
            panic!("a scribbled state was trusted");
        };
        assert!(matches!(err, CheckpointError::Corrupt { .. }), "{err}");
    }
}
