//! One bench case alone, for instruction counts (the machine is shared, so wall times are
//! noisy; counts are not):
//!
//! ```text
//! cargo build --release -p retryrs-bench-rust --example one_case
//! valgrind --tool=callgrind target/release/examples/one_case ours 10000
//! valgrind --tool=callgrind target/release/examples/one_case ours 20000
//! ```
//!
//! The difference of the two totals over 10000 is the instructions per call. Cases: `ours`
//! and `backon` (two zero-delay failures then success, each in a function of its own),
//! `ours_sized` (the same with an error that is not zero-sized, which the history keeps),
//! `ours_loop` and `backon_loop` (the call inlined into its loop, as the bench runs it),
//! `ours_boxed` and `backon_boxed` (the same with an error that owns a boxed source),
//! `happy` (retryrs's happy path, deadline off); async, every call awaited in one task
//! on a current-thread tokio runtime as the bench runs them: `async_happy` and
//! `backon_async_happy` (the happy path, deadline off), `async_zero` (two zero-delay
//! failures then success; backon's zero delay is a tokio timer, not comparable by count).
//! The default policy (15 s deadline), issue 36: `default` (blocking happy path) against
//! `backon_happy`, `backon_happy_coarse` (plus the coarse clock read retryrs makes) and
//! `backon_happy_clock` (plus `Instant::now()`); `async_default` against
//! `backon_async_timeout` (backon under `tokio::time::timeout`). Under valgrind a clock
//! read is a system call whose kernel side is not counted: compare those by wall time.

use std::hint::black_box;
use std::time::Duration;

use backon::{BlockingRetryable, ConstantBuilder, ExponentialBuilder, Retryable};
use retryrs::{Attempt, Clock, Jitter, Policy, Retrier, SystemClock, Verdict};

#[derive(Debug)]
struct Busy;

/// The async executor's error for an attempt dropped at its bound (none here).
impl From<retryrs::TimedOut> for Busy {
    fn from(_: retryrs::TimedOut) -> Self {
        Busy
    }
}

// bench/rust's two-failure calls and its error with a boxed source, the same code.
#[path = "../src/two_failures.rs"]
mod two_failures;
#[path = "../src/wrapped.rs"]
mod wrapped;
use two_failures::{backon_two_failures, ours_two_failures};
use wrapped::Wrapped;

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "ours".into());
    let calls: u32 = args.next().map_or(100_000, |n| n.parse().expect("a call count"));
    match which.as_str() {
        "ours" => {
            let zero = Retrier::new(
                Policy::builder().initial_delay(Duration::ZERO).jitter(Jitter::None).deadline(None).build().unwrap(),
            );
            for _ in 0..calls {
                ours(&zero);
            }
        }
        "ours_sized" => {
            // An error that is not zero-sized: the history stores it.
            let zero = Retrier::new(
                Policy::builder().initial_delay(Duration::ZERO).jitter(Jitter::None).deadline(None).build().unwrap(),
            );
            for _ in 0..calls {
                ours_sized(&zero);
            }
        }
        // As the bench runs them: the call inlined into its loop.
        "ours_loop" => ours_loop(calls, || Busy),
        // bench/rust's boxed-source row: an error with a message and a boxed source.
        "ours_boxed" => ours_loop(calls, Wrapped::new),
        "backon_boxed" => backon_loop(calls, Wrapped::new),
        "backon_loop" => backon_loop(calls, || Busy),
        "happy" => {
            let happy = Retrier::new(Policy::builder().deadline(None).build().unwrap());
            for _ in 0..calls {
                let got = happy.run(|a: &Attempt| Ok::<_, Busy>(black_box(a.number)), |_| Verdict::TRANSIENT);
                black_box(got.unwrap());
            }
        }
        // The default policy (15 s deadline): the call's start read from the clock.
        "default" => {
            let default = Retrier::new(Policy::builder().build().unwrap());
            repeat(calls, || {
                let got = default.run(|a: &Attempt| Ok::<_, Busy>(black_box(a.number)), |_| Verdict::TRANSIENT);
                black_box(got.unwrap());
            });
        }
        "backon_happy" => {
            let backon_happy = ExponentialBuilder::default();
            repeat(calls, || {
                let got = (|| Ok::<_, Busy>(black_box(1u32))).retry(backon_happy).call();
                black_box(got.unwrap());
            });
        }
        // backon plus the one clock read a deadline needs, the coarse one retryrs makes
        // (the fair baseline of `default`) or std's.
        "backon_happy_coarse" => {
            let backon_happy = ExponentialBuilder::default();
            repeat(calls, || {
                let started = black_box(SystemClock.now_coarse());
                let got = (|| Ok::<_, Busy>(black_box(1u32))).retry(backon_happy).call();
                black_box((got.unwrap(), started));
            });
        }
        "backon_happy_clock" => {
            let backon_happy = ExponentialBuilder::default();
            repeat(calls, || {
                let started = black_box(std::time::Instant::now());
                let got = (|| Ok::<_, Busy>(black_box(1u32))).retry(backon_happy).call();
                black_box((got.unwrap(), started));
            });
        }
        "backon" => {
            let backon_zero = ConstantBuilder::default().with_delay(Duration::ZERO).with_max_times(4);
            for _ in 0..calls {
                theirs(backon_zero);
            }
        }
        "async_happy" => {
            let happy = Retrier::new(Policy::builder().deadline(None).build().unwrap());
            let happy = &happy;
            block_on_repeat(calls, || async move {
                let got = happy
                    .run_async(|a: Attempt| async move { Ok::<_, Busy>(black_box(a.number)) }, |_| Verdict::TRANSIENT)
                    .await;
                black_box(got.unwrap());
            });
        }
        "backon_async_happy" => {
            let backon_happy = ExponentialBuilder::default();
            block_on_repeat(calls, || async move {
                let got = (|| async { Ok::<_, Busy>(black_box(1u32)) }).retry(backon_happy).await;
                black_box(got.unwrap());
            });
        }
        "async_default" => {
            let default = Retrier::new(Policy::builder().build().unwrap());
            let default = &default;
            block_on_repeat(calls, || async move {
                let got = default
                    .run_async(|a: Attempt| async move { Ok::<_, Busy>(black_box(a.number)) }, |_| Verdict::TRANSIENT)
                    .await;
                black_box(got.unwrap());
            });
        }
        "backon_async_timeout" => {
            let backon_happy = ExponentialBuilder::default();
            block_on_repeat(calls, || async move {
                let retried = (|| async { Ok::<_, Busy>(black_box(1u32)) }).retry(backon_happy);
                let got = tokio::time::timeout(Duration::from_secs(15), retried).await;
                black_box(got.unwrap().unwrap());
            });
        }
        "async_zero" => {
            let zero = Retrier::new(
                Policy::builder().initial_delay(Duration::ZERO).jitter(Jitter::None).deadline(None).build().unwrap(),
            );
            let zero = &zero;
            block_on_repeat(calls, || async move {
                let got = zero
                    .run_async(
                        |a: Attempt| async move {
                            if black_box(a.number) < 3 {
                                Err(Busy)
                            } else {
                                Ok(a.number)
                            }
                        },
                        |_| Verdict::TRANSIENT,
                    )
                    .await;
                black_box(got.unwrap());
            });
        }
        other => panic!(
            "unknown case {other:?}: ours, ours_sized, ours_loop, ours_boxed, backon_boxed, happy, default, backon, backon_loop, \
             backon_happy, backon_happy_coarse, backon_happy_clock, async_happy, backon_async_happy, async_zero, \
             async_default or backon_async_timeout"
        ),
    }
}

