"""``RetryMiddleware``: an aiohttp client middleware (aiohttp >= 3.12) that sends each
request through a retryrs Retrier, calling aiohttp's handler once per attempt; and
``RetryMiddleware.request``, the same loop around ``session.request`` for older aiohttp.
The core decides which outcomes are transient (``retryrs._http_common.Rules``)."""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Any, Awaitable, Callable, Iterable, MutableMapping, Optional, Tuple, Union

import aiohttp  # missing: retryrs.http names the extra to install
from aiohttp import payload as _payload
from multidict import CIMultiDict

from . import _native
from ._aio import _FIRST, _suspended
from ._errors import AttemptTimeout, RetryExhausted
from ._http_body import DRAIN_LIMIT, silence
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
    request_failed,
    response_failure,
    smaller,
    time_left,
)

# aiohttp's failures in the core's words. Never sent: the connection (TCP, proxy, TLS
# handshake) was not made, or its setup timed out (a certificate that fails verification
# is one too, but never retried: request_failed). Sent: it broke after.
_CONNECT: Any = (aiohttp.ClientConnectorError,) + ((aiohttp.ConnectionTimeoutError,) if hasattr(aiohttp, "ConnectionTimeoutError") else ())
_NETWORK: Any = (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError, aiohttp.ClientOSError, aiohttp.ServerTimeoutError, aiohttp.ClientConnectionError, asyncio.TimeoutError)

# The helper's own interruption of a request comes this long after its bound, so that
# aiohttp's timeouts (if the caller set them tighter) fire first.
_GRACE = 0.05


def _outcome(exc: BaseException) -> Optional[str]:
    if isinstance(exc, _CONNECT):
        return "connect"
    if isinstance(exc, _NETWORK):
        return "network"
    return None


def _replayable(body: Any) -> bool:
    """bytes, str, JSON and urlencoded form bodies can be sent again; a stream, a file or
    a multipart writer is sent once."""
    return body is None or body == b"" or isinstance(body, (bytes, str, _payload.BytesPayload))


async def _drain(resp: aiohttp.ClientResponse) -> None:
    """Drains a response that may be retried (``retryrs._http_body``) without reading
    it: aiohttp reads a body ahead into the response's buffer by itself (pausing the
    socket past about twice its read buffer), so waiting, within the attempt's bound,
    until the body ended or passed DRAIN_LIMIT is the drain. Nothing is consumed: handed
    over after all, the response reads whole through every read API, and one that ended
    has its connection back in the pool already (aiohttp releases it at the body's end)."""
    content = resp.content
    wait = getattr(content, "_wait", None)  # aiohttp's own wait for the next data

    async def arrived() -> None:
        while not content.is_eof() and content.total_bytes <= DRAIN_LIMIT and content.exception() is None:
            if wait is not None:
                await wait("retryrs drain")
            else:  # pragma: no cover - aiohttp without StreamReader._wait
                await asyncio.sleep(0.005)

    try:
        await asyncio.wait_for(arrived(), time_left(_native.current_attempt()))
    except Exception:  # stalled (the bound) or broken: the engine decides what happens
        pass


def _let_go(resp: aiohttp.ClientResponse) -> None:
    """A drained response that was retried: its connection is closed unless its body
    ended (then aiohttp has put it back in the pool)."""
    if resp.content.is_eof():
        resp.release()
    else:
        resp.close()


def _hand_over(resp: aiohttp.ClientResponse, bound: Optional[float]) -> aiohttp.ClientResponse:
    """The response is the caller's: its body may take as long as it flows; only silence
    longer than the caller's ``sock_read`` or the policy's ``silence`` fails a read
    (aiohttp's read timeout, restarted by every chunk that arrives)."""
    conn = resp.connection
    protocol = None if conn is None else conn.protocol
    reschedule = getattr(protocol, "_reschedule_timeout", None)
    if bound is not None and protocol is not None and reschedule is not None and not resp.content.is_eof():
        protocol.read_timeout = smaller(protocol.read_timeout, bound)
        reschedule()
    return resp


# A request this middleware retried until it gave up on a connection error, which
# aiohttp's session would send once more by itself (it resends an idempotent request
# when its handler raises ClientOSError or ServerDisconnectedError): (the session
# call's traces list, the same for its resend; the error). The resend is refused with
# the same error, so every attempt is one request on the wire.
_GAVE_UP: "ContextVar[Optional[Tuple[Any, BaseException]]]" = ContextVar("retryrs_aiohttp_gave_up", default=None)
_SESSION_RESENDS = (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError)
_IDEMPOTENT = frozenset(getattr(aiohttp.client, "IDEMPOTENT_METHODS", ("GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE")))


