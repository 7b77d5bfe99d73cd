"""A breaker and a ratio budget shared with a busy thread must not hang a forked child
(issue 27): a lock the other thread held at os.fork() would never be released in the
child, where that thread does not exist.

A thread calls through an open breaker and a ratio budget in a loop while the main
thread forks; each child calls through both once and leaves. Every child must be done
within 10 s. (Under the GIL the thread is rarely inside the native lock at the fork;
core/tests/fork_breaker.rs forces that case with native threads. This is the host's
end-to-end check, and what catches a binding that starts releasing the GIL there.)"""

import os
import threading
import time

import pytest

from retryrs import CircuitBreaker, Retrier, RetryBudget, RetryExhausted

# Forking while another thread runs is what this file tests: CPython 3.12+ warns about it
# (DeprecationWarning), which says nothing here.
pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX-only"),
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:DeprecationWarning"),
]


def _fail():
    raise ConnectionError("503")


def _wait(pid, timeout=10.0):
    """The child's exit status, or None if it is still running after `timeout` (then killed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return status
        time.sleep(0.005)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return None


def test_a_child_forked_beside_a_busy_thread_uses_the_shared_breaker_and_budget():
    breaker = CircuitBreaker(failures=1, break_duration=3600)
    budget = RetryBudget.ratio()
    opener = Retrier(max_attempts=1, breaker=breaker, deadline=None)
    with pytest.raises(RetryExhausted):
        opener.call(_fail)
    assert breaker.state == "open"
    refused = Retrier(max_attempts=2, initial_delay=0, breaker=breaker, deadline=None)
    rationed = Retrier(max_attempts=3, initial_delay=0, budget=budget, deadline=None)
    stop = threading.Event()

    def hammer():
        while not stop.is_set():
            with pytest.raises(RetryExhausted):
                refused.call(_fail)
            with pytest.raises(RetryExhausted):
                rationed.call(_fail)

    worker = threading.Thread(target=hammer)
    worker.start()
    try:
        while breaker.rejections < 100:
            time.sleep(0.001)
        for _ in range(30):
            pid = os.fork()
            if pid == 0:  # the child: through both once, then leave at once
                code = 1
                try:
                    try:
                        refused.call(_fail)
                    except RetryExhausted as e:
                        code = 0 if e.reason == "circuit_open" else 2
                    try:
                        rationed.call(_fail)
                    except RetryExhausted:
                        pass
                finally:
                    os._exit(code)
            status = _wait(pid)
            assert status is not None, "a forked child hung on the breaker or the budget"
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"child status {status}"
    finally:
        stop.set()
        worker.join()
