"""Trap 7: the default reader of an exception's `retry_after` attribute ignores what it
cannot use (a method, a dict, a bool) instead of ending the call with a TypeError, and
accepts bytes as parse_retry_after does."""

import pytest

from retryrs import Retrier


class WithMethod(ConnectionError):
    def retry_after(self):
        return 3


class WithAttr(ConnectionError):
    def __init__(self, value):
        super().__init__("down")
        self.retry_after = value


def delays_of(exc_factory):
    delays = []
    calls = []

    def f():
        calls.append(1)
        if len(calls) == 1:
            raise exc_factory()
        return "ok"

    r = Retrier(jitter="none", initial_delay=0.01, on_event=lambda e: delays.append(e.delay) if e.kind == "retrying" else None)
    assert r.call(f) == "ok"
    return delays


@pytest.mark.parametrize("factory", [WithMethod, lambda: WithAttr({"seconds": 3}), lambda: WithAttr(True), lambda: WithAttr(object())])
def test_an_unusable_attribute_is_no_hint(virtual, factory):
    assert delays_of(factory) == [0.01]


def test_bytes_are_a_retry_after_header(virtual):
    assert delays_of(lambda: WithAttr(b"2")) == [2.0]


def test_a_hook_that_returns_garbage_is_still_an_error(virtual):
    def f():
        raise ConnectionError("down")

    with pytest.raises(TypeError, match="retry_after"):
        Retrier(retry_after=lambda e: {"bad": 1}).call(f)
