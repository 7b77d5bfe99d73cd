/*
 * retryrs.h: the C API of retryrs, one retry engine shared by Rust, Python, Node and C.
 *
 * Link with -lretryrs (libretryrs.so or libretryrs.a; with the static library also
 * -lpthread -ldl -lm -lrt -lutil), or use `pkg-config --cflags --libs retryrs` (add
 * --static for libretryrs.a) or CMake's find_package(retryrs CONFIG) with the target
 * retryrs::retryrs, from the release tarball or `make install-c PREFIX=...`.
 * C11 and C++ (extern "C") compatible.
 *
 * Documentation, installed with this header under <prefix>/share/doc/retryrs/:
 * contract.md (the contract: the rules every host obeys, cited below as "the
 * contract"), policies.md (the policy document format), observability.md (metrics and
 * tracing from the events), and examples/ (metrics.c, rates.c, curl_get.c, retry.cpp,
 * with a Makefile and a CMakeLists.txt that build them against the installed package).
 *
 * Conventions
 *
 * Errors: every function that can fail returns a retryrs_status; RETRYRS_OK (0) means
 *   it worked. On any other status, retryrs_last_error() returns a message for this
 *   thread saying what was wrong. Every message begins with the name of the function
 *   that failed ("retryrs_cancel_new: out must not be NULL"); a config's also names the
 *   field ("retryrs_retrier_new: config->max_attempts must be >= 1 and <= 4294967295,
 *   got 0"). It stays valid until the next failing call on the same thread. A blocking call
 *   also reports its outcome as a status (REJECTED, EXHAUSTED, CANCELLED). Functions
 *   that cannot fail (free functions, retryrs_version, retryrs_status_name,
 *   retryrs_is_retryable_status, retryrs_now_ms) return their value directly.
 *   No Rust panic ever crosses this boundary: one becomes RETRYRS_INTERNAL_ERROR.
 * Ownership: every *_new / *_start hands out a handle through its last parameter
 *   (written only on RETRYRS_OK) that the caller frees with the matching *_free. Strings
 *   passed in are copied; strings handed out are owned by the library (static, the
 *   retrier's, or this thread's last error) and must not be freed. An event struct is
 *   valid only during its callback.
 * NULL: every *_free accepts NULL. A NULL handle or out-pointer elsewhere returns
 *   RETRYRS_INVALID_ARGUMENT (never a crash), except where a parameter is documented
 *   as optional (listener, cancel, outcome, config->name, config->budget). Every *_free
 *   must not be called twice for the same handle (a second free is undefined behaviour).
 * Threads: a retrier, a budget and a cancel token are immutable or internally
 *   synchronized: share them between threads freely (fire a cancel from any thread). A
 *   blocking call holds its own reference to its retrier, so another thread may free the
 *   retrier while the call runs. A retryrs_call (the sans-IO engine) must be driven by
 *   one thread at a time. Callbacks run on the thread that runs the call and must not
 *   unwind (no C++ exceptions, no longjmp) through the library.
 * Re-entrancy: a retryrs_call may not be driven from its own callbacks: report,
 *   after_wait or cancel called from inside its listener returns
 *   RETRYRS_INVALID_ARGUMENT and changes nothing; retryrs_call_free() from inside its
 *   listener is deferred until the driving function returns. Anything else (another
 *   call, a new blocking call with the same retrier) may be used from a callback.
 * Signals: the async-signal-safe functions, the only ones a signal handler may call, are
 *   retryrs_cancel_fire_from_signal() (it takes no lock and allocates nothing: a SIGTERM
 *   handler ends the retries in flight with it), retryrs_status_name() and
 *   retryrs_version(). Every other function may take a lock or allocate.
 * fork(): an unseeded retrier draws fresh entropy in a child before its first delay, so
 *   forked workers never retry in lockstep; a seeded one gives the same stream everywhere.
 * Teardown: every function keeps these promises in an atexit handler, a C++ static or
 *   thread_local destructor and a pthread key destructor, on any thread: the library
 *   keeps no thread-local that is ever torn down (the last error is a fixed per-thread
 *   buffer; a message longer than 1023 bytes is cut and ends in "..."), and an unseeded
 *   retrier draws its seed from the OS (getrandom), not from a thread-local generator.
 *   A thread whose only calls are made in its key destructors leaks nothing.
 * Memory: allocation failure is not reported, it aborts. The library allocates with the
 *   system allocator (malloc) for handles, messages, policy documents and each blocking
 *   call's state; when an allocation fails, Rust's handler prints "memory allocation of
 *   N bytes failed" and calls abort(); no function returns an out-of-memory status.
 *   retryrs_last_error() never allocates.
 * Enums: retryrs_verdict and retryrs_event_kind are int32_t (a fixed width); `enum
 *   retryrs_verdict` / `enum retryrs_event_kind` name the values, so a switch on
 *   `(enum retryrs_event_kind)e->kind` lets -Wswitch report a missing case.
 * Testing: the virtual-time switch is declared in retryrs_testing.h.
 * ABI growth: retryrs_config begins with struct_size, the sizeof(retryrs_config) the
 *   program was compiled with; retryrs_config_default(&config) (an inline function over
 *   retryrs_config_init(&config, sizeof config)) sets it, and the library reads and
 *   writes only that many bytes. New knobs are only ever appended, so a newer library
 *   reads an older program's config with the new knobs at their defaults; a size the
 *   library does not know (a program newer than the library, or garbage) is refused with
 *   RETRYRS_INVALID_ARGUMENT naming struct_size. A program built against retryrs 0.1,
 *   whose config had no struct_size, does not run against this library: its
 *   retryrs_config_default symbol is gone (the loader says so), and a config filled by
 *   hand is refused (its first field, max_attempts, is not a known size). Handles are
 *   opaque and grow freely; retryrs_event (the library's memory, read during a
 *   callback) is only ever appended to; retryrs_outcome and retryrs_step, which the
 *   library writes into the program's memory, never change: more would mean new
 *   functions.
 * Attempt bound: every attempt has the time left before the deadline, or the smaller
 *   attempt_timeout (none when both are off). An attempt callback reads it with
 *   retryrs_attempt_remaining_ms(), a sans-IO program with retryrs_call_remaining_ms();
 *   RETRYRS_UNBOUNDED (UINT64_MAX) means no bound. The library cannot interrupt a
 *   callback: pass the bound to the attempt's I/O. A failure after the deadline ends the
 *   call (EXHAUSTED, reason DEADLINE); a success after it is still a success.
 * Rejected results: C needs no result predicate: an attempt callback that got a value
 *   it does not accept answers RETRYRS_TRANSIENT (with the value's hint, if any).
 * Units: every duration is in milliseconds (double in the config so that negative or
 *   non-finite values reach validation; uint64_t for what the engine reports).
 * Longest wait: every delay_ms the library reports (retryrs_step, retryrs_event) is at
 *   most RETRYRS_MAX_DELAY_MS (9e15 ms, about 285,000 years), the largest delay a config
 *   may hold; a longer Retry-After hint is clamped to it. `now + delay_ms` cannot wrap
 *   for retryrs_now_ms() or any Unix-epoch time in ms.
 */


#ifndef RETRYRS_H
#define RETRYRS_H

/* Generated by cbindgen from bindings-c/src: do not edit; run `make header-c`. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#define RETRYRS_STRINGIFY_(x) #x
#define RETRYRS_STRINGIFY(x) RETRYRS_STRINGIFY_(x)
/* "MAJOR.MINOR.PATCH" of this header; compare with retryrs_version() at run time. */
#define RETRYRS_VERSION RETRYRS_STRINGIFY(RETRYRS_VERSION_MAJOR) "." RETRYRS_STRINGIFY(RETRYRS_VERSION_MINOR) "." RETRYRS_STRINGIFY(RETRYRS_VERSION_PATCH)


// Major version, as in Cargo.toml (a test keeps them equal).
#define RETRYRS_VERSION_MAJOR 0

// Minor version, as in Cargo.toml.
#define RETRYRS_VERSION_MINOR 3

// Patch version, as in Cargo.toml.
#define RETRYRS_VERSION_PATCH 0

// A breaker model: after `failures` failed calls in a row.
#define RETRYRS_BREAKER_CONSECUTIVE 0

// A breaker model (Polly v8's): failures reach `failure_ratio` of at least
// `minimum_throughput` calls within `sampling_duration_ms`.
#define RETRYRS_BREAKER_SAMPLING 1

// A breaker model (resilience4j's count-based window): failures reach `failure_ratio` of
// the last `window_size` calls, once `minimum_calls` are counted.
#define RETRYRS_BREAKER_COUNT 2

// A breaker state: calls go through.
#define RETRYRS_BREAKER_CLOSED 0

// A breaker state: calls are refused (RETRYRS_EXHAUSTED, RETRYRS_REASON_CIRCUIT_OPEN).
#define RETRYRS_BREAKER_OPEN 1

// A breaker state: a bounded number of probe calls go through.
#define RETRYRS_BREAKER_HALF_OPEN 2

// A breaker state: held open by retryrs_breaker_isolate() until retryrs_breaker_reset().
#define RETRYRS_BREAKER_ISOLATED 3

// The longest wait the engine ever asks for, in ms (9e15, about 285,000 years): the
// largest delay and deadline a config may hold. A server's hint asking for longer (only
// possible with both the deadline and max_retry_after off) is clamped to it, in every
// host alike, so `now + delay_ms` never wraps for any time base below 1.8e19 - 9e15.
#define RETRYRS_MAX_DELAY_MS 9000000000000000

// The most bytes a last-error message keeps (with its NUL); a longer one is cut at a
// character boundary and ends in "...".
#define RETRYRS_LAST_ERROR_CAP 1024

// retryrs_context_parse() / retryrs_gate_new() flag: the listener is internal (behind a
// mesh you trust), so `x-envoy-expected-rq-timeout-ms` and `x-envoy-attempt-count` are
// read; never set it on a public listener.
#define RETRYRS_CONTEXT_TRUST_MESH 1

