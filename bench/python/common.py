"""What bench.py and vs_commit.py both measure with: the hand-written loop retryrs is
compared with, the flaky function, and the timers. Standard library only: vs_commit.py
runs it in a base tree's venv that has nothing but retryrs."""

import asyncio
import gc
import time

ATTEMPTS = 5


def hand_loop(fn):
    # What people write by hand: try, catch the transient error, try again.
    for attempt in range(ATTEMPTS):
        try:
            return fn()
        except OSError:
            if attempt == ATTEMPTS - 1:
                raise


async def hand_loop_async(fn):
    for attempt in range(ATTEMPTS):
        try:
            return await fn()
        except OSError:
            if attempt == ATTEMPTS - 1:
                raise


def make_flaky():
    """A function failing twice with OSError, then succeeding (and again, every third call)."""
    state = [0]

    def flaky():
        state[0] += 1
        if state[0] % 3:
            raise OSError("503")
        return 42

    return flaky


def time_sync(run, n, repeats):
    """ns per call of `run()`, the best of `repeats` runs of `n` calls."""
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter_ns()
        for _ in range(n):
            run()
        best = min(best, (time.perf_counter_ns() - t0) / n)
    return best


def time_async(run, n, repeats):
    """time_sync for a coroutine function, each run of `n` awaited calls in its own loop."""

    async def loop():
        t0 = time.perf_counter_ns()
        for _ in range(n):
            await run()
        return (time.perf_counter_ns() - t0) / n

    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        best = min(best, asyncio.run(loop()))
    return best
