"""What the HTTP helpers share: the failures a retried request raises inside the
Retrier, the one call into the core's HTTP rules, and how an exhausted call ends.

Every verdict comes from the core (``_native.classify_http``); this module only says
which client outcome is a status, a connect failure or another network failure.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Optional, Tuple

from . import _native
from ._errors import RetryExhausted

IDEMPOTENT_METHODS: Tuple[str, ...] = _native.IDEMPOTENT_METHODS


class HTTPRetryError(Exception):
    """Base of the failures the HTTP helpers hand their Retrier. ``method`` and ``url``
    (redacted: no credentials, no signing query values) name the request."""

    def __init__(self, message: str, method: str, url: str) -> None:
        super().__init__(message)
        self.method = method
        self.url = url


class RetryableStatus(HTTPRetryError):
    """A response with a retryable status, for a method that may be retried.

    ``status``; ``retry_after``: its raw ``Retry-After`` header (the engine's hint), or
    None. Its body was read and its connection released before the wait. When retries run
    out on it, the helper returns the response itself, as the client would have.
    """

    def __init__(self, status: int, method: str, url: str, retry_after: Optional[str], response: Any) -> None:
        super().__init__(f"HTTP {status} from {method} {url}", method, url)
        self.status = status
        self.retry_after = retry_after
        # Not public, and dropped once a later attempt starts: headers stay out of events.
        self._response = response


class RequestFailed(HTTPRetryError):
    """A network failure the core calls transient: ``connect`` is True when no connection
    was made (the request was never sent). ``__cause__`` is the client's own exception,
    kept out of the message because clients put the URL (and its query) in theirs."""

    def __init__(self, method: str, url: str, connect: bool, cause: BaseException) -> None:
        what = "could not connect" if connect else "failed"
        super().__init__(f"{method} {url} {what}: {_describe(cause)}", method, url)
        self.connect = connect
        self.__cause__ = cause


def _describe(exc: BaseException) -> str:
    """The innermost OS error's text (e.g. "Connection refused"), else the class name."""
    seen = set()
    todo = [exc]
    while todo:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and (e.errno or e.strerror):
            # The errno's own text: asyncio's strerror carries the address.
            text = os.strerror(e.errno) if isinstance(e.errno, int) and e.errno > 0 else e.strerror
            return f"{text} ({type(exc).__name__})"
        todo.extend(x for x in (e.__cause__, e.__context__, getattr(e, "reason", None)) if isinstance(x, BaseException))
        todo.extend(a for a in e.args if isinstance(a, BaseException))
    return type(exc).__name__


class Rules:
    """A helper's ``methods`` and ``statuses``, checked once, and the one call site of the
    core's HTTP classification."""

    __slots__ = ("methods", "statuses")

    def __init__(self, methods: Optional[Iterable[str]], statuses: Optional[Iterable[int]]) -> None:
        self.methods = None if methods is None else _methods(methods)
        self.statuses = None if statuses is None else _statuses(statuses)

    def transient(self, method: str, outcome: Any) -> bool:
        """``outcome``: a status, ``"connect"`` or ``"network"``."""
        if isinstance(outcome, str):
            verdict = _native.classify_http(method, None, outcome, self.methods, self.statuses)
        else:
            verdict = _native.classify_http(method, outcome, None, self.methods, self.statuses)
        return verdict == "retry"


def _methods(methods: Iterable[str]) -> Tuple[str, ...]:
    if isinstance(methods, (str, bytes)):
        raise TypeError(f"methods must be a collection of method names such as ('GET', 'PUT'), got the string {methods!r}")
    out = []
    for m in methods:
        if not isinstance(m, str) or not m:
            raise TypeError(f"methods must hold non-empty str method names, got {m!r}")
        out.append(m.upper())
    return tuple(out)


def _statuses(statuses: Iterable[int]) -> Tuple[int, ...]:
    if isinstance(statuses, (str, bytes, int)):
        raise TypeError(f"statuses must be a collection of ints such as (503, 429), got {statuses!r}")
    out = []
    for s in statuses:
        if isinstance(s, bool) or not isinstance(s, int) or not 100 <= s <= 599:
            raise ValueError(f"statuses must hold HTTP statuses (ints from 100 to 599), got {s!r}")
        out.append(s)
    return tuple(out)


_CLASSES = (RetryableStatus, RequestFailed)


def http_retrier(retrier: Optional[_native.Retrier], bounds_attempts: bool = False) -> _native.Retrier:
    """The user's retrier (policy, listener, budget, deadline, cancel token) deciding by
    the HTTP rules: only the helpers' own failures are transient, and their hint is the
    ``retry_after`` they carry. ``bounds_attempts``: the helper interrupts a request at
    its attempt's bound itself (as its client's timeout, judged by the HTTP rules), so
    the asyncio driver does not."""
    if retrier is None:
        retrier = _native.Retrier()
    elif not isinstance(retrier, _native.Retrier):
        raise TypeError(f"retrier must be a retryrs.Retrier or None, got {type(retrier).__name__}")
    return retrier._with_classifier(_CLASSES, interrupts=not bounds_attempts)


# A retried response's body is read up to this much, to keep its connection for the next
# attempt; a longer one is not read on: its connection is closed instead.
DRAIN_LIMIT = 64 * 1024
# Clients refuse a zero timeout (or read it as "non-blocking"): an attempt with no time
# left gets this, fails at once, and the engine ends the call (reason deadline).
_LEAST = 0.001


def time_left(current: Optional[_native.AttemptInfo]) -> Optional[float]:
    """The attempt's bound now, as a client timeout (seconds), or None: unbounded."""
    left = None if current is None else current.remaining
    return None if left is None else max(left, _LEAST)


def smaller(timeout: Optional[float], left: Optional[float]) -> Optional[float]:
    """The caller's timeout or the time left, whichever is smaller (None: no limit)."""
    if left is None:
        return timeout
    if timeout is None:
        return left
    return min(timeout, left)


class RequestAttempts:
    """One request's attempts, as the helpers count them: from the second attempt on
    each is a resend (``mark_resend``), and the failure holding the last retryable
    response lets go of it once a later attempt starts, so only the final response
    stays reachable (for ``final_response``)."""

    __slots__ = ("made", "_held")

    def __init__(self) -> None:
        self.made = 0
        self._held: Optional[RetryableStatus] = None

    def begin(self) -> None:
        self.made += 1
        if self.made > 1:
            mark_resend(self.made)
        if self._held is not None:
            self._held._response = None
            self._held = None

    def hold(self, failure: RetryableStatus) -> RetryableStatus:
        """Keeps ``failure`` (and its response) until the next attempt; returns it to raise."""
        self._held = failure
        return failure


def final_response(exc: RetryExhausted) -> Any:
    """Retries ran out: on a status, the last response (as the client would have returned
    it); on a network failure, ``exc`` is raised again."""
    last = exc.last_error
    resp = last._response if isinstance(last, RetryableStatus) else None
    if resp is None:
        raise exc
    return resp


def redact_url(url: str) -> str:
    """The URL as events, errors and logs show it: ``user:password@`` becomes
    ``REDACTED:REDACTED@`` and the values of ``AWSAccessKeyId``, ``Signature``, ``sig``
    and ``X-Goog-Signature`` become ``REDACTED`` (OpenTelemetry's ``url.full`` rule)."""
    return _native.redact_url(url)


# OpenTelemetry's trace API when opentelemetry-api is installed, False when it is not,
# None until a first resend asks: a request that succeeds at once never imports it.
_otel_trace: Any = None


def mark_resend(attempt: int) -> None:
    """Sets OpenTelemetry's ``http.request.resend_count`` (``attempt - 1``) on the current
    span for a resend (attempt 2 on), when opentelemetry-api is installed; with no SDK
    configured the current span is a no-op one. See ``retryrs.otel.record_resend_count``."""
    global _otel_trace
    if attempt < 2:
        return
    if _otel_trace is None:
        try:
            from opentelemetry import trace
        except ImportError:
            _otel_trace = False
        else:
            _otel_trace = trace
    if _otel_trace:
        _otel_trace.get_current_span().set_attribute("http.request.resend_count", attempt - 1)
