//! The small value types of the ABI: statuses, verdicts, jitter kinds, event kinds and
//! exhaust reasons. What C passes in is a plain integer checked here (a C value outside
//! the list is a validation error instead of undefined behaviour); verdicts and event
//! kinds are also C enums (names for the values; the ABI type stays int32_t).

use retryrs::{EventKind, ExhaustReason, Stop};

/// What every fallible function returns. RETRYRS_OK is 0; read retryrs_last_error()
/// for the message of any other value.
pub type retryrs_status = i32;
/// Success.
pub const RETRYRS_OK: retryrs_status = 0;
/// A call ended on a permanent failure (the callback's verdict was PERMANENT).
pub const RETRYRS_REJECTED: retryrs_status = 1;
/// A call ran out of attempts, deadline or budget; the reason says which.
pub const RETRYRS_EXHAUSTED: retryrs_status = 2;
/// A call was cancelled.
pub const RETRYRS_CANCELLED: retryrs_status = 3;
/// An argument was NULL or out of range (an attempt callback's unknown verdict
/// included), or an engine call was driven out of order. The message says which.
pub const RETRYRS_INVALID_ARGUMENT: retryrs_status = 4;
/// A bug in retryrs (a panic caught at the boundary). The message says where.
pub const RETRYRS_INTERNAL_ERROR: retryrs_status = 5;

/// How an attempt ended, as the attempt callback classifies it. In C the type
/// `retryrs_verdict` is an int32_t (a fixed width, whatever the compiler's enum size) and
/// `enum retryrs_verdict` names its values: switch on `(enum retryrs_verdict)v` and
/// -Wswitch reports a missing case. Any other value is refused, never undefined.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum retryrs_verdict {
    /// The attempt succeeded.
    RETRYRS_SUCCESS = 0,
    /// A failure worth retrying (optionally with a Retry-After style hint).
    RETRYRS_TRANSIENT = 1,
    /// A failure that will not go away: the call ends as RETRYRS_REJECTED.
    RETRYRS_PERMANENT = 2,
    /// The attempt ran out of its bound (retryrs_attempt_remaining_ms(), or
    /// retryrs_call_remaining_ms()) and was cut there: a transient failure without a hint,
    /// whose retry a quota budget prices as a timeout's (`timeout_retry_cost`, the AWS
    /// SDKs' 10 against 5). Only for the program's own timeout at that bound.
    RETRYRS_TIMED_OUT = 3,
    /// The server said "don't retry" (gRPC A6 pushback: a negative or unparseable
    /// `grpc-retry-pushback-ms`): counted as a failure (a budget token, a breaker's
    /// failure), but nothing more is sent: the call ends RETRYRS_EXHAUSTED (reason
    /// RETRYRS_REASON_RETRY_AFTER); a hedged call sends no further hedge and lets the
    /// attempts in flight finish.
    RETRYRS_DONT_RETRY = 4,
}

/// A verdict as C passes it: any int32_t, checked before use (a Rust enum must never hold
/// a value outside its list). The header spells it `retryrs_verdict` (cbindgen.toml).
pub type retryrs_verdict_value = i32;
/// The attempt succeeded.
pub(crate) const RETRYRS_SUCCESS: retryrs_verdict_value = retryrs_verdict::RETRYRS_SUCCESS as i32;
/// A failure worth retrying.
pub(crate) const RETRYRS_TRANSIENT: retryrs_verdict_value = retryrs_verdict::RETRYRS_TRANSIENT as i32;
/// A failure that will not go away.
pub(crate) const RETRYRS_PERMANENT: retryrs_verdict_value = retryrs_verdict::RETRYRS_PERMANENT as i32;
/// The attempt was cut at its bound.
pub(crate) const RETRYRS_TIMED_OUT: retryrs_verdict_value = retryrs_verdict::RETRYRS_TIMED_OUT as i32;
/// The server said "don't retry".
pub(crate) const RETRYRS_DONT_RETRY: retryrs_verdict_value = retryrs_verdict::RETRYRS_DONT_RETRY as i32;

/// The jitter kind of a config.
pub type retryrs_jitter = i32;
/// The ceiling itself.
pub const RETRYRS_JITTER_NONE: retryrs_jitter = 0;
/// Uniform in [0, ceiling].
pub const RETRYRS_JITTER_FULL: retryrs_jitter = 1;
/// ceiling/2 + uniform in [0, ceiling/2].
pub const RETRYRS_JITTER_EQUAL: retryrs_jitter = 2;
/// Uniform in [c(1-f), c(1+f)] with f = jitter_factor, capped at max_delay.
pub const RETRYRS_JITTER_PROPORTIONAL: retryrs_jitter = 3;
/// min(max_delay, uniform in [initial_delay, 3 * previous delay]).
pub const RETRYRS_JITTER_DECORRELATED: retryrs_jitter = 4;

