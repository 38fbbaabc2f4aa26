//! The live per-site table: one row per site, written in place by the engine and read in place
//! by the observers (dashboard, control API, stats export).
//!
//! A crawl of 100,000 sites cannot copy every site's row into each snapshot ten times a second:
//! the coordinator writes here only the rows of the sites that changed since its last tick, and
//! an observer reads one row by its id, or asks for a sorted, filtered page of ids
//! ([`SiteTable::order`], [`SiteTable::query`]). The rows are plain data ([`SiteRow`], the stats
//! file's schema); the table holds no engine internals and knows nothing of a terminal. It is a
//! `DashMap` (sharded locks, each held only to copy a row in or out), so a reader never waits on
//! the coordinator for longer than one row's copy, and never the other way round for long.
//!
//! Ids are the engine's site ids: discovery order, `0..len`. A row's next contact is kept as a
//! time since the crawl's start, so a row that did not change stays right as time passes: its
//! `next_allowed_in_ms` is worked out against the table's clock (the crawl time of the last
//! write) when the row is read.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use dashmap::DashMap;
use serde::ser::SerializeSeq;
use serde::{Deserialize, Serialize, Serializer};

use crate::snapshot::SiteRow;

/// One site's row as kept: the row, with its next contact as a crawl time.
#[derive(Debug, Clone)]
struct Entry {
    row: SiteRow,
    next_at_ms: u64,
}

/// The orders the sites can be listed in (the dashboard's `o`, `/sites?sort=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SiteSort {
    /// Most queued first.
    #[default]
    Queued,
    /// Most fetched first.
    Fetched,
    /// Most errors first.
    Errors,
    /// Soonest next contact first.
    Next,
    /// By origin, as text.
    Origin,
}

impl SiteSort {
    /// Every order, by the name the API takes.
    pub const NAMES: [(&'static str, SiteSort); 5] = [
        ("queued", SiteSort::Queued),
        ("fetched", SiteSort::Fetched),
        ("errors", SiteSort::Errors),
        ("next", SiteSort::Next),
        ("origin", SiteSort::Origin),
    ];

    pub fn parse(name: &str) -> Option<SiteSort> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| *s)
    }

    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, s)| *s == self)
            .map_or("queued", |(n, _)| n)
    }
}

/// A page of sites: which order, which slice, and which origins (a substring, as typed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SiteQuery {
    pub sort: SiteSort,
    pub offset: usize,
    pub limit: usize,
    /// Only origins containing this text (ASCII case ignored); empty: all.
    pub filter: String,
}

/// The answer to a [`SiteQuery`], as `GET /sites` serves it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SitePage {
    /// Sites in the crawl.
    pub total: u64,
    /// Sites whose origin matches the filter.
    pub matched: u64,
    /// The requested slice of the matching sites, in the requested order.
    pub rows: Vec<SiteRow>,
}

#[derive(Debug, Default)]
pub struct SiteTable {
    rows: DashMap<u32, Entry>,
    /// Rows written so far: ids `0..len` are present.
    len: AtomicUsize,
    /// Bumped by every [`SiteTable::publish`] that changed a row: readers that keep an order
    /// rebuild it only when this moved.
    version: AtomicU64,
    /// The crawl time (ms since start) of the last publish.
    now_ms: AtomicU64,
}

impl SiteTable {
    pub fn new() -> SiteTable {
        SiteTable::default()
    }

    /// A table holding these rows, as of crawl time 0 (a stats file read back, a test fixture).
    pub fn from_rows(rows: Vec<SiteRow>) -> SiteTable {
        let table = SiteTable::new();
        for (i, row) in rows.into_iter().enumerate() {
            let next_at_ms = row.next_allowed_in_ms;
            table.write(i as u32, row, next_at_ms);
        }
        table.publish(0, true);
        table
    }

    /// Writes one site's row; `next_at_ms` is its next contact as a crawl time. Readers see it
    /// at once; the version moves at the next [`SiteTable::publish`].
    pub fn write(&self, id: u32, row: SiteRow, next_at_ms: u64) {
        self.rows.insert(id, Entry { row, next_at_ms });
        self.len.fetch_max(id as usize + 1, Ordering::Release);
    }

