"""Hedged calls in the Python host (issue 26): ``call_async``, the async decorator, httpx's
``AsyncRetryingTransport`` and aiohttp's ``RetryMiddleware`` against a local server
(port 0) where the first request of each pair stalls for 2 s and the second answers in
10 ms. Timing bounds are generous upper bounds (the 2 s stall is what they tell apart);
the times are printed."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Dict, List, Optional, Tuple

import pytest

import retryrs
from retryrs import CancelToken, Retrier, RetryCancelled, RetryExhausted, load_policies

STALL = 2.0


def hedged(
    delay: str = "50ms", max_attempts: int = 2, budget: Optional[Dict[str, Any]] = None, guard: bool = True, **policy: Any
) -> Any:
    hedge: Dict[str, Any] = {"max_attempts": max_attempts, "delay": delay}
    if not guard:
        # Without a budget the default guard lets about 10% of the calls hedge (plus 10):
        # a test that needs every call hedged turns it off.
        hedge["guard"] = False
    doc: Dict[str, Any] = {"policies": {"reads": {"hedge": hedge, **policy}}}
    if budget is not None:
        doc["policies"]["reads"]["budget"] = "b"
        doc["budgets"] = {"b": budget}
    return load_policies(doc)["reads"]


# A quota that cannot pay for one hedge (a hedge costs what a retry does).
EXHAUSTED = {"kind": "quota", "capacity": 1, "retry_cost": 5}


class PairServer:
    """HTTP/1.1 on 127.0.0.1, port 0. Request 1, 3, 5... stalls ``stall`` seconds (or until
    the client goes away: a disconnect, counted); request 2, 4... answers after 10 ms."""

    def __init__(self, stall: float = STALL, together: bool = False) -> None:
        self.stall = stall
        # together: the first of a pair answers when the second arrives, both at once.
        self.together = together
        self._second = asyncio.Event()
        self.requests: List[Tuple[str, Dict[str, str]]] = []
        self.disconnects = 0
        self.disconnected = asyncio.Event()
        self.port = 0
        self._server: Any = None

    async def __aenter__(self) -> "PairServer":
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._server.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/item?token=abc"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method = lines[0].split(" ", 1)[0]
                headers = {k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
                length = int(headers.get("content-length", "0"))
                if length:
                    await reader.readexactly(length)
                n = len(self.requests)
                self.requests.append((method, headers))
                if self.together:
                    if n % 2 == 0:
                        self._second.clear()
                        await asyncio.wait_for(self._second.wait(), 5)
                    else:
                        self._second.set()
                    body = b"both"
                elif n % 2 == 0:
                    try:
                        got = await asyncio.wait_for(reader.read(1), self.stall)
                    except asyncio.TimeoutError:
                        got = None
                    except ConnectionError:
                        got = b""
                    if got == b"":
                        self.disconnects += 1
                        self.disconnected.set()
                        return
                    body = b"slow"
                else:
                    await asyncio.sleep(0.01)
                    body = b"fast"
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: text/plain\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        finally:
            try:
                writer.close()
            except RuntimeError:
                # The test's loop closed with this handler still suspended (a stalled
                # request the test no longer waits for): the transport went with it.
                pass


async def raw_get(port: int) -> bytes:
    """One GET over a plain asyncio connection (closed however the attempt ends)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"GET /item HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(int(ln.split(b":")[1]) for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length"))
        return await reader.readexactly(length)
    finally:
        writer.close()


async def assert_loser_disconnected(server: PairServer) -> None:
    # Well before the stall would end on its own: the server saw the client go away.
    await asyncio.wait_for(server.disconnected.wait(), STALL * 0.75)
    assert server.disconnects == 1


# -- plain call_async ---------------------------------------------------------------


