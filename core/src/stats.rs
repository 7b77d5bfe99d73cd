//! Per-retrier statistics: counters a host feeds from its event sink and reads with
//! `r.stats()` (tenacity's `fn.retry.statistics`, for every host, counted in one place).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::event::{Event, EventKind, ExhaustReason};

/// Counters of one retrier, shared by all its calls (atomics: any thread may feed them).
/// A host calls [`Stats::observe`] with each event of each call, and [`Stats::snapshot`]
/// to read them.
#[derive(Debug, Default)]
pub struct Stats {
    calls: AtomicU64,
    attempts: AtomicU64,
    retries: AtomicU64,
    successes: AtomicU64,
    rejections: AtomicU64,
    exhaustions: [AtomicU64; ExhaustReason::ALL.len()],
    cancellations: AtomicU64,
    /// Calls whose first attempt succeeded without a `Call` (a host's lazy happy path):
    /// one counter, so that path pays one atomic add; the snapshot folds it into calls,
    /// attempts and successes.
    first_ok: AtomicU64,
}

/// A reading of [`Stats`]. Each counter is read on its own: under concurrent calls the
/// numbers may be a few events apart from one another, never torn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Calls that ended (success, rejected, exhausted or cancelled).
    pub calls: u64,
    /// Attempts that ended (failed or succeeded).
    pub attempts: u64,
    /// Waits started (Retrying events).
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

    /// Counts one event of one call (breaker and hedge events count nothing).
    #[inline]
    pub fn observe(&self, event: &Event<'_>) {
        let bump = |c: &AtomicU64| {
            c.fetch_add(1, Ordering::Relaxed);
        };
        match event.kind {
            EventKind::AttemptFailed => bump(&self.attempts),
            EventKind::Retrying => bump(&self.retries),
            EventKind::Success => {
                bump(&self.attempts);
                bump(&self.successes);
                bump(&self.calls);
            }
            EventKind::Rejected => {
                bump(&self.rejections);
                bump(&self.calls);
            }
            EventKind::Exhausted => {
                if let Some(reason) = event.reason {
                    bump(&self.exhaustions[reason_index(reason)]);
                }
                bump(&self.calls);
            }
            EventKind::Cancelled => {
                bump(&self.cancellations);
                bump(&self.calls);
            }
            EventKind::Hedge | EventKind::BreakerOpened | EventKind::BreakerHalfOpen | EventKind::BreakerClosed => {}
        }
    }

    /// Counts a call whose first attempt succeeded, for a host whose happy path runs
    /// without a [`crate::Call`] (no Success event to observe): what observing that event
    /// would count.
    #[inline]
    pub fn count_first_attempt_success(&self) {
        self.first_ok.fetch_add(1, Ordering::Relaxed);
    }

    /// [`Stats::count_first_attempt_success`] `n` times (a host that tallies them itself
    /// and hands them over when the stats are read).
    #[inline]
    pub fn count_first_attempt_successes(&self, n: u64) {
        self.first_ok.fetch_add(n, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn snapshot(&self) -> StatsSnapshot {
        let read = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let first_ok = read(&self.first_ok);
        StatsSnapshot {
            calls: read(&self.calls) + first_ok,
            attempts: read(&self.attempts) + first_ok,
            retries: read(&self.retries),
            successes: read(&self.successes) + first_ok,
            rejections: read(&self.rejections),
            exhaustions: std::array::from_fn(|i| read(&self.exhaustions[i])),
            cancellations: read(&self.cancellations),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Call, Plan, Proposal, Verdict};
    use crate::policy::{Jitter, Policy};
    use std::time::Duration;

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
        Call::start(&p, ms(0)).cancel(ms(0), sink).unwrap();
        stats.count_first_attempt_success();
        let s = stats.snapshot();
        assert_eq!((s.calls, s.attempts, s.retries), (6, 3 + 3 + 1 + 1 + 1, 2 + 2));
        assert_eq!((s.successes, s.rejections, s.cancellations), (2, 1, 1));
        assert_eq!(s.exhausted(ExhaustReason::Attempts), 1);
        assert_eq!(s.exhausted(ExhaustReason::Stopped), 1);
        assert_eq!(s.exhausted(ExhaustReason::Deadline), 0);
        assert_eq!(s.exhausted_total(), 2);
    }
}
