//! The coordinator's side of a shared crawl (`crawl --cluster`, issue 13): what this member
//! hands its agent and what it makes of the agent's answers.
//!
//! A URL this member discovers is checked here against the crawl's scope and limits (every
//! member has the same settings: joining compares them) and, when it is in, goes to its site's
//! shared queue; it becomes a row of this member only when this member pulls it (or when it
//! is ignored here, as in a single process). A pulled URL is scheduled by the local frontier
//! like any other: a site is leased by one member at a time, so the frontier's per-site
//! politeness holds crawl-wide, and the site's robots.txt answer and next contact time travel
//! with its lease. When a pulled URL ends (fetched, failed, forbidden, ignored) it is finished
//! crawl-wide, after the URLs its page led to were pushed: the agent sends in order, so the
//! crawl is never seen empty between the two.
//!
//! Commands for the whole crawl (pause, resume, delay, workers, and a stop given by a key, the
//! API or the command port) go to the crawl's command log and are applied when they come back
//! from it, by every member alike; a signal (Ctrl-C, SIGTERM) stops only this member, which
//! hands its sites back. While Redis does not answer, a command applies to this member only.
//!
//! It never talks to Redis (the agent does), never waits for the agent while crawling (only at
//! the end, for the hand-back, and then for a bounded time), and never decides a URL's state
//! (the coordinator does).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use url::Url;

use super::Coordinator;
use crate::cluster::agent::{Agent, AgentError, FromAgent, ToAgent};
use crate::cluster::shared::{Entry, Heartbeat, Previous, SharedCommand};
use crate::engine::Command;
use crate::engine::model::{Resource, ResourceState, RobotsMemo};
use crate::frontier::{HoldState, Schedule, SeenMap, SiteId};
use crate::scope::IgnoreReason;
use crate::snapshot::{ClusterView, CommandSource, MemberRow};
use crate::store::commit::Seq;

/// How often the member beats (and adds its counts to the crawl-wide counters).
const BEAT_EVERY: Duration = Duration::from_secs(1);
/// How long a stopping member waits for its agent to hand its sites back.
const HAND_BACK_PATIENCE: Duration = Duration::from_secs(30);

/// A site's politeness as it travels with its lease (its next contact travels beside it, and
/// a lease its holder did not hand back adds the site's delay from the take: `on_leased`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Politeness {
    robots: RobotsMemo,
    robots_gave_up: bool,
}

/// This member's link to its agent and what it keeps of the shared crawl.
pub(in crate::engine) struct Link {
    to: mpsc::UnboundedSender<ToAgent>,
    from: mpsc::UnboundedReceiver<FromAgent>,
    task: Option<JoinHandle<Result<(), AgentError>>>,
    /// Tells the agent its member leaves, past an inbox it does not read while it retries Redis.
    leave: tokio_util::sync::CancellationToken,
    /// How long the agent's leases last without a renewal (`--lease-ms`).
    lease: Duration,
    /// Stops the agent where it is. It runs on a thread of its own, which the runtime's
    /// shutdown waits for: a link dropped before its agent ended (an error, a hand-back that
    /// ran out of patience while Redis is away) must not hold the process forever.
    kill: futures::future::AbortHandle,
    crawl_id: String,
    member: String,
    /// Discovered URLs waiting to go to their sites' shared queues, by origin.
    push: HashMap<String, Vec<Entry>>,
    /// Pulled URLs that ended, waiting to be finished crawl-wide, by site.
    done: HashMap<SiteId, Vec<Entry>>,
    /// How many of `done`'s entries of each site the agent was told of as waiting for a
    /// checkpoint ([`ToAgent::Waiting`]).
    done_waited: HashMap<SiteId, usize>,
    /// Pulled URLs that went to `unstored` since the last flush, by site: the agent is told
    /// ([`ToAgent::Waiting`]), so that it pulls the site's next batch while they wait.
    waiting: HashMap<SiteId, usize>,
    /// Pulled URLs that ended after their fetch took a place in the commit order, by that
    /// place: finished crawl-wide only once a written checkpoint holds it. Until then the
    /// member's folder could lose the page to a kill, and Redis must not count it as done (a
    /// kill puts it back in its site's queue: fetched again, never lost).
    unstored: BTreeMap<Seq, (SiteId, Entry)>,
    /// Rows of pulled URLs not ended yet, with their site and entry.
    pulled: HashMap<u32, (SiteId, Entry)>,
    /// URLs this member already pushed, with the depth each was last pushed at: the shared
    /// seen sets decide, this saves round trips; with `--depth`, a shorter path pushes a URL
    /// again (the crawl keeps the least depth until the URL is pulled). 12 bytes a slot.
    sent: SeenMap,
    leased: HashSet<SiteId>,
    /// Until when each leased site's lease stands for sure ([`FromAgent::Fresh`]): no contact
    /// after that before the agent renewed it.
    fresh: HashMap<SiteId, Instant>,
    /// Sites asked back by the agent: released once nothing of theirs is in flight.
    leaving: HashSet<SiteId>,
    /// Rows of pulled URLs that went back to the crawl unfetched (a site given back, a lease
    /// lost): fetched here after all if this member pulls them again.
    handed: HashSet<u32>,
    served: HashSet<SiteId>,
    /// The crawl-wide end was seen.
    finished: bool,
    fault: Option<String>,
    /// A stop given here for the whole crawl, on its way to the command log, with who gave it:
    /// if Redis stops answering before it comes back, it applies here alone (the agent holds
    /// it until Redis answers).
    stop_unlogged: Option<CommandSource>,
    view: ClusterView,
    last_beat: Option<Instant>,
    /// Pages and errors already added to the crawl-wide counters.
    counted: (u64, u64, u64),
    shared_urls: u64,
    capacity: usize,
    /// Pulled URLs whose ends went to the agent and are not stored crawl-wide yet.
    unacked: usize,
}

