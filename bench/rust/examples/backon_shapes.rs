//! Issue 36 measured backon's blocking happy path at 6.0 ns "in a crate outside the repo",
//! where bench/rust measures 0.8 ns: which shapes of the operation and its error give
//! which figure? Each shape runs through backon (exponential, its defaults) and through
//! retryrs (deadline off, and the default policy with its 15 s deadline), fastest of many
//! short rounds, in one process:
//!
//! ```text
//! cargo run --release -p retryrs-bench-rust --example backon_shapes
//! # as a crate of its own builds it: cargo's default release profile
//! CARGO_TARGET_DIR=target/outside cargo run --release -p retryrs-bench-rust --example backon_shapes \
//!     --config 'profile.release.lto=false' --config 'profile.release.codegen-units=16' \
//!     --config 'profile.release.package.retryrs-bench-rust.codegen-units=16'
//! ```
//!
//! What it showed (2 cores, shared): no shape of the operation or its error moves backon
//! from 0.8 ns under this workspace's profile (one codegen unit for the bench, thin LTO):
//! a non-inlined operation or call gives 1.4 to 1.6 ns, a policy the compiler cannot see
//! through 2.4 ns, that plus `anyhow::Error` 3 ns. Under cargo's default release profile
//! (16 codegen units, no LTO), as a crate outside the repository gets, backon's happy path
//! is 4.1 to 5.6 ns in every shape (8 ns with a policy it cannot see through or with
//! jitter): issue 36's 6.0 ns. retryrs's default policy (15 s deadline, one coarse clock
//! read) is 6.5 to 8.4 ns there: 1.5x to 1.9x backon, where this profile's 0.8 ns backon
//! makes it 6x (any clock read costs more than backon's whole call once it inlines away).
//!
//! Shapes: the bench's own (a closure with a counter, a zero-sized error, the call inlined
//! into the timing loop); the operation a function that is not inlined; the error a
//! `String`, a `std::io::Error`, an `anyhow::Error` (types with drop glue); the whole
//! call in a function that is not inlined (as a harness's closure or a caller's function
//! boundary leaves it).

use std::hint::black_box;
use std::time::{Duration, Instant};

use backon::{BlockingRetryable, ExponentialBuilder};
use retryrs::{Attempt, Policy, Retrier, Verdict};

const ROUNDS: usize = 41;
const CALLS: u32 = 20_000;

#[derive(Debug)]
struct Busy;

fn measure(mut f: impl FnMut()) -> f64 {
    (0..ROUNDS)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..CALLS {
                f();
            }
            started.elapsed().as_nanos() as f64 / f64::from(CALLS)
        })
        .fold(f64::INFINITY, f64::min)
}

#[inline(never)]
fn op_out_of_line() -> Result<u32, Busy> {
    Ok(black_box(1))
}

#[inline(never)]
fn backon_call_out_of_line(b: ExponentialBuilder) -> u32 {
    (|| Ok::<_, Busy>(black_box(1u32))).retry(b).call().unwrap()
}

#[inline(never)]
fn ours_call_out_of_line(r: &Retrier) -> u32 {
    r.run(|a: &Attempt| Ok::<_, Busy>(black_box(a.number)), |_| Verdict::TRANSIENT).unwrap()
}

#[inline(never)]
fn backon_anyhow_opaque(b: ExponentialBuilder) -> u32 {
    (|| Ok::<_, anyhow::Error>(black_box(1u32))).retry(black_box(b)).call().unwrap()
}

#[inline(never)]
fn ours_anyhow_opaque(r: &Retrier) -> u32 {
    black_box(r).run(|a: &Attempt| Ok::<_, anyhow::Error>(black_box(a.number)), |_| Verdict::TRANSIENT).unwrap()
}

/// One shape's three figures: backon, retryrs deadline off, retryrs default policy.
macro_rules! shape {
    ($rows:ident, $name:expr, $backon:expr, $ours:expr) => {{
        let b = ExponentialBuilder::default();
        let off = Retrier::new(Policy::builder().deadline(None).build().unwrap());
        let default = Retrier::new(Policy::builder().build().unwrap());
        let theirs = measure(|| {
            black_box($backon(b));
        });
        let ours_off = measure(|| {
            black_box($ours(&off));
        });
        let ours_default = measure(|| {
            black_box($ours(&default));
        });
        $rows.push(($name, theirs, ours_off, ours_default));
    }};
}

fn main() {
    let mut rows: Vec<(&str, f64, f64, f64)> = vec![];
    shape!(
        rows,
        "bench/rust's shape: counter in the closure, zero-sized error, inlined",
        |b| {
            let mut n = 0u32;
            (|| {
                n += 1;
                Ok::<_, Busy>(black_box(n))
            })
            .retry(b)
            .call()
            .unwrap()
        },
        |r: &Retrier| r.run(|a: &Attempt| Ok::<_, Busy>(black_box(a.number)), |_| Verdict::TRANSIENT).unwrap()
    );
    shape!(rows, "the operation a function not inlined", |b| op_out_of_line.retry(b).call().unwrap(), |r: &Retrier| r
        .run(|_: &Attempt| op_out_of_line(), |_| Verdict::TRANSIENT)
        .unwrap());
    shape!(rows, "error String", |b| (|| Ok::<_, String>(black_box(1u32))).retry(b).call().unwrap(), |r: &Retrier| r
        .run(|a: &Attempt| Ok::<_, String>(black_box(a.number)), |_| Verdict::TRANSIENT)
        .unwrap());
    shape!(
        rows,
        "error std::io::Error",
        |b| (|| Ok::<_, std::io::Error>(black_box(1u32))).retry(b).call().unwrap(),
        |r: &Retrier| r
            .run(|a: &Attempt| Ok::<_, std::io::Error>(black_box(a.number)), |_| Verdict::TRANSIENT)
            .unwrap()
    );
    shape!(
        rows,
        "error anyhow::Error",
        |b| (|| Ok::<_, anyhow::Error>(black_box(1u32))).retry(b).call().unwrap(),
        |r: &Retrier| r
            .run(|a: &Attempt| Ok::<_, anyhow::Error>(black_box(a.number)), |_| Verdict::TRANSIENT)
            .map_err(|e| e.to_string())
            .unwrap()
    );
    shape!(rows, "the whole call a function not inlined", backon_call_out_of_line, ours_call_out_of_line);
    shape!(
        rows,
        "the policy opaque to the compiler (black_box)",
        |b| (|| Ok::<_, Busy>(black_box(1u32))).retry(black_box(b)).call().unwrap(),
        |r: &Retrier| black_box(r)
            .run(|a: &Attempt| Ok::<_, Busy>(black_box(a.number)), |_| Verdict::TRANSIENT)
            .unwrap()
    );
    shape!(
        rows,
        "backon with jitter",
        |b: ExponentialBuilder| (|| Ok::<_, Busy>(black_box(1u32))).retry(b.with_jitter()).call().unwrap(),
        |r: &Retrier| r.run(|a: &Attempt| Ok::<_, Busy>(black_box(a.number)), |_| Verdict::TRANSIENT).unwrap()
    );
    shape!(
        rows,
        "error anyhow::Error, the policy opaque, the whole call not inlined",
        backon_anyhow_opaque,
        ours_anyhow_opaque
    );
    let _ = Duration::ZERO;
    println!("| shape | backon ns | retryrs deadline off ns | ratio | retryrs default policy ns | ratio |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, theirs, off, default) in rows {
        println!(
            "| {name} | {theirs:.1} | {off:.1} | {:.2}x | {default:.1} | {:.2}x |",
            off / theirs,
            default / theirs
        );
    }
}
