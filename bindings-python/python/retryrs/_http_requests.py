"""``RetryingAdapter``: a requests ``HTTPAdapter`` whose every request goes through a
retryrs Retrier. One attempt is one request; the core decides which outcomes are
transient (``retryrs._http_common.Rules``)."""

from __future__ import annotations

import io
from typing import Any, Dict, Iterable, Iterator, Mapping, Optional, Tuple, Union

# Missing: retryrs.http names the extra to install.
import requests
from requests import exceptions as rex
from requests.adapters import HTTPAdapter
from requests.utils import rewind_body
from urllib3 import exceptions as uex
from urllib3.util.timeout import Timeout

from . import _native
from ._errors import RetryExhausted
from ._http_common import (
    DRAIN_LIMIT,
    ErrorStatus,
    Helper,
    RequestAttempts,
    RequestOptions,
    final_response,
    in_tls_handshake,
    request_failed,
    response_failure,
    smaller,
    time_left,
)

TimeoutArg = Union[None, float, Tuple[Optional[float], Optional[float]], Timeout]


def _outcome(exc: BaseException) -> Optional[str]:
    """The core's name for a requests failure: "connect" (no connection was made, or its
    TLS handshake failed: nothing was sent), "network" (anything after, a TLS error once
    the request was written included), or None (not a network failure at all)."""
    if isinstance(exc, rex.SSLError):
        return "connect" if in_tls_handshake(exc) else "network"
    if isinstance(exc, (rex.ConnectTimeout, rex.ProxyError)):
        return "connect"
    if isinstance(exc, rex.ConnectionError):
        reason: Any = exc.args[0] if exc.args else None
        if isinstance(reason, uex.MaxRetryError):
            reason = reason.reason
        # NameResolutionError is a NewConnectionError in urllib3 2.
        if isinstance(reason, (uex.NewConnectionError, uex.ConnectTimeoutError)):
            return "connect"
        # A TLS handshake reset or cut short: urllib3 says "Connection aborted." as for a
        # connection that broke after the request was written; the traceback tells.
        return "connect" if in_tls_handshake(exc) else "network"
    if isinstance(exc, rex.Timeout):
        return "network"
    return None


class _Replay(io.BytesIO):
    """A drained body in place of ``response.raw``: a response handed back after retries
    ran out was read (to keep its connection), and ``stream=True`` callers read ``raw``."""

    def __init__(self, data: bytes, raw: Any) -> None:
        super().__init__(data)
        self.headers = getattr(raw, "headers", {})
        self.status = getattr(raw, "status", None)
        self.reason = getattr(raw, "reason", None)
        self.version = getattr(raw, "version", None)
        self.decode_content = False  # already decoded when drained

    def read(self, amt: Optional[int] = None, decode_content: Optional[bool] = None, **_: Any) -> bytes:
        return super().read(-1 if amt is None else amt)

    def stream(self, amt: Optional[int] = 2**16, decode_content: Optional[bool] = None) -> Iterator[bytes]:
        while True:
            chunk = self.read(amt)
            if not chunk:
                return
            yield chunk

    def release_conn(self) -> None:
        pass


def _release(resp: requests.Response) -> None:
    """Frees the connection of a response that will be retried. A body of at most
    DRAIN_LIMIT bytes is read (kept on the response, which the caller gets if retries run
    out: ``content``, and ``raw.read()`` for ``stream=True``) and the connection goes back
    to the pool; a longer, broken or stalled one (each read bounded by the attempt's read
    timeout) is not read on: the connection is closed, and the response keeps only the
    part read."""
    chunks = []
    size = 0
    complete = False
    try:
        while size <= DRAIN_LIMIT:
            chunk = resp.raw.read(DRAIN_LIMIT + 1 - size, decode_content=True)
            if not chunk:
                complete = True
                break
            chunks.append(chunk)
            size += len(chunk)
    except Exception:  # a broken or stalled body: drop the connection instead of reusing it
        pass
    resp._content = b"".join(chunks)
    resp._content_consumed = True
    if not complete:
        resp.raw.close()  # not read to its end: the connection cannot be reused
    resp.close()  # the connection goes back to the pool (a closed one is replaced)
    resp.raw = _Replay(resp._content, resp.raw)


def _bounded(timeout: TimeoutArg, left: Optional[float]) -> TimeoutArg:
    """requests' ``timeout`` (a number, a (connect, read) pair or a urllib3 Timeout) with
    each part no longer than ``left``, the attempt's time left."""
    if left is None:
        return timeout
    if isinstance(timeout, Timeout):
        return Timeout(connect=smaller(timeout.connect_timeout, left), read=smaller(timeout.read_timeout, left))  # type: ignore[arg-type]
    if isinstance(timeout, tuple):
        connect, read = timeout
        return (smaller(connect, left), smaller(read, left))
    return (smaller(timeout, left), smaller(timeout, left))


