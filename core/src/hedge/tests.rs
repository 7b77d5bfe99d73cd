//! The hedged call's tests: launches, winners and late results, budgets and the guard,
//! the breaker, the sketch, the knobs' errors.

use super::*;
use std::sync::Arc;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn hedged(h: Hedging) -> Policy {
    Policy::builder().hedge(Some(h)).build().unwrap()
}

/// Under a quota budget a hedge costs what a retry does, and is not sent once the quota
/// cannot pay for it.
#[test]
fn a_quota_pays_for_hedges_as_for_retries() {
    use crate::budget::{QuotaBudget, RetryBudget};
    let quota = std::sync::Arc::new(RetryBudget::from(QuotaBudget::new(7, 5, 10, 1).unwrap()));
    let p = Policy::builder()
        .hedge(Some(Hedging::fixed_ms(3, 10.0).unwrap()))
        .budget(Some(std::sync::Arc::clone(&quota)))
        .build()
        .unwrap();
    let mut sink = |_: &Event<'_>| {};
    let mut call = HedgeCall::start(&p, ms(0));
    assert_eq!(call.poll(ms(0), &mut sink), Ok(Step::Launch(1)));
    assert_eq!(call.poll(ms(10), &mut sink), Ok(Step::Launch(2)));
    assert_eq!(quota.as_quota().unwrap().available(), 2, "the hedge took a retry's cost");
    call.record(1, Verdict::TRANSIENT, ms(11), &mut sink).unwrap();
    let end = call.record(2, Verdict::TRANSIENT, ms(12), &mut sink).unwrap();
    assert!(matches!(end, Step::Stop { stop: Stop::Exhausted(ExhaustReason::Budget), .. }), "{end:?}");
    assert_eq!((call.launched(), quota.as_quota().unwrap().available()), (2, 2));
}

/// A launch asked for by an attempt that timed out is priced as a retry after a
/// timeout (10 here), one asked for by any other failure as a retry (5); a launch by
/// the hedging delay is a plain retry even after a timeout was recorded earlier.
#[test]
fn a_launch_after_a_timed_out_attempt_costs_a_timeouts_price() {
    use crate::budget::{QuotaBudget, RetryBudget};
    for (cause, after_launch) in [(RetryCause::Timeout, 5), (RetryCause::Failure, 10)] {
        let quota = std::sync::Arc::new(RetryBudget::from(QuotaBudget::new(15, 5, 10, 1).unwrap()));
        let p = Policy::builder()
            .hedge(Some(Hedging::fixed_ms(3, 1000.0).unwrap()))
            .budget(Some(std::sync::Arc::clone(&quota)))
            .build()
            .unwrap();
        let mut sink = |_: &Event<'_>| {};
        let mut call = HedgeCall::start(&p, ms(0));
        assert_eq!(call.poll(ms(0), &mut sink), Ok(Step::Launch(1)));
        assert_eq!(call.record_as(1, Verdict::TRANSIENT, cause, ms(5), &mut sink), Ok(Step::Launch(2)));
        assert_eq!(quota.as_quota().unwrap().available(), after_launch, "{cause:?}");
        // Launched by the hedging delay: a retry's price, whatever came before.
        assert_eq!(call.poll(ms(1005), &mut sink), Ok(Step::Launch(3)));
        assert_eq!(quota.as_quota().unwrap().available(), after_launch - 5, "{cause:?}");
    }
}

