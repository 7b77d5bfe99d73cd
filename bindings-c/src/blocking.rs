//! The blocking call: runs the user's attempt callback until the engine stops, sleeping
//! between attempts on the core's clock (waking at once on a cancel).

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::Duration;

use retryrs::{
    testing, Call, CallTally, CancelToken, Clock, Decision, Event, Proposal, Resume, RetryCause, StateError, Stop,
    SystemClock, Verdict,
};

use crate::cancel::retryrs_cancel;
use crate::engine::library_now;
use crate::event::retryrs_listener;
use crate::ffi::{arg, arg_mut, guard_status, write_opt, Failure};
use crate::hooks::{retryrs_hooks, retryrs_retry_info};
use crate::retrier::{retryrs_retrier, Shared};
use crate::types::*;

/// One attempt. Returns RETRYRS_SUCCESS, RETRYRS_TRANSIENT, RETRYRS_PERMANENT,
/// RETRYRS_TIMED_OUT (below) or RETRYRS_DONT_RETRY (the server said not to retry: the
/// call ends exhausted, reason RETRYRS_REASON_RETRY_AFTER, the failure counted). For a transient failure it may store a minimum wait in ms
/// in *hint_ms (e.g. from retryrs_parse_retry_after()); *hint_ms starts negative, meaning no hint, and a
/// negative or NaN value stays "no hint". Any other return value ends the call with
/// RETRYRS_INVALID_ARGUMENT. Must not unwind (no C++ exceptions, no longjmp).
///
/// Result retries (the contract's result predicate) need nothing more in C: an attempt
/// that got a value it does not accept (an HTTP 503 page, a "try later" reply) answers
/// RETRYRS_TRANSIENT, with the hint the value carries in *hint_ms, and keeps the value
/// itself if it wants to report it after the call.
///
/// Bounding the attempt: retryrs_attempt_remaining_ms() inside the callback gives the
/// time it has left (the deadline's, or the smaller attempt timeout); pass it to the
/// attempt's I/O. The library cannot interrupt a callback: one that fails after the
/// deadline has passed ends the call (RETRYRS_EXHAUSTED, reason RETRYRS_REASON_DEADLINE);
/// one that succeeds late is still a success. A callback whose own I/O timed out at that
/// bound (it cut the attempt there) returns RETRYRS_TIMED_OUT: a transient failure
/// whose retry a quota budget prices as a timeout's (the AWS SDKs' 10 against 5); any
/// other timeout (shorter than the bound, or the server's) is RETRYRS_TRANSIENT.
pub type retryrs_attempt_fn =
    Option<unsafe extern "C" fn(user_data: *mut c_void, attempt: u32, hint_ms: *mut f64) -> retryrs_verdict_value>;

thread_local! {
    /// The bound of the attempt callback running on this thread: `None` outside one,
    /// `Some(None)` when it is unbounded, `Some(Some(end))` when it ends at `end` on the
    /// library's clock. A plain `Cell` (nothing to drop), read with `try_with` only, so it
    /// is safe during thread and process teardown.
    static ATTEMPT_BOUND: Cell<Option<Option<Duration>>> = const { Cell::new(None) };
}

/// This thread is in an attempt callback with `bound` until dropped; then the previous
/// state is back (a blocking call run from inside another's attempt callback nests).
struct InAttempt(Option<Option<Duration>>);

impl InAttempt {
    fn enter(bound: Option<Duration>) -> Self {
        InAttempt(ATTEMPT_BOUND.try_with(|b| b.replace(Some(bound))).ok().flatten())
    }
}

impl Drop for InAttempt {
    fn drop(&mut self) {
        let _ = ATTEMPT_BOUND.try_with(|b| b.set(self.0));
    }
}

/// How a call ended, beyond its status.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct retryrs_outcome {
    /// How many times the attempt callback ran.
    pub attempts: u32,
    /// Why, when the status is RETRYRS_EXHAUSTED; RETRYRS_REASON_NONE otherwise.
    pub reason: retryrs_reason,
}

