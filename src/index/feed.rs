//! The index thread: committed pages go to the full-text index on a thread of their own, in
//! commit order, in batches over a bounded channel, so the committer (WARC, mirror, checkpoint)
//! waits for indexing only at a checkpoint, where the index must be durable up to the mark
//! before the mark is written.
//!
//! It owns the crawl's [`IndexWriter`] for the crawl's life. It must never reorder pages, skip
//! or cut one silently (a page cut at [`super::MAX_DISTINCT_WORDS`] is a warning in the crawl's
//! log, naming its URL, and goes to [`Cuts`]: counted for the stats, and reported so that the
//! engine can write the reason on the URL's record) or decide what is committed. An index error ends the thread; the committer
//! learns it at its next hand-over or checkpoint (the error, not a hang) and stops, which
//! pauses the crawl with the message.
//!
//! What waits where, and so what memory is bounded by: pages gather in the committer's batch
//! (at most [`BATCH_PAGES`] pages or [`BATCH_BYTES`] bytes), then at most [`BATCHES_QUEUED`]
//! batches wait in the channel (the committer blocks past that: the index sets the pace, as the
//! store's backlog does), then the writer's own bound on pages waiting inside tantivy
//! ([`super::IN_FLIGHT_BYTES`]), then tantivy's arena (`--index-memory-mb`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use super::{Added, Cut, IndexError, IndexWriter, OwnedPage};

/// Pages a batch holds at most before it is handed over.
pub const BATCH_PAGES: usize = 64;

/// Text a batch holds at most (one larger page still makes a batch of its own).
pub const BATCH_BYTES: usize = 1 << 20;

/// Batches waiting for the index thread before the committer waits too. One is enough: on the
/// 20 x 500 web with `--out`, 1 instead of 4 (with [`super::IN_FLIGHT_BYTES`] 1 instead of 4 MiB)
/// took about 12 MB off the crawl's peak RSS at the same pages a second (README, the eleventh
/// session): the index sets the pace, and more waiting pages only wait longer.
pub const BATCHES_QUEUED: usize = 1;

/// A page the index cut: its place in the commit order, its URL, what was kept.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CutPage {
    pub seq: u64,
    pub url: String,
    pub cut: Cut,
}

/// The pages the index thread cut, as it cuts them: a count for the crawl's stats, the URLs
/// not yet taken by whoever writes the URLs' records, and the pages not yet written with a
/// mark. Shared with the thread; read from any thread.
#[derive(Debug, Default)]
pub struct Cuts {
    count: AtomicU64,
    /// Reported and not taken yet; the engine takes them every snapshot tick, so this holds a
    /// tick's worth (each entry stands for a page of more than 200,000 bytes of text).
    untaken: Mutex<Vec<(String, Cut)>>,
    /// Not yet in a checkpoint; the committer takes them once the index is durable up to the
    /// mark, so the mark's state lists them even when no row it holds says so yet.
    unmarked: Mutex<Vec<CutPage>>,
}

impl Cuts {
    /// A count going on from `count` (a resume: the pages cut below its mark).
    pub fn starting_at(count: u64) -> Cuts {
        Cuts {
            count: AtomicU64::new(count),
            ..Cuts::default()
        }
    }