/// Under a quota budget the attempt a timed-out failure launches is priced as a retry
/// after a timeout (10, not 5); a hedge sent on its timer, or after another failure,
/// as a plain retry; the success gives back what the last launch took.
#[test]
fn a_quota_prices_a_launch_after_a_timeout_as_a_timeouts() {
    use crate::budget::{QuotaBudget, RetryBudget};
    let quota = std::sync::Arc::new(RetryBudget::from(QuotaBudget::new(500, 5, 10, 1).unwrap()));
    let p = Policy::builder()
        .hedge(Some(Hedging::fixed_ms(4, 1000.0).unwrap()))
        .budget(Some(std::sync::Arc::clone(&quota)))
        .build()
        .unwrap();
    let left = || quota.as_quota().unwrap().available();
    let mut sink = |_: &Event<'_>| {};
    let mut call = HedgeCall::start(&p, ms(0));
    assert_eq!(call.poll(ms(0), &mut sink), Ok(Step::Launch(1)));
    assert_eq!(call.record_timeout(1, Verdict::TRANSIENT, ms(100), &mut sink), Ok(Step::Launch(2)));
    assert_eq!(left(), 490, "the launch after a timeout cost 10");
    assert_eq!(call.record(2, Verdict::TRANSIENT, ms(110), &mut sink), Ok(Step::Launch(3)));
    assert_eq!(left(), 485, "after a plain failure, 5");
    assert_eq!(call.poll(ms(1110), &mut sink), Ok(Step::Launch(4)));
    assert_eq!(left(), 480, "a hedge on its timer, 5");
    assert!(matches!(call.record(4, Verdict::Success, ms(1120), &mut sink), Ok(Step::Won { attempt: 4, .. })));
    assert_eq!(left(), 485, "the success gave back the last launch's 5");
    // A permanent verdict recorded as a timeout launches nothing and costs nothing.
    let mut call = HedgeCall::start(&p, ms(0));
    assert_eq!(call.poll(ms(0), &mut sink), Ok(Step::Launch(1)));
    let end = call.record_timeout(1, Verdict::Permanent, ms(5), &mut sink).unwrap();
    assert!(matches!(end, Step::Stop { stop: Stop::Rejected, .. }), "{end:?}");
    assert_eq!(left(), 485);
}

/// A hedged call asks the breaker once, before attempt 1; its outcome counts once,
/// however many attempts it launched; a refused call launches nothing.
#[test]
fn a_hedged_call_is_one_call_to_the_breaker() {
    use crate::breaker::{BreakerConfig, BreakerState, CircuitBreaker};
    let mut cfg = BreakerConfig::consecutive(1);
    cfg.break_duration = ms(1000);
    let breaker = std::sync::Arc::new(CircuitBreaker::new(cfg).unwrap());
    let p = Policy::builder()
        .hedge(Some(Hedging::fixed_ms(3, 10.0).unwrap()))
        .breaker(Some(std::sync::Arc::clone(&breaker)))
        .build()
        .unwrap();
    let log = std::cell::RefCell::new(vec![]);
    let mut sink = |e: &Event<'_>| log.borrow_mut().push((e.kind, e.attempt));
    let mut call = HedgeCall::start_with(&p, ms(0), &mut sink);
    assert_eq!(call.poll(ms(0), &mut sink), Ok(Step::Launch(1)));
    assert_eq!(call.poll(ms(10), &mut sink), Ok(Step::Launch(2)));
    // Two non-fatal failures: the call goes on (one call, not yet counted).
    assert_eq!(call.record(1, Verdict::TRANSIENT, ms(11), &mut sink), Ok(Step::Launch(3)));
    assert_eq!(breaker.state(ms(11)), BreakerState::Closed);
    assert!(matches!(call.poll(ms(11), &mut sink), Ok(Step::Wait(_))));
    call.record(2, Verdict::TRANSIENT, ms(12), &mut sink).unwrap();
    let end = call.record(3, Verdict::TRANSIENT, ms(13), &mut sink).unwrap();
    assert!(matches!(end, Step::Stop { stop: Stop::Exhausted(ExhaustReason::Attempts), .. }), "{end:?}");
    assert_eq!(breaker.state(ms(13)), BreakerState::Open, "one exhausted call opens a 1-failure breaker");
    assert_eq!(log.borrow().last(), Some(&(EventKind::BreakerOpened, 3)));
    assert_eq!(log.borrow().iter().filter(|(k, _)| *k == EventKind::BreakerOpened).count(), 1);
    log.borrow_mut().clear();
    // Open: the next hedged call is refused before it launches anything.
    let mut refused = HedgeCall::start_with(&p, ms(20), &mut sink);
    assert!(refused.refusal().is_some());
    let stop = refused.poll(ms(20), &mut sink).unwrap();
    assert_eq!(stop, Step::Stop { stop: Stop::Exhausted(ExhaustReason::CircuitOpen), cancel: AttemptSet::EMPTY });
    assert_eq!(refused.launched(), 0);
    assert_eq!(*log.borrow(), vec![(EventKind::Exhausted, 0)]);
    log.borrow_mut().clear();
    // After the break, a probe that wins closes it (its losers are cancelled, not counted).
    let mut probe = HedgeCall::start_with(&p, ms(1013), &mut sink);
    assert_eq!(probe.poll(ms(1013), &mut sink), Ok(Step::Launch(1)));
    assert_eq!(probe.poll(ms(1023), &mut sink), Ok(Step::Launch(2)));
    let won = probe.record(2, Verdict::Success, ms(1024), &mut sink).unwrap();
    assert!(matches!(won, Step::Won { attempt: 2, .. }), "{won:?}");
    assert_eq!(breaker.state(ms(1024)), BreakerState::Closed);
    assert_eq!(log.borrow().first(), Some(&(EventKind::BreakerHalfOpen, 0)));
    assert_eq!(log.borrow().last(), Some(&(EventKind::BreakerClosed, 2)));
}

