//! Where a frontier's spilled items go: the [`SpillStore`] trait with its two backends
//! ([`MemoryStore`] for tests, [`DiskStore`] on `redb` for real use), and [`SpillItem`], how
//! an item becomes bytes and back.
//!
//! A store owns numbered chunks of opaque bytes and nothing else. Each chunk holds many
//! encoded items of one queue; it is written whole once, read whole, and freed once. The
//! store knows no queue, site, priority or order: which items spill, when, and in what
//! order they come back is decided by the frontier's queues (`queue.rs`), which keep the
//! chunk ids in order. A store must never drop, merge or reorder a chunk behind their back,
//! and never panic on I/O: every failure comes back as an `io::Error`, so the frontier can
//! keep the items in memory and report it.
//!
//! The disk store is scratch: it is created empty on open and removed when dropped. A resumed
//! crawl rebuilds its frontier from its checkpoint, never from a spill file.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use redb::{Database, Durability, ReadableDatabase, TableDefinition};

/// An item the frontier can spill: a compact, self-contained byte encoding.
///
/// `decode` gets exactly the bytes one `encode` appended, and returns `None` if they are not
/// a valid encoding (a corrupt chunk), which the frontier reports instead of panicking.
pub trait SpillItem: Sized {
    fn encode(&self, out: &mut Vec<u8>);
    fn decode(bytes: &[u8]) -> Option<Self>;
}

impl SpillItem for u32 {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        Some(Self::from_le_bytes(bytes.try_into().ok()?))
    }
}

impl SpillItem for u64 {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        Some(Self::from_le_bytes(bytes.try_into().ok()?))
    }
}

impl SpillItem for String {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        std::str::from_utf8(bytes).ok().map(str::to_owned)
    }
}

impl SpillItem for Box<str> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }

    fn decode(bytes: &[u8]) -> Option<Self> {
        std::str::from_utf8(bytes).ok().map(Box::from)
    }
}

/// Numbered chunks of bytes, written whole, read whole, freed once. Ids are never reused
/// (but a chunk whose write failed may be written again under its id).
///
/// `Send`: the store lives on the spill thread (`spill_thread.rs`), not in the engine's task.
pub trait SpillStore: Send {
    fn put(&mut self, id: u64, chunk: &[u8]) -> io::Result<()>;
    /// Stores every chunk of `puts` and frees every id of `frees`, in that order: in one
    /// transaction where the store has them. After an error none of `puts` may be counted on
    /// (they will be written again or never read); the frees may be kept for later.
    fn apply(&mut self, puts: &[(u64, &[u8])], frees: &[u64]) -> io::Result<()> {
        for (id, chunk) in puts {
            self.put(*id, chunk)?;
        }
        for id in frees {
            self.free(*id)?;
        }
        Ok(())
    }
    /// The chunk's bytes; it stays stored until [`SpillStore::free`].
    fn get(&self, id: u64) -> io::Result<Vec<u8>>;
    /// The chunk will not be read again. A store may reclaim its space later.
    fn free(&mut self, id: u64) -> io::Result<()>;
    /// Bytes the store takes on disk now (0 for one in memory).
    fn disk_bytes(&self) -> u64;
}

fn not_found(id: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("spill chunk {id} is not stored"),
    )
}

/// Chunks in a map: for tests, where a disk is only in the way.
#[derive(Default)]
pub struct MemoryStore {
    chunks: HashMap<u64, Vec<u8>>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Chunks stored and not yet freed.
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }
}

impl SpillStore for MemoryStore {
    fn put(&mut self, id: u64, chunk: &[u8]) -> io::Result<()> {
        self.chunks.insert(id, chunk.to_vec());
        Ok(())
    }

    fn get(&self, id: u64) -> io::Result<Vec<u8>> {
        self.chunks.get(&id).cloned().ok_or_else(|| not_found(id))
    }

    fn free(&mut self, id: u64) -> io::Result<()> {
        self.chunks
            .remove(&id)
            .map(drop)
            .ok_or_else(|| not_found(id))
    }

    fn disk_bytes(&self) -> u64 {
        0
    }
}

const CHUNKS: TableDefinition<u64, &[u8]> = TableDefinition::new("chunks");

/// Frees are applied in batches, in the next write's transaction or on their own when this
/// many are waiting: a transaction per freed chunk would double the commits of a drain.
const FREE_BATCH: usize = 64;

/// Commits do not fsync (the file is scratch), except one in this many: redb reuses the pages
/// of freed chunks only after a durable commit, so without it the file would only grow.
const DURABLE_EVERY: u64 = 256;

/// redb's page cache. Chunks are read once, in the order written, so caching them buys
/// little, and redb's default (1 GiB) would put the spilled items right back in memory.
const CACHE_BYTES: usize = 4 << 20;

/// Set in the environment to N, the spill file refuses every write after its first N
/// transactions: how the tests prove what a failed spill file does to a crawl (a full disk
/// cannot be had on demand).
pub const FAIL_AFTER_ENV: &str = "CRAWLTOP_TEST_SPILL_FAIL_AFTER";

/// Chunks in a scratch `redb` file, one row per chunk (key: chunk id).
pub struct DiskStore {
    db: Database,
    path: PathBuf,
    pending_frees: Vec<u64>,
    commits: u64,
    /// [`FAIL_AFTER_ENV`], when the tests set it.
    fail_after: Option<u64>,
}

