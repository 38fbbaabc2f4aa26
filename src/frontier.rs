//! The Mercator frontier: which URL is fetched next, and when each site may next be contacted.
//!
//! It owns the front queues (one per priority), the back queues (each holding the URLs of
//! exactly one site), the min-heap of back-queue ready times, the per-site politeness table
//! and the seen-URL set. It is pure: the engine passes the time in as a [`Tick`] (time since
//! the crawl's start) and tells it what it learned (Crawl-delay, Retry-After, robots.txt
//! pending). It must never do I/O, read a clock, parse URLs or robots.txt, or decide scope.
//!
//! How the engine drives it:
//! 1. [`Frontier::push`] every accepted URL with its site and priority (its depth).
//! 2. Keep one timer at [`Frontier::next_ready_at`] and re-read it after every call; when it
//!    fires, call [`Frontier::next_site`] until it returns `None`. Each `Some(site)` is a
//!    *slot*: permission to contact that site once, now.
//! 3. With a slot, either fetch the site's robots.txt (then [`Frontier::hold`] the site, so
//!    that with `per_site > 1` no page slot goes out before the rules are known, and take
//!    nothing), or [`Frontier::take`] until an item worth fetching comes out (items found
//!    forbidden are dropped by the engine and it takes again).
//! 4. When the contact ends, [`Frontier::complete`] the slot, with the time it ended.
//!
//! Politeness, as the server measures it: two consecutive contacts of a site start at least
//! `delay(site)` apart, a new contact starts no earlier than `delay(site)` after the site's
//! last completion, and never more than `per_site` contacts of one site are in flight.
//! The per-site state that enforces this lives in the site table, not in the back queue, so
//! it survives a back queue being released and later claimed again by the same site.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Time since the crawl's start, always passed in by the engine: the frontier has no clock.
pub type Tick = Duration;

/// A site (an origin: scheme, host, port), interned by the frontier that made the id.
///
/// Ids are dense (0, 1, 2, ... in interning order) so the engine can keep its own per-site
/// tables in a `Vec` indexed by [`SiteId::index`]. An id is only meaningful to the frontier
/// that made it; passing it to another one is a programming error and panics.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct SiteId(u32);

impl SiteId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrontierConfig {
    /// F: one front queue per priority; priorities at or beyond F share the last queue.
    pub front_queues: usize,
    /// B: the most sites that can be scheduled at once; the others wait in the front queues.
    pub back_queues: usize,
    /// Most contacts of one site in flight at once.
    pub per_site: usize,
    /// The global delay; a site's delay is the larger of this and its own
    /// ([`Frontier::set_site_delay`]).
    pub default_delay: Duration,
}

impl FrontierConfig {
    pub const DEFAULT_FRONT_QUEUES: usize = 4;

    /// DESIGN.md's defaults: F = 4, B = three times the workers (so a free worker finds a
    /// ready site while the others wait out their delay), one contact per site.
    pub fn for_workers(workers: usize, default_delay: Duration) -> Self {
        Self {
            front_queues: Self::DEFAULT_FRONT_QUEUES,
            back_queues: workers.max(1).saturating_mul(3),
            per_site: 1,
            default_delay,
        }
    }
}

/// Whether the engine allows slots for a site (it holds one while its robots.txt is pending).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldState {
    Open,
    Held,
}

/// Why a site is or is not about to be contacted, for the dashboard's sites table.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SiteStatus {
    /// Nothing queued, nothing in flight.
    Idle,
    /// Has queued items but no back queue: all B are owned by other sites.
    Waiting,
    /// In the heap: will get a slot at `ready_at`.
    Scheduled,
    /// No slot to give: at its `per_site` limit, or its only items are being contacted.
    Busy,
    /// The engine holds it (robots.txt pending); its items stay queued.
    Held,
}

/// One entry of the ready heap, for the dashboard's "next up" pane.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
pub struct HeapEntry {
    pub site: SiteId,
    pub ready_at: Tick,
    pub queue_len: usize,
}

/// One row of the snapshot's sites table.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
pub struct SiteView<'a> {
    pub id: SiteId,
    pub origin: &'a str,
    pub status: SiteStatus,
    pub hold: HoldState,
    pub queued: usize,
    pub in_flight: usize,
    /// The delay in force: the larger of the global and the site's own.
    pub delay: Duration,
    /// The earliest a new contact may start, whether or not the site has anything queued.
    pub next_allowed: Tick,
    /// When its heap entry comes due, if it has one.
    pub ready_at: Option<Tick>,
}

struct Site {
    origin: Box<str>,
    back: Option<usize>,
    /// Items of this site still in the front queues (the rest are in its back queue).
    in_front: usize,
    in_flight: usize,
    last_start: Option<Tick>,
    last_end: Option<Tick>,
    /// The site's own delay (Crawl-delay, adaptive); the global delay is applied on top.
    delay: Duration,
    /// Retry-After, backoff, and the end of a hold: no contact before this.
    not_before: Tick,
    hold: HoldState,
}

/// The live heap entry of a back queue. `seq` is unique over the frontier's life, so an entry
/// in the heap whose `seq` differs from its queue's `armed` is stale (lazy deletion).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Armed {
    ready_at: Tick,
    seq: u64,
}

struct BackQueue<T> {
    owner: Option<SiteId>,
    items: VecDeque<T>,
    armed: Option<Armed>,
}

/// Ordered by ready time, then by arming order, so due sites are served first come, first
/// served (with delay 0 that is round robin).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct HeapKey {
    ready_at: Tick,
    seq: u64,
    back: usize,
}

/// Mercator's frontier over items of type `T` (the engine's per-URL payload).
///
/// Choices the design left open:
/// - `push` to a site that owns a back queue appends there directly instead of going through
///   the front queues. Routing it through the front queues would only delay it until some
///   refill scan passes it, during which the site's politeness slot may go unused and its
///   back queue may be released and claimed again; Mercator's back queues are FIFO per site
///   anyway, so the order within a site is the same either way: arrival order.
/// - Refill takes the front queues in strict priority order (no biased selection): the crawl
///   wants shallower pages first, and a breadth-first crawl empties each depth before the
///   next grows, so nothing starves for long.
/// - `take` serves the site's back queue only. A site's older items may still sit in the front
///   queues (pushed before it claimed its back queue); they reach it when a refill scan
///   passes them, and count in [`Frontier::queued`] meanwhile.
/// - A site gets a slot only if it has something in its back queue, including right after
///   `unhold`: a robots.txt fetch is always prompted by a queued page, so a slot with nothing
///   to take would only waste a contact. A held site with nothing queued stays out of the
///   heap until the next `push`.
pub struct Frontier<T> {
    front: Vec<VecDeque<(SiteId, T)>>,
    back: Vec<BackQueue<T>>,
    /// Back queues without an owner. Invariant: while one exists, every front item belongs
    /// to a site that owns a back queue (a site without one would have claimed it).
    free: Vec<usize>,
    /// Invariant: the top, if any, is live, so `next_ready_at` can peek without `&mut`.
    heap: BinaryHeap<Reverse<HeapKey>>,
    next_seq: u64,
    sites: Vec<Site>,
    by_origin: HashMap<Box<str>, SiteId>,
    per_site: usize,
    default_delay: Duration,
    queued: usize,
    stray_completions: u64,
}

