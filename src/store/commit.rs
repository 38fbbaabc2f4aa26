//! The reorder window of the ordered commit: every dispatched fetch gets a sequence number,
//! results come back in any order, and the committer takes them out strictly in sequence order.
//!
//! Committing in order is what makes the checkpoint one number: everything below
//! [`Window::next_to_commit`] is in the store, nothing above it is, so a resumed crawl starts a
//! new window there, refetches what was above and writes nothing below it twice.
//!
//! The window owns one slot per sequence number from the next to commit up to the last
//! dispatched, and the deadlines of those still in flight. It never does I/O and never reads
//! a clock: the engine passes the time in, as a [`Tick`] since the crawl's start, and keeps
//! one timer at [`Window::next_deadline`].
//!
//! How the engine drives it:
//! 1. [`Window::dispatch`] before each fetch: the fetch carries the sequence number.
//! 2. When a fetch ends: [`Window::complete`] with its result, or [`Window::skip`] when there is
//!    nothing to commit. Either one resolves the sequence; whichever comes first wins and any
//!    later answer for it is reported as a duplicate and dropped.
//! 3. After each completion, [`Window::pop_ready`] until `None`, writing each result out.
//! 4. When the timer fires, [`Window::overdue`]; for each sequence, fetch its URL again and
//!    [`Window::redispatch`] it with a new deadline (or [`Window::skip`] it to give up).
//!
//! Why `skip` and not `complete(seq, None)`: the payload type stays the committer's own (a
//! fetch error worth recording is a payload like any other), and a sequence with nothing to
//! write never reaches the committer at all, while the mark still moves past it.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

/// A dispatch's place in the commit order.
pub type Seq = u64;

/// Time since the crawl's start, always passed in by the engine: the window has no clock.
pub use crate::frontier::Tick;

/// What the window made of an answer for a sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// The first answer for a dispatched sequence: it will be committed in its turn.
    Accepted,
    /// The sequence was already resolved (a late answer of a rescheduled fetch): dropped.
    Duplicate,
    /// Never dispatched, or already committed: dropped.
    Unknown,
}

#[derive(Debug)]
enum SlotState<T> {
    /// Dispatched, the answer is due by `deadline`.
    InFlight { deadline: Tick, attempts: u32 },
    /// Past its deadline and reported by [`Window::overdue`]: waits for the engine to
    /// redispatch it (or for a late answer).
    Overdue { attempts: u32 },
    /// The result arrived and waits for its turn.
    Arrived(T),
    /// Resolved with nothing to commit. Never at the head of the window: the window moves
    /// past skipped slots as soon as they reach it.
    Skipped,
}

#[derive(Debug)]
struct Slot<T> {
    /// When the sequence was first dispatched: how long a missing result has held the commit.
    dispatched: Tick,
    state: SlotState<T>,
}

/// The reorder window. `T` is the result payload.
///
/// Memory: one slot per sequence between the next to commit and the last dispatched, i.e.
/// the results in flight, the results waiting, and payload-free skipped slots behind a gap.
#[derive(Debug)]
pub struct Window<T> {
    /// Sequence number of `slots[0]`.
    next: Seq,
    slots: VecDeque<Slot<T>>,
    /// Deadlines of the `InFlight` slots only, earliest first.
    deadlines: BTreeSet<(Tick, Seq)>,
    in_flight: usize,
    waiting: usize,
    reschedules: u64,
}

impl<T> Window<T> {
    /// An empty window whose first dispatch gets `first`: 0 for a new crawl, the committed
    /// high-water mark for a resumed one.
    pub fn new(first: Seq) -> Self {
        Self {
            next: first,
            slots: VecDeque::new(),
            deadlines: BTreeSet::new(),
            in_flight: 0,
            waiting: 0,
            reschedules: 0,
        }
    }

    /// Hands out the next sequence number for a fetch dispatched at `now` whose result is due
    /// by `deadline` (now + patience + margin).
    pub fn dispatch(&mut self, now: Tick, deadline: Tick) -> Seq {
        let seq = self.next_to_dispatch();
        self.slots.push_back(Slot {
            dispatched: now,
            state: SlotState::InFlight {
                deadline,
                attempts: 1,
            },
        });
        self.deadlines.insert((deadline, seq));
        self.in_flight += 1;
        seq
    }

