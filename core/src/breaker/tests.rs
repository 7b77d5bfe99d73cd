//! The circuit breaker's tests: each model's opening rule, probes and growing breaks,
//! slow calls, isolate and reset, threads, and calls through a retrier's policy.

use super::*;
use crate::engine::{Call, Stop};
use crate::event::{Event, EventKind};
use crate::policy::Policy;
use std::sync::Arc;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn quiet() -> impl FnMut(Transition) {
    |_| {}
}

/// One call at `t`: admitted? then its outcome. Returns the admission.
fn call(b: &CircuitBreaker, t: u64, failed: bool, log: &mut Vec<(u64, Transition)>) -> Admission {
    let mut on = |x| log.push((t, x));
    let a = b.admit(ms(t), &mut on);
    if !matches!(a, Admission::Refused { .. }) {
        b.record(a, failed, ms(t), &mut on);
    }
    a
}

#[test]
fn consecutive_opens_after_n_and_a_success_resets_the_count() {
    let mut cfg = BreakerConfig::consecutive(3);
    cfg.break_duration = ms(1000);
    let b = CircuitBreaker::new(cfg).unwrap();
    let mut log = vec![];
    for (t, failed) in [(0, true), (1, true), (2, false), (3, true), (4, true)] {
        assert_eq!(call(&b, t, failed, &mut log), Admission::Pass);
    }
    assert_eq!(b.state(ms(4)), BreakerState::Closed);
    assert_eq!(call(&b, 5, true, &mut log), Admission::Pass);
    assert_eq!(log, [(5, Transition::Opened(ms(1000)))]);
    assert_eq!(b.state(ms(6)), BreakerState::Open);
    assert_eq!(call(&b, 6, false, &mut log), Admission::Refused { state: BreakerState::Open, retry_in: ms(999) });
    assert_eq!(b.retry_in(ms(600)), ms(405));
    assert_eq!(b.rejections(), 1);
    // The break ends at 1005: the first call is a probe; a second one meanwhile waits.
    let mut on = quiet();
    assert_eq!(b.state(ms(1005)), BreakerState::HalfOpen);
    assert_eq!(b.admit(ms(1005), &mut on), Admission::Probe);
    assert_eq!(b.admit(ms(1006), &mut on), Admission::Refused { state: BreakerState::HalfOpen, retry_in: ms(0) });
    b.record(Admission::Probe, false, ms(1010), &mut |x| log.push((1010, x)));
    assert_eq!(b.state(ms(1010)), BreakerState::Closed);
    assert_eq!(log.last(), Some(&(1010, Transition::Closed)));
    // Closed again, the count starts over: two failures do not open it.
    call(&b, 1011, true, &mut log);
    call(&b, 1012, true, &mut log);
    assert_eq!(b.state(ms(1012)), BreakerState::Closed);
}

#[test]
fn a_failed_probe_reopens_for_a_growing_break_up_to_the_cap() {
    let mut cfg = BreakerConfig::consecutive(1);
    cfg.break_duration = ms(100);
    cfg.break_multiplier = 2.0;
    cfg.max_break_duration = Some(ms(350));
    let b = CircuitBreaker::new(cfg).unwrap();
    let mut log = vec![];
    call(&b, 0, true, &mut log);
    let mut t = 0;
    for want in [200, 350, 350] {
        t += log.last().map(|(_, x)| if let Transition::Opened(d) = x { d.as_millis() as u64 } else { 0 }).unwrap();
        assert_eq!(call(&b, t, true, &mut log), Admission::Probe);
        assert_eq!(log.last(), Some(&(t, Transition::Opened(ms(want)))));
    }
    // A success closes it, and the next break is back to 100 ms.
    t += 350;
    call(&b, t, false, &mut log);
    call(&b, t + 1, true, &mut log);
    assert_eq!(log.last(), Some(&(t + 1, Transition::Opened(ms(100)))));
    let kinds: Vec<_> = log.iter().map(|(_, x)| *x).filter(|x| *x == Transition::HalfOpen).collect();
    assert_eq!(kinds.len(), 4, "each probe follows a move to half-open");
}

