"""Across services: the deadline and the retry state travel with the request, so a chain
of services never multiplies retries (docs/propagation.md).

A server helper reads the inbound request's ``Retryrs-Context`` (and, for interop,
``grpc-timeout``, ``grpc-previous-rpc-attempts``, and on a listener marked internal
Envoy's ``x-envoy-expected-rq-timeout-ms`` / ``x-envoy-attempt-count``) and makes it the
ambient :class:`Context` while the application serves the request::

    from retryrs.propagation import ASGIMiddleware, WSGIMiddleware

    app = ASGIMiddleware(app)          # Starlette, FastAPI, Quart... any ASGI app
    wsgi_app = WSGIMiddleware(wsgi_app)  # Flask, Django... any WSGI app

Every retrier call made inside it (sync, asyncio, hedged, the loop forms, the HTTP
helpers) obeys it: its deadline is the smaller of its own and the caller's minus a small
margin (2% of the time left, 5 to 250 ms), and under a request that was itself a retry
it makes one attempt and sends no hedge (the downward rule). A request that arrives with
nothing left is answered at once, 504 with ``Retryrs-Pushback: -1``, without running the
application (the upward rule; at most 20% of a 10 s window's requests are refused so,
and ``observe_only=True`` only counts them). The HTTP helpers (``retryrs.http``) send
``Retryrs-Context: t=<ms left>, a=<attempt>`` with each attempt, and honour a server's
pushback. For another framework, ``with retryrs.propagation.context(headers): ...``.

Every reading, limit and rule is the core's (``_native``); this module only moves headers
in and out of the frameworks' shapes and keeps the context for the request's duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from typing import Any, Awaitable, Callable, Dict, Iterable, Iterator, List, Mapping, MutableMapping, Optional, Sequence, Tuple, Union
from urllib.parse import urlsplit

from . import _native

from ._native import Context

__all__ = [
    "ASGIMiddleware",
    "WSGIMiddleware",
    "Context",
    "Outbound",
    "context",
    "current",
]

_AMBIENT: "contextvars.ContextVar[Optional[Context]]" = _native._AMBIENT

Headers = Union[Mapping[str, str], Iterable[Tuple[str, str]]]

# The upward rule's answer (the core's status and header).
_REFUSAL_STATUS: int = _native._REFUSAL_STATUS
_REFUSAL_HEADER: Tuple[str, str] = _native._REFUSAL_PUSHBACK
_REFUSAL_BODY = b"retryrs: the caller's deadline had passed when the request arrived\n"


def current() -> Optional[Context]:
    """The ambient context of the request being served (None outside one, and in work
    the request started and left running once it is over)."""
    ctx = _AMBIENT.get()
    # A block's context that ended while its request goes on: the request's.
    return None if ctx is None else ctx._in_force()


def _pairs(headers: Optional[Headers]) -> List[Tuple[str, str]]:
    """``headers`` (a mapping, a client's or framework's headers object, or (name, value)
    pairs; bytes decoded as latin-1, as HTTP/1.1 carries them) as str pairs."""
    if headers is None:
        return []
    items = headers.items() if hasattr(headers, "items") else headers
    try:
        pairs = list(items)
    except TypeError:
        raise TypeError(f"headers must be a mapping or (name, value) pairs, got {headers!r}") from None
    out = []
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"headers must be a mapping or (name, value) pairs, got the item {pair!r}")
        name, value = pair
        if isinstance(name, bytes):
            name = name.decode("latin-1")
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"headers must hold str (or bytes) names and values, got {name!r}: {value!r}")
        out.append((name, value))
    return out


class _Server:
    """What both server helpers hold: the core's gate (the server's limit, whether the
    listener is internal, observe-only, the cap on refusals) and its counts."""

    _COUNTS = ("requests", "refused", "observed", "capped", "retries", "clamped", "malformed")

    def __init__(self, limit: Optional[float], trust_mesh: bool, observe_only: bool) -> None:
        for name, flag in (("trust_mesh", trust_mesh), ("observe_only", observe_only)):
            if not isinstance(flag, bool):
                raise TypeError(f"{type(self).__name__}: {name} must be True or False, got {flag!r}")
        if isinstance(limit, bool) or not (limit is None or isinstance(limit, (int, float))):
            raise ValueError(f"{type(self).__name__}: limit must be seconds >= 0 or None, got {limit!r}")
        self._gate = _native.Gate(limit=limit, trust_mesh=trust_mesh, observe_only=observe_only)
        self._counts = dict.fromkeys(self._COUNTS, 0)
        self._lock = threading.Lock()

    def receive(self, headers: List[Tuple[str, str]]) -> Tuple[Context, bool]:
        """The request's context, and whether to refuse it (the upward rule)."""
        got = self._gate.receive(headers)
        with self._lock:
            counts = self._counts
            counts["requests"] += 1
            if got.upward != "run":
                counts[_COUNTED[got.upward]] += 1
            counts["retries"] += got.is_retry
            counts["clamped"] += got.clamped
            counts["malformed"] += got.malformed
        # Its budget, from now on the clock the calls run on (virtual under retryrs.testing).
        return Context(got.budget, is_retry=got.is_retry), got.upward == "refuse"

    def stats(self) -> Dict[str, int]:
        """Counts since the helper was made: ``requests``; ``refused`` (answered 504
        unrun), ``observed`` (would have been, under ``observe_only``), ``capped`` (not
        refused: the cap was reached); ``retries`` (requests that were retries, the
        downward rule applied); ``clamped`` (a budget above the server's limit);
        ``malformed`` (header values ignored)."""
        with self._lock:
            return dict(self._counts)


