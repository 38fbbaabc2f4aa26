//! The crawl's full-text index: one tantivy index in the crawl folder's `index/`, fed with every
//! committed HTML page in commit (seq) order, and the read side behind `search`, `maxcount`,
//! `mincount` and `wc`.
//!
//! It owns the schema, the tokenization rules and the tie-breaking rules. It must never fetch,
//! parse HTML or decide what is committed: pages arrive already stripped, in seq order, from the
//! committer. It does file I/O (through tantivy, which also runs its own indexing and merge
//! threads) but reads no clock and touches nothing outside the folder it is given. A query
//! ([`IndexReader`]) writes nothing, not even a lock file, so it answers from a folder it may not
//! write ([`read_only`]).
//!
//! Decisions, so that every answer can be checked by a brute-force scan of the stored pages:
//! - Words ([`Words`]): in an index made now, runs of Unicode letters, digits and combining
//!   marks (a mark never starts one) in which invisible format characters (soft hyphen, ZWNJ,
//!   ZWJ, word joiner: default-ignorable code points) neither end the word nor stay in it,
//!   case-folded (`Σ`/`ς` to `σ`, `ß` to `ss`), NFC-normalized, tokens of 40 bytes or more
//!   dropped ([`Words::Folded`]). An index made before those rules keeps its own for its whole
//!   life: tantivy's `default` analyzer's, runs of `char::is_alphanumeric`
//!   ([`Words::Alphanumeric`]), or runs with marks, NFC, lowercased per character
//!   ([`Words::Marks`]). Its schema names its tokenizer, and its queries, counts and a resumed
//!   crawl adding to it follow the name; a reindex makes a new index, with the newest rules.
//!   No stemming and no stop words, so `maxcount run` counts `run`/`RUN`, never `running`. A
//!   "word" in `wc` is such a token, so `wc` and the counts agree.
//! - `wc` covers the page text only (the title is kept apart): bytes are UTF-8 bytes, lines are
//!   `str::lines` (a final line without `\n` counts, an empty text has none).
//! - Ties: `maxcount`/`mincount` pick the lowest seq (the page committed first); `search` orders
//!   by BM25 score, then by lowest seq. Over several crawls' folders ([`Crawls`]) a seq orders
//!   nothing, so each page also carries its commit time (`committed_ms`, a fast field the
//!   committer stamps with its wall clock; the index itself reads no clock): equal scores and
//!   counts go to the earlier commit time, then to the folder named first, then to the lower
//!   seq. An index written before the field existed opens as it is (read and resumed without
//!   it); its pages count as committed after every stamped page.
//! - Resume: the highest seq in the committed index is read back on open; `add` refuses any seq
//!   at or below it, so re-feeding pages from the store never duplicates. Uncommitted pages are
//!   lost in a crash, which is why the committer re-feeds everything above that mark.
//! - One page's share: the index takes a page's text only up to the first word that would be its
//!   [`MAX_DISTINCT_WORDS`]` + 1`-th distinct word (words as above, distinct once lowercased):
//!   the text is cut at that word's first byte, and everything before it stays (repeats and
//!   separators included). A page with at most that many distinct words is whole. `search`,
//!   `maxcount`, `mincount` and `wc` answer for the cut text, and the index thread says so in
//!   the crawl's log. Why: tantivy checks its memory budget between documents, so one
//!   document's terms all go to its arena, whatever `--index-memory-mb` says.
//! - Cost: the text is tokenized once, on tantivy's indexing thread. The exact counts `wc` sums (bytes, lines,
//!   words) come from one scan of the text by the analyzer's rules that makes no token
//!   ([`text_counts`]); `maxcount`/`mincount` read tantivy's own term frequencies. The writer
//!   runs one indexing thread and one merge thread with an explicit budget and merge policy
//!   ([`IndexWriter::open_with_memory`]), and bounds the pages waiting inside tantivy by bytes
//!   ([`IN_FLIGHT_BYTES`]). In a crawl it runs on its own thread, fed in batches ([`feed`]).

pub mod feed;
mod literal;
mod read_only;
mod words;

use std::cmp::Reverse;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use tantivy::collector::TopDocs;
use tantivy::directory::{Directory as _, MmapDirectory};
use tantivy::indexer::{IndexWriterOptions, LogMergePolicy};
use tantivy::postings::Postings;
use tantivy::query::{Query, QueryParser};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TEXT, Value,
};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{
    DocAddress, DocId, DocSet, Document, Index, IndexSettings, ReloadPolicy, Score, Searcher,
    SegmentReader, TERMINATED, TantivyDocument, TantivyError, Term,
};
pub use words::Words;
use words::{
    ASCII_WORD, FOLDED_TOKENIZER, FoldedWordTokenizer, MARKS_TOKENIZER, MAX_WORD_BYTES,
    NfcWordTokenizer, WordTokenizer, distinct_words_cut, folded_word_count, marks_word_count,
    word_char_at,
};

/// Longest query (or word) accepted, in bytes. Real queries are a few words; the cap keeps the
/// query parser's recursion and the term count bounded whatever a user pastes.
pub const MAX_QUERY_BYTES: usize = 1024;

/// Deepest parenthesis nesting accepted in a query, for the same reason.
pub const MAX_QUERY_NESTING: usize = 32;

/// The default indexing memory budget (`--index-memory-mb`). One indexing thread keeps
/// documents in add order inside a segment and leaves the second core to the crawl.
pub const DEFAULT_MEMORY_MB: usize = 32;

/// The least a tantivy indexing thread accepts (its `MEMORY_BUDGET_NUM_BYTES_MIN`, 15 MB).
pub const MIN_MEMORY_MB: usize = 15;

/// The most distinct words the index takes of one page (see the Decisions above). Measured
/// (`INDEX_HOSTILE=distinct cargo bench --bench index`, README): indexing one page took 95 MB
/// above its text at a million distinct words, 49 MB at 500,000, 25 MB at 200,000 and 19 MB at
/// 100,000, of which about 17 MB is what any first page costs the writer. A page of prose holds
/// a few tens of thousands of distinct words; a source listing adds one per line number.
pub const MAX_DISTINCT_WORDS: usize = 100_000;

const SEQ: &str = "seq";
const URL: &str = "url";
const TITLE: &str = "title";
const TEXT_FIELD: &str = "text";
const BYTES: &str = "bytes";
const LINES: &str = "lines";
const WORDS: &str = "words";
const COMMITTED_MS: &str = "committed_ms";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    #[error("{} holds no search index (has this folder been crawled?)", .0.display())]
    NoIndex(PathBuf),
    #[error(
        "{} holds a tantivy index that crawltop did not write (its fields differ)",
        .0.display()
    )]
    ForeignIndex(PathBuf),
    #[error(
        "the index in {} is already being written by another crawl (tantivy's writer lock is taken)",
        .0.display()
    )]
    Locked(PathBuf),
    // The errors below say what went wrong in their message, and have no `source`: `{:#}`
    // (main) would print it a second time.
    #[error("cannot use {}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("the query is empty")]
    EmptyQuery,
    #[error("the query is {len} bytes long; at most {max} are accepted")]
    QueryTooLong { len: usize, max: usize },
    #[error("the query nests parentheses {depth} deep; at most {max} are accepted")]
    QueryTooDeep { depth: usize, max: usize },
    #[error("cannot understand the query: {reason}")]
    BadQuery { reason: String },
    #[error(
        "{term:?}: the search has no wildcards or fuzzy words; ask for whole words (a phrase \
         may allow words between its own: \"mock turtle\"~2)"
    )]
    Unsupported { term: String },
    #[error(
        "{op:?} is no operator here: write AND, OR and NOT (or +word for must, -word for must not)"
    )]
    NotAnOperator { op: &'static str },
    #[error("{op} has no word {side} it: put one there, or write {lower:?} to search the word")]
    JoinsNothing {
        op: &'static str,
        side: &'static str,
        lower: &'static str,
    },
    #[error(
        "the query names no word to look for (words are {rules} shorter than 40 bytes: a longer \
         run, such as a clause of unspaced Chinese or Japanese, is not indexed)"
    )]
    NoWords {
        /// The rules of the index asked.
        rules: Words,
    },
    #[error(
        "{word:?} is not one word: words are {rules} shorter than 40 bytes (it splits into \
         {tokens:?})"
    )]
    NotOneWord {
        word: String,
        tokens: Vec<String>,
        /// The rules of the index that refused it.
        rules: Words,
    },
    #[error("the index thread stopped: {0}")]
    Thread(String),
    #[error("index error: {0}")]
    Tantivy(TantivyError),
}

impl From<TantivyError> for IndexError {
    fn from(error: TantivyError) -> IndexError {
        IndexError::Tantivy(error)
    }
}

/// One committed HTML page as the parser left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexedPage<'a> {
    pub seq: u64,
    pub url: &'a str,
    pub title: &'a str,
    /// Visible text, one line per block element, lines separated by `\n`.
    pub text: &'a str,
    /// When the committer took the page, in milliseconds since the Unix epoch by its wall
    /// clock: the tie-breaker across several crawls' folders ([`Crawls`]).
    pub committed_ms: u64,
}

/// What [`IndexWriter::add`] did with a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Added {
    /// Not added: its seq is not above every seq added before (a resume re-feeding the store).
    Refused,
    /// Added with its whole text.
    Whole,
    /// Added with its text cut at [`MAX_DISTINCT_WORDS`] distinct words.
    Cut(Cut),
}

impl Added {
    /// Whether the page went to the index, whole or cut.
    pub fn is_added(self) -> bool {
        self != Added::Refused
    }
}

/// How much of a page's text the index kept when it cut it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Cut {
    /// Words in the text the index kept (what `wc` counts for the page).
    pub kept_words: u64,
    /// Words in the whole text.
    pub words: u64,
}

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "text cut at {MAX_DISTINCT_WORDS} distinct words for the index ({} words of {} kept)",
            self.kept_words, self.words
        )
    }
}

/// A committed page on its way to the index thread ([`feed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedPage {
    pub seq: u64,
    pub url: String,
    pub title: String,
    pub text: String,
    pub committed_ms: u64,
}

impl OwnedPage {
    pub fn as_indexed(&self) -> IndexedPage<'_> {
        IndexedPage {
            seq: self.seq,
            url: &self.url,
            title: &self.title,
            text: &self.text,
            committed_ms: self.committed_ms,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub seq: u64,
    pub url: String,
    pub title: String,
    pub score: f32,
    /// 1-based line numbers and text of the first [`MAX_HIT_LINES`] lines holding any query
    /// term.
    pub lines: Vec<(usize, String)>,
    /// How many lines hold a query term in all (`lines` keeps the first of them).
    #[serde(default)]
    pub line_count: usize,
}

/// The best pages for a query and how many match in all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResults {
    /// Every page that matches, not only those in `hits`.
    pub total: usize,
    pub hits: Vec<Hit>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Count {
    pub seq: u64,
    pub url: String,
    pub count: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WordCount {
    pub pages: u64,
    pub bytes: u64,
    pub words: u64,
    pub lines: u64,
}

/// Several crawls' indexes read as one crawl: the folders of a shared crawl's members
/// (`search|maxcount|mincount|wc DIR [DIR...]`). One ranking: every index is scored with the
/// BM25 statistics of all of them together. Equal scores and equal counts go to the page
/// committed earlier (its `committed_ms`; a page of an index older than that field counts as
/// committed after every stamped one), then to the crawl named first, then to the lower seq
/// (a seq orders one crawl's commits, not several's). Commit times are each member's wall
/// clock: members whose clocks disagree break ties by their clocks, as they read.
pub struct Crawls {
    readers: Vec<IndexReader>,
}

/// A hit of [`Crawls::search`]: which crawl (its place in the list given) and the hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrawlHit {
    pub crawl: usize,
    #[serde(flatten)]
    pub hit: Hit,
}

/// A count of [`Crawls::max_count`] or [`Crawls::min_count`], with its crawl.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrawlCount {
    pub crawl: usize,
    #[serde(flatten)]
    pub count: Count,
}

/// A page in a ranking: its score, its tie key and where its document is.
type Ranked = (Score, TieKey, DocAddress);

/// How one index breaks ties between pages of equal score or count, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tie {
    /// The lower seq: one crawl's commit order.
    Seq,
    /// The earlier commit time, then the lower seq: comparable across crawls.
    CommitTime,
}

/// A page's place among equals: (commit time, seq), the time 0 under [`Tie::Seq`] and
/// `u64::MAX` for a page without one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct TieKey {
    committed_ms: u64,
    seq: u64,
}

impl TieKey {
    /// The tie key of `doc` in a segment whose fast fields are `keys`.
    fn of(keys: &TieColumns, doc: DocId) -> TieKey {
        TieKey {
            committed_ms: match &keys.committed {
                Times::Ignored => 0,
                Times::Missing => u64::MAX,
                Times::Read(c) => c.first(doc).unwrap_or(u64::MAX),
            },
            // A page without a seq cannot exist (add always sets it); rank it last.
            seq: keys
                .seq
                .as_ref()
                .and_then(|c| c.first(doc))
                .unwrap_or(u64::MAX),
        }
    }
}

/// The fast fields a segment's tie keys are read from.
struct TieColumns {
    seq: Option<tantivy::columnar::Column<u64>>,
    committed: Times,
}

/// Where a segment's commit times come from.
enum Times {
    /// Not asked for ([`Tie::Seq`]).
    Ignored,
    /// Asked for, and the index has none (written before the field existed).
    Missing,
    Read(tantivy::columnar::Column<u64>),
}

impl TieColumns {
    fn of(segment: &SegmentReader, tie: Tie) -> TieColumns {
        let fast = segment.fast_fields();
        TieColumns {
            seq: fast.u64(SEQ).ok(),
            committed: match tie {
                Tie::Seq => Times::Ignored,
                Tie::CommitTime => fast.u64(COMMITTED_MS).map_or(Times::Missing, Times::Read),
            },
        }
    }
}

/// BM25 statistics of several indexes summed: scores comparable across them. Each index's
/// searcher comes with its word rules: indexes made before and after [`Words::Marks`] may be
/// searched together, and a word counts in each as that index makes it.
struct Together(Vec<(tantivy::Searcher, Words)>);

impl tantivy::query::Bm25StatisticsProvider for Together {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        self.0.iter().map(|(s, _)| s.total_num_tokens(field)).sum()
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        self.0
            .iter()
            .map(|(s, _)| tantivy::query::Bm25StatisticsProvider::total_num_docs(s))
            .sum()
    }

    /// A term is one index's word: each index counts it as its own rules make it (`café`
    /// decomposed is `cafe` to the old rules), and not at all where they make it no word or
    /// several (`हिन्दी` is two words to the old rules).
    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let value = term.value();
        let Some(word) = value.as_str() else {
            return self.0.iter().map(|(s, _)| s.doc_freq(term)).sum();
        };
        let mut sum = 0;
        for (searcher, rules) in &self.0 {
            if let [own] = tokens(&mut rules.analyzer(), word).as_slice() {
                sum += searcher.doc_freq(&Term::from_field_text(term.field(), own))?;
            }
        }
        Ok(sum)
    }
}

impl Crawls {
    /// Opens the index of every crawl folder's `index/`, in the order given.
    pub fn open(dirs: &[std::path::PathBuf]) -> Result<Crawls, IndexError> {
        let readers = dirs
            .iter()
            .map(|d| IndexReader::open(&d.join("index")))
            .collect::<Result<_, _>>()?;
        Ok(Crawls { readers })
    }

