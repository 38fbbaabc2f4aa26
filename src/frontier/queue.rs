//! The FIFO every front and back queue of the frontier is: in memory by default; with a spill
//! store, only its head and its tail stay in memory and the middle goes to the store in chunks.
//!
//! A queue is a list of segments, each either items in memory or one chunk in the store, so
//! the order of items is the order of segments and never depends on where they live: a
//! spilling and a non-spilling frontier give out the same items in the same order. Pushes go
//! to the head while nothing follows it and it has room, then to the tail; a tail that reaches
//! a chunk's worth is written out whole. A pop that reaches a stored chunk reads it back whole
//! and frees it. So each item is written once and read once, and the store sees appends and
//! reads in the order they were written.
//!
//! An item only leaves memory once the store has it: a chunk handed to the spill thread
//! keeps its bytes in [`SpillIo`] until the thread confirms the write (a pop that reaches it
//! meanwhile decodes it from there, without waiting); a failed write keeps them there for
//! good (and no more writes are tried until the frontier is told to retry, which writes them
//! again); a failed read or a corrupt chunk leaves the chunk where it is and the pop reports
//! [`Blocked`], so nothing is lost, duplicated or reordered. A pop that brings a queue's head
//! down to half a chunk asks for the next stored chunk ahead, so the pop that needs it rarely
//! waits. This module does no I/O of its own: it sends requests to the spill thread
//! (`spill_thread.rs`, which owns the [`SpillStore`]) and remembers the first failure.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io;
use std::sync::Arc;
use std::sync::mpsc::Receiver;

use super::spill::SpillStore;
use super::spill_thread::{Done, Request, SpillThread};

/// How a queue's element becomes bytes and back: `T` for a back queue, `(SiteId, T)` for a
/// front queue. Plain function pointers, so the frontier's code needs no `T: SpillItem` bound
/// outside of its spilling constructor.
pub(super) struct Codec<E> {
    pub encode: fn(&E, &mut Vec<u8>),
    pub decode: fn(&[u8]) -> Option<E>,
}

/// What went wrong with the spill store. Nothing was lost: see [`crate::frontier::Frontier::spill_error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpillErrorKind {
    /// Writing or freeing a chunk failed: items stay in memory, no more writes until a retry.
    Write,
    /// Reading a chunk failed: the chunk stays stored, and no slot is given until a retry.
    Read,
    /// A chunk came back but did not decode: as for `Read`.
    Corrupt,
}

/// The first spill failure since the last retry.
#[derive(Debug)]
pub struct SpillError {
    pub kind: SpillErrorKind,
    pub source: io::Error,
}

impl fmt::Display for SpillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            SpillErrorKind::Write => "writing to",
            SpillErrorKind::Read => "reading from",
            SpillErrorKind::Corrupt => "decoding a chunk of",
        };
        write!(
            f,
            "frontier spill: {what} the spill store failed: {}",
            self.source
        )
    }
}

impl std::error::Error for SpillError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// The spill thread and the state shared by all queues of one frontier.
pub(super) struct SpillIo {
    /// `None` if the thread could not be started: every write then fails, as a full disk would.
    thread: Option<SpillThread>,
    /// Most items the first segment takes from pushes.
    head_cap: usize,
    /// Items per chunk written (a tail kept through a write failure may make one larger).
    chunk: usize,
    next_id: u64,
    error: Option<SpillError>,
    /// Items handed to the store and not known to have failed (in flight included).
    spilled: usize,
    /// Items of chunks whose write failed: stored segments whose bytes are in memory.
    failed: usize,
    /// Encoded bytes written to the store so far (freed chunks included).
    written: u64,
    buf: Vec<u8>,
    /// Chunks handed to the thread whose write is not confirmed yet, or failed: their bytes
    /// stay here, so a take never waits on a write and a failed write loses nothing.
    unwritten: HashMap<u64, Unwritten>,
    /// Reads asked ahead of need (a queue's next chunk, while its head still has items).
    reads: HashMap<u64, Receiver<io::Result<Vec<u8>>>>,
}

struct Unwritten {
    bytes: Arc<[u8]>,
    len: usize,
    /// The write failed: the items count as in memory, and a retry writes them again.
    failed: bool,
}

fn thread_gone() -> io::Error {
    io::Error::other("the spill thread is gone")
}

