//! tokio's paused clock stands at the real time its runtime started. This file's one test
//! is the first thing in its process to read retryrs's clock, and does so well after a
//! paused runtime started: the clock's time base must reach back before that start, or
//! the first readings saturate at its origin and a call measures its first wait short
//! (an attempt after a 1 s wait was shown 9.000047 s left of a 10 s deadline: retry_ext's
//! paused-clock test, where a call's bounds are checked).
#![cfg(feature = "tokio")]

use std::time::Duration;

use retryrs::{Clock, TokioClock};

#[test]
fn a_paused_runtime_started_before_the_first_reading_measures_whole_waits() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    // Real time passes; the paused clock stays at the runtime's start.
    std::thread::sleep(Duration::from_millis(50));
    rt.block_on(async {
        let before = TokioClock.now();
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(TokioClock.now() - before, Duration::from_secs(1), "tokio's clock, read through retryrs");
    });
}
