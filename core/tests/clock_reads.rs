//! No clock read the policy does not need (issue 25), counted by a clock that counts its
//! reads: with neither a deadline nor an attempt timeout the happy path reads no clock;
//! with them, one read per attempt while the retries' delays are zero (a failure's time
//! is the next attempt's start). After a real wait the clock is read once more, since the
//! deadline is checked again after every wait (the contract's "One call").
//!
//! The async executor is counted here on a virtual clock, where it reads as the blocking
//! one does. On the real clock it also reads after a zero-delay retry's yield (other
//! tasks ran meanwhile, for as long as they took, and the attempt's bound starts when the
//! attempt does): with a deadline, two reads per retried attempt there.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use retryrs::{AsyncRun, Attempt, CancelToken, Clock, Jitter, Policy, PolicyBuilder, Retrier, Verdict, VirtualClock};

struct Counting {
    inner: VirtualClock,
    reads: AtomicUsize,
}

impl Counting {
    fn new() -> Self {
        Counting { inner: VirtualClock::new(), reads: AtomicUsize::new(0) }
    }
    fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }
}

impl Clock for Counting {
    fn now(&self) -> Duration {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.now()
    }
    fn sleep(&self, delay: Duration, cancel: Option<&CancelToken>) -> Result<(), retryrs::clock::Cancelled> {
        self.inner.sleep(delay, cancel)
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn policy() -> PolicyBuilder {
    Policy::builder().jitter(Jitter::None).deadline(None).attempt_timeout(None)
}

/// Fails `failures` times, then succeeds: the reads the call made, blocking and async
/// (both must agree).
fn reads(policy: Policy, failures: u32) -> usize {
    let retrier = Retrier::new(policy);
    let op = move |n: u32| if n <= failures { Err(std::io::Error::other("503")) } else { Ok(n) };
    let async_reads = {
        let clock = Counting::new();
        let call = retrier.execute_async(
            AsyncRun::new(|_| std::future::ready(())).clock(&clock),
            |a: Attempt| std::future::ready(op(a.number)),
            |_| Verdict::TRANSIENT,
        );
        assert_eq!(block_on(call).unwrap(), failures + 1);
        clock.reads()
    };
    #[cfg(feature = "blocking")]
    {
        let clock = Counting::new();
        let got =
            retrier.execute(retryrs::Run::default().clock(&clock), |a: &Attempt| op(a.number), |_| Verdict::TRANSIENT);
        assert_eq!(got.unwrap(), failures + 1);
        assert_eq!(clock.reads(), async_reads, "the blocking and async executors read the clock alike");
    }
    async_reads
}

#[test]
fn with_the_deadline_and_attempt_timeout_off_no_clock_is_read() {
    assert_eq!(reads(policy().build().unwrap(), 0), 0, "happy path");
    assert_eq!(reads(policy().initial_delay(Duration::ZERO).build().unwrap(), 2), 0, "two zero-delay failures");
    assert_eq!(reads(policy().initial_delay(ms(100)).build().unwrap(), 2), 0, "two failures with waits");
}

#[test]
fn with_a_deadline_zero_delay_retries_read_the_clock_once_per_attempt() {
    let p = policy().deadline(Some(ms(1000))).initial_delay(Duration::ZERO).build().unwrap();
    assert_eq!(reads(p.clone(), 0), 1, "happy path: the start");
    assert_eq!(reads(p, 2), 3, "three attempts, three reads");
}

#[test]
fn with_an_attempt_timeout_alone_each_attempt_reads_the_clock_once() {
    // The failure's time decides nothing: only each attempt's start (its bound) is read.
    for delay in [Duration::ZERO, ms(100)] {
        let p = policy().attempt_timeout(Some(ms(500))).initial_delay(delay).build().unwrap();
        assert_eq!(reads(p.clone(), 0), 1, "happy path, delay {delay:?}");
        assert_eq!(reads(p, 2), 3, "three attempts, three reads, delay {delay:?}");
    }
}

#[test]
fn with_a_deadline_a_real_wait_adds_one_read_after_it() {
    // The deadline is checked again after each wait, so the time after it is read.
    let p = policy().deadline(Some(ms(5000))).initial_delay(ms(100)).build().unwrap();
    assert_eq!(reads(p, 2), 5, "the start, then per retry: the failure and the end of the wait");
}

/// Polls to completion: the virtual clock's waits yield once and need no timer.
fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    use std::task::{Context, Poll, Waker};
    let mut fut = std::pin::pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
}
