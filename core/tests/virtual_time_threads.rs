//! Virtual time belongs to the thread that turned it on: two tests running in parallel, one
//! inside a virtual-time scope, do not see each other's clocks. Nothing here turns on the
//! process-wide switch, so these tests may run beside each other (and do, under the default
//! parallel harness).
// The retries here are blocking ones (Retrier::run).
#![cfg(feature = "blocking")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use retryrs::{testing, Clock, Jitter, Policy, Retrier, RetryError, Verdict};

/// Two attempts with one real 100 ms wait between them (unless the clock is virtual).
fn one_100ms_wait() -> Duration {
    let r = Retrier::new(
        Policy::builder()
            .max_attempts(2)
            .initial_delay_ms(100.0)
            .max_delay_ms(100.0)
            .jitter(Jitter::None)
            .deadline(None)
            .build()
            .unwrap(),
    );
    let started = Instant::now();
    let got: Result<(), _> = r.run(|_| Err(()), |_| Verdict::TRANSIENT);
    assert!(matches!(got, Err(RetryError::Exhausted { attempts: 2, .. })), "{got:?}");
    started.elapsed()
}

#[test]
fn a_scope_on_another_thread_leaves_this_threads_waits_real() {
    let opened = Arc::new(Barrier::new(2));
    let done = Arc::new(Barrier::new(2));
    let other = {
        let (opened, done) = (opened.clone(), done.clone());
        std::thread::spawn(move || {
            let scope = testing::scoped();
            assert!(one_100ms_wait() < Duration::from_secs(5), "virtual waits on the scope's thread");
            assert_eq!(scope.clock().now(), Duration::from_millis(100));
            opened.wait();
            done.wait(); // the scope stays open until the other thread has waited
            drop(scope);
        })
    };
    opened.wait();
    assert!(testing::any_on(), "the other thread's scope is open");
    assert!(!testing::is_on(), "but not on this thread");
    assert!(testing::clock().is_none());
    assert!(one_100ms_wait() >= Duration::from_millis(100), "this thread's wait is real");
    done.wait();
    other.join().unwrap();

    // The same with the other thread's switch (enable) instead of a scope.
    let other = {
        let (opened, done) = (opened.clone(), done.clone());
        std::thread::spawn(move || {
            testing::enable();
            opened.wait();
            done.wait();
            testing::disable();
        })
    };
    opened.wait();
    assert!(one_100ms_wait() >= Duration::from_millis(100), "another thread's enable() is its own");
    done.wait();
    other.join().unwrap();
}

// Two #[test]s the harness runs in parallel (its default): one holds a scope open until the
// other has waited, or for 10 s if the harness runs them one after the other.
static SCOPE_OPEN: AtomicBool = AtomicBool::new(false);
static OTHER_DONE: AtomicBool = AtomicBool::new(false);

fn wait_for(flag: &AtomicBool, at_most: Duration) -> bool {
    let until = Instant::now() + at_most;
    while !flag.load(Ordering::Acquire) {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

#[test]
fn parallel_test_inside_a_scope() {
    let scope = testing::scoped();
    assert!(one_100ms_wait() < Duration::from_secs(5));
    assert_eq!(scope.clock().now(), Duration::from_millis(100));
    SCOPE_OPEN.store(true, Ordering::Release);
    wait_for(&OTHER_DONE, Duration::from_secs(10));
    drop(scope);
}

#[test]
fn parallel_test_outside_any_scope() {
    let overlapped = wait_for(&SCOPE_OPEN, Duration::from_secs(10));
    assert!(one_100ms_wait() >= Duration::from_millis(100), "a parallel test's scope made this wait virtual");
    assert!(!testing::is_on());
    OTHER_DONE.store(true, Ordering::Release);
    if !overlapped {
        eprintln!("note: the harness ran the two parallel tests one after the other");
    }
}