    /// The best `limit` pages of all the crawls for `query`, one ranking, and how many match.
    pub fn search(&self, query: &str, limit: usize) -> Result<(usize, Vec<CrawlHit>), IndexError> {
        if self.readers.is_empty() {
            return Ok((0, Vec::new()));
        }
        // Each index reads the query by its own word rules.
        let parsed: Vec<Box<dyn Query>> = self
            .readers
            .iter()
            .map(|r| r.parse(query))
            .collect::<Result<_, _>>()?;
        let together = Together(
            self.readers
                .iter()
                .map(|r| (r.reader.searcher(), r.fields.rules))
                .collect(),
        );
        let mut total = 0;
        let mut all = Vec::new();
        for (crawl, r) in self.readers.iter().enumerate() {
            let (n, top) = r.top(parsed[crawl].as_ref(), limit, &together, Tie::CommitTime)?;
            total += n;
            all.extend(top.into_iter().map(|t| (crawl, t)));
        }
        all.sort_by(|(ca, (sa, ka, _)), (cb, (sb, kb, _))| {
            sb.total_cmp(sa)
                .then(ka.committed_ms.cmp(&kb.committed_ms))
                .then(ca.cmp(cb))
                .then(ka.seq.cmp(&kb.seq))
        });
        all.truncate(limit);
        let hits = all
            .into_iter()
            .map(|(crawl, (score, key, address))| {
                let searcher = &together.0[crawl].0;
                let hit = self.readers[crawl].hit(
                    parsed[crawl].as_ref(),
                    searcher,
                    score,
                    key.seq,
                    address,
                )?;
                Ok(CrawlHit { crawl, hit })
            })
            .collect::<Result<_, IndexError>>()?;
        Ok((total, hits))
    }

    /// The page of all the crawls where `word` occurs most.
    pub fn max_count(&self, word: &str) -> Result<Option<CrawlCount>, IndexError> {
        self.extreme(word, Extreme::Most)
    }

    /// The page of all the crawls where `word` occurs least but at least once.
    pub fn min_count(&self, word: &str) -> Result<Option<CrawlCount>, IndexError> {
        self.extreme(word, Extreme::Least)
    }

    /// An index whose word rules make `word` several words (an index made before
    /// [`Words::Marks`], asked for `हिन्दी`) is left out when another takes it as one word; when
    /// none does, the first one's refusal is the answer.
    fn extreme(&self, word: &str, extreme: Extreme) -> Result<Option<CrawlCount>, IndexError> {
        let mut best: Option<(CrawlCount, u64)> = None;
        let mut refused = None;
        let mut answered = false;
        for (crawl, r) in self.readers.iter().enumerate() {
            let found = match r.extreme_keyed(word, extreme, Tie::CommitTime) {
                Ok(found) => found,
                Err(error @ IndexError::NotOneWord { .. }) => {
                    refused.get_or_insert(error);
                    continue;
                }
                Err(error) => return Err(error),
            };
            answered = true;
            let Some((count, key)) = found else {
                continue;
            };
            let better = best.as_ref().is_none_or(|(b, b_ms)| {
                let c = count.count.cmp(&b.count.count);
                let c = if extreme == Extreme::Most {
                    c
                } else {
                    c.reverse()
                };
                // Equal counts: the earlier commit; at the same time, the crawl named first
                // (it came first in this loop: strictly earlier only).
                c.then(b_ms.cmp(&key.committed_ms)).is_gt()
            });
            if better {
                best = Some((CrawlCount { crawl, count }, key.committed_ms));
            }
        }
        match refused {
            Some(error) if !answered => Err(error),
            _ => Ok(best.map(|(count, _)| count)),
        }
    }

    /// How many pages of all the crawls hold `word` in their title: each index's own token
    /// of it (`maxcount` says when a word it finds in no page's text is in titles). An index
    /// whose rules make `word` no word or several counts none.
    pub fn in_titles(&self, word: &str) -> Result<usize, IndexError> {
        let mut pages = 0;
        for r in &self.readers {
            match r.in_titles(word) {
                Ok(n) => pages += n,
                Err(IndexError::NotOneWord { .. } | IndexError::NoWords { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(pages)
    }

    /// Pages, bytes, words and lines of all the crawls together.
    pub fn word_count(&self) -> Result<WordCount, IndexError> {
        let mut total = WordCount::default();
        for r in &self.readers {
            let w = r.word_count()?;
            total.pages += w.pages;
            total.bytes += w.bytes;
            total.words += w.words;
            total.lines += w.lines;
        }
        Ok(total)
    }
}

/// Which end of the per-page counts `extreme_count` looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Extreme {
    Most,
    Least,
}

impl Extreme {
    /// Whether `(count, key)` beats the current best; equal counts go to the lower key.
    fn beats(self, count: u32, key: TieKey, best: (u32, TieKey)) -> bool {
        let better_count = match self {
            Extreme::Most => count > best.0,
            Extreme::Least => count < best.0,
        };
        better_count || (count == best.0 && key < best.1)
    }
}

#[derive(Debug, Clone, Copy)]
struct Fields {
    seq: Field,
    url: Field,
    title: Field,
    text: Field,
    bytes: Field,
    lines: Field,
    words: Field,
    /// `None` in an index written before commit times were stamped.
    committed: Option<Field>,
    /// The rules the index's schema names for its title and text.
    rules: Words,
}

/// The schema of a new index.
fn schema() -> (Schema, Fields) {
    schema_with(true, Words::NEWEST)
}

/// The schema, with or without the `committed_ms` field (added last, so every other field keeps
/// its id and an older index reads as the same schema without it), its title and text
/// tokenized by `words` (the tokenizer's name is all that differs).
fn schema_with(commit_time: bool, words: Words) -> (Schema, Fields) {
    // TEXT records frequencies (for the counts) and positions (for phrase queries).
    let indexing = TEXT
        .get_indexing_options()
        .expect("TEXT is indexed")
        .clone()
        .set_tokenizer(words.tokenizer_name());
    let text_options = (TEXT | STORED).set_indexing_options(indexing);
    let mut builder = Schema::builder();
    let fields = Fields {
        seq: builder.add_u64_field(SEQ, INDEXED | FAST | STORED),
        url: builder.add_text_field(URL, STRING | STORED),
        title: builder.add_text_field(TITLE, text_options.clone()),
        text: builder.add_text_field(TEXT_FIELD, text_options),
        bytes: builder.add_u64_field(BYTES, FAST),
        lines: builder.add_u64_field(LINES, FAST),
        words: builder.add_u64_field(WORDS, FAST),
        committed: commit_time.then(|| builder.add_u64_field(COMMITTED_MS, FAST)),
        rules: words,
    };
    (builder.build(), fields)
}

/// How [`open_index`] opens an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// For the crawl's writer: created if missing.
    Write,
    /// For queries: nothing in the folder is created, written or locked for writing
    /// ([`read_only`]).
    Read,
}

/// Opens the index in `dir`, creating it first for a writer.
fn open_index(dir: &Path, access: Access) -> Result<(Index, Fields), IndexError> {
    let create = access == Access::Write;
    if create {
        std::fs::create_dir_all(dir).map_err(|error| IndexError::Io {
            path: dir.to_path_buf(),
            error,
        })?;
    } else if !dir.is_dir() {
        return Err(IndexError::NoIndex(dir.to_path_buf()));
    }
    let directory = MmapDirectory::open(dir).map_err(|err| IndexError::Io {
        path: dir.to_path_buf(),
        error: std::io::Error::other(err.to_string()),
    })?;
    let exists = Index::exists(&directory).map_err(|err| IndexError::Io {
        path: dir.to_path_buf(),
        error: std::io::Error::other(err.to_string()),
    })?;
    let (schema, fields) = schema();
    if !exists {
        if !create {
            return Err(IndexError::NoIndex(dir.to_path_buf()));
        }
        let index = Index::create(directory, schema, IndexSettings::default())?;
        register_words(&index);
        return Ok((index, fields));
    }
    let index = match access {
        Access::Write => Index::open(directory)?,
        Access::Read => Index::open(read_only::ReadOnlyDirectory::new(directory, dir))?,
    };
    // The schemas crawltop has written, newest first: with each older word rules, and before
    // commit times (only ever with the oldest rules).
    let known = [
        (schema, fields),
        schema_with(true, Words::Marks),
        schema_with(true, Words::Alphanumeric),
        schema_with(false, Words::Alphanumeric),
    ];
    let Some((_, fields)) = known.into_iter().find(|(s, _)| index.schema() == *s) else {
        return Err(IndexError::ForeignIndex(dir.to_path_buf()));
    };
    register_words(&index);
    Ok((index, fields))
}

/// Every rules' tokenizer under the name schemas give it: the one-pass [`WordTokenizer`]
/// takes tantivy's `default` name (same tokens), so indexes made before [`Words::Marks`] read
/// and grow as they were written; [`NfcWordTokenizer`] is [`MARKS_TOKENIZER`] and
/// [`FoldedWordTokenizer`] [`FOLDED_TOKENIZER`].
fn register_words(index: &Index) {
    let tokenizers = index.tokenizers();
    tokenizers.register("default", TextAnalyzer::from(WordTokenizer::default()));
    tokenizers.register(
        MARKS_TOKENIZER,
        TextAnalyzer::from(NfcWordTokenizer::default()),
    );
    tokenizers.register(
        FOLDED_TOKENIZER,
        TextAnalyzer::from(FoldedWordTokenizer::default()),
    );
}

fn analyzer(index: &Index, fields: Fields) -> Result<TextAnalyzer, IndexError> {
    Ok(index.tokenizer_for_field(fields.text)?)
}

fn tokens(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    analyzer
        .token_stream(text)
        .process(&mut |token| out.push(token.text.clone()));
    out
}

/// The exact counts of one page's text that `wc` sums.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TextCounts {
    /// UTF-8 bytes.
    pub bytes: u64,
    /// Lines as `str::lines` counts them (a last line without `\n` counts; an empty text has
    /// none).
    pub lines: u64,
    /// Words by the index's rules ([`Words`]), as its analyzer makes them.
    pub words: u64,
}

/// Bytes, lines and words (by `words`, the rules of the index the counts are for) of `text`
/// in one scan that makes no token, so the exact counts cost a fraction of tantivy's
/// tokenization, which stays the only one (the unit tests pin that the words agree with the
/// analyzer and the lines with `str::lines`).
pub fn text_counts(text: &str, words: Words) -> TextCounts {
    match words {
        Words::Alphanumeric => alphanumeric_counts(text),
        Words::Marks => TextCounts {
            bytes: text.len() as u64,
            lines: lines(text),
            words: marks_word_count(text),
        },
        Words::Folded => TextCounts {
            bytes: text.len() as u64,
            lines: lines(text),
            words: folded_word_count(text),
        },
    }
}

/// Lines as `str::lines` counts them.
fn lines(text: &str) -> u64 {
    memchr::memchr_iter(b'\n', text.as_bytes()).count() as u64
        + u64::from(!text.is_empty() && !text.ends_with('\n'))
}

/// [`text_counts`] by [`Words::Alphanumeric`].
fn alphanumeric_counts(text: &str) -> TextCounts {
    let mut words = 0u64;
    let mut newlines = 0u64;
    let mut run = 0usize;
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        // ASCII bytes (nearly every byte of prose) take the table alone, as characters of one
        // byte: about 1.6 times as fast as decoding each one's length.
        if let Some(&alphanumeric) = ASCII_WORD.get(usize::from(byte)) {
            count_step(&mut words, &mut run, alphanumeric, 1);
            newlines += u64::from(byte == b'\n');
            at += 1;
            continue;
        }
        let (alphanumeric, len) = word_char_at(text, at);
        count_step(&mut words, &mut run, alphanumeric, len);
        at += len;
    }
    words += u64::from(run > 0 && run < MAX_WORD_BYTES);
    TextCounts {
        bytes: text.len() as u64,
        lines: newlines + u64::from(!text.is_empty() && !text.ends_with('\n')),
        words,
    }
}

/// One character of [`text_counts`]: a word ends where a run of word characters does, if the run
/// was short enough to be one. Branch-free: a word ends at random places, which a branch would
/// mispredict about once a word.
#[inline]
fn count_step(words: &mut u64, run: &mut usize, alphanumeric: bool, len: usize) {
    *words += u64::from(!alphanumeric & (run.wrapping_sub(1) < MAX_WORD_BYTES - 1));
    *run = if alphanumeric { *run + len } else { 0 };
}

/// tantivy's parser reads `a AND NOT b` as `a` and a clause of its own that only excludes
/// `b`; such a clause matches no page (tantivy issue 1980), so the whole query matched none,
/// where `a NOT b` and `+a -b` find the pages with `a` and without `b`. A required clause that
/// only excludes is lifted into its parent, which then reads as those two do.
fn lift_exclusions(query: Box<dyn Query>) -> Box<dyn Query> {
    use tantivy::query::{BooleanQuery, Occur};
    let Some(boolean) = query.downcast_ref::<BooleanQuery>() else {
        return query;
    };
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    for (occur, clause) in boolean.clauses() {
        let clause = lift_exclusions(clause.box_clone());
        let only_excludes = clause.downcast_ref::<BooleanQuery>().filter(|inner| {
            !inner.clauses().is_empty() && inner.clauses().iter().all(|(o, _)| *o == Occur::MustNot)
        });
        match only_excludes {
            Some(inner) if *occur == Occur::Must => {
                clauses.extend(inner.clauses().iter().map(|(o, q)| (*o, q.box_clone())));
            }
            _ => clauses.push((*occur, clause)),
        }
    }
    Box::new(BooleanQuery::with_minimum_required_clauses(
        clauses,
        boolean.get_minimum_number_should_match(),
    ))
}

/// How many words `text` holds by `words` ([`text_counts`]).
pub fn count_words(text: &str, words: Words) -> u64 {
    text_counts(text, words).words
}

fn manual_reader(index: &Index) -> Result<tantivy::IndexReader, IndexError> {
    // Manual: no file-watching thread; callers reload when they want newer commits.
    Ok(index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()?)
}

fn highest_committed_seq(searcher: &Searcher) -> Result<Option<u64>, IndexError> {
    let mut highest = None;
    for segment in searcher.segment_readers() {
        if segment.max_doc() == 0 {
            continue;
        }
        let seqs = segment.fast_fields().u64(SEQ)?;
        if segment.has_deletes() {
            // A column's max counts deleted documents too (a rollback deletes the top).
            for doc in segment.doc_ids_alive() {
                highest = highest.max(seqs.first(doc));
            }
        } else {
            highest = highest.max(Some(seqs.max_value()));
        }
    }
    Ok(highest)
}

/// Most text (bytes) of pages handed to tantivy and not indexed yet. tantivy's own queue
/// between `add_document` and its indexing thread holds up to 10,000 documents whatever their
/// size; past this bound `add` waits for its indexing thread instead, so pages waiting for the
/// index cost at most this much memory (one page larger than the bound goes alone). 1 MiB keeps
/// tantivy's thread fed (measured with [`feed::BATCHES_QUEUED`]).
pub const IN_FLIGHT_BYTES: usize = 1 << 20;

/// The text of pages handed to tantivy and not yet indexed, shared with the tickets their
/// documents carry.
#[derive(Debug, Default)]
struct InFlight {
    bytes: Mutex<Held>,
    freed: Condvar,
}

#[derive(Debug, Default, Clone, Copy)]
struct Held {
    now: usize,
    /// The most held at once, for the tests and the benchmark.
    peak: usize,
    /// Tickets dropped so far: whether tantivy's indexing thread is still freeing any.
    freed: u64,
}

