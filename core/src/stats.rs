//! Per-retrier statistics: counters a host feeds from its event sink and reads with
//! `r.stats()` (tenacity's `fn.retry.statistics`, for every host, counted in one place).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::event::{Event, EventKind, ExhaustReason};

/// Counters of one retrier, shared by all its calls (any thread may feed them).
/// A host calls [`Stats::observe`] with each event of each call, and [`Stats::snapshot`]
/// to read them.
///
/// A counter is a sum of cells: one for each of the first 16 threads that run Rust
/// executor calls (a cell has one writer, which adds with a plain load and store) and one
/// shared cell for every other count (an atomic add). A `lock`ed add cost 5 ns on the
/// machine the benchmarks run on: ten times the rest of the Rust happy path.
#[derive(Default)]
pub struct Stats {
    /// Counted by threads without a slot of their own.
    shared: Counters,
    /// Each slot's event counters, allocated at its first event (a retrier whose calls
    /// all succeed at once never allocates them).
    by_slot: [OnceLock<Box<Counters>>; slot::SLOTS],
    /// Calls whose first attempt succeeded without a `Call` (a host's lazy happy path),
    /// by slot, beside the shared `shared.first_ok`: kept inline, so that path reaches its
    /// cell without a pointer. The snapshot folds them into calls, attempts and successes.
    first_ok_by_slot: [AtomicU64; slot::SLOTS],
    /// Calls that succeeded at attempt `i + 2` after a retry for each failure, by slot,
    /// told by [`Stats::add_tally_here`]: inline too, so that a blocking call that retried
    /// and succeeded reaches its cell without a pointer. The snapshot folds them with
    /// `Counters::success_after`.
    success_after_by_slot: [[AtomicU64; SUCCESS_AFTER]; slot::SLOTS],
}

/// One cell of each counter.
#[derive(Default)]
struct Counters {
    calls: AtomicU64,
    attempts: AtomicU64,
    retries: AtomicU64,
    successes: AtomicU64,
    rejections: AtomicU64,
    exhaustions: [AtomicU64; ExhaustReason::ALL.len()],
    cancellations: AtomicU64,
    /// Calls whose first attempt succeeded without a `Call` (see `first_ok_by_slot`):
    /// counted here by threads without a slot and by
    /// [`Stats::count_first_attempt_successes`].
    first_ok: AtomicU64,
    /// Calls that succeeded at attempt `i + 2` after a retry for each failure, told in one
    /// add by [`Stats::add_tally`] (attempt 1's are `first_ok`). The snapshot folds them
    /// into calls, attempts, retries and successes.
    success_after: [AtomicU64; SUCCESS_AFTER],
}

/// Attempts up to which a call that succeeded after retrying each failure is counted in
/// one cell (`Counters::success_after`): the first two retries cover most calls that
/// retry at all; longer calls count field by field.
const SUCCESS_AFTER: usize = 6;
/// The last attempt counted in `Counters::success_after`.
const SUCCESS_AFTER_LAST: usize = SUCCESS_AFTER + 1;