def test_call_async_hedges_past_a_stalled_attempt() -> None:
    events: List[Any] = []
    numbers: List[Tuple[int, Optional[float]]] = []
    r = Retrier.from_policy(hedged(deadline="10s"), on_event=events.append)

    async def attempt(port: int) -> bytes:
        current = retryrs.current_attempt()
        assert current is not None
        numbers.append((current.number, current.remaining))
        return await raw_get(port)

    async def main() -> None:
        async with PairServer() as server:
            t0 = time.monotonic()
            body = await r.call_async(attempt, server.port)
            took = time.monotonic() - t0
            print(f"\nhedged call_async returned in {took * 1000:.0f} ms")
            assert body == b"fast"
            assert took < 1.0, took
            await assert_loser_disconnected(server)
            assert len(server.requests) == 2

    asyncio.run(main())
    assert [n for n, _ in numbers] == [1, 2]
    assert all(left is not None and 9 < left <= 10 for _, left in numbers), numbers
    kinds = [(e.kind, e.attempt) for e in events]
    assert kinds == [("hedge", 2), ("success", 2)], kinds
    assert events[0].delay is not None and round(events[0].delay * 1000) >= 50


def test_call_async_with_the_budget_exhausted_sends_one_and_waits_for_it() -> None:
    events: List[Any] = []
    r = Retrier.from_policy(hedged(budget=EXHAUSTED), on_event=events.append)

    async def main() -> None:
        async with PairServer() as server:
            t0 = time.monotonic()
            body = await r.call_async(raw_get, server.port)
            took = time.monotonic() - t0
            print(f"\nbudget exhausted: call_async returned in {took * 1000:.0f} ms")
            assert body == b"slow", "the one attempt's answer, after its stall"
            assert took >= STALL * 0.9
            assert len(server.requests) == 1 and server.disconnects == 0

    asyncio.run(main())
    assert [e.kind for e in events] == ["success"]


def test_the_decorator_hedges_an_async_def() -> None:
    r = Retrier.from_policy(hedged())

    @r
    async def fetch(port: int) -> bytes:
        return await raw_get(port)

    async def main() -> None:
        async with PairServer() as server:
            t0 = time.monotonic()
            assert await fetch(server.port) == b"fast"
            assert time.monotonic() - t0 < 1.0
            assert len(server.requests) == 2

    asyncio.run(main())
    assert fetch.__name__ == "fetch" and fetch.retrier is r  # type: ignore[attr-defined]


def test_cancelling_the_call_cancels_every_attempt_promptly() -> None:
    events: List[Any] = []
    r = Retrier.from_policy(hedged(delay="20ms", max_attempts=3), on_event=events.append)
    cancelled: List[int] = []

    async def stalls() -> None:
        n = retryrs.current_attempt().number  # type: ignore[union-attr]
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(n)
            raise

    async def main() -> None:
        task = asyncio.ensure_future(r.call_async(stalls))
        await asyncio.sleep(0.2)  # all three launched
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.05)  # the attempts' cancellations run
        assert time.monotonic() - t0 < 1.0

    asyncio.run(main())
    assert sorted(cancelled) == [1, 2, 3]
    assert [e.kind for e in events] == ["hedge", "hedge", "cancelled"]


def test_a_cancel_token_ends_the_call_with_retry_cancelled() -> None:
    token = CancelToken()
    r = Retrier.from_policy(hedged(delay="20ms")).with_cancel(token)
    cancelled: List[int] = []

    async def stalls() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(retryrs.current_attempt().number)  # type: ignore[union-attr]
            raise

    async def main() -> None:
        asyncio.get_running_loop().call_later(0.1, token.cancel)
        with pytest.raises(RetryCancelled) as info:
            await r.call_async(stalls)
        assert info.value.attempts == 2
        await asyncio.sleep(0.05)

    asyncio.run(main())
    assert sorted(cancelled) == [1, 2]


