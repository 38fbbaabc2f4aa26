//! The crawl's files: the stats (JSON), one CSV row per site, one JSON line per resource.
//!
//! It owns their formats and writes each atomically (a temporary file beside it, then a
//! rename), so a reader never sees half a file. It never decides when to write: the
//! coordinator calls it on every way out and on the `export` command.

use std::io::Write as _;
use std::path::Path;
use std::time::SystemTime;

use serde::Serialize;

use super::model::ResourceState;
use super::url_table::UrlTable;
use super::{EngineError, Summary};
use crate::config::CrawlConfig;
use crate::snapshot::Snapshot;

/// The stats file: the final snapshot's keys at the top level, plus totals, the effective
/// configuration and the mailto addresses found.
#[derive(Debug, Serialize)]
pub struct StatsFile<'a> {
    #[serde(flatten)]
    pub snapshot: &'a Snapshot,
    pub totals: Totals,
    pub config: ConfigShown<'a>,
    pub mailto: &'a [String],
}

/// The configuration as the stats file shows it: its seeds cut to the first
/// [`crate::config::SEEDS_SHOWN`] (a seeds file may hold millions), and how many there are.
#[derive(Debug, Serialize)]
pub struct ConfigShown<'a> {
    #[serde(flatten)]
    pub config: &'a CrawlConfig,
    pub seeds_total: usize,
}

/// Totals over the whole crawl.
#[derive(Debug, Serialize)]
pub struct Totals {
    /// Seconds since the Unix epoch when the crawl started.
    pub started_at_unix_s: f64,
    /// This run's seconds (a resumed crawl's clock starts again), as the top-level `elapsed_s`.
    pub elapsed_s: f64,
    /// Every run's seconds, this one's included (the top-level `crawl_elapsed_s`): the
    /// counts below are the whole crawl's, so `pages_fetched / crawl_elapsed_s` is its rate.
    pub crawl_elapsed_s: f64,
    /// True when the crawl ran out of work; false when it was stopped or aborted.
    pub completed: bool,
    pub urls_discovered: u64,
    pub pages_fetched: u64,
    pub bytes: u64,
    pub sites: usize,
    /// Requests the servers answered (the sum of `http.status`); a request no server answered
    /// (refused, or timed out before its status line) is not among them.
    pub requests: u64,
}

/// Checks, before a crawl starts, that each file the configuration asks for can be made where
/// it goes (a temporary file is created beside it and removed): a mistyped folder is an error
/// at the start, not after a crawl whose statistics then have nowhere to go.
pub(super) fn check_writable(cfg: &CrawlConfig) -> Result<(), EngineError> {
    for path in files(cfg) {
        let dir = dir_of(path);
        if !dir.exists() {
            // The crawl folder, which the crawl makes as it starts: a file of the user's there
            // (`DIR/stats.json`) is checked once it exists, when it is written (audit 34).
            if cfg
                .out
                .as_deref()
                .is_some_and(|out| crate::config::same_file(dir, out))
            {
                continue;
            }
            return Err(EngineError::Write {
                path: path.clone(),
                error: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("the folder {} does not exist", dir.display()),
                ),
            });
        }
        super::leftover::remove(dir, path);
        tempfile::Builder::new()
            .prefix(&super::leftover::prefix(path))
            .tempfile_in(dir_of(path))
            .map_err(|error| EngineError::Write {
                path: path.clone(),
                error,
            })?;
    }
    Ok(())
}

/// The files an export writes: `--stats-out`, `--sites-out`, `--urls-out`, those given.
pub(super) fn files(cfg: &CrawlConfig) -> impl Iterator<Item = &std::path::PathBuf> {
    [&cfg.stats_out, &cfg.sites_out, &cfg.urls_out]
        .into_iter()
        .flatten()
}

/// A written file's mode: what any new file gets under the umask (0644 under 0022), not the
/// temporary file's private 0600, which the rename would keep (audit 25).
pub fn shared_file() -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::Permissions::from_mode(0o666)
}