/// Adds one to a cell this thread is the only writer of.
#[inline(always)]
fn add_one_exclusive(cell: &AtomicU64) {
    cell.store(cell.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// Adds one to a cell any thread may write.
#[inline(always)]
fn add_one_shared(cell: &AtomicU64) {
    cell.fetch_add(1, Ordering::Relaxed);
}

/// The cells of one thread ([`Stats::local`]): the thread's slot's, or the shared ones.
pub(crate) struct LocalStats<'a> {
    cells: &'a Counters,
    /// Whether this thread is the cells' only writer.
    exclusive: bool,
}

impl LocalStats<'_> {
    /// [`Stats::observe`], on this thread.
    #[inline]
    pub(crate) fn observe(&self, event: &Event<'_>) {
        let (cells, exclusive) = (self.cells, self.exclusive);
        let bump = |cell: &AtomicU64| if exclusive { add_one_exclusive(cell) } else { add_one_shared(cell) };
        for _ in 0..event.attempts_abandoned {
            bump(&cells.attempts); // (a hedged call's attempts in flight at its end)
        }
        match event.kind {
            EventKind::AttemptFailed => bump(&cells.attempts),
            // A retry is an attempt after the first: a plain call's after its wait, a
            // hedged call's at its launch.
            EventKind::Retrying | EventKind::Hedge => bump(&cells.retries),
            EventKind::Success => {
                bump(&cells.attempts);
                bump(&cells.successes);
                bump(&cells.calls);
            }
            EventKind::Rejected => {
                bump(&cells.rejections);
                bump(&cells.calls);
            }
            EventKind::Exhausted => {
                if let Some(reason) = event.reason {
                    bump(&cells.exhaustions[reason_index(reason)]);
                }
                bump(&cells.calls);
            }
            EventKind::Cancelled => {
                if event.attempt_interrupted {
                    bump(&cells.attempts); // (made, though it neither failed nor succeeded)
                }
                bump(&cells.cancellations);
                bump(&cells.calls);
            }
            EventKind::BreakerOpened | EventKind::BreakerHalfOpen | EventKind::BreakerClosed => {}
        }
    }

    /// [`Stats::add_tally`], in these cells: a call that succeeded after retrying each
    /// failure is one add (a plain load and store in this thread's own cells), where
    /// observing each of its events is one per counter it touches (seven for two failures
    /// then a success).
    #[inline]
    pub(crate) fn add_tally(&self, tally: &CallTally) {
        let (cells, exclusive) = (self.cells, self.exclusive);
        let add = |cell: &AtomicU64, n: u32| match exclusive {
            true => cell.store(cell.load(Ordering::Relaxed) + u64::from(n), Ordering::Relaxed),
            false => {
                cell.fetch_add(u64::from(n), Ordering::Relaxed);
            }
        };
        match tally.succeeded_after_retries() {
            Some(1) => return add(&cells.first_ok, 1),
            Some(n @ 2..=SUCCESS_AFTER_LAST) => return add(&cells.success_after[n - 2], 1),
            _ => {}
        }
        let add_some = |cell: &AtomicU64, n: u32| {
            if n > 0 {
                add(cell, n);
            }
        };
        add_some(&cells.attempts, tally.attempts + u32::from(tally.interrupted));
        add_some(&cells.retries, tally.retries);
        let Some((kind, reason)) = tally.ended else { return };
        let ended = match kind {
            EventKind::Success => Some(&cells.successes),
            EventKind::Rejected => Some(&cells.rejections),
            EventKind::Cancelled => Some(&cells.cancellations),
            _ => reason.map(|reason| &cells.exhaustions[reason_index(reason)]),
        };
        if let Some(cell) = ended {
            add(cell, 1);
        }
        add(&cells.calls, 1);
    }
}

/// The counts of one call, kept in plain fields while it runs and added to its retrier's
/// [`Stats`] once at its end ([`Stats::add_tally`]): a call that succeeds after retrying
/// each failure is then one atomic add, where telling each event is one per counter it
/// touches (seven for two failures then a success). For a host whose calls nothing can
/// observe mid-call (no listener or hook that might read the stats before the call ends).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CallTally {
    attempts: u32,
    retries: u32,
    /// How the call ended: the event kind and reason that ended it, once it has.
    ended: Option<(EventKind, Option<ExhaustReason>)>,
    /// An attempt interrupted by the call's cancellation (it was made: counted).
    interrupted: bool,
}

impl CallTally {
    /// The attempts of a call that succeeded after a retry for each failure (what
    /// one cell of [`Stats`] counts), `None` for any other call.
    #[inline(always)]
    fn succeeded_after_retries(&self) -> Option<usize> {
        let n = self.attempts as usize;
        let retried_each = self.retries as usize + 1 == n && !self.interrupted;
        matches!(self.ended, Some((EventKind::Success, _))).then_some(n).filter(|_| retried_each)
    }

    /// Counts one event of the call (what [`Stats::observe`] would count).
    #[inline(always)]
    pub fn observe(&mut self, event: &Event<'_>) {
        match event.kind {
            EventKind::AttemptFailed => self.attempts += 1,
            EventKind::Retrying => self.retries += 1,
            EventKind::Success => {
                self.attempts += 1;
                self.ended = Some((EventKind::Success, None));
            }
            EventKind::Rejected | EventKind::Exhausted => self.ended = Some((event.kind, event.reason)),
            EventKind::Cancelled => {
                self.interrupted = event.attempt_interrupted;
                self.ended = Some((EventKind::Cancelled, None));
            }
            EventKind::Hedge | EventKind::BreakerOpened | EventKind::BreakerHalfOpen | EventKind::BreakerClosed => {}
        }
    }
}

impl fmt::Debug for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Stats").field(&self.snapshot()).finish()
    }
}

