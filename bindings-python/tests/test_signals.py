"""Ctrl-C: SIGINT from a parent process during a 10 s wait raises KeyboardInterrupt in
well under a second, in a real child process."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

CHILD = textwrap.dedent(
    """
    import sys
    from retryrs import Retrier

    events = []
    def on_event(e):
        events.append(e.kind)
        if e.kind == "retrying":
            print("waiting", flush=True)

    def flaky():
        raise ConnectionError("503")

    r = Retrier(initial_delay=10, max_delay=10, jitter="none", on_event=on_event)
    try:
        r.call(flaky)
    except KeyboardInterrupt:
        print("interrupted", events, flush=True)
        sys.exit(42)
    print("not interrupted", flush=True)
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigint_during_a_long_wait_raises_keyboard_interrupt_promptly():
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "waiting"
        time.sleep(0.2)  # well inside the 10 s wait
        t0 = time.monotonic()
        os.kill(child.pid, signal.SIGINT)
        out = child.stdout.readline().strip()
        took = time.monotonic() - t0
        assert child.wait(timeout=10) == 42
    finally:
        if child.poll() is None:
            child.kill()
    assert out == "interrupted ['attempt_failed', 'retrying', 'cancelled']"
    assert took < 1.0, f"KeyboardInterrupt took {took:.2f} s"
