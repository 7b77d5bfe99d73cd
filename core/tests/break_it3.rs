//! break-it3: the blocking executor's fast paths (no events without a listener, a lazy
//! start for a policy that bounds nothing, the first errors kept in place) must not change
//! what a call ends with. `run` and `execute` with a listener give the same outcome, the
//! same history (order, values, the last error) and the same stats, for 1, 2, 3 and 65
//! failures, lazy or not, with or without a budget.

// `run` and `execute` are the blocking executor's (feature `blocking`, on by default).
#[cfg(feature = "blocking")]
mod blocking {
    use retryrs::{ExhaustReason, Jitter, Policy, Retrier, RetryBudget, RetryError, StatsSnapshot, Verdict, HISTORY};
    use std::sync::Arc;

    /// What a call ended with, comparable across `run` and `execute`.
    #[derive(Debug, PartialEq)]
    enum Outcome {
        Value(u32),
        Rejected(u32),
        Exhausted { attempts: u32, reason: ExhaustReason, errors: Vec<u32> },
        Cancelled { attempts: u32, errors: Vec<u32> },
        Refused,
    }

    fn outcome<T: std::fmt::Debug>(r: Result<u32, RetryError<u32, T>>) -> Outcome {
        match r {
            Ok(v) => Outcome::Value(v),
            Err(RetryError::Rejected(e)) => Outcome::Rejected(e),
            Err(RetryError::Exhausted { attempts, reason, errors, value, .. }) => {
                assert!(value.is_none(), "no result predicate: no value");
                Outcome::Exhausted { attempts, reason, errors }
            }
            Err(RetryError::Cancelled { attempts, errors, .. }) => Outcome::Cancelled { attempts, errors },
            Err(RetryError::Refused(_)) => Outcome::Refused,
            Err(other) => panic!("unknown RetryError {other:?}"),
        }
    }

    /// How attempt n (from 1) ends: errors 1..=fails (error n is the value n), then a value
    /// 1000 (the classifier calls error `permanent_at` permanent).
    fn op(n: u32, fails: u32) -> Result<u32, u32> {
        if n <= fails {
            Err(n)
        } else {
            Ok(1000)
        }
    }

    fn policies(max_attempts: u64) -> Vec<(&'static str, Policy)> {
        let base = || Policy::builder().max_attempts(max_attempts).jitter(Jitter::None).initial_delay_ms(0.0);
        vec![
            ("lazy", base().deadline(None).build().unwrap()),
            ("deadline", base().deadline_ms(Some(3_600_000.0)).build().unwrap()),
            (
                "budget",
                base().deadline(None).budget(Some(Arc::new(RetryBudget::new(1e6, 1.0).unwrap()))).build().unwrap(),
            ),
        ]
    }

    fn both(
        policy: &Policy,
        fails: u32,
        permanent_at: Option<u32>,
    ) -> ((Outcome, StatsSnapshot), (Outcome, StatsSnapshot)) {
        let classify = |e: &u32| if Some(*e) == permanent_at { Verdict::Permanent } else { Verdict::TRANSIENT };
        let quiet = Retrier::new(policy.clone());
        let ran = outcome(quiet.run(|a| op(a.number, fails), classify));
        let told = Retrier::new(policy.clone());
        let mut events = 0;
        let executed = outcome(told.execute(
            retryrs::Run::default().listener(|_, _| events += 1),
            |a| op(a.number, fails),
            classify,
        ));
        assert!(events > 0, "the listener heard the call");
        ((ran, quiet.stats()), (executed, told.stats()))
    }