impl SpillIo {
    /// Each queue keeps at most `max(in_memory, 1)` items in memory between calls (after a
    /// write failure, more): half in the head, half as the tail being filled. The store moves
    /// to a thread of its own.
    pub fn new(store: Box<dyn SpillStore>, in_memory: usize) -> Self {
        let chunk = (in_memory / 2).max(1);
        let (thread, error) = match SpillThread::start(store) {
            Ok(thread) => (Some(thread), None),
            Err(source) => (
                None,
                Some(SpillError {
                    kind: SpillErrorKind::Write,
                    source,
                }),
            ),
        };
        Self {
            thread,
            head_cap: in_memory.saturating_sub(chunk),
            chunk,
            next_id: 0,
            error,
            spilled: 0,
            failed: 0,
            written: 0,
            buf: Vec::new(),
            unwritten: HashMap::new(),
            reads: HashMap::new(),
        }
    }

    pub fn error(&self) -> Option<&SpillError> {
        self.error.as_ref()
    }

    /// A read failed: the frontier gives no slot until a retry, since the next item of some
    /// queue cannot be had.
    pub fn stalled(&self) -> bool {
        self.error
            .as_ref()
            .is_some_and(|e| e.kind != SpillErrorKind::Write)
    }

    /// Forgets the error and writes again the chunks whose write failed.
    pub fn clear_error(&mut self) {
        self.error = None;
        let mut again: Vec<u64> = self
            .unwritten
            .iter()
            .filter(|(_, u)| u.failed)
            .map(|(id, _)| *id)
            .collect();
        again.sort_unstable();
        for id in again {
            let Some(u) = self.unwritten.get_mut(&id) else {
                continue;
            };
            let put = Request::Put {
                id,
                bytes: u.bytes.clone(),
            };
            if !self.thread.as_ref().is_some_and(|t| t.send(put)) {
                self.record(SpillErrorKind::Write, thread_gone());
                return;
            }
            u.failed = false;
            self.spilled += u.len;
            self.failed -= u.len;
        }
    }

    pub fn spilled(&self) -> usize {
        self.spilled
    }

    /// Items whose write failed: held in memory, in stored segments, until read or retried.
    pub fn failed(&self) -> usize {
        self.failed
    }

    pub fn written(&self) -> u64 {
        self.written
    }

    pub fn disk_bytes(&self) -> u64 {
        self.thread.as_ref().map_or(0, SpillThread::disk_bytes)
    }

    /// Takes in the outcomes of writes the thread has finished, without waiting: confirmed
    /// chunks' bytes leave memory, failed ones stay and the failure is recorded.
    pub fn poll(&mut self) {
        while let Some(done) = self.thread.as_ref().and_then(SpillThread::try_done) {
            match done {
                Done::Written(ids) => {
                    for id in ids {
                        // Already gone if it was read back from memory meanwhile.
                        self.unwritten.remove(&id);
                    }
                }
                Done::WriteFailed { ids, error } => {
                    for id in ids {
                        if let Some(u) = self.unwritten.get_mut(&id)
                            && !u.failed
                        {
                            u.failed = true;
                            self.spilled -= u.len;
                            self.failed += u.len;
                        }
                    }
                    self.record(SpillErrorKind::Write, error);
                }
            }
        }
    }

    /// Waits until the thread has applied everything handed to it, then takes in the
    /// outcomes: what a test needs before it changes how its store behaves.
    #[cfg(test)]
    pub fn flush(&mut self) {
        let (reply, answer) = std::sync::mpsc::channel();
        if self
            .thread
            .as_ref()
            .is_some_and(|t| t.send(Request::Flush(reply)))
        {
            let _ = answer.recv();
        }
        self.poll();
    }

    /// Keeps the first failure: it is the cause, later ones are often its consequences.
    fn record(&mut self, kind: SpillErrorKind, source: io::Error) {
        if self.error.is_none() {
            self.error = Some(SpillError { kind, source });
        }
    }