impl DiskStore {
    /// The file name inside the directory given to [`DiskStore::create`].
    pub const FILE_NAME: &'static str = "frontier-spill.redb";

    /// Creates an empty spill file in `dir`, replacing one left there by an earlier run.
    pub fn create(dir: &Path) -> io::Result<Self> {
        let path = dir.join(Self::FILE_NAME);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(&path)
            .map_err(io::Error::other)?;
        // The table exists from the start, so that a read of a missing chunk says NotFound.
        let txn = db.begin_write().map_err(io::Error::other)?;
        txn.open_table(CHUNKS).map_err(io::Error::other)?;
        txn.commit().map_err(io::Error::other)?;
        Ok(Self {
            db,
            path,
            pending_frees: Vec::new(),
            commits: 0,
            fail_after: std::env::var(FAIL_AFTER_ENV)
                .ok()
                .and_then(|v| v.parse().ok()),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One transaction: the chunks to store and every pending free.
    fn commit(&mut self, puts: &[(u64, &[u8])]) -> io::Result<()> {
        if self.fail_after.is_some_and(|n| self.commits >= n) {
            return Err(io::Error::other(format!(
                "write refused ({FAIL_AFTER_ENV} is set)"
            )));
        }
        let mut txn = self.db.begin_write().map_err(io::Error::other)?;
        self.commits += 1;
        let durability = if self.commits.is_multiple_of(DURABLE_EVERY) {
            Durability::Immediate
        } else {
            Durability::None
        };
        txn.set_durability(durability).map_err(io::Error::other)?;
        {
            let mut table = txn.open_table(CHUNKS).map_err(io::Error::other)?;
            for (id, chunk) in puts {
                table.insert(id, chunk).map_err(io::Error::other)?;
            }
            for id in &self.pending_frees {
                table.remove(id).map_err(io::Error::other)?;
            }
        }
        txn.commit().map_err(io::Error::other)?;
        // Only now: a failed transaction leaves the frees pending for the next one.
        self.pending_frees.clear();
        Ok(())
    }
}

impl SpillStore for DiskStore {
    fn put(&mut self, id: u64, chunk: &[u8]) -> io::Result<()> {
        self.commit(&[(id, chunk)])
    }

    fn apply(&mut self, puts: &[(u64, &[u8])], frees: &[u64]) -> io::Result<()> {
        self.pending_frees.extend_from_slice(frees);
        if puts.is_empty() && self.pending_frees.len() < FREE_BATCH {
            return Ok(());
        }
        self.commit(puts)
    }

    fn get(&self, id: u64) -> io::Result<Vec<u8>> {
        let txn = self.db.begin_read().map_err(io::Error::other)?;
        let table = txn.open_table(CHUNKS).map_err(io::Error::other)?;
        let chunk = table.get(id).map_err(io::Error::other)?;
        chunk
            .map(|c| c.value().to_vec())
            .ok_or_else(|| not_found(id))
    }

    fn free(&mut self, id: u64) -> io::Result<()> {
        self.pending_frees.push(id);
        if self.pending_frees.len() >= FREE_BATCH {
            self.commit(&[])?;
        }
        Ok(())
    }

    fn disk_bytes(&self) -> u64 {
        std::fs::metadata(&self.path).map_or(0, |m| m.len())
    }
}

impl Drop for DiskStore {
    fn drop(&mut self) {
        // Scratch: nothing in it outlives the frontier. A file left behind (the removal
        // failed) is replaced by the next `create` in the same directory.
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: SpillItem + PartialEq + std::fmt::Debug>(item: &T) {
        let mut bytes = Vec::new();
        item.encode(&mut bytes);
        assert_eq!(T::decode(&bytes).as_ref(), Some(item));
    }

    #[test]
    fn items_round_trip_and_bad_bytes_decode_to_none() {
        round_trip(&7u32);
        round_trip(&u64::MAX);
        round_trip(&String::from("http://a.test/é"));
        round_trip(&Box::<str>::from(""));
        assert_eq!(u32::decode(&[1, 2, 3]), None);
        assert_eq!(String::decode(&[0xff, 0xfe]), None);
    }

    fn exercise(store: &mut dyn SpillStore) {
        store.put(1, b"one").expect("put");
        store.put(2, b"").expect("put");
        assert_eq!(store.get(1).expect("get"), b"one");
        assert_eq!(store.get(2).expect("get"), b"");
        store.free(1).expect("free");
        store.put(3, b"three").expect("put");
        assert_eq!(
            store.get(1).map_err(|e| e.kind()),
            Err(io::ErrorKind::NotFound)
        );
        assert_eq!(store.get(3).expect("get"), b"three");
    }

    #[test]
    fn memory_store_keeps_chunks_until_freed() {
        let mut store = MemoryStore::new();
        exercise(&mut store);
        assert_eq!(store.chunks(), 2);
    }

    #[test]
    fn disk_store_is_created_empty_and_removed_on_drop() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(DiskStore::FILE_NAME);
        std::fs::write(&path, b"left over by an earlier run").expect("write");
        let mut store = DiskStore::create(dir.path()).expect("create");
        assert_eq!(
            store.get(1).map_err(|e| e.kind()),
            Err(io::ErrorKind::NotFound)
        );
        exercise(&mut store);
        assert!(store.disk_bytes() > 0);
        drop(store);
        assert!(!path.exists());
    }

    #[test]
    fn disk_store_in_a_missing_directory_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert!(DiskStore::create(&dir.path().join("missing")).is_err());
    }
}
