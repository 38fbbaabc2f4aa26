//! The Mercator frontier: which URL is fetched next, and when each site may next be contacted.
//!
//! It owns the front queues (one per priority), the back queues (each holding the URLs of
//! exactly one site), the min-heap of back-queue ready times, the per-site politeness table
//! and the seen-URL set. It is pure: the engine passes the time in as a [`Tick`] (time since
//! the crawl's start) and tells it what it learned (Crawl-delay, Retry-After, robots.txt
//! pending). It must never do I/O itself (a spill store does, behind a trait), read a clock,
//! parse URLs or robots.txt, or decide scope.
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
//!
//! Larger than memory: a frontier made with [`Frontier::with_spill`] keeps at most a bound of
//! items in memory per queue (front and back) and the rest in a [`SpillStore`] (`spill.rs`
//! owns the I/O and runs it on a thread of its own, `spill_thread.rs`, so no call here waits
//! on a write; `queue.rs` decides what goes out and comes back, in order, keeps a chunk's
//! bytes until its write is confirmed, and asks for a queue's next chunk before the queue
//! runs dry). Spilling changes where items live, never which item or site comes next. The seen set (`seen.rs`) keeps
//! 64-bit fingerprints in a compact table.
//!
//! The engine sees a frontier only through the [`Schedule`] trait (`schedule.rs`), which this
//! one implements, so another frontier (a shared one) can take its place.

mod queue;
mod schedule;
mod seen;
pub mod spill;
mod spill_thread;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use queue::{Codec, Ctx, SpillIo, SpillQueue};
pub use queue::{SpillError, SpillErrorKind};
pub use schedule::{Queued, Schedule};
pub use seen::{SeenMap, SeenSet, fingerprint};
pub use spill::{DiskStore, MemoryStore, SpillItem, SpillStore};

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

    /// The id at `index`: for another implementation of [`Schedule`], which hands out its own
    /// dense ids.
    pub fn from_index(index: u32) -> SiteId {
        SiteId(index)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrontierConfig {
    /// F: one front queue per priority; priorities at or beyond F share the last queue.
    pub front_queues: usize,
    /// B: the most sites that can be scheduled at once; the others wait in the front queues.
    /// Changeable while running ([`Frontier::set_back_queues`]).
    pub back_queues: usize,
    /// Most contacts of one site in flight at once.
    pub per_site: usize,
    /// The global delay; a site's delay is the larger of this and its own
    /// ([`Frontier::set_site_delay`]).
    pub default_delay: Duration,
}

impl FrontierConfig {
    pub const DEFAULT_FRONT_QUEUES: usize = 4;

    /// The defaults (docs/ARCHITECTURE.md, "The frontier"): F = 4, B = three times the workers (so
    /// a free worker finds a ready site while the others wait out their delay), one contact per
    /// site.
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
    standing: Standing,
}

/// Whether a site has ever answered (the engine says so: its robots.txt was resolved). While
/// sites that answered have work, those that never did (first contacts, robots.txt retries of
/// origins that may be dead) get only a share of the back queues and of the contacts in flight:
/// with 100,000 dead origins in the seeds, they would otherwise take every queue and every slot
/// and the sites that answer would wait behind all of them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Standing {
    Unanswered = 0,
    Answered = 1,
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
    items: SpillQueue<T>,
    armed: Option<Armed>,
}

