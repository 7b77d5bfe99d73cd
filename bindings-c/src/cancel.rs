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
    guard_status("retryrs_cancel_new", || {
        arg_mut(out, "out")?;
        hand_out(out, retryrs_cancel { token: CancelToken::new() });
        Ok(())
    })
}

/// Creates a token cancelled as soon as any of the `n` tokens in `parents` is (at once if
/// one already is; never for n == 0, unless fired itself): a library's own token linked
/// to its caller's. Firing it fires none of the parents. The parents hold it weakly: free
/// it with retryrs_cancel_free() whenever you like, before or after them. `parents` may be
/// NULL only when n is 0; no parent may be NULL.
#[no_mangle]
pub unsafe extern "C" fn retryrs_cancel_any(
    parents: *const *const retryrs_cancel,
    n: usize,
    out: *mut *mut retryrs_cancel,
) -> retryrs_status {
    guard_status("retryrs_cancel_any", || {
        arg_mut(out, "out")?;
        let list: &[*const retryrs_cancel] = match n {
            0 => &[],
            _ => std::slice::from_raw_parts(arg(parents, "parents")?, n),
        };
        let tokens = list
            .iter()
            .enumerate()
            .map(|(i, p)| arg(*p, &format!("parents[{i}]")).map(|c| &c.token))
            .collect::<Result<Vec<_>, _>>()?;
        hand_out(out, retryrs_cancel { token: CancelToken::any(&tokens) });
        Ok(())
    })
}

/// Creates a child of `parent`: firing the parent fires it (at once if the parent already
/// fired); firing it leaves the parent alone. Free it with retryrs_cancel_free(), before
/// or after the parent.
#[no_mangle]
pub unsafe extern "C" fn retryrs_cancel_child(
    parent: *const retryrs_cancel,
    out: *mut *mut retryrs_cancel,
) -> retryrs_status {
    guard_status("retryrs_cancel_child", || {
        let parent = arg(parent, "parent")?;
        arg_mut(out, "out")?;
        hand_out(out, retryrs_cancel { token: parent.token.child() });
        Ok(())
    })
}

/// Cancels: a blocking call waiting on this token wakes at once and returns
/// RETRYRS_CANCELLED; a call not started yet with it runs nothing. Not async-signal-safe
/// (it takes a lock to reach the tokens made from this one): from a signal handler, call
/// retryrs_cancel_fire_from_signal().
#[no_mangle]
pub unsafe extern "C" fn retryrs_cancel_fire(cancel: *const retryrs_cancel) -> retryrs_status {
    guard_status("retryrs_cancel_fire", || {
        arg(cancel, "cancel")?.token.cancel();
        Ok(())
    })
}

/// Cancels from a signal handler (e.g. SIGTERM ending the retries in flight): the one
/// cancel function that is async-signal-safe. It takes no lock and allocates nothing: it
/// sets the token's flag and wakes at once every blocking call waiting on this token or
/// on a token made from it (retryrs_cancel_child/any, which see the fire through their
/// parents). RETRYRS_OK, or RETRYRS_INVALID_ARGUMENT for a NULL `cancel`, the one failure
/// that leaves retryrs_last_error() as it was (a message would need memory). The token
/// must stay alive while a handler may fire it: block the signal around
/// retryrs_cancel_free() (pthread_sigmask), and around replacing the token it fires.
#[no_mangle]
pub unsafe extern "C" fn retryrs_cancel_fire_from_signal(cancel: *const retryrs_cancel) -> retryrs_status {
    guard_value("retryrs_cancel_fire_from_signal", RETRYRS_INTERNAL_ERROR, || match cancel.as_ref() {
        Some(c) => {
            c.token.cancel_from_signal();
            RETRYRS_OK
        }
        None => RETRYRS_INVALID_ARGUMENT,
    })
}

/// Whether retryrs_cancel_fire() (or retryrs_cancel_fire_from_signal()) was called on this
/// token or on a token it was made from.
#[no_mangle]
pub unsafe extern "C" fn retryrs_cancel_is_cancelled(
    cancel: *const retryrs_cancel,
    cancelled: *mut bool,
) -> retryrs_status {
    guard_status("retryrs_cancel_is_cancelled", || {
        let c = arg(cancel, "cancel")?;
        *arg_mut(cancelled, "cancelled")? = c.token.is_cancelled();
        Ok(())
    })
}

/// Releases the token. It must not be in use by a running call. NULL is a no-op. Must
/// not be called twice for the same token.
#[no_mangle]
pub unsafe extern "C" fn retryrs_cancel_free(cancel: *mut retryrs_cancel) {
    guard_value("retryrs_cancel_free", (), || free_handle(cancel))
}
