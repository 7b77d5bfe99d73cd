"""``RetryingTransport`` and ``AsyncRetryingTransport``: httpx transports that send
each request through a retryrs Retrier around an inner transport. One attempt is one
request; the core decides which outcomes are transient (``retryrs._http_common.Rules``)."""

from __future__ import annotations

import ssl
from contextvars import ContextVar
from typing import Any, AsyncIterator, Awaitable, Dict, Iterable, Iterator, Optional, Tuple, Union

import httpx  # missing: retryrs.http names the extra to install

from . import _native
from ._aio import _FIRST, _suspended
from ._defaults import certificate_failure
from ._errors import AttemptTimeout, RetryExhausted
from ._http_body import Prefix, adrain, areplayed, drain, replayed, silence
from .propagation import Outbound
from ._http_common import (
    NOTHING_LEFT,
    nothing_left,
    document_parameters,
    ErrorStatus,
    Helper,
    RequestAttempts,
    RequestFailed,
    RequestOptions,
    Rules,
    call_async,
    held_response,
    in_tls_handshake,
    request_failed,
    response_failure,
    smaller,
    time_left,
)

# httpx's failures in the core's words: no connection was made, or it broke afterwards.
_CONNECT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_NETWORK = (httpx.ReadError, httpx.WriteError, httpx.CloseError, httpx.ReadTimeout, httpx.WriteTimeout, httpx.RemoteProtocolError)


def _tls_error(exc: ssl.SSLError, request: httpx.Request) -> httpx.TransportError:
    """A TLS error the client let through (httpcore's anyio backend does, for a record
    that fails mid-response) as the httpx error it stands for: ``ConnectError`` in the
    handshake (nothing sent), ``ReadError`` after (sent)."""
    kind = httpx.ConnectError if in_tls_handshake(exc) else httpx.ReadError
    return kind(str(exc) or type(exc).__name__, request=request)


def _replayable(request: httpx.Request) -> bool:
    # bytes/str bodies (and none) are a ByteStream. A generator would raise StreamConsumed
    # on a second pass, and a file object would be re-read from where the first pass
    # left it: an empty body under the old Content-Length. Those are sent once.
    return isinstance(request.stream, httpx.ByteStream)


# The async transport's own interruption of a request comes this long after the bound,
# so that the client's timeouts (set to the bound, and classified: a connect timeout is
# retried for every method) fire first; it catches what they do not (a trickle).
_GRACE = 0.05
_TIMEOUT_KEYS = ("connect", "read", "write", "pool")


def _bound_request(request: httpx.Request, caller: Dict[str, Optional[float]], left: Optional[float]) -> None:
    """Sets the request's timeout extension (what httpx's transports obey) for one
    attempt: each of connect, read, write, pool is the caller's or the time left,
    whichever is smaller."""
    request.extensions["timeout"] = {k: smaller(caller.get(k), left) for k in _TIMEOUT_KEYS}


def _caller_timeouts(request: httpx.Request) -> Dict[str, Optional[float]]:
    return dict(request.extensions.get("timeout") or {})


class _Replayed(httpx.SyncByteStream):
    """The stream of a drained response: the part drained, then the rest of the original
    stream (or the error that stopped the drain): every read API sees the whole body."""

    def __init__(self, prefix: Prefix, rest: Iterator[bytes], original: httpx.SyncByteStream) -> None:
        self._chunks = replayed(prefix, rest)
        self._original = original

    def __iter__(self) -> Iterator[bytes]:
        return self._chunks

    def close(self) -> None:
        self._original.close()


class _AReplayed(httpx.AsyncByteStream):
    """``_Replayed`` for an async response."""

    def __init__(self, prefix: Prefix, rest: AsyncIterator[bytes], original: httpx.AsyncByteStream) -> None:
        self._chunks = areplayed(prefix, rest)
        self._original = original

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks

    async def aclose(self) -> None:
        await self._original.aclose()


def _drain(resp: httpx.Response) -> None:
    """Drains a response that may be retried (``retryrs._http_body``), its raw bytes
    (decoded later, by whoever reads it): read to its end (at most DRAIN_LIMIT bytes),
    its connection goes back to the pool; longer, broken or stalled (each read bounded by
    the attempt's read timeout), it stays open until the engine decides."""
    original = resp.stream
    assert isinstance(original, httpx.SyncByteStream)
    rest = iter(original)
    prefix = drain(lambda: next(rest, b""))
    if prefix.whole:
        original.close()
    resp.stream = _Replayed(prefix, rest, original)


