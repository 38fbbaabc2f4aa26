//! The state file read without writing it: a redb storage backend over the file opened for
//! reading, which keeps whatever redb writes in memory.
//!
//! Why: redb writes even to read a database. A state whose crawl was killed is marked as needing
//! a repair, which redb does when it opens the file (a read-only open, `ReadOnlyDatabase`,
//! refuses such a file), and it writes its allocator's state when it closes one. Those writes are
//! redb's bookkeeping, not the checkpoint: kept here in memory, they let a reader
//! ([`super::checkpoint::Checkpoint::find`]) see the last committed checkpoint, repaired and
//! checked as a resume would see it, on a folder it may not write (a read-only mount, an
//! archive), and leave the file as it was on one it may.
//!
//! Locks: redb's own (byte-range locks and an `flock`, through its [`FileBackend`] on the same
//! read-only descriptor), but shared where redb asks for exclusive ones. A database open for
//! writing (a running crawl's) holds them exclusively, so opening it here is refused
//! (`DatabaseAlreadyOpen`) instead of reading a file that changes underneath; a crawl that
//! starts while a reader holds them is refused the same way until it lets go.
//!
//! Memory: the pages redb writes, in [`CHUNK`]-byte chunks (a repair rewrites its allocator's
//! state and the header; the file's rows are read from the file, never copied).

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::ops::Bound;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

/// The unit in which written bytes are kept: redb's page size.
const CHUNK: u64 = 4096;

/// A file as redb sees it: the bytes on disk under the ones redb wrote since it was opened.
#[derive(Debug)]
pub struct Unwritten {
    file: FileBackend,
    state: Mutex<Overlay>,
}

#[derive(Debug)]
struct Overlay {
    /// The storage's length as redb set it.
    len: u64,
    /// How much of the file still shows through: its length, or less once redb shrank the
    /// storage (bytes it grows back are zeros).
    file_len: u64,
    /// Chunks redb wrote, by number; each [`CHUNK`] bytes.
    chunks: BTreeMap<u64, Vec<u8>>,
}

impl Unwritten {
    /// Opens `path` for reading only.
    pub fn open(path: &Path) -> io::Result<Unwritten> {
        let file = File::open(path)?;
        let len = file.metadata()?.len();
        let file = FileBackend::new(file).map_err(io::Error::other)?;
        Ok(Unwritten {
            file,
            state: Mutex::new(Overlay {
                len,
                file_len: len,
                chunks: BTreeMap::new(),
            }),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Overlay> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Chunk `n` as it stands: written, or the file's bytes (zeros past what shows through).
    fn chunk(&self, state: &Overlay, n: u64) -> io::Result<Vec<u8>> {
        if let Some(chunk) = state.chunks.get(&n) {
            return Ok(chunk.clone());
        }
        let mut chunk = vec![0; CHUNK as usize];
        let start = n * CHUNK;
        let end = (start + CHUNK).min(state.file_len);
        if start < end {
            self.file
                .read(start, &mut chunk[..(end - start) as usize])?;
        }
        Ok(chunk)
    }
}

fn out_of_range() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "past the end of the state file",
    )
}

impl StorageBackend for Unwritten {
    fn len(&self) -> Result<u64, io::Error> {
        Ok(self.state().len)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), io::Error> {
        let state = self.state();
        let end = offset
            .checked_add(out.len() as u64)
            .filter(|end| *end <= state.len)
            .ok_or_else(out_of_range)?;
        // The file's bytes first, in one read; then the written chunks over them.
        let from_file = end.min(state.file_len).saturating_sub(offset) as usize;
        if from_file > 0 {
            self.file.read(offset, &mut out[..from_file])?;
        }
        out[from_file..].fill(0);
        let first = offset / CHUNK;
        for (n, chunk) in state.chunks.range(first..end.div_ceil(CHUNK)) {
            let chunk_start = n * CHUNK;
            let from = offset.max(chunk_start);
            let to = end.min(chunk_start + CHUNK);
            out[(from - offset) as usize..(to - offset) as usize].copy_from_slice(
                &chunk[(from - chunk_start) as usize..(to - chunk_start) as usize],
            );
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> Result<(), io::Error> {
        let mut state = self.state();
        if len < state.len {
            // What lies past the new end reads as zeros if the storage grows again.
            state.chunks.retain(|n, _| n * CHUNK < len);
            let last = len / CHUNK;
            if let Some(chunk) = state.chunks.get_mut(&last) {
                chunk[(len - last * CHUNK) as usize..].fill(0);
            }
            state.file_len = state.file_len.min(len);
        }
        state.len = len;
        Ok(())
    }

    fn sync_data(&self) -> Result<(), io::Error> {
        // Nothing reaches the file, so there is nothing to make durable.
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), io::Error> {
        let mut state = self.state();
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|end| *end <= state.len)
            .ok_or_else(out_of_range)?;
        let mut at = offset;
        while at < end {
            let n = at / CHUNK;
            let chunk_start = n * CHUNK;
            let to = end.min(chunk_start + CHUNK);
            let mut chunk = self.chunk(&state, n)?;
            chunk[(at - chunk_start) as usize..(to - chunk_start) as usize]
                .copy_from_slice(&data[(at - offset) as usize..(to - offset) as usize]);
            state.chunks.insert(n, chunk);
            at = to;
        }
        Ok(())
    }

    fn close(&self) -> Result<(), io::Error> {
        self.file.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.try_lock_shared_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.file.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_shared_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.query_lock_range(start, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8).collect()
    }

    #[test]
    fn what_redb_writes_reads_back_over_the_file_and_never_reaches_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state");
        let on_disk = pattern(10_000);
        std::fs::write(&path, &on_disk).expect("write");
        let file = Unwritten::open(&path).expect("open");
        assert_eq!(file.len().expect("len"), 10_000);

        // A write across a chunk boundary reads back between the file's bytes.
        file.write(4000, &[1; 300]).expect("write");
        let mut out = vec![0; 320];
        file.read(3990, &mut out).expect("read");
        assert_eq!(&out[..10], &on_disk[3990..4000]);
        assert_eq!(&out[10..310], &[1; 300][..]);
        assert_eq!(&out[310..], &on_disk[4300..4310]);

        // Shrunk, then grown: what was cut off reads as zeros, written bytes and file alike.
        file.set_len(4050).expect("shrink");
        file.set_len(12_000).expect("grow");
        let mut out = vec![9; 150];
        file.read(3950, &mut out).expect("read");
        assert_eq!(&out[..50], &on_disk[3950..4000]);
        assert_eq!(&out[50..100], &[1; 50][..]);
        assert_eq!(&out[100..], &[0; 50][..]);
        let mut out = vec![9; 10];
        file.read(9000, &mut out).expect("read");
        assert_eq!(out, [0; 10]);

        // Nothing past the end; and the file is as it was.
        assert!(file.read(11_995, &mut [0; 10]).is_err());
        assert!(file.write(11_995, &[0; 10]).is_err());
        file.sync_data().expect("sync");
        file.close().expect("close");
        assert_eq!(std::fs::read(&path).expect("read"), on_disk);
    }
}