impl Drop for Link {
    fn drop(&mut self) {
        // A no-op once the agent has ended (the usual way out: `leave_cluster`).
        self.kill.abort();
    }
}

impl Link {
    pub(in crate::engine) fn new(agent: Agent, crawl_id: &str, member: &str) -> Link {
        Link {
            to: agent.to,
            from: agent.from,
            task: Some(agent.task),
            leave: agent.leaving,
            lease: agent.lease,
            kill: agent.kill,
            crawl_id: crawl_id.to_string(),
            member: member.to_string(),
            push: HashMap::new(),
            done: HashMap::new(),
            done_waited: HashMap::new(),
            waiting: HashMap::new(),
            unstored: BTreeMap::new(),
            pulled: HashMap::new(),
            sent: SeenMap::new(),
            leased: HashSet::new(),
            fresh: HashMap::new(),
            leaving: HashSet::new(),
            handed: HashSet::new(),
            served: HashSet::new(),
            finished: false,
            fault: None,
            stop_unlogged: None,
            view: ClusterView::default(),
            last_beat: None,
            counted: (0, 0, 0),
            shared_urls: 0,
            capacity: 0,
            unacked: 0,
        }
    }

    /// The crawl-wide end was seen: nothing queued, held or in flight anywhere.
    pub(super) fn finished(&self) -> bool {
        self.finished
    }

    fn send(&self, msg: ToAgent) {
        // The agent ends only when told to (or when the runtime goes): nothing to do then.
        let _ = self.to.send(msg);
    }
}

/// The agent's next message; never, without a shared crawl.
pub(super) async fn from_agent(link: Option<&mut Link>) -> Option<FromAgent> {
    match link {
        Some(l) => l.from.recv().await,
        None => std::future::pending().await,
    }
}

impl<F: Schedule> Coordinator<F> {
    /// Makes this coordinator a member of the shared crawl its agent joined.
    pub(in crate::engine) fn join_cluster(&mut self, link: Link, crawl_seeds: &[String]) {
        self.cluster = Some(link);
        let seeds: Vec<Url> = crawl_seeds
            .iter()
            .filter_map(|s| Url::parse(s).ok())
            .collect();
        // Nothing is known yet: nothing to look at again.
        self.scope.widen(&seeds);
    }

    /// A member joined with seeds of its own: the crawl's scope takes them in, and the URLs
    /// this member left out of scope that it now admits are admitted as if found now, at the
    /// depth (and with the referrer and hops) their rows hold, through the crawl's queues like
    /// any link found here (audit 30 F4: with `--depth`, a link to that member's origin found
    /// before it joined was never judged again, and the pages past it were lost when its own
    /// site's tree reached it only deeper). The rows stay as they are until this member pulls
    /// them (`take_back_ignored`), if ever: another member may pull them.
    ///
    /// The rows are found by a look over the URL table, which is rare (a member joining with
    /// seeds of an origin not in scope yet) and reads only the out-of-scope URLs that hold the
    /// new seeds' hosts.
    pub(super) fn widen_scope(&mut self, seeds: &[Url]) {
        let gained = self.scope.widen(seeds);
        if gained.is_empty() {
            return;
        }
        let scope = &self.scope;
        let mut back = Vec::new();
        let read = self
            .resources
            .for_each_ignored(IgnoreReason::OutOfScope, |id, text| {
                if !gained.iter().any(|g| text.contains(g.as_str())) {
                    return;
                }
                let in_now = Url::parse(text)
                    .is_ok_and(|url| scope.check(&url, 0) != Err(IgnoreReason::OutOfScope));
                if in_now {
                    back.push(id);
                }
            });
        if let Err(e) = read {
            self.warn(format!(
                "the crawl's URLs could not be read back to judge them again under the \
                 wider scope: {e}"
            ));
        }
        for id in back {
            self.readmit(id);
        }
    }

    /// No new fetches: Redis does not answer (a site's lease may run out meanwhile) until the
    /// agent has checked the leases and says it answers again, or as many fetches as there
    /// are workers ended without Redis having their ends yet. A lease that runs out while
    /// Redis is slow or away sends its unfinished URLs to another member: this bounds what a
    /// fault or a kill can have fetched twice.
    /// Whether `site`'s lease may have run out: its last renewal is older than the agent said
    /// it stands for sure. Another member may hold it now, so it is not contacted until the
    /// agent renews it (or says it is lost).
    pub(super) fn lease_stale(&self, site: SiteId) -> bool {
        (self.cluster.as_ref())
            .and_then(|l| l.fresh.get(&site))
            .is_some_and(|until| Instant::now() >= *until)
    }

    pub(super) fn cluster_waits(&self) -> bool {
        self.cluster
            .as_ref()
            .is_some_and(|l| l.fault.is_some() || l.unacked >= self.slots.target.max(1))
    }