impl<T> Frontier<T> {
    /// Zero counts in `cfg` are raised to 1: a frontier with no queue, or no slot per site,
    /// would hold items forever.
    pub fn new(cfg: FrontierConfig) -> Self {
        let back_queues = cfg.back_queues.max(1);
        Self {
            front: (0..cfg.front_queues.max(1))
                .map(|_| VecDeque::new())
                .collect(),
            back: (0..back_queues)
                .map(|_| BackQueue {
                    owner: None,
                    items: VecDeque::new(),
                    armed: None,
                })
                .collect(),
            // Popped from the end: queue 0 is claimed first, which keeps runs reproducible.
            free: (0..back_queues).rev().collect(),
            heap: BinaryHeap::new(),
            next_seq: 0,
            sites: Vec::new(),
            by_origin: HashMap::new(),
            per_site: cfg.per_site.max(1),
            default_delay: cfg.default_delay,
            queued: 0,
            stray_completions: 0,
        }
    }

    /// Interns a site key (an origin string): the same key always gives the same id.
    pub fn site(&mut self, origin: &str) -> SiteId {
        if let Some(&id) = self.by_origin.get(origin) {
            return id;
        }
        let id = SiteId(u32::try_from(self.sites.len()).expect("fewer than 2^32 sites"));
        self.sites.push(Site {
            origin: origin.into(),
            back: None,
            in_front: 0,
            in_flight: 0,
            last_start: None,
            last_end: None,
            delay: Duration::ZERO,
            not_before: Tick::ZERO,
            hold: HoldState::Open,
        });
        self.by_origin.insert(origin.into(), id);
        id
    }

    /// The id of an origin already interned, without interning it.
    pub fn find_site(&self, origin: &str) -> Option<SiteId> {
        self.by_origin.get(origin).copied()
    }

    pub fn origin(&self, site: SiteId) -> &str {
        &self.site_ref(site).origin
    }

    /// Number of sites interned so far.
    pub fn site_count(&self) -> usize {
        self.sites.len()
    }

    /// Queues `item` for `site`. Priority 0 is served first (the engine passes the depth);
    /// priorities beyond the last front queue share it.
    pub fn push(&mut self, site: SiteId, priority: usize, item: T) {
        let priority = priority.min(self.front.len() - 1);
        self.queued += 1;
        if let Some(b) = self.site_ref(site).back {
            self.back[b].items.push_back(item);
            self.rearm(site);
        } else if let Some(b) = self.free.pop() {
            self.claim(b, site, item);
        } else {
            self.front[priority].push_back((site, item));
            self.site_mut(site).in_front += 1;
        }
        self.tidy_heap();
    }

    /// When the earliest scheduled site may be served: the engine's one timer. `None` when no
    /// site can get a slot until something changes (a push, a completion, an unhold).
    pub fn next_ready_at(&self) -> Option<Tick> {
        self.heap.peek().map(|Reverse(key)| key.ready_at)
    }

    /// Gives a slot, if the earliest scheduled site is due at `now`: permission to contact
    /// that site once, now. The site is never held, never at its `per_site` limit, never
    /// before its time, and always has an item in its back queue.
    pub fn next_site(&mut self, now: Tick) -> Option<SiteId> {
        loop {
            let &Reverse(top) = self.heap.peek()?;
            if top.ready_at > now {
                return None;
            }
            self.heap.pop();
            if !self.is_live(top) {
                continue;
            }
            let queue = &mut self.back[top.back];
            queue.armed = None;
            let id = queue.owner.expect("an armed back queue has an owner");
            debug_assert!(self.is_eligible(id), "an armed site may be given a slot");
            if !self.is_eligible(id) {
                self.rearm(id);
                continue;
            }
            let site = self.site_mut(id);
            site.in_flight += 1;
            // A clock that went backwards must not make the next contact come sooner.
            site.last_start = Some(site.last_start.map_or(now, |t| t.max(now)));
            // With per_site > 1 the site goes straight back into the heap at last_start + delay.
            self.rearm(id);
            self.tidy_heap();
            return Some(id);
        }
    }

    /// The site's next item from its back queue. The engine calls this under a slot, and may
    /// drop an item (robots-forbidden) and take again; `None` when its back queue is empty.
    pub fn take(&mut self, site: SiteId) -> Option<T> {
        let b = self.site_ref(site).back?;
        let item = self.back[b].items.pop_front()?;
        self.queued -= 1;
        self.settle(site);
        Some(item)
    }

    /// A contact of `site` ended at `now`. The site may be contacted again at
    /// `max(last start, now) + delay(site)`.
    ///
    /// A completion without a slot in flight (a bookkeeping bug in the caller) changes nothing
    /// at all: it neither underflows nor pushes the site's next contact back. It is counted in
    /// [`Frontier::stray_completions`] so the bug shows up in the stats instead of a panic.
    pub fn complete(&mut self, site: SiteId, now: Tick) {
        let state = self.site_mut(site);
        if state.in_flight == 0 {
            self.stray_completions += 1;
            return;
        }
        state.in_flight -= 1;
        state.last_end = Some(state.last_end.map_or(now, |t| t.max(now)));
        self.settle(site);
    }

    /// No slots for `site` until [`Frontier::unhold`]; its items stay queued and its slots
    /// in flight may still complete. A held site keeps its back queue if it has items, so
    /// hold only for as long as a robots.txt fetch takes.
    pub fn hold(&mut self, site: SiteId) {
        self.site_mut(site).hold = HoldState::Held;
        self.rearm(site);
        self.tidy_heap();
    }

    /// Ends a hold. The site is not served before `now` even if its politeness time is long
    /// past, so it joins the line of due sites behind those already waiting instead of cutting
    /// in. Unholding a site that is not held does nothing.
    pub fn unhold(&mut self, site: SiteId, now: Tick) {
        let state = self.site_mut(site);
        if state.hold == HoldState::Open {
            return;
        }
        state.hold = HoldState::Open;
        state.not_before = state.not_before.max(now);
        self.rearm(site);
        self.tidy_heap();
    }

    /// Sets the site's own delay (robots Crawl-delay, adaptive). The delay in force is the
    /// larger of this and the global delay, so the engine need not fold the global delay in
    /// and a later change of the global delay still reaches this site. A site waiting in the
    /// heap is rescheduled at once from its last contact.
    pub fn set_site_delay(&mut self, site: SiteId, delay: Duration) {
        self.site_mut(site).delay = delay;
        self.rearm(site);
        self.tidy_heap();
    }

    /// Changes the global delay ("throttle") while running. Sites already waiting in the heap
    /// are rescheduled from their last contact: lowering takes effect at once, raising is
    /// never violated.
    pub fn set_default_delay(&mut self, delay: Duration) {
        self.default_delay = delay;
        for b in 0..self.back.len() {
            if let (Some(owner), Some(armed)) = (self.back[b].owner, self.back[b].armed) {
                let ready_at = self.next_allowed(owner);
                self.back[b].armed = Some(Armed {
                    ready_at,
                    seq: armed.seq,
                });
            }
        }
        self.rebuild_heap();
    }

    /// Retry-After or backoff: no contact of `site` before `until`. A defer never shortens an
    /// earlier one.
    pub fn defer(&mut self, site: SiteId, until: Tick) {
        let state = self.site_mut(site);
        state.not_before = state.not_before.max(until);
        self.rearm(site);
        self.tidy_heap();
    }

