//! The engine's tests: one call's decisions step by step (waits and hints, the deadline and
//! the attempt timeout, the budget, a hook's exact wait or stop, events, misuse).

use super::*;
use crate::budget::RetryBudget;
use crate::policy::Jitter;
use std::sync::Arc;

fn no_jitter(attempts: u64) -> Policy {
    Policy::builder()
        .max_attempts(attempts)
        .initial_delay_ms(100.0)
        .max_delay_ms(1000.0)
        .jitter(Jitter::None)
        .deadline_ms(Some(60_000.0))
        .build()
        .unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn kinds(events: &[(EventKind, u32)]) -> Vec<String> {
    events.iter().map(|(k, n)| format!("{k}:{n}")).collect()
}

#[test]
fn two_failures_then_success_wait_100_then_200() {
    let p = no_jitter(6);
    let mut log = vec![];
    let mut sink = |e: &Event<'_>| log.push((e.kind, e.attempt));
    let mut call = Call::start(&p, ms(0));
    assert_eq!(call.record(Verdict::TRANSIENT, ms(0), &mut sink), Ok(Decision::Retry(ms(100))));
    assert_eq!(call.after_wait(ms(100), &mut sink), Ok(Resume::Attempt(2)));
    assert_eq!(call.record(Verdict::TRANSIENT, ms(100), &mut sink), Ok(Decision::Retry(ms(200))));
    assert_eq!(call.after_wait(ms(300), &mut sink), Ok(Resume::Attempt(3)));
    assert_eq!(call.record(Verdict::Success, ms(300), &mut sink), Ok(Decision::Stop(Stop::Success)));
    assert_eq!(call.outcome(), Some(Stop::Success));
    assert_eq!(kinds(&log), ["attempt_failed:1", "retrying:1", "attempt_failed:2", "retrying:2", "success:3"]);
}

#[test]
fn permanent_is_rejected_even_on_the_last_attempt() {
    let p = no_jitter(1);
    let mut log = vec![];
    let mut call = Call::start(&p, ms(0));
    let d = call.record(Verdict::Permanent, ms(5), &mut |e: &Event<'_>| log.push((e.kind, e.attempt)));
    assert_eq!(d, Ok(Decision::Stop(Stop::Rejected)));
    assert_eq!(kinds(&log), ["attempt_failed:1", "rejected:1"]);
}

#[test]
fn hint_wins_when_longer_and_is_rounded_up() {
    let p = no_jitter(5);
    let mut call = Call::start(&p, ms(0));
    let hint = Some(Duration::from_micros(5_000_001));
    assert_eq!(call.record(Verdict::Transient { hint }, ms(0), &mut |_: &Event<'_>| {}), Ok(Decision::Retry(ms(5001))));
    let mut call = Call::start(&p, ms(0));
    let short = Some(ms(10));
    assert_eq!(
        call.record(Verdict::Transient { hint: short }, ms(0), &mut |_: &Event<'_>| {}),
        Ok(Decision::Retry(ms(100)))
    );
}

#[test]
fn deadline_refuses_a_wait_that_cannot_finish_and_rechecks_after() {
    let p = Policy::builder()
        .max_attempts(10)
        .initial_delay_ms(1000.0)
        .max_delay_ms(8000.0)
        .jitter(Jitter::None)
        .deadline_ms(Some(5000.0))
        .build()
        .unwrap();
    let mut reasons = vec![];
    let mut sink = |e: &Event<'_>| reasons.push(e.reason);
    let mut call = Call::start(&p, ms(0));
    assert_eq!(call.record(Verdict::TRANSIENT, ms(0), &mut sink), Ok(Decision::Retry(ms(1000))));
    call.after_wait(ms(1000), &mut sink).unwrap();
    assert_eq!(call.record(Verdict::TRANSIENT, ms(1000), &mut sink), Ok(Decision::Retry(ms(2000))));
    call.after_wait(ms(3000), &mut sink).unwrap();
    let d = call.record(Verdict::TRANSIENT, ms(3000), &mut sink);
    assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
    assert_eq!(call.attempt(), 3);
    assert_eq!(reasons.last(), Some(&Some(ExhaustReason::Deadline)));

    // A wait that overran the deadline ends the call without another attempt.
    let mut call = Call::start(&p, ms(0));
    call.record(Verdict::TRANSIENT, ms(3000), &mut |_: &Event<'_>| {}).unwrap();
    let r = call.after_wait(ms(5001), &mut |_: &Event<'_>| {});
    assert_eq!(r, Ok(Resume::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
}

#[test]
fn budget_stops_retries_once_half_spent() {
    let budget = Arc::new(RetryBudget::new(4.0, 1.0).unwrap());
    let p = Policy::builder().jitter(Jitter::None).budget(Some(budget.clone())).build().unwrap();
    let mut call = Call::start(&p, ms(0));
    let none = &mut |_: &Event<'_>| {};
    assert!(matches!(call.record(Verdict::TRANSIENT, ms(0), none), Ok(Decision::Retry(_))));
    call.after_wait(ms(200), none).unwrap();
    let d = call.record(Verdict::TRANSIENT, ms(200), none);
    assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Budget))));
    assert_eq!(budget.tokens(), 2.0);
}

#[test]
fn a_hint_over_max_retry_after_ends_the_call_without_a_wait() {
    let p = Policy::builder().jitter(Jitter::None).max_retry_after_ms(Some(1000.0)).build().unwrap();
    let mut reasons = vec![];
    let mut call = Call::start(&p, ms(0));
    let over = Verdict::Transient { hint: Some(ms(1001)) };
    let d = call.record(over, ms(7), &mut |e: &Event<'_>| reasons.push((e.kind, e.reason)));
    assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::RetryAfter))));
    assert_eq!(reasons, [(EventKind::AttemptFailed, None), (EventKind::Exhausted, Some(ExhaustReason::RetryAfter))]);
    // Exactly the limit is accepted; on the last attempt the reason stays attempts.
    let mut call = Call::start(&p, ms(0));
    let at = Verdict::Transient { hint: Some(ms(1000)) };
    assert_eq!(call.record(at, ms(0), &mut |_: &Event<'_>| {}), Ok(Decision::Retry(ms(1000))));
    let last = Policy::builder().max_attempts(1).max_retry_after_ms(Some(1000.0)).build().unwrap();
    let mut call = Call::start(&last, ms(0));
    let d = call.record(over, ms(0), &mut |_: &Event<'_>| {});
    assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Attempts))));
    // Off: any hint is waited out (the deadline, off here too, would bound it).
    let off = Policy::builder().jitter(Jitter::None).deadline(None).max_retry_after(None).build().unwrap();
    let mut call = Call::start(&off, ms(0));
    let day = Verdict::Transient { hint: Some(Duration::from_secs(86_400)) };
    assert_eq!(call.record(day, ms(0), &mut |_: &Event<'_>| {}), Ok(Decision::Retry(Duration::from_secs(86_400))));
}

#[test]
fn an_attempt_that_overruns_the_deadline_ends_the_call_with_reason_deadline() {
    let p = Policy::builder()
        .max_attempts(3)
        .jitter(Jitter::None)
        .initial_delay_ms(0.0)
        .deadline_ms(Some(1000.0))
        .max_retry_after_ms(Some(10.0))
        .build()
        .unwrap();
    let mut log = vec![];
    let mut call = Call::start(&p, ms(100));
    assert_eq!(call.remaining(ms(100)), Ok(Some(ms(1000))));
    // A time before the call's start: the bound itself, not more.
    assert_eq!(call.remaining(ms(0)), Ok(Some(ms(1000))));
    assert_eq!(call.remaining(ms(700)), Ok(Some(ms(400))));
    assert_eq!(call.remaining(ms(5000)), Ok(Some(Duration::ZERO)));
    // Failed 1 ms past the deadline, with a zero delay and attempts left: deadline,
    // recorded like any failure (AttemptFailed first).
    let d = call.record(Verdict::TRANSIENT, ms(1101), &mut |e: &Event<'_>| log.push((e.kind, e.reason)));
    assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
    assert_eq!(log, [(EventKind::AttemptFailed, None), (EventKind::Exhausted, Some(ExhaustReason::Deadline))]);
    assert!(call.remaining(ms(1101)).is_err(), "no attempt in progress");
    // Exactly at the deadline is still in time: a zero wait is allowed.
    let mut call = Call::start(&p, ms(100));
    assert_eq!(call.record(Verdict::TRANSIENT, ms(1100), &mut |_: &Event<'_>| {}), Ok(Decision::Retry(ms(0))));
    assert_eq!(call.after_wait(ms(1100), &mut |_: &Event<'_>| {}), Ok(Resume::Attempt(2)));
    assert_eq!(call.remaining(ms(1100)), Ok(Some(Duration::ZERO)));
    // On the last attempt, and with a hint over max_retry_after, the reason is still
    // deadline: the deadline is what cut the call short.
    let last = Policy::builder().max_attempts(1).deadline_ms(Some(1000.0)).build().unwrap();
    let mut call = Call::start(&last, ms(0));
    let d = call.record(Verdict::TRANSIENT, ms(1001), &mut |_: &Event<'_>| {});
    assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
    let mut call = Call::start(&p, ms(0));
    let d = call.record(Verdict::Transient { hint: Some(ms(60_000)) }, ms(1001), &mut |_: &Event<'_>| {});
    assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
    // A late success is a success; a late permanent failure is rejected.
    let mut call = Call::start(&last, ms(0));
    assert_eq!(call.record(Verdict::Success, ms(9000), &mut |_: &Event<'_>| {}), Ok(Decision::Stop(Stop::Success)));
    let mut call = Call::start(&p, ms(0));
    assert_eq!(call.record(Verdict::Permanent, ms(9000), &mut |_: &Event<'_>| {}), Ok(Decision::Stop(Stop::Rejected)));
}

#[test]
fn the_attempt_timeout_restarts_with_each_attempt_and_the_deadline_caps_it() {
    let p = Policy::builder()
        .jitter(Jitter::None)
        .initial_delay_ms(100.0)
        .deadline_ms(Some(1000.0))
        .attempt_timeout_ms(Some(300.0))
        .build()
        .unwrap();
    let none = &mut |_: &Event<'_>| {};
    let mut call = Call::start(&p, ms(0));
    assert_eq!(call.attempt_deadline(), Ok(Some(ms(300))));
    assert_eq!(call.remaining(ms(250)), Ok(Some(ms(50))));
    // The attempt timed out at its bound: a transient failure like any other.
    assert_eq!(call.record(Verdict::TRANSIENT, ms(300), none), Ok(Decision::Retry(ms(100))));
    assert_eq!(call.attempt_deadline(), Err(StateError::NoAttempt("waiting")));
    call.after_wait(ms(400), none).unwrap();
    assert_eq!(call.remaining(ms(400)), Ok(Some(ms(300))));
    call.record(Verdict::TRANSIENT, ms(700), none).unwrap();
    call.after_wait(ms(900), none).unwrap();
    // 100 ms to the deadline, smaller than the timeout.
    assert_eq!(call.remaining(ms(900)), Ok(Some(ms(100))));
    // Attempt timeout alone.
    let alone = Policy::builder().deadline(None).attempt_timeout_ms(Some(50.0)).build().unwrap();
    let call = Call::start(&alone, ms(10));
    assert_eq!(call.remaining(ms(10)), Ok(Some(ms(50))));
    let off = Policy::builder().deadline(None).build().unwrap();
    assert_eq!(Call::start(&off, ms(10)).remaining(ms(10)), Ok(None));
}

#[test]
fn the_default_max_retry_after_is_60_s() {
    assert_eq!(Policy::default().max_retry_after(), Some(Duration::from_secs(60)));
}

#[test]
fn misuse_is_reported_not_guessed() {
    let p = no_jitter(3);
    let none = &mut |_: &Event<'_>| {};
    let mut call = Call::start(&p, ms(0));
    assert!(call.after_wait(ms(0), none).is_err());
    call.record(Verdict::TRANSIENT, ms(0), none).unwrap();
    assert!(matches!(call.record(Verdict::Success, ms(0), none), Err(StateError::NotAttempting("waiting"))));
    assert_eq!(call.cancel(ms(1), none), Ok(Stop::Cancelled));
    assert_eq!(call.cancel(ms(1), none), Err(StateError::Ended));
    assert!(call.after_wait(ms(0), none).is_err());
}

/// "Don't retry" pushback ends a retrying call at once, exhausted (retry_after), and
/// counts as a failure: the budget loses a token.
#[test]
fn dont_retry_ends_the_call_and_spends_a_token() {
    let budget = std::sync::Arc::new(crate::budget::RetryBudget::new(10.0, 0.1).unwrap());
    let p = Policy::builder().budget(Some(std::sync::Arc::clone(&budget))).build().unwrap();
    let mut log = vec![];
    let mut call = Call::start(&p, ms(0));
    let d = call.record(Verdict::DontRetry, ms(5), &mut |e: &Event<'_>| log.push((e.kind, e.reason)));
    assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::RetryAfter))));
    assert_eq!(log, [(EventKind::AttemptFailed, None), (EventKind::Exhausted, Some(ExhaustReason::RetryAfter))]);
    assert_eq!(budget.tokens(), 9.0);
    assert!(Verdict::DontRetry.is_counted_failure() && !Verdict::Permanent.is_counted_failure());
}

#[test]
fn host_hints_in_ms() {
    assert_eq!(Verdict::transient_ms(None), Verdict::TRANSIENT);
    assert_eq!(Verdict::transient_ms(Some(f64::NAN)), Verdict::TRANSIENT);
    assert_eq!(Verdict::transient_ms(Some(-1.0)), Verdict::TRANSIENT);
    assert_eq!(Verdict::transient_ms(Some(1234.0)), Verdict::Transient { hint: Some(ms(1234)) });
    assert_eq!(Verdict::transient_ms(Some(f64::INFINITY)), Verdict::Transient { hint: Some(Duration::MAX) });
    // A saturated hint is a wait no deadline allows, and no overflow either.
    let p = Policy::builder().max_attempts(3).max_retry_after(None).deadline_ms(Some(60_000.0)).build().unwrap();
    let mut call = Call::start(&p, ms(0));
    let d = call.record(Verdict::transient_ms(Some(1e300)), ms(0), &mut |_: &Event<'_>| {});
    assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
}

#[test]
fn a_huge_hint_without_limits_waits_the_longest_wait_and_no_longer() {
    // No deadline, no max_retry_after: nothing refuses the hint, and the wait is the
    // documented maximum, not u64::MAX ms (a caller's `now + delay` would wrap).
    let p = Policy::builder().jitter(Jitter::None).max_retry_after(None).deadline(None).build().unwrap();
    for hint in [f64::INFINITY, 1e300, u64::MAX as f64, 9.0e15 + 1.0, 1e16] {
        let mut call = Call::start(&p, ms(0));
        let mut seen = None;
        let d = call.record(Verdict::transient_ms(Some(hint)), ms(0), &mut |e: &Event<'_>| {
            if e.kind == EventKind::Retrying {
                seen = e.delay;
            }
        });
        assert_eq!(d, Ok(Decision::Retry(ms(MAX_WAIT_MS))), "hint {hint}");
        assert_eq!(seen, Some(ms(MAX_WAIT_MS)), "the event reports the clamped wait");
    }
    let mut call = Call::start(&p, ms(0));
    let d = call.record(Verdict::transient_ms(Some(9.0e15 - 1.0)), ms(0), &mut |_: &Event<'_>| {});
    assert_eq!(d, Ok(Decision::Retry(ms(MAX_WAIT_MS - 1))), "a hint below the maximum is kept");
    assert_eq!(MAX_WAIT_MS, crate::knob::MAX_MS as u64);
}

fn wait(call: &mut Call<&Policy>, now: u64, log: &mut Vec<(EventKind, Option<ExhaustReason>)>) -> Duration {
    match call.propose(Verdict::TRANSIENT, ms(now), &mut |e: &Event<'_>| log.push((e.kind, e.reason))) {
        Ok(Proposal::Wait { delay, .. }) => delay,
        other => panic!("expected a proposed wait, got {other:?}"),
    }
}

#[test]
fn an_exact_wait_replaces_the_computed_one_and_the_limits_still_apply() {
    let p = Policy::builder()
        .max_attempts(4)
        .initial_delay_ms(100.0)
        .jitter(Jitter::None)
        .deadline_ms(Some(1000.0))
        .max_retry_after_ms(Some(500.0))
        .build()
        .unwrap();
    let mut log = vec![];
    let mut call = Call::start(&p, ms(0));
    assert_eq!(
        call.propose(Verdict::Transient { hint: Some(ms(150)) }, ms(0), &mut |_: &Event<'_>| {}),
        Ok(Proposal::Wait { delay: ms(150), attempt: 1, retries_left: 3, hint: Some(ms(150)) })
    );
    // Exact: not raised to the hint, rounded up to whole milliseconds.
    let d = call.settle(Plan::Exact(Duration::from_micros(7_001)), ms(0), &mut |e: &Event<'_>| {
        log.push((e.kind, e.reason));
        assert_eq!(e.delay, Some(ms(8)), "Retrying reports the final wait");
    });
    assert_eq!(d, Ok(Decision::Retry(ms(8))));
    assert_eq!(log, [(EventKind::Retrying, None)]);
    call.after_wait(ms(8), &mut |_: &Event<'_>| {}).unwrap();
    // Over max_retry_after: retry_after, as a hint would.
    log.clear();
    wait(&mut call, 8, &mut log);
    assert_eq!(
        call.settle(Plan::Exact(ms(501)), ms(8), &mut |e: &Event<'_>| log.push((e.kind, e.reason))),
        Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::RetryAfter)))
    );
    assert_eq!(log, [(EventKind::AttemptFailed, None), (EventKind::Exhausted, Some(ExhaustReason::RetryAfter))]);
    // Past the deadline: deadline, even when the computed wait would have fit.
    let mut call = Call::start(&p, ms(0));
    assert_eq!(wait(&mut call, 200, &mut log), ms(100));
    let d = call.settle(Plan::Exact(ms(450)), ms(600), &mut |_: &Event<'_>| {});
    assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
    // A deadline that passed while the hook ran: deadline, whatever the plan.
    let mut call = Call::start(&p, ms(0));
    wait(&mut call, 0, &mut log);
    let d = call.settle(Plan::Engine, ms(1001), &mut |_: &Event<'_>| {});
    assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Deadline))));
    // Off: a huge exact wait is clamped to the longest wait.
    let off = Policy::builder().max_retry_after(None).deadline(None).build().unwrap();
    let mut call = Call::start(&off, ms(0));
    call.propose(Verdict::TRANSIENT, ms(0), &mut |_: &Event<'_>| {}).unwrap();
    assert_eq!(
        call.settle(Plan::Exact(Duration::MAX), ms(0), &mut |_: &Event<'_>| {}),
        Ok(Decision::Retry(ms(MAX_WAIT_MS)))
    );
}

#[test]
fn a_stopped_call_keeps_its_attempts_and_takes_no_token() {
    let budget = Arc::new(RetryBudget::new(10.0, 1.0).unwrap());
    let p = Policy::builder().max_attempts(5).budget(Some(budget.clone())).build().unwrap();
    let mut log = vec![];
    let mut call = Call::start(&p, ms(0));
    let d = wait(&mut call, 0, &mut log);
    assert_eq!(call.settle(Plan::Engine, ms(0), &mut |_: &Event<'_>| {}), Ok(Decision::Retry(d)));
    call.after_wait(d, &mut |_: &Event<'_>| {}).unwrap();
    log.clear();
    wait(&mut call, 1000, &mut log);
    let tokens = budget.tokens(); // the failure's cost is taken in propose
    let mut retries = vec![];
    let d = call.settle(Plan::Stop, ms(1000), &mut |e: &Event<'_>| {
        log.push((e.kind, e.reason));
        retries.push((e.attempt, e.retries_left));
    });
    assert_eq!(d, Ok(Decision::Stop(Stop::Exhausted(ExhaustReason::Stopped))));
    assert_eq!(log, [(EventKind::AttemptFailed, None), (EventKind::Exhausted, Some(ExhaustReason::Stopped))]);
    assert_eq!(retries, [(2, 3)]);
    assert_eq!(call.attempt(), 2);
    assert_eq!(budget.tokens(), tokens, "no token drawn for a stopped call");
}

#[test]
fn propose_stops_exactly_as_record_would_and_settle_is_refused_out_of_turn() {
    let p = no_jitter(2);
    let none = &mut |_: &Event<'_>| {};
    let mut call = Call::start(&p, ms(0));
    assert!(matches!(call.settle(Plan::Engine, ms(0), none), Err(StateError::NotProposed("attempting"))));
    assert_eq!(call.propose(Verdict::Success, ms(0), none), Ok(Proposal::Stop(Stop::Success)));
    let mut call = Call::start(&p, ms(0));
    assert_eq!(call.propose(Verdict::Permanent, ms(0), none), Ok(Proposal::Stop(Stop::Rejected)));
    let mut call = Call::start(&p, ms(0));
    call.record(Verdict::TRANSIENT, ms(0), none).unwrap();
    call.after_wait(ms(100), none).unwrap();
    assert_eq!(
        call.propose(Verdict::TRANSIENT, ms(100), none),
        Ok(Proposal::Stop(Stop::Exhausted(ExhaustReason::Attempts)))
    );
    // Proposed: record, after_wait and propose are refused; cancel is not.
    let mut call = Call::start(&p, ms(0));
    call.propose(Verdict::TRANSIENT, ms(0), none).unwrap();
    assert_eq!(call.record(Verdict::TRANSIENT, ms(0), none), Err(StateError::NotAttempting("proposed")));
    assert_eq!(call.after_wait(ms(0), none), Err(StateError::NotWaiting("proposed")));
    assert_eq!(call.cancel(ms(5), none), Ok(Stop::Cancelled));
    assert_eq!(call.settle(Plan::Engine, ms(5), none), Err(StateError::NotProposed("ended")));
}

#[test]
fn the_jitter_stream_is_the_same_whatever_the_hook_answers() {
    let p = Policy::builder().max_attempts(6).seed(Some(7)).deadline(None).build().unwrap();
    let computed = |exact: bool| {
        let mut call = Call::start(&p, ms(0));
        let mut seen = vec![];
        for n in 0..5u64 {
            let Ok(Proposal::Wait { delay, .. }) = call.propose(Verdict::TRANSIENT, ms(n), &mut |_: &Event<'_>| {})
            else {
                panic!()
            };
            seen.push(delay);
            let plan = if exact { Plan::Exact(ms(1)) } else { Plan::Engine };
            call.settle(plan, ms(n), &mut |_: &Event<'_>| {}).unwrap();
            call.after_wait(ms(n), &mut |_: &Event<'_>| {}).unwrap();
        }
        seen
    };
    assert_eq!(computed(true), computed(false));
    // And record is propose + settle(Engine).
    let mut call = Call::start(&p, ms(0));
    let recorded: Vec<_> = (0..5u64)
        .map(|n| {
            let Ok(Decision::Retry(d)) = call.record(Verdict::TRANSIENT, ms(n), &mut |_: &Event<'_>| {}) else {
                panic!()
            };
            call.after_wait(ms(n), &mut |_: &Event<'_>| {}).unwrap();
            d
        })
        .collect();
    assert_eq!(recorded, computed(false));
}

#[test]
fn every_event_carries_the_retries_left() {
    let p = no_jitter(3);
    let mut seen = vec![];
    let mut sink = |e: &Event<'_>| seen.push((e.kind, e.attempt, e.retries_left));
    let mut call = Call::start(&p, ms(0));
    call.record(Verdict::TRANSIENT, ms(0), &mut sink).unwrap();
    call.after_wait(ms(100), &mut sink).unwrap();
    call.record(Verdict::TRANSIENT, ms(100), &mut sink).unwrap();
    call.after_wait(ms(300), &mut sink).unwrap();
    call.record(Verdict::TRANSIENT, ms(300), &mut sink).unwrap();
    cancelled_before_start(&p, &mut sink);
    use EventKind::*;
    assert_eq!(
        seen,
        [
            (AttemptFailed, 1, 2),
            (Retrying, 1, 2),
            (AttemptFailed, 2, 1),
            (Retrying, 2, 1),
            (AttemptFailed, 3, 0),
            (Exhausted, 3, 0),
            (Cancelled, 0, 2)
        ]
    );
}

#[test]
fn exact_waits_from_host_milliseconds() {
    assert_eq!(Plan::exact_ms(12.5), Ok(Plan::Exact(Duration::from_micros(12_500))));
    assert_eq!(Plan::exact_ms(9e15), Ok(Plan::Exact(Duration::from_millis(9_000_000_000_000_000))));
    assert!(Plan::exact_ms(-1.0).unwrap_err().ends_with("got -1"));
    assert!(Plan::exact_ms(f64::NAN).unwrap_err().ends_with("got NaN"));
    // Refused like -1 and NaN, not 285,000 years of sleep.
    assert!(Plan::exact_ms(f64::INFINITY).unwrap_err().ends_with("got inf"), "{:?}", Plan::exact_ms(f64::INFINITY));
    assert!(Plan::exact_ms(9e15 + 2.0).is_err());
}

#[test]
fn hints_from_host_hooks() {
    assert_eq!(hint_from_hook_ms(1500.0), Ok(Duration::from_millis(1500)));
    assert_eq!(hint_from_hook_ms(f64::INFINITY), Ok(Duration::MAX));
    assert_eq!(
        hint_from_hook_ms(-5.0).unwrap_err(),
        "a Retry-After hint must be a number of milliseconds >= 0, got -5"
    );
    assert!(hint_from_hook_ms(f64::NAN).unwrap_err().ends_with("got NaN"));
}

#[test]
fn zero_delay_decision_is_zero() {
    let p = Policy::builder().initial_delay_ms(0.0).max_delay_ms(0.0).build().unwrap();
    let mut call = Call::start(&p, ms(0));
    assert_eq!(call.record(Verdict::TRANSIENT, ms(0), &mut |_: &Event<'_>| {}), Ok(Decision::Retry(Duration::ZERO)));
}