    /// A URL not known here, in a shared crawl: pushed to its site's shared queue when it is in
    /// scope (true), or left to the caller to record as ignored here (false). One this member
    /// pushed before is known crawl-wide: true, whatever this path; with `--depth`, a shorter
    /// path than the one it went with pushes it again at this depth (the crawl queues it
    /// again if no member has pulled it yet).
    pub(super) fn admit_shared(
        &mut self,
        url: &Url,
        key: u64,
        depth: u32,
        referrer: Option<u32>,
        hops: u8,
    ) -> bool {
        let too_many_hops = hops > 0 && u32::from(hops) > self.cfg.max_redirects;
        // Before the scope: a longer path to a URL pushed, not pulled yet, would make it an
        // ignored row here, and the pulled URL would then end unfetched (audit 21: 39 of 478
        // pages within `--depth 3` missing).
        if let Some(pushed_at) = self.cluster.as_ref().and_then(|l| l.sent.get(key)) {
            let shorter = self.scope.max_depth().is_some() && depth < pushed_at;
            if shorter && !too_many_hops {
                self.push_shared(url, key, depth, referrer, hops);
            }
            return true;
        }
        if too_many_hops || self.scope.check(url, depth).is_err() {
            return false;
        }
        self.push_shared(url, key, depth, referrer, hops);
        true
    }

    /// Queues a URL in scope to go to its site's shared queue at the next flush.
    pub(super) fn push_shared(
        &mut self,
        url: &Url,
        key: u64,
        depth: u32,
        referrer: Option<u32>,
        hops: u8,
    ) {
        let referrer = referrer.map(|id| self.resources.url(id).clone());
        let Some(link) = self.cluster.as_mut() else {
            return;
        };
        if link.sent.set(key, depth).is_none() {
            link.shared_urls += 1;
        }
        let origin = url.origin().ascii_serialization();
        link.push.entry(origin).or_default().push(Entry {
            url: url.as_str().to_string(),
            depth,
            hops,
            referrer,
        });
    }

    /// A row left "discovered" for a state of its own: a pulled URL that ended is finished
    /// crawl-wide (at the next flush).
    pub(super) fn pulled_ended(&mut self, id: u32, state: ResourceState) {
        if state == ResourceState::Discovered {
            return;
        }
        let Some((site, entry)) = self.cluster.as_mut().and_then(|l| l.pulled.remove(&id)) else {
            return;
        };
        // A fetch that took a place in the commit order waits for a checkpoint to hold it.
        let seq = self.resources.get(id).seq;
        let stored_below = self.committer.as_ref().map(|c| c.status().stored_below());
        let Some(link) = self.cluster.as_mut() else {
            return;
        };
        match (seq, stored_below) {
            (Some(seq), Some(below)) if seq >= below => {
                link.unstored.insert(seq, (site, entry));
                *link.waiting.entry(site).or_default() += 1;
            }
            _ => link.done.entry(site).or_default().push(entry),
        }
    }

    /// The ended URLs a written checkpoint now holds go to be finished crawl-wide.
    fn take_stored(&mut self) {
        let Some(below) = self.committer.as_ref().map(|c| c.status().stored_below()) else {
            return;
        };
        let Some(link) = self.cluster.as_mut() else {
            return;
        };
        if link
            .unstored
            .first_key_value()
            .is_none_or(|(seq, _)| *seq >= below)
        {
            return;
        }
        let later = link.unstored.split_off(&below);
        for (site, entry) in std::mem::replace(&mut link.unstored, later).into_values() {
            link.done.entry(site).or_default().push(entry);
            *link.done_waited.entry(site).or_default() += 1;
        }
    }

    /// Before a member leaves: a checkpoint that holds everything fetched, written, so that
    /// what ended is finished crawl-wide rather than handed back and fetched again (bounded:
    /// a store that fails, or takes longer, leaves the rest to be handed back).
    pub(super) async fn store_before_leaving(&mut self) {
        if self.cluster.as_ref().is_none_or(|l| l.unstored.is_empty()) {
            return;
        }
        let Some(status) = self.committer.as_ref().map(|c| c.status().clone()) else {
            return;
        };
        self.checkpoint();
        let all = self.window.next_to_commit();
        if status.error().is_none() {
            let _ = tokio::time::timeout(HAND_BACK_PATIENCE, status.stored(all)).await;
        }
        self.take_stored();
    }

    /// Sends what waits: the pushes first, then what ended (so the crawl-wide end never sees a
    /// page done before the links it led to are queued).
    pub(super) fn flush_cluster(&mut self) {
        self.take_stored();
        let now = self.now();
        let Some(link) = self.cluster.as_mut() else {
            return;
        };
        for (site, entries) in std::mem::take(&mut link.push) {
            link.send(ToAgent::Push { site, entries });
        }
        for (site, n) in std::mem::take(&mut link.waiting) {
            link.send(ToAgent::Waiting {
                site: self.frontier.origin(site).to_string(),
                n,
            });
        }
        for (site, entries) in std::mem::take(&mut link.done) {
            link.unacked += entries.len();
            let next_in = self.frontier.next_allowed(site).saturating_sub(now);
            let waited = link.done_waited.remove(&site).unwrap_or(0);
            link.send(ToAgent::Done {
                site: self.frontier.origin(site).to_string(),
                waited,
                entries,
                next_in: Some(next_in),
            });
        }
        if !link.leaving.is_empty() {
            self.release_drained();
        }
    }