// retryrs_gate_new() flag: observe only, never refuse (the upward rule reports
// RETRYRS_UPWARD_OBSERVED instead of RETRYRS_UPWARD_REFUSE).
#define RETRYRS_CONTEXT_OBSERVE_ONLY 2

// retryrs_context_outbound() mesh: no mesh headers.
#define RETRYRS_MESH_NONE 0

// Envoy: also `x-envoy-upstream-rq-timeout-ms` and `x-envoy-max-retries: 0`.
#define RETRYRS_MESH_ENVOY 1

// Linkerd: also `l5d-retry-limit: 0`.
#define RETRYRS_MESH_LINKERD 2

// retryrs_context_outbound() kind: plain HTTP.
#define RETRYRS_REQUEST_HTTP 0

// gRPC: also `grpc-timeout`.
#define RETRYRS_REQUEST_GRPC 1

// Connect: also `connect-timeout-ms`.
#define RETRYRS_REQUEST_CONNECT 2

// retryrs_read_pushback(): the response carries no pushback.
#define RETRYRS_PUSHBACK_NONE 0

// "Don't retry" (`Retryrs-Pushback: -1`, a negative `grpc-retry-pushback-ms`,
// `x-envoy-overloaded`): return RETRYRS_DONT_RETRY from the attempt callback.
#define RETRYRS_PUSHBACK_DONT_RETRY 1

// An exact wait, in *wait_ms.
#define RETRYRS_PUSHBACK_WAIT 2

// What retryrs_attempt_remaining_ms() and retryrs_call_remaining_ms() report for an
// attempt that has no bound (neither a deadline nor an attempt timeout): UINT64_MAX.
// A bounded attempt's time left is always smaller.
#define RETRYRS_UNBOUNDED UINT64_MAX

// What an event reports. In C `retryrs_event_kind` is an int32_t and `enum
// retryrs_event_kind` names its values (switch on `(enum retryrs_event_kind)e->kind` for
// -Wswitch). Only the library writes it, so here it is the enum itself.
enum retryrs_event_kind
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : int32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  // An attempt succeeded (the last event of the call).
  RETRYRS_EVENT_SUCCESS = 0,
  // An attempt failed (transient or permanent).
  RETRYRS_EVENT_ATTEMPT_FAILED = 1,
  // A wait of delay_ms starts; the next attempt follows it.
  RETRYRS_EVENT_RETRYING = 2,
  // A permanent failure ended the call.
  RETRYRS_EVENT_REJECTED = 3,
  // The call gave up; reason says why.
  RETRYRS_EVENT_EXHAUSTED = 4,
  // The call was cancelled.
  RETRYRS_EVENT_CANCELLED = 5,
  // A hedged call launched attempt `attempt`, delay_ms after the one before it
  // (hedging only).
  RETRYRS_EVENT_HEDGE = 6,
  // The policy's circuit breaker opened after this call; delay_ms is the break.
  RETRYRS_EVENT_BREAKER_OPENED = 7,
  // The breaker's break is over: this call is a probe (before its first attempt).
  RETRYRS_EVENT_BREAKER_HALF_OPEN = 8,
  // A probe succeeded: the breaker closed.
  RETRYRS_EVENT_BREAKER_CLOSED = 9,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum retryrs_event_kind retryrs_event_kind;
#else
typedef int32_t retryrs_event_kind;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

// How an attempt ended, as the attempt callback classifies it. In C the type
// `retryrs_verdict` is an int32_t (a fixed width, whatever the compiler's enum size) and
// `enum retryrs_verdict` names its values: switch on `(enum retryrs_verdict)v` and
// -Wswitch reports a missing case. Any other value is refused, never undefined.
enum retryrs_verdict
#if defined(__cplusplus) || __STDC_VERSION__ >= 202311L
  : int32_t
#endif // defined(__cplusplus) || __STDC_VERSION__ >= 202311L
 {
  // The attempt succeeded.
  RETRYRS_SUCCESS = 0,
  // A failure worth retrying (optionally with a Retry-After style hint).
  RETRYRS_TRANSIENT = 1,
  // A failure that will not go away: the call ends as RETRYRS_REJECTED.
  RETRYRS_PERMANENT = 2,
  // The attempt ran out of its bound (retryrs_attempt_remaining_ms(), or
  // retryrs_call_remaining_ms()) and was cut there: a transient failure without a hint,
  // whose retry a quota budget prices as a timeout's (`timeout_retry_cost`, the AWS
  // SDKs' 10 against 5). Only for the program's own timeout at that bound.
  RETRYRS_TIMED_OUT = 3,
  // The server said "don't retry" (gRPC A6 pushback: a negative or unparseable
  // `grpc-retry-pushback-ms`): counted as a failure (a budget token, a breaker's
  // failure), but nothing more is sent: the call ends RETRYRS_EXHAUSTED (reason
  // RETRYRS_REASON_RETRY_AFTER); a hedged call sends no further hedge and lets the
  // attempts in flight finish.
  RETRYRS_DONT_RETRY = 4,
};
#ifndef __cplusplus
#if __STDC_VERSION__ >= 202311L
typedef enum retryrs_verdict retryrs_verdict;
#else
typedef int32_t retryrs_verdict;
#endif // __STDC_VERSION__ >= 202311L
#endif // __cplusplus

// A circuit breaker (opaque). Thread-safe: any number of retriers and threads may use it.
typedef struct retryrs_breaker retryrs_breaker;

// A retry budget (opaque). Thread-safe: any number of retriers and threads may use
// it at once.
typedef struct retryrs_budget retryrs_budget;

// One call driven by hand (opaque). Not thread-safe: drive it from one thread at a time.
// Not re-entrant: a function driving it, called from one of its own callbacks, is
// refused (RETRYRS_INVALID_ARGUMENT); retryrs_call_free() from one of its own callbacks
// is deferred until the function that ran the callback returns.
typedef struct retryrs_call retryrs_call;

// A cancel token (opaque). Thread-safe: fire it from any thread while a call waits.
// Cancelling is sticky.
typedef struct retryrs_cancel retryrs_cancel;

// A request's context (opaque): its deadline and whether it was a retry, with what its
// headers said. Made by retryrs_context_parse(), retryrs_gate_receive() or
// retryrs_context_new(); freed by retryrs_context_free(). Immutable: any thread may read
// it; entering it copies it, so it may be freed while entered.
typedef struct retryrs_context retryrs_context;

// A server's gate (opaque): reads each request's headers and applies the upward rule,
// with its cap on refusals (at most 20% of the requests of a 10 s window). Thread-safe:
// share one per listener. Freed by retryrs_gate_free().
typedef struct retryrs_gate retryrs_gate;

// One hedged call driven by hand (opaque). Not thread-safe: drive it from one thread at a
// time. Not re-entrant: a function driving it, called from its own listener, is refused
// (RETRYRS_INVALID_ARGUMENT); retryrs_hedge_free() from its listener is deferred until
// the function that ran the listener returns.
typedef struct retryrs_hedge retryrs_hedge;

// A loaded policy document (opaque, immutable: any number of threads may look up in it
// at once). Owns the names and budgets the configs it hands out point to.
typedef struct retryrs_policies retryrs_policies;

// A retrier (opaque): immutable, so any number of threads may run calls with it at
// once; each call keeps its own state.
typedef struct retryrs_retrier retryrs_retrier;

// What every fallible function returns. RETRYRS_OK is 0; read retryrs_last_error()
// for the message of any other value.
typedef int32_t retryrs_status;

// One attempt. Returns RETRYRS_SUCCESS, RETRYRS_TRANSIENT, RETRYRS_PERMANENT,
// RETRYRS_TIMED_OUT (below) or RETRYRS_DONT_RETRY (the server said not to retry: the
// call ends exhausted, reason RETRYRS_REASON_RETRY_AFTER, the failure counted). For a transient failure it may store a minimum wait in ms
// in *hint_ms (e.g. from retryrs_parse_retry_after()); *hint_ms starts negative, meaning no hint, and a
// negative or NaN value stays "no hint". Any other return value ends the call with
// RETRYRS_INVALID_ARGUMENT. Must not unwind (no C++ exceptions, no longjmp).
//
// Result retries (the contract's result predicate) need nothing more in C: an attempt
// that got a value it does not accept (an HTTP 503 page, a "try later" reply) answers
// RETRYRS_TRANSIENT, with the hint the value carries in *hint_ms, and keeps the value
// itself if it wants to report it after the call.
//
// Bounding the attempt: retryrs_attempt_remaining_ms() inside the callback gives the
// time it has left (the deadline's, or the smaller attempt timeout); pass it to the
// attempt's I/O. The library cannot interrupt a callback: one that fails after the
// deadline has passed ends the call (RETRYRS_EXHAUSTED, reason RETRYRS_REASON_DEADLINE);
// one that succeeds late is still a success. A callback whose own I/O timed out at that
// bound (it cut the attempt there) returns RETRYRS_TIMED_OUT: a transient failure
// whose retry a quota budget prices as a timeout's (the AWS SDKs' 10 against 5); any
// other timeout (shorter than the bound, or the server's) is RETRYRS_TRANSIENT.
typedef retryrs_verdict (*retryrs_attempt_fn)(void *user_data, uint32_t attempt, double *hint_ms);

// Why a call was exhausted.
typedef int32_t retryrs_reason;

