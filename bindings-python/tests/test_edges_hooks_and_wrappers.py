"""Issue 37's small Python defects: hook answers that are not waits, the messages and
clamps users read, and what a decorated function keeps of the function it wraps."""

import asyncio
import inspect
import math

import pytest

import retryrs
from retryrs import Retrier, RetryExhausted, load_policies


class Down(ConnectionError):
    pass


def failing_once():
    raised = []

    def f():
        if not raised:
            raised.append(Down("down"))
            raise raised[-1]
        return "ok"

    f.raised = raised
    return f


@pytest.mark.parametrize("answer", [math.inf, -1, math.nan, 1e300], ids=["inf", "negative", "nan", "1e300"])
def test_a_wait_hook_answer_that_is_not_a_wait_is_refused_with_the_failure_attached(virtual, answer):
    # inf was accepted: with the deadline and max_retry_after off, ~285,000 years of sleep.
    f = failing_once()
    r = Retrier(max_attempts=3, deadline=None, max_retry_after=None, wait=lambda a, e, d: answer)
    with pytest.raises(ValueError, match=r"wait returned .*: a wait must be seconds from 0 to 9e12") as info:
        r.call(f)
    assert info.value.__cause__ is f.raised[0]
    assert retryrs.testing.now() == 0, "no wait was slept"


@pytest.mark.parametrize("answer", [-5, math.nan, -0.001], ids=["negative", "nan", "tiny-negative"])
@pytest.mark.parametrize("form", ["sync", "async"])
def test_a_bad_retry_after_answer_raises_as_a_bad_wait_answer_does(virtual, answer, form):
    f = failing_once()
    r = Retrier(max_attempts=3, retry_after=lambda e: answer)
    with pytest.raises(ValueError, match=r"retry_after returned .*: a hint must be seconds >= 0, or None: no hint") as info:
        if form == "sync":
            r.call(f)
        else:

            async def op():
                return f()

            asyncio.run(r.call_async(op))
    assert info.value.__cause__ is f.raised[0]
    assert len(f.raised) == 1, "the call ended at the bad answer"


def test_a_retry_after_attribute_that_is_not_a_wait_is_still_no_hint(virtual):
    # An exception's own attribute is a library's value, not the caller's answer.
    class Busy(ConnectionError):
        retry_after = -5

    calls = []

    def f():
        calls.append(1)
        if len(calls) == 1:
            raise Busy()
        return "ok"

    assert Retrier(max_attempts=2).call(f) == "ok"


def test_a_huge_retry_after_answer_saturates_and_max_retry_after_ends_the_call(virtual):
    with pytest.raises(RetryExhausted) as info:
        Retrier(max_attempts=3, retry_after=lambda e: math.inf).call(failing_once())
    assert info.value.reason == "retry_after"


def test_a_negative_duration_says_so_in_a_sentence(tmp_path):
    with pytest.raises(Exception) as info:
        load_policies({"policies": {"p": {"initial_delay": "-1s"}}})
    message = str(info.value)
    assert '"-1s" is not a duration: a duration cannot be negative; write a number and a unit' in message, message


def test_a_huge_retry_after_value_parses_to_the_documented_clamp():
    # docs/contract.md: huge values saturate at the longest wait, 9e15 ms, in every host
    # (it was 2^64 s here, 1.8e19, against 2^64 ms in Node and C).
    assert retryrs.parse_retry_after("99999999999999999999") == 9e12
    assert retryrs.parse_retry_after(b"9000000000001") == 9e12
    assert retryrs.parse_retry_after("8999999999999") == 8999999999999.0


def defaults(a, b=2, *, c=3):
    return a + b + c


async def defaults_async(a, b=2, *, c=3):
    return a + b + c


def hedging() -> Retrier:
    doc = {"policies": {"reads": {"hedge": {"max_attempts": 2, "delay": "50ms"}}}}
    return Retrier.from_policy(load_policies(doc)["reads"])


@pytest.mark.parametrize(
    "make, fn", [(Retrier, defaults), (Retrier, defaults_async), (hedging, defaults_async)], ids=["sync", "async", "hedged"]
)
def test_a_decorated_function_keeps_its_defaults(make, fn):
    wrapped = make()(fn)
    assert wrapped.__defaults__ == (2,) and wrapped.__kwdefaults__ == {"c": 3}
    assert wrapped.__name__ == fn.__name__ and wrapped.__wrapped__ is fn
    result = wrapped(1)
    assert (asyncio.run(result) if inspect.isawaitable(result) else result) == 6


def test_decorating_a_sync_function_that_returns_a_coroutine_names_the_fix():
    async def work():
        return 1

    r = Retrier()
    wrapped = r(lambda: work())
    with pytest.raises(TypeError, match=r"returned a coroutine, but it is not an `async def` function.*make it `async def`") as info:
        wrapped()
    assert "retrier.call_async" in str(info.value)
    # r.call with an async function keeps its own words.
    with pytest.raises(TypeError, match=r"is async: use `await retrier.call_async"):
        r.call(work)


def test_stats_count_a_hedged_calls_launches(virtual):
    # Cut at its deadline after 3 launches: 3 attempts made, 2 of them after the first.
    doc = {"policies": {"reads": {"hedge": {"max_attempts": 3, "delay": "10ms"}, "deadline": "100ms"}}}
    r = Retrier.from_policy(load_policies(doc)["reads"])

    async def slow():
        await asyncio.sleep(10)

    with pytest.raises(RetryExhausted) as info:
        asyncio.run(r.call_async(slow))
    assert info.value.reason == "deadline"
    s = r.stats()
    assert (s["calls"], s["attempts"], s["retries"]) == (1, 3, 2), s