    /// Sites asked back whose fetches (robots.txt included) have all ended: their politeness
    /// and next contact are stored, then the agent releases them (after the ends just sent).
    fn release_drained(&mut self) {
        let Some(link) = self.cluster.as_ref() else {
            return;
        };
        let mut drained = Vec::new();
        for &site in &link.leaving {
            let Some(view) = self.frontier.site_view(site) else {
                continue;
            };
            // Its ended URLs are finished first: only the lease holder may finish them.
            let unstored = link.unstored.values().any(|(s, _)| *s == site);
            if view.in_flight == 0 && view.hold == HoldState::Open && !unstored {
                drained.push((site, view.queued));
            }
        }
        for (site, queued) in drained {
            if queued > 0 {
                // Queued again meanwhile (a fetch cut while overdue): back to the crawl too.
                self.hand_over(site, "its site went to another member");
            }
            self.share_politeness(site);
            let origin = self.frontier.origin(site).to_string();
            if let Some(link) = self.cluster.as_mut() {
                link.leaving.remove(&site);
                link.leased.remove(&site);
                link.send(ToAgent::Release { site: origin });
            }
            self.touch_site(site);
        }
    }

    /// Drops a site's queued URLs here: they are pulled entries that go back to its shared
    /// queue unfetched (when its lease is released or runs out). Their rows say why, and come
    /// back to life if this member pulls them again.
    fn hand_over(&mut self, site: SiteId, reason: &'static str) -> usize {
        let ids = self.frontier.remove_site_items(site);
        if let Some(link) = self.cluster.as_mut() {
            for id in &ids {
                link.pulled.remove(id);
                link.handed.insert(*id);
            }
        }
        for id in &ids {
            self.resources
                .update(*id, |r| r.reason = Some(reason.into()));
            self.set_state(*id, ResourceState::FetchIgnored);
        }
        ids.len()
    }

    /// What the agent said.
    pub(super) fn on_agent(&mut self, msg: FromAgent) {
        match msg {
            FromAgent::Leased {
                site,
                politeness,
                wait,
                previous,
            } => self.on_leased(&site, politeness.as_deref(), wait, previous),
            FromAgent::Pulled {
                site,
                entries,
                over_site,
                over_crawl,
                lowered,
            } => {
                self.on_lowered(lowered);
                self.on_over_limit(&site, over_site, IgnoreReason::SitePageLimit);
                self.on_over_limit(&site, over_crawl, IgnoreReason::PageLimit);
                self.on_pulled(&site, entries);
            }
            FromAgent::Fresh { site, until } => {
                if let Some(id) = self.known_site(&site)
                    && let Some(link) = self.cluster.as_mut()
                {
                    link.fresh.insert(id, until);
                }
            }
            FromAgent::Released { site } => {
                if let Some(id) = self.known_site(&site)
                    && let Some(link) = self.cluster.as_mut()
                {
                    link.leased.remove(&id);
                }
            }
            FromAgent::Lost { site } => self.on_lost(&site),
            FromAgent::Stored { ends } => {
                if let Some(link) = self.cluster.as_mut() {
                    link.unacked = link.unacked.saturating_sub(ends);
                }
            }
            FromAgent::GiveBack { site } => {
                if let Some(id) = self.known_site(&site) {
                    self.hand_over(id, "its site went to another member");
                    if let Some(link) = self.cluster.as_mut() {
                        link.leaving.insert(id);
                    }
                    self.touch_site(id);
                }
            }
            FromAgent::Command { command, replayed } => {
                self.on_shared_command(&command, replayed);
            }
            FromAgent::JoinedPaused(pause) => self.on_joined_paused(&pause),
            FromAgent::Members {
                members,
                counters,
                round_trips,
            } => {
                if let Some(link) = self.cluster.as_mut() {
                    link.view.members = members
                        .into_iter()
                        .map(|m| MemberRow {
                            silent: m.silent(),
                            id: m.id,
                            host: m.beat.host,
                            pid: m.beat.pid,
                            sites_leased: m.beat.sites_leased,
                            pages: m.beat.pages,
                            pages_per_s: m.beat.pages_per_s,
                            busy: m.beat.busy,
                            blocked: m.beat.blocked,
                            idle: m.beat.idle,
                            last_beat_s: m.age.as_secs_f64(),
                            gone: m.beat.gone,
                        })
                        .collect();
                    link.view.totals = counters;
                    link.view.round_trips = round_trips;
                }
            }
            FromAgent::Seeds(seeds) => {
                let seeds: Vec<Url> = seeds.iter().filter_map(|s| Url::parse(s).ok()).collect();
                self.widen_scope(&seeds);
            }
            FromAgent::Fault(message) => self.on_fault(message),
            FromAgent::Recovered => {
                self.warn("the shared crawl's Redis answers again".to_string());
                if let Some(link) = self.cluster.as_mut() {
                    link.fault = None;
                }
            }
            FromAgent::Finished => {
                if let Some(link) = self.cluster.as_mut() {
                    link.finished = true;
                }
            }
        }
    }

    /// Redis does not answer: said, and no new sites until it does. A stop given here just
    /// before is held by the agent until Redis answers: it applies here alone, as one given
    /// from now on does.
    fn on_fault(&mut self, message: String) {
        self.warn(format!(
            "the shared crawl's Redis does not answer: {message}; no new sites until it does"
        ));
        let Some(link) = self.cluster.as_mut() else {
            return;
        };
        link.fault = Some(message);
        if let Some(source) = link.stop_unlogged.take()
            && !self.stopping
        {
            self.warn("stop: Redis does not answer, so it applies to this member only".to_string());
            self.record_command(Command::Stop, source, None);
            self.apply(Command::Stop);
        }
    }