_COUNTED = {"refuse": "refused", "observed": "observed", "capped": "capped"}


class ASGIMiddleware(_Server):
    """Wraps an ASGI application: each HTTP request's propagation headers become the
    ambient :class:`Context` (a context variable, so the tasks the application starts see
    it too) for the request's duration, and the context's ``cancel_token`` fires when
    the client disconnects (``http.disconnect``), ending the retrier calls made for it.

    ``limit``: the longest budget a request may bring, seconds (a longer one is clamped
    to it; None: no clamp); ``trust_mesh``: the listener is internal, behind a mesh that
    strips ``x-envoy-*`` from outside requests (only then are Envoy's headers read);
    ``observe_only``: the upward rule counts what it would refuse and runs the
    application anyway. Other scopes (lifespan, websocket) pass through."""

    def __init__(self, app: Callable[..., Awaitable[None]], *, limit: Optional[float] = 15.0, trust_mesh: bool = False, observe_only: bool = False) -> None:
        super().__init__(limit, trust_mesh, observe_only)
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        ctx, refuse = self.receive(_pairs(scope.get("headers")))
        if refuse:
            await _refuse_asgi(send)
            return
        watch = _Disconnect(receive, ctx.cancel_token)
        token = _AMBIENT.set(ctx)
        try:
            await self.app(scope, watch.receive, send)
        finally:
            # Tasks the application started and left running keep the variable: ended,
            # their calls no longer obey it.
            ctx._end()
            _AMBIENT.reset(token)
            watch.close()


async def _refuse_asgi(send: Callable[[Any], Awaitable[None]]) -> None:
    name, value = _REFUSAL_HEADER
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1")),
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(_REFUSAL_BODY)).encode("ascii")),
    ]
    await send({"type": "http.response.start", "status": _REFUSAL_STATUS, "headers": headers})
    await send({"type": "http.response.body", "body": _REFUSAL_BODY})


# The request body the disconnect watcher may read ahead of the application: enough
# for the bodies most requests carry, so a client that goes away while the application
# works and has not read its body yet is seen; a larger upload still flows at the
# application's pace (the watcher waits for room).
_READ_AHEAD = 64 * 1024
# What a message counts for against it besides its body (so empty chunks are bounded too).
_MESSAGE_COST = 64