async def _adrain(resp: httpx.Response) -> None:
    """``_drain`` for an async response."""
    original = resp.stream
    assert isinstance(original, httpx.AsyncByteStream)
    rest = original.__aiter__()

    async def next_chunk() -> bytes:
        try:
            return await rest.__anext__()
        except StopAsyncIteration:
            return b""

    prefix = await adrain(next_chunk)
    if prefix.whole:
        await original.aclose()
    resp.stream = _AReplayed(prefix, rest, original)


def _let_go(resp: httpx.Response) -> None:
    resp.close()


def _alet_go(resp: httpx.Response) -> Awaitable[None]:
    return resp.aclose()


def _hand_over(resp: httpx.Response, request: httpx.Request, caller: Dict[str, Optional[float]], bound: Optional[float]) -> httpx.Response:
    """The response is the caller's: its body may take as long as it flows; only silence
    longer than the caller's read timeout or the policy's ``silence`` fails a read
    (httpcore reads the request's timeout extension at each read)."""
    timeouts = dict(request.extensions.get("timeout") or {})
    timeouts["read"] = smaller(caller.get("read"), bound)
    request.extensions["timeout"] = timeouts
    return resp


class _Progress:
    """How far one async attempt got, from httpcore's ``trace`` extension: whether the
    transport reported anything at all, and whether it began sending the request's
    headers. A request cut at its bound before that was never sent, whatever the loop's
    timing made of the client's own connect timeout."""

    __slots__ = ("seen", "sending")

    def __init__(self) -> None:
        self.seen = False
        self.sending = False

    def saw(self, name: str) -> None:
        self.seen = True
        if name.endswith("send_request_headers.started"):
            self.sending = True

    def never_sent(self) -> bool:
        # No event at all: a transport without traces (or a wait in the pool); unknown,
        # so it counts as sent.
        return self.seen and not self.sending


# The attempt running in this task (hedged attempts run in tasks of their own, so each
# sees its own; the request, and its extensions, are shared by all of them).
_PROGRESS: ContextVar[Optional[_Progress]] = ContextVar("retryrs_httpx_progress", default=None)


class _Traced:
    """The request's ``trace`` callback while the transport retries it: tells the current
    attempt's ``_Progress``, then the caller's own callback, if any."""

    __slots__ = ("inner",)

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, name: str, info: Dict[str, Any]) -> None:
        progress = _PROGRESS.get()
        if progress is not None:
            progress.saw(name)
        if self.inner is not None:
            await self.inner(name, info)


async def _within(send: Awaitable[httpx.Response], current: Optional[_native.AttemptInfo], request: httpx.Request, progress: _Progress) -> httpx.Response:
    """One request interrupted at its attempt's bound (the deadline's time left or the
    attempt timeout), a little after the client's own timeouts. Past it the request is
    abandoned: as an ``httpx.ConnectTimeout`` when the transport's traces show it was
    still connecting (never sent: retried for every method), else as a read timeout (it
    may have reached the server, so the HTTP rules send it again only for an idempotent
    method; a POST surfaces the ``httpx.ReadTimeout``, its cause the ``AttemptTimeout``)."""
    if current is None or current._bound is None:
        return await send
    try:
        return await _suspended(send.__await__(), _FIRST, current, _GRACE)  # type: ignore[no-any-return]
    except AttemptTimeout as e:
        kind = httpx.ConnectTimeout if progress.never_sent() else httpx.ReadTimeout
        raise kind(f"{e} (the attempt's bound)", request=request) from e


def _discard(outcome: Any) -> Optional[Awaitable[None]]:
    """A hedged request's loser: its response (if it got one) is closed, never returned."""
    resp = held_response(outcome, httpx.Response)
    return None if resp is None else resp.aclose()