/// How a blocking call ended: the engine's stop, the attempts made, and a verdict the
/// callback returned that is none of the three (counted as permanent).
struct Ended {
    stop: Stop,
    attempts: u32,
    bad_verdict: Option<retryrs_verdict_value>,
    /// A hook answered something it may not (the call was stopped): why.
    bad_hook: Option<String>,
}

/// Where a call's events are counted in its retrier's statistics: one by one as they
/// happen (`batched` false: a listener or a hook runs during the call and may read the
/// statistics), or in a tally added when the call ends, also on an unwind (nothing can
/// read them mid-call: a call that succeeds after two failures is then one atomic add,
/// not seven).
struct Counting<'a> {
    shared: &'a Shared,
    batched: bool,
    tally: CallTally,
}

impl Drop for Counting<'_> {
    fn drop(&mut self) {
        if self.batched {
            self.shared.retrier.stats_counters().add_tally(&self.tally);
        }
    }
}

/// The loop of the core's `Retrier::execute`, specialised for C: a C failure carries no
/// error object, so nothing is collected, and the clock is read only where a decision
/// or an event needs it. Every decision is still the engine's (`Call`), every wait the
/// core's clock (virtual under the testing switch, waking at once on a cancel).
fn run<const BATCHED: bool>(
    shared: &Shared,
    attempt: unsafe extern "C" fn(*mut c_void, u32, *mut f64) -> retryrs_verdict_value,
    user_data: *mut c_void,
    listener: Option<&retryrs_listener>,
    cancel: Option<&CancelToken>,
    hooks: Option<&retryrs_hooks>,
) -> Result<Ended, Failure> {
    let policy = shared.retrier.policy();
    debug_assert!(!BATCHED || (listener.is_none() && hooks.is_none()));
    if cancel.is_some_and(CancelToken::is_cancelled) {
        let stop = retryrs::cancelled_before_start(policy, &mut |e| shared.report(listener, e));
        return Ok(Ended { stop, attempts: 0, bad_verdict: None, bad_hook: None });
    }
    let virtual_clock = testing::clock();
    let clock: &dyn Clock = match &virtual_clock {
        Some(v) => v,
        None => &SystemClock,
    };
    let internal = |e: StateError| Failure { status: RETRYRS_INTERNAL_ERROR, message: format!("internal error: {e}") };
    // Time only matters to the attempts' bounds, to a breaker or a ratio budget (shared
    // with other calls) and to events: with none, the engine is fed a constant and the
    // clock is never read (a read costs more than the rest of a call).
    let timed = policy.reads_time() || listener.is_some() || hooks.is_some();
    let read_time = || if timed { clock.now() } else { Duration::ZERO };
    // With bounds of whole seconds and nothing to show the elapsed time, the call may
    // start on the coarse clock (a quarter of the fine read): its bounds then end at most
    // a tick early.
    let start = match timed && BATCHED && policy.tolerates_coarse_start() {
        true => clock.now_coarse(),
        false => read_time(),
    };
    // Attempt 1 runs before the engine starts when the engine has nothing to do for it
    // (no breaker to ask, no budget to tell, no listener or hook to show it to): a
    // success returns at once, counted in one add; a failure starts the engine at the
    // attempt's start and is judged as attempt 1. (As the Rust executor's lazy start, for
    // bounded policies too: the bound is the policy's formula at `start`.)
    let mut first = None;
    if BATCHED && policy.breaker().is_none() && policy.budget().is_none() {
        let mut hint = -1.0;
        let answer = {
            let bound = if timed { policy.attempt_deadline(start, start) } else { None };
            let _in_attempt = InAttempt::enter(bound);
            // SAFETY: the caller promised a callable function and its user_data.
            unsafe { attempt(user_data, 1, &mut hint) }
        };
        if answer == RETRYRS_SUCCESS {
            // No Call, so no Success event: the stats are told here, in this thread's cell.
            shared.retrier.stats_counters().count_first_attempt_success_on_this_thread();
            return Ok(Ended { stop: Stop::Success, attempts: 1, bad_verdict: None, bad_hook: None });
        }
        first = Some((answer, hint));
    }
    let mut counting = Counting { shared, batched: BATCHED, tally: CallTally::default() };
    // Batched, the sink reads only an event's kind, reason and interruption: the rest of
    // an event is never built.
    let mut sink = |e: &Event<'_>| match BATCHED {
        true => counting.tally.observe(e),
        false => shared.report(listener, e),
    };
    let mut call = Call::start_with(&**policy, start, &mut sink);
    if let Some(stop) = call.outcome() {
        // The circuit breaker refused the call: no attempt.
        return Ok(Ended { stop, attempts: 0, bad_verdict: None, bad_hook: None });
    }
    let (mut bad_verdict, mut bad_hook) = (None, None);
    let zero_is_no_wait = virtual_clock.is_none() && cancel.is_none();
    loop {
        let n = call.attempt();
        let (answer, hint) = match first.take() {
            Some(lazy_failure) => lazy_failure,
            None => {
                let mut hint = -1.0;
                // The attempt's bound, for retryrs_attempt_remaining_ms() inside the
                // callback: the engine's, computed without a clock read (the callback
                // reads it if it asks).
                let bound = call.attempt_deadline().map_err(internal)?;
                let _in_attempt = InAttempt::enter(bound);
                // SAFETY: the caller promised a callable function and its user_data.
                (unsafe { attempt(user_data, n, &mut hint) }, hint)
            }
        };
        // An attempt the callback cut at its bound (RETRYRS_TIMED_OUT): a quota prices
        // its retry as a timeout's.
        let (verdict, cause) = crate::engine::verdict_of(answer, hint).unwrap_or_else(|| {
            bad_verdict = Some(answer);
            (Verdict::Permanent, RetryCause::Failure)
        });
        // A success without a listener needs no time: only its event would show it.
        let now = if verdict == Verdict::Success && listener.is_none() && policy.breaker().is_none() {
            call.started_at()
        } else {
            read_time()
        };
        // Without hooks, one step; with them, the engine proposes, the hooks answer, and
        // the engine settles at the time they returned.
        let (decision, at) = match hooks {
            None => (call.record_as(verdict, cause, now, &mut sink).map_err(internal)?, now),
            Some(h) => match call.propose_as(verdict, cause, now, &mut sink).map_err(internal)? {
                Proposal::Stop(stop) => (Decision::Stop(stop), now),
                Proposal::Wait { delay, attempt, retries_left, hint } => {
                    let info = retryrs_retry_info {
                        name: shared.name.as_ptr(),
                        attempt,
                        retries_left,
                        delay_ms: millis(delay),
                        hint_ms: hint.map_or(-1.0, |h| h.as_secs_f64() * 1000.0),
                        elapsed_ms: millis(now.saturating_sub(call.started_at())),
                    };
                    let (plan, bad) = h.plan(&info);
                    bad_hook = bad;
                    let at = read_time();
                    (call.settle(plan, at, &mut sink).map_err(internal)?, at)
                }
            },
        };
        let delay = match decision {
            Decision::Stop(stop) => return Ok(Ended { stop, attempts: n, bad_verdict, bad_hook }),
            Decision::Retry(delay) => delay,
        };
        // The real clock's zero wait without a cancel token is no wait: not even a call.
        let no_wait = delay.is_zero() && zero_is_no_wait;
        if !no_wait && clock.sleep(delay, cancel).is_err() {
            let stop = call.cancel(read_time(), &mut sink).map_err(internal)?;
            return Ok(Ended { stop, attempts: n, bad_verdict, bad_hook });
        }
        // A zero delay slept not at all: the time is still `at`.
        let woke = if delay.is_zero() { at } else { read_time() };
        if let Resume::Stop(stop) = call.after_wait(woke, &mut sink).map_err(internal)? {
            return Ok(Ended { stop, attempts: n, bad_verdict, bad_hook });
        }
    }
}

