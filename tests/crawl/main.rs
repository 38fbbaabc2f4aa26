//! Integration tests: one binary, one module per area, every web served on 127.0.0.1 with
//! ports chosen by the OS.

// A test reads best as one story from setup to verdict, even when that story is long.
#![allow(clippy::too_many_lines)]
// Names the program itself writes are compared as written.
#![allow(clippy::case_sensitive_file_extension_comparisons)]

mod architecture;
mod cluster;
mod cluster_crawl;
mod cluster_members;
mod cluster_polite;
mod control;
mod crawl_cli;
mod dashboard_pty;
mod engine;
mod engine_boundary;
mod extract;
mod index;
mod parse_pool;
mod quirky;
mod reindex;
mod resume;
mod robots_quirks;
mod robots_warc;
mod server_quirks;
mod sites;
mod store;
mod testweb_cli;
mod testweb_gen;
mod testweb_serve;
mod util;