#[test]
fn sampling_needs_the_throughput_and_the_ratio_within_the_window() {
    // Polly-like: ratio 0.5, at least 4 calls, 1 s window (10 windows of 100 ms).
    let mut cfg = BreakerConfig::sampling(0.5, 4, ms(1000));
    cfg.break_duration = ms(500);
    let b = CircuitBreaker::new(cfg).unwrap();
    let mut log = vec![];
    // 3 failures: under the throughput, closed.
    for t in [0, 10, 20] {
        call(&b, t, true, &mut log);
    }
    assert_eq!(b.state(ms(20)), BreakerState::Closed);
    // The window slides: at 1000 ms the calls of the window started at 0 are gone.
    call(&b, 1000, true, &mut log);
    assert_eq!(b.state(ms(1000)), BreakerState::Closed, "1 call in the window");
    // 3 successes and 2 failures in the window: 0.4, closed; one more failure: 0.5.
    call(&b, 1100, false, &mut log);
    call(&b, 1200, false, &mut log);
    call(&b, 1300, false, &mut log);
    call(&b, 1400, true, &mut log);
    assert_eq!(b.state(ms(1400)), BreakerState::Closed, "2 of 5 is under 0.5");
    call(&b, 1500, true, &mut log);
    assert_eq!(log, [(1500, Transition::Opened(ms(500)))], "3 of 6 reaches 0.5");
}

#[test]
fn a_success_alone_never_opens_it_and_the_ratio_is_inclusive() {
    let b = CircuitBreaker::new(BreakerConfig::sampling(0.5, 2, ms(1000))).unwrap();
    let mut log = vec![];
    call(&b, 0, false, &mut log);
    call(&b, 1, true, &mut log);
    assert_eq!(log.len(), 1, "1 of 2 reaches 0.5");
}

#[test]
fn bad_knobs_are_named() {
    let err = |cfg| CircuitBreaker::new(cfg).unwrap_err().knob;
    assert_eq!(err(BreakerConfig::consecutive(0)), "failures");
    assert_eq!(err(BreakerConfig::sampling(0.0, 10, ms(1000))), "failure_ratio");
    assert_eq!(err(BreakerConfig::sampling(f64::NAN, 10, ms(1000))), "failure_ratio");
    assert_eq!(err(BreakerConfig::sampling(1.5, 10, ms(1000))), "failure_ratio");
    assert_eq!(err(BreakerConfig::sampling(0.5, 1, ms(1000))), "minimum_throughput");
    assert_eq!(err(BreakerConfig::sampling(0.5, 2, ms(499))), "sampling_duration");
    let with = |f: &dyn Fn(&mut BreakerConfig)| {
        let mut c = BreakerConfig::consecutive(2);
        f(&mut c);
        CircuitBreaker::new(c).map(|_| ()).map_err(|e| e.to_string())
    };
    assert_eq!(
        with(&|c| c.break_duration = ms(0)).unwrap_err(),
        "break_duration must be >= 1 ms and <= 1 day, got 0 s"
    );
    assert!(with(&|c| c.half_open_probes = 0).unwrap_err().starts_with("half_open_probes"));
    assert!(with(&|c| c.break_multiplier = 0.5).unwrap_err().starts_with("break_multiplier"));
    assert!(with(&|c| c.max_break_duration = Some(ms(10))).unwrap_err().starts_with("max_break_duration"));
    assert!(with(&|c| c.max_break_duration = Some(ms(5000))).is_ok());
}