/// The time the running attempt has left, for an attempt callback of
/// retryrs_retrier_call() to bound its own I/O with (a socket timeout,
/// CURLOPT_TIMEOUT_MS): its bound (contract section 3a: the time left before the
/// deadline, or the smaller attempt timeout) minus the time the attempt has run, in whole
/// ms rounded down; 0 once the bound has passed; RETRYRS_UNBOUNDED (UINT64_MAX) when the
/// policy has neither a deadline nor an attempt timeout. Measured on the library's clock
/// (retryrs_now_ms(): virtual under the testing switch).
///
/// Valid only inside an attempt callback, on the thread running it (the innermost one,
/// if a callback runs another blocking call); anywhere else (a listener, another thread,
/// after the call) it returns RETRYRS_INVALID_ARGUMENT, as for a NULL `out`. `*out` is
/// written only on RETRYRS_OK.
#[no_mangle]
pub unsafe extern "C" fn retryrs_attempt_remaining_ms(out: *mut u64) -> retryrs_status {
    guard_status("retryrs_attempt_remaining_ms", || {
        let out = arg_mut(out, "out")?;
        let bound = ATTEMPT_BOUND.try_with(Cell::get).ok().flatten().ok_or_else(|| {
            Failure::invalid(
                "retryrs_attempt_remaining_ms: only valid inside an attempt callback of retryrs_retrier_call(), \
                 on the thread running it",
            )
        })?;
        *out = remaining_ms(bound.map(|end| end.saturating_sub(library_now())));
        Ok(())
    })
}

