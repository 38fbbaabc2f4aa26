//! The URL table: one row per URL the crawl learned of, packed, and the rows' binary form in
//! the checkpoint (docs/ARCHITECTURE.md, "The URL table").
//!
//! A crawl knows millions of URLs long before it fetches them (issue 12), so a row is 20 bytes
//! of fixed fields (site, depth, referrer, state, hops, retries, why it was ignored) and the URL
//! text, front-coded against the URL before it in runs of [`MEM_BLOCK`] rows (links found on
//! one page share their origin and most of their path). What only a fetched or failed URL has
//! (sequence number, status, bytes, content type, reason, failure) lives in a side table of
//! extras, and content types and reasons are interned: a crawl sees a handful of each. No URL
//! owns a `String`. Rows are read and written whole, as the model's [`Resource`], through
//! [`UrlTable::get`], [`UrlTable::set`] and [`UrlTable::update`]; the URL itself never changes.
//!
//! In memory the rows of ids `b * BLOCK_ROWS ..` form chunk `b`, the same rows as the
//! checkpoint's block `b`. On disk (the checkpoint's `url_blocks` and `url_rows` tables, opaque
//! bytes to `store::checkpoint`) a block is front-coded and lz4-compressed, written when it
//! gains rows (the table's tail) or when many of its rows changed; a row that changed in a
//! block written before goes as a small row of its own, which the next write of its block
//! replaces. So a checkpoint costs what changed since the last one.
//!
//! With a crawl folder the rows leave memory (issue 12, item 1): a full chunk whose every
//! change is in a committed checkpoint may be dropped, oldest first (with a second chance for
//! one read since), once more than [`CACHE_BYTES`] of chunks are in memory; a row of a dropped
//! chunk is read back, with its chunk, from the state file through a [`UrlReader`]. What stays
//! in memory is the table's tail, the chunks changed since the last committed checkpoint and
//! the budget's worth of others. That read is this module's one kind of I/O, a bounded one (a
//! block of [`BLOCK_ROWS`] rows at a time); without a crawl folder it never happens. When it
//! fails (a failing disk) the error is kept for the coordinator, which pauses the crawl; a row
//! written meanwhile is kept beside the table, read from there, written by the next checkpoint
//! as a single row, and moved into its chunk once that reads again: no write is lost.
//!
//! It must never know the coordinator: it holds values and turns them into bytes and back. It
//! never decides a row's state (the coordinator does, through the model's rules).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use super::model::{Failure, Resource, ResourceState};
use crate::frontier::SiteId;
use crate::scope::IgnoreReason;
use crate::store::checkpoint::{BLOCK_ROWS, UrlReader};

/// Rows whose URLs are front-coded together in memory: reading one URL decodes at most this
/// many.
const MEM_BLOCK: usize = 32;
/// "None" in a row's u32 fields.
const NONE: u32 = u32::MAX;
/// A block with more changed rows than this is written whole rather than row by row.
const REWRITE_BLOCK_AT: usize = BLOCK_ROWS as usize / 8;

/// With a crawl folder: bytes of written, unchanged rows kept in memory for reads (the rest
/// is read back from the state file when needed).
pub(super) const CACHE_BYTES: usize = 32 << 20;
/// What a chunk of rows takes in memory, for the budget: [`BLOCK_ROWS`] rows of 20 bytes and
/// a dozen bytes of front-coded URL (a link farm's).
const CHUNK_BYTES: usize = BLOCK_ROWS as usize * 32;

/// The fixed part of a row: 20 bytes.
#[derive(Debug, Clone, Copy)]
struct Row {
    site: u32,
    depth: u32,
    referrer: u32,
    /// Index into its chunk's `extras`, or [`NONE`].
    extra: u32,
    state: ResourceState,
    hops: u8,
    retries: u8,
    /// 0, or 1 + the index of the [`IgnoreReason`] in [`IGNORE_REASONS`].
    ignored: u8,
}

const EMPTY_ROW: Row = Row {
    site: NONE,
    depth: 0,
    referrer: NONE,
    extra: NONE,
    state: ResourceState::Discovered,
    hops: 0,
    retries: 0,
    ignored: 0,
};

/// What a URL has once it was dispatched, fetched or given a reason.
#[derive(Debug, Clone, Copy)]
struct Extra {
    /// `u64::MAX`: none.
    seq: u64,
    bytes: u64,
    /// 0: none.
    status: u16,
    /// 0, or 1 + the index of the [`Failure`] in [`Failure::ALL`].
    failure: u8,
    truncated: bool,
    content_type: u32,
    reason: u32,
}

const IGNORE_REASONS: [IgnoreReason; 11] = [
    IgnoreReason::UnsupportedScheme,
    IgnoreReason::OutOfScope,
    IgnoreReason::NotIncluded,
    IgnoreReason::Excluded,
    IgnoreReason::TooDeep,
    IgnoreReason::UrlTooLong,
    IgnoreReason::PathTooDeep,
    IgnoreReason::RepeatedSegment,
    IgnoreReason::PageLimit,
    IgnoreReason::SitePageLimit,
    IgnoreReason::TooManyRedirects,
];

fn code_of<T: PartialEq>(all: &[T], v: Option<&T>) -> u8 {
    v.and_then(|v| all.iter().position(|a| a == v))
        .map_or(0, |i| i as u8 + 1)
}

fn from_code<T: Copy>(all: &[T], code: u8) -> Option<T> {
    code.checked_sub(1)
        .and_then(|i| all.get(usize::from(i)).copied())
}

/// Distinct texts (content types, reasons), each kept once.
#[derive(Debug, Default)]
struct Interner {
    texts: Vec<Arc<str>>,
    index: HashMap<Arc<str>, u32>,
}

impl Interner {
    fn intern(&mut self, text: &Arc<str>) -> u32 {
        if let Some(&i) = self.index.get(text) {
            return i;
        }
        let i = self.texts.len() as u32;
        self.texts.push(text.clone());
        self.index.insert(text.clone(), i);
        i
    }

    fn find(&self, text: &str) -> Option<&Arc<str>> {
        self.index.get_key_value(text).map(|(k, _)| k)
    }

    fn get(&self, i: u32) -> Option<Arc<str>> {
        self.texts.get(i as usize).cloned()
    }
}

/// The interned texts of every chunk.
#[derive(Debug, Default)]
struct Texts {
    content_types: Interner,
    reasons: Interner,
}

/// The rows of one block ([`BLOCK_ROWS`] ids) in memory: fixed fields, their extras, and the
/// URLs front-coded in runs of [`MEM_BLOCK`].
#[derive(Debug, Default)]
struct Chunk {
    rows: Vec<Row>,
    extras: Vec<Extra>,
    urls: Vec<u8>,
    /// Where each run of URLs starts in `urls`.
    starts: Vec<u32>,
    /// Read since the eviction last looked at it: it gets a second chance.
    used: bool,
}