    #[test]
    fn run_and_execute_with_a_listener_end_the_same_way() {
        for max_attempts in [1u64, 2, 3, 4, 65, 66, 70] {
            for (name, policy) in policies(max_attempts) {
                for fails in [0u32, 1, 2, 3, 64, 65, 66, 69] {
                    for permanent_at in [None, Some(1), Some(2), Some(3), Some(65)] {
                        let (ran, executed) = both(&policy, fails, permanent_at);
                        assert_eq!(
                            ran, executed,
                            "{name} max_attempts={max_attempts} fails={fails} permanent_at={permanent_at:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn run_keeps_the_last_errors_in_order_for_1_2_3_and_65_failures() {
        for fails in [1u32, 2, 3, 65] {
            for (name, policy) in policies(fails.into()) {
                let retrier = Retrier::new(policy);
                let got = retrier.run(|a| op(a.number, fails), |_| Verdict::TRANSIENT);
                let first_kept = fails.saturating_sub(HISTORY as u32) + 1;
                match got {
                    Err(RetryError::Exhausted { attempts, reason, errors, .. }) => {
                        assert_eq!(attempts, fails, "{name}");
                        assert_eq!(reason, ExhaustReason::Attempts, "{name}");
                        assert_eq!(errors, (first_kept..=fails).collect::<Vec<_>>(), "{name} fails={fails}");
                    }
                    other => panic!("{name} fails={fails}: {other:?}"),
                }
                let stats = retrier.stats();
                assert_eq!(
                    (stats.calls, stats.attempts, stats.retries),
                    (1, fails.into(), u64::from(fails) - 1),
                    "{name}"
                );
                assert_eq!(stats.exhausted(ExhaustReason::Attempts), 1, "{name}");
            }
        }
    }

    #[test]
    fn a_rejection_after_in_place_and_spilled_errors_is_the_rejected_error() {
        for permanent_at in [1u32, 2, 3, 4, 65, 66] {
            for (name, policy) in policies(100) {
                let retrier = Retrier::new(policy);
                let got = retrier.run(
                    |a| op(a.number, 1000),
                    |e| if *e == permanent_at { Verdict::Permanent } else { Verdict::TRANSIENT },
                );
                match got {
                    Err(RetryError::Rejected(e)) => assert_eq!(e, permanent_at, "{name}"),
                    other => panic!("{name} permanent_at={permanent_at}: {other:?}"),
                }
                let stats = retrier.stats();
                assert_eq!((stats.calls, stats.attempts, stats.rejections), (1, permanent_at.into(), 1), "{name}");
            }
        }
    }
}

use retryrs::Policy;

/// A hedged call cancelled while its attempts run made them: the stats count an attempt,
/// as for a call that does not hedge (CHANGELOG: "an attempt ended by the call's
/// cancellation now counts in `attempts`"). It counted none, on every host (the Rust async
/// executor, Python's and Node's hedged calls all end through `HedgeCall::cancel`).
#[test]
fn a_hedged_call_cancelled_during_its_attempts_counts_them_as_made() {
    use retryrs::hedge::{HedgeCall, Step};
    use retryrs::{Hedging, Stats};
    use std::time::Duration;
    let policy = Policy::builder().hedge(Some(Hedging::fixed_ms(2, 10.0).unwrap())).deadline(None).build().unwrap();
    for in_flight in [1u32, 2] {
        let stats = Stats::new();
        let mut sink = |e: &retryrs::Event<'_>| stats.observe(e);
        let mut call = HedgeCall::start(&policy, Duration::ZERO);
        assert_eq!(call.poll(Duration::ZERO, &mut sink), Ok(Step::Launch(1)));
        if in_flight == 2 {
            let at = Duration::from_millis(10);
            assert_eq!(call.poll(at, &mut sink), Ok(Step::Launch(2)));
        }
        assert_eq!(call.cancel(Duration::from_millis(15), &mut sink).map(|s| s.len()), Ok(in_flight));
        let s = stats.snapshot();
        assert_eq!((s.calls, s.cancellations), (1, 1));
        assert!(s.attempts >= 1, "{in_flight} attempt(s) in flight when cancelled, {} counted", s.attempts);
    }
    // Cancelled between attempts (none in flight): none is counted.
    let stats = Stats::new();
    let mut call = HedgeCall::start(&policy, Duration::ZERO);
    assert_eq!(call.cancel(Duration::ZERO, &mut |e| stats.observe(e)).map(|s| s.len()), Ok(0));
    assert_eq!(stats.snapshot().attempts, 0);
}