/// Runs `attempt(user_data, n, &hint)` until it succeeds or the engine stops it.
///
/// Returns RETRYRS_OK (an attempt succeeded), RETRYRS_REJECTED (a permanent failure),
/// RETRYRS_EXHAUSTED (outcome->reason says which limit), RETRYRS_CANCELLED (`cancel`
/// fired, before or during a wait), or RETRYRS_INVALID_ARGUMENT (NULL retrier or
/// attempt, or a verdict outside RETRYRS_SUCCESS/TRANSIENT/PERMANENT, which counts as
/// a permanent failure, or a retrier whose policy hedges: a blocking call cannot abandon
/// an attempt, see retryrs_hedge_start()). `listener`, `cancel` and `outcome` may be
/// NULL. Under the testing switch the waits are virtual.
#[no_mangle]
pub unsafe extern "C" fn retryrs_retrier_call(
    retrier: *const retryrs_retrier,
    attempt: retryrs_attempt_fn,
    user_data: *mut c_void,
    listener: *const retryrs_listener,
    cancel: *const retryrs_cancel,
    outcome: *mut retryrs_outcome,
) -> retryrs_status {
    guard_status("retryrs_retrier_call", || call(retrier, attempt, user_data, listener, cancel, None, outcome))
}

/// retryrs_retrier_call() with hooks (may be NULL: none) that act on the call: before
/// each wait the engine would make, `hooks->before_retry` may stop the call
/// (RETRYRS_EXHAUSTED, reason RETRYRS_REASON_STOPPED, outcome->attempts the attempts
/// made), then `hooks->wait` may set an exact wait; the deadline, max_retry_after_ms and
/// the budget still apply to it (see retryrs_wait_fn). A hook answering a value it may not
/// stops the call and returns RETRYRS_INVALID_ARGUMENT naming the value. A hooks struct
/// whose struct_size this library does not know: RETRYRS_INVALID_ARGUMENT, nothing run.
#[no_mangle]
pub unsafe extern "C" fn retryrs_retrier_call_hooked(
    retrier: *const retryrs_retrier,
    attempt: retryrs_attempt_fn,
    user_data: *mut c_void,
    listener: *const retryrs_listener,
    cancel: *const retryrs_cancel,
    hooks: *const retryrs_hooks,
    outcome: *mut retryrs_outcome,
) -> retryrs_status {
    guard_status("retryrs_retrier_call_hooked", || {
        write_opt(outcome, retryrs_outcome::default());
        let hooks = retryrs_hooks::checked(hooks)?.filter(|h| h.wait.is_some() || h.before_retry.is_some());
        call(retrier, attempt, user_data, listener, cancel, hooks, outcome)
    })
}

