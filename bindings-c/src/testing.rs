//! Virtual time for tests (the core's testing switch). Declared in
//! include/retryrs_testing.h, not retryrs.h: production code has no business with it.

use std::time::Duration;

use retryrs::testing;

use crate::ffi::{guard_status, guard_value, Failure};
use crate::types::*;

/// Turns virtual time on for the whole process, with a fresh virtual clock at 0: waits
/// of blocking calls take no real time and advance the virtual clock instead.
#[no_mangle]
pub extern "C" fn retryrs_testing_enable() -> retryrs_status {
    guard_status(|| {
        testing::enable();
        Ok(())
    })
}

/// Turns virtual time off.
#[no_mangle]
pub extern "C" fn retryrs_testing_disable() -> retryrs_status {
    guard_status(|| {
        testing::disable();
        Ok(())
    })
}

/// Moves the virtual clock forward by `ms` (an attempt that "takes" time).
/// RETRYRS_INVALID_ARGUMENT when virtual time is off.
#[no_mangle]
pub extern "C" fn retryrs_testing_advance(ms: u64) -> retryrs_status {
    guard_status(|| {
        let clock = testing::clock()
            .ok_or_else(|| Failure::invalid("virtual time is off: call retryrs_testing_enable() first"))?;
        clock.advance(Duration::from_millis(ms));
        Ok(())
    })
}

/// Whether virtual time is on.
#[no_mangle]
pub extern "C" fn retryrs_testing_is_on() -> bool {
    guard_value(false, testing::is_on)
}