#[test]
fn a_released_probe_lets_another_go_and_late_outcomes_change_nothing() {
    let mut cfg = BreakerConfig::consecutive(1);
    cfg.break_duration = ms(10);
    cfg.half_open_probes = 2;
    let b = CircuitBreaker::new(cfg).unwrap();
    let mut on = quiet();
    let early = b.admit(ms(0), &mut on);
    call(&b, 0, true, &mut vec![]);
    assert_eq!(b.state(ms(1)), BreakerState::Open);
    b.record(early, false, ms(2), &mut on);
    assert_eq!(b.state(ms(2)), BreakerState::Open, "a call admitted before it opened does not close it");
    assert_eq!(b.admit(ms(10), &mut on), Admission::Probe);
    assert_eq!(b.admit(ms(10), &mut on), Admission::Probe);
    assert!(matches!(b.admit(ms(10), &mut on), Admission::Refused { .. }));
    b.release(Admission::Probe);
    assert_eq!(b.admit(ms(11), &mut on), Admission::Probe);
}

#[test]
fn shared_across_threads_it_opens_once() {
    let b = Arc::new(CircuitBreaker::new(BreakerConfig::consecutive(100)).unwrap());
    let opened = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (b, opened) = (b.clone(), opened.clone());
            std::thread::spawn(move || {
                for _ in 0..100 {
                    let mut on = |x| {
                        if matches!(x, Transition::Opened(_)) {
                            opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    };
                    let a = b.admit(ms(0), &mut on);
                    if !matches!(a, Admission::Refused { .. }) {
                        b.record(a, true, ms(0), &mut on);
                    }
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(opened.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert_eq!(b.state(ms(0)), BreakerState::Open);
    assert!(b.rejections() >= 290, "at most 100 + 3 in flight went ahead");
}

/// One call admitted at `t` whose outcome comes `took` ms later: admitted? then its
/// outcome (logged at `t`).
fn timed(b: &CircuitBreaker, t: u64, failed: bool, took: u64, log: &mut Vec<(u64, Transition)>) -> Admission {
    let mut on = |x| log.push((t, x));
    let a = b.admit(ms(t), &mut on);
    if !matches!(a, Admission::Refused { .. }) {
        b.record_timed(a, failed, ms(took), ms(t + took), &mut on);
    }
    a
}

#[test]
fn count_window_judges_the_last_n_calls_once_the_minimum_is_counted() {
    // resilience4j-like: ratio 0.5 over the last 4 calls, at least 3 counted.
    let b = CircuitBreaker::new(BreakerConfig::count(0.5, 3, 4)).unwrap();
    let mut log = vec![];
    call(&b, 0, true, &mut log);
    call(&b, 1, true, &mut log);
    assert_eq!(b.state(ms(1)), BreakerState::Closed, "2 calls: under the minimum of 3, even all failed");
    call(&b, 2, false, &mut log);
    assert_eq!(log, [(2, Transition::Opened(ms(5000)))], "2 of 3 reach 0.5: a success can find the ratio reached");
    // Closed again (after a probe), the ring starts over and slides: the oldest leave it.
    let b = CircuitBreaker::new(BreakerConfig::count(0.5, 4, 4)).unwrap();
    let mut log = vec![];
    for (t, failed) in [(0, true), (1, false), (2, false), (3, false), (4, false), (5, true)] {
        call(&b, t, failed, &mut log);
    }
    assert!(log.is_empty(), "the failure at 0 left the ring: 1 of 4 at 5");
    call(&b, 6, true, &mut log);
    assert_eq!(log, [(6, Transition::Opened(ms(5000)))], "2 of the last 4");
}

#[test]
fn a_minimum_above_the_window_is_the_window_as_in_resilience4j() {
    let b = CircuitBreaker::new(BreakerConfig::count(1.0, 100, 2)).unwrap();
    let mut log = vec![];
    call(&b, 0, true, &mut log);
    call(&b, 1, true, &mut log);
    assert_eq!(log.len(), 1, "a window of 2 judges 2 calls: {log:?}");
}

#[test]
fn slow_calls_open_it_by_their_own_ratio() {
    let mut cfg = BreakerConfig::count(1.0, 4, 4);
    cfg.slow_call_duration = Some(ms(100));
    cfg.slow_call_ratio = 0.5;
    let b = CircuitBreaker::new(cfg).unwrap();
    let mut log = vec![];
    timed(&b, 0, false, 99, &mut log);
    timed(&b, 1, false, 100, &mut log);
    timed(&b, 2, false, 10, &mut log);
    assert!(log.is_empty());
    // Every call succeeded; 2 of 4 took >= 100 ms.
    timed(&b, 3, false, 500, &mut log);
    assert_eq!(log, [(3, Transition::Opened(ms(5000)))]);
    // `record` (no duration) is never slow.
    let mut cfg = BreakerConfig::sampling(1.0, 2, ms(1000));
    cfg.slow_call_duration = Some(ms(1));
    let b = CircuitBreaker::new(cfg).unwrap();
    let mut log = vec![];
    call(&b, 0, false, &mut log);
    call(&b, 1, false, &mut log);
    assert!(log.is_empty());
    // Sampling counts slow calls too (default ratio 1: every call slow).
    timed(&b, 2, false, 5, &mut log);
    timed(&b, 3, false, 5, &mut log);
    assert!(log.is_empty(), "2 slow of 4");
    let b = CircuitBreaker::new(cfg).unwrap();
    timed(&b, 0, false, 5, &mut log);
    timed(&b, 1, false, 5, &mut log);
    assert_eq!(log, [(1, Transition::Opened(ms(5000)))]);
}

#[test]
fn new_knobs_are_checked_and_named() {
    let err = |cfg| CircuitBreaker::new(cfg).unwrap_err().to_string();
    assert!(err(BreakerConfig::count(0.0, 1, 1)).starts_with("failure_ratio"));
    assert!(err(BreakerConfig::count(0.5, 0, 1)).starts_with("minimum_calls"));
    assert!(err(BreakerConfig::count(0.5, 1, 0)).starts_with("window_size"));
    assert!(err(BreakerConfig::count(0.5, 1, MAX_WINDOW + 1)).starts_with("window_size"));
    let mut c = BreakerConfig::consecutive(3);
    c.slow_call_duration = Some(ms(10));
    assert!(err(c).contains("unset for a consecutive breaker"), "{}", err(c));
    let mut c = BreakerConfig::count(0.5, 1, 1);
    c.slow_call_duration = Some(Duration::ZERO);
    assert!(err(c).starts_with("slow_call_duration must be >= 1 ms"));
    c.slow_call_duration = Some(ms(1));
    c.slow_call_ratio = 1.5;
    assert!(err(c).starts_with("slow_call_ratio"));
    c.slow_call_ratio = f64::NAN;
    assert!(err(c).starts_with("slow_call_ratio"));
}

#[test]
fn isolate_refuses_everything_until_reset() {
    let b = CircuitBreaker::new(BreakerConfig::consecutive(2)).unwrap();
    let mut log = vec![];
    let running = b.admit(ms(0), &mut quiet());
    b.isolate();
    assert_eq!(b.state(ms(0)), BreakerState::Isolated);
    assert_eq!(call(&b, 1, false, &mut log), Admission::Refused { state: BreakerState::Isolated, retry_in: ms(0) });
    // No break ends it, and a late success does not close it.
    b.record(running, false, ms(10), &mut quiet());
    assert_eq!(
        call(&b, 86_400_000 * 2, false, &mut log),
        Admission::Refused { state: BreakerState::Isolated, retry_in: ms(0) }
    );
    assert_eq!(b.rejections(), 2);
    assert!(log.is_empty(), "isolating is not a transition of the state machine");
    b.reset();
    assert_eq!(b.state(ms(0)), BreakerState::Closed);
    call(&b, 1, true, &mut log);
    assert_eq!(b.state(ms(1)), BreakerState::Closed, "reset started the count over");
    call(&b, 2, true, &mut log);
    assert_eq!(b.state(ms(2)), BreakerState::Open);
    // Reset closes an open breaker too, and its break's growth starts over.
    b.reset();
    assert_eq!(call(&b, 3, false, &mut log), Admission::Pass);
}

#[test]
fn probes_judged_together_close_only_when_all_are_in_and_the_ratio_is_under() {
    let judged = |ratio: f64, outcomes: &[bool]| {
        let mut cfg = BreakerConfig::count(ratio, 1, 1);
        cfg.break_duration = ms(10);
        cfg.half_open_probes = outcomes.len() as u32;
        cfg.judge_all_probes = true;
        let b = CircuitBreaker::new(cfg).unwrap();
        call(&b, 0, true, &mut vec![]);
        let mut on = quiet();
        let probes: Vec<_> = outcomes.iter().map(|_| b.admit(ms(10), &mut on)).collect();
        assert!(probes.iter().all(|a| *a == Admission::Probe));
        assert!(matches!(b.admit(ms(10), &mut on), Admission::Refused { state: BreakerState::HalfOpen, .. }));
        let mut log = vec![];
        for (i, (a, failed)) in probes.iter().zip(outcomes).enumerate() {
            b.record(*a, *failed, ms(11), &mut |x| log.push(x));
            if i + 1 < outcomes.len() {
                assert!(log.is_empty(), "decided before every probe was in");
                // A finished probe keeps its place: no extra probe goes.
                assert!(matches!(b.admit(ms(11), &mut on), Admission::Refused { .. }));
            }
        }
        log
    };
    // The first probe succeeds, but 2 of 4 failed: 0.5 reaches 0.5, open again.
    assert_eq!(judged(0.5, &[false, true, false, true]), [Transition::Opened(ms(10))]);
    // 1 of 4 is under 0.5: closed.
    assert_eq!(judged(0.5, &[true, false, false, false]), [Transition::Closed]);
    // Consecutive model: any failed probe reopens.
    let mut cfg = BreakerConfig::consecutive(1);
    cfg.break_duration = ms(10);
    cfg.half_open_probes = 2;
    cfg.judge_all_probes = true;
    let b = CircuitBreaker::new(cfg).unwrap();
    call(&b, 0, true, &mut vec![]);
    let (p1, p2) = (b.admit(ms(10), &mut quiet()), b.admit(ms(10), &mut quiet()));
    // A cancelled probe gives its place back.
    b.release(p2);
    let p3 = b.admit(ms(10), &mut quiet());
    assert_eq!(p3, Admission::Probe);
    b.record(p1, false, ms(11), &mut quiet());
    assert_eq!(b.state(ms(11)), BreakerState::HalfOpen);
    b.record(p3, true, ms(11), &mut quiet());
    assert_eq!(b.state(ms(11)), BreakerState::Open);
}

#[test]
fn the_first_probe_decides_by_default() {
    let mut cfg = BreakerConfig::count(0.5, 1, 1);
    cfg.break_duration = ms(10);
    cfg.half_open_probes = 3;
    let b = CircuitBreaker::new(cfg).unwrap();
    call(&b, 0, true, &mut vec![]);
    let (p1, _p2) = (b.admit(ms(10), &mut quiet()), b.admit(ms(10), &mut quiet()));
    b.record(p1, false, ms(11), &mut quiet());
    assert_eq!(b.state(ms(11)), BreakerState::Closed);
}

mod engine {
    use super::*;
    use crate::engine::{Decision, Verdict};
    use crate::event::ExhaustReason;
    use crate::policy::Jitter;

    fn policy(b: &Arc<CircuitBreaker>, attempts: u64) -> Policy {
        Policy::builder()
            .name("dep")
            .max_attempts(attempts)
            .initial_delay_ms(0.0)
            .jitter(Jitter::None)
            .breaker(Some(b.clone()))
            .build()
            .unwrap()
    }

    /// A whole call at `t` whose attempts all end with `verdict`; the events' names.
    fn run(p: &Policy, t: u64, verdict: Verdict) -> (Option<Stop>, Vec<String>) {
        let mut log = vec![];
        let mut sink = |e: &Event<'_>| {
            let reason = e.reason.map(|r| format!("({r})")).unwrap_or_default();
            log.push(format!("{}:{}{reason}", e.kind, e.attempt))
        };
        let mut call = Call::start_with(p, ms(t), &mut sink);
        while call.outcome().is_none() {
            match call.record(verdict, ms(t), &mut sink).unwrap() {
                Decision::Retry(_) => {
                    call.after_wait(ms(t), &mut sink).unwrap();
                }
                Decision::Stop(_) => {}
            }
        }
        (call.outcome(), log)
    }

    #[test]
    fn two_retriers_share_it_and_a_refused_call_makes_no_attempt() {
        let mut cfg = BreakerConfig::consecutive(2);
        cfg.break_duration = ms(1000);
        let b = Arc::new(CircuitBreaker::new(cfg).unwrap());
        let (a, c) = (policy(&b, 3), policy(&b, 2));
        let (stop, log) = run(&a, 0, Verdict::TRANSIENT);
        assert_eq!(stop, Some(Stop::Exhausted(ExhaustReason::Attempts)));
        assert_eq!(log.len(), 6, "3 failures, 2 retries, exhausted: {log:?}");
        let (_, log) = run(&c, 10, Verdict::TRANSIENT);
        assert_eq!(log.last().unwrap(), "breaker_opened:2", "{log:?}");
        // Refused: one event, attempt 0, reason circuit_open; the refusal says for how long.
        let mut events = vec![];
        let call = Call::start_with(&a, ms(500), &mut |e: &Event<'_>| events.push((e.kind, e.attempt, e.reason)));
        assert_eq!(call.outcome(), Some(Stop::Exhausted(ExhaustReason::CircuitOpen)));
        assert_eq!(call.attempt(), 0);
        assert_eq!(call.refusal(), Some((BreakerState::Open, ms(510))));
        assert_eq!(events, [(EventKind::Exhausted, 0, Some(ExhaustReason::CircuitOpen))]);
        // After the break: a probe (half-open first), and a success closes it.
        let (stop, log) = run(&c, 1010, Verdict::Success);
        assert_eq!(stop, Some(Stop::Success));
        assert_eq!(log, ["breaker_half_open:0", "success:1", "breaker_closed:1"]);
        assert_eq!(b.state(ms(1010)), BreakerState::Closed);
    }

    #[test]
    fn a_permanent_failure_is_the_dependency_answering() {
        let b = Arc::new(CircuitBreaker::new(BreakerConfig::consecutive(1)).unwrap());
        let p = policy(&b, 3);
        let (stop, _) = run(&p, 0, Verdict::Permanent);
        assert_eq!(stop, Some(Stop::Rejected));
        assert_eq!(b.state(ms(0)), BreakerState::Closed);
    }

    #[test]
    fn with_count_permanent_a_permanent_failure_counts() {
        let mut cfg = BreakerConfig::consecutive(2);
        cfg.count_permanent = true;
        let b = Arc::new(CircuitBreaker::new(cfg).unwrap());
        let p = policy(&b, 3);
        run(&p, 0, Verdict::Permanent);
        assert_eq!(b.state(ms(0)), BreakerState::Closed);
        let (_, log) = run(&p, 1, Verdict::Permanent);
        assert_eq!(log, ["attempt_failed:1", "rejected:1", "breaker_opened:1"]);
        // Per attempt too.
        let mut cfg = BreakerConfig::consecutive(1);
        cfg.count_permanent = true;
        cfg.per_attempt = true;
        let b = Arc::new(CircuitBreaker::new(cfg).unwrap());
        run(&policy(&b, 3), 0, Verdict::Permanent);
        assert_eq!(b.state(ms(0)), BreakerState::Open);
    }

    #[test]
    fn per_attempt_slow_calls_are_timed_from_the_attempt_start() {
        let mut cfg = BreakerConfig::count(1.0, 2, 2);
        cfg.slow_call_duration = Some(ms(50));
        cfg.per_attempt = true;
        let b = Arc::new(CircuitBreaker::new(cfg).unwrap());
        let p = policy(&b, 3);
        let none = &mut |_: &Event<'_>| {};
        // Attempt 1 takes 60 ms and fails; attempt 2 (after a 0 ms wait) takes 40 ms: 1 of 2
        // slow, closed; per call (100 ms) both would be slow.
        let mut c = Call::start_with(&p, ms(0), none);
        assert!(matches!(c.record(Verdict::TRANSIENT, ms(60), none).unwrap(), Decision::Retry(_)));
        c.after_wait(ms(60), none).unwrap();
        c.record(Verdict::Success, ms(100), none).unwrap();
        assert_eq!(b.state(ms(100)), BreakerState::Closed);
        // Per call, the call's 100 ms is slow; two such calls open it.
        let mut cfg = BreakerConfig::count(1.0, 2, 2);
        cfg.slow_call_duration = Some(ms(50));
        let b = Arc::new(CircuitBreaker::new(cfg).unwrap());
        let p = policy(&b, 3);
        for t in [0, 200] {
            let mut c = Call::start_with(&p, ms(t), none);
            c.record(Verdict::Success, ms(t + 100), none).unwrap();
        }
        assert_eq!(b.state(ms(300)), BreakerState::Open);
    }

    #[test]
    fn a_cancelled_probe_gives_its_place_back() {
        let mut cfg = BreakerConfig::consecutive(1);
        cfg.break_duration = ms(10);
        let b = Arc::new(CircuitBreaker::new(cfg).unwrap());
        let p = policy(&b, 1);
        run(&p, 0, Verdict::TRANSIENT);
        let none = &mut |_: &Event<'_>| {};
        let mut probe = Call::start_with(&p, ms(10), none);
        assert!(probe.outcome().is_none());
        assert!(Call::start_with(&p, ms(11), none).refusal().is_some(), "one probe at a time");
        probe.cancel(ms(12), none).unwrap();
        assert_eq!(b.state(ms(12)), BreakerState::HalfOpen);
        assert!(Call::start_with(&p, ms(13), none).refusal().is_none());
    }

    #[test]
    fn per_attempt_counts_each_failed_attempt() {
        let mut cfg = BreakerConfig::consecutive(3);
        cfg.per_attempt = true;
        let b = Arc::new(CircuitBreaker::new(cfg).unwrap());
        let p = policy(&b, 3);
        let (_, log) = run(&p, 0, Verdict::TRANSIENT);
        assert!(log.contains(&"breaker_opened:3".to_string()), "{log:?}");
        // Per call it would take 3 calls.
        let b = Arc::new(CircuitBreaker::new(BreakerConfig::consecutive(3)).unwrap());
        let p = policy(&b, 3);
        run(&p, 0, Verdict::TRANSIENT);
        assert_eq!(b.state(ms(0)), BreakerState::Closed);
    }

    #[test]
    fn without_a_breaker_nothing_changes() {
        let p = Policy::builder().max_attempts(2).initial_delay_ms(0.0).build().unwrap();
        let (stop, log) = run(&p, 0, Verdict::TRANSIENT);
        assert_eq!(stop, Some(Stop::Exhausted(ExhaustReason::Attempts)));
        assert_eq!(log, ["attempt_failed:1", "retrying:1", "attempt_failed:2", "exhausted:2(attempts)"]);
    }
}
