//! The frontier boundary: what the engine asks of a frontier, in the engine's terms.
//!
//! It owns the [`Schedule`] trait and its implementation by today's in-process [`Frontier`]
//! (Mercator's queues with spilling). The coordinator holds its frontier only through this
//! trait (it is generic over it, so the per-URL calls stay direct, inlinable calls), so that
//! another frontier plugs in without touching the coordinator's call sites, and a test double
//! can drive the coordinator. It must never grow a method that only one implementation can mean
//! (a spill file's path, a Redis key): such details stay behind the implementation, and the
//! storage questions the snapshot asks have neutral defaults.
//!
//! The protocol is the one `mod.rs` describes for [`Frontier`]: push URLs; keep one timer at
//! [`Schedule::next_ready_at`]; each [`Schedule::next_site`] is a slot (one contact of that
//! site, now); under a slot [`Schedule::hold`] the site for its robots.txt or
//! [`Schedule::take`] its next URL; [`Schedule::complete`] the slot when the contact ends. A
//! robots.txt redirect to another origin asks that origin for a contact of its own
//! ([`Schedule::try_contact`]), completed the same way.
//!
//! The shared crawl of issue 13 does not implement it: a member's rows are only the URLs it
//! pulls, so it schedules them with this same frontier, and the coordinator's `cluster` room
//! talks to the shared queues (docs/ARCHITECTURE.md, "The frontier boundary").

use std::time::Duration;

use super::{Frontier, HeapEntry, SiteId, SiteView, SpillError, Tick};

/// One URL the engine queues: its row id (what `take` gives back), its text and its depth
/// (the frontier's priority: shallower first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued<'a> {
    pub id: u32,
    pub url: &'a str,
    pub depth: u32,
}

/// What the engine's coordinator asks of a frontier. Times are [`Tick`]s (since the crawl's
/// start), passed in: a frontier has no clock.
///
/// Site ids are dense and handed out in interning order (0, 1, 2, ...): the engine keeps its
/// own per-site rows in a `Vec` indexed by [`SiteId::index`].
pub trait Schedule {
    /// The id of a site (an origin), interned on first sight.
    fn site(&mut self, origin: &str) -> SiteId;
    fn origin(&self, site: SiteId) -> &str;

    /// Queues a URL the engine admitted.
    fn push(&mut self, site: SiteId, url: Queued<'_>);
    /// Queues a URL ahead of everything else of its site (a fetch cut while overdue, which
    /// keeps its place in the commit order); the site's politeness is unchanged.
    fn push_first(&mut self, site: SiteId, id: u32);
    /// Removes and returns every queued URL of a site (its robots.txt is unreachable for good).
    fn remove_site_items(&mut self, site: SiteId) -> Vec<u32>;

    /// When the next slot comes due, if any: the engine's one timer.
    fn next_ready_at(&self) -> Option<Tick>;
    /// A slot, if a site is due at `now`: permission to contact it once, now.
    fn next_site(&mut self, now: Tick) -> Option<SiteId>;
    /// Under a slot: the site's next URL ("next ready URL").
    fn take(&mut self, site: SiteId) -> Option<u32>;
    /// Under a slot: no further slots for the site until [`Schedule::unhold`] (its robots.txt
    /// is being fetched).
    fn hold(&mut self, site: SiteId);
    fn unhold(&mut self, site: SiteId, now: Tick);
    /// The site answered (its robots.txt was resolved, or is skipped): a frontier may keep
    /// first contacts of sites that never answered from crowding it out. Idempotent.
    fn answered(&mut self, _site: SiteId) {}
    /// A contact of `site` ended at `now` ("site done at t").
    fn complete(&mut self, site: SiteId, now: Tick);
    /// Permission to contact `site` once now for a request that is none of its URLs (a hop of
    /// another site's robots.txt redirects that lands here), on a slot's terms: refused while
    /// the site is held, at its `per_site` limit or before its time. Granted, it is a contact
    /// in flight, which [`Schedule::complete`] ends.
    fn try_contact(&mut self, site: SiteId, now: Tick) -> bool;

    /// The site's own delay (Crawl-delay, adaptive); the global one applies on top.
    fn set_site_delay(&mut self, site: SiteId, delay: Duration);
    /// The global delay, changed while running.
    fn set_default_delay(&mut self, delay: Duration);
    /// No contact of `site` before `until` (Retry-After, backoff).
    fn defer(&mut self, site: SiteId, until: Tick);
    /// Any site, known now or met later, may have been contacted as late as `at` without the
    /// frontier knowing (a resumed crawl does not know its earlier run's last requests): no
    /// site's next contact before `at` plus its delay.
    fn assume_contact_at(&mut self, at: Tick);
    /// How many sites may be scheduled at once (Mercator's B), when the workers change.
    fn set_back_queues(&mut self, n: usize);
    /// The earliest a new contact of `site` may start ("delay for site", as a time).
    fn next_allowed(&self, site: SiteId) -> Tick;
    /// The delay in force between two contacts of `site`: the larger of the global delay and
    /// its own.
    fn delay(&self, site: SiteId) -> Duration;
    /// Most contacts of one site at once.
    fn per_site(&self) -> usize;

    /// URLs queued, not counting those being fetched.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Every site with its queue length and schedule, in id order, for the snapshot.
    fn sites(&self) -> impl Iterator<Item = SiteView<'_>>;
    /// One site's queue length and schedule, for the live site table (a tick reads only the
    /// sites that changed). The default walks [`Schedule::sites`]: a frontier with many sites
    /// should answer directly.
    fn site_view(&self, site: SiteId) -> Option<SiteView<'_>> {
        self.sites().find(|v| v.id == site)
    }
    /// The first `n` scheduled sites, in the order they will be served.
    fn heap_top(&self, n: usize) -> Vec<HeapEntry>;

