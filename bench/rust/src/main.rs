//! bench/rust: what retryrs costs a Rust caller, against backon measured in the same run.
//!
//!   happy path      the operation succeeds at once; retryrs with its deadline off (a
//!                   policy that bounds nothing reads no clock), backon's exponential
//!                   backoff with its defaults;
//!   two failures    two failures then success, every delay zero (retryrs: initial delay
//!                   0, no jitter, no deadline; backon: a constant zero delay).
//!
//! Blocking (`Retrier::run` vs `BlockingRetryable`) and async on a current-thread tokio
//! runtime (`Retrier::run_async` vs `Retryable`). The same two cases with retryrs's
//! default 15 s deadline on (one clock read per attempt, the call's start on the coarse
//! clock) are shown against the same backon figures, and the blocking happy path also
//! against backon plus one clock read (the "(context)" rows: backon's call inlines away
//! to under a nanosecond, less than any clock read, and a call that keeps a deadline must
//! read one); the async default policy against backon under `tokio::time::timeout` (which
//! reads tokio's clock once, as retryrs does); and two failures with an error that owns a
//! boxed source, both libraries.
//!
//! A second table (issue 27): the happy path of a retrier without breaker or budget,
//! against one with an idle closed circuit breaker and one with each budget kind.
//!
//! Each figure is the **fastest** of many short rounds, in ns per call: the machine this
//! runs on is shared, and a round in which the thread was descheduled measures the
//! scheduler, not the code (the median of a few long rounds moved by 2x between runs).
//! A blocking row's two sides run in alternating rounds (`measure_pair`).
//! Prints markdown tables and writes them to argv[1] if given. A benchmark, not a test: it
//! never fails on the numbers.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use backon::{BlockingRetryable, ConstantBuilder, ExponentialBuilder, Retryable};
use retryrs::{
    Attempt, BreakerConfig, CircuitBreaker, Clock, Jitter, Policy, QuotaBudget, RatioBudget, Retrier, RetryBudget,
    SystemClock, Verdict,
};

const ROUNDS: usize = 41;
const CALLS: u32 = 20_000;

#[derive(Debug)]
struct Busy;

/// The async executor's error for an attempt dropped at its bound (none here: nothing is
/// bounded).
impl From<retryrs::TimedOut> for Busy {
    fn from(_: retryrs::TimedOut) -> Self {
        Busy
    }
}

mod two_failures;
mod wrapped;
use two_failures::{backon_two_failures, ours_two_failures};
use wrapped::Wrapped;

impl From<retryrs::TimedOut> for Wrapped {
    fn from(_: retryrs::TimedOut) -> Self {
        Wrapped::new()
    }
}

/// The fastest round's ns per call of `f`, run `CALLS` times a round.
fn measure(mut f: impl FnMut()) -> f64 {
    (0..ROUNDS).map(|_| round(CALLS, &mut f)).fold(f64::INFINITY, f64::min)
}

/// One round: ns per call of `calls` calls of `f`.
fn round(calls: u32, f: &mut impl FnMut()) -> f64 {
    let started = Instant::now();
    for _ in 0..calls {
        f();
    }
    started.elapsed().as_nanos() as f64 / f64::from(calls)
}

/// The fastest round's ns per call of `ours` and of `theirs`, their rounds alternating
/// (which goes first alternating too): this machine's speed moves between phases, and
/// all of one's rounds before the other's compared two phases (the same build's ratio
/// for two zero-delay failures read 0.95x, 1.27x and 1.72x in three runs).
fn measure_pair(mut ours: impl FnMut(), mut theirs: impl FnMut()) -> (f64, f64) {
    let (mut best_ours, mut best_theirs) = (f64::INFINITY, f64::INFINITY);
    for i in 0..ROUNDS {
        if i % 2 == 0 {
            best_ours = best_ours.min(round(CALLS, &mut ours));
            best_theirs = best_theirs.min(round(CALLS, &mut theirs));
        } else {
            best_theirs = best_theirs.min(round(CALLS, &mut theirs));
            best_ours = best_ours.min(round(CALLS, &mut ours));
        }
    }
    (best_ours, best_theirs)
}

