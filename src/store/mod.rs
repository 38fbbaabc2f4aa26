//! Keeping what was crawled: the page store's formats.
//!
//! The WARC 1.1 writer and its reader, the mirror layout, the ordered-commit window, the committer that
//! writes them (and the full-text index) in order, and the checkpoint it keeps beside them (read
//! without writing it through `unwritten`). It never decides what is fetched: the engine hands it
//! finished exchanges, in order.

pub mod checkpoint;
pub mod commit;
pub mod committer;
pub mod mirror;
pub mod unwritten;
pub mod warc;
pub mod warc_reader;
