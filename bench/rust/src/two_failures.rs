//! Two zero-delay failures then success, each failure `error()`, as one call to time:
//! what bench/rust measures and examples/one_case counts, one code for both.

use std::hint::black_box;

use backon::{BlockingRetryable, ConstantBuilder};
use retryrs::{Attempt, Retrier, Verdict};

/// Through `Retrier::run` (`retrier`: zero delays, no jitter).
pub fn ours_two_failures<'a, E: std::fmt::Debug + 'a>(retrier: &'a Retrier, error: fn() -> E) -> impl FnMut() + 'a {
    move || {
        let got = retrier.run(
            |a: &Attempt| if black_box(a.number) < 3 { Err(error()) } else { Ok(a.number) },
            |_| Verdict::TRANSIENT,
        );
        black_box(got.unwrap());
    }
}

/// Through backon's `BlockingRetryable` (`backon`: a constant zero delay).
pub fn backon_two_failures<E: std::fmt::Debug>(backon: ConstantBuilder, error: fn() -> E) -> impl FnMut() {
    move || {
        let mut n = 0u32;
        let got = (|| {
            n += 1;
            if black_box(n) < 3 {
                Err(error())
            } else {
                Ok(n)
            }
        })
        .retry(backon)
        .call();
        black_box(got.unwrap());
    }
}
