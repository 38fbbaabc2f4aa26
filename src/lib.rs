//! crawltop: a polite, fast web crawler with a live terminal dashboard.
//!
//! Module map:
//! - [`cli`]: the command line, from arguments to the verbs below.
//! - [`testweb`]: the project's own web (`gen-site`, `serve`): generator, server, request log.
pub mod cli;
pub mod testweb;
