"""Virtual time for tests: while it is on, no retry wait takes real time; every wait
advances a virtual clock instead, so delays, the deadline and every event behave exactly
as in real time, instantly.

    with retryrs.testing.virtual_time() as clock:
        ...                      # calls made here never sleep
        clock.advance(0.5)       # an attempt that "takes" half a second

Virtual time belongs to the ``contextvars`` context it was turned on in: this thread, or
this asyncio task and the tasks it starts (which copy the context). Other threads and
tasks, such as tests running in parallel, keep real time. A call reads the clock once, as
it starts, in the context that starts it. To take the time along to a thread pool, run
the work in a copy of the context (``contextvars.copy_context().run``; asyncio's
``to_thread`` does this for you).

``enable()`` / ``disable()`` switch the current context without a ``with`` block. The
whole process (every thread and task, and every host in the process) is switched only
when asked by name: ``virtual_time(scope="process")``, ``enable(scope="process")``.

Scopes nest by count: leaving any scope hands the clock back to the newest one still
open, whatever the order they are left in.
"""

from __future__ import annotations

from contextvars import ContextVar
from datetime import timedelta
from typing import Optional, Union

from . import _native
from ._native import _ProcessScope, _VirtualScope

__all__ = ["enable", "disable", "is_on", "advance", "now", "virtual_time", "VirtualTime"]

# The newest scope entered in this context (a chain through each scope's parent); the
# native side reads it as a call starts.
_scopes: "ContextVar[Optional[_VirtualScope]]" = _native._virtual_time_var
# The scope enable() opened in this context, for disable() to leave.
_switch: "ContextVar[Optional[_VirtualScope]]" = ContextVar("retryrs_virtual_time_switch", default=None)

_SCOPES = ("context", "process")


def _check_scope(scope: str, where: str) -> None:
    if scope not in _SCOPES:
        raise ValueError(f'{where}: scope must be "context" or "process", got {scope!r}')


def _open() -> _VirtualScope:
    s = _VirtualScope(_scopes.get())
    _scopes.set(s)
    return s


def _leave(s: _VirtualScope) -> None:
    s.close()
    top = _scopes.get()
    if top is not None and top.closed:
        _scopes.set(top.first_open())


def enable(scope: str = "context") -> None:
    """Turns virtual time on with a fresh clock at zero: in the current context (this
    thread, or this task and the tasks it starts), or with ``scope="process"`` for every
    thread and task of the process."""
    _check_scope(scope, "enable()")
    if scope == "process":
        _native._testing_enable_process_wide()
        return
    old = _switch.get()
    if old is not None:
        _leave(old)
    _switch.set(_open())


def disable(scope: str = "context") -> None:
    """Turns off what ``enable(scope)`` turned on (open ``virtual_time()`` scopes stay on
    until they are left)."""
    _check_scope(scope, "disable()")
    if scope == "process":
        _native._testing_disable_process_wide()
        return
    old = _switch.get()
    if old is not None:
        _leave(old)
        _switch.set(None)


def is_on() -> bool:
    """Whether a call starting here would run on virtual time."""
    return _native._testing_is_on()


def advance(seconds: Union[float, timedelta]) -> None:
    """Moves the current virtual clock forward (for an attempt that takes time)."""
    _native._testing_advance(seconds)


def now() -> float:
    """The current virtual clock, in seconds."""
    return _native._testing_now()


class VirtualTime:
    """A context manager: virtual time inside (for the current context, or with
    ``scope="process"`` for the whole process), whatever was there before after."""

    def __init__(self, scope: str = "context") -> None:
        _check_scope(scope, "virtual_time()")
        self._scope = scope
        self._entered: Union[_VirtualScope, _ProcessScope, None] = None

    def __enter__(self) -> VirtualTime:
        if self._entered is not None:
            raise RuntimeError("this virtual_time() is already entered")
        self._entered = _open() if self._scope == "context" else _ProcessScope()
        return self

    def __exit__(self, *_exc: object) -> None:
        entered, self._entered = self._entered, None
        if isinstance(entered, _VirtualScope):
            _leave(entered)
        elif entered is not None:
            entered.close()

    def _clock(self) -> Union[_VirtualScope, _ProcessScope]:
        if self._entered is None:
            raise RuntimeError("virtual_time() is not entered")
        return self._entered

    def advance(self, seconds: Union[float, timedelta]) -> None:
        """Moves this scope's virtual clock forward."""
        self._clock().advance(seconds)

    def now(self) -> float:
        """This scope's virtual now, in seconds."""
        return self._clock().now()


def virtual_time(scope: str = "context") -> VirtualTime:
    """A context manager: virtual time inside, whatever was there before after.
    ``scope="context"`` (the default): this thread, or this asyncio task and the tasks it
    starts; ``scope="process"``: every thread and task of the process."""
    return VirtualTime(scope)
