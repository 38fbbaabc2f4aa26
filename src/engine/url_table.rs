//! The URL table: one row per URL the crawl learned of, packed, and the rows' binary form in
//! the checkpoint (docs/ARCHITECTURE.md, "The URL table").
//!
//! A crawl knows millions of URLs long before it fetches them (issue 12), so a row is 20 bytes
//! of fixed fields (site, depth, referrer, state, hops, retries, why it was ignored) and the URL
//! text, front-coded against the URL before it in blocks of [`MEM_BLOCK`] rows (links found on
//! one page share their origin and most of their path). What only a fetched or failed URL has
//! (sequence number, status, bytes, content type, reason, failure) lives in a side table of
//! extras, and content types and reasons are interned: a crawl sees a handful of each. No URL
//! owns a `String`. Rows are read and written whole, as the model's [`Resource`], through
//! [`UrlTable::get`], [`UrlTable::set`] and [`UrlTable::update`]; the URL itself never changes.
//!
//! On disk (the checkpoint's `url_blocks` and `url_rows` tables, opaque bytes to
//! `store::checkpoint`) the rows of ids `b * BLOCK_ROWS ..` form block `b`, front-coded and
//! lz4-compressed, written when it gains rows (the table's tail) or when many of its rows
//! changed; a row that changed in a block written before goes as a small row of its own, which
//! the next write of its block replaces. So a checkpoint costs what changed since the last one.
//!
//! It must never do I/O or know the coordinator: it holds values and turns them into bytes and
//! back. It never decides a row's state (the coordinator does, through the model's rules).

use std::collections::HashMap;
use std::sync::Arc;

use super::model::{Failure, Resource, ResourceState};
use crate::frontier::SiteId;
use crate::scope::IgnoreReason;
use crate::store::checkpoint::BLOCK_ROWS;

/// Rows whose URLs are front-coded together in memory: reading one URL decodes at most this
/// many.
const MEM_BLOCK: usize = 32;
/// "None" in a row's u32 fields.
const NONE: u32 = u32::MAX;
/// A block with more changed rows than this is written whole rather than row by row.
const REWRITE_BLOCK_AT: usize = BLOCK_ROWS as usize / 8;

/// The fixed part of a row: 20 bytes.
#[derive(Debug, Clone, Copy)]
struct Row {
    site: u32,
    depth: u32,
    referrer: u32,
    /// Index into `extras`, or [`NONE`].
    extra: u32,
    state: ResourceState,
    hops: u8,
    retries: u8,
    /// 0, or 1 + the index of the [`IgnoreReason`] in [`IGNORE_REASONS`].
    ignored: u8,
}

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

/// URL texts, front-coded in blocks of [`MEM_BLOCK`].
#[derive(Debug, Default)]
struct PackedUrls {
    bytes: Vec<u8>,
    /// Where each block starts in `bytes`.
    starts: Vec<usize>,
    last: Vec<u8>,
    len: usize,
}

impl PackedUrls {
    fn push(&mut self, url: &str) {
        if self.len.is_multiple_of(MEM_BLOCK) {
            self.starts.push(self.bytes.len());
            self.last.clear();
        }
        front_code(&self.last, url.as_bytes(), &mut self.bytes);
        self.last.clear();
        self.last.extend_from_slice(url.as_bytes());
        self.len += 1;
    }

    /// The URL of row `i` into `out` (which is cleared first).
    fn get_into(&self, i: usize, out: &mut Vec<u8>) {
        out.clear();
        let Some(&start) = self.starts.get(i / MEM_BLOCK) else {
            return;
        };
        let mut input = &self.bytes[start..];
        for _ in 0..=i % MEM_BLOCK {
            if front_decode(out, &mut input).is_none() {
                out.clear();
                return;
            }
        }
    }
}

/// Rows of bytes by key, as the checkpoint takes them.
pub(super) type Keyed = Vec<(u32, Vec<u8>)>;

