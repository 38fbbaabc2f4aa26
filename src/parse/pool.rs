//! The parse pool: a fixed number of OS threads that parse fetched pages (and run `--extract`
//! on them), fed by a bounded queue.
//!
//! Why it exists: parsing is CPU work. On tokio's blocking pool every worker holding a page got
//! a thread of its own, and a crawl of small pages ran about 110 threads, each with its stack
//! and (in glibc) its own malloc arena. Here the threads are as many as `--parse-threads` (the
//! machine's cores by default), and at most `threads + queue` jobs are accepted at once: a
//! worker whose job finds no room waits (the engine shows it blocked by `parse`), so fetched
//! bodies cannot pile up faster than they are parsed.
//!
//! It owns its threads and its queue, and nothing else. It must never know what a job does
//! (the engine hands it closures), never lose a job's answer (a job that panics answers with
//! the panic's message and its thread takes the next job), and never outlive its owner:
//! [`ParsePool::shutdown`] (also run on drop) closes the queue, lets the threads finish what
//! they hold and joins every one of them. A job whose submitter stopped waiting (a fetch cut as
//! overdue, a crawl stopped) is dropped unrun when a thread reaches it.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError, oneshot};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Why a job gave no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// The job panicked; the message is the panic's.
    #[error("parser failed: {0}")]
    Panicked(String),
    /// The pool was shut down before the job ran.
    #[error("parser failed: the parse pool is shut down")]
    Closed,
}

/// A fixed set of threads taking jobs from a bounded queue.
#[derive(Debug)]
pub struct ParsePool {
    /// The queue's sending end; `None` once shut down.
    queue: Mutex<Option<mpsc::Sender<Job>>>,
    /// One permit per job accepted and not yet finished: `threads + queue` in all.
    room: Arc<Semaphore>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Threads running now (started, not yet ended).
    live: Arc<AtomicUsize>,
    size: usize,
}

/// A job accepted by the pool: its answer, once a thread has run it.
#[derive(Debug)]
pub struct Pending<R>(oneshot::Receiver<Result<R, PoolError>>);

impl<R> Pending<R> {
    pub async fn result(self) -> Result<R, PoolError> {
        self.0.await.unwrap_or(Err(PoolError::Closed))
    }
}

impl ParsePool {
    /// Starts `threads` threads (at least one) and room for `queue` jobs waiting beside the
    /// ones being run.
    pub fn new(threads: usize, queue: usize) -> std::io::Result<ParsePool> {
        let threads = threads.max(1);
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        let live = Arc::new(AtomicUsize::new(0));
        let mut handles = Vec::with_capacity(threads);
        for i in 0..threads {
            let rx = rx.clone();
            let counter = live.clone();
            live.fetch_add(1, Ordering::SeqCst);
            let spawned = std::thread::Builder::new()
                .name(format!("crawltop-parse-{i}"))
                .spawn(move || work(&rx, &counter));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    live.fetch_sub(1, Ordering::SeqCst);
                    // The threads already started end when the queue closes.
                    drop(tx);
                    for h in handles {
                        let _ = h.join();
                    }
                    return Err(e);
                }
            }
        }
        Ok(ParsePool {
            queue: Mutex::new(Some(tx)),
            room: Arc::new(Semaphore::new(threads + queue)),
            threads: Mutex::new(handles),
            live,
            size: threads,
        })
    }

    /// How many threads the pool was started with.
    pub fn threads(&self) -> usize {
        self.size
    }

    /// How many of its threads run now: `threads()` while the pool is up, 0 after shutdown.
    pub fn live_threads(&self) -> usize {
        self.live.load(Ordering::SeqCst)
    }

    /// Whether a job would be accepted now without waiting.
    pub fn has_room(&self) -> bool {
        self.room.available_permits() > 0
    }

    /// Queues `job`, waiting while the pool is full.
    pub async fn submit<R, F>(&self, job: F) -> Pending<R>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        match self.room.clone().acquire_owned().await {
            Ok(permit) => self.enqueue(permit, job),
            Err(_) => closed(),
        }
    }

    /// Queues `job` if there is room now; gives it back otherwise.
    pub fn try_submit<R, F>(&self, job: F) -> Result<Pending<R>, F>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        match self.room.clone().try_acquire_owned() {
            Ok(permit) => Ok(self.enqueue(permit, job)),
            Err(TryAcquireError::NoPermits) => Err(job),
            Err(TryAcquireError::Closed) => Ok(closed()),
        }
    }

    fn enqueue<R, F>(&self, permit: OwnedSemaphorePermit, job: F) -> Pending<R>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let wrapped: Job = Box::new(move || {
            // The room is given back when the job ends, however it ends.
            let _permit = permit;
            if tx.is_closed() {
                return;
            }
            let result = catch_unwind(AssertUnwindSafe(job))
                .map_err(|panic| PoolError::Panicked(panic_message(&*panic)));
            let _ = tx.send(result);
        });
        let queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(q) = queue.as_ref() {
            // A send fails only when every thread is gone: the job (and its answer's sender)
            // is dropped, and `Pending` answers `Closed`.
            let _ = q.send(wrapped);
        }
        Pending(rx)
    }

    /// Closes the queue, lets the threads finish the jobs they hold (dropping those nobody
    /// waits for) and joins them. Idempotent.
    pub fn shutdown(&self) {
        self.room.close();
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let handles =
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        for h in handles {
            // A thread never panics (jobs are caught); a join error leaves nothing to undo.
            let _ = h.join();
        }
    }
}