def test_a_fatal_failure_ends_the_call_with_the_original_error_and_a_non_fatal_one_hedges_at_once() -> None:
    r = Retrier.from_policy(hedged(delay="5s", max_attempts=3), retry_on=ConnectionError)
    started: List[float] = []
    boom = ValueError("fatal")

    async def attempt() -> str:
        n = retryrs.current_attempt().number  # type: ignore[union-attr]
        started.append(time.monotonic())
        if n == 1:
            raise ConnectionError("non-fatal")
        if n == 2:
            raise boom
        return "never"

    async def main() -> None:
        with pytest.raises(ValueError) as info:
            await r.call_async(attempt)
        assert info.value is boom

    asyncio.run(main())
    assert len(started) == 2 and started[1] - started[0] < 1.0, "the next hedge went out at once, not after 5 s"


def test_the_losers_late_results_are_never_returned() -> None:
    r = Retrier.from_policy(hedged(delay="10ms", max_attempts=3))
    finished: List[int] = []

    async def attempt() -> int:
        n = retryrs.current_attempt().number  # type: ignore[union-attr]
        try:
            await asyncio.sleep({1: 0.5, 2: 0.03, 3: 0.5}[n])
        except asyncio.CancelledError:
            # A loser that refuses to stop and returns a value: dropped all the same.
            await asyncio.sleep(0.05)
            finished.append(n)
            return -n
        return n

    async def main() -> None:
        assert await r.call_async(attempt) == 2
        await asyncio.sleep(0.2)

    asyncio.run(main())
    assert sorted(finished) == [1, 3]


def test_a_sync_function_in_a_hedged_call_is_refused() -> None:
    r = Retrier.from_policy(hedged(), retry_on=Exception)
    calls: List[int] = []

    def sync() -> int:
        calls.append(1)
        return 1

    with pytest.raises(TypeError, match="not async"):
        asyncio.run(r.call_async(sync))  # type: ignore[arg-type]
    assert calls == [1], "refused at once, never hedged"


def test_under_trio_a_hedged_call_cancels_its_losers() -> None:
    trio = pytest.importorskip("trio")
    events: List[Any] = []
    r = Retrier.from_policy(hedged(delay="50ms", max_attempts=3, deadline="10s"), on_event=events.append)
    cancelled: List[int] = []
    bounds: List[Tuple[int, Optional[float]]] = []

    async def attempt() -> int:
        current = retryrs.current_attempt()
        assert current is not None
        bounds.append((current.number, current.remaining))
        try:
            await trio.sleep(5 if current.number == 1 else 0.01)
        except trio.Cancelled:
            cancelled.append(current.number)
            raise
        return current.number

    async def main() -> None:
        t0 = trio.current_time()
        assert await r.call_async(attempt) == 2
        took = trio.current_time() - t0
        print(f"\ntrio hedged call returned in {took * 1000:.0f} ms")
        assert took < 1.0

    trio.run(main)
    assert cancelled == [1]
    assert [n for n, _ in bounds] == [1, 2] and all(b is not None and 9 < b <= 10 for _, b in bounds)
    assert [(e.kind, e.attempt) for e in events] == [("hedge", 2), ("success", 2)]


def test_under_trio_a_cancel_scope_cancels_every_attempt_and_a_fatal_failure_ends_the_call() -> None:
    trio = pytest.importorskip("trio")
    events: List[Any] = []
    r = Retrier.from_policy(hedged(delay="20ms", max_attempts=3), on_event=events.append, retry_on=ConnectionError)
    cancelled: List[int] = []

    async def stalls() -> None:
        n = retryrs.current_attempt().number  # type: ignore[union-attr]
        try:
            await trio.sleep(60)
        except trio.Cancelled:
            cancelled.append(n)
            raise

    boom = ValueError("fatal")

    async def fatal_second() -> None:
        n = retryrs.current_attempt().number  # type: ignore[union-attr]
        if n == 2:
            raise boom
        await trio.sleep(60)

    async def main() -> None:
        with trio.move_on_after(0.2) as scope:
            await r.call_async(stalls)
        assert scope.cancelled_caught
        with pytest.raises(ValueError) as info:
            await r.call_async(fatal_second)
        assert info.value is boom
        token = CancelToken()

        async def fire() -> None:
            await trio.sleep(0.1)
            token.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fire)
            with pytest.raises(RetryCancelled):
                await r.with_cancel(token).call_async(stalls)

    trio.run(main)
    assert sorted(cancelled[:3]) == [1, 2, 3] and sorted(cancelled[3:]) == [1, 2, 3], cancelled
    assert [e.kind for e in events][:3] == ["hedge", "hedge", "cancelled"]