/// The folder a file of `path` goes in (the working folder for a bare name).
fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Writes every file the configuration asks for.
pub(super) fn write_all(
    cfg: &CrawlConfig,
    summary: &Summary,
    resources: &UrlTable,
    started: SystemTime,
) -> Result<(), EngineError> {
    let snap = &summary.snapshot;
    if let Some(path) = &cfg.stats_out {
        let stats = StatsFile {
            snapshot: snap,
            totals: Totals {
                started_at_unix_s: started
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64()),
                elapsed_s: snap.elapsed_s,
                crawl_elapsed_s: snap.crawl_elapsed_s,
                completed: summary.completed,
                urls_discovered: snap.resources.discovered,
                pages_fetched: snap.resources.fetched,
                bytes: snap.http.bytes,
                sites: snap.sites.len(),
                requests: snap.http.status.values().sum(),
            },
            config: ConfigShown {
                config: cfg,
                seeds_total: cfg.seeds.len(),
            },
            mailto: &summary.mailto,
        };
        atomically(path, |w| {
            serde_json::to_writer_pretty(&mut *w, &stats).map_err(std::io::Error::other)?;
            writeln!(w)
        })?;
    }
    if let Some(path) = &cfg.sites_out {
        atomically(path, |w| {
            writeln!(
                w,
                "origin,robots_state,crawl_delay_ms,delay_ms,delay_source,queued,fetched,errors,\
                 crawl_delay_asked_ms"
            )?;
            for s in &snap.sites {
                writeln!(
                    w,
                    "{},{},{},{},{},{},{},{},{}",
                    csv(&s.origin),
                    enum_name(&s.robots_state),
                    s.crawl_delay_ms.map_or(String::new(), |d| d.to_string()),
                    s.delay_ms,
                    enum_name(&s.delay_source),
                    s.queued,
                    s.fetched,
                    s.errors,
                    s.crawl_delay_asked_ms
                        .map_or(String::new(), |d| d.to_string()),
                )?;
            }
            Ok(())
        })?;
    }
    if let Some(path) = &cfg.urls_out {
        atomically(path, |w| {
            // Streamed in id order, rows that left memory read back from the state file a
            // block at a time (the final checkpoint is committed before this runs); links of
            // one page are neighbours, so the referrer's URL is looked up once for each run
            // of them.
            let mut referrer: Option<(u32, String)> = None;
            let mut result = Ok(());
            let read = resources.for_each(|_, url, r| {
                if result.is_err() {
                    return;
                }
                if let Some(id) = r.referrer
                    && referrer.as_ref().is_none_or(|(at, _)| *at != id)
                {
                    match resources.peek_url(id) {
                        Ok(url) => referrer = Some((id, url)),
                        Err(e) => {
                            result = Err(std::io::Error::other(e));
                            return;
                        }
                    }
                }
                let line = UrlLine {
                    url,
                    depth: r.depth,
                    state: r.state,
                    status: r.status,
                    bytes: r.bytes,
                    content_type: r.content_type.as_deref(),
                    referrer: r.referrer.and(referrer.as_ref().map(|(_, u)| u.as_str())),
                    reason: r.reason.as_deref(),
                    truncated: r.truncated,
                    retries: r.retries,
                };
                result = serde_json::to_writer(&mut *w, &line)
                    .map_err(std::io::Error::other)
                    .and_then(|()| writeln!(w));
            });
            read.map_err(std::io::Error::other)?;
            result?;
            Ok(())
        })?;
    }
    Ok(())
}

#[derive(Serialize)]
struct UrlLine<'a> {
    url: &'a str,
    depth: u32,
    state: ResourceState,
    status: Option<u16>,
    bytes: u64,
    content_type: Option<&'a str>,
    referrer: Option<&'a str>,
    reason: Option<&'a str>,
    truncated: bool,
    retries: u8,
}

/// The serde name of a unit enum variant (`"handled"`, `"crawl_delay"`).
fn enum_name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Quotes a CSV field when it needs it.
fn csv(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

/// Writes `path` through a temporary file beside it and a rename.
fn atomically(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<(), EngineError> {
    let err = |error| EngineError::Write {
        path: path.to_path_buf(),
        error,
    };
    let tmp = tempfile::Builder::new()
        .prefix(&super::leftover::prefix(path))
        .permissions(shared_file())
        .tempfile_in(dir_of(path))
        .map_err(err)?;
    let mut w = std::io::BufWriter::new(tmp.reopen().map_err(err)?);
    write(&mut w).map_err(err)?;
    w.flush().map_err(err)?;
    w.get_ref().sync_all().map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv("http://a:1"), "http://a:1");
        assert_eq!(csv("a,b"), "\"a,b\"");
        assert_eq!(csv("say \"hi\""), "\"say \"\"hi\"\"\"");
    }

    #[test]
    fn atomic_write_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out.json");
        atomically(&path, |w| writeln!(w, "{{}}")).expect("written");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "{}\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("read_dir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        let missing = dir.path().join("no/such/dir/out.json");
        assert!(atomically(&missing, |w| writeln!(w, "x")).is_err());
    }
}