impl Chunk {
    /// Appends a row for `url`; `prev` is the URL of the row before (in this chunk).
    fn push(&mut self, prev: &[u8], url: &[u8]) -> usize {
        let i = self.rows.len();
        if i.is_multiple_of(MEM_BLOCK) {
            self.starts.push(self.urls.len() as u32);
            front_code(&[], url, &mut self.urls);
        } else {
            front_code(prev, url, &mut self.urls);
        }
        self.rows.push(EMPTY_ROW);
        if self.rows.len() == BLOCK_ROWS as usize {
            self.urls.shrink_to_fit();
        }
        i
    }

    /// The URL of row `i` into `out` (which is cleared first).
    fn url_into(&self, i: usize, out: &mut Vec<u8>) {
        out.clear();
        let Some(&start) = self.starts.get(i / MEM_BLOCK) else {
            return;
        };
        let mut input = self.urls.get(start as usize..).unwrap_or_default();
        for _ in 0..=i % MEM_BLOCK {
            if front_decode(out, &mut input).is_none() {
                out.clear();
                return;
            }
        }
    }

    /// Every row's URL in order, with its index.
    fn each_url(&self, mut f: impl FnMut(usize, &str)) {
        let mut url = Vec::new();
        let mut input = self.urls.as_slice();
        for i in 0..self.rows.len() {
            if i.is_multiple_of(MEM_BLOCK) {
                url.clear();
            }
            if front_decode(&mut url, &mut input).is_none() {
                return;
            }
            f(i, std::str::from_utf8(&url).unwrap_or_default());
        }
    }

    /// Row `i`'s fields (a default row for a row the chunk does not have).
    fn get(&self, i: usize, texts: &Texts) -> Resource {
        let Some(row) = self.rows.get(i) else {
            return Resource::discovered(0, None, 0);
        };
        let ignored = from_code(&IGNORE_REASONS, row.ignored);
        let mut r = Resource {
            site: (row.site != NONE).then(|| SiteId::from_index(row.site)),
            depth: row.depth,
            state: row.state,
            status: None,
            bytes: 0,
            content_type: None,
            referrer: (row.referrer != NONE).then_some(row.referrer),
            reason: None,
            ignored,
            hops: row.hops,
            retries: row.retries,
            truncated: false,
            seq: None,
            failure: None,
        };
        if let Some(e) = self.extras.get(row.extra as usize) {
            r.seq = (e.seq != u64::MAX).then_some(e.seq);
            r.bytes = e.bytes;
            r.status = (e.status != 0).then_some(e.status);
            r.failure = from_code(&Failure::ALL, e.failure);
            r.truncated = e.truncated;
            r.content_type = texts.content_types.get(e.content_type);
            r.reason = texts.reasons.get(e.reason);
        }
        if r.reason.is_none()
            && let Some(i) = ignored
        {
            // An ignored URL's reason is its ignore reason's text, kept once.
            r.reason = Some(
                texts
                    .reasons
                    .find(&i.to_string())
                    .cloned()
                    .unwrap_or_else(|| i.to_string().into()),
            );
        }
        r
    }

    /// Writes row `i`'s fields.
    fn set(&mut self, i: usize, r: &Resource, texts: &mut Texts) {
        let Some(row) = self.rows.get(i).copied() else {
            return;
        };
        // The reason an ignored URL gets from its ignore reason is not kept twice.
        let reason = r
            .reason
            .as_ref()
            .filter(|t| r.ignored.is_none_or(|i| ***t != *i.to_string()));
        let extra = Extra {
            seq: r.seq.unwrap_or(u64::MAX),
            bytes: r.bytes,
            status: r.status.unwrap_or(0),
            failure: code_of(&Failure::ALL, r.failure.as_ref()),
            truncated: r.truncated,
            content_type: r
                .content_type
                .as_ref()
                .map_or(NONE, |c| texts.content_types.intern(c)),
            reason: reason.map_or(NONE, |t| texts.reasons.intern(t)),
        };
        if let Some(i) = r.ignored {
            texts.reasons.intern(&Arc::from(i.to_string()));
        }
        let needs_extra = extra.seq != u64::MAX
            || extra.bytes != 0
            || extra.status != 0
            || extra.failure != 0
            || extra.truncated
            || extra.content_type != NONE
            || extra.reason != NONE;
        let extra_at = if let Some(e) = self.extras.get_mut(row.extra as usize) {
            *e = extra;
            row.extra
        } else if needs_extra {
            self.extras.push(extra);
            (self.extras.len() - 1) as u32
        } else {
            NONE
        };
        self.rows[i] = Row {
            site: r.site.map_or(NONE, |s| s.index() as u32),
            depth: r.depth,
            referrer: r.referrer.unwrap_or(NONE),
            extra: extra_at,
            state: r.state,
            hops: r.hops,
            retries: r.retries,
            ignored: code_of(&IGNORE_REASONS, r.ignored.as_ref()),
        };
    }
}

/// Rows of bytes by key, as the checkpoint takes them.
pub(super) type Keyed = Vec<(u32, Vec<u8>)>;

/// Which chunks are in memory, and what may leave.
#[derive(Debug, Default)]
struct Cache {
    /// The state file, once the crawl has one: without it nothing leaves memory.
    reader: Option<UrlReader>,
    /// Chunks kept in memory beyond those that may not leave.
    budget: usize,
    /// Chunks in memory, in the order they came (a chunk may be listed once more after it
    /// left and came back: the entry of a chunk not in memory is skipped).
    order: VecDeque<u32>,
    resident: usize,
    /// Per chunk: the number of the checkpoint of this run that holds its last change (0: one
    /// before this run).
    changed_at: Vec<u64>,
    /// Checkpoints built and committed in this run.
    built: u64,
    committed: u64,
    /// The first failure to read rows back, for the coordinator to report.
    error: Option<String>,
    /// Chunks read back from the state file.
    loads: u64,
    /// A test's fault: once this many chunks were read back, every read fails.
    fail_reads_after: Option<u64>,
}

/// Every URL the crawl learned of, by dense id (the order they were learned in).
#[derive(Debug, Default)]
pub(super) struct UrlTable {
    /// `None`: a chunk left memory and is in the state file.
    chunks: Vec<Option<Box<Chunk>>>,
    len: u32,
    /// The URL of the last row, which the next one is front-coded against.
    last: Vec<u8>,
    texts: Texts,
    /// Rows changed since the last checkpoint, as a bit set and a list.
    dirty_bits: Vec<u64>,
    dirty: Vec<u32>,
    /// Rows `..written` are in blocks of the checkpoint already.
    written: u32,
    cache: Cache,
    /// Rows written while their chunk could not be read back (a failing disk): kept here, read
    /// from here, in the next checkpoint as single rows, and moved into the chunk when it
    /// reads again. Empty but for that.
    pending: BTreeMap<u32, Resource>,
}