    fn known_site(&mut self, origin: &str) -> Option<SiteId> {
        let url = Url::parse(origin).ok()?;
        Some(self.site_for(&url))
    }

    /// A site is ours now: its politeness as its last holder left it, and its next contact.
    /// A holder that did not hand it back (it died, or its lease ran out while Redis was away)
    /// may have contacted it after the stored next contact was written, up to its lease's end:
    /// the site waits its whole delay from now too (its Crawl-delay known once robots.txt's
    /// answer is replayed).
    fn on_leased(
        &mut self,
        origin: &str,
        politeness: Option<&str>,
        wait: Duration,
        previous: Previous,
    ) {
        let Some(site) = self.known_site(origin) else {
            self.warn(format!(
                "the shared crawl leased {origin:?}, which is not an origin"
            ));
            return;
        };
        if let Some(link) = self.cluster.as_mut() {
            link.leased.insert(site);
            link.served.insert(site);
        }
        let stored = politeness
            .filter(|s| !s.is_empty())
            .and_then(|s| serde_json::from_str::<Politeness>(s).ok());
        if let Some(p) = stored
            && self.needs_robots(site)
        {
            self.replay_robots(site, &p.robots, p.robots_gave_up);
        }
        let wait = match previous {
            Previous::HandedBack => wait,
            Previous::Lapsed => wait.max(self.frontier.delay(site)),
        };
        if !wait.is_zero() {
            let now = self.now();
            self.frontier.defer(site, now + wait);
        }
        self.touch_site(site);
    }

    /// URLs taken off a site's shared queue past the crawl's limits (`--max-pages-per-site`,
    /// `--max-pages`, kept crawl-wide by the pulls): rows here, ignored with the limit as
    /// reason, as one process ignores a URL over its limit. They are not in flight: nothing
    /// to finish crawl-wide.
    fn on_over_limit(&mut self, origin: &str, entries: Vec<Entry>, reason: IgnoreReason) {
        if entries.is_empty() || self.known_site(origin).is_none() {
            return;
        }
        for entry in entries {
            let Ok(url) = Url::parse(&entry.url) else {
                continue;
            };
            let key = super::fingerprint(url.as_str());
            let id = match self.by_url.get(key) {
                // A row here already: ignored now only if it went back unfetched before.
                Some(id) if self.cluster.as_mut().is_some_and(|l| l.handed.remove(&id)) => id,
                Some(_) => continue,
                None => self.pulled_row(&url, key, &entry),
            };
            self.touch(id);
            self.ignore(id, reason);
        }
    }

    /// A new row here for a pulled URL (`key` its fingerprint), as the entry describes it.
    fn pulled_row(&mut self, url: &Url, key: u64, entry: &Entry) -> u32 {
        let referrer =
            (entry.referrer.as_deref()).and_then(|r| self.by_url.get(super::fingerprint(r)));
        let r = Resource::discovered(entry.depth, referrer, entry.hops);
        self.state_counts.add(&r);
        let id = self.resources.push(url.as_str(), &r);
        self.by_url.insert(key, id);
        id
    }

    /// A pulled URL this member had ignored (too deep, out of scope, over a limit) while the
    /// crawl admitted it (by a shorter path, or another member's): its row takes the pulled
    /// depth when shorter and is fetched, as one process fetches a URL a shorter path brings
    /// within the limit. Returns whether it was taken back.
    fn take_back_ignored(&mut self, id: u32, url: &Url, entry: &Entry) -> bool {
        let r = self.resources.get(id);
        let depth = r.depth.min(entry.depth);
        if !super::readmissible(r.ignored) || self.scope.check(url, depth).is_err() {
            return false;
        }
        // The page on the shorter path, when this member has a row of it.
        let referrer = if entry.depth < r.depth {
            (entry.referrer.as_deref()).and_then(|u| self.by_url.get(super::fingerprint(u)))
        } else {
            r.referrer
        };
        self.resources.update(id, |r| {
            r.depth = depth;
            r.referrer = referrer;
            r.reason = None;
            r.ignored = None;
        });
        self.errors.ignored = self.errors.ignored.saturating_sub(1);
        self.set_state(id, ResourceState::Discovered);
        true
    }

    /// Whether row `id` is a URL this member pulled from the crawl and has not ended.
    pub(super) fn pulled_here(&self, id: u32) -> bool {
        self.cluster
            .as_ref()
            .is_some_and(|l| l.pulled.contains_key(&id))
    }

    /// Shorter paths found (by any member) to URLs this member pulled: a row still queued here
    /// takes the shorter depth, as one process lowers a queued URL's depth. One fetched already
    /// keeps its own (one process does the same).
    fn on_lowered(&mut self, entries: Vec<Entry>) {
        for entry in entries {
            let Some(id) = self.by_url.get(super::fingerprint(&entry.url)) else {
                continue;
            };
            let queued =
                self.pulled_here(id) && self.resources.get(id).state == ResourceState::Discovered;
            if queued {
                let referrer = (entry.referrer.as_deref())
                    .and_then(|u| self.by_url.get(super::fingerprint(u)));
                self.rediscover(id, entry.depth, referrer);
            }
        }
    }