# -- httpx -------------------------------------------------------------------------


def test_httpx_hedges_a_get_and_closes_the_losers_connection() -> None:
    httpx = pytest.importorskip("httpx")
    from retryrs.http import AsyncRetryingTransport

    events: List[Any] = []
    r = Retrier.from_policy(hedged(), on_event=events.append)

    async def main() -> None:
        async with PairServer() as server:
            async with httpx.AsyncClient(transport=AsyncRetryingTransport(r)) as client:
                t0 = time.monotonic()
                resp = await client.get(server.url)
                took = time.monotonic() - t0
                print(f"\nhttpx hedged GET returned in {took * 1000:.0f} ms")
                assert resp.status_code == 200 and resp.text == "fast"
                assert took < 1.0, took
                await assert_loser_disconnected(server)
                assert len(server.requests) == 2

    asyncio.run(main())
    assert [(e.kind, e.attempt) for e in events] == [("hedge", 2), ("success", 2)]


def test_httpx_with_the_budget_exhausted_sends_one_request() -> None:
    httpx = pytest.importorskip("httpx")
    from retryrs.http import AsyncRetryingTransport

    r = Retrier.from_policy(hedged(budget=EXHAUSTED))

    async def main() -> None:
        async with PairServer() as server:
            async with httpx.AsyncClient(transport=AsyncRetryingTransport(r)) as client:
                t0 = time.monotonic()
                resp = await client.get(server.url)
                print(f"\nhttpx, budget exhausted: {(time.monotonic() - t0) * 1000:.0f} ms")
                assert resp.text == "slow" and time.monotonic() - t0 >= STALL * 0.9
                assert len(server.requests) == 1

    asyncio.run(main())


def test_httpx_hedges_only_requests_that_may_be_sent_twice() -> None:
    httpx = pytest.importorskip("httpx")
    from retryrs.http import AsyncRetryingTransport

    r = Retrier.from_policy(hedged())

    async def main() -> None:
        async with PairServer(stall=0.3) as server:
            async with httpx.AsyncClient(transport=AsyncRetryingTransport(r)) as client:
                # A POST is never sent twice side by side: it waits for its one request.
                resp = await client.post(server.url, content=b"order")
                assert resp.text == "slow" and [m for m, _ in server.requests] == ["POST"]
                # With an Idempotency-Key it may be: hedged (the second of a pair is fast).
                server.requests.clear()
                resp = await client.post(server.url, content=b"order", headers={"Idempotency-Key": "k-1"})
                assert resp.text == "fast" and [m for m, _ in server.requests] == ["POST", "POST"]
                # One request's max_attempts: unhedged.
                server.requests.clear()
                resp = await client.get(server.url, extensions={"retryrs": {"max_attempts": 1}})
                assert resp.text == "slow" and len(server.requests) == 1

    asyncio.run(main())


def test_the_blocking_helpers_refuse_a_hedging_retrier() -> None:
    httpx = pytest.importorskip("httpx")
    from retryrs.http import RetryingTransport

    r = Retrier.from_policy(hedged())
    with pytest.raises(ValueError) as info:
        RetryingTransport(r)
    message = str(info.value)
    assert "reads: this policy hedges" in message and "cannot be abandoned in a blocking call" in message
    assert "AsyncRetryingTransport" in message
    assert httpx is not None
    requests = pytest.importorskip("requests")
    from retryrs.http import RetryingAdapter

    with pytest.raises(ValueError, match="RetryingAdapter: reads: this policy hedges"):
        RetryingAdapter(r)
    assert requests is not None


# -- aiohttp -----------------------------------------------------------------------


