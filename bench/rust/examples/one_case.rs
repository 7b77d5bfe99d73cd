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
//! `happy` (retryrs's happy path, deadline off).

use std::hint::black_box;
use std::time::Duration;

use backon::{BlockingRetryable, ConstantBuilder};
use retryrs::{Attempt, Jitter, Policy, Retrier, Verdict};

#[derive(Debug)]
struct Busy;

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
        other => panic!("unknown case {other:?}: ours, ours_sized, ours_loop, happy, backon or backon_loop"),
    }
}

/// `f` `calls` times, in one function of its own (as the bench's `measure`, inlined).
#[inline(never)]
fn repeat(calls: u32, mut f: impl FnMut()) {
    for _ in 0..calls {
        f();
    }
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