/// What an event reports. In C `retryrs_event_kind` is an int32_t and `enum
/// retryrs_event_kind` names its values (switch on `(enum retryrs_event_kind)e->kind` for
/// -Wswitch). Only the library writes it, so here it is the enum itself.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum retryrs_event_kind {
    /// An attempt succeeded (the last event of the call).
    RETRYRS_EVENT_SUCCESS = 0,
    /// An attempt failed (transient or permanent).
    RETRYRS_EVENT_ATTEMPT_FAILED = 1,
    /// A wait of delay_ms starts; the next attempt follows it.
    RETRYRS_EVENT_RETRYING = 2,
    /// A permanent failure ended the call.
    RETRYRS_EVENT_REJECTED = 3,
    /// The call gave up; reason says why.
    RETRYRS_EVENT_EXHAUSTED = 4,
    /// The call was cancelled.
    RETRYRS_EVENT_CANCELLED = 5,
    /// A hedged call launched attempt `attempt`, delay_ms after the one before it
    /// (hedging only).
    RETRYRS_EVENT_HEDGE = 6,
    /// The policy's circuit breaker opened after this call; delay_ms is the break.
    RETRYRS_EVENT_BREAKER_OPENED = 7,
    /// The breaker's break is over: this call is a probe (before its first attempt).
    RETRYRS_EVENT_BREAKER_HALF_OPEN = 8,
    /// A probe succeeded: the breaker closed.
    RETRYRS_EVENT_BREAKER_CLOSED = 9,
}

/// Why a call was exhausted.
pub type retryrs_reason = i32;
/// Not exhausted (any other outcome).
pub const RETRYRS_REASON_NONE: retryrs_reason = 0;
/// max_attempts calls were made.
pub const RETRYRS_REASON_ATTEMPTS: retryrs_reason = 1;
/// The next wait would pass the deadline, or the deadline passed during a wait.
pub const RETRYRS_REASON_DEADLINE: retryrs_reason = 2;
/// The shared retry budget had no token to spare.
pub const RETRYRS_REASON_BUDGET: retryrs_reason = 3;
/// The server asked for a wait longer than max_retry_after_ms.
pub const RETRYRS_REASON_RETRY_AFTER: retryrs_reason = 4;
/// The policy's circuit breaker is open: the call was refused, no attempt made.
pub const RETRYRS_REASON_CIRCUIT_OPEN: retryrs_reason = 5;
/// A hook stopped the call before a wait (a before-retry callback answered stop, or
/// retryrs_call_settle was given RETRYRS_PLAN_STOP); the last failure is kept.
pub const RETRYRS_REASON_STOPPED: retryrs_reason = 6;

/// The C value of an event kind.
pub fn event_kind(kind: EventKind) -> retryrs_event_kind {
    use retryrs_event_kind::*;
    match kind {
        EventKind::Success => RETRYRS_EVENT_SUCCESS,
        EventKind::AttemptFailed => RETRYRS_EVENT_ATTEMPT_FAILED,
        EventKind::Retrying => RETRYRS_EVENT_RETRYING,
        EventKind::Rejected => RETRYRS_EVENT_REJECTED,
        EventKind::Exhausted => RETRYRS_EVENT_EXHAUSTED,
        EventKind::Cancelled => RETRYRS_EVENT_CANCELLED,
        EventKind::Hedge => RETRYRS_EVENT_HEDGE,
        EventKind::BreakerOpened => RETRYRS_EVENT_BREAKER_OPENED,
        EventKind::BreakerHalfOpen => RETRYRS_EVENT_BREAKER_HALF_OPEN,
        EventKind::BreakerClosed => RETRYRS_EVENT_BREAKER_CLOSED,
        // EventKind is non_exhaustive: the assertion below fails to compile when the core
        // adds a kind, so none reaches this arm unmapped.
        _ => RETRYRS_EVENT_ATTEMPT_FAILED,
    }
}
const _: () = assert!(EventKind::ALL.len() == 10, "a new EventKind needs its C value above");

/// The C value of an exhaust reason.
pub fn reason(reason: Option<ExhaustReason>) -> retryrs_reason {
    match reason {
        None => RETRYRS_REASON_NONE,
        Some(ExhaustReason::Attempts) => RETRYRS_REASON_ATTEMPTS,
        Some(ExhaustReason::Deadline) => RETRYRS_REASON_DEADLINE,
        Some(ExhaustReason::Budget) => RETRYRS_REASON_BUDGET,
        Some(ExhaustReason::RetryAfter) => RETRYRS_REASON_RETRY_AFTER,
        Some(ExhaustReason::CircuitOpen) => RETRYRS_REASON_CIRCUIT_OPEN,
        Some(ExhaustReason::Stopped) => RETRYRS_REASON_STOPPED,
        // ExhaustReason is non_exhaustive: see the assertion below.
        Some(_) => RETRYRS_REASON_ATTEMPTS,
    }
}
const _: () = assert!(ExhaustReason::ALL.len() == 6, "a new ExhaustReason needs its C value above");

/// The status and reason a call's end maps to.
pub fn stop(stop: Stop) -> (retryrs_status, retryrs_reason) {
    match stop {
        Stop::Success => (RETRYRS_OK, RETRYRS_REASON_NONE),
        Stop::Rejected => (RETRYRS_REJECTED, RETRYRS_REASON_NONE),
        Stop::Exhausted(r) => (RETRYRS_EXHAUSTED, reason(Some(r))),
        Stop::Cancelled => (RETRYRS_CANCELLED, RETRYRS_REASON_NONE),
    }
}

/// A duration as whole milliseconds, saturating (engine delays are whole already).
pub fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// What retryrs_attempt_remaining_ms() and retryrs_call_remaining_ms() report for an
/// attempt that has no bound (neither a deadline nor an attempt timeout): UINT64_MAX.
/// A bounded attempt's time left is always smaller.
pub const RETRYRS_UNBOUNDED: u64 = u64::MAX;

/// An attempt's time left as the C API reports it: whole milliseconds, rounded down
/// (never more time than is left), or RETRYRS_UNBOUNDED.
pub fn remaining_ms(remaining: Option<std::time::Duration>) -> u64 {
    remaining.map_or(RETRYRS_UNBOUNDED, |d| millis(d).min(RETRYRS_UNBOUNDED - 1))
}
