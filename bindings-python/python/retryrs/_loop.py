"""The loop form, for code that is not one function call:

    for attempt in retrier:
        with attempt:
            rate = fetch()

    async for attempt in retrier:
        with attempt:
            rate = await afetch()

The ``with`` block is one attempt: leaving it normally ends the loop; an exception goes to
the engine, which says retry (the exception is swallowed and the loop waits, then runs the
block again) or stop (the original exception, or RetryExhausted, is raised from the
``with``). The decisions are the engine's, exactly as for ``retrier.call``.
"""

from __future__ import annotations

import warnings
from types import TracebackType
from typing import TYPE_CHECKING, Any, Optional, Type

from ._runtime import sleep as _sleep

if TYPE_CHECKING:
    from ._native import AttemptInfo, SteppedCall, Retrier

from ._aio import _CURRENT, Bound, TrioBound, _answer, _failed, _predicate, _rejected, bound


_UNSET: Any = object()
# What an ``async for`` attempt left for ``__anext__`` to await (AsyncAttempts._pending).
_FAILED, _REJECTED, _JUDGE = 0, 1, 2


class Attempt:
    """One attempt of the loop form: a context manager; ``number`` is 1-based.

    With ``retry_on_result``, hand the attempt's value over for the predicate to judge::

        for attempt in retrier:
            with attempt:
                attempt.result = response = fetch()

    A rejected value is a failure like a transient error (the loop waits and runs the
    block again; when retries run out, ``RetryExhausted.result`` holds it). With
    ``retry_on_result``, a block that ends without an error and without setting a result
    is a TypeError: the predicate would have nothing to judge, and a forgotten
    ``attempt.result = ...`` would make every value a success. Under ``for`` the predicate (and every hook)
    answers synchronously (``with`` cannot await); under ``async for`` an async one is
    awaited, as tenacity's ``AsyncRetrying`` does: the block's failure is then judged when
    the loop asks for the next attempt, and one that ends the call is raised there, by
    the ``async for``.

    ``remaining`` and ``deadline`` are the attempt's bound, as ``retryrs.current_attempt()``
    gives them (which also works inside the ``with`` block): under ``async for`` the
    bound interrupts the block (an ``AttemptTimeout``); under ``for`` it cannot, pass
    ``remaining`` to the I/O as its timeout.
    """

    __slots__ = ("number", "_owner", "_result", "_info", "_entered", "_bound")

    def __init__(self, owner: "_Base", info: "AttemptInfo") -> None:
        self.number = info.number
        self._owner = owner
        self._result: Any = _UNSET
        self._info = info
        self._entered: Any = None
        self._bound: "Optional[Bound | TrioBound]" = None

    @property
    def remaining(self) -> Optional[float]:
        """Seconds left of this attempt's bound (never below 0), or None: unbounded."""
        return self._info.remaining

    @property
    def deadline(self) -> Optional[float]:
        """When this attempt's bound ends, a ``time.monotonic()`` value, or None."""
        return self._info.deadline

    @property
    def result(self) -> Any:
        """The value handed over with ``attempt.result = value`` (AttributeError if none)."""
        if self._result is _UNSET:
            raise AttributeError("this attempt has no result: set it with `attempt.result = value`")
        return self._result

    @result.setter
    def result(self, value: Any) -> None:
        self._result = value

    def __enter__(self) -> "Attempt":
        self._entered = _CURRENT.set(self._info)
        self._bound = self._owner._arm(self._info)
        return self

    def __exit__(self, et: Optional[Type[BaseException]], exc: Optional[BaseException], tb: Optional[TracebackType]) -> bool:
        if self._entered is not None:
            _CURRENT.reset(self._entered)
            self._entered = None
        if self._bound is not None:
            judged = self._bound.leave(exc)
            self._bound = None
            if judged is not exc and judged is not None:
                # The bound cancelled the block: its AttemptTimeout is the failure (judged
                # by retry_on, priced as a timeout by a quota), and the cancellation is
                # swallowed if the engine retries.
                return self._owner._exit(judged, self._result, timed_out=True)
        if exc is None and self._result is _UNSET and self._owner._r.retry_on_result is not None:
            self._owner._open = False
            raise TypeError(
                f"attempt {self.number} set no result, and this retrier has retry_on_result, which judges it: "
                "hand the value over with `attempt.result = value` inside the `with` block"
            )
        return self._owner._exit(exc, self._result)

    def __repr__(self) -> str:
        return f"<Attempt {self.number}>"