/// A reading of [`Stats`]. Each counter is read on its own: under concurrent calls the
/// numbers may be a few events apart from one another, never torn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Calls that ended (success, rejected, exhausted or cancelled).
    pub calls: u64,
    /// Attempts made: ended (failed, succeeded, or interrupted by the call's
    /// cancellation), or, in a hedged call, abandoned in flight by the call's end.
    pub attempts: u64,
    /// Attempts after the first: waits started (Retrying events), and a hedged call's
    /// launches past its first (Hedge events).
    pub retries: u64,
    /// Calls that ended in success.
    pub successes: u64,
    /// Calls that ended on a permanent failure (rejected).
    pub rejections: u64,
    /// Calls exhausted, by reason, in [`ExhaustReason::ALL`]'s order.
    pub exhaustions: [u64; ExhaustReason::ALL.len()],
    /// Calls cancelled.
    pub cancellations: u64,
}

impl StatsSnapshot {
    /// Calls exhausted for `reason`.
    pub fn exhausted(&self, reason: ExhaustReason) -> u64 {
        self.exhaustions[reason_index(reason)]
    }

    /// Calls exhausted, all reasons together.
    pub fn exhausted_total(&self) -> u64 {
        self.exhaustions.iter().sum()
    }
}

fn reason_index(reason: ExhaustReason) -> usize {
    match reason {
        ExhaustReason::Attempts => 0,
        ExhaustReason::Deadline => 1,
        ExhaustReason::Budget => 2,
        ExhaustReason::RetryAfter => 3,
        ExhaustReason::CircuitOpen => 4,
        ExhaustReason::Stopped => 5,
    }
}

impl Stats {
    /// All counters at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one event of one call (breaker and hedge events count nothing), in the
    /// shared cells (atomic adds).
    #[inline]
    pub fn observe(&self, event: &Event<'_>) {
        LocalStats { cells: &self.shared, exclusive: false }.observe(event);
    }

