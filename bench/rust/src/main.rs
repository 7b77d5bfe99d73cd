//! bench/rust: what retryrs costs a Rust caller, against backon measured in the same run.
//!
//!   happy path      the operation succeeds at once; retryrs with its deadline off (a
//!                   policy that bounds nothing reads no clock), backon's exponential
//!                   backoff with its defaults;
//!   two failures    two failures then success, every delay zero (retryrs: initial delay
//!                   0, no jitter, no deadline; backon: a constant zero delay).
//!
//! Blocking (`Retrier::run` vs `BlockingRetryable`) and async on a current-thread tokio
//! runtime (`Retrier::run_async` vs `Retryable`). Each figure is the median of several
//! rounds, in ns per call. Prints a markdown table and writes it to argv[1] if given. A
//! benchmark, not a test: it never fails on the numbers.

use std::hint::black_box;
use std::time::{Duration, Instant};

use backon::{BlockingRetryable, ConstantBuilder, ExponentialBuilder, Retryable};
use retryrs::{Attempt, Jitter, Policy, Retrier, Verdict};

const ROUNDS: usize = 7;
const CALLS: u32 = 200_000;

#[derive(Debug)]
struct Busy;

/// The async executor's error for an attempt dropped at its bound (none here: nothing is
/// bounded).
impl From<retryrs::TimedOut> for Busy {
    fn from(_: retryrs::TimedOut) -> Self {
        Busy
    }
}

/// The median over rounds of the ns per call of `f`, run `CALLS` times a round.
fn measure(f: impl FnMut()) -> f64 {
    measure_n(CALLS, f)
}

/// [`measure`] with `calls` calls a round.
fn measure_n(calls: u32, mut f: impl FnMut()) -> f64 {
    let mut rounds: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..calls {
                f();
            }
            started.elapsed().as_nanos() as f64 / f64::from(calls)
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[ROUNDS / 2]
}

/// [`measure_n`] for an async call, awaited in the calling task.
async fn measure_async<F: std::future::Future<Output = ()>>(calls: u32, mut f: impl FnMut() -> F) -> f64 {
    let mut rounds = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..calls {
            f().await;
        }
        rounds.push(started.elapsed().as_nanos() as f64 / f64::from(calls));
    }
    rounds.sort_by(f64::total_cmp);
    rounds[ROUNDS / 2]
}

fn main() {
    let happy = Retrier::new(Policy::builder().deadline(None).build().unwrap());
    let zero = Retrier::new(
        Policy::builder().initial_delay(Duration::ZERO).jitter(Jitter::None).deadline(None).build().unwrap(),
    );
    let backon_happy = ExponentialBuilder::default();
    let backon_zero = ConstantBuilder::default().with_delay(Duration::ZERO).with_max_times(4);

    let mut rows = vec![];

    // Blocking.
    let ours = measure(|| {
        let got = happy.run(|a: &Attempt| Ok::<_, Busy>(black_box(a.number)), |_| Verdict::TRANSIENT);
        black_box(got.unwrap());
    });
    let theirs = measure(|| {
        let mut n = 0u32;
        let got = (|| {
            n += 1;
            Ok::<_, Busy>(black_box(n))
        })
        .retry(backon_happy)
        .call();
        black_box(got.unwrap());
    });
    rows.push(("blocking, happy path", ours, theirs));
    let ours = measure(|| {
        let got = zero
            .run(|a: &Attempt| if black_box(a.number) < 3 { Err(Busy) } else { Ok(a.number) }, |_| Verdict::TRANSIENT);
        black_box(got.unwrap());
    });
    let theirs = measure(|| {
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
    rows.push(("blocking, two zero-delay failures", ours, theirs));

    // Async: every call awaited in one task on a current-thread runtime.
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let (happy, zero) = (&happy, &zero);
    let ours = rt.block_on(measure_async(CALLS, || async move {
        let got = happy
            .run_async(|a: Attempt| async move { Ok::<_, Busy>(black_box(a.number)) }, |_| Verdict::TRANSIENT)
            .await;
        black_box(got.unwrap());
    }));
    let theirs = rt.block_on(measure_async(CALLS, || async move {
        let got = (|| async { Ok::<_, Busy>(black_box(1u32)) }).retry(backon_happy).await;
        black_box(got.unwrap());
    }));
    rows.push(("async (tokio), happy path", ours, theirs));
    let ours = rt.block_on(measure_async(CALLS, || async move {
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
    }));
    // backon's zero delay is a tokio timer, which fires at the next millisecond tick:
    // each retry costs about 1 ms, so a few hundred calls a round are enough.
    let theirs = rt.block_on(measure_async(CALLS / 1000, || async move {
        let n = std::cell::Cell::new(0u32);
        let got = (|| async {
            n.set(n.get() + 1);
            if black_box(n.get()) < 3 {
                Err(Busy)
            } else {
                Ok(n.get())
            }
        })
        .retry(backon_zero)
        .await;
        black_box(got.unwrap());
    }));
    rows.push(("async (tokio), two zero-delay failures", ours, theirs));

    let mut table = String::from("| case | retryrs ns/call | backon ns/call | ratio |\n|---|---:|---:|---:|\n");
    for (case, ours, theirs) in rows {
        table.push_str(&format!("| {case} | {ours:.1} | {theirs:.1} | {:.2}x |\n", ours / theirs));
    }
    print!("{table}");
    if let Some(path) = std::env::args().nth(1) {
        std::fs::write(&path, &table).unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
    }
}
