"""An asyncio retry with a zero delay still yields one turn of the loop (SEMANTICS:
a retry loop may never starve the process)."""

import asyncio

import pytest

from retryrs import Retrier, RetryExhausted


def test_a_zero_delay_storm_lets_a_concurrent_task_run():
    async def main():
        ticks = 0
        stop = False

        async def ticker():
            nonlocal ticks
            while not stop:
                ticks += 1
                await asyncio.sleep(0)

        async def failing():
            raise ConnectionError("down")

        task = asyncio.ensure_future(ticker())
        await asyncio.sleep(0)
        before = ticks
        r = Retrier(max_attempts=2000, initial_delay=0, max_delay=0, deadline=None)
        with pytest.raises(RetryExhausted):
            await r.call_async(failing)
        during = ticks - before
        stop = True
        await task
        return during

    assert asyncio.run(main()) >= 1000, "the retry storm starved the loop"


def test_the_async_loop_form_yields_too():
    async def main():
        ticks = 0
        stop = False

        async def ticker():
            nonlocal ticks
            while not stop:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.ensure_future(ticker())
        await asyncio.sleep(0)
        before = ticks
        r = Retrier(max_attempts=500, initial_delay=0, max_delay=0, deadline=None)
        with pytest.raises(RetryExhausted):
            async for attempt in r:
                with attempt:
                    raise ConnectionError("down")
        during = ticks - before
        stop = True
        await task
        return during

    assert asyncio.run(main()) >= 250