class _Base(Helper):
    def _failure(self, rules: Rules, method: str, url: str, key: Optional[str], exc: BaseException) -> Optional[RequestFailed]:
        outcome = "connect" if isinstance(exc, _CONNECT) else "network" if isinstance(exc, _NETWORK) else None
        return request_failed(rules, method, url, key, outcome, exc, isinstance(exc, httpx.TimeoutException))

    def _prepare(self, request: httpx.Request) -> Tuple[Rules, _native.Retrier, str, str, Optional[str]]:
        """The request's rules and retrier (its ``extensions["retryrs"]`` options over the
        ``request_options`` block over the helper's; one attempt for a body that cannot be
        sent again), method, redacted URL and key."""
        options = RequestOptions.of(request.extensions.get("retryrs"), 'extensions["retryrs"]')
        key = request.headers.get("Idempotency-Key")
        rules, retrier = self._for_request(options, not _replayable(request), request.method, key)
        return rules, retrier, request.method, rules.redact(str(request.url)), key


class RetryingTransport(_Base, httpx.BaseTransport):
    """``httpx.Client(transport=RetryingTransport(retrier))``: retries what the core's HTTP
    rules call transient, with the Retrier's backoff, Retry-After, deadline, budget,
    events and cancel token. ``transport`` is the one that sends (default
    ``httpx.HTTPTransport()``). Out of retries on a status: the last response; on a
    network failure: an exception that is both httpx's own (``httpx.ConnectError``,
    ``httpx.ReadError``...) and ``retryrs.RetryExhausted``. A streamed or file body is
    sent once.

    Which kind of client (docs/contract.md §6b): it hands the response over at its
    headers. The deadline and attempt bound cover everything until then (a retried
    response drained at most 64 KiB, else closed); the body after is the caller's, never
    cut while it flows: a read fails only after ``attempt_timeout`` (else the deadline)
    of silence, httpx's own ``ReadTimeout``. The last response is handed over whole.

    ``idempotency_key=False``: an ``Idempotency-Key`` header no longer makes a POST/PATCH
    repeatable. ``redact_query``: more query keys shown as ``REDACTED`` in events, logs
    and errors. Per request: ``extensions={"retryrs": {"max_attempts": 2, "methods":
    [...], "statuses": [...], "idempotency_key": False}}``, or
    ``retryrs.http.request_options(...)`` around the call. The Retrier's
    ``retry_on_result`` and ``retry_after`` are refused: the HTTP rules judge responses."""

    def __init__(
        self,
        retrier: Optional[_native.Retrier] = None,
        *,
        transport: Optional[httpx.BaseTransport] = None,
        methods: Optional[Iterable[str]] = None,
        statuses: Optional[Iterable[int]] = None,
        idempotency_key: bool = True,
        redact_query: Optional[Iterable[str]] = None,
        propagation: Union[None, bool, Outbound] = None,
    ) -> None:
        if transport is not None and not isinstance(transport, httpx.BaseTransport):
            raise TypeError(f"transport must be an httpx.BaseTransport, got {type(transport).__name__}")
        super().__init__(retrier, methods, statuses, idempotency_key, redact_query, blocking=True, propagation=propagation)
        self._transport = transport if transport is not None else httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        inner = self._transport
        caller = _caller_timeouts(request)
        rules, retrier, method, url, key = self._prepare(request)
        raw_url = str(request.url)
        attempts = RequestAttempts()

        def attempt() -> httpx.Response:
            attempts.begin()
            current = _native.current_attempt()
            _bound_request(request, caller, time_left(current))
            attempts.propagate(self._outbound, request.headers, raw_url, current)
            try:
                if nothing_left(current):
                    raise httpx.ConnectTimeout(NOTHING_LEFT, request=request)
                with attempts.sending():
                    try:
                        resp = inner.handle_request(request)
                    except ssl.SSLError as e:
                        if certificate_failure(e):
                            raise  # permanent: the error as it is
                        raise _tls_error(e, request) from e
            except httpx.TransportError as e:
                failed = self._failure(rules, method, url, key, e)
                if failed is None:
                    raise
                raise failed from e
            failure = response_failure(rules, attempts, method, url, key, resp, resp.status_code, resp.headers)
            if failure is None:
                return resp
            if failure.retried:
                _drain(resp)
                attempts.hold(failure, _let_go)  # type: ignore[arg-type]
            raise failure

        bound = silence(retrier)
        try:
            return _hand_over(retrier.call(attempt), request, caller, bound)
        except ErrorStatus as e:
            return _hand_over(e.take(), request, caller, bound)
        except RetryExhausted as e:
            return _hand_over(attempts.final(e), request, caller, bound)
        except BaseException:
            attempts.abandon()
            raise

    def close(self) -> None:
        self._transport.close()


