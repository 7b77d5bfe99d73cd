"""Trap 9: attempt_timeout cannot be honoured by a blocking call (a thread cannot be
cancelled safely), so a sync call refuses it clearly instead of ignoring it."""

import asyncio

import pytest

from retryrs import Retrier

r = Retrier(attempt_timeout=0.5)


def test_call_refuses_attempt_timeout():
    with pytest.raises(ValueError, match="attempt_timeout.*call_async"):
        r.call(lambda: 1)


def test_a_sync_decorated_function_refuses_attempt_timeout():
    with pytest.raises(ValueError, match="attempt_timeout"):
        r(lambda: 1)


def test_the_sync_loop_form_refuses_attempt_timeout():
    with pytest.raises(ValueError, match="attempt_timeout"):
        for attempt in r:
            with attempt:
                pass


def test_async_calls_keep_it():
    async def f():
        return 1

    assert asyncio.run(r.call_async(f)) == 1
