//! The engine's per-site record: robots.txt, where its delay comes from, its counters.
//!
//! The frontier keeps the politeness schedule; this keeps what the engine knows of a site.
//! It never touches the network.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::robots::{CrawlDelay, SiteRobots};
use crate::snapshot::DelaySource;

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
    pub(super) recent_errors: std::collections::VecDeque<String>,
    /// robots.txt's final answer, for the checkpoint.
    pub(super) robots_memo: super::coordinator::RobotsMemo,
    /// Changed since the last checkpoint.
    pub(super) dirty: bool,
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
            recent_errors: std::collections::VecDeque::new(),
            robots_memo: super::coordinator::RobotsMemo::default(),
            dirty: false,
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