def _cost(message: Any) -> int:
    body = message.get("body") if isinstance(message, Mapping) else None
    return _MESSAGE_COST + (len(body) if isinstance(body, (bytes, bytearray, memoryview)) else 0)


class _Disconnect:
    """The application's ``receive``, watched for ``http.disconnect``: a watcher task is
    the one reader of the server's ``receive`` and hands each message on, reading ahead
    of the application by at most ``_READ_AHEAD`` bytes of body (a larger body flows at
    the application's pace); once the body is read it keeps listening, so a client that
    goes away while the application works (a retry loop that never calls ``receive``)
    cancels the context. Without a running asyncio loop (trio) the disconnect is seen
    when the application itself calls ``receive``."""

    __slots__ = ("_receive", "_token", "_queue", "_task", "_gone", "_kept", "_held", "_room")

    def __init__(self, receive: Callable[[], Awaitable[Any]], token: Any) -> None:
        self._receive = receive
        self._token = token
        self._gone: Optional[Any] = None
        # A message taken for a receive() that was cancelled meanwhile: the next one's.
        self._kept: List[Any] = []
        self._queue: Optional["asyncio.Queue[Any]"] = None
        self._task: Optional["asyncio.Task[None]"] = None
        # What the messages read ahead and not yet handed over cost (_cost), and the
        # watcher's wait for it to fall under _READ_AHEAD.
        self._held = 0
        self._room: Optional[asyncio.Event] = None
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        if _library() == "asyncio":
            self._queue = asyncio.Queue()
            self._room = asyncio.Event()
            self._task = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        assert self._queue is not None and self._room is not None
        while True:
            while self._held >= _READ_AHEAD:
                self._room.clear()
                await self._room.wait()
            message = await self._receive()
            self._seen(message)
            self._held += _cost(message)
            self._queue.put_nowait(message)
            if self._gone is not None:
                return

    def _handed(self, message: Any) -> Any:
        """``message``, handed to the application: its cost no longer held."""
        self._held -= _cost(message)
        if self._room is not None and self._held < _READ_AHEAD:
            self._room.set()
        return message

    def _seen(self, message: Any) -> None:
        if isinstance(message, Mapping) and message.get("type") == "http.disconnect":
            self._gone = message
            self._token.cancel()

    async def receive(self) -> Any:
        if self._queue is None:
            if self._gone is not None:
                return self._gone
            message = await self._receive()
            self._seen(message)
            return message
        if self._kept:
            return self._handed(self._kept.pop())
        if self._gone is not None and self._queue.empty():
            return self._gone
        task = self._task
        getter = asyncio.ensure_future(self._queue.get())
        assert task is not None
        try:
            done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            # The application gave up waiting (a timeout, a cancel scope): the message
            # the getter may already hold is the next receive()'s, not lost.
            if getter.done() and not getter.cancelled():
                self._kept.append(getter.result())
            else:
                getter.cancel()
            raise
        if getter in done:
            return self._handed(getter.result())
        getter.cancel()
        # The watcher ended without a message for us: it failed (its error is the
        # server's receive's, raised here as the application would have seen it).
        task.result()
        if self._gone is not None:
            return self._gone
        raise RuntimeError("retryrs.propagation: the request's receive ended without a message")

    def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()


def _library() -> str:
    from ._runtime import library

    try:
        return library()
    except RuntimeError:
        return "other"