    /// Why queued URLs cannot be stored or read now, if so (the engine pauses and says so).
    fn spill_error(&self) -> Option<&SpillError> {
        None
    }
    /// Tries the storage again after [`Schedule::spill_error`] (the user freed space).
    fn retry_spill(&mut self) {}
    /// Queued URLs kept outside memory now.
    fn spilled(&self) -> usize {
        0
    }
    /// Bytes written to that storage so far.
    fn spill_written_bytes(&self) -> u64 {
        0
    }
}

impl Schedule for Frontier<u32> {
    #[inline]
    fn site(&mut self, origin: &str) -> SiteId {
        Frontier::site(self, origin)
    }
    fn origin(&self, site: SiteId) -> &str {
        Frontier::origin(self, site)
    }
    #[inline]
    fn push(&mut self, site: SiteId, url: Queued<'_>) {
        Frontier::push(self, site, url.depth as usize, url.id);
    }
    fn push_first(&mut self, site: SiteId, id: u32) {
        Frontier::push_first(self, site, id);
    }
    fn remove_site_items(&mut self, site: SiteId) -> Vec<u32> {
        Frontier::remove_site_items(self, site)
    }
    #[inline]
    fn next_ready_at(&self) -> Option<Tick> {
        Frontier::next_ready_at(self)
    }
    #[inline]
    fn next_site(&mut self, now: Tick) -> Option<SiteId> {
        Frontier::next_site(self, now)
    }
    #[inline]
    fn take(&mut self, site: SiteId) -> Option<u32> {
        Frontier::take(self, site)
    }
    fn hold(&mut self, site: SiteId) {
        Frontier::hold(self, site);
    }
    fn unhold(&mut self, site: SiteId, now: Tick) {
        Frontier::unhold(self, site, now);
    }
    fn answered(&mut self, site: SiteId) {
        Frontier::answered(self, site);
    }
    #[inline]
    fn complete(&mut self, site: SiteId, now: Tick) {
        Frontier::complete(self, site, now);
    }
    fn try_contact(&mut self, site: SiteId, now: Tick) -> bool {
        Frontier::try_contact(self, site, now)
    }
    fn set_site_delay(&mut self, site: SiteId, delay: Duration) {
        Frontier::set_site_delay(self, site, delay);
    }
    fn set_default_delay(&mut self, delay: Duration) {
        Frontier::set_default_delay(self, delay);
    }
    fn defer(&mut self, site: SiteId, until: Tick) {
        Frontier::defer(self, site, until);
    }
    fn assume_contact_at(&mut self, at: Tick) {
        Frontier::assume_contact_at(self, at);
    }
    fn set_back_queues(&mut self, n: usize) {
        Frontier::set_back_queues(self, n);
    }
    fn next_allowed(&self, site: SiteId) -> Tick {
        Frontier::next_allowed(self, site)
    }
    fn delay(&self, site: SiteId) -> Duration {
        Frontier::delay(self, site)
    }
    fn per_site(&self) -> usize {
        Frontier::per_site(self)
    }
    #[inline]
    fn len(&self) -> usize {
        Frontier::len(self)
    }
    #[inline]
    fn is_empty(&self) -> bool {
        Frontier::is_empty(self)
    }
    fn sites(&self) -> impl Iterator<Item = SiteView<'_>> {
        Frontier::sites(self)
    }
    fn site_view(&self, site: SiteId) -> Option<SiteView<'_>> {
        (site.index() < Frontier::site_count(self)).then(|| Frontier::site_view(self, site))
    }
    fn heap_top(&self, n: usize) -> Vec<HeapEntry> {
        Frontier::heap_top(self, n)
    }
    fn spill_error(&self) -> Option<&SpillError> {
        Frontier::spill_error(self)
    }
    fn retry_spill(&mut self) {
        Frontier::retry_spill(self);
    }
    fn spilled(&self) -> usize {
        Frontier::spilled(self)
    }
    fn spill_written_bytes(&self) -> u64 {
        Frontier::spill_written_bytes(self)
    }
}