/// How long [`InFlight::take`] waits while no page at all is freed before it lets its page
/// through over the bound. tantivy frees pages as its indexing thread indexes them (a page of
/// 10 MiB in well under a second); a thread that died (a full disk) frees none, and a wait
/// without end would hang the crawl: past this, the page goes to tantivy, whose `add` then
/// fails with the thread's error, and the crawl ends on it. A live thread that pauses longer
/// (a segment written to a very slow disk) lets one page through over the bound per pause.
const STALLED: std::time::Duration = std::time::Duration::from_secs(5);

impl InFlight {
    /// Waits until `bytes` more fit under [`IN_FLIGHT_BYTES`] (or nothing is in flight, or
    /// nothing was freed for [`STALLED`]), then counts them until the returned ticket is
    /// dropped.
    fn take(self: &Arc<Self>, bytes: usize) -> Ticket {
        self.take_within(bytes, STALLED)
    }

    fn take_within(self: &Arc<Self>, bytes: usize, stalled: std::time::Duration) -> Ticket {
        let mut held = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
        while held.now > 0 && held.now + bytes > IN_FLIGHT_BYTES {
            let freed = held.freed;
            let (now, waited) = self
                .freed
                .wait_timeout_while(held, stalled, |h| h.freed == freed)
                .unwrap_or_else(PoisonError::into_inner);
            held = now;
            if waited.timed_out() {
                break;
            }
        }
        held.now += bytes;
        held.peak = held.peak.max(held.now);
        Ticket {
            in_flight: self.clone(),
            bytes,
        }
    }
}

/// Frees a page's share of [`IN_FLIGHT_BYTES`] when tantivy drops its document: after its
/// indexing thread has indexed it, or when the writer is dropped with it still queued.
#[derive(Debug)]
struct Ticket {
    in_flight: Arc<InFlight>,
    bytes: usize,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut held = self
            .in_flight
            .bytes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        held.now = held.now.saturating_sub(self.bytes);
        held.freed += 1;
        self.in_flight.freed.notify_all();
    }
}

/// A page's tantivy document with its ticket: tantivy's writer is generic over the document
/// type, so the ticket travels with the document and is dropped with it.
struct PageDoc {
    doc: TantivyDocument,
    _ticket: Ticket,
}

impl Document for PageDoc {
    type Value<'a>
        = <TantivyDocument as Document>::Value<'a>
    where
        Self: 'a;
    type FieldsValuesIter<'a>
        = <TantivyDocument as Document>::FieldsValuesIter<'a>
    where
        Self: 'a;

    fn iter_fields_and_values(&self) -> Self::FieldsValuesIter<'_> {
        self.doc.iter_fields_and_values()
    }
}

/// How the writer merges segments in a crawl. A checkpoint commits the index about once a
/// second, and each commit closes a segment of the pages since the last one: a few hundred to a
/// few thousand. tantivy's log merge policy treats every segment under `min_layer_size` pages as
/// one level and merges a level once it holds `min_num_segments`; the values here are
/// tantivy's defaults, written out because the crawl's pace depends on them (measured in the
/// README: a 10,000-page crawl commits 4 to 8 times and merges once at most).
fn crawl_merge_policy() -> LogMergePolicy {
    let mut policy = LogMergePolicy::default();
    policy.set_min_num_segments(8);
    policy.set_min_layer_size(10_000);
    policy.set_level_log_size(0.75);
    policy.set_max_docs_before_merge(10_000_000);
    policy
}

/// The only writer of a crawl folder's index. tantivy allows one per index, across processes.
pub struct IndexWriter {
    writer: tantivy::IndexWriter<PageDoc>,
    fields: Fields,
    highest_seq: Option<u64>,
    in_flight: Arc<InFlight>,
    /// Pages added, the committed ones it opened with included.
    pages: u64,
    /// Written with every commit (tantivy's commit payload): the crawl's name
    /// ([`IndexWriter::stamp`]).
    stamp: Option<String>,
}

impl IndexWriter {
    /// Opens the index in `dir` (the crawl folder's `index/`), creating it if needed, and reads
    /// back the highest committed seq.
    pub fn open(dir: &Path) -> Result<IndexWriter, IndexError> {
        Self::open_with_memory(dir, DEFAULT_MEMORY_MB)
    }

    /// [`IndexWriter::open`] with an indexing memory budget of `memory_mb` megabytes (at least
    /// [`MIN_MEMORY_MB`]): what tantivy's indexing thread buffers before it writes a segment.
    ///
    /// One indexing thread (documents stay in add order inside a segment, and the second core is
    /// the crawl's), one merge thread (tantivy's default of four would let merges take both
    /// cores from the crawl), and [`crawl_merge_policy`].
    pub fn open_with_memory(dir: &Path, memory_mb: usize) -> Result<IndexWriter, IndexError> {
        let (index, fields) = open_index(dir, Access::Write)?;
        let searcher = manual_reader(&index)?.searcher();
        let highest_seq = highest_committed_seq(&searcher)?;
        let pages = searcher.num_docs();
        let stamp = index.load_metas()?.payload;
        let options = IndexWriterOptions::builder()
            .memory_budget_per_thread(memory_mb.max(MIN_MEMORY_MB) * 1_000_000)
            .num_worker_threads(1)
            .num_merge_threads(1)
            .build();
        let writer = index
            .writer_with_options(options)
            .map_err(|err| match err {
                TantivyError::LockFailure(..) => IndexError::Locked(dir.to_path_buf()),
                other => IndexError::Tantivy(other),
            })?;
        writer.set_merge_policy(Box::new(crawl_merge_policy()));
        // A query takes tantivy's meta lock only where its file exists, and never makes it
        // (`read_only`): made here, before the first commit, the file is there whenever a
        // collection could delete a segment a query is opening.
        drop(
            writer
                .index()
                .directory()
                .acquire_lock(&tantivy::directory::META_LOCK)
                .map_err(TantivyError::from)?,
        );
        Ok(IndexWriter {
            writer,
            fields,
            highest_seq,
            in_flight: Arc::default(),
            pages,
            stamp,
        })
    }

    /// The crawl's name the index's last commit carried when it was opened, until
    /// [`IndexWriter::stamp`] gives the one its next commits carry; `None` for an index made
    /// before crawls were named, or never committed. A resume reads it before stamping.
    pub fn stamped(&self) -> Option<&str> {
        self.stamp.as_deref()
    }

    /// Stamps every commit from now on with `crawl`, the name of the crawl this index is
    /// (tantivy's commit payload, in `meta.json`): a resume compares it with its checkpoint's.
    pub fn stamp(&mut self, crawl: &str) {
        self.stamp = Some(crawl.to_owned());
    }

    /// How many committed pages have a seq below `seq`.
    pub fn pages_below(&self, seq: u64) -> Result<u64, IndexError> {
        let query = tantivy::query::RangeQuery::new(
            std::ops::Bound::Unbounded,
            std::ops::Bound::Excluded(tantivy::Term::from_field_u64(self.fields.seq, seq)),
        );
        let searcher = manual_reader(self.writer.index())?.searcher();
        Ok(searcher.search(&query, &tantivy::collector::Count)? as u64)
    }

    /// Pages the index holds once what was added is committed.
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// Adds a page; searchable after the next `commit`. [`Added::Refused`], adding nothing,
    /// when `page.seq` is not above every seq already added: a resumed crawl re-feeding the
    /// store. A text of more than [`MAX_DISTINCT_WORDS`] distinct words is cut there
    /// ([`Added::Cut`]). Waits while tantivy's indexing thread is [`IN_FLIGHT_BYTES`] behind.
    pub fn add(&mut self, page: &IndexedPage<'_>) -> Result<Added, IndexError> {
        if self.highest_seq.is_some_and(|highest| page.seq <= highest) {
            return Ok(Added::Refused);
        }
        let f = self.fields;
        let cut = distinct_words_cut(page.text, MAX_DISTINCT_WORDS, f.rules);
        let text = cut.map_or(page.text, |at| &page.text[..at]);
        let counts = text_counts(text, f.rules);
        let mut doc = TantivyDocument::new();
        doc.add_u64(f.seq, page.seq);
        doc.add_text(f.url, page.url);
        doc.add_text(f.title, page.title);
        doc.add_text(f.text, text);
        doc.add_u64(f.bytes, counts.bytes);
        doc.add_u64(f.lines, counts.lines);
        doc.add_u64(f.words, counts.words);
        if let Some(committed) = f.committed {
            doc.add_u64(committed, page.committed_ms);
        }
        let ticket = self
            .in_flight
            .take(page.url.len() + page.title.len() + text.len());
        self.writer.add_document(PageDoc {
            doc,
            _ticket: ticket,
        })?;
        self.highest_seq = Some(page.seq);
        self.pages += 1;
        Ok(match cut {
            None => Added::Whole,
            Some(_) => Added::Cut(Cut {
                kept_words: counts.words,
                words: count_words(page.text, f.rules),
            }),
        })
    }

    /// A resume: forgets every page at or above `seq` (they were indexed after the checkpoint
    /// the crawl resumes from, and will be fetched and added again), durably.
    pub fn rollback_from(&mut self, seq: u64) -> Result<(), IndexError> {
        let from = tantivy::Term::from_field_u64(self.fields.seq, seq);
        let query = tantivy::query::RangeQuery::new(
            std::ops::Bound::Included(from),
            std::ops::Bound::Unbounded,
        );
        self.writer.delete_query(Box::new(query))?;
        self.commit()?;
        let searcher = manual_reader(self.writer.index())?.searcher();
        self.highest_seq = highest_committed_seq(&searcher)?;
        self.pages = searcher.num_docs();
        Ok(())
    }

    /// Makes every added page durable and visible to readers that reload.
    pub fn commit(&mut self) -> Result<(), IndexError> {
        let mut commit = self.writer.prepare_commit()?;
        if let Some(stamp) = &self.stamp {
            commit.set_payload(stamp);
        }
        commit.commit()?;
        Ok(())
    }

    /// The most page text that waited inside tantivy at once (at most [`IN_FLIGHT_BYTES`], or
    /// one page if larger).
    pub fn peak_in_flight_bytes(&self) -> usize {
        self.in_flight
            .bytes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .peak
    }

    /// The highest seq added, committed or not.
    pub fn highest_seq(&self) -> Option<u64> {
        self.highest_seq
    }

    /// Waits for background merges and releases the writer lock. Uncommitted pages are dropped.
    pub fn close(self) -> Result<(), IndexError> {
        self.writer.wait_merging_threads()?;
        Ok(())
    }
}

/// A read-only view of the index; works while the crawl's writer is adding.
pub struct IndexReader {
    index: Index,
    reader: tantivy::IndexReader,
    fields: Fields,
    parser: QueryParser,
}

impl IndexReader {
    /// Opens the index in `dir`; `IndexError::NoIndex` when there is none.
    pub fn open(dir: &Path) -> Result<IndexReader, IndexError> {
        let (index, fields) = open_index(dir, Access::Read)?;
        let reader = manual_reader(&index)?;
        let parser = QueryParser::for_index(&index, vec![fields.title, fields.text]);
        Ok(IndexReader {
            index,
            reader,
            fields,
            parser,
        })
    }

    /// Picks up pages committed since the reader was opened or last reloaded.
    pub fn reload(&self) -> Result<(), IndexError> {
        self.reader.reload()?;
        Ok(())
    }

    /// The best `limit` pages for `query` (tantivy query syntax over title and text; words are
    /// OR-ed), by BM25 score, equal scores by lowest seq. An unknown word matches nothing.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit>, IndexError> {
        Ok(self.search_counted(query, limit)?.hits)
    }

    /// As [`IndexReader::search`], with the number of pages that match in all (which may be
    /// more than `limit`).
    pub fn search_counted(&self, query: &str, limit: usize) -> Result<SearchResults, IndexError> {
        // The lenient parser accepts more everyday input than the strict one (`don't`, a lone
        // `AND` taken as a word) and says where a real mistake is; any mistake is still refused
        // rather than guessed around.
        let parsed = self.parse(query)?;
        let searcher = self.reader.searcher();
        let (total, top) = self.top(parsed.as_ref(), limit, &searcher, Tie::Seq)?;
        let hits = top
            .into_iter()
            .map(|(score, key, address)| {
                self.hit(parsed.as_ref(), &searcher, score, key.seq, address)
            })
            .collect::<Result<_, IndexError>>()?;
        Ok(SearchResults { total, hits })
    }

    /// The query as [`IndexReader::search_counted`] reads it.
    fn parse(&self, query: &str) -> Result<Box<dyn Query>, IndexError> {
        check_query(query)?;
        check_operators(query)?;
        check_joins(query)?;
        let (parsed, mistakes) = self.parser.parse_query_lenient(&literal::literal(query));
        if let Some(mistake) = mistakes.first() {
            return Err(IndexError::BadQuery {
                reason: mistake.to_string(),
            });
        }
        let parsed = lift_exclusions(parsed);
        self.text_terms(parsed.as_ref())?;
        Ok(parsed)
    }

    /// How many pages match and the best `limit`, as (score, tie key, address), scored with
    /// the BM25 statistics of `stats` (this index's searcher, or several crawls' together),
    /// equal scores by `tie`.
    fn top(
        &self,
        query: &dyn Query,
        limit: usize,
        stats: &dyn tantivy::query::Bm25StatisticsProvider,
        tie: Tie,
    ) -> Result<(usize, Vec<Ranked>), IndexError> {
        let searcher = self.reader.searcher();
        if limit == 0 {
            return Ok((
                searcher.search(query, &tantivy::collector::Count)?,
                Vec::new(),
            ));
        }
        let collector = TopDocs::with_limit(limit).tweak_score(move |segment: &SegmentReader| {
            let keys = TieColumns::of(segment, tie);
            move |doc: DocId, score: Score| (score, Reverse(TieKey::of(&keys, doc)))
        });
        let (total, top) = searcher.search_with_statistics_provider(
            query,
            &(tantivy::collector::Count, collector),
            stats,
        )?;
        let top = top
            .into_iter()
            .map(|((score, Reverse(key)), address)| (score, key, address))
            .collect();
        Ok((total, top))
    }

    fn hit(
        &self,
        query: &dyn Query,
        searcher: &tantivy::Searcher,
        score: Score,
        seq: u64,
        address: DocAddress,
    ) -> Result<Hit, IndexError> {
        let terms = self.text_terms(query)?;
        let mut analyzer = analyzer(&self.index, self.fields)?;
        let doc: TantivyDocument = searcher.doc(address)?;
        let text = stored_str(&doc, self.fields.text);
        let (lines, line_count) = matching_lines(&mut analyzer, text, &terms);
        Ok(Hit {
            seq,
            url: stored_str(&doc, self.fields.url).to_owned(),
            title: stored_str(&doc, self.fields.title).to_owned(),
            score,
            lines,
            line_count,
        })
    }

    /// How many pages the index holds, as of the last open or reload.
    pub fn pages(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// The page where `word` occurs most, with its count; equal counts go to the lowest seq.
    pub fn max_count(&self, word: &str) -> Result<Option<Count>, IndexError> {
        self.extreme_count(word, Extreme::Most)
    }

    /// The page where `word` occurs least but at least once; equal counts go to the lowest seq.
    pub fn min_count(&self, word: &str) -> Result<Option<Count>, IndexError> {
        self.extreme_count(word, Extreme::Least)
    }

    /// Pages, bytes, words and lines of the indexed page text (titles excluded).
    pub fn word_count(&self) -> Result<WordCount, IndexError> {
        let searcher = self.reader.searcher();
        let mut total = WordCount::default();
        for segment in searcher.segment_readers() {
            let fast = segment.fast_fields();
            let (bytes, lines, words) = (fast.u64(BYTES)?, fast.u64(LINES)?, fast.u64(WORDS)?);
            for doc in alive_docs(segment) {
                total.pages += 1;
                total.bytes += bytes.first(doc).unwrap_or(0);
                total.lines += lines.first(doc).unwrap_or(0);
                total.words += words.first(doc).unwrap_or(0);
            }
        }
        Ok(total)
    }

    fn extreme_count(&self, word: &str, extreme: Extreme) -> Result<Option<Count>, IndexError> {
        Ok(self
            .extreme_keyed(word, extreme, Tie::Seq)?
            .map(|(count, _)| count))
    }

    /// The page where `word` occurs most or least, equal counts by `tie`, with its tie key.
    fn extreme_keyed(
        &self,
        word: &str,
        extreme: Extreme,
        tie: Tie,
    ) -> Result<Option<(Count, TieKey)>, IndexError> {
        // A word, not a query: the analyzer alone says what it is, so `zebra*` counts `zebra`
        // as `zebra!` does, and `zeb*ra` is two words, as `zeb-ra` is.
        check_size(word)?;
        let token = self.word(word)?;
        let term = Term::from_field_text(self.fields.text, &token);
        let searcher = self.reader.searcher();
        let mut best: Option<(u32, TieKey, DocAddress)> = None;
        for (ordinal, segment) in searcher.segment_readers().iter().enumerate() {
            let inverted = segment.inverted_index(self.fields.text)?;
            let Some(mut postings) = inverted
                .read_postings(&term, IndexRecordOption::WithFreqs)
                .map_err(TantivyError::from)?
            else {
                continue;
            };
            let keys = TieColumns::of(segment, tie);
            let alive = segment.alive_bitset();
            let mut doc = postings.doc();
            while doc != TERMINATED {
                if alive.is_none_or(|bits| bits.is_alive(doc)) {
                    let count = postings.term_freq();
                    let key = TieKey::of(&keys, doc);
                    if best.is_none_or(|(c, k, _)| extreme.beats(count, key, (c, k))) {
                        best = Some((count, key, DocAddress::new(ordinal as u32, doc)));
                    }
                }
                doc = postings.advance();
            }
        }
        let Some((count, key, address)) = best else {
            return Ok(None);
        };
        let doc: TantivyDocument = searcher.doc(address)?;
        let count = Count {
            seq: key.seq,
            url: stored_str(&doc, self.fields.url).to_owned(),
            count: u64::from(count),
        };
        Ok(Some((count, key)))
    }

    /// How many pages hold `word` (one word by this index's rules) in their title.
    fn in_titles(&self, word: &str) -> Result<usize, IndexError> {
        let token = self.word(word)?;
        let query = tantivy::query::TermQuery::new(
            Term::from_field_text(self.fields.title, &token),
            IndexRecordOption::Basic,
        );
        Ok(self
            .reader
            .searcher()
            .search(&query, &tantivy::collector::Count)?)
    }

    /// The one token this index's rules make of `word`.
    fn word(&self, word: &str) -> Result<String, IndexError> {
        let mut analyzer = analyzer(&self.index, self.fields)?;
        match tokens(&mut analyzer, word).as_slice() {
            [one] => Ok(one.clone()),
            // Punctuation only, or a run too long to be indexed: no word to count.
            [] => Err(IndexError::NoWords {
                rules: self.fields.rules,
            }),
            other => Err(IndexError::NotOneWord {
                word: word.to_owned(),
                tokens: other.to_vec(),
                rules: self.fields.rules,
            }),
        }
    }

    /// The lowercased words of the query on the text field; an error when the query has no
    /// word on any field (`*`, or operators alone), which would otherwise list every page.
    fn text_terms(&self, query: &dyn Query) -> Result<HashSet<String>, IndexError> {
        let mut any = false;
        let mut words = HashSet::new();
        query.query_terms(&mut |term, _| {
            any = true;
            if term.field() == self.fields.text
                && let Some(word) = term.value().as_str()
            {
                words.insert(word.to_owned());
            }
        });
        if any {
            Ok(words)
        } else {
            Err(IndexError::NoWords {
                rules: self.fields.rules,
            })
        }
    }
}