/// [`round`] for an async call, awaited in the calling task, fastest of `ROUNDS`.
async fn measure_async<F: std::future::Future<Output = ()>>(calls: u32, mut f: impl FnMut() -> F) -> f64 {
    let mut rounds = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..calls {
            f().await;
        }
        rounds.push(started.elapsed().as_nanos() as f64 / f64::from(calls));
    }
    rounds.into_iter().fold(f64::INFINITY, f64::min)
}

fn main() {
    // `--outside FILE`: the build under the bench-outside profile (cargo's default release
    // profile, as a crate of its own gets it): its table is added to FILE, each case named
    // with OUTSIDE, and the breaker and budget table is left to the first run.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (outside, path) = match args.as_slice() {
        [flag, path] if flag == "--outside" => (true, Some(path.clone())),
        [path] => (false, Some(path.clone())),
        [] => (false, None),
        _ => panic!("usage: retryrs-bench-rust [--outside] [FILE]"),
    };
    let happy = Retrier::new(Policy::builder().deadline(None).build().unwrap());
    let zero = Retrier::new(
        Policy::builder().initial_delay(Duration::ZERO).jitter(Jitter::None).deadline(None).build().unwrap(),
    );
    let happy_deadline = Retrier::new(Policy::builder().build().unwrap());
    let zero_deadline =
        Retrier::new(Policy::builder().initial_delay(Duration::ZERO).jitter(Jitter::None).build().unwrap());
    let backon_happy = ExponentialBuilder::default();
    let backon_zero = ConstantBuilder::default().with_delay(Duration::ZERO).with_max_times(4);

    let mut rows = vec![];

    // Blocking, each row's two sides measured in alternating rounds.
    let ours_happy = || {
        let got = happy.run(|a: &Attempt| Ok::<_, Busy>(black_box(a.number)), |_| Verdict::TRANSIENT);
        black_box(got.unwrap());
    };
    let backon_happy_call = || {
        let mut n = 0u32;
        let got = (|| {
            n += 1;
            Ok::<_, Busy>(black_box(n))
        })
        .retry(backon_happy)
        .call();
        black_box(got.unwrap());
    };
    let (ours, theirs) = measure_pair(ours_happy, backon_happy_call);
    rows.push(("blocking, happy path", ours, theirs));
    let (ours, theirs) = measure_pair(ours_two_failures(&zero, || Busy), backon_two_failures(backon_zero, || Busy));
    rows.push(("blocking, two zero-delay failures", ours, theirs));

    // The same with the deadline on (the default 15 s): one clock read per attempt, the
    // call's start on the coarse clock.
    let ours_default = || {
        let got = happy_deadline.run(|a: &Attempt| Ok::<_, Busy>(black_box(a.number)), |_| Verdict::TRANSIENT);
        black_box(got.unwrap());
    };
    let (ours, theirs) = measure_pair(ours_default, backon_happy_call);
    rows.push(("blocking, happy path, default policy (15 s deadline)", ours, theirs));
    // backon's whole call inlines away (under a nanosecond): any call that keeps a deadline
    // reads a clock, which costs more than that. The fair baselines: backon plus the read
    // retryrs makes (the coarse clock), and plus the read a backon user would make
    // (`Instant::now()`).
    let (ours, coarse_read) = measure_pair(ours_default, || {
        let started = black_box(SystemClock.now_coarse());
        let got = (|| Ok::<_, Busy>(black_box(1u32))).retry(backon_happy).call();
        black_box((got.unwrap(), started));
    });
    rows.push((
        "(context) blocking, happy path, default policy vs backon + the same coarse clock read",
        ours,
        coarse_read,
    ));
    let (ours, fine_read) = measure_pair(ours_default, || {
        let started = black_box(Instant::now());
        let got = (|| Ok::<_, Busy>(black_box(1u32))).retry(backon_happy).call();
        black_box((got.unwrap(), started));
    });
    rows.push(("(context) blocking, happy path, default policy vs backon + `Instant::now()`", ours, fine_read));
    let (ours, theirs) =
        measure_pair(ours_two_failures(&zero_deadline, || Busy), backon_two_failures(backon_zero, || Busy));
    rows.push(("blocking, two zero-delay failures, deadline on", ours, theirs));

    // Two zero-delay failures with an error that owns a boxed source, both libraries.
    let (ours, theirs) =
        measure_pair(ours_two_failures(&zero, Wrapped::new), backon_two_failures(backon_zero, Wrapped::new));
    rows.push(("blocking, two zero-delay failures, error with a boxed source", ours, theirs));

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
    // The default policy (15 s deadline, each attempt bounded) against backon bounded
    // the way a tokio user bounds it: the whole retry under tokio::time::timeout.
    let happy_deadline = &happy_deadline;
    let ours = rt.block_on(measure_async(CALLS, || async move {
        let got = happy_deadline
            .run_async(|a: Attempt| async move { Ok::<_, Busy>(black_box(a.number)) }, |_| Verdict::TRANSIENT)
            .await;
        black_box(got.unwrap());
    }));
    let theirs = rt.block_on(measure_async(CALLS, || async move {
        let retried = (|| async { Ok::<_, Busy>(black_box(1u32)) }).retry(backon_happy);
        let got = tokio::time::timeout(Duration::from_secs(15), retried).await;
        black_box(got.unwrap().unwrap());
    }));
    rows.push(("async (tokio), happy path, default policy vs backon + `tokio::time::timeout`", ours, theirs));
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

    let mut table = String::new();
    if outside {
        table.push_str(OUTSIDE_HEADING);
    }
    table.push_str("| case | retryrs ns/call | backon ns/call | ratio |\n|---|---:|---:|---:|\n");
    for (case, ours, theirs) in rows {
        let case = if outside { format!("{OUTSIDE}{case}") } else { case.to_string() };
        // Two decimals, or enough to show a ratio far below 1 (backon's 1 ms timer per
        // zero-delay retry under tokio) as more than 0.00x.
        let ratio = ours / theirs;
        let digits = if ratio < 0.01 { 5 } else { 2 };
        table.push_str(&format!("| {case} | {ours:.1} | {theirs:.1} | {ratio:.digits$}x |\n"));
    }
    table.push('\n');
    if !outside {
        table.push_str(&kinds());
    }
    print!("{table}");
    if let Some(path) = path {
        let written = if outside {
            let before = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
            format!("{before}\n{table}")
        } else {
            table
        };
        std::fs::write(&path, written).unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
    }
}

