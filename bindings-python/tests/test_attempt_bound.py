"""Each attempt's bound (issue 21): ``retryrs.current_attempt()`` in every form, and in
asyncio the bound interrupts the attempt. The bound itself is the engine's answer (the
time left before the deadline, or the smaller attempt_timeout); these tests check that
every form hands it over and that asyncio enforces it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

import retryrs
from retryrs import AttemptTimeout, Retrier, RetryExhausted, testing


class Flaky(Exception):
    pass


def seen_by(r, fails):
    """Runs a sync call whose first `fails` attempts raise; returns what each attempt saw."""
    seen = []

    def attempt():
        a = retryrs.current_attempt()
        seen.append((a.number, a.remaining, a.deadline, time.monotonic()))
        if len(seen) <= fails:
            raise Flaky()
        return "ok"

    assert r.call(attempt) == "ok"
    return seen


def test_outside_an_attempt_there_is_none():
    assert retryrs.current_attempt() is None
    Retrier().call(lambda: None)
    assert retryrs.current_attempt() is None


def test_a_sync_call_hands_each_attempt_its_number_and_the_time_left():
    r = Retrier(retry_on=Flaky, deadline=5, initial_delay=0)
    seen = seen_by(r, 2)
    assert [n for n, *_ in seen] == [1, 2, 3]
    for _, remaining, deadline, now in seen:
        assert 0 < remaining <= 5
        # deadline is on time.monotonic(): now + remaining, within the clock reads' gap
        assert abs(deadline - (now + remaining)) < 0.5
    # One deadline for the whole call: later attempts have less left, the same end.
    assert seen[2][1] <= seen[0][1]
    assert abs(seen[2][2] - seen[0][2]) < 0.05


def test_the_smaller_of_attempt_timeout_and_the_time_left_wins():
    r = Retrier(attempt_timeout=0.5, deadline=5)
    assert 0.4 < r.call(lambda: retryrs.current_attempt().remaining) <= 0.5
    r = Retrier(attempt_timeout=50, deadline=0.5)
    assert 0.4 < r.call(lambda: retryrs.current_attempt().remaining) <= 0.5


def test_unbounded_attempts_say_none():
    r = Retrier(deadline=None)
    a = r.call(retryrs.current_attempt)
    assert (a.number, a.remaining, a.deadline) == (1, None, None)


def test_remaining_counts_down_on_virtual_time():
    r = Retrier(deadline=10, attempt_timeout=4, retry_on=Flaky, initial_delay=1, jitter="none")
    seen = []

    def attempt():
        a = retryrs.current_attempt()
        seen.append(a.remaining)
        testing.advance(3)
        seen.append(a.remaining)
        if len(seen) < 4:
            raise Flaky()

    with testing.virtual_time():
        r.call(attempt)
    # Attempt 1: bounded by attempt_timeout (4 s); attempt 2 starts at 4 s (3 s + 1 s
    # wait): the deadline leaves 6 s, attempt_timeout still the smaller.
    assert seen == [4.0, 1.0, 4.0, 1.0]


def test_the_decorator_forms_hand_it_over():
    r = Retrier(deadline=3)

    @r
    def sync():
        return retryrs.current_attempt()

    @r
    async def aio():
        return retryrs.current_attempt()

    for a in (sync(), asyncio.run(aio())):
        assert a.number == 1 and 2.5 < a.remaining <= 3


def test_an_async_call_hands_it_to_the_attempt_its_child_tasks_and_threads():
    r = Retrier(deadline=3, retry_on=Flaky, initial_delay=0)
    seen = []

    async def child():
        return retryrs.current_attempt().number

    async def attempt():
        a = retryrs.current_attempt()
        # A thread started in the attempt's first step (before any suspension) sees it.
        in_thread = await asyncio.to_thread(lambda: retryrs.current_attempt().number)
        await asyncio.sleep(0.01)
        assert retryrs.current_attempt() is a  # still this attempt after a suspension
        in_task = await asyncio.create_task(child())
        seen.append((a.number, in_thread, in_task))
        if a.number == 1:
            raise Flaky()
        return a.remaining

    left = asyncio.run(r.call_async(attempt))
    assert seen == [(1, 1, 1), (2, 2, 2)]
    assert 2 < left <= 3


def test_concurrent_async_calls_each_see_their_own():
    r = Retrier(deadline=3)
    short = Retrier(deadline=1)

    async def attempt(tag):
        await asyncio.sleep(0.01)
        return tag, retryrs.current_attempt().remaining

    async def both():
        return await asyncio.gather(r.call_async(attempt, "long"), short.call_async(attempt, "short"))

    (a, left_a), (b, left_b) = asyncio.run(both())
    assert (a, b) == ("long", "short")
    assert 2 < left_a <= 3 and 0 < left_b <= 1


def test_the_innermost_call_wins_when_calls_nest():
    outer, inner = Retrier(deadline=9), Retrier(deadline=1)

    async def async_outer():
        # A blocking call inside an async attempt: inside it, its own attempt.
        mid = inner.call(lambda: retryrs.current_attempt().remaining)
        return mid, retryrs.current_attempt().remaining

    mid, after = asyncio.run(outer.call_async(async_outer))
    assert mid <= 1 and after > 8

    async def async_inner():
        return retryrs.current_attempt().remaining

    def sync_outer():
        # An event loop run inside a blocking attempt: the async call is the innermost.
        return asyncio.run(inner.call_async(async_inner)), retryrs.current_attempt().remaining

    mid, after = outer.call(sync_outer)
    assert mid <= 1 and after > 8


def test_async_calls_nest_in_one_task_and_a_child_tasks_calls_stay_its_own():
    # A task's first attempts share one slot in its context (see Retrier._first): a call
    # nested in the same task, and a child task's own call made while the parent's
    # attempt waits, each see their attempt, and the parent its own again after them.
    outer, inner = Retrier(deadline=9), Retrier(deadline=1)

    async def inner_attempt():
        await asyncio.sleep(0)
        return retryrs.current_attempt().remaining

    async def child():
        before = retryrs.current_attempt().remaining  # the parent's attempt, in progress
        mine = await inner.call_async(inner_attempt)
        return before, mine, retryrs.current_attempt().remaining

    async def outer_attempt():
        a = retryrs.current_attempt()
        task = asyncio.create_task(child())
        nested = await inner.call_async(inner_attempt)
        assert retryrs.current_attempt() is a
        await asyncio.sleep(0.01)  # the child's call runs meanwhile
        assert retryrs.current_attempt() is a
        return nested, await task

    async def go():
        seen = [await outer.call_async(outer_attempt) for _ in range(3)]
        return seen, retryrs.current_attempt()

    seen, after = asyncio.run(go())
    assert after is None
    for nested, (before, mine, after_child) in seen:
        assert nested <= 1 and mine <= 1
        assert 8 < before <= 9 and 8 < after_child <= 9


@pytest.mark.parametrize("deadline", [None, 5])
def test_every_shape_of_a_first_async_attempt_sees_itself_and_ends_cleanly(deadline):
    # The driver runs the first step natively and goes on in Python with what is left:
    # an attempt that suspends (bounded: a timer is armed; unbounded: it is only driven
    # on), one cancelled while suspended, and an awaitable that is not a coroutine.
    r = Retrier(deadline=deadline, retry_on=Flaky, initial_delay=0)

    async def suspends():
        await asyncio.sleep(0)
        return retryrs.current_attempt().number

    class Awaitable:
        def __await__(self):
            yield from asyncio.sleep(0).__await__()
            number = retryrs.current_attempt().number
            if number == 1:
                raise Flaky()
            return number

    def not_a_coroutine():
        return Awaitable()

    async def hang():
        await asyncio.sleep(30)

    async def go():
        assert await r.call_async(suspends) == 1
        assert await r.call_async(not_a_coroutine) == 2
        task = asyncio.ensure_future(r.call_async(hang))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return retryrs.current_attempt()

    assert asyncio.run(go()) is None


def test_the_loop_forms_carry_the_bound_on_the_attempt():
    r = Retrier(deadline=3, retry_on=Flaky, initial_delay=0)
    seen = []
    for attempt in r:
        with attempt:
            seen.append((attempt.number, attempt.remaining, retryrs.current_attempt().number))
            assert attempt.deadline is not None and attempt.deadline > time.monotonic()
            if attempt.number < 2:
                raise Flaky()
    assert [(n, m) for n, _, m in seen] == [(1, 1), (2, 2)]
    assert all(0 < left <= 3 for _, left, _ in seen)
    assert retryrs.current_attempt() is None

    async def go():
        async for attempt in r:
            with attempt:
                assert retryrs.current_attempt().number == attempt.number
                return attempt.remaining

    assert 0 < asyncio.run(go()) <= 3


def test_async_for_interrupts_an_attempt_past_attempt_timeout():
    # The case: a 1.5 s attempt under a 0.2 s attempt_timeout ran to its end.
    r = Retrier(attempt_timeout=0.2, deadline=10, max_attempts=3, initial_delay=0)
    runs = []

    async def go():
        async for attempt in r:
            with attempt:
                runs.append(attempt.number)
                await asyncio.sleep(1.5)

    t0 = time.monotonic()
    with pytest.raises(RetryExhausted) as e:
        asyncio.run(go())
    assert time.monotonic() - t0 < 1.5, "the attempts were not interrupted"
    assert runs == [1, 2, 3]
    assert e.value.reason == "attempts" and isinstance(e.value.__cause__, AttemptTimeout)


def test_async_for_a_fast_attempt_after_a_timed_out_one_succeeds_and_can_still_await():
    r = Retrier(attempt_timeout=0.2, initial_delay=0)

    async def go():
        async for attempt in r:
            with attempt:
                await asyncio.sleep(1.5 if attempt.number == 1 else 0)
                n = attempt.number
        await asyncio.sleep(0.01)  # no cancel left pending on the task
        return n

    assert asyncio.run(go()) == 2


@pytest.mark.parametrize("form", ["call_async", "decorator", "async_for"])
def test_the_deadline_interrupts_an_async_attempt_with_reason_deadline(form):
    r = Retrier(deadline=0.5)

    async def hang():
        await asyncio.sleep(30)

    async def go():
        if form == "call_async":
            await r.call_async(hang)
        elif form == "decorator":
            await r(hang)()
        else:
            async for attempt in r:
                with attempt:
                    await hang()

    t0 = time.monotonic()
    with pytest.raises(RetryExhausted) as e:
        asyncio.run(go())
    assert time.monotonic() - t0 < 0.5 + 0.25
    assert e.value.reason == "deadline" and e.value.attempts == 1


def test_cancelling_the_task_during_a_bounded_attempt_stays_a_cancellation():
    r = Retrier(deadline=5)
    events = []
    r = Retrier(deadline=5, on_event=events.append)

    async def hang():
        await asyncio.sleep(30)

    async def go():
        task = asyncio.ensure_future(r.call_async(hang))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert [e.kind for e in events] == ["cancelled"]


def test_an_attempt_that_swallows_the_interruption_keeps_its_late_value():
    r = Retrier(attempt_timeout=0.05)

    async def stubborn():
        try:
            await asyncio.sleep(0.3)
        except asyncio.CancelledError:
            pass
        return "late"

    async def go():
        value = await r.call_async(stubborn)
        await asyncio.sleep(0.01)  # the interruption was taken back
        return value

    assert asyncio.run(go()) == "late"


# Greenlets (gevent, eventlet) switch within one thread: once `greenlet` is loaded, a
# blocking call keeps its attempt in the context variable (each greenlet has its own
# context) instead of the thread-local stack. A subprocess, so the module table is its own.
GREENLET_PATH = r"""
import sys, types, asyncio
sys.modules.setdefault("greenlet", types.ModuleType("greenlet"))  # the real one, or a stand-in
import retryrs
from retryrs import Retrier