impl Drop for ParsePool {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn closed<R>() -> Pending<R> {
    let (tx, rx) = oneshot::channel();
    let _ = tx.send(Err(PoolError::Closed));
    Pending(rx)
}

/// One pool thread: takes jobs until the queue is closed and empty.
fn work(rx: &Mutex<mpsc::Receiver<Job>>, live: &AtomicUsize) {
    struct Ends<'a>(&'a AtomicUsize);
    impl Drop for Ends<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
    let _ends = Ends(live);
    loop {
        // The lock is held only while waiting for the next job, never while running one.
        let next = rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
        match next {
            Ok(job) => job(),
            Err(mpsc::RecvError) => return,
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job that runs until its gate opens, and says when it started.
    fn gated(
        started: &mpsc::Sender<usize>,
        i: usize,
    ) -> (impl FnOnce() -> usize + Send + use<>, mpsc::Sender<()>) {
        let (open, gate) = mpsc::channel::<()>();
        let started = started.clone();
        let job = move || {
            let _ = started.send(i);
            let _ = gate.recv();
            i
        };
        (job, open)
    }

    #[tokio::test]
    async fn threads_plus_queue_jobs_are_accepted_and_the_next_waits_for_room() {
        let (threads, queue) = (2, 3);
        let pool = ParsePool::new(threads, queue).expect("pool");
        let (started_tx, started) = mpsc::channel();
        let mut gates = Vec::new();
        let mut pending = Vec::new();
        for i in 0..threads + queue {
            let (job, gate) = gated(&started_tx, i);
            pending.push(
                pool.try_submit(job)
                    .unwrap_or_else(|_| panic!("job {i} accepted")),
            );
            gates.push(gate);
        }
        // Both threads are busy (each job says so when it starts), the queue holds the rest.
        let mut running = vec![
            started.recv().expect("one starts"),
            started.recv().expect("two"),
        ];
        running.sort_unstable();
        assert_eq!(running, [0, 1]);
        assert!(!pool.has_room());
        let (job, gate) = gated(&started_tx, 99);
        let Err(job) = pool.try_submit(job) else {
            panic!("a job beyond threads + queue was accepted")
        };
        // The waiting submitter gets room as soon as one job ends.
        let waiting = tokio::spawn({
            let pool = Arc::new(pool);
            let p = pool.clone();
            async move { (p.submit(job).await.result().await, pool) }
        });
        gates[0].send(()).expect("open");
        assert_eq!(pending.remove(0).result().await, Ok(0));
        gate.send(()).expect("open");
        for g in &gates[1..] {
            g.send(()).expect("open");
        }
        let (last, pool) = waiting.await.expect("submitter");
        assert_eq!(last, Ok(99));
        for (i, p) in pending.into_iter().enumerate() {
            assert_eq!(p.result().await, Ok(i + 1));
        }
        assert_eq!(pool.live_threads(), threads);
        pool.shutdown();
        assert_eq!(pool.live_threads(), 0);
    }

    #[tokio::test]
    async fn a_panicking_job_answers_with_its_message_and_the_pool_keeps_its_threads() {
        let pool = ParsePool::new(2, 1).expect("pool");
        for _ in 0..5 {
            let answer = pool
                .submit(|| -> usize { panic!("bad bytes at 7") })
                .await
                .result()
                .await;
            assert_eq!(answer, Err(PoolError::Panicked("bad bytes at 7".into())));
            assert_eq!(
                answer.expect_err("panicked").to_string(),
                "parser failed: bad bytes at 7"
            );
        }
        assert_eq!(pool.live_threads(), 2);
        assert_eq!(pool.submit(|| 7).await.result().await, Ok(7));
    }

    #[tokio::test]
    async fn shutdown_joins_every_thread_and_later_jobs_answer_closed() {
        let pool = ParsePool::new(3, 3).expect("pool");
        assert_eq!(pool.threads(), 3);
        assert_eq!(pool.live_threads(), 3);
        pool.shutdown();
        assert_eq!(pool.live_threads(), 0);
        assert_eq!(
            pool.submit(|| 1).await.result().await,
            Err(PoolError::Closed)
        );
        pool.shutdown();
        let dropped = ParsePool::new(2, 0).expect("pool");
        let live = dropped.live.clone();
        drop(dropped);
        assert_eq!(live.load(Ordering::SeqCst), 0, "drop joins the threads");
    }

    #[tokio::test]
    async fn a_job_nobody_waits_for_is_not_run() {
        let pool = ParsePool::new(1, 2).expect("pool");
        let (started_tx, started) = mpsc::channel();
        let (job, gate) = gated(&started_tx, 0);
        let first = pool.submit(job).await;
        assert_eq!(started.recv(), Ok(0));
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let abandoned = pool
            .submit(move || {
                r.fetch_add(1, Ordering::SeqCst);
            })
            .await;
        drop(abandoned);
        gate.send(()).expect("open");
        assert_eq!(first.result().await, Ok(0));
        // The queue is first in, first out: once this one has run, the abandoned one was reached.
        assert_eq!(pool.submit(|| 2).await.result().await, Ok(2));
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }
}
