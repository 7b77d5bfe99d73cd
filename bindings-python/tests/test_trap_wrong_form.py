"""Trap 4: the wrong entry point for a function is refused with a TypeError that says
what to use instead (never an un-awaited coroutine, a blocking wait on the loop, or a
generator that retries nothing)."""

import asyncio

import pytest

from retryrs import Retrier


async def afetch():
    return 1


def fetch():
    return 1


def gen():
    yield 1


async def agen():
    yield 1


def test_call_refuses_a_coroutine_function():
    with pytest.raises(TypeError, match="call_async"):
        Retrier().call(afetch)


def test_call_async_refuses_a_sync_function():
    async def main():
        await Retrier().call_async(fetch)

    with pytest.raises(TypeError, match=r"\.call\("):
        asyncio.run(main())


@pytest.mark.parametrize("fn", [gen, agen])
def test_the_decorator_refuses_generators(fn):
    with pytest.raises(TypeError, match="generator"):
        Retrier()(fn)


def test_call_async_refuses_a_failing_sync_function_without_retrying_it():
    calls = []

    def failing():
        calls.append(1)
        raise ConnectionError("down")

    with pytest.raises(TypeError, match=r"not async.*\.call\(") as info:
        asyncio.run(Retrier().call_async(failing))
    assert len(calls) == 1, "a sync function was retried with blocking waits on the loop"
    assert isinstance(info.value.__cause__, OSError)


def test_call_async_still_takes_a_lambda_returning_a_coroutine():
    assert asyncio.run(Retrier().call_async(lambda: afetch())) == 1
