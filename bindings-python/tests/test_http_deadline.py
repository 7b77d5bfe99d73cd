"""Issue 21 against real loopback servers: the deadline bounds the whole call, attempts
included, in every Python HTTP helper and a plain call_async; a retried body is never
read whole; a POST whose connect times out is retried.

The servers hang (accept and never answer, or stall a body) rather than sleep for a
tuned time, so the bounds below hold on a loaded machine: each is the spec's own
"deadline + 250 ms"."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Callable, List

import httpx
import pytest
import requests

import retryrs
from retryrs import RetryExhausted, Retrier
from retryrs.http import AsyncRetryingTransport, RequestFailed, RetryingAdapter, RetryingTransport

SLACK = 0.25  # the spec's bound past the deadline


class RawServer:
    """A loopback TCP server on an ephemeral port; ``handler(conn, n)`` serves the n-th
    connection (from 1) on its own thread. Closing it closes every connection."""

    def __init__(self, handler: Callable[[socket.socket, int], None]) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self.handler = handler
        self.conns: List[socket.socket] = []
        self.count = 0
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            self.count += 1
            threading.Thread(target=self._serve, args=(conn, self.count), daemon=True).start()

    def _serve(self, conn: socket.socket, n: int) -> None:
        try:
            self.handler(conn, n)
        except OSError:
            pass  # the client went away

    def close(self) -> None:
        self.closed.set()
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass

    def __enter__(self) -> "RawServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def silent(conn: socket.socket, n: int) -> None:
    """Accepts and never answers (the connection stays open until the server closes)."""
    read_request(conn)


def stalled_503(conn: socket.socket, n: int) -> None:
    """A 503 whose body starts and then stalls for good."""
    read_request(conn)
    conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 1000000\r\n\r\n" + b"x" * 100)


# When the last client call started: the bound is the call's, not the client's set-up
# (an event loop, httpx's SSL context), which a loaded machine can make slow.
CALL_STARTED = [0.0]


def calling() -> None:
    CALL_STARTED[0] = time.monotonic()


# The four clients, each making one GET through its helper with a given retrier, as a
# user would (the client's own default timeout, if it has one, left as it is).
def via_requests(r: Retrier, url: str) -> int:
    s = requests.Session()
    s.mount("http://", RetryingAdapter(r))
    calling()
    return s.get(url).status_code


def via_httpx(r: Retrier, url: str) -> int:
    with httpx.Client(transport=RetryingTransport(r)) as c:
        calling()
        return c.get(url).status_code


def via_httpx_async(r: Retrier, url: str) -> int:
    async def go() -> int:
        async with httpx.AsyncClient(transport=AsyncRetryingTransport(r)) as c:
            calling()
            return (await c.get(url)).status_code

    return asyncio.run(go())


def via_call_async(r: Retrier, url: str) -> int:
    """A plain call_async around hand-written asyncio I/O: no timeout of its own."""
    port = int(url.rsplit(":", 1)[1].strip("/"))

    async def attempt() -> int:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            line = await reader.readline()
            return int(line.split()[1])
        finally:
            writer.close()

    async def go() -> int:
        calling()
        return await r.call_async(attempt)

    return asyncio.run(go())


HELPERS = [via_requests, via_httpx, via_httpx_async]
ALL = HELPERS + [via_call_async]


@pytest.mark.parametrize("client", ALL, ids=lambda f: f.__name__[4:])
def test_a_server_that_never_answers_ends_the_call_at_the_deadline(client):
    events = []
    r = Retrier(deadline=2, on_event=events.append)
    with RawServer(silent) as server:
        with pytest.raises(RetryExhausted) as e:
            client(r, server.url)
        took = time.monotonic() - CALL_STARTED[0]
    assert took < 2 + SLACK, f"took {took:.2f} s"
    assert e.value.reason == "deadline"
    assert [ev.kind for ev in events][-1] == "exhausted"


@pytest.mark.parametrize("client", HELPERS, ids=lambda f: f.__name__[4:])
def test_a_503_whose_body_stalls_is_bounded_by_attempt_timeout_and_the_deadline(client):
    events = []
    # Waits without jitter (0.1 s, 0.2 s, then 0.4 s, which no longer fits): attempt 3
    # ends at its 0.5 s bound by about 1.8 s and the call ends there on the deadline with
    # its 503. A jittered wait could start a last attempt with a few ms left, cut while it
    # connects: a ConnectTimeout, not the 503 this test reads.
    r = Retrier(attempt_timeout=0.5, deadline=2, initial_delay=0.1, jitter="none", on_event=events.append)
    with RawServer(stalled_503) as server:
        if client is via_requests:
            # requests without stream=True reads the body before handing the response
            # over, so inside the attempt: a stalled body is a timed-out attempt.
            with pytest.raises(requests.ReadTimeout) as e:
                client(r, server.url)
            assert isinstance(e.value, RetryExhausted) and e.value.reason == "deadline"
            bound = 2.0
        else:
            # httpx hands the last 503 over at its headers (out of retries on a status),
            # whole: reading its stalled body fails after attempt_timeout of silence.
            with pytest.raises(httpx.ReadTimeout) as e:
                client(r, server.url)
            assert not isinstance(e.value, RetryExhausted)
            bound = 2.0 + 0.5
        took = time.monotonic() - CALL_STARTED[0]
        hits = server.count
    assert took < bound + SLACK, f"took {took:.2f} s"
    assert hits >= 2, "the 503 was retried"
    assert events[-1].kind == "exhausted"


# A client in its own process, so its peak RSS is its own: a warm-up request first (so
# imports, pools and buffers are counted in the baseline), then the retried call.
RSS_CLIENT = r"""
import asyncio, resource, sys
import httpx, requests
import retryrs
from retryrs.http import AsyncRetryingTransport, RetryingAdapter, RetryingTransport

