"""A ready listener that writes events to the ``logging`` module."""

from __future__ import annotations

import logging
from typing import Callable, Optional, Union

from ._native import Event

_FAILURES = {"attempt_failed", "rejected", "exhausted", "cancelled"}


def log_events(
    logger: Optional[Union[logging.Logger, logging.LoggerAdapter, str]] = None,  # type: ignore[type-arg]
    *,
    level: int = logging.INFO,
    failure_level: int = logging.WARNING,
) -> Callable[[Event], None]:
    """A listener for ``Retrier(on_event=...)``: one log record per event, at ``level``
    (success, retrying) or ``failure_level`` (attempt_failed, rejected, exhausted,
    cancelled). The record carries the event as ``record.retry_event``."""
    if logger is None:
        logger = logging.getLogger("retryrs")
    elif isinstance(logger, str):
        logger = logging.getLogger(logger)
    log = logger

    def listener(event: Event) -> None:
        lvl = failure_level if event.kind in _FAILURES else level
        if not log.isEnabledFor(lvl):
            return
        parts = ["%s: attempt %d %s after %d ms"]
        args: list = [event.name, event.attempt, event.kind.replace("_", " "), round(event.elapsed * 1000)]  # type: ignore[type-arg]
        if event.delay is not None:
            parts.append(", waiting %d ms")
            args.append(round(event.delay * 1000))
        if event.reason is not None:
            parts.append(" (%s)")
            args.append(event.reason)
        if event.error is not None:
            parts.append(": %r")
            args.append(event.error)
        log.log(lvl, "".join(parts), *args, extra={"retry_event": event})

    return listener