/// `f` `calls` times, in one function of its own (as the bench's `measure`, inlined).
#[inline(never)]
fn repeat(calls: u32, mut f: impl FnMut()) {
    for _ in 0..calls {
        f();
    }
}

/// Two zero-delay failures, each `error()`, then success through `Retrier::run`, the call
/// inlined into its loop (as the bench runs it: the bench's own closure).
fn ours_loop<E: std::fmt::Debug>(calls: u32, error: fn() -> E) {
    let zero = Retrier::new(
        Policy::builder().initial_delay(Duration::ZERO).jitter(Jitter::None).deadline(None).build().unwrap(),
    );
    repeat(calls, ours_two_failures(&zero, error));
}

/// The same through backon with a constant zero delay.
fn backon_loop<E: std::fmt::Debug>(calls: u32, error: fn() -> E) {
    repeat(calls, backon_two_failures(ConstantBuilder::default().with_delay(Duration::ZERO).with_max_times(4), error));
}

/// `f()` awaited `calls` times in one task on a current-thread tokio runtime (as the
/// bench's `measure_async`).
fn block_on_repeat<F: std::future::Future<Output = ()>>(calls: u32, mut f: impl FnMut() -> F) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    rt.block_on(async {
        for _ in 0..calls {
            f().await;
        }
    });
}

#[inline(never)]
fn ours(zero: &Retrier) {
    let got =
        zero.run(|a: &Attempt| if black_box(a.number) < 3 { Err(Busy) } else { Ok(a.number) }, |_| Verdict::TRANSIENT);
    black_box(got.unwrap());
}

#[inline(never)]
fn ours_sized(zero: &Retrier) {
    let got = zero.run(
        |a: &Attempt| if black_box(a.number) < 3 { Err(std::io::ErrorKind::Other) } else { Ok(a.number) },
        |_| Verdict::TRANSIENT,
    );
    black_box(got.unwrap());
}

#[inline(never)]
fn theirs(backon_zero: ConstantBuilder) {
    let mut n = 0u32;
    let got = (|| {
        n += 1;
        if black_box(n) < 3 {
            Err(Busy)
        } else {
            Ok(n)
        }
    })
    .retry(backon_zero)
    .call();
    black_box(got.unwrap());
}