class RetryMiddleware(Helper):
    """``aiohttp.ClientSession(middlewares=(RetryMiddleware(retrier),))`` (aiohttp >=
    3.12): retries what the core's HTTP rules call transient (connect failures, TLS
    handshake failures included, for every method, but never a certificate that fails
    verification; other network failures
    and 408/425/429/500/502/503/504 for idempotent methods, or ``methods``/``statuses``;
    a POST/PATCH with an ``Idempotency-Key`` header like an idempotent method unless
    ``idempotency_key=False``), with the Retrier's backoff, Retry-After, deadline, budget,
    events and cancel token; cancelling the task ends a wait at once.

    Which kind of client (docs/contract.md §6b): it hands the response over at its
    headers. The deadline and attempt bound cover everything until then (a retried
    response drained at most 64 KiB, else closed); the body after is the caller's, never
    cut while it flows: a read fails only after ``attempt_timeout`` (else the deadline)
    of silence, aiohttp's own read timeout. aiohttp's own single resend of an idempotent
    request is refused, so every attempt is one request on the wire.

    Out of retries on a status: the last response, whole (``read``, ``text``, ``json``,
    ``content``); on a
    network failure: an exception that is both aiohttp's own (``ClientConnectorError``,
    ``ServerDisconnectedError``..., all ``aiohttp.ClientError``) and
    ``retryrs.RetryExhausted``. A streamed, file or multipart body is sent once. Each
    attempt is interrupted at its bound (the deadline's time left, or the smaller
    ``attempt_timeout``) as a timeout, sent again only for an idempotent method; cut while
    aiohttp is still getting it a connection, it was never sent: a
    ``ConnectionTimeoutError``, retried for every method.

    Per request: ``session.post(url, middlewares=(mw.options(max_attempts=2),))`` (a
    request's middlewares replace the session's), or ``retryrs.http.request_options(...)``
    around the call. ``redact_query``: more query keys shown as ``REDACTED``. The
    Retrier's ``retry_on_result`` and ``retry_after`` are refused.

    Older aiohttp (no client middlewares): ``await mw.request(session, "GET", url,
    **kwargs)`` runs the same retries around ``session.request``.
    """

    def __init__(
        self,
        retrier: Optional[_native.Retrier] = None,
        *,
        methods: Optional[Iterable[str]] = None,
        statuses: Optional[Iterable[int]] = None,
        idempotency_key: bool = True,
        redact_query: Optional[Iterable[str]] = None,
        propagation: Union[None, bool, Outbound] = None,
    ) -> None:
        super().__init__(retrier, methods, statuses, idempotency_key, redact_query, bounds_attempts=True, propagation=propagation)
        self._own: Optional[RequestOptions] = None

    def options(self, **overrides: Any) -> "RetryMiddleware":
        """This middleware with per-request overrides (``max_attempts``, ``methods``,
        ``statuses``, ``idempotency_key``), for one request's ``middlewares=``."""
        derived = RetryMiddleware.__new__(RetryMiddleware)
        derived.__dict__.update(self.__dict__)
        given = RequestOptions.of(overrides, "RetryMiddleware.options()")
        derived._own = given if self._own is None else self._own.merged(given)
        return derived

    async def __call__(self, request: aiohttp.ClientRequest, handler: Callable[[aiohttp.ClientRequest], Awaitable[aiohttp.ClientResponse]]) -> aiohttp.ClientResponse:
        call = getattr(request, "_traces", None)
        gave_up = _GAVE_UP.get()
        if gave_up is not None:
            _GAVE_UP.set(None)
            if gave_up[0] is call:
                raise gave_up[1]  # aiohttp's own resend of what the retries ended
        try:
            return await self._run(request.method, str(request.url), request.headers.get("Idempotency-Key"), request.body, lambda: handler(request), request.headers)
        except _SESSION_RESENDS as e:
            session = getattr(request, "_session", None)
            if call is not None and request.method in _IDEMPOTENT and getattr(session, "_retry_connection", False):
                _GAVE_UP.set((call, e))
            raise

    async def request(self, session: aiohttp.ClientSession, method: str, url: Any, **kwargs: Any) -> aiohttp.ClientResponse:
        """The fallback for aiohttp before 3.12: ``session.request(method, url, **kwargs)``
        through the same retries (one call of it per attempt). A session (or request) with
        ``raise_for_status`` raises for the final response only, as with the middleware:
        each attempt's error status is judged by the HTTP rules first."""
        headers = kwargs.get("headers") or {}
        key = next((v for k, v in dict(headers).items() if k.lower() == "idempotency-key"), None)
        body = kwargs.get("data", kwargs.get("json"))
        replay: Any = b"" if "json" in kwargs else body
        raising = kwargs.pop("raise_for_status", None)
        if raising is None:
            raising = getattr(session, "_raise_for_status", False)
        kwargs["raise_for_status"] = False
        # The attempts' propagation headers go in a copy of the caller's.
        sent = kwargs["headers"] = CIMultiDict(headers)
        if self._outbound is not None and self._outbound.hosts is not None and kwargs.get("allow_redirects", True):
            kwargs["middlewares"] = _hop_guarded(self._outbound, session, kwargs.get("middlewares"))
        resp = await self._run(method.upper(), str(url), key, replay, lambda: session.request(method, url, **kwargs), sent)
        if callable(raising):
            await raising(resp)
        elif raising:
            resp.raise_for_status()  # (releases an error response, as aiohttp does)
        return resp

    async def _run(self, method: str, raw_url: str, key: Optional[str], body: Any, send: Callable[[], Awaitable[aiohttp.ClientResponse]], headers: MutableMapping[str, Any]) -> aiohttp.ClientResponse:
        # A body that cannot be sent again: one attempt (bounded, with its events).
        rules, retrier = self._for_request(self._own, not _replayable(body), method, key)
        url = rules.redact(raw_url)
        attempts = RequestAttempts()

        async def attempt() -> aiohttp.ClientResponse:
            attempts.begin()
            current = _native.current_attempt()
            attempts.propagate(self._outbound, headers, raw_url, current)
            try:
                if nothing_left(current):
                    raise (_CONNECT_TIMEOUT or asyncio.TimeoutError)(NOTHING_LEFT)
                with attempts.sending():
                    resp = await _within(send(), current)
            except Exception as e:
                failed = _failure(rules, method, url, key, e)
                if failed is None:
                    raise
                raise failed from e
            failure = response_failure(rules, attempts, method, url, key, resp, resp.status, resp.headers)
            if failure is None:
                return resp
            if failure.retried:
                await _drain(resp)
                attempts.hold(failure, _let_go)  # type: ignore[arg-type]
            raise failure

        bound = silence(retrier)
        try:
            return _hand_over(await call_async(retrier, attempt, _discard), bound)
        except ErrorStatus as e:
            return _hand_over(e.take(), bound)
        except RetryExhausted as e:
            return _hand_over(attempts.final(e), bound)
        except BaseException:
            attempts.abandon()
            raise


