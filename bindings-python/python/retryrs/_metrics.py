"""What retryrs.prometheus and retryrs.otel record, in one place: the instruments'
names, units and attributes (docs/observability.md is the same table for readers, and
the Node package's lib/metrics.js the same for Node), and how an event maps to them."""

from __future__ import annotations

from typing import Optional

# OpenTelemetry instruments (semantic-convention style: dots, unit in the instrument,
# never in the name, no _total) and the Prometheus metric each becomes (snake case,
# `_total` on counters, the unit as a suffix), as an OpenTelemetry-to-Prometheus
# exporter would name them.
CALLS = "retryrs.calls"
RETRIES = "retryrs.retries"
RETRY_DELAY = "retryrs.retry.delay"
CALLS_UNIT = "{call}"
RETRIES_UNIT = "{retry}"
RETRY_DELAY_UNIT = "s"
CALLS_HELP = "Retried calls that ended, by retrier, outcome, exhaustion reason and error type"
RETRIES_HELP = "Retries scheduled (a wait before another attempt), by retrier and error type"
RETRY_DELAY_HELP = "The waits before a retry, in seconds, by retrier"

# The circuit breaker's (issue 27): made on the first breaker event a listener sees, so a
# retrier without a breaker registers nothing more.
BREAKER_STATE = "retryrs.breaker.state"
BREAKER_REJECTIONS = "retryrs.breaker.rejections"
BREAKER_STATE_UNIT = "1"
BREAKER_REJECTIONS_UNIT = "{call}"
BREAKER_STATE_HELP = "The circuit breaker's state as its retrier last saw it (0 closed, 1 open, 2 half-open), by retrier"
BREAKER_REJECTIONS_HELP = "Calls the circuit breaker refused (no attempt made), by retrier"
# The events that move the gauge, and the value each sets.
BREAKER_STATES = {"breaker_closed": 0, "breaker_opened": 1, "breaker_half_open": 2}
REFUSED_REASON = "circuit_open"

# OpenTelemetry attributes -> Prometheus labels.
ATTR_RETRIER = "retryrs.retrier.name"
ATTR_OUTCOME = "retryrs.outcome"
ATTR_REASON = "retryrs.exhausted.reason"
ATTR_ERROR_TYPE = "error.type"
ATTR_ATTEMPT = "retryrs.attempt"
LABEL_RETRIER = "retrier"
LABEL_OUTCOME = "outcome"
LABEL_REASON = "reason"
LABEL_ERROR_TYPE = "error_type"

# The span event added to the current span for each retry.
RETRY_SPAN_EVENT = "retryrs.retry"

# Retry waits run from milliseconds (jittered backoff) to a minute (a server's
# Retry-After); the default policy caps backoff at 5 s. Same in every host.
DELAY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)

# The events that end a call: each counts one call, with itself as the outcome.
OUTCOMES = frozenset({"success", "rejected", "exhausted", "cancelled"})
# The outcomes that end with an error of the caller's (the original one, or the last
# failure as RetryExhausted's cause); error.type is set on these only.
FAILED_OUTCOMES = frozenset({"rejected", "exhausted"})


def error_type(error: Optional[BaseException]) -> str:
    """OpenTelemetry's `error.type`: the exception's fully qualified class name (builtins
    unqualified, as Python prints them), `_OTHER` if there is none; an exception's own
    ``otel_error_type`` str when it has one (retryrs.http's: the status code)."""
    if error is None:
        return "_OTHER"
    # retryrs.http's failures say their own: the status ("503"), or the client's
    # exception type for a network failure (OpenTelemetry's HTTP conventions).
    own = getattr(error, "otel_error_type", None)
    if type(own) is str:
        return own
    cls = type(error)
    module = getattr(cls, "__module__", None)
    if module in (None, "builtins", "__main__"):
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"