// One event of one call. Valid only during the callback: copy what you keep.
typedef struct retryrs_event {
  // One of RETRYRS_EVENT_*.
  retryrs_event_kind kind;
  // The retrier's name (NUL-terminated, owned by the retrier).
  const char *name;
  // The attempt this event is about (1-based; 0 for a call cancelled before it began).
  uint32_t attempt;
  // Time since the call began, in ms (virtual under the testing switch).
  uint64_t elapsed_ms;
  // The wait about to start, in ms (RETRYRS_EVENT_RETRYING), or the time since the
  // previous attempt launched (RETRYRS_EVENT_HEDGE); 0 otherwise; at most
  // RETRYRS_MAX_DELAY_MS.
  uint64_t delay_ms;
  // Why the call was exhausted (RETRYRS_EVENT_EXHAUSTED only; RETRYRS_REASON_NONE
  // otherwise).
  retryrs_reason reason;
  // The retries the attempt limit still allows after this event's attempt:
  // max_attempts - attempt (max_attempts - 1 before the first attempt). A bound, not a
  // promise: the deadline, the budget, a server's hint or a hook may end the call
  // sooner. Since 0.2 (appended: the library fills this struct, a program only reads it).
  uint32_t retries_left;
} retryrs_event;

// Receives each event, on the thread running the call, in the contract's order.
typedef void (*retryrs_event_fn)(void *user_data, const struct retryrs_event *event);

// An event callback and its own user_data. on_event may be NULL (no events).
typedef struct retryrs_listener {
  // Called for every event; must not unwind (no C++ exceptions, no longjmp).
  retryrs_event_fn on_event;
  // Passed back as the callback's first argument.
  void *user_data;
} retryrs_listener;

// How a call ended, beyond its status.
typedef struct retryrs_outcome {
  // How many times the attempt callback ran.
  uint32_t attempts;
  // Why, when the status is RETRYRS_EXHAUSTED; RETRYRS_REASON_NONE otherwise.
  retryrs_reason reason;
} retryrs_outcome;

// A failed attempt the engine would retry, as the hooks see it. Valid only during the
// callback. The library fills it (later versions may append fields).
typedef struct retryrs_retry_info {
  // The retrier's name (NUL-terminated, owned by the retrier).
  const char *name;
  // The attempt that failed (1-based).
  uint32_t attempt;
  // The retries the attempt limit still allows: max_attempts - attempt.
  uint32_t retries_left;
  // The wait the engine computed, in ms (the backoff, raised to the hint).
  uint64_t delay_ms;
  // The failure's Retry-After hint in ms; negative when it had none.
  double hint_ms;
  // Time since the call began, in ms.
  uint64_t elapsed_ms;
} retryrs_retry_info;

// A wait callback: returns the exact wait in ms to use instead of info->delay_ms (not
// raised to the hint; rounded up to whole ms; refused past the deadline, reason
// RETRYRS_REASON_DEADLINE; over max_retry_after_ms when that is set, reason
// RETRYRS_REASON_RETRY_AFTER), or a negative number for the engine's wait. NaN, infinity
// or a wait past RETRYRS_MAX_DELAY_MS ends the call with RETRYRS_INVALID_ARGUMENT. Must
// not unwind.
typedef double (*retryrs_wait_fn)(void *user_data, const struct retryrs_retry_info *info);

// What a program answers to a proposed wait (retryrs_call_settle()), and what a
// before-retry callback returns.
typedef int32_t retryrs_plan;

// A before-retry callback, called before the wait callback: returns RETRYRS_PLAN_ENGINE
// to let the call wait, RETRYRS_PLAN_STOP to stop it (RETRYRS_EXHAUSTED, reason
// RETRYRS_REASON_STOPPED; the wait callback is not called). Any other value ends the
// call with RETRYRS_INVALID_ARGUMENT. Must not unwind.
typedef retryrs_plan (*retryrs_before_retry_fn)(void *user_data,
                                                const struct retryrs_retry_info *info);

// The hooks of a blocking call (retryrs_retrier_call_hooked()). Set struct_size to
// sizeof(retryrs_hooks) (see "ABI growth"); either callback may be NULL.
typedef struct retryrs_hooks {
  // sizeof(retryrs_hooks) as the program was compiled.
  size_t struct_size;
  // Sets exact waits; NULL: the engine's waits.
  retryrs_wait_fn wait;
  // May stop the call before a wait; NULL: never stops.
  retryrs_before_retry_fn before_retry;
  // Passed back as both callbacks' first argument.
  void *user_data;
} retryrs_hooks;

// A circuit breaker's settings; fill it with retryrs_breaker_config_init() first.
typedef struct retryrs_breaker_config {
  // RETRYRS_BREAKER_CONSECUTIVE (default), RETRYRS_BREAKER_SAMPLING or
  // RETRYRS_BREAKER_COUNT.
  int32_t model;
  // Consecutive: failed calls in a row that open it (>= 1). Default 5.
  uint32_t failures;
  // Sampling and count: the share of failed calls that opens it, in (0, 1]. Default
  // 0.1 (Polly's; resilience4j's is 0.5: set it for the count model).
  double failure_ratio;
  // Sampling: calls in the window before it may open (>= 2). Default 100.
  uint32_t minimum_throughput;
  // Sampling: the sliding window, >= 500 ms. Default 30000.
  double sampling_duration_ms;
  // How long it stays open before a probe, 1 ms to 1 day. Default 5000.
  double break_duration_ms;
  // Probe calls at once when half-open (>= 1). Default 1.
  uint32_t half_open_probes;
  // Growth of the break on each open in a row (>= 1; 1: none). Default 1.
  double break_multiplier;
  // The longest break when it grows; 0: one day. Default 0.
  double max_break_duration_ms;
  // Count each attempt instead of each call. Default false.
  bool per_attempt;
  // Count: calls counted before it may open (>= 1; above window_size, window_size).
  // Default 100.
  uint32_t minimum_calls;
  // Count: how many of the last calls it judges (1 to 1000000). Default 100.
  uint32_t window_size;
  // Count a permanent failure as a failure (default false: a success, the dependency
  // answered).
  bool count_permanent;
  // Sampling and count: a call (or attempt) this long or longer is slow; 0: none is.
  // Default 0.
  double slow_call_duration_ms;
  // The share of slow calls that opens it, in (0, 1]. Default 1.
  double slow_call_ratio;
  // Half-open: let exactly half_open_probes probes go and close only if their failure
  // ratio is under the threshold (resilience4j); false: the first probe decides.
  bool judge_all_probes;
} retryrs_breaker_config;

// The jitter kind of a config.
typedef int32_t retryrs_jitter;

// Every knob of a retrier, with its default in its comment. Start from
// retryrs_config_default() (which sets struct_size and every default) and change what
// you need; retryrs_retrier_new() validates the whole struct and copies what it keeps.
// New knobs are only ever appended (see "ABI growth" above).
typedef struct retryrs_config {
  // sizeof(retryrs_config) as the program was compiled: set by retryrs_config_default().
  // The library reads only that many bytes; a size it does not know is refused.
  size_t struct_size;
  // Total calls, the first one included (1 disables retrying); >= 1 and <= 4294967295.
  // Default 5.
  uint64_t max_attempts;
  // Ceiling of the wait after the first failure, in ms; finite and >= 0 (at most about
  // 285,000 years). Default 200.
  double initial_delay_ms;
  // Growth of the ceiling per failed attempt; finite and >= 1. Default 2.
  double multiplier;
  // Cap on every backoff delay (hints are not capped), in ms; >= initial_delay_ms.
  // Default 5000.
  double max_delay_ms;
  // How randomness is mixed into each delay: one of RETRYRS_JITTER_*. Default
  // RETRYRS_JITTER_FULL.
  retryrs_jitter jitter;
  // The factor f of RETRYRS_JITTER_PROPORTIONAL, in [0, 1]; ignored otherwise.
  double jitter_factor;
  // false: no deadline (attempts alone bound the call); deadline_ms is ignored. Default
  // true.
  bool has_deadline;
  // Budget for the whole call, attempts and waits included, in ms; finite and >= 0 (at
  // most about 285,000 years). Default 15000.
  double deadline_ms;
  // false: fresh random jitter on every call; true: reproducible jitter from `seed`.
  // Default false.
  bool has_seed;
  // A seed for reproducible jitter: same seed, same delays, in every host (used when
  // has_seed).
  uint64_t seed;
  // Names the retrier in events and errors (UTF-8, copied); NULL: the default ("retry").
  const char *name;
  // A retry budget shared with other retriers (the retrier keeps its own reference, so
  // the budget handle may be freed first); NULL: no budget (retries are not rationed).
  const struct retryrs_budget *budget;
  // false: every Retry-After hint is waited out (the deadline still bounds it);
  // max_retry_after_ms is ignored. Default true.
  bool has_max_retry_after;
  // The longest server-asked wait accepted; a longer hint ends the call at once
  // (exhausted, reason retry_after), in ms; finite and >= 0 (at most about 285,000
  // years). Default 60000.
  double max_retry_after_ms;
  // false: no per-attempt bound (the deadline, if on, still bounds every attempt);
  // attempt_timeout_ms is ignored. Default false.
  bool has_attempt_timeout;
  // Bound on each attempt; an attempt's bound is this or the time left before the
  // deadline, whichever is smaller, in ms; finite and > 0 (at most about 285,000 years).
  double attempt_timeout_ms;
} retryrs_config;

// What the program does next.
typedef int32_t retryrs_action;

// The engine's answer.
typedef struct retryrs_step {
  // One of RETRYRS_ACTION_*.
  retryrs_action action;
  // RETRY: the wait in ms, at most RETRYRS_MAX_DELAY_MS.
  uint64_t delay_ms;
  // ATTEMPT: the attempt to run (1-based); RETRY: the attempt that failed; STOP: the
  // attempts made.
  uint32_t attempt;
  // STOP: RETRYRS_OK, RETRYRS_REJECTED, RETRYRS_EXHAUSTED or RETRYRS_CANCELLED.
  retryrs_status outcome;
  // STOP with RETRYRS_EXHAUSTED: why; RETRYRS_REASON_NONE otherwise.
  retryrs_reason reason;
} retryrs_step;