def test_aiohttp_hedges_a_get_and_closes_the_losers_connection() -> None:
    aiohttp = pytest.importorskip("aiohttp")
    from retryrs.http import RetryMiddleware

    events: List[Any] = []
    r = Retrier.from_policy(hedged(), on_event=events.append)

    async def main() -> None:
        async with PairServer() as server:
            async with aiohttp.ClientSession(middlewares=(RetryMiddleware(r),)) as session:
                t0 = time.monotonic()
                async with session.get(server.url) as resp:
                    body = await resp.text()
                took = time.monotonic() - t0
                print(f"\naiohttp hedged GET returned in {took * 1000:.0f} ms")
                assert resp.status == 200 and body == "fast"
                assert took < 1.0, took
                await assert_loser_disconnected(server)
                assert len(server.requests) == 2

    asyncio.run(main())
    assert [(e.kind, e.attempt) for e in events] == [("hedge", 2), ("success", 2)]


def test_aiohttp_with_the_budget_exhausted_sends_one_request() -> None:
    aiohttp = pytest.importorskip("aiohttp")
    from retryrs.http import RetryMiddleware

    r = Retrier.from_policy(hedged(budget=EXHAUSTED))

    async def main() -> None:
        async with PairServer() as server:
            async with aiohttp.ClientSession(middlewares=(RetryMiddleware(r),)) as session:
                t0 = time.monotonic()
                async with session.get(server.url) as resp:
                    assert await resp.text() == "slow"
                print(f"\naiohttp, budget exhausted: {(time.monotonic() - t0) * 1000:.0f} ms")
                assert time.monotonic() - t0 >= STALL * 0.9
                assert len(server.requests) == 1

    asyncio.run(main())


def test_aiohttp_hedges_only_requests_that_may_be_sent_twice() -> None:
    aiohttp = pytest.importorskip("aiohttp")
    from retryrs.http import RetryMiddleware

    r = Retrier.from_policy(hedged())

    async def main() -> None:
        async with PairServer(stall=0.3) as server:
            mw = RetryMiddleware(r)
            async with aiohttp.ClientSession(middlewares=(mw,)) as session:
                async with session.post(server.url, data=b"order") as resp:
                    assert await resp.text() == "slow"
                assert [m for m, _ in server.requests] == ["POST"]
                server.requests.clear()
                async with session.post(server.url, data=b"order", headers={"Idempotency-Key": "k-1"}) as resp:
                    assert await resp.text() == "fast"
                assert [m for m, _ in server.requests] == ["POST", "POST"]
            # The fallback for aiohttp before 3.12 hedges alike.
            server.requests.clear()
            async with aiohttp.ClientSession() as plain:
                resp = await mw.request(plain, "GET", server.url)
                assert await resp.text() == "fast" and len(server.requests) == 2
                resp.release()

    asyncio.run(main())


def test_under_virtual_time_the_hedging_delay_passes_at_once() -> None:
    events: List[Any] = []
    r = Retrier.from_policy(hedged(delay="30s", deadline="100s"), on_event=events.append)

    async def attempt() -> int:
        n = retryrs.current_attempt().number  # type: ignore[union-attr]
        if n == 1:
            await asyncio.Event().wait()  # never answers
        return n

    async def main() -> int:
        with retryrs.testing.virtual_time():
            t0 = time.monotonic()
            won = await r.call_async(attempt)
            assert time.monotonic() - t0 < 5.0, "30 s of virtual time took no real time"
            return won

    assert asyncio.run(main()) == 2
    assert [(e.kind, e.attempt, round(e.elapsed)) for e in events] == [("hedge", 2, 30), ("success", 2, 30)]