    /// Hands `items` to the thread as one chunk; `None` (failure recorded, or writes
    /// suspended by an earlier one) leaves them to the caller, in memory.
    fn write<E>(&mut self, items: &VecDeque<E>, codec: &Codec<E>) -> Option<u64> {
        self.poll();
        if self.error.is_some() {
            return None;
        }
        self.buf.clear();
        for item in items {
            let at = self.buf.len();
            self.buf.extend_from_slice(&[0; 4]);
            (codec.encode)(item, &mut self.buf);
            let len = u32::try_from(self.buf.len() - at - 4).unwrap_or(u32::MAX);
            self.buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
        }
        let id = self.next_id;
        let bytes: Arc<[u8]> = Arc::from(&self.buf[..]);
        let put = Request::Put {
            id,
            bytes: bytes.clone(),
        };
        if !self.thread.as_ref().is_some_and(|t| t.send(put)) {
            self.record(SpillErrorKind::Write, thread_gone());
            return None;
        }
        self.next_id += 1;
        self.spilled += items.len();
        self.written += bytes.len() as u64;
        self.unwritten.insert(
            id,
            Unwritten {
                bytes,
                len: items.len(),
                failed: false,
            },
        );
        Some(id)
    }

    /// Asks for chunk `id` ahead of need, if it is not in memory and there is room in the
    /// thread's queue now.
    fn prefetch(&mut self, id: u64) {
        if self.stalled() || self.unwritten.contains_key(&id) || self.reads.contains_key(&id) {
            return;
        }
        let (reply, answer) = std::sync::mpsc::channel();
        if self
            .thread
            .as_ref()
            .is_some_and(|t| t.try_send(Request::Read { id, reply }))
        {
            self.reads.insert(id, answer);
        }
    }

    /// Chunk `id`'s bytes: from memory if its write is not confirmed, else the read asked
    /// ahead, else a read now (the one wait: on the thread's queue and the disk).
    fn fetch(&mut self, id: u64) -> io::Result<Vec<u8>> {
        let answer = if let Some(answer) = self.reads.remove(&id) {
            answer
        } else {
            let (reply, answer) = std::sync::mpsc::channel();
            if !self
                .thread
                .as_ref()
                .is_some_and(|t| t.send(Request::Read { id, reply }))
            {
                return Err(thread_gone());
            }
            answer
        };
        answer.recv().unwrap_or_else(|_| Err(thread_gone()))
    }

    /// Reads and decodes chunk `id` of `len` items, leaving it stored.
    fn read<E>(&mut self, id: u64, len: usize, codec: &Codec<E>) -> Result<VecDeque<E>, Blocked> {
        self.poll();
        if self.stalled() {
            return Err(Blocked);
        }
        let decoded = if let Some(u) = self.unwritten.get(&id) {
            // A read asked before the write failed is not needed.
            self.reads.remove(&id);
            decode_chunk(&u.bytes, len, codec)
        } else {
            match self.fetch(id) {
                Ok(bytes) => decode_chunk(&bytes, len, codec),
                Err(e) => {
                    self.record(SpillErrorKind::Read, e);
                    return Err(Blocked);
                }
            }
        };
        if let Some(items) = decoded {
            return Ok(items);
        }
        let e = io::Error::new(
            io::ErrorKind::InvalidData,
            format!("chunk {id} does not hold {len} valid items"),
        );
        self.record(SpillErrorKind::Corrupt, e);
        Err(Blocked)
    }

    /// Chunk `id`'s `len` items are back in memory: the store may drop it. A failure here
    /// loses nothing (the items are in memory), only space.
    fn free(&mut self, id: u64, len: usize) {
        match self.unwritten.remove(&id) {
            Some(u) if u.failed => self.failed -= len,
            _ => self.spilled -= len,
        }
        // Sent even for a failed write: the thread forgets the failure then.
        if !self
            .thread
            .as_ref()
            .is_some_and(|t| t.send(Request::Free(id)))
        {
            self.record(SpillErrorKind::Write, thread_gone());
        }
    }

    #[cfg(test)]
    fn peek<E>(&self, id: u64, len: usize, codec: &Codec<E>) -> VecDeque<E> {
        if let Some(u) = self.unwritten.get(&id) {
            return decode_chunk(&u.bytes, len, codec).expect("test chunks decode");
        }
        let (reply, answer) = std::sync::mpsc::channel();
        let thread = self.thread.as_ref().expect("test stores have a thread");
        assert!(thread.send(Request::Read { id, reply }), "the thread runs");
        let bytes = answer
            .recv()
            .expect("the thread answers")
            .expect("test stores read back");
        decode_chunk(&bytes, len, codec).expect("test chunks decode")
    }
}

