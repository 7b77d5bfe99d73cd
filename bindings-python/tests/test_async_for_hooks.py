"""``async for attempt in retrier:`` awaits async hooks (as tenacity's AsyncRetrying
does): an async ``retry_on``, ``retry_on_result``, ``retry_after``, ``wait=`` or
``before_sleep=`` is awaited, its answer obeyed, bounded by the deadline like
call_async's. The plain ``for`` form still refuses them, naming the hook."""

from __future__ import annotations

import asyncio
import time

import pytest
import trio

import retryrs

LIBS = ["asyncio", "trio"]


def run(lib, main):
    return trio.run(main) if lib == "trio" else asyncio.run(main())


async def checkpoint(lib):
    await (trio.sleep(0) if lib == "trio" else asyncio.sleep(0))


@pytest.mark.parametrize("lib", LIBS)
def test_an_async_retry_on_is_awaited_and_obeyed(lib):
    asked = []

    async def retry_on(exc):
        await checkpoint(lib)
        asked.append(str(exc))
        return str(exc) == "transient"

    r = retryrs.Retrier(initial_delay=0, max_attempts=5, retry_on=retry_on)
    errors = iter(["transient", "transient", "permanent"])

    async def main():
        blocks = 0
        with pytest.raises(ValueError) as info:
            async for attempt in r:
                with attempt:
                    blocks += 1
                    raise ValueError(next(errors))
        return blocks, info.value

    blocks, e = run(lib, main)
    assert blocks == 3 and asked == ["transient", "transient", "permanent"]
    assert str(e) == "permanent" and not isinstance(e, retryrs.RetryExhausted)  # the error itself
    assert r.stats()["attempts"] == 3 and r.stats()["rejections"] == 1


@pytest.mark.parametrize("lib", LIBS)
def test_an_async_retry_on_result_is_awaited_and_obeyed(lib):
    async def bad(value):
        await checkpoint(lib)
        return value < 3

    r = retryrs.Retrier(initial_delay=0, max_attempts=5, retry_on_result=bad)

    async def main():
        n = 0
        async for attempt in r:
            with attempt:
                n += 1
                attempt.result = n
        return n

    assert run(lib, main) == 3
    assert r.stats()["successes"] == 1 and r.stats()["attempts"] == 3

    # Rejected every time: retries run out on the value.
    r2 = retryrs.Retrier(initial_delay=0, max_attempts=2, retry_on_result=bad)

    async def always_bad():
        async for attempt in r2:
            with attempt:
                attempt.result = 0

    with pytest.raises(retryrs.RetryExhausted) as info:
        run(lib, always_bad)
    assert info.value.reason == "attempts" and info.value.result == 0 and info.value.attempts == 2


@pytest.mark.parametrize("lib", LIBS)
def test_async_wait_before_sleep_and_retry_after_hooks_are_awaited(lib, virtual):
    seen = []

    async def wait(attempt, failure, delay):
        await checkpoint(lib)
        seen.append(("wait", attempt))
        return 2.0

    async def before_sleep(attempt, failure, delay):
        await checkpoint(lib)
        seen.append(("before_sleep", attempt))
        return attempt < 2  # False stops the call (reason stopped)

    async def retry_after(exc):
        await checkpoint(lib)
        seen.append(("retry_after", str(exc)))
        return None

    r = retryrs.Retrier(initial_delay=0, max_attempts=5, retry_on=ValueError, wait=wait, before_sleep=before_sleep, retry_after=retry_after)

    async def main():
        with pytest.raises(retryrs.RetryExhausted) as info:
            async for attempt in r:
                with attempt:
                    raise ValueError(f"try {attempt.number}")
        return info.value

    before = virtual.now()
    e = run(lib, main)
    assert e.reason == "stopped" and e.attempts == 2 and isinstance(e.__cause__, ValueError)
    assert ("retry_after", "try 1") in seen and ("before_sleep", 1) in seen and ("wait", 1) in seen
    assert ("before_sleep", 2) in seen
    assert virtual.now() - before >= 2.0  # wait=2.0 was taken (virtual clock)


@pytest.mark.parametrize("lib", LIBS)
def test_an_async_hook_that_never_answers_is_ended_by_the_deadline(lib):
    async def stuck(exc):
        if lib == "trio":
            await trio.sleep_forever()
        await asyncio.Event().wait()

    r = retryrs.Retrier(initial_delay=0, deadline=0.3, retry_on=stuck)

    async def main():
        start = time.monotonic()
        with pytest.raises(retryrs.RetryExhausted) as info:
            async for attempt in r:
                with attempt:
                    raise ConnectionError("boom")
        return info.value, time.monotonic() - start

    e, took = run(lib, main)
    assert e.reason == "deadline" and isinstance(e.__cause__, ConnectionError)
    assert took < 0.3 + 0.25


def test_the_sync_loop_still_refuses_an_async_hook_naming_it():
    async def retry_on(exc):
        return True

    r = retryrs.Retrier(initial_delay=0, retry_on=retry_on)
    with pytest.raises(TypeError, match="retry_on"):
        for attempt in r:
            with attempt:
                raise ValueError("x")


@pytest.mark.parametrize("lib", LIBS)
def test_leaving_the_loop_before_an_async_verdict_warns_naming_the_failure(lib):
    # A break right after a failed `with` leaves the failure unjudged (its async
    # retry_on is awaited only when the loop asks for the next attempt): it must not
    # vanish without a word.
    async def retry_on(exc):
        await checkpoint(lib)
        return False

    r = retryrs.Retrier(initial_delay=0, max_attempts=3, retry_on=retry_on)

    async def main():
        attempts = r.__aiter__()
        async for attempt in attempts:
            with attempt:
                raise ValueError("card declined")
            break
        del attempts, attempt

    with pytest.warns(RuntimeWarning, match=r"left before the failure .*card declined"):
        run(lib, main)
        import gc

        gc.collect()
