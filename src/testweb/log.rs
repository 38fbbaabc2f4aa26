//! The server's record of every request it served, and the counters behind `STATS`.
//!
//! This is how tests judge a crawler from the outside, as a site owner would: arrival times,
//! concurrency per site, paths asked for. It owns the records and the optional JSON-lines file;
//! it never decides what to answer.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError, mpsc};
use std::thread::JoinHandle;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// One served request. Written when the response is over: its body sent, or the client gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Arrival, in microseconds since the server started (monotonic clock).
    pub t_us: u64,
    /// When the response ended (last byte written or the client gone), same clock.
    pub done_us: u64,
    /// The site folder's name, e.g. `site03`.
    pub site: String,
    pub method: String,
    /// Path and query exactly as the client sent them.
    pub path: String,
    /// The status sent; 499 when the client went away before a response was ready.
    pub status: u16,
    /// Body bytes written to the client.
    pub bytes: u64,
    /// Whether the whole body was written (false: the client went away, or shutdown cut it).
    pub complete: bool,
    pub user_agent: Option<String>,
    /// Connection number, unique in this server: equal numbers mean one keep-alive connection.
    pub conn: u64,
    /// Requests in flight on this site when this one arrived, counting itself.
    pub in_flight: u32,
}

/// Counters for `STATS`: kept even when records are not.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerStats {
    pub uptime_s: f64,
    pub requests: u64,
    pub bytes: u64,
    pub by_status: BTreeMap<String, u64>,
    pub sites: BTreeMap<String, SiteStats>,
}

/// `STATS` for one site.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SiteStats {
    pub requests: u64,
    pub bytes: u64,
    pub by_status: BTreeMap<String, u64>,
}

/// The request log: records in memory (for in-process tests), counters, and a JSON-lines file.
#[derive(Debug)]
pub struct RequestLog {
    started: Instant,
    keep_records: bool,
    inner: Mutex<Inner>,
    count: watch::Sender<u64>,
    /// Requests that arrived (logged or not yet): lets a test wait for a request in flight.
    arrived: watch::Sender<u64>,
    writer: Mutex<Option<(mpsc::Sender<String>, JoinHandle<()>)>>,
}

#[derive(Debug, Default)]
struct Inner {
    records: Vec<RequestRecord>,
    stats: ServerStats,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain counters behind; they stay usable.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl RequestLog {
    /// A log that keeps records in memory when `keep_records` (tests) and writes JSON lines to
    /// `file` when given (the command line's `--log FILE`).
    pub fn new(keep_records: bool, file: Option<&Path>) -> std::io::Result<RequestLog> {
        let writer = match file {
            Some(path) => {
                let file = std::fs::File::create(path)?;
                let (tx, rx) = mpsc::channel::<String>();
                let handle = std::thread::Builder::new()
                    .name("testweb-log".into())
                    .spawn(move || write_lines(file, &rx))?;
                Some((tx, handle))
            }
            None => None,
        };
        Ok(RequestLog {
            started: Instant::now(),
            keep_records,
            inner: Mutex::new(Inner::default()),
            count: watch::Sender::new(0),
            arrived: watch::Sender::new(0),
            writer: Mutex::new(writer),
        })
    }

    /// Microseconds since the server started.
    pub fn now_us(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    pub(crate) fn push(&self, record: RequestRecord) {
        if let Some((tx, _)) = lock(&self.writer).as_ref()
            && let Ok(line) = serde_json::to_string(&record)
        {
            // The writer thread only stops after `close`, so a send error means we are closing.
            let _ = tx.send(line);
        }
        let n = {
            let mut inner = lock(&self.inner);
            let stats = &mut inner.stats;
            let status = record.status.to_string();
            stats.requests += 1;
            stats.bytes += record.bytes;
            *stats.by_status.entry(status.clone()).or_default() += 1;
            let site = stats.sites.entry(record.site.clone()).or_default();
            site.requests += 1;
            site.bytes += record.bytes;
            *site.by_status.entry(status).or_default() += 1;
            if self.keep_records {
                inner.records.push(record);
            }
            inner.stats.requests
        };
        self.count.send_replace(n);
    }

    pub(crate) fn note_arrival(&self) {
        self.arrived.send_modify(|n| *n += 1);
    }

    /// How many requests have arrived, answered or not.
    pub fn arrivals(&self) -> u64 {
        *self.arrived.borrow()
    }

    /// Waits until `n` requests have arrived (a request is logged only when its response ends;
    /// this sees it at once). Wrap it in a timeout.
    pub async fn wait_arrivals(&self, n: u64) {
        let mut rx = self.arrived.subscribe();
        let _ = rx.wait_for(|a| *a >= n).await;
    }

    /// A copy of every record so far, in the order responses ended.
    pub fn records(&self) -> Vec<RequestRecord> {
        lock(&self.inner).records.clone()
    }

    /// Records of one site, sorted by arrival.
    pub fn site_records(&self, site: &str) -> Vec<RequestRecord> {
        let mut recs: Vec<RequestRecord> = lock(&self.inner)
            .records
            .iter()
            .filter(|r| r.site == site)
            .cloned()
            .collect();
        recs.sort_by_key(|r| r.t_us);
        recs
    }

    /// Records of requests that arrived after `after_us`, in arrival order: what a paused
    /// crawler must not have sent.
    pub fn records_after(&self, after_us: u64) -> Vec<RequestRecord> {
        let mut recs: Vec<RequestRecord> = lock(&self.inner)
            .records
            .iter()
            .filter(|r| r.t_us > after_us)
            .cloned()
            .collect();
        recs.sort_by_key(|r| r.t_us);
        recs
    }

    /// The gaps, in microseconds, between consecutive arrivals at `site` whose first request
    /// arrived after `after_us`: what a site owner reads politeness from.
    pub fn gaps_after(&self, site: &str, after_us: u64) -> Vec<u64> {
        self.site_records(site)
            .windows(2)
            .filter(|pair| pair[0].t_us > after_us)
            .map(|pair| pair[1].t_us - pair[0].t_us)
            .collect()
    }

    /// How many requests were logged.
    pub fn len(&self) -> u64 {
        *self.count.borrow()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The counters, with the uptime filled in.
    pub fn stats(&self) -> ServerStats {
        let mut stats = lock(&self.inner).stats.clone();
        stats.uptime_s = self.started.elapsed().as_secs_f64();
        stats
    }

    /// Waits until `done` holds for the records: tests wait on this event, never on sleeps.
    /// Wrap it in a timeout.
    pub async fn wait_until(&self, mut done: impl FnMut(&[RequestRecord]) -> bool) {
        let mut rx = self.count.subscribe();
        loop {
            if done(&lock(&self.inner).records) {
                return;
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Flushes and closes the JSON-lines file; later records are kept in memory only.
    pub fn close(&self) {
        let writer = lock(&self.writer).take();
        if let Some((tx, handle)) = writer {
            drop(tx);
            // The thread ends once the channel is drained; a panic there already lost lines.
            let _ = handle.join();
        }
    }
}

fn write_lines(file: std::fs::File, rx: &mpsc::Receiver<String>) {
    let mut out = std::io::BufWriter::new(file);
    while let Ok(line) = rx.recv() {
        let mut ok = writeln!(out, "{line}").is_ok();
        // Write what is queued, then flush, so a reader sees lines promptly under light load.
        while let Ok(line) = rx.try_recv() {
            ok &= writeln!(out, "{line}").is_ok();
        }
        if !(ok && out.flush().is_ok()) {
            tracing::warn!("request log: write failed; later lines may be missing");
        }
    }
    let _ = out.flush();
}