fn stored_str(doc: &TantivyDocument, field: Field) -> &str {
    doc.get_first(field).and_then(|v| v.as_str()).unwrap_or("")
}

fn alive_docs(segment: &SegmentReader) -> impl Iterator<Item = DocId> + '_ {
    let alive = segment.alive_bitset();
    (0..segment.max_doc()).filter(move |&doc| alive.is_none_or(|bits| bits.is_alive(doc)))
}

/// What a query and a counted word must both be: not blank, at most [`MAX_QUERY_BYTES`].
fn check_size(query: &str) -> Result<(), IndexError> {
    if query.trim().is_empty() {
        return Err(IndexError::EmptyQuery);
    }
    if query.len() > MAX_QUERY_BYTES {
        return Err(IndexError::QueryTooLong {
            len: query.len(),
            max: MAX_QUERY_BYTES,
        });
    }
    Ok(())
}

fn check_query(query: &str) -> Result<(), IndexError> {
    check_size(query)?;
    let mut depth = 0usize;
    let mut deepest = 0usize;
    for c in query.chars() {
        match c {
            '(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if deepest > MAX_QUERY_NESTING {
        return Err(IndexError::QueryTooDeep {
            depth: deepest,
            max: MAX_QUERY_NESTING,
        });
    }
    // `rabb*` and `rabbit~2` would be split into other words and quietly match nothing (or
    // the wrong pages): refused. A `~` right after a phrase's closing quote is its slop.
    let mut quoted = false;
    let mut after_quote = false;
    let mut escaped = false;
    for (at, c) in query.char_indices() {
        if std::mem::take(&mut escaped) {
            after_quote = false;
            continue;
        }
        match c {
            // The parser's escape: the next character is taken as it is.
            '\\' => escaped = true,
            '"' => {
                quoted = !quoted;
                after_quote = !quoted;
                continue;
            }
            '*' | '~' if !(quoted || c == '~' && after_quote) => {
                // The term around it, cut at whitespace of any width (U+3000 is 3 bytes).
                let start = query[..at]
                    .char_indices()
                    .rfind(|(_, c)| c.is_whitespace())
                    .map_or(0, |(i, c)| i + c.len_utf8());
                let end = query[at..]
                    .find(char::is_whitespace)
                    .map_or(query.len(), |i| at + i);
                return Err(IndexError::Unsupported {
                    term: query[start..end].to_owned(),
                });
            }
            _ => {}
        }
        after_quote = false;
    }
    Ok(())
}

/// Lucene's `&&` and prefix `!` outside quotes, refused in a search: they are no operators to
/// tantivy's parser, so they would vanish as words without letters, and `rabbit !alice` find
/// the pages with alice. (`||` means OR there, as it does to tantivy.)
fn check_operators(query: &str) -> Result<(), IndexError> {
    let mut quoted = false;
    let mut escaped = false;
    for (at, c) in query.char_indices() {
        if std::mem::take(&mut escaped) {
            continue;
        }
        let before = query[..at].chars().next_back();
        let after = query[at + c.len_utf8()..].chars().next();
        match c {
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            '&' if !quoted && after == Some('&') => {
                return Err(IndexError::NotAnOperator { op: "&&" });
            }
            '!' if !quoted
                && before.is_none_or(|b| b.is_whitespace() || matches!(b, '(' | '+' | '-'))
                && after.is_some_and(|n| !n.is_whitespace() && n != ')') =>
            {
                return Err(IndexError::NotAnOperator { op: "!" });
            }
            _ => {}
        }
    }
    Ok(())
}

/// A piece of a query, for [`check_joins`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    Open,
    Close,
    Join(&'static str),
    Word,
}

/// `AND`, `OR` or `NOT` with no word to join (at the query's start or end, beside a
/// parenthesis, or beside another of them), refused: tantivy's parser takes some of them for
/// the word (`rabbit AND` found every page with "and" in it) and fails on others (`OR rabbit`,
/// "unexpected boolean operator"). `NOT` needs a word after it only.
fn check_joins(query: &str) -> Result<(), IndexError> {
    let pieces = pieces(query);
    for (i, piece) in pieces.iter().enumerate() {
        let Piece::Join(op) = *piece else { continue };
        let before = i.checked_sub(1).and_then(|j| pieces.get(j));
        let after = pieces.get(i + 1);
        let lower = match op {
            "AND" => "and",
            "OR" => "or",
            _ => "not",
        };
        let joined_before = op == "NOT" || matches!(before, Some(Piece::Word | Piece::Close));
        let joined_after = matches!(after, Some(Piece::Word | Piece::Open))
            || (op != "NOT" && after == Some(&Piece::Join("NOT")));
        let side = match (joined_before, joined_after) {
            (false, _) => "before",
            (_, false) => "after",
            _ => continue,
        };
        return Err(IndexError::JoinsNothing { op, side, lower });
    }
    Ok(())
}

/// `query` cut into pieces as tantivy's parser reads it: parentheses, the words `AND`, `OR`
/// and `NOT`, and everything else (a quoted phrase is one piece); a `-` or `+` standing alone
/// is no piece (it is dropped as text, [`literal::literal`]).
fn pieces(query: &str) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut word = String::new();
    let end_word = |word: &mut String, pieces: &mut Vec<Piece>| {
        match word.as_str() {
            "" | "-" | "+" => {}
            "AND" => pieces.push(Piece::Join("AND")),
            "OR" => pieces.push(Piece::Join("OR")),
            "NOT" => pieces.push(Piece::Join("NOT")),
            _ => pieces.push(Piece::Word),
        }
        word.clear();
    };
    let (mut quoted, mut escaped) = (false, false);
    for c in query.chars() {
        if std::mem::take(&mut escaped) {
            word.push(c);
            continue;
        }
        match c {
            '\\' => {
                escaped = true;
                word.push(c);
            }
            '"' => {
                quoted = !quoted;
                word.push(c);
            }
            _ if quoted => word.push(c),
            '(' | ')' => {
                end_word(&mut word, &mut pieces);
                pieces.push(if c == '(' { Piece::Open } else { Piece::Close });
            }
            c if c.is_whitespace() => end_word(&mut word, &mut pieces),
            c => word.push(c),
        }
    }
    end_word(&mut word, &mut pieces);
    pieces
}

/// The most characters of a matching line a hit carries: a longer line (a minified page's
/// whole text) is cut to this around its first match, each cut marked `…`.
pub const LINE_WINDOW: usize = 200;
/// Characters kept before the first match when a line is cut.
pub const LINE_LEAD: usize = 60;
/// The most matching lines a hit carries (it also says how many there are): a page of a
/// hundred thousand short matching lines would otherwise make one answer tens of megabytes,
/// held by the crawl that answers the control API.
pub const MAX_HIT_LINES: usize = 20;

/// The first [`MAX_HIT_LINES`] 1-based numbered lines of `text` holding any of `words`,
/// tokenized as the index does, each cut to [`LINE_WINDOW`] characters around its first match,
/// and how many lines match in all.
fn matching_lines(
    analyzer: &mut TextAnalyzer,
    text: &str,
    words: &HashSet<String>,
) -> (Vec<(usize, String)>, usize) {
    let (mut kept, mut count) = (Vec::new(), 0);
    for (i, line) in text.lines().enumerate() {
        let mut first: Option<usize> = None;
        analyzer.token_stream(line).process(&mut |token| {
            if first.is_none() && words.contains(&token.text) {
                first = Some(token.offset_from);
            }
        });
        if let Some(at) = first {
            count += 1;
            if kept.len() < MAX_HIT_LINES {
                kept.push((i + 1, around(line, at)));
            }
        }
    }
    (kept, count)
}

