//! Propagation across services (docs/propagation.md), the C API: read a request's
//! headers into a context, enter it on the thread that handles the request (every
//! retrier call on that thread then obeys it), write the headers of an outbound attempt,
//! and read a response's pushback. Every rule is the core's (`retryrs::propagation`).

use std::cell::RefCell;
use std::ffi::{c_char, CStr};
use std::time::Duration;

use crate::ffi::{arg, arg_mut, free_handle, guard_status, guard_value, hand_out, write_opt, Failure};
use crate::types::*;
use retryrs::propagation::{self as core, Ambient};

/// A request's context (opaque): its deadline and whether it was a retry, with what its
/// headers said. Made by retryrs_context_parse(), retryrs_gate_receive() or
/// retryrs_context_new(); freed by retryrs_context_free(). Immutable: any thread may read
/// it; entering it copies it, so it may be freed while entered.
pub struct retryrs_context {
    ambient: Ambient,
    inbound: core::Inbound,
}

/// A server's gate (opaque): reads each request's headers and applies the upward rule,
/// with its cap on refusals (at most 20% of the requests of a 10 s window). Thread-safe:
/// share one per listener. Freed by retryrs_gate_free().
pub struct retryrs_gate {
    inner: core::Gate,
}

/// retryrs_context_parse() / retryrs_gate_new() flag: the listener is internal (behind a
/// mesh you trust), so `x-envoy-expected-rq-timeout-ms` and `x-envoy-attempt-count` are
/// read; never set it on a public listener.
pub const RETRYRS_CONTEXT_TRUST_MESH: u32 = 1;
/// retryrs_gate_new() flag: observe only, never refuse (the upward rule reports
/// RETRYRS_UPWARD_OBSERVED instead of RETRYRS_UPWARD_REFUSE).
pub const RETRYRS_CONTEXT_OBSERVE_ONLY: u32 = 2;

/// The upward rule's answer (retryrs_gate_receive()).
pub type retryrs_upward = i32;
/// Run the handler.
pub const RETRYRS_UPWARD_RUN: retryrs_upward = 0;
/// The request arrived with nothing left: answer 504 with `Retryrs-Pushback: -1` at once,
/// without running the handler.
pub const RETRYRS_UPWARD_REFUSE: retryrs_upward = 1;
/// Nothing was left, but the gate only observes: run the handler.
pub const RETRYRS_UPWARD_OBSERVED: retryrs_upward = 2;
/// Nothing was left, but the cap on refusals was reached: run the handler.
pub const RETRYRS_UPWARD_CAPPED: retryrs_upward = 3;

/// retryrs_context_outbound() mesh: no mesh headers.
pub const RETRYRS_MESH_NONE: i32 = 0;
/// Envoy: also `x-envoy-upstream-rq-timeout-ms` and `x-envoy-max-retries: 0`.
pub const RETRYRS_MESH_ENVOY: i32 = 1;
/// Linkerd: also `l5d-retry-limit: 0`.
pub const RETRYRS_MESH_LINKERD: i32 = 2;
/// retryrs_context_outbound() kind: plain HTTP.
pub const RETRYRS_REQUEST_HTTP: i32 = 0;
/// gRPC: also `grpc-timeout`.
pub const RETRYRS_REQUEST_GRPC: i32 = 1;
/// Connect: also `connect-timeout-ms`.
pub const RETRYRS_REQUEST_CONNECT: i32 = 2;

/// retryrs_read_pushback(): the response carries no pushback.
pub const RETRYRS_PUSHBACK_NONE: i32 = 0;
/// "Don't retry" (`Retryrs-Pushback: -1`, a negative `grpc-retry-pushback-ms`,
/// `x-envoy-overloaded`): return RETRYRS_DONT_RETRY from the attempt callback.
pub const RETRYRS_PUSHBACK_DONT_RETRY: i32 = 1;
/// An exact wait, in *wait_ms.
pub const RETRYRS_PUSHBACK_WAIT: i32 = 2;

/// One header as C passed it, borrowed where it was UTF-8.
type Header<'a> = (std::borrow::Cow<'a, str>, std::borrow::Cow<'a, str>);

