//! The crawl's object model (docs/ARCHITECTURE.md, "The object model"): sites and resources, their
//! states and the legal changes of state.
//!
//! It owns the types every part of the engine speaks in: [`Resource`] (one URL, in one of eight
//! [`ResourceState`]s, with [`Failure`] saying why a fetch failed), [`StateCounts`] (how many
//! resources are in each state, kept right by the one method that changes a state), and
//! [`Site`] (one origin: its robots.txt in one of five [`crate::robots::RobotsState`]s, where its
//! delay comes from, its counters, and the [`RobotsMemo`] a resume replays). The coordinator,
//! the checkpoint, the snapshot publisher and the export all import it; it imports none of
//! them. Spider and thinker tasks have no type of their own here: a spider task is a worker's
//! robots.txt or page fetch (the coordinator's `TaskDone`), a thinker task the parse that rides
//! on a page fetch, counted in the snapshot's `scheduler`.
//!
//! It must never do I/O, read a clock (times are passed in as time since the crawl's start),
//! or know the frontier's queues: the frontier keeps the politeness schedule, this keeps what
//! the engine knows.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::frontier::SiteId;
use crate::robots::{CrawlDelay, SiteRobots};
use crate::scope::IgnoreReason;
use crate::snapshot::{DelaySource, Errors};
use crate::store::commit::Seq;

/// A resource's state (docs/ARCHITECTURE.md, "The object model").
///
/// Every resource starts `Discovered`. From there: `FetchIgnored` (out of scope, too deep, over
/// a limit; a shorter path may bring a too-deep one back to `Discovered`), `FetchForbidden`
/// (robots.txt), `FetchError`, or `Fetched`; a fetched page ends `ParseIgnored` (not HTML, or
/// in a content coding the fetch does not decode), `ParseError` or `Parsed`. A resume may take
/// a fetched resource back to `Discovered` (its result was not committed) to fetch it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ResourceState {
    Discovered,
    FetchIgnored,
    FetchForbidden,
    FetchError,
    Fetched,
    ParseIgnored,
    ParseError,
    Parsed,
}

impl ResourceState {
    /// How many states there are.
    pub(super) const COUNT: usize = 8;
    /// Every state, in the order of their numbers (`state as usize`).
    pub(super) const ALL: [ResourceState; Self::COUNT] = [
        Self::Discovered,
        Self::FetchIgnored,
        Self::FetchForbidden,
        Self::FetchError,
        Self::Fetched,
        Self::ParseIgnored,
        Self::ParseError,
        Self::Parsed,
    ];

    /// The page came back (whatever the parse made of it).
    pub(super) fn was_fetched(self) -> bool {
        matches!(
            self,
            Self::Fetched | Self::ParseIgnored | Self::ParseError | Self::Parsed
        )
    }
}

/// How many resources are in each state: changed only with the resources' states, through
/// [`StateCounts::add`] and [`StateCounts::change`], so the two never disagree.
#[derive(Debug, Clone, Default)]
pub(super) struct StateCounts([u64; ResourceState::COUNT]);

impl StateCounts {
    /// A new resource, in its first state.
    pub(super) fn add(&mut self, r: &Resource) {
        self.0[r.state as usize] += 1;
    }

    /// Moves `r` to `state`, counting it there instead of where it was.
    pub(super) fn change(&mut self, r: &mut Resource, state: ResourceState) {
        self.0[r.state as usize] -= 1;
        self.0[state as usize] += 1;
        r.state = state;
    }

    pub(super) fn get(&self, state: ResourceState) -> u64 {
        self.0[state as usize]
    }
}

/// Why a fetch failed, for the error counters (and for undoing them on a resume).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Failure {
    Timeout,
    Connect,
    Http4xx,
    Http5xx,
    Other,
}

impl Failure {
    /// Every kind, for the checkpoint's codes.
    pub(super) const ALL: [Failure; 5] = [
        Failure::Timeout,
        Failure::Connect,
        Failure::Http4xx,
        Failure::Http5xx,
        Failure::Other,
    ];

    /// An HTTP status the crawl does not follow or retry.
    pub(super) fn for_status(status: u16) -> Failure {
        if (400..500).contains(&status) {
            Failure::Http4xx
        } else {
            Failure::Http5xx
        }
    }

