"""retryrs: retries with backoff, jitter, Retry-After, deadlines, budgets and
cancellation, decided by one Rust engine shared with the Rust, Node and C hosts.

    from retryrs import Retrier

    r = Retrier(retry_on=ConnectionError, max_attempts=5, initial_delay=0.2, deadline=15)
    value = r.call(fetch, url)          # sync
    value = await r.call_async(afetch)  # asyncio

    @r
    def fetch(url): ...
"""

from __future__ import annotations

import importlib
from types import ModuleType

from . import _native, testing
from ._errors import AttemptTimeout, RetryCancelled, RetryError, RetryExhausted, StopRetrying
from ._logging import log_events
from ._policies import PolicyDocument, PolicyDocumentError, load_policies
from ._native import (
    DONT_RETRY,
    RETRYABLE_STATUSES,
    AttemptInfo,
    CancelToken,
    Event,
    Policy,
    Retrier,
    RetryBudget,
    CircuitBreaker,
    RetryingFunction,
    __version__,
    classify_http,
    current_attempt,
    is_retryable_status,
    parse_retry_after,
)

__all__ = [
    "Retrier",
    "RetryingFunction",
    "Policy",
    "load_policies",
    "PolicyDocument",
    "PolicyDocumentError",
    "CancelToken",
    "RetryBudget",
    "CircuitBreaker",
    "Event",
    "RetryError",
    "RetryExhausted",
    "RetryCancelled",
    "AttemptTimeout",
    "StopRetrying",
    "current_attempt",
    "AttemptInfo",
    "parse_retry_after",
    "is_retryable_status",
    "classify_http",
    "RETRYABLE_STATUSES",
    "DONT_RETRY",
    "log_events",
    "testing",
    "__version__",
]


# The integrations load on first use (`retryrs.prometheus.listener()` after a plain
# `import retryrs`), so importing retryrs never needs prometheus_client or opentelemetry;
# so does retryrs.propagation (the server helpers), which a client-only program never uses.
_OPTIONAL = ("prometheus", "otel", "propagation")


def __getattr__(name: str) -> ModuleType:
    if name in _OPTIONAL:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# What a call needs is looked up now, never during a call: a daemon thread in its first
# call while the interpreter exits must not be inside an import (see src/preload.rs).
_native._preload()
