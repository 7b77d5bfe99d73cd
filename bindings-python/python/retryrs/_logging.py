"""A ready listener that writes events to the ``logging`` module."""

from __future__ import annotations

import logging
from typing import Callable, List, Optional, Union

from ._native import Event

_FAILURES = {"rejected", "exhausted", "cancelled", "breaker_opened"}


class _Rejected:
    """Renders a rejected value in a log line: ``rejected value <repr>``."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"rejected value {self.value!r}"


def log_events(
    logger: Optional[Union[logging.Logger, logging.LoggerAdapter, str]] = None,  # type: ignore[type-arg]
    *,
    level: int = logging.INFO,
    failure_level: int = logging.WARNING,
) -> Callable[[Event], None]:
    """A listener for ``Retrier(on_event=...)``: one log record per outcome worth a line,
    at ``level`` (retrying, success after a retry) or ``failure_level`` (rejected,
    exhausted, cancelled). A failed attempt is not a line of its own: the line that
    follows it (retrying, gave up, ...) names the failure. The record carries the event
    as ``record.retry_event``. For example::

        rates: attempt 1 failed after 3 ms: OSError('503'); retrying in 200 ms
        rates: attempt 2 succeeded after 205 ms
        rates: attempt 5 failed after 3012 ms: OSError('503'); gave up (attempts)
        reads: attempt 2 sent beside the attempt in flight, 50 ms after it (hedge)
    """
    if logger is None:
        logger = logging.getLogger("retryrs")
    elif isinstance(logger, str):
        logger = logging.getLogger(logger)
    log = logger

    def listener(event: Event) -> None:
        kind = event.kind
        if kind == "attempt_failed" or (kind == "success" and event.attempt == 1):
            return  # told by the next line / nothing happened worth a line
        lvl = failure_level if kind in _FAILURES else level
        if not log.isEnabledFor(lvl):
            return
        ms = round(event.elapsed * 1000)
        if kind == "success":
            log.log(lvl, "%s: attempt %d succeeded after %d ms", event.name, event.attempt, ms, extra={"retry_event": event})
            return
        if kind == "hedge":
            # A hedged call sent another attempt beside the one(s) in flight.
            log.log(lvl, "%s: attempt %d sent beside the attempt in flight, %d ms after it (hedge)", event.name, event.attempt, round((event.delay or 0.0) * 1000), extra={"retry_event": event})
            return
        if kind.startswith("breaker_"):
            # The circuit breaker moved: opened (for how long), half-open, closed.
            if kind == "breaker_opened":
                log.log(lvl, "%s: circuit breaker opened for %d ms", event.name, round((event.delay or 0.0) * 1000), extra={"retry_event": event})
            else:
                log.log(lvl, "%s: circuit breaker %s", event.name, kind[len("breaker_"):].replace("_", "-"), extra={"retry_event": event})
            return
        if event.reason == "circuit_open":
            log.log(lvl, "%s: refused, circuit breaker open (no attempt made)", event.name, extra={"retry_event": event})
            return
        if kind == "cancelled":
            log.log(lvl, "%s: cancelled after %d attempts, %d ms: %r", event.name, event.attempt, ms, event.error, extra={"retry_event": event})
            return
        args: List[object]
        if kind == "retrying":
            outcome, args = "retrying in %d ms", [round((event.delay or 0.0) * 1000)]
        elif kind == "rejected":
            outcome, args = "not retried (permanent)", []
        else:
            outcome, args = "gave up (%s)", [event.reason]
        # The failure: the exception, or the value retry_on_result rejected.
        failure = event.error if event.error is not None else _Rejected(event.result)
        log.log(
            lvl,
            "%s: attempt %d failed after %d ms: %r; " + outcome,
            event.name, event.attempt, ms, failure, *args,
            extra={"retry_event": event},
        )

    return listener
