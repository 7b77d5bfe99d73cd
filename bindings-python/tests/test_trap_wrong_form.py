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