    /// The snapshot's error counter of this kind.
    pub(super) fn counter(self, errors: &mut Errors) -> &mut u64 {
        match self {
            Failure::Timeout => &mut errors.timeout,
            Failure::Connect => &mut errors.connect,
            Failure::Http4xx => &mut errors.http_4xx,
            Failure::Http5xx => &mut errors.http_5xx,
            Failure::Other => &mut errors.other,
        }
    }
}

/// One URL the crawl learned of: its row's fields, read from and written to the URL table
/// (`url_table.rs`, which keeps the URL itself and packs the rest).
#[derive(Debug, Clone)]
pub(super) struct Resource {
    pub(super) site: Option<SiteId>,
    pub(super) depth: u32,
    pub(super) state: ResourceState,
    pub(super) status: Option<u16>,
    pub(super) bytes: u64,
    /// Shared: a crawl sees a handful of distinct values.
    pub(super) content_type: Option<Arc<str>>,
    pub(super) referrer: Option<u32>,
    /// Shared, like the content type: reasons are a few distinct texts.
    pub(super) reason: Option<Arc<str>>,
    /// Why the URL was ignored, when it was (its text is in `reason`).
    pub(super) ignored: Option<IgnoreReason>,
    pub(super) hops: u8,
    pub(super) retries: u8,
    pub(super) truncated: bool,
    /// The place of its last fetch in the commit order.
    pub(super) seq: Option<Seq>,
    pub(super) failure: Option<Failure>,
}

impl Resource {
    /// A URL just learned of: `Discovered`, nothing known of it yet.
    pub(super) fn discovered(depth: u32, referrer: Option<u32>, hops: u8) -> Resource {
        Resource {
            site: None,
            depth,
            state: ResourceState::Discovered,
            status: None,
            bytes: 0,
            content_type: None,
            referrer,
            reason: None,
            ignored: None,
            hops,
            retries: 0,
            truncated: false,
            seq: None,
            failure: None,
        }
    }
}

/// What a site's robots.txt answered, kept so that a resume rebuilds the same rules without
/// asking the site again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub(super) enum RobotsMemo {
    /// Not resolved yet: a resume fetches it again.
    #[default]
    Unresolved,
    /// Not resolved: the last `tries` fetches failed, the last with `status` (a 5xx or 429) or
    /// with no answer (`None`). A resume goes on with the retries where they were (the next
    /// try at the site's kept next contact) instead of starting them over.
    Failing { tries: u32, status: Option<u16> },
    /// The final answer: status and body (base64), replayed through the same rules.
    Response {
        status: u16,
        body: String,
        /// When it was given (ms since the Unix epoch), for its age ([`RobotsMemo::answered_ms`]);
        /// missing in a checkpoint written before answers were dated.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
    },
    TooManyRedirects {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
    },
}

impl RobotsMemo {
    /// When the final answer this memo keeps was given (ms since the Unix epoch): the
    /// robots.txt is asked again once it is older than `--robots-max-age-ms`. `None` for no
    /// final answer, or one kept undated.
    pub(super) fn answered_ms(&self) -> Option<u64> {
        match self {
            RobotsMemo::Response { at_ms, .. } | RobotsMemo::TooManyRedirects { at_ms } => *at_ms,
            RobotsMemo::Unresolved | RobotsMemo::Failing { .. } => None,
        }
    }

    /// This memo with its final answer dated `now_ms`: an answer kept undated (an older
    /// checkpoint's) counts from the run that reads it, and one kept after a failed refresh is
    /// obeyed for another age.
    pub(super) fn dated(mut self, now_ms: u64) -> RobotsMemo {
        if let RobotsMemo::Response { at_ms, .. } | RobotsMemo::TooManyRedirects { at_ms } =
            &mut self
        {
            *at_ms = Some(now_ms);
        }
        self
    }
}