class WSGIMiddleware(_Server):
    """Wraps a WSGI application: each request's propagation headers become the ambient
    :class:`Context` while the application runs and while its response is iterated (a
    streamed body is produced under it too). Options as :class:`ASGIMiddleware`'s (WSGI
    has no disconnect to watch)."""

    def __init__(self, app: Callable[..., Iterable[bytes]], *, limit: Optional[float] = 15.0, trust_mesh: bool = False, observe_only: bool = False) -> None:
        super().__init__(limit, trust_mesh, observe_only)
        self.app = app

    def __call__(self, environ: Dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        ctx, refuse = self.receive(_environ_headers(environ))
        if refuse:
            name, value = _REFUSAL_HEADER
            start_response(
                f"{_REFUSAL_STATUS} Gateway Timeout",
                [(name, value), ("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(_REFUSAL_BODY)))],
            )
            return [_REFUSAL_BODY]
        run = contextvars.copy_context()
        run.run(_AMBIENT.set, ctx)
        try:
            result = run.run(self.app, environ, start_response)
        except BaseException:
            ctx._end()
            raise
        if isinstance(result, (list, tuple)):
            ctx._end()
            return result  # produced already: nothing runs while it is sent
        return _Iterated(run, result, ctx)


def _environ_headers(environ: Mapping[str, Any]) -> List[Tuple[str, str]]:
    """The request headers of a WSGI environ (``HTTP_GRPC_TIMEOUT`` -> ``grpc-timeout``)."""
    return [(k[5:].replace("_", "-"), v) for k, v in environ.items() if k.startswith("HTTP_") and isinstance(v, str)]


class _Iterated:
    """A WSGI response iterated inside the request's context (and closed there)."""

    def __init__(self, run: contextvars.Context, result: Iterable[bytes], ctx: Context) -> None:
        self._run = run
        self._result = result
        self._ctx = ctx
        self._it: Optional[Iterator[bytes]] = None

    def __iter__(self) -> "_Iterated":
        return self

    def __next__(self) -> bytes:
        if self._it is None:
            self._it = self._run.run(iter, self._result)
        return self._run.run(next, self._it)

    def close(self) -> None:
        try:
            close = getattr(self._result, "close", None)
            if close is not None:
                self._run.run(close)
        finally:
            self._ctx._end()


@contextlib.contextmanager
def context(
    headers: Optional[Headers] = None,
    *,
    timeout: Optional[float] = None,
    is_retry: bool = False,
    limit: Optional[float] = 15.0,
    trust_mesh: bool = False,
) -> Iterator[Context]:
    """The ambient context, set by hand for the block (a framework without an ASGI or
    WSGI entry, a message consumer, a test)::

        with retryrs.propagation.context(request.headers):
            handle(request)

    ``headers``: the inbound request's (read as the server helpers read them, clamped to
    ``limit``; Envoy's only with ``trust_mesh=True``); ``timeout``: a budget of the
    caller's own, seconds from now; ``is_retry``: the request is a retry. The smallest
    budget given wins and any retry mark makes it a retry. Inside another context (the
    request's, an outer block) the block narrows it and never widens it, as a context
    derived from another does in Go or gRPC: the outer deadline holds if it is sooner,
    its retry mark stays, and its cancellation (the client went away) reaches the
    block's calls. No upward rule here: the block runs (``Context.expired`` says whether
    anything was left)."""
    budget, retry, _, _ = _native.read_inbound(_pairs(headers), limit, trust_mesh)
    if not isinstance(is_retry, bool):
        raise TypeError(f"is_retry must be True or False, got {is_retry!r}")
    if timeout is not None:
        # The Context's own check of a timeout (a ValueError naming it), before it is
        # compared: whether a bad one is refused must not depend on the other budgets.
        Context(timeout)
        if budget is None or timeout < budget:
            budget = timeout
    outer = current()
    # Inside another context the core narrows it (Context's _parent); its cancellation
    # (the client went away) reaches this block's calls through a child token.
    ctx = Context(
        budget,
        is_retry=retry or is_retry,
        cancel_token=None if outer is None else outer.cancel_token.child(),
        _parent=outer,
    )
    token = _AMBIENT.set(ctx)
    try:
        yield ctx
    finally:
        ctx._end()
        _AMBIENT.reset(token)


class Outbound:
    """What an HTTP helper sends with each attempt (its ``propagation=`` option):
    ``Retryrs-Context: t=<ms left>, a=<attempt>`` (``, r=?1`` under a request that was a
    retry), recomputed at each send from the attempt's time left; nothing for an
    attempt with less than a millisecond left.

    ``hosts``: the only hosts that get the headers (``"api.example.com"`` exactly,
    ``"*.example.com"`` its subdomains; ports ignored); None: every host. ``mesh``:
    ``"envoy"`` also sends ``x-envoy-upstream-rq-timeout-ms`` and
    ``x-envoy-max-retries: 0``, ``"linkerd"`` ``l5d-retry-limit: 0`` (the sidecar then
    does not retry a second time); ``kind``: ``"grpc"`` adds ``grpc-timeout``,
    ``"connect"`` ``connect-timeout-ms``."""

    __slots__ = ("_allow", "hosts", "mesh", "kind", "names")

    def __init__(self, hosts: Optional[Sequence[str]] = None, *, mesh: str = "none", kind: str = "http") -> None:
        if isinstance(hosts, (str, bytes)):
            raise TypeError(f"hosts must be a list of host names such as ['api.example.com'], got the string {hosts!r}")
        if hosts is not None:
            try:
                hosts = tuple(hosts)
            except TypeError:
                raise TypeError(f"hosts must be a list of host names such as ['api.example.com'], got {hosts!r}") from None
            for host in hosts:
                if not isinstance(host, str):
                    raise TypeError(f"hosts must hold host names as str, got {host!r} ({type(host).__name__})")
        self.hosts = hosts
        self._allow = _native.Allowlist(None if hosts is None else list(hosts))
        _native.outbound_headers(None, 1, False, mesh, kind)  # the core checks mesh and kind now
        self.mesh = mesh
        self.kind = kind
        # Every header name this mode sends (asked of the core with a bounded attempt):
        # what a request to a host outside ``hosts`` must not carry, even when a client
        # copied it from the hop before (a redirect the client follows by itself).
        self.names = tuple(name for name, _ in _native.outbound_headers(1.0, 1, True, mesh, kind))

    def allows(self, url: str) -> bool:
        """Whether ``url``'s host may get the headers."""
        return self.hosts is None or bool(self._allow.allows(urlsplit(url).netloc.rpartition("@")[2]))

    def headers(self, url: str, attempt: Optional[_native.AttemptInfo] = None) -> List[Tuple[str, str]]:
        """The headers for one attempt to ``url`` (``attempt``: ``retryrs.current_attempt()``,
        looked up when not given; outside a retrier call, attempt 1 with no bound); [] for
        a host outside ``hosts``."""
        if not self.allows(url):
            return []
        return self.pairs(attempt)

    def pairs(self, attempt: Optional[_native.AttemptInfo] = None) -> List[Tuple[str, str]]:
        """The headers for one attempt, to a host already allowed."""
        info = _native.current_attempt() if attempt is None else attempt
        ctx = current()
        is_retry = ctx is not None and ctx.is_retry
        if info is None:
            return _native.outbound_headers(None, 1, is_retry, self.mesh, self.kind)
        return _native.outbound_headers(info.remaining, info.number, is_retry, self.mesh, self.kind)

    def __repr__(self) -> str:
        return f"Outbound(hosts={self.hosts!r}, mesh={self.mesh!r}, kind={self.kind!r})"


def outbound(option: Union[None, bool, Outbound], helper: str) -> Optional[Outbound]:
    """A helper's ``propagation=`` option: None or True, the defaults (every host, plain
    HTTP); False, nothing sent; an :class:`Outbound`."""
    if option is None or option is True:
        return Outbound()
    if option is False:
        return None
    if isinstance(option, Outbound):
        return option
    raise TypeError(f"{helper}: propagation must be True, False or a retryrs.propagation.Outbound, got {option!r}")