class AsyncRetryingTransport(_Base, httpx.AsyncBaseTransport):
    """``httpx.AsyncClient(transport=AsyncRetryingTransport(retrier))``: as
    ``RetryingTransport``, waiting on the event loop; cancelling the task ends a wait at
    once. ``transport`` defaults to ``httpx.AsyncHTTPTransport()``. Each request's
    timeouts are the caller's or the attempt's time left (the deadline, or the smaller
    ``attempt_timeout``), and the request is interrupted past it (until its headers
    arrive), a streamed one too: one past it is a read timeout, sent again only for an
    idempotent method."""

    def __init__(
        self,
        retrier: Optional[_native.Retrier] = None,
        *,
        transport: Optional[httpx.AsyncBaseTransport] = None,
        methods: Optional[Iterable[str]] = None,
        statuses: Optional[Iterable[int]] = None,
        idempotency_key: bool = True,
        redact_query: Optional[Iterable[str]] = None,
        propagation: Union[None, bool, Outbound] = None,
    ) -> None:
        if transport is not None and not isinstance(transport, httpx.AsyncBaseTransport):
            raise TypeError(f"transport must be an httpx.AsyncBaseTransport, got {type(transport).__name__}")
        super().__init__(retrier, methods, statuses, idempotency_key, redact_query, bounds_attempts=True, propagation=propagation)
        self._transport = transport if transport is not None else httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        caller = _caller_timeouts(request)
        rules, retrier, method, url, key = self._prepare(request)
        raw_url = str(request.url)
        attempts = RequestAttempts()

        async def attempt() -> httpx.Response:
            released = attempts.begin()
            if released is not None:
                await released
            try:
                with attempts.sending():
                    try:
                        current = _native.current_attempt()
                        attempts.propagate(self._outbound, request.headers, raw_url, current)
                        if nothing_left(current):
                            raise httpx.ConnectTimeout(NOTHING_LEFT, request=request)
                        resp = await self._send(request, caller, current)
                    except ssl.SSLError as e:
                        if certificate_failure(e):
                            raise  # permanent: the error as it is
                        raise _tls_error(e, request) from e
            except httpx.TransportError as e:
                failed = self._failure(rules, method, url, key, e)
                if failed is None:
                    raise
                raise failed from e
            failure = response_failure(rules, attempts, method, url, key, resp, resp.status_code, resp.headers)
            if failure is None:
                return resp
            if failure.retried:
                await _adrain(resp)
                attempts.hold(failure, _alet_go)  # type: ignore[arg-type]
            raise failure

        trace = request.extensions.get("trace")
        request.extensions["trace"] = _Traced(trace)
        bound = silence(retrier)
        try:
            return _hand_over(await call_async(retrier, attempt, _discard), request, caller, bound)
        except ErrorStatus as e:
            return _hand_over(e.take(), request, caller, bound)
        except RetryExhausted as e:
            return _hand_over(attempts.final(e), request, caller, bound)
        except BaseException:
            released = attempts.abandon()
            if released is not None:
                await released
            raise
        finally:
            if trace is None:
                request.extensions.pop("trace", None)
            else:
                request.extensions["trace"] = trace

    async def _send(self, request: httpx.Request, caller: Dict[str, Optional[float]], current: Optional[_native.AttemptInfo]) -> httpx.Response:
        """One request through the inner transport within the attempt's bound: its
        timeouts no longer than the time left, and interrupted past it (as an
        ``httpx.ReadTimeout``)."""
        _bound_request(request, caller, time_left(current))
        progress = _Progress()
        token = _PROGRESS.set(progress)
        try:
            return await _within(self._transport.handle_async_request(request), current, request, progress)
        finally:
            _PROGRESS.reset(token)

    async def aclose(self) -> None:
        await self._transport.aclose()


__all__ = ["RetryingTransport", "AsyncRetryingTransport"]

document_parameters(
    RetryingTransport,
    """
    transport (httpx.BaseTransport or None, default None): the transport that sends
        (None: ``httpx.HTTPTransport()``).""",
)
document_parameters(
    AsyncRetryingTransport,
    """
    transport (httpx.AsyncBaseTransport or None, default None): the transport that sends
        (None: ``httpx.AsyncHTTPTransport()``).""",
)
