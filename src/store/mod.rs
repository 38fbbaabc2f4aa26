//! Keeping what was crawled: the page store's formats.
//!
//! The WARC 1.1 writer, the mirror layout, the ordered-commit window, and the committer that
//! writes them (and the full-text index) in order; the checkpoint comes next (issue 5). It never decides what is fetched: the engine hands it
//! finished exchanges, in order.

pub mod commit;
pub mod committer;
pub mod mirror;
pub mod warc;
