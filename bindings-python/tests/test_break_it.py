"""What a stranger porting tenacity/stamina code broke in this round's escape hatches and
hedging (each test failed on the code before its fix)."""

from __future__ import annotations

import asyncio
import copy
import pickle
import time

import sys

import pytest

import retryrs
from retryrs import CancelToken, RetryCancelled, Retrier, load_policies

HEDGED = {"policies": {"reads": {"deadline": "2s", "hedge": {"max_attempts": 3, "delay": "50ms"}}}}
GRPC = {"methodConfig": [{"name": [{"service": "S"}], "retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s",
        "maxBackoff": "2s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}


# --- pickling a retrier whose policy the options cannot carry ---------------------------


def test_a_hedging_retrier_is_not_pickled_into_one_that_retries() -> None:
    # The pickle is made of the constructor's options, which have no hedge: the copy came
    # back without it, and its async calls retried one attempt at a time.
    r = Retrier.from_policy(load_policies(HEDGED)["reads"])
    assert r._hedges
    with pytest.raises(TypeError, match="hedge"):
        pickle.dumps(r)
    with pytest.raises(TypeError, match="from_policy"):
        copy.deepcopy(r)
    assert copy.copy(r)._hedges  # sharing it is fine
    assert r.replace(max_attempts=2)._hedges


def test_a_grpc_policy_is_not_pickled_into_one_with_the_floor_rule() -> None:
    policy = load_policies(GRPC).for_method("S", "Get")
    assert policy is not None
    with pytest.raises(TypeError, match="gRPC"):
        pickle.dumps(Retrier.from_policy(policy))


# --- reraise=True with an error that refuses attributes ---------------------------------


class Locked(ConnectionError):
    """An error class whose instances take no new attributes (as some C extensions')."""

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")


def test_reraise_raises_the_error_even_when_it_refuses_attributes(virtual: object) -> None:
    # Before: setting the traceback back on the error raised AttributeError, which replaced
    # the caller's error (no cause, no history).
    def fail() -> None:
        raise Locked("read-only")

    with pytest.raises(Locked, match="read-only"):
        Retrier(max_attempts=2, reraise=True).call(fail)


def test_reraise_does_not_pile_notes_on_an_error_raised_by_many_calls(virtual: object) -> None:
    # One exception object raised by every call (a cached failure, a failed future awaited
    # by many): each exhausted call added one more note to it, without end.
    shared = ConnectionError("down")
    shared.__notes__ = ["the caller's own note"]  # what add_note() (3.11+) does

    def fail() -> None:
        raise shared

    r = Retrier(max_attempts=2, reraise=True)
    for _ in range(3):
        with pytest.raises(ConnectionError):
            r.call(fail)
    notes = shared.__notes__
    assert notes[0] == "the caller's own note"
    # retryrs notes the history where exceptions have add_note (3.11+), once.
    assert len(notes) == (2 if sys.version_info >= (3, 11) else 1), notes
    assert shared.retryrs_history.attempts == 2


# --- the CancelToken during an awaited hook --------------------------------------------


def test_the_token_ends_an_awaited_before_sleep_hook_at_once() -> None:
    # Before: the call waited for the hook to finish (2 s here) before seeing the token.
    hook_cancelled = []

    async def slow_hook(attempt: int, error: BaseException, delay: float) -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            hook_cancelled.append(True)
            raise

    async def fail() -> None:
        raise ConnectionError("down")

    async def main() -> float:
        token = CancelToken()
        asyncio.get_running_loop().call_later(0.05, token.cancel)
        r = Retrier(max_attempts=3, initial_delay=0.01, before_sleep=slow_hook).with_cancel(token)
        started = time.monotonic()
        with pytest.raises(RetryCancelled) as info:
            await r.call_async(fail)
        assert isinstance(info.value.__cause__, ConnectionError)
        assert r.stats()["cancellations"] == 1
        await asyncio.sleep(0)
        return time.monotonic() - started

    took = asyncio.run(main())
    assert took < 10, took  # generous: the hook alone would take 30 s
    assert hook_cancelled == [True]


def test_the_token_ends_an_awaited_wait_hook_at_once() -> None:
    async def slow_wait(attempt: int, error: BaseException, delay: float) -> float:
        await asyncio.sleep(30)
        return 0.0

    async def fail() -> None:
        raise ConnectionError("down")

    async def main() -> float:
        token = CancelToken()
        asyncio.get_running_loop().call_later(0.05, token.cancel)
        started = time.monotonic()
        with pytest.raises(RetryCancelled):
            await Retrier(max_attempts=3, wait=slow_wait).with_cancel(token).call_async(fail)
        return time.monotonic() - started

    assert asyncio.run(main()) < 10


def test_a_hook_that_returns_before_the_token_fires_is_unchanged() -> None:
    calls = []

    async def quick_hook(attempt: int, error: BaseException, delay: float) -> float:
        calls.append(attempt)
        await asyncio.sleep(0)
        return 0.0

    async def fail() -> None:
        raise ConnectionError("down")

    async def main() -> None:
        r = Retrier(max_attempts=3, wait=quick_hook).with_cancel(CancelToken())
        with pytest.raises(retryrs.RetryExhausted) as info:
            await r.call_async(fail)
        assert info.value.attempts == 3

    asyncio.run(main())
    assert calls == [1, 2]


# --- the default retry_on and requests' broken connections -----------------------------


def test_the_default_retry_on_retries_a_connection_broken_mid_body_in_requests_too(virtual: object) -> None:
    # requests raises ChunkedEncodingError ("Connection broken: IncompleteRead") when the
    # server drops the connection mid-body: the same failure as httpx's RemoteProtocolError
    # and aiohttp's ClientPayloadError, which the default retries. It was not retried.
    requests = pytest.importorskip("requests")
    calls = []

    def fetch() -> None:
        calls.append(1)
        raise requests.exceptions.ChunkedEncodingError("Connection broken: IncompleteRead(0 bytes read)")

    with pytest.raises(retryrs.RetryExhausted):
        Retrier(max_attempts=3).call(fetch)
    assert len(calls) == 3
    assert requests.exceptions.ChunkedEncodingError in Retrier().retry_on
    # A response is still not retried.
    assert not issubclass(requests.HTTPError, Retrier().retry_on)


# --- the deadline during an awaited hook -----------------------------------------------


def test_an_awaited_hook_past_the_deadline_ends_the_call_by_deadline() -> None:
    # Before: a before_sleep coroutine that took 30 s held the call 30 s past its 0.2 s
    # deadline (an attempt would have been interrupted at its bound).
    cancelled = []

    async def slow_hook(attempt: int, error: BaseException, delay: float) -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(attempt)
            raise

    async def fail() -> None:
        raise ConnectionError("down")

    async def main() -> float:
        events: list = []
        r = Retrier(max_attempts=3, deadline=0.2, initial_delay=0.01, before_sleep=slow_hook, on_event=events.append)
        started = time.monotonic()
        with pytest.raises(retryrs.RetryExhausted) as info:
            await r.call_async(fail)
        assert info.value.reason == "deadline"
        assert isinstance(info.value.__cause__, ConnectionError)
        assert [e.kind for e in events] == ["attempt_failed", "exhausted"]
        await asyncio.sleep(0)
        return time.monotonic() - started

    assert asyncio.run(main()) < 10  # generous: the hook alone takes 30 s
    assert cancelled == [1]


def test_a_wait_hook_asked_after_the_deadline_passed_in_before_sleep_never_runs() -> None:
    ran = []

    async def slow_hook(attempt: int, error: BaseException, delay: float) -> None:
        await asyncio.sleep(30)

    async def wait(attempt: int, error: BaseException, delay: float) -> float:
        ran.append(attempt)
        return 0.0

    async def fail() -> None:
        raise ConnectionError("down")

    async def main() -> None:
        r = Retrier(max_attempts=3, deadline=0.1, initial_delay=0, max_delay=0, before_sleep=slow_hook, wait=wait)
        with pytest.raises(retryrs.RetryExhausted) as info:
            await r.call_async(fail)
        assert info.value.reason == "deadline"

    asyncio.run(main())
    assert ran == []