    /// Changes the most contacts per site in flight (0 counts as 1). Lowering it recalls
    /// nothing in flight; a site over the new limit gets no slot until it is back under it.
    pub fn set_per_site(&mut self, n: usize) {
        self.per_site = n.max(1);
        for b in 0..self.back.len() {
            if let Some(owner) = self.back[b].owner {
                self.rearm(owner);
            }
        }
        self.tidy_heap();
    }

    /// Removes and returns every queued item of `site` (back queue first, then the front
    /// queues by priority), e.g. when its robots.txt is unreachable for good. Slots in flight
    /// are untouched and still complete normally. Costs one pass over the front queues when
    /// the site has items waiting there: it is meant for rare, final decisions.
    pub fn remove_site_items(&mut self, site: SiteId) -> Vec<T> {
        let mut removed = Vec::with_capacity(self.queued(site));
        if let Some(b) = self.site_ref(site).back {
            removed.extend(self.back[b].items.drain(..));
        }
        let mut in_front = self.site_ref(site).in_front;
        for queue in &mut self.front {
            if in_front == 0 {
                break;
            }
            let old = std::mem::take(queue);
            let mut kept = VecDeque::with_capacity(old.len());
            for (owner, item) in old {
                if owner == site {
                    removed.push(item);
                    in_front -= 1;
                } else {
                    kept.push_back((owner, item));
                }
            }
            *queue = kept;
        }
        self.site_mut(site).in_front = 0;
        self.queued -= removed.len();
        self.settle(site);
        removed
    }

    /// Queued items (front and back queues), not counting contacts in flight.
    pub fn len(&self) -> usize {
        self.queued
    }

    pub fn is_empty(&self) -> bool {
        self.queued == 0
    }

    pub fn queued(&self, site: SiteId) -> usize {
        let state = self.site_ref(site);
        state.in_front + state.back.map_or(0, |b| self.back[b].items.len())
    }

    pub fn in_flight(&self, site: SiteId) -> usize {
        self.site_ref(site).in_flight
    }

    pub fn hold_state(&self, site: SiteId) -> HoldState {
        self.site_ref(site).hold
    }

    /// The delay in force for `site`: the larger of the global delay and its own.
    pub fn delay(&self, site: SiteId) -> Duration {
        self.default_delay.max(self.site_ref(site).delay)
    }

    pub fn default_delay(&self) -> Duration {
        self.default_delay
    }

    pub fn per_site(&self) -> usize {
        self.per_site
    }

    /// The earliest a new contact of `site` may start under the politeness rule and any defer.
    pub fn next_allowed(&self, site: SiteId) -> Tick {
        let state = self.site_ref(site);
        let delay = self.delay(site);
        let after = |t: Option<Tick>| t.map_or(Tick::ZERO, |t| t.saturating_add(delay));
        after(state.last_start)
            .max(after(state.last_end))
            .max(state.not_before)
    }

    /// Completions that arrived with no slot in flight: should stay 0; see [`Frontier::complete`].
    pub fn stray_completions(&self) -> u64 {
        self.stray_completions
    }

    /// The first `n` scheduled sites in the order they will be served.
    pub fn heap_top(&self, n: usize) -> Vec<HeapEntry> {
        let mut armed: Vec<(Armed, SiteId)> = self
            .back
            .iter()
            .filter_map(|q| Some((q.armed?, q.owner?)))
            .collect();
        armed.sort_unstable_by_key(|(a, _)| (a.ready_at, a.seq));
        armed
            .into_iter()
            .take(n)
            .map(|(a, site)| HeapEntry {
                site,
                ready_at: a.ready_at,
                queue_len: self.queued(site),
            })
            .collect()
    }

    /// Every interned site, in id order, for the snapshot's sites table.
    pub fn sites(&self) -> impl Iterator<Item = SiteView<'_>> + '_ {
        (0..self.sites.len()).map(|i| self.site_view(SiteId(i as u32)))
    }

    pub fn site_view(&self, site: SiteId) -> SiteView<'_> {
        let state = self.site_ref(site);
        let ready_at = state
            .back
            .and_then(|b| self.back[b].armed)
            .map(|a| a.ready_at);
        let queued = self.queued(site);
        let status = if state.hold == HoldState::Held {
            SiteStatus::Held
        } else if ready_at.is_some() {
            SiteStatus::Scheduled
        } else if state.in_flight > 0 {
            SiteStatus::Busy
        } else if queued > 0 {
            SiteStatus::Waiting
        } else {
            SiteStatus::Idle
        };
        SiteView {
            id: site,
            origin: &state.origin,
            status,
            hold: state.hold,
            queued,
            in_flight: state.in_flight,
            delay: self.delay(site),
            next_allowed: self.next_allowed(site),
            ready_at,
        }
    }

    fn site_ref(&self, site: SiteId) -> &Site {
        self.sites
            .get(site.index())
            .expect("site id interned by this frontier")
    }

    fn site_mut(&mut self, site: SiteId) -> &mut Site {
        self.sites
            .get_mut(site.index())
            .expect("site id interned by this frontier")
    }

    fn is_live(&self, key: HeapKey) -> bool {
        self.back[key.back].armed.is_some_and(|a| a.seq == key.seq)
    }

    /// A site may be in the heap: it owns a back queue with items, is not held, and is under
    /// its `per_site` limit.
    fn is_eligible(&self, site: SiteId) -> bool {
        let state = self.site_ref(site);
        state.hold == HoldState::Open
            && state.in_flight < self.per_site
            && state.back.is_some_and(|b| !self.back[b].items.is_empty())
    }

    /// Brings the site's heap entry in line with its state: one live entry at
    /// `next_allowed` if it is eligible, none otherwise. Called after every change to a site.
    fn rearm(&mut self, site: SiteId) {
        let Some(b) = self.site_ref(site).back else {
            return;
        };
        let wanted = self.is_eligible(site).then(|| self.next_allowed(site));
        let queue = &mut self.back[b];
        match wanted {
            Some(ready_at) if queue.armed.is_some_and(|a| a.ready_at == ready_at) => {}
            Some(ready_at) => {
                let seq = self.next_seq;
                self.next_seq += 1;
                queue.armed = Some(Armed { ready_at, seq });
                self.heap.push(Reverse(HeapKey {
                    ready_at,
                    seq,
                    back: b,
                }));
            }
            None => queue.armed = None,
        }
    }

    /// After items left a site or a slot ended: an emptied back queue with nothing in flight
    /// is released (and refilled); otherwise the site is rescheduled.
    fn settle(&mut self, site: SiteId) {
        let state = self.site_ref(site);
        match state.back {
            Some(b) if self.back[b].items.is_empty() && state.in_flight == 0 => self.release(b),
            _ => self.rearm(site),
        }
        self.tidy_heap();
    }

    fn claim(&mut self, b: usize, site: SiteId, item: T) {
        let queue = &mut self.back[b];
        debug_assert!(queue.owner.is_none() && queue.items.is_empty());
        queue.owner = Some(site);
        queue.items.push_back(item);
        self.site_mut(site).back = Some(b);
        self.rearm(site);
    }

    fn release(&mut self, b: usize) {
        let queue = &mut self.back[b];
        let owner = queue
            .owner
            .take()
            .expect("a released back queue has an owner");
        queue.armed = None;
        self.site_mut(owner).back = None;
        self.free.push(b);
        self.refill();
    }

    /// Mercator's refill: scan the front queues, highest priority first; items of sites that
    /// own a back queue move to it, and the first item of a site without one claims the free
    /// back queue. Stops when no queue is free or the front queues are empty.
    fn refill(&mut self) {
        'free: while let Some(&b) = self.free.last() {
            for priority in 0..self.front.len() {
                while let Some((site, item)) = self.front[priority].pop_front() {
                    let state = self.site_mut(site);
                    state.in_front -= 1;
                    if let Some(owned) = state.back {
                        self.back[owned].items.push_back(item);
                        self.rearm(site);
                    } else {
                        self.free.pop();
                        self.claim(b, site, item);
                        continue 'free;
                    }
                }
            }
            return;
        }
    }

    /// Restores the invariant that the heap's top is live, and keeps stale entries from
    /// outgrowing the live ones (at most one per back queue).
    fn tidy_heap(&mut self) {
        while let Some(&Reverse(top)) = self.heap.peek() {
            if self.is_live(top) {
                break;
            }
            self.heap.pop();
        }
        if self.heap.len() > 2 * self.back.len() + 32 {
            self.rebuild_heap();
        }
    }

    fn rebuild_heap(&mut self) {
        let live: Vec<_> = self
            .back
            .iter()
            .enumerate()
            .filter_map(|(b, q)| {
                q.armed.map(|a| {
                    Reverse(HeapKey {
                        ready_at: a.ready_at,
                        seq: a.seq,
                        back: b,
                    })
                })
            })
            .collect();
        self.heap = BinaryHeap::from(live);
    }
}