class Flaky(Exception):
    pass

seen = []
def attempt():
    a = retryrs.current_attempt()
    seen.append((a.number, round(a.remaining)))
    if a.number < 2:
        raise Flaky()
    # nested: a blocking call inside is the innermost, and the outer comes back after
    inner = Retrier(deadline=3).call(lambda: round(retryrs.current_attempt().remaining))
    return inner, round(retryrs.current_attempt().remaining)

r = Retrier(deadline=9, retry_on=Flaky, initial_delay=0)
assert r.call(attempt) == (3, 9), seen
assert seen == [(1, 9), (2, 9)], seen
assert retryrs.current_attempt() is None

async def outer():
    return Retrier(deadline=3).call(lambda: round(retryrs.current_attempt().remaining)), round(retryrs.current_attempt().remaining)
assert asyncio.run(Retrier(deadline=9).call_async(outer)) == (3, 9)
print("ok")
"""


# `greenlet` loaded after blocking calls ran: the next call sees it (seen from an empty
# context, the thread-local stack shows the attempt, the context variable does not).
GREENLET_LATER = r"""
import contextvars, sys, types
import retryrs
from retryrs import Retrier

assert "greenlet" not in sys.modules
probe = lambda: contextvars.Context().run(retryrs.current_attempt)
r = Retrier()
assert r.call(probe) is not None and r.call(probe) is not None  # the thread's stack
sys.modules["greenlet"] = types.ModuleType("greenlet")
assert r.call(probe) is None  # the context variable: each greenlet has its own
del sys.modules["greenlet"]
assert r.call(probe) is None  # once loaded, always
print("ok")
"""


def test_greenlet_loaded_after_blocking_calls_is_noticed_by_the_next_call():
    out = subprocess.run([sys.executable, "-c", GREENLET_LATER], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_with_greenlet_loaded_a_blocking_call_keeps_its_attempt_in_the_context():
    out = subprocess.run([sys.executable, "-c", GREENLET_PATH], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_gevent_greenlets_in_blocking_calls_each_see_their_own_attempt():
    gevent = pytest.importorskip("gevent")  # in requirements-test.txt once gevent support lands
    results = {}

    def worker(name, deadline):
        def attempt():
            before = retryrs.current_attempt()
            gevent.sleep(0.05)  # switches to the other greenlet, inside its own call
            after = retryrs.current_attempt()
            return before is not None and after is not None and before.number == after.number, after.remaining

        results[name] = Retrier(deadline=deadline).call(attempt)

    gevent.joinall([gevent.spawn(worker, "long", 9), gevent.spawn(worker, "short", 1)])
    assert results["long"][0] and results["short"][0]
    assert 8 < results["long"][1] <= 9 and 0 < results["short"][1] <= 1
