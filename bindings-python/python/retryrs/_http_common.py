"""What the HTTP helpers share: the failures a retried request raises inside the
Retrier, the one call into the core's HTTP rules, and how an exhausted call ends.

Every verdict comes from the core (``_native.classify_http``); this module only says
which client outcome is a status, a connect failure or another network failure.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import ssl
import threading
from typing import Any, Awaitable, Callable, Dict, Iterable, Iterator, List, Mapping, MutableMapping, Optional, Sequence, Tuple, Union

from . import _native
from .propagation import Outbound, outbound
from ._defaults import certificate_failure, linked
from ._errors import RetryExhausted
from ._http_body import Held

IDEMPOTENT_METHODS: Tuple[str, ...] = _native.IDEMPOTENT_METHODS


class HTTPRetryError(Exception):
    """Base of the failures the HTTP helpers hand their Retrier. ``method`` and ``url``
    (redacted: no credentials, no signing query values) name the request."""

    # Whether the failure is a response that will be retried (its body to release first).
    retried = False

    def __init__(self, message: str, method: str, url: str) -> None:
        super().__init__(message)
        self.method = method
        self.url = url

    def __reduce__(self) -> Any:
        # Picklable (RetryExhausted.errors holds these) without the response it may hold.
        state = {k: v for k, v in self.__dict__.items() if k != "_response"}
        return (_rebuild_http_error, (type(self), self.args, state))

    @property
    def otel_error_type(self) -> str:
        """OpenTelemetry's ``error.type`` for this failure (what retryrs.otel and
        retryrs.prometheus record): the status code as a string (``"503"``) for a
        response, the client's exception type for a network failure."""
        status = getattr(self, "status", None)
        if status is not None:
            return str(status)
        from ._metrics import error_type

        cause = self.__cause__
        return error_type(cause) if cause is not None else type(self).__qualname__


def _rebuild_http_error(cls: Any, args: Tuple[Any, ...], state: Dict[str, Any]) -> Any:
    obj = cls.__new__(cls)
    Exception.__init__(obj, *args)
    obj.__dict__.update(state)
    return obj


class RetryableStatus(HTTPRetryError):
    """A response with a retryable status, for a method that may be retried.

    ``status``; ``retry_after``: the engine's hint, its raw ``Retry-After`` header, or
    the server's pushback (``retryrs.DONT_RETRY``, or an exact wait), or None. Its body was read and its connection released before the wait. When retries run
    out on it, the helper returns the response itself, as the client would have.
    """

    retried = True

    def __init__(self, status: int, method: str, url: str, retry_after: Any, response: Any) -> None:
        super().__init__(f"HTTP {status} from {method} {url}", method, url)
        self.status = status
        self.retry_after = retry_after
        # Not public, and dropped once a later attempt starts: headers stay out of events.
        self._response = response


class ErrorStatus(HTTPRetryError):
    """A final response with an error status (400 and up) the rules do not retry (a 404,
    or a 503 to a POST): the call ends as ``rejected`` (``error.type`` the status) and
    the helper hands the response back as the client would have. Seen only in events."""

    def __init__(self, status: int, method: str, url: str, response: Any) -> None:
        super().__init__(f"HTTP {status} from {method} {url}", method, url)
        self.status = status
        self._response = response

    def take(self) -> Any:
        """The response, let go of here (events may outlive the call)."""
        resp, self._response = self._response, None
        return resp


class RequestFailed(HTTPRetryError):
    """A network failure the core calls transient: ``connect`` is True when no connection
    was made (the request was never sent); ``timed_out`` when it was a timeout (the
    client's own, or the helper's cut at the attempt's bound), which a quota budget prices
    as a timeout's retry, as botocore prices its connect and read timeouts.
    ``__cause__`` is the client's own exception, kept out of the message because clients
    put the URL (and its query) in theirs."""

    def __init__(self, method: str, url: str, connect: bool, cause: BaseException, timed_out: bool = False) -> None:
        what = "could not connect" if connect else "failed"
        super().__init__(f"{method} {url} {what}: {_describe(cause)}", method, url)
        self.connect = connect
        self.timed_out = timed_out
        # What the drivers read (the blocking one from Rust) to price the retry.
        self._retryrs_timed_out = timed_out
        self.__cause__ = cause


