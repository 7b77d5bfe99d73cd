//! The fleet simulator: deterministic discrete-event models of many clients sharing one
//! server, each client's retries decided by the real engine ([`retryrs::Call`]). Nothing
//! here computes a backoff; the engine does.

pub mod capacity;
pub mod chain;
pub mod chain_report;
pub mod contention;
pub mod hedging_report;
pub mod herd;
pub mod outage;
pub mod parallel;
pub mod peers;
#[cfg(feature = "plots")]
pub mod plot;
pub mod report;
pub mod rng;
pub mod sim;
pub mod tail;
