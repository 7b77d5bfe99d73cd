"""A server's "don't retry" (gRPC A6 pushback) as Python reports it: retryrs.DONT_RETRY
from a retry_after hook, or in an exception's retry_after attribute."""

import asyncio
import pickle

import pytest

import retryrs
from retryrs import RetryBudget, Retrier, RetryExhausted, testing


class Unavailable(Exception):
    pass


def test_a_hook_answering_dont_retry_ends_the_call_and_spends_a_token() -> None:
    budget = RetryBudget(10, 0.1)
    r = Retrier(max_attempts=5, retry_on=Unavailable, retry_after=lambda e: retryrs.DONT_RETRY, budget=budget)
    calls = []

    def attempt() -> None:
        calls.append(1)
        raise Unavailable("pushback: -1")

    with testing.virtual_time():
        with pytest.raises(RetryExhausted) as info:
            r.call(attempt)
    assert (len(calls), info.value.attempts, info.value.reason) == (1, 1, "retry_after")
    assert isinstance(info.value.__cause__, Unavailable)
    assert budget.tokens == 9.0


def test_an_attribute_holding_dont_retry_is_read_as_the_hook_would() -> None:
    err = Unavailable("no")
    err.retry_after = retryrs.DONT_RETRY  # type: ignore[attr-defined]
    r = Retrier(max_attempts=3, retry_on=Unavailable)

    async def attempt() -> None:
        raise err

    with testing.virtual_time():
        with pytest.raises(RetryExhausted) as info:
            asyncio.run(r.call_async(attempt))
    assert info.value.reason == "retry_after" and info.value.attempts == 1


def test_dont_retry_is_one_object_that_pickles_as_itself() -> None:
    assert repr(retryrs.DONT_RETRY) == "retryrs.DONT_RETRY"
    assert pickle.loads(pickle.dumps(retryrs.DONT_RETRY)) is retryrs.DONT_RETRY
