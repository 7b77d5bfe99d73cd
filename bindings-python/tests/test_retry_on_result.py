"""retry_on_result: a returned value the predicate rejects is a failure handled like a
transient error (contract step 2), in every form: call, call_async, the decorators and
the loop form (`attempt.result = value`)."""

import asyncio
from datetime import timedelta

import pytest

from retryrs import Retrier, RetryExhausted


class Response:
    def __init__(self, status, retry_after=None):
        self.status = status
        if retry_after is not None:
            self.retry_after = retry_after

    def __repr__(self):
        return f"Response({self.status})"


def server(*statuses):
    """Returns the responses in order; records how often it was called."""
    responses = [Response(s) if isinstance(s, int) else s for s in statuses]
    calls = []

    def fetch():
        calls.append(1)
        return responses[len(calls) - 1]

    fetch.calls = calls
    return fetch


def unavailable(r):
    return r.status == 503


def test_call_retries_a_rejected_value_and_returns_the_accepted_one(virtual):
    events = []
    fetch = server(503, 503, 200)
    r = Retrier(retry_on_result=unavailable, jitter="none", on_event=events.append)
    got = r.call(fetch)
    assert got.status == 200 and len(fetch.calls) == 3
    failed = [e for e in events if e.kind == "attempt_failed"]
    assert [e.result.status for e in failed] == [503, 503]
    assert all(e.error is None for e in failed)
    assert [e.result.status for e in events if e.kind == "retrying"] == [503, 503]
    assert events[-1].kind == "success" and events[-1].result is None
    assert "result=Response(503)" in repr(failed[0])


def test_exhaustion_on_a_value_carries_it_as_result(virtual):
    fetch = server(503, 503, 503)
    with pytest.raises(RetryExhausted) as info:
        Retrier(retry_on_result=unavailable, max_attempts=3).call(fetch)
    e = info.value
    assert e.attempts == 3 and e.reason == "attempts"
    assert e.result.status == 503 and e.errors == () and e.__cause__ is None
    assert "rejected value Response(503)" in str(e)


def test_exhaustion_on_an_error_after_values_has_no_result(virtual):
    calls = []

    def fetch():
        calls.append(1)
        if len(calls) < 3:
            return Response(503)
        raise ConnectionError("reset")

    with pytest.raises(RetryExhausted) as info:
        Retrier(retry_on_result=unavailable, max_attempts=3).call(fetch)
    assert info.value.result is None and isinstance(info.value.__cause__, OSError)
    assert len(info.value.errors) == 1


def test_a_rejected_value_carries_its_hint(virtual):
    delays = []
    fetch = server(Response(429, retry_after=2.0), 200)
    r = Retrier(retry_on_result=lambda r: r.status == 429, jitter="none", initial_delay=0.01,
                on_event=lambda e: delays.append(e.delay) if e.kind == "retrying" else None)
    assert r.call(fetch).status == 200
    assert delays == [2.0]


def test_the_retry_after_hook_gets_the_rejected_value(virtual):
    seen = []

    def hint(failure):
        seen.append(failure)
        return timedelta(seconds=1)

    fetch = server(503, 200)
    Retrier(retry_on_result=unavailable, retry_after=hint).call(fetch)
    assert [x.status for x in seen] == [503]


def test_a_hint_past_max_retry_after_ends_the_call_at_once(virtual):
    fetch = server(Response(503, retry_after=3600), 200)
    with pytest.raises(RetryExhausted) as info:
        Retrier(retry_on_result=unavailable).call(fetch)
    assert info.value.reason == "retry_after" and info.value.result.status == 503
    assert virtual.now() == 0  # no sleep
    assert len(fetch.calls) == 1
    # Off: the server's hour is waited out (in virtual time).
    fetch = server(Response(503, retry_after=3600), 200)
    assert Retrier(retry_on_result=unavailable, max_retry_after=None, deadline=None).call(fetch).status == 200
    assert Retrier(max_retry_after=timedelta(minutes=2)).max_retry_after == 120.0


def test_the_sync_decorator_and_a_method(virtual):
    r = Retrier(retry_on_result=lambda v: v is None)

    class Client:
        def __init__(self):
            self.left = 2

        @r
        def get(self):
            self.left -= 1
            return None if self.left > 0 else "ok"

    assert Client().get() == "ok"


def test_call_async_and_async_decorator_await_an_async_predicate(virtual):
    async def rejects(v):
        await asyncio.sleep(0)
        return v < 3

    n = {"calls": 0}

    @Retrier(retry_on_result=rejects)
    async def counter():
        n["calls"] += 1
        return n["calls"]

    assert asyncio.run(counter()) == 3
    n["calls"] = 0

    async def plain():
        n["calls"] += 1
        return n["calls"]

    assert asyncio.run(Retrier(retry_on_result=lambda v: v < 2).call_async(plain)) == 2


def test_a_sync_call_refuses_an_async_result_predicate(virtual):
    async def rejects(v):
        return False

    with pytest.raises(TypeError, match="retry_on_result"):
        Retrier(retry_on_result=rejects).call(lambda: 1)


def test_the_loop_form_judges_the_value_handed_over(virtual):
    fetch = server(503, 503, 200)
    r = Retrier(retry_on_result=unavailable)
    numbers = []
    for attempt in r:
        with attempt:
            numbers.append(attempt.number)
            attempt.result = response = fetch()
    assert response.status == 200 and numbers == [1, 2, 3]


def test_the_async_loop_form_judges_the_value_and_exhausts_with_it(virtual):
    fetch = server(503, 503)
    r = Retrier(retry_on_result=unavailable, max_attempts=2)

    async def main():
        async for attempt in r:
            with attempt:
                attempt.result = fetch()

    with pytest.raises(RetryExhausted) as info:
        asyncio.run(main())
    assert info.value.result.status == 503 and info.value.attempts == 2


def test_an_attempt_without_a_result_is_an_error_naming_the_fix(virtual):
    # Not a success that skips the predicate: a forgotten `attempt.result = ...` would
    # make every value a success.
    judged = []
    r = Retrier(retry_on_result=lambda v: judged.append(v) or True)
    runs = 0
    with pytest.raises(TypeError, match=r"attempt 1 set no result.*retry_on_result.*`attempt.result = value`"):
        for attempt in r:
            with attempt:
                runs += 1
                with pytest.raises(AttributeError, match="attempt.result"):
                    attempt.result
    assert runs == 1 and judged == []

    async def main() -> None:
        async for attempt in r:
            with attempt:
                pass

    with pytest.raises(TypeError, match="attempt 1 set no result"):
        asyncio.run(main())
    # A block that raises is judged by retry_on as ever, result or not.
    for attempt in Retrier(retry_on_result=lambda v: v is None, max_attempts=2, retry_on=(ConnectionError,)):
        with attempt:
            if attempt.number == 1:
                raise ConnectionError("down")
            attempt.result = 1
    assert attempt.number == 2


def test_retry_on_result_must_be_callable():
    with pytest.raises(TypeError, match="retry_on_result"):
        Retrier(retry_on_result=503)
