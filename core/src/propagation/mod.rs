//! Propagation across services (docs/propagation.md): the deadline and the retry state
//! travel with the request, so a chain of services never multiplies retries.
//!
//! - [`codec`]: the wire format (`Retryrs-Context`, `grpc-timeout`, the interop integers).
//! - [`Inbound`]: what a request's headers say (budget clamped to the server's limit, is
//!   it a retry, how many values were malformed).
//! - [`margin`]: what an inner call keeps for the way back (2%, 5 to 250 ms).
//! - [`Ambient`] and [`constrain`]: the context a handler runs in, and the one rule of a
//!   call made inside it (its deadline, and the downward rule). [`current`], [`enter`],
//!   [`Scoped`]: this thread's (and a future's) context, which the Rust executors obey.
//! - [`outbound_headers`], [`Mesh`], [`RequestKind`], [`Allowlist`]: what a client
//!   helper sends, and to whom.
//! - [`read_pushback`]: a response's "don't retry" or exact wait.
//! - [`Gate`], [`RefusalCap`], [`Upward`]: a server helper's reading of each request and
//!   the upward rule; [`PropagationLayer`] (feature `tower`): the Rust server helper.
//! - [`Propagate`]: what the Rust client helpers (the reqwest middleware, the tower
//!   `RetryLayer`) send, and to whom.

mod ambient;
pub mod codec;
mod inbound;
mod margin;
mod outbound;
mod pushback;
#[cfg(feature = "tower")]
mod server_layer;
mod upward;

pub use ambient::{constrain, current, enter, in_use, mark_in_use, now, replace, Ambient, Entered, Scoped};
pub use codec::{ContextValue, Malformed, CONTEXT_HEADER};
pub use inbound::{Inbound, ServerOptions};
pub use margin::{margin, MAX_MARGIN, MIN_MARGIN};
pub use outbound::{outbound_headers, Allowlist, Mesh, Propagate, RequestKind};
pub use pushback::{
    parse_pushback, read_pushback, ServerPushback, ENVOY_OVERLOADED_HEADER, GRPC_PUSHBACK_HEADER, PUSHBACK_HEADER,
};
#[cfg(feature = "tower")]
pub use server_layer::{PropagationFuture, PropagationLayer, PropagationService};
pub use upward::{Gate, Received, RefusalCap, Upward, REFUSAL_PUSHBACK, REFUSAL_STATUS};
