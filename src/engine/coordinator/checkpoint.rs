//! The coordinator's side of the checkpoint: which rows changed since the last one, what a row
//! holds, and how a resume rebuilds the crawl from the rows.
//!
//! The committer writes a checkpoint between two items of the commit order, so its mark `M`
//! says exactly what the store holds: every fetch numbered below `M`. The rows are the
//! coordinator's state when it asked, which may already include results numbered `M` or above
//! (they had arrived but waited in the reorder window). A resume therefore takes every such
//! URL back: its counters are undone and it is queued again, so it is fetched and stored once.
//! A site's row holds its robots.txt answer ([`RobotsMemo`]), which a resume replays; the
//! response itself went to the committer (for the WARC files) in the step that marked the row
//! changed, so a checkpoint holding the answer has its records below the mark, and a resume
//! whose checkpoint lacks it fetches robots.txt again.
//! This module never does I/O: the committer thread writes, `store::checkpoint` reads.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::Coordinator;
use crate::engine::model::{Failure, ResourceState, RobotsMemo, Site};
use crate::engine::url_table::UrlTable;
use crate::frontier::{Queued, Schedule, SiteId};
use crate::scope::IgnoreReason;
use crate::snapshot::{Errors, Http};
use crate::store::checkpoint::{CheckpointError, Delta, Loaded};

/// One site as the checkpoint keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct SiteRow {
    origin: String,
    robots: RobotsMemo,
    robots_gave_up: bool,
    backoff_attempt: u32,
    fetched: u64,
    errors: u64,
    status: BTreeMap<u16, u64>,
    admitted: u64,
    cap_logged: bool,
    recent_errors: Vec<String>,
    /// Milliseconds since the Unix epoch before which the site may not be contacted again.
    next_contact_ms: u64,
}

/// The counters and sets the engine keeps whole.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct EngineRow {
    /// The seeds, in states written before they were kept apart ([`Delta::seeds`]); empty
    /// since, and not written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    seeds: Vec<String>,
    errors: Errors,
    http: Http,
    pages_fetched: u64,
    spider_done: u64,
    thinker_done: u64,
    admitted: u64,
    mailto: BTreeSet<String>,
    /// Seconds crawled by the runs before this one.
    elapsed_s: f64,
    /// A delay set while the crawl ran (`ctl delay`, the dashboard's `+`/`-`) that differs
    /// from its `--delay-ms`: a resume given the same `--delay-ms` keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    throttle: Option<Throttle>,
}

/// The crawl's delay as a throttle left it, and the `--delay-ms` of the run that had it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Throttle {
    given_ms: u64,
    live_ms: u64,
}

/// A checkpoint read back and checked, ready to be applied.
#[derive(Debug)]
pub(super) struct Restored {
    mark: u64,
    runs: u64,
    resources: UrlTable,
    sites: Vec<SiteRow>,
    engine: EngineRow,
    /// The seeds the crawl's runs so far were given.
    seeds: Vec<String>,
    /// Pages the index cut below the mark: their rows may not say so yet.
    text_cuts: Vec<crate::index::feed::CutPage>,
}

/// What the snapshot says about the runs of this crawl.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Runs {
    /// This run's number, 1 for a fresh crawl.
    pub(super) run: u64,
    /// The mark this run resumed from.
    pub(super) resumed_from: Option<u64>,
    /// URLs above the mark, taken back to be fetched again.
    pub(super) refetched: u64,
    /// Seconds crawled by the runs before this one.
    pub(super) elapsed_before_s: f64,
}