    /// Takes the result of `seq`. Only the first answer for a sequence counts.
    pub fn complete(&mut self, seq: Seq, result: T) -> Completion {
        self.resolve(seq, SlotState::Arrived(result))
    }

    /// Resolves `seq` with nothing to commit (the fetch ended in a way the store does not
    /// record), so the window can move past it. Answers like [`Window::complete`].
    pub fn skip(&mut self, seq: Seq) -> Completion {
        let completion = self.resolve(seq, SlotState::Skipped);
        self.move_past_skipped();
        completion
    }

    /// The next result in sequence order, if it has arrived. Never out of order: while the
    /// next sequence is missing, later results wait.
    pub fn pop_ready(&mut self) -> Option<(Seq, T)> {
        if !matches!(self.slots.front()?.state, SlotState::Arrived(_)) {
            return None;
        }
        let slot = self
            .slots
            .pop_front()
            .expect("the front slot was just seen");
        let SlotState::Arrived(result) = slot.state else {
            unreachable!("the front slot was just seen to hold a result")
        };
        let seq = self.next;
        self.next += 1;
        self.waiting -= 1;
        self.move_past_skipped();
        Some((seq, result))
    }

    /// Sequences whose deadline is `now` or earlier and that have not been answered, lowest
    /// first (the lowest is the one holding the commit). Each is reported once: it stays
    /// overdue until [`Window::redispatch`], a late answer or a skip.
    pub fn overdue(&mut self, now: Tick) -> Vec<Seq> {
        let mut due = Vec::new();
        while let Some(&(deadline, seq)) = self.deadlines.first() {
            if deadline > now {
                break;
            }
            self.deadlines.pop_first();
            let index = self
                .index(seq)
                .expect("a deadline belongs to a slot in the window");
            let slot = &mut self.slots[index];
            let SlotState::InFlight { attempts, .. } = slot.state else {
                unreachable!("only in-flight slots have deadlines")
            };
            slot.state = SlotState::Overdue { attempts };
            due.push(seq);
        }
        due.sort_unstable();
        due
    }

    /// Records that `seq` was dispatched again, due by `deadline`, and counts a reschedule.
    /// A sequence already answered, committed or never dispatched is left alone: there is
    /// nothing to wait for.
    pub fn redispatch(&mut self, seq: Seq, deadline: Tick) {
        let Some(index) = self.index(seq) else { return };
        let attempts = match self.slots[index].state {
            SlotState::InFlight {
                deadline: old,
                attempts,
            } => {
                self.deadlines.remove(&(old, seq));
                attempts
            }
            SlotState::Overdue { attempts } => attempts,
            SlotState::Arrived(_) | SlotState::Skipped => return,
        };
        self.slots[index].state = SlotState::InFlight {
            deadline,
            attempts: attempts + 1,
        };
        self.deadlines.insert((deadline, seq));
        self.reschedules += 1;
    }

    /// How many times `seq` has been dispatched, while it waits for an answer; lets the engine
    /// give up (skip) after a number of attempts.
    pub fn attempts(&self, seq: Seq) -> Option<u32> {
        match self.slots[self.index(seq)?].state {
            SlotState::InFlight { attempts, .. } | SlotState::Overdue { attempts } => {
                Some(attempts)
            }
            SlotState::Arrived(_) | SlotState::Skipped => None,
        }
    }

    /// The earliest deadline still running: when to call [`Window::overdue`] next.
    pub fn next_deadline(&self) -> Option<Tick> {
        self.deadlines.first().map(|&(deadline, _)| deadline)
    }

    /// How long the missing result at the head of the window has held the commit back, if
    /// it is missing.
    pub fn head_wait(&self, now: Tick) -> Option<Duration> {
        let head = self.slots.front()?;
        match head.state {
            SlotState::InFlight { .. } | SlotState::Overdue { .. } => {
                Some(now.saturating_sub(head.dispatched))
            }
            SlotState::Arrived(_) | SlotState::Skipped => None,
        }
    }

    /// The committed high-water mark: every sequence below it is committed or skipped.
    pub fn next_to_commit(&self) -> Seq {
        self.next
    }

    /// The sequence number the next [`Window::dispatch`] hands out.
    pub fn next_to_dispatch(&self) -> Seq {
        self.next + self.slots.len() as Seq
    }