/// `line` if it has at most [`LINE_WINDOW`] characters, else [`LINE_WINDOW`] of them starting
/// [`LINE_LEAD`] before byte `at` (a match's start), with `…` where it was cut.
fn around(line: &str, at: usize) -> String {
    if line.chars().count() <= LINE_WINDOW {
        return line.to_owned();
    }
    let before = line.get(..at).map_or(0, |b| b.chars().count());
    let start = before.saturating_sub(LINE_LEAD);
    let mut window: String = line.chars().skip(start).take(LINE_WINDOW).collect();
    let cut_end = start + LINE_WINDOW < line.chars().count();
    if start > 0 {
        window.insert(0, '…');
    }
    if cut_end {
        window.push('…');
    }
    window
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// Runs `take_within` on a thread of its own; the ticket's bytes come back on the channel.
    fn taking(
        in_flight: &Arc<InFlight>,
        bytes: usize,
        stalled: std::time::Duration,
    ) -> std::sync::mpsc::Receiver<usize> {
        let (tx, rx) = std::sync::mpsc::channel();
        let in_flight = in_flight.clone();
        std::thread::spawn(move || {
            let ticket = in_flight.take_within(bytes, stalled);
            let _ = tx.send(ticket.bytes);
            // Held until the test has looked.
            std::thread::sleep(std::time::Duration::from_millis(200));
        });
        rx
    }

    /// Audit 27: tantivy's indexing thread died on a full disk, so the pages it held were
    /// never freed, and the next page waited for room forever (the crawl hung, deaf to
    /// SIGTERM). A page now waits only while pages are being freed.
    #[test]
    fn a_page_waits_for_room_only_while_pages_are_being_freed() {
        let in_flight = Arc::new(InFlight::default());
        let held = in_flight.take(IN_FLIGHT_BYTES);
        // Nothing is freed (a dead indexing thread): let through after the patience.
        let through = taking(&in_flight, 1, std::time::Duration::from_millis(50));
        assert_eq!(
            through.recv_timeout(std::time::Duration::from_secs(10)),
            Ok(1),
            "a page waited forever for room no thread would free"
        );
        // A live thread frees pages: the next waits for room, not for the patience.
        let waiting = taking(&in_flight, 2, std::time::Duration::from_secs(3600));
        assert!(
            waiting
                .recv_timeout(std::time::Duration::from_millis(100))
                .is_err(),
            "no room yet"
        );
        drop(held);
        assert_eq!(
            waiting.recv_timeout(std::time::Duration::from_secs(10)),
            Ok(2)
        );
    }

    /// The brute force, written apart from tantivy and the tokenizer, by the rules of a new
    /// index ([`Words::Folded`]): the whole text in NFD first, then runs of letters, digits,
    /// marks and default-ignorables (U+200B aside; a mark or an ignorable starts none), the
    /// ignorables left out, each run case-folded, in NFC, `i` + U+0307 made `i`, in NFC again,
    /// tokens of 40 bytes or more dropped.
    fn brute_tokens(text: &str) -> Vec<String> {
        use icu_properties::props::{
            DefaultIgnorableCodePoint, GeneralCategory, GeneralCategoryGroup,
        };
        let nfc = icu_normalizer::ComposingNormalizerBorrowed::new_nfc();
        let text = icu_normalizer::DecomposingNormalizerBorrowed::new_nfd().normalize(text);
        let categories = icu_properties::CodePointMapData::<GeneralCategory>::new();
        let ignorables = icu_properties::CodePointSetData::new::<DefaultIgnorableCodePoint>();
        let mut out = Vec::new();
        let mut word = String::new();
        for c in text.chars().chain([' ']) {
            if c != '\u{200b}' && ignorables.contains(c) {
                continue;
            }
            let mark = GeneralCategoryGroup::Mark.contains(categories.get(c));
            if (mark && !word.is_empty()) || (!mark && c.is_alphanumeric()) {
                word.push(c);
                continue;
            }
            if !word.is_empty() {
                let folded = icu_casemap::CaseMapper::new().fold_string(&word);
                let token = nfc
                    .normalize(&nfc.normalize(&folded).replace("i\u{307}", "i"))
                    .into_owned();
                if token.len() < 40 {
                    out.push(token);
                }
            }
            word.clear();
        }
        out
    }

    /// The brute force by the rules before ([`Words::Marks`]): the whole text in NFC first,
    /// then runs of letters, digits and marks (a mark starts none), lowercased per character,
    /// tokens of 40 bytes or more dropped.
    fn brute_tokens_marks(text: &str) -> Vec<String> {
        use icu_properties::props::{GeneralCategory, GeneralCategoryGroup};
        let text = icu_normalizer::ComposingNormalizerBorrowed::new_nfc().normalize(text);
        let categories = icu_properties::CodePointMapData::<GeneralCategory>::new();
        let mut out = Vec::new();
        let mut word = String::new();
        for c in text.chars().chain([' ']) {
            let mark = GeneralCategoryGroup::Mark.contains(categories.get(c));
            if (mark && !word.is_empty()) || (!mark && c.is_alphanumeric()) {
                word.push(c);
                continue;
            }
            if !word.is_empty() && word.len() < 40 {
                out.push(word.chars().flat_map(char::to_lowercase).collect());
            }
            word.clear();
        }
        out
    }

    /// The old rules' brute force ([`Words::Alphanumeric`]): runs of letters and digits,
    /// lowercased per character as tantivy's `LowerCaser` does (no final-sigma rule), tokens
    /// of 40 bytes or more dropped (tantivy's `RemoveLongFilter::limit(40)`).
    fn brute_tokens_alphanumeric(text: &str) -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|t| !t.is_empty() && t.len() < 40)
            .map(|t| t.chars().flat_map(char::to_lowercase).collect())
            .collect()
    }

    fn brute_count(text: &str, word: &str) -> u64 {
        brute_tokens(text).iter().filter(|t| *t == word).count() as u64
    }

    struct Page {
        seq: u64,
        url: String,
        title: String,
        text: String,
    }

    impl Page {
        fn as_indexed(&self) -> IndexedPage<'_> {
            IndexedPage {
                seq: self.seq,
                url: &self.url,
                title: &self.title,
                text: &self.text,
                // One crawl commits in seq order.
                committed_ms: 1_700_000_000_000 + self.seq,
            }
        }
    }

    const VOCABULARY: &[&str] = &[
        "crawler",
        "Spider",
        "rust",
        "the",
        "queue",
        "robots",
        "Café",
        "42",
        "heap",
        "delay",
        "politeness",
        "fetch",
        "don't",
        "HTML",
        "page",
    ];

    /// Thirty pages with seq gaps. Fixed texts from a fixed-seed generator, plus hand-made
    /// pages that tie: `alpha` 5 times on seqs 19 and 70 (the maximum), `beta` once on seqs 22
    /// and 64 (the minimum), and two identical `gamma` pages (seqs 31 and 85).
    fn pages() -> Vec<Page> {
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) as usize) % n
        };
        (0..30)
            .map(|i| {
                let seq = 10 + 3 * i as u64;
                let text = match seq {
                    19 | 70 => "alpha beta beta\nALPHA, alpha!\n\nalpha? Alpha".to_owned(),
                    22 | 64 => "beta alpha\ngamma".to_owned(),
                    31 | 85 => "gamma gamma delay".to_owned(),
                    40 => String::new(),
                    _ => {
                        let lines = 1 + next(5);
                        let mut out = Vec::new();
                        for _ in 0..lines {
                            let words = next(7);
                            let line: Vec<&str> = (0..words)
                                .map(|_| VOCABULARY[next(VOCABULARY.len())])
                                .collect();
                            out.push(line.join(if next(2) == 0 { " " } else { ", " }));
                        }
                        out.join("\n")
                    }
                };
                let title = if seq == 31 || seq == 85 {
                    "Gamma page".to_owned()
                } else {
                    format!("Page {seq} about {}", VOCABULARY[next(VOCABULARY.len())])
                };
                Page {
                    seq,
                    url: format!("http://127.0.0.1:8000/p/{seq}"),
                    title,
                    text,
                }
            })
            .collect()
    }

    const WORDS: &[&str] = &[
        "alpha", "beta", "gamma", "crawler", "spider", "rust", "the", "café", "42", "don", "t",
        "delay", "zebra",
    ];

    /// Writes the pages, committing every seven so the index has several segments.
    fn build(dir: &Path, pages: &[Page]) {
        let mut writer = IndexWriter::open(dir).expect("open writer");
        for chunk in pages.chunks(7) {
            for page in chunk {
                assert!(writer.add(&page.as_indexed()).expect("add").is_added());
            }
            writer.commit().expect("commit");
        }
        writer.close().expect("close");
    }

    fn built() -> (tempfile::TempDir, Vec<Page>, IndexReader) {
        let dir = tempfile::tempdir().expect("tempdir");
        let pages = pages();
        build(dir.path(), &pages);
        let reader = IndexReader::open(dir.path()).expect("open reader");
        (dir, pages, reader)
    }

    fn brute_extreme(pages: &[Page], word: &str, extreme: Extreme) -> Option<Count> {
        let mut best: Option<(u64, &Page)> = None;
        for page in pages {
            let count = brute_count(&page.text, word);
            if count == 0 {
                continue;
            }
            let wins = best.is_none_or(|(c, p)| match extreme {
                Extreme::Most => count > c || (count == c && page.seq < p.seq),
                Extreme::Least => count < c || (count == c && page.seq < p.seq),
            });
            if wins {
                best = Some((count, page));
            }
        }
        best.map(|(count, page)| Count {
            seq: page.seq,
            url: page.url.clone(),
            count,
        })
    }

    #[test]
    fn index_tokenizer_agrees_with_brute_force_on_test_texts() {
        let (schema, fields) = schema();
        let index = Index::create_in_ram(schema);
        register_words(&index);
        let mut analyzer = analyzer(&index, fields).expect("analyzer");
        for page in pages() {
            assert_eq!(tokens(&mut analyzer, &page.text), brute_tokens(&page.text));
            assert_eq!(
                tokens(&mut analyzer, &page.title),
                brute_tokens(&page.title)
            );
        }
        let long = "x".repeat(40);
        assert_eq!(tokens(&mut analyzer, &long), brute_tokens(&long));
        assert_eq!(tokens(&mut analyzer, "ÉTÉ naïve"), vec!["été", "naïve"]);
        for text in MANY_SCRIPTS {
            assert_eq!(tokens(&mut analyzer, text), brute_tokens(text), "{text:?}");
        }
        // An index of each older schema analyzes by its rules.
        let (schema, fields) = schema_with(true, Words::Marks);
        let index = Index::create_in_ram(schema);
        register_words(&index);
        let mut marks = super::analyzer(&index, fields).expect("analyzer");
        for text in pages().iter().map(|p| p.text.as_str()).chain(MANY_SCRIPTS) {
            assert_eq!(
                tokens(&mut marks, text),
                brute_tokens_marks(text),
                "{text:?}"
            );
        }
        let (schema, fields) = schema_with(true, Words::Alphanumeric);
        let index = Index::create_in_ram(schema);
        register_words(&index);
        let mut old = super::analyzer(&index, fields).expect("analyzer");
        for text in pages().iter().map(|p| p.text.as_str()).chain(MANY_SCRIPTS) {
            assert_eq!(
                tokens(&mut old, text),
                brute_tokens_alphanumeric(text),
                "{text:?}"
            );
        }
    }

    /// Texts of scripts whose words hold combining marks, composed and decomposed, invisible
    /// format characters, and capitals that fold apart from lowercasing.
    const MANY_SCRIPTS: [&str; 12] = [
        "हिन्दी भारत की एक प्रमुख भाषा है। फ़िजी \u{95e}िजी",
        "தமிழ் ஒரு திராவிட மொழி",
        "Cafe\u{301} CAFÉ café re\u{301}sume\u{301} =\u{338}",
        "العَرَبِيَّة لُغَةٌ",
        "בְּרֵאשִׁ֖ית בָּרָ֣א ש\u{5c1}\u{5b8}לוֹם",
        "ภาษาไทย ไม่ใช่",
        "\u{1112}\u{1161}\u{11ab}\u{1100}\u{116e}\u{11a8}\u{110b}\u{1165} 한국어",
        "🦀 1\u{fe0f}\u{20e3} \u{301}a \u{94d} Ⓐ²Ⅻ",
        "Donau\u{ad}dampf\u{ad}schiff\u{ad}fahrt in\u{ad}ter\u{ad}na\u{ad}tion\u{ad}al",
        "من کتاب\u{200c}ها را می\u{200c}خواهم. क्\u{200d}ष ক্\u{200c}ষ a\u{2060}b a\u{200b}b",
        "ΝΌΜΟΣ ΚΑΙ ΚΟΣΜΟΣ ο νόμος ᾳ ΆΙ ά\u{345}",
        "İSTANBUL İstanbul istanbul DİYARBAKIR Diyarbakır Straße STRASSE ẞ ﬁle",
    ];

    #[test]
    fn the_word_count_agrees_with_the_analyzer() {
        let mut texts: Vec<String> = pages().into_iter().map(|p| p.text).collect();
        texts.extend(MANY_SCRIPTS.map(String::from));
        texts.push(crate::testweb::generator::DEFAULT_TEXT.to_string());
        // Runs around the length limit, counted in bytes before lowercasing (ẞ is 3 bytes,
        // its lowercase ß 2), other scripts' letters and digits, marks, emoji, controls.
        texts.push(format!(
            "{} {} {}",
            "a".repeat(39),
            "b".repeat(40),
            "c".repeat(41)
        ));
        texts.push(format!("{}ẞ {}ẞ", "a".repeat(36), "a".repeat(37)));
        let alphabet: Vec<char> =
            "aZ9 \n\t.,-_'’“—ẞßÉé٣߀漢字ü\u{301}🦀\u{0}\u{200b}\u{1fff}⁰ⁱⅫ²ह\u{94d}\u{958}\u{5c1}\
             \u{ad}\u{200c}\u{200d}\u{2060}\u{fe0f}İıΣςᾳ\u{345}ŉ"
                .chars()
                .collect();
        let mut rng = crate::testweb::rng::SplitMix64::new(11);
        for _ in 0..300 {
            let len = rng.below(200);
            texts.push(
                (0..len)
                    .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                    .collect(),
            );
        }
        texts.extend(["\n", "\n\n", "a\n", "a\r\nb", "\r\n", "x\n\ny"].map(String::from));
        for (words, text) in [Words::Alphanumeric, Words::Marks, Words::Folded]
            .into_iter()
            .flat_map(|w| texts.iter().map(move |t| (w, t)))
        {
            let counts = text_counts(text, words);
            assert_eq!(
                counts.words,
                tokens(&mut words.analyzer(), text).len() as u64,
                "{text:?} by {words:?}"
            );
            assert_eq!(counts.lines, text.lines().count() as u64, "{text:?}");
            assert_eq!(counts.bytes, text.len() as u64, "{text:?}");
        }
    }

    /// Writes `pages` through a writer and returns a reader of the result.
    fn index_of(dir: &Path, pages: &[Page]) -> (IndexReader, usize) {
        let mut writer = IndexWriter::open(dir).expect("writer");
        for page in pages {
            assert!(writer.add(&page.as_indexed()).expect("add").is_added());
        }
        writer.commit().expect("commit");
        let peak = writer.peak_in_flight_bytes();
        writer.close().expect("close");
        (IndexReader::open(dir).expect("reader"), peak)
    }

    fn one_page(seq: u64, text: String) -> Page {
        Page {
            seq,
            url: format!("http://127.0.0.1:8000/hostile/{seq}"),
            title: "hostile".into(),
            text,
        }
    }

    #[test]
    fn pages_waiting_for_tantivy_are_bounded_by_bytes_not_by_count() {
        // 600 pages of 20 kB (12 MB) are added far faster than tantivy indexes them; its own
        // queue would take them all, so the bound is what keeps them out of memory.
        let dir = tempfile::tempdir().expect("tempdir");
        let line = "the white rabbit ran down the hole and the queen shouted ".repeat(4);
        let pages: Vec<Page> = (1..=600)
            .map(|seq| one_page(seq, format!("{seq}\n{}", format!("{line}\n").repeat(85))))
            .collect();
        let (reader, peak) = index_of(dir.path(), &pages);
        assert!(peak <= IN_FLIGHT_BYTES, "peak {peak} bytes in flight");
        assert!(
            peak > IN_FLIGHT_BYTES / 2,
            "the bound was never reached: {peak}"
        );
        assert_eq!(reader.word_count().expect("wc").pages, 600);
    }

    #[test]
    fn a_page_of_ten_mebibytes_of_one_word_is_indexed_and_counted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let repeated = "rabbit ".repeat((10 << 20) / 7);
        let words = (10 << 20) / 7;
        // One word repeated, then one token of 10 MiB (over the word length: no word at all),
        // then a small page after both: a page larger than the in-flight bound goes alone and
        // the ones after it still go.
        let pages = vec![
            one_page(1, repeated),
            one_page(2, "a".repeat(10 << 20)),
            one_page(3, "rabbit".into()),
        ];
        let (reader, peak) = index_of(dir.path(), &pages);
        assert!(peak >= 10 << 20, "a large page goes alone: {peak}");
        let most = reader.max_count("rabbit").expect("max").expect("indexed");
        assert_eq!((most.seq, most.count), (1, words as u64));
        let least = reader.min_count("rabbit").expect("min").expect("indexed");
        assert_eq!((least.seq, least.count), (3, 1));
        let wc = reader.word_count().expect("wc");
        assert_eq!((wc.pages, wc.words), (3, words as u64 + 1));
        assert_eq!(
            wc.bytes,
            pages.iter().map(|p| p.text.len() as u64).sum::<u64>()
        );
    }

    #[test]
    fn a_page_of_a_million_distinct_words_is_indexed_up_to_the_cap() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = (0..1_000_000)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ");
        let first_cut = format!(" w{MAX_DISTINCT_WORDS} ");
        let kept_bytes = text.find(&first_cut).expect("the word after the cap") + 1;
        let mut writer = IndexWriter::open(dir.path()).expect("writer");
        let added = writer.add(&one_page(7, text).as_indexed()).expect("add");
        let cut = Cut {
            kept_words: MAX_DISTINCT_WORDS as u64,
            words: 1_000_000,
        };
        assert_eq!(added, Added::Cut(cut));
        writer.commit().expect("commit");
        writer.close().expect("close");
        let reader = IndexReader::open(dir.path()).expect("reader");
        let wc = reader.word_count().expect("wc");
        assert_eq!(
            (wc.pages, wc.words, wc.bytes, wc.lines),
            (1, MAX_DISTINCT_WORDS as u64, kept_bytes as u64, 1)
        );
        let last_kept = format!("w{}", MAX_DISTINCT_WORDS - 1);
        for word in ["w0", "w50000", last_kept.as_str()] {
            let count = reader.max_count(word).expect("max").expect("indexed");
            assert_eq!((count.seq, count.count), (7, 1), "{word}");
        }
        for word in [first_cut.trim(), "w999999"] {
            assert_eq!(reader.max_count(word).expect("max"), None, "{word}");
            assert!(
                reader.search(word, 10).expect("search").is_empty(),
                "{word}"
            );
        }
        assert_eq!(
            cut.to_string(),
            format!(
                "text cut at {MAX_DISTINCT_WORDS} distinct words for the index \
                 ({MAX_DISTINCT_WORDS} words of 1000000 kept)"
            )
        );
    }

    #[test]
    fn a_page_at_the_cap_is_whole_and_one_word_more_is_cut_before_it() {
        // n distinct words (`W0` is `w0`), each followed by a repeat, so the text is long
        // enough to be scanned.
        let words = |n: usize| {
            (0..n)
                .map(|i| format!("W{i} w0"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let dir = tempfile::tempdir().expect("tempdir");
        let mut writer = IndexWriter::open(dir.path()).expect("writer");
        let below = words(MAX_DISTINCT_WORDS - 1);
        let at_cap = words(MAX_DISTINCT_WORDS);
        let above = format!("{at_cap} Über w1");
        for (seq, text) in [(1, &below), (2, &at_cap)] {
            let added = writer.add(&one_page(seq, text.clone()).as_indexed());
            assert_eq!(added.expect("add"), Added::Whole, "page {seq}");
        }
        let cut = writer.add(&one_page(3, above).as_indexed()).expect("add");
        let at_cap_words = 2 * MAX_DISTINCT_WORDS as u64;
        assert_eq!(
            cut,
            Added::Cut(Cut {
                kept_words: at_cap_words,
                words: at_cap_words + 2
            })
        );
        writer.commit().expect("commit");
        writer.close().expect("close");
        let reader = IndexReader::open(dir.path()).expect("reader");
        assert!(reader.search("über", 10).expect("search").is_empty());
        // `w1` after the cut is not counted on page 3: it ties with pages 1 and 2.
        let most = reader.max_count("w1").expect("max").expect("indexed");
        assert_eq!((most.seq, most.count), (1, 1));
        let wc = reader.word_count().expect("wc");
        assert_eq!(wc.words, 3 * at_cap_words - 2);
        assert_eq!(
            wc.bytes,
            (below.len() + at_cap.len() + at_cap.len() + " ".len()) as u64
        );
    }

    #[test]
    fn text_whose_invalid_bytes_were_replaced_is_indexed_as_it_reads() {
        // The parser replaces invalid UTF-8 with U+FFFD, which is no letter: it splits words.
        let dir = tempfile::tempdir().expect("tempdir");
        let text =
            "caf\u{FFFD} na\u{FFFD}ve \u{FFFD}\u{FFFD}\u{FFFD}\nrabbit\u{FFFD}hole ok".to_string();
        let pages = vec![one_page(1, text.clone())];
        let (reader, _) = index_of(dir.path(), &pages);
        let wc = reader.word_count().expect("wc");
        assert_eq!(wc.words, brute_tokens(&text).len() as u64);
        assert_eq!((wc.words, wc.lines), (6, 2));
        for word in ["caf", "na", "ve", "rabbit", "hole"] {
            let hits = reader.search(word, 10).expect("search");
            assert_eq!(hits.len(), 1, "{word}");
        }
        assert_eq!(
            hits_of(&reader, "rabbit"),
            vec![(2, "rabbit\u{FFFD}hole ok".to_string())]
        );
    }

    /// A minified page's text is one long line: a hit carries a window of it around the first
    /// match, not the whole line; a line of the window's size is kept whole.
    #[test]
    fn a_long_matching_line_is_cut_around_its_first_match() {
        let dir = tempfile::tempdir().expect("tempdir");
        let filler = |n: usize| "ab ".repeat(n);
        let long = format!("{}zebra {}", filler(2_000), filler(2_000));
        // Exactly the window's size, in characters (two bytes each for the é).
        let whole = format!("{}zebra ", "é ".repeat((LINE_WINDOW - 6) / 2));
        assert_eq!(whole.chars().count(), LINE_WINDOW);
        let pages = vec![
            one_page(1, format!("first\n{long}\nlast zebra")),
            one_page(2, whole.clone()),
        ];
        let (reader, _) = index_of(dir.path(), &pages);
        let hits = reader.search("zebra", 10).expect("search");
        let lines = |seq: u64| {
            hits.iter()
                .find(|h| h.seq == seq)
                .map(|h| h.lines.clone())
                .expect("hit")
        };
        let cut = lines(1);
        assert_eq!(cut.len(), 2, "every matching line is still listed");
        let (n, window) = &cut[0];
        assert_eq!(*n, 2);
        assert_eq!(window.chars().count(), LINE_WINDOW + 2, "{window}");
        assert!(window.starts_with('…') && window.ends_with('…'), "{window}");
        let at = window.find("zebra").expect("the match is in the window");
        assert_eq!(window[..at].chars().count(), 1 + LINE_LEAD, "{window}");
        assert_eq!(cut[1], (3, "last zebra".to_string()));
        assert_eq!(lines(2), [(1, whole)]);
    }

    /// A page of many matching lines: its hit carries the first [`MAX_HIT_LINES`] of them and
    /// how many there are, so one answer stays small whatever the page (audit 22: a page of
    /// 300,000 matching lines made one answer 27 MB).
    #[test]
    fn a_hit_carries_its_first_lines_and_the_number_of_all() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = (1..=1_000)
            .map(|n| format!("rabbit hole {n}\nno match here"))
            .collect::<Vec<_>>()
            .join("\n");
        let (reader, _) = index_of(dir.path(), &[one_page(1, text)]);
        let hits = reader.search("rabbit", 10).expect("search");
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].line_count, 1_000);
        let expected: Vec<(usize, String)> = (1..=MAX_HIT_LINES)
            .map(|n| (2 * n - 1, format!("rabbit hole {n}")))
            .collect();
        assert_eq!(hits[0].lines, expected);
    }

    fn hits_of(reader: &IndexReader, word: &str) -> Vec<(usize, String)> {
        reader
            .search(word, 1)
            .expect("search")
            .into_iter()
            .flat_map(|h| h.lines)
            .collect()
    }

    #[test]
    fn search_returns_exactly_the_pages_with_the_word_and_their_lines() {
        let (_dir, pages, reader) = built();
        for word in WORDS {
            let hits = reader.search(word, 1000).expect("search");
            let got: BTreeMap<u64, Vec<(usize, String)>> =
                hits.into_iter().map(|h| (h.seq, h.lines)).collect();
            let want: BTreeMap<u64, Vec<(usize, String)>> = pages
                .iter()
                .filter(|p| brute_count(&p.text, word) + brute_count(&p.title, word) > 0)
                .map(|p| {
                    let lines = p
                        .text
                        .lines()
                        .enumerate()
                        .filter(|(_, l)| brute_count(l, word) > 0)
                        .map(|(i, l)| (i + 1, l.to_owned()))
                        .collect();
                    (p.seq, lines)
                })
                .collect();
            assert_eq!(
                want.is_empty(),
                *word == "zebra",
                "test data must hold {word}"
            );
            assert_eq!(got, want, "word {word}");
        }
    }

    #[test]
    fn search_counted_counts_every_match_beyond_the_limit() {
        let (_dir, pages, reader) = built();
        assert_eq!(reader.pages(), pages.len() as u64);
        for word in WORDS {
            let want = pages
                .iter()
                .filter(|p| brute_count(&p.text, word) + brute_count(&p.title, word) > 0)
                .count();
            let results = reader.search_counted(word, 2).expect("search");
            assert_eq!(results.total, want, "word {word}");
            assert_eq!(results.hits.len(), want.min(2), "word {word}");
            assert_eq!(results.hits, reader.search(word, 2).expect("search"));
            assert_eq!(reader.search_counted(word, 0).expect("count").total, want);
        }
    }

    /// Wildcards and fuzzy words are refused, naming the term, not split into other words
    /// that quietly match nothing; a phrase's slop still works.
    #[test]
    fn wildcards_and_fuzzy_words_are_refused_and_phrase_slop_works() {
        let (_dir, _pages, reader) = built();
        for (query, term) in [
            ("rabb*", "rabb*"),
            ("alice rabbit~2", "rabbit~2"),
            ("*", "*"),
            ("title:ali*", "title:ali*"),
            ("\"white rabbit\" hatt~", "hatt~"),
            // Wide and non-breaking spaces around the term (a slice inside one panicked).
            ("alice\u{3000}rabb*", "rabb*"),
            ("rabb*\u{3000}alice", "rabb*"),
            ("alice\u{a0}rabbit~2\u{a0}x", "rabbit~2"),
            // An escaped quote opens no phrase.
            ("a\\\"b alic*", "alic*"),
        ] {
            match reader.search(query, 10) {
                Err(IndexError::Unsupported { term: t }) => assert_eq!(t, term, "{query}"),
                other => panic!("{query}: {other:?}"),
            }
        }
        for query in ["\"the rabbit\"~2", "\"a*b\"", "alice"] {
            reader.search(query, 10).expect(query);
        }
        let loose = reader.search("\"the rabbit\"~3", 1000).expect("slop");
        let tight = reader.search("\"the rabbit\"", 1000).expect("phrase");
        assert!(
            loose.len() >= tight.len(),
            "{} {}",
            loose.len(),
            tight.len()
        );
    }

    /// Lucene's `&&` and prefix `!` are refused with the words that work, not dropped as
    /// words without letters (which made `rabbit !alice` find the pages with alice); a `!`
    /// inside or after a word, or quoted, is punctuation as before.
    #[test]
    fn lucene_operators_tantivy_does_not_know_are_refused() {
        let (_dir, _pages, reader) = built();
        for (query, op) in [
            ("alice && rabbit", "&&"),
            ("alice&&rabbit", "&&"),
            ("rabbit !alice", "!"),
            ("!alice", "!"),
            ("rabbit (!alice)", "!"),
        ] {
            match reader.search(query, 10) {
                Err(IndexError::NotAnOperator { op: o }) => assert_eq!(o, op, "{query}"),
                other => panic!("{query}: {other:?}"),
            }
        }
        let error = reader.search("rabbit !alice", 10).expect_err("refused");
        assert!(error.to_string().contains("NOT"), "{error}");
        for query in [
            "alice!",
            "wow! alice",
            "\"alice && rabbit\"",
            "alice ! rabbit",
            "a!b",
        ] {
            reader.search(query, 10).expect(query);
        }
    }

    /// `AND`, `OR` and `NOT` with no word to join are refused, saying which side is empty;
    /// tantivy searched `rabbit AND` as the word "and" (every page with it) and failed on
    /// `OR rabbit` with "unexpected boolean operator" (audits 29 and 31).
    #[test]
    fn and_or_not_with_nothing_to_join_are_refused() {
        let (_dir, _pages, reader) = built();
        for (query, op, side) in [
            ("rabbit AND", "AND", "after"),
            ("\"white rabbit\" AND", "AND", "after"),
            ("OR rabbit", "OR", "before"),
            ("AND rabbit", "AND", "before"),
            ("(OR rabbit)", "OR", "before"),
            ("rabbit (white OR)", "OR", "after"),
            ("rabbit OR OR white", "OR", "after"),
            ("rabbit NOT", "NOT", "after"),
            ("rabbit AND NOT", "NOT", "after"),
            ("AND", "AND", "before"),
        ] {
            match reader.search(query, 10) {
                Err(IndexError::JoinsNothing { op: o, side: s, .. }) => {
                    assert_eq!((o, s), (op, side), "{query}");
                }
                other => panic!("{query}: {other:?}"),
            }
        }
        let error = reader.search("rabbit AND", 10).expect_err("refused");
        assert_eq!(
            error.to_string(),
            "AND has no word after it: put one there, or write \"and\" to search the word"
        );
        // Joins with words on both sides, and the words themselves, still search.
        for query in [
            "rabbit AND alice",
            "rabbit OR (alice AND queen)",
            "rabbit AND NOT alice",
            "NOT alice rabbit",
            "rabbit and",
            "or rabbit",
            "\"rabbit AND\"",
            "rabbit \\AND",
            "title:(rabbit OR alice)",
        ] {
            reader.search(query, 10).expect(query);
        }
    }

    #[test]
    fn and_not_excludes_as_not_and_minus_do() {
        let (_dir, pages, reader) = built();
        let seqs = |query: &str| -> Vec<u64> {
            let mut seqs: Vec<u64> = (reader.search(query, 1000).expect(query).iter())
                .map(|h| h.seq)
                .collect();
            seqs.sort_unstable();
            seqs
        };
        let has = |p: &Page, w: &str| brute_count(&p.text, w) + brute_count(&p.title, w) > 0;
        let (a, b) = ("alpha", "gamma");
        let want: Vec<u64> = pages
            .iter()
            .filter(|p| has(p, a) && !has(p, b))
            .map(|p| p.seq)
            .collect();
        assert!(!want.is_empty() && want.len() < pages.len(), "{want:?}");
        for query in [
            "alpha AND NOT gamma",
            "alpha NOT gamma",
            "+alpha -gamma",
            "(alpha) AND (NOT gamma)",
        ] {
            assert_eq!(seqs(query), want, "{query}");
        }
        // Exclusions that are not required keep their meaning: nothing is lifted out of OR.
        assert_eq!(seqs("alpha OR beta"), seqs("beta OR alpha"));
    }

    #[test]
    fn search_is_case_insensitive() {
        let (_dir, _pages, reader) = built();
        let lower: Vec<u64> = reader
            .search("spider", 100)
            .expect("search")
            .iter()
            .map(|h| h.seq)
            .collect();
        let upper: Vec<u64> = reader
            .search("SPIDER", 100)
            .expect("search")
            .iter()
            .map(|h| h.seq)
            .collect();
        assert!(!lower.is_empty());
        assert_eq!(lower, upper);
    }

    #[test]
    fn search_orders_by_score_then_lowest_seq() {
        let (_dir, _pages, reader) = built();
        for word in WORDS {
            let hits = reader.search(word, 1000).expect("search");
            for pair in hits.windows(2) {
                assert!(
                    pair[0].score > pair[1].score
                        || (pair[0].score.to_bits() == pair[1].score.to_bits()
                            && pair[0].seq < pair[1].seq),
                    "word {word}: {pair:?}"
                );
            }
        }
    }

    #[test]
    fn search_tie_between_identical_pages_goes_to_lowest_seq() {
        let (_dir, _pages, reader) = built();
        let hits = reader.search("gamma", 1).expect("search");
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].seq, 31);
        let hits = reader.search("gamma", 2).expect("search");
        assert_eq!(hits.iter().map(|h| h.seq).collect::<Vec<_>>(), vec![31, 85]);
        // Identical pages score bit for bit the same: the tie is real.
        assert_eq!(hits[0].score.to_bits(), hits[1].score.to_bits());
    }

    #[test]
    fn max_count_matches_brute_force() {
        let (_dir, pages, reader) = built();
        for word in WORDS {
            let want = brute_extreme(&pages, word, Extreme::Most);
            assert_eq!(reader.max_count(word).expect("max"), want, "word {word}");
        }
    }

    #[test]
    fn min_count_matches_brute_force() {
        let (_dir, pages, reader) = built();
        for word in WORDS {
            let want = brute_extreme(&pages, word, Extreme::Least);
            assert_eq!(reader.min_count(word).expect("min"), want, "word {word}");
        }
    }

    #[test]
    fn max_count_tie_goes_to_lowest_seq() {
        let (_dir, _pages, reader) = built();
        let count = reader
            .max_count("Alpha")
            .expect("max")
            .expect("alpha occurs");
        assert_eq!((count.seq, count.count), (19, 5));
    }

    #[test]
    fn min_count_tie_goes_to_lowest_seq() {
        let (_dir, _pages, reader) = built();
        let count = reader.min_count("beta").expect("min").expect("beta occurs");
        assert_eq!((count.seq, count.count), (22, 1));
    }

    #[test]
    fn unknown_word_has_no_count_and_no_hits() {
        let (_dir, _pages, reader) = built();
        assert_eq!(reader.max_count("zebra").expect("max"), None);
        assert_eq!(reader.min_count("zebra").expect("min"), None);
        assert!(reader.search("zebra", 10).expect("search").is_empty());
    }

    #[test]
    fn count_rejects_what_is_not_one_word() {
        let (_dir, _pages, reader) = built();
        assert!(matches!(reader.max_count(""), Err(IndexError::EmptyQuery)));
        assert!(matches!(
            reader.max_count("  "),
            Err(IndexError::EmptyQuery)
        ));
        assert!(matches!(
            reader.max_count("two words"),
            Err(IndexError::NotOneWord { .. })
        ));
        // No word at all: punctuation, or a run of letters too long to be indexed (it was
        // "not one word: it splits into []").
        for nothing in ["!?", &"a".repeat(45)] {
            let message = reader.min_count(nothing).expect_err("no word").to_string();
            assert!(message.contains("names no word to look for"), "{message}");
            assert!(message.contains("shorter than 40 bytes"), "{message}");
        }
        assert!(matches!(
            reader.max_count(&"a".repeat(100_000)),
            Err(IndexError::QueryTooLong { .. })
        ));
        let message = reader
            .max_count("don't")
            .expect_err("two tokens")
            .to_string();
        assert!(message.contains("not one word"), "{message}");
    }

    /// Audit 29, finding 7: `zebra!` was counted and `zebra*` refused as a search with
    /// wildcards. A counted word is read by the analyzer alone: punctuation around it is
    /// dropped whatever it is, inside it splits it.
    #[test]
    fn a_counted_word_is_read_as_the_index_reads_words_whatever_its_punctuation() {
        let (_dir, pages, reader) = built();
        let want = brute_extreme(&pages, "alpha", Extreme::Most);
        assert!(want.is_some());
        for word in [
            "alpha!", "alpha*", "alpha~", "alpha)", "(alpha", "*alpha*", "alpha?",
        ] {
            let got = reader
                .max_count(word)
                .unwrap_or_else(|e| panic!("{word:?}: {e}"));
            assert_eq!(got, want, "{word:?}");
        }
        for word in ["al*pha", "al~pha", "title:alpha"] {
            let err = reader.max_count(word).expect_err("two words");
            assert!(
                matches!(err, IndexError::NotOneWord { .. }),
                "{word:?}: {err}"
            );
        }
        assert!(matches!(
            reader.max_count("*"),
            Err(IndexError::NoWords { .. })
        ));
        // The titles `maxcount` mentions are found by the word's token: `gamma)` was made
        // the query `title:gamma)`, a syntax error that counted no title.
        for word in ["gamma", "GAMMA", "gamma)", "(gamma!"] {
            assert_eq!(reader.in_titles(word).expect("titles"), 2, "{word:?}");
        }
    }

    #[test]
    fn word_count_matches_brute_force() {
        let (_dir, pages, reader) = built();
        let want = WordCount {
            pages: pages.len() as u64,
            bytes: pages.iter().map(|p| p.text.len() as u64).sum(),
            words: pages
                .iter()
                .map(|p| brute_tokens(&p.text).len() as u64)
                .sum(),
            lines: pages.iter().map(|p| p.text.lines().count() as u64).sum(),
        };
        assert_eq!(reader.word_count().expect("wc"), want);
    }

    #[test]
    fn readding_committed_seqs_is_refused_and_duplicates_nothing() {
        let (dir, pages, reader) = built();
        let before = (
            reader.word_count().expect("wc"),
            reader.max_count("alpha").expect("max"),
        );
        let mut writer = IndexWriter::open(dir.path()).expect("reopen writer");
        assert_eq!(writer.highest_seq(), Some(97));
        for page in &pages {
            assert!(!writer.add(&page.as_indexed()).expect("add").is_added());
        }
        writer.commit().expect("commit");
        writer.close().expect("close");
        reader.reload().expect("reload");
        let after = (
            reader.word_count().expect("wc"),
            reader.max_count("alpha").expect("max"),
        );
        assert_eq!(before, after);
        assert_eq!(reader.search("gamma", 100).expect("search").len(), 4);
    }

    #[test]
    fn uncommitted_pages_are_lost_and_a_resume_adds_them_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pages = pages();
        let mut writer = IndexWriter::open(dir.path()).expect("open");
        for page in &pages[..10] {
            writer.add(&page.as_indexed()).expect("add");
        }
        writer.commit().expect("commit");
        for page in &pages[10..15] {
            writer.add(&page.as_indexed()).expect("add");
        }
        assert_eq!(writer.highest_seq(), Some(pages[14].seq));
        drop(writer); // a crash: the last five were never committed
        let mut writer = IndexWriter::open(dir.path()).expect("reopen");
        assert_eq!(writer.highest_seq(), Some(pages[9].seq));
        let added: Vec<bool> = pages
            .iter()
            .map(|p| writer.add(&p.as_indexed()).expect("add").is_added())
            .collect();
        assert_eq!(added, (0..30).map(|i| i >= 10).collect::<Vec<_>>());
        writer.commit().expect("commit");
        writer.close().expect("close");
        let reader = IndexReader::open(dir.path()).expect("reader");
        assert_eq!(reader.word_count().expect("wc").pages, 30);
    }

    #[test]
    fn a_rollback_forgets_the_pages_above_the_mark_and_takes_them_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pages = pages();
        let mut writer = IndexWriter::open(dir.path()).expect("open");
        for page in &pages {
            writer.add(&page.as_indexed()).expect("add");
        }
        writer.commit().expect("commit");
        let mark = pages[20].seq;
        writer.rollback_from(mark).expect("rollback");
        assert_eq!(writer.highest_seq(), Some(pages[19].seq));
        let reader = IndexReader::open(dir.path()).expect("reader");
        assert_eq!(reader.word_count().expect("wc").pages, 20);
        for page in &pages[20..] {
            assert!(
                writer.add(&page.as_indexed()).expect("add").is_added(),
                "taken again"
            );
        }
        writer.commit().expect("commit");
        reader.reload().expect("reload");
        assert_eq!(reader.word_count().expect("wc").pages, 30);
        writer.rollback_from(0).expect("rollback all");
        assert_eq!(writer.highest_seq(), None);
    }

    #[test]
    fn reader_sees_new_pages_after_commit_and_reload() {
        let dir = tempfile::tempdir().expect("tempdir");
        let pages = pages();
        let mut writer = IndexWriter::open(dir.path()).expect("writer");
        writer.add(&pages[0].as_indexed()).expect("add");
        writer.commit().expect("commit");
        let reader = IndexReader::open(dir.path()).expect("reader");
        assert_eq!(reader.word_count().expect("wc").pages, 1);
        writer.add(&pages[3].as_indexed()).expect("add");
        reader.reload().expect("reload");
        assert_eq!(
            reader.word_count().expect("wc").pages,
            1,
            "not committed yet"
        );
        writer.commit().expect("commit");
        assert_eq!(
            reader.word_count().expect("wc").pages,
            1,
            "not reloaded yet"
        );
        reader.reload().expect("reload");
        assert_eq!(reader.word_count().expect("wc").pages, 2);
        let hit = reader
            .max_count("alpha")
            .expect("max")
            .expect("alpha on seq 19");
        assert_eq!(hit.seq, 19);
    }

    #[test]
    fn second_writer_on_one_folder_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let _writer = IndexWriter::open(dir.path()).expect("writer");
        let err = IndexWriter::open(dir.path()).err().expect("lock taken");
        assert!(matches!(err, IndexError::Locked(_)), "{err}");
    }

    #[test]
    fn folder_without_index_is_no_index_with_a_clear_message() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = IndexReader::open(dir.path()).err().expect("empty folder");
        assert!(matches!(err, IndexError::NoIndex(_)));
        assert!(err.to_string().contains("holds no search index"), "{err}");
        let missing = dir.path().join("nope");
        let err = IndexReader::open(&missing).err().expect("missing folder");
        assert!(matches!(err, IndexError::NoIndex(_)));
        assert!(!missing.exists(), "a reader must not create the folder");
    }

    #[test]
    fn hostile_queries_give_clear_errors_or_empty_results() {
        let (_dir, _pages, reader) = built();
        let cases: &[&str] = &[
            "\"alpha beta",
            "alpha\"",
            "AND",
            "OR",
            "NOT",
            "*",
            "-",
            "+",
            "()",
            ")(",
            "title:",
            ":",
            "alpha AND",
            "AND alpha",
            "\\",
            "[a TO",
            "~2",
            "^",
        ];
        for query in cases {
            match reader.search(query, 10) {
                Ok(hits) => assert!(hits.len() <= 10, "{query}"),
                Err(err) => assert!(!err.to_string().is_empty(), "{query}"),
            }
        }
        assert!(matches!(
            reader.search("\"alpha beta", 10),
            Err(IndexError::BadQuery { .. })
        ));
        // A dash alone is no operator (a pasted title's `Alice - White Rabbit`): no word.
        assert!(matches!(
            reader.search("-", 10),
            Err(IndexError::NoWords { .. })
        ));
        assert!(matches!(
            reader.search("NOT", 10),
            Err(IndexError::JoinsNothing { op: "NOT", .. })
        ));
        assert!(matches!(
            reader.search("-alpha", 10),
            Err(IndexError::BadQuery { .. })
        ));
        // A lone AND or OR joins nothing; the word itself is searched in lowercase.
        for op in ["AND", "OR"] {
            assert!(matches!(
                reader.search(op, 10),
                Err(IndexError::JoinsNothing { .. })
            ));
            let word = op.to_lowercase();
            assert!(reader.search(&word, 10).expect("the word").is_empty());
        }
        assert!(matches!(
            reader.search("\\", 10),
            Err(IndexError::NoWords { .. })
        ));
        assert!(matches!(reader.search("", 10), Err(IndexError::EmptyQuery)));
        assert!(matches!(
            reader.search(" \t\n", 10),
            Err(IndexError::EmptyQuery)
        ));
        assert!(matches!(
            reader.search("*", 10),
            Err(IndexError::Unsupported { .. })
        ));
        assert!(matches!(
            reader.search(&"alpha ".repeat(20_000), 10),
            Err(IndexError::QueryTooLong { .. })
        ));
        assert!(matches!(
            reader.search(&"(".repeat(500), 10),
            Err(IndexError::QueryTooDeep { .. })
        ));
        assert!(reader.search("alpha", 0).expect("limit 0").is_empty());
    }

    #[test]
    fn largest_accepted_queries_do_not_panic() {
        let (_dir, _pages, reader) = built();
        let words = "alpha ".repeat(MAX_QUERY_BYTES / 6);
        assert!(!reader.search(&words, 10).expect("many words").is_empty());
        let nested = format!(
            "{}alpha{}",
            "(".repeat(MAX_QUERY_NESTING),
            ")".repeat(MAX_QUERY_NESTING)
        );
        assert!(!reader.search(&nested, 10).expect("nested").is_empty());
        let quotes = "\"".repeat(MAX_QUERY_BYTES);
        let _ = reader.search(&quotes, 10);
    }

    #[test]
    fn phrase_query_matches_adjacent_words_only() {
        let (_dir, _pages, reader) = built();
        let seqs: BTreeSet<u64> = reader
            .search("\"gamma delay\"", 100)
            .expect("phrase")
            .iter()
            .map(|h| h.seq)
            .collect();
        assert_eq!(seqs, BTreeSet::from([31, 85]));
    }

    #[test]
    fn word_with_apostrophe_is_searchable() {
        let (_dir, pages, reader) = built();
        let want: BTreeSet<u64> = pages
            .iter()
            .filter(|p| p.text.contains("don't") || p.title.contains("don't"))
            .map(|p| p.seq)
            .collect();
        let got: BTreeSet<u64> = reader
            .search("don't", 100)
            .expect("search")
            .iter()
            .map(|h| h.seq)
            .collect();
        assert!(!want.is_empty());
        assert_eq!(got, want);
    }

    #[test]
    fn bad_query_message_says_where() {
        let (_dir, _pages, reader) = built();
        let message = reader
            .search("alpha AND (beta", 10)
            .expect_err("unbalanced")
            .to_string();
        assert!(
            message.starts_with("cannot understand the query"),
            "{message}"
        );
        assert!(message.contains("position"), "{message}");
    }

    #[test]
    fn index_with_other_fields_is_refused_as_foreign() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut builder = Schema::builder();
        builder.add_text_field("body", TEXT);
        Index::create_in_dir(dir.path(), builder.build()).expect("other index");
        let err = IndexReader::open(dir.path()).err().expect("foreign");
        assert!(matches!(err, IndexError::ForeignIndex(_)), "{err}");
        let err = IndexWriter::open(dir.path()).err().expect("foreign");
        assert!(matches!(err, IndexError::ForeignIndex(_)), "{err}");
    }

    /// A crawl folder whose index holds `pages` as (seq, text, commit time), all of them with the
    /// title "t"; `stamped: false` makes the index as crawltop wrote it before commit times.
    fn crawl_folder(root: &Path, name: &str, stamped: bool, pages: &[(u64, &str, u64)]) -> PathBuf {
        let folder = root.join(name);
        let dir = folder.join("index");
        if !stamped {
            std::fs::create_dir_all(&dir).expect("index dir");
            Index::create_in_dir(&dir, schema_with(false, Words::Alphanumeric).0)
                .expect("an index of the old format");
        }
        let mut writer = IndexWriter::open(&dir).expect("open writer");
        for &(seq, text, committed_ms) in pages {
            let url = format!("http://127.0.0.1:8000/{seq}");
            let page = IndexedPage {
                seq,
                url: &url,
                title: "t",
                text,
                committed_ms,
            };
            assert!(writer.add(&page).expect("add").is_added());
        }
        writer.commit().expect("commit");
        writer.close().expect("close");
        folder
    }

    /// Which crawl answers `maxcount`, `mincount` and the top hit of `search` for `rabbit`.
    fn winners(folders: &[PathBuf]) -> (usize, usize, usize) {
        let crawls = Crawls::open(folders).expect("open");
        let most = crawls.max_count("rabbit").expect("max").expect("found");
        let least = crawls.min_count("rabbit").expect("min").expect("found");
        let (_, hits) = crawls.search("rabbit", 10).expect("search");
        (most.crawl, least.crawl, hits[0].crawl)
    }

    #[test]
    fn across_crawls_equal_scores_and_counts_go_to_the_earlier_commit_then_the_folder_named_first()
    {
        let root = tempfile::tempdir().expect("tempdir");
        let same = [(1, "white rabbit", 0), (2, "rabbit rabbit hole", 0)];
        let at = |ms: u64| same.map(|(seq, text, _)| (seq, text, ms + seq));
        let early = crawl_folder(root.path(), "early", true, &at(1_000));
        let late = crawl_folder(root.path(), "late", true, &at(2_000));
        assert_eq!(winners(&[early.clone(), late.clone()]), (0, 0, 0));
        assert_eq!(winners(&[late.clone(), early.clone()]), (1, 1, 1));
        // The same commit times: the folder named first.
        let twin = crawl_folder(root.path(), "twin", true, &at(1_000));
        assert_eq!(winners(&[early.clone(), twin.clone()]), (0, 0, 0));
        assert_eq!(winners(&[twin, early.clone()]), (0, 0, 0));
        // A higher seq committed earlier (another member's crawl) still wins on time.
        let other = crawl_folder(
            root.path(),
            "other",
            true,
            &[(70, "white rabbit", 500), (71, "rabbit rabbit hole", 501)],
        );
        assert_eq!(winners(&[early, other]), (1, 1, 1));
    }

    #[test]
    fn an_index_without_commit_times_opens_and_resumes_and_its_pages_tie_after_stamped_ones() {
        let root = tempfile::tempdir().expect("tempdir");
        let same = [(1, "white rabbit", 5), (2, "rabbit rabbit hole", 6)];
        let old = crawl_folder(root.path(), "old", false, &same);
        // Resumed by today's writer: it adds pages to the old format, which it keeps.
        let mut writer = IndexWriter::open(&old.join("index")).expect("resume the old index");
        let page = IndexedPage {
            seq: 3,
            url: "http://127.0.0.1:8000/3",
            title: "t",
            text: "the end",
            committed_ms: 7,
        };
        assert!(writer.add(&page).expect("add").is_added());
        writer.commit().expect("commit");
        writer.close().expect("close");
        let reader = IndexReader::open(&old.join("index")).expect("reads the old index");
        assert_eq!(reader.pages(), 3);
        assert_eq!(reader.search("end", 10).expect("search")[0].seq, 3);
        assert!(reader.fields.committed.is_none(), "the old format stays");

        // Against a stamped crawl committed at any time, the stamped pages win the ties...
        let new = crawl_folder(
            root.path(),
            "new",
            true,
            &[
                (1, "white rabbit", u64::MAX - 1),
                (2, "rabbit rabbit hole", u64::MAX - 1),
            ],
        );
        assert_eq!(winners(&[old.clone(), new.clone()]), (1, 1, 1));
        assert_eq!(winners(&[new, old.clone()]), (0, 0, 0));
        // ...and between two old ones, the folder named first, as before.
        let old2 = crawl_folder(root.path(), "old2", false, &same);
        assert_eq!(winners(&[old.clone(), old2.clone()]), (0, 0, 0));
        assert_eq!(winners(&[old2, old]), (0, 0, 0));
    }

    /// Page texts for the word-rules tests: a decomposed `café`, and Hindi (four times on
    /// seq 2, once on seq 3).
    const SCRIPT_PAGES: [(u64, &str, u64); 3] = [
        (1, "le cafe\u{301} noir", 11),
        (2, "हिन्दी हिन्दी\nहिन्दी और हिन्दी", 12),
        (3, "हिन्दी", 13),
    ];

    #[test]
    fn a_new_index_finds_decomposed_text_by_the_composed_word_and_counts_a_word_with_a_virama() {
        let root = tempfile::tempdir().expect("tempdir");
        let folder = crawl_folder(root.path(), "new", true, &SCRIPT_PAGES);
        let reader = IndexReader::open(&folder.join("index")).expect("reader");
        assert_eq!(reader.fields.rules, Words::Folded);
        for query in ["café", "CAFÉ", "cafe\u{301}"] {
            let hits = reader.search(query, 10).expect("search");
            assert_eq!(hits.len(), 1, "{query:?}");
            assert_eq!(hits[0].seq, 1);
            assert_eq!(hits[0].lines, [(1, "le cafe\u{301} noir".to_owned())]);
        }
        assert!(reader.search("cafe", 10).expect("search").is_empty());
        let most = reader.max_count("हिन्दी").expect("one word").expect("found");
        assert_eq!((most.seq, most.count), (2, 4));
        let least = reader.min_count("हिन्दी").expect("one word").expect("found");
        assert_eq!((least.seq, least.count), (3, 1));
        // Its halves by the old rules are no words of their own.
        assert_eq!(reader.max_count("हिन").expect("one word"), None);
        let hits = reader.search("हिन्दी", 10).expect("search");
        assert_eq!(hits.iter().map(|h| h.seq).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(hits[0].line_count, 2);
        // 3 + 5 + 1 words.
        assert_eq!(reader.word_count().expect("wc").words, 9);
    }

    /// Makes a crawl folder whose index has the schema of an index made before [`Words::Marks`]
    /// (tantivy's `default` tokenizer), then feeds it `pages` as a resumed crawl does.
    fn old_rules_folder(root: &Path, name: &str, pages: &[(u64, &str, u64)]) -> PathBuf {
        let dir = root.join(name).join("index");
        std::fs::create_dir_all(&dir).expect("index dir");
        Index::create_in_dir(&dir, schema_with(true, Words::Alphanumeric).0)
            .expect("an index of the old rules");
        crawl_folder(root, name, true, pages)
    }

    #[test]
    fn an_index_of_the_old_word_rules_keeps_them_when_searched_counted_and_resumed() {
        let root = tempfile::tempdir().expect("tempdir");
        let old = old_rules_folder(root.path(), "old", &SCRIPT_PAGES[..2]);
        let check = |pages: u64, hin: u64, words: u64| {
            let reader = IndexReader::open(&old.join("index")).expect("reader");
            assert_eq!(reader.fields.rules, Words::Alphanumeric);
            assert_eq!(reader.pages(), pages);
            let err = reader.max_count("हिन्दी").expect_err("two words here");
            assert!(matches!(err, IndexError::NotOneWord { .. }), "{err}");
            // It says why, and how to have the new rules.
            assert!(
                err.to_string()
                    .contains("`crawltop index DIR --replace` rebuilds it"),
                "{err}"
            );
            let most = reader.max_count("हिन").expect("one word").expect("found");
            assert_eq!((most.seq, most.count), (2, hin));
            assert!(reader.search("café", 10).expect("search").is_empty());
            assert_eq!(reader.search("cafe", 10).expect("search")[0].seq, 1);
            assert_eq!(reader.word_count().expect("wc").words, words);
        };
        // 3 + 9 words: हिन्दी is two.
        check(2, 4, 12);
        // A resumed crawl adds a page by the same rules.
        let mut writer = IndexWriter::open(&old.join("index")).expect("resume");
        assert_eq!(writer.fields.rules, Words::Alphanumeric);
        let page = IndexedPage {
            seq: 3,
            url: "http://127.0.0.1:8000/3",
            title: "t",
            text: "हिन्दी cafe\u{301}",
            committed_ms: 13,
        };
        assert!(writer.add(&page).expect("add").is_added());
        writer.commit().expect("commit");
        writer.close().expect("close");
        check(3, 4, 15);

        // Searched with a new index: each reads the query by its own rules.
        let new = crawl_folder(root.path(), "new", true, &SCRIPT_PAGES);
        let crawls = Crawls::open(&[old.clone(), new.clone()]).expect("open");
        let most = crawls.max_count("हिन्दी").expect("max").expect("found");
        assert_eq!((most.crawl, most.count.seq, most.count.count), (1, 2, 4));
        let (total, hits) = crawls.search("café", 10).expect("search");
        assert_eq!((total, hits[0].crawl, hits[0].hit.seq), (1, 1, 1));
        let (total, _) = crawls.search("हिन्दी", 10).expect("search");
        assert_eq!(total, 2 + 2, "a phrase of two words in the old index");
        // A word only the old rules make stays refused when no index takes it as one word.
        let err = Crawls::open(&[old])
            .expect("open")
            .max_count("हिन्दी")
            .expect_err("two words");
        assert!(matches!(err, IndexError::NotOneWord { .. }), "{err}");
    }

    /// Audit 29's pages: German hyphenated for display, Persian with ZWNJ, Greek and Turkish
    /// capitals.
    const FOLD_PAGES: [(u64, &str, u64); 3] = [
        (
            1,
            "Donau\u{ad}dampf\u{ad}schiff\u{ad}fahrt and Donaudampfschifffahrt; \
             in\u{ad}ter\u{ad}na\u{ad}tion\u{ad}al",
            11,
        ),
        (
            2,
            "من کتاب\u{200c}ها را می\u{200c}خواهم. کتاب\u{200c}ها خوب هستند.",
            12,
        ),
        (
            3,
            "ΝΟΜΟΣ ΚΑΙ ΚΟΣΜΟΣ\nΟ νόμος και ο κόσμος. Ο νόμος.\nİSTANBUL İstanbul istanbul Straße",
            13,
        ),
    ];

    /// Audit 29, findings 2 and 3, in a new index: a word with soft hyphens or a ZWNJ is one
    /// word, found and counted as typed with or without them, and case is folded.
    #[test]
    fn a_new_index_takes_words_whole_across_invisible_characters_and_folds_their_case() {
        let root = tempfile::tempdir().expect("tempdir");
        let folder = crawl_folder(root.path(), "new", true, &FOLD_PAGES);
        let reader = IndexReader::open(&folder.join("index")).expect("reader");
        assert_eq!(reader.fields.rules, Words::Folded);
        let count = |word: &str| {
            reader
                .max_count(word)
                .unwrap_or_else(|e| panic!("{word:?}: {e}"))
                .map(|c| (c.seq, c.count))
        };
        for (word, want) in [
            ("Donaudampfschifffahrt", (1, 2)),
            ("donau\u{ad}dampf\u{ad}schiff\u{ad}fahrt", (1, 2)),
            ("international", (1, 1)),
            ("in\u{ad}ter\u{ad}na\u{ad}tion\u{ad}al", (1, 1)),
            ("کتاب\u{200c}ها", (2, 2)),
            ("کتابها", (2, 2)),
            ("می\u{200c}خواهم", (2, 1)),
            ("νόμος", (3, 2)),
            ("ΝΌΜΟΣ", (3, 2)),
            ("ΝΟΜΟΣ", (3, 1)),
            ("κοσμοσ", (3, 1)),
            ("istanbul", (3, 3)),
            ("İstanbul", (3, 3)),
            ("i\u{307}stanbul", (3, 3)),
            ("strasse", (3, 1)),
            ("STRAẞE", (3, 1)),
        ] {
            assert_eq!(count(word), Some(want), "{word:?}");
        }
        // The halves of a word are no words of their own.
        for half in ["ها", "tion", "dampf"] {
            assert_eq!(count(half), None, "{half:?}");
        }
        for (query, seqs) in [
            ("international", vec![1]),
            ("کتابها", vec![2]),
            ("ΝΌΜΟΣ", vec![3]),
            ("\"ο νομοσ\"", vec![]),
            ("\"ο νόμος\"", vec![3]),
            ("İSTANBUL", vec![3]),
        ] {
            let hits = reader.search(query, 10).expect("search");
            assert_eq!(
                hits.iter().map(|h| h.seq).collect::<Vec<_>>(),
                seqs,
                "{query:?}"
            );
        }
        // A hit's lines are the page's own.
        let hits = reader.search("ΝΌΜΟΣ", 10).expect("search");
        let line = "Ο νόμος και ο κόσμος. Ο νόμος.".to_owned();
        assert_eq!(hits[0].lines, [(2, line)]);
        let hits = reader.search("νομοσ", 10).expect("search");
        assert_eq!(hits[0].lines, [(1, "ΝΟΜΟΣ ΚΑΙ ΚΟΣΜΟΣ".to_owned())]);
        // 4 + 7 + 14 words.
        assert_eq!(reader.word_count().expect("wc").words, 4 + 7 + 14);
    }

    fn fold_page((seq, text, committed_ms): (u64, &str, u64)) -> IndexedPage<'_> {
        IndexedPage {
            seq,
            url: "http://127.0.0.1:8000/3",
            title: "t",
            text,
            committed_ms,
        }
    }

    /// Makes a crawl folder whose index has the schema of an index made with [`Words::Marks`]
    /// (`words_nfc`), then feeds it `pages` as a resumed crawl does.
    fn marks_rules_folder(root: &Path, name: &str, pages: &[(u64, &str, u64)]) -> PathBuf {
        let dir = root.join(name).join("index");
        std::fs::create_dir_all(&dir).expect("index dir");
        Index::create_in_dir(&dir, schema_with(true, Words::Marks).0)
            .expect("an index of the rules before");
        crawl_folder(root, name, true, pages)
    }

    #[test]
    fn a_words_nfc_index_keeps_its_rules_when_searched_counted_and_resumed() {
        let root = tempfile::tempdir().expect("tempdir");
        let before = marks_rules_folder(root.path(), "before", &FOLD_PAGES[..2]);
        let check = |pages: u64, words: u64| {
            let reader = IndexReader::open(&before.join("index")).expect("reader");
            assert_eq!(reader.fields.rules, Words::Marks);
            assert_eq!(reader.pages(), pages);
            // Its words keep their marks and are composed, as before.
            assert_eq!(reader.search("هستند", 10).expect("search")[0].seq, 2);
            // A soft hyphen or a ZWNJ splits a word, and it says how to have the new rules.
            let err = reader
                .max_count("کتاب\u{200c}ها")
                .expect_err("two words here");
            assert!(matches!(err, IndexError::NotOneWord { .. }), "{err}");
            assert!(
                err.to_string()
                    .contains("`crawltop index DIR --replace` rebuilds it"),
                "{err}"
            );
            let half = reader.max_count("ها").expect("one word").expect("found");
            assert_eq!((half.seq, half.count), (2, 2));
            assert!(
                reader
                    .search("international", 10)
                    .expect("search")
                    .is_empty()
            );
            assert_eq!(reader.word_count().expect("wc").words, words);
            reader
        };
        // 11 + 10 words.
        check(2, 21);
        // A resumed crawl adds a page by the same rules: lowercased per character.
        let mut writer = IndexWriter::open(&before.join("index")).expect("resume");
        assert_eq!(writer.fields.rules, Words::Marks);
        assert!(
            writer
                .add(&fold_page(FOLD_PAGES[2]))
                .expect("add")
                .is_added()
        );
        writer.commit().expect("commit");
        writer.close().expect("close");
        let reader = check(3, 21 + 14);
        assert_eq!(reader.max_count("ΝΌΜΟΣ").expect("one word"), None);
        let most = reader.max_count("νόμος").expect("one word").expect("found");
        assert_eq!((most.seq, most.count), (3, 2));
        let dotted = reader
            .max_count("İstanbul")
            .expect("one word")
            .expect("found");
        assert_eq!((dotted.seq, dotted.count), (3, 2));

        // Searched with a new index: each reads the word by its own rules.
        let new = crawl_folder(root.path(), "new", true, &FOLD_PAGES);
        let crawls = Crawls::open(&[before, new]).expect("open");
        let most = crawls
            .max_count("کتاب\u{200c}ها")
            .expect("max")
            .expect("found");
        assert_eq!((most.crawl, most.count.seq, most.count.count), (1, 2, 2));
        let most = crawls.max_count("ΝΌΜΟΣ").expect("max").expect("found");
        assert_eq!((most.crawl, most.count.count), (1, 2));
    }

    #[test]
    fn across_indexes_of_both_rules_a_word_counts_in_each_as_that_index_makes_it() {
        use tantivy::query::Bm25StatisticsProvider as _;
        let root = tempfile::tempdir().expect("tempdir");
        // U+0958 is one word to both rules; NFC decomposes it (क + nukta), the old rules not.
        let page = [(1, "x \u{958} y", 1)];
        let old = old_rules_folder(root.path(), "old", &page);
        let new = crawl_folder(root.path(), "new", true, &page);
        let crawls = Crawls::open(&[old, new]).expect("open");
        let together = Together(
            crawls
                .readers
                .iter()
                .map(|r| (r.reader.searcher(), r.fields.rules))
                .collect(),
        );
        let text = crawls.readers[0].fields.text;
        // The old index's word, as its query parser makes it, is in both pages.
        let term = Term::from_field_text(text, "\u{958}");
        assert_eq!(together.doc_freq(&term).expect("doc freq"), 2);
        let (total, _) = crawls.search("\u{958}", 10).expect("search");
        assert_eq!(total, 2);
    }
}
