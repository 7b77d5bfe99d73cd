"""Every message the engine words names knobs as a Python user writes them: the keyword
arguments (``max_attempts``, ``deadline``, ``break_duration``), durations in seconds. The
core renders each message in Python's spelling from its knob table; one case per message
kind: a knob's rule (every numeric knob of the table), the deadline hint, the exhaustion
reasons that name a knob, and the budget's and breaker's own settings."""

import inspect
import re

import pytest

from retryrs import CircuitBreaker, Retrier, RetryBudget, RetryExhausted

from failing import failing
from native_stub import stub_defaults

# Other hosts' spellings of the same knobs: Node's camelCase and C's `_ms` fields.
FOREIGN = re.compile(r"\b[a-z]+(?:[A-Z][a-z]+)+(?:Ms)?\b|\b[a-z_]+_ms\b")


def defaults(cls):
    """``cls``'s keyword parameters and their defaults: from its runtime signature, or,
    where CPython shows none for a native class (3.9 under the stable ABI), from the
    type stub's ``__new__``, which stubtest keeps equal to the module."""
    try:
        return {n: p.default for n, p in inspect.signature(cls).parameters.items()}
    except ValueError:
        return stub_defaults(cls)


def message_of(make):
    with pytest.raises((ValueError, TypeError)) as info:
        make()
    return str(info.value)


def assert_python_spelling(message, *expected):
    assert not FOREIGN.search(message), f"another host's spelling in: {message}"
    for part in expected:
        assert part in message, f"{part!r} not in: {message}"


def test_a_broken_knob_rule_names_every_numeric_knob_as_python_spells_it():
    bad = {"max_attempts": 0, "multiplier": 0.5}
    numeric = ["max_attempts", "initial_delay", "multiplier", "max_delay", "deadline", "max_retry_after", "attempt_timeout"]
    # The signature is written from the knob table: a new knob with a number for default
    # must be added above.
    params = defaults(Retrier)
    with_numbers = {n for n, d in params.items() if type(d) in (int, float)}
    assert with_numbers <= set(numeric) <= set(params), (with_numbers, numeric)
    for name in numeric:
        value = bad.get(name, -1.0)
        assert_python_spelling(message_of(lambda: Retrier(**{name: value})), f"{name} must be")
    # A rule between two knobs names both, durations in seconds as given.
    assert_python_spelling(
        message_of(lambda: Retrier(initial_delay=2, max_delay=1)), "max_delay must be >= initial_delay", "initial_delay is 2"
    )


def test_the_deadline_hint_names_max_attempts_and_deadline_in_seconds(virtual):
    r = Retrier(max_attempts=10, jitter="none")
    hint = (
        "max_attempts=10 needs up to 26.2 s of backoff waits (before jitter), deadline is 15 s: "
        "raise deadline or lower max_attempts"
    )
    assert hint in repr(r)
    with pytest.raises(RetryExhausted) as info:
        r.call(failing())
    assert info.value.reason == "deadline"
    assert_python_spelling(str(info.value), "(deadline reached)", hint)


def test_exhaustion_names_the_limit_as_python_spells_it(virtual):
    with pytest.raises(RetryExhausted) as info:
        Retrier(max_attempts=2, initial_delay=0).call(failing())
    assert_python_spelling(str(info.value), "gave up after 2 attempts (max_attempts reached)")

    def too_long():
        e = ConnectionError("busy")
        e.retry_after = 500
        raise e

    with pytest.raises(RetryExhausted) as info:
        Retrier(max_retry_after=1).call(too_long)
    assert info.value.reason == "retry_after"
    assert_python_spelling(str(info.value), "server asked to wait longer than max_retry_after")


def test_budget_settings_are_named_as_python_spells_them():
    assert_python_spelling(message_of(lambda: RetryBudget(10, 20)), "token_ratio must be > 0 and <= max_tokens, got 20")
    assert_python_spelling(message_of(lambda: RetryBudget(0, 0.1)), "max_tokens must be")
    assert_python_spelling(message_of(lambda: RetryBudget.ratio(ttl=0.5)), "ttl must be in [1 s, 60 s]", "0.5")
    assert_python_spelling(message_of(lambda: RetryBudget.ratio(percent_can_retry=-1)), "percent_can_retry must be")


def test_breaker_settings_are_named_as_python_spells_them_in_seconds():
    assert_python_spelling(
        message_of(lambda: CircuitBreaker(break_duration=0.0005)),
        "break_duration must be >= 1 ms and <= 1 day, got 0.0005 s",
    )
    assert_python_spelling(
        message_of(lambda: CircuitBreaker(break_duration=5, max_break_duration=0.01)),
        "max_break_duration must be >= break_duration and <= 1 day, got 0.01 s",
    )
    assert_python_spelling(
        message_of(lambda: CircuitBreaker("sampling", sampling_duration=0.01)), "sampling_duration must be >= 500 ms"
    )
    assert_python_spelling(message_of(lambda: CircuitBreaker("sampling", failure_ratio=2)), "failure_ratio must be")