// The engine's answer to retryrs_call_propose().
typedef struct retryrs_proposal {
  // RETRYRS_ACTION_PROPOSED or RETRYRS_ACTION_STOP.
  retryrs_action action;
  // PROPOSED: the wait the engine computed, in ms (the backoff, raised to the hint).
  uint64_t delay_ms;
  // PROPOSED: the attempt that failed; STOP: the attempts made.
  uint32_t attempt;
  // PROPOSED: the retries the attempt limit still allows (max_attempts - attempt).
  uint32_t retries_left;
  // PROPOSED: the failure's hint in ms, negative when it had none.
  double hint_ms;
  // STOP: RETRYRS_OK, RETRYRS_REJECTED, RETRYRS_EXHAUSTED or RETRYRS_CANCELLED.
  retryrs_status outcome;
  // STOP with RETRYRS_EXHAUSTED: why; RETRYRS_REASON_NONE otherwise.
  retryrs_reason reason;
} retryrs_proposal;

// What the program does next with a hedged call.
typedef int32_t retryrs_hedge_action;

// The engine's answer for a hedged call.
typedef struct retryrs_hedge_step {
  // One of RETRYRS_HEDGE_*.
  retryrs_hedge_action action;
  // LAUNCH: the attempt to launch (1-based); WON: the winner; STOP: attempts launched.
  uint32_t attempt;
  // WAIT: when to poll again, on the caller's time base; RETRYRS_UNBOUNDED when only
  // an attempt's end can move the call on.
  uint64_t wake_ms;
  // WON and STOP: the attempts to cancel, bit k-1 for attempt k (at most 5 attempts).
  uint32_t cancel;
  // WON: RETRYRS_OK; STOP: RETRYRS_REJECTED, RETRYRS_EXHAUSTED or RETRYRS_CANCELLED.
  retryrs_status outcome;
  // STOP with RETRYRS_EXHAUSTED: why; RETRYRS_REASON_NONE otherwise.
  retryrs_reason reason;
} retryrs_hedge_step;

// A retrier's statistics: what its calls (blocking, and engine calls started from it)
// did so far. Counters only grow; each is read on its own.
typedef struct retryrs_stats {
  // sizeof(retryrs_stats) as the program was compiled: set by retryrs_retrier_stats().
  size_t struct_size;
  // Calls that ended (success, rejected, exhausted or cancelled).
  uint64_t calls;
  // Attempts that ended (failed or succeeded).
  uint64_t attempts;
  // Waits started (Retrying events).
  uint64_t retries;
  // Calls that succeeded.
  uint64_t successes;
  // Calls that ended on a permanent failure.
  uint64_t rejections;
  // Calls cancelled.
  uint64_t cancellations;
  // Calls exhausted, indexed by RETRYRS_REASON_* (index RETRYRS_REASON_NONE is 0).
  uint64_t exhausted[7];
} retryrs_stats;

// How an HTTP request ended, for retryrs_http_classify().
typedef int32_t retryrs_http_outcome;

// The upward rule's answer (retryrs_gate_receive()).
typedef int32_t retryrs_upward;

// Run attempt `step.attempt` now, then report it with retryrs_call_report().
#define RETRYRS_ACTION_ATTEMPT 0

// Wait `step.delay_ms` (0: do not wait at all; never more than RETRYRS_MAX_DELAY_MS),
// then call retryrs_call_after_wait().
#define RETRYRS_ACTION_RETRY 1

// The call is over: `step.outcome` and `step.reason` say how.
#define RETRYRS_ACTION_STOP 2

// retryrs_call_propose(): the engine would wait `proposal.delay_ms`; run the hooks,
// then answer with retryrs_call_settle().
#define RETRYRS_ACTION_PROPOSED 3

// Launch attempt `step.attempt` now, beside those in flight; then retryrs_hedge_poll().
#define RETRYRS_HEDGE_LAUNCH 0

// Wait until `step.wake_ms` (RETRYRS_UNBOUNDED: no timer) or until an attempt in flight
// ends, whichever is first; then retryrs_hedge_poll() or retryrs_hedge_report().
#define RETRYRS_HEDGE_WAIT 1

// Attempt `step.attempt` won: use its result, cancel the attempts in `step.cancel`.
#define RETRYRS_HEDGE_WON 2

// The call is over without a winner: cancel the attempts in `step.cancel`;
// `step.outcome` and `step.reason` say how it ended.
#define RETRYRS_HEDGE_STOP 3

// The result reported came after its attempt was cancelled or the call ended: drop it.
#define RETRYRS_HEDGE_DROPPED 4

// Wait what the engine computed (a before-retry callback: let the call wait).
#define RETRYRS_PLAN_ENGINE 0

// Wait exactly `wait_ms` (retryrs_call_settle() only).
#define RETRYRS_PLAN_EXACT 1

// Stop the call: RETRYRS_EXHAUSTED with reason RETRYRS_REASON_STOPPED.
#define RETRYRS_PLAN_STOP 2

// A response arrived; `status` is its status.
#define RETRYRS_HTTP_RESPONSE 0

// The connection could not be established (refused, DNS, TLS handshake, connect
// timeout): the request was never sent, so it is transient for every method.
#define RETRYRS_HTTP_CONNECT_FAILED 1

// Any other network failure (reset, read timeout): transient only for a method that
// may be repeated.
#define RETRYRS_HTTP_NETWORK_FAILED 2

// Run the handler.
#define RETRYRS_UPWARD_RUN 0

// The request arrived with nothing left: answer 504 with `Retryrs-Pushback: -1` at once,
// without running the handler.
#define RETRYRS_UPWARD_REFUSE 1

// Nothing was left, but the gate only observes: run the handler.
#define RETRYRS_UPWARD_OBSERVED 2

// Nothing was left, but the cap on refusals was reached: run the handler.
#define RETRYRS_UPWARD_CAPPED 3

// Success.
#define RETRYRS_OK 0

// A call ended on a permanent failure (the callback's verdict was PERMANENT).
#define RETRYRS_REJECTED 1

// A call ran out of attempts, deadline or budget; the reason says which.
#define RETRYRS_EXHAUSTED 2

// A call was cancelled.
#define RETRYRS_CANCELLED 3

// An argument was NULL or out of range (an attempt callback's unknown verdict
// included), or an engine call was driven out of order. The message says which.
#define RETRYRS_INVALID_ARGUMENT 4

// A bug in retryrs (a panic caught at the boundary). The message says where.
#define RETRYRS_INTERNAL_ERROR 5

// The ceiling itself.
#define RETRYRS_JITTER_NONE 0

// Uniform in [0, ceiling].
#define RETRYRS_JITTER_FULL 1

// ceiling/2 + uniform in [0, ceiling/2].
#define RETRYRS_JITTER_EQUAL 2

// Uniform in [c(1-f), c(1+f)] with f = jitter_factor, capped at max_delay.
#define RETRYRS_JITTER_PROPORTIONAL 3

// min(max_delay, uniform in [initial_delay, 3 * previous delay]).
#define RETRYRS_JITTER_DECORRELATED 4

// Not exhausted (any other outcome).
#define RETRYRS_REASON_NONE 0

// max_attempts calls were made.
#define RETRYRS_REASON_ATTEMPTS 1

// The next wait would pass the deadline, or the deadline passed during a wait.
#define RETRYRS_REASON_DEADLINE 2

// The shared retry budget had no token to spare.
#define RETRYRS_REASON_BUDGET 3

// The server asked for a wait longer than max_retry_after_ms.
#define RETRYRS_REASON_RETRY_AFTER 4

// The policy's circuit breaker is open: the call was refused, no attempt made.
#define RETRYRS_REASON_CIRCUIT_OPEN 5

// A hook stopped the call before a wait (a before-retry callback answered stop, or
// retryrs_call_settle was given RETRYRS_PLAN_STOP); the last failure is kept.
#define RETRYRS_REASON_STOPPED 6

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// The library's version ("MAJOR.MINOR.PATCH"), a static string. Compare it with
// RETRYRS_VERSION to detect a header/library mismatch.
const char *retryrs_version(void);

// The time the running attempt has left, for an attempt callback of
// retryrs_retrier_call() to bound its own I/O with (a socket timeout,
// CURLOPT_TIMEOUT_MS): its bound (contract section 3a: the time left before the
// deadline, or the smaller attempt timeout) minus the time the attempt has run, in whole
// ms rounded down; 0 once the bound has passed; RETRYRS_UNBOUNDED (UINT64_MAX) when the
// policy has neither a deadline nor an attempt timeout. Measured on the library's clock
// (retryrs_now_ms(): virtual under the testing switch).
//
// Valid only inside an attempt callback, on the thread running it (the innermost one,
// if a callback runs another blocking call); anywhere else (a listener, another thread,
// after the call) it returns RETRYRS_INVALID_ARGUMENT, as for a NULL `out`. `*out` is
// written only on RETRYRS_OK.
retryrs_status retryrs_attempt_remaining_ms(uint64_t *out);

// Runs `attempt(user_data, n, &hint)` until it succeeds or the engine stops it.
//
// Returns RETRYRS_OK (an attempt succeeded), RETRYRS_REJECTED (a permanent failure),
// RETRYRS_EXHAUSTED (outcome->reason says which limit), RETRYRS_CANCELLED (`cancel`
// fired, before or during a wait), or RETRYRS_INVALID_ARGUMENT (NULL retrier or
// attempt, or a verdict outside RETRYRS_SUCCESS/TRANSIENT/PERMANENT, which counts as
// a permanent failure, or a retrier whose policy hedges: a blocking call cannot abandon
// an attempt, see retryrs_hedge_start()). `listener`, `cancel` and `outcome` may be
// NULL. Under the testing switch the waits are virtual.
retryrs_status retryrs_retrier_call(const struct retryrs_retrier *retrier,
                                    retryrs_attempt_fn attempt,
                                    void *user_data,
                                    const struct retryrs_listener *listener,
                                    const struct retryrs_cancel *cancel,
                                    struct retryrs_outcome *outcome);