def request_failed(
    rules: "Rules", method: str, url: str, key: Optional[str], outcome: Optional[str], exc: BaseException, timed_out: bool = False
) -> Optional[RequestFailed]:
    """The ``RequestFailed`` to hand the Retrier for a client's network failure
    (``outcome``: "connect", "network", or None: not one; ``timed_out``: a timeout), or
    None: the client's exception is raised as it is and ends the call. A certificate that
    fails verification is never retried, though clients file it under their connect
    errors: it fails the same way every time (``retryrs._defaults.certificate_failure``)."""
    if outcome is None or not rules.transient(method, outcome, key) or certificate_failure(exc):
        return None
    return RequestFailed(method, url, outcome == "connect", exc, timed_out)


def _describe(exc: BaseException) -> str:
    """The innermost OS error's text (e.g. "Connection refused"), else the class name."""
    for e in linked(exc):
        if isinstance(e, ssl.SSLError):
            # Its errno is OpenSSL's error code (1: SSL_ERROR_SSL), not the OS's.
            return f"{e.reason or e.strerror or 'TLS error'} ({type(exc).__name__})"
        if isinstance(e, OSError) and (e.errno or e.strerror):
            # The errno's own text: asyncio's strerror carries the address.
            text = os.strerror(e.errno) if isinstance(e.errno, int) and e.errno > 0 else e.strerror
            return f"{text} ({type(exc).__name__})"
    return type(exc).__name__


class Rules:
    """A helper's ``methods``, ``statuses``, ``idempotency_key`` switch and extra
    ``redact_query`` keys, checked once, and the one call site of the core's HTTP
    classification and redaction."""

    __slots__ = ("methods", "statuses", "idempotency_key", "redact_keys")

    def __init__(
        self,
        methods: Optional[Iterable[str]],
        statuses: Optional[Iterable[int]],
        idempotency_key: bool = True,
        redact_query: Optional[Iterable[str]] = None,
    ) -> None:
        self.methods = None if methods is None else _methods(methods)
        self.statuses = None if statuses is None else _statuses(statuses)
        if not isinstance(idempotency_key, bool):
            raise TypeError(f"idempotency_key must be True or False, got {idempotency_key!r}")
        self.idempotency_key = idempotency_key
        self.redact_keys = None if redact_query is None else _redact_keys(redact_query)

    def transient(self, method: str, outcome: Any, key: Optional[str] = None) -> bool:
        """``outcome``: a status, ``"connect"`` or ``"network"``; ``key``: the request's
        ``Idempotency-Key`` header, if it has one."""
        if isinstance(outcome, str):
            verdict = _native.classify_http(method, None, outcome, self.methods, self.statuses, key, self.idempotency_key)
        else:
            verdict = _native.classify_http(method, outcome, None, self.methods, self.statuses, key, self.idempotency_key)
        return verdict == "retry"

    def repeatable(self, method: str, key: Optional[str] = None) -> bool:
        """Whether the request may be sent more than once (and so hedged): what the core
        says of a network failure after sending it."""
        return self.transient(method, "network", key)

    def redact(self, url: str) -> str:
        return _native.redact_url(url, self.redact_keys)

    def overridden(self, options: "RequestOptions") -> "Rules":
        """These rules with one request's overrides."""
        out = Rules.__new__(Rules)
        out.methods = self.methods if options.methods is None else options.methods
        out.statuses = self.statuses if options.statuses is None else options.statuses
        out.idempotency_key = self.idempotency_key if options.idempotency_key is None else options.idempotency_key
        out.redact_keys = self.redact_keys
        return out


def _redact_keys(keys: Iterable[str]) -> Tuple[str, ...]:
    if isinstance(keys, (str, bytes)):
        raise TypeError(f"redact_query must be a collection of query keys such as ['session'], got the string {keys!r}")
    out = tuple(keys)
    for k in out:
        if not isinstance(k, str):
            raise TypeError(f"redact_query must hold str query keys, got {k!r}")
    _native.check_redact_keys(list(out))
    return out


