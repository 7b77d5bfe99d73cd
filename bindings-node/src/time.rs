//! The core's global virtual-time switch, for tests: while on, the JS layer reads `now`
//! from the core's virtual clock and advances it instead of arming timers.

use napi_derive::napi;
use retryrs::{testing, Clock};

use crate::guard::guarded;

/// Turns virtual time on with a fresh clock at zero.
#[napi]
pub fn virtual_time_enable() -> napi::Result<()> {
    guarded(|| {
        testing::enable();
        Ok(())
    })
}

/// Turns virtual time off.
#[napi]
pub fn virtual_time_disable() -> napi::Result<()> {
    guarded(|| {
        testing::disable();
        Ok(())
    })
}

/// Whether virtual time is on.
#[napi]
pub fn virtual_time_is_on() -> napi::Result<bool> {
    guarded(|| Ok(testing::is_on()))
}

/// The virtual clock's time in milliseconds (NaN when virtual time is off).
#[napi]
pub fn virtual_now_ms() -> napi::Result<f64> {
    guarded(|| Ok(testing::clock().map_or(f64::NAN, |c| c.now().as_nanos() as f64 / 1e6)))
}

/// Moves the virtual clock forward by `ms` (a test simulating time passing). Returns false
/// when virtual time is off.
#[napi]
pub fn virtual_advance(ms: f64) -> napi::Result<bool> {
    guarded(|| {
        let Some(clock) = testing::clock() else { return Ok(false) };
        clock.advance(retryrs::units::duration_from_ms_or_zero(ms));
        Ok(true)
    })
}

/// Virtual time until `close()`: one of the core's counted scopes, so scopes that overlap
/// (two async tests at once, or a worker's) end in any order without turning virtual time
/// off under a scope still open, or leaving it on after the last one.
#[napi]
pub struct VirtualTimeScope {
    scope: Option<testing::Scope>,
}

#[napi]
impl VirtualTimeScope {
    /// Opens a scope with a fresh virtual clock at zero.
    #[napi(constructor)]
    pub fn new() -> napi::Result<Self> {
        guarded(|| Ok(VirtualTimeScope { scope: Some(testing::scoped()) }))
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
