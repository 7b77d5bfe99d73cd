"""Virtual time for tests: while it is on, no retry wait takes real time; every wait
advances one process-wide virtual clock instead, so delays, the deadline and every event
behave exactly as in real time, instantly.

    with retryrs.testing.virtual_time() as clock:
        ...                      # calls made here never sleep
        clock.advance(0.5)       # an attempt that "takes" half a second

or globally: ``retryrs.testing.enable()`` / ``disable()``. The switch is the engine's own,
shared with every host in the process.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Union

from . import _native
from ._native import VirtualTime

__all__ = ["enable", "disable", "is_on", "advance", "now", "virtual_time", "VirtualTime"]


def enable() -> None:
    """Turns virtual time on, globally, with a fresh clock at zero."""
    _native._testing_enable()


def disable() -> None:
    """Turns virtual time off."""
    _native._testing_disable()


def is_on() -> bool:
    return _native._testing_is_on()


def advance(seconds: Union[float, timedelta]) -> None:
    """Moves the virtual clock forward (for an attempt that takes time)."""
    _native._testing_advance(seconds)


def now() -> float:
    """The virtual clock, in seconds."""
    return _native._testing_now()


def virtual_time() -> VirtualTime:
    """A context manager: virtual time inside, whatever was there before after."""
    return VirtualTime()
