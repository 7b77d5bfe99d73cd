"""The blocking executor: outcomes, errors, events, hooks, validation."""

import sys
import threading
import time
import traceback
from datetime import timedelta

import pytest

import retryrs
from retryrs import CancelToken, Retrier, RetryBudget, RetryCancelled, RetryExhausted, testing


class Flaky:
    """Fails `failures` times with `exc_factory()`, then returns `value`."""

    def __init__(self, failures, exc_factory=lambda n: ConnectionError(f"fail {n}"), value="ok"):
        self.failures, self.exc_factory, self.value, self.calls, self.raised = failures, exc_factory, value, 0, []

    def __call__(self, *args, **kwargs):
        self.calls += 1
        self.args = (args, kwargs)
        if self.calls <= self.failures:
            e = self.exc_factory(self.calls)
            self.raised.append(e)
            raise e
        return self.value


def test_success_returns_the_value_and_passes_arguments(virtual):
    f = Flaky(2, value={"rate": 1.0842})
    r = Retrier(jitter="none")
    assert r.call(f, 1, 2, key="k") is f.value
    assert f.calls == 3
    assert f.args == ((1, 2), {"key": "k"})
    assert virtual.now() == pytest.approx(0.6)  # 0.2 + 0.4, slept in virtual time


def test_exhausted_carries_every_failure_in_order_and_the_last_as_cause(virtual):
    f = Flaky(10)
    with pytest.raises(RetryExhausted) as info:
        Retrier(max_attempts=3, name="rates").call(f)
    e = info.value
    assert isinstance(e, retryrs.RetryError)
    assert e.attempts == 3 and e.reason == "attempts"
    assert list(e.errors) == f.raised and all(a is b for a, b in zip(e.errors, f.raised))
    assert e.__cause__ is f.raised[-1]
    assert "rates" in str(e) and "3 attempts" in str(e)


def test_a_permanent_error_surfaces_unchanged_with_its_traceback():
    def boom():
        raise KeyError("missing")  # not an OSError: permanent by default

    with pytest.raises(KeyError) as info:
        Retrier().call(boom)
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "boom" in frames
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_the_rejected_error_is_the_same_object_even_after_retries(virtual):
    err = ValueError("bad request")
    f = Flaky(3, lambda n: ConnectionError("503") if n < 3 else err)
    with pytest.raises(ValueError) as info:
        Retrier().call(f)
    assert info.value is err and f.calls == 3


def test_retry_on_tuple_and_predicate(virtual):
    f = Flaky(2, lambda n: KeyError(n))
    assert Retrier(retry_on=(OSError, KeyError)).call(f) == "ok"
    seen = []
    f = Flaky(2, lambda n: ValueError(n))
    assert Retrier(retry_on=lambda e: seen.append(e) or isinstance(e, ValueError)).call(f) == "ok"
    assert seen == f.raised


@pytest.mark.parametrize("signal", [KeyboardInterrupt, SystemExit, GeneratorExit])
def test_control_flow_signals_are_never_offered_nor_retried(virtual, signal):
    offered, events = [], []
    f = Flaky(5, lambda n: signal())
    for retry_on in (lambda e: offered.append(e) or True, BaseException):
        with pytest.raises(signal):
            Retrier(retry_on=retry_on, on_event=events.append).call(f)
    assert f.calls == 2 and offered == []
    assert [e.kind for e in events] == ["cancelled", "cancelled"]


def test_a_predicate_that_raises_ends_the_call_with_the_original_attached():
    original = ConnectionError("503")

    def predicate(e):
        raise RuntimeError("predicate bug")

    f = Flaky(1, lambda n: original)
    with pytest.raises(RuntimeError, match="predicate bug") as info:
        Retrier(retry_on=predicate).call(f)
    assert info.value.__cause__ is original and f.calls == 1


def test_a_listener_that_raises_changes_nothing_and_is_reported(virtual, monkeypatch):
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u.exc_value))

    def listener(e):
        raise ZeroDivisionError("listener bug")

    assert Retrier(on_event=listener).call(Flaky(2)) == "ok"
    # attempt_failed, retrying, attempt_failed, retrying, success
    assert len(reported) == 5 and all(isinstance(e, ZeroDivisionError) for e in reported)


def test_events_in_order_frozen_and_complete(virtual):
    events = []
    f = Flaky(2)
    Retrier(jitter="none", initial_delay=0.1, name="rates", on_event=events.append).call(f)
    assert [(e.kind, e.attempt) for e in events] == [
        ("attempt_failed", 1), ("retrying", 1), ("attempt_failed", 2), ("retrying", 2), ("success", 3)]
    assert [e.delay for e in events] == [None, 0.1, None, 0.2, None]
    assert [round(e.elapsed * 1000) for e in events] == [0, 0, 100, 100, 300]
    assert events[1].error is f.raised[0] and events[4].error is None
    assert all(e.name == "rates" for e in events)
    with pytest.raises(AttributeError):
        events[0].kind = "x"
    assert "retrying" in repr(events[1])


