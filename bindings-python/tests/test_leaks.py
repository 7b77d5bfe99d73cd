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
        raise OSError("503")

    def rejected():
        # A fresh error each time: re-raising one object grows its own __traceback__
        # chain in any Python code, which is not what this test measures.
        raise KeyError("gone")

    def round_(n):
        for i in range(n):
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
        raise OSError("503")

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
