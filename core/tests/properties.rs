//! Invariants of the engine over random policies and random attempt scripts.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use retryrs::backoff::{ceiling_ms, Backoff};
use retryrs::{Call, Decision, Event, EventKind, Jitter, Policy, Resume, RetryBudget, Stop, Verdict};

fn jitter() -> impl Strategy<Value = Jitter> {
    prop_oneof![
        Just(Jitter::None),
        Just(Jitter::Full),
        Just(Jitter::Equal),
        (0.0f64..=1.0).prop_map(Jitter::Proportional),
        Just(Jitter::Decorrelated),
    ]
}

prop_compose! {
    fn policy()(
        max_attempts in 1u64..12,
        initial in 0u32..5_000,
        extra in 0u32..60_000,
        multiplier in 1.0f64..4.0,
        jitter in jitter(),
        deadline in proptest::option::of(0u32..120_000),
        seed in proptest::option::of(any::<u64>()),
    ) -> Policy {
        Policy::builder()
            .max_attempts(max_attempts)
            .initial_delay_ms(initial as f64)
            .max_delay_ms(initial as f64 + extra as f64)
            .multiplier(multiplier)
            .jitter(jitter)
            .deadline_ms(deadline.map(f64::from))
            .seed(seed)
            .build()
            .unwrap()
    }
}

#[derive(Debug, Clone)]
struct Step {
    verdict: Verdict,
    takes_ms: u64,
    overrun_ms: u64,
}

