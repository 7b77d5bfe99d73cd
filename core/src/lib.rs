//! # retryrs
//!
//! One retry engine for every language. The heart is a sans-IO decision engine
//! ([`engine::Call`]): given a [`Policy`], the verdict on each attempt and the time, it
//! answers "retry after D" or "stop", and emits [`Event`]s. Around it: backoff and jitter
//! ([`backoff`]), Retry-After parsing ([`retry_after`]), HTTP classification ([`http`]), the shared [`RetryBudget`], a
//! [`CancelToken`], a blocking [`Retrier`] and virtual time for tests ([`clock::testing`]).
//!
//! The contract every host obeys is `docs/contract.md` in the repository.
//!
//! ```
//! use retryrs::{Policy, Retrier, Verdict, Jitter};
//! use std::time::Duration;
//!
//! let retrier = Retrier::new(Policy::builder().jitter(Jitter::None).initial_delay(Duration::ZERO).build().unwrap());
//! let mut calls = 0;
//! let value = retrier.run(
//!     |_attempt: &retryrs::Attempt| { calls += 1; if calls < 3 { Err("503") } else { Ok("rate: 1.0842") } },
//!     |_err| Verdict::TRANSIENT,
//! );
//! assert_eq!(value.unwrap(), "rate: 1.0842");
//! ```
#![deny(missing_docs)]

pub mod attempt;
pub mod backoff;
pub mod budget;
pub mod cancel;
pub mod clock;
pub mod document;
pub mod engine;
pub mod event;
pub mod executor;
pub mod http;
mod http_date;
pub mod knob;
pub mod policy;
pub mod redact;
pub mod retry_after;
pub mod units;

pub use attempt::Attempt;
pub use budget::{BudgetError, QuotaBudget, RatioBudget, RetryBudget, RetryCause};
pub use cancel::CancelToken;
pub use clock::{testing, Clock, SystemClock, VirtualClock};
pub use document::{DocumentError, LoadOptions, Policies};
pub use engine::{cancelled_before_start, duration_from_ms, Call, Decision, Resume, StateError, Stop, Verdict};
pub use event::{CancelledAfter, Event, EventKind, ExhaustReason, GaveUp};
pub use executor::{Failed, Retrier, RetryError, Run, ValueVerdict, HISTORY};
pub use http::{
    classify_request, is_error_status, is_idempotent, is_retryable_status, HttpOutcome, HttpRules, HttpVerdict,
    IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_METHODS, RETRYABLE_STATUSES,
};
pub use knob::{Knob, Setting, Unit, KNOBS};
pub use policy::{Given, Jitter, Policy, PolicyBuilder, PolicyError, Pushback};
pub use redact::{check_redact_keys, redact_url, redact_url_with, REDACTED_QUERY_KEYS};
pub use retry_after::{parse_retry_after, parse_retry_after_ms};

/// The crate version, as in Cargo.toml.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The README's Rust example compiles and runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
