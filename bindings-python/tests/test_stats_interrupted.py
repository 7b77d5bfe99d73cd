"""``r.stats()`` counts an attempt ended by a BaseException that is not an Exception
(KeyboardInterrupt, SystemExit, a task's CancelledError) raised by the attempt: the
attempt was made (it neither failed nor succeeded), and the call counts as cancelled, as
the engine's Stats count every host's cancelled calls. A cancel during a wait adds no
attempt."""

from __future__ import annotations

import asyncio

import pytest
import trio

import retryrs

SIGNALS = [KeyboardInterrupt, SystemExit]


def counts(r):
    s = r.stats()
    return s["calls"], s["attempts"], s["retries"], s["cancellations"]


@pytest.mark.parametrize("signal", SIGNALS)
def test_a_sync_attempt_ended_by_a_signal_is_counted(signal):
    r = retryrs.Retrier(initial_delay=0)
    n = []

    def attempt():
        n.append(1)
        if len(n) == 1:
            raise ConnectionError("reset")
        raise signal()

    with pytest.raises(signal):
        r.call(attempt)
    assert counts(r) == (1, 2, 1, 1)

    r1 = retryrs.Retrier(initial_delay=0)

    def first():
        raise signal()

    with pytest.raises(signal):
        r1.call(first)
    assert counts(r1) == (1, 1, 0, 1)


@pytest.mark.parametrize("signal", SIGNALS + [asyncio.CancelledError])
def test_an_async_attempt_ended_by_a_signal_is_counted(signal):
    r = retryrs.Retrier(initial_delay=0)

    async def attempt():
        await asyncio.sleep(0)
        raise signal()

    with pytest.raises(signal):
        asyncio.run(r.call_async(attempt))
    assert counts(r) == (1, 1, 0, 1)


def test_the_loop_forms_count_it_too():
    r = retryrs.Retrier(initial_delay=0)
    with pytest.raises(KeyboardInterrupt):
        for attempt in r:
            with attempt:
                raise KeyboardInterrupt
    assert counts(r) == (1, 1, 0, 1)

    r2 = retryrs.Retrier(initial_delay=0)

    async def loop():
        async for attempt in r2:
            with attempt:
                raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        trio.run(loop)
    assert counts(r2) == (1, 1, 0, 1)


def test_a_cancel_during_the_wait_adds_no_attempt():
    token = retryrs.CancelToken()
    r = retryrs.Retrier(initial_delay=0.01, jitter="none").with_cancel(token)

    def attempt():
        token.cancel()  # fires now: the wait after this failure ends the call
        raise ConnectionError("reset")

    with pytest.raises(retryrs.RetryCancelled):
        r.call(attempt)
    assert counts(r) == (1, 1, 1, 1)
