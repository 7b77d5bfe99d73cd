"""The exceptions a retried call can raise (besides the function's own)."""

from __future__ import annotations

from typing import Any, Optional, Tuple


class RetryError(Exception):
    """Base of every error retryrs raises itself."""


class RetryExhausted(RetryError):
    """Transient failures ran out of room.

    ``attempts``: calls made; ``reason``: ``"attempts"``, ``"deadline"``, ``"budget"``,
    ``"retry_after"`` (the server asked for a wait longer than ``max_retry_after``, or a
    ``wait`` hook gave one), ``"stopped"`` (a ``before_sleep`` hook returned False or raised
    ``StopRetrying``) or
    ``"circuit_open"`` (the Retrier's circuit breaker refused the call: no attempt was
    made; ``breaker_state`` is ``"open"``, ``"half_open"`` or ``"isolated"`` and ``retry_in`` the seconds
    before a probe may go); ``errors``: the exceptions among the last 64 failures, in
    order (the count is in ``attempts``); ``result``: the last value ``retry_on_result``
    rejected, when the last failure was a value (else None). ``__cause__`` is the last
    failure when it was an exception.
    """

    #: For reason ``"circuit_open"``: the breaker's state (else None).
    breaker_state: Optional[str] = None
    #: For reason ``"circuit_open"``: seconds before the breaker lets a probe through.
    retry_in: Optional[float] = None

    def __init__(self, message: str, *, attempts: int, reason: str, errors: Tuple[BaseException, ...], name: str = "retry", result: Any = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.reason = reason
        self.errors = tuple(errors)
        self.name = name
        self.result = result

    @property
    def last_error(self) -> Optional[BaseException]:
        return self.errors[-1] if self.errors else None

    def __reduce__(self) -> Any:
        return (_rebuild, (type(self), self.args, self.__dict__))


class RetryCancelled(RetryError):
    """The call's ``CancelToken`` fired. ``attempts`` made and ``errors`` so far;
    ``__cause__`` is the last failure, if there was one and it was an exception;
    ``result`` the last rejected value, if that was the last failure."""

    def __init__(self, message: str, *, attempts: int, errors: Tuple[BaseException, ...] = (), name: str = "retry", result: Any = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.errors = tuple(errors)
        self.name = name
        self.result = result

    def __reduce__(self) -> Any:
        return (_rebuild, (type(self), self.args, self.__dict__))


class StopRetrying(Exception):
    """Raised by a ``before_sleep`` hook (which runs before each wait): the call stops
    there, as it would returning False: ``RetryExhausted(reason="stopped")``, the last
    failure its cause and its history kept (with ``reraise=True``, the last error itself).
    """


class _Raised:
    """An awaited hook's exception, handed back to the engine by the async driver."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class AttemptTimeout(RetryError, TimeoutError):
    """An async attempt ran past its bound: the Retrier's ``attempt_timeout``, or the time
    left before its deadline. A ``TimeoutError``, judged by ``retry_on`` like any failure
    (transient under the default ``retry_on``); past the deadline a transient one ends the
    call with reason ``deadline``. ``timeout``: the bound, in seconds, when the attempt
    started."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"attempt took longer than {timeout} s")
        self.timeout = timeout


def _reraise(err: BaseException, exhausted: RetryExhausted) -> BaseException:
    """``reraise=True``: the last error goes up itself, the call's history attached as
    ``err.retryrs_history`` (the RetryExhausted it replaces: ``attempts``, ``reason``,
    ``errors``) and, on 3.11+, as a note the traceback shows."""
    try:
        err.retryrs_history = exhausted  # type: ignore[attr-defined]
    except Exception:  # (a class that refuses attributes: the error still goes up)
        pass
    add_note = getattr(err, "add_note", None)
    note = f"{exhausted} (reraise=True: the last error is raised; .retryrs_history has the {len(exhausted.errors)} failures kept)"
    # One error object raised by many calls (a cached failure) gets each note once.
    if add_note is not None and note not in (getattr(err, "__notes__", None) or ()):
        add_note(note)
    return err


def _rebuild(cls: Any, args: Any, state: Any) -> Any:
    obj = cls.__new__(cls)
    Exception.__init__(obj, *args)
    obj.__dict__.update(state)
    return obj