/// What a refill found in one front queue.
enum Refill {
    Claimed,
    Empty,
    /// A spilled chunk cannot be read: the scan must stop there.
    Blocked,
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
    /// F front queues for sites that never answered, then F for sites that did
    /// ([`Frontier::front_queue`]).
    front: Vec<SpillQueue<(SiteId, T)>>,
    /// F.
    priorities: usize,
    back: Vec<BackQueue<T>>,
    /// B as last set. Back queues at or beyond it are retired: each keeps its site until it
    /// empties, is never claimed again, and is dropped once no queue after it is owned.
    back_target: usize,
    /// Back queues with an owner: at most B, except after B was lowered.
    owned: usize,
    /// Back queues without an owner, below `back_target`. Invariant: while one exists, every
    /// front item belongs to a site that owns a back queue (a site without one would have
    /// claimed it).
    free: Vec<usize>,
    /// One ready heap per [`Standing`] (indexed by it): a site's entry is in the heap of its
    /// standing. Invariant: each top, if any, is live, so `next_ready_at` can peek without `&mut`.
    heaps: [BinaryHeap<Reverse<HeapKey>>; 2],
    /// Back queues owned by sites that never answered.
    unanswered_owned: usize,
    /// Contacts in flight of sites that never answered.
    unanswered_in_flight: usize,
    /// Contacts in flight of sites that answered.
    answered_in_flight: usize,
    next_seq: u64,
    sites: Vec<Site>,
    by_origin: HashMap<Box<str>, SiteId>,
    per_site: usize,
    default_delay: Duration,
    queued: usize,
    stray_completions: u64,
    /// The latest moment any site may have been contacted without this frontier knowing
    /// ([`Frontier::assume_contact_at`]): every site interned since starts as if a contact had
    /// ended then.
    assumed_contact: Option<Tick>,
    /// `None`: every item stays in memory, as before spilling existed.
    spill: Option<Spill<T>>,
    /// Deferred sites parked off their back queues: their items, until they are due again.
    parked: HashMap<SiteId, VecDeque<T>>,
    /// (due, site) of the parked sites, earliest first. An entry whose site is no longer parked
    /// is stale and skipped; the top is kept live, so `next_ready_at` can peek.
    parked_due: BinaryHeap<Reverse<(Tick, SiteId)>>,
}

/// A spilling frontier's store, with the codecs of its two kinds of queue.
struct Spill<T> {
    io: SpillIo,
    back: Codec<T>,
    front: Codec<(SiteId, T)>,
}

impl<T> Spill<T> {
    fn back(&mut self) -> Ctx<'_, T> {
        Ctx {
            io: &mut self.io,
            codec: &self.back,
        }
    }

    fn front(&mut self) -> Ctx<'_, (SiteId, T)> {
        Ctx {
            io: &mut self.io,
            codec: &self.front,
        }
    }
}

fn encode_front<T: SpillItem>((site, item): &(SiteId, T), out: &mut Vec<u8>) {
    out.extend_from_slice(&site.0.to_le_bytes());
    item.encode(out);
}

fn decode_front<T: SpillItem>(bytes: &[u8]) -> Option<(SiteId, T)> {
    let (site, item) = bytes.split_at_checked(4)?;
    Some((
        SiteId(u32::from_le_bytes(site.try_into().ok()?)),
        T::decode(item)?,
    ))
}

impl<T: SpillItem> Frontier<T> {
    /// A frontier that keeps at most `in_memory` items per queue in memory between calls
    /// (front and back queues alike, so the bound does not grow with the number of sites)
    /// and spills the rest to `store`, in chunks of half that many items. It gives out the
    /// same sites and items in the same order as [`Frontier::new`] would.
    ///
    /// Store failures never lose an item and never panic: see [`Frontier::spill_error`].
    pub fn with_spill(
        cfg: FrontierConfig,
        in_memory: usize,
        store: impl SpillStore + 'static,
    ) -> Self {
        let mut frontier = Self::new(cfg);
        frontier.spill = Some(Spill {
            io: SpillIo::new(Box::new(store), in_memory),
            back: Codec {
                encode: T::encode,
                decode: T::decode,
            },
            front: Codec {
                encode: encode_front::<T>,
                decode: decode_front::<T>,
            },
        });
        frontier
    }
}

