//! # retryrs
//!
//! One retry engine for every language: this crate is the engine, and the Rust host. The
//! heart is a sans-IO decision engine ([`Call`]): given a [`Policy`], the verdict on each
//! attempt and the time, it answers "retry after D" or "stop", and emits [`Event`]s. It
//! never sleeps, reads no clock and allocates nothing, so the same decisions drive the
//! Python, Node and C bindings, bit for bit. Around it: an async executor on any runtime
//! ([`Retrier::run_async`], [`Sleep`]), a blocking one ([`Retrier::run`]), backoff and
//! jitter ([`backoff`]), Retry-After parsing ([`parse_retry_after`], [`RetryAfter`]), HTTP
//! classification ([`http_rules`]), a shared [`RetryBudget`], a [`CancelToken`] and virtual
//! time for tests ([`testing`]). In backon's shape, `fetch.retry(&retrier).await` and
//! `op.retry(&retrier).call()`: the extension trait [`Retryable`] ([`retry`]).
//!
//! ## Async
//!
//! ```
//! # #[cfg(feature = "tokio")] {
//! use retryrs::{transient, Attempt, Policy, Retrier};
//! use std::time::Duration;
//!
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
//! # rt.block_on(async {
//! let retrier = Retrier::new(Policy::builder().attempt_timeout(Some(Duration::from_secs(2))).build().unwrap());
//! let value = retrier
//!     .run_async(
//!         // Each attempt knows its number and its bound; one that overruns it is dropped.
//!         |attempt: Attempt| async move {
//!             if attempt.number < 3 { Err(std::io::Error::other("503")) } else { Ok("rate: 1.0842") }
//!         },
//!         transient, // every error is transient, with the Retry-After it carries
//!     )
//!     .await;
//! assert_eq!(value.unwrap(), "rate: 1.0842");
//! # });
//! # }
//! ```
//!
//! ## Blocking
//!
//! ```
//! # #[cfg(feature = "blocking")] {
//! use retryrs::{Attempt, Jitter, Policy, Retrier, Verdict};
//! use std::time::Duration;
//!
//! let retrier = Retrier::new(Policy::builder().jitter(Jitter::None).initial_delay(Duration::ZERO).build().unwrap());
//! let mut calls = 0;
//! let value = retrier.run(
//!     |_attempt: &Attempt| { calls += 1; if calls < 3 { Err("503") } else { Ok("rate: 1.0842") } },
//!     |_err| Verdict::TRANSIENT,
//! );
//! assert_eq!(value.unwrap(), "rate: 1.0842");
//! # }
//! ```
//!
//! ## The contract, in short
//!
//! Every host obeys the same rules (the repository's `docs/contract.md` has them in
//! full, and conformance vectors check each host against them):
//!
//! - **Policy** ([`PolicyBuilder`]): `max_attempts` 5, `initial_delay` 200 ms,
//!   `multiplier` 2, `max_delay` 5 s, `jitter` full, `deadline` 15 s, `max_retry_after`
//!   60 s, `attempt_timeout` off, no budget. Validated once when built
//!   ([`PolicyError`] names the knob and the value); never during a call.
//! - **Delays** are whole milliseconds: the ceiling after failure n is
//!   `min(max_delay, initial_delay × multiplier^(n−1))`, jittered by one of five kinds
//!   ([`Jitter`]) from a PCG64-MCG stream; a `seed` makes it reproducible everywhere.
//! - **A call, step by step**: a value is returned as it is. A failure is classified
//!   ([`Verdict`]): permanent ends the call as **rejected** with the original error, even
//!   on the last attempt; transient past the deadline, or on the last attempt, ends it as
//!   **exhausted** (reason `deadline`, `attempts`); a server hint over
//!   `max_retry_after` ends it at once (reason `retry_after`); otherwise the wait is
//!   `max(backoff, hint)` (Retry-After is a floor), refused when it would end past the
//!   deadline (reason `deadline`) or when the [`RetryBudget`] has no token (reason
//!   `budget`).
//! - **The attempt's bound**: each attempt gets the time left before the deadline, or
//!   the `attempt_timeout` if smaller ([`Attempt::remaining`]). The async executor drops
//!   an attempt that overruns it; a blocking one should hand it to its I/O. A late
//!   success is still a success.
//! - **Cancellation** ([`CancelToken`], or dropping the async future) ends a wait or an
//!   async attempt at once and is never retried: **cancelled**.
//! - **Errors** ([`RetryError`]) keep everything: the original error, the last 64
//!   failures in order, the attempts made, the reason.
//! - **Events** ([`Event`]): `AttemptFailed`, `Retrying`, `Success`, `Rejected`,
//!   `Exhausted`, `Cancelled`, in that order, with the attempt, elapsed time and delay.
//! - **No clock read the policy does not need**: with neither a deadline nor an attempt
//!   timeout (and no listener), a call never reads the clock.
//!
//! ## Features
//!
//! | feature | default | what it adds | dependencies |
//! |---|---|---|---|
//! | `blocking` | yes | [`Retrier::run`] and [`Retrier::execute`], which block the thread | none |
//! | `http-date` | yes | HTTP-date values in [`parse_retry_after`] (without it a date is no hint) | none |
//! | `tokio` | no | [`Retrier::run_async`] and `TokioSleep` | tokio (`time` only) |
//! | `reqwest` | no | [`reqwest_retry::RetryMiddleware`] for reqwest-middleware (needs Rust 1.88: url's icu tree) | reqwest-middleware, tokio |
//! | `tower` | no | [`tower_retry::RetryPolicy`] for tower's `Retry` layer | tower (`retry` only), tokio |
//! | `documents` | no | policy documents: `Policies::from_json`, `Policies::from_path` | serde, serde_json |
//!
//! With no feature at all the crate depends only on `getrandom` (seeds for unseeded
//! policies), and not even that on `wasm32-unknown-unknown`, where std has no clock
//! either: there, drive [`Call`] with the host's time, or run policies with neither a
//! deadline nor an attempt timeout.
#![deny(missing_docs)]
// The docs name the entry points of every feature. In a build without one of them (the
// default features, or none) those items do not exist and the names render as plain
// text, which is what they are there; docs.rs builds every feature, where each link must
// resolve (`cargo doc --all-features` with warnings denied, in make test).
#![cfg_attr(
    not(all(feature = "blocking", feature = "tokio", feature = "reqwest", feature = "tower")),
    allow(rustdoc::broken_intra_doc_links)
)]