// retryrs_retrier_call() with hooks (may be NULL: none) that act on the call: before
// each wait the engine would make, `hooks->before_retry` may stop the call
// (RETRYRS_EXHAUSTED, reason RETRYRS_REASON_STOPPED, outcome->attempts the attempts
// made), then `hooks->wait` may set an exact wait; the deadline, max_retry_after_ms and
// the budget still apply to it (see retryrs_wait_fn). A hook answering a value it may not
// stops the call and returns RETRYRS_INVALID_ARGUMENT naming the value. A hooks struct
// whose struct_size this library does not know: RETRYRS_INVALID_ARGUMENT, nothing run.
retryrs_status retryrs_retrier_call_hooked(const struct retryrs_retrier *retrier,
                                           retryrs_attempt_fn attempt,
                                           void *user_data,
                                           const struct retryrs_listener *listener,
                                           const struct retryrs_cancel *cancel,
                                           const struct retryrs_hooks *hooks,
                                           struct retryrs_outcome *outcome);

// Fills `*config` with the defaults (each field's comment says its own).
retryrs_status retryrs_breaker_config_init(struct retryrs_breaker_config *config);

// Creates a closed breaker. RETRYRS_INVALID_ARGUMENT names a setting out of range
// ("retryrs_breaker_new: config->failures must be a whole number >= 1, got 0"). Free
// with retryrs_breaker_free().
retryrs_status retryrs_breaker_new(const struct retryrs_breaker_config *config,
                                   struct retryrs_breaker **out);

// The state now (RETRYRS_BREAKER_CLOSED, _OPEN, _HALF_OPEN or _ISOLATED) and the milliseconds left
// before a probe may go (0 unless open), on the clock blocking calls use (virtual under
// the testing switch); either out-pointer may be NULL.
retryrs_status retryrs_breaker_state(const struct retryrs_breaker *breaker,
                                     int32_t *state,
                                     double *retry_in_ms);

// retryrs_breaker_state() at `now_ms` on the caller's time base: for calls driven with
// retryrs_call_start(), which give the breaker their own `now_ms`.
retryrs_status retryrs_breaker_state_at(const struct retryrs_breaker *breaker,
                                        uint64_t now_ms,
                                        int32_t *state,
                                        double *retry_in_ms);

// Holds it open until retryrs_breaker_reset(): every call is refused
// (RETRYRS_EXHAUSTED, RETRYRS_REASON_CIRCUIT_OPEN); state RETRYRS_BREAKER_ISOLATED
// (Polly's Isolate, resilience4j's FORCED_OPEN). Thread-safe.
retryrs_status retryrs_breaker_isolate(const struct retryrs_breaker *breaker);

// Closes it, whatever its state, with its counts started over. Thread-safe.
retryrs_status retryrs_breaker_reset(const struct retryrs_breaker *breaker);

// Calls refused so far.
retryrs_status retryrs_breaker_rejections(const struct retryrs_breaker *breaker, uint64_t *out);

// Releases the handle; retriers made with it keep the breaker alive. NULL is a no-op.
void retryrs_breaker_free(struct retryrs_breaker *breaker);

// A new retrier with `retrier`'s policy and `breaker` (NULL: none): every call asks the
// breaker first; a refused call returns RETRYRS_EXHAUSTED with reason
// RETRYRS_REASON_CIRCUIT_OPEN and 0 attempts, the attempt callback never called. Several
// retriers may share one breaker. Free with retryrs_retrier_free().
retryrs_status retryrs_retrier_with_breaker(const struct retryrs_retrier *retrier,
                                            const struct retryrs_breaker *breaker,
                                            struct retryrs_retrier **out);

// Creates a full budget: max_tokens in [0.001, 1e12], token_ratio in [0.001,
// max_tokens]; both keep 3 decimals, truncated, as gRPC does (0.1239 adds 0.123), and a
// value that truncates to 0 is RETRYRS_INVALID_ARGUMENT naming it.
// Each transient failure costs one token, each success adds token_ratio, and a retry
// is allowed only while tokens > max_tokens / 2. Free with retryrs_budget_free().
retryrs_status retryrs_budget_new(double max_tokens,
                                  double token_ratio,
                                  struct retryrs_budget **out);

// Creates the AWS SDKs' standard retry quota (kind quota): `capacity` (500 in the SDKs)
// that starts full; a retry is allowed only while what is left covers `retry_cost` (5)
// and takes it; a call that succeeds gives back its last retry's cost, or
// `no_retry_increment` (1) when it needed none. `timeout_retry_cost` (10) is the SDKs'
// price of a retry after a timeout: after an attempt reported as RETRYRS_TIMED_OUT (or
// with retryrs_call_record_timeout()). Whole numbers; capacity and costs in [1, 1e12], the increment in [0, 1e12]:
// otherwise RETRYRS_INVALID_ARGUMENT naming it. retryrs_budget_tokens() reads the
// capacity left. Free with retryrs_budget_free().
retryrs_status retryrs_budget_new_quota(uint64_t capacity,
                                        uint64_t retry_cost,
                                        uint64_t timeout_retry_cost,
                                        uint64_t no_retry_increment,
                                        struct retryrs_budget **out);

// Creates Finagle's RetryBudget (kind ratio): every call deposits, every retry
// withdraws (1 / percent_can_retry deposits), both expiring after `ttl_ms` (1 s to 60 s),
// on top of a reserve of `min_retries_per_sec` retries a second (Finagle's defaults:
// 10000, 10, 0.2). Out-of-range values: RETRYRS_INVALID_ARGUMENT naming it.
// retryrs_budget_tokens() reads the retries left. Free with retryrs_budget_free().
retryrs_status retryrs_budget_new_ratio(uint64_t ttl_ms,
                                        uint32_t min_retries_per_sec,
                                        double percent_can_retry,
                                        struct retryrs_budget **out);

// The tokens left now (a quota: the capacity left; a ratio budget: the retries left).
retryrs_status retryrs_budget_tokens(const struct retryrs_budget *budget, double *tokens);

// Releases the handle; retriers built with it keep the budget alive. NULL is a no-op.
// Must not be called twice for the same budget.
void retryrs_budget_free(struct retryrs_budget *budget);

// Creates a token not yet cancelled. Free with retryrs_cancel_free().
retryrs_status retryrs_cancel_new(struct retryrs_cancel **out);

// Creates a token cancelled as soon as any of the `n` tokens in `parents` is (at once if
// one already is; never for n == 0, unless fired itself): a library's own token linked
// to its caller's. Firing it fires none of the parents. The parents hold it weakly: free
// it with retryrs_cancel_free() whenever you like, before or after them. `parents` may be
// NULL only when n is 0; no parent may be NULL.
retryrs_status retryrs_cancel_any(const struct retryrs_cancel *const *parents,
                                  size_t n,
                                  struct retryrs_cancel **out);

// Creates a child of `parent`: firing the parent fires it (at once if the parent already
// fired); firing it leaves the parent alone. Free it with retryrs_cancel_free(), before
// or after the parent.
retryrs_status retryrs_cancel_child(const struct retryrs_cancel *parent,
                                    struct retryrs_cancel **out);

// Cancels: a blocking call waiting on this token wakes at once and returns
// RETRYRS_CANCELLED; a call not started yet with it runs nothing. Not async-signal-safe
// (it takes a lock to reach the tokens made from this one): from a signal handler, call
// retryrs_cancel_fire_from_signal().
retryrs_status retryrs_cancel_fire(const struct retryrs_cancel *cancel);

// Cancels from a signal handler (e.g. SIGTERM ending the retries in flight): the one
// cancel function that is async-signal-safe. It takes no lock and allocates nothing: it
// sets the token's flag and wakes at once every blocking call waiting on this token or
// on a token made from it (retryrs_cancel_child/any, which see the fire through their
// parents). RETRYRS_OK, or RETRYRS_INVALID_ARGUMENT for a NULL `cancel`, the one failure
// that leaves retryrs_last_error() as it was (a message would need memory). The token
// must stay alive while a handler may fire it: block the signal around
// retryrs_cancel_free() (pthread_sigmask), and around replacing the token it fires.
retryrs_status retryrs_cancel_fire_from_signal(const struct retryrs_cancel *cancel);

// Whether retryrs_cancel_fire() (or retryrs_cancel_fire_from_signal()) was called on this
// token or on a token it was made from.
retryrs_status retryrs_cancel_is_cancelled(const struct retryrs_cancel *cancel, bool *cancelled);

// Releases the token. It must not be in use by a running call. NULL is a no-op. Must
// not be called twice for the same token.
void retryrs_cancel_free(struct retryrs_cancel *cancel);

// Fills the first `struct_size` bytes of `*config` with the contract's defaults (each
// field's comment says its own) and sets config->struct_size.
// Call it as retryrs_config_default(&config), the macro that passes sizeof(config).
// A struct_size this library does not know: RETRYRS_INVALID_ARGUMENT, nothing written.
retryrs_status retryrs_config_init(struct retryrs_config *config, size_t struct_size);

// Reads a jitter spelling ("none", "full", "equal", "decorrelated",
// "proportional(F)") into a kind and a factor (0 unless proportional), e.g. from a
// configuration file. Fails with RETRYRS_INVALID_ARGUMENT naming the jitter.
retryrs_status retryrs_jitter_parse(const char *text,
                                    retryrs_jitter *jitter,
                                    double *jitter_factor);

// Starts a call whose first attempt begins at `now_ms` (any monotonic millisecond time
// base, e.g. retryrs_now_ms(); the engine only subtracts). Run attempt 1 next.
// `listener` may be NULL; it is copied, and its callback gets every event of the call.
// Free with retryrs_call_free(). RETRYRS_INVALID_ARGUMENT for a retrier whose policy
// hedges (retryrs_hedge_start() runs those).
retryrs_status retryrs_call_start(const struct retryrs_retrier *retrier,
                                  uint64_t now_ms,
                                  const struct retryrs_listener *listener,
                                  struct retryrs_call **out);