    /// URLs of a site this member holds: rows here now, queued in the local frontier.
    fn on_pulled(&mut self, origin: &str, entries: Vec<Entry>) {
        let Some(site) = self.known_site(origin) else {
            return;
        };
        if self
            .cluster
            .as_ref()
            .is_some_and(|l| l.leaving.contains(&site))
        {
            // Going back: these stay pulled in Redis and return with the site.
            return;
        }
        let mut skipped = 0;
        for entry in entries {
            let Ok(url) = Url::parse(&entry.url) else {
                // Not a URL: nothing to fetch, finished at once.
                self.warn(format!("the shared queue of {origin} held {:?}", entry.url));
                if let Some(link) = self.cluster.as_mut() {
                    link.done.entry(site).or_default().push(entry);
                }
                continue;
            };
            let key = super::fingerprint(url.as_str());
            let known = self.by_url.get(key);
            if let Some(id) = known
                && !self.take_back_ignored(id, &url, &entry)
            {
                let pending = self
                    .cluster
                    .as_ref()
                    .is_some_and(|l| l.pulled.contains_key(&id));
                if pending {
                    // Pulled twice (a pull Redis lost in a failover): it is queued here once.
                    skipped += 1;
                    continue;
                }
                let handed = self.cluster.as_mut().is_some_and(|l| l.handed.remove(&id));
                if handed {
                    // It went back unfetched and came to this member again: fetch it now.
                    self.resources.update(id, |r| {
                        r.reason = None;
                        r.ignored = None;
                    });
                    self.set_state(id, ResourceState::Discovered);
                } else if self.resources.get(id).state != ResourceState::Discovered {
                    // Ended here before (its end did not reach Redis in time): finish it.
                    if let Some(link) = self.cluster.as_mut() {
                        link.done.entry(site).or_default().push(entry);
                    }
                    continue;
                }
            }
            let id = match known {
                Some(id) => id,
                None => self.pulled_row(&url, key, &entry),
            };
            if let Some(link) = self.cluster.as_mut() {
                link.pulled.insert(id, (site, entry));
            }
            self.touch(id);
            self.enqueue(id, &url);
        }
        if skipped > 0
            && let Some(link) = self.cluster.as_ref()
        {
            link.send(ToAgent::Skipped {
                site: origin.to_string(),
                n: skipped,
            });
        }
    }

    /// A site's lease ran out while Redis was away: another member fetches what was pulled.
    fn on_lost(&mut self, origin: &str) {
        let Some(site) = self.known_site(origin) else {
            return;
        };
        let n = self.hand_over(site, "its site's lease ran out: another member fetches it");
        if let Some(link) = self.cluster.as_mut() {
            link.leased.remove(&site);
            link.leaving.remove(&site);
        }
        self.warn(format!(
            "{origin}: lease lost (it ran out while Redis was away or this member was stalled); \
             {n} queued URLs go to another member"
        ));
    }

    /// The crawl was paused before this member joined (the replayed log left it paused):
    /// said in its log, with who paused it and when, as the member said it on stderr.
    fn on_joined_paused(&mut self, pause: &SharedCommand) {
        let id = self.cluster.as_ref().map_or("", |l| l.crawl_id.as_str());
        self.note(format!(
            "the shared crawl {id} is paused ({}): this member joined paused; a resume from \
             any member or ctl --cluster starts it",
            pause.said()
        ));
    }

    /// A command from the crawl's command log.
    fn on_shared_command(&mut self, shared: &SharedCommand, replayed: bool) {
        let by = shared.by();
        let Ok(command) = shared.text().parse::<Command>() else {
            self.warn(format!(
                "the shared crawl's command log holds {:?} (from {}): ignored",
                shared.command, shared.from
            ));
            return;
        };
        // A stop given before this member joined ended an earlier run, not this one.
        if replayed && command == Command::Stop {
            return;
        }
        if command == Command::Stop
            && let Some(link) = self.cluster.as_mut()
        {
            // Came back (this member's or another's): it stops this member now.
            link.stop_unlogged = None;
        }
        self.record_command(command, CommandSource::Cluster, Some(by));
        self.apply(command);
    }

    /// A command given here: for the whole crawl (through the log), or for this member.
    /// Returns true when it went to the log (it is applied when it comes back).
    pub(super) fn share_command(&mut self, command: Command, source: CommandSource) -> bool {
        let crawl_wide = match command {
            Command::Pause | Command::Resume | Command::SetDelay(_) | Command::SetWorkers(_) => {
                true
            }
            // A signal stops this member only: it hands its sites back.
            Command::Stop => matches!(
                source,
                CommandSource::Key
                    | CommandSource::Api
                    | CommandSource::Port
                    | CommandSource::Library
            ),
            Command::Leave | Command::Export => false,
        };
        let Some(link) = self.cluster.as_mut().filter(|_| crawl_wide) else {
            return false;
        };
        if link.fault.is_some() {
            // The log cannot be reached: the command holds here at least.
            self.warn(format!(
                "{command}: Redis does not answer, so it applies to this member only"
            ));
            return false;
        }
        if command == Command::Stop {
            link.stop_unlogged = Some(source);
        }
        let source = serde_json::to_value(source)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        link.send(ToAgent::Command(format!("{command}\t{source}")));
        true
    }