class RetryingAdapter(Helper, HTTPAdapter):
    """``session.mount("https://", RetryingAdapter(retrier))``: retries what the core's
    HTTP rules call transient (connect failures and TLS handshake failures for every
    method, never a certificate that fails verification; other network failures and
    408/425/429/500/502/503/504 for idempotent methods, or ``methods``/``statuses``; a POST or PATCH with an ``Idempotency-Key`` header like
    an idempotent method unless ``idempotency_key=False``), with the Retrier's backoff,
    Retry-After, deadline, budget, events and cancel token.

    When retries run out on a status the last response is returned, as requests would
    (its body read: ``content``, or ``raw.read()`` with ``stream=True``); on a network
    failure the exception raised is both requests' own (``requests.ConnectionError``...)
    and ``retryrs.RetryExhausted``. A body that cannot be replayed (a generator, a file
    without ``tell``) is sent once. ``redact_query`` adds query keys whose values events,
    logs and errors show as ``REDACTED``. ``adapter_kwargs`` go to ``HTTPAdapter``
    (``pool_connections``, ``pool_maxsize``, ``pool_block``).

    Per request: ``retryrs.http.request_options(...)`` around the call, or a
    ``retryrs`` attribute (a dict of the same options) on a ``PreparedRequest`` given to
    ``session.send``: ``max_attempts``, ``methods``, ``statuses``, ``idempotency_key``.

    Each request's ``timeout`` (connect and read) is the caller's or the attempt's time
    left (``retryrs.current_attempt().remaining``: the deadline, or the smaller
    ``attempt_timeout``), whichever is smaller. The Retrier's ``retry_on_result`` and
    ``retry_after`` are refused: the HTTP rules judge responses.
    """

    def __init__(
        self,
        retrier: Optional[_native.Retrier] = None,
        *,
        methods: Optional[Iterable[str]] = None,
        statuses: Optional[Iterable[int]] = None,
        idempotency_key: bool = True,
        redact_query: Optional[Iterable[str]] = None,
        **adapter_kwargs: Any,
    ) -> None:
        if "max_retries" in adapter_kwargs:
            raise TypeError("RetryingAdapter retries through its Retrier; max_retries would make urllib3 retry as well: leave it out")
        Helper.__init__(self, retrier, methods, statuses, idempotency_key, redact_query, blocking=True)
        HTTPAdapter.__init__(self, **adapter_kwargs)

    def send(  # type: ignore[override]
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Union[None, float, Tuple[float, float], Tuple[float, None]] = None,
        verify: Union[bool, str] = True,
        cert: Union[None, bytes, str, Tuple[Union[bytes, str], Union[bytes, str]]] = None,
        proxies: Optional[Mapping[str, str]] = None,
    ) -> requests.Response:
        send = super().send
        kw: Dict[str, Any] = dict(stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=proxies)
        body = request.body
        position = getattr(request, "_body_position", None)
        rewinds = hasattr(body, "read")
        # A generator or an unrewindable file: sent once (one attempt, its events too).
        once = body is not None and not isinstance(body, (bytes, str)) and not (rewinds and isinstance(position, int))
        rules, retrier = self._for_request(RequestOptions.of(getattr(request, "retryrs", None), "PreparedRequest.retryrs"), once)
        method = (request.method or "GET").upper()
        url = rules.redact(request.url or "")
        key = request.headers.get("Idempotency-Key")
        if isinstance(key, bytes):
            key = key.decode("latin-1")
        attempts = RequestAttempts()

        def attempt() -> requests.Response:
            attempts.begin()
            if rewinds and attempts.made > 1:  # a resend: the body from its start
                rewind_body(request)
            kw["timeout"] = _bounded(timeout, time_left(_native.current_attempt()))
            try:
                with attempts.sending():
                    resp = send(request, **kw)
            except (rex.ConnectionError, rex.Timeout) as e:
                failed = request_failed(rules, method, url, key, _outcome(e), e, isinstance(e, rex.Timeout))
                if failed is None:
                    raise
                raise failed from e
            failure = response_failure(rules, attempts, method, url, key, resp, resp.status_code, resp.headers)
            if failure is None:
                return resp
            if failure.retried:
                _release(resp)
            raise failure

        try:
            return retrier.call(attempt)
        except ErrorStatus as e:
            return e.take()  # type: ignore[no-any-return]
        except RetryExhausted as e:
            return final_response(e)  # type: ignore[no-any-return]