def test_a_loser_done_at_the_same_moment_is_handed_to_discard_never_returned() -> None:
    """Two attempts that end in the same turn of the loop: one wins, the other's value is
    never returned, and the HTTP helpers' ``discard`` (which closes a loser's response)
    gets it; a loser cancelled in flight is simply cancelled."""
    from retryrs import _hedge

    r = Retrier.from_policy(hedged(delay="0ms", max_attempts=3))
    discarded: List[Any] = []
    closed: List[str] = []

    async def main() -> Any:
        go = asyncio.Event()

        async def attempt() -> Any:
            n = retryrs.current_attempt().number  # type: ignore[union-attr]
            if n == 3:
                await asyncio.sleep(60)
            await go.wait()
            return f"response {n}"

        async def close(outcome: Any) -> None:
            closed.append(outcome)

        def discard(outcome: Any) -> Any:
            discarded.append(outcome)
            return close(outcome)

        asyncio.get_running_loop().call_later(0.05, go.set)
        won = await _hedge.run(r, attempt, (), {}, discard)
        await asyncio.sleep(0.05)
        return won

    won = asyncio.run(main())
    assert won == "response 1"
    assert discarded == ["response 2"] and closed == ["response 2"]


def test_httpx_zero_delay_hedging_leaves_no_connection_busy() -> None:
    """Zero delay: both requests go out at once and the server answers both together; the
    loser (cancelled, or done and discarded) must not keep a pooled connection busy."""
    httpx = pytest.importorskip("httpx")
    from retryrs.http import AsyncRetryingTransport

    r = Retrier.from_policy(hedged(delay="0ms", guard=False))
    transport = AsyncRetryingTransport(r)

    async def main() -> None:
        async with PairServer(together=True) as server:
            async with httpx.AsyncClient(transport=transport) as client:
                for _ in range(20):
                    assert (await client.get(server.url)).status_code == 200
                await asyncio.sleep(0.2)
                assert len(server.requests) == 40
                connections = transport._transport._pool.connections  # type: ignore[attr-defined]
                # No connection is left busy with a response nobody will read (a loser
                # cancelled while connecting may leave a NEW one, which serves the next).
                shown = [repr(c) for c in connections]
                assert not any("ACTIVE" in c for c in shown) and len(shown) <= 3, shown

    asyncio.run(main())


def test_aiohttp_zero_delay_hedging_leaves_no_connection_busy() -> None:
    aiohttp = pytest.importorskip("aiohttp")
    from retryrs.http import RetryMiddleware

    r = Retrier.from_policy(hedged(delay="0ms", guard=False))

    async def main() -> None:
        async with PairServer(together=True) as server:
            async with aiohttp.ClientSession(middlewares=(RetryMiddleware(r),)) as session:
                for _ in range(20):
                    async with session.get(server.url) as resp:
                        assert resp.status == 200
                await asyncio.sleep(0.2)
                assert len(server.requests) == 40
                assert not session.connector._acquired  # type: ignore[union-attr]

    asyncio.run(main())


def test_a_hedged_call_is_one_call_to_the_circuit_breaker() -> None:
    """Exhausted once (both attempts failed non-fatally), a 1-failure breaker opens; the
    next hedged call is refused at once, no attempt made."""
    doc = {
        "policies": {"reads": {"breaker": "db", "hedge": {"max_attempts": 2, "delay": "10ms"}}},
        "breakers": {"db": {"model": "consecutive", "failures": 1, "break_duration": "10s"}},
    }
    r = Retrier.from_policy(load_policies(doc)["reads"], retry_on=ConnectionError)
    calls: List[int] = []

    async def down() -> None:
        calls.append(retryrs.current_attempt().number)  # type: ignore[union-attr]
        await asyncio.sleep(0.02)
        raise ConnectionError("down")

    async def main() -> None:
        with pytest.raises(RetryExhausted) as first:
            await r.call_async(down)
        assert first.value.reason == "attempts" and first.value.attempts == 2
        assert isinstance(first.value.__cause__, ConnectionError)
        with pytest.raises(RetryExhausted) as refused:
            await r.call_async(down)
        assert refused.value.reason == "circuit_open" and refused.value.attempts == 0

    asyncio.run(main())
    assert calls == [1, 2]
    assert r.breaker is not None and r.breaker.state == "open"