    /// The end of one round of writes at crawl time `now_ms`.
    pub fn publish(&self, now_ms: u64, changed: bool) {
        self.now_ms.store(now_ms, Ordering::Release);
        if changed {
            self.version.fetch_add(1, Ordering::AcqRel);
        }
    }

    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Moves whenever rows changed: an order built at one version is current until it moves.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// One site's row, its next contact counted from the last publish.
    pub fn get(&self, id: usize) -> Option<SiteRow> {
        let id = u32::try_from(id).ok()?;
        let now = self.now_ms.load(Ordering::Acquire);
        self.rows.get(&id).map(|e| finish(&e, now))
    }

    /// Every row, in id (discovery) order: for the stats file. Readers that only serialize
    /// the rows take [`SiteTable::in_place`] instead, which copies none.
    pub fn rows(&self) -> Vec<SiteRow> {
        (0..self.len()).filter_map(|i| self.get(i)).collect()
    }

    /// Every row in id order as a serde sequence read from the table as it is serialized
    /// (`GET /stats`): one row at a time, no copy of the table.
    pub fn in_place(&self) -> InPlace<'_> {
        InPlace(self)
    }

    /// The `n` rows with the most queued URLs, most first; ties in discovery order, so the cut
    /// is the same from one call to the next. One pass over the table keeping `n` keys:
    /// `/metrics` bounds its per-site series with it.
    pub fn top_queued(&self, n: usize) -> Vec<SiteRow> {
        most_queued(self.rows.iter().map(|e| (e.row.queued, *e.key())), n)
            .into_iter()
            .filter_map(|id| self.get(id as usize))
            .collect()
    }

    /// The ids of the sites whose origin contains `filter` (ASCII case ignored), in `sort`'s
    /// order; ties keep discovery order, so equal rows do not swap between rebuilds. Costs one
    /// pass over the table and a sort of what matched: call it when [`SiteTable::version`] or
    /// the request moved, not on every frame.
    pub fn order(&self, sort: SiteSort, filter: &str) -> Vec<u32> {
        let needle = filter.to_ascii_lowercase();
        let matches = |origin: &str| needle.is_empty() || contains_ignore_case(origin, &needle);
        if sort == SiteSort::Origin {
            let mut keyed: Vec<(String, u32)> = Vec::new();
            for e in &self.rows {
                if matches(&e.row.origin) {
                    keyed.push((e.row.origin.clone(), *e.key()));
                }
            }
            keyed.sort_unstable();
            return keyed.into_iter().map(|(_, id)| id).collect();
        }
        let mut keyed: Vec<(u64, u32)> = Vec::new();
        for e in &self.rows {
            if !matches(&e.row.origin) {
                continue;
            }
            let r = &e.row;
            // Larger first for the counters: the complement sorts them ascending.
            let key = match sort {
                SiteSort::Queued => u64::MAX - r.queued,
                SiteSort::Fetched => u64::MAX - r.fetched,
                SiteSort::Errors => u64::MAX - r.errors,
                SiteSort::Next | SiteSort::Origin => e.next_at_ms,
            };
            keyed.push((key, *e.key()));
        }
        keyed.sort_unstable();
        keyed.into_iter().map(|(_, id)| id).collect()
    }

    /// A page of rows, as `GET /sites` answers.
    pub fn query(&self, q: &SiteQuery) -> SitePage {
        let order = self.order(q.sort, &q.filter);
        let rows = order
            .iter()
            .skip(q.offset)
            .take(q.limit)
            .filter_map(|&id| self.get(id as usize))
            .collect();
        SitePage {
            total: self.len() as u64,
            matched: order.len() as u64,
            rows,
        }
    }
}