// Whether the policy's circuit breaker refused the call at its start: RETRYRS_EXHAUSTED
// (make no attempt; free the call) with `*retry_in_ms` the milliseconds before a probe
// may go, or RETRYRS_OK (run attempt 1). `retry_in_ms` may be NULL.
retryrs_status retryrs_call_refusal(const struct retryrs_call *call, double *retry_in_ms);

// Reports how the current attempt ended at `now_ms`: `verdict` is RETRYRS_SUCCESS,
// RETRYRS_TRANSIENT (with `hint_ms`, a minimum wait; negative or NaN: no hint),
// RETRYRS_PERMANENT, RETRYRS_TIMED_OUT (the program cut the attempt at its bound, as
// retryrs_call_record_timeout() reports it; `hint_ms` is ignored) or RETRYRS_DONT_RETRY
// (the server said not to retry: the call ends exhausted, reason retry_after). `*step` gets RETRY
// (wait, then retryrs_call_after_wait()) or STOP. RETRYRS_INVALID_ARGUMENT when no
// attempt is in progress or the verdict is unknown.
retryrs_status retryrs_call_report(struct retryrs_call *call,
                                   retryrs_verdict verdict,
                                   double hint_ms,
                                   uint64_t now_ms,
                                   struct retryrs_step *step);

// The first half of retryrs_call_report(), for a program whose hooks may change the wait
// or stop the call (contract step 5a): reports the attempt's verdict at `now_ms` as
// retryrs_call_report() does. `*proposal` gets STOP (the call ended exactly as
// retryrs_call_report() would have ended it) or PROPOSED: the engine would wait
// `delay_ms`; run the hooks (they may take time), then call retryrs_call_settle(). Until
// then the call accepts only retryrs_call_settle() and retryrs_call_cancel().
retryrs_status retryrs_call_propose(struct retryrs_call *call,
                                    retryrs_verdict verdict,
                                    double hint_ms,
                                    uint64_t now_ms,
                                    struct retryrs_proposal *proposal);

// The second half: the program's `plan` for the wait retryrs_call_propose() proposed, at
// `now_ms`: RETRYRS_PLAN_ENGINE (the computed wait), RETRYRS_PLAN_EXACT (exactly
// `wait_ms`: not raised to the hint, rounded up to whole ms; over max_retry_after_ms when
// set -> STOP, reason RETRYRS_REASON_RETRY_AFTER) or RETRYRS_PLAN_STOP (STOP, reason
// RETRYRS_REASON_STOPPED, no budget token drawn). A wait that cannot end before the
// deadline (or a deadline that passed while the hooks ran) -> STOP, reason
// RETRYRS_REASON_DEADLINE. `*step` gets RETRY (wait `delay_ms`, then
// retryrs_call_after_wait()) or STOP. RETRYRS_INVALID_ARGUMENT when nothing was
// proposed, for an unknown plan, or a negative, NaN or infinite `wait_ms` (or one past
// RETRYRS_MAX_DELAY_MS) with RETRYRS_PLAN_EXACT.
retryrs_status retryrs_call_settle(struct retryrs_call *call,
                                   retryrs_plan plan,
                                   double wait_ms,
                                   uint64_t now_ms,
                                   struct retryrs_step *step);

// The wait ended at `now_ms`. `*step` gets ATTEMPT (run it now) or STOP (the deadline
// passed during the wait). RETRYRS_INVALID_ARGUMENT when the call was not waiting.
retryrs_status retryrs_call_after_wait(struct retryrs_call *call,
                                       uint64_t now_ms,
                                       struct retryrs_step *step);

// Cancels the call at `now_ms` (during a wait or an attempt): emits the Cancelled
// event and sets `*step` to STOP with RETRYRS_CANCELLED. RETRYRS_INVALID_ARGUMENT when
// the call has already ended.
retryrs_status retryrs_call_cancel(struct retryrs_call *call,
                                   uint64_t now_ms,
                                   struct retryrs_step *step);

// For a call cancelled before its first attempt (its cancel fired before it could
// start): emits the one Cancelled event, attempt 0, through `listener` (may be NULL)
// and returns RETRYRS_CANCELLED, as the blocking call does for an already-fired token.
retryrs_status retryrs_call_cancelled_before_start(const struct retryrs_retrier *retrier,
                                                   const struct retryrs_listener *listener);

// The time left at `now_ms` to the attempt in progress (its bound, contract section 3a:
// the time left before the deadline, or the smaller attempt timeout), in whole ms
// rounded down: 0 once it has passed, RETRYRS_UNBOUNDED (UINT64_MAX) when the policy has
// neither a deadline nor an attempt timeout. Ask it when an attempt starts (step.action
// RETRYRS_ACTION_ATTEMPT) and bound the attempt's I/O with it. RETRYRS_INVALID_ARGUMENT
// when `call` or `out` is NULL, when no attempt is in progress (waiting, or ended), or
// from inside one of the call's own callbacks; `*out` is written only on RETRYRS_OK.
retryrs_status retryrs_call_remaining_ms(struct retryrs_call *call, uint64_t now_ms, uint64_t *out);

// Reports that the current attempt ran out of its bound at `now_ms`: the program cut it
// there (its own timeout at the time retryrs_call_remaining_ms() gave it). The same as
// retryrs_call_report() with RETRYRS_TIMED_OUT: a transient failure without a hint, and
// a quota budget prices the retry after it as a timeout's (`timeout_retry_cost`).
// `*step` gets RETRY or STOP. RETRYRS_INVALID_ARGUMENT when no attempt is in progress.
retryrs_status retryrs_call_record_timeout(struct retryrs_call *call,
                                           uint64_t now_ms,
                                           struct retryrs_step *step);

// The library's monotonic clock in ms (the virtual one while the testing switch is on):
// a time base for retryrs_call_start() and friends.
uint64_t retryrs_now_ms(void);

// Releases the call (ended or not). NULL is a no-op. Must not be called twice for the
// same call. Called from inside one of the call's own callbacks (its listener, e.g. on
// the SUCCESS event), the free is deferred until the retryrs_call_report(),
// retryrs_call_after_wait() or retryrs_call_cancel() that ran the callback returns; do
// not use the call after that.
void retryrs_call_free(struct retryrs_call *call);

// Returns this thread's last error message: what the most recent call that returned a
// status other than RETRYRS_OK on this thread had to say. Never NULL ("" before any
// failure). The string stays valid until the next failing call on the same thread; a
// successful call leaves it unchanged, so read it right after the failure. At most 1023
// bytes: a longer message is cut at a character boundary and ends in "...". Works during
// thread and process teardown too (see "Teardown").
const char *retryrs_last_error(void);

// The name of a status ("ok", "rejected", "exhausted", "cancelled",
// "invalid_argument", "internal_error"; "unknown" for any other value). Static string.
const char *retryrs_status_name(retryrs_status status);

// Stores in `*mask` the status codes of the policy `name` (a gRPC service config's):
// bit n set when status n is in its retryableStatusCodes (a hedging policy's
// nonFatalStatusCodes). RETRYRS_INVALID_ARGUMENT for an unknown name, or a policy not
// loaded from a service config (retryrs_last_error() says which).
retryrs_status retryrs_policies_grpc_status_codes(const struct retryrs_policies *policies,
                                                  const char *name,
                                                  uint32_t *mask);

// Stores in `*verdict` the verdict on a call of the policy `name` that ended with gRPC
// status `code` (0 to 16), by its status codes: RETRYRS_SUCCESS for OK, RETRYRS_TRANSIENT
// for a listed code (retried; hedging: non-fatal), RETRYRS_PERMANENT for any other.
// RETRYRS_INVALID_ARGUMENT for an unknown name, a code out of range, or a policy not
// loaded from a service config.
retryrs_status retryrs_policies_grpc_verdict(const struct retryrs_policies *policies,
                                             const char *name,
                                             uint32_t code,
                                             retryrs_verdict *verdict);

// The number of the gRPC status called `name` (as a service config spells it:
// "UNAVAILABLE"), or -1 for a name that is none (or NULL).
int32_t retryrs_grpc_status_code(const char *name);

// The name of gRPC status `code` ("UNAVAILABLE" for 14), static; NULL past 16.
const char *retryrs_grpc_status_name(uint32_t code);

// Starts a hedged call at `now_ms` (any monotonic millisecond time base, e.g.
// retryrs_now_ms()) under the retrier's policy, which should hedge (a policy document's
// `hedge` or a service config's `hedgingPolicy`, through retryrs_policies_retrier());
// one without hedging runs as one attempt. `listener` may be NULL; it is copied. Then
// call retryrs_hedge_poll(), which launches attempt 1 (or, when the policy's circuit
// breaker refuses the call, STOP with reason circuit_open and nothing launched). Free
// with retryrs_hedge_free().
retryrs_status retryrs_hedge_start(const struct retryrs_retrier *retrier,
                                   uint64_t now_ms,
                                   const struct retryrs_listener *listener,
                                   struct retryrs_hedge **out);

// What to do at `now_ms`: `*step` gets LAUNCH, WAIT or STOP (the deadline passed, or
// nothing is in flight and nothing more may launch). RETRYRS_INVALID_ARGUMENT once the
// call has ended.
retryrs_status retryrs_hedge_poll(struct retryrs_hedge *hedge,
                                  uint64_t now_ms,
                                  struct retryrs_hedge_step *step);

// Attempt `attempt` ended at `now_ms` with `verdict`: RETRYRS_SUCCESS (it wins),
// RETRYRS_TRANSIENT (a non-fatal failure; `hint_ms` a server's pushback, negative or
// NaN for none), RETRYRS_PERMANENT (fatal: the call ends) or RETRYRS_DONT_RETRY (a
// failure after which no further hedge is sent; those in flight go on); RETRYRS_TIMED_OUT is
// RETRYRS_TRANSIENT without a hint, and a quota prices the attempt it launches as a
// retry after a timeout (a hedge launched on its timer is a plain retry). `*step`
// gets what to do next, or DROPPED for an attempt already cancelled.
// RETRYRS_INVALID_ARGUMENT for an attempt never launched or an unknown verdict.
retryrs_status retryrs_hedge_report(struct retryrs_hedge *hedge,
                                    uint32_t attempt,
                                    retryrs_verdict verdict,
                                    double hint_ms,
                                    uint64_t now_ms,
                                    struct retryrs_hedge_step *step);