fn split(id: u32) -> (usize, usize) {
    ((id / BLOCK_ROWS) as usize, (id % BLOCK_ROWS) as usize)
}

impl UrlTable {
    pub(super) fn len(&self) -> usize {
        self.len as usize
    }

    /// From now on rows may leave memory once a committed checkpoint holds them, and are read
    /// back through `reader`; `budget` bytes of them stay.
    pub(super) fn read_back_from(&mut self, reader: UrlReader, budget: usize) {
        self.cache.reader = Some(reader);
        self.cache.budget = budget / CHUNK_BYTES;
        self.evict();
    }

    /// The committer has committed `n` of this run's checkpoints.
    pub(super) fn committed(&mut self, n: u64) {
        self.cache.committed = n;
        self.evict();
    }

    /// Injects a fault for the tests: once `n` chunks were read back, every read back fails.
    pub(super) fn fail_reads_after(&mut self, n: u64) {
        self.cache.fail_reads_after = Some(n);
    }

    /// The first failure to read rows back since the last call.
    pub(super) fn take_read_error(&mut self) -> Option<String> {
        self.cache.error.take()
    }

    /// Chunks in memory and chunks read back from the state file so far.
    #[cfg(test)]
    fn residency(&self) -> (usize, u64) {
        (self.cache.resident, self.cache.loads)
    }

    /// A new row for `url`; its id is the table's length before.
    pub(super) fn push(&mut self, url: &str, r: &Resource) -> u32 {
        let id = self.len;
        let (c, _) = split(id);
        if c == self.chunks.len() {
            self.chunks.push(None);
            self.cache.changed_at.push(0);
        }
        if self.chunks[c].is_none() {
            // Only ever a new chunk: the tail, not full, never leaves memory.
            self.chunks[c] = Some(Box::new(Chunk {
                rows: Vec::with_capacity(BLOCK_ROWS as usize),
                ..Chunk::default()
            }));
            self.cache.order.push_back(c as u32);
            self.cache.resident += 1;
        }
        if let Some(chunk) = self.chunks[c].as_deref_mut() {
            chunk.push(&self.last, url.as_bytes());
        }
        self.last.clear();
        self.last.extend_from_slice(url.as_bytes());
        self.len += 1;
        self.set(id, r);
        id
    }

    /// Chunk `c` in memory, read back from the state file if it left.
    fn chunk_mut(&mut self, c: usize) -> Option<&mut Chunk> {
        if self.chunks.get(c)?.is_none() {
            self.evict();
            let rows = match self.read_chunk(c) {
                Ok(rows) => rows,
                Err(e) => {
                    self.cache.error.get_or_insert(e);
                    return None;
                }
            };
            let mut chunk = self.chunk_of(&rows);
            // Rows written while it could not be read: theirs is the newer value, and the
            // chunk stays until a checkpoint holds them (they are dirty already).
            let first = c as u32 * BLOCK_ROWS;
            let written: Vec<u32> = (self.pending.range(first..first + BLOCK_ROWS))
                .map(|(&id, _)| id)
                .collect();
            for id in &written {
                if let Some(r) = self.pending.remove(id) {
                    chunk.set(split(*id).1, &r, &mut self.texts);
                }
            }
            if !written.is_empty()
                && let Some(at) = self.cache.changed_at.get_mut(c)
            {
                *at = self.cache.built + 1;
            }
            self.chunks[c] = Some(Box::new(chunk));
            self.cache.order.push_back(c as u32);
            self.cache.resident += 1;
            self.cache.loads += 1;
        }
        let chunk = self.chunks[c].as_deref_mut()?;
        chunk.used = true;
        Some(chunk)
    }

    /// A chunk of `rows`, as read from a block.
    fn chunk_of(&mut self, rows: &[(String, Resource)]) -> Chunk {
        let mut chunk = Chunk {
            rows: Vec::with_capacity(rows.len()),
            ..Chunk::default()
        };
        let mut prev: &[u8] = &[];
        for (url, r) in rows {
            let i = chunk.push(prev, url.as_bytes());
            chunk.set(i, r, &mut self.texts);
            prev = url.as_bytes();
        }
        chunk.urls.shrink_to_fit();
        chunk
    }