/// One site (an origin): robots.txt, where its delay comes from, its counters.
#[derive(Debug)]
pub(super) struct Site {
    pub(super) origin: url::Url,
    pub(super) robots: SiteRobots,
    /// robots.txt stayed unreachable through every retry: nothing is fetched here.
    pub(super) robots_gave_up: bool,
    pub(super) crawl_delay: Option<CrawlDelay>,
    /// Adaptive politeness: factor x the last response time.
    pub(super) adaptive: Option<Duration>,
    /// The server pushed back (429/503): source and end of the wait.
    pub(super) pushback: Option<(DelaySource, Duration)>,
    pub(super) backoff_attempt: u32,
    pub(super) fetched: u64,
    pub(super) errors: u64,
    pub(super) status: BTreeMap<u16, u64>,
    /// URLs admitted to the queue, for `--max-pages-per-site`.
    pub(super) admitted: u64,
    /// A capped Crawl-delay is logged once.
    pub(super) cap_logged: bool,
    /// The last few errors here, `path: reason`, oldest first.
    pub(super) recent_errors: VecDeque<String>,
    /// robots.txt's final answer, for the checkpoint.
    pub(super) robots_memo: RobotsMemo,
    /// What its robots.txt's redirects left: boxed, since most sites' robots.txt never
    /// redirects and every site carries the field.
    pub(super) redirects: Option<Box<RobotsRedirects>>,
    /// Sites whose robots.txt hop to this origin was refused (it was busy or not due yet),
    /// longest waiting first: its next contact goes to the first of them.
    pub(super) hops_waiting: VecDeque<SiteId>,
    /// The origin in whose `hops_waiting` this site waits, if any (an entry elsewhere is stale).
    pub(super) waiting_at: Option<SiteId>,
    /// Changed since the last checkpoint.
    pub(super) dirty: bool,
}

/// A site's robots.txt redirects: where the chain goes next, what it got so far, where the
/// answer came from.
#[derive(Debug, Default)]
pub(super) struct RobotsRedirects {
    /// Where robots.txt redirected, and after how many redirects: the next contact for it asks
    /// there (in memory only: a resume starts again from `/robots.txt`).
    pub(super) next: Option<(url::Url, usize)>,
    /// The responses of a chain not ended yet (its redirects so far), with when each was sent:
    /// stored when the chain ends.
    pub(super) chain: Vec<(crate::fetch::Fetched, std::time::SystemTime)>,
    /// Where the last answer came from, when redirects led there.
    pub(super) via: Option<url::Url>,
}

/// How many recent errors a site keeps for its detail view.
pub(super) const RECENT_ERRORS: usize = 5;

impl Site {
    pub(super) fn new(origin: url::Url, ignore_robots: bool) -> Site {
        Site {
            origin,
            robots: if ignore_robots {
                SiteRobots::skipped()
            } else {
                SiteRobots::discovered()
            },
            robots_gave_up: false,
            crawl_delay: None,
            adaptive: None,
            pushback: None,
            backoff_attempt: 0,
            fetched: 0,
            errors: 0,
            status: BTreeMap::new(),
            admitted: 0,
            cap_logged: false,
            recent_errors: VecDeque::new(),
            robots_memo: RobotsMemo::default(),
            redirects: None,
            hops_waiting: VecDeque::new(),
            waiting_at: None,
            dirty: false,
        }
    }

    /// Where its robots.txt chain goes next, and after how many redirects.
    pub(super) fn robots_next(&self) -> Option<&(url::Url, usize)> {
        self.redirects.as_ref().and_then(|r| r.next.as_ref())
    }

    /// The file that gave its robots.txt answer, when redirects led there.
    pub(super) fn robots_via(&self) -> Option<&url::Url> {
        self.redirects.as_ref().and_then(|r| r.via.as_ref())
    }

    pub(super) fn redirects_mut(&mut self) -> &mut RobotsRedirects {
        self.redirects.get_or_insert_with(Box::default)
    }

    /// A fetch here failed: counted, and kept among the last [`RECENT_ERRORS`].
    pub(super) fn record_error(&mut self, error: String) {
        self.errors += 1;
        self.recent_errors.push_back(error);
        while self.recent_errors.len() > RECENT_ERRORS {
            self.recent_errors.pop_front();
        }
    }