/// `count` headers as C passes them: two arrays of NUL-terminated strings (NULL with a
/// count of 0 is no header). A NULL entry is an error naming it; a value that is not
/// UTF-8 is kept as text with replacement characters (and then reads as malformed).
/// # Safety
/// `names` and `values` are NULL or hold `count` pointers each, every one NULL or a
/// NUL-terminated string live for `'a`.
unsafe fn headers<'a>(
    names: *const *const c_char,
    values: *const *const c_char,
    count: usize,
) -> Result<Vec<Header<'a>>, Failure> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if names.is_null() || values.is_null() {
        return Err(Failure::invalid(format!("names and values must not be NULL when count is {count}")));
    }
    let (names, values) = (std::slice::from_raw_parts(names, count), std::slice::from_raw_parts(values, count));
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        if names[i].is_null() || values[i].is_null() {
            return Err(Failure::invalid(format!("names[{i}] and values[{i}] must not be NULL")));
        }
        out.push((CStr::from_ptr(names[i]).to_string_lossy(), CStr::from_ptr(values[i]).to_string_lossy()));
    }
    Ok(out)
}

fn limit(limit_ms: u64) -> Option<Duration> {
    (limit_ms != RETRYRS_UNBOUNDED).then(|| Duration::from_millis(limit_ms))
}

fn flags_checked(flags: u32, allowed: u32) -> Result<(), Failure> {
    match flags & !allowed {
        0 => Ok(()),
        bad => Err(Failure::invalid(format!("flags has unknown bits {bad:#x}"))),
    }
}

/// Reads a request's propagation headers (`count` pairs `names[i]`: `values[i]`, names
/// compared ignoring ASCII case) into a new context: the budget is the smallest one
/// given (`Retryrs-Context` t, `grpc-timeout`, and with RETRYRS_CONTEXT_TRUST_MESH
/// `x-envoy-expected-rq-timeout-ms`), clamped to `limit_ms` (RETRYRS_UNBOUNDED: no
/// clamp); malformed values are ignored and counted (retryrs_context_malformed()). The
/// deadline counts from now. *out is the caller's: free it with retryrs_context_free().
/// RETRYRS_INVALID_ARGUMENT for a NULL out, NULL arrays with a nonzero count, a NULL
/// entry, or unknown flags. (No upward rule: use a retryrs_gate for that.)
#[no_mangle]
pub unsafe extern "C" fn retryrs_context_parse(
    names: *const *const c_char,
    values: *const *const c_char,
    count: usize,
    limit_ms: u64,
    flags: u32,
    out: *mut *mut retryrs_context,
) -> retryrs_status {
    guard_status("retryrs_context_parse", || {
        arg_mut(out, "out")?;
        flags_checked(flags, RETRYRS_CONTEXT_TRUST_MESH)?;
        let pairs = headers(names, values, count)?;
        let options =
            core::ServerOptions::new().limit(limit(limit_ms)).trust_mesh(flags & RETRYRS_CONTEXT_TRUST_MESH != 0);
        let inbound = core::Inbound::from_headers(pairs.iter().map(|(n, v)| (n.as_ref(), v.as_ref())), &options);
        hand_out(out, retryrs_context { ambient: Ambient::start(&inbound), inbound });
        Ok(())
    })
}

/// A context with `left_ms` left from now (RETRYRS_UNBOUNDED: no deadline) and the
/// inbound retry state `is_retry`, for a server that read its deadline elsewhere. *out is
/// the caller's (retryrs_context_free()). RETRYRS_INVALID_ARGUMENT for a NULL out.
#[no_mangle]
pub unsafe extern "C" fn retryrs_context_new(
    left_ms: u64,
    is_retry: bool,
    out: *mut *mut retryrs_context,
) -> retryrs_status {
    guard_status("retryrs_context_new", || {
        arg_mut(out, "out")?;
        let left = limit(left_ms);
        let now = core::now();
        let mut inbound = core::Inbound::default();
        (inbound.budget, inbound.is_retry) = (left, is_retry);
        hand_out(out, retryrs_context { ambient: Ambient::new(left, is_retry, now), inbound });
        Ok(())
    })
}

/// Frees a context (NULL is a no-op). Entering copies it: freeing an entered context
/// leaves the thread's context as it is.
#[no_mangle]
pub unsafe extern "C" fn retryrs_context_free(context: *mut retryrs_context) {
    guard_value("retryrs_context_free", (), || free_handle(context))
}