/// Runs `calls` hedged calls 5 ms apart on `p`, every attempt slow (an overloaded
/// server: 100 ms, past the 10 ms hedging delay); returns the attempts launched.
fn overloaded(p: &Policy, calls: u64) -> u64 {
    let none = &mut |_: &Event<'_>| {};
    let mut attempts = 0;
    for i in 0..calls {
        let t0 = ms(5 * i);
        let mut call = HedgeCall::start(p, t0);
        assert_eq!(call.poll(t0, none), Ok(Step::Launch(1)));
        let _ = call.poll(t0 + ms(10), none).unwrap();
        let end = call.record(1, Verdict::Success, t0 + ms(100), none).unwrap();
        assert!(matches!(end, Step::Won { attempt: 1, .. }), "{end:?}");
        attempts += u64::from(call.launched());
    }
    attempts
}

/// Without a budget the default guard holds hedges to about 10% of the calls (plus its
/// reserve of one a second) when every attempt is slow; without the guard each call
/// doubles. Over 20 s of calls the window slides: the share holds throughout.
#[test]
fn the_default_guard_holds_an_overloads_extra_attempts_to_about_ten_percent() {
    let guarded = hedged(Hedging::fixed_ms(2, 10.0).unwrap());
    let extra = overloaded(&guarded, 4000) - 4000;
    assert!((300..=800).contains(&extra), "{extra} extra attempts for 4000 calls (at most 20%)");
    let open = hedged(Hedging::fixed_ms(2, 10.0).unwrap().without_guard());
    assert_eq!(overloaded(&open, 4000), 8000, "no guard: every call hedged");
    // A budget replaces the guard.
    let budget = Arc::new(crate::budget::RetryBudget::new(1000.0, 1.0).unwrap());
    let p = Policy::builder().hedge(Some(Hedging::fixed_ms(2, 10.0).unwrap())).budget(Some(budget)).build().unwrap();
    assert_eq!(overloaded(&p, 100), 200, "each success pays back the hedge's token");
}

