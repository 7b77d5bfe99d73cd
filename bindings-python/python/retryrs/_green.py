"""Blocking waits that cooperate with gevent and eventlet.

A blocking retry wait (``retrier.call``, a decorated sync function, ``for attempt in
retrier``) normally sleeps in the native module with the GIL released. Once gevent or
eventlet has monkey-patched ``time``, the process runs many green threads on one OS
thread, and such a sleep would stall all of them: the native wait asks :func:`waiter`
first, and waits with the library's own primitives when it answers. Nothing is imported
here unless the program has already imported (and patched with) that library.

A wait returns True when the call's cancel token fired during it (at once, from any
green or OS thread), False when the delay passed; whatever ends it otherwise (gevent's
``kill``, a ``Timeout``, KeyboardInterrupt) propagates, and ends the call.
"""

from __future__ import annotations

import importlib
import sys
import time
from typing import Any, Callable, Optional

Wait = Callable[[float, Any], bool]

# One sleep of the hub at most, so that a delay near the engine's maxima never reaches
# the event loop's timer as a number it cannot hold.
_LONGEST = 3600.0


def waiter() -> Optional[Wait]:
    """The wait to use instead of the native one, or None (nothing is patched)."""
    modules = sys.modules
    if "gevent.monkey" in modules and modules["gevent.monkey"].is_module_patched("time"):
        return _gevent_wait
    if "eventlet.patcher" in modules and modules["eventlet.patcher"].is_monkey_patched("time"):
        return _eventlet_wait
    return None


def _gevent_wait(delay: float, token: Any) -> bool:
    gevent = importlib.import_module("gevent")
    Event = importlib.import_module("gevent.event").Event

    if token is None:
        while delay > 0:
            gevent.sleep(min(delay, _LONGEST))
            delay -= _LONGEST
        return False
    fired = Event()
    # token.cancel() runs its callbacks on the cancelling thread: an OS thread other
    # than this hub's may not touch the Event directly.
    loop = gevent.get_hub().loop
    sub = token._subscribe(lambda: loop.run_callback_threadsafe(fired.set))
    try:
        while delay > 0:
            if fired.wait(min(delay, _LONGEST)):
                return True
            delay -= _LONGEST
        return False
    finally:
        token._unsubscribe(sub)


# eventlet's hub has no thread-safe way in: a cancel from this hub's own OS thread (any
# green thread) wakes the wait at once, one from another OS thread is seen within a
# slice.
_ELSEWHERE_SLICE = 0.05


def _eventlet_wait(delay: float, token: Any) -> bool:
    eventlet = importlib.import_module("eventlet")
    Event = importlib.import_module("eventlet.event").Event
    original = importlib.import_module("eventlet.patcher").original

    if token is None:
        while delay > 0:
            eventlet.sleep(min(delay, _LONGEST))
            delay -= _LONGEST
        return False
    fired = Event()
    here = original("threading").get_ident()

    def wake() -> None:
        if original("threading").get_ident() == here and not fired.ready():
            fired.send(True)

    sub = token._subscribe(wake)
    try:
        end = time.monotonic() + delay  # (eventlet patches time.sleep, not the clocks)
        while not token.cancelled:
            left = end - time.monotonic()
            if left <= 0:
                return False
            fired.wait(min(left, _ELSEWHERE_SLICE))
        return True
    finally:
        token._unsubscribe(sub)
