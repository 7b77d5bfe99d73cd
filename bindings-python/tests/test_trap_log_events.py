"""Trap 11: log_events() writes one readable line per event worth logging: a retry is
one line, not "attempt 1 attempt failed" followed by another."""

import logging

import pytest

from retryrs import Retrier, RetryExhausted, log_events


def test_one_readable_line_per_retry(virtual, caplog):
    calls = []

    def f():
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("down")
        return "ok"

    caplog.set_level(logging.DEBUG, logger="retryrs")
    Retrier(jitter="none", on_event=log_events(), name="rates").call(f)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines  # two retries, one success
    assert not any("attempt failed" in line for line in lines), lines
    assert lines[0] == "rates: attempt 1 failed after 0 ms: ConnectionError('down'); retrying in 200 ms"
    assert lines[-1] == "rates: attempt 3 succeeded after 600 ms"


def test_exhaustion_is_one_line_with_its_reason(virtual, caplog):
    caplog.set_level(logging.DEBUG, logger="retryrs")

    def f():
        raise ConnectionError("down")

    with pytest.raises(RetryExhausted):
        Retrier(max_attempts=1, on_event=log_events()).call(f)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["retry: attempt 1 failed after 0 ms: ConnectionError('down'); gave up (attempts)"]
    assert caplog.records[0].levelno == logging.WARNING


def test_a_rejected_value_is_named_in_its_line(virtual, caplog):
    caplog.set_level(logging.DEBUG, logger="retryrs")
    answers = iter(["busy", "ok"])
    Retrier(jitter="none", retry_on_result=lambda v: v == "busy", on_event=log_events()).call(lambda: next(answers))
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "retry: attempt 1 failed after 0 ms: rejected value 'busy'; retrying in 200 ms"
