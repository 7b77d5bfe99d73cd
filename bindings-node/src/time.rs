//! Virtual time for tests. The JS layer (lib/clock.js) keeps a thread's switch and its
//! `AsyncLocalStorage` scopes itself, each with one of these [`VirtualClock`]s, so a
//! worker's virtual time is its own; the core's process-wide switch is here for those who
//! ask for it by name. While a clock is current, JS reads `now` from it and advances it
//! instead of arming timers.

use napi_derive::napi;
use retryrs::{testing, Clock};

use crate::guard::guarded;

fn ms(clock: &retryrs::VirtualClock) -> f64 {
    clock.now().as_nanos() as f64 / 1e6
}

fn advance(clock: &retryrs::VirtualClock, by_ms: f64) {
    clock.advance(retryrs::units::duration_from_ms_or_zero(by_ms));
}

/// A virtual clock at zero that moves only when advanced.
#[napi]
pub struct VirtualClock {
    clock: retryrs::VirtualClock,
}

#[napi]
impl VirtualClock {
    #[napi(constructor)]
    pub fn new() -> napi::Result<Self> {
        guarded(|| Ok(VirtualClock { clock: retryrs::VirtualClock::new() }))
    }

    /// The clock's time in milliseconds.
    #[napi]
    pub fn now_ms(&self) -> napi::Result<f64> {
        guarded(|| Ok(ms(&self.clock)))
    }

    /// Moves the clock forward by `ms`.
    #[napi]
    pub fn advance(&self, by_ms: f64) -> napi::Result<()> {
        guarded(|| {
            advance(&self.clock, by_ms);
            Ok(())
        })
    }
}

/// Turns virtual time on for every thread of the process with a fresh clock at zero.
#[napi]
pub fn virtual_time_enable_process_wide() -> napi::Result<()> {
    guarded(|| {
        testing::enable_process_wide();
        Ok(())
    })
}

/// Turns the process-wide switch off (open process-wide scopes stay on).
#[napi]
pub fn virtual_time_disable_process_wide() -> napi::Result<()> {
    guarded(|| {
        testing::disable_process_wide();
        Ok(())
    })
}

/// Whether process-wide virtual time is on.
#[napi]
pub fn virtual_time_process_wide_is_on() -> napi::Result<bool> {
    guarded(|| Ok(testing::process_wide_clock().is_some()))
}

/// The process-wide virtual clock's time in milliseconds (NaN when it is off).
#[napi]
pub fn virtual_process_wide_now_ms() -> napi::Result<f64> {
    guarded(|| Ok(testing::process_wide_clock().map_or(f64::NAN, |c| ms(&c))))
}

/// Moves the process-wide virtual clock forward by `ms`. Returns false when it is off.
#[napi]
pub fn virtual_process_wide_advance(by_ms: f64) -> napi::Result<bool> {
    guarded(|| {
        let Some(clock) = testing::process_wide_clock() else { return Ok(false) };
        advance(&clock, by_ms);
        Ok(true)
    })
}

/// Process-wide virtual time until `close()`: one of the core's counted process-wide
/// scopes, so overlapping ones (two workers') end in any order.
#[napi]
pub struct ProcessWideScope {
    scope: Option<testing::ProcessScope>,
}

#[napi]
impl ProcessWideScope {
    /// Opens a scope with a fresh virtual clock at zero.
    #[napi(constructor)]
    pub fn new() -> napi::Result<Self> {
        guarded(|| Ok(ProcessWideScope { scope: Some(testing::scoped_process_wide()) }))
    }

    /// Closes the scope (again: nothing). A scope never closed closes when collected.
    #[napi]
    pub fn close(&mut self) -> napi::Result<()> {
        guarded(|| {
            self.scope.take();
            Ok(())
        })
    }
}