class RequestOptions:
    """One request's overrides of its helper (``retryrs.http.request_options``, httpx's
    ``extensions={"retryrs": {...}}``, aiohttp's ``middlewares=(mw.options(...),)``,
    requests' ``PreparedRequest.retryrs``): ``max_attempts``, ``methods``, ``statuses``,
    ``idempotency_key``. None: the helper's own."""

    __slots__ = ("max_attempts", "methods", "statuses", "idempotency_key")
    KEYS = ("max_attempts", "methods", "statuses", "idempotency_key")

    def __init__(self, max_attempts: Optional[int] = None, methods: Optional[Iterable[str]] = None, statuses: Optional[Iterable[int]] = None, idempotency_key: Optional[bool] = None) -> None:
        if max_attempts is not None and (isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1):
            raise ValueError(f"max_attempts must be an int >= 1, got {max_attempts!r}")
        if idempotency_key is not None and not isinstance(idempotency_key, bool):
            raise TypeError(f"idempotency_key must be True or False, got {idempotency_key!r}")
        self.max_attempts = max_attempts
        self.methods = None if methods is None else _methods(methods)
        self.statuses = None if statuses is None else _statuses(statuses)
        self.idempotency_key = idempotency_key

    @classmethod
    def of(cls, given: Any, where: str) -> Optional["RequestOptions"]:
        """``given``: None, a RequestOptions or a mapping of its keys (``where`` names the
        place it came from in the error for an unknown key)."""
        if given is None or isinstance(given, RequestOptions):
            return given
        if not isinstance(given, Mapping):
            raise TypeError(f"{where} must be a dict of retryrs request options ({', '.join(cls.KEYS)}), got {given!r}")
        unknown = [k for k in given if k not in cls.KEYS]
        if unknown:
            raise ValueError(f"{where}: unknown retryrs request option {unknown[0]!r}; the options are {', '.join(cls.KEYS)}")
        return cls(**given)

    def merged(self, inner: Optional["RequestOptions"]) -> "RequestOptions":
        """These options, with ``inner``'s (closer to the request) taking precedence."""
        if inner is None:
            return self
        out = RequestOptions()
        for k in self.KEYS:
            v = getattr(inner, k)
            setattr(out, k, getattr(self, k) if v is None else v)
        return out


_OPTIONS: "contextvars.ContextVar[Optional[RequestOptions]]" = contextvars.ContextVar("retryrs.http.request_options", default=None)


@contextlib.contextmanager
def request_options(*, max_attempts: Optional[int] = None, methods: Optional[Iterable[str]] = None, statuses: Optional[Iterable[int]] = None, idempotency_key: Optional[bool] = None) -> Iterator[RequestOptions]:
    """Overrides for the requests made inside the block, with every helper (the way to
    reach requests' adapter from ``session.get(...)``)::

        with retryrs.http.request_options(max_attempts=2, methods=["POST"]):
            session.post(url, json=body)

    Nested blocks combine, the inner one winning.

    Parameters
    ----------
    max_attempts (int or None, default None): the Retrier's attempt limit, for these
        requests (its other limits still apply); None: the Retrier's.
    methods (iterable of str or None, default None): replaces the helper's retried
        methods; None: the helper's.
    statuses (iterable of int or None, default None): replaces the helper's retried
        statuses; None: the helper's.
    idempotency_key (bool or None, default None): False: an ``Idempotency-Key`` header
        does not make a POST/PATCH repeatable; None: the helper's rule."""
    given = RequestOptions(max_attempts, methods, statuses, idempotency_key)
    outer = _OPTIONS.get()
    token = _OPTIONS.set(given if outer is None else outer.merged(given))
    try:
        yield given
    finally:
        _OPTIONS.reset(token)


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


def http_retrier(retrier: Optional[_native.Retrier], bounds_attempts: bool = False, helper: Optional[str] = None) -> _native.Retrier:
    """The user's retrier (policy, listener, budget, deadline, cancel token) deciding by
    the HTTP rules: only the helpers' own failures are transient, and their hint is the
    ``retry_after`` they carry. ``bounds_attempts``: the helper interrupts a request at
    its attempt's bound itself (as its client's timeout, judged by the HTTP rules), so
    the asyncio driver does not. ``helper`` names the helper in the error refusing a
    Retrier with a ``retry_on_result`` or ``retry_after`` hook (they would be ignored)."""
    if retrier is None:
        retrier = _native.Retrier()
    elif not isinstance(retrier, _native.Retrier):
        raise TypeError(f"retrier must be a retryrs.Retrier or None, got {type(retrier).__name__}")
    return retrier._with_classifier(_CLASSES, interrupts=not bounds_attempts, helper=helper)