fn decode_chunk<E>(mut bytes: &[u8], len: usize, codec: &Codec<E>) -> Option<VecDeque<E>> {
    let mut items = VecDeque::with_capacity(len);
    while !bytes.is_empty() {
        let (size, rest) = bytes.split_at_checked(4)?;
        let size = u32::from_le_bytes(size.try_into().ok()?) as usize;
        let (item, rest) = rest.split_at_checked(size)?;
        items.push_back((codec.decode)(item)?);
        bytes = rest;
    }
    (items.len() == len).then_some(items)
}

/// A pop or removal could not go on: the next item is in a chunk that cannot be read now.
/// The queue is unchanged from that item on; the cause is in [`SpillIo::error`].
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Blocked;

/// A queue's access to the spill store, for one call.
pub(super) struct Ctx<'a, E> {
    pub io: &'a mut SpillIo,
    pub codec: &'a Codec<E>,
}

enum Segment<E> {
    Mem(VecDeque<E>),
    Stored { id: u64, len: usize },
}

pub(super) struct SpillQueue<E> {
    /// Never holds an empty `Mem` segment except as the only one (kept for its allocation).
    segs: VecDeque<Segment<E>>,
    len: usize,
}

impl<E> Default for SpillQueue<E> {
    fn default() -> Self {
        Self {
            segs: VecDeque::new(),
            len: 0,
        }
    }
}

