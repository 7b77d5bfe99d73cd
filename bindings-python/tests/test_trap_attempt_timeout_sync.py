"""Trap 9: attempt_timeout cannot interrupt a blocking attempt (a thread cannot be
cancelled safely). A sync call takes it (it is a knob of the policy, which a document
may set) and hands it to the attempt as its bound, for the attempt to pass to its I/O:
``retryrs.current_attempt().remaining``. Async calls interrupt at it."""

import asyncio
import time

import pytest

import retryrs
from retryrs import Retrier

r = Retrier(attempt_timeout=0.5)


def bound():
    a = retryrs.current_attempt()
    assert a is not None
    return a.remaining


def test_call_hands_attempt_timeout_to_the_attempt():
    left = r.call(bound)
    assert 0 < left <= 0.5


def test_a_sync_decorated_function_gets_it_too():
    assert 0 < r(bound)() <= 0.5


def test_the_sync_loop_form_gets_it_as_attempt_remaining():
    for attempt in r:
        with attempt:
            assert 0 < attempt.remaining <= 0.5
            assert retryrs.current_attempt().remaining <= 0.5


def test_a_blocking_attempt_is_not_interrupted_and_its_late_value_is_kept():
    # Past its bound, but within the deadline: the value is the call's.
    quick = Retrier(attempt_timeout=0.05)

    def slow():
        time.sleep(0.15)
        return "late"

    assert quick.call(slow) == "late"


def test_async_calls_interrupt_at_it():
    async def hang():
        await asyncio.sleep(5)

    t0 = time.monotonic()
    with pytest.raises(retryrs.RetryExhausted) as e:
        asyncio.run(Retrier(attempt_timeout=0.1, max_attempts=2, initial_delay=0).call_async(hang))
    assert time.monotonic() - t0 < 2
    assert e.value.attempts == 2 and isinstance(e.value.__cause__, retryrs.AttemptTimeout)
