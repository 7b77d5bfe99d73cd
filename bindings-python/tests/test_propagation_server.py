"""The server helpers (retryrs.propagation.ASGIMiddleware, WSGIMiddleware) and the
ambient context they set: real loopback servers, real clients, a hanging dependency."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time

import httpx
import pytest
import requests

import retryrs
from retryrs import propagation
from retryrs.http import AsyncRetryingTransport, RetryingAdapter
from propagation_servers import ASGIServer, Hanging, Recording, WSGIServerThread, get


def _respond(status: int, body: bytes):
    start = {"type": "http.response.start", "status": status, "headers": [(b"content-length", str(len(body)).encode())]}
    return start, {"type": "http.response.body", "body": body}


def asgi_calling(dependency: str, retrier_kw=None, seen=None):
    """An ASGI app that GETs ``dependency`` through AsyncRetryingTransport and a retrier
    (the default one unless ``retrier_kw``), answering 200 or 504 with what happened."""

    async def app(scope, receive, send):
        retrier = retryrs.Retrier(**(retrier_kw or {}))
        async with httpx.AsyncClient(transport=AsyncRetryingTransport(retrier)) as client:
            try:
                resp = await client.get(dependency)
                status, body = 200, str(resp.status_code).encode()
            except Exception as e:
                status, body = 504, f"{type(e).__name__}: {getattr(e, 'reason', '')}".encode()
        if seen is not None:
            seen.append(body)
        for message in _respond(status, body):
            await send(message)

    return app


def wsgi_calling(dependency: str, retrier_kw=None):
    """The WSGI twin of ``asgi_calling``, through requests and RetryingAdapter."""

    def app(environ, start_response):
        session = requests.Session()
        session.mount("http://", RetryingAdapter(retryrs.Retrier(**(retrier_kw or {}))))
        try:
            status, body = "200 OK", str(session.get(dependency).status_code).encode()
        except Exception as e:
            status, body = "504 Gateway Timeout", f"{type(e).__name__}: {getattr(e, 'reason', '')}".encode()
        start_response(status, [("Content-Length", str(len(body)))])
        return [body]

    return app


def serve(kind, app, **kw):
    if kind == "asgi":
        return ASGIServer(propagation.ASGIMiddleware(app, **kw))
    return WSGIServerThread(propagation.WSGIMiddleware(app, **kw))


calling = {"asgi": asgi_calling, "wsgi": wsgi_calling}


@pytest.mark.parametrize("kind", ["asgi", "wsgi"])
def test_a_300_ms_budget_bounds_a_default_retrier_calling_a_hanging_dependency(kind):
    with Hanging() as dependency, serve(kind, calling[kind](dependency.url)) as server:
        status, _, body, took = get(server.url, {"Retryrs-Context": "t=300"})
    # The retrier's own deadline is 15 s: without the context this would hang past the
    # client's 10 s timeout.
    assert status == 504 and b"deadline" in body, body
    assert took < 0.300 + 0.250, took
    assert dependency.accepted >= 1, "the dependency was called"


@pytest.mark.parametrize("kind", ["asgi", "wsgi"])
def test_a_request_that_is_a_retry_makes_exactly_one_inner_attempt_and_passes_r_on(kind):
    fast = {"initial_delay": 0.001, "jitter": "none"}
    with Recording([503]) as dependency, serve(kind, calling[kind](dependency.url, fast)) as server:
        status, _, body, _ = get(server.url, {"Retryrs-Context": "t=5000, a=2"})
        assert (status, body, dependency.hits) == (200, b"503", 1)
        [sent] = dependency.contexts()
        assert sent is not None and sent.endswith("a=1, r=?1"), sent
        # The same server, a first attempt: the inner retrier makes its five.
        get(server.url, {"Retryrs-Context": "t=5000, a=1"})
        assert dependency.hits == 1 + 5


@pytest.mark.parametrize("header", ["grpc-previous-rpc-attempts: 1", "Retryrs-Context: t=900, a=1, r=?1"])
def test_every_retry_mark_applies_the_downward_rule(header):
    name, _, value = header.partition(": ")
    attempts = []

    def app(environ, start_response):
        def fail():
            attempts.append(retryrs.current_attempt().number)
            raise ConnectionError

        try:
            retryrs.Retrier(initial_delay=0.001).call(fail)
        except retryrs.RetryExhausted:
            pass
        start_response("200 OK", [("Content-Length", "0")])
        return [b""]

    with serve("wsgi", app) as server:
        get(server.url, {name: value})
    assert attempts == [1]


def test_envoy_headers_are_read_only_on_a_listener_marked_internal():
    seen = []

    def app(environ, start_response):
        ctx = propagation.current()
        seen.append((ctx.remaining, ctx.is_retry))
        start_response("200 OK", [("Content-Length", "0")])
        return [b""]

    envoy = {"x-envoy-expected-rq-timeout-ms": "400", "x-envoy-attempt-count": "2"}
    with serve("wsgi", app) as public, serve("wsgi", app, trust_mesh=True) as internal:
        get(public.url, envoy)
        get(internal.url, envoy)
    (public_left, public_retry), (internal_left, internal_retry) = seen
    assert public_left is None and not public_retry
    assert 0 < internal_left <= 0.4 and internal_retry


@pytest.mark.parametrize("kind", ["asgi", "wsgi"])
def test_a_request_with_nothing_left_is_refused_unrun_and_refusals_are_capped(kind):
    ran = []

    def wsgi(environ, start_response):
        ran.append(1)
        start_response("200 OK", [("Content-Length", "2")])
        return [b"ok"]

    async def asgi(scope, receive, send):
        ran.append(1)
        for m in _respond(200, b"ok"):
            await send(m)

    with serve(kind, asgi if kind == "asgi" else wsgi) as server:
        status, headers, _, _ = get(server.url, {"Retryrs-Context": "t=0, a=1"})
        assert (status, headers.get("retryrs-pushback"), ran) == (504, "-1", [])
        # A second in the same 10 s window: 1 refusal allowed of 2 requests (20%).
        status, _, _, _ = get(server.url, {"grpc-timeout": "0m"})
        assert (status, ran) == (200, [1])
        stats = server_stats(server)
    assert (stats["requests"], stats["refused"], stats["capped"]) == (2, 1, 1)


def server_stats(server):
    app = server.app if isinstance(server, ASGIServer) else server._server.get_app()
    return app.stats()


def test_observe_only_counts_what_it_would_refuse_and_runs_the_handler():
    ran = []

    def app(environ, start_response):
        ran.append(propagation.current().expired)
        start_response("200 OK", [("Content-Length", "0")])
        return [b""]

    with serve("wsgi", app, observe_only=True) as server:
        status, _, _, _ = get(server.url, {"Retryrs-Context": "t=0"})
        stats = server_stats(server)
    assert (status, ran, stats["observed"], stats["refused"]) == (200, [True], 1, 0)


def test_a_budget_above_the_servers_limit_is_clamped_and_a_malformed_one_ignored():
    seen = []

    def app(environ, start_response):
        seen.append(propagation.current().remaining)
        start_response("200 OK", [("Content-Length", "0")])
        return [b""]

    with serve("wsgi", app, limit=10.0) as server:
        assert get(server.url, {"Retryrs-Context": "t=3600000"})[0] == 200
        assert get(server.url, {"Retryrs-Context": "t=12345678901"})[0] == 200
        assert get(server.url, {"grpc-timeout": "123456789m"})[0] == 200
        stats = server_stats(server)
    assert 9.0 < seen[0] <= 10.0
    assert seen[1:] == [None, None], "malformed values are ignored, never fatal"
    assert (stats["clamped"], stats["malformed"]) == (1, 2)


def test_the_client_going_away_cancels_the_calls_made_for_it():
    ended = []
    started = threading.Event()

    async def app(scope, receive, send):
        def fail():
            started.set()
            raise ConnectionError

        t0 = time.monotonic()
        try:
            await retryrs.Retrier(initial_delay=5, jitter="none", retry_on=ConnectionError).call_async(_async(fail))
        except BaseException as e:
            ended.append((type(e).__name__, time.monotonic() - t0, propagation.current().cancelled))
            raise

    with ASGIServer(propagation.ASGIMiddleware(app)) as server:
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nRetryrs-Context: t=20000\r\n\r\n")
        assert started.wait(5)
        sock.close()  # the client gives up during the 5 s wait
        deadline = time.monotonic() + 5
        while not ended and time.monotonic() < deadline:
            time.sleep(0.01)
    assert ended, "the call never ended"
    name, took, cancelled = ended[0]
    assert (name, cancelled) == ("RetryCancelled", True)
    assert took < 2.0, took


def _async(fn):
    async def run():
        return fn()

    return run


def test_the_app_reads_its_body_through_the_watched_receive():
    got = []

    async def app(scope, receive, send):
        message = await receive()
        got.append(message["body"])
        for m in _respond(200, b"ok"):
            await send(m)

    with ASGIServer(propagation.ASGIMiddleware(app)) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
            assert sock.recv(100).startswith(b"HTTP/1.1 200")
        assert not server.errors
    assert got == [b"hello"]


def test_a_streamed_wsgi_body_is_produced_inside_the_context():
    def app(environ, start_response):
        start_response("200 OK", [])

        def body():
            ctx = propagation.current()
            yield b"retry" if ctx is not None and ctx.is_retry else b"none"

        return body()

    with serve("wsgi", app) as server:
        assert get(server.url, {"Retryrs-Context": "t=900, a=3"})[2] == b"retry"


def test_other_asgi_scopes_pass_through():
    seen = []

    async def app(scope, receive, send):
        seen.append((scope["type"], propagation.current()))

    asyncio.run(propagation.ASGIMiddleware(app)({"type": "lifespan"}, None, None))
    assert seen == [("lifespan", None)]


def test_the_context_by_hand_for_other_frameworks():
    attempts = []

    def fail():
        attempts.append(retryrs.current_attempt().remaining)
        raise ConnectionError

    assert propagation.current() is None
    with propagation.context({"Retryrs-Context": "t=300, a=2"}) as ctx:
        assert propagation.current() is ctx and ctx.is_retry and 0.29 < ctx.remaining <= 0.3
        with pytest.raises(retryrs.RetryExhausted):
            retryrs.Retrier().call(fail)
    assert propagation.current() is None
    assert len(attempts) == 1 and attempts[0] <= 0.3 - 0.005
    # A budget of the caller's own, combined with the headers' (the smaller wins).
    with propagation.context([("grpc-timeout", "5S")], timeout=0.2) as ctx:
        assert 0.15 < ctx.remaining <= 0.2 and not ctx.is_retry
        assert retryrs.Retrier().call(retryrs.current_attempt).remaining <= 0.2 - 0.005


def test_tasks_started_inside_see_the_context_and_a_hedge_is_not_sent_under_a_retry():
    launched = []

    async def slow():
        launched.append(retryrs.current_attempt().number)
        await asyncio.sleep(0.05)
        return "done"

    hedging = retryrs.Retrier.from_policy(
        retryrs.load_policies({"policies": {"h": {"hedge": {"max_attempts": 3, "delay": "10ms", "guard": False}}}})["h"]
    )

    async def main(is_retry):
        with propagation.context(is_retry=is_retry):
            return await asyncio.get_running_loop().create_task(hedging.call_async(slow))

    assert asyncio.run(main(False)) == "done"
    assert sorted(launched) == [1, 2, 3], "without the downward rule it hedges"
    launched.clear()
    assert asyncio.run(main(True)) == "done"
    assert launched == [1]


@pytest.mark.parametrize(
    "kw, error, words",
    [
        ({"limit": -1}, ValueError, "limit"),
        ({"limit": "15"}, ValueError, "limit"),
        ({"trust_mesh": "yes"}, TypeError, "trust_mesh"),
        ({"observe_only": 1}, TypeError, "observe_only"),
    ],
)
def test_bad_options_are_named(kw, error, words):
    with pytest.raises(error, match=words):
        propagation.WSGIMiddleware(lambda e, s: [], **kw)
    with pytest.raises(error, match=words):
        propagation.ASGIMiddleware(lambda *a: None, **kw)


def test_bad_context_arguments_are_named():
    with pytest.raises(ValueError, match="timeout"):
        with propagation.context(timeout=-1):
            pass
    with pytest.raises(TypeError, match="is_retry"):
        with propagation.context(is_retry="no"):  # type: ignore[arg-type]
            pass
    for bad in ([("grpc-timeout", 5)], 5, ["grpc-timeout: 5S"]):
        with pytest.raises(TypeError, match="headers"):
            with propagation.context(bad):  # type: ignore[arg-type]
                pass
    with pytest.raises(ValueError, match="timeout"):
        propagation.Context(float("nan"))


def test_a_task_the_request_left_running_no_longer_obeys_its_context_once_it_is_over():
    # A refresher started lazily by the first request (a retry, 200 ms left) calls after
    # the response went out: under its retrier's own policy (3 attempts), not the finished
    # request's one attempt, and current() finds nothing there.
    r = retryrs.Retrier(max_attempts=3, initial_delay=0.001, jitter="none")
    later = []

    async def refresh():
        await asyncio.sleep(0.05)
        n = []

        async def flaky():
            n.append(1)
            if len(n) < 2:
                raise ConnectionError("flaky")
            return "refreshed"

        later.append((await r.call_async(flaky), len(n), propagation.current()))

    tasks = []

    async def app(scope, receive, send):
        tasks.append(asyncio.ensure_future(refresh()))
        for message in _respond(200, b"ok"):
            await send(message)

    with serve("asgi", app) as server:
        status, _, body, _ = get(server.url, {"Retryrs-Context": "t=200, a=2"})
        deadline = time.monotonic() + 5
        while not later and time.monotonic() < deadline:
            time.sleep(0.01)
    assert status == 200
    assert later == [("refreshed", 2, None)]


def test_a_context_block_ends_its_context_at_exit():
    with propagation.context({"Retryrs-Context": "t=5000, a=2"}) as ctx:
        assert propagation.current() is ctx and not ctx.ended
    assert ctx.ended and propagation.current() is None


def test_a_block_inside_another_context_narrows_it_and_never_widens_it():
    # A library that sets a context of its own inside a request (a longer timeout, no
    # retry mark) must not give its calls more time than the caller waits, nor retries
    # the caller's retry forbids, nor hide the client's going away.
    with propagation.context({"Retryrs-Context": "t=300, a=2"}) as outer:
        with propagation.context(timeout=30.0) as inner:
            assert propagation.current() is inner
            assert inner.is_retry and 0.25 < inner.remaining <= 0.3 and not outer.ended
            assert retryrs.Retrier().call(retryrs.current_attempt).remaining <= 0.3 - 0.005
        assert propagation.current() is outer and inner.ended and not outer.ended
        # A shorter budget inside still wins; the retry mark stays.
        with propagation.context(timeout=0.1) as inner:
            assert inner.is_retry and 0.05 < inner.remaining <= 0.1
    # The outer request's cancellation reaches the inner block's token, not the reverse.
    with propagation.context(timeout=5.0) as outer:
        with propagation.context() as inner:
            assert inner.remaining is not None and 4.5 < inner.remaining <= 5.0 and not inner.is_retry
            inner.cancel_token.cancel()
            assert not outer.cancelled
        with propagation.context() as inner:
            outer.cancel_token.cancel()
            assert inner.cancelled
            with pytest.raises(retryrs.RetryCancelled):
                retryrs.Retrier().call(lambda: 1)
    # Outside any context a block is as given (no deadline unless one is given).
    with propagation.context() as alone:
        assert alone.remaining is None and not alone.is_retry


def test_work_a_nested_block_left_running_falls_back_to_the_request():
    # A task started in a nested block and still running after it, inside the request:
    # the block's context is over, the request's is not, so the task obeys the request
    # (its retry mark: one attempt), not no context at all (five).
    async def work(go, attempts):
        await go.wait()

        def fail():
            attempts.append(1)
            raise ValueError

        with pytest.raises(retryrs.RetryError):
            retryrs.Retrier(retry_on=ValueError, initial_delay=0.001, max_delay=0.001).call(fail)
        return propagation.current()

    async def main():
        attempts: list = []
        with propagation.context(timeout=0.5, is_retry=True) as request:
            go = asyncio.Event()
            with propagation.context(timeout=0.2) as block:
                task = asyncio.ensure_future(work(go, attempts))
                await asyncio.sleep(0)
            go.set()
            seen = await task
            assert block.ended and seen is request and len(attempts) == 1
        # After the request too: no context, the retrier's own five attempts.
        go = asyncio.Event()
        with propagation.context(is_retry=True):
            with propagation.context():
                task = asyncio.ensure_future(work(go, attempts))
                await asyncio.sleep(0)
        go.set()
        assert await task is None and len(attempts) == 1 + 5

    asyncio.run(main())


def test_a_bad_timeout_is_refused_whatever_the_other_budgets():
    for headers, outer in [(None, None), ({"grpc-timeout": "500m"}, None), (None, 5.0), (None, 0.5)]:
        for bad in [True, float("inf"), -1.0, "1"]:
            with contextlib.ExitStack() as stack:
                if outer is not None:
                    stack.enter_context(propagation.context(timeout=outer))
                with pytest.raises((ValueError, TypeError), match="timeout"):
                    stack.enter_context(propagation.context(headers, timeout=bad))


def test_a_receive_the_application_gave_up_on_loses_no_message():
    # Polling receive() with a timeout cancels it: the body it did not get is the next
    # receive()'s (it was dropped, and the application then hung).
    async def app(scope, receive, send):
        try:
            await asyncio.wait_for(receive(), timeout=0.01)
            first = b"early"
        except asyncio.TimeoutError:
            first = b"nothing yet"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        for message in _respond(200, first + b"; " + body):
            await send(message)

    async def main():
        messages: "asyncio.Queue[dict]" = asyncio.Queue()
        sent = []

        async def send(message):
            sent.append(message)

        served = asyncio.ensure_future(propagation.ASGIMiddleware(app)({"type": "http", "headers": []}, messages.get, send))
        await asyncio.sleep(0.1)  # the body comes after the application's poll gave up
        await messages.put({"type": "http.request", "body": b"hello", "more_body": False})
        await asyncio.wait_for(served, 5)
        return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")

    assert asyncio.run(main()) == b"nothing yet; hello"


def _asgi_run(app, messages):
    """Serves one request through ASGIMiddleware, the server's receive giving `messages`
    in turn (its body, then a disconnect); the application sends nothing back."""

    async def main():
        queue: "asyncio.Queue[dict]" = asyncio.Queue()
        for message in messages:
            queue.put_nowait(message)

        async def send(message):
            pass

        await asyncio.wait_for(propagation.ASGIMiddleware(app)({"type": "http", "headers": []}, queue.get, send), 5)

    asyncio.run(main())


def test_a_client_gone_while_a_small_body_is_unread_cancels_the_context():
    # The application works before it reads its body (a call to a dependency first); the
    # client sent its body in three chunks and went away. The watcher reads a small body
    # ahead, so it sees the disconnect (before: it held chunk 1 and waited for the
    # application, and the calls ran on for a client that was gone).
    seen = {}

    async def app(scope, receive, send):
        ctx = propagation.current()
        for _ in range(200):
            if ctx.cancelled:
                break
            await asyncio.sleep(0.01)
        seen["cancelled"] = ctx.cancelled
        body = b""
        while True:
            message = await receive()
            if message["type"] != "http.request":
                seen["then"] = message["type"]
                break
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        seen["body"] = body

    chunks = [{"type": "http.request", "body": b"a" * 1000, "more_body": True},
              {"type": "http.request", "body": b"b" * 1000, "more_body": True},
              {"type": "http.request", "body": b"c", "more_body": False}]
    _asgi_run(app, chunks + [{"type": "http.disconnect"}])
    # Nothing lost: the application still reads the whole body, in order.
    assert seen == {"cancelled": True, "body": b"a" * 1000 + b"b" * 1000 + b"c"}


def test_a_large_body_still_flows_at_the_applications_pace():
    # Past the read-ahead (64 KiB) the watcher waits for the application: a body of 40
    # chunks of 16 KiB is not all taken from the server while the application reads none.
    taken = []

    async def app(scope, receive, send):
        await asyncio.sleep(0.1)
        taken.append(len(pending_messages[0]._queue))  # what the server still holds
        total = 0
        while True:
            message = await receive()
            total += len(message.get("body", b""))
            if not message.get("more_body"):
                break
        taken.append(total)

    pending_messages: list = []

    async def main():
        messages: "asyncio.Queue[dict]" = asyncio.Queue()
        pending_messages.append(messages)
        for i in range(40):
            messages.put_nowait({"type": "http.request", "body": b"x" * 16384, "more_body": i < 39})

        async def send(message):
            pass

        await asyncio.wait_for(propagation.ASGIMiddleware(app)({"type": "http", "headers": []}, messages.get, send), 5)

    asyncio.run(main())
    still_with_the_server, read = taken
    assert still_with_the_server >= 40 - 5 and read == 40 * 16384