impl Restored {
    /// Decodes and checks the rows: dense ids, sites and referrers that exist. Anything else
    /// is a corrupt checkpoint, never trusted.
    pub(super) fn decode(
        loaded: &Loaded,
        path: &std::path::Path,
    ) -> Result<Restored, CheckpointError> {
        let corrupt = |reason: String| CheckpointError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        let mut engine: EngineRow = if loaded.engine.is_empty() {
            EngineRow::default()
        } else {
            serde_json::from_slice(&loaded.engine)
                .map_err(|e| corrupt(format!("the engine row does not read: {e}")))?
        };
        let seeds = match &loaded.seeds {
            Some(bytes) => serde_json::from_slice(bytes)
                .map_err(|e| corrupt(format!("the seeds do not read: {e}")))?,
            None => std::mem::take(&mut engine.seeds),
        };
        let mut sites = Vec::with_capacity(loaded.sites.len());
        for (i, (id, bytes)) in loaded.sites.iter().enumerate() {
            if *id as usize != i {
                return Err(corrupt(format!("site {i} is missing")));
            }
            let row: SiteRow = serde_json::from_slice(bytes)
                .map_err(|e| corrupt(format!("site {id} does not read: {e}")))?;
            if url::Url::parse(&row.origin).is_err() {
                return Err(corrupt(format!("site {id} has no valid origin")));
            }
            sites.push(row);
        }
        let mut resources = UrlTable::default();
        for (block, bytes) in &loaded.url_blocks {
            resources.load_block(*block, bytes).map_err(&corrupt)?;
        }
        for (id, bytes) in &loaded.url_rows {
            resources.load_row(*id, bytes).map_err(&corrupt)?;
        }
        let mut bad = None;
        let read = resources.for_each(|id, _, r| {
            if bad.is_some() {
                return;
            }
            if r.site.is_some_and(|s| s.index() >= sites.len()) {
                bad = Some(format!("URL {id} names a site that does not exist"));
            } else if r.referrer.is_some_and(|x| x as usize >= resources.len()) {
                bad = Some(format!("URL {id} names a referrer that does not exist"));
            }
        });
        if let Some(reason) = read.err().or(bad) {
            return Err(corrupt(reason));
        }
        Ok(Restored {
            mark: loaded.mark.seq,
            runs: loaded.mark.runs,
            resources,
            sites,
            engine,
            seeds,
            text_cuts: loaded.text_cuts.clone(),
        })
    }

