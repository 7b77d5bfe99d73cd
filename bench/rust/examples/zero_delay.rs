//! One bench case alone, for `valgrind --tool=callgrind` (instruction counts per call,
//! retryrs against backon): `cargo build --release -p retryrs-bench-rust --example
//! zero_delay`, then run it with `ours` or `backon` and a call count.

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
        other => panic!("unknown case {other:?}: ours, ours_sized, happy or backon"),
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
