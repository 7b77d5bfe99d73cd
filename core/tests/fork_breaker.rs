//! A breaker or a ratio budget locked by another thread when the process forks must not
//! hang the child (issue 27): a std mutex would stay locked there forever, since the
//! thread that would unlock it did not follow the fork. Its own test binary, one test.
//!
//! A thread hammers an open breaker (each refusal counts one rejection under its lock)
//! and a ratio budget while the main thread forks 200 times; each child uses both at
//! once and reports whether it found the breaker afresh (its lock was held at the fork:
//! rejections back to 0) or a copy. Every child must finish within 10 s, and at least one
//! must have found the lock held (otherwise the test did not test the case).
#![cfg(unix)]

use std::io::Read;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use retryrs::{BreakerConfig, CircuitBreaker, RatioBudget, RetryBudget};

#[test]
fn a_child_forked_while_another_thread_holds_the_lock_does_not_hang() {
    let mut config = BreakerConfig::consecutive(1);
    config.break_duration = Duration::from_secs(3600);
    let breaker = Arc::new(CircuitBreaker::new(config).unwrap());
    let now = Duration::from_secs(1);
    let admission = breaker.admit(now, &mut |_| {});
    breaker.record(admission, true, now, &mut |_| {});
    let ratio = Arc::new(RetryBudget::from(RatioBudget::new(Duration::from_secs(10), 10, 0.2, now).unwrap()));
    let stop = Arc::new(AtomicBool::new(false));
    let hammer = {
        let (breaker, ratio, stop) = (breaker.clone(), ratio.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                breaker.admit(now, &mut |_| {});
                ratio.call_started(now);
                let _ = ratio.try_retry(now);
            }
        })
    };
    while breaker.rejections() < 1000 {
        std::thread::yield_now();
    }
    let (mut afresh, mut copies) = (0, 0);
    for _ in 0..200 {
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // The child: no allocation, nothing but the two locks, a write and _exit.
            let found = if breaker.rejections() == 0 { b'f' } else { b'c' };
            breaker.admit(now, &mut |_| {});
            ratio.call_started(now);
            let _ = ratio.try_retry(now);
            let byte = [found];
            unsafe {
                libc::write(fds[1], byte.as_ptr().cast(), 1);
                libc::_exit(0);
            }
        }
        unsafe { libc::close(fds[1]) };
        let started = Instant::now();
        let mut status = 0;
        loop {
            let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if done == pid {
                break;
            }
            if started.elapsed() > Duration::from_secs(10) {
                unsafe { libc::kill(pid, libc::SIGKILL) };
                unsafe { libc::waitpid(pid, &mut status, 0) };
                stop.store(true, Ordering::Relaxed);
                panic!("a forked child hung on a lock held by a thread that did not follow the fork");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child failed: {status}");
        let mut out = Vec::new();
        unsafe { std::fs::File::from_raw_fd(fds[0]) }.read_to_end(&mut out).unwrap();
        match out.as_slice() {
            b"f" => afresh += 1,
            b"c" => copies += 1,
            other => panic!("the child said {other:?}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    hammer.join().unwrap();
    assert_eq!(afresh + copies, 200);
    assert!(afresh > 0, "no fork found the breaker's lock held ({copies} copies): the case was not tested");
}
