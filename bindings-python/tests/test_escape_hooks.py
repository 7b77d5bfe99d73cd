"""Issue 24, the hooks and introspection: wait= (exact waits), before_sleep= (stop from a
hook, reason "stopped"), retries_left on events, r.stats(), the decorated function's
name in events and log lines, linked cancel tokens, the deadline hint."""

import asyncio
import logging
import pickle
import sys
import threading
import time
from datetime import timedelta

import pytest

import retryrs
from failing import failing
from retryrs import CancelToken, Retrier, RetryBudget, RetryCancelled, RetryExhausted, StopRetrying


def retrying_delays(events):
    return [e.delay for e in events if e.kind == "retrying"]


# --- wait= ------------------------------------------------------------------------------


def test_the_wait_hook_sets_exact_waits_and_sees_attempt_failure_and_delay(virtual):
    seen, events = [], []

    def wait(attempt, failure, delay):
        seen.append((attempt, failure, delay))
        return [1.5, None, timedelta(milliseconds=250)][attempt - 1]

    f = failing()
    r = Retrier(max_attempts=4, initial_delay=0.1, jitter="none", wait=wait, on_event=events.append)
    with pytest.raises(RetryExhausted):
        r.call(f)
    assert [a for a, _, _ in seen] == [1, 2, 3]
    assert [x for _, x, _ in seen] == f.raised[:3]
    assert [d for _, _, d in seen] == [0.1, 0.2, 0.4], "the engine's computed delay"
    assert retrying_delays(events) == [1.5, 0.2, 0.25], "exact, engine's (None), exact (timedelta)"


def test_an_exact_wait_is_not_raised_to_the_retry_after_hint(virtual):
    class Throttled(ConnectionError):
        retry_after = 3.0

    events = []
    r = Retrier(max_attempts=2, wait=lambda a, e, d: 0.01, on_event=events.append)
    with pytest.raises(RetryExhausted):
        r.call(failing(lambda n: Throttled()))
    assert retrying_delays(events) == [0.01]


def test_the_deadline_and_max_retry_after_still_apply_to_an_exact_wait(virtual):
    r = Retrier(max_attempts=5, deadline=10, wait=lambda a, e, d: 20)
    with pytest.raises(RetryExhausted) as info:
        r.call(failing())
    assert (info.value.reason, info.value.attempts) == ("deadline", 1)
    r = Retrier(max_attempts=5, deadline=None, max_retry_after=5, wait=lambda a, e, d: 6)
    with pytest.raises(RetryExhausted) as info:
        r.call(failing())
    assert info.value.reason == "retry_after"


def test_a_wait_hook_gets_a_rejected_value(virtual):
    seen = []
    r = Retrier(max_attempts=2, retry_on_result=lambda v: v is None, wait=lambda a, v, d: seen.append(v) or 0)
    with pytest.raises(RetryExhausted):
        r.call(lambda: None)
    assert seen == [None]


def test_a_bad_wait_answer_or_a_raising_hook_ends_the_call_with_the_original_attached(virtual):
    f = failing()
    with pytest.raises(TypeError, match="wait must return seconds") as info:
        Retrier(max_attempts=3, wait=lambda a, e, d: "soon").call(f)
    assert info.value.__cause__ is f.raised[-1] and len(f.raised) == 1
    with pytest.raises(ValueError, match="wait returned"):
        Retrier(max_attempts=3, wait=lambda a, e, d: -1).call(failing())

    def broken(a, e, d):
        raise KeyError("hook bug")

    f = failing()
    events = []
    with pytest.raises(KeyError) as info2:
        Retrier(max_attempts=3, wait=broken, on_event=events.append).call(f)
    assert info2.value.__cause__ is f.raised[0]
    assert events[-1].kind == "exhausted" and events[-1].reason == "stopped", "the events close the call"
    with pytest.raises(TypeError, match="wait must be a callable"):
        Retrier(wait=3)


