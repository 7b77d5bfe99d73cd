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
//! `happy` (retryrs's happy path, deadline off); async, every call awaited in one task
//! on a current-thread tokio runtime as the bench runs them: `async_happy` and
//! `backon_async_happy` (the happy path, deadline off), `async_zero` (two zero-delay
//! failures then success; backon's zero delay is a tokio timer, not comparable by count).

use std::hint::black_box;
use std::time::Duration;

use backon::{BlockingRetryable, ConstantBuilder, ExponentialBuilder, Retryable};
use retryrs::{Attempt, Jitter, Policy, Retrier, Verdict};

#[derive(Debug)]
struct Busy;

/// The async executor's error for an attempt dropped at its bound (none here).
impl From<retryrs::TimedOut> for Busy {
    fn from(_: retryrs::TimedOut) -> Self {
        Busy
    }
}

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
        "ours_loop" => {
            let zero = Retrier::new(
                Policy::builder().initial_delay(Duration::ZERO).jitter(Jitter::None).deadline(None).build().unwrap(),
            );
            repeat(calls, || {
                let got = zero.run(
                    |a: &Attempt| if black_box(a.number) < 3 { Err(Busy) } else { Ok(a.number) },
                    |_| Verdict::TRANSIENT,
                );
                black_box(got.unwrap());
            });
        }
        "backon_loop" => {
            let backon_zero = ConstantBuilder::default().with_delay(Duration::ZERO).with_max_times(4);
            repeat(calls, || {
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
            });
        }
        "happy" => {
            let happy = Retrier::new(Policy::builder().deadline(None).build().unwrap());
            for _ in 0..calls {
                let got = happy.run(|a: &Attempt| Ok::<_, Busy>(black_box(a.number)), |_| Verdict::TRANSIENT);
                black_box(got.unwrap());
            }
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
            "unknown case {other:?}: ours, ours_sized, ours_loop, happy, backon, backon_loop, async_happy, \
             backon_async_happy or async_zero"
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
