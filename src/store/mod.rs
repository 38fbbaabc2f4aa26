//! Keeping what was crawled: the page store's formats.
//!
//! Today it holds the WARC 1.1 writer, the mirror layout and the ordered-commit window; the
//! checkpoint and the wiring into the engine come next (issue 5). It never decides what is fetched: the engine hands it
//! finished exchanges, in order.

pub mod commit;
pub mod committer;
pub mod mirror;
pub mod warc;