def test_an_async_wait_hook_is_awaited_in_call_async_and_refused_in_a_sync_call(virtual):
    async def wait(attempt, failure, delay):
        await asyncio.sleep(0)
        return 0.5 * attempt

    events = []
    r = Retrier(max_attempts=3, wait=wait, on_event=events.append)

    async def afail():
        raise ConnectionError("x")

    with pytest.raises(RetryExhausted):
        asyncio.run(r.call_async(afail))
    assert retrying_delays(events) == [0.5, 1.0]
    with pytest.raises(TypeError, match="wait returned an awaitable"):
        r.call(failing())


# --- before_sleep= (stop) ---------------------------------------------------------------


@pytest.mark.parametrize("how", ["false", "raise"])
def test_before_sleep_stops_the_call_with_reason_stopped_and_the_history(virtual, how):
    budget = RetryBudget(10, 0.1)
    seen, events = [], []

    def before_sleep(attempt, failure, delay):
        seen.append((attempt, delay))
        if attempt == 2:
            if how == "raise":
                raise StopRetrying("enough")
            return False
        return None

    f = failing()
    r = Retrier(max_attempts=5, initial_delay=0.1, jitter="none", before_sleep=before_sleep, budget=budget, on_event=events.append)
    with pytest.raises(RetryExhausted) as info:
        r.call(f)
    assert (info.value.reason, info.value.attempts) == ("stopped", 2)
    assert info.value.__cause__ is f.raised[-1] and info.value.errors == tuple(f.raised)
    assert "stopped by a hook" in str(info.value)
    assert seen == [(1, 0.1), (2, 0.2)]
    assert [e.kind for e in events][-2:] == ["attempt_failed", "exhausted"] and events[-1].reason == "stopped"
    # No budget token drawn for the wait that never happened: one failure's token per attempt.
    assert budget.tokens == 8


def test_stop_retrying_raised_by_the_wait_hook_stops_the_call_too(virtual):
    # tenacity users stop from whatever callable they have; a wait= hook raising
    # StopRetrying ends the call with reason stopped, not with StopRetrying itself.
    def wait(attempt, failure, delay):
        if attempt == 2:
            raise StopRetrying()
        return None

    f = failing()
    r = Retrier(max_attempts=5, initial_delay=0.1, jitter="none", wait=wait)
    with pytest.raises(RetryExhausted) as info:
        r.call(f)
    assert (info.value.reason, info.value.attempts) == ("stopped", 2)
    assert info.value.__cause__ is f.raised[-1]


def test_before_sleep_runs_before_the_wait_hook_and_a_stop_skips_it(virtual):
    order = []
    r = Retrier(max_attempts=3, before_sleep=lambda a, e, d: order.append("before") or a < 2, wait=lambda a, e, d: order.append("wait"))
    with pytest.raises(RetryExhausted) as info:
        r.call(failing())
    assert order == ["before", "wait", "before"] and info.value.reason == "stopped"


def test_stopped_with_reraise_raises_the_original(virtual):
    f = failing()
    with pytest.raises(ConnectionError) as info:
        Retrier(max_attempts=5, reraise=True, before_sleep=lambda a, e, d: False).call(f)
    assert info.value is f.raised[0] and info.value.retryrs_history.reason == "stopped"


def test_an_async_before_sleep_that_raises_stop_retrying_stops_call_async(virtual):
    async def before_sleep(attempt, failure, delay):
        await asyncio.sleep(0)
        raise StopRetrying()

    async def afail():
        raise ConnectionError("x")

    r = Retrier(max_attempts=5, before_sleep=before_sleep)
    with pytest.raises(RetryExhausted) as info:
        asyncio.run(r.call_async(afail))
    assert (info.value.reason, info.value.attempts) == ("stopped", 1)

    async def broken(attempt, failure, delay):
        raise KeyError("hook bug")

    with pytest.raises(KeyError) as info2:
        asyncio.run(Retrier(max_attempts=5, before_sleep=broken).call_async(afail))
    assert isinstance(info2.value.__cause__, ConnectionError)