/// Every URL the crawl learned of, by dense id (the order they were learned in).
#[derive(Debug, Default)]
pub(super) struct UrlTable {
    rows: Vec<Row>,
    extras: Vec<Extra>,
    urls: PackedUrls,
    content_types: Interner,
    reasons: Interner,
    /// Rows changed since the last checkpoint, as a bit set and a list.
    dirty_bits: Vec<u64>,
    dirty: Vec<u32>,
    /// Rows `..written` are in blocks of the checkpoint already.
    written: u32,
}

impl UrlTable {
    pub(super) fn len(&self) -> usize {
        self.rows.len()
    }

    /// A new row for `url`; its id is the table's length before.
    pub(super) fn push(&mut self, url: &str, r: &Resource) -> u32 {
        let id = self.rows.len() as u32;
        self.urls.push(url);
        self.rows.push(Row {
            site: NONE,
            depth: 0,
            referrer: NONE,
            extra: NONE,
            state: ResourceState::Discovered,
            hops: 0,
            retries: 0,
            ignored: 0,
        });
        self.set(id, r);
        id
    }

    /// The URL of row `id` (empty for an id the table does not have).
    pub(super) fn url(&self, id: u32) -> String {
        let mut out = Vec::new();
        self.urls.get_into(id as usize, &mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    pub(super) fn depth(&self, id: u32) -> u32 {
        self.rows.get(id as usize).map_or(0, |r| r.depth)
    }

    /// Row `id`'s fields (a default row for an id the table does not have).
    pub(super) fn get(&self, id: u32) -> Resource {
        let Some(row) = self.rows.get(id as usize) else {
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
            r.content_type = self.content_types.get(e.content_type);
            r.reason = self.reasons.get(e.reason);
        }
        if r.reason.is_none()
            && let Some(i) = ignored
        {
            // An ignored URL's reason is its ignore reason's text, kept once.
            r.reason = Some(
                self.reasons
                    .find(&i.to_string())
                    .cloned()
                    .unwrap_or_else(|| i.to_string().into()),
            );
        }
        r
    }

    /// Writes row `id`'s fields.
    pub(super) fn set(&mut self, id: u32, r: &Resource) {
        let Some(row) = self.rows.get(id as usize).copied() else {
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
                .map_or(NONE, |c| self.content_types.intern(c)),
            reason: reason.map_or(NONE, |t| self.reasons.intern(t)),
        };
        if let Some(i) = r.ignored {
            self.reasons.intern(&Arc::from(i.to_string()));
        }
        let needs_extra = extra.seq != u64::MAX
            || extra.bytes != 0
            || extra.status != 0
            || extra.failure != 0
            || extra.truncated
            || extra.content_type != NONE
            || extra.reason != NONE;
        let extra_at = if row.extra != NONE {
            self.extras[row.extra as usize] = extra;
            row.extra
        } else if needs_extra {
            self.extras.push(extra);
            (self.extras.len() - 1) as u32
        } else {
            NONE
        };
        self.rows[id as usize] = Row {
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

    /// Reads row `id`, lets `f` change it, writes it back.
    pub(super) fn update<T>(&mut self, id: u32, f: impl FnOnce(&mut Resource) -> T) -> T {
        let mut r = self.get(id);
        let out = f(&mut r);
        self.set(id, &r);
        out
    }

    /// Every row in id order: its id, URL and fields.
    pub(super) fn for_each(&self, mut f: impl FnMut(u32, &str, &Resource)) {
        let mut url = Vec::new();
        let mut input: &[u8] = &self.urls.bytes;
        for id in 0..self.rows.len() {
            if id.is_multiple_of(MEM_BLOCK) {
                url.clear();
            }
            if front_decode(&mut url, &mut input).is_none() {
                return;
            }
            let text = std::str::from_utf8(&url).unwrap_or_default();
            f(id as u32, text, &self.get(id as u32));
        }
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
            if group.len() > REWRITE_BLOCK_AT {
                blocks.push((block, self.encode_block(block)));
            } else {
                for &id in group {
                    let mut out = Vec::new();
                    encode_fields(&self.get(id), 0, &mut out);
                    rows.push((id, out));
                }
            }
        }
        let len = self.rows.len() as u32;
        let end = len.div_ceil(BLOCK_ROWS);
        for block in first_open..end {
            blocks.push((block, self.encode_block(block)));
        }
        self.written = len;
        (blocks, rows)
    }

    /// Block `block`'s rows, front-coded and compressed.
    fn encode_block(&self, block: u32) -> Vec<u8> {
        let first = block * BLOCK_ROWS;
        let end = (first + BLOCK_ROWS).min(self.rows.len() as u32);
        let mut out = Vec::new();
        put_varint(&mut out, u64::from(end - first));
        let mut prev = Vec::new();
        let mut url = Vec::new();
        let mut prev_referrer = 0;
        for id in first..end {
            self.urls.get_into(id as usize, &mut url);
            front_code(&prev, &url, &mut out);
            std::mem::swap(&mut prev, &mut url);
            let r = self.get(id);
            encode_fields(&r, prev_referrer, &mut out);
            prev_referrer = r.referrer.map_or(0, |x| u64::from(x) + 1);
        }
        compress(&out)
    }

    /// Appends the rows of a block read from the checkpoint; `block` must be the next one.
    pub(super) fn load_block(&mut self, block: u32, bytes: &[u8]) -> Result<(), String> {
        if self.rows.len() as u32 != block * BLOCK_ROWS {
            return Err(format!("URL block {block} does not follow the one before"));
        }
        let raw =
            decompress(bytes).map_err(|e| format!("URL block {block} does not decompress: {e}"))?;
        let bad = || format!("URL block {block} does not read");
        let mut input = raw.as_slice();
        let count = get_varint(&mut input).ok_or_else(bad)?;
        if count == 0 || count > u64::from(BLOCK_ROWS) {
            return Err(bad());
        }
        let mut url = Vec::new();
        let mut prev_referrer = 0;
        for _ in 0..count {
            front_decode(&mut url, &mut input).ok_or_else(bad)?;
            let text = std::str::from_utf8(&url).map_err(|_| bad())?;
            let r = decode_fields(&mut input, prev_referrer).ok_or_else(bad)?;
            prev_referrer = r.referrer.map_or(0, |x| u64::from(x) + 1);
            self.push(text, &r);
        }
        self.written = self.rows.len() as u32;
        Ok(())
    }

    /// Applies a single row read from the checkpoint.
    pub(super) fn load_row(&mut self, id: u32, bytes: &[u8]) -> Result<(), String> {
        if id as usize >= self.rows.len() {
            return Err(format!("URL {id} changed but was never written"));
        }
        let mut input = bytes;
        let r = decode_fields(&mut input, 0).ok_or_else(|| format!("URL {id} does not read"))?;
        self.set(id, &r);
        Ok(())
    }
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
        let check = |t: &UrlTable| {
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
        check(&t);
        let (blocks, rows) = t.checkpoint_rows();
        assert_eq!((blocks.len(), rows.len()), (3, 0));
        let mut back = UrlTable::default();
        for (b, bytes) in &blocks {
            back.load_block(*b, bytes).expect("a block reads");
        }
        check(&back);
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

    /// The memory a URL costs here, for the README's table: the fixed row plus the packed URL.
    #[test]
    fn a_link_farm_url_costs_a_few_dozen_bytes() {
        let mut t = UrlTable::default();
        for i in 0..100_000u32 {
            let url = format!("http://127.0.0.1:40123/f/{}.html", 1_000_000 + i);
            t.push(&url, &row(2, Some(i / 1000)));
        }
        let bytes = t.rows.capacity() * std::mem::size_of::<Row>()
            + t.urls.bytes.capacity()
            + t.urls.starts.capacity() * 8;
        assert_eq!(std::mem::size_of::<Row>(), 20);
        assert!(bytes / 100_000 <= 40, "{} bytes a URL", bytes / 100_000);
    }
}