/// A6 throttling: hedges are gated on tokens > max/2 and spend nothing (A6's example
/// bucket, nothing failing: 60 hedges of 60 calls); a native policy with the same
/// bucket pays for each hedge, so the bucket runs dry after a few.
#[test]
fn a6_hedges_are_gated_not_paid_while_native_hedges_pay() {
    let run = |h: Hedging| {
        let budget = Arc::new(crate::budget::RetryBudget::new(10.0, 0.1).unwrap());
        let p = Policy::builder().hedge(Some(h)).budget(Some(Arc::clone(&budget))).build().unwrap();
        (overloaded(&p, 60) - 60, budget.tokens())
    };
    assert_eq!(run(Hedging::fixed_ms(2, 10.0).unwrap().with_a6_throttling()), (60, 10.0));
    let (native, _) = run(Hedging::fixed_ms(2, 10.0).unwrap());
    assert_eq!(native, 11, "paid for: the bucket falls to half after 11 hedges of 60");
    // Gated: below half, no hedge, and a failure still spends.
    let budget = Arc::new(crate::budget::RetryBudget::new(10.0, 0.1).unwrap());
    (0..5).for_each(|_| budget.record_failure());
    let p = Policy::builder()
        .hedge(Some(Hedging::fixed_ms(2, 10.0).unwrap().with_a6_throttling()))
        .budget(Some(Arc::clone(&budget)))
        .build()
        .unwrap();
    assert_eq!(overloaded(&p, 1), 1, "5 tokens of 10: not above half");
    assert_eq!(overloaded(&p, 1), 2, "its success added 0.1: 5.1 is above half");
}

/// "Don't retry" pushback: a failure (a token), no new hedge, the others finish.
#[test]
fn dont_retry_stops_new_hedges_and_lets_the_others_finish() {
    let budget = Arc::new(crate::budget::RetryBudget::new(10.0, 0.1).unwrap());
    let h = Hedging::fixed_ms(3, 50.0).unwrap().with_a6_throttling();
    let p = Policy::builder().hedge(Some(h)).budget(Some(Arc::clone(&budget))).build().unwrap();
    let none = &mut |_: &Event<'_>| {};
    let mut call = HedgeCall::start(&p, ms(0));
    assert_eq!(call.poll(ms(0), none), Ok(Step::Launch(1)));
    assert_eq!(call.poll(ms(50), none), Ok(Step::Launch(2)));
    assert_eq!(call.record(2, Verdict::DontRetry, ms(60), none), Ok(Step::Wait(Some(ms(15_001)))));
    assert_eq!(budget.tokens(), 9.0);
    assert_eq!(call.poll(ms(100), none), Ok(Step::Wait(Some(ms(15_001)))), "no hedge at 100 ms");
    assert!(matches!(call.record(1, Verdict::Success, ms(200), none), Ok(Step::Won { attempt: 1, .. })));
    assert_eq!(call.launched(), 2);
}

#[test]
fn with_max_attempts_keeps_the_guard_and_the_throttling_rule() {
    let h = Hedging::fixed_ms(3, 5.0).unwrap().with_a6_throttling();
    let two = h.with_max_attempts(2).unwrap();
    assert_eq!((two.max_attempts(), two.a6_throttling()), (2, true));
    assert!(Arc::ptr_eq(h.guard().unwrap(), two.guard().unwrap()), "one guard for both");
    assert_eq!(h.with_max_attempts(6).unwrap_err().field, "max_attempts");
}

#[test]
fn a_policy_without_hedging_is_one_attempt_and_no_hedge() {
    let p = Policy::default();
    let none = &mut |_: &Event<'_>| {};
    let mut call = HedgeCall::start(&p, ms(0));
    assert_eq!(call.poll(ms(0), none), Ok(Step::Launch(1)));
    assert_eq!(call.poll(ms(0), none), Ok(Step::Wait(Some(ms(15_001)))), "only the deadline wakes it");
    let d = call.record(1, Verdict::TRANSIENT, ms(5), none);
    assert_eq!(d, Ok(Step::Stop { stop: Stop::Exhausted(ExhaustReason::Attempts), cancel: AttemptSet::EMPTY }));
}

