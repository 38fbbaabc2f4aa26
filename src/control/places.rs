//! The places of a control room: how many clients it serves at once, who holds each place,
//! and who goes when a newcomer finds them all taken.
//!
//! A room serves at most `limit` clients. When a newcomer is accepted with every place held,
//! the client idle longest loses its place to it at once: idle means waiting for its next
//! command (its next line on the command port, its next request on a keep-alive HTTP
//! connection, or its first since it connected; but a client that has sent nothing yet is not
//! evicted within [`FRESH_GRACE`] of its coming, so a burst of clients does not push itself
//! out before its first bytes arrive). The evicted client then says its goodbye
//! beside the places, bounded in time, at most [`LEAVING`] at once. A client in the middle of
//! a command (a line or request partly read, a search running, an answer being written) is
//! never evicted: while every holder is, the newcomer waits, accepted but not served, until a
//! place frees or a holder falls idle. So a room has at most `limit + LEAVING + 1` connections
//! open, and a row of idle clients (or clients that come back as soon as they are let go)
//! cannot keep a newcomer out.
//!
//! The protocol a serving function follows with its [`Place`]:
//! 1. A place starts idle: the client has sent nothing yet.
//! 2. [`Place::busy`] when the first byte of a command comes. It fails with [`Evicted`] if the
//!    place was given away first: then the client goes as if it had been idle.
//! 3. [`Place::idle`] once the answer is out and the next command is awaited.
//! 4. [`Place::evicted`] resolves when the place has been given away: say goodbye and return.
//!    Dropping the place ends the goodbye.
//!
//! It owns that bookkeeping only: no I/O, and one std `Mutex` held for short sections, never
//! across an await.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Evicted clients saying their goodbye at once, beyond the places.
pub(super) const LEAVING: usize = 8;
/// A client that has sent nothing yet cannot be evicted for this long after it came: a burst
/// of clients that each send a command at once must not push one another out before their
/// first byte arrives (an audit saw 36 of 100 `STATS` clients told the port was full).
pub(super) const FRESH_GRACE: Duration = Duration::from_millis(500);

/// The places of one room.
#[derive(Debug)]
pub(super) struct Places {
    limit: usize,
    /// [`FRESH_GRACE`], but for tests.
    grace: Duration,
    held: Mutex<Held>,
    /// Signalled when a place frees, a holder falls idle or a goodbye ends: what a waiting
    /// newcomer waits for. Only the accept loop waits on it.
    changed: Notify,
}

#[derive(Debug, Default)]
struct Held {
    next_id: u64,
    holders: HashMap<u64, Holder>,
}

#[derive(Debug)]
struct Holder {
    state: State,
    /// Not evicted before this: its grace, if it came moments ago and has sent nothing yet.
    not_before: Instant,
    evict: CancellationToken,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Busy,
    IdleSince(Instant),
    /// Its place went to a newcomer; it is saying its goodbye.
    Leaving,
}

/// The place was given to a newcomer while its client was idle.
#[derive(Debug)]
pub(super) struct Evicted;

/// A client's place, held until dropped.
#[derive(Debug)]
pub(super) struct Place {
    places: Arc<Places>,
    id: u64,
    evict: CancellationToken,
}

impl Places {
    pub(super) fn new(limit: usize) -> Places {
        Places::with_grace(limit, FRESH_GRACE)
    }

