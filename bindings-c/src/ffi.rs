//! The boundary: the panic guard every export runs under, the thread-local last error,
//! and checked pointer access.

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::types::*;

/// Why an export did not return RETRYRS_OK: the status, and the message that
/// `retryrs_last_error` will show.
#[derive(Debug)]
pub struct Failure {
    /// A RETRYRS_* status other than OK.
    pub status: retryrs_status,
    /// What was wrong, for a human.
    pub message: String,
}

impl Failure {
    /// A bad argument.
    pub fn invalid(message: impl Into<String>) -> Self {
        Failure { status: RETRYRS_INVALID_ARGUMENT, message: message.into() }
    }
}

/// The most bytes a last-error message keeps (with its NUL); a longer one is cut at a
/// character boundary and ends in "...".
pub const RETRYRS_LAST_ERROR_CAP: usize = 1024;

/// Shown when this thread's slot cannot be reached: Rust's thread-local storage refuses
/// access while a thread is being torn down (unreachable with the slot below, which has no
/// destructor; kept so no future change of it can turn into an abort).
const LAST_ERROR_GONE: &CStr =
    c"retryrs: the message of the last failing call is not available on a thread being torn down";

thread_local! {
    // A fixed buffer, const-initialised and without a destructor: no allocation and no
    // destructor registration, so it works in an atexit handler, a C++ static destructor
    // and a pthread key destructor (after Rust's own thread-locals were destroyed), and a
    // thread whose only call is made in a key destructor leaks nothing.
    static LAST_ERROR: RefCell<[u8; RETRYRS_LAST_ERROR_CAP]> = const { RefCell::new([0; RETRYRS_LAST_ERROR_CAP]) };
}

/// `message` as the bytes of a C string of at most [`RETRYRS_LAST_ERROR_CAP`] bytes: an interior
/// NUL becomes a visible `\0`, and a message too long is cut at a character boundary and
/// marked with "...".
fn c_message(message: &str, buf: &mut [u8; RETRYRS_LAST_ERROR_CAP]) {
    let text = message.replace('\0', "\\0");
    let room = RETRYRS_LAST_ERROR_CAP - 1;
    let len = if text.len() <= room {
        buf[..text.len()].copy_from_slice(text.as_bytes());
        text.len()
    } else {
        let mut cut = room - 3;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        buf[..cut].copy_from_slice(&text.as_bytes()[..cut]);
        buf[cut..cut + 3].copy_from_slice(b"...");
        cut + 3
    };
    buf[len] = 0;
}

/// Records `message` as this thread's last error (dropped if the thread's slot cannot be
/// reached; the reader then gets [`LAST_ERROR_GONE`]).
pub fn set_last_error(message: &str) {
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut buf) = slot.try_borrow_mut() {
            c_message(message, &mut buf);
        }
    });
}

/// The pointer handed to C: valid until this thread's next failing call (or the end of
/// the thread).
pub fn last_error_ptr() -> *const c_char {
    LAST_ERROR.try_with(|slot| slot.as_ptr().cast::<c_char>().cast_const()).unwrap_or(LAST_ERROR_GONE.as_ptr())
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("internal error: a panic was caught at the C boundary: {what}")
}

/// `message` as the export `function` reports it: prefixed with its name unless it
/// already begins with it (the header's promise: every message names its function).
fn named(function: &str, message: &str) -> String {
    match message.strip_prefix(function) {
        Some(rest) if rest.starts_with(": ") => message.to_string(),
        _ => format!("{function}: {message}"),
    }
}

/// Runs the body of the status-returning export `function` (its own name): `Ok` becomes
/// RETRYRS_OK, a [`Failure`] its status (message stored, prefixed with `function`), a
/// panic RETRYRS_INTERNAL_ERROR. The only way an export may return a status (see
/// tests/guarded.rs, which also checks that `function` is the export's name). The name
/// costs nothing on success: it is read only on a failure.
#[inline(always)]
pub fn guard_status(function: &'static str, body: impl FnOnce() -> Result<(), Failure>) -> retryrs_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => RETRYRS_OK,
        Ok(Err(failure)) => fail(function, failure),
        Err(payload) => panicked(function, &*payload, RETRYRS_INTERNAL_ERROR),
    }
}

// The failure paths, out of line: the exports' success path stays what it was.
#[cold]
#[inline(never)]
fn fail(function: &'static str, failure: Failure) -> retryrs_status {
    set_last_error(&named(function, &failure.message));
    failure.status
}

#[cold]
#[inline(never)]
fn panicked<R>(function: &'static str, payload: &(dyn Any + Send), on_panic: R) -> R {
    set_last_error(&named(function, &panic_message(payload)));
    on_panic
}

/// Runs the body of the export `function` that returns a plain value (free functions,
/// queries that cannot fail): a panic yields `on_panic` and sets the last error.
#[inline(always)]
pub fn guard_value<R>(function: &'static str, on_panic: R, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => panicked(function, &*payload, on_panic),
    }
}

/// `*p`, or an invalid-argument failure naming the parameter.
///
/// # Safety
/// `p` is NULL or points to a live `T` for `'a`.
pub unsafe fn arg<'a, T>(p: *const T, name: &str) -> Result<&'a T, Failure> {
    p.as_ref().ok_or_else(|| Failure::invalid(format!("{name} must not be NULL")))
}