impl<E> SpillQueue<E> {
    /// Items queued, stored ones included.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push_back(&mut self, item: E, ctx: Option<Ctx<'_, E>>) {
        self.len += 1;
        let head_cap = ctx.as_ref().map_or(usize::MAX, |c| c.io.head_cap);
        let only = self.segs.len() <= 1;
        match self.segs.back_mut() {
            // An empty segment is the only one, kept for its allocation: it takes any push.
            Some(Segment::Mem(items)) if !only || items.is_empty() || items.len() < head_cap => {
                items.push_back(item);
            }
            _ => self.segs.push_back(Segment::Mem(VecDeque::from([item]))),
        }
        if let Some(mut ctx) = ctx {
            self.spill_tail(&mut ctx);
        }
    }

    /// Puts an item first, in memory: a rare call (a fetch given back to keep its place), so
    /// it may take the head one item past its bound.
    pub fn push_front(&mut self, item: E) {
        self.len += 1;
        match self.segs.front_mut() {
            Some(Segment::Mem(items)) => items.push_front(item),
            _ => self.segs.push_front(Segment::Mem(VecDeque::from([item]))),
        }
    }

    /// Writes the last segment out if it is a tail (not the head, or beyond the head's room)
    /// of a chunk's worth.
    fn spill_tail(&mut self, ctx: &mut Ctx<'_, E>) {
        let only = self.segs.len() == 1;
        let Some(last) = self.segs.back_mut() else {
            return;
        };
        let Segment::Mem(items) = last else {
            return;
        };
        if (only && items.len() <= ctx.io.head_cap) || items.len() < ctx.io.chunk {
            return;
        }
        if let Some(id) = ctx.io.write(items, ctx.codec) {
            let len = items.len();
            *last = Segment::Stored { id, len };
        }
    }

    pub fn pop_front(&mut self, mut ctx: Option<Ctx<'_, E>>) -> Result<Option<E>, Blocked> {
        loop {
            match self.segs.front_mut() {
                None => return Ok(None),
                Some(Segment::Mem(items)) => {
                    if let Some(item) = items.pop_front() {
                        self.len -= 1;
                        let left = items.len();
                        if left == 0 && self.segs.len() > 1 {
                            self.segs.pop_front();
                        }
                        self.read_ahead(left, ctx.as_mut());
                        return Ok(Some(item));
                    }
                    if self.segs.len() == 1 {
                        return Ok(None);
                    }
                    self.segs.pop_front();
                }
                Some(seg @ Segment::Stored { .. }) => {
                    let ctx = ctx
                        .as_mut()
                        .expect("a queue holds stored chunks only in a spilling frontier");
                    Self::load(seg, ctx)?;
                }
            }
        }
    }

    /// With `left` items in the head, asks for the next stored chunk once the head is down to
    /// half a chunk, so that it is in memory by the time the head runs out.
    fn read_ahead(&self, left: usize, ctx: Option<&mut Ctx<'_, E>>) {
        let Some(ctx) = ctx else {
            return;
        };
        if left > ctx.io.chunk / 2 {
            return;
        }
        let next = usize::from(left != 0);
        if let Some(Segment::Stored { id, .. }) = self.segs.get(next) {
            ctx.io.prefetch(*id);
        }
    }

    /// Brings a stored segment back into memory and frees its chunk.
    fn load(seg: &mut Segment<E>, ctx: &mut Ctx<'_, E>) -> Result<(), Blocked> {
        if let Segment::Stored { id, len } = *seg {
            let items = ctx.io.read(id, len, ctx.codec)?;
            *seg = Segment::Mem(items);
            ctx.io.free(id, len);
        }
        Ok(())
    }

    /// Moves up to `wanted` items that `pick` chooses into `out`, in queue order, keeping the
    /// others in place and in order. Stored chunks with nothing picked are read but not
    /// rewritten; the rest of a chunk with something picked is written back as a new chunk.
    /// Stops early once `wanted` items are out. On [`Blocked`], what was moved stays moved
    /// and the queue from the unreadable chunk on is untouched.
    pub fn extract(
        &mut self,
        mut pick: impl FnMut(&E) -> bool,
        mut wanted: usize,
        out: &mut Vec<E>,
        mut ctx: Option<Ctx<'_, E>>,
    ) -> Result<(), Blocked> {
        let mut result = Ok(());
        for seg in &mut self.segs {
            if wanted == 0 {
                break;
            }
            let mut items = match seg {
                Segment::Mem(items) => std::mem::take(items),
                Segment::Stored { id, len } => {
                    let ctx = ctx
                        .as_mut()
                        .expect("a queue holds stored chunks only in a spilling frontier");
                    match ctx.io.read(*id, *len, ctx.codec) {
                        Ok(items) => items,
                        Err(blocked) => {
                            result = Err(blocked);
                            break;
                        }
                    }
                }
            };
            let before = items.len();
            let mut kept = VecDeque::with_capacity(before);
            for item in items.drain(..) {
                if wanted > 0 && pick(&item) {
                    out.push(item);
                    wanted -= 1;
                } else {
                    kept.push_back(item);
                }
            }
            self.len -= before - kept.len();
            match seg {
                Segment::Mem(items) => *items = kept,
                Segment::Stored { .. } if kept.len() == before => {}
                Segment::Stored { id, len } => {
                    let ctx = ctx
                        .as_mut()
                        .expect("a queue holds stored chunks only in a spilling frontier");
                    ctx.io.free(*id, *len);
                    *seg = match (kept.is_empty(), ctx.io.write(&kept, ctx.codec)) {
                        (false, Some(id)) => Segment::Stored {
                            id,
                            len: kept.len(),
                        },
                        _ => Segment::Mem(kept),
                    };
                }
            }
        }
        self.segs
            .retain(|seg| !matches!(seg, Segment::Mem(items) if items.is_empty()));
        result
    }

    /// Items held in memory (not in the store).
    pub fn in_memory(&self) -> usize {
        self.segs
            .iter()
            .map(|seg| match seg {
                Segment::Mem(items) => items.len(),
                Segment::Stored { .. } => 0,
            })
            .sum()
    }

    /// Every item in order, stored ones read without being consumed: for test invariants.
    #[cfg(test)]
    pub fn to_vec(&self, spill: Option<(&SpillIo, &Codec<E>)>) -> Vec<E>
    where
        E: Clone,
    {
        let mut all = Vec::with_capacity(self.len);
        for seg in &self.segs {
            match seg {
                Segment::Mem(items) => all.extend(items.iter().cloned()),
                Segment::Stored { id, len } => {
                    let (io, codec) = spill.expect("stored chunks only with a spill store");
                    all.extend(io.peek(*id, *len, codec));
                }
            }
        }
        all
    }

    /// The segment structure's own invariants, for the frontier's `check_invariants`.
    #[cfg(test)]
    pub fn check(&self) {
        let mut len = 0;
        for (i, seg) in self.segs.iter().enumerate() {
            match seg {
                Segment::Mem(items) => {
                    assert!(
                        !items.is_empty() || self.segs.len() == 1,
                        "empty segment {i}"
                    );
                    len += items.len();
                }
                Segment::Stored { len: n, .. } => {
                    assert!(*n > 0, "empty chunk");
                    len += n;
                }
            }
        }
        assert_eq!(len, self.len, "queue length counts every segment");
    }
}