    /// The seeds the crawl was started with.
    pub(super) fn seeds(&self) -> &[String] {
        &self.seeds
    }
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl<F: Schedule> Coordinator<F> {
    /// Notes that a URL's row changed, for the next checkpoint.
    pub(super) fn touch(&mut self, id: u32) {
        if self.committer.is_none() {
            return;
        }
        self.resources.touch(id);
    }

    /// Notes that a site's row changed, for the next checkpoint and the live site table.
    pub(super) fn touch_site(&mut self, site: SiteId) {
        self.live.mark(site);
        if self.committer.is_none() {
            return;
        }
        if let Some(s) = self.sites.get_mut(site.index())
            && !s.dirty
        {
            s.dirty = true;
            self.dirty_sites.push(site);
        }
    }

    /// Hands the committer a checkpoint: every row changed since the last one, the counters,
    /// and the mark (everything handed over so far). It never marks the crawl finished: that
    /// comes after the exports ([`crate::store::checkpoint::UrlReader::mark_finished`]).
    pub(super) fn checkpoint(&mut self) {
        let Some(committed) = self.committer.as_ref().map(|c| c.status().checkpoints()) else {
            return;
        };
        // Rows whose last change a committed checkpoint holds may leave memory now.
        self.resources.committed(committed);
        self.check_read_back();
        let (url_blocks, url_rows) = self.resources.checkpoint_rows();
        let start_wall = self.start_wall();
        let sites = std::mem::take(&mut self.dirty_sites)
            .into_iter()
            .filter_map(|site| {
                let next = self.frontier.next_allowed(site);
                let s = self.sites.get_mut(site.index())?;
                s.dirty = false;
                let row = site_row(s, unix_ms(start_wall + next));
                Some((
                    site.index() as u32,
                    serde_json::to_vec(&row).unwrap_or_default(),
                ))
            })
            .collect();
        let engine = EngineRow {
            seeds: Vec::new(),
            errors: self.errors,
            http: self.http.clone(),
            pages_fetched: self.pages_fetched,
            spider_done: self.spider_done,
            thinker_done: self.thinker_done,
            admitted: self.admitted,
            mailto: self.mailto.clone(),
            elapsed_s: self.runs.elapsed_before_s + self.now().as_secs_f64(),
            throttle: (self.delay != self.cfg.delay()).then(|| Throttle {
                given_ms: self.cfg.delay_ms,
                live_ms: u64::try_from(self.delay.as_millis()).unwrap_or(u64::MAX),
            }),
        };
        let delta = Delta {
            seq: self.window.next_to_commit(),
            finished: false,
            url_blocks,
            url_rows,
            urls: self.resources.len() as u64,
            sites,
            engine: serde_json::to_vec(&engine).unwrap_or_default(),
            seeds: self.seeds_unwritten.take(),
        };
        if let Some(c) = &self.committer {
            c.checkpoint(delta);
        }
    }

    /// Rebuilds the crawl from a checkpoint: sites with their robots.txt rules and next contact,
    /// URLs with their states, the counters; every URL above the mark is taken back and, like
    /// every URL not fetched yet, queued again.
    pub(super) fn restore(&mut self, restored: Restored) {
        let Restored {
            mark,
            runs,
            resources,
            sites,
            engine,
            seeds,
            text_cuts,
        } = restored;
        // Seeds added on this resume widen an origin scope: URLs left out before may be in.
        let widened = self.cfg.seeds.len() > seeds.len();
        self.errors = engine.errors;
        self.http = engine.http;
        self.pages_fetched = engine.pages_fetched;
        self.spider_done = engine.spider_done;
        self.thinker_done = engine.thinker_done;
        self.admitted = engine.admitted;
        self.mailto = engine.mailto;
        self.runs = Runs {
            run: runs + 1,
            resumed_from: Some(mark),
            refetched: 0,
            elapsed_before_s: engine.elapsed_s,
        };
        self.keep_throttle(engine.throttle);
        let now_wall = crate::clock::wall();
        // The earlier run may have contacted any site, or met new ones, after its last
        // checkpoint (a kill) or just before it (a stop): every site waits its delay from now.
        let now = self.now();
        self.frontier.assume_contact_at(now);
        let mut ids = Vec::with_capacity(sites.len());
        for row in &sites {
            let Ok(origin) = url::Url::parse(&row.origin) else {
                continue;
            };
            let id = self.site_for(&origin);
            ids.push(id);
            self.restore_site(id, row, now_wall);
        }
        // The sites were interned again in their order, so a row's site id is the same. The
        // table is read twice, in order: for the exactly-once map, the counts and the URLs
        // above the mark; then, once those are taken back, for the queues (each URL read in
        // its run, not decoded again from its run's start per queued id).
        self.resources = resources;
        let mut take_back = Vec::new();
        let mut rejudge = Vec::new();
        // Sized once for every row: grown by half at a time, 10 M rows moved the table ~30 times.
        self.by_url.reserve(self.resources.len());
        let (by_url, counts) = (&mut self.by_url, &mut self.state_counts);
        let read = self.resources.for_each(|id, url, r| {
            by_url.insert(super::fingerprint(url), id);
            counts.add(r);
            if r.seq.is_some_and(|s| s >= mark) && r.state != ResourceState::Discovered {
                take_back.push(id);
            }
            // Left out under this run's settings too, for all a cheap look tells: not read
            // again (a big crawl has millions of out-of-scope links).
            let again = match r.ignored {
                Some(IgnoreReason::OutOfScope) => widened,
                Some(IgnoreReason::PageLimit | IgnoreReason::SitePageLimit) => true,
                _ => false,
            };
            if again && r.state == ResourceState::FetchIgnored {
                rejudge.push(id);
            }
        });
        for id in take_back {
            self.take_back(id);
            self.runs.refetched += 1;
        }
        let mut unreasoned = Vec::new();
        let (resources, frontier, sites) = (&self.resources, &mut self.frontier, &self.sites);
        let queued = resources.for_each(|id, url, r| {
            if r.state != ResourceState::Discovered {
                return;
            }
            if r.reason.is_some() {
                // E.g. "cancelled when the crawl stopped": it is queued again now.
                unreasoned.push(id);
            }
            if let Some(site) = r.site.and_then(|s| ids.get(s.index()).copied()) {
                if sites[site.index()].robots_gave_up {
                    return;
                }
                let queued = Queued {
                    id,
                    url,
                    depth: r.depth,
                };
                frontier.push(site, queued);
            }
        });
        for id in unreasoned {
            self.resources.update(id, |r| r.reason = None);
        }
        // Judged once the seeds are in (`run`).
        self.rejudge = rejudge;
        // A lower limit holds for the URLs found from now on; those queued under the earlier
        // one are fetched: said, not left to be found (audit 32: 3x the limit, no word).
        if let Some(max) = self.cfg.max_pages.filter(|&max| self.admitted > max) {
            self.warn(format!(
                "--max-pages {max} is below the {} URLs this crawl already took in: the {} still queued are fetched all the same, and no URL found from now on",
                self.admitted,
                self.frontier.len()
            ));
        }
        // The checkpoint may hold a cut page's row from before the engine wrote the reason.
        for page in text_cuts {
            self.write_cut(&page.url, page.cut);
        }
        if let Some(e) = read.err().or(queued.err()) {
            self.warn(format!("the crawl's URLs could not be read back: {e}"));
        }
    }

    /// URLs a run left out for a reason this one's settings may not share (seeds added to an
    /// origin scope, a higher `--max-pages` or `--max-pages-per-site`), judged again in the
    /// order they were found: those now in are queued, as if found now; the others keep their
    /// reason. (A lower limit holds for URLs found from now on; those queued before stay.)
    pub(super) fn rejudge(&mut self, ids: Vec<u32>) {
        for id in ids {
            if self.cfg.max_pages.is_some_and(|max| self.admitted >= max) {
                // Every limit below is the global one's or the sites': only the sites' can
                // still let a URL in, and only if the global one does.
                return;
            }
            // A seed admitted first may have taken it in already.
            if self.resources.get(id).ignored.is_some() {
                self.readmit(id);
            }
        }
    }

    /// Rebuilds a site's robots.txt rules from what it answered (a checkpoint's memo, or the
    /// politeness a shared crawl's site brings with its lease), without asking the site again.
    pub(super) fn replay_robots(&mut self, id: SiteId, memo: &RobotsMemo, gave_up: bool) {
        let policy = self.policy.clone();
        let s: &mut Site = &mut self.sites[id.index()];
        // An answer kept undated (a checkpoint older than dated answers) counts from now.
        s.robots_memo = match memo.answered_ms() {
            None => memo
                .clone()
                .dated(crate::clock::ms_since_epoch(crate::clock::wall())),
            Some(_) => memo.clone(),
        };
        if !self.cfg.ignore_robots {
            match memo {
                RobotsMemo::Unresolved => {}
                RobotsMemo::Response { status, body, .. } => {
                    let body = data_encoding::BASE64
                        .decode(body.as_bytes())
                        .unwrap_or_default();
                    s.robots.on_response(*status, &body, None, &policy);
                }
                RobotsMemo::TooManyRedirects { .. } => {
                    s.robots.on_too_many_redirects();
                }
                RobotsMemo::Failing { tries, status } => {
                    // The same failures, so the same count and the same last answer; a site
                    // that gave up failed once more than the retries allow.
                    let tries = if gave_up {
                        (*tries).max(policy.max_retries + 1)
                    } else {
                        *tries
                    };
                    for _ in 0..tries {
                        match status {
                            Some(code) => s.robots.on_response(*code, &[], None, &policy),
                            None => s.robots.on_unreachable(&policy),
                        };
                    }
                }
            }
            if gave_up && !matches!(memo, RobotsMemo::Failing { .. }) {
                // The same number of failures gives up the same way.
                for _ in 0..=policy.max_retries {
                    s.robots.on_unreachable(&policy);
                }
            }
        }
        s.robots_gave_up = gave_up;
        s.crawl_delay = s.robots.crawl_delay();
        let own = s.own_delay();
        self.frontier.set_site_delay(id, own);
    }

    /// A delay set while the earlier run crawled stays, unless this run was given another
    /// `--delay-ms` than that run: a site owner's complaint answered with a throttle must not
    /// be undone by a restart (audit 28).
    fn keep_throttle(&mut self, throttle: Option<Throttle>) {
        let Some(t) = throttle.filter(|t| t.given_ms == self.cfg.delay_ms) else {
            return;
        };
        let live = Duration::from_millis(t.live_ms);
        self.delay = live;
        self.frontier.set_default_delay(live);
        self.note(format!(
            "the delay set while the crawl ran, {} ms, is kept (give another --delay-ms than {} \
             to change it)",
            t.live_ms, t.given_ms
        ));
    }

    fn restore_site(&mut self, id: SiteId, row: &SiteRow, now_wall: SystemTime) {
        self.replay_robots(id, &row.robots, row.robots_gave_up);
        let s: &mut Site = &mut self.sites[id.index()];
        s.backoff_attempt = row.backoff_attempt;
        s.fetched = row.fetched;
        s.errors = row.errors;
        s.status = row.status.clone();
        s.admitted = row.admitted;
        s.cap_logged = row.cap_logged;
        s.recent_errors = row.recent_errors.iter().cloned().collect();
        let own = s.own_delay();
        self.frontier.set_site_delay(id, own);
        let next = SystemTime::UNIX_EPOCH + Duration::from_millis(row.next_contact_ms);
        if let Ok(wait) = next.duration_since(now_wall)
            && !wait.is_zero()
        {
            self.frontier.defer(id, self.now() + wait);
        }
    }

    /// A URL whose result was not in the store at the mark: its counters are undone and it
    /// goes back to "discovered", to be fetched again.
    fn take_back(&mut self, id: u32) {
        let r = self.resources.get(id);
        let (state, status, bytes, truncated, failure, site) =
            (r.state, r.status, r.bytes, r.truncated, r.failure, r.site);
        self.spider_done = self.spider_done.saturating_sub(1);
        if let Some(status) = status {
            let key = status.to_string();
            if let Some(n) = self.http.status.get_mut(&key) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.http.status.remove(&key);
                }
            }
            self.http.bytes = self.http.bytes.saturating_sub(bytes);
            if let Some(site) = site
                && let Some(n) = self.sites[site.index()].status.get_mut(&status)
            {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.sites[site.index()].status.remove(&status);
                }
            }
        }
        if truncated {
            self.errors.too_large = self.errors.too_large.saturating_sub(1);
        }
        if state.was_fetched() {
            self.pages_fetched = self.pages_fetched.saturating_sub(1);
            if let Some(site) = site {
                let s = &mut self.sites[site.index()];
                s.fetched = s.fetched.saturating_sub(1);
            }
        }
        if matches!(state, ResourceState::ParseError | ResourceState::Parsed) {
            self.thinker_done = self.thinker_done.saturating_sub(1);
        }
        if state == ResourceState::FetchError {
            if let Some(site) = site {
                let s = &mut self.sites[site.index()];
                s.errors = s.errors.saturating_sub(1);
            }
            let counter = failure.unwrap_or(Failure::Other).counter(&mut self.errors);
            *counter = counter.saturating_sub(1);
        }
        self.resources.update(id, |r| {
            r.status = None;
            r.bytes = 0;
            r.content_type = None;
            r.reason = None;
            r.truncated = false;
            r.failure = None;
        });
        self.set_state(id, ResourceState::Discovered);
        if let Some(site) = site {
            self.touch_site(site);
        }
    }
}

fn site_row(s: &Site, next_contact_ms: u64) -> SiteRow {
    SiteRow {
        origin: s.origin.to_string(),
        robots: s.robots_memo.clone(),
        robots_gave_up: s.robots_gave_up,
        backoff_attempt: s.backoff_attempt,
        fetched: s.fetched,
        errors: s.errors,
        status: s.status.clone(),
        admitted: s.admitted,
        cap_logged: s.cap_logged,
        recent_errors: s.recent_errors.iter().cloned().collect(),
        next_contact_ms,
    }
}