    /// This thread's cells (its slot's, or the shared ones), for the Rust executors: the
    /// blocking one finds them once a call (the call runs on one thread from start to
    /// end), the async one at each event (its task may move between threads, but each
    /// event is counted on one). Each event then adds with a plain load and store.
    ///
    /// Only the Rust executors count here. The C, Python and Node hosts count in the
    /// shared cells, as the thread checkers their tests run under (helgrind, DRD) see no
    /// ordering in atomics and `OnceLock`s: their suppressions cover the library's own
    /// synchronisation by function name, and these cells would need more of them. (The C
    /// happy path's one count goes to its thread's inline cell through
    /// [`Stats::count_first_attempt_success_on_this_thread`], a named function.)
    #[inline]
    pub(crate) fn local(&self) -> LocalStats<'_> {
        match slot::current() {
            Some(i) => LocalStats { cells: self.by_slot[i].get_or_init(Box::default), exclusive: true },
            None => LocalStats { cells: &self.shared, exclusive: false },
        }
    }

    /// Counts a call whose first attempt succeeded, for a host whose happy path runs
    /// without a [`crate::Call`] (no Success event to observe): what observing that event
    /// would count.
    #[inline]
    pub fn count_first_attempt_success(&self) {
        add_one_shared(&self.shared.first_ok);
    }

    /// [`Stats::count_first_attempt_success`] for the Rust executors' lazy happy path:
    /// in this thread's slot cell when it has one (a plain load and store), no other cell
    /// allocated.
    #[inline]
    pub(crate) fn count_first_attempt_success_here(&self) {
        match slot::current() {
            // This thread is the cell's only writer: no read-modify-write needed.
            Some(i) => add_one_exclusive(&self.first_ok_by_slot[i]),
            None => add_one_shared(&self.shared.first_ok),
        }
    }

    /// [`Stats::count_first_attempt_success`] in this thread's slot cell when it has one
    /// (a plain load and store where the shared cell is a locked add: a C happy path's
    /// largest cost after its own instructions), for a host that runs its calls on the
    /// caller's thread. Not inlined, so that a thread checker's report of the store names
    /// this function (the C library's suppressions cover `retryrs::stats`).
    #[inline(never)]
    pub fn count_first_attempt_success_on_this_thread(&self) {
        self.count_first_attempt_success_here();
    }

    /// [`Stats::count_first_attempt_success`] `n` times (a host that tallies them itself
    /// and hands them over when the stats are read).
    #[inline]
    pub fn count_first_attempt_successes(&self, n: u64) {
        self.shared.first_ok.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds one call's [`CallTally`], in the shared cells: one atomic add for a call that
    /// succeeded after retrying each failure (up to a few attempts), else one per counter
    /// the call touched. A tally of a call that has not ended adds its attempts and retries.
    #[inline]
    pub fn add_tally(&self, tally: &CallTally) {
        LocalStats { cells: &self.shared, exclusive: false }.add_tally(tally);
    }

    /// [`Stats::add_tally`] for a call that ran on this thread (a blocking call): a call
    /// that succeeded after retrying each failure is one plain load and store in this
    /// thread's inline cell, found without a pointer and without the slot's counters;
    /// any other tally goes to this thread's cells ([`LocalStats::add_tally`]).
    #[cfg(feature = "blocking")]
    #[inline]
    pub(crate) fn add_tally_here(&self, tally: &CallTally) {
        if let Some(n) = tally.succeeded_after_retries() {
            if let (2..=SUCCESS_AFTER_LAST, Some(i)) = (n, slot::current()) {
                return add_one_exclusive(&self.success_after_by_slot[i][n - 2]);
            }
        }
        self.add_tally_local(tally);
    }

    /// The rest of [`Stats::add_tally_here`], out of line.
    #[cfg(feature = "blocking")]
    #[inline(never)]
    fn add_tally_local(&self, tally: &CallTally) {
        self.local().add_tally(tally);
    }

    /// The counters now: each the sum of its cells.
    pub fn snapshot(&self) -> StatsSnapshot {
        let slots: Vec<&Counters> = self.by_slot.iter().filter_map(|c| c.get().map(|b| &**b)).collect();
        let read = |field: &dyn Fn(&Counters) -> &AtomicU64| {
            field(&self.shared).load(Ordering::Relaxed)
                + slots.iter().map(|c| field(c).load(Ordering::Relaxed)).sum::<u64>()
        };
        let first_ok =
            read(&|c| &c.first_ok) + self.first_ok_by_slot.iter().map(|c| c.load(Ordering::Relaxed)).sum::<u64>();
        // Calls that succeeded at attempt k after k - 1 retries: (calls, attempts, retries).
        let after = (0..SUCCESS_AFTER).fold((0, 0, 0), |(calls, attempts, retries), i| {
            let n = read(&|c| &c.success_after[i])
                + self.success_after_by_slot.iter().map(|c| c[i].load(Ordering::Relaxed)).sum::<u64>();
            let k = i as u64 + 2;
            (calls + n, attempts + k * n, retries + (k - 1) * n)
        });
        StatsSnapshot {
            calls: read(&|c| &c.calls) + first_ok + after.0,
            attempts: read(&|c| &c.attempts) + first_ok + after.1,
            retries: read(&|c| &c.retries) + after.2,
            successes: read(&|c| &c.successes) + first_ok + after.0,
            rejections: read(&|c| &c.rejections),
            exhaustions: std::array::from_fn(|i| read(&|c| &c.exhaustions[i])),
            cancellations: read(&|c| &c.cancellations),
        }
    }
}

/// Thread slots: each of the first [`SLOTS`] threads that count anything takes a slot
/// index of its own for its lifetime, so the cell of that index in every [`Stats`] has one
/// writer. Later threads use the shared atomic cells. A slot is never given back: giving
/// it back at thread exit needs a thread-local destructor, and registering one from a
/// call made in a pthread key destructor (which runs after the thread's thread-local
/// destructors) leaks glibc's record of it (tests/c/teardown.c checks a thread whose only
/// calls are made there leaks nothing). No thread-local here has a destructor.
mod slot {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Slots per [`super::Stats`].
    pub(super) const SLOTS: usize = 16;
    const UNASSIGNED: u32 = u32::MAX;
    const NONE: u32 = u32::MAX - 1;

    /// Slots handed out so far.
    static TAKEN: AtomicUsize = AtomicUsize::new(0);

    thread_local! {
        /// This thread's slot, [`UNASSIGNED`] or [`NONE`].
        static SLOT: Cell<u32> = const { Cell::new(UNASSIGNED) };
    }

    /// This thread's slot, taking the next one on its first call; `None` when all are taken.
    #[inline]
    pub(super) fn current() -> Option<usize> {
        let i = SLOT.try_with(Cell::get).unwrap_or(NONE);
        let i = if i == UNASSIGNED { assign() } else { i };
        ((i as usize) < SLOTS).then_some(i as usize)
    }

