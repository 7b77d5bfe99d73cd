//! Keeps Rust panics on the Rust side of the FFI boundary.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`, turning a panic into a JS exception. The state `f` touched is never reused
/// after a panic in a way that matters: the JS layer drops the call object on any error.
pub fn guarded<T>(f: impl FnOnce() -> napi::Result<T>) -> napi::Result<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(napi::Error::from_reason(format!("retryrs internal error (a bug): {what}")))
    })
}