/// The 64-bit xxh3 fingerprint of a canonical URL: what [`SeenSet`] keeps, and what a
/// checkpoint stores. xxh3 is stable across runs and platforms (unlike `ahash`).
pub fn fingerprint(canonical_url: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(canonical_url.as_bytes())
}

/// Exactly-once: the fingerprints of every canonical URL ever admitted.
///
/// 8 bytes a URL (plus the table's slack). Two URLs with the same 64-bit fingerprint count as
/// one, so the second is skipped: at 100 million URLs that happens with odds of about 3 in
/// 10,000 for the whole crawl, cheaper than keeping the strings.
#[derive(Default)]
pub struct SeenSet {
    fingerprints: HashSet<u64, BuildHasherDefault<FingerprintHasher>>,
}

impl SeenSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            fingerprints: HashSet::with_capacity_and_hasher(
                capacity,
                BuildHasherDefault::default(),
            ),
        }
    }

    /// Admits a canonical URL: `true` the first time it is seen, `false` ever after.
    pub fn insert(&mut self, canonical_url: &str) -> bool {
        self.fingerprints.insert(fingerprint(canonical_url))
    }

    pub fn contains(&self, canonical_url: &str) -> bool {
        self.fingerprints.contains(&fingerprint(canonical_url))
    }

    /// Re-admits a fingerprint read back from a checkpoint.
    pub fn insert_fingerprint(&mut self, fingerprint: u64) -> bool {
        self.fingerprints.insert(fingerprint)
    }

    /// Every fingerprint, in no particular order, for a checkpoint.
    pub fn fingerprints(&self) -> impl Iterator<Item = u64> + '_ {
        self.fingerprints.iter().copied()
    }

    pub fn len(&self) -> usize {
        self.fingerprints.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fingerprints.is_empty()
    }
}

/// The keys are xxh3 outputs, already well mixed: hashing them again (`SipHash`) would only
/// cost time.
#[derive(Default)]
struct FingerprintHasher(u64);

