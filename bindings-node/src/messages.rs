//! The core's wording of how a call ended, for the JS error classes.

use napi_derive::napi;
use retryrs::{ExhaustReason, GaveUp};

use crate::guard::guarded;

/// `rates: gave up after 3 attempts (max_attempts reached)`: the exhaustion message every
/// host shares. `reason` is the text the call reported (`attempts`, `deadline`, ...).
#[napi]
pub fn gave_up(name: String, attempts: u32, reason: String) -> napi::Result<String> {
    guarded(|| {
        let reason: ExhaustReason = reason.parse().map_err(napi::Error::from_reason)?;
        Ok(GaveUp { name: Some(&name), attempts, reason }.to_string())
    })
}
