//! The handlers both control rooms share: the HTTP API and the command port read the same
//! renderings of the snapshot and send commands through the same validation, so a command
//! means the same thing, and is refused with the same words, whichever door it came in by.
//!
//! It owns the checks on a command's argument (the delay and worker bounds), the JSON that
//! answers a command, and the cache of renderings. It must never parse a transport (no URLs,
//! no lines), never reach into the engine beyond its handle, and never hold a snapshot borrow
//! or a lock while rendering.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;

use crate::engine::{Command, Commander};
use crate::site_table::{SiteQuery, SiteSort, SiteTable};
use crate::snapshot::{CommandSource, Snapshot};

/// The largest delay `/delay?ms=N` and `DELAY MS` accept: an hour.
pub const MAX_DELAY_MS: u64 = 3_600_000;
/// The most workers `/workers?n=N` and `WORKERS N` accept.
pub const MAX_WORKERS: usize = 4096;

/// `SetDelay` from the text of its `ms`, or a message naming the parameter at fault.
pub(super) fn delay(ms: &str) -> Result<Command, String> {
    match ms.parse::<u64>() {
        Ok(ms) if ms <= MAX_DELAY_MS => Ok(Command::SetDelay(Duration::from_millis(ms))),
        _ => Err(format!(
            "parameter ms must be a whole number of milliseconds in 0..={MAX_DELAY_MS}, got {ms:?}"
        )),
    }
}

/// `SetWorkers` from the text of its `n`, or a message naming the parameter at fault.
pub(super) fn workers(n: &str) -> Result<Command, String> {
    match n.parse::<usize>() {
        Ok(n) if (1..=MAX_WORKERS).contains(&n) => Ok(Command::SetWorkers(n)),
        _ => Err(format!(
            "parameter n must be a whole number of workers in 1..={MAX_WORKERS}, got {n:?}"
        )),
    }
}

/// The most rows `/sites` and `SITES` give at once.
pub const MAX_SITES_LIMIT: usize = 1000;

/// A `/sites` query from its parameters (name, value), or a message naming the one at fault.
/// `sort` (queued, fetched, errors, next, origin), `limit` (1..=1000, default 50), `offset`
/// (default 0), `filter` (a substring of the origin); each at most once.
pub(super) fn site_query<'a>(
    params: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<SiteQuery, String> {
    let mut q = SiteQuery {
        sort: SiteSort::Queued,
        offset: 0,
        limit: 50,
        filter: String::new(),
    };
    let mut seen: Vec<&str> = Vec::new();
    for (key, value) in params {
        if seen.contains(&key) {
            return Err(format!("parameter {key} is given more than once"));
        }
        match key {
            "sort" => {
                q.sort = SiteSort::parse(value).ok_or_else(|| {
                    format!(
                        "parameter sort must be one of queued, fetched, errors, next, origin, got {value:?}"
                    )
                })?;
            }
            "limit" => {
                q.limit = value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_SITES_LIMIT).contains(n))
                    .ok_or_else(|| {
                        format!(
                            "parameter limit must be a whole number in 1..={MAX_SITES_LIMIT}, got {value:?}"
                        )
                    })?;
            }
            "offset" => {
                q.offset = value.parse::<usize>().map_err(|_| {
                    format!("parameter offset must be a whole number, got {value:?}")
                })?;
            }
            "filter" => value.clone_into(&mut q.filter),
            other => {
                return Err(format!(
                    "unknown parameter {other:?}: sites takes sort, limit, offset, filter"
                ));
            }
        }
        seen.push(key);
    }
    Ok(q)
}

/// The JSON that acknowledges a command.
pub(super) fn command_reply(cmd: Command) -> serde_json::Value {
    match cmd {
        Command::Pause => serde_json::json!({"ok": true, "command": "pause"}),
        Command::Resume => serde_json::json!({"ok": true, "command": "resume"}),
        Command::Stop => serde_json::json!({"ok": true, "command": "stop"}),
        Command::Leave => serde_json::json!({"ok": true, "command": "leave"}),
        Command::Export => serde_json::json!({"ok": true, "command": "export"}),
        Command::SetDelay(d) => {
            serde_json::json!({"ok": true, "command": "delay", "ms": d.as_millis() as u64})
        }
        Command::SetWorkers(n) => serde_json::json!({"ok": true, "command": "workers", "n": n}),
    }
}