impl Hasher for FingerprintHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Tick {
        Duration::from_millis(n)
    }

    fn config(back_queues: usize, per_site: usize, delay_ms: u64) -> FrontierConfig {
        FrontierConfig {
            front_queues: 4,
            back_queues,
            per_site,
            default_delay: ms(delay_ms),
        }
    }

    /// `SplitMix64`: seeded and deterministic, so a failing random test replays exactly.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn index(&mut self, len: usize) -> usize {
            self.below(len as u64) as usize
        }
    }

    impl<T> Frontier<T> {
        /// Every structural invariant the module's comments promise.
        fn check_invariants(&self) {
            let mut in_front = vec![0; self.sites.len()];
            for queue in &self.front {
                for (site, _) in queue {
                    in_front[site.index()] += 1;
                }
            }
            let in_back: usize = self.back.iter().map(|q| q.items.len()).sum();
            assert_eq!(self.queued, in_front.iter().sum::<usize>() + in_back);
            for (i, site) in self.sites.iter().enumerate() {
                let id = SiteId(i as u32);
                assert_eq!(site.in_front, in_front[i], "in_front of {id:?}");
                match site.back {
                    Some(b) => {
                        assert_eq!(self.back[b].owner, Some(id));
                        assert!(
                            !self.back[b].items.is_empty() || site.in_flight > 0,
                            "an owned back queue is non-empty or its site is in flight"
                        );
                    }
                    None => assert_eq!(site.in_flight, 0, "a site in flight owns a back queue"),
                }
                let armed = site.back.and_then(|b| self.back[b].armed);
                assert_eq!(armed.is_some(), self.is_eligible(id), "armed iff eligible");
                if let Some(armed) = armed {
                    assert_eq!(armed.ready_at, self.next_allowed(id));
                }
            }
            for (b, queue) in self.back.iter().enumerate() {
                if let Some(owner) = queue.owner {
                    assert_eq!(self.sites[owner.index()].back, Some(b));
                } else {
                    assert!(queue.items.is_empty() && queue.armed.is_none());
                    assert!(self.free.contains(&b));
                }
                if let Some(armed) = queue.armed {
                    let entries = self
                        .heap
                        .iter()
                        .filter(|Reverse(k)| k.back == b && k.seq == armed.seq)
                        .count();
                    assert_eq!(entries, 1, "one live heap entry per armed back queue");
                }
            }
            assert_eq!(
                self.free.len(),
                self.back.iter().filter(|q| q.owner.is_none()).count()
            );
            if !self.free.is_empty() {
                for (site, _) in self.front.iter().flatten() {
                    assert!(
                        self.sites[site.index()].back.is_some(),
                        "no site waits in front while a back queue is free"
                    );
                }
            }
            if let Some(&Reverse(top)) = self.heap.peek() {
                assert!(self.is_live(top), "the heap top is live");
            }
            assert!(self.heap.len() <= 2 * self.back.len() + 32);
        }
    }

    /// Serves slots in order, one item each, completing at once, until nothing is scheduled.
    fn drain_order(f: &mut Frontier<u32>) -> Vec<SiteId> {
        let mut order = Vec::new();
        let mut now = Tick::ZERO;
        while let Some(at) = f.next_ready_at() {
            now = now.max(at);
            let site = f.next_site(now).expect("a site is due at next_ready_at");
            f.take(site).expect("a slot always has an item");
            f.complete(site, now);
            f.check_invariants();
            order.push(site);
        }
        order
    }

    #[test]
    fn same_origin_interns_to_same_id() {
        let mut f: Frontier<u32> = Frontier::new(config(2, 1, 0));
        let a = f.site("http://a.test");
        let b = f.site("http://b.test:8080");
        assert_ne!(a, b);
        assert_eq!(f.site("http://a.test"), a);
        assert_eq!(f.origin(b), "http://b.test:8080");
        assert_eq!(f.find_site("http://b.test:8080"), Some(b));
        assert_eq!(f.find_site("http://c.test"), None);
        assert_eq!((a.index(), b.index(), f.site_count()), (0, 1, 2));
    }

    #[test]
    fn zero_counts_in_config_are_raised_to_one() {
        let mut f: Frontier<u32> = Frontier::new(FrontierConfig {
            front_queues: 0,
            back_queues: 0,
            per_site: 0,
            default_delay: Duration::ZERO,
        });
        let a = f.site("http://a.test");
        f.push(a, 7, 1);
        assert_eq!(f.per_site(), 1);
        assert_eq!(f.next_site(Tick::ZERO), Some(a));
        assert_eq!(f.take(a), Some(1));
    }

    #[test]
    fn waiting_sites_get_back_queues_in_priority_order() {
        let mut f = Frontier::new(config(1, 1, 0));
        let blocker = f.site("http://blocker.test");
        let [a, b, c] = ["http://a.test", "http://b.test", "http://c.test"].map(|o| f.site(o));
        f.push(blocker, 3, 0);
        f.push(a, 3, 1);
        f.push(b, 0, 2);
        f.push(c, 1, 3);
        assert_eq!(drain_order(&mut f), vec![blocker, b, c, a]);
    }

    #[test]
    fn priorities_beyond_the_last_front_queue_share_it() {
        let mut f = Frontier::new(config(1, 1, 0));
        let blocker = f.site("http://blocker.test");
        let [a, b, c] = ["http://a.test", "http://b.test", "http://c.test"].map(|o| f.site(o));
        f.push(blocker, 0, 0);
        f.push(a, 99, 1);
        f.push(b, 3, 2);
        f.push(c, 2, 3);
        // a (clamped to 3) was pushed before b into the same queue; c's queue comes first.
        assert_eq!(drain_order(&mut f), vec![blocker, c, a, b]);
    }

    #[test]
    fn items_of_one_site_come_out_in_arrival_order() {
        let mut f = Frontier::new(config(2, 1, 0));
        let a = f.site("http://a.test");
        for (i, priority) in [2, 0, 3, 1].into_iter().enumerate() {
            f.push(a, priority, i as u32);
        }
        let mut taken = Vec::new();
        while let Some(site) = f.next_site(Tick::MAX) {
            taken.push(f.take(site).expect("slot has an item"));
            f.complete(site, Tick::ZERO);
        }
        assert_eq!(taken, vec![0, 1, 2, 3]);
    }

    #[test]
    fn each_back_queue_holds_one_site_and_the_rest_wait() {
        let mut f = Frontier::new(config(2, 1, 0));
        let [a, b, c] = ["http://a.test", "http://b.test", "http://c.test"].map(|o| f.site(o));
        for (i, site) in [a, b, c, a, b, c].into_iter().enumerate() {
            f.push(site, 0, i as u32);
        }
        f.check_invariants();
        let statuses: Vec<SiteStatus> = f.sites().map(|v| v.status).collect();
        assert_eq!(
            statuses,
            vec![
                SiteStatus::Scheduled,
                SiteStatus::Scheduled,
                SiteStatus::Waiting
            ]
        );
        let top: Vec<SiteId> = f.heap_top(10).iter().map(|e| e.site).collect();
        assert_eq!(top, vec![a, b]);
        assert_eq!(f.back[0].items, VecDeque::from([0, 3]));
        assert_eq!(f.back[1].items, VecDeque::from([1, 4]));
    }

    #[test]
    fn waiting_site_claims_the_back_queue_its_predecessor_releases() {
        let mut f = Frontier::new(config(1, 1, 100));
        let [a, b] = ["http://a.test", "http://b.test"].map(|o| f.site(o));
        f.push(a, 0, 1);
        f.push(b, 0, 2);
        assert_eq!(f.next_site(ms(0)), Some(a));
        assert_eq!(f.take(a), Some(1));
        // Still in flight: a keeps its back queue, b keeps waiting.
        assert_eq!(f.next_ready_at(), None);
        assert_eq!(f.site_view(b).status, SiteStatus::Waiting);
        f.complete(a, ms(40));
        // b has never been contacted, so it is due at once.
        assert_eq!(f.next_ready_at(), Some(ms(0)));
        assert_eq!(f.next_site(ms(40)), Some(b));
        assert_eq!(f.take(b), Some(2));
        // a's politeness outlives its back queue.
        assert_eq!(f.next_allowed(a), ms(140));
    }

    #[test]
    fn next_site_never_gives_a_slot_with_nothing_to_take() {
        let mut f = Frontier::new(config(2, 3, 0));
        let a = f.site("http://a.test");
        f.push(a, 0, 1);
        assert_eq!(f.next_site(ms(0)), Some(a));
        assert_eq!(f.take(a), Some(1));
        assert_eq!(f.next_site(ms(0)), None);
        assert_eq!(f.next_ready_at(), None);
    }

    #[test]
    fn next_site_waits_for_the_ready_time() {
        let mut f = Frontier::new(config(2, 1, 100));
        let a = f.site("http://a.test");
        f.push(a, 0, 1);
        f.push(a, 0, 2);
        assert_eq!(f.next_site(ms(0)), Some(a));
        f.take(a);
        f.complete(a, ms(30));
        assert_eq!(f.next_ready_at(), Some(ms(130)));
        assert_eq!(f.next_site(ms(129)), None);
        assert_eq!(f.next_site(ms(130)), Some(a));
    }

    #[test]
    fn nothing_is_scheduled_in_an_empty_frontier() {
        let mut f: Frontier<u32> = Frontier::new(config(2, 1, 0));
        f.site("http://a.test");
        assert_eq!(f.next_ready_at(), None);
        assert_eq!(f.next_site(Tick::MAX), None);
        assert!(f.is_empty());
    }

    struct Contact {
        site: SiteId,
        start: Tick,
        end: Tick,
    }

    /// A crawl of 6 sites (one with a longer delay of its own) over 3 back queues, by 6
    /// workers, with random response times around the delay and new links found along the
    /// way. Returns the frontier, every contact, and every item fetched.
    fn simulate_crawl(per_site: usize, seed: u64) -> (Frontier<u64>, Vec<Contact>, Vec<u64>) {
        const WORKERS: usize = 6;
        const SITES: usize = 6;
        const ITEMS: u64 = 240;
        let mut rng = Rng(seed);
        let mut f = Frontier::new(config(3, per_site, 100));
        let ids: Vec<SiteId> = (0..SITES)
            .map(|i| f.site(&format!("http://s{i}.test")))
            .collect();
        f.set_site_delay(ids[1], ms(250));
        let mut pushed = 0;
        while pushed < ITEMS / 2 {
            f.push(ids[rng.index(SITES)], rng.index(5), pushed);
            pushed += 1;
        }
        let mut in_flight: Vec<(Tick, SiteId)> = Vec::new();
        let mut contacts = Vec::new();
        let mut fetched = Vec::new();
        let mut now = Tick::ZERO;
        loop {
            // Completions due by now, earliest first, before any new slot.
            in_flight.sort_by_key(|&(end, _)| Reverse(end));
            while let Some(&(end, site)) = in_flight.last().filter(|(end, _)| *end <= now) {
                in_flight.pop();
                f.complete(site, end);
                while pushed < ITEMS && rng.below(3) == 0 {
                    f.push(ids[rng.index(SITES)], rng.index(5), pushed);
                    pushed += 1;
                }
            }
            while in_flight.len() < WORKERS {
                let Some(site) = f.next_site(now) else { break };
                assert!(f.in_flight(site) <= per_site);
                fetched.push(f.take(site).expect("a slot always has an item"));
                let end = now + ms(5 + rng.below(400));
                contacts.push(Contact {
                    site,
                    start: now,
                    end,
                });
                in_flight.push((end, site));
            }
            f.check_invariants();
            let mut next = in_flight.iter().map(|&(end, _)| end).min();
            if in_flight.len() < WORKERS {
                next = match (next, f.next_ready_at()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            match next {
                Some(at) => now = now.max(at),
                None => break,
            }
        }
        (f, contacts, fetched)
    }

    /// Asserts the politeness rule on recorded contacts; returns the most contacts of one
    /// site seen in flight at once.
    fn assert_polite(f: &Frontier<u64>, contacts: &[Contact], per_site: usize) -> usize {
        let mut most_concurrent = 0;
        for site in f.sites().map(|v| v.id) {
            let delay = f.delay(site);
            let mine: Vec<&Contact> = contacts.iter().filter(|c| c.site == site).collect();
            for pair in mine.windows(2) {
                assert!(
                    pair[1].start >= pair[0].start + delay,
                    "{site:?}: starts {:?} and {:?} closer than {delay:?}",
                    pair[0].start,
                    pair[1].start
                );
            }
            for c in &mine {
                for e in mine.iter().filter(|e| e.end <= c.start) {
                    assert!(
                        c.start >= e.end + delay,
                        "{site:?}: start {:?} too soon after completion {:?}",
                        c.start,
                        e.end
                    );
                }
                let concurrent = mine
                    .iter()
                    .filter(|o| o.start <= c.start && o.end > c.start)
                    .count();
                assert!(concurrent <= per_site, "{site:?}: {concurrent} in flight");
                most_concurrent = most_concurrent.max(concurrent);
            }
        }
        most_concurrent
    }

    fn assert_fetched_exactly_once(f: &Frontier<u64>, mut fetched: Vec<u64>) {
        assert!(f.is_empty());
        fetched.sort_unstable();
        let expected: Vec<u64> = (0..fetched.len() as u64).collect();
        assert_eq!(fetched, expected);
        assert_eq!(f.stray_completions(), 0);
    }

    #[test]
    fn simulated_crawl_is_polite_with_one_contact_per_site() {
        for seed in 0..8 {
            let (f, contacts, fetched) = simulate_crawl(1, seed);
            assert_eq!(assert_polite(&f, &contacts, 1), 1);
            assert_fetched_exactly_once(&f, fetched);
        }
    }

    #[test]
    fn simulated_crawl_is_polite_with_three_contacts_per_site() {
        let mut most = 0;
        for seed in 0..8 {
            let (f, contacts, fetched) = simulate_crawl(3, seed);
            most = most.max(assert_polite(&f, &contacts, 3));
            assert_fetched_exactly_once(&f, fetched);
        }
        // Otherwise the test would pass with per_site ignored and 1 enforced.
        assert_eq!(most, 3, "the simulation reaches the per_site limit");
    }

    /// One contact of site a, from 0 to `end_ms`, with a second item left queued.
    fn one_contact(delay_ms: u64, end_ms: u64) -> (Frontier<u32>, SiteId) {
        let mut f = Frontier::new(config(2, 1, delay_ms));
        let a = f.site("http://a.test");
        f.push(a, 0, 1);
        f.push(a, 0, 2);
        assert_eq!(f.next_site(ms(0)), Some(a));
        f.take(a);
        f.complete(a, ms(end_ms));
        (f, a)
    }

    #[test]
    fn lowering_the_default_delay_reschedules_waiting_sites_at_once() {
        let (mut f, a) = one_contact(10_000, 1_000);
        assert_eq!(f.next_ready_at(), Some(ms(11_000)));
        f.set_default_delay(ms(2_000));
        assert_eq!(f.next_ready_at(), Some(ms(3_000)));
        assert_eq!(f.next_site(ms(2_999)), None);
        assert_eq!(f.next_site(ms(3_000)), Some(a));
    }

    #[test]
    fn raising_the_default_delay_is_never_violated_by_waiting_sites() {
        let (mut f, a) = one_contact(1_000, 500);
        assert_eq!(f.next_ready_at(), Some(ms(1_500)));
        f.set_default_delay(ms(5_000));
        assert_eq!(f.next_ready_at(), Some(ms(5_500)));
        assert_eq!(f.next_site(ms(1_500)), None);
        assert_eq!(f.next_site(ms(5_499)), None);
        assert_eq!(f.next_site(ms(5_500)), Some(a));
    }

    #[test]
    fn the_larger_of_site_delay_and_default_delay_applies() {
        let (mut f, a) = one_contact(100, 0);
        f.set_site_delay(a, ms(700));
        assert_eq!(f.delay(a), ms(700));
        assert_eq!(f.next_ready_at(), Some(ms(700)));
        f.set_default_delay(ms(1_000));
        assert_eq!(f.next_ready_at(), Some(ms(1_000)));
        f.set_default_delay(ms(10));
        assert_eq!(f.next_ready_at(), Some(ms(700)));
    }

    #[test]
    fn defer_postpones_the_next_contact_until_the_given_tick() {
        let (mut f, a) = one_contact(100, 0);
        f.defer(a, ms(30_000));
        assert_eq!(f.next_ready_at(), Some(ms(30_000)));
        assert_eq!(f.next_site(ms(29_999)), None);
        assert_eq!(f.next_site(ms(30_000)), Some(a));
    }

    #[test]
    fn a_shorter_defer_does_not_shorten_an_earlier_one() {
        let (mut f, a) = one_contact(100, 0);
        f.defer(a, ms(30_000));
        f.defer(a, ms(5_000));
        assert_eq!(f.next_allowed(a), ms(30_000));
        assert_eq!(f.next_site(ms(5_000)), None);
    }

    #[test]
    fn defer_of_a_site_in_flight_applies_when_it_completes() {
        let mut f = Frontier::new(config(2, 1, 100));
        let a = f.site("http://a.test");
        f.push(a, 0, 1);
        f.push(a, 0, 2);
        assert_eq!(f.next_site(ms(0)), Some(a));
        f.take(a);
        f.defer(a, ms(9_000));
        f.complete(a, ms(50));
        assert_eq!(f.next_ready_at(), Some(ms(9_000)));
    }

    #[test]
    fn held_site_gets_no_slot_and_keeps_its_items_until_unhold() {
        let mut f = Frontier::new(config(2, 1, 0));
        let a = f.site("http://a.test");
        f.push(a, 0, 1);
        f.push(a, 0, 2);
        f.hold(a);
        assert_eq!(f.next_ready_at(), None);
        assert_eq!(f.next_site(Tick::MAX), None);
        assert_eq!((f.queued(a), f.site_view(a).status), (2, SiteStatus::Held));
        f.unhold(a, ms(50));
        assert_eq!(f.hold_state(a), HoldState::Open);
        // Not before the unhold, though its politeness time (0) is long past.
        assert_eq!(f.next_ready_at(), Some(ms(50)));
        assert_eq!(f.next_site(ms(50)), Some(a));
    }

    #[test]
    fn hold_during_a_slot_stops_further_slots_with_per_site_above_one() {
        let mut f = Frontier::new(config(2, 3, 0));
        let a = f.site("http://a.test");
        f.push(a, 0, 1);
        f.push(a, 0, 2);
        // The slot goes to robots.txt: nothing is taken, the site is held meanwhile.
        assert_eq!(f.next_site(ms(0)), Some(a));
        f.hold(a);
        assert_eq!(f.next_site(ms(10)), None);
        f.complete(a, ms(20));
        assert_eq!(f.next_site(ms(30)), None);
        f.unhold(a, ms(30));
        assert_eq!(f.next_site(ms(30)), Some(a));
        assert_eq!(f.take(a), Some(1));
    }

    #[test]
    fn unhold_with_nothing_queued_schedules_nothing_until_a_push() {
        let mut f = Frontier::new(config(2, 1, 100));
        let a = f.site("http://a.test");
        f.push(a, 0, 1);
        assert_eq!(f.next_site(ms(0)), Some(a));
        f.take(a);
        f.hold(a);
        f.complete(a, ms(10));
        f.unhold(a, ms(500));
        assert_eq!(f.next_ready_at(), None);
        assert_eq!(f.site_view(a).status, SiteStatus::Idle);
        f.push(a, 0, 2);
        assert_eq!(f.next_ready_at(), Some(ms(500)));
    }

    #[test]
    fn remove_site_items_returns_front_and_back_items_and_frees_the_back_queue() {
        let mut f = Frontier::new(config(1, 1, 0));
        let [a, b, c] = ["http://a.test", "http://b.test", "http://c.test"].map(|o| f.site(o));
        f.push(a, 0, 1);
        f.push(b, 2, 4);
        f.push(a, 0, 2);
        f.push(c, 1, 5);
        f.push(b, 0, 3);
        assert_eq!(f.remove_site_items(b), vec![3, 4]);
        assert_eq!((f.len(), f.queued(b)), (3, 0));
        f.check_invariants();
        assert_eq!(f.remove_site_items(a), vec![1, 2]);
        f.check_invariants();
        // a's back queue went to c, the only site still waiting.
        assert_eq!(f.next_site(ms(0)), Some(c));
        assert_eq!(f.take(c), Some(5));
        assert!(f.is_empty());
    }

    #[test]
    fn remove_site_items_during_a_slot_keeps_the_slot_valid() {
        let mut f = Frontier::new(config(1, 1, 100));
        let [a, b] = ["http://a.test", "http://b.test"].map(|o| f.site(o));
        f.push(a, 0, 1);
        f.push(a, 0, 2);
        f.push(b, 0, 3);
        assert_eq!(f.next_site(ms(0)), Some(a));
        assert_eq!(f.remove_site_items(a), vec![1, 2]);
        assert_eq!(f.in_flight(a), 1);
        f.check_invariants();
        f.complete(a, ms(5));
        assert_eq!(f.in_flight(a), 0);
        assert_eq!(f.next_site(ms(5)), Some(b));
    }

    #[test]
    fn remove_site_items_of_a_site_with_nothing_queued_returns_nothing() {
        let mut f: Frontier<u32> = Frontier::new(config(1, 1, 0));
        let a = f.site("http://a.test");
        assert!(f.remove_site_items(a).is_empty());
        assert!(f.is_empty());
    }

    #[test]
    fn raising_per_site_while_running_gives_more_slots_up_to_the_new_limit() {
        let mut f = Frontier::new(config(2, 1, 0));
        let a = f.site("http://a.test");
        for i in 0..5 {
            f.push(a, 0, i);
        }
        assert_eq!(f.next_site(ms(0)), Some(a));
        f.take(a);
        assert_eq!(f.next_site(ms(0)), None);
        f.set_per_site(3);
        for _ in 0..2 {
            assert_eq!(f.next_site(ms(1)), Some(a));
            f.take(a);
        }
        assert_eq!(f.in_flight(a), 3);
        assert_eq!(f.next_site(ms(2)), None);
        assert_eq!(f.site_view(a).status, SiteStatus::Busy);
    }

    #[test]
    fn lowering_per_site_while_running_waits_until_in_flight_is_under_it() {
        let mut f = Frontier::new(config(2, 3, 0));
        let a = f.site("http://a.test");
        for i in 0..5 {
            f.push(a, 0, i);
        }
        for _ in 0..3 {
            assert_eq!(f.next_site(ms(0)), Some(a));
            f.take(a);
        }
        f.set_per_site(1);
        f.complete(a, ms(1));
        assert_eq!(f.next_site(ms(1)), None);
        f.complete(a, ms(2));
        assert_eq!(f.next_site(ms(2)), None);
        f.complete(a, ms(3));
        assert_eq!(f.next_site(ms(3)), Some(a));
    }

    #[test]
    fn complete_without_a_slot_changes_nothing() {
        let mut f = Frontier::new(config(2, 1, 100));
        let a = f.site("http://a.test");
        f.complete(a, ms(5_000));
        assert_eq!((f.in_flight(a), f.stray_completions()), (0, 1));
        assert_eq!(f.next_allowed(a), ms(0));
        f.push(a, 0, 1);
        f.push(a, 0, 2);
        assert_eq!(f.next_site(ms(0)), Some(a));
        f.take(a);
        f.complete(a, ms(10));
        f.complete(a, ms(9_000));
        assert_eq!((f.in_flight(a), f.stray_completions()), (0, 2));
        assert_eq!(f.next_ready_at(), Some(ms(110)));
        f.check_invariants();
    }

    #[test]
    fn heap_top_lists_scheduled_sites_in_ready_order() {
        let mut f = Frontier::new(config(4, 1, 0));
        let [third, first, second, held] = [
            "http://a.test",
            "http://b.test",
            "http://c.test",
            "http://d.test",
        ]
        .map(|o| f.site(o));
        for (site, items, until) in [(third, 1, 300), (first, 2, 100), (second, 3, 200)] {
            for i in 0..items {
                f.push(site, 0, i);
            }
            f.defer(site, ms(until));
        }
        f.push(held, 0, 9);
        f.hold(held);
        let top = f.heap_top(10);
        let expected = vec![
            HeapEntry {
                site: first,
                ready_at: ms(100),
                queue_len: 2,
            },
            HeapEntry {
                site: second,
                ready_at: ms(200),
                queue_len: 3,
            },
            HeapEntry {
                site: third,
                ready_at: ms(300),
                queue_len: 1,
            },
        ];
        assert_eq!(top, expected);
        assert_eq!(f.heap_top(1), expected[..1]);
    }

    #[test]
    fn sites_view_reports_each_status() {
        let mut f = Frontier::new(config(2, 1, 100));
        let [idle, busy, waiting, held] = [
            "http://i.test",
            "http://b.test",
            "http://w.test",
            "http://h.test",
        ]
        .map(|o| f.site(o));
        f.push(busy, 0, 1);
        assert_eq!(f.next_site(ms(0)), Some(busy));
        assert_eq!(f.take(busy), Some(1));
        f.push(held, 0, 2);
        f.hold(held);
        f.push(waiting, 0, 3);
        let views: Vec<(SiteId, SiteStatus)> = f.sites().map(|v| (v.id, v.status)).collect();
        assert_eq!(
            views,
            vec![
                (idle, SiteStatus::Idle),
                (busy, SiteStatus::Busy),
                (waiting, SiteStatus::Waiting),
                (held, SiteStatus::Held),
            ]
        );
        let view = f.site_view(busy);
        assert_eq!(
            (view.origin, view.in_flight, view.queued),
            ("http://b.test", 1, 0)
        );
        assert_eq!(
            (view.delay, view.next_allowed, view.ready_at),
            (ms(100), ms(100), None)
        );
    }

    #[test]
    fn seen_set_admits_each_url_once() {
        let mut seen = SeenSet::new();
        let admitted: Vec<bool> = ["/a", "/b", "/a", "/c", "/b", "/a"]
            .iter()
            .map(|u| seen.insert(u))
            .collect();
        assert_eq!(admitted, vec![true, true, false, true, false, false]);
        assert_eq!(seen.len(), 3);
        assert!(seen.contains("/c") && !seen.contains("/d"));
    }

    #[test]
    fn seen_set_before_the_frontier_fetches_every_url_exactly_once() {
        let mut rng = Rng(7);
        let mut seen = SeenSet::with_capacity(64);
        let mut f: Frontier<String> = Frontier::new(config(3, 1, 10));
        let mut unique = HashSet::new();
        for _ in 0..2_000 {
            let (host, page) = (rng.below(5), rng.below(40));
            let url = format!("http://h{host}.test/p{page}");
            unique.insert(url.clone());
            if seen.insert(&url) {
                let site = f.site(&format!("http://h{host}.test"));
                f.push(site, rng.index(4), url);
            }
        }
        let mut fetched = Vec::new();
        let mut now = Tick::ZERO;
        while let Some(at) = f.next_ready_at() {
            now = now.max(at);
            let site = f.next_site(now).expect("due");
            fetched.push(f.take(site).expect("a slot always has an item"));
            f.complete(site, now + ms(3));
        }
        assert_eq!(fetched.len(), unique.len());
        assert_eq!(fetched.into_iter().collect::<HashSet<_>>(), unique);
        assert_eq!(seen.len(), seen.fingerprints().count());
    }

    #[test]
    fn seen_set_restored_from_fingerprints_knows_the_same_urls() {
        let mut seen = SeenSet::new();
        seen.insert("http://a.test/");
        let mut restored = SeenSet::new();
        for fp in seen.fingerprints() {
            restored.insert_fingerprint(fp);
        }
        assert!(restored.contains("http://a.test/"));
        assert!(!restored.insert("http://a.test/"));
        assert_eq!(
            fingerprint("http://a.test/"),
            seen.fingerprints().next().unwrap_or(0)
        );
    }

    /// Serves everything left, taking all of a site's back queue per slot; every item must be
    /// outstanding exactly once, and nothing may stay stuck.
    fn drain_checking_once(f: &mut Frontier<u64>, mut now: Tick, outstanding: &mut HashSet<u64>) {
        while let Some(at) = f.next_ready_at() {
            now = now.max(at);
            let site = f.next_site(now).expect("due");
            while let Some(item) = f.take(site) {
                assert!(outstanding.remove(&item), "drained item was queued once");
            }
            f.complete(site, now);
            f.check_invariants();
        }
        assert!(f.is_empty(), "nothing is stuck once every hold is lifted");
        assert!(outstanding.is_empty());
    }

    /// A random mix of every operation against a plain model of the counts; also checks that
    /// no slot breaks the rules, and that everything left drains out exactly once at the end.
    fn random_operations(seed: u64, steps: usize) {
        const SITES: usize = 7;
        let mut rng = Rng(seed);
        let mut f = Frontier::new(config(3, 2, 10));
        let ids: Vec<SiteId> = (0..SITES)
            .map(|i| f.site(&format!("http://s{i}.test")))
            .collect();
        let mut queued = [0usize; SITES];
        let mut in_flight = [0usize; SITES];
        let mut held = [false; SITES];
        let mut slots: Vec<usize> = Vec::new();
        let mut outstanding = HashSet::new();
        let (mut next_item, mut per_site, mut strays) = (0u64, 2usize, 0u64);
        let mut now = Tick::ZERO;
        for _ in 0..steps {
            let s = rng.index(SITES);
            match rng.below(13) {
                0..=2 => {
                    let item = next_item * 16 + s as u64;
                    next_item += 1;
                    f.push(ids[s], rng.index(6), item);
                    queued[s] += 1;
                    outstanding.insert(item);
                }
                3 | 4 => {
                    let allowed: Vec<Tick> = ids.iter().map(|&i| f.next_allowed(i)).collect();
                    if let Some(got) = f.next_site(now) {
                        let g = got.index();
                        assert!(!held[g], "slot for a held site");
                        assert!(queued[g] > 0, "slot for a site with nothing queued");
                        assert!(in_flight[g] < per_site, "slot over per_site");
                        assert!(now >= allowed[g], "slot before its time");
                        in_flight[g] += 1;
                        slots.push(g);
                    }
                }
                5 if !slots.is_empty() => {
                    let g = slots[rng.index(slots.len())];
                    if let Some(item) = f.take(ids[g]) {
                        assert_eq!(item % 16, g as u64, "item of another site");
                        assert!(outstanding.remove(&item), "item taken twice");
                        queued[g] -= 1;
                    }
                }
                6 if !slots.is_empty() => {
                    let g = slots.swap_remove(rng.index(slots.len()));
                    in_flight[g] -= 1;
                    f.complete(ids[g], now);
                }
                7 if held[s] => {
                    f.unhold(ids[s], now);
                    held[s] = false;
                }
                7 => {
                    f.hold(ids[s]);
                    held[s] = true;
                }
                8 => f.defer(ids[s], now + ms(rng.below(40))),
                9 => {
                    per_site = 1 + rng.index(3);
                    f.set_per_site(per_site);
                }
                10 => {
                    let removed = f.remove_site_items(ids[s]);
                    assert_eq!(removed.len(), queued[s]);
                    for item in removed {
                        assert!(outstanding.remove(&item), "removed item was queued");
                    }
                    queued[s] = 0;
                }
                11 if rng.below(2) == 0 => f.set_default_delay(ms(rng.below(30))),
                11 => f.set_site_delay(ids[s], ms(rng.below(60))),
                12 if in_flight[s] == 0 => {
                    f.complete(ids[s], now);
                    strays += 1;
                }
                _ => now += ms(rng.below(25)),
            }
            assert_eq!(f.len(), queued.iter().sum::<usize>());
            for i in 0..SITES {
                assert_eq!(f.queued(ids[i]), queued[i]);
                assert_eq!(f.in_flight(ids[i]), in_flight[i]);
            }
            assert_eq!(f.stray_completions(), strays);
            f.check_invariants();
        }
        for g in slots {
            f.complete(ids[g], now);
        }
        for &id in &ids {
            f.unhold(id, now);
        }
        drain_checking_once(&mut f, now, &mut outstanding);
    }

    #[test]
    fn random_operations_keep_counts_consistent() {
        for seed in 0..24 {
            random_operations(seed, 1_500);
        }
    }
}
