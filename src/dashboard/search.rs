//! The dashboard's search: the prompt a query is typed into (`/`), the results pane, and the
//! handle that runs a query on the crawl folder's index.
//!
//! The state is pure: `App` owns a [`Search`], `keys` and `view` read it, and it never touches
//! the disk or a clock (the times it keeps are the snapshots' `elapsed_s`). Only
//! [`IndexSearch::run`] does I/O, and the terminal loop calls it on tokio's blocking pool, so a
//! query never holds up a frame or the crawl. It reads the index on disk that the committer
//! writes (new pages become visible at each index commit, about once a second), never engine
//! state; the ranking and the matching lines are `IndexReader::search`'s, as `crawltop search`
//! prints them.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use crate::dashboard::app::{Scroll, step};
use crate::index::{Hit, IndexError, IndexReader};

/// The most pages a search brings back; the pane says how many match in all.
pub const RESULT_LIMIT: usize = 100;
/// Queries kept for ↑ and ↓ in the prompt.
const HISTORY: usize = 20;
/// While a search finds nothing, it is asked again this often (seconds of crawl time): the
/// index grows while the crawl runs.
const RETRY_S: f64 = 1.0;

/// A query for the terminal loop to run; its answer comes back with the same `id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    pub id: u64,
    pub query: String,
}

/// What a search found, or why it could not look.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Found {
        /// Pages that match in all (`hits` holds the best [`RESULT_LIMIT`]).
        total: usize,
        /// Pages in the index when the search ran.
        indexed: u64,
        hits: Vec<Hit>,
    },
    /// The crawl keeps no index (no folder, or `--no-index`): nothing to search.
    NoFolder,
    /// The index holds no page yet: nothing has been committed to it.
    NothingIndexed,
    /// A bad query or an unreadable index, as the index says it.
    Failed(String),
}

impl Outcome {
    /// Nothing to show yet, though a later commit may change that.
    fn may_grow(&self) -> bool {
        matches!(
            self,
            Outcome::NothingIndexed | Outcome::Found { total: 0, .. }
        )
    }

    fn hits(&self) -> usize {
        match self {
            Outcome::Found { hits, .. } => hits.len(),
            _ => 0,
        }
    }
}

/// A change to the prompt's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    Insert(char),
    /// Deletes the last character; on an empty prompt, closes it.
    Backspace,
    /// Ctrl-U.
    Clear,
    /// Ctrl-W: the last word and the spaces after it.
    DeleteWord,
    /// ↑: the query before the one shown.
    Older,
    /// ↓: the query after the one shown, then an empty prompt.
    Newer,
}

/// The open prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Prompt {
    text: String,
    /// Which history entry is shown, when ↑ or ↓ brought one.
    recalled: Option<usize>,
}

/// The results pane: one query, its answer, and how far it is scrolled.
#[derive(Debug, Clone, PartialEq)]
pub struct Results {
    query: String,
    /// The request whose answer the pane waits for or shows.
    id: u64,
    /// Crawl time of the last request, and whether the crawl had finished then.
    asked_at_s: f64,
    asked_after_finish: bool,
    waiting: bool,
    outcome: Option<Outcome>,
    /// The first hit shown.
    top: usize,
}

impl Results {
    pub fn query(&self) -> &str {
        &self.query
    }

    /// Whether an answer is awaited (a first one, or a refresh of the one shown).
    pub fn waiting(&self) -> bool {
        self.waiting
    }

    /// The last answer; `None` until the first arrives.
    pub fn outcome(&self) -> Option<&Outcome> {
        self.outcome.as_ref()
    }

    pub fn top(&self) -> usize {
        self.top
    }

    /// Crawl time of the last request, as the pane shows it.
    pub fn asked_at_s(&self) -> f64 {
        self.asked_at_s
    }