# The parameters every HTTP helper takes, for each helper's docstring (``help()``).
HELPER_PARAMETERS = """
    retrier (Retrier or None, default None): the policy, listeners, budget, deadline,
        attempt timeout and cancel token (None: ``Retrier()``); its ``retry_on`` is
        replaced by the HTTP rules, and a ``retry_on_result`` or ``retry_after`` hook is
        refused.
    methods (iterable of str or None, default None): the methods whose network failures
        and listed statuses are retried (None: ``IDEMPOTENT_METHODS``); a failed
        connection is retried for every method.
    statuses (iterable of int or None, default None): the statuses retried (None:
        ``RETRYABLE_STATUSES``: 408, 425, 429, 500, 502, 503, 504).
    idempotency_key (bool, default True): whether a POST or PATCH with a non-empty
        ``Idempotency-Key`` header is retried like an idempotent method.
    redact_query (iterable of str or None, default None): query keys whose values
        events, logs and errors show as ``REDACTED``, on top of ``REDACTED_QUERY_KEYS``.
    propagation (bool, Outbound or None, default None): the ``Retryrs-Context`` header
        each attempt sends (``retryrs.propagation``); None or True: to every host;
        ``Outbound(hosts=[...], mesh=...)``: only to those hosts, with a mesh's headers;
        False: nothing is sent. A "don't retry" pushback is honoured either way."""


def document_parameters(cls: Any, extra: str = "") -> None:
    """Appends the helpers' Parameters section (and ``extra``, its own entries) to
    ``cls``'s docstring, so ``help(cls)`` lists every parameter; written once here."""
    if cls.__doc__ is not None:  # None under python -OO
        cls.__doc__ += "\n\n    Parameters\n    ----------" + HELPER_PARAMETERS + extra


class Helper:
    """What every HTTP helper holds: its rules and its HTTP retrier, and, for one request,
    both with the request's overrides applied."""

    def __init__(
        self,
        retrier: Optional[_native.Retrier],
        methods: Optional[Iterable[str]],
        statuses: Optional[Iterable[int]],
        idempotency_key: bool = True,
        redact_query: Optional[Iterable[str]] = None,
        bounds_attempts: bool = False,
        blocking: bool = False,
        propagation: Union[None, bool, Outbound] = None,
    ) -> None:
        self._rules = Rules(methods, statuses, idempotency_key, redact_query)
        # What each attempt sends of the call's deadline and retry state (None: nothing).
        self._outbound = outbound(propagation, type(self).__name__)
        self._retrier = http_retrier(retrier, bounds_attempts, type(self).__name__)
        self._bounds_attempts = bounds_attempts
        self._hedges = self._retrier._hedges
        if self._hedges and blocking:
            refusal = self._retrier._refusal(type(self).__name__)
            raise ValueError(f"{refusal}; for HTTP: httpx.AsyncClient with AsyncRetryingTransport, or aiohttp with RetryMiddleware")
        # For a body that cannot be sent twice: one attempt, with the same events.
        self._once = self._retrier._with_classifier(_CLASSES, interrupts=not bounds_attempts, max_attempts=1, unhedged=True)
        # A hedging policy's requests that may not be sent twice side by side: retried
        # by the policy's retry rules instead (the same retrier, without its hedge).
        self._unhedged = self._retrier._with_classifier(_CLASSES, interrupts=not bounds_attempts, unhedged=True) if self._hedges else self._retrier

    @property
    def retrier(self) -> _native.Retrier:
        return self._retrier

    def _for_request(self, own: Optional[RequestOptions] = None, once: bool = False, method: str = "GET", key: Optional[str] = None) -> Tuple[Rules, _native.Retrier]:
        """The rules and retrier for one request: the helper's, overridden by the
        ``request_options`` block around the call, overridden by ``own`` (the request's).
        ``once``: its body cannot be sent again, so one attempt (events and metrics as
        for any call, the response or error as the client gives it). A hedging Retrier
        hedges only a request the core calls repeatable (an idempotent method, one of
        ``methods``, or a POST/PATCH with an ``Idempotency-Key``; ``method``, ``key``)
        and with no per-request ``max_attempts``; any other runs unhedged, by the
        policy's retry rules."""
        outer = _OPTIONS.get()
        options = own if outer is None else outer.merged(own)
        rules = self._rules if options is None else self._rules.overridden(options)
        if once:
            return rules, self._once
        retrier = self._retrier
        if self._hedges and (options is not None and options.max_attempts is not None or not rules.repeatable(method, key)):
            retrier = self._unhedged
        if options is not None and options.max_attempts is not None:
            retrier = retrier._with_classifier(_CLASSES, interrupts=not self._bounds_attempts, max_attempts=options.max_attempts)
        return rules, retrier