class _Base:
    def __init__(self, r: "Retrier") -> None:
        self._r = r
        self._start = r._start()
        self._call: Optional[SteppedCall] = None
        self._open = False
        self._done = False
        self._delay = 0.0

    def _next(self) -> Attempt:
        if self._open:
            raise RuntimeError("each attempt of `for attempt in retrier` must run inside `with attempt:`")
        self._open = True
        # The first attempt, or the one the call has just resumed with.
        return Attempt(self, self._start if self._call is None else self._call.current())

    def _arm(self, info: "AttemptInfo") -> "Optional[Bound | TrioBound]":
        """The sync loop form cannot interrupt its block: nothing to arm."""
        return None

    def _exit(self, exc: Optional[BaseException], result: Any = _UNSET, timed_out: bool = False) -> bool:
        self._open = False
        if exc is None and result is not _UNSET and self._r.retry_on_result is not None and self._rejects(result):
            if self._call is None:
                self._call = self._r._begin(self._start)
            self._delay = self._call.rejected(result)  # raises when the call ends
            return False
        if exc is None:
            self._done = True
            if self._call is not None:
                self._call.succeeded()
            else:
                self._r._succeeded(self._start)  # (reported, or only counted)
            return False
        if self._call is None:
            self._call = self._r._begin(self._start)
        # Raises when the call ends. Hooks answer synchronously here (`__exit__` cannot
        # await): one that returns an awaitable is a TypeError naming it.
        self._delay = self._call.failed(exc, None, timed_out)
        return True


    def _rejects(self, value: Any) -> bool:
        verdict = self._r._rejects(value)
        if type(verdict) is bool:
            return verdict
        if hasattr(verdict, "close"):
            verdict.close()
        raise TypeError("retry_on_result returned an awaitable, which the loop form cannot await (`with` is sync): give a plain function, or use call_async")


class Attempts(_Base):
    """``for attempt in retrier:`` (waits block, GIL released). A block cannot be
    interrupted: its bound is ``attempt.remaining``, to pass to I/O."""

    def __iter__(self) -> "Attempts":
        return self

    def __next__(self) -> Attempt:
        if self._done:
            raise StopIteration
        if self._call is not None and not self._open:
            if self._delay:
                self._call.wait(self._delay)
            self._call.resume()
        return self._next()


class AsyncAttempts(_Base):
    """``async for attempt in retrier:`` (waits are awaited; the bound interrupts the
    block, as an ``AttemptTimeout``). An async hook (``retry_on``, ``retry_on_result``,
    ``retry_after``, ``wait``, ``before_sleep``) is awaited, bounded by the deadline and
    the cancel token like call_async's: ``__exit__`` cannot await, so an attempt whose
    verdict waits on one swallows its failure and the verdict is awaited in
    ``__anext__``, which raises whatever ends the call."""

    _pending: Any = None  # (kind, the hook's awaitable, the failure or value, timed_out)

    def _exit(self, exc: Optional[BaseException], result: Any = _UNSET, timed_out: bool = False) -> bool:
        r = self._r
        judged = exc is None and result is not _UNSET and r.retry_on_result is not None
        if exc is None and not judged:
            return super()._exit(exc, result)
        self._open = False
        if self._call is None:
            self._call = r._begin(self._start)
        if exc is not None:
            step = self._call.failed(exc, (), timed_out)  # raises when the call ends
            if type(step) is float:
                self._delay = step
            else:
                self._pending = (_FAILED, step, exc, timed_out)
            return True
        verdict = r._rejects(result)
        if type(verdict) is not bool:
            self._pending = (_JUDGE, verdict, result, False)
        elif verdict:
            step = self._call.rejected(result, ())  # raises when the call ends
            if type(step) is float:
                self._delay = step
            else:
                self._pending = (_REJECTED, step, result, False)
        else:
            self._done = True
            self._call.succeeded()
        return False

    async def _judge(self, call: "SteppedCall") -> None:
        """The pending verdict, its hooks awaited: the wait to take, or the call's end
        (raised; StopAsyncIteration for a value the result predicate accepts)."""
        kind, step, subject, timed_out = self._pending
        self._pending = None
        if kind == _FAILED:
            self._delay = await _failed(call, subject, timed_out, _predicate(self._r.retry_on), step)
        elif kind == _REJECTED:
            self._delay = await _rejected(call, subject, step)
        elif await _answer(call, step, late=True):
            self._delay = await _rejected(call, subject)
        else:
            self._done = True
            call.succeeded()
            raise StopAsyncIteration

    def _arm(self, info: "AttemptInfo") -> "Optional[Bound | TrioBound]":
        if info._bound is None or not self._r._interrupts:
            return None
        return bound(info)

    def __aiter__(self) -> "AsyncAttempts":
        return self

    def __del__(self) -> None:
        # The loop was left (break, return) after a block whose failure still awaited
        # its async hook's verdict: that verdict, perhaps "stop", is never known, so the
        # failure would vanish without a word. Say so, naming it (and close the hook's
        # awaitable, whose own "never awaited" warning would name only the hook).
        pending = self._pending
        if pending is None:
            return
        self._pending = None
        kind, step, subject, _ = pending
        close = getattr(step, "close", None)
        if close is not None:
            try:
                close()
            except Exception:
                pass
        what = "value" if kind != _FAILED else "failure"
        warnings.warn(
            f"retryrs: `async for attempt in retrier` was left before the {what} of its last attempt "
            f"({subject!r}) was judged by its async hook: it was never raised; let the loop ask "
            "for the next attempt (no break after a failed `with attempt:`) to get the call's outcome",
            RuntimeWarning,
            stacklevel=2,
        )

    async def __anext__(self) -> Attempt:
        if self._done:
            raise StopAsyncIteration
        if self._call is not None and not self._open:
            if self._pending is not None:
                await self._judge(self._call)
            await _sleep(self._call, self._delay)  # (0: still one turn of the loop)
            self._call.resume()
        return self._next()
