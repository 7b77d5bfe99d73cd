"""No leaks: 100,000 calls (success, exhausted, rejected) leave memory and refcounts
flat."""

import gc
import sys
import tracemalloc

from retryrs import Retrier, RetryExhausted, testing


def test_100k_calls_leave_memory_and_refcounts_flat():
    events = []
    r = Retrier(max_attempts=3, initial_delay=0, jitter="none", on_event=lambda e: events.append(e.kind) if not events else None)
    plain = Retrier(max_attempts=3, initial_delay=0, jitter="none")
    value = object()

    def ok():
        return value

    def transient():
        raise ConnectionError("503")

    def rejected():
        # A fresh error each time: re-raising one object grows its own __traceback__
        # chain in any Python code, which is not what this test measures.
        raise KeyError("gone")

    def round_(n):
        for _ in range(n):
            for retrier in (r, plain):
                assert retrier.call(ok) is value
                try:
                    retrier.call(transient)
                except RetryExhausted:
                    pass
                try:
                    retrier.call(rejected)
                except KeyError:
                    pass

    with testing.virtual_time():
        round_(2000)  # warm up caches, interned strings, the lazily imported classes
        gc.collect()
        refs = {name: sys.getrefcount(obj) for name, obj in [("ok", ok), ("transient", transient), ("rejected", rejected), ("value", value), ("KeyError", KeyError), ("OSError", OSError), ("r", r)]}
        objects = len(gc.get_objects())
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        round_(100_000 // 6 + 1)  # >= 100,000 calls across the three outcomes and two retriers
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    assert {name: sys.getrefcount(obj) for name, obj in [("ok", ok), ("transient", transient), ("rejected", rejected), ("value", value), ("KeyError", KeyError), ("OSError", OSError), ("r", r)]} == refs
    assert len(gc.get_objects()) - objects < 100
    assert after - before < 64 * 1024, f"grew {after - before} bytes over 100,000 calls"


def test_rss_flat_over_100k_native_calls():
    # tracemalloc sees Python allocations; RSS also sees the native side (Rust Vecs, Arcs).
    import resource

    r = Retrier(max_attempts=3, initial_delay=0, jitter="none", on_event=lambda e: None)

    def transient():
        raise ConnectionError("503")

    def run(n):
        for _ in range(n):
            try:
                r.call(transient)
            except RetryExhausted:
                pass

    with testing.virtual_time():
        run(20_000)
        gc.collect()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        run(100_000)
        gc.collect()
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert after - before < 4 * 1024, f"max RSS grew {after - before} KiB"  # ru_maxrss is KiB on Linux


def test_async_calls_leave_memory_and_refcounts_flat():
    import asyncio

    r = Retrier(max_attempts=3, initial_delay=0, jitter="none", on_event=lambda e: None)

    async def ok():
        return 1

    async def transient():
        raise ConnectionError("503")

    async def rejected():
        raise KeyError("gone")

    async def round_(n):
        for _ in range(n):
            await r.call_async(ok)
            try:
                await r.call_async(transient)
            except RetryExhausted:
                pass
            try:
                await r.call_async(rejected)
            except KeyError:
                pass

    with testing.virtual_time():
        asyncio.run(round_(1000))
        gc.collect()
        refs = [sys.getrefcount(o) for o in (ok, transient, rejected, r, OSError, KeyError)]
        objects = len(gc.get_objects())
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        asyncio.run(round_(34_000))  # 102,000 async calls
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    assert [sys.getrefcount(o) for o in (ok, transient, rejected, r, OSError, KeyError)] == refs
    assert len(gc.get_objects()) - objects < 100
    assert after - before < 64 * 1024, f"grew {after - before} bytes"


def test_cycles_through_native_objects_are_collected():
    import weakref

    r = Retrier(initial_delay=0)

    def make_decorated():
        @r
        def f(n):
            return f if n == 0 else n  # the closure holds the wrapper: a cycle

        return weakref.ref(f)

    class Marker(ConnectionError):
        pass

    def abandon_a_loop():
        # A failure's traceback holds this frame, which holds the loop, which holds the
        # native call, which holds the failure: a cycle only the collector can break.
        for attempt in r:
            with attempt:
                err = Marker()
                raise err
            break
        return weakref.ref(err)

    with testing.virtual_time():
        refs = [make_decorated() for _ in range(50)] + [abandon_a_loop() for _ in range(50)]
    gc.collect()
    assert [w for w in refs if w() is not None] == []


def test_rejected_values_leave_refcounts_flat():
    """retry_on_result: the rejected values a call keeps (for RetryExhausted.result and
    the events) are released once the call ends, exhausted or not."""
    busy = object()
    done = object()
    seen = []
    r = Retrier(max_attempts=3, initial_delay=0, jitter="none", retry_on_result=lambda v: v is busy,
                on_event=lambda e: seen.append(1) if not seen else None)
    answers = []

    def flaky():
        answers.append(1)
        return busy if len(answers) % 3 else done

    def always_busy():
        return busy

    def round_(n):
        for _ in range(n):
            r.call(flaky)
            try:
                r.call(always_busy)
            except RetryExhausted as e:
                assert e.result is busy

    with testing.virtual_time():
        round_(1000)
        gc.collect()
        before = (sys.getrefcount(busy), sys.getrefcount(done))
        objects = len(gc.get_objects())
        round_(20_000)
        gc.collect()
    assert (sys.getrefcount(busy), sys.getrefcount(done)) == before
    assert len(gc.get_objects()) - objects < 100
