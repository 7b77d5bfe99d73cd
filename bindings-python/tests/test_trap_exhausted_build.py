"""Trap 12: if building RetryExhausted itself fails, the original errors stay reachable
(as the failure's __cause__)."""

import pytest

import retryrs._errors as errors_module
from retryrs import Retrier


def test_a_failing_exhaustion_error_keeps_the_original(virtual, monkeypatch):
    original = ConnectionError("the real failure")

    def broken_init(self, *a, **k):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(errors_module.RetryExhausted, "__init__", broken_init)

    def f():
        raise original

    with pytest.raises(RecursionError) as info:
        Retrier(max_attempts=2).call(f)
    assert info.value.__cause__ is original