def call_async(retrier: _native.Retrier, attempt: Callable[[], Awaitable[Any]], discard: Callable[[Any], Any]) -> Awaitable[Any]:
    """``retrier.call_async(attempt)``; for a Retrier that hedges, the hedged call, which
    hands what a loser came to (a response, or a failure holding one) to ``discard``: a
    loser's response, never returned, has its connection closed."""
    if retrier._hedges:
        from ._hedge import run

        return run(retrier, attempt, (), {}, discard)
    return retrier.call_async(attempt)


def held_response(outcome: Any, response_type: type) -> Any:
    """The response a loser came to: the outcome itself, or the one its failure holds."""
    if isinstance(outcome, response_type):
        return outcome
    return getattr(outcome, "_response", None)


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


def nothing_left(current: Optional[_native.AttemptInfo]) -> bool:
    """Whether the attempt has less than a millisecond left: it is not sent at all (a
    request the next hop would see without a deadline, as a fresh one), and fails as a
    connect timeout, so the call ends on its deadline as with a request cut there."""
    if current is None:
        return False
    left = current.remaining
    return left is not None and left < 0.001


NOTHING_LEFT = "retryrs: the attempt had less than 1 ms left: the request was not sent"


class RequestAttempts:
    """One request's attempts, as the helpers count them: from the second attempt on
    each is a resend (``mark_resend``). The last retryable response is held (drained, see
    ``retryrs._http_body``) until the engine decides: the next attempt lets go of it
    (``begin``); retries running out hand it over whole (``final``); a call that ends
    otherwise lets go of it too (``abandon``)."""

    __slots__ = ("made", "_held", "_body", "_sent")

    def __init__(self) -> None:
        self.made = 0
        self._held: Optional[RetryableStatus] = None
        self._body: Optional[Held] = None
        self._sent: Tuple[str, ...] = ()

    def propagate(self, outbound: Optional[Outbound], headers: MutableMapping[str, Any], url: str, current: Optional[_native.AttemptInfo] = None) -> None:
        """Puts this attempt's propagation headers (``retryrs.propagation.Outbound``, the
        core's answer for the attempt's time left and number) in ``headers``, in place of
        the previous attempt's: an attempt with nothing left, or a host outside the
        allowlist, sends none. A request to a host outside the allowlist loses every
        propagation header it carries: a client following a redirect by itself (requests,
        httpx) sends the next hop through the helper with the headers of the hop before."""
        if outbound is None:
            return
        allowed = outbound.allows(url)
        for name in self._sent if allowed else outbound.names:
            headers.pop(name, None)
        pairs = outbound.pairs(current) if allowed else []
        for name, value in pairs:
            headers[name] = value
        self._sent = tuple(name for name, _ in pairs)

    def begin(self) -> Any:
        """Starts an attempt; returns what letting go of the held response gave (an
        awaitable for an async client, to await before sending)."""
        self.made += 1
        if self.made > 1:
            mark_resend(self.made)
        if self._held is not None:
            self._held._response = None
            self._held = None
        return self.abandon()

    @contextlib.contextmanager
    def sending(self) -> Iterator[None]:
        """Around the client's send of this attempt: ``RESEND_COUNT`` says which resend it
        is, for the span an instrumented client makes inside."""
        token = RESEND_COUNT.set(self.made - 1)
        try:
            yield
        finally:
            RESEND_COUNT.reset(token)

    def hold(self, failure: RetryableStatus, let_go: Optional[Callable[[Any], Any]] = None) -> RetryableStatus:
        """Keeps ``failure`` (and its drained response) until the next attempt; returns it
        to raise. ``let_go`` frees the response's connection if it is not handed over."""
        self._held = failure
        if let_go is not None:
            self._body = Held(failure._response, let_go)
        return failure

    def final(self, exc: RetryExhausted) -> Any:
        """Retries ran out: ``final_response(exc)``, the held response handed over (the
        caller's now, so not let go of)."""
        self._body = None
        return final_response(exc)

    def abandon(self) -> Any:
        """Lets go of the held response (the call ended without handing it over)."""
        body, self._body = self._body, None
        return None if body is None else body.let_go()