/// The prefix of each case measured under the bench-outside profile.
const OUTSIDE: &str = "(as a crate of its own) ";
const OUTSIDE_HEADING: &str = "The same cases built as a crate outside this workspace builds them (cargo's default \
release profile: no LTO, 16 codegen units; `--profile bench-outside`), where backon's happy path no longer \
inlines away. Issue 36's figures (backon's happy path 6.0 ns) came from such a build.\n\n";

/// Issue 27: the blocking happy path (deadline off) of a retrier without a breaker or a
/// budget, against one with an idle closed breaker and one with each budget kind.
fn kinds() -> String {
    let plain = || Policy::builder().deadline(None);
    let breaker = Arc::new(CircuitBreaker::new(BreakerConfig::consecutive(5)).unwrap());
    let token_bucket = Arc::new(RetryBudget::new(10.0, 0.1).unwrap());
    let quota = Arc::new(RetryBudget::from(QuotaBudget::aws_standard()));
    let ratio = Arc::new(RetryBudget::from(RatioBudget::finagle_default(SystemClock.now())));
    let cases = [
        ("no breaker, no budget", plain().build().unwrap()),
        ("idle closed breaker (consecutive 5)", plain().breaker(Some(breaker)).build().unwrap()),
        ("token bucket budget (gRPC)", plain().budget(Some(token_bucket)).build().unwrap()),
        ("quota budget (AWS standard)", plain().budget(Some(quota)).build().unwrap()),
        ("ratio budget (Finagle)", plain().budget(Some(ratio)).build().unwrap()),
    ];
    let mut table = String::from(
        "| blocking happy path, deadline off | retryrs ns/call | vs no breaker, no budget |\n|---|---:|---:|\n",
    );
    let mut base = None;
    for (case, policy) in cases {
        let retrier = Retrier::new(policy);
        let ns = measure(|| {
            let got = retrier.run(|a: &Attempt| Ok::<_, Busy>(black_box(a.number)), |_| Verdict::TRANSIENT);
            black_box(got.unwrap());
        });
        let base = *base.get_or_insert(ns);
        table.push_str(&format!("| {case} | {ns:.1} | {:.2}x |\n", ns / base));
    }
    table
}
