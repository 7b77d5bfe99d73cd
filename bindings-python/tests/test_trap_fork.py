"""Trap 1: forked workers of one parent must not retry in lockstep (SEMANTICS: the jitter
stream of an unseeded policy is different in every process, fork() included)."""

import multiprocessing
import os
import sys

import pytest

from retryrs import Retrier, RetryExhausted, testing

# Forking a process that has threads (the test runner's, the library's) is what users do and
# what this file tests: CPython 3.12+ warns about it (DeprecationWarning), which says nothing here.
pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only"),
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"),
]


def _delays(r):
    """The delays one exhausted call chose, in whole ms, under virtual time."""
    seen = []

    def listener(event):
        if event.kind == "retrying":
            seen.append(round(event.delay * 1000))

    r2 = Retrier(max_attempts=r.max_attempts, initial_delay=r.initial_delay, max_delay=r.max_delay, deadline=None, on_event=listener)
    with testing.virtual_time():
        with pytest.raises(RetryExhausted):
            r2.call(_fail)
    return seen


def _fail():
    raise ConnectionError("down")


def _retrier():
    return Retrier(max_attempts=12, initial_delay=1.0, max_delay=1000.0, deadline=None)


def _child_delays(conn):
    conn.send(_delays(_retrier()))
    conn.close()


def test_os_fork_children_draw_their_own_delays():
    parent = _delays(_retrier())  # the parent has used an unseeded retrier
    children = []
    for _ in range(2):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report its delays, then leave at once
            try:
                os.write(write, ",".join(map(str, _delays(_retrier()))).encode())
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as f:
            children.append(f.read().decode())
        os.waitpid(pid, 0)
    mine = ",".join(map(str, parent))
    assert children[0] and children[1]
    assert children[0] != children[1], "two forked children retried in lockstep"
    assert mine not in children, "a forked child repeated its parent's delays"


@pytest.mark.skipif(sys.platform == "darwin", reason="fork start method is unsafe on macOS")
def test_multiprocessing_fork_workers_draw_their_own_delays():
    parent = _delays(_retrier())
    ctx = multiprocessing.get_context("fork")
    results = []
    for _ in range(2):
        read, write = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_child_delays, args=(write,))
        p.start()
        write.close()
        results.append(read.recv())
        p.join(10)
        assert p.exitcode == 0
    assert results[0] != results[1], "two fork workers retried in lockstep"
    assert parent not in results, "a fork worker repeated its parent's delays"