fn step() -> impl Strategy<Value = Step> {
    let verdict = prop_oneof![
        1 => Just(Verdict::Success),
        1 => Just(Verdict::Permanent),
        6 => proptest::option::of(0u64..20_000)
            .prop_map(|h| Verdict::Transient { hint: h.map(Duration::from_millis) }),
    ];
    (verdict, 0u64..3_000, prop_oneof![3 => Just(0u64), 1 => 0u64..500])
        .prop_map(|(verdict, takes_ms, overrun_ms)| Step { verdict, takes_ms, overrun_ms })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    /// Drives one call with a random script and checks every invariant of the contract on
    /// the way: delays within the jitter's range and the cap (unless a hint asked for
    /// more), attempts within max_attempts, no wait started that would pass the deadline,
    /// and the event order.
    #[test]
    fn a_call_keeps_every_invariant(policy in policy(), script in proptest::collection::vec(step(), 1..16)) {
        let mut now = Duration::ZERO;
        let mut events: Vec<(EventKind, u32)> = vec![];
        let mut call = Call::start(&policy, now);
        let max = policy.max_delay();
        let mut last_stop = None;
        for (i, s) in script.iter().enumerate() {
            let attempt = i as u32 + 1;
            prop_assert!(attempt <= policy.max_attempts());
            prop_assert_eq!(call.attempt(), attempt);
            now += Duration::from_millis(s.takes_ms);
            let decision = call.record(s.verdict, now, &mut |e: &Event<'_>| events.push((e.kind, e.attempt))).unwrap();
            match decision {
                Decision::Retry(delay) => {
                    let hint = match s.verdict { Verdict::Transient { hint } => hint, _ => None };
                    let hint_ms = hint.map_or(0, |h| h.as_millis() as u64);
                    let backoff_bound = match policy.jitter() {
                        // These two may go above the ceiling, never above the cap.
                        Jitter::Decorrelated | Jitter::Proportional(_) => max,
                        _ => Duration::from_millis(ceiling_ms(&policy, attempt)),
                    };
                    prop_assert!(delay <= backoff_bound.max(Duration::from_millis(hint_ms)),
                        "delay {:?} above bound {:?} and hint {}", delay, backoff_bound, hint_ms);
                    prop_assert!(delay >= hint.unwrap_or_default(), "sooner than the hint asked");
                    if let Some(deadline) = policy.deadline() {
                        prop_assert!(now + delay <= deadline, "a wait past the deadline was started");
                    }
                    now += delay + Duration::from_millis(s.overrun_ms);
                    match call.after_wait(now, &mut |e: &Event<'_>| events.push((e.kind, e.attempt))).unwrap() {
                        Resume::Attempt(n) => prop_assert_eq!(n, attempt + 1),
                        Resume::Stop(stop) => {
                            prop_assert!(policy.deadline().is_some_and(|d| now > d));
                            last_stop = Some(stop);
                            break;
                        }
                    }
                }
                Decision::Stop(stop) => {
                    if stop == Stop::Exhausted(retryrs::ExhaustReason::Attempts) {
                        prop_assert_eq!(attempt, policy.max_attempts());
                    }
                    last_stop = Some(stop);
                    break;
                }
            }
        }
        // Event order: AttemptFailed for each failure, each followed by exactly one of
        // Retrying (then the next attempt), Rejected, Exhausted; or Success.
        let mut it = events.iter().peekable();
        while let Some((kind, n)) = it.next() {
            match kind {
                EventKind::Success => prop_assert!(it.peek().is_none()),
                EventKind::AttemptFailed => {
                    let (next, m) = it.next().expect("a failure is followed by its outcome");
                    prop_assert_eq!(n, m);
                    match next {
                        EventKind::Retrying => {
                            if let Some((EventKind::Exhausted, k)) = it.peek() {
                                prop_assert_eq!(k, n);
                                it.next();
                                prop_assert!(it.peek().is_none());
                            }
                        }
                        EventKind::Rejected | EventKind::Exhausted => prop_assert!(it.peek().is_none()),
                        other => prop_assert!(false, "{:?} after AttemptFailed", other),
                    }
                }
                other => prop_assert!(false, "{:?} where an attempt's outcome belongs", other),
            }
        }
        if let Some(stop) = last_stop {
            prop_assert_eq!(call.outcome(), Some(stop));
        }
    }

    /// Every jitter kind stays inside its range, never above max_delay, for any attempt.
    #[test]
    fn jitter_stays_in_range(policy in policy(), attempts in proptest::collection::vec(1u32..=u32::MAX, 1..20)) {
        let mut backoff = Backoff::new();
        let cap = policy.max_delay().as_millis() as u64;
        let initial = policy.initial_delay().as_millis() as u64;
        let mut previous = initial.min(cap);
        for n in attempts {
            let c = ceiling_ms(&policy, n);
            prop_assert!(c <= cap);
            let d = backoff.next_delay_ms(&policy, n);
            prop_assert!(d <= cap);
            match policy.jitter() {
                Jitter::None => prop_assert_eq!(d, c),
                Jitter::Full => prop_assert!(d <= c),
                Jitter::Equal => prop_assert!(d >= c / 2 && d <= c),
                Jitter::Proportional(f) => {
                    let lo = (c as f64 * (1.0 - f)).floor() as u64;
                    prop_assert!(d >= lo.min(cap));
                    prop_assert!(d as f64 <= (c as f64 * (1.0 + f)).floor());
                }
                Jitter::Decorrelated => {
                    prop_assert!(d >= initial.min(cap));
                    // The state is the exact previous delay, in [previous, previous + 1) ms,
                    // so the next one is below 3 * (previous + 1): at most 3 * previous + 2.
                    prop_assert!(d <= previous.saturating_mul(3).saturating_add(2).max(initial));
                }
                other => prop_assert!(false, "a jitter kind this property does not know: {:?}", other),
            }
            previous = d;
        }
    }

    /// The ceiling never decreases with the attempt number and never passes the cap.
    #[test]
    fn ceiling_is_monotone_and_capped(policy in policy(), a in 1u32..=u32::MAX, b in 1u32..=u32::MAX) {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        prop_assert!(ceiling_ms(&policy, lo) <= ceiling_ms(&policy, hi));
        prop_assert!(ceiling_ms(&policy, hi) <= policy.max_delay().as_millis() as u64);
    }

    /// Under concurrent failures and successes the budget stays within [0, max].
    #[test]
    fn budget_stays_in_bounds_under_threads(max in 1.0f64..50.0, ratio_frac in 0.01f64..1.0, ops in proptest::collection::vec(any::<bool>(), 1..200)) {
        let budget = Arc::new(RetryBudget::new(max, max * ratio_frac).unwrap());
        let ops = Arc::new(ops);
        let threads: Vec<_> = (0..4).map(|_| {
            let (budget, ops) = (budget.clone(), ops.clone());
            std::thread::spawn(move || {
                for &fail in ops.iter() {
                    if fail { budget.record_failure() } else { budget.record_success() }
                    let t = budget.tokens();
                    assert!(t >= 0.0 && t <= budget.max_tokens() + 1e-9, "{t}");
                }
            })
        }).collect();
        for t in threads { t.join().unwrap(); }
        prop_assert!(budget.tokens() >= 0.0);
    }
}
