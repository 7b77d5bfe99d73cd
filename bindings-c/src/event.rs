//! Events as C structs, and the listener struct both call APIs deliver them through.

use std::ffi::{c_char, c_void, CStr};

use retryrs::Event;

use crate::types::*;

/// One event of one call. Valid only during the callback: copy what you keep.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct retryrs_event {
    /// One of RETRYRS_EVENT_*.
    pub kind: retryrs_event_kind,
    /// The retrier's name (NUL-terminated, owned by the retrier).
    pub name: *const c_char,
    /// The attempt this event is about (1-based; 0 for a call cancelled before it began).
    pub attempt: u32,
    /// Time since the call began, in ms (virtual under the testing switch).
    pub elapsed_ms: u64,
    /// The wait about to start, in ms (RETRYRS_EVENT_RETRYING), or the time since the
    /// previous attempt launched (RETRYRS_EVENT_HEDGE); 0 otherwise; at most
    /// RETRYRS_MAX_DELAY_MS.
    pub delay_ms: u64,
    /// Why the call was exhausted (RETRYRS_EVENT_EXHAUSTED only; RETRYRS_REASON_NONE
    /// otherwise).
    pub reason: retryrs_reason,
    /// The retries the attempt limit still allows after this event's attempt:
    /// max_attempts - attempt (max_attempts - 1 before the first attempt). A bound, not a
    /// promise: the deadline, the budget, a server's hint or a hook may end the call
    /// sooner. Since 0.2 (appended: the library fills this struct, a program only reads it).
    pub retries_left: u32,
}

/// Receives each event, on the thread running the call, in the contract's order.
pub type retryrs_event_fn = Option<unsafe extern "C" fn(user_data: *mut c_void, event: *const retryrs_event)>;

/// An event callback and its own user_data. on_event may be NULL (no events).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct retryrs_listener {
    /// Called for every event; must not unwind (no C++ exceptions, no longjmp).
    pub on_event: retryrs_event_fn,
    /// Passed back as the callback's first argument.
    pub user_data: *mut c_void,
}

impl retryrs_listener {
    /// Delivers `event` (named `name`) if there is a callback.
    pub fn deliver(&self, event: &Event<'_>, name: &CStr) {
        if let Some(f) = self.on_event {
            let c = retryrs_event {
                kind: event_kind(event.kind),
                name: name.as_ptr(),
                attempt: event.attempt,
                elapsed_ms: millis(event.elapsed),
                delay_ms: event.delay.map_or(0, millis),
                reason: reason(event.reason),
                retries_left: event.retries_left,
            };
            // SAFETY: the caller promised a callable function and its user_data.
            unsafe { f(self.user_data, &c) }
        }
    }
}