    /// A site this member holds was told to wait (a Retry-After, a backoff): its next contact
    /// goes to Redis now, not with the next fetch's end, so that a member taking the lease after
    /// this one dies waits it out too. Rare: one script call each.
    pub(super) fn share_next_contact(&mut self, site: SiteId) {
        let Some(link) = self.cluster.as_ref() else {
            return;
        };
        if !link.leased.contains(&site) {
            return;
        }
        let next_in = self.frontier.next_allowed(site).saturating_sub(self.now());
        // A round's ends of the site and this merge into one call (the later next contact).
        link.send(ToAgent::Done {
            site: self.frontier.origin(site).to_string(),
            entries: Vec::new(),
            waited: 0,
            next_in: Some(next_in),
        });
    }

    /// Robots.txt of a site resolved here: its answer travels with the site's lease.
    pub(super) fn share_politeness(&mut self, site: SiteId) {
        let Some(link) = self.cluster.as_ref() else {
            return;
        };
        let s = &self.sites[site.index()];
        let state = Politeness {
            robots: s.robots_memo.clone(),
            robots_gave_up: s.robots_gave_up,
        };
        let Ok(state) = serde_json::to_string(&state) else {
            return;
        };
        let next_in = self.frontier.next_allowed(site).saturating_sub(self.now());
        link.send(ToAgent::Politeness {
            site: self.frontier.origin(site).to_string(),
            state,
            next_in,
        });
    }

    /// Once a second: the heartbeat, the counts, and how many sites this member can serve.
    pub(super) fn beat(&mut self, gone: bool) {
        let due = self
            .cluster
            .as_ref()
            .is_some_and(|l| gone || l.last_beat.is_none_or(|t| t.elapsed() >= BEAT_EVERY));
        if !due {
            return;
        }
        let workers = self.workers_view(self.worker_states());
        let pages_per_s = self.rates(self.now()).pages_per_s;
        let pages = self.pages_fetched;
        let bytes = self.http.bytes;
        let errors = self.state_counts.get(ResourceState::FetchError);
        // Sites it can serve: those it holds, and more while workers are free (none hoards).
        let free = self.slots.free();
        let per_site = self.frontier.per_site().max(1);
        let Some(link) = self.cluster.as_mut() else {
            return;
        };
        link.last_beat = Some(Instant::now());
        let beat = Heartbeat {
            host: member_host(&link.member),
            pid: std::process::id(),
            // A member's last beat says it is gone: it holds nothing once the hand-back that
            // follows is done (or, with Redis away, once the leases ran out).
            sites_leased: if gone { 0 } else { link.leased.len() as u64 },
            pages,
            pages_per_s,
            busy: workers.busy as u32,
            blocked: workers.blocked as u32,
            idle: workers.idle as u32,
            gone,
            lease_ms: u64::try_from(link.lease.as_millis()).unwrap_or(u64::MAX),
        };
        let (p0, b0, e0) = link.counted;
        let delta = |now: u64, before: u64| i64::try_from(now.saturating_sub(before)).unwrap_or(0);
        let counts = vec![
            ("pages", delta(pages, p0)),
            ("bytes", delta(bytes, b0)),
            ("errors", delta(errors, e0)),
            ("shared", i64::try_from(link.shared_urls).unwrap_or(0)),
        ];
        link.counted = (pages, bytes, errors);
        link.shared_urls = 0;
        link.send(ToAgent::Beat { beat, counts });
        let capacity = link.leased.len() + free.div_ceil(per_site);
        if capacity != link.capacity {
            link.capacity = capacity;
            link.send(ToAgent::Capacity(capacity.max(1)));
        }
    }

    /// The member leaves: what ended is finished, its last heartbeat says so, and its agent
    /// hands every site and its unfinished URLs back before the crawl's summary is written.
    pub(super) async fn leave_cluster(&mut self) {
        if self.cluster.is_none() {
            return;
        }
        self.flush_cluster();
        self.beat(true);
        let Some(link) = self.cluster.as_mut() else {
            return;
        };
        // After everything sent before it; an agent retrying Redis does not read its inbox, so
        // it is told apart too, and ends at once if Redis does not answer.
        link.send(ToAgent::Stop);
        link.leave.cancel();
        let Some(task) = link.task.take() else {
            return;
        };
        let outcome = tokio::time::timeout(HAND_BACK_PATIENCE, task).await;
        let failed = match outcome {
            Ok(Ok(Ok(()))) => None,
            Ok(Ok(Err(e))) => Some(e.to_string()),
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => {
                link.kill.abort();
                Some(format!("no answer in {} s", HAND_BACK_PATIENCE.as_secs()))
            }
        };
        // The member's last word on Redis: a fault seen during the run is over if the hand-back
        // went through; otherwise it is why the member leaves its sites to their leases (the
        // crawl exits 1 on it).
        let held = match link.leased.len() {
            1 => "its 1 leased site was".to_string(),
            n => format!("its {n} leased sites were"),
        };
        link.fault = failed.map(|e| {
            format!(
                "the shared crawl's Redis did not answer as this member left ({e}): {held} not \
                 handed back; their leases run out within {} ms (--lease-ms), and the URLs it \
                 pulled and did not finish go back to the crawl then",
                link.lease.as_millis()
            )
        });
        if let Some(message) = link.fault.clone() {
            self.warn(message);
        }
        // What the agent said last (the members and counters at the end).
        while let Some(msg) = self.cluster.as_mut().and_then(|l| l.from.try_recv().ok()) {
            if let FromAgent::Members { .. } = msg {
                self.on_agent(msg);
            }
        }
    }

