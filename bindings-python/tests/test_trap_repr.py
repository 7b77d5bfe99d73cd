"""Trap 13: repr(Retrier) shows every option that changes behaviour, retry_on, seed and
budget included."""

from retryrs import Retrier, RetryBudget


def test_repr_shows_retry_on_seed_and_budget():
    text = repr(Retrier(retry_on=(ConnectionError, TimeoutError), seed=7, budget=RetryBudget(10, 0.5)))
    assert "retry_on=(<class 'ConnectionError'>, <class 'TimeoutError'>)" in text
    assert "seed=7" in text
    assert "budget=RetryBudget(max_tokens=10" in text


def test_repr_of_the_defaults_shows_the_default_retry_on():
    text = repr(Retrier())
    assert "retry_on=<transient network errors>" in text and "seed=None" in text and "budget=None" in text
