//! crawltop: a polite, fast web crawler with a live terminal dashboard.
//!
//! Module map:
//! - [`allocator`]: glibc malloc's two settings, made for a crawl that writes an index.
//! - [`cli`]: the command line, from arguments to the verbs below.
//! - [`canonical`]: the one normal form of a URL that the seen set and every comparison use.
//! - [`parse`]: HTML body and base URL to links, title and text (pure).
//! - [`scope`]: what the crawl may touch, and the spider-trap rules.
//! - [`frontier`]: the Mercator frontier: which URL next, and when each site may be contacted.
//! - [`robots`]: robots.txt per site: state, rules, crawl delay.
//! - [`backoff`]: server pushback timing: exponential backoff and `Retry-After`.
//! - [`cluster`]: a Redis Cluster on loopback (`cluster-up`, `cluster-down`), for the cluster
//!   mode.
//! - [`config`]: the crawl's settings and their defaults.
//! - [`control`]: the HTTP control API and the command port on loopback, observers of the
//!   engine's handle; `crawltop ctl` is the API's client.
//! - [`dashboard`]: the live terminal face: snapshots in, commands out.
//! - [`extract`]: `--extract NAME=CSS` fields from HTML pages (scraper, size-capped).
//! - [`engine`]: the crawl itself, behind a handle: snapshots out, commands in.
//! - [`fetch`]: the HTTP edge: one GET, one outcome.
//! - [`headless`]: progress lines and the summary when there is no dashboard.
//! - [`hangup`]: what the process does when its terminal goes away (SIGHUP).
//! - [`index`]: the full-text index of committed pages (tantivy) and its queries.
//! - [`reindex`]: `crawltop index DIR`: a crawl folder's index built again from its WARC files.
//! - [`signals`]: the stop signals, registered before anything starts and read by every face.
//! - [`site_table`]: the live per-site table the engine writes and observers read in place.
//! - [`snapshot`]: the published state of a crawl, and the stats file's schema.
//! - [`store`]: keeping what was crawled (WARC today).
//! - [`testweb`]: the project's own web (`gen-site`, `serve`): generator, server, request log.
/// `eprintln!` that never panics: a line for stderr, dropped if it cannot be written (a pipe
/// whose reader left, `crawl ... 2>&1 | head`; a terminal gone). `eprintln!` panics there, and
/// a panic in the task that prints "stopping" or a progress line left a crawl that SIGTERM could
/// not stop; a crawl must stop and keep its state whatever became of its stderr.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod allocator;
pub mod backoff;
pub mod canonical;
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod control;
pub mod dashboard;
pub mod engine;
pub mod extract;
pub mod fetch;
pub mod frontier;
pub mod hangup;
pub mod headless;
pub mod index;
pub mod parse;
pub mod reindex;
pub mod robots;
pub mod scope;
pub mod signals;
pub mod site_table;
pub mod snapshot;
pub mod store;
pub mod testweb;
