//! The upward rule's answer as the core spells it (`retryrs::propagation::REFUSAL_STATUS`
//! and `REFUSAL_PUSHBACK`), for `retryrs/propagation`'s server helpers: kept apart from
//! `propagation.rs` (the core's thin exports) as the one constant the Node helper needs
//! beyond them.

use napi_derive::napi;
use retryrs::propagation::{REFUSAL_PUSHBACK, REFUSAL_STATUS};

use crate::guard::guarded;

/// A refusal: its status and its header.
#[napi(object)]
pub struct Refusal {
    pub status: u32,
    /// `[name, value]`: "don't retry".
    pub header: Vec<String>,
}

/// What a request that arrived with nothing left is answered with.
#[napi]
pub fn propagation_refusal() -> napi::Result<Refusal> {
    guarded(|| {
        Ok(Refusal {
            status: u32::from(REFUSAL_STATUS),
            header: vec![REFUSAL_PUSHBACK.0.to_string(), REFUSAL_PUSHBACK.1.to_string()],
        })
    })
}