url, which = sys.argv[1], sys.argv[2]
r = retryrs.Retrier(initial_delay=0, deadline=60)

def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

if which == "requests":
    s = requests.Session()
    s.mount("http://", RetryingAdapter(r))
    get = lambda u: s.get(u).status_code
elif which == "httpx":
    c = httpx.Client(transport=RetryingTransport(r))
    get = lambda u: c.get(u).status_code
else:
    async def aget(u):
        async with httpx.AsyncClient(transport=AsyncRetryingTransport(r)) as c:
            return (await c.get(u)).status_code
    get = lambda u: asyncio.run(aget(u))

assert get(url + "warm") == 200
base = peak_mb()
status = get(url + "big")
print(status, peak_mb() - base)
"""

BIG = 200 * 1024 * 1024


def big_then_ok(conn: socket.socket, n: int) -> None:
    """/warm: 200. /big: a 503 with a 200 MiB body the first two times, then 200."""
    request = read_request(conn)
    if b" /warm " in request or big_then_ok.served >= 2:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        return
    big_then_ok.served += 1
    conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: %d\r\n\r\n" % BIG)
    chunk = b"\0" * 65536
    for _ in range(BIG // len(chunk)):
        conn.sendall(chunk)  # fails once the client closes the connection


@pytest.mark.parametrize("which", ["requests", "httpx", "httpx-async"])
def test_a_retried_200_mib_body_is_not_read_whole(which):
    big_then_ok.served = 0
    with RawServer(big_then_ok) as server:
        out = subprocess.run(
            [sys.executable, "-c", RSS_CLIENT, server.url, which], capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        served = big_then_ok.served
    assert out.returncode == 0, out.stderr
    status, grew = out.stdout.split()
    assert status == "200"
    assert served == 2, "both 503s were retried"
    assert float(grew) < 32, f"peak RSS grew by {float(grew):.1f} MB"


class FullQueue:
    """A listener whose accept queue is full (it never accepts, and the queue was filled
    first): a new connection's SYN is dropped, so connecting times out."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(0)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/pay"
        self.fillers: List[socket.socket] = []
        for _ in range(64):
            c = socket.socket()
            c.settimeout(0.3)
            try:
                c.connect(("127.0.0.1", self.port))
            except (socket.timeout, OSError):
                c.close()
                return
            self.fillers.append(c)
        raise RuntimeError("the accept queue never filled")

    def close(self) -> None:
        for c in self.fillers:
            c.close()
        self.sock.close()


def post_requests(r: Retrier, url: str) -> int:
    s = requests.Session()
    s.mount("http://", RetryingAdapter(r))
    return s.post(url, data=b"pay").status_code