def test_deadline_holds_in_virtual_time(virtual):
    events = []
    r = Retrier(max_attempts=100, initial_delay=1, max_delay=1, jitter="none", deadline=timedelta(seconds=3.5), on_event=events.append)
    with pytest.raises(RetryExhausted) as info:
        r.call(Flaky(1000))
    assert info.value.reason == "deadline" and info.value.attempts == 4
    assert virtual.now() == pytest.approx(3.0)


def test_deadline_none_turns_it_off(virtual):
    r = Retrier(max_attempts=50, initial_delay=10, max_delay=10, jitter="none", deadline=None)
    assert r.deadline is None
    assert r.call(Flaky(40)) == "ok"
    assert virtual.now() == pytest.approx(400)


def test_retry_after_hint_default_attribute_and_hook(virtual):
    class Throttled(ConnectionError):
        def __init__(self, after):
            super().__init__("429")
            self.retry_after = after

    events = []
    r = Retrier(jitter="none", initial_delay=0.01, on_event=events.append)
    r.call(Flaky(3, lambda n: Throttled([2.5, timedelta(seconds=1), "3"][n - 1])))
    assert [e.delay for e in events if e.kind == "retrying"] == [2.5, 1.0, 3.0]
    events.clear()
    r = Retrier(jitter="none", initial_delay=0.01, on_event=events.append, retry_after=lambda e: 0.75)
    r.call(Flaky(1))
    assert [e.delay for e in events if e.kind == "retrying"] == [0.75]


def test_budget_is_shared_and_stops_retries(virtual):
    budget = RetryBudget(max_tokens=4, token_ratio=1)
    a, b = Retrier(budget=budget, initial_delay=0), Retrier(budget=budget, initial_delay=0)
    with pytest.raises(RetryExhausted) as info:
        a.call(Flaky(10))
    assert info.value.reason == "budget" and budget.tokens == 2.0
    assert b.call(lambda: 1) == 1 and budget.tokens == 3.0
    with pytest.raises(ValueError, match="token_ratio"):
        RetryBudget(max_tokens=10, token_ratio=0)


def test_seed_gives_the_same_delays():
    def delays(seed):
        events = []
        with testing.virtual_time():
            with pytest.raises(RetryExhausted):
                Retrier(seed=seed, deadline=None, on_event=events.append).call(Flaky(10))
        return [e.delay for e in events if e.kind == "retrying"]

    assert delays(42) == delays(42) and len(delays(42)) == 4
    assert delays(42) != delays(43)


def test_cancel_token_from_another_thread_ends_a_long_wait_at_once():
    token = CancelToken()
    r = Retrier(initial_delay=30, max_delay=30, jitter="none", deadline=None).with_cancel(token)
    threading.Timer(0.1, token.cancel).start()
    f = Flaky(5)
    t0 = time.monotonic()
    with pytest.raises(RetryCancelled) as info:
        r.call(f)
    took = time.monotonic() - t0
    assert took < 2, f"took {took:.2f} s for a 30 s wait cancelled after 0.1 s"
    assert info.value.attempts == 1 and info.value.__cause__ is f.raised[0]
    assert str(info.value) == "retry: cancelled after 1 attempt"  # the core's one wording
    assert token.cancelled
    # An already-cancelled token runs nothing.
    g = Flaky(0)
    with pytest.raises(RetryCancelled) as info:
        r.call(g)
    assert g.calls == 0 and info.value.attempts == 0


def test_the_gil_is_released_during_waits():
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    marks = []

    def listener(e):
        if e.kind in ("retrying", "success"):
            marks.append(counter[0])

    r = Retrier(initial_delay=0.3, max_delay=0.3, jitter="none", on_event=listener)
    worker = threading.Thread(target=spin)
    worker.start()
    try:
        assert r.call(Flaky(1)) == "ok"
    finally:
        stop.set()
        worker.join()
    # The other thread ran Python during the 0.3 s wait (a held GIL would leave it at ~0).
    assert marks[1] - marks[0] > 1000, marks


def test_shared_by_16_threads_gives_independent_results():
    r = Retrier(initial_delay=0.001, max_delay=0.002, jitter="full")
    results, errors = {}, []

    def worker(i):
        try:
            f = Flaky(i % 3, value=i)
            for _ in range(50):
                f.calls = 0
                assert r.call(f) == i
                assert f.calls == i % 3 + 1
            results[i] = True
        except BaseException as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(results) == 16


