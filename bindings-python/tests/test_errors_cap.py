"""RetryExhausted.errors keeps at most the last 64 failures (SEMANTICS: outcomes); the
count is in attempts."""

import pytest

from retryrs import Retrier, RetryExhausted


def test_errors_keep_the_last_64(virtual):
    raised = []

    def f():
        e = ConnectionError(f"fail {len(raised) + 1}")
        raised.append(e)
        raise e

    with pytest.raises(RetryExhausted) as info:
        Retrier(max_attempts=100, initial_delay=0, max_delay=0, deadline=None).call(f)
    e = info.value
    assert e.attempts == 100
    assert len(e.errors) == 64
    assert all(a is b for a, b in zip(e.errors, raised[-64:]))
    assert e.__cause__ is raised[-1]