def post_httpx(r: Retrier, url: str) -> int:
    with httpx.Client(transport=RetryingTransport(r)) as c:
        return c.post(url, content=b"pay").status_code


def post_httpx_async(r: Retrier, url: str) -> int:
    async def go() -> int:
        async with httpx.AsyncClient(transport=AsyncRetryingTransport(r)) as c:
            return (await c.post(url, content=b"pay")).status_code

    return asyncio.run(go())


@pytest.mark.parametrize("post", [post_requests, post_httpx, post_httpx_async], ids=lambda f: f.__name__[5:])
def test_a_post_whose_connect_times_out_is_retried(post):
    # The request never left: a connect timeout is transient for every method.
    queue = FullQueue()
    events = []
    r = Retrier(attempt_timeout=0.3, deadline=3, initial_delay=0, max_attempts=3, on_event=events.append)
    try:
        t0 = time.monotonic()
        with pytest.raises(RetryExhausted) as e:
            post(r, queue.url)
        took = time.monotonic() - t0
    finally:
        queue.close()
    assert e.value.attempts == 3 and e.value.reason == "attempts"
    failures = [ev.error for ev in events if ev.kind == "attempt_failed"]
    assert len(failures) == 3
    assert all(isinstance(f, RequestFailed) and f.connect and f.method == "POST" for f in failures)
    assert took < 3 + SLACK


class Stuck(httpx.AsyncBaseTransport):
    """An inner transport that reports the traces httpcore would (``events``) and then
    never answers: the attempt ends only at its bound, by the helper's own cut (the
    client's connect timeout is not there to fire first, as on a loaded machine where
    the loop wakes after both)."""

    def __init__(self, events: List[str]) -> None:
        self.events = events
        self.sent = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        trace = request.extensions.get("trace")
        for name in self.events:
            await trace(name, {})
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")


@pytest.mark.parametrize(
    "events, attempts, error",
    [
        (["connection.connect_tcp.started"], 3, httpx.ConnectTimeout),  # still connecting: never sent
        (["connection.connect_tcp.started", "connection.connect_tcp.complete", "connection.start_tls.started"], 3, httpx.ConnectTimeout),
        (["connection.connect_tcp.started", "connection.connect_tcp.complete", "http11.send_request_headers.started"], 1, httpx.ReadTimeout),
        (["http2.send_request_headers.started"], 1, httpx.ReadTimeout),
        ([], 1, httpx.ReadTimeout),  # a transport without traces: unknown, so maybe sent
    ],
)
def test_an_async_post_cut_at_its_bound_is_retried_only_when_the_traces_say_it_never_left(events, attempts, error):
    inner = Stuck(events)
    seen = []

    async def callers_trace(name, info):
        seen.append(name)

    async def go():
        r = Retrier(attempt_timeout=0.05, deadline=5, initial_delay=0, max_attempts=3, retry_on=OSError)
        async with httpx.AsyncClient(transport=AsyncRetryingTransport(r, transport=inner)) as c:
            request = c.build_request("POST", "http://127.0.0.1:9/pay", content=b"pay", extensions={"trace": callers_trace})
            try:
                await c.send(request)
            finally:
                assert request.extensions["trace"] is callers_trace, "the caller's callback is put back"

    with pytest.raises(Exception) as e:
        asyncio.run(go())
    assert inner.sent == attempts
    assert seen == events * attempts, "the caller's own trace callback saw every event"
    chain = []
    x = e.value
    while x is not None:
        chain.append(type(x))
        x = x.__cause__
    assert error in chain, chain


class StuckResolver:
    """An ``aiohttp.abc.AbstractResolver`` that never answers: aiohttp's connector is
    still getting a connection when the helper cuts the attempt at its bound (no client
    timeout is set to fire first). ``asked`` counts the attempts."""

    def __init__(self) -> None:
        self.asked = 0

    async def resolve(self, host, port=0, family=socket.AF_INET):
        self.asked += 1
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def close(self) -> None:
        pass


