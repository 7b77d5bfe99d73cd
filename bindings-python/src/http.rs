//! URL redaction for `retryrs.http` (the requests adapter and httpx transports): the
//! core's, so events and errors show URLs the same way in every host. (Classification is
//! `host::classify_http`, also the core's.)

use pyo3::prelude::*;

/// The URL with credentials and signing query values replaced by `REDACTED`
/// (OpenTelemetry's `url.full` rule).
#[pyfunction]
pub fn redact_url(url: &str) -> String {
    retryrs::redact_url(url)
}
