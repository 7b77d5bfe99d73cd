"""Daemon threads inside retryrs when the interpreter exits (run by test_exit.py, and by
hand on any interpreter: `PYTHONPATH=bindings-python/python python3.X
bindings-python/tests/daemon_exit.py MODE`). Prints "exiting" and must exit 0.

CPython 3.9-3.13 end a daemon thread that takes the GIL back while the interpreter
finalizes with pthread_exit, a forced unwind through every frame on the thread's stack;
through the native module's frames that crashed the process (SIGSEGV / SIGABRT).

MODE says where the threads are when the main thread returns:
  cancel   the issue's script: the main thread fires the threads' cancel token and
           returns at once, while they leave their waits and raise RetryCancelled
  wait     in a long retry wait
  attempt  in an attempt (Python code called from the native executor, taking and
           dropping the GIL)
  busy     retrying every millisecond: crossing between Python and the native module
           all the time
"""

import sys
import threading
import time

from retryrs import CancelToken, Retrier

mode = sys.argv[1]
delay = {"cancel": 0.001, "wait": 60.0, "attempt": 0.001, "busy": 0.001}[mode]
token = CancelToken()
retrier = Retrier(
    retry_on=(ConnectionError,), max_attempts=10**9, initial_delay=delay, max_delay=delay, jitter="none", deadline=None
)
started = threading.Barrier(5)


def fail() -> None:
    if mode == "attempt":
        # Still running when the interpreter finalizes: short sleeps and some bytecode,
        # so the thread drops and takes the GIL back all the time.
        end = time.monotonic() + 5
        while time.monotonic() < end:
            time.sleep(0.0005)
            sum(range(100))
    raise ConnectionError("down")


def worker() -> None:
    started.wait()
    try:
        retrier.with_cancel(token).call(fail)
    except Exception:
        pass


for _ in range(4):
    threading.Thread(target=worker, daemon=True).start()
started.wait()
time.sleep(0.05)
if mode == "cancel":
    token.cancel()
print("exiting", flush=True)