/// What a context holds; every out-parameter is optional (NULL: not wanted). *left_ms:
/// the whole milliseconds it has left now (0 once past; RETRYRS_UNBOUNDED without a
/// deadline); *budget_ms: the budget its headers gave, after the clamp (RETRYRS_UNBOUNDED:
/// none); *is_retry: its request was a retry; *clamped: a larger budget was clamped to
/// the limit; *malformed: how many of its headers were malformed (and ignored).
/// RETRYRS_INVALID_ARGUMENT for a NULL context.
#[no_mangle]
pub unsafe extern "C" fn retryrs_context_get(
    context: *const retryrs_context,
    left_ms: *mut u64,
    budget_ms: *mut u64,
    is_retry: *mut bool,
    clamped: *mut bool,
    malformed: *mut u32,
) -> retryrs_status {
    guard_status("retryrs_context_get", || {
        let c = arg(context, "context")?;
        let ms =
            |d: Option<Duration>| d.map_or(RETRYRS_UNBOUNDED, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX - 1));
        write_opt(left_ms, ms(c.ambient.left()));
        write_opt(budget_ms, ms(c.inbound.budget));
        write_opt(is_retry, c.ambient.is_retry());
        write_opt(clamped, c.inbound.clamped);
        write_opt(malformed, c.inbound.malformed);
        Ok(())
    })
}

thread_local! {
    /// What each retryrs_context_enter() replaced, restored by retryrs_context_leave().
    static ENTERED: RefCell<Vec<Option<Ambient>>> = const { RefCell::new(Vec::new()) };
}

/// Makes (a copy of) `context` this thread's context: every retrier call this thread
/// makes until the matching retryrs_context_leave() obeys it (its deadline is the smaller
/// of its own and the context's minus a margin of 2%, 5 to 250 ms; under a request that
/// was a retry it makes one attempt). Enter and leave nest, and a context entered inside
/// another narrows it and never widens it (the sooner deadline holds, a retry mark stays):
/// a library's own budget cannot outlast the request it serves. Leave a request's context
/// before entering another request's. RETRYRS_INVALID_ARGUMENT for a NULL context.
#[no_mangle]
pub unsafe extern "C" fn retryrs_context_enter(context: *const retryrs_context) -> retryrs_status {
    guard_status("retryrs_context_enter", || {
        let c = arg(context, "context")?;
        let previous = core::replace(Some(c.ambient.within(core::current())));
        ENTERED.with(|e| e.borrow_mut().push(previous));
        Ok(())
    })
}

/// Leaves the context the last retryrs_context_enter() on this thread entered, restoring
/// the one before it. RETRYRS_INVALID_ARGUMENT when no context is entered on this thread.
#[no_mangle]
pub extern "C" fn retryrs_context_leave() -> retryrs_status {
    guard_status("retryrs_context_leave", || {
        let previous = ENTERED.with(|e| e.borrow_mut().pop());
        match previous {
            Some(previous) => {
                core::replace(previous);
                Ok(())
            }
            None => Err(Failure::invalid("no context is entered on this thread")),
        }
    })
}

/// Whether the request whose context this thread is in was a retry: pass it as
/// retryrs_context_outbound()'s `is_retry` (false outside any context).
#[no_mangle]
pub extern "C" fn retryrs_context_current_is_retry() -> bool {
    guard_value("retryrs_context_current_is_retry", false, || core::current().is_some_and(|a| a.is_retry()))
}