/// The ids of the `n` largest of `(queued, id)` keys, most queued first, ties to the smaller
/// id: one pass keeping a min-heap of at most `n` keys, whatever the number of keys.
pub(crate) fn most_queued(keys: impl Iterator<Item = (u64, u32)>, n: usize) -> Vec<u32> {
    // The heap's top is the worst kept: fewest queued, then the latest id.
    let mut heap: BinaryHeap<Reverse<(u64, Reverse<u32>)>> = BinaryHeap::with_capacity(n + 1);
    for (queued, id) in keys {
        if n == 0 {
            break;
        }
        let key = Reverse((queued, Reverse(id)));
        if heap.len() < n {
            heap.push(key);
        } else if heap.peek().is_some_and(|worst| key < *worst) {
            heap.pop();
            heap.push(key);
        }
    }
    let mut best: Vec<(u64, u32)> = heap
        .into_iter()
        .map(|Reverse((queued, Reverse(id)))| (queued, id))
        .collect();
    best.sort_unstable_by_key(|&(queued, id)| (Reverse(queued), id));
    best.into_iter().map(|(_, id)| id).collect()
}

/// [`SiteTable::in_place`]: the rows serialized straight from the table.
pub struct InPlace<'a>(&'a SiteTable);

impl Serialize for InPlace<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let table = self.0;
        let now = table.now_ms.load(Ordering::Acquire);
        let len = table.len();
        let mut seq = serializer.serialize_seq(None)?;
        for id in 0..len {
            let Ok(id) = u32::try_from(id) else {
                break;
            };
            if let Some(e) = table.rows.get(&id) {
                seq.serialize_element(&Finished::new(&e, now))?;
            }
        }
        seq.end()
    }
}

/// A row with its next contact counted from the last publish, serialized as a [`SiteRow`]
/// is (the same fields in the same order, pinned by a test against `SiteRow`'s own
/// serialization), by reference.
#[derive(Serialize)]
struct Finished<'a> {
    origin: &'a str,
    robots_state: &'a crate::robots::RobotsState,
    crawl_delay_ms: Option<u64>,
    crawl_delay_asked_ms: Option<u64>,
    delay_ms: u64,
    delay_source: &'a crate::snapshot::DelaySource,
    queued: u64,
    in_flight: u64,
    fetched: u64,
    errors: u64,
    next_allowed_in_ms: u64,
    status: &'a std::collections::BTreeMap<String, u64>,
    recent_errors: &'a [String],
    robots_rules: &'a str,
}

