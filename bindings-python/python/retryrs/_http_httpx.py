"""``RetryingTransport`` and ``AsyncRetryingTransport``: httpx transports that send
each request through a retryrs Retrier around an inner transport. One attempt is one
request; the core decides which outcomes are transient (``retryrs._http_common.Rules``)."""

from __future__ import annotations

from typing import Any, Awaitable, Iterable, Optional

import httpx  # missing: retryrs.http names the extra to install

from . import _native
from ._aio import _bounded
from ._errors import AttemptTimeout, RetryExhausted
from ._http_common import (
    RequestAttempts,
    RequestFailed,
    RetryableStatus,
    Rules,
    final_response,
    http_retrier,
    redact_url,
    refuse_attempt_timeout,
)

# httpx's failures in the core's words: no connection was made, or it broke afterwards.
_CONNECT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_NETWORK = (httpx.ReadError, httpx.WriteError, httpx.CloseError, httpx.ReadTimeout, httpx.WriteTimeout, httpx.RemoteProtocolError)


def _replayable(request: httpx.Request) -> bool:
    # bytes/str bodies (and none) are a ByteStream. A generator would raise StreamConsumed
    # on a second pass, and a file object would be re-read from where the first pass
    # left it: an empty body under the old Content-Length. Those are sent once.
    return isinstance(request.stream, httpx.ByteStream)


async def _within(send: Awaitable[httpx.Response], timeout: float, request: httpx.Request) -> httpx.Response:
    """One request bounded by the retrier's attempt_timeout. Past it the request is
    abandoned as a read timeout: it may have reached the server, so the HTTP rules send
    it again only for an idempotent method (as for any read timeout); a POST surfaces
    the ``httpx.ReadTimeout``, its cause the ``AttemptTimeout``."""
    late: list[httpx.Response] = []

    async def kept() -> httpx.Response:
        resp = await send
        late.append(resp)
        return resp

    try:
        return await _bounded(kept(), timeout)  # type: ignore[no-any-return]
    except AttemptTimeout as e:
        # A transport that finished its response despite the cancel: nobody will read
        # it, so its connection goes back now rather than when it is collected.
        for resp in late:
            await resp.aclose()
        raise httpx.ReadTimeout(f"{e} (the retrier's attempt_timeout)", request=request) from e


class _Base:
    def __init__(
        self,
        retrier: Optional[_native.Retrier],
        methods: Optional[Iterable[str]],
        statuses: Optional[Iterable[int]],
        bounds_attempts: bool = False,
    ) -> None:
        self._rules = Rules(methods, statuses)
        self._retrier = http_retrier(retrier, bounds_attempts)

    @property
    def retrier(self) -> _native.Retrier:
        return self._retrier

    def _failure(self, method: str, url: str, exc: BaseException) -> Optional[RequestFailed]:
        outcome = "connect" if isinstance(exc, _CONNECT) else "network" if isinstance(exc, _NETWORK) else None
        if outcome is not None and self._rules.transient(method, outcome):
            return RequestFailed(method, url, outcome == "connect", exc)
        return None


class RetryingTransport(_Base, httpx.BaseTransport):
    """``httpx.Client(transport=RetryingTransport(retrier))``: retries what the core's HTTP
    rules call transient, with the Retrier's backoff, Retry-After, deadline, budget,
    events and cancel token. ``transport`` is the one that sends (default
    ``httpx.HTTPTransport()``). Out of retries on a status: the last response; on a
    network failure: ``RetryExhausted``. A streamed or file body is sent once."""

    def __init__(
        self,
        retrier: Optional[_native.Retrier] = None,
        *,
        transport: Optional[httpx.BaseTransport] = None,
        methods: Optional[Iterable[str]] = None,
        statuses: Optional[Iterable[int]] = None,
    ) -> None:
        if transport is not None and not isinstance(transport, httpx.BaseTransport):
            raise TypeError(f"transport must be an httpx.BaseTransport, got {type(transport).__name__}")
        super().__init__(retrier, methods, statuses)
        refuse_attempt_timeout(retrier, "RetryingTransport", "httpx.Client(timeout=...)")
        self._transport = transport if transport is not None else httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        inner = self._transport
        if not _replayable(request):
            return inner.handle_request(request)
        method = request.method
        url = redact_url(str(request.url))
        attempts = RequestAttempts()

        def attempt() -> httpx.Response:
            attempts.begin()
            try:
                resp = inner.handle_request(request)
            except httpx.TransportError as e:
                failed = self._failure(method, url, e)
                if failed is None:
                    raise
                raise failed from e
            if self._rules.transient(method, resp.status_code):
                retry_after = resp.headers.get("Retry-After")
                try:
                    resp.read()  # kept on the response; frees the connection for reuse
                finally:
                    resp.close()
                raise attempts.hold(RetryableStatus(resp.status_code, method, url, retry_after, resp))
            return resp

        try:
            return self._retrier.call(attempt)
        except RetryExhausted as e:
            return final_response(e)  # type: ignore[no-any-return]

    def close(self) -> None:
        self._transport.close()


class AsyncRetryingTransport(_Base, httpx.AsyncBaseTransport):
    """``httpx.AsyncClient(transport=AsyncRetryingTransport(retrier))``: as
    ``RetryingTransport``, waiting on the event loop; cancelling the task ends a wait at
    once. ``transport`` defaults to ``httpx.AsyncHTTPTransport()``. The retrier's
    ``attempt_timeout`` bounds each request (until its headers arrive), a streamed one
    too: one past it is a read timeout, sent again only for an idempotent method."""

    def __init__(
        self,
        retrier: Optional[_native.Retrier] = None,
        *,
        transport: Optional[httpx.AsyncBaseTransport] = None,
        methods: Optional[Iterable[str]] = None,
        statuses: Optional[Iterable[int]] = None,
    ) -> None:
        if transport is not None and not isinstance(transport, httpx.AsyncBaseTransport):
            raise TypeError(f"transport must be an httpx.AsyncBaseTransport, got {type(transport).__name__}")
        super().__init__(retrier, methods, statuses, bounds_attempts=True)
        # Taken off the retrier it drives (http_retrier): _send applies it per request.
        self._attempt_timeout = retrier.attempt_timeout if retrier is not None else None
        self._transport = transport if transport is not None else httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not _replayable(request):
            return await self._send(request)  # sent once, but still bounded
        method = request.method
        url = redact_url(str(request.url))
        attempts = RequestAttempts()

        async def attempt() -> httpx.Response:
            attempts.begin()
            try:
                resp = await self._send(request)
            except httpx.TransportError as e:
                failed = self._failure(method, url, e)
                if failed is None:
                    raise
                raise failed from e
            if self._rules.transient(method, resp.status_code):
                retry_after = resp.headers.get("Retry-After")
                try:
                    await resp.aread()
                finally:
                    await resp.aclose()
                raise attempts.hold(RetryableStatus(resp.status_code, method, url, retry_after, resp))
            return resp

        try:
            return await self._retrier.call_async(attempt)
        except RetryExhausted as e:
            return final_response(e)  # type: ignore[no-any-return]

    async def _send(self, request: httpx.Request) -> httpx.Response:
        """One request through the inner transport, bounded by the retrier's
        attempt_timeout when it has one (past it: ``httpx.ReadTimeout``)."""
        send = self._transport.handle_async_request(request)
        if self._attempt_timeout is None:
            return await send
        return await _within(send, self._attempt_timeout, request)

    async def aclose(self) -> None:
        await self._transport.aclose()


__all__ = ["RetryingTransport", "AsyncRetryingTransport"]