/// Writes the headers to send with one outbound attempt into `buf` as lines
/// `Name: value\r\n`, NUL-terminated: `Retryrs-Context: t=<left>, a=<attempt>` (plus
/// `, r=?1` when `is_retry`), the `mesh`'s (RETRYRS_MESH_*) and the `kind`'s
/// (RETRYRS_REQUEST_*). `left_ms` is the attempt's time left (retryrs_attempt_remaining_ms();
/// RETRYRS_UNBOUNDED: no t); with 0 left nothing is written (send nothing). `buf` has
/// `cap` bytes (NULL with cap 0 to measure); *len (optional) gets the length without the
/// NUL: when it is not below `cap` the output was cut (call again with *len + 1 bytes).
/// RETRYRS_INVALID_ARGUMENT for attempt 0, an unknown mesh or kind, or a NULL buf with a
/// nonzero cap.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn retryrs_context_outbound(
    left_ms: u64,
    attempt: u32,
    is_retry: bool,
    mesh: i32,
    kind: i32,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
) -> retryrs_status {
    guard_status("retryrs_context_outbound", || {
        if attempt == 0 {
            return Err(Failure::invalid("attempt must be >= 1"));
        }
        let mesh = match mesh {
            RETRYRS_MESH_NONE => core::Mesh::None,
            RETRYRS_MESH_ENVOY => core::Mesh::Envoy,
            RETRYRS_MESH_LINKERD => core::Mesh::Linkerd,
            other => return Err(Failure::invalid(format!("mesh must be a RETRYRS_MESH_* value, got {other}"))),
        };
        let kind = match kind {
            RETRYRS_REQUEST_HTTP => core::RequestKind::Http,
            RETRYRS_REQUEST_GRPC => core::RequestKind::Grpc,
            RETRYRS_REQUEST_CONNECT => core::RequestKind::Connect,
            other => return Err(Failure::invalid(format!("kind must be a RETRYRS_REQUEST_* value, got {other}"))),
        };
        if buf.is_null() && cap > 0 {
            return Err(Failure::invalid(format!("buf is NULL but cap is {cap}")));
        }
        let lines: String = core::outbound_headers(mesh, limit(left_ms), attempt, is_retry, kind)
            .into_iter()
            .map(|(name, value)| format!("{name}: {value}\r\n"))
            .collect();
        crate::http::write_c_string(&lines, buf, cap, len);
        Ok(())
    })
}

/// Reads a response's pushback among `count` headers: *kind (RETRYRS_PUSHBACK_*) and,
/// for RETRYRS_PUSHBACK_WAIT, *wait_ms (optional; 0 otherwise). "Don't retry" from any
/// header wins. RETRYRS_INVALID_ARGUMENT for a NULL kind, NULL arrays with a nonzero
/// count, or a NULL entry.
#[no_mangle]
pub unsafe extern "C" fn retryrs_read_pushback(
    names: *const *const c_char,
    values: *const *const c_char,
    count: usize,
    kind: *mut i32,
    wait_ms: *mut u64,
) -> retryrs_status {
    guard_status("retryrs_read_pushback", || {
        let out = arg_mut(kind, "kind")?;
        let (k, ms) = match pushback(names, values, count)? {
            None => (RETRYRS_PUSHBACK_NONE, 0),
            Some(core::ServerPushback::DontRetry) => (RETRYRS_PUSHBACK_DONT_RETRY, 0),
            Some(core::ServerPushback::Wait(w)) => {
                (RETRYRS_PUSHBACK_WAIT, u64::try_from(w.as_millis()).unwrap_or(u64::MAX))
            }
        };
        *out = k;
        write_opt(wait_ms, ms);
        Ok(())
    })
}

/// The pushback among `count` headers as C passes them.
///
/// # Safety
/// As [`headers`].
pub(crate) unsafe fn pushback(
    names: *const *const c_char,
    values: *const *const c_char,
    count: usize,
) -> Result<Option<core::ServerPushback>, Failure> {
    let pairs = headers(names, values, count)?;
    Ok(core::read_pushback(pairs.iter().map(|(n, v)| (n.as_ref(), v.as_ref()))))
}

/// The margin an inner call keeps for `left_ms` left: 2%, between 5 and 250 ms.
#[no_mangle]
pub extern "C" fn retryrs_context_margin_ms(left_ms: u64) -> u64 {
    guard_value("retryrs_context_margin_ms", 0, || core::margin(Duration::from_millis(left_ms)).as_millis() as u64)
}