// Cancels the hedged call at `now_ms`: emits Cancelled; `*step` gets STOP with
// RETRYRS_CANCELLED and the attempts to cancel. RETRYRS_INVALID_ARGUMENT once ended.
retryrs_status retryrs_hedge_cancel(struct retryrs_hedge *hedge,
                                    uint64_t now_ms,
                                    struct retryrs_hedge_step *step);

// Attempt `attempt`'s time left at `now_ms` (its bound: the deadline, or its own attempt
// timeout if sooner), in whole ms rounded down; RETRYRS_UNBOUNDED when the policy has
// neither. RETRYRS_INVALID_ARGUMENT unless that attempt is in flight; `*out` is written
// only on RETRYRS_OK.
retryrs_status retryrs_hedge_remaining_ms(struct retryrs_hedge *hedge,
                                          uint32_t attempt,
                                          uint64_t now_ms,
                                          uint64_t *out);

// Releases the hedged call (ended or not). NULL is a no-op; not twice. From inside its
// own listener the free is deferred until the function that ran the listener returns.
void retryrs_hedge_free(struct retryrs_hedge *hedge);

// Fills `*out` with the retrier's statistics and sets out->struct_size. Call it as
// retryrs_retrier_stats_get(retrier, &stats), the macro that passes sizeof(stats). A
// struct_size this library does not know: RETRYRS_INVALID_ARGUMENT, nothing written.
retryrs_status retryrs_retrier_stats(const struct retryrs_retrier *retrier,
                                     struct retryrs_stats *out,
                                     size_t struct_size);

// Parses a Retry-After header value (delay-seconds or any HTTP-date form) relative to
// the current system time. On RETRYRS_OK, *has_hint says whether the value was valid
// and *hint_ms holds the wait in ms (rounded up; 0 for a past date; a larger value
// saturates at RETRYRS_MAX_DELAY_MS, the longest wait); garbage, negatives and
// fractions give *has_hint = false.
// Pass *hint_ms as the attempt callback's hint (as a double).
retryrs_status retryrs_parse_retry_after(const char *value, bool *has_hint, uint64_t *hint_ms);

// retryrs_parse_retry_after() relative to `now_unix_ms` (milliseconds since the Unix
// epoch; negative is before it), for tests and for callers with their own clock.
retryrs_status retryrs_parse_retry_after_at(const char *value,
                                            int64_t now_unix_ms,
                                            bool *has_hint,
                                            uint64_t *hint_ms);

// Whether an HTTP status is worth retrying: 408, 425, 429, 500, 502, 503, 504.
bool retryrs_is_retryable_status(int32_t status);

// The core's HTTP rule, the same in every host (contract, "HTTP"). Writes to *verdict:
// RETRYRS_TRANSIENT (retry; a Retry-After header on the response is the hint, and its
// body should be released first), RETRYRS_SUCCESS (a response to hand back as it is:
// the call is over) or RETRYRS_PERMANENT (a network failure that must not be repeated).
// The verdict can be returned from an attempt callback as it is.
//
// `method` is the request method (compared ignoring ASCII case). `status` is read only
// for RETRYRS_HTTP_RESPONSE. `retry_methods` (`retry_methods_len` strings) replaces the
// idempotent methods (GET, HEAD, OPTIONS, TRACE, PUT, DELETE) and `retry_statuses`
// (`retry_statuses_len` values) replaces the retryable statuses (408, 425, 429, 500,
// 502, 503, 504); NULL keeps the default list, and a non-NULL list of length 0 is empty.
// RETRYRS_INVALID_ARGUMENT for a NULL method or verdict, an unknown outcome, a status
// outside 0..65535, a NULL list with a nonzero length or a NULL string in the list.
retryrs_status retryrs_http_classify(const char *method,
                                     retryrs_http_outcome outcome,
                                     int32_t status,
                                     const char *const *retry_methods,
                                     size_t retry_methods_len,
                                     const int32_t *retry_statuses,
                                     size_t retry_statuses_len,
                                     retryrs_verdict *verdict);

// retryrs_http_classify() for a request that may carry an `Idempotency-Key` header:
// `idempotency_key` is the header's value, or NULL when the request has none. With a
// non-blank key, a POST or PATCH may be repeated like an idempotent method (IETF httpapi
// draft; contract, "HTTP"), whatever `retry_methods` says; pass NULL to ignore the
// header. The other parameters, the verdict and the errors are retryrs_http_classify()'s.
retryrs_status retryrs_http_classify_request(const char *method,
                                             const char *idempotency_key,
                                             retryrs_http_outcome outcome,
                                             int32_t status,
                                             const char *const *retry_methods,
                                             size_t retry_methods_len,
                                             const int32_t *retry_statuses,
                                             size_t retry_statuses_len,
                                             retryrs_verdict *verdict);

// Applies a response's pushback to the `*verdict` retryrs_http_classify() gave it
// (`count` headers `names[i]`: `values[i]`): a RETRYRS_TRANSIENT response whose server
// said "don't retry" (`Retryrs-Pushback: -1`, a negative `grpc-retry-pushback-ms`,
// `x-envoy-overloaded`) becomes RETRYRS_DONT_RETRY (not retried, still a failure for the
// budget and the breaker; the response is the caller's, as when retries run out); one
// that asked for a wait keeps RETRYRS_TRANSIENT and *hint_ms (optional) gets the wait
// (pass it as the callback's hint; the retrier's wait hook may make it exact). Any
// other verdict is left as it is (pushback never makes a response retried), and
// *hint_ms is then untouched. RETRYRS_INVALID_ARGUMENT for a NULL verdict, NULL arrays
// with a nonzero count, or a NULL entry.
retryrs_status retryrs_http_pushback(retryrs_verdict *verdict,
                                     const char *const *names,
                                     const char *const *values,
                                     size_t count,
                                     double *hint_ms);

// Writes `url` made safe to show in logs into `buf`, by OpenTelemetry's rule for
// `url.full`: `user:password@` becomes `REDACTED:REDACTED@`, and the values of the
// query parameters AWSAccessKeyId, Signature, sig and X-Goog-Signature become REDACTED.
// `buf` has `cap` bytes and is always NUL-terminated when `cap` > 0 (it may be NULL when
// `cap` is 0). *len (optional) gets the redacted URL's length without the NUL: when it is
// not below `cap` the output was cut short (call again with *len + 1 bytes).
// RETRYRS_INVALID_ARGUMENT for a NULL url, or a NULL buf with a nonzero cap.
retryrs_status retryrs_redact_url(const char *url, char *buf, size_t cap, size_t *len);

// Loads a policy document (share/doc/retryrs/policies.md; a gRPC service config too)
// from `len` bytes of UTF-8 JSON at `json` (no NUL needed). On RETRYRS_INVALID_ARGUMENT nothing is
// created and retryrs_last_error() says where and what, e.g.
// `policies.payments.initial_delay: "100" has no unit; write "100ms" or "0.1s" (line 4,
// column 22)`. Free with retryrs_policies_free().
retryrs_status retryrs_policies_from_json(const char *json,
                                          size_t len,
                                          struct retryrs_policies **out);

// Fills the first `struct_size` bytes of `*config` with the policy called `name` (UTF-8,
// NUL-terminated) and sets config->struct_size, as retryrs_config_init does (see "ABI
// growth"): call it as retryrs_policies_get(policies, name, &config), the macro that
// passes sizeof(config). The config's `name` and `budget` point into `policies`: create
// the retrier (retryrs_retrier_new copies both) before freeing `policies`. An unknown
// name is RETRYRS_INVALID_ARGUMENT naming it and the names there are; so is a
// struct_size this library does not know (nothing written). A config holds the knobs
// only: for a gRPC service config's policy, whose server pushback follows A6, create
// the retrier with retryrs_policies_retrier instead.
retryrs_status retryrs_policies_config(const struct retryrs_policies *policies,
                                       const char *name,
                                       struct retryrs_config *config,
                                       size_t struct_size);

// Creates a retrier running the policy called `name` exactly as loaded: unlike a
// retryrs_config copy, which holds the knobs only, it keeps a gRPC service config's
// pushback rule (A6: wait exactly grpc-retry-pushback-ms, then restart the backoff; see
// docs/contract.md). The retrier shares the document's budget and outlives `policies`.
// An unknown name is RETRYRS_INVALID_ARGUMENT naming it. Free with retryrs_retrier_free().
retryrs_status retryrs_policies_retrier(const struct retryrs_policies *policies,
                                        const char *name,
                                        struct retryrs_retrier **out);

// The key of the policy a call to `method` of `service` (UTF-8, NUL-terminated) runs
// under, looked up as gRPC looks up a method config: `service/method`, then `service`,
// then `default`. Owned by `policies`; NULL when none of them is in the document (for a
// gRPC service config: one attempt), or for a NULL argument (retryrs_last_error() says
// which). Pass it to retryrs_policies_get or retryrs_policies_retrier.
const char *retryrs_policies_lookup(const struct retryrs_policies *policies,
                                    const char *service,
                                    const char *method);

// How many warnings loading the document gave (0 for NULL): valid input that is probably
// not meant, such as a gRPC tokenRatio that A6's three decimals make 0.
size_t retryrs_policies_warning_count(const struct retryrs_policies *policies);

// The `index`-th warning, in document order, NUL-terminated and owned by `policies`;
// NULL when `index` is out of range or `policies` is NULL.
const char *retryrs_policies_warning(const struct retryrs_policies *policies, size_t index);

// How many policies the document holds (0 for NULL).
size_t retryrs_policies_count(const struct retryrs_policies *policies);

