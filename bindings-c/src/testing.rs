//! Virtual time for tests (the core's testing switches). Declared in
//! include/retryrs_testing.h, not retryrs.h: production code has no business with it.

use std::time::Duration;

use retryrs::testing;

use crate::ffi::{guard_status, guard_value, Failure};
use crate::types::*;

/// Turns virtual time on for the calling thread, with a fresh virtual clock at 0: waits
/// of blocking calls on this thread take no real time and advance the virtual clock
/// instead. Other threads keep their own time. (Earlier releases switched the whole
/// process: that is now retryrs_testing_enable_process_wide().)
#[no_mangle]
pub extern "C" fn retryrs_testing_enable() -> retryrs_status {
    guard_status("retryrs_testing_enable", || {
        testing::enable();
        Ok(())
    })
}

/// Turns the calling thread's virtual time off (the process-wide switch, if on, stays on).
#[no_mangle]
pub extern "C" fn retryrs_testing_disable() -> retryrs_status {
    guard_status("retryrs_testing_disable", || {
        testing::disable();
        Ok(())
    })
}

/// Turns virtual time on for every thread of the process, with a fresh virtual clock at
/// 0, under each thread's own switch (a thread that called retryrs_testing_enable() keeps
/// its own clock).
#[no_mangle]
pub extern "C" fn retryrs_testing_enable_process_wide() -> retryrs_status {
    guard_status("retryrs_testing_enable_process_wide", || {
        testing::enable_process_wide();
        Ok(())
    })
}

/// Turns the process-wide switch off (threads' own switches stay as they are).
#[no_mangle]
pub extern "C" fn retryrs_testing_disable_process_wide() -> retryrs_status {
    guard_status("retryrs_testing_disable_process_wide", || {
        testing::disable_process_wide();
        Ok(())
    })
}

/// Moves the calling thread's virtual clock (its own, else the process-wide one) forward
/// by `ms` (an attempt that "takes" time). RETRYRS_INVALID_ARGUMENT when virtual time is
/// off for this thread.
#[no_mangle]
pub extern "C" fn retryrs_testing_advance(ms: u64) -> retryrs_status {
    guard_status("retryrs_testing_advance", || {
        let clock = testing::clock().ok_or_else(|| {
            Failure::invalid("virtual time is off on this thread: call retryrs_testing_enable() on it first")
        })?;
        clock.advance(Duration::from_millis(ms));
        Ok(())
    })
}

/// Whether virtual time is on for the calling thread (its own switch or the process-wide
/// one).
#[no_mangle]
pub extern "C" fn retryrs_testing_is_on() -> bool {
    guard_value("retryrs_testing_is_on", false, testing::is_on)
}