impl<'a> Finished<'a> {
    fn new(e: &'a Entry, now_ms: u64) -> Finished<'a> {
        let r = &e.row;
        Finished {
            origin: &r.origin,
            robots_state: &r.robots_state,
            crawl_delay_ms: r.crawl_delay_ms,
            crawl_delay_asked_ms: r.crawl_delay_asked_ms,
            delay_ms: r.delay_ms,
            delay_source: &r.delay_source,
            queued: r.queued,
            in_flight: r.in_flight,
            fetched: r.fetched,
            errors: r.errors,
            next_allowed_in_ms: e.next_at_ms.saturating_sub(now_ms),
            status: &r.status,
            recent_errors: &r.recent_errors,
            robots_rules: &r.robots_rules,
        }
    }
}

fn finish(e: &Entry, now_ms: u64) -> SiteRow {
    let mut row = e.row.clone();
    row.next_allowed_in_ms = e.next_at_ms.saturating_sub(now_ms);
    row
}

/// `needle` is lowercase already.
fn contains_ignore_case(haystack: &str, needle: &str) -> bool {
    if haystack.bytes().any(|b| b.is_ascii_uppercase()) {
        haystack.to_ascii_lowercase().contains(needle)
    } else {
        haystack.contains(needle)
    }
}

/// The order by plain stable sorts (what the dashboard did before the table): the oracle of the
/// unit tests.
#[cfg(test)]
fn oracle(rows: &[SiteRow], sort: SiteSort, filter: &str) -> Vec<u32> {
    use std::cmp::Reverse;
    let mut ids: Vec<u32> = (0..rows.len() as u32)
        .filter(|&i| {
            rows[i as usize]
                .origin
                .to_ascii_lowercase()
                .contains(&filter.to_ascii_lowercase())
        })
        .collect();
    let r = |i: &u32| &rows[*i as usize];
    match sort {
        SiteSort::Queued => ids.sort_by_key(|i| Reverse(r(i).queued)),
        SiteSort::Fetched => ids.sort_by_key(|i| Reverse(r(i).fetched)),
        SiteSort::Errors => ids.sort_by_key(|i| Reverse(r(i).errors)),
        SiteSort::Next => ids.sort_by_key(|i| r(i).next_allowed_in_ms),
        SiteSort::Origin => ids.sort_by(|a, b| r(a).origin.cmp(&r(b).origin).then(a.cmp(b))),
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(origin: &str, queued: u64, fetched: u64, errors: u64, next: u64) -> SiteRow {
        SiteRow {
            origin: origin.into(),
            queued,
            fetched,
            errors,
            next_allowed_in_ms: next,
            ..SiteRow::default()
        }
    }

    fn rows(n: u64) -> Vec<SiteRow> {
        // Many ties, and origins out of id order.
        (0..n)
            .map(|i| {
                row(
                    &format!("http://127.0.{}.{}:{}", i % 7, i % 3, 9000 + (i * 37) % 101),
                    i % 5,
                    (i * 13) % 11,
                    i % 2,
                    (i * 7) % 9,
                )
            })
            .collect()
    }

    #[test]
    fn every_order_and_filter_agrees_with_a_plain_sort() {
        let rows = rows(500);
        let table = SiteTable::from_rows(rows.clone());
        for (_, sort) in SiteSort::NAMES {
            for filter in ["", "127.0.3", ":90", "HTTP://127.0.1.2", "nothing"] {
                assert_eq!(
                    table.order(sort, filter),
                    oracle(&rows, sort, filter),
                    "{sort:?} {filter:?}"
                );
            }
        }
    }

    #[test]
    fn a_page_is_the_slice_of_the_matching_order() {
        let rows = rows(100);
        let table = SiteTable::from_rows(rows.clone());
        let page = table.query(&SiteQuery {
            sort: SiteSort::Fetched,
            offset: 3,
            limit: 5,
            filter: "127.0.2".into(),
        });
        let want = oracle(&rows, SiteSort::Fetched, "127.0.2");
        assert_eq!(page.total, 100);
        assert_eq!(page.matched, want.len() as u64);
        let got: Vec<&str> = page.rows.iter().map(|r| r.origin.as_str()).collect();
        let want: Vec<&str> = want[3..8]
            .iter()
            .map(|&i| rows[i as usize].origin.as_str())
            .collect();
        assert_eq!(got, want);
        let past = table.query(&SiteQuery {
            offset: 1_000,
            limit: 5,
            ..SiteQuery::default()
        });
        assert!(past.rows.is_empty());
        assert_eq!(past.matched, 100);
    }

    #[test]
    fn rows_in_place_serialize_as_the_copied_rows_do() {
        let mut rows = rows(50);
        rows[3].status.insert("200".into(), 7);
        rows[4].recent_errors.push("/x: timeout".into());
        rows[5].robots_rules = "no group for crawltop: all allowed".into();
        rows[6].crawl_delay_ms = Some(250);
        let table = SiteTable::from_rows(rows);
        table.publish(3, false);
        let copied = serde_json::to_string(&table.rows()).expect("rows serialize");
        let in_place = serde_json::to_string(&table.in_place()).expect("rows serialize");
        assert_eq!(in_place, copied);
    }

    #[test]
    fn the_top_queued_are_the_first_of_the_queued_order() {
        let rows = rows(500);
        let table = SiteTable::from_rows(rows.clone());
        for n in [0, 1, 7, 100, 500, 600] {
            let want: Vec<&str> = oracle(&rows, SiteSort::Queued, "")
                .into_iter()
                .take(n)
                .map(|i| rows[i as usize].origin.as_str())
                .collect();
            let top = table.top_queued(n);
            let got: Vec<&str> = top.iter().map(|r| r.origin.as_str()).collect();
            assert_eq!(got, want, "n = {n}");
        }
    }

    #[test]
    fn next_contact_counts_down_from_the_last_publish() {
        let table = SiteTable::new();
        table.write(0, row("http://a", 1, 0, 0, 0), 1_500);
        table.publish(1_000, true);
        assert_eq!(table.get(0).map(|r| r.next_allowed_in_ms), Some(500));
        table.publish(2_000, false);
        assert_eq!(table.get(0).map(|r| r.next_allowed_in_ms), Some(0));
        assert_eq!(
            table.version(),
            1,
            "a publish without changes keeps the version"
        );
        assert!(table.get(1).is_none());
        assert!(table.get(usize::MAX).is_none());
    }
}