/// Why a valid command was not sent to the crawl.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(super) enum Refused {
    /// The crawl is over: it takes no more commands.
    #[error("the crawl is over")]
    Over,
    /// An export of a crawl without output files would write nothing, and an `ok` would say
    /// it had (audit 33 F7).
    #[error(
        "nothing to export: the crawl was started without --stats-out, --sites-out or \
         --urls-out, the files an export writes"
    )]
    NothingToExport,
}

/// What a room renders from the snapshot.
#[derive(Debug, Clone, Copy)]
pub(super) enum View {
    Stats,
    Metrics,
}

/// The last rendering of each view, keyed by the snapshot it was made from: many clients
/// polling between two publications cost one serialization, not one each.
#[derive(Default)]
struct Rendered {
    stats: Option<(Arc<Snapshot>, Bytes)>,
    metrics: Option<(Arc<Snapshot>, Bytes)>,
}

/// One room's view of the crawl: its snapshots, its commands, its index.
pub(super) struct Handlers {
    snapshots: watch::Receiver<Arc<Snapshot>>,
    commander: Commander,
    source: CommandSource,
    rendered: Mutex<Rendered>,
    /// The crawl's index folder (`--out DIR` gives `DIR/index`), for the search endpoints.
    pub(super) index: Option<PathBuf>,
    /// Opened on the first query; reloaded before each one to see new commits.
    pub(super) reader: Mutex<Option<Arc<crate::index::IndexReader>>>,
}

impl Handlers {
    pub(super) fn new(
        snapshots: watch::Receiver<Arc<Snapshot>>,
        commander: Commander,
        source: CommandSource,
        index: Option<PathBuf>,
    ) -> Handlers {
        Handlers {
            snapshots,
            commander,
            source,
            rendered: Mutex::new(Rendered::default()),
            index,
            reader: Mutex::new(None),
        }
    }

    /// Sends a validated command to the engine, recorded under this room's source.
    pub(super) fn send(&self, cmd: Command) -> Result<serde_json::Value, Refused> {
        if cmd == Command::Export && !self.commander.exports() {
            return Err(Refused::NothingToExport);
        }
        if self.commander.send(cmd, self.source) {
            Ok(command_reply(cmd))
        } else {
            Err(Refused::Over)
        }
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        // The borrow holds the channel's read lock: clone the Arc and let it go at once.
        self.snapshots.borrow().clone()
    }

    /// A page of the live site table (`GET /sites`, `SITES ...`).
    pub(super) fn sites(&self, query: &SiteQuery) -> serde_json::Value {
        serde_json::to_value(self.commander.sites().query(query))
            .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }))
    }

    /// The view of the latest snapshot, rendered once per snapshot.
    pub(super) fn render(&self, view: View) -> Result<Bytes, serde_json::Error> {
        let snap = self.snapshot();
        let slot = |r: &mut Rendered| -> Option<Bytes> {
            let cached = match view {
                View::Stats => &r.stats,
                View::Metrics => &r.metrics,
            };
            cached
                .as_ref()
                .filter(|(s, _)| Arc::ptr_eq(s, &snap))
                .map(|(_, b)| b.clone())
        };
        if let Some(bytes) = slot(&mut self.lock_rendered()) {
            return Ok(bytes);
        }
        // Rendered outside the lock: a big snapshot must not make other connections wait.
        // Live snapshots carry no site rows: the stats and the metrics read them from the
        // live table in place (every row for the stats, the most queued for the metrics),
        // never through a copy of the table.
        let live = snap.sites.is_empty() && snap.site_count > 0;
        let bytes = match view {
            View::Stats if live => Bytes::from(serde_json::to_vec(&StatsBody {
                snap: &snap,
                sites: &self.commander.sites(),
            })?),
            View::Stats => Bytes::from(serde_json::to_vec(&*snap)?),
            View::Metrics if live => Bytes::from(super::metrics::metrics_text_live(
                &snap,
                &self.commander.sites(),
            )),
            View::Metrics => Bytes::from(super::metrics::metrics_text(&snap)),
        };
        let mut rendered = self.lock_rendered();
        let entry = Some((snap, bytes.clone()));
        match view {
            View::Stats => rendered.stats = entry,
            View::Metrics => rendered.metrics = entry,
        }
        Ok(bytes)
    }

    fn lock_rendered(&self) -> MutexGuard<'_, Rendered> {
        // The cache holds finished renderings only; a panic elsewhere leaves it valid.
        self.rendered.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A live snapshot as `/stats` gives it: its own fields, with `sites` serialized from the