    /// Pages cut so far, the earlier runs' included.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Acquire)
    }

    /// The URLs cut since the last call, in commit order, with how much of each was kept.
    pub fn take(&self) -> Vec<(String, Cut)> {
        std::mem::take(&mut *self.untaken.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The pages cut since the last call, in commit order: every one of them is below the
    /// next mark when the index has committed (the committer hands pages over in order).
    pub fn take_unmarked(&self) -> Vec<CutPage> {
        std::mem::take(&mut *self.unmarked.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn record(&self, seq: u64, url: &str, cut: Cut) {
        self.untaken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((url.to_owned(), cut));
        self.unmarked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(CutPage {
                seq,
                url: url.to_owned(),
                cut,
            });
        self.count.fetch_add(1, Ordering::AcqRel);
    }
}

enum Message {
    Pages(Vec<OwnedPage>),
    /// Everything sent before this is committed when the answer comes: the pages the index
    /// holds then.
    Commit(SyncSender<u64>),
}

/// The committer's end of the index thread.
pub struct IndexFeed {
    tx: Option<SyncSender<Message>>,
    thread: Option<JoinHandle<Result<(), IndexError>>>,
    batch: Vec<OwnedPage>,
    batch_bytes: usize,
}

impl IndexFeed {
    /// Starts the thread, which owns `writer` from now on. With `fail_after` set (tests only),
    /// the thread fails instead of adding its page number `fail_after + 1`.
    pub fn start(writer: IndexWriter, fail_after: Option<u64>) -> Result<IndexFeed, IndexError> {
        Self::start_counting(writer, fail_after, Arc::default())
    }

    /// [`IndexFeed::start`], the pages it cuts going to `cuts`.
    pub fn start_counting(
        writer: IndexWriter,
        fail_after: Option<u64>,
        cuts: Arc<Cuts>,
    ) -> Result<IndexFeed, IndexError> {
        let (tx, rx) = sync_channel(BATCHES_QUEUED);
        let thread = std::thread::Builder::new()
            .name("crawltop-index".into())
            .spawn(move || run(writer, &rx, fail_after, &cuts))
            .map_err(|source| IndexError::Thread(source.to_string()))?;
        Ok(IndexFeed {
            tx: Some(tx),
            thread: Some(thread),
            batch: Vec::with_capacity(BATCH_PAGES),
            batch_bytes: 0,
        })
    }

    /// Queues a page after every page queued before it; hands the batch over when it is full
    /// (blocking while [`BATCHES_QUEUED`] batches wait). An error means the thread has ended on
    /// an index error, which this returns.
    pub fn add(&mut self, page: OwnedPage) -> Result<(), IndexError> {
        self.batch_bytes += page.text.len() + page.title.len() + page.url.len();
        self.batch.push(page);
        if self.batch.len() >= BATCH_PAGES || self.batch_bytes >= BATCH_BYTES {
            self.hand_over()?;
        }
        Ok(())
    }

    /// Makes every page queued so far durable and searchable; returns when it is, with the
    /// pages the index holds then.
    pub fn commit(&mut self) -> Result<u64, IndexError> {
        self.hand_over()?;
        let (done_tx, done_rx) = sync_channel(1);
        self.send(Message::Commit(done_tx))?;
        match done_rx.recv() {
            Ok(pages) => Ok(pages),
            Err(_) => Err(self.ended()),
        }
    }

    /// Commits what is queued, waits for the thread and its merges, releases the index.
    pub fn finish(mut self) -> Result<(), IndexError> {
        self.commit()?;
        drop(self.tx.take());
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(IndexError::Thread("the index thread panicked".into())),
            None => Ok(()),
        }
    }

    fn hand_over(&mut self) -> Result<(), IndexError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH_PAGES));
        self.batch_bytes = 0;
        self.send(Message::Pages(batch))
    }

    fn send(&mut self, message: Message) -> Result<(), IndexError> {
        match &self.tx {
            Some(tx) if tx.send(message).is_ok() => Ok(()),
            _ => Err(self.ended()),
        }
    }

    /// The thread has stopped taking messages: its error, once it has ended.
    fn ended(&mut self) -> IndexError {
        drop(self.tx.take());
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(Err(err))) => err,
            Some(Err(_)) => IndexError::Thread("the index thread panicked".into()),
            Some(Ok(Ok(()))) | None => IndexError::Thread("the index thread has ended".into()),
        }
    }
}

impl Drop for IndexFeed {
    /// Without `finish` (the committer ended on another error): what was not committed is
    /// dropped, as a crash would drop it, and the writer's lock is released before this returns.
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(
    mut writer: IndexWriter,
    rx: &Receiver<Message>,
    fail_after: Option<u64>,
    cuts: &Cuts,
) -> Result<(), IndexError> {
    let mut added = 0u64;
    while let Ok(message) = rx.recv() {
        match message {
            Message::Pages(pages) => {
                for page in pages {
                    if fail_after.is_some_and(|n| added >= n) {
                        return Err(IndexError::Io {
                            path: "(injected)".into(),
                            error: std::io::Error::new(
                                std::io::ErrorKind::StorageFull,
                                format!("{FAIL_AFTER_ENV} is set: failing on purpose"),
                            ),
                        });
                    }
                    if let Added::Cut(cut) = writer.add(&page.as_indexed())? {
                        // The crawl's log (`--log`); the page is indexed, only less of it.
                        tracing::warn!("{}: {cut}", page.url);
                        cuts.record(page.seq, &page.url, cut);
                    }
                    added += 1;
                }
            }
            Message::Commit(done) => {
                writer.commit()?;
                // The committer waits on the answer; if it has gone, nobody needs it.
                let _ = done.send(writer.pages());
            }
        }
    }
    writer.close()
}

/// Set in the environment to N, the index thread fails after N pages: how the tests prove that
/// an index error pauses the crawl with its message (the store's own is
/// `store::committer::FAIL_AFTER_ENV`).
pub const FAIL_AFTER_ENV: &str = "CRAWLTOP_TEST_INDEX_FAIL_AFTER";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexReader;

