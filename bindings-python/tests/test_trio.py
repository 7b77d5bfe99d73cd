"""Async calls under trio, and under anyio on either backend: the waits use the running
library's primitives, and its cancellation (a cancel scope) ends a wait at once, as
task.cancel() does under asyncio. trio and anyio are test requirements (anyio comes with
httpx): a missing one fails here, it is not skipped."""

import threading
import time

import anyio
import pytest
import trio

from retryrs import AttemptTimeout, CancelToken, Retrier, RetryCancelled, RetryExhausted, testing


class Flaky:
    """Fails ``failures`` times with ConnectionError, then returns "ok"."""

    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError(f"fail {self.calls}")
        return "ok"


def retrier(delay: float, **kw):
    kw.setdefault("max_attempts", 5)
    return Retrier(retry_on=(ConnectionError,), initial_delay=delay, max_delay=delay, jitter="none", deadline=None, **kw)


def test_a_decorated_async_function_retries_under_trio() -> None:
    flaky = Flaky(2)
    events = []

    @retrier(0.02, on_event=events.append)
    async def fetch() -> str:
        return await flaky()

    assert trio.run(fetch) == "ok"
    assert flaky.calls == 3
    assert [e.kind for e in events].count("retrying") == 2


def test_call_async_and_the_loop_form_under_trio() -> None:
    async def main():
        f = Flaky(1)
        assert await retrier(0.01).call_async(f) == "ok" and f.calls == 1 + 1
        g = Flaky(2)
        async for attempt in retrier(0.01):
            with attempt:
                value = await g()
        assert value == "ok" and g.calls == 3
        with pytest.raises(RetryExhausted):
            await retrier(0.001).call_async(Flaky(10))

    trio.run(main)


def test_zero_delays_and_virtual_time_under_trio() -> None:
    async def main():
        with testing.virtual_time() as clock:
            f = Flaky(3)
            assert await retrier(30).call_async(f) == "ok"
            assert f.calls == 4 and clock.now() >= 90
        f = Flaky(3)
        assert await retrier(0).call_async(f) == "ok"

    trio.run(main)


def test_a_trio_cancel_scope_ends_the_wait_at_once() -> None:
    events = []
    flaky = Flaky(5)

    @retrier(60, on_event=events.append)
    async def fetch() -> str:
        return await flaky()

    async def main():
        t0 = time.monotonic()
        with trio.move_on_after(0.2) as scope:
            await fetch()
        return scope.cancelled_caught, time.monotonic() - t0

    caught, seconds = trio.run(main)
    assert caught
    assert seconds < 5  # the wait was 60 s (generous bound for a loaded machine)
    assert flaky.calls == 1
    assert [e.kind for e in events] == ["attempt_failed", "retrying", "cancelled"]


def test_a_scope_cancelled_by_another_task_under_trio() -> None:
    flaky = Flaky(5)

    async def main():
        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope()

            async def victim():
                with scope:
                    await retrier(60).call_async(flaky)

            nursery.start_soon(victim)
            await trio.sleep(0.2)
            t0 = time.monotonic()
            scope.cancel()
        return time.monotonic() - t0

    assert trio.run(main) < 5
    assert flaky.calls == 1


def test_the_cancel_token_wakes_a_trio_wait_from_a_task_or_a_thread() -> None:
    async def main(fire):
        token = CancelToken()
        fire(token)
        t0 = time.monotonic()
        with pytest.raises(RetryCancelled) as info:
            await retrier(60).with_cancel(token).call_async(Flaky(5))
        assert info.value.attempts == 1
        return time.monotonic() - t0

    def from_thread(token):
        threading.Timer(0.2, token.cancel).start()

    assert trio.run(main, from_thread) < 5

    async def from_task():
        token = CancelToken()
        async with trio.open_nursery() as nursery:

            async def cancel_later():
                await trio.sleep(0.2)
                token.cancel()

            nursery.start_soon(cancel_later)
            with pytest.raises(RetryCancelled):
                await retrier(60).with_cancel(token).call_async(Flaky(5))

    trio.run(from_task)

    # Fired by the attempt, before the wait starts: the wait ends as it begins.
    token = CancelToken()

    async def fires_then_fails() -> None:
        token.cancel()
        raise ConnectionError("down")

    t0 = time.monotonic()
    with pytest.raises(RetryCancelled):
        trio.run(retrier(60).with_cancel(token).call_async, fires_then_fails)
    assert time.monotonic() - t0 < 5


def test_attempt_timeout_under_trio() -> None:
    calls = []

    async def slow() -> str:
        calls.append(1)
        await trio.sleep(10)
        return "late"

    own = TimeoutError("the attempt's own")

    async def times_out_itself() -> None:
        raise own

    async def main():
        r = retrier(0, attempt_timeout=0.05, max_attempts=3)
        # The bound's AttemptTimeout is judged by retry_on like any failure (contract 3a).
        judged = Retrier(retry_on=(ConnectionError, AttemptTimeout), initial_delay=0, deadline=None, attempt_timeout=0.05, max_attempts=3)
        t0 = time.monotonic()
        with pytest.raises(RetryExhausted) as info:
            await judged.call_async(slow)
        assert time.monotonic() - t0 < 5
        assert len(calls) == 3 and all(isinstance(e, AttemptTimeout) for e in info.value.errors)
        # Not transient for `r` (ConnectionError only): the first AttemptTimeout ends the call.
        with pytest.raises(AttemptTimeout):
            await r.call_async(slow)
        assert len(calls) == 4
        # A fast attempt is unaffected; the attempt's own TimeoutError is judged as is.
        assert await r.call_async(Flaky(1)) == "ok"
        with pytest.raises(TimeoutError) as raised:
            await r.call_async(times_out_itself)
        assert raised.value is own

    trio.run(main)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_anyio_on_either_backend(backend: str) -> None:
    async def main():
        f = Flaky(2)
        assert await retrier(0.01).call_async(f) == "ok" and f.calls == 3
        t0 = time.monotonic()
        with anyio.move_on_after(0.2) as scope:
            await retrier(60).call_async(Flaky(5))
        assert scope.cancelled_caught
        return time.monotonic() - t0

    assert anyio.run(main, backend=backend) < 5


def test_async_for_attempt_is_bounded_under_trio() -> None:
    """The loop form's bound is a trio cancel scope around the attempt's block."""
    r = Retrier(retry_on=(AttemptTimeout,), initial_delay=0, deadline=None, attempt_timeout=0.05, max_attempts=2)
    entered = []

    async def main() -> None:
        t0 = time.monotonic()
        with pytest.raises(RetryExhausted) as info:
            async for attempt in r:
                with attempt:
                    entered.append(attempt.number)
                    await trio.sleep(10)
        assert time.monotonic() - t0 < 5
        assert entered == [1, 2] and all(isinstance(e, AttemptTimeout) for e in info.value.errors)
        # A block that finishes in time is not touched.
        async for attempt in r:
            with attempt:
                await trio.sleep(0)

    trio.run(main)