pub mod async_executor;
mod async_hedge;
pub mod attempt;
pub mod backoff;
#[cfg(any(feature = "reqwest", feature = "tower"))]
mod bounded_body;
pub mod breaker;
pub mod budget;
pub mod cancel;
pub mod clock;
#[cfg(feature = "documents")]
pub mod document;
pub mod engine;
pub mod event;
pub mod executor;
mod fork_lock;
pub mod grpc_status;
pub mod hedge;
#[cfg(feature = "http-date")]
mod http_date;
#[cfg(any(feature = "reqwest", feature = "tower"))]
mod http_retry;
pub mod http_rules;
mod judge;
pub mod knob;
mod pcg;
pub mod policy;
pub mod propagation;
pub mod redact;
#[cfg(feature = "reqwest")]
pub mod reqwest_retry;
// The extension trait runs on an executor: the async one on tokio, or the blocking one.
#[cfg(any(feature = "tokio", feature = "blocking"))]
pub mod retry;
pub mod retry_after;
pub mod sleep;
pub mod spelling;
pub mod stats;
#[cfg(feature = "tower")]
pub mod tower_retry;
pub mod units;
mod wake;

pub use async_executor::{AsyncBeforeRetry, AsyncRun, AsyncTimedOutAs, AsyncWaitHook, TimedOut};
pub use attempt::Attempt;
pub use breaker::{admit, Admission, BreakerConfig, BreakerModel, BreakerState, CircuitBreaker, Transition};
pub use budget::{BudgetError, BudgetKind, QuotaBudget, RatioBudget, RetryBudget, RetryCause, TokenBucket};
pub use cancel::CancelToken;
pub use clock::{testing, Clock, SystemClock, VirtualClock};
#[cfg(feature = "documents")]
pub use document::{DocumentError, LoadOptions, Policies};
pub use engine::{
    cancelled_before_start, duration_from_ms, Call, Decision, Plan, Proposal, Resume, StateError, Stop, Verdict,
};
pub use event::{CancelledAfter, Event, EventKind, ExhaustReason, GaveUp};
pub use executor::{
    BeforeRetry, Cause, Failed, Retrier, RetryContext, RetryError, Run, ValueVerdict, WaitHook, HISTORY,
};
pub use hedge::{AttemptSet, HedgeCall, HedgeDelay, HedgeError, Hedging, LatencySketch, Step};
pub use http_rules::{
    classify_request, is_error_status, is_idempotent, is_retryable_status, retry_with, with_pushback, HttpOutcome,
    HttpRules, HttpVerdict, RetryWith, IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_METHODS, RETRYABLE_STATUSES,
};
pub use knob::{Knob, Setting, Unit, KNOBS};
pub use policy::{DeadlineHint, Given, Jitter, Policy, PolicyBuilder, PolicyError, Pushback};
pub use redact::{check_redact_keys, redact_url, redact_url_with, REDACTED_QUERY_KEYS};
#[cfg(any(feature = "tokio", feature = "blocking"))]
pub use retry::{Retry, Retryable};
pub use retry_after::{parse_retry_after, parse_retry_after_ms, transient, RetryAfter};
pub use sleep::Sleep;
#[cfg(feature = "tokio")]
pub use sleep::{TokioClock, TokioSleep};
pub use spelling::Spelling;
pub use stats::{CallTally, Stats, StatsSnapshot};

/// The crate version, as in Cargo.toml.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The crate README's Rust examples (`core/README.md`, the page crates.io shows) compile
/// and run as doctests.
#[cfg(all(doctest, feature = "blocking", feature = "tokio"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// docs/propagation.md's Rust example (the server layer), in the repository only (a file
/// outside the package; `make test-rust` sets `--cfg retryrs_repository`).
#[cfg(all(doctest, retryrs_repository, feature = "tower", feature = "reqwest"))]
#[doc = include_str!("../../docs/propagation.md")]
struct RepositoryPropagationDoctests;

/// The repository README's Rust examples, too: a file outside the package, so only where
/// the repository is (`make test-rust` sets `--cfg retryrs_repository`).
#[cfg(all(
    doctest,
    retryrs_repository,
    feature = "documents",
    feature = "blocking",
    feature = "tokio",
    feature = "tower"
))]
#[doc = include_str!("../../README.md")]
struct RepositoryReadmeDoctests;
