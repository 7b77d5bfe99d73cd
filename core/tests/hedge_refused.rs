//! A policy that hedges is refused, saying why, by the executors that run one attempt at
//! a time and so cannot abandon one (issue 26): they never silently retry by the backoff
//! knobs instead. (The async executor hedges: tests/async_hedge.rs.)
#![cfg(feature = "blocking")]

use retryrs::{Attempt, Hedging, Policy, Retrier, RetryError, Verdict};
use std::cell::Cell;

fn hedged() -> Retrier {
    let hedging = Hedging::fixed_ms(3, 50.0).unwrap();
    Retrier::new(Policy::builder().name("reads").hedge(Some(hedging)).build().unwrap())
}

fn assert_refused<T: std::fmt::Debug>(got: Result<T, RetryError<std::io::Error>>, ran: u32, host: &str) {
    assert_eq!(ran, 0, "no attempt ran");
    let err = got.expect_err("a hedging policy is refused");
    let text = err.to_string();
    assert!(matches!(err, RetryError::Refused(_)), "{err:?}");
    assert_eq!(err.attempts(), 0);
    assert!(err.last_error().is_none());
    assert!(text.starts_with("reads: this policy hedges"), "{text}");
    assert!(text.contains(host), "{text}");
    assert!(text.contains("HedgeCall"), "says what to use instead: {text}");
}

#[cfg(feature = "blocking")]
#[test]
fn the_blocking_executor_refuses_a_hedging_policy_before_any_attempt() {
    let ran = Cell::new(0);
    let got = hedged().run(
        |_: &Attempt| {
            ran.set(ran.get() + 1);
            Err::<(), _>(std::io::Error::other("503"))
        },
        |_| Verdict::TRANSIENT,
    );
    assert_refused(got, ran.get(), "cannot abandon an attempt");
}

#[cfg(feature = "blocking")]
#[test]
fn a_policy_without_hedging_still_retries() {
    let retrier = Retrier::new(Policy::builder().max_attempts(2).build().unwrap());
    let _virtual_time = retryrs::testing::scoped();
    let got = retrier.run(|a: &Attempt| if a.number < 2 { Err("503") } else { Ok(a.number) }, |_| Verdict::TRANSIENT);
    assert_eq!(got.unwrap(), 2);
}