    /// Results that arrived and wait for an earlier one (or for [`Window::pop_ready`]).
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Sequences dispatched and not yet answered, overdue ones included.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Redispatches since the window was made.
    pub fn reschedules(&self) -> u64 {
        self.reschedules
    }

    fn index(&self, seq: Seq) -> Option<usize> {
        let offset = usize::try_from(seq.checked_sub(self.next)?).ok()?;
        (offset < self.slots.len()).then_some(offset)
    }

    fn resolve(&mut self, seq: Seq, resolution: SlotState<T>) -> Completion {
        let Some(index) = self.index(seq) else {
            return Completion::Unknown;
        };
        match self.slots[index].state {
            SlotState::InFlight { deadline, .. } => {
                self.deadlines.remove(&(deadline, seq));
            }
            SlotState::Overdue { .. } => {}
            SlotState::Arrived(_) | SlotState::Skipped => return Completion::Duplicate,
        }
        self.in_flight -= 1;
        if matches!(resolution, SlotState::Arrived(_)) {
            self.waiting += 1;
        }
        self.slots[index].state = resolution;
        Completion::Accepted
    }

    fn move_past_skipped(&mut self) {
        while self
            .slots
            .front()
            .is_some_and(|slot| matches!(slot.state, SlotState::Skipped))
        {
            self.slots.pop_front();
            self.next += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::collections::hash_map::Entry;

    use super::*;

    fn ms(n: u64) -> Tick {
        Duration::from_millis(n)
    }

    fn drain<T>(window: &mut Window<T>) -> Vec<(Seq, T)> {
        std::iter::from_fn(|| window.pop_ready()).collect()
    }

    #[test]
    fn in_order_results_commit_at_once() {
        let mut w = Window::new(0);
        for expected in 0..3 {
            let seq = w.dispatch(ms(0), ms(100));
            assert_eq!(seq, expected);
            assert_eq!(w.complete(seq, seq * 10), Completion::Accepted);
            assert_eq!(w.pop_ready(), Some((seq, seq * 10)));
        }
        assert_eq!(w.next_to_commit(), 3);
        assert_eq!((w.waiting(), w.in_flight()), (0, 0));
    }

    #[test]
    fn out_of_order_results_commit_in_order() {
        let mut w = Window::new(0);
        for _ in 0..4 {
            w.dispatch(ms(0), ms(100));
        }
        for seq in [3, 1, 2, 0] {
            assert_eq!(w.complete(seq, seq), Completion::Accepted);
        }
        assert_eq!(drain(&mut w), vec![(0, 0), (1, 1), (2, 2), (3, 3)]);
    }

    #[test]
    fn a_missing_result_holds_later_ones() {
        let mut w = Window::new(0);
        for _ in 0..3 {
            w.dispatch(ms(0), ms(100));
        }
        w.complete(1, "b");
        w.complete(2, "c");
        assert_eq!(w.pop_ready(), None);
        assert_eq!((w.waiting(), w.in_flight(), w.next_to_commit()), (2, 1, 0));
        assert_eq!(w.head_wait(ms(70)), Some(ms(70)));
        w.complete(0, "a");
        assert_eq!(drain(&mut w), vec![(0, "a"), (1, "b"), (2, "c")]);
        assert_eq!(w.head_wait(ms(70)), None);
    }

    #[test]
    fn skip_at_the_head_moves_the_mark_at_once() {
        let mut w: Window<&str> = Window::new(0);
        w.dispatch(ms(0), ms(100));
        w.dispatch(ms(0), ms(100));
        assert_eq!(w.skip(0), Completion::Accepted);
        assert_eq!(w.next_to_commit(), 1);
        assert_eq!(w.in_flight(), 1);
    }

    #[test]
    fn skipped_sequences_are_passed_over_in_order() {
        let mut w = Window::new(0);
        for _ in 0..5 {
            w.dispatch(ms(0), ms(100));
        }
        w.skip(1);
        w.skip(3);
        w.complete(4, 'e');
        w.complete(2, 'c');
        assert_eq!(w.pop_ready(), None);
        w.complete(0, 'a');
        assert_eq!(drain(&mut w), vec![(0, 'a'), (2, 'c'), (4, 'e')]);
        assert_eq!(w.next_to_commit(), 5);
    }

    #[test]
    fn second_answer_is_a_duplicate_and_first_wins() {
        let mut w = Window::new(0);
        w.dispatch(ms(0), ms(100));
        w.dispatch(ms(0), ms(100));
        assert_eq!(w.complete(1, "first"), Completion::Accepted);
        assert_eq!(w.complete(1, "second"), Completion::Duplicate);
        assert_eq!(w.skip(1), Completion::Duplicate);
        assert_eq!(w.waiting(), 1);
        w.complete(0, "zero");
        assert_eq!(drain(&mut w), vec![(0, "zero"), (1, "first")]);
    }

    #[test]
    fn answer_after_a_skip_is_a_duplicate() {
        let mut w = Window::new(0);
        w.dispatch(ms(0), ms(100));
        w.dispatch(ms(0), ms(100));
        w.skip(1);
        assert_eq!(w.complete(1, 7), Completion::Duplicate);
        w.complete(0, 0);
        assert_eq!(drain(&mut w), vec![(0, 0)]);
        assert_eq!(w.next_to_commit(), 2);
    }

    #[test]
    fn unknown_for_never_dispatched_and_already_committed() {
        let mut w = Window::new(0);
        assert_eq!(w.complete(0, ()), Completion::Unknown);
        w.dispatch(ms(0), ms(100));
        assert_eq!(w.complete(1, ()), Completion::Unknown);
        assert_eq!(w.complete(0, ()), Completion::Accepted);
        assert_eq!(w.pop_ready(), Some((0, ())));
        assert_eq!(w.complete(0, ()), Completion::Unknown);
        assert_eq!(w.skip(0), Completion::Unknown);
        assert_eq!(w.skip(u64::MAX), Completion::Unknown);
    }

    #[test]
    fn overdue_reports_late_sequences_once_lowest_first() {
        let mut w: Window<()> = Window::new(0);
        w.dispatch(ms(0), ms(300));
        w.dispatch(ms(0), ms(100));
        w.dispatch(ms(0), ms(200));
        w.dispatch(ms(0), ms(900));
        assert_eq!(w.next_deadline(), Some(ms(100)));
        assert_eq!(w.overdue(ms(99)), Vec::<Seq>::new());
        assert_eq!(w.overdue(ms(300)), vec![0, 1, 2]);
        assert_eq!(w.overdue(ms(400)), Vec::<Seq>::new());
        assert_eq!(w.next_deadline(), Some(ms(900)));
        assert_eq!(w.in_flight(), 4);
    }

    #[test]
    fn redispatch_sets_a_new_deadline_and_counts() {
        let mut w: Window<()> = Window::new(0);
        w.dispatch(ms(0), ms(100));
        assert_eq!(w.overdue(ms(100)), vec![0]);
        w.redispatch(0, ms(250));
        assert_eq!((w.reschedules(), w.attempts(0)), (1, Some(2)));
        assert_eq!(w.overdue(ms(249)), Vec::<Seq>::new());
        assert_eq!(w.overdue(ms(250)), vec![0]);
        w.redispatch(0, ms(400));
        assert_eq!((w.reschedules(), w.attempts(0)), (2, Some(3)));
    }

    #[test]
    fn late_answer_of_first_attempt_commits_and_second_is_duplicate() {
        let mut w = Window::new(0);
        let seq = w.dispatch(ms(0), ms(100));
        assert_eq!(w.overdue(ms(150)), vec![seq]);
        w.redispatch(seq, ms(300));
        assert_eq!(w.complete(seq, "attempt 1"), Completion::Accepted);
        assert_eq!(
            w.next_deadline(),
            None,
            "an answered sequence has no deadline"
        );
        assert_eq!(w.overdue(ms(1000)), Vec::<Seq>::new());
        assert_eq!(w.complete(seq, "attempt 2"), Completion::Duplicate);
        assert_eq!(drain(&mut w), vec![(seq, "attempt 1")]);
        assert_eq!(
            w.complete(seq, "attempt 2 later still"),
            Completion::Unknown
        );
    }

    #[test]
    fn overdue_sequence_can_still_be_answered_without_redispatch() {
        let mut w = Window::new(0);
        w.dispatch(ms(0), ms(100));
        w.overdue(ms(100));
        assert_eq!(w.complete(0, 'x'), Completion::Accepted);
        assert_eq!(w.pop_ready(), Some((0, 'x')));
        assert_eq!(w.reschedules(), 0);
    }

    #[test]
    fn redispatch_of_an_answered_or_unknown_sequence_does_nothing() {
        let mut w = Window::new(0);
        w.dispatch(ms(0), ms(100));
        w.dispatch(ms(0), ms(100));
        w.complete(1, ());
        w.redispatch(1, ms(500));
        w.redispatch(9, ms(500));
        assert_eq!(w.reschedules(), 0);
        assert_eq!(w.attempts(1), None);
        assert_eq!(w.next_deadline(), Some(ms(100)));
    }

    #[test]
    fn a_huge_gap_is_unblocked_by_overdue_then_skip() {
        let mut w = Window::new(0);
        let stuck = w.dispatch(ms(0), ms(100));
        for seq in 1..=10_000 {
            assert_eq!(w.dispatch(ms(1), ms(100_000)), seq);
            w.complete(seq, seq);
        }
        assert_eq!(w.pop_ready(), None);
        assert_eq!(w.waiting(), 10_000);
        assert_eq!(w.overdue(ms(100)), vec![stuck]);
        w.skip(stuck);
        let committed = drain(&mut w);
        assert_eq!(committed.len(), 10_000);
        assert!(committed.iter().map(|&(s, _)| s).eq(1..=10_000));
        assert_eq!((w.waiting(), w.slots.len()), (0, 0));
    }

    #[test]
    fn resumed_window_starts_after_the_mark() {
        let mut w = Window::new(41_000);
        assert_eq!(w.next_to_commit(), 41_000);
        let seq = w.dispatch(ms(0), ms(100));
        assert_eq!(seq, 41_000);
        assert_eq!(w.complete(40_999, "below the mark"), Completion::Unknown);
        w.complete(seq, "page");
        assert_eq!(w.pop_ready(), Some((41_000, "page")));
        assert_eq!(w.next_to_commit(), 41_001);
    }

    #[test]
    fn window_holds_only_in_flight_waiting_and_skipped_slots() {
        let mut w = Window::new(0);
        for _ in 0..100 {
            w.dispatch(ms(0), ms(100));
        }
        for seq in 0..100 {
            w.complete(seq, ());
            w.pop_ready();
        }
        assert_eq!(w.slots.len(), 0);
        assert!(w.deadlines.is_empty());
    }

    // --- randomized: arrival order, drops, duplicates, skips ---------------------------

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Answer {
        Result(u64),
        Nothing,
    }

    const PATIENCE: u64 = 50;

    /// A crawl against the window: fetches that answer late, never, twice, or with nothing,
    /// checked at every step against an oracle that knows the first answer of each sequence.
    struct Simulation {
        rng: crate::testweb::SplitMix64,
        window: Window<u64>,
        now: u64,
        end: Seq,
        /// Answers on their way: (arrival time, sequence, answer).
        on_the_way: Vec<(u64, Seq, Answer)>,
        attempts: HashMap<Seq, u64>,
        first_answer: HashMap<Seq, Answer>,
        model_next: Seq,
        committed: Vec<(Seq, u64)>,
        skipped: Vec<Seq>,
    }

    impl Simulation {
        fn new(seed: u64, first: Seq, total: u64) -> Self {
            Self {
                rng: crate::testweb::SplitMix64::new(seed),
                window: Window::new(first),
                now: 0,
                end: first + total,
                on_the_way: Vec::new(),
                attempts: HashMap::new(),
                first_answer: HashMap::new(),
                model_next: first,
                committed: Vec::new(),
                skipped: Vec::new(),
            }
        }

        /// What one attempt at `seq` will do: nothing (dropped), or one or two answers (a
        /// duplicate) at random later times, some after the deadline.
        fn send(&mut self, seq: Seq) {
            let attempt = self.attempts.entry(seq).or_default();
            *attempt += 1;
            let attempt = *attempt;
            if self.rng.below(5) == 0 {
                return;
            }
            let copies = if self.rng.below(10) == 0 { 2 } else { 1 };
            for _ in 0..copies {
                let at = self.now + 1 + self.rng.below(80);
                let answer = if self.rng.below(8) == 0 {
                    Answer::Nothing
                } else {
                    Answer::Result(seq * 1000 + attempt)
                };
                self.on_the_way.push((at, seq, answer));
            }
        }

        fn dispatch_some(&mut self) {
            for _ in 0..self.rng.below(4) {
                if self.window.next_to_dispatch() < self.end && self.window.in_flight() < 32 {
                    let seq = self.window.dispatch(ms(self.now), ms(self.now + PATIENCE));
                    self.send(seq);
                }
            }
        }

        fn deliver_due(&mut self) {
            let now = self.now;
            let (mut arriving, later): (Vec<_>, Vec<_>) =
                self.on_the_way.iter().partition(|item| item.0 <= now);
            self.on_the_way = later;
            for i in (1..arriving.len()).rev() {
                arriving.swap(i, self.rng.below(i as u64 + 1) as usize);
            }
            for (_, seq, answer) in arriving {
                let expected = if seq < self.model_next {
                    Completion::Unknown
                } else if let Entry::Vacant(first) = self.first_answer.entry(seq) {
                    first.insert(answer);
                    Completion::Accepted
                } else {
                    Completion::Duplicate
                };
                let got = match answer {
                    Answer::Result(value) => self.window.complete(seq, value),
                    Answer::Nothing => self.window.skip(seq),
                };
                assert_eq!(got, expected, "answer {answer:?} for {seq}");
                // A skip at the head moves the mark at once; results wait for pop_ready.
                while self.first_answer.get(&self.model_next) == Some(&Answer::Nothing) {
                    self.skipped.push(self.model_next);
                    self.model_next += 1;
                }
            }
        }

        fn resend_overdue(&mut self) {
            for seq in self.window.overdue(ms(self.now)) {
                assert!(
                    !self.first_answer.contains_key(&seq),
                    "{seq} was answered yet reported overdue"
                );
                self.window.redispatch(seq, ms(self.now + PATIENCE));
                self.send(seq);
            }
        }

        fn commit_and_check(&mut self) {
            while let Some(entry) = self.window.pop_ready() {
                self.committed.push(entry);
            }
            while let Some(answer) = self.first_answer.get(&self.model_next) {
                if *answer == Answer::Nothing {
                    self.skipped.push(self.model_next);
                }
                self.model_next += 1;
            }
            let w = &self.window;
            assert_eq!(w.next_to_commit(), self.model_next);
            let open = self.model_next..w.next_to_dispatch();
            let unanswered = open
                .clone()
                .filter(|s| !self.first_answer.contains_key(s))
                .count();
            let held = open
                .filter(|s| matches!(self.first_answer.get(s), Some(Answer::Result(_))))
                .count();
            assert_eq!((w.in_flight(), w.waiting()), (unanswered, held));
        }

        fn run(mut self) {
            let first = self.model_next;
            while self.model_next < self.end {
                self.now += 1;
                assert!(self.now < 1_000_000, "the window never drained");
                self.dispatch_some();
                self.deliver_due();
                self.resend_overdue();
                self.commit_and_check();
            }
            assert!(
                self.committed.windows(2).all(|p| p[0].0 < p[1].0),
                "committed out of order"
            );
            let mut resolved: Vec<Seq> = self.committed.iter().map(|&(s, _)| s).collect();
            resolved.extend(&self.skipped);
            resolved.sort_unstable();
            assert!(
                resolved.into_iter().eq(first..self.end),
                "every sequence exactly once"
            );
            for &(seq, value) in &self.committed {
                assert_eq!(
                    self.first_answer[&seq],
                    Answer::Result(value),
                    "the first answer is the one committed"
                );
            }
            let w = &self.window;
            assert!(w.reschedules() > 0, "the run exercised reschedules");
            assert_eq!((w.in_flight(), w.waiting(), w.slots.len()), (0, 0, 0));
        }
    }

    #[test]
    fn random_arrivals_drops_and_duplicates_commit_each_sequence_once_in_order() {
        for seed in 0..20 {
            Simulation::new(seed, 0, 2_000).run();
        }
    }

    #[test]
    fn random_run_after_a_resume_commits_from_the_mark() {
        Simulation::new(99, 1_000_000, 2_000).run();
    }
}