def test_decorator_keeps_name_doc_signature_and_binds_methods(virtual):
    r = Retrier()
    f = Flaky(1)

    @r
    def fetch(url: str, *, timeout: float = 1.0) -> str:
        """Fetches."""
        return f() + url

    import inspect

    assert fetch("/x") == "ok/x"
    assert fetch.__name__ == "fetch" and fetch.__doc__ == "Fetches."
    assert str(inspect.signature(fetch)) == "(url: str, *, timeout: float = 1.0) -> str"
    # An unnamed retrier takes the function's name (issue 24): the same policy, shared stats.
    assert fetch.retrier.name.endswith("<locals>.fetch") and r.name == "retry"
    assert fetch.retrier.max_attempts == r.max_attempts and r.stats()["calls"] == 1
    named = Retrier(name="db")
    assert named(fetch).retrier is named

    class Client:
        def __init__(self):
            self.n = 0

        @r
        def get(self, x):
            self.n += 1
            if self.n < 2:
                raise ConnectionError("flaky")
            return x * 2

    c = Client()
    assert c.get(21) == 42 and c.n == 2


def test_validation_errors_name_the_knob_in_python_units():
    cases = [
        (dict(max_attempts=0), ValueError, "max_attempts"),
        (dict(initial_delay=-1), ValueError, "initial_delay"),
        (dict(initial_delay=2, max_delay=1), ValueError, "max_delay"),
        (dict(multiplier=0.5), ValueError, "multiplier"),
        (dict(jitter="proportional(1.5)"), ValueError, "jitter"),
        (dict(jitter="gaussian"), ValueError, "jitter"),
        (dict(deadline=-1), ValueError, "deadline"),
        (dict(seed=-1), ValueError, "seed"),
        (dict(attempt_timeout=0), ValueError, "attempt_timeout"),
        (dict(max_attempts="5"), TypeError, "max_attempts"),
        (dict(initial_delay="fast"), TypeError, "initial_delay"),
        (dict(retry_on=42), TypeError, "retry_on"),
        (dict(on_event=1), TypeError, "on_event"),
        (dict(budget=3), TypeError, "budget"),
        (dict(bogus=1), TypeError, "bogus"),
    ]
    for kwargs, exc, knob in cases:
        with pytest.raises(exc, match=knob):
            Retrier(**kwargs)
    with pytest.raises(ValueError, match=r"got -1\b"):
        Retrier(initial_delay=-1)  # quoted as given, in seconds, not the engine's ms


def test_policy_is_readable_and_jitter_spellings():
    r = Retrier(initial_delay=timedelta(milliseconds=250), jitter="proportional(0.25)", name="n", seed=7)
    assert (r.max_attempts, r.initial_delay, r.multiplier, r.max_delay, r.deadline) == (5, 0.25, 2.0, 5.0, 15.0)
    assert r.jitter == "proportional(0.25)" and r.name == "n" and r.seed == 7
    for j in ("none", "full", "equal", "decorrelated", "proportional:0.5"):
        Retrier(jitter=j)


def test_testing_switch_global_and_scoped():
    assert not testing.is_on()
    with testing.virtual_time() as clock:
        assert testing.is_on()
        clock.advance(1.5)
        assert testing.now() == 1.5
        with testing.virtual_time() as inner:
            assert inner.now() == 0
        assert testing.now() == 1.5  # the outer scope is back
    assert not testing.is_on()
    testing.enable()
    t0 = time.monotonic()
    with pytest.raises(RetryExhausted):
        Retrier(initial_delay=100, max_delay=100, deadline=None, jitter="none").call(Flaky(10))
    assert time.monotonic() - t0 < 1 and testing.now() == 400
    testing.disable()
    with pytest.raises(RuntimeError, match="virtual time is off"):
        testing.advance(1)


def test_parse_retry_after_and_status_helper():
    assert retryrs.parse_retry_after("120") == 120.0
    assert retryrs.parse_retry_after(" 7 ") == 7.0
    assert retryrs.parse_retry_after("Sun, 06 Nov 1994 08:50:37 GMT", now=784111777) == 60.0
    assert retryrs.parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now=784111777) == 0.0
    for bad in ("", "-1", "1.5", "soon"):
        assert retryrs.parse_retry_after(bad) is None
    assert retryrs.parse_retry_after("9" * 40) >= 1e12
    with pytest.raises(TypeError):
        retryrs.parse_retry_after(5)
    assert [s for s in range(600) if retryrs.is_retryable_status(s)] == list(retryrs.RETRYABLE_STATUSES)
    assert retryrs.RETRYABLE_STATUSES == (408, 425, 429, 500, 502, 503, 504)