#[test]
fn misuse_is_reported_and_late_results_are_dropped() {
    let p = hedged(Hedging::fixed_ms(3, 10.0).unwrap());
    let none = &mut |_: &Event<'_>| {};
    let mut call = HedgeCall::start(&p, ms(0));
    assert!(call.record(1, Verdict::Success, ms(0), none).is_err(), "attempt 1 was not launched");
    assert_eq!(call.poll(ms(0), none), Ok(Step::Launch(1)));
    assert_eq!(call.poll(ms(10), none), Ok(Step::Launch(2)));
    assert_eq!(call.remaining(2, ms(15)), Ok(Some(ms(14_985))));
    assert!(call.record(0, Verdict::Success, ms(11), none).is_err());
    assert!(call.record(3, Verdict::Success, ms(11), none).is_err());
    let won = call.record(2, Verdict::Success, ms(12), none).unwrap();
    let cancel = match won {
        Step::Won { attempt: 2, cancel } => cancel,
        other => panic!("{other:?}"),
    };
    assert_eq!(cancel.iter().collect::<Vec<_>>(), [1]);
    assert_eq!((cancel.len(), cancel.bits(), cancel.contains(1), cancel.contains(2)), (1, 1, true, false));
    assert_eq!(call.record(1, Verdict::Permanent, ms(20), none), Ok(Step::Dropped));
    assert_eq!(call.outcome(), Some(Stop::Success));
    assert_eq!(call.poll(ms(20), none), Err(StateError::Ended));
    assert!(call.remaining(1, ms(20)).is_err());
    assert_eq!(call.cancel(ms(20), none), Err(StateError::Ended));
}

#[test]
fn cancel_hands_back_every_attempt_in_flight() {
    let p = hedged(Hedging::fixed_ms(3, 0.0).unwrap());
    let mut log = vec![];
    let mut sink = |e: &Event<'_>| log.push((e.kind, e.attempt));
    let mut call = HedgeCall::start(&p, ms(0));
    for k in 1..=3 {
        assert_eq!(call.poll(ms(0), &mut sink), Ok(Step::Launch(k)));
    }
    assert_eq!(call.cancel(ms(7), &mut sink).map(|s| s.bits()), Ok(0b111));
    assert_eq!(call.outcome(), Some(Stop::Cancelled));
    assert_eq!(log.last(), Some(&(EventKind::Cancelled, 3)));
}

#[test]
fn the_sketch_keeps_its_window_and_answers_by_nearest_rank_across_threads() {
    let sketch = Arc::new(LatencySketch::new(0.95, 100).unwrap());
    assert_eq!(sketch.estimate(), None);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let s = Arc::clone(&sketch);
            std::thread::spawn(move || (0..500).for_each(|i| s.record(ms((i + t) % 100 + 1))))
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(sketch.len(), 100, "bounded by its window");
    let sketch = LatencySketch::new(0.95, 1000).unwrap();
    for i in 1..=100 {
        sketch.record(ms(i));
    }
    assert_eq!(sketch.estimate(), Some(ms(95)));
    sketch.record(ms(1000));
    assert_eq!(sketch.estimate(), Some(ms(96)), "ceil(0.95 * 101) = 96th smallest");
    assert!(LatencySketch::new(1.0, 10).is_err() && LatencySketch::new(0.5, 0).is_err());
}

#[test]
fn only_a_hedging_policy_is_refused_by_one_at_a_time_calls() {
    assert_eq!(one_at_a_time_refusal(&Policy::default()), None);
    let p = Policy::builder().name("rates").hedge(Some(Hedging::fixed_ms(2, 5.0).unwrap())).build().unwrap();
    let why = one_at_a_time_refusal(&p).unwrap();
    assert!(why.starts_with("rates: this policy hedges"), "{why}");
}

#[test]
fn bad_hedging_knobs_name_the_field() {
    assert_eq!(Hedging::fixed_ms(6, 1.0).unwrap_err().field, "max_attempts");
    assert_eq!(Hedging::fixed_ms(0, 1.0).unwrap_err().field, "max_attempts");
    assert_eq!(Hedging::fixed_ms(2, f64::NAN).unwrap_err().field, "delay");
    assert_eq!(Hedging::adaptive_ms(2, 0.95, 10.0, 5.0).unwrap_err().field, "ceiling");
    assert_eq!(Hedging::adaptive_ms(2, 0.0, 1.0, 5.0).unwrap_err().field, "quantile");
    let err = Hedging::fixed_ms(9, 1.0).unwrap_err().to_string();
    assert_eq!(err, "max_attempts must be >= 1 and <= 5 (gRPC A6's cap), got 9");
}