def test_a_task_cancelled_while_its_hook_is_awaited_is_cancelled_and_told(virtual):
    events, entered = [], []

    async def before_sleep(attempt, failure, delay):
        entered[0].set()
        await asyncio.sleep(3600)

    async def afail():
        raise ConnectionError("x")

    r = Retrier(max_attempts=5, before_sleep=before_sleep, on_event=events.append)

    async def main():
        entered.append(asyncio.Event())
        task = asyncio.ensure_future(r.call_async(afail))
        await entered[0].wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert [e.kind for e in events] == ["attempt_failed", "cancelled"]


def test_the_loop_form_runs_the_hooks(virtual):
    n = 0
    with pytest.raises(RetryExhausted) as info:
        for attempt in Retrier(max_attempts=5, before_sleep=lambda a, e, d: a < 3):
            with attempt:
                n += 1
                raise ConnectionError(n)
    assert (info.value.reason, n) == ("stopped", 3)


def test_hooks_survive_replace_and_pickle(virtual):
    r = Retrier(max_attempts=3, wait=_module_wait, before_sleep=_module_before)
    assert r.replace(max_attempts=4)._options()["wait"] is _module_wait
    back = pickle.loads(pickle.dumps(r))
    events = []
    with pytest.raises(RetryExhausted):
        back.replace(on_event=events.append).call(failing())
    assert retrying_delays(events) == [0.125, 0.125]


def _module_wait(attempt, failure, delay):
    return 0.125


def _module_before(attempt, failure, delay):
    return None


# --- retries_left, stats ----------------------------------------------------------------


def test_events_carry_retries_left(virtual):
    events = []
    with pytest.raises(RetryExhausted):
        Retrier(max_attempts=3, on_event=events.append).call(failing())
    assert [(e.kind, e.attempt, e.retries_left) for e in events] == [
        ("attempt_failed", 1, 2), ("retrying", 1, 2), ("attempt_failed", 2, 1), ("retrying", 2, 1),
        ("attempt_failed", 3, 0), ("exhausted", 3, 0),
    ]


def test_stats_count_calls_attempts_retries_and_outcomes(virtual):
    r = Retrier(max_attempts=3, initial_delay=0)
    assert r.stats()["calls"] == 0
    assert r.call(lambda: 1) == 1  # the fast path: no engine call made
    with pytest.raises(RetryExhausted):
        r.call(failing())
    with pytest.raises(KeyError):
        r.call(failing(lambda n: KeyError(n)))
    flaky = iter([ConnectionError("once")])

    def once():
        for e in flaky:
            raise e
        return "ok"

    assert r.call(once) == "ok"

    async def afine():
        await asyncio.sleep(0)
        return 2

    assert asyncio.run(r.call_async(afine)) == 2
    for attempt in r:
        with attempt:
            pass
    stopped = r.replace(before_sleep=lambda a, e, d: False)
    with pytest.raises(RetryExhausted):
        stopped.call(failing())
    s = r.stats()
    assert s["calls"] == 6
    assert s["attempts"] == 1 + 3 + 1 + 2 + 1 + 1
    assert s["retries"] == 2 + 1
    assert (s["successes"], s["rejections"], s["cancellations"]) == (4, 1, 0)
    assert s["exhausted"]["attempts"] == 1 and s["exhausted"]["stopped"] == 0, "a replaced retrier counts its own"
    assert stopped.stats()["exhausted"]["stopped"] == 1
    assert set(s["exhausted"]) == {"attempts", "deadline", "budget", "retry_after", "circuit_open", "stopped"}


# --- the function's name ----------------------------------------------------------------


class Client:
    def get(self):
        raise ConnectionError("down")


