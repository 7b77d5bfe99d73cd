//! The core's wording of how a call ended, for the JS error classes.

use napi_derive::napi;
use retryrs::{EventKind, ExhaustReason, GaveUp};

use crate::guard::guarded;

/// How many failures an exhausted or cancelled call keeps: the core's history cap (the
/// last 64; `attempts` still counts them all).
#[napi]
pub fn history_cap() -> napi::Result<u32> {
    guarded(|| Ok(retryrs::HISTORY as u32))
}

/// `rates: gave up after 3 attempts (maxAttempts reached)`: the exhaustion message every
/// host shares, in Node's option names. `reason` is the text the call reported (`attempts`, `deadline`, ...).
#[napi]
pub fn gave_up(name: String, attempts: u32, reason: String) -> napi::Result<String> {
    guarded(|| {
        let reason: ExhaustReason = reason.parse().map_err(napi::Error::from_reason)?;
        Ok(GaveUp { name: Some(&name), attempts, reason }.render(retryrs::Spelling::Node))
    })
}

/// The event kinds the core says carry the failure they are about (docs/contract.md,
/// Events), read once by the JS layer rather than sent with every event.
#[napi]
pub fn event_kinds_carrying_error() -> napi::Result<Vec<String>> {
    guarded(|| Ok(EventKind::ALL.iter().filter(|k| k.carries_error()).map(|k| k.as_str().to_string()).collect()))
}