    /// The site's own part of delay(site): the larger of its Crawl-delay and the adaptive
    /// delay. The frontier applies the larger of this and the global delay.
    pub(super) fn own_delay(&self) -> Duration {
        let crawl = self.crawl_delay.map_or(Duration::ZERO, |c| c.effective);
        crawl.max(self.adaptive.unwrap_or(Duration::ZERO))
    }

    /// Where the delay in force now comes from.
    pub(super) fn delay_source(&self, global: Duration, now: Duration) -> DelaySource {
        if let Some((source, until)) = self.pushback
            && until > now
        {
            return source;
        }
        let crawl = self.crawl_delay.map_or(Duration::ZERO, |c| c.effective);
        let adaptive = self.adaptive.unwrap_or(Duration::ZERO);
        if crawl.max(adaptive) <= global {
            DelaySource::Configured
        } else if adaptive > crawl {
            DelaySource::Adaptive
        } else if self.crawl_delay.is_some_and(|c| c.capped) {
            DelaySource::CappedCrawlDelay
        } else {
            DelaySource::CrawlDelay
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkpoint written before answers were dated reads as undated answers (a resume
    /// dates them then); a dated one keeps its date, and a failing one has none.
    #[test]
    fn robots_memos_of_older_checkpoints_read_undated() {
        let old: RobotsMemo =
            serde_json::from_str(r#"{"kind":"response","status":200,"body":""}"#).expect("old");
        assert_eq!(old.answered_ms(), None);
        assert_eq!(old.clone().dated(7).answered_ms(), Some(7));
        let old: RobotsMemo =
            serde_json::from_str(r#"{"kind":"too_many_redirects"}"#).expect("old variant");
        assert_eq!(old.dated(9).answered_ms(), Some(9));
        let dated = RobotsMemo::Response {
            status: 404,
            body: String::new(),
            at_ms: Some(1_700_000_000_000),
        };
        let text = serde_json::to_string(&dated).expect("json");
        let back: RobotsMemo = serde_json::from_str(&text).expect("read back");
        assert_eq!(back, dated);
        let failing = RobotsMemo::Failing {
            tries: 2,
            status: Some(503),
        };
        assert_eq!(failing.dated(5).answered_ms(), None);
        // An undated memo is written as before.
        let undated = RobotsMemo::TooManyRedirects { at_ms: None };
        assert_eq!(
            serde_json::to_string(&undated).expect("json"),
            r#"{"kind":"too_many_redirects"}"#
        );
    }

    /// The counts follow every change of state, so the snapshot's `resources` add up.
    #[test]
    fn state_counts_follow_each_change() {
        let mut counts = StateCounts::default();
        let mut r = Resource::discovered(0, None, 0);
        counts.add(&r);
        counts.change(&mut r, ResourceState::Fetched);
        counts.change(&mut r, ResourceState::Parsed);
        assert_eq!(r.state, ResourceState::Parsed);
        assert_eq!(counts.get(ResourceState::Discovered), 0);
        assert_eq!(counts.get(ResourceState::Fetched), 0);
        assert_eq!(counts.get(ResourceState::Parsed), 1);
        assert!(r.state.was_fetched());
    }

    /// The model imports nothing from its users: no module of the engine imports back from
    /// the coordinator, so the engine has no import loop.
    #[test]
    fn the_model_and_its_users_import_no_loop() {
        let model = include_str!("model.rs");
        let imports: String = model
            .lines()
            .take_while(|l| !l.starts_with("#[cfg(test)]"))
            .filter(|l| l.starts_with("use "))
            .collect();
        for user in [
            "coordinator",
            "export",
            "checkpoint",
            "publish",
            "url_table",
        ] {
            assert!(!imports.contains(user), "model.rs imports {user}");
        }
        for (name, text) in [
            ("export.rs", include_str!("export.rs")),
            (
                "coordinator/checkpoint.rs",
                include_str!("coordinator/checkpoint.rs"),
            ),
            (
                "coordinator/publish.rs",
                include_str!("coordinator/publish.rs"),
            ),
            ("url_table.rs", include_str!("url_table.rs")),
        ] {
            assert!(
                !text.contains("coordinator::"),
                "{name} imports from the coordinator"
            );
        }
    }
}