    fn with_grace(limit: usize, grace: Duration) -> Places {
        Places {
            limit,
            grace,
            held: Mutex::new(Held::default()),
            changed: Notify::new(),
        }
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        // Every section leaves the table whole, so a panic in another holder cannot break it.
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for a newcomer: a free one, else the place of the client idle longest, who is
    /// told to go. Waits while every holder is busy (or [`LEAVING`] are still leaving).
    pub(super) async fn make_room(self: &Arc<Self>) -> Place {
        loop {
            let wake = match self.try_make_room_or_wake() {
                Ok(place) => return place,
                Err(wake) => wake,
            };
            // A change between the look and this wait is not lost: `notify_one` keeps it. A
            // newcomer's grace that ends frees nothing by itself: waited for too.
            let grace_ends = async {
                match wake {
                    Some(at) => tokio::time::sleep_until(at.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = self.changed.notified() => {}
                () = grace_ends => {}
            }
        }
    }

    #[cfg(test)]
    fn try_make_room(self: &Arc<Self>) -> Option<Place> {
        self.try_make_room_or_wake().ok()
    }

    /// A place, or when to look again if only a newcomer's grace keeps every place (`None`:
    /// when something changes).
    fn try_make_room_or_wake(self: &Arc<Self>) -> Result<Place, Option<Instant>> {
        let now = Instant::now();
        let mut held = self.held();
        let mut holding = 0;
        let mut leaving = 0;
        let mut longest_idle: Option<(Instant, u64)> = None;
        let mut grace_ends: Option<Instant> = None;
        for (&id, holder) in &held.holders {
            match holder.state {
                State::Leaving => leaving += 1,
                State::Busy => holding += 1,
                // A client that came moments ago and has sent nothing yet.
                State::IdleSince(_) if holder.not_before > now => {
                    holding += 1;
                    let end = holder.not_before;
                    grace_ends = Some(grace_ends.map_or(end, |t| t.min(end)));
                }
                State::IdleSince(since) => {
                    holding += 1;
                    // The id breaks ties, so that the choice does not depend on the map's order.
                    if longest_idle.is_none_or(|oldest| (since, id) < oldest) {
                        longest_idle = Some((since, id));
                    }
                }
            }
        }
        if holding >= self.limit {
            let Some((_, id)) = longest_idle.filter(|_| leaving < LEAVING) else {
                return Err(grace_ends.filter(|_| leaving < LEAVING));
            };
            let holder = held
                .holders
                .get_mut(&id)
                .expect("the id was found in this section");
            holder.state = State::Leaving;
            holder.evict.cancel();
        }
        let id = held.next_id;
        held.next_id += 1;
        let evict = CancellationToken::new();
        held.holders.insert(
            id,
            Holder {
                // Idle since it came, but not to be evicted before its grace ends.
                state: State::IdleSince(now),
                not_before: now + self.grace,
                evict: evict.clone(),
            },
        );
        Ok(Place {
            places: self.clone(),
            id,
            evict,
        })
    }
}

impl Place {
    /// The client has begun a command: it keeps its place until [`Place::idle`]. Fails if
    /// the place was given away before.
    pub(super) fn busy(&self) -> Result<(), Evicted> {
        let mut held = self.places.held();
        let holder = held
            .holders
            .get_mut(&self.id)
            .expect("a place is in the table until dropped");
        if holder.state == State::Leaving {
            return Err(Evicted);
        }
        holder.state = State::Busy;
        // It has spoken: its grace as a newcomer is over.
        holder.not_before = Instant::now();
        Ok(())
    }

    /// The client waits for its next command: from now it may be evicted.
    pub(super) fn idle(&self) {
        let fell_idle = {
            let mut held = self.places.held();
            let holder = held
                .holders
                .get_mut(&self.id)
                .expect("a place is in the table until dropped");
            let busy = holder.state == State::Busy;
            if busy {
                holder.state = State::IdleSince(Instant::now());
            }
            busy
        };
        if fell_idle {
            self.places.changed.notify_one();
        }
    }

    /// Resolves once the place has been given to a newcomer.
    pub(super) async fn evicted(&self) {
        self.evict.cancelled().await;
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.places.held().holders.remove(&self.id);
        self.places.changed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_evicted(place: &Place) -> bool {
        place.evict.is_cancelled()
    }

    #[test]
    fn a_newcomer_takes_the_place_of_the_longest_idle_never_a_busy_one() {
        let places = Arc::new(Places::with_grace(3, Duration::ZERO));
        let held: Vec<Place> = (0..3)
            .map(|_| places.try_make_room().expect("a free place"))
            .collect();
        held[0].busy().expect("not evicted");
        held[1].busy().expect("not evicted");
        held[1].idle();
        // 2 has been idle since it came, 1 since just now, 0 is busy.
        let second = places.try_make_room().expect("room made");
        assert_eq!(
            held.iter().map(is_evicted).collect::<Vec<_>>(),
            [false, false, true]
        );
        assert!(
            held[2].busy().is_err(),
            "an evicted client cannot take its place back"
        );
        let _third = places.try_make_room().expect("room made");
        assert_eq!(
            held.iter().map(is_evicted).collect::<Vec<_>>(),
            [false, true, true]
        );
        // Now the newcomers are the idle ones, and the busy one still stays.
        let _fourth = places.try_make_room().expect("room made");
        assert!(is_evicted(&second));
        assert!(!is_evicted(&held[0]));
    }

    /// A burst of newcomers does not push itself out: a client that has sent nothing yet keeps
    /// its place for its grace, and the newcomer beyond the limit waits; one that has had its
    /// answer and waits for its next command can go at once.
    #[test]
    fn a_client_that_just_came_is_not_evicted_during_its_grace() {
        let places = Arc::new(Places::with_grace(2, Duration::from_secs(3600)));
        let held: Vec<Place> = (0..2)
            .map(|_| places.try_make_room().expect("a free place"))
            .collect();
        let waited = places.try_make_room_or_wake().err();
        let wake = waited.expect("no room").expect("a time to look again");
        assert!(
            wake > Instant::now() + Duration::from_secs(3000),
            "{wake:?}"
        );
        assert!(!held.iter().any(is_evicted));
        held[1].busy().expect("not evicted");
        held[1].idle();
        let _newcomer = places.try_make_room().expect("room made");
        assert_eq!(
            held.iter().map(is_evicted).collect::<Vec<_>>(),
            [false, true]
        );
    }

    #[test]
    fn with_every_holder_busy_or_too_many_leaving_nobody_is_evicted() {
        let places = Arc::new(Places::with_grace(1, Duration::ZERO));
        let first = places.try_make_room().expect("a free place");
        first.busy().expect("not evicted");
        assert!(places.try_make_room().is_none());
        first.idle();
        let mut leaving = vec![first];
        for _ in 0..LEAVING {
            leaving.push(places.try_make_room().expect("room made"));
        }
        // LEAVING say their goodbye, one holds the place: the next newcomer waits for a goodbye
        // to end, even though the holder is idle.
        assert_eq!(leaving.iter().filter(|p| is_evicted(p)).count(), LEAVING);
        assert!(places.try_make_room().is_none());
        drop(leaving.remove(0));
        assert!(places.try_make_room().is_some());
    }
}
