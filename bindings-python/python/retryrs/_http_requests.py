"""``RetryingAdapter``: a requests ``HTTPAdapter`` whose every request goes through a
retryrs Retrier. One attempt is one request; the core decides which outcomes are
transient (``retryrs._http_common.Rules``)."""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Iterator, Mapping, Optional, Tuple, Union

# Missing: retryrs.http names the extra to install.
import requests
from requests import exceptions as rex
from requests.adapters import HTTPAdapter
from requests.utils import rewind_body
from urllib3 import exceptions as uex
from urllib3.util.timeout import Timeout

from . import _native
from ._errors import RetryExhausted
from ._http_body import Prefix, drain, replayed, silence
from .propagation import Outbound
from ._http_common import (
    NOTHING_LEFT,
    nothing_left,
    document_parameters,
    ErrorStatus,
    Helper,
    RequestAttempts,
    RequestOptions,
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


class _Replay:
    """``response.raw`` of a drained response: the part drained, then the rest of the
    original ``raw`` (or the error that stopped the drain), so ``content``,
    ``iter_content`` and ``raw.read()`` (``stream=True``) all see the whole body."""

    def __init__(self, prefix: Prefix, raw: Any) -> None:
        self._raw = raw
        self._chunks = replayed(prefix, () if prefix.ended else raw.stream(2**16, decode_content=True))
        self._left = b""
        self.headers = getattr(raw, "headers", {})
        self.status = getattr(raw, "status", None)
        self.reason = getattr(raw, "reason", None)
        self.version = getattr(raw, "version", None)
        self.decode_content = False  # decoded as drained, and as read on

    def read(self, amt: Optional[int] = None, decode_content: Optional[bool] = None, **_: Any) -> bytes:
        out = [self._left]
        size = len(self._left)
        for chunk in self._chunks:
            out.append(chunk)
            size += len(chunk)
            if amt is not None and size >= amt:
                break
        data = b"".join(out)
        if amt is None:
            self._left = b""
            return data
        self._left = data[amt:]
        return data[:amt]

    def stream(self, amt: Optional[int] = 2**16, decode_content: Optional[bool] = None) -> Iterator[bytes]:
        while True:
            chunk = self.read(amt)
            if not chunk:
                return
            yield chunk

    def release_conn(self) -> None:
        self._raw.release_conn()

    def close(self) -> None:
        self._raw.close()

    @property
    def connection(self) -> Any:
        return getattr(self._raw, "connection", None)


def _chunks(raw: Any) -> Callable[[], bytes]:
    """What arrives next of a body, decoded (``read1``: urllib3's ``read(n)`` waits for
    all n bytes, so a time bound between its reads would not hold)."""
    read1 = getattr(raw, "read1", None)
    if read1 is not None:
        return lambda: read1(2**16, decode_content=True)
    return lambda: raw.read(2**12, decode_content=True)


def _drain(resp: requests.Response) -> Prefix:
    """Drains a response that may be retried (``retryrs._http_body``): read to its end
    (at most DRAIN_LIMIT bytes), it is kept and its connection goes back to the pool;
    longer, broken or stalled (each read bounded by the attempt's read timeout), its
    connection stays open until the engine decides, and ``raw`` replays the part read."""
    prefix = drain(_chunks(resp.raw))
    if prefix.whole:
        resp._content = prefix.data()
        resp._content_consumed = True
        resp.close()  # read to its end: the connection goes back to the pool
    resp.raw = _Replay(prefix, resp.raw)
    return prefix


def _let_go(resp: requests.Response) -> None:
    """A drained response that was retried: its connection is closed unless it was read
    to its end (then it is back in the pool already)."""
    if not resp._content_consumed:
        resp.raw.close()
    resp.close()


def _socket(resp: requests.Response) -> Any:
    conn = getattr(resp.raw, "connection", None)
    return getattr(conn, "sock", None)


def _read_timeout(timeout: TimeoutArg) -> Optional[float]:
    """The read part of requests' ``timeout``."""
    if isinstance(timeout, Timeout):
        return timeout.read_timeout
    if isinstance(timeout, tuple):
        return timeout[1]
    return timeout


def _hand_over(resp: requests.Response, timeout: TimeoutArg, bound: Optional[float]) -> requests.Response:
    """The response is the caller's: its body may take as long as it flows; only silence
    longer than the caller's read timeout or the policy's ``silence`` fails a read."""
    sock = _socket(resp)
    if sock is not None and not resp._content_consumed:
        sock.settimeout(smaller(_read_timeout(timeout), bound))
    return resp


def _body_failed(rules: Any, method: str, url: str, key: Optional[str], resp: requests.Response, error: BaseException) -> None:
    """Raises a body's read failure as requests would (``ReadTimeout`` for a stall,
    ``ConnectionError`` else), wrapped for the Retrier when the rules retry it."""
    stalled = isinstance(error, (uex.ReadTimeoutError, TimeoutError))
    exc = rex.ReadTimeout(error, response=resp) if stalled else rex.ConnectionError(error, response=resp)
    exc.__cause__ = error
    failed = request_failed(rules, method, url, key, "network", exc, stalled)
    if failed is None:
        raise exc
    raise failed from exc


def _read_within(resp: requests.Response) -> None:
    """The body of a response without ``stream=True``, read inside the attempt (requests
    reads it before handing the response over): the attempt's bound covers the whole
    read, not each read alone; past it, a ``ReadTimeout`` (a timed-out attempt)."""
    if resp._content_consumed or resp.raw is None:
        return  # read already (or a response made without a body stream)
    sock = _socket(resp)
    read = _chunks(resp.raw)
    chunks = []
    while True:
        left = time_left(_native.current_attempt())
        if left is not None and sock is not None:
            if left <= 0.001:
                resp.raw.close()
                raise rex.ReadTimeout(f"the response's body took longer than the attempt's bound", response=resp)
            sock.settimeout(smaller(sock.gettimeout(), left))
        try:
            chunk = read()
        except uex.ReadTimeoutError as e:
            resp.raw.close()
            raise rex.ReadTimeout(e, response=resp) from e
        except (uex.ProtocolError, OSError) as e:
            resp.raw.close()
            raise rex.ConnectionError(e, response=resp) from e
        if not chunk:
            break
        chunks.append(chunk)
    resp._content = b"".join(chunks)
    resp._content_consumed = True
    resp.raw.release_conn()


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

    Which kind of client (docs/contract.md §6b): without ``stream=True`` requests reads
    the body before it hands the response over, so the body is read inside the attempt
    (the attempt's bound covers the whole read; a stalled body is a timed-out attempt,
    retried where the method allows); with ``stream=True`` the response is handed over at
    its headers, and its body may flow as long as it takes (a read fails only after
    ``attempt_timeout``, else the deadline, of silence). A retried response is drained at
    most 64 KiB, else its connection closed (``retryrs._http_body``).

    When retries run out on a status the last response is returned whole, as requests
    would (``content``, ``iter_content``, or ``raw.read()`` with ``stream=True``); on a network
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

    Each attempt carries ``Retryrs-Context`` (its time left and number,
    ``retryrs.propagation``) to every host, or to the hosts of ``propagation=Outbound(hosts=[...])``;
    ``propagation=False`` sends nothing. A retried response's pushback
    (``Retryrs-Pushback``, ``grpc-retry-pushback-ms``, ``x-envoy-overloaded``) is honoured:
    "don't retry" ends the call with that response (a counted failure).
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
        **adapter_kwargs: Any,
    ) -> None:
        if "max_retries" in adapter_kwargs:
            raise TypeError("RetryingAdapter retries through its Retrier; max_retries would make urllib3 retry as well: leave it out")
        Helper.__init__(self, retrier, methods, statuses, idempotency_key, redact_query, blocking=True, propagation=propagation)
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
        raw_url = request.url or ""
        url = rules.redact(raw_url)
        key = request.headers.get("Idempotency-Key")
        if isinstance(key, bytes):
            key = key.decode("latin-1")
        attempts = RequestAttempts()

        def attempt() -> requests.Response:
            attempts.begin()
            if rewinds and attempts.made > 1:  # a resend: the body from its start
                rewind_body(request)
            current = _native.current_attempt()
            kw["timeout"] = _bounded(timeout, time_left(current))
            attempts.propagate(self._outbound, request.headers, raw_url, current)
            try:
                if nothing_left(current):
                    raise rex.ConnectTimeout(NOTHING_LEFT)
                with attempts.sending():
                    resp = send(request, **kw)
                failure = response_failure(rules, attempts, method, url, key, resp, resp.status_code, resp.headers)
                if failure is None and not stream:
                    _read_within(resp)
            except (rex.ConnectionError, rex.Timeout) as e:
                failed = request_failed(rules, method, url, key, _outcome(e), e, isinstance(e, rex.Timeout))
                if failed is None:
                    raise
                raise failed from e
            if failure is None:
                return resp
            if failure.retried:
                prefix = _drain(resp)
                if prefix.error is not None and not stream:
                    # Read before it is handed over: a body that broke or stalled makes
                    # the attempt a network failure (a timed-out one for a stall).
                    _let_go(resp)
                    _body_failed(rules, method, url, key, resp, prefix.error)
                attempts.hold(failure, _let_go)  # type: ignore[arg-type]
            raise failure

        bound = silence(retrier)
        try:
            return _hand_over(retrier.call(attempt), timeout, bound)
        except ErrorStatus as e:
            return _hand_over(e.take(), timeout, bound)
        except RetryExhausted as e:
            return _hand_over(attempts.final(e), timeout, bound)
        except BaseException:
            attempts.abandon()
            raise

document_parameters(
    RetryingAdapter,
    """
    **adapter_kwargs (keyword arguments): passed to ``requests.adapters.HTTPAdapter``
        (``pool_connections``, ``pool_maxsize``, ``pool_block``); ``max_retries`` is
        refused (urllib3 would retry as well).""",
)
