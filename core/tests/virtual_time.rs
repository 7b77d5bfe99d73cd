//! The testing switch: scopes nest by count, whatever the order threads leave them in, and
//! the virtual clock keeps counting at magnitudes validation accepts. Its own test binary:
//! the switch is process-wide, so nothing else may run beside these checks.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use retryrs::{testing, Clock, Jitter, Policy, Retrier, RetryError, Verdict};

fn scopes_nest_by_count() {
    assert!(!testing::is_on());
    // Thread A opens first, thread B second; A leaves first, then B.
    let opened = Arc::new(Barrier::new(2));
    let a_left = Arc::new(Barrier::new(2));
    let b = {
        let (opened, a_left) = (opened.clone(), a_left.clone());
        std::thread::spawn(move || {
            opened.wait(); // A's scope is open
            let scope = testing::scoped();
            opened.wait(); // B's scope is open
            a_left.wait(); // A has left
            assert!(testing::is_on(), "B's scope is still open");
            assert_eq!(testing::clock().unwrap().now(), scope.clock().now());
            drop(scope);
        })
    };
    let a = testing::scoped();
    opened.wait();
    opened.wait();
    drop(a);
    assert!(testing::is_on(), "leaving the outer scope first must not turn off B's");
    a_left.wait();
    b.join().unwrap();
    assert!(!testing::is_on(), "the last scope left: virtual time is off");
    assert_eq!(testing::open_scopes(), 0);

    // The inner scope leaving first hands the clock back to the outer one.
    let outer = testing::scoped();
    outer.clock().advance(Duration::from_secs(5));
    let inner = testing::scoped();
    assert_eq!(testing::clock().unwrap().now(), Duration::ZERO);
    drop(inner);
    assert_eq!(testing::clock().unwrap().now(), Duration::from_secs(5));
    drop(outer);
    assert!(!testing::is_on());

    // A global enable outlives scopes; scopes do not turn it off.
    testing::enable();
    drop(testing::scoped());
    assert!(testing::is_on());
    testing::disable();
    assert!(!testing::is_on());
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
    huge_virtual_waits_keep_the_deadline();
}