# Client middlewares (aiohttp 3.12+) see every hop of a redirect aiohttp follows.
_HOPS_VISIBLE = hasattr(aiohttp, "ClientMiddlewareType")


def _hop_guarded(outbound: Outbound, session: aiohttp.ClientSession, given: Any) -> Tuple[Any, ...]:
    """The request's middlewares (``given``, else the session's) and, last, one that
    strips the propagation headers from a hop to a host outside the allowlist: aiohttp
    copies a request's headers to the redirects it follows, below ``request()``'s
    retries. Without client middlewares that cannot be kept, so it is refused."""
    if not _HOPS_VISIBLE:
        raise ValueError(
            "RetryMiddleware.request: with propagation=Outbound(hosts=[...]) set, this aiohttp (before 3.12) would "
            "send the propagation headers on along the redirects it follows, to any host; pass allow_redirects=False, "
            "or upgrade aiohttp to 3.12 or later"
        )

    async def strip_outside_hosts(request: Any, handler: Any) -> Any:
        if not outbound.allows(str(request.url)):
            for name in outbound.names:
                request.headers.popall(name, None)
        return await handler(request)

    before = getattr(session, "_middlewares", ()) if given is None else given
    return (*before, strip_outside_hosts)


def _discard(outcome: Any) -> None:
    """A hedged request's loser: its response (if it got one) is closed, never returned."""
    resp = held_response(outcome, aiohttp.ClientResponse)
    if resp is not None:
        resp.close()


def _failure(rules: Rules, method: str, url: str, key: Optional[str], exc: BaseException) -> Optional[RequestFailed]:
    # ServerTimeoutError (and the cut's ConnectionTimeoutError) are asyncio.TimeoutErrors.
    return request_failed(rules, method, url, key, _outcome(exc), exc, isinstance(exc, asyncio.TimeoutError))


async def _within(send: Awaitable[aiohttp.ClientResponse], current: Optional[_native.AttemptInfo]) -> aiohttp.ClientResponse:
    """One request interrupted at its attempt's bound. Cut while aiohttp was still getting
    it a connection (``BaseConnector.connect``: the pool, DNS, TCP, proxy, TLS), it was
    never sent: aiohttp's own ``ConnectionTimeoutError``, retried for every method. Cut
    after, as aiohttp's read timeout (``ServerTimeoutError``: it may have reached the
    server, so only an idempotent method is sent again). The cause is the
    ``AttemptTimeout``."""
    if current is None or current._bound is None:
        return await send
    try:
        return await _suspended(send.__await__(), _FIRST, current, _GRACE)  # type: ignore[no-any-return]
    except AttemptTimeout as e:
        kind = _CONNECT_TIMEOUT if _CONNECT_TIMEOUT is not None and _connecting(e.__context__) else aiohttp.ServerTimeoutError
        raise kind(f"{e} (the attempt's bound)") from e


_CONNECT_TIMEOUT: Any = getattr(aiohttp, "ConnectionTimeoutError", None)  # aiohttp >= 3.10
_CONNECT_CODE = aiohttp.BaseConnector.connect.__code__


def _connecting(cancelled: Optional[BaseException]) -> bool:
    """Whether the cancellation the bound caused (``cancelled``, with its traceback from
    the driver down to where the task was suspended) landed inside the connector's
    ``connect``: no connection yet, so nothing was sent. aiohttp tells a middleware
    nothing of a request's progress (its trace configs belong to the session and are set
    per request before the middlewares run), so the task's own stack at the cut says it."""
    tb = None if cancelled is None else cancelled.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is _CONNECT_CODE:
            return True
        tb = tb.tb_next
    return False


__all__ = ["RetryMiddleware"]

document_parameters(RetryMiddleware)
