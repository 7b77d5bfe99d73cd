"""An awaited hook that never answers (a ``retry_on`` / ``retry_on_result`` predicate, a
``retry_after`` hint, a ``wait=`` / ``before_sleep=`` hook) cannot hold an async call
past its deadline (reason ``deadline``, the failure kept) nor past its CancelToken
(``RetryCancelled``), under asyncio and under trio. Bounds are the spec's own: within
250 ms of the deadline, or of the token firing."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import trio

import retryrs

SLACK = 0.25
HOOKS = ["retry_on", "retry_on_result", "retry_after", "wait", "before_sleep"]
DEADLINE = 0.3


def forever(lib, asked):
    async def hook(*args):
        asked.append(args)
        if lib == "trio":
            await trio.sleep_forever()
        else:
            await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return hook


def retrier(lib, hook, asked, **kw):
    kw[hook] = forever(lib, asked)
    return retryrs.Retrier(initial_delay=0.01, jitter="none", max_attempts=5, **kw)


async def attempt_for(hook):
    if hook == "retry_on_result":
        return "bad"
    raise ConnectionError("boom")


def run(lib, main):
    """Runs ``main`` under ``lib``; a call still running after 10 s (the hang this file is
    about) fails the test instead of hanging the suite."""

    async def guarded():
        if lib == "trio":
            with trio.move_on_after(10):
                return await main()
        else:
            try:
                return await asyncio.wait_for(main(), 10)
            except asyncio.TimeoutError:
                pass
        pytest.fail("the call did not end: the awaited hook held it")

    return trio.run(guarded) if lib == "trio" else asyncio.run(guarded())


@pytest.mark.parametrize("lib", ["asyncio", "trio"])
@pytest.mark.parametrize("hook", HOOKS)
def test_the_deadline_ends_a_call_whose_awaited_hook_never_answers(lib, hook):
    asked = []
    r = retrier(lib, hook, asked, deadline=DEADLINE)

    async def main():
        start = time.monotonic()
        with pytest.raises(retryrs.RetryExhausted) as info:
            await r.call_async(attempt_for, hook)
        return info.value, time.monotonic() - start

    e, took = run(lib, main)
    assert asked, "the hook was awaited"
    assert e.reason == "deadline"
    assert took < DEADLINE + SLACK
    if hook == "retry_on_result":
        assert e.result == "bad"  # the rejected value kept
    else:
        assert isinstance(e.__cause__, ConnectionError) and str(e.__cause__) == "boom"  # the failure kept
        assert e.attempts == 1 and isinstance(e.errors[-1], ConnectionError)


@pytest.mark.parametrize("lib", ["asyncio", "trio"])
@pytest.mark.parametrize("hook", HOOKS)
def test_a_cancel_token_ends_a_call_whose_awaited_hook_never_answers(lib, hook):
    asked = []
    token = retryrs.CancelToken()
    r = retrier(lib, hook, asked).with_cancel(token)
    fired = []

    def fire():
        fired.append(time.monotonic())
        token.cancel()

    async def main():
        timer = threading.Timer(0.2, fire)  # another thread, as a shutdown handler would
        timer.start()
        try:
            with pytest.raises(retryrs.RetryCancelled) as info:
                await r.call_async(attempt_for, hook)
        finally:
            timer.cancel()
        return info.value, time.monotonic()

    e, ended = run(lib, main)
    assert asked and fired
    assert ended - fired[0] < SLACK
    if hook != "retry_on_result":
        assert isinstance(e.__cause__, ConnectionError)  # the failure being judged


@pytest.mark.parametrize("lib", ["asyncio", "trio"])
def test_an_awaited_hook_that_answers_in_time_is_still_obeyed(lib):
    # The bound changes nothing for a hook that answers: a predicate saying "permanent"
    # ends the call with the error itself.
    async def permanent(exc):
        await (trio.sleep(0.01) if lib == "trio" else asyncio.sleep(0.01))
        return False

    r = retryrs.Retrier(initial_delay=0, deadline=5, retry_on=permanent).with_cancel(retryrs.CancelToken())

    async def main():
        with pytest.raises(ConnectionError):
            await r.call_async(attempt_for, "retry_on")

    run(lib, main)
