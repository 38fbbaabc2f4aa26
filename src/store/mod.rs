//! Keeping what was crawled: the page store's formats.
//!
//! Today it holds the WARC 1.1 writer; the mirror layout, the ordered-commit window and the
//! checkpoint join it as issue 5 lands. It never decides what is fetched: the engine hands it
//! finished exchanges, in order.

pub mod warc;