def test_log_events_tells_a_hedge(caplog: Any) -> None:
    import logging

    r = Retrier.from_policy(hedged(delay="10ms"), on_event=retryrs.log_events())

    async def attempt() -> int:
        n = retryrs.current_attempt().number  # type: ignore[union-attr]
        await asyncio.sleep(5 if n == 1 else 0.01)
        return n

    with caplog.at_level(logging.INFO, logger="retryrs"):
        assert asyncio.run(r.call_async(attempt)) == 2
    lines = [rec.getMessage() for rec in caplog.records]
    assert lines[0].startswith("reads: attempt 2 sent beside the attempt in flight, ") and lines[0].endswith(" ms after it (hedge)"), lines
    assert lines[1].startswith("reads: attempt 2 succeeded after "), lines


@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_an_attempt_past_its_bound_is_a_non_fatal_timeout(library: str) -> None:
    """attempt_timeout bounds each hedged attempt (its own bound, from its launch): the
    stalled attempt 1 ends as an AttemptTimeout, non-fatal, so attempt 2 goes out at once
    rather than after the 5 s hedging delay."""
    events: List[Any] = []
    r = Retrier.from_policy(hedged(delay="5s", attempt_timeout="100ms"), on_event=events.append)

    async def attempt() -> int:
        n = retryrs.current_attempt().number  # type: ignore[union-attr]
        if n == 1:
            if library == "trio":
                import trio

                await trio.sleep(10)
            else:
                await asyncio.sleep(10)
        return n

    t0 = time.monotonic()
    if library == "trio":
        trio = pytest.importorskip("trio")
        assert trio.run(r.call_async, attempt) == 2
    else:
        assert asyncio.run(r.call_async(attempt)) == 2
    assert time.monotonic() - t0 < 2.0
    failed = events[0]
    assert (failed.kind, failed.attempt) == ("attempt_failed", 1) and isinstance(failed.error, retryrs.AttemptTimeout)
    assert [(e.kind, e.attempt) for e in events[1:]] == [("hedge", 2), ("success", 2)]


def test_the_retriers_hooks_judge_each_attempt_async_ones_awaited() -> None:
    """An async retry_on predicate is awaited; a value retry_on_result rejects is a
    non-fatal failure (the next attempt at once), never returned."""
    events: List[Any] = []

    async def transient(exc: BaseException) -> bool:
        await asyncio.sleep(0)
        return isinstance(exc, ConnectionError)

    r = Retrier.from_policy(hedged(delay="5s", max_attempts=3), retry_on=transient, retry_on_result=lambda v: v == "bad", on_event=events.append)

    async def attempt() -> str:
        n = retryrs.current_attempt().number  # type: ignore[union-attr]
        if n == 1:
            raise ConnectionError("non-fatal")
        return "bad" if n == 2 else "good"

    t0 = time.monotonic()
    assert asyncio.run(r.call_async(attempt)) == "good"
    assert time.monotonic() - t0 < 2.0
    got = [(e.kind, e.attempt, type(e.error).__name__ if e.error is not None else e.result) for e in events]
    assert got == [
        ("attempt_failed", 1, "ConnectionError"),
        ("hedge", 2, None),
        ("attempt_failed", 2, "bad"),
        ("hedge", 3, None),
        ("success", 3, None),
    ], got


def test_the_repr_shows_the_hedge() -> None:
    r = Retrier.from_policy(hedged(delay="50ms", max_attempts=3))
    assert "hedge=(max_attempts=3, delay=0.05)" in repr(r), repr(r)
    adaptive = load_policies({"policies": {"tail": {"hedge": {"delay": "adaptive", "quantile": 0.9, "floor": "2ms", "ceiling": "1s"}}}})["tail"]
    assert "hedge=(max_attempts=2, delay='adaptive' (quantile=0.9, floor=0.002, ceiling=1.0))" in repr(adaptive), repr(adaptive)
    assert "hedge" not in repr(Retrier())