    fn page(seq: u64) -> OwnedPage {
        OwnedPage {
            seq,
            url: format!("http://127.0.0.1:8000/p/{seq}"),
            title: format!("page {seq}"),
            text: format!(
                "rabbit number {seq}\nwhite rabbit {}",
                "hole ".repeat(seq as usize % 7)
            ),
            committed_ms: 1_700_000_000_000 + seq,
        }
    }

    #[test]
    fn every_page_handed_over_is_searchable_once_commit_returns() {
        let dir = tempfile::tempdir().expect("tempdir");
        let writer = IndexWriter::open(dir.path()).expect("writer");
        let mut feed = IndexFeed::start(writer, None).expect("feed");
        // Not a whole number of batches: the last, partial one must be handed over by commit.
        let count = BATCH_PAGES as u64 * 3 + 5;
        for seq in 1..=count {
            feed.add(page(seq)).expect("add");
        }
        feed.commit().expect("commit");
        // Read while the thread and its writer still run: what commit promised is there.
        let reader = IndexReader::open(dir.path()).expect("reader");
        let wc = reader.word_count().expect("wc");
        assert_eq!(wc.pages, count);
        let want: u64 = (1..=count)
            .map(|s| crate::index::count_words(&page(s).text, crate::index::Words::NEWEST))
            .sum();
        assert_eq!(wc.words, want);
        let most = reader.max_count("hole").expect("max").expect("hole occurs");
        assert_eq!((most.seq, most.count), (6, 6));
        feed.finish().expect("finish");
    }

    #[test]
    fn pages_handed_over_after_the_last_commit_are_lost_in_a_crash_and_taken_again() {
        // The window the thread opens: pages batched and sent (even indexed by tantivy), the
        // process killed before the checkpoint's commit. The index then holds what the last
        // commit held, and a resume re-feeding from the mark adds the rest once.
        let dir = tempfile::tempdir().expect("tempdir");
        let mut feed =
            IndexFeed::start(IndexWriter::open(dir.path()).expect("writer"), None).expect("feed");
        for seq in 1..=100 {
            feed.add(page(seq)).expect("add");
        }
        feed.commit().expect("commit");
        for seq in 101..=300 {
            feed.add(page(seq)).expect("add");
        }
        drop(feed); // a kill: no commit after page 100
        let mut writer = IndexWriter::open(dir.path()).expect("reopen");
        assert_eq!(writer.highest_seq(), Some(100));
        let mut feed = IndexFeed::start(
            {
                writer.rollback_from(101).expect("rollback");
                writer
            },
            None,
        )
        .expect("feed");
        for seq in 1..=300 {
            feed.add(page(seq)).expect("add");
        }
        feed.finish().expect("finish");
        let reader = IndexReader::open(dir.path()).expect("reader");
        assert_eq!(reader.word_count().expect("wc").pages, 300);
        let hits = reader.search("\"number 150\"", 10).expect("search");
        assert_eq!(hits.iter().map(|h| h.seq).collect::<Vec<_>>(), vec![150]);
    }

    #[test]
    fn an_index_error_comes_back_to_the_committer_and_nothing_hangs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let writer = IndexWriter::open(dir.path()).expect("writer");
        let mut feed = IndexFeed::start(writer, Some(10)).expect("feed");
        // The thread fails on page 11; the error surfaces at a later hand-over or at the
        // commit, whichever comes first, never as a hang.
        let mut first_error = None;
        for seq in 1..=(BATCH_PAGES as u64 * (BATCHES_QUEUED as u64 + 4)) {
            if let Err(err) = feed.add(page(seq)) {
                first_error = Some(err);
                break;
            }
        }
        let err = match first_error {
            Some(err) => err,
            None => feed.commit().expect_err("the commit reports it"),
        };
        assert!(err.to_string().contains("failing on purpose"), "{err}");
        // Once ended, it stays ended, with a message rather than a panic.
        let again = feed.commit().expect_err("still ended");
        assert!(again.to_string().contains("index thread"), "{again}");
    }
}
