"""The asyncio driver: outcomes, task cancellation, attempt_timeout, tokens, sharing."""

import asyncio
import threading
import time

import pytest

from retryrs import AttemptTimeout, CancelToken, Retrier, RetryCancelled, RetryExhausted


class AFlaky:
    def __init__(self, failures, exc=lambda n: ConnectionError(f"fail {n}"), value="ok", sleep=0.0):
        self.failures, self.exc, self.value, self.sleep, self.calls, self.raised = failures, exc, value, sleep, 0, []

    async def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.sleep:
            await asyncio.sleep(self.sleep)
        if self.calls <= self.failures:
            e = self.exc(self.calls)
            self.raised.append(e)
            raise e
        return self.value


def run(coro):
    return asyncio.run(coro)


def test_success_after_failures_with_real_short_waits():
    f = AFlaky(2, value=[1])
    assert run(Retrier(initial_delay=0.01, max_delay=0.01).call_async(f, 1, k=2)) is f.value
    assert f.calls == 3


def test_exhausted_and_rejected(virtual):
    f = AFlaky(10)
    with pytest.raises(RetryExhausted) as info:
        run(Retrier(max_attempts=3).call_async(f))
    assert info.value.errors == tuple(f.raised) and info.value.__cause__ is f.raised[-1]
    err = KeyError("permanent")
    g = AFlaky(1, lambda n: err)
    with pytest.raises(KeyError) as info:
        run(Retrier().call_async(g))
    assert info.value is err and g.calls == 1


def test_task_cancel_during_a_wait_raises_cancelled_error_at_once():
    events = []
    r = Retrier(initial_delay=30, max_delay=30, jitter="none", deadline=None, on_event=events.append)

    async def main():
        task = asyncio.ensure_future(r.call_async(AFlaky(5)))
        await asyncio.sleep(0.1)
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - t0

    assert run(main()) < 1
    assert [e.kind for e in events] == ["attempt_failed", "retrying", "cancelled"]


def test_cancelled_error_from_the_attempt_is_never_retried():
    offered = []
    f = AFlaky(5, lambda n: asyncio.CancelledError())
    with pytest.raises(asyncio.CancelledError):
        run(Retrier(retry_on=lambda e: offered.append(e) or True).call_async(f))
    assert f.calls == 1 and offered == []


def test_attempt_timeout_bounds_each_attempt_and_is_judged_by_retry_on():
    events = []
    r = Retrier(attempt_timeout=0.05, initial_delay=0, max_attempts=3, retry_on=(KeyError, AttemptTimeout), on_event=events.append)
    slow = AFlaky(0, sleep=10)
    t0 = time.monotonic()
    with pytest.raises(RetryExhausted) as info:
        run(r.call_async(slow))
    assert time.monotonic() - t0 < 3
    assert info.value.attempts == 3 and all(isinstance(e, AttemptTimeout) for e in info.value.errors)
    # A fast attempt is unaffected; its own TimeoutError is judged by the predicate.
    assert run(r.call_async(AFlaky(1, lambda n: KeyError(n)))) == "ok"
    own = TimeoutError("the attempt's own")
    with pytest.raises(TimeoutError) as info:
        run(r.call_async(AFlaky(1, lambda n: own)))
    assert info.value is own
    # A predicate that does not call it transient: the AttemptTimeout ends the call.
    strict = Retrier(attempt_timeout=0.05, max_attempts=3, retry_on=KeyError)
    with pytest.raises(AttemptTimeout):
        run(strict.call_async(AFlaky(0, sleep=10)))


def test_cancel_token_from_another_thread_wakes_an_async_wait():
    token = CancelToken()
    r = Retrier(initial_delay=30, max_delay=30, jitter="none", deadline=None).with_cancel(token)
    threading.Timer(0.1, token.cancel).start()
    f = AFlaky(5)
    t0 = time.monotonic()
    with pytest.raises(RetryCancelled) as info:
        run(r.call_async(f))
    assert time.monotonic() - t0 < 2
    assert info.value.attempts == 1 and info.value.__cause__ is f.raised[0]


def test_async_decorator_keeps_metadata(virtual):
    import inspect

    r = Retrier()
    f = AFlaky(1)

    @r
    async def fetch(x: int) -> str:
        """Doc."""
        return await f() + str(x)

    assert inspect.iscoroutinefunction(fetch)
    assert fetch.__name__ == "fetch" and fetch.__doc__ == "Doc." and str(inspect.signature(fetch)) == "(x: int) -> str"
    assert run(fetch(1)) == "ok1"


def test_1000_concurrent_tasks_share_one_retrier():
    r = Retrier(initial_delay=0.005, max_delay=0.01)

    async def main():
        flakies = [AFlaky(i % 3, value=i) for i in range(1000)]
        results = await asyncio.gather(*(r.call_async(f) for f in flakies))
        return flakies, results

    t0 = time.monotonic()
    flakies, results = run(main())
    assert results == list(range(1000))
    assert [f.calls for f in flakies] == [i % 3 + 1 for i in range(1000)]
    assert time.monotonic() - t0 < 10  # the waits overlapped


def test_virtual_time_async_never_sleeps(virtual):
    r = Retrier(initial_delay=100, max_delay=100, jitter="none", deadline=None)
    t0 = time.monotonic()
    with pytest.raises(RetryExhausted):
        run(r.call_async(AFlaky(10)))
    assert time.monotonic() - t0 < 1 and virtual.now() == 400