// The name of the `index`-th policy (sorted by name), NUL-terminated and owned by
// `policies`; NULL when `index` is out of range or `policies` is NULL.
const char *retryrs_policies_name(const struct retryrs_policies *policies, size_t index);

// The circuit breaker the policy `name` names (a document's breakers are shared by every
// policy naming them), as a new handle on it to free with retryrs_breaker_free(), or
// NULL in `*out` when it names none. A retryrs_config carries no breaker: give it to a
// retrier made from the policy's config with retryrs_retrier_with_breaker().
retryrs_status retryrs_policies_breaker(const struct retryrs_policies *policies,
                                        const char *name,
                                        struct retryrs_breaker **out);

// Releases the document; retriers created from its configs keep what they need. NULL
// is a no-op. Must not be called twice for the same document.
void retryrs_policies_free(struct retryrs_policies *policies);

// Reads a request's propagation headers (`count` pairs `names[i]`: `values[i]`, names
// compared ignoring ASCII case) into a new context: the budget is the smallest one
// given (`Retryrs-Context` t, `grpc-timeout`, and with RETRYRS_CONTEXT_TRUST_MESH
// `x-envoy-expected-rq-timeout-ms`), clamped to `limit_ms` (RETRYRS_UNBOUNDED: no
// clamp); malformed values are ignored and counted (retryrs_context_malformed()). The
// deadline counts from now. *out is the caller's: free it with retryrs_context_free().
// RETRYRS_INVALID_ARGUMENT for a NULL out, NULL arrays with a nonzero count, a NULL
// entry, or unknown flags. (No upward rule: use a retryrs_gate for that.)
retryrs_status retryrs_context_parse(const char *const *names,
                                     const char *const *values,
                                     size_t count,
                                     uint64_t limit_ms,
                                     uint32_t flags,
                                     struct retryrs_context **out);

// A context with `left_ms` left from now (RETRYRS_UNBOUNDED: no deadline) and the
// inbound retry state `is_retry`, for a server that read its deadline elsewhere. *out is
// the caller's (retryrs_context_free()). RETRYRS_INVALID_ARGUMENT for a NULL out.
retryrs_status retryrs_context_new(uint64_t left_ms, bool is_retry, struct retryrs_context **out);

// Frees a context (NULL is a no-op). Entering copies it: freeing an entered context
// leaves the thread's context as it is.
void retryrs_context_free(struct retryrs_context *context);

// What a context holds; every out-parameter is optional (NULL: not wanted). *left_ms:
// the whole milliseconds it has left now (0 once past; RETRYRS_UNBOUNDED without a
// deadline); *budget_ms: the budget its headers gave, after the clamp (RETRYRS_UNBOUNDED:
// none); *is_retry: its request was a retry; *clamped: a larger budget was clamped to
// the limit; *malformed: how many of its headers were malformed (and ignored).
// RETRYRS_INVALID_ARGUMENT for a NULL context.
retryrs_status retryrs_context_get(const struct retryrs_context *context,
                                   uint64_t *left_ms,
                                   uint64_t *budget_ms,
                                   bool *is_retry,
                                   bool *clamped,
                                   uint32_t *malformed);

// Makes (a copy of) `context` this thread's context: every retrier call this thread
// makes until the matching retryrs_context_leave() obeys it (its deadline is the smaller
// of its own and the context's minus a margin of 2%, 5 to 250 ms; under a request that
// was a retry it makes one attempt). Enter and leave nest, and a context entered inside
// another narrows it and never widens it (the sooner deadline holds, a retry mark stays):
// a library's own budget cannot outlast the request it serves. Leave a request's context
// before entering another request's. RETRYRS_INVALID_ARGUMENT for a NULL context.
retryrs_status retryrs_context_enter(const struct retryrs_context *context);

// Leaves the context the last retryrs_context_enter() on this thread entered, restoring
// the one before it. RETRYRS_INVALID_ARGUMENT when no context is entered on this thread.
retryrs_status retryrs_context_leave(void);

// Whether the request whose context this thread is in was a retry: pass it as
// retryrs_context_outbound()'s `is_retry` (false outside any context).
bool retryrs_context_current_is_retry(void);

// Writes the headers to send with one outbound attempt into `buf` as lines
// `Name: value\r\n`, NUL-terminated: `Retryrs-Context: t=<left>, a=<attempt>` (plus
// `, r=?1` when `is_retry`), the `mesh`'s (RETRYRS_MESH_*) and the `kind`'s
// (RETRYRS_REQUEST_*). `left_ms` is the attempt's time left (retryrs_attempt_remaining_ms();
// RETRYRS_UNBOUNDED: no t); with 0 left nothing is written (send nothing). `buf` has
// `cap` bytes (NULL with cap 0 to measure); *len (optional) gets the length without the
// NUL: when it is not below `cap` the output was cut (call again with *len + 1 bytes).
// RETRYRS_INVALID_ARGUMENT for attempt 0, an unknown mesh or kind, or a NULL buf with a
// nonzero cap.
retryrs_status retryrs_context_outbound(uint64_t left_ms,
                                        uint32_t attempt,
                                        bool is_retry,
                                        int32_t mesh,
                                        int32_t kind,
                                        char *buf,
                                        size_t cap,
                                        size_t *len);

// Reads a response's pushback among `count` headers: *kind (RETRYRS_PUSHBACK_*) and,
// for RETRYRS_PUSHBACK_WAIT, *wait_ms (optional; 0 otherwise). "Don't retry" from any
// header wins. RETRYRS_INVALID_ARGUMENT for a NULL kind, NULL arrays with a nonzero
// count, or a NULL entry.
retryrs_status retryrs_read_pushback(const char *const *names,
                                     const char *const *values,
                                     size_t count,
                                     int32_t *kind,
                                     uint64_t *wait_ms);

// The margin an inner call keeps for `left_ms` left: 2%, between 5 and 250 ms.
uint64_t retryrs_context_margin_ms(uint64_t left_ms);

// A gate for one listener: `limit_ms` the longest budget a request may bring
// (RETRYRS_UNBOUNDED: no clamp), `flags` RETRYRS_CONTEXT_TRUST_MESH and/or
// RETRYRS_CONTEXT_OBSERVE_ONLY. *out is the caller's: free it with retryrs_gate_free().
// RETRYRS_INVALID_ARGUMENT for a NULL out or unknown flags.
retryrs_status retryrs_gate_new(uint64_t limit_ms, uint32_t flags, struct retryrs_gate **out);

// Frees a gate (NULL is a no-op).
void retryrs_gate_free(struct retryrs_gate *gate);

// Receives one request: reads its headers as retryrs_context_parse() does into a new
// context (*out, the caller's: retryrs_context_free()) and writes the upward rule's
// answer to *upward (RETRYRS_UPWARD_*): on RETRYRS_UPWARD_REFUSE answer 504 with
// `Retryrs-Pushback: -1` without running the handler. RETRYRS_INVALID_ARGUMENT for a
// NULL gate, out or upward, NULL arrays with a nonzero count, or a NULL entry.
retryrs_status retryrs_gate_receive(const struct retryrs_gate *gate,
                                    const char *const *names,
                                    const char *const *values,
                                    size_t count,
                                    struct retryrs_context **out,
                                    retryrs_upward *upward);

// Whether `host` (a URL's host, with or without `:port`; IPv6 in brackets) may receive
// propagation headers under the allowlist `hosts` (`count` names: `api.example.com`
// exactly, `*.example.com` any subdomain of it, never the apex; compared ignoring ASCII
// case). `hosts` NULL with a count of 0: no list, every host; a non-NULL list of 0
// names allows none. Writes the answer to *allowed. RETRYRS_INVALID_ARGUMENT for a NULL
// host or allowed, NULL hosts with a nonzero count, a NULL or empty name, or a `*`
// anywhere but a leading `*.`.
retryrs_status retryrs_host_allowed(const char *const *hosts,
                                    size_t count,
                                    const char *host,
                                    bool *allowed);

// Validates `config` and creates a retrier. On RETRYRS_INVALID_ARGUMENT nothing is
// created and retryrs_last_error() names the field and value ("retryrs_retrier_new:
// config->max_attempts must be >= 1 and <= 4294967295, got 0"); a config whose
// struct_size this library does not know is refused the same way (see "ABI growth").
// Free with retryrs_retrier_free().
retryrs_status retryrs_retrier_new(const struct retryrs_config *config,
                                   struct retryrs_retrier **out);

// Releases the retrier. NULL is a no-op. Must not be called twice for the same retrier.
// Engine calls started from it stay valid (they share the policy), and so does a
// blocking call already running with it on another thread (it holds its own reference):
// only starting a new call with a freed retrier is an error.
void retryrs_retrier_free(struct retryrs_retrier *retrier);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* RETRYRS_H */

/* Inline functions, not macros: the header defines no macro but RETRYRS_* (a program's
 * own names cannot collide with it). `sizeof *config` is the struct as the program was
 * compiled with this header, as the macros these replace passed. Their own guard: the
 * trailer stands after RETRYRS_H's. */
#ifndef RETRYRS_H_INLINE
#define RETRYRS_H_INLINE
/* Fills *config with the defaults and its struct_size (see "ABI growth" above). */
static inline retryrs_status retryrs_config_default(struct retryrs_config *config) {
  return retryrs_config_init(config, sizeof *config);
}
/* Fills *config with a loaded document's policy `name` and its struct_size. */
static inline retryrs_status retryrs_policies_get(const struct retryrs_policies *policies, const char *name,
                                                  struct retryrs_config *config) {
  return retryrs_policies_config(policies, name, config, sizeof *config);
}
/* Fills *stats with a retrier's statistics and its struct_size. */
static inline retryrs_status retryrs_retrier_stats_get(const struct retryrs_retrier *retrier,
                                                       struct retryrs_stats *stats) {
  return retryrs_retrier_stats(retrier, stats, sizeof *stats);
}
#endif  /* RETRYRS_H_INLINE */