/// `&mut *p`, or an invalid-argument failure naming the parameter.
///
/// # Safety
/// `p` is NULL or points to a live, unaliased `T` for `'a`.
pub unsafe fn arg_mut<'a, T>(p: *mut T, name: &str) -> Result<&'a mut T, Failure> {
    p.as_mut().ok_or_else(|| Failure::invalid(format!("{name} must not be NULL")))
}

/// Writes through an out-pointer, if the caller gave one (out-params that are optional).
///
/// # Safety
/// `p` is NULL or valid for a write of `T`.
pub unsafe fn write_opt<T>(p: *mut T, value: T) {
    if let Some(slot) = p.as_mut() {
        *slot = value;
    }
}

/// A C string as UTF-8, or an invalid-argument failure naming the parameter.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string live for `'a`.
pub unsafe fn c_str<'a>(p: *const c_char, name: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::invalid(format!("{name} must not be NULL")));
    }
    CStr::from_ptr(p).to_str().map_err(|_| Failure::invalid(format!("{name} is not valid UTF-8")))
}

/// Moves `value` to the heap and hands its pointer out through `out`.
///
/// # Safety
/// `out` is valid for a write (checked for NULL before anything is allocated).
pub unsafe fn hand_out<T>(out: *mut *mut T, value: T) {
    *out = Box::into_raw(Box::new(value));
}

/// Frees what [`hand_out`] gave; NULL is a no-op.
///
/// # Safety
/// `p` is NULL or came from [`hand_out`] and was not freed yet.
pub unsafe fn free_handle<T>(p: *mut T) {
    if !p.is_null() {
        drop(Box::from_raw(p));
    }
}

/// Returns this thread's last error message: what the most recent call that returned a
/// status other than RETRYRS_OK on this thread had to say. Never NULL ("" before any
/// failure). The string stays valid until the next failing call on the same thread; a
/// successful call leaves it unchanged, so read it right after the failure. At most 1023
/// bytes: a longer message is cut at a character boundary and ends in "...". Works during
/// thread and process teardown too (see "Teardown").
#[no_mangle]
pub extern "C" fn retryrs_last_error() -> *const c_char {
    guard_value("retryrs_last_error", c"".as_ptr(), last_error_ptr)
}

/// The name of a status ("ok", "rejected", "exhausted", "cancelled",
/// "invalid_argument", "internal_error"; "unknown" for any other value). Static string.
#[no_mangle]
pub extern "C" fn retryrs_status_name(status: retryrs_status) -> *const c_char {
    guard_value("retryrs_status_name", c"unknown".as_ptr(), || {
        let name = match status {
            RETRYRS_OK => c"ok",
            RETRYRS_REJECTED => c"rejected",
            RETRYRS_EXHAUSTED => c"exhausted",
            RETRYRS_CANCELLED => c"cancelled",
            RETRYRS_INVALID_ARGUMENT => c"invalid_argument",
            RETRYRS_INTERNAL_ERROR => c"internal_error",
            _ => c"unknown",
        };
        name.as_ptr()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_internal_error_with_a_message() {
        let status = guard_status("retryrs_test", || panic!("boom"));
        assert_eq!(status, RETRYRS_INTERNAL_ERROR);
        let msg = unsafe { CStr::from_ptr(last_error_ptr()) }.to_str().unwrap().to_string();
        assert!(msg.starts_with("retryrs_test: internal error") && msg.contains("boom"), "{msg}");
        assert_eq!(guard_value("retryrs_test", 7, || -> i32 { panic!("x") }), 7);
    }

    fn last() -> String {
        unsafe { CStr::from_ptr(last_error_ptr()) }.to_str().unwrap().to_string()
    }

    #[test]
    fn a_long_message_is_cut_at_a_character_boundary_and_marked() {
        // 'é' is two bytes: the cut must not split one.
        let long = "é".repeat(RETRYRS_LAST_ERROR_CAP);
        set_last_error(&long);
        let got = last();
        assert!(got.len() < RETRYRS_LAST_ERROR_CAP && got.len() >= RETRYRS_LAST_ERROR_CAP - 5, "{}", got.len());
        assert!(got.ends_with("é..."), "{got}");
        let fits = "x".repeat(RETRYRS_LAST_ERROR_CAP - 1);
        set_last_error(&fits);
        assert_eq!(last(), fits);
        set_last_error("a\0b");
        assert_eq!(last(), "a\\0b");
    }

    #[test]
    fn a_failure_sets_the_message_and_ok_keeps_it() {
        assert_eq!(
            guard_status("retryrs_test", || Err(Failure::invalid("max_attempts must be >= 1, got 0"))),
            RETRYRS_INVALID_ARGUMENT
        );
        assert_eq!(guard_status("retryrs_test", || Ok(())), RETRYRS_OK);
        let msg = unsafe { CStr::from_ptr(last_error_ptr()) }.to_str().unwrap();
        assert_eq!(msg, "retryrs_test: max_attempts must be >= 1, got 0");
        // A message that already names its function is not named twice.
        guard_status("retryrs_test", || Err(Failure::invalid("retryrs_test: x")));
        assert_eq!(last(), "retryrs_test: x");
        guard_status("retryrs_test", || Err(Failure::invalid("retryrs_testing: x")));
        assert_eq!(last(), "retryrs_test: retryrs_testing: x");
    }
}
