"""The loop form: `for attempt in retrier` / `async for attempt in retrier`."""

import asyncio

import pytest

from retryrs import Retrier, RetryExhausted


def test_for_attempt_retries_the_block_until_it_succeeds(virtual):
    events, seen = [], []
    r = Retrier(jitter="none", initial_delay=0.1, on_event=events.append)
    for attempt in r:
        with attempt:
            seen.append(attempt.number)
            if attempt.number < 3:
                raise ConnectionError("503")
            value = "rate"
    assert value == "rate" and seen == [1, 2, 3]
    assert [e.kind for e in events] == ["attempt_failed", "retrying", "attempt_failed", "retrying", "success"]
    assert virtual.now() == pytest.approx(0.3)


def test_for_attempt_raises_exhausted_and_permanent_errors(virtual):
    errors = []
    with pytest.raises(RetryExhausted) as info:
        for attempt in Retrier(max_attempts=3):
            with attempt:
                errors.append(ConnectionError(attempt.number))
                raise errors[-1]
    assert list(info.value.errors) == errors
    original = KeyError("x")
    with pytest.raises(KeyError) as kinfo:
        for attempt in Retrier():
            with attempt:
                raise original
    assert kinfo.value is original


def test_async_for_attempt(virtual):
    async def main():
        n = 0
        async for attempt in Retrier(jitter="none"):
            with attempt:
                n += 1
                await asyncio.sleep(0)
                if n < 2:
                    raise ConnectionError("503")
        return n

    assert asyncio.run(main()) == 2
    assert virtual.now() == pytest.approx(0.2)


def test_an_attempt_outside_with_is_an_error():
    it = iter(Retrier())
    next(it)
    with pytest.raises(RuntimeError, match="inside `with attempt:`"):
        next(it)