@pytest.mark.parametrize("fallback", [False, True], ids=["middleware", "fallback"])
@pytest.mark.parametrize("stuck", ["connecting", "sent"])
def test_an_aiohttp_post_cut_at_its_bound_is_retried_only_while_still_connecting(fallback, stuck):
    import aiohttp

    from retryrs.http import RetryMiddleware

    resolver = StuckResolver()

    async def go(url: str) -> None:
        r = Retrier(attempt_timeout=0.05, deadline=5, initial_delay=0, max_attempts=3, retry_on=OSError)
        mw = RetryMiddleware(r)
        no_timeouts = aiohttp.ClientTimeout(total=None, connect=None, sock_connect=None, sock_read=None)
        connector = aiohttp.TCPConnector(resolver=resolver)
        async with aiohttp.ClientSession(connector=connector, timeout=no_timeouts, middlewares=() if fallback else (mw,)) as s:
            if fallback:
                await mw.request(s, "POST", url, data=b"pay")
            else:
                await s.post(url, data=b"pay")

    with RawServer(silent) as server:
        # A name goes through the resolver (which never answers); the address does not.
        url = f"http://stuck.invalid:{server.port}/pay" if stuck == "connecting" else server.url + "pay"
        with pytest.raises(aiohttp.ServerTimeoutError) as e:
            asyncio.run(go(url))
        sent = server.count
    if stuck == "connecting":  # never sent: a connect timeout, retried for a POST
        # (aiohttp shares one lookup in flight between the attempts.)
        assert resolver.asked >= 1 and sent == 0
        assert isinstance(e.value, aiohttp.ConnectionTimeoutError) and isinstance(e.value, RetryExhausted)
        assert e.value.attempts == 3
    else:  # sent and unanswered: maybe processed, so a POST is not sent again
        assert resolver.asked == 0 and sent == 1
        assert not isinstance(e.value, aiohttp.ConnectionTimeoutError) and not isinstance(e.value, RetryExhausted)
    causes = []
    x: "BaseException | None" = e.value
    while x is not None:
        causes.append(type(x))
        x = x.__cause__
    assert retryrs.AttemptTimeout in causes, causes  # the helper's cut, not aiohttp's


def capturing(seen):
    """An HTTPAdapter.send that records the timeout it was given and answers 200."""

    def send(self, request, **kw):
        seen.append(kw["timeout"])
        resp = requests.Response()
        resp.status_code = 200
        return resp

    return send


@pytest.mark.parametrize(
    "given, want",
    [
        (None, (1.0, 1.0)),  # no timeout of the caller's: the time left
        (30, (1.0, 1.0)),  # the smaller wins
        (0.25, (0.25, 0.25)),
        ((0.25, None), (0.25, 1.0)),  # (connect, read), each bounded
        ((30, 0.5), (1.0, 0.5)),
    ],
)
def test_requests_each_attempt_timeout_is_the_smaller_of_the_callers_and_the_time_left(monkeypatch, given, want):
    seen = []
    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", capturing(seen))
    adapter = RetryingAdapter(Retrier(deadline=None, attempt_timeout=1))
    request = requests.Request("GET", "http://127.0.0.1:9/").prepare()
    adapter.send(request, timeout=given)
    (connect, read), = seen
    # The time left is read a moment after the attempt started: a hair under 1 s.
    assert connect == pytest.approx(want[0], abs=0.05) and read == pytest.approx(want[1], abs=0.05)
    assert connect <= want[0] and read <= want[1]


def test_requests_a_urllib3_timeout_is_bounded_too(monkeypatch):
    from urllib3.util.timeout import Timeout

    seen = []
    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", capturing(seen))
    RetryingAdapter(Retrier(deadline=0.5)).send(requests.Request("GET", "http://127.0.0.1:9/").prepare(), timeout=Timeout(connect=0.1, read=9))
    (t,) = seen
    assert t.connect_timeout == 0.1 and 0.4 < t.read_timeout <= 0.5


def test_httpx_each_attempt_timeout_extension_is_the_smaller_of_the_callers_and_the_time_left():
    seen = []

    class Capture(httpx.BaseTransport):
        def handle_request(self, request):
            seen.append(dict(request.extensions["timeout"]))
            return httpx.Response(200)

    with httpx.Client(transport=RetryingTransport(Retrier(deadline=1), transport=Capture()), timeout=httpx.Timeout(30, connect=0.25)) as c:
        c.get("http://127.0.0.1:9/")
    (t,) = seen
    assert t["connect"] == 0.25
    assert all(0.9 < t[k] <= 1.0 for k in ("read", "write", "pool"))