impl<T> Frontier<T> {
    /// Zero counts in `cfg` are raised to 1: a frontier with no queue, or no slot per site,
    /// would hold items forever.
    pub fn new(cfg: FrontierConfig) -> Self {
        let back_queues = cfg.back_queues.max(1);
        let priorities = cfg.front_queues.max(1);
        Self {
            front: (0..2 * priorities).map(|_| SpillQueue::default()).collect(),
            priorities,
            back: (0..back_queues)
                .map(|_| BackQueue {
                    owner: None,
                    items: SpillQueue::default(),
                    armed: None,
                })
                .collect(),
            back_target: back_queues,
            owned: 0,
            // Popped from the end: queue 0 is claimed first, which keeps runs reproducible.
            free: (0..back_queues).rev().collect(),
            heaps: [BinaryHeap::new(), BinaryHeap::new()],
            unanswered_owned: 0,
            unanswered_in_flight: 0,
            answered_in_flight: 0,
            next_seq: 0,
            sites: Vec::new(),
            by_origin: HashMap::new(),
            per_site: cfg.per_site.max(1),
            default_delay: cfg.default_delay,
            queued: 0,
            stray_completions: 0,
            assumed_contact: None,
            spill: None,
            parked: HashMap::new(),
            parked_due: BinaryHeap::new(),
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
            last_end: self.assumed_contact,
            delay: Duration::ZERO,
            not_before: Tick::ZERO,
            hold: HoldState::Open,
            standing: Standing::Unanswered,
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
        self.queued += 1;
        self.place(site, priority, item);
        self.tidy_heap();
    }

    /// Puts a counted item where its site's items go: with them if parked, in its back queue,
    /// in a free back queue it claims, or in the front queue of its priority.
    fn place(&mut self, site: SiteId, priority: usize, item: T) {
        if let Some(items) = self.parked.get_mut(&site) {
            items.push_back(item);
        } else if let Some(b) = self.site_ref(site).back {
            let ctx = self.spill.as_mut().map(Spill::back);
            self.back[b].items.push_back(item, ctx);
            self.rearm(site);
        } else if let Some(b) = self.free.pop() {
            self.claim(b, site, item);
        } else {
            let q = self.front_queue(site, priority);
            let ctx = self.spill.as_mut().map(Spill::front);
            self.front[q].push_back((site, item), ctx);
            self.site_mut(site).in_front += 1;
        }
    }

    /// Queues an item ahead of everything else of its site (and of every site waiting for a
    /// back queue): a fetch that was cut and must keep its place in the commit order. Its site's
    /// politeness is unchanged: it goes out with the site's next slot.
    pub fn push_first(&mut self, site: SiteId, item: T) {
        self.queued += 1;
        if let Some(items) = self.parked.get_mut(&site) {
            items.push_front(item);
        } else if let Some(b) = self.site_ref(site).back {
            self.back[b].items.push_front(item);
            self.rearm(site);
        } else if let Some(b) = self.free.pop() {
            self.claim(b, site, item);
        } else {
            let q = self.front_queue(site, 0);
            self.front[q].push_front((site, item));
            self.site_mut(site).in_front += 1;
        }
        self.tidy_heap();
    }

    /// When the earliest scheduled site may be served, or a parked site's defer ends (then
    /// [`Frontier::next_site`] may find no slot yet: the site waits for a back queue): the
    /// engine's one timer. `None` when no
    /// site can get a slot until something changes (a push, a completion, an unhold, a
    /// [`Frontier::retry_spill`] after a failed read).
    pub fn next_ready_at(&self) -> Option<Tick> {
        if self.spill_stalled() {
            return None;
        }
        let capped = self.first_contacts_capped();
        let scheduled = [Standing::Answered, Standing::Unanswered]
            .into_iter()
            .filter(|&s| !capped || s == Standing::Answered)
            .filter_map(|s| {
                self.heaps[s as usize]
                    .peek()
                    .map(|Reverse(key)| key.ready_at)
            })
            .min();
        let parked = self.parked_due.peek().map(|Reverse((due, _))| *due);
        match (scheduled, parked) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Gives a slot, if the earliest scheduled site is due at `now`: permission to contact
    /// that site once, now. The site is never held, never at its `per_site` limit, never
    /// before its time, and always has an item in its back queue.
    ///
    /// No slot at all while a spilled chunk cannot be read ([`Frontier::spill_error`]), and
    /// none for a site that never answered while such sites have their share of contacts in
    /// flight and sites that answered have work ([`Standing`]).
    pub fn next_site(&mut self, now: Tick) -> Option<SiteId> {
        // The engine calls this on every turn: a write that failed on the spill thread is
        // seen here even when nothing is pushed or taken.
        if let Some(spill) = &mut self.spill {
            spill.io.poll();
        }
        if self.spill_stalled() {
            return None;
        }
        self.unpark_due(now);
        loop {
            let standing = self.due_heap(now)?;
            let Reverse(top) = self.heaps[standing as usize].pop()?;
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
            match site.standing {
                Standing::Unanswered => self.unanswered_in_flight += 1,
                Standing::Answered => self.answered_in_flight += 1,
            }
            let site = self.site_mut(id);
            // A clock that went backwards must not make the next contact come sooner.
            site.last_start = Some(site.last_start.map_or(now, |t| t.max(now)));
            // With per_site > 1 the site goes straight back into the heap at last_start + delay.
            self.rearm(id);
            self.tidy_heap();
            return Some(id);
        }
    }

    /// Permission to contact `site` once now outside its back queue, for a request that is
    /// not one of its items (a hop of another site's robots.txt redirects that lands here), on
    /// the terms of [`Frontier::next_site`]: never while it is held, at its `per_site` limit or
    /// before its time. Granted, it counts as a contact in flight, which
    /// [`Frontier::complete`] ends; the site needs no back queue or items for it.
    pub fn try_contact(&mut self, site: SiteId, now: Tick) -> bool {
        let state = self.site_ref(site);
        if state.hold != HoldState::Open
            || state.in_flight >= self.per_site
            || self.next_allowed(site) > now
        {
            return false;
        }
        let site_state = self.site_mut(site);
        site_state.in_flight += 1;
        site_state.last_start = Some(site_state.last_start.map_or(now, |t| t.max(now)));
        match site_state.standing {
            Standing::Unanswered => self.unanswered_in_flight += 1,
            Standing::Answered => self.answered_in_flight += 1,
        }
        self.rearm(site);
        self.tidy_heap();
        true
    }

    /// The site's next item from its back queue. The engine calls this under a slot, and may
    /// drop an item (robots-forbidden) and take again; `None` when its back queue is empty,
    /// or when its next item is in a spilled chunk that cannot be read now (the item stays
    /// queued; [`Frontier::spill_error`] says why).
    pub fn take(&mut self, site: SiteId) -> Option<T> {
        let b = self.site_ref(site).back?;
        let ctx = self.spill.as_mut().map(Spill::back);
        let item = self.back[b].items.pop_front(ctx).ok()??;
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
        match state.standing {
            Standing::Unanswered => self.unanswered_in_flight -= 1,
            Standing::Answered => self.answered_in_flight -= 1,
        }
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

    /// The site answered (its robots.txt was resolved): from now on it is served among the sites
    /// that did, which first contacts and retries of sites that never answered cannot crowd out
    /// (see [`Standing`]). Its items already waiting in the front queues stay where they are and
    /// reach it as before. Idempotent.
    pub fn answered(&mut self, site: SiteId) {
        let state = self.site_mut(site);
        if state.standing == Standing::Answered {
            return;
        }
        state.standing = Standing::Answered;
        let (back, in_flight) = (state.back, state.in_flight);
        self.unanswered_in_flight -= in_flight;
        self.answered_in_flight += in_flight;
        if let Some(b) = back {
            self.unanswered_owned -= 1;
            // Its entry moves to the other heap: the old one goes stale.
            self.back[b].armed = None;
            self.rearm(site);
        }
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

    /// Any site, known now or interned later, may have been contacted as late as `at` without
    /// this frontier knowing: a crawl resumed after a kill or a stop does not know the requests
    /// its earlier run made after its last checkpoint (nor the sites it met there). So every
    /// site's next contact waits the site's delay from `at`, as after a contact that ended
    /// then; a later change of the delay (a throttle, a Crawl-delay learned) reaches this wait
    /// as it reaches any other.
    pub fn assume_contact_at(&mut self, at: Tick) {
        self.assumed_contact = Some(self.assumed_contact.map_or(at, |t| t.max(at)));
        for index in 0..self.sites.len() {
            let state = &mut self.sites[index];
            state.last_end = Some(state.last_end.map_or(at, |t| t.max(at)));
            self.rearm(SiteId::from_index(
                u32::try_from(index).expect("site ids are u32"),
            ));
        }
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
    ///
    /// A deferred site with nothing in flight gives up its back queue while it waits, when
    /// other sites wait for one (no queue is free and the front queues hold items): its items
    /// are parked beside the queues, so that sites which can be contacted get the queue
    /// (Mercator's back queues are for sites that can be served soon; with 100,000 sites whose
    /// robots.txt is retried with backoff, keeping them would starve every answering site). When the defer ends its
    /// items go to the back of the lowest-priority front queue and it waits for a back queue
    /// like any site. Parked items are kept in memory (stored chunks of its queue are read
    /// back to park them; if one cannot be read, the site keeps its queue).
    pub fn defer(&mut self, site: SiteId, until: Tick) {
        let state = self.site_mut(site);
        state.not_before = state.not_before.max(until);
        let (back, in_flight, not_before) = (state.back, state.in_flight, state.not_before);
        match back {
            Some(b)
                if in_flight == 0
                    && self.free.is_empty()
                    && self.front.iter().any(|q| !q.is_empty()) =>
            {
                let len = self.back[b].items.len();
                let mut items = Vec::with_capacity(len);
                let ctx = self.spill.as_mut().map(Spill::back);
                if self.back[b]
                    .items
                    .extract(|_| true, len, &mut items, ctx)
                    .is_err()
                {
                    // A stored chunk cannot be read: the site keeps its queue, as it was.
                    for item in items.into_iter().rev() {
                        self.back[b].items.push_front(item);
                    }
                    self.rearm(site);
                } else {
                    self.parked.insert(site, items.into());
                    self.parked_due.push(Reverse((not_before, site)));
                    self.release(b);
                }
            }
            _ => self.rearm(site),
        }
        self.tidy_heap();
    }

    /// Parked sites whose defer has ended at `now` rejoin the line for a back queue.
    fn unpark_due(&mut self, now: Tick) {
        let mut rejoined = false;
        while let Some(&Reverse((due, site))) = self.parked_due.peek() {
            if due > now {
                break;
            }
            self.parked_due.pop();
            let Some(items) = self.parked.remove(&site) else {
                continue;
            };
            let not_before = self.site_ref(site).not_before;
            if not_before > now {
                // Deferred again while parked.
                self.parked.insert(site, items);
                self.parked_due.push(Reverse((not_before, site)));
                continue;
            }
            let last = self.priorities - 1;
            for item in items {
                self.place(site, last, item);
            }
            rejoined = true;
        }
        self.tidy_parked();
        if rejoined {
            self.tidy_heap();
        }
    }

    /// Keeps the parked heap's top live (its site still parked).
    fn tidy_parked(&mut self) {
        while let Some(&Reverse((_, site))) = self.parked_due.peek() {
            if self.parked.contains_key(&site) {
                break;
            }
            self.parked_due.pop();
        }
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

    /// Changes B, the number of back queues (0 counts as 1), e.g. when the engine's workers
    /// change (B = 3 x workers). Nothing queued is lost or reordered:
    /// - raising it refills the new queues from the front queues at once, in Mercator's
    ///   order (priority, then arrival), so more sites are scheduled;
    /// - lowering it recalls nothing: a site that owns a back queue beyond the new B keeps it
    ///   (with its items, its place in the heap and its slots in flight) until it empties, as
    ///   if B had not changed; only then is the queue retired instead of being claimed again.
    ///   Until then more than B sites may own back queues; no new site claims one while the
    ///   owned ones number B or more.
    pub fn set_back_queues(&mut self, n: usize) {
        let n = n.max(1);
        self.back_target = n;
        while self.back.len() < n {
            self.back.push(BackQueue {
                owner: None,
                items: SpillQueue::default(),
                armed: None,
            });
        }
        self.retire_unowned_tail();
        let free_wanted = n.saturating_sub(self.owned);
        self.free = (0..n)
            .rev()
            .filter(|&b| self.back[b].owner.is_none())
            .collect();
        // While retired queues are still owned, only as many queues are free as keep the
        // owned ones at B: the lowest-numbered ones, claimed first.
        let surplus = self.free.len().saturating_sub(free_wanted);
        self.free.drain(..surplus);
        self.rebuild_heap();
        self.refill();
        self.tidy_heap();
    }

    /// B as last set (more back queues may still be owned: see [`Frontier::set_back_queues`]).
    pub fn back_queues(&self) -> usize {
        self.back_target
    }

    /// Drops unowned back queues at the end beyond B, so retired queues do not linger.
    fn retire_unowned_tail(&mut self) {
        while self.back.len() > self.back_target
            && self.back.last().is_some_and(|q| q.owner.is_none())
        {
            self.back.pop();
        }
    }

    /// Removes and returns every queued item of `site` (back queue first, then the front
    /// queues by priority), e.g. when its robots.txt is unreachable for good. Slots in flight
    /// are untouched and still complete normally. Costs one pass over the front queues when
    /// the site has items waiting there: it is meant for rare, final decisions. With spilling,
    /// that pass reads the stored chunks up to the site's last item, and rewrites only those
    /// that held some of its items.
    ///
    /// If a spilled chunk cannot be read, the items from it on stay queued (and counted),
    /// [`Frontier::spill_error`] says why, and a later call returns them.
    pub fn remove_site_items(&mut self, site: SiteId) -> Vec<T> {
        let mut removed = Vec::with_capacity(self.queued(site));
        if let Some(items) = self.parked.remove(&site) {
            removed.extend(items);
            self.tidy_parked();
        }
        // Stops at the first unreadable chunk, so that a later call goes on in the same order.
        let mut blocked = false;
        if let Some(b) = self.site_ref(site).back {
            let queue = &mut self.back[b].items;
            let ctx = self.spill.as_mut().map(Spill::back);
            blocked = queue
                .extract(|_| true, queue.len(), &mut removed, ctx)
                .is_err();
        }
        let mut in_front = self.site_ref(site).in_front;
        let mut from_front = Vec::new();
        for queue in &mut self.front {
            if in_front == 0 || blocked {
                break;
            }
            let ctx = self.spill.as_mut().map(Spill::front);
            blocked = queue
                .extract(|(owner, _)| *owner == site, in_front, &mut from_front, ctx)
                .is_err();
            in_front -= from_front.len();
            removed.extend(from_front.drain(..).map(|(_, item)| item));
        }
        self.site_mut(site).in_front = in_front;
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
        state.in_front
            + state.back.map_or(0, |b| self.back[b].items.len())
            + self.parked.get(&site).map_or(0, VecDeque::len)
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

    /// The first failure of the spill store since the last [`Frontier::retry_spill`], if any.
    /// Nothing is lost either way:
    /// - a failed write keeps the items in memory, and no further writes are tried: the
    ///   crawl goes on, using more memory (writes run on the spill thread, so a failure shows
    ///   here from the first call after it that pushes, takes or asks for the next site);
    /// - a failed read (or a corrupt chunk) leaves the chunk stored, and the frontier gives
    ///   no slot at all ([`Frontier::next_ready_at`] is `None`), since some queue's next item
    ///   cannot be had. The engine should pause and say so.
    pub fn spill_error(&self) -> Option<&SpillError> {
        self.spill.as_ref().and_then(|s| s.io.error())
    }

    /// Forgets the spill error and tries the store again (writes, and reads of the chunks
    /// that failed), e.g. once disk space was freed.
    pub fn retry_spill(&mut self) {
        if let Some(spill) = &mut self.spill {
            spill.io.clear_error();
        }
        self.refill();
        self.tidy_heap();
    }

    /// Waits until the spill thread has applied every write handed to it and takes in the
    /// outcomes (a failure shows in [`Frontier::spill_error`] after this).
    #[cfg(test)]
    pub(crate) fn sync_spill(&mut self) {
        if let Some(spill) = &mut self.spill {
            spill.io.flush();
        }
    }

    /// Items handed to the spill store (0 without spilling), writes in flight included;
    /// [`Frontier::len`] counts them too.
    pub fn spilled(&self) -> usize {
        self.spill.as_ref().map_or(0, |s| s.io.spilled())
    }

    /// Items held in memory now: [`Frontier::len`] less [`Frontier::spilled`]. Costs a pass
    /// over the queues (F + B of them), not over the items.
    pub fn in_memory(&self) -> usize {
        let front: usize = self.front.iter().map(SpillQueue::in_memory).sum();
        let failed = self.spill.as_ref().map_or(0, |s| s.io.failed());
        front + failed + self.back.iter().map(|q| q.items.in_memory()).sum::<usize>()
    }

    /// Encoded bytes written to the spill store so far, chunks since freed included: the
    /// store's payload, to compare with [`Frontier::spill_disk_bytes`].
    pub fn spill_written_bytes(&self) -> u64 {
        self.spill.as_ref().map_or(0, |s| s.io.written())
    }

    /// Bytes the spill store takes on disk now.
    pub fn spill_disk_bytes(&self) -> u64 {
        self.spill.as_ref().map_or(0, |s| s.io.disk_bytes())
    }

    fn spill_stalled(&self) -> bool {
        self.spill.as_ref().is_some_and(|s| s.io.stalled())
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
        // A stale entry may name a back queue retired since.
        self.back
            .get(key.back)
            .and_then(|q| q.armed)
            .is_some_and(|a| a.seq == key.seq)
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
                let standing = self.site_ref(site).standing as usize;
                self.heaps[standing].push(Reverse(HeapKey {
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
        self.owned += 1;
        queue
            .items
            .push_back(item, self.spill.as_mut().map(Spill::back));
        if self.site_ref(site).standing == Standing::Unanswered {
            self.unanswered_owned += 1;
        }
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
        self.owned -= 1;
        if self.site_ref(owner).standing == Standing::Unanswered {
            self.unanswered_owned -= 1;
        }
        if self.owned + self.free.len() < self.back_target {
            if b < self.back_target {
                self.free.push(b);
            } else if let Some(low) = (0..self.back_target)
                .find(|&q| self.back[q].owner.is_none() && !self.free.contains(&q))
            {
                // A retired queue emptied: a parked one below B takes its place (rare).
                self.free.push(low);
            }
        }
        // Otherwise more queues are owned than B (it was lowered): this one is parked.
        self.retire_unowned_tail();
        self.refill();
    }

    /// Mercator's refill: scan the front queues, highest priority first; items of sites that
    /// own a back queue move to it, and the first item of a site without one claims the free
    /// back queue. Stops when no queue is free or the front queues are empty, or at a spilled
    /// chunk it cannot read (the scan must not pass an item; [`Frontier::retry_spill`] resumes).
    ///
    /// Sites that answered come first at each priority. Once sites that never answered own half
    /// of B, a free queue goes to a site that answered if one waits (a first pass over their
    /// queues alone), so first contacts never hold more than their share while answering sites
    /// wait.
    fn refill(&mut self) {
        'free: while let Some(&b) = self.free.last() {
            let capped = self.unanswered_owned >= self.back_target.div_ceil(2);
            let passes: &[bool] = if capped { &[true, false] } else { &[false] };
            for &answered_only in passes {
                for priority in 0..self.priorities {
                    for standing in [Standing::Answered, Standing::Unanswered] {
                        if answered_only && standing == Standing::Unanswered {
                            continue;
                        }
                        let q = standing as usize * self.priorities + priority;
                        match self.refill_from(q, b) {
                            Refill::Claimed => continue 'free,
                            Refill::Blocked => return,
                            Refill::Empty => {}
                        }
                    }
                }
            }
            return;
        }
    }

    /// Moves the items of front queue `q` to their sites' back queues until one of a site
    /// without a back queue claims `b`.
    fn refill_from(&mut self, q: usize, b: usize) -> Refill {
        loop {
            let ctx = self.spill.as_mut().map(Spill::front);
            let (site, item) = match self.front[q].pop_front(ctx) {
                Ok(Some(entry)) => entry,
                Ok(None) => return Refill::Empty,
                Err(queue::Blocked) => return Refill::Blocked,
            };
            let state = self.site_mut(site);
            state.in_front -= 1;
            if let Some(parked) = self.parked.get_mut(&site) {
                // An older item of a parked site: it waits with the others.
                parked.push_back(item);
                continue;
            }
            if let Some(owned) = self.site_ref(site).back {
                let ctx = self.spill.as_mut().map(Spill::back);
                self.back[owned].items.push_back(item, ctx);
                self.rearm(site);
            } else {
                self.free.pop();
                self.claim(b, site, item);
                return Refill::Claimed;
            }
        }
    }

    /// The front queue of `site`'s items at `priority`: by its standing, then by priority
    /// (priorities beyond the last share it).
    fn front_queue(&self, site: SiteId, priority: usize) -> usize {
        self.site_ref(site).standing as usize * self.priorities + priority.min(self.priorities - 1)
    }

    /// Sites that never answered have their share of contacts in flight (B / 6: half the
    /// workers, with the engine's B = 3 x workers) while sites that answered have work (a
    /// contact in flight or a site scheduled): they get no further slot until one ends.
    fn first_contacts_capped(&self) -> bool {
        self.unanswered_in_flight >= (self.back_target / 6).max(1)
            && (self.answered_in_flight > 0 || !self.heaps[Standing::Answered as usize].is_empty())
    }

    /// Which heap gives the next slot at `now`, if any is due: the earlier entry (Mercator's
    /// order), but none of the sites that never answered while they are capped
    /// ([`Frontier::first_contacts_capped`]).
    fn due_heap(&self, now: Tick) -> Option<Standing> {
        let due = |s: Standing| {
            self.heaps[s as usize]
                .peek()
                .filter(|Reverse(k)| k.ready_at <= now)
                .map(|Reverse(k)| (k.ready_at, k.seq))
        };
        let unanswered = if self.first_contacts_capped() {
            None
        } else {
            due(Standing::Unanswered)
        };
        match (due(Standing::Answered), unanswered) {
            (Some(a), Some(u)) => Some(if a <= u {
                Standing::Answered
            } else {
                Standing::Unanswered
            }),
            (Some(_), None) => Some(Standing::Answered),
            (None, Some(_)) => Some(Standing::Unanswered),
            (None, None) => None,
        }
    }

    /// Restores the invariant that the heap's top is live, and keeps stale entries from
    /// outgrowing the live ones (at most one per back queue).
    fn tidy_heap(&mut self) {
        for standing in 0..self.heaps.len() {
            while let Some(&Reverse(top)) = self.heaps[standing].peek() {
                if self.is_live(top) {
                    break;
                }
                self.heaps[standing].pop();
            }
        }
        if self.heaps.iter().map(BinaryHeap::len).sum::<usize>() > 2 * self.back.len() + 32 {
            self.rebuild_heap();
        }
    }

    fn rebuild_heap(&mut self) {
        let mut live: [Vec<_>; 2] = [Vec::new(), Vec::new()];
        for (b, q) in self.back.iter().enumerate() {
            if let (Some(a), Some(owner)) = (q.armed, q.owner) {
                live[self.site_ref(owner).standing as usize].push(Reverse(HeapKey {
                    ready_at: a.ready_at,
                    seq: a.seq,
                    back: b,
                }));
            }
        }
        self.heaps = live.map(BinaryHeap::from);
    }
}

#[cfg(test)]
mod tests;
