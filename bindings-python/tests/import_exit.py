"""A daemon thread inside its first retryrs call while the interpreter finalizes, with the
window for a lazy import widened (run by test_exit.py; by hand: `PYTHONPATH=
bindings-python/python python3.X bindings-python/tests/import_exit.py MODE`). Prints
"exiting" and must exit 0.

CPython 3.9-3.13 end a daemon thread that takes the GIL back during finalization with
pthread_exit. Where the native module imported a helper module on first use
(`retryrs._green` at the first failed `call`, `retryrs._aio` at the first `call_async`),
that import ran inside the native frames of a once-cell's initialisation, and the forced
unwind through them aborted the process (SIGABRT, exit status 134).

The window is widened both ways: every import the worker thread starts once it is inside
the call reaches a finder that sleeps (the thread leaves the GIL there, as an import of
a module on a slow disk does), and an object whose `__del__` sleeps is collected while
the interpreter finalizes (the GIL is free then, and the sleeping thread takes it back).
With nothing imported at call time the finder is never asked: the script says so on
stderr ("imported during the call: ..."), which the test treats as a failure too.

MODE: `sync` (`Retrier.call`, its first failure: a wait) or `async` (`call_async` in the
worker's own event loop).
"""

import asyncio
import sys
import threading
import time
import types

from retryrs import Retrier

mode = sys.argv[1]
entered = threading.Event()  # the worker is inside the call
importing = threading.Event()  # the worker is in an import it started there
worker_ident = []


class SlowFinder:
    """Sleeps on every import the worker asks for once inside the call."""

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001, ANN201
        if entered.is_set() and worker_ident == [threading.get_ident()]:
            sys.stderr.write(f"imported during the call: {name}\n")
            sys.stderr.flush()
            importing.set()
            time.sleep(0.1)
        return None


class SlowDel:
    """Collected while the interpreter finalizes: the GIL is free while it sleeps. (Held
    by a module of its own: __main__ outlives finalization's module clearing while the
    worker's frames use its globals. Its names are bound here, not looked up in globals
    that finalization clears.)"""

    def __del__(self, sleep=time.sleep) -> None:
        sleep(0.2)


holder = types.ModuleType("import_exit_slow_del")
holder.slow = SlowDel()  # type: ignore[attr-defined]
sys.modules[holder.__name__] = holder
del holder
sys.meta_path.insert(0, SlowFinder())
retrier = Retrier(retry_on=(ConnectionError,), max_attempts=3, initial_delay=30, max_delay=30, jitter="none", deadline=None)


def fail() -> None:
    raise ConnectionError("down")


async def fail_async() -> None:
    fail()


def worker() -> None:
    worker_ident.append(threading.get_ident())
    entered.set()
    try:
        if mode == "sync":
            retrier.call(fail)
        else:
            asyncio.run(retrier.call_async(fail_async))
    except Exception:
        pass


threading.Thread(target=worker, daemon=True).start()
entered.wait()
# Exit while the worker is in the import, if the call makes one (at its first failure:
# well within the timeout), so the finder's sleep ends in the slow __del__'s.
importing.wait(0.1)
print("exiting", flush=True)
