"""Trap 3: an `async def` hook is never read as "true" (an un-awaited coroutine is
truthy). Sync calls refuse it with a TypeError naming the hook; call_async and async
decorators await it; an async listener is refused when the Retrier is built."""

import asyncio
import gc
import warnings

import pytest

from retryrs import Retrier, RetryExhausted


async def never_retry(exc):
    return False


async def hint_one_second(exc):
    return 1.0


async def async_listener(event):
    pass


def permanent():
    raise ConnectionError("permanent, says the predicate")


@pytest.mark.parametrize("knob,hook", [("retry_on", never_retry), ("retry_after", hint_one_second)])
def test_a_sync_call_refuses_an_async_hook_naming_it(virtual, knob, hook):
    calls = []

    def f():
        calls.append(1)
        raise ConnectionError("down")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the coroutine never awaited
        with pytest.raises(TypeError, match=knob) as info:
            Retrier(**{knob: hook}).call(f)
        gc.collect()
    assert len(calls) == 1, "an async hook's coroutine was read as an answer"
    assert isinstance(info.value.__cause__, OSError), "the original error is lost"


def test_call_async_awaits_an_async_predicate(virtual):
    calls = []

    async def f():
        calls.append(1)
        raise ConnectionError("down")

    with pytest.raises(OSError):
        asyncio.run(Retrier(retry_on=never_retry).call_async(f))
    assert len(calls) == 1, "a predicate answering False was read as True"


def test_an_async_decorator_awaits_an_async_hint(virtual):
    calls = []
    delays = []

    @Retrier(retry_after=hint_one_second, jitter="none", initial_delay=0.01, max_attempts=2, on_event=lambda e: delays.append(e.delay) if e.kind == "retrying" else None)
    async def f():
        calls.append(1)
        raise ConnectionError("down")

    with pytest.raises(RetryExhausted):
        asyncio.run(f())
    assert delays == [1.0]


def test_an_async_listener_is_refused_clearly():
    with pytest.raises(TypeError, match="on_event"):
        Retrier(on_event=async_listener)
    with pytest.raises(TypeError, match="on_event"):
        Retrier(on_event=[print, async_listener])