unsafe fn call(
    retrier: *const retryrs_retrier,
    attempt: retryrs_attempt_fn,
    user_data: *mut c_void,
    listener: *const retryrs_listener,
    cancel: *const retryrs_cancel,
    hooks: Option<&retryrs_hooks>,
    outcome: *mut retryrs_outcome,
) -> Result<(), Failure> {
    write_opt(outcome, retryrs_outcome::default());
    // The call's own reference: another thread may free the retrier while it runs.
    let mut shared = Arc::clone(&arg(retrier, "retrier")?.inner);
    // Inside a request's context (retryrs_context_enter), its constraint applies.
    if retryrs::propagation::in_use() {
        if let Some(under) = shared.under_current() {
            shared = under;
        }
    }
    // (Asked inline first: most policies do not hedge, and the refusal is a call.)
    let policy = shared.retrier.policy();
    if let Some(why) = policy.hedging().and_then(|_| retryrs::hedge::one_at_a_time_refusal(policy)) {
        return Err(Failure::invalid(format!("retryrs_retrier_call: {why}; drive it with retryrs_hedge_start()")));
    }
    let attempt = attempt.ok_or_else(|| Failure::invalid("attempt must not be NULL"))?;
    let listener = listener.as_ref().filter(|l| l.on_event.is_some());
    let cancel = cancel.as_ref().map(|c| &c.token);
    // Nothing can read the statistics mid-call without a listener or a hook.
    let ended = match listener.is_none() && hooks.is_none() {
        true => run::<true>(&shared, attempt, user_data, None, cancel, None)?,
        false => run::<false>(&shared, attempt, user_data, listener, cancel, hooks)?,
    };
    let (status, why) = stop(ended.stop);
    write_opt(outcome, retryrs_outcome { attempts: ended.attempts, reason: why });
    if let (None, Stop::Success) = (&ended.bad_verdict, ended.stop) {
        return Ok(()); // (the common end, before any message is made)
    }
    let name = policy.name();
    let n = ended.attempts;
    let message = match (ended.bad_verdict, ended.bad_hook, ended.stop) {
        (_, _, Stop::Success) => return Ok(()),
        (Some(v), _, _) => {
            return Err(Failure::invalid(format!(
                "{name}: the attempt callback returned {v}, not {}",
                crate::engine::VERDICTS
            )))
        }
        (None, Some(why), _) => return Err(Failure::invalid(format!("{name}: {why}"))),
        (None, None, Stop::Rejected) => format!("{name}: attempt {n} failed permanently"),
        (None, None, Stop::Exhausted(reason)) => {
            // The core's wording in the C API's names (retryrs_config's fields; ms).
            let gave_up = retryrs::GaveUp { name: Some(name), attempts: n, reason }.render(retryrs::Spelling::C);
            // An exhaustion by the deadline says when max_attempts cannot fit it.
            match policy.deadline_hint().filter(|_| reason == retryrs::ExhaustReason::Deadline) {
                Some(hint) => format!("{gave_up}; {}", hint.render(retryrs::Spelling::C)),
                None => gave_up,
            }
        }
        (None, None, Stop::Cancelled) => retryrs::CancelledAfter { name: Some(name), attempts: n }.to_string(),
    };
    Err(Failure { status, message })
}