    /// Whether an empty answer will be asked again as the crawl goes on.
    pub fn retrying(&self) -> bool {
        !self.asked_after_finish && self.outcome.as_ref().is_some_and(Outcome::may_grow)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Search {
    prompt: Option<Prompt>,
    results: Option<Results>,
    /// Queries run, oldest first.
    history: Vec<String>,
    last_id: u64,
}

impl Search {
    /// The prompt's text while it is open.
    pub fn prompt(&self) -> Option<&str> {
        self.prompt.as_ref().map(|p| p.text.as_str())
    }

    pub fn results(&self) -> Option<&Results> {
        self.results.as_ref()
    }

    pub fn open_prompt(&mut self) {
        self.prompt = Some(Prompt::default());
    }

    pub fn close_prompt(&mut self) {
        self.prompt = None;
    }

    pub fn edit(&mut self, edit: Edit) {
        let Some(prompt) = self.prompt.as_mut() else {
            return;
        };
        match edit {
            Edit::Insert(c) => {
                prompt.text.push(c);
                prompt.recalled = None;
            }
            Edit::Backspace => {
                if prompt.text.pop().is_none() {
                    self.prompt = None;
                }
            }
            Edit::Clear => prompt.text.clear(),
            Edit::DeleteWord => {
                let kept = prompt.text.trim_end().len();
                let start = prompt.text[..kept]
                    .rfind(char::is_whitespace)
                    .map_or(0, |i| i + 1);
                prompt.text.truncate(start);
            }
            Edit::Older => {
                let Some(last) = self.history.len().checked_sub(1) else {
                    return;
                };
                let at = prompt.recalled.map_or(last, |i| i.saturating_sub(1));
                prompt.recalled = Some(at);
                prompt.text.clone_from(&self.history[at]);
            }
            Edit::Newer => {
                let Some(at) = prompt.recalled else {
                    return;
                };
                if at + 1 < self.history.len() {
                    prompt.recalled = Some(at + 1);
                    prompt.text.clone_from(&self.history[at + 1]);
                } else {
                    prompt.recalled = None;
                    prompt.text.clear();
                }
            }
        }
    }

    /// Enter in the prompt: closes it and asks for the query's answer in a fresh pane.
    /// `now_s` is the crawl's `elapsed_s`.
    pub fn submit(&mut self, now_s: f64, finished: bool) -> Option<SearchRequest> {
        let query = self.prompt.take()?.text;
        if !query.trim().is_empty() {
            self.history.retain(|q| *q != query);
            self.history.push(query.clone());
            if self.history.len() > HISTORY {
                self.history.remove(0);
            }
        }
        self.results = Some(Results {
            query,
            id: 0,
            asked_at_s: now_s,
            asked_after_finish: finished,
            waiting: true,
            outcome: None,
            top: 0,
        });
        self.ask(now_s, finished)
    }

    /// Asks again for the pane's query (the index has grown since); the answer shown stays
    /// until the new one arrives.
    pub fn refresh(&mut self, now_s: f64, finished: bool) -> Option<SearchRequest> {
        self.ask(now_s, finished)
    }

    fn ask(&mut self, now_s: f64, finished: bool) -> Option<SearchRequest> {
        let results = self.results.as_mut()?;
        self.last_id += 1;
        results.id = self.last_id;
        results.asked_at_s = now_s;
        results.asked_after_finish = finished;
        results.waiting = true;
        Some(SearchRequest {
            id: self.last_id,
            query: results.query.clone(),
        })
    }

    /// An answer came back; one for an older request than the pane's last is dropped.
    pub fn answer(&mut self, id: u64, outcome: Outcome, visible_hits: usize) {
        let Some(results) = self.results.as_mut().filter(|r| r.id == id) else {
            return;
        };
        results.waiting = false;
        results.outcome = Some(outcome);
        self.scroll(None, visible_hits);
    }

    /// A request to send now, if the pane shows nothing found and the index may have grown:
    /// a second of crawl time has passed, or the crawl has finished (its last commit is in).
    pub fn due(&mut self, now_s: f64, finished: bool) -> Option<SearchRequest> {
        let results = self.results.as_ref()?;
        let due = results.retrying()
            && !results.waiting
            && (finished || now_s >= results.asked_at_s + RETRY_S);
        if due { self.ask(now_s, finished) } else { None }
    }

    pub fn close_results(&mut self) {
        self.results = None;
    }

    /// Moves the first hit shown by `scroll` (or only clamps it), `visible_hits` a page.
    pub fn scroll(&mut self, scroll: Option<Scroll>, visible_hits: usize) {
        let Some(results) = self.results.as_mut() else {
            return;
        };
        let hits = results.outcome.as_ref().map_or(0, Outcome::hits);
        let last_top = hits.saturating_sub(visible_hits.max(1));
        results.top = match scroll {
            Some(scroll) => step(results.top, scroll, visible_hits.max(1), last_top),
            None => results.top.min(last_top),
        };
    }
}

/// Runs queries on a crawl folder's index; shared by the searches in flight.
pub struct IndexSearch {
    /// The crawl folder's `index/`; `None` when the crawl keeps no index.
    dir: Option<PathBuf>,
    /// Opened by the first query that finds an index; reloaded before each query.
    reader: Mutex<Option<Arc<IndexReader>>>,
}

impl std::fmt::Debug for IndexSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexSearch")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl IndexSearch {
    pub fn new(dir: Option<PathBuf>) -> IndexSearch {
        IndexSearch {
            dir,
            reader: Mutex::new(None),
        }
    }

    /// Searches the pages committed so far. Blocking: call it off the UI loop.
    pub fn run(&self, query: &str) -> Outcome {
        let Some(dir) = &self.dir else {
            return Outcome::NoFolder;
        };
        match self.search(dir, query) {
            Ok(outcome) => outcome,
            // The committer creates the index when the crawl starts; until then there is none.
            Err(IndexError::NoIndex(_)) => Outcome::NothingIndexed,
            Err(e) => Outcome::Failed(e.to_string()),
        }
    }

    fn search(&self, dir: &std::path::Path, query: &str) -> Result<Outcome, IndexError> {
        let reader = {
            let mut slot = self.reader.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(r) = slot.as_ref() {
                r.clone()
            } else {
                let r = Arc::new(IndexReader::open(dir)?);
                *slot = Some(r.clone());
                r
            }
        };
        reader.reload()?;
        let indexed = reader.pages();
        // A mistake in the query is said even before any page is in.
        let found = reader.search_counted(query, RESULT_LIMIT)?;
        if indexed == 0 {
            return Ok(Outcome::NothingIndexed);
        }
        Ok(Outcome::Found {
            total: found.total,
            indexed,
            hits: found.hits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{IndexWriter, IndexedPage};

    fn typed(text: &str) -> Search {
        let mut search = Search::default();
        search.open_prompt();
        for c in text.chars() {
            search.edit(Edit::Insert(c));
        }
        search
    }

    fn found(total: usize) -> Outcome {
        Outcome::Found {
            total,
            indexed: 10,
            hits: (0..total.min(RESULT_LIMIT))
                .map(|i| Hit {
                    seq: i as u64,
                    url: format!("http://127.0.0.1:8000/{i}"),
                    title: String::new(),
                    score: 1.0,
                    lines: vec![(1, "rabbit".into())],
                    line_count: 1,
                })
                .collect(),
        }
    }

    #[test]
    fn edits_change_the_prompt_and_backspace_on_empty_closes_it() {
        let mut search = typed("white rabbit  ");
        search.edit(Edit::DeleteWord);
        assert_eq!(search.prompt(), Some("white "));
        search.edit(Edit::Backspace);
        assert_eq!(search.prompt(), Some("white"));
        search.edit(Edit::Clear);
        assert_eq!(search.prompt(), Some(""));
        search.edit(Edit::Backspace);
        assert_eq!(search.prompt(), None);
    }

    #[test]
    fn history_recalls_earlier_queries_newest_first() {
        let mut search = typed("alice");
        search.submit(0.0, false);
        search.open_prompt();
        for c in "rabbit".chars() {
            search.edit(Edit::Insert(c));
        }
        search.submit(0.0, false);
        search.open_prompt();
        search.edit(Edit::Older);
        assert_eq!(search.prompt(), Some("rabbit"));
        search.edit(Edit::Older);
        assert_eq!(search.prompt(), Some("alice"));
        search.edit(Edit::Older);
        assert_eq!(search.prompt(), Some("alice"), "stays at the oldest");
        search.edit(Edit::Newer);
        assert_eq!(search.prompt(), Some("rabbit"));
        search.edit(Edit::Newer);
        assert_eq!(search.prompt(), Some(""));
    }

    #[test]
    fn an_answer_to_an_older_request_is_dropped() {
        let mut search = typed("rabbit");
        let first = search.submit(1.0, false).expect("request");
        let second = search.refresh(2.0, false).expect("request");
        assert!(second.id > first.id);
        search.answer(first.id, found(3), 10);
        assert_eq!(search.results().and_then(Results::outcome), None);
        search.answer(second.id, found(3), 10);
        assert_eq!(search.results().and_then(Results::outcome), Some(&found(3)));
        assert!(!search.results().expect("pane").waiting());
    }

    #[test]
    fn nothing_found_is_asked_again_each_second_until_the_crawl_has_finished() {
        let mut search = typed("rabbit");
        let id = search.submit(10.0, false).expect("request").id;
        assert_eq!(search.due(10.5, false), None, "still waiting");
        search.answer(id, Outcome::NothingIndexed, 10);
        assert_eq!(search.due(10.5, false), None, "not a second yet");
        let again = search.due(11.0, false).expect("asked again");
        search.answer(again.id, found(0), 10);
        let last = search
            .due(11.2, true)
            .expect("the crawl finished: its last commit");
        search.answer(last.id, found(0), 10);
        assert_eq!(search.due(30.0, true), None, "nothing will change now");
        assert!(!search.results().expect("pane").retrying());
    }

    #[test]
    fn hits_and_errors_are_not_asked_again() {
        let mut search = typed("rabbit");
        let id = search.submit(0.0, false).expect("request").id;
        search.answer(id, found(2), 10);
        assert_eq!(search.due(5.0, false), None);
        let id = search.refresh(5.0, false).expect("request").id;
        search.answer(id, Outcome::Failed("bad".into()), 10);
        assert_eq!(search.due(9.0, false), None);
    }

    #[test]
    fn scrolling_stops_when_the_last_hit_is_visible() {
        let mut search = typed("rabbit");
        let id = search.submit(0.0, false).expect("request").id;
        search.answer(id, found(25), 10);
        search.scroll(Some(Scroll::PageDown), 10);
        assert_eq!(search.results().expect("pane").top(), 10);
        search.scroll(Some(Scroll::End), 10);
        assert_eq!(search.results().expect("pane").top(), 15);
        search.scroll(Some(Scroll::Down), 10);
        assert_eq!(search.results().expect("pane").top(), 15);
        search.scroll(None, 30);
        assert_eq!(search.results().expect("pane").top(), 0, "all fit now");
    }

    fn index_with(dir: &std::path::Path, texts: &[&str]) {
        let mut writer = IndexWriter::open(dir).expect("writer");
        for (i, text) in texts.iter().enumerate() {
            writer
                .add(&IndexedPage {
                    seq: i as u64,
                    url: &format!("http://127.0.0.1:8000/{i}.html"),
                    title: "A page",
                    text,
                    committed_ms: i as u64,
                })
                .expect("add");
        }
        writer.commit().expect("commit");
        writer.close().expect("close");
    }

    #[test]
    fn index_search_says_why_it_found_nothing() {
        assert_eq!(IndexSearch::new(None).run("rabbit"), Outcome::NoFolder);
        let dir = tempfile::tempdir().expect("tempdir");
        let search = IndexSearch::new(Some(dir.path().join("index")));
        assert_eq!(search.run("rabbit"), Outcome::NothingIndexed, "no index");
        index_with(&dir.path().join("index"), &[]);
        assert_eq!(search.run("rabbit"), Outcome::NothingIndexed, "empty");
        for bad in ["", "\"white rabbit", "NOT"] {
            assert!(
                matches!(search.run(bad), Outcome::Failed(_)),
                "{bad:?} is refused"
            );
        }
    }

    #[test]
    fn index_search_sees_later_commits_and_gives_the_matching_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let index = dir.path().join("index");
        index_with(&index, &["no match here"]);
        let search = IndexSearch::new(Some(index.clone()));
        assert!(matches!(
            search.run("rabbit"),
            Outcome::Found {
                total: 0,
                indexed: 1,
                ..
            }
        ));
        let mut writer = IndexWriter::open(&index).expect("writer");
        writer
            .add(&IndexedPage {
                seq: 5,
                url: "http://127.0.0.1:8000/5.html",
                title: "Down the Rabbit-Hole",
                text: "Alice\nthe White Rabbit ran by",
                committed_ms: 5,
            })
            .expect("add");
        writer.commit().expect("commit");
        writer.close().expect("close");
        let Outcome::Found {
            total,
            indexed,
            hits,
        } = search.run("rabbit")
        else {
            panic!("found");
        };
        assert_eq!((total, indexed), (1, 2));
        assert_eq!(hits[0].url, "http://127.0.0.1:8000/5.html");
        assert_eq!(hits[0].lines, [(2, "the White Rabbit ran by".to_owned())]);
    }
}
