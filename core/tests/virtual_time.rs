//! The testing switches: scopes nest by count, whatever the order they are left in (across
//! threads for the process-wide ones), and the virtual clock keeps counting at magnitudes
//! validation accepts. Its own test binary, one test: the process-wide switch is checked
//! here, so nothing else may run beside these checks.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use retryrs::{testing, Clock, Jitter, Policy, Retrier, RetryError, Verdict};

fn scopes_nest_by_count() {
    assert!(!testing::is_on());
    // On one thread: the outer scope leaving first leaves the inner one on.
    let a = testing::scoped();
    let b = testing::scoped();
    drop(a);
    assert!(testing::is_on(), "leaving the outer scope first must not turn off the inner one");
    assert_eq!(testing::clock().unwrap().now(), b.clock().now());
    drop(b);
    assert!(!testing::is_on(), "the last scope left: virtual time is off");
    assert_eq!(testing::open_scopes(), 0);
    assert!(!testing::any_on());

    // The inner scope leaving first hands the clock back to the outer one.
    let outer = testing::scoped();
    outer.clock().advance(Duration::from_secs(5));
    let inner = testing::scoped();
    assert_eq!(testing::clock().unwrap().now(), Duration::ZERO);
    drop(inner);
    assert_eq!(testing::clock().unwrap().now(), Duration::from_secs(5));
    drop(outer);
    assert!(!testing::is_on());

    // A switch outlives scopes; scopes do not turn it off.
    testing::enable();
    drop(testing::scoped());
    assert!(testing::is_on());
    testing::disable();
    assert!(!testing::is_on());
    assert!(!testing::any_on());
}

fn process_wide_scopes_nest_by_count_across_threads() {
    // Thread A opens first, thread B second; A leaves first, then B.
    let opened = Arc::new(Barrier::new(2));
    let a_left = Arc::new(Barrier::new(2));
    let b = {
        let (opened, a_left) = (opened.clone(), a_left.clone());
        std::thread::spawn(move || {
            opened.wait(); // A's scope is open
            assert!(testing::is_on(), "a process-wide scope is seen by every thread");
            let scope = testing::scoped_process_wide();
            opened.wait(); // B's scope is open
            a_left.wait(); // A has left
            assert!(testing::is_on(), "B's scope is still open");
            assert_eq!(testing::clock().unwrap().now(), scope.clock().now());
            drop(scope);
        })
    };
    let a = testing::scoped_process_wide();
    opened.wait();
    opened.wait();
    drop(a);
    assert!(testing::is_on(), "leaving the outer scope first must not turn off B's");
    a_left.wait();
    b.join().unwrap();
    assert!(!testing::is_on(), "the last scope left: virtual time is off");
    assert_eq!(testing::open_process_wide_scopes(), 0);

    // A process-wide scope may end on another thread than the one that opened it.
    let scope = testing::scoped_process_wide();
    std::thread::spawn(move || drop(scope)).join().unwrap();
    assert!(!testing::is_on());

    // The process-wide switch is under every thread's own time.
    let global = testing::enable_process_wide();
    global.advance(Duration::from_secs(7));
    std::thread::spawn(|| assert_eq!(testing::clock().unwrap().now(), Duration::from_secs(7))).join().unwrap();
    let mine = testing::scoped();
    assert_eq!(testing::clock().unwrap().now(), Duration::ZERO, "this thread's scope comes first");
    drop(mine);
    assert_eq!(testing::clock().unwrap().now(), Duration::from_secs(7));
    testing::disable_process_wide();
    assert!(!testing::is_on());
    assert!(!testing::any_on());
}

fn a_thread_that_ends_takes_its_virtual_time_with_it() {
    std::thread::spawn(|| {
        testing::enable();
        std::mem::forget(testing::scoped());
        assert!(testing::any_on());
    })
    .join()
    .unwrap();
    assert!(!testing::any_on(), "nothing left on: the hot path is one load again");
}

fn a_scope_taken_to_another_thread_shares_the_clock() {
    let scope = testing::scoped();
    let clock = scope.clock().clone();
    std::thread::spawn(move || {
        let _there = testing::scoped_with(clock);
        testing::clock().unwrap().advance(Duration::from_secs(3));
    })
    .join()
    .unwrap();
    assert_eq!(scope.clock().now(), Duration::from_secs(3));
}

fn huge_virtual_waits_keep_the_deadline() {
    // Waits of 2e10 s each (past u64 nanoseconds) under a 5e10 s deadline: two waits fit,
    // the third would end past the deadline and must not start.
    let policy = Policy::builder()
        .max_attempts(10)
        .initial_delay_ms(2e13)
        .multiplier(1.0)
        .max_delay_ms(2e13)
        .jitter(Jitter::None)
        .deadline_ms(Some(5e13))
        .build()
        .unwrap();
    let scope = testing::scoped();
    let mut calls = 0;
    let r = Retrier::new(policy).run(
        |_: &retryrs::Attempt| -> Result<(), ()> {
            calls += 1;
            Err(())
        },
        |_| Verdict::TRANSIENT,
    );
    match r {
        Err(RetryError::Exhausted { attempts, reason, .. }) => {
            assert_eq!((attempts, reason.as_str()), (3, "deadline"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(calls, 3);
    assert_eq!(scope.clock().now(), Duration::from_secs(40_000_000_000));
}

#[test]
fn virtual_time() {
    scopes_nest_by_count();
    process_wide_scopes_nest_by_count_across_threads();
    a_thread_that_ends_takes_its_virtual_time_with_it();
    a_scope_taken_to_another_thread_shares_the_clock();
    huge_virtual_waits_keep_the_deadline();
}
