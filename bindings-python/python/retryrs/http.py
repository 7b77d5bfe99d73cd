"""retryrs for the HTTP clients you already use: one line to gain retries.

    import requests
    from retryrs import Retrier
    from retryrs.http import RetryingAdapter

    session = requests.Session()
    session.mount("https://", RetryingAdapter(Retrier(max_attempts=4, name="rates")))

    import httpx
    from retryrs.http import RetryingTransport, AsyncRetryingTransport
    client = httpx.Client(transport=RetryingTransport(Retrier(name="rates")))
    aclient = httpx.AsyncClient(transport=AsyncRetryingTransport(Retrier(name="rates")))

    import aiohttp
    from retryrs.http import RetryMiddleware
    session = aiohttp.ClientSession(middlewares=(RetryMiddleware(Retrier(name="rates")),))

Which outcomes are retried is decided by the core, the same in every host: a failed
connection for every method; another network failure or a status in
``RETRYABLE_STATUSES`` (408, 425, 429, 500, 502, 503, 504) for the idempotent methods
(``IDEMPOTENT_METHODS``), or the ``methods``/``statuses`` you list; a POST or PATCH
carrying an ``Idempotency-Key`` header like an idempotent method (``idempotency_key=False``
turns that off). Per request: ``request_options(...)`` around the call, or the client's
own per-request place (httpx ``extensions={"retryrs": {...}}``, aiohttp
``middlewares=(mw.options(...),)``, requests ``PreparedRequest.retryrs``). The Retrier
brings its policy, Retry-After handling, deadline, budget, events and cancel token; its
``retry_on`` is replaced by the HTTP rules, and a ``retry_on_result`` or ``retry_after``
hook is refused when the helper is made.

Out of retries on a status, the last response is returned; on a network failure, the
exception raised is both the client's own type and ``retryrs.RetryExhausted``. A final
error response (400 and up) ends the call as ``rejected`` in events and metrics,
``error.type`` its status code. URLs in events, logs and errors are redacted
(``redact_url``, ``REDACTED_QUERY_KEYS``, and each helper's ``redact_query=[...]``).

``RetryingAdapter`` needs ``retryrs[requests]``; the transports need ``retryrs[httpx]``;
``RetryMiddleware`` needs ``retryrs[aiohttp]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._http_common import (
    IDEMPOTENT_METHODS,
    REDACTED_QUERY_KEYS,
    ErrorStatus,
    HTTPRetryError,
    RequestFailed,
    RequestOptions,
    RetryableStatus,
    exhausted_type,
    redact_url,
    request_options,
)
from ._native import RETRYABLE_STATUSES

if TYPE_CHECKING:
    from ._http_aiohttp import RetryMiddleware
    from ._http_httpx import AsyncRetryingTransport, RetryingTransport
    from ._http_requests import RetryingAdapter

__all__ = [
    "RetryingAdapter",
    "RetryingTransport",
    "AsyncRetryingTransport",
    "RetryMiddleware",
    "HTTPRetryError",
    "RetryableStatus",
    "ErrorStatus",
    "RequestFailed",
    "RequestOptions",
    "IDEMPOTENT_METHODS",
    "RETRYABLE_STATUSES",
    "REDACTED_QUERY_KEYS",
    "exhausted_type",
    "redact_url",
    "request_options",
]

# The client libraries are optional: each class is imported on first use, and a
# missing one fails then, naming the extra to install.
_LAZY = {
    "RetryingAdapter": ("._http_requests", "requests"),
    "RetryingTransport": ("._http_httpx", "httpx"),
    "AsyncRetryingTransport": ("._http_httpx", "httpx"),
    "RetryMiddleware": ("._http_aiohttp", "aiohttp"),
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'retryrs.http' has no attribute {name!r}")
    import importlib

    module, extra = where
    try:
        loaded = importlib.import_module(module, __package__)
    except ImportError as e:
        raise ImportError(f"retryrs.http.{name} needs {extra}: pip install 'retryrs[{extra}]'", name=extra) from e
    return getattr(loaded, name)


def __dir__() -> list:  # type: ignore[type-arg]
    return sorted(set(globals()) | set(_LAZY))
