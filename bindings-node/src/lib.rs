//! Node binding of retryrs: the native half of the `retryrs` npm package.
//!
//! The JavaScript layer (`../index.js`) owns awaiting, timers, AbortSignals and the user's
//! callbacks; this addon owns every decision. It exposes the engine in small pieces:
//! a validated policy, the per-call state machine (created only after a first failure,
//! so a call that succeeds at once never crosses into native code), the shared budget,
//! Retry-After parsing, the retryable-status helper and the virtual-time switch.
//!
//! Every export, down to the one-line getters, runs its body through [`guard::guarded`]
//! (directly or via a helper that does, like `call::with_slot`): a Rust panic becomes a
//! JS exception instead of crossing the FFI boundary. `test/ffi-guard.test.js` enforces
//! this mechanically.

// Under `cfg(test)` napi-derive skips registering exports, so they look unused.
#![cfg_attr(test, allow(dead_code))]

mod breaker;
mod budget;
mod call;
mod document;
mod guard;
mod hedge;
mod http;
mod messages;
mod policy;
mod problem;
mod propagation;
mod propagation_node;
mod share;
mod time;
