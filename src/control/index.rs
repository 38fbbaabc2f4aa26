//! Queries on the crawl's full-text index for both control rooms: `/search`, `/maxcount`,
//! `/mincount`, `/wc` on the HTTP API and `SEARCH`, `MAXCOUNT`, `MINCOUNT`, `WORDCOUNT` on the
//! command port, answered by one function.
//!
//! It owns the reader (opened on the first query, reloaded before each one to see new
//! commits). It must never run a query on an async worker thread: tantivy reads the disk, so
//! every query goes to the blocking pool.

use std::sync::{Arc, PoisonError};

use super::commands::Handlers;
use crate::index::{IndexError, IndexReader};

/// How many pages a search answers with, unless it asks for a `limit` (at most
/// [`MAX_SEARCH_LIMIT`]).
pub(super) const SEARCH_LIMIT: usize = 20;
/// The most pages one search answers with: each hit carries up to
/// [`crate::index::MAX_HIT_LINES`] lines, so an answer stays a few hundred kilobytes.
pub(super) const MAX_SEARCH_LIMIT: usize = 100;

/// A query on the crawl's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IndexQuery {
    Search,
    MaxCount,
    MinCount,
    WordCount,
}

impl IndexQuery {
    /// The query an HTTP path asks for.
    pub(super) fn from_path(path: &str) -> Option<IndexQuery> {
        Some(match path {
            "/search" => IndexQuery::Search,
            "/maxcount" => IndexQuery::MaxCount,
            "/mincount" => IndexQuery::MinCount,
            "/wc" => IndexQuery::WordCount,
            _ => return None,
        })
    }
}

/// Why a query has no answer.
#[derive(Debug, thiserror::Error)]
pub(super) enum QueryError {
    #[error("this crawl keeps no index: start it with --out DIR, without --no-index")]
    NoIndex,
    #[error("the index holds nothing yet")]
    Empty,
    /// The query itself is at fault (syntax, word).
    #[error("{0}")]
    Bad(String),
    #[error("the query failed: {0}")]
    Failed(String),
}

/// Runs one query on the blocking pool. `word` is the search text or the counted word (unused
/// by `WordCount`), `limit` the most pages a search answers with. The answer is the JSON both
/// rooms send: a list of hits for a search, a count (or null) for max/min, the totals for a
/// word count.
pub(super) async fn run(
    handlers: &Arc<Handlers>,
    query: IndexQuery,
    word: String,
    limit: usize,
) -> Result<serde_json::Value, QueryError> {
    let Some(dir) = handlers.index.clone() else {
        return Err(QueryError::NoIndex);
    };
    let handlers = handlers.clone();
    let answer = tokio::task::spawn_blocking(move || -> Result<serde_json::Value, IndexError> {
        let reader = {
            let mut slot = handlers
                .reader
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(r) = slot.as_ref() {
                r.clone()
            } else {
                let r = Arc::new(IndexReader::open(&dir)?);
                *slot = Some(r.clone());
                r
            }
        };
        reader.reload()?;
        Ok(match query {
            IndexQuery::Search => serde_json::to_value(reader.search(&word, limit)?),
            IndexQuery::MaxCount => serde_json::to_value(reader.max_count(&word)?),
            IndexQuery::MinCount => serde_json::to_value(reader.min_count(&word)?),
            IndexQuery::WordCount => serde_json::to_value(reader.word_count()?),
        }
        .unwrap_or(serde_json::Value::Null))
    })
    .await;
    match answer {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(IndexError::NoIndex(_))) => Err(QueryError::Empty),
        Ok(Err(e)) => Err(QueryError::Bad(e.to_string())),
        Err(e) => Err(QueryError::Failed(e.to_string())),
    }
}