/// live table as it is written out. The snapshot without its rows is small (bounded lists:
/// workers, heap top, log), so it goes through a `serde_json` map; the rows never do.
struct StatsBody<'a> {
    snap: &'a Snapshot,
    sites: &'a SiteTable,
}

impl serde::Serialize for StatsBody<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeMap};
        let serde_json::Value::Object(fields) =
            serde_json::to_value(self.snap).map_err(S::Error::custom)?
        else {
            return Err(S::Error::custom("a snapshot serializes as an object"));
        };
        let mut map = serializer.serialize_map(Some(fields.len()))?;
        for (key, value) in &fields {
            if key == "sites" {
                map.serialize_entry(key, &self.sites.in_place())?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked_against_the_same_bounds_for_both_rooms() {
        assert_eq!(delay("0"), Ok(Command::SetDelay(Duration::ZERO)));
        assert_eq!(
            delay("3600000"),
            Ok(Command::SetDelay(Duration::from_hours(1)))
        );
        for bad in ["3600001", "-1", "1.5", "", "abc", "99999999999999999999999"] {
            let msg = delay(bad).expect_err(bad);
            assert!(
                msg.contains("parameter ms") && msg.contains(&format!("{bad:?}")),
                "{msg}"
            );
        }
        assert_eq!(workers("1"), Ok(Command::SetWorkers(1)));
        assert_eq!(workers("4096"), Ok(Command::SetWorkers(4096)));
        for bad in ["0", "4097", "x", "-3", ""] {
            assert!(workers(bad).expect_err(bad).contains("parameter n"));
        }
        assert_eq!(
            command_reply(Command::Export),
            serde_json::json!({"ok": true, "command": "export"})
        );
    }

    #[test]
    fn site_queries_take_their_four_parameters_once_each_and_refuse_the_rest() {
        let q = site_query([
            ("sort", "origin"),
            ("limit", "1000"),
            ("offset", "7"),
            ("filter", ":80"),
        ])
        .expect("valid");
        assert_eq!(
            (q.sort, q.limit, q.offset, q.filter.as_str()),
            (SiteSort::Origin, 1000, 7, ":80")
        );
        let d = site_query([]).expect("defaults");
        assert_eq!((d.sort, d.limit, d.offset), (SiteSort::Queued, 50, 0));
        for (params, word) in [
            (vec![("limit", "-1")], "parameter limit"),
            (vec![("limit", "0")], "parameter limit"),
            (vec![("limit", "1001")], "parameter limit"),
            (
                vec![("limit", "99999999999999999999999")],
                "parameter limit",
            ),
            (vec![("offset", "-3")], "parameter offset"),
            (vec![("sort", "nonsense")], "parameter sort"),
            (
                vec![("sort", "queued"), ("sort", "origin")],
                "more than once",
            ),
            (vec![("page", "2")], "unknown parameter"),
        ] {
            let msg = site_query(params.clone()).expect_err(&format!("{params:?}"));
            assert!(msg.contains(word), "{params:?}: {msg}");
        }
    }
}