    /// The cluster section of a snapshot.
    pub(super) fn cluster_view(&self) -> Option<ClusterView> {
        let link = self.cluster.as_ref()?;
        let mut view = link.view.clone();
        view.crawl_id.clone_from(&link.crawl_id);
        view.member.clone_from(&link.member);
        view.sites_leased = link.leased.len() as u64;
        view.sites_served = link.served.len() as u64;
        view.pages = self.pages_fetched;
        view.fault.clone_from(&link.fault);
        Some(view)
    }
}

/// The host part of a member id (`host:pid`).
fn member_host(member: &str) -> String {
    member
        .rsplit_once(':')
        .map_or(member, |(host, _)| host)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CrawlConfig;
    use crate::engine::model::ResourceState;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("test URL parses")
    }

    /// A member of a shared crawl whose scope is `crawl_seeds`, under `--depth 3`, with what
    /// it tells its agent.
    fn member(crawl_seeds: &[&str]) -> (Coordinator, mpsc::UnboundedReceiver<ToAgent>) {
        let cfg = CrawlConfig {
            depth: Some(3),
            shared: true,
            ..CrawlConfig::default()
        };
        let mut c = Coordinator::new(cfg).expect("a coordinator");
        let (to, inbox) = mpsc::unbounded_channel();
        let (_outbox, from) = mpsc::unbounded_channel();
        let agent = Agent {
            to,
            from,
            task: tokio::spawn(async { Ok(()) }),
            leaving: tokio_util::sync::CancellationToken::new(),
            lease: Duration::from_secs(10),
            kill: futures::future::AbortHandle::new_pair().0,
        };
        let seeds: Vec<String> = crawl_seeds.iter().map(|s| (*s).to_string()).collect();
        c.join_cluster(Link::new(agent, "t", "test:1"), &seeds);
        (c, inbox)
    }

    /// The URLs pushed to the crawl since the last look: (url, depth).
    fn pushed(inbox: &mut mpsc::UnboundedReceiver<ToAgent>) -> Vec<(String, u32)> {
        let mut out = Vec::new();
        while let Ok(msg) = inbox.try_recv() {
            if let ToAgent::Push { entries, .. } = msg {
                out.extend(entries.into_iter().map(|e| (e.url, e.depth)));
            }
        }
        out.sort();
        out
    }

    /// Links to an origin no seed named yet are ignored here as out of scope; when a member
    /// brings a seed of that origin, those the wider scope admits go to the crawl at the depth
    /// they were found at (one now too deep takes that reason instead, others stay out), and
    /// one this member then pulls is fetched here, its counters moved from ignored to queued.
    #[tokio::test]
    async fn urls_left_out_go_to_the_crawl_at_their_depth_once_a_member_brings_their_origin() {
        let (mut c, mut inbox) = member(&["http://127.0.0.1:1/"]);
        c.admit(url("http://127.0.0.1:2/x"), 2, None, 0);
        c.admit(url("http://127.0.0.1:2/deep"), 4, None, 0);
        c.admit(url("http://127.0.0.1:3/y"), 2, None, 0);
        c.flush_cluster();
        assert!(pushed(&mut inbox).is_empty(), "all out of scope");
        assert_eq!(c.errors.ignored, 3);
        let ignored = |c: &Coordinator| c.state_counts.get(ResourceState::FetchIgnored);
        assert_eq!(ignored(&c), 3);

        c.on_agent(FromAgent::Seeds(vec!["http://127.0.0.1:1/".into()]));
        c.flush_cluster();
        assert!(pushed(&mut inbox).is_empty(), "the scope gained nothing");

        c.on_agent(FromAgent::Seeds(vec!["http://127.0.0.1:2/".into()]));
        c.flush_cluster();
        assert_eq!(
            pushed(&mut inbox),
            [("http://127.0.0.1:2/x".to_string(), 2)]
        );
        let row = |c: &mut Coordinator, u: &str| {
            let id = c.by_url.get(super::super::fingerprint(u)).expect("a row");
            c.resources.get(id)
        };
        let deep = row(&mut c, "http://127.0.0.1:2/deep");
        assert_eq!(deep.ignored, Some(IgnoreReason::TooDeep));
        assert_eq!(
            row(&mut c, "http://127.0.0.1:3/y").ignored,
            Some(IgnoreReason::OutOfScope)
        );
        // Until pulled here (another member may pull it), it stays as it was.
        assert_eq!(
            row(&mut c, "http://127.0.0.1:2/x").state,
            ResourceState::FetchIgnored
        );
        assert_eq!((c.errors.ignored, ignored(&c)), (3, 3));

        c.on_agent(FromAgent::Pulled {
            site: "http://127.0.0.1:2".into(),
            entries: vec![Entry {
                url: "http://127.0.0.1:2/x".into(),
                depth: 2,
                hops: 0,
                referrer: None,
            }],
            over_site: Vec::new(),
            over_crawl: Vec::new(),
            lowered: Vec::new(),
        });
        let x = row(&mut c, "http://127.0.0.1:2/x");
        assert_eq!(
            (x.state, x.ignored, x.depth),
            (ResourceState::Discovered, None, 2)
        );
        assert_eq!((c.errors.ignored, ignored(&c)), (2, 2));
        assert_eq!(c.state_counts.get(ResourceState::Discovered), 1);
        assert!(
            c.pulled_here(
                c.by_url
                    .get(super::super::fingerprint("http://127.0.0.1:2/x"))
                    .expect("row")
            )
        );
    }
}