def test_httpx_under_trio_hedges_a_get_and_closes_the_losers_connection() -> None:
    trio = pytest.importorskip("trio")
    httpx = pytest.importorskip("httpx")
    import threading

    from retryrs.http import AsyncRetryingTransport

    # The asyncio server on a thread of its own, the client under trio.
    loop = asyncio.new_event_loop()
    started = threading.Event()
    holder: Dict[str, PairServer] = {}

    def serve() -> None:
        async def start() -> None:
            holder["server"] = await PairServer().__aenter__()
            started.set()

        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert started.wait(5)
    server = holder["server"]
    r = Retrier.from_policy(hedged())

    async def main() -> None:
        async with httpx.AsyncClient(transport=AsyncRetryingTransport(r)) as client:
            t0 = trio.current_time()
            resp = await client.get(server.url)
            took = trio.current_time() - t0
            print(f"\nhttpx under trio, hedged GET returned in {took * 1000:.0f} ms")
            assert resp.text == "fast" and took < 1.0
        with trio.move_on_after(STALL * 0.75):
            while not server.disconnects:
                await trio.sleep(0.01)
        assert server.disconnects == 1 and len(server.requests) == 2

    try:
        trio.run(main)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def test_wait_hooks_are_refused_on_a_hedging_retrier() -> None:
    # A hedged call never waits after a failure: a wait=/before_sleep= hook would never
    # run, so it is refused where the retrier is made (and by replace()).
    for hook in ("wait", "before_sleep"):
        with pytest.raises(ValueError, match=f"{hook}= .*hedging retrier"):
            Retrier.from_policy(hedged(), **{hook: lambda attempt, failure, delay: None})
        with pytest.raises(ValueError, match="hedging retrier"):
            Retrier.from_policy(hedged()).replace(**{hook: lambda attempt, failure, delay: None})


async def _forever(library: str) -> None:
    if library == "trio":
        import trio

        await trio.sleep(3600)
    else:
        await asyncio.sleep(3600)


@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_a_hook_that_never_answers_is_ended_by_the_deadline(library: str) -> None:
    """An async retry_on that hangs cannot hold a hedged call past its deadline (as it
    cannot a retried one): unanswered at the deadline it counts as transient, and the
    call ends with reason deadline, the failure kept."""
    hook_cancelled: List[bool] = []

    async def hangs(exc: BaseException) -> bool:
        try:
            await _forever(library)
        except BaseException:
            hook_cancelled.append(True)
            raise
        return True

    r = Retrier.from_policy(hedged(delay="5s", deadline="300ms"), retry_on=hangs)

    async def attempt() -> None:
        raise ConnectionError("reset")

    t0 = time.monotonic()
    with pytest.raises(RetryExhausted) as info:
        if library == "trio":
            import trio

            trio.run(r.call_async, attempt)
        else:
            asyncio.run(r.call_async(attempt))
    took = time.monotonic() - t0
    print(f"ended after {took:.3f} s")
    assert took < 0.3 + 1.0, took
    assert info.value.reason == "deadline"
    assert isinstance(info.value.__cause__, ConnectionError)
    assert hook_cancelled == [True]


@pytest.mark.parametrize("library", ["asyncio", "trio"])
def test_a_cancel_token_ends_a_hook_awaited_at_once(library: str) -> None:
    """The call's CancelToken firing while an async hook judges a hedged attempt's failure
    ends the call now (RetryCancelled, caused by that failure), not when the hook answers."""
    token = CancelToken()
    asked = []

    async def hangs(exc: BaseException) -> bool:
        asked.append(exc)
        token.cancel()
        await _forever(library)
        return True

    r = Retrier.from_policy(hedged(delay="5s"), retry_on=hangs).with_cancel(token)
    boom = ConnectionError("reset")

    async def attempt() -> None:
        raise boom

    t0 = time.monotonic()
    with pytest.raises(RetryCancelled) as info:
        if library == "trio":
            import trio

            trio.run(r.call_async, attempt)
        else:
            asyncio.run(r.call_async(attempt))
    assert time.monotonic() - t0 < 2.0
    assert asked == [boom]
    assert info.value.__cause__ is boom