/// A gate for one listener: `limit_ms` the longest budget a request may bring
/// (RETRYRS_UNBOUNDED: no clamp), `flags` RETRYRS_CONTEXT_TRUST_MESH and/or
/// RETRYRS_CONTEXT_OBSERVE_ONLY. *out is the caller's: free it with retryrs_gate_free().
/// RETRYRS_INVALID_ARGUMENT for a NULL out or unknown flags.
#[no_mangle]
pub unsafe extern "C" fn retryrs_gate_new(limit_ms: u64, flags: u32, out: *mut *mut retryrs_gate) -> retryrs_status {
    guard_status("retryrs_gate_new", || {
        arg_mut(out, "out")?;
        flags_checked(flags, RETRYRS_CONTEXT_TRUST_MESH | RETRYRS_CONTEXT_OBSERVE_ONLY)?;
        let options = core::ServerOptions::new()
            .limit(limit(limit_ms))
            .trust_mesh(flags & RETRYRS_CONTEXT_TRUST_MESH != 0)
            .observe_only(flags & RETRYRS_CONTEXT_OBSERVE_ONLY != 0);
        hand_out(out, retryrs_gate { inner: core::Gate::new(options) });
        Ok(())
    })
}

/// Frees a gate (NULL is a no-op).
#[no_mangle]
pub unsafe extern "C" fn retryrs_gate_free(gate: *mut retryrs_gate) {
    guard_value("retryrs_gate_free", (), || free_handle(gate))
}

/// Receives one request: reads its headers as retryrs_context_parse() does into a new
/// context (*out, the caller's: retryrs_context_free()) and writes the upward rule's
/// answer to *upward (RETRYRS_UPWARD_*): on RETRYRS_UPWARD_REFUSE answer 504 with
/// `Retryrs-Pushback: -1` without running the handler. RETRYRS_INVALID_ARGUMENT for a
/// NULL gate, out or upward, NULL arrays with a nonzero count, or a NULL entry.
#[no_mangle]
pub unsafe extern "C" fn retryrs_gate_receive(
    gate: *const retryrs_gate,
    names: *const *const c_char,
    values: *const *const c_char,
    count: usize,
    out: *mut *mut retryrs_context,
    upward: *mut retryrs_upward,
) -> retryrs_status {
    guard_status("retryrs_gate_receive", || {
        let g = arg(gate, "gate")?;
        arg_mut(out, "out")?;
        let up = arg_mut(upward, "upward")?;
        let pairs = headers(names, values, count)?;
        let r = g.inner.receive(pairs.iter().map(|(n, v)| (n.as_ref(), v.as_ref())));
        *up = match r.upward {
            core::Upward::Run => RETRYRS_UPWARD_RUN,
            core::Upward::Refuse => RETRYRS_UPWARD_REFUSE,
            core::Upward::Observed => RETRYRS_UPWARD_OBSERVED,
            core::Upward::Capped => RETRYRS_UPWARD_CAPPED,
        };
        hand_out(out, retryrs_context { ambient: r.ambient, inbound: r.inbound });
        Ok(())
    })
}

/// Whether `host` (a URL's host, with or without `:port`; IPv6 in brackets) may receive
/// propagation headers under the allowlist `hosts` (`count` names: `api.example.com`
/// exactly, `*.example.com` any subdomain of it, never the apex; compared ignoring ASCII
/// case). `hosts` NULL with a count of 0: no list, every host; a non-NULL list of 0
/// names allows none. Writes the answer to *allowed. RETRYRS_INVALID_ARGUMENT for a NULL
/// host or allowed, NULL hosts with a nonzero count, a NULL or empty name, or a `*`
/// anywhere but a leading `*.`.
#[no_mangle]
pub unsafe extern "C" fn retryrs_host_allowed(
    hosts: *const *const c_char,
    count: usize,
    host: *const c_char,
    allowed: *mut bool,
) -> retryrs_status {
    guard_status("retryrs_host_allowed", || {
        let out = arg_mut(allowed, "allowed")?;
        let host = crate::ffi::c_str(host, "host")?;
        let list = match (hosts.is_null(), count) {
            (true, 0) => core::Allowlist::all(),
            (true, n) => return Err(Failure::invalid(format!("hosts is NULL but count is {n}"))),
            (false, n) => {
                let names = std::slice::from_raw_parts(hosts, n)
                    .iter()
                    .enumerate()
                    .map(|(i, &h)| crate::ffi::c_str(h, &format!("hosts[{i}]")))
                    .collect::<Result<Vec<_>, _>>()?;
                core::Allowlist::only(names).map_err(Failure::invalid)?
            }
        };
        *out = list.allows(host);
        Ok(())
    })
}
