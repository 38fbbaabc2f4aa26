//! How a query opens a crawl folder's index: tantivy's own directory with every write refused,
//! so that `search`, `maxcount`, `mincount` and `wc` (and the dashboard's and the control API's
//! readers) work on a folder they may not write: an archive, a read-only mount, another user's
//! crawl.
//!
//! tantivy's reader writes one thing. Before it opens the segments `meta.json` lists, it takes
//! the meta lock (`.tantivy-meta.lock`, created if missing, locked exclusively), because a
//! writer's garbage collection takes the same lock before it deletes the files no commit needs
//! any more: without it, a segment could be deleted between the reader's reading `meta.json` and
//! its opening the segment's files (tantivy's `reader/mod.rs`, `open_segment_readers`, and
//! `directory/managed_directory.rs`, `garbage_collect`). That interlock matters while a crawl
//! writes the folder, so it is kept: [`ReadOnlyDirectory`] takes the same lock (an `flock`, as
//! tantivy's is) through a descriptor opened for reading only, and shared, since readers need
//! to keep out the collector, not each other. A folder without the lock file has no collector to
//! keep out: the crawl's writer makes the file when it opens, before its first commit
//! ([`super::IndexWriter::open`]; a writer of an older crawltop made it at its first commit's
//! collection), so the reader goes on without a lock and still writes nothing.
//!
//! It never creates, writes or deletes a file: tantivy asks for none of that when it reads, and
//! if it did, the request is refused with the reason rather than done.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};

/// The index folder `root` as tantivy's [`MmapDirectory`] reads it, writing nothing.
#[derive(Debug, Clone)]
pub struct ReadOnlyDirectory {
    inner: MmapDirectory,
    root: PathBuf,
}

impl ReadOnlyDirectory {
    pub fn new(inner: MmapDirectory, root: &Path) -> ReadOnlyDirectory {
        ReadOnlyDirectory {
            inner,
            root: root.to_path_buf(),
        }
    }
}

fn refused() -> io::Error {
    io::Error::other("a query opens the index for reading only")
}

impl Directory for ReadOnlyDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        Err(DeleteError::IoError {
            io_error: Arc::new(refused()),
            filepath: path.to_path_buf(),
        })
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        Err(OpenWriteError::wrap_io_error(refused(), path.to_path_buf()))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, _path: &Path, _data: &[u8]) -> io::Result<()> {
        Err(refused())
    }

    fn sync_directory(&self) -> io::Result<()> {
        // Nothing was written, so there is nothing to make durable.
        Ok(())
    }

    /// The lock tantivy asks for, shared, on its file opened for reading; no lock when the file
    /// does not exist (see the module's comment).
    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        let file = match File::open(self.root.join(&lock.filepath)) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(DirectoryLock::from(Box::new(())));
            }
            Err(e) => return Err(LockError::wrap_io_error(e)),
        };
        if lock.is_blocking {
            file.lock_shared().map_err(LockError::wrap_io_error)?;
        } else {
            match file.try_lock_shared() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => return Err(LockError::LockBusy),
                Err(std::fs::TryLockError::Error(e)) => return Err(LockError::wrap_io_error(e)),
            }
        }
        // Closing the file releases the lock.
        Ok(DirectoryLock::from(Box::new(file)))
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        // Watching reads `meta.json` only.
        self.inner.watch(watch_callback)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use crate::index::{IndexReader, IndexWriter, IndexedPage};

    /// The interlock the module keeps: while a writer's garbage collection holds the meta lock
    /// (exclusively, as tantivy takes it), a query does not open the segments; it opens them as
    /// soon as the lock is let go. The wait is bounded here by a timeout, so a broken interlock
    /// can only pass unnoticed on a machine slower than the bound, never fail a sound one.
    #[test]
    fn a_query_opens_the_segments_only_while_no_collection_holds_the_meta_lock() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = IndexWriter::open(dir.path()).expect("writer");
        let page = IndexedPage {
            seq: 0,
            url: "http://127.0.0.1:1/",
            title: "a page",
            text: "white rabbit",
            committed_ms: 0,
        };
        assert!(writer.add(&page).expect("add").is_added());
        writer.commit().expect("commit");
        writer.close().expect("close");

        let collection = std::fs::File::options()
            .write(true)
            .open(dir.path().join(".tantivy-meta.lock"))
            .expect("the writer made the lock file");
        collection.lock().expect("the collection's lock");
        let (tx, rx) = mpsc::channel();
        let path = dir.path().to_path_buf();
        let query = std::thread::spawn(move || {
            let pages = IndexReader::open(&path).map(|r| r.pages());
            tx.send(pages).expect("send");
        });
        assert!(
            matches!(
                rx.recv_timeout(Duration::from_millis(300)),
                Err(mpsc::RecvTimeoutError::Timeout)
            ),
            "the query opened the segments while the collection held the lock"
        );
        collection.unlock().expect("unlock");
        let pages = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the query goes on once the lock is free");
        assert_eq!(pages.expect("opens"), 1);
        query.join().expect("joined");
    }
}