def test_a_decorated_function_names_an_unnamed_retrier(virtual, caplog):
    events = []
    r = Retrier(max_attempts=2, on_event=[events.append, retryrs.log_events()])
    get = r(Client.get)
    with caplog.at_level(logging.INFO, logger="retryrs"):
        with pytest.raises(RetryExhausted) as info:
            get(Client())
    assert {e.name for e in events} == {"Client.get"}
    assert info.value.name == "Client.get" and str(info.value).startswith("Client.get: gave up")
    assert caplog.records and all(rec.getMessage().startswith("Client.get: ") for rec in caplog.records)
    assert get.retrier.name == "Client.get" and r.name == "retry"
    # The decorated function's calls count in the retrier's stats.
    assert r.stats()["calls"] == 1

    async def fetch():
        raise ConnectionError("x")

    afetch = r(fetch)
    with pytest.raises(RetryExhausted) as info2:
        asyncio.run(afetch())
    assert info2.value.name.endswith("fetch")


def test_a_named_retrier_keeps_its_name(virtual):
    events = []
    r = Retrier(name="db", max_attempts=1, on_event=events.append)
    with pytest.raises(RetryExhausted):
        r(Client.get)(Client())
    assert {e.name for e in events} == {"db"}


# --- linked cancel tokens ---------------------------------------------------------------


def test_a_child_token_follows_its_parent_never_the_reverse():
    parent = CancelToken()
    child = parent.child()
    child.cancel()
    assert child.cancelled and not parent.cancelled
    other = parent.child()
    parent.cancel()
    assert other.cancelled
    assert parent.child().cancelled, "made from a cancelled parent: cancelled at once"


def test_any_token_fires_with_the_first_of_its_parents():
    a, b = CancelToken(), CancelToken()
    either = CancelToken.any([a, b])
    assert not either.cancelled
    b.cancel()
    assert either.cancelled and not a.cancelled
    with pytest.raises(TypeError, match="CancelToken.any takes"):
        CancelToken.any([a, "b"])
    assert not CancelToken.any([]).cancelled


def test_a_linked_token_ends_a_blocking_and_an_async_wait_at_once():
    caller = CancelToken()
    library = CancelToken.any([caller, CancelToken()])
    r = Retrier(max_attempts=5, initial_delay=30, max_delay=30, deadline=None, jitter="none").with_cancel(library)
    threading.Timer(0.2, caller.cancel).start()
    started = time.monotonic()
    with pytest.raises(RetryCancelled):
        r.call(failing())
    assert time.monotonic() - started < 10

    caller2 = CancelToken()
    r2 = r.with_cancel(caller2.child())

    async def main():
        asyncio.get_running_loop().call_later(0.2, caller2.cancel)

        async def afail():
            raise ConnectionError("x")

        await r2.call_async(afail)

    started = time.monotonic()
    with pytest.raises(RetryCancelled):
        asyncio.run(main())
    assert time.monotonic() - started < 10


# --- the deadline hint ------------------------------------------------------------------


def test_the_deadline_hint_in_repr_and_in_a_deadline_exhaustion(virtual):
    r = Retrier(max_attempts=10, initial_delay=1, multiplier=2, max_delay=5, jitter="none")
    assert "max_attempts=10 needs up to" in repr(r) and "deadline" in repr(r)
    with pytest.raises(RetryExhausted) as info:
        r.call(failing())
    assert info.value.reason == "deadline"
    assert "raise deadline or lower max_attempts" in str(info.value)
    assert "needs up to" not in repr(Retrier())
    with pytest.raises(RetryExhausted) as info2:
        Retrier(max_attempts=2, initial_delay=0).call(failing())
    assert "needs up to" not in str(info2.value)


def test_stop_retrying_is_exported():
    assert retryrs.StopRetrying is StopRetrying and issubclass(StopRetrying, Exception)
    assert "StopRetrying" in retryrs.__all__
    assert sys.modules["retryrs._errors"].StopRetrying is StopRetrying