def test_log_events_adapter(virtual, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="retryrs")
    Retrier(name="rates", jitter="none", on_event=retryrs.log_events()).call(Flaky(1))
    msgs = [(r.levelno, r.getMessage()) for r in caplog.records]
    # One line per retry (trap 11: not "attempt 1 attempt failed" plus a second line).
    assert msgs == [
        (logging.INFO, "rates: attempt 1 failed after 0 ms: ConnectionError('fail 1'); retrying in 200 ms"),
        (logging.INFO, "rates: attempt 2 succeeded after 200 ms"),
    ]
    assert caplog.records[-1].retry_event.kind == "success"


def test_retry_after_attribute_found_however_it_is_defined(virtual):
    class OnInstance(ConnectionError):
        pass

    class AsProperty(ConnectionError):
        @property
        def retry_after(self):
            return 2.0

    class ViaGetattr(ConnectionError):
        def __getattr__(self, name):
            if name == "retry_after":
                return 3.0
            raise AttributeError(name)

    class WithSlots(ConnectionError):
        __slots__ = ("retry_after",)

    def instance(n):
        e = OnInstance()
        e.retry_after = 1.0
        return e

    def slotted(n):
        e = WithSlots()
        e.retry_after = 4.0
        return e

    for factory, want in [(instance, 1.0), (lambda n: AsProperty(), 2.0), (lambda n: ViaGetattr(), 3.0), (slotted, 4.0), (lambda n: ConnectionError(), 0.001)]:
        for _ in range(2):  # the second time through the per-class cache
            events = []
            Retrier(jitter="none", initial_delay=0.001, on_event=events.append).call(Flaky(1, factory))
            assert [e.delay for e in events if e.kind == "retrying"] == [want], factory


def test_exceptions_pickle_with_their_details(virtual):
    import pickle

    with pytest.raises(RetryExhausted) as info:
        Retrier(max_attempts=2, name="p").call(Flaky(5))
    e = pickle.loads(pickle.dumps(info.value))
    assert type(e) is RetryExhausted and str(e) == str(info.value)
    assert (e.attempts, e.reason, e.name) == (2, "attempts", "p")
    assert [str(x) for x in e.errors] == ["fail 1", "fail 2"]


def test_calling_something_not_callable_is_a_clear_type_error():
    with pytest.raises(TypeError, match="needs a callable"):
        Retrier().call(42)


@pytest.mark.parametrize("knob", ["max_attempts", "initial_delay", "multiplier", "max_delay", "jitter", "name"])
def test_none_on_a_knob_that_cannot_be_off_is_refused(knob: str) -> None:
    # None turns a knob off (deadline, max_retry_after, seed); on a knob that has no
    # "off" it used to mean the default silently, where Node refuses null.
    with pytest.raises(TypeError, match=f"{knob} cannot be None"):
        Retrier(retry_on=OSError, **{knob: None})


def test_none_still_turns_off_what_can_be_off() -> None:
    r = Retrier(retry_on=OSError, deadline=None, max_retry_after=None, seed=None)
    assert r.deadline is None and r.max_retry_after is None


def test_stats_count_every_threads_calls():
    # A blocking call's happy path counts as it returns, and a call that retried adds its
    # tally when it ends: the sums are every call's, from every thread.
    r = Retrier(initial_delay=0, max_delay=0)

    def work():
        for i in range(100):
            state = [0]

            def flaky():
                state[0] += 1
                if i % 2 and state[0] == 1:
                    raise ConnectionError("once")
                return 1

            assert r.call(flaky) == 1

    threads = [threading.Thread(target=work) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = r.stats()
    assert (s["calls"], s["successes"], s["attempts"], s["retries"]) == (2000, 2000, 3000, 1000)


def test_each_kept_failure_has_its_own_traceback_and_a_signal_goes_on_unchanged(virtual):
    # A blocking attempt's exception is taken with its traceback attached, as an `except`
    # clause sees it, on every Python version.
    f = Flaky(10)
    with pytest.raises(RetryExhausted) as info:
        Retrier(max_attempts=3).call(f)
    tbs = [e.__traceback__ for e in info.value.errors]
    assert all(tb is not None for tb in tbs) and len({id(tb) for tb in tbs}) == 3
    assert all("__call__" in [fr.name for fr in traceback.extract_tb(tb)] for tb in tbs)

    interrupt = KeyboardInterrupt()

    def stop():
        raise interrupt

    with pytest.raises(KeyboardInterrupt) as info:
        Retrier().call(stop)
    assert info.value is interrupt and "stop" in [fr.name for fr in traceback.extract_tb(interrupt.__traceback__)]
