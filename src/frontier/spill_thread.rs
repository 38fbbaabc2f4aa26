//! The spill store's own thread: every write, free and read of the frontier's spill store
//! runs here, so a big `redb` transaction never stalls the task that owns the frontier (the
//! engine's coordinator: no dispatch, no results, no snapshots meanwhile).
//!
//! It owns the [`SpillStore`] and nothing else. It takes [`Request`]s from a bounded channel,
//! in order, and applies runs of writes and frees in one call of [`SpillStore::apply`] (one
//! transaction on disk) before it serves a read or a flush, so a read sees every chunk written
//! before it was asked for. It must never decide what spills or when, keep an item's bytes
//! after it answered, or drop a request it took without answering its outcome: each write
//! ends as [`Done::Written`] or [`Done::WriteFailed`], each read as the bytes or the error on
//! the reply channel it came with. The frontier's side (`queue.rs`, `SpillIo`) keeps the
//! bytes of every chunk it handed over until the write is confirmed, so a take never waits
//! on a write and a failed write loses nothing.
//!
//! The channel is bounded ([`REQUESTS`]): when the thread falls that far behind, a write
//! waits for room (back-pressure) rather than let the bytes in flight grow without bound.

use std::collections::HashSet;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TrySendError};
use std::thread::JoinHandle;

use super::spill::SpillStore;

/// Requests waiting for the thread at most; a write beyond waits for room.
pub(super) const REQUESTS: usize = 64;

/// Writes and frees applied together in one call of the store at most.
const BATCH: usize = 256;

pub(super) enum Request {
    /// Store this chunk (a retry may send an id again after [`Done::WriteFailed`]).
    Put { id: u64, bytes: Arc<[u8]> },
    /// The chunk will not be read again.
    Free(u64),
    /// The chunk's bytes, on `reply`.
    Read {
        id: u64,
        reply: Sender<io::Result<Vec<u8>>>,
    },
    /// Answered on `reply` once everything sent before is applied (tests wait on it).
    #[cfg(test)]
    Flush(Sender<()>),
}

/// The outcome of writes, in the order they were applied.
pub(super) enum Done {
    /// These chunks are in the store.
    Written(Vec<u64>),
    /// These chunks are not in the store; the frontier still has their bytes.
    WriteFailed { ids: Vec<u64>, error: io::Error },
}

pub(super) struct SpillThread {
    requests: Option<SyncSender<Request>>,
    done: Receiver<Done>,
    disk_bytes: Arc<AtomicU64>,
    /// Set when the frontier is dropped: what is still queued is scratch nobody will read.
    closing: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl SpillThread {
    pub(super) fn start(store: Box<dyn SpillStore>) -> io::Result<SpillThread> {
        let (requests, rx) = mpsc::sync_channel(REQUESTS);
        let (tx, done) = mpsc::channel();
        let disk_bytes = Arc::new(AtomicU64::new(store.disk_bytes()));
        let closing = Arc::new(AtomicBool::new(false));
        let worker = Worker {
            store,
            done: tx,
            disk_bytes: disk_bytes.clone(),
            closing: closing.clone(),
            failed: HashSet::new(),
            puts: Vec::new(),
            frees: Vec::new(),
        };
        let handle = std::thread::Builder::new()
            .name("crawltop-spill".into())
            .spawn(move || worker.run(&rx))?;
        Ok(SpillThread {
            requests: Some(requests),
            done,
            disk_bytes,
            closing,
            handle: Some(handle),
        })
    }

    /// Hands a request over, waiting for room if the thread is [`REQUESTS`] behind. `false`
    /// if the thread is gone.
    pub(super) fn send(&self, request: Request) -> bool {
        self.requests
            .as_ref()
            .is_some_and(|r| r.send(request).is_ok())
    }

    /// Hands a request over only if there is room now (a read ahead is worth no wait).
    pub(super) fn try_send(&self, request: Request) -> bool {
        match self.requests.as_ref().map(|r| r.try_send(request)) {
            Some(Ok(())) => true,
            Some(Err(TrySendError::Full(_) | TrySendError::Disconnected(_))) | None => false,
        }
    }

    /// An outcome that arrived, without waiting.
    pub(super) fn try_done(&self) -> Option<Done> {
        self.done.try_recv().ok()
    }

    /// Bytes the store took on disk after its last change.
    pub(super) fn disk_bytes(&self) -> u64 {
        self.disk_bytes.load(Ordering::Relaxed)
    }
}

impl Drop for SpillThread {
    fn drop(&mut self) {
        self.closing.store(true, Ordering::Relaxed);
        // Closing the channel ends the thread's loop; joining it drops the store (a disk
        // store removes its file) before the frontier is gone.
        self.requests = None;
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

struct Worker {
    store: Box<dyn SpillStore>,
    done: Sender<Done>,
    disk_bytes: Arc<AtomicU64>,
    closing: Arc<AtomicBool>,
    /// Chunks whose last write failed: freeing one is a no-op (it is not stored).
    failed: HashSet<u64>,
    puts: Vec<(u64, Arc<[u8]>)>,
    frees: Vec<u64>,
}

impl Worker {
    fn run(mut self, requests: &Receiver<Request>) {
        while let Ok(first) = requests.recv() {
            let mut next = Some(first);
            while let Some(request) = next {
                if self.closing.load(Ordering::Relaxed) {
                    return;
                }
                self.take(request);
                if self.puts.len() + self.frees.len() >= BATCH {
                    self.apply();
                }
                next = requests.try_recv().ok();
            }
            // Nothing more waiting: what was gathered goes out as one transaction.
            self.apply();
        }
    }

    fn take(&mut self, request: Request) {
        match request {
            Request::Put { id, bytes } => {
                self.failed.remove(&id);
                self.puts.push((id, bytes));
            }
            Request::Free(id) => {
                if !self.failed.remove(&id) {
                    self.frees.push(id);
                }
            }
            Request::Read { id, reply } => {
                self.apply();
                // The frontier may have stopped waiting (dropped): nothing to do then.
                let _ = reply.send(self.store.get(id));
            }
            #[cfg(test)]
            Request::Flush(reply) => {
                self.apply();
                let _ = reply.send(());
            }
        }
    }

    fn apply(&mut self) {
        if self.puts.is_empty() && self.frees.is_empty() {
            return;
        }
        let puts: Vec<(u64, &[u8])> = self.puts.iter().map(|(id, b)| (*id, &b[..])).collect();
        let result = self.store.apply(&puts, &self.frees);
        let ids: Vec<u64> = self.puts.drain(..).map(|(id, _)| id).collect();
        self.frees.clear();
        let done = match result {
            Ok(()) => Done::Written(ids),
            Err(error) => {
                self.failed.extend(&ids);
                Done::WriteFailed { ids, error }
            }
        };
        self.disk_bytes
            .store(self.store.disk_bytes(), Ordering::Relaxed);
        // The frontier may be gone (dropped while requests were queued): nothing to tell.
        let _ = self.done.send(done);
    }
}