    #[cold]
    #[inline(never)]
    fn assign() -> u32 {
        // Stops counting at SLOTS, so it cannot wrap however many threads ask.
        let taken = TAKEN.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < SLOTS).then_some(n + 1));
        let i = match taken {
            Ok(n) => n as u32,
            Err(_) => NONE,
        };
        let _ = SLOT.try_with(|s| s.set(i));
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Call, Plan, Proposal, Verdict};
    use crate::policy::{Jitter, Policy};
    use std::time::Duration;

    #[test]
    fn a_hedged_call_counts_every_launch() {
        use crate::hedge::{HedgeCall, Hedging, Step};
        let ms = Duration::from_millis;
        let p =
            Policy::builder().hedge(Some(Hedging::fixed(3, ms(10)).unwrap())).deadline(Some(ms(100))).build().unwrap();
        let stats = Stats::new();
        let sink = &mut |e: &Event<'_>| stats.observe(e);
        // Three launches, none settles, the deadline cuts the call: 3 attempts, 2 retries.
        let mut call = HedgeCall::start(&p, ms(0));
        for (k, at) in [(1, 0), (2, 10), (3, 20)] {
            assert_eq!(call.poll(ms(at), sink), Ok(Step::Launch(k)));
        }
        assert!(matches!(call.poll(ms(101), sink), Ok(Step::Stop { .. })));
        let s = stats.snapshot();
        assert_eq!((s.calls, s.attempts, s.retries), (1, 3, 2));
        assert_eq!(s.exhausted(crate::ExhaustReason::Deadline), 1);
        // Two launches, the second wins with the first in flight: 2 attempts, 1 retry.
        let mut call = HedgeCall::start(&p, ms(0));
        assert_eq!(call.poll(ms(0), sink), Ok(Step::Launch(1)));
        assert_eq!(call.poll(ms(10), sink), Ok(Step::Launch(2)));
        assert!(matches!(call.record(2, Verdict::Success, ms(15), sink), Ok(Step::Won { .. })));
        let s = stats.snapshot();
        assert_eq!((s.calls, s.attempts, s.retries, s.successes), (2, 5, 3, 1));
        // Cancelled with two in flight: both were made.
        let mut call = HedgeCall::start(&p, ms(0));
        assert_eq!(call.poll(ms(0), sink), Ok(Step::Launch(1)));
        assert_eq!(call.poll(ms(10), sink), Ok(Step::Launch(2)));
        call.cancel(ms(12), sink).unwrap();
        let s = stats.snapshot();
        assert_eq!((s.calls, s.attempts, s.retries, s.cancellations), (3, 7, 4, 1));
    }

    #[test]
    fn counts_what_the_engine_reports() {
        let p = Policy::builder().max_attempts(3).jitter(Jitter::None).build().unwrap();
        let stats = Stats::new();
        let sink = &mut |e: &Event<'_>| stats.observe(e);
        let ms = Duration::from_millis;
        // Two failures then a success.
        let mut call = Call::start(&p, ms(0));
        call.record(Verdict::TRANSIENT, ms(0), sink).unwrap();
        call.after_wait(ms(200), sink).unwrap();
        call.record(Verdict::TRANSIENT, ms(200), sink).unwrap();
        call.after_wait(ms(600), sink).unwrap();
        call.record(Verdict::Success, ms(600), sink).unwrap();
        // Exhausted by attempts.
        let mut call = Call::start(&p, ms(0));
        for _ in 0..2 {
            call.record(Verdict::TRANSIENT, ms(0), sink).unwrap();
            call.after_wait(ms(0), sink).unwrap();
        }
        call.record(Verdict::TRANSIENT, ms(0), sink).unwrap();
        // Rejected; stopped by a hook; cancelled.
        Call::start(&p, ms(0)).record(Verdict::Permanent, ms(0), sink).unwrap();
        let mut call = Call::start(&p, ms(0));
        assert!(matches!(call.propose(Verdict::TRANSIENT, ms(0), sink), Ok(Proposal::Wait { .. })));
        call.settle(Plan::Stop, ms(0), sink).unwrap();
        // Cancelled during attempt 1: the attempt was made, so it counts.
        Call::start(&p, ms(0)).cancel(ms(0), sink).unwrap();
        // Cancelled during the wait after attempt 1: that attempt counts once.
        let mut call = Call::start(&p, ms(0));
        call.record(Verdict::TRANSIENT, ms(0), sink).unwrap();
        call.cancel(ms(1), sink).unwrap();
        stats.count_first_attempt_success();
        let s = stats.snapshot();
        assert_eq!((s.calls, s.attempts, s.retries), (7, 3 + 3 + 1 + 1 + 1 + 1 + 1, 2 + 2 + 1));
        assert_eq!((s.successes, s.rejections, s.cancellations), (2, 1, 2));
        assert_eq!(s.exhausted(ExhaustReason::Attempts), 1);
        assert_eq!(s.exhausted(ExhaustReason::Stopped), 1);
        assert_eq!(s.exhausted(ExhaustReason::Deadline), 0);
        assert_eq!(s.exhausted_total(), 2);
    }

    #[test]
    fn a_call_s_tally_adds_what_its_events_would() {
        let p = Policy::builder().max_attempts(8).jitter(Jitter::None).initial_delay(Duration::ZERO).build().unwrap();
        let short = Policy::builder().max_attempts(2).jitter(Jitter::None).build().unwrap();
        let ms = Duration::from_millis;
        // Each call's events, told to one Stats event by event and to another as a tally.
        let (by_event, by_tally) = (Stats::new(), Stats::new());
        // One call run against a sink of its events.
        type RunCall<'a> = dyn FnMut(&mut dyn FnMut(&Event<'_>)) + 'a;
        let each_call = |run: &mut RunCall<'_>| {
            let mut tally = CallTally::default();
            run(&mut |e| {
                by_event.observe(e);
                tally.observe(e);
            });
            by_tally.add_tally(&tally);
            assert_eq!(by_tally.snapshot(), by_event.snapshot());
        };
        // Success at attempt k after k - 1 retries, for k = 1..=8 (one cell up to 7).
        for k in 1..=8u32 {
            each_call(&mut |sink| {
                let sink = &mut |e: &Event<'_>| sink(e);
                let mut call = Call::start(&p, ms(0));
                for _ in 1..k {
                    call.record(Verdict::TRANSIENT, ms(0), &mut *sink).unwrap();
                    call.after_wait(ms(0), &mut *sink).unwrap();
                }
                call.record(Verdict::Success, ms(0), &mut *sink).unwrap();
            });
        }
        // Exhausted by attempts; rejected; stopped by a hook; cancelled during an attempt
        // and during a wait; a call whose events stop before it ends (a tally of its
        // attempts and retries so far).
        each_call(&mut |sink| {
            let sink = &mut |e: &Event<'_>| sink(e);
            let mut call = Call::start(&short, ms(0));
            call.record(Verdict::TRANSIENT, ms(0), &mut *sink).unwrap();
            call.after_wait(ms(200), &mut *sink).unwrap();
            call.record(Verdict::TRANSIENT, ms(200), &mut *sink).unwrap();
        });
        each_call(&mut |sink| {
            let _ = Call::start(&p, ms(0)).record(Verdict::Permanent, ms(0), &mut |e| sink(e));
        });
        each_call(&mut |sink| {
            let sink = &mut |e: &Event<'_>| sink(e);
            let mut call = Call::start(&p, ms(0));
            assert!(matches!(call.propose(Verdict::TRANSIENT, ms(0), &mut *sink), Ok(Proposal::Wait { .. })));
            call.settle(Plan::Stop, ms(0), &mut *sink).unwrap();
        });
        each_call(&mut |sink| {
            let _ = Call::start(&p, ms(0)).cancel(ms(0), &mut |e| sink(e));
        });
        each_call(&mut |sink| {
            let sink = &mut |e: &Event<'_>| sink(e);
            let mut call = Call::start(&p, ms(0));
            call.record(Verdict::TRANSIENT, ms(0), &mut *sink).unwrap();
            call.cancel(ms(1), &mut *sink).unwrap();
        });
        each_call(&mut |sink| {
            let _ = Call::start(&p, ms(0)).record(Verdict::TRANSIENT, ms(0), &mut |e| sink(e));
        });
        let s = by_tally.snapshot();
        assert_eq!((s.calls, s.successes, s.retries), (13, 8, (0..8).sum::<u64>() + 1 + 1 + 1));
        assert_eq!(s.exhausted(ExhaustReason::Attempts), 1);
        assert_eq!(s.exhausted(ExhaustReason::Stopped), 1);
    }
}