# Where a TLS error raised during the connection's setup passed (urllib3 1.26 and 2.x,
# http.client, anyio, ssl): the handshake and the certificate checks that follow it.
_HANDSHAKE_FRAMES = frozenset({
    "do_handshake", "_validate_conn", "_new_conn", "connect", "_connect_tls_proxy", "ssl_wrap_socket",
    "_ssl_wrap_socket_and_match_hostname", "_ssl_wrap_socket_impl", "wrap_socket", "match_hostname", "_match_hostname",
    "start_tls", "connect_tcp",
})


def in_tls_handshake(exc: BaseException) -> bool:
    """Whether a TLS error came from setting up the TLS connection (nothing was sent)
    rather than from a connection the request was written to. Clients wrap both alike
    (urllib3 as one SSLError; anyio lets ssl.SSLError through), so the TLS library's own
    error says where it was raised: its traceback runs through the handshake (or the
    certificate checks after it), or through a read or write. Unknown: "sent" (never
    resend what may have arrived)."""
    for e in linked(exc):
        tb = e.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_name in _HANDSHAKE_FRAMES:
                return True
            tb = tb.tb_next
    return False


def response_failure(rules: Rules, attempts: RequestAttempts, method: str, url: str, key: Optional[str], resp: Any, status: int, headers: Mapping[str, str]) -> Optional[HTTPRetryError]:
    """What a response means for its attempt, the one status verdict of every helper:
    None, the response is the call's; a ``RetryableStatus`` (its ``Retry-After`` read, the
    response held until the next attempt starts): the caller releases the response's body
    (``failure.retried``), then raises it; an ``ErrorStatus`` (a final error status, 400
    and up): raised, the call ends as rejected and the helper hands the response back."""
    if rules.transient(method, status, key):
        return attempts.hold(RetryableStatus(status, method, url, _hint(headers), resp))
    if _native.is_error_status(status):
        return ErrorStatus(status, method, url, resp)
    return None


def _hint(headers: Mapping[str, str]) -> Any:
    """A retried response's hint for the engine: the server's pushback when it gave one
    (the core reads ``Retryrs-Pushback``, ``grpc-retry-pushback-ms``,
    ``x-envoy-overloaded``): ``DONT_RETRY`` (not retried, still a counted failure) or its
    exact wait; else its ``Retry-After`` (a floor under the backoff)."""
    pushback = _native.read_pushback(headers)
    if pushback is None:
        return headers.get("Retry-After")
    if isinstance(pushback, float):
        return _native._ExactWait(pushback)
    return pushback  # DONT_RETRY


def final_response(exc: RetryExhausted) -> Any:
    """Retries ran out: on a status, the last response (as the client would have returned
    it); on a network failure, an exception that is both the client's own (its type, so
    ``except requests.ConnectionError`` / ``except httpx.ConnectError`` still catch it)
    and ``retryrs.RetryExhausted`` (attempts, reason, errors), raised here."""
    last = exc.last_error
    if isinstance(last, RetryableStatus) and last._response is not None:
        return last._response
    client = last.__cause__ if isinstance(last, RequestFailed) else None
    if client is None or isinstance(client, RetryExhausted):
        raise exc
    raise exhausted_as(client, exc) from exc.__cause__


_EXHAUSTED: Dict[type, type] = {}
_EXHAUSTED_LOCK = threading.Lock()


