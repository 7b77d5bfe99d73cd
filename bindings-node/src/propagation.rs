//! Propagation across services (docs/propagation.md), the native half: thin wrappers
//! over `retryrs::propagation` for `retryrs/propagation` (middleware, AsyncLocalStorage)
//! and the HTTP helpers. Times are milliseconds; every rule is the core's. Headers come
//! as `[name, value]` pairs.

use std::sync::Arc;
use std::time::Duration;

use napi_derive::napi;
use retryrs::propagation as core;

use crate::guard::guarded;
use crate::policy::NativePolicy;

pub(crate) fn invalid(message: String) -> napi::Error {
    napi::Error::new(napi::Status::InvalidArg, message)
}

/// Milliseconds (>= 0; Infinity saturates) as a duration, or an error naming `what`.
pub(crate) fn duration(what: &str, ms: f64) -> napi::Result<Duration> {
    if ms.is_nan() || ms < 0.0 {
        return Err(invalid(format!("{what} must be a number of milliseconds >= 0, got {ms}")));
    }
    Ok(retryrs::units::duration_from_ms_or_zero(ms))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn pairs(headers: &[Vec<String>]) -> napi::Result<Vec<(&str, &str)>> {
    headers
        .iter()
        .map(|p| match p.as_slice() {
            [name, value] => Ok((name.as_str(), value.as_str())),
            _ => Err(invalid(format!("a header must be a [name, value] pair, got {} items", p.len()))),
        })
        .collect()
}

/// The server's limit: `None` the default (15 s), Infinity no clamp, else milliseconds.
fn limit(limit_ms: Option<f64>) -> napi::Result<Option<Duration>> {
    match limit_ms {
        None => Ok(core::ServerOptions::default().limit),
        Some(l) if l == f64::INFINITY => Ok(None),
        Some(l) => duration("limitMs", l).map(Some),
    }
}

/// What an inbound request's headers say.
#[napi(object)]
pub struct InboundRecord {
    /// The budget given, clamped to the server's limit (ms), or null.
    pub budget_ms: Option<f64>,
    /// The request is a retry: the downward rule applies.
    pub is_retry: bool,
    /// A budget over the limit was clamped.
    pub clamped: bool,
    /// Malformed values ignored.
    pub malformed: u32,
    /// The upward rule's answer ("run", "refuse", "observed", "capped"); "run" when read
    /// without a gate.
    pub upward: String,
}

fn record(i: &core::Inbound, upward: core::Upward) -> InboundRecord {
    InboundRecord {
        budget_ms: i.budget.map(ms),
        is_retry: i.is_retry,
        clamped: i.clamped,
        malformed: i.malformed,
        upward: upward.as_str().to_string(),
    }
}

/// The headers read without a gate (the conformance vectors).
#[napi]
pub fn propagation_read_inbound(
    headers: Vec<Vec<String>>,
    limit_ms: Option<f64>,
    trust_mesh: Option<bool>,
) -> napi::Result<InboundRecord> {
    guarded(|| {
        let options = core::ServerOptions::new().limit(limit(limit_ms)?).trust_mesh(trust_mesh.unwrap_or(false));
        Ok(record(&core::Inbound::from_headers(pairs(&headers)?, &options), core::Upward::Run))
    })
}

/// A server helper's reading of each request, with the upward rule and its cap (20% per
/// 10 s). Making one marks propagation as in use.
#[napi]
pub struct NativeGate {
    inner: core::Gate,
}

#[napi]
impl NativeGate {
    /// `limitMs`: undefined the default 15000, Infinity no clamp; `trustMesh`: read Envoy's
    /// headers (internal listeners only); `observeOnly`: never refuse.
    #[napi(constructor)]
    pub fn new(limit_ms: Option<f64>, trust_mesh: Option<bool>, observe_only: Option<bool>) -> napi::Result<Self> {
        guarded(|| {
            let options = core::ServerOptions::new()
                .limit(limit(limit_ms)?)
                .trust_mesh(trust_mesh.unwrap_or(false))
                .observe_only(observe_only.unwrap_or(false));
            Ok(NativeGate { inner: core::Gate::new(options) })
        })
    }

    /// Reads one request's headers and applies the upward rule.
    #[napi]
    pub fn receive(&self, headers: Vec<Vec<String>>) -> napi::Result<InboundRecord> {
        guarded(|| {
            let r = self.inner.receive(pairs(&headers)?);
            Ok(record(&r.inbound, r.upward))
        })
    }
}

/// The margin an inner call keeps (ms) for `leftMs` left: 2%, between 5 and 250.
#[napi]
pub fn propagation_margin_ms(left_ms: f64) -> napi::Result<f64> {
    guarded(|| Ok(ms(core::margin(duration("leftMs", left_ms)?))))
}

/// A response's pushback: null (none), -1 (don't retry), or the exact wait in ms.
#[napi]
pub fn propagation_read_pushback(headers: Vec<Vec<String>>) -> napi::Result<Option<f64>> {
    guarded(|| {
        Ok(match core::read_pushback(pairs(&headers)?) {
            None => None,
            Some(core::ServerPushback::DontRetry) => Some(-1.0),
            Some(core::ServerPushback::Wait(w)) => Some(ms(w)),
        })
    })
}

/// The hosts that may receive propagation headers (undefined: every host).
#[napi]
pub struct NativeAllowlist {
    inner: core::Allowlist,
}

#[napi]
impl NativeAllowlist {
    #[napi(constructor)]
    pub fn new(hosts: Option<Vec<String>>) -> napi::Result<Self> {
        guarded(|| {
            let inner = match hosts {
                None => core::Allowlist::all(),
                Some(h) => core::Allowlist::only(h).map_err(invalid)?,
            };
            Ok(NativeAllowlist { inner })
        })
    }

    /// Whether `host` (a URL's host, with or without a port) may receive them.
    #[napi]
    pub fn allows(&self, host: String) -> napi::Result<bool> {
        guarded(|| Ok(self.inner.allows(&host)))
    }
}

/// The same policy (its statistics shared) under an ambient context with `leftMs` left
/// (null: no deadline) and the inbound retry state, or null when the policy already obeys
/// it: what a call started inside a request's context runs with.
#[napi]
pub fn policy_under(policy: &NativePolicy, left_ms: Option<f64>, is_retry: bool) -> napi::Result<Option<NativePolicy>> {
    guarded(|| {
        let left = left_ms.map(|l| duration("leftMs", l)).transpose()?;
        match core::constrain(&policy.inner, left, is_retry) {
            None => Ok(None),
            Some(under) => NativePolicy::sharing_stats(Arc::new(under), policy.stats.clone()).map(Some),
        }
    })
}

/// Whether any gate (or ambient context) was made in this process.
#[napi]
pub fn propagation_in_use() -> napi::Result<bool> {
    guarded(|| Ok(core::in_use()))
}

/// Marks propagation as in use (a JS server helper that keeps its own context store).
#[napi]
pub fn propagation_mark_in_use() -> napi::Result<()> {
    guarded(|| {
        core::mark_in_use();
        Ok(())
    })
}
