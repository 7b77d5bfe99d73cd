"""Trap 2: KeyboardInterrupt / SystemExit raised in an on_event listener propagate (a
real Ctrl-C landing while a listener runs is not lost); ordinary errors still go to
sys.unraisablehook and leave the outcome alone."""

import asyncio

import pytest

from retryrs import Retrier


def _raising(kind, signal):
    def listener(event):
        if event.kind == kind:
            raise signal

    return listener


def _flaky(failures):
    calls = []

    def f():
        calls.append(1)
        if len(calls) <= failures:
            raise ConnectionError("down")
        return "value"

    return f, calls


@pytest.mark.parametrize("signal", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("kind", ["success", "attempt_failed", "retrying"])
def test_a_signal_in_a_listener_ends_a_sync_call(virtual, signal, kind):
    f, calls = _flaky(1)
    r = Retrier(on_event=_raising(kind, signal))
    with pytest.raises(signal):
        r.call(f)
    if kind != "success":
        assert len(calls) == 1, "the call went on after the listener's signal"


@pytest.mark.parametrize("kind", ["success", "retrying"])
def test_a_signal_in_one_of_a_list_of_listeners_ends_the_call(virtual, kind):
    told = []
    f, _ = _flaky(1)
    r = Retrier(on_event=[_raising(kind, KeyboardInterrupt), lambda e: told.append(e.kind)])
    with pytest.raises(KeyboardInterrupt):
        r.call(f)


def test_a_signal_in_a_listener_ends_an_async_call(virtual):
    async def f():
        return 1

    r = Retrier(on_event=_raising("success", KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(r.call_async(f))


def test_a_signal_in_a_listener_ends_the_loop_form(virtual):
    r = Retrier(on_event=_raising("retrying", SystemExit))
    with pytest.raises(SystemExit):
        for attempt in r:
            with attempt:
                raise ConnectionError("down")


def test_an_ordinary_listener_error_still_leaves_the_outcome_alone(virtual):
    seen = []
    import sys

    old = sys.unraisablehook
    sys.unraisablehook = lambda u: seen.append(u.exc_value)
    try:
        f, _ = _flaky(1)
        assert Retrier(on_event=_raising("retrying", ValueError("listener bug"))).call(f) == "value"
    finally:
        sys.unraisablehook = old
    assert [type(e) for e in seen] == [ValueError]