def exhausted_type(client_type: type) -> type:
    """The class that is both ``client_type`` and ``RetryExhausted`` (made once per
    client type): what a helper raises when retries run out on a network failure."""
    found = _EXHAUSTED.get(client_type)
    if found is not None:
        return found
    with _EXHAUSTED_LOCK:
        found = _EXHAUSTED.get(client_type)
        if found is None:
            name = f"{client_type.__name__}RetryExhausted"
            found = type(
                name,
                (client_type, RetryExhausted),
                {
                    "__module__": "retryrs.http",
                    "__qualname__": name,
                    "__doc__": f"Retries ran out on {client_type.__module__}.{client_type.__qualname__}: both that and retryrs.RetryExhausted.",
                    # retryrs's message (the URL redacted), whatever the client's __str__ does.
                    "__str__": BaseException.__str__,
                    "__reduce__": _reduce_exhausted,
                    "_client_type": client_type,
                },
            )
            _EXHAUSTED[client_type] = found
    return found


def exhausted_as(client: BaseException, exc: RetryExhausted) -> BaseException:
    """``exc`` (the history) as an instance of ``exhausted_type(type(client))``, carrying
    the client exception's attributes too (``request``, ``response``, ``errno``...)."""
    return _rebuild_exhausted(type(client), exc.args, {**client.__dict__, **exc.__dict__}, client)


_EXHAUSTED_STATE = ("attempts", "reason", "errors", "name", "result")


def _reduce_exhausted(self: Any) -> Any:
    # RetryExhausted's own state: the client's (a request, a connection key holding an
    # SSL context) may not pickle.
    state = {k: self.__dict__[k] for k in _EXHAUSTED_STATE if k in self.__dict__}
    return (_rebuild_exhausted, (self._client_type, self.args, state))


def _rebuild_exhausted(client_type: type, args: Tuple[Any, ...], state: Dict[str, Any], client: Optional[BaseException] = None) -> BaseException:
    cls = exhausted_type(client_type)
    obj: BaseException = cls.__new__(cls, *args)
    BaseException.__init__(obj, *args)
    if isinstance(client, OSError):
        obj.errno, obj.strerror = client.errno, client.strerror  # type: ignore[attr-defined]
    obj.__dict__.update(state)
    return obj


def redact_url(url: str, extra: Optional[Sequence[str]] = None) -> str:
    """The URL as events, errors and logs show it: ``user:password@`` becomes
    ``REDACTED:REDACTED@`` and the values of the query keys in ``REDACTED_QUERY_KEYS``
    (OpenTelemetry's ``url.full`` list and the common credential names: ``token``,
    ``access_token``, ``api_key``, ``X-Amz-Signature``...), matched without regard to
    case, and of the ``extra`` keys, become ``REDACTED``."""
    return _native.redact_url(url, None if extra is None else list(extra))


REDACTED_QUERY_KEYS: Tuple[str, ...] = tuple(_native.redacted_query_keys())


# OpenTelemetry's trace API when opentelemetry-api is installed, False when it is not,
# None until a first resend asks: a request that succeeds at once never imports it.
_otel_trace: Any = None
_CLIENT_KIND: Any = None

# The resend count of the attempt in flight (0: a first attempt), for the span the
# client's own instrumentation makes per attempt (retryrs.otel.resend_count_hook and
# ResendCountSpanProcessor read it).
RESEND_COUNT: "contextvars.ContextVar[int]" = contextvars.ContextVar("retryrs.http.resend_count", default=0)


def mark_resend(attempt: int) -> None:
    """For a resend (attempt 2 on): sets OpenTelemetry's ``http.request.resend_count``
    (``attempt - 1``) on the current span if it is an HTTP client span (``SpanKind.CLIENT``:
    an instrumentation's span around the whole request, as requests' makes), never on
    the application's own span. The per-attempt spans of an instrumented transport get it
    from ``RESEND_COUNT`` (see retryrs.otel). Needs opentelemetry-api, else nothing."""
    global _otel_trace, _CLIENT_KIND
    if attempt < 2:
        return
    if _otel_trace is None:
        try:
            from opentelemetry import trace
        except ImportError:
            _otel_trace = False
        else:
            _otel_trace = trace
            _CLIENT_KIND = trace.SpanKind.CLIENT
    if _otel_trace:
        span = _otel_trace.get_current_span()
        if getattr(span, "kind", None) == _CLIENT_KIND:
            span.set_attribute("http.request.resend_count", attempt - 1)