    /// Chunk `c`'s rows as the state file holds them: its block and the single rows after it.
    fn read_chunk(&self, c: usize) -> Result<Vec<(String, Resource)>, String> {
        let block = c as u32;
        if self
            .cache
            .fail_reads_after
            .is_some_and(|n| self.cache.loads >= n)
        {
            return Err(format!(
                "URL block {block}: read failed (injected by a test)"
            ));
        }
        let reader = (self.cache.reader.as_ref())
            .ok_or_else(|| format!("URL block {block} left memory with no state file"))?;
        let (bytes, changed) = reader
            .block(block)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("URL block {block} is not in the state file"))?;
        let mut rows = decode_block(block, &bytes)?;
        let first = block * BLOCK_ROWS;
        for (id, bytes) in changed {
            let slot = (id.checked_sub(first).map(|i| i as usize))
                .and_then(|i| rows.get_mut(i))
                .ok_or_else(|| format!("URL {id} changed but was never written"))?;
            let mut input = bytes.as_slice();
            slot.1 =
                decode_fields(&mut input, 0).ok_or_else(|| format!("URL {id} does not read"))?;
        }
        Ok(rows)
    }

    /// The URL of row `id`, or why its row could not be read back (the error is also kept for
    /// [`UrlTable::take_read_error`]): what a dispatch uses, so that no empty URL goes out.
    pub(super) fn try_url(&mut self, id: u32) -> Result<String, String> {
        let (c, i) = split(id);
        if c >= self.chunks.len() {
            return Err(format!("URL {id} does not exist"));
        }
        let mut out = Vec::new();
        let Some(chunk) = self.chunk_mut(c) else {
            let e = self.cache.error.clone();
            return Err(e.unwrap_or_else(|| format!("URL {id} could not be read back")));
        };
        chunk.url_into(i, &mut out);
        String::from_utf8(out).map_err(|_| format!("URL {id} is not UTF-8"))
    }

    /// The URL of row `id` (empty for an id the table does not have, or whose row cannot be
    /// read back: the failure is kept for [`UrlTable::take_read_error`]).
    pub(super) fn url(&mut self, id: u32) -> String {
        let (c, i) = split(id);
        let mut out = Vec::new();
        if let Some(chunk) = self.chunk_mut(c) {
            chunk.url_into(i, &mut out);
        }
        String::from_utf8(out).unwrap_or_default()
    }

    /// The URL of row `id`, without keeping its chunk in memory if it was read back; an error
    /// when it cannot be read back or does not exist (an export must not write it empty).
    pub(super) fn peek_url(&self, id: u32) -> Result<String, String> {
        let (c, i) = split(id);
        match self.chunks.get(c) {
            Some(Some(chunk)) => {
                let mut out = Vec::new();
                chunk.url_into(i, &mut out);
                String::from_utf8(out).map_err(|_| format!("URL {id} is not UTF-8"))
            }
            Some(None) => {
                let mut rows = self.read_chunk(c)?;
                (i < rows.len())
                    .then(|| rows.swap_remove(i).0)
                    .ok_or_else(|| format!("URL {id} is not in its block"))
            }
            None => Err(format!("URL {id} does not exist")),
        }
    }

    pub(super) fn depth(&mut self, id: u32) -> u32 {
        let (c, i) = split(id);
        match self.chunk_mut(c) {
            Some(chunk) => chunk.rows.get(i).map_or(0, |r| r.depth),
            None => self.pending.get(&id).map_or(0, |r| r.depth),
        }
    }

    /// Row `id`'s fields (a default row for an id the table does not have; the last written,
    /// for a row written while its chunk could not be read back).
    pub(super) fn get(&mut self, id: u32) -> Resource {
        let (c, i) = split(id);
        if self.chunk_mut(c).is_none() {
            return (self.pending.get(&id).cloned())
                .unwrap_or_else(|| Resource::discovered(0, None, 0));
        }
        match self.chunks.get(c) {
            Some(Some(chunk)) => chunk.get(i, &self.texts),
            _ => Resource::discovered(0, None, 0),
        }
    }

    /// Writes row `id`'s fields.
    pub(super) fn set(&mut self, id: u32, r: &Resource) {
        let (c, i) = split(id);
        if c >= self.chunks.len() {
            return;
        }
        if self.chunk_mut(c).is_none() {
            // Its chunk cannot be read back now (the crawl pauses on that): the write waits
            // here rather than being lost, and the next checkpoint holds it.
            self.pending.insert(id, r.clone());
            self.touch(id);
            return;
        }
        if let Some(Some(chunk)) = self.chunks.get_mut(c) {
            chunk.set(i, r, &mut self.texts);
        }
        if let Some(at) = self.cache.changed_at.get_mut(c) {
            *at = self.cache.built + 1;
        }
        if self.cache.reader.is_some() {
            // The chunk may leave memory once a checkpoint holds it: this change must be in
            // that checkpoint.
            self.touch(id);
        }
    }

    /// Reads row `id`, lets `f` change it, writes it back.
    pub(super) fn update<T>(&mut self, id: u32, f: impl FnOnce(&mut Resource) -> T) -> T {
        let mut r = self.get(id);
        let out = f(&mut r);
        self.set(id, &r);
        out
    }

    /// Every row in id order: its id, URL and fields. Chunks not in memory are read from the
    /// state file one at a time and not kept, so memory stays bounded.
    pub(super) fn for_each(&self, mut f: impl FnMut(u32, &str, &Resource)) -> Result<(), String> {
        for (c, chunk) in self.chunks.iter().enumerate() {
            let first = c as u32 * BLOCK_ROWS;
            match chunk {
                Some(chunk) => chunk.each_url(|i, url| {
                    f(first + i as u32, url, &chunk.get(i, &self.texts));
                }),
                None => {
                    for (i, (url, r)) in self.read_chunk(c)?.iter().enumerate() {
                        let id = first + i as u32;
                        f(id, url, self.pending.get(&id).unwrap_or(r));
                    }
                }
            }
        }
        Ok(())
    }

    /// The rows ignored for `reason` (state `FetchIgnored`) in id order: id and URL. A chunk in
    /// memory is passed over on its fixed fields, and its URLs are decoded only if it has such
    /// a row; a chunk that left memory is read from the state file (as [`UrlTable::for_each`]
    /// does) and not kept.
    pub(super) fn for_each_ignored(
        &self,
        reason: IgnoreReason,
        mut f: impl FnMut(u32, &str),
    ) -> Result<(), String> {
        let code = code_of(&IGNORE_REASONS, Some(&reason));
        for (c, chunk) in self.chunks.iter().enumerate() {
            let first = c as u32 * BLOCK_ROWS;
            match chunk {
                Some(chunk) => {
                    let hit =
                        |row: &Row| row.ignored == code && row.state == ResourceState::FetchIgnored;
                    if !chunk.rows.iter().any(hit) {
                        continue;
                    }
                    chunk.each_url(|i, url| {
                        if chunk.rows.get(i).is_some_and(hit) {
                            f(first + i as u32, url);
                        }
                    });
                }
                None => {
                    for (i, (url, r)) in self.read_chunk(c)?.iter().enumerate() {
                        let id = first + i as u32;
                        let r = self.pending.get(&id).unwrap_or(r);
                        if r.ignored == Some(reason) && r.state == ResourceState::FetchIgnored {
                            f(id, url);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Notes that row `id` changed, for the next checkpoint.
    pub(super) fn touch(&mut self, id: u32) {
        if id >= self.written {
            // Its block is written whole at the next checkpoint anyway.
            return;
        }
        let (word, bit) = (id as usize / 64, id % 64);
        if self.dirty_bits.len() <= word {
            self.dirty_bits.resize(word + 1, 0);
        }
        if self.dirty_bits[word] & (1 << bit) == 0 {
            self.dirty_bits[word] |= 1 << bit;
            self.dirty.push(id);
        }
    }

    /// What changed since the last checkpoint, in the checkpoint's binary form: whole blocks
    /// (key: block number) and single rows (key: id) of blocks written before.
    pub(super) fn checkpoint_rows(&mut self) -> (Keyed, Keyed) {
        self.cache.built += 1;
        let first_open = self.written / BLOCK_ROWS;
        let mut dirty = std::mem::take(&mut self.dirty);
        for &id in &dirty {
            self.dirty_bits[id as usize / 64] &= !(1 << (id % 64));
        }
        dirty.sort_unstable();
        let mut blocks = Vec::new();
        let mut rows = Vec::new();
        for group in dirty.chunk_by(|a, b| a / BLOCK_ROWS == b / BLOCK_ROWS) {
            let block = group[0] / BLOCK_ROWS;
            if block >= first_open {
                continue;
            }
            // A block is rewritten whole only from its chunk in memory (a chunk that could not
            // be read back has its changed rows pending: they go as single rows).
            let resident = matches!(self.chunks.get(block as usize), Some(Some(_)));
            if group.len() > REWRITE_BLOCK_AT && resident {
                blocks.push((block, self.encode_block(block)));
            } else {
                for &id in group {
                    let mut out = Vec::new();
                    encode_fields(&self.get(id), 0, &mut out);
                    rows.push((id, out));
                }
            }
        }
        let end = self.len.div_ceil(BLOCK_ROWS);
        for block in first_open..end {
            blocks.push((block, self.encode_block(block)));
        }
        self.written = self.len;
        (blocks, rows)
    }

    /// Block `block`'s rows, front-coded and compressed.
    fn encode_block(&mut self, block: u32) -> Vec<u8> {
        let c = block as usize;
        if self.chunk_mut(c).is_none() {
            return compress(&[0]);
        }
        let Some(Some(chunk)) = self.chunks.get(c) else {
            return compress(&[0]);
        };
        let mut out = Vec::new();
        put_varint(&mut out, chunk.rows.len() as u64);
        let mut prev = Vec::new();
        let mut prev_referrer = 0;
        chunk.each_url(|i, url| {
            front_code(&prev, url.as_bytes(), &mut out);
            prev.clear();
            prev.extend_from_slice(url.as_bytes());
            let r = chunk.get(i, &self.texts);
            encode_fields(&r, prev_referrer, &mut out);
            prev_referrer = r.referrer.map_or(0, |x| u64::from(x) + 1);
        });
        compress(&out)
    }

    /// Appends the rows of a block read from the checkpoint; `block` must be the next one.
    pub(super) fn load_block(&mut self, block: u32, bytes: &[u8]) -> Result<(), String> {
        if self.len != block * BLOCK_ROWS {
            return Err(format!("URL block {block} does not follow the one before"));
        }
        let rows = decode_block(block, bytes)?;
        let chunk = self.chunk_of(&rows);
        if let Some((url, _)) = rows.last() {
            self.last.clear();
            self.last.extend_from_slice(url.as_bytes());
        }
        self.len += rows.len() as u32;
        self.chunks.push(Some(Box::new(chunk)));
        self.cache.changed_at.push(0);
        self.cache.order.push_back(block);
        self.cache.resident += 1;
        self.written = self.len;
        Ok(())
    }

    /// Applies a single row read from the checkpoint.
    pub(super) fn load_row(&mut self, id: u32, bytes: &[u8]) -> Result<(), String> {
        if id >= self.len {
            return Err(format!("URL {id} changed but was never written"));
        }
        let mut input = bytes;
        let r = decode_fields(&mut input, 0).ok_or_else(|| format!("URL {id} does not read"))?;
        let (c, i) = split(id);
        if let Some(Some(chunk)) = self.chunks.get_mut(c) {
            chunk.set(i, &r, &mut self.texts);
        }
        Ok(())
    }

    /// Drops chunks from memory, oldest first, until the budget holds or none may leave: a
    /// chunk may leave when it is full and a committed checkpoint holds its last change.
    fn evict(&mut self) {
        if self.cache.reader.is_none() {
            return;
        }
        let full_chunks = (self.len / BLOCK_ROWS) as usize;
        // A chunk read since the last look is passed over once. Bounded per call, so a table
        // whose chunks may not leave yet (not committed) costs little on every read back:
        // chunks passed over go to the back, and the next call looks at others.
        let over = self.cache.resident.saturating_sub(self.cache.budget);
        let mut tries = (2 * over + 64).min(2 * self.cache.order.len());
        while self.cache.resident > self.cache.budget && tries > 0 {
            tries -= 1;
            let Some(c) = self.cache.order.pop_front() else {
                break;
            };
            let c = c as usize;
            let Some(Some(chunk)) = self.chunks.get_mut(c) else {
                continue;
            };
            let written = self.cache.changed_at[c] <= self.cache.committed;
            if chunk.used || c >= full_chunks || !written {
                chunk.used = false;
                self.cache.order.push_back(c as u32);
                continue;
            }
            self.chunks[c] = None;
            self.cache.resident -= 1;
        }
    }
}

/// A block's rows: each URL with its fields.
fn decode_block(block: u32, bytes: &[u8]) -> Result<Vec<(String, Resource)>, String> {
    let raw =
        decompress(bytes).map_err(|e| format!("URL block {block} does not decompress: {e}"))?;
    let bad = || format!("URL block {block} does not read");
    let mut input = raw.as_slice();
    let count = get_varint(&mut input).ok_or_else(bad)?;
    if count == 0 || count > u64::from(BLOCK_ROWS) {
        return Err(bad());
    }
    let mut rows = Vec::with_capacity(count as usize);
    let mut url = Vec::new();
    let mut prev_referrer = 0;
    for _ in 0..count {
        front_decode(&mut url, &mut input).ok_or_else(bad)?;
        let text = std::str::from_utf8(&url).map_err(|_| bad())?;
        let r = decode_fields(&mut input, prev_referrer).ok_or_else(bad)?;
        prev_referrer = r.referrer.map_or(0, |x| u64::from(x) + 1);
        rows.push((text.to_string(), r));
    }
    Ok(rows)
}

// The binary form: varints (LEB128) and one byte per small enum; a block is lz4-compressed
// after its length (4 bytes, little-endian).

/// Largest block the checkpoint holds, uncompressed: far above what [`BLOCK_ROWS`] rows of
/// URLs up to the scope's cap take, so anything larger is not a block.
const MAX_BLOCK_BYTES: usize = 64 << 20;

fn compress(raw: &[u8]) -> Vec<u8> {
    let mut out = vec![0; 4 + lz4_flex::block::get_maximum_output_size(raw.len())];
    out[..4].copy_from_slice(&(raw.len() as u32).to_le_bytes());
    // The output was sized for the worst case, so this cannot fail; an empty block if it did.
    let n = lz4_flex::block::compress_into(raw, &mut out[4..]).unwrap_or(0);
    out.truncate(4 + n);
    out
}

fn decompress(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let (len, body) = bytes.split_at_checked(4).ok_or("shorter than its length")?;
    let len = u32::from_le_bytes(len.try_into().map_err(|_| "no length")?) as usize;
    if len > MAX_BLOCK_BYTES {
        return Err(format!("says it holds {len} bytes"));
    }
    let mut raw = vec![0; len];
    match lz4_flex::block::decompress_into(body, &mut raw) {
        Ok(n) if n == len => Ok(raw),
        Ok(n) => Err(format!("holds {n} bytes, not {len}")),
        Err(e) => Err(e.to_string()),
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(input: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = input.split_first()?;
        *input = rest;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn get_u8(input: &mut &[u8]) -> Option<u8> {
    let (&b, rest) = input.split_first()?;
    *input = rest;
    Some(b)
}

/// `cur` as the length it shares with `prev` and the rest.
fn front_code(prev: &[u8], cur: &[u8], out: &mut Vec<u8>) {
    let shared = prev.iter().zip(cur).take_while(|(a, b)| a == b).count();
    put_varint(out, shared as u64);
    put_varint(out, (cur.len() - shared) as u64);
    out.extend_from_slice(&cur[shared..]);
}

/// Turns `buf` (the previous entry) into the next one.
fn front_decode(buf: &mut Vec<u8>, input: &mut &[u8]) -> Option<()> {
    let shared = usize::try_from(get_varint(input)?).ok()?;
    let rest = usize::try_from(get_varint(input)?).ok()?;
    if shared > buf.len() || rest > input.len() {
        return None;
    }
    buf.truncate(shared);
    buf.extend_from_slice(&input[..rest]);
    *input = &input[rest..];
    Some(())
}

fn put_text(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        None => put_varint(out, 0),
        Some(t) => {
            put_varint(out, t.len() as u64 + 1);
            out.extend_from_slice(t.as_bytes());
        }
    }
}

/// A text or none; `Err` when the bytes are not one.
fn get_text(input: &mut &[u8]) -> Result<Option<Arc<str>>, ()> {
    let n = get_varint(input)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or(())?;
    if n == 0 {
        return Ok(None);
    }
    let n = n - 1;
    if n > input.len() {
        return Err(());
    }
    let text = std::str::from_utf8(&input[..n]).map_err(|_| ())?;
    *input = &input[n..];
    Ok(Some(text.into()))
}

/// `cur - prev` as a varint-friendly number (small either way).
fn zigzag(cur: u64, prev: u64) -> u64 {
    if cur >= prev {
        (cur - prev) << 1
    } else {
        ((prev - cur) << 1) - 1
    }
}

/// What [`zigzag`] was given as `cur`.
fn unzigzag(z: u64, prev: u64) -> Option<u64> {
    if z & 1 == 0 {
        prev.checked_add(z >> 1)
    } else {
        prev.checked_sub((z >> 1) + 1)
    }
}

/// A row's fields; the referrer (plus one, 0 for none) as the difference from the row before.
fn encode_fields(r: &Resource, prev_referrer: u64, out: &mut Vec<u8>) {
    out.push(r.state as u8);
    out.push(code_of(&IGNORE_REASONS, r.ignored.as_ref()));
    out.push(r.hops);
    out.push(r.retries);
    put_varint(out, u64::from(r.depth));
    put_varint(out, r.site.map_or(0, |s| s.index() as u64 + 1));
    let referrer = r.referrer.map_or(0, |x| u64::from(x) + 1);
    put_varint(out, zigzag(referrer, prev_referrer));
    let reason = r
        .reason
        .as_deref()
        .filter(|t| r.ignored.is_none_or(|i| **t != *i.to_string()));
    let extra = r.seq.is_some()
        || r.status.is_some()
        || r.bytes != 0
        || r.content_type.is_some()
        || reason.is_some()
        || r.failure.is_some()
        || r.truncated;
    out.push(u8::from(extra));
    if extra {
        put_varint(out, r.seq.map_or(0, |s| s.saturating_add(1)));
        put_varint(out, r.bytes);
        put_varint(out, u64::from(r.status.unwrap_or(0)));
        out.push(code_of(&Failure::ALL, r.failure.as_ref()));
        out.push(u8::from(r.truncated));
        put_text(out, r.content_type.as_deref());
        put_text(out, reason);
    }
}

fn decode_fields(input: &mut &[u8], prev_referrer: u64) -> Option<Resource> {
    let state = *ResourceState::ALL.get(usize::from(get_u8(input)?))?;
    let ignored_code = get_u8(input)?;
    let ignored = from_code(&IGNORE_REASONS, ignored_code);
    if ignored_code != 0 && ignored.is_none() {
        return None;
    }
    let hops = get_u8(input)?;
    let retries = get_u8(input)?;
    let depth = u32::try_from(get_varint(input)?).ok()?;
    let site = match get_varint(input)? {
        0 => None,
        s => Some(SiteId::from_index(u32::try_from(s - 1).ok()?)),
    };
    let referrer = unzigzag(get_varint(input)?, prev_referrer)?;
    let referrer = match referrer {
        0 => None,
        r => Some(u32::try_from(r - 1).ok()?),
    };
    let mut r = Resource {
        site,
        depth,
        state,
        status: None,
        bytes: 0,
        content_type: None,
        referrer,
        reason: None,
        ignored,
        hops,
        retries,
        truncated: false,
        seq: None,
        failure: None,
    };
    match get_u8(input)? {
        0 => {}
        1 => {
            r.seq = get_varint(input)?.checked_sub(1);
            r.bytes = get_varint(input)?;
            r.status = match u16::try_from(get_varint(input)?).ok()? {
                0 => None,
                s => Some(s),
            };
            let failure = get_u8(input)?;
            r.failure = from_code(&Failure::ALL, failure);
            if failure != 0 && r.failure.is_none() {
                return None;
            }
            r.truncated = get_u8(input)? != 0;
            r.content_type = get_text(input).ok()?;
            r.reason = get_text(input).ok()?;
        }
        _ => return None,
    }
    if r.reason.is_none()
        && let Some(i) = ignored
    {
        r.reason = Some(i.to_string().into());
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(depth: u32, referrer: Option<u32>) -> Resource {
        Resource::discovered(depth, referrer, 0)
    }

    /// Every field of a row comes back as written, through memory and through the checkpoint's
    /// blocks and single rows.
    #[test]
    fn rows_come_back_as_written_in_memory_and_from_the_checkpoint() {
        let mut t = UrlTable::default();
        let n = BLOCK_ROWS * 2 + 17;
        for i in 0..n {
            let url = format!("http://127.0.0.1:{}/f/{}.html", 8000 + i % 3, i * 7);
            let id = t.push(&url, &row(i % 5, i.checked_sub(1)));
            assert_eq!(id, i);
        }
        let mut fetched = t.get(5);
        fetched.site = Some(SiteId::from_index(2));
        fetched.state = ResourceState::FetchError;
        fetched.status = Some(503);
        fetched.bytes = 1234;
        fetched.content_type = Some("text/html; charset=utf-8".into());
        fetched.reason = Some("http 503 after 3 retries".into());
        fetched.failure = Some(Failure::Http5xx);
        fetched.retries = 3;
        fetched.truncated = true;
        fetched.seq = Some(0);
        t.set(5, &fetched);
        t.update(7, |r| {
            r.ignored = Some(IgnoreReason::TooDeep);
            r.reason = Some(IgnoreReason::TooDeep.to_string().into());
            r.state = ResourceState::FetchIgnored;
        });
        let check = |t: &mut UrlTable| {
            assert_eq!(t.len() as u32, n);
            assert_eq!(t.url(300), "http://127.0.0.1:8000/f/2100.html");
            assert_eq!(
                t.url(n - 1),
                format!(
                    "http://127.0.0.1:{}/f/{}.html",
                    8000 + (n - 1) % 3,
                    (n - 1) * 7
                )
            );
            assert_eq!(format!("{:?}", t.get(5)), format!("{fetched:?}"));
            let ignored = t.get(7);
            assert_eq!(
                ignored.reason.as_deref(),
                Some("deeper than the depth limit")
            );
            assert_eq!(ignored.state, ResourceState::FetchIgnored);
            assert_eq!((t.get(9).depth, t.get(9).referrer), (4, Some(8)));
            assert_eq!(t.get(0).referrer, None);
        };
        check(&mut t);
        let (blocks, rows) = t.checkpoint_rows();
        assert_eq!((blocks.len(), rows.len()), (3, 0));
        let mut back = UrlTable::default();
        for (b, bytes) in &blocks {
            back.load_block(*b, bytes).expect("a block reads");
        }
        check(&mut back);
        // A change to a written row goes as a row of its own; the new tail as its block.
        t.update(3, |r| r.state = ResourceState::FetchForbidden);
        t.touch(3);
        t.push("http://127.0.0.1:8000/new", &row(1, Some(3)));
        let (blocks2, rows2) = t.checkpoint_rows();
        assert_eq!(blocks2.iter().map(|b| b.0).collect::<Vec<_>>(), vec![2]);
        assert_eq!(rows2.iter().map(|r| r.0).collect::<Vec<_>>(), vec![3]);
        let mut back = UrlTable::default();
        for (b, bytes) in blocks.iter().take(2).chain(&blocks2) {
            back.load_block(*b, bytes).expect("a block reads");
        }
        back.load_row(3, &rows2[0].1).expect("a row reads");
        assert_eq!(back.get(3).state, ResourceState::FetchForbidden);
        assert_eq!(back.url(n), "http://127.0.0.1:8000/new");
        assert!(back.load_row(n + 1, &rows2[0].1).is_err());
    }

    /// Bytes that are not a block or a row are refused, never half-applied as rows.
    #[test]
    fn bytes_that_are_not_rows_are_refused() {
        let mut t = UrlTable::default();
        assert!(t.load_block(0, b"garbage").is_err());
        assert!(t.load_block(1, &compress(&[1])).is_err());
        let mut one = UrlTable::default();
        one.push("http://a/", &row(0, None));
        let (blocks, _) = one.checkpoint_rows();
        let mut cut = decompress(&blocks[0].1).expect("lz4");
        cut.truncate(cut.len() - 2);
        let cut = compress(&cut);
        assert!(t.load_block(0, &cut).is_err());
        assert!(t.load_block(0, &blocks[0].1).is_ok());
        assert!(
            t.load_row(0, &[42, 0, 0, 0, 0, 0, 0, 0]).is_err(),
            "no such state"
        );
    }

    /// A new state file in `dir`, for the tests whose rows leave memory.
    fn state_file(dir: &std::path::Path) -> crate::store::checkpoint::Checkpoint {
        let mark = crate::store::checkpoint::Mark {
            seq: 0,
            warc: None,
            finished: false,
            runs: 1,
            extract: None,
            text_cut: 0,
            index: true,
            store: None,
            settings: None,
            mirror_names: crate::store::mirror::NAMES,
            crawl: None,
            indexed: None,
        };
        crate::store::checkpoint::Checkpoint::create(dir, &mark).expect("state")
    }

    /// What changed in `t`, written as the next checkpoint of `cp`.
    fn write_rows(cp: &mut crate::store::checkpoint::Checkpoint, t: &mut UrlTable) {
        let (url_blocks, url_rows) = t.checkpoint_rows();
        let delta = crate::store::checkpoint::Delta {
            url_blocks,
            url_rows,
            urls: t.len() as u64,
            ..Default::default()
        };
        cp.write(&delta, None, None).expect("checkpoint");
    }

    /// With a state file, rows that a committed checkpoint holds leave memory and come back
    /// as written, changes included; a row changed since the last committed checkpoint never
    /// leaves before the next one holds it.
    #[test]
    fn rows_leave_memory_once_written_and_come_back_as_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cp = state_file(dir.path());
        let reader = cp.url_reader();
        let mut write = |t: &mut UrlTable| write_rows(&mut cp, t);
        let mut t = UrlTable::default();
        let mut reference = UrlTable::default();
        let n = BLOCK_ROWS * 10 + 3;
        for i in 0..n {
            let url = format!("http://127.0.0.1:{}/f/{}.html", 8000 + i % 3, i * 7);
            let r = row(i % 5, i.checked_sub(1));
            t.push(&url, &r);
            reference.push(&url, &r);
        }
        t.read_back_from(reader, 0);
        t.committed(0);
        assert_eq!(
            t.residency().0,
            11,
            "nothing leaves before a checkpoint holds it"
        );
        write(&mut t);
        t.committed(1);
        assert_eq!(t.residency(), (1, 0), "only the tail stays");

        // A change to a row that left: its chunk comes back, and stays until a committed
        // checkpoint holds the change.
        let mut fetched = t.get(300);
        fetched.state = ResourceState::FetchError;
        fetched.status = Some(503);
        fetched.reason = Some("http 503".into());
        fetched.seq = Some(4);
        t.set(300, &fetched);
        reference.set(300, &fetched);
        assert_eq!(t.residency(), (2, 1));
        t.committed(1);
        assert_eq!(
            t.residency().0,
            2,
            "a changed chunk stays until it is written"
        );
        write(&mut t);
        t.committed(2);
        assert_eq!(t.residency().0, 1);

        let mut urls = Vec::new();
        t.for_each(|id, url, r| urls.push((id, url.to_string(), format!("{r:?}"))))
            .expect("rows read back");
        let mut expected = Vec::new();
        reference
            .for_each(|id, url, r| expected.push((id, url.to_string(), format!("{r:?}"))))
            .expect("in memory");
        assert_eq!(urls, expected);
        assert_eq!(t.residency().0, 1, "an export keeps nothing");
        assert_eq!(t.url(300), reference.url(300));
        assert_eq!(t.peek_url(5), Ok(reference.url(5)));
        assert_eq!(format!("{:?}", t.get(300)), format!("{fetched:?}"));
        assert_eq!(t.depth(9), 4);

        // A read back that fails is an error wherever a URL is asked for, never an empty URL.
        t.fail_reads_after(0);
        let unread = 2 * BLOCK_ROWS + 1;
        let e = t.try_url(unread).expect_err("a failed read is an error");
        assert!(e.contains("URL block 2"), "{e}");
        assert!(
            t.take_read_error().is_some_and(|k| k == e),
            "kept for the coordinator"
        );
        assert!(t.peek_url(unread).is_err());
        assert!(t.for_each(|_, _, _| {}).is_err(), "an export fails");
        // Rows in memory still read.
        assert_eq!(t.try_url(n - 1), Ok(reference.url(n - 1)));
    }

    /// A row written while its chunk cannot be read back (a failing disk) is not lost: it
    /// reads as written, the next checkpoint holds it, and it is in the chunk once that reads
    /// again.
    #[test]
    fn a_row_written_while_its_chunk_cannot_be_read_back_is_kept_and_checkpointed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cp = state_file(dir.path());
        let reader = cp.url_reader();
        let mut write = |t: &mut UrlTable| write_rows(&mut cp, t);
        let mut t = UrlTable::default();
        let n = BLOCK_ROWS * 4 + 3;
        for i in 0..n {
            t.push(&format!("http://127.0.0.1:8000/p/{i}"), &row(i % 5, None));
        }
        t.read_back_from(reader, 0);
        write(&mut t);
        t.committed(1);
        assert_eq!(t.residency().0, 1, "only the tail stays");

        // The disk fails; a fetch of a row whose chunk left memory ends meanwhile.
        t.fail_reads_after(0);
        let id = BLOCK_ROWS + 7;
        let mut fetched = t.get(id);
        assert!(t.take_read_error().is_some(), "the read failed");
        fetched.state = ResourceState::Fetched;
        fetched.status = Some(200);
        fetched.seq = Some(9);
        t.update(id, |r| *r = fetched.clone());
        assert_eq!(format!("{:?}", t.get(id)), format!("{fetched:?}"), "kept");
        assert_eq!(t.depth(id), fetched.depth);

        // The next checkpoint holds it as a single row beside its block, which is not
        // rewritten from nothing: the state file has the block whole and the row as written.
        write(&mut t);
        let (bytes, changed) =
            (cp.url_reader().block(1).expect("reads")).expect("block 1 is in the state file");
        let rows = decode_block(1, &bytes).expect("block decodes");
        assert_eq!(rows.len(), BLOCK_ROWS as usize, "the block is whole");
        let got = (changed.iter().find(|(row_id, _)| *row_id == id))
            .and_then(|(_, b)| decode_fields(&mut b.as_slice(), 0));
        assert_eq!(format!("{got:?}"), format!("{:?}", Some(&fetched)));

        // The disk heals: the chunk reads back with the row as written, nothing pending.
        t.fail_reads_after(u64::MAX);
        assert_eq!(format!("{:?}", t.get(id)), format!("{fetched:?}"));
        assert!(t.pending.is_empty());
        assert_eq!(t.try_url(id), Ok(format!("http://127.0.0.1:8000/p/{id}")));
    }

    /// A row ignored as out of scope, at `depth`.
    fn out_of_scope(depth: u32) -> Resource {
        let mut r = row(depth, None);
        r.state = ResourceState::FetchIgnored;
        r.ignored = Some(IgnoreReason::OutOfScope);
        r.reason = Some(IgnoreReason::OutOfScope.to_string().into());
        r
    }

    /// The ignored rows come out for their reason alone, in id order and as `for_each` sees
    /// them, from memory and from the state file alike; a row taken back since is not one.
    #[test]
    fn rows_ignored_for_a_reason_come_out_in_memory_and_from_the_state_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cp = state_file(dir.path());
        let reader = cp.url_reader();
        let mut t = UrlTable::default();
        let n = BLOCK_ROWS * 6 + 5;
        for i in 0..n {
            let url = format!("http://127.0.0.1:{}/p/{i}", 8000 + i % 4);
            let r = match i % 7 {
                // Chunk 3 has none: passed over without a URL decoded.
                _ if i / BLOCK_ROWS == 3 => row(1, None),
                0 | 3 => out_of_scope(2),
                5 => {
                    let mut r = row(4, None);
                    r.state = ResourceState::FetchIgnored;
                    r.ignored = Some(IgnoreReason::TooDeep);
                    r
                }
                _ => row(1, None),
            };
            t.push(&url, &r);
        }
        // Taken back: in scope now, and queued.
        t.update(3, |r| {
            r.state = ResourceState::Discovered;
            r.ignored = None;
        });
        let expected = |t: &UrlTable| {
            let mut out = Vec::new();
            t.for_each(|id, url, r| {
                if r.state == ResourceState::FetchIgnored
                    && r.ignored == Some(IgnoreReason::OutOfScope)
                {
                    out.push((id, url.to_string()));
                }
            })
            .expect("rows read");
            out
        };
        let listed = |t: &UrlTable| {
            let mut out = Vec::new();
            t.for_each_ignored(IgnoreReason::OutOfScope, |id, url| {
                out.push((id, url.to_string()));
            })
            .expect("rows read");
            out
        };
        let want = expected(&t);
        assert_eq!(want.len() as u32, (n - BLOCK_ROWS) * 2 / 7);
        assert_eq!(want[0], (0, "http://127.0.0.1:8000/p/0".to_string()));
        assert_eq!(listed(&t), want);
        t.read_back_from(reader, 0);
        write_rows(&mut cp, &mut t);
        t.committed(1);
        assert_eq!(t.residency().0, 1, "only the tail stays");
        assert_eq!(listed(&t), want);
        assert_eq!(t.residency().0, 1, "a look keeps nothing");
    }

    /// What a look for the out-of-scope rows costs at 10 million URLs (a shared crawl's scope
    /// widens: `cargo test --release --lib url_table::tests::looking_for -- --ignored
    /// --nocapture`), in memory and, for a million, from the state file.
    #[test]
    #[ignore = "a measurement: 10 million rows, about a minute"]
    fn looking_for_the_out_of_scope_rows_of_ten_million_urls() {
        let build = |n: u32, every: u32| {
            let mut t = UrlTable::default();
            for i in 0..n {
                let url = format!("http://127.0.0.1:40123/f/{}.html", 10_000_000 + i);
                let r = if i % every == 0 {
                    out_of_scope(2)
                } else {
                    row(2, Some(i / 1000))
                };
                t.push(&url, &r);
            }
            t
        };
        let look = |t: &UrlTable| {
            let start = std::time::Instant::now();
            let mut found = 0u64;
            t.for_each_ignored(IgnoreReason::OutOfScope, |_, url| {
                found += u64::from(url.contains("127.0.0.2"));
            })
            .expect("rows read");
            (start.elapsed(), found)
        };
        let all = |t: &UrlTable| {
            let start = std::time::Instant::now();
            t.for_each(|_, _, _| {}).expect("rows read");
            start.elapsed()
        };
        for every in [1, 10, 300, 10_000_000] {
            let t = build(10_000_000, every);
            let (took, _) = look(&t);
            println!(
                "10 M rows in memory, 1 in {every} out of scope: {took:?} (every row read: {:?})",
                all(&t)
            );
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cp = state_file(dir.path());
        let reader = cp.url_reader();
        let mut t = build(1_000_000, 10);
        t.read_back_from(reader, 0);
        write_rows(&mut cp, &mut t);
        t.committed(1);
        let (took, _) = look(&t);
        println!("1 M rows in the state file, 1 in 10 out of scope: {took:?}");
    }

    /// The memory a URL costs here, for the README's table: the fixed row plus the packed URL.
    #[test]
    fn a_link_farm_url_costs_a_few_dozen_bytes() {
        let mut t = UrlTable::default();
        for i in 0..100_000u32 {
            let url = format!("http://127.0.0.1:40123/f/{}.html", 1_000_000 + i);
            t.push(&url, &row(2, Some(i / 1000)));
        }
        let bytes: usize = (t.chunks.iter().flatten())
            .map(|c| {
                c.rows.capacity() * std::mem::size_of::<Row>()
                    + c.urls.capacity()
                    + c.starts.capacity() * 4
                    + std::mem::size_of::<Chunk>()
            })
            .sum();
        assert_eq!(std::mem::size_of::<Row>(), 20);
        assert!(bytes / 100_000 <= 40, "{} bytes a URL", bytes / 100_000);
    }
}
