//! The cancel token handle: fire it from any thread to end a call's wait at once.

use retryrs::CancelToken;

use crate::ffi::{arg, arg_mut, free_handle, guard_status, guard_value, hand_out};
use crate::types::*;

/// A cancel token (opaque). Thread-safe: fire it from any thread while a call waits.
/// Cancelling is sticky.
pub struct retryrs_cancel {
    pub(crate) token: CancelToken,
}

/// Creates a token not yet cancelled. Free with retryrs_cancel_free().
#[no_mangle]
pub unsafe extern "C" fn retryrs_cancel_new(out: *mut *mut retryrs_cancel) -> retryrs_status {
    guard_status(|| {
        arg_mut(out, "out")?;
        hand_out(out, retryrs_cancel { token: CancelToken::new() });
        Ok(())
    })
}

/// Cancels: a blocking call waiting on this token wakes at once and returns
/// RETRYRS_CANCELLED; a call not started yet with it runs nothing.
#[no_mangle]
pub unsafe extern "C" fn retryrs_cancel_fire(cancel: *const retryrs_cancel) -> retryrs_status {
    guard_status(|| {
        arg(cancel, "cancel")?.token.cancel();
        Ok(())
    })
}

/// Whether retryrs_cancel_fire() was called on this token.
#[no_mangle]
pub unsafe extern "C" fn retryrs_cancel_is_cancelled(
    cancel: *const retryrs_cancel,
    cancelled: *mut bool,
) -> retryrs_status {
    guard_status(|| {
        let c = arg(cancel, "cancel")?;
        *arg_mut(cancelled, "cancelled")? = c.token.is_cancelled();
        Ok(())
    })
}

/// Releases the token. It must not be in use by a running call. NULL is a no-op. Must
/// not be called twice for the same token.
#[no_mangle]
pub unsafe extern "C" fn retryrs_cancel_free(cancel: *mut retryrs_cancel) {
    guard_value((), || free_handle(cancel))
}
