//! The lazy and coarse starts' tests: which policies start lazily or on the coarse clock,
//! the deadline measured from the call's start, virtual time, successes counted across
//! threads.

use super::*;
use crate::breaker::{BreakerConfig, BreakerState};
use crate::event::ExhaustReason;
use crate::policy::Jitter;

fn open_breaker() -> Arc<CircuitBreaker> {
    let breaker = Arc::new(CircuitBreaker::new(BreakerConfig::consecutive(1)).unwrap());
    let admission = breaker.admit(SystemClock.now(), &mut |_| {});
    breaker.record(admission, true, SystemClock.now(), &mut |_| {});
    assert_eq!(breaker.state(SystemClock.now()), BreakerState::Open);
    breaker
}

#[test]
fn a_policy_given_a_breaker_after_it_was_built_does_not_start_lazily() {
    let lazy = Policy::builder().deadline(None).build().unwrap();
    assert!(Retrier::new(lazy.clone()).lazy, "nothing to tell or bound: a lazy start");
    // The retrier reads the flag from the policy it is given: the one with the breaker
    // asks it first, so the open breaker refuses the call before any attempt.
    let guarded = Retrier::new(lazy.with_breaker(Some(open_breaker())));
    let calls = Cell::new(0);
    let got = guarded.run(
        |_: &Attempt| {
            calls.set(calls.get() + 1);
            Ok::<_, ()>(1)
        },
        |_| Verdict::TRANSIENT,
    );
    assert!(matches!(got, Err(RetryError::Exhausted { attempts: 0, reason: ExhaustReason::CircuitOpen, .. })));
    assert_eq!(calls.get(), 0);
    // And the breaker taken away again starts lazily.
    assert!(Retrier::new(guarded.policy().with_breaker(None)).lazy);
}

#[test]
fn only_a_policy_bounded_in_whole_seconds_with_nothing_to_ask_starts_on_the_coarse_clock() {
    let default = Policy::builder().build().unwrap();
    assert!(Retrier::new(default.clone()).coarse, "the default policy: 15 s deadline");
    assert!(!Retrier::new(Policy::builder().deadline(None).build().unwrap()).coarse, "untimed: lazy instead");
    let short = Policy::builder().attempt_timeout(Some(Duration::from_millis(999))).build().unwrap();
    assert!(!Retrier::new(short).coarse, "a bound under a second needs the fine clock");
    assert!(!Retrier::new(default.with_breaker(Some(open_breaker()))).coarse, "a breaker is asked first");
    let budget = Arc::new(crate::budget::RetryBudget::new(10.0, 0.1).unwrap());
    assert!(!Retrier::new(Policy::builder().budget(Some(budget)).build().unwrap()).coarse, "a budget is told");
}

#[test]
fn a_coarse_start_measures_the_deadline_from_the_calls_start() {
    // Attempt 1 runs before the engine starts, and takes 300 ms to fail: attempt 2's
    // bound is what is left of the 2 s deadline since the call began (the coarse
    // clock's lag less), not 2 s from the failure.
    let retrier = Retrier::new(
        Policy::builder()
            .deadline(Some(Duration::from_secs(2)))
            .initial_delay(Duration::ZERO)
            .jitter(Jitter::None)
            .build()
            .unwrap(),
    );
    assert!(retrier.coarse);
    let mut seen = vec![];
    let before = SystemClock.now();
    let got = retrier.run(
        |a: &Attempt| {
            seen.push(*a);
            if a.number == 1 {
                std::thread::sleep(Duration::from_millis(300));
                Err("503")
            } else {
                Ok(a.number)
            }
        },
        |_| Verdict::TRANSIENT,
    );
    let after = SystemClock.now();
    assert_eq!(got.unwrap(), 2);
    let (first, second) = (seen[0], seen[1]);
    assert_eq!(first.remaining, Some(Duration::from_secs(2)));
    // Attempt 1's deadline on the real clock's time base, from a start read during the
    // call, the coarse clock's lag behind: usually under a tick (10 ms at most), a few
    // ticks on a loaded machine (11 ms measured), far less than attempt 1's 300 ms.
    let end = first.deadline.unwrap();
    assert!(end <= after + Duration::from_secs(2), "{end:?} vs {after:?}");
    assert!(end + Duration::from_millis(50) >= before + Duration::from_secs(2), "{end:?} vs {before:?}");
    assert_eq!(second.deadline, first.deadline, "one deadline for the whole call");
    let left = second.remaining.unwrap();
    assert!(left <= Duration::from_millis(1700), "{left:?}");
    assert!(left + (after - before) >= Duration::from_secs(2) - Duration::from_millis(10), "{left:?}");
    let stats = retrier.stats();
    assert_eq!((stats.calls, stats.attempts, stats.retries, stats.successes), (1, 2, 1, 1));
    // The happy path is counted too.
    let got = retrier.run(|a: &Attempt| Ok::<_, ()>(a.number), |_| Verdict::TRANSIENT);
    assert_eq!(got.unwrap(), 1);
    let stats = retrier.stats();
    assert_eq!((stats.calls, stats.attempts, stats.successes), (2, 3, 2));
}

#[test]
fn under_virtual_time_a_bounded_call_starts_on_the_virtual_clock() {
    // The coarse start reads the real clock: under the testing switch the call starts
    // as usual, on the virtual clock, so its deadline is virtual time too.
    let scope = crate::clock::testing::scoped();
    scope.clock().advance(Duration::from_secs(5));
    let retrier = Retrier::new(Policy::builder().build().unwrap());
    let got = retrier.run(|a: &Attempt| Ok::<_, ()>(*a), |_| Verdict::TRANSIENT);
    let first = got.unwrap();
    assert_eq!(first.deadline, Some(Duration::from_secs(20)), "5 s of virtual time plus the 15 s deadline");
    assert_eq!(first.remaining, Some(Duration::from_secs(15)));
}

#[test]
fn lazy_successes_on_many_threads_are_all_counted() {
    // More threads than stats slots (those with a slot count in its cells, the rest in
    // the shared ones), some alive at once and some after others have exited, each
    // counting lazy successes and failures.
    let retrier = Retrier::new(
        Policy::builder().deadline(None).initial_delay(Duration::ZERO).jitter(Jitter::None).build().unwrap(),
    );
    let (threads, calls) = (48u64, 500u64);
    for wave in 0..3 {
        std::thread::scope(|s| {
            for _ in 0..threads / 3 {
                s.spawn(|| {
                    for i in 0..calls {
                        let fails = u32::from(i % 10 == 0);
                        let got = retrier.run(
                            |a: &Attempt| if a.number <= fails { Err(()) } else { Ok(a.number) },
                            |_| Verdict::TRANSIENT,
                        );
                        assert_eq!(got.ok(), Some(fails + 1));
                    }
                });
            }
        });
        let done = (wave + 1) * threads / 3 * calls;
        let s = retrier.stats();
        assert_eq!((s.calls, s.successes), (done, done), "after wave {wave}");
        assert_eq!((s.attempts, s.retries), (done + done / 10, done / 10), "after wave {wave}");
    }
}
