"""Issue 24, the escape hatches users of tenacity and stamina reach for: reraise=True,
the default retry_on (transient network errors only), replace / from_policy overrides,
pickling and copying a Retrier."""

import asyncio
import copy
import errno
import pickle
import socket
import subprocess
import sys
import types
import urllib.error

import pytest

import retryrs
from failing import failing
from retryrs import CircuitBreaker, Retrier, RetryBudget, RetryExhausted, load_policies


# --- reraise ---------------------------------------------------------------------------


def test_reraise_raises_the_last_error_itself_with_the_history(virtual):
    f = failing(lambda n: ConnectionError(f"fail {n}"))
    r = Retrier(max_attempts=3, reraise=True, name="db")
    with pytest.raises(ConnectionError) as info:
        r.call(f)
    assert info.value is f.raised[-1], "the last failure itself, not a copy or a wrapper"
    history = info.value.retryrs_history
    assert isinstance(history, RetryExhausted)
    assert (history.attempts, history.reason, history.name) == (3, "attempts", "db")
    assert history.errors == tuple(f.raised)
    if sys.version_info >= (3, 11):
        assert any("db: gave up after 3 attempts" in note for note in info.value.__notes__)
    # The traceback still shows where the error was raised.
    assert info.value.__traceback__ is not None
    frames = []
    tb = info.value.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    assert frames[-1] == "f"


def test_reraise_keeps_an_http_clients_except_clause_working(virtual):
    class ClientError(ConnectionError):
        pass

    r = Retrier(max_attempts=2, reraise=True)
    try:
        r.call(failing(lambda n: ClientError("reset")))
    except ClientError as e:  # the handler RetryExhausted used to bypass
        assert e.retryrs_history.attempts == 2
    else:
        pytest.fail("nothing raised")


def test_reraise_applies_to_every_exhaustion_reason(virtual):
    r = Retrier(max_attempts=10, initial_delay=10, max_delay=10, multiplier=1, jitter="none", deadline=25, reraise=True)
    with pytest.raises(ConnectionError) as info:
        r.call(failing(lambda n: ConnectionError(n)))
    assert info.value.retryrs_history.reason == "deadline"
    assert info.value.retryrs_history.attempts == 3


def test_a_rejected_value_still_raises_retry_exhausted(virtual):
    r = Retrier(max_attempts=3, reraise=True, retry_on_result=lambda v: v is None)
    with pytest.raises(RetryExhausted) as info:
        r.call(lambda: None)
    assert info.value.reason == "attempts" and info.value.result is None
    # ... and with an error before the rejected value, the error is not what ended it.
    outcomes = iter([ConnectionError("x"), None, None])

    def mixed():
        o = next(outcomes)
        if isinstance(o, Exception):
            raise o
        return o

    with pytest.raises(RetryExhausted):
        r.call(mixed)


def test_a_permanent_error_is_unchanged_and_carries_no_history(virtual):
    r = Retrier(max_attempts=3, reraise=True)
    with pytest.raises(KeyError) as info:
        r.call(failing(lambda n: KeyError(n)))
    assert not hasattr(info.value, "retryrs_history")


def test_reraise_in_async_calls_the_decorator_and_the_loop(virtual):
    r = Retrier(max_attempts=2, reraise=True)

    async def afail():
        raise TimeoutError("slow")

    with pytest.raises(TimeoutError) as info:
        asyncio.run(r.call_async(afail))
    assert info.value.retryrs_history.attempts == 2

    @r
    def decorated():
        raise ConnectionResetError("reset")

    with pytest.raises(ConnectionResetError) as info2:
        decorated()
    assert info2.value.retryrs_history.reason == "attempts"

    with pytest.raises(ConnectionError) as info3:
        for attempt in r:
            with attempt:
                raise ConnectionError("loop")
    assert info3.value.retryrs_history.attempts == 2


def test_reraise_through_from_policy_and_a_bad_value():
    p = load_policies({"policies": {"a": {"max_attempts": 2, "initial_delay": "0ms"}}})["a"]
    assert Retrier.from_policy(p, reraise=True).reraise is True
    assert Retrier().reraise is False
    with pytest.raises(TypeError, match="reraise must be a bool"):
        Retrier(reraise="yes")
    with pytest.raises(TypeError, match="reraise must be a bool"):
        Retrier(reraise=1)


def test_the_http_helpers_refuse_reraise():
    from retryrs.http import AsyncRetryingTransport, RetryingAdapter, RetryingTransport, RetryMiddleware

    for make_helper in (RetryingAdapter, RetryingTransport, AsyncRetryingTransport, RetryMiddleware):
        with pytest.raises(ValueError, match=f"{make_helper.__name__} does not use the Retrier's reraise"):
            make_helper(Retrier(reraise=True))


# --- the default retry_on --------------------------------------------------------------


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionError("x"),
        ConnectionRefusedError(errno.ECONNREFUSED, "refused"),
        ConnectionResetError("reset"),
        BrokenPipeError("pipe"),
        TimeoutError("slow"),
        asyncio.TimeoutError(),
        socket.timeout("slow"),
        retryrs.AttemptTimeout(1.0),
    ],
    ids=lambda e: type(e).__name__,
)
def test_the_default_retries_transient_network_errors(virtual, exc):
    f = failing(lambda n: exc)
    with pytest.raises(RetryExhausted):
        Retrier(max_attempts=2).call(f)
    assert len(f.raised) == 2


@pytest.mark.parametrize(
    "exc",
    [
        FileNotFoundError(errno.ENOENT, "gone"),
        PermissionError(errno.EACCES, "no"),
        OSError("plain"),
        IsADirectoryError("dir"),
        urllib.error.HTTPError("http://x", 404, "Not Found", None, None),  # type: ignore[arg-type]
        ValueError("bad"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_the_default_never_retries_these(virtual, exc):
    f = failing(lambda n: exc)
    with pytest.raises(type(exc)) as info:
        Retrier(max_attempts=3).call(f)
    assert info.value is exc and len(f.raised) == 1


def test_the_http_clients_errors_count_once_imported(virtual):
    import aiohttp
    import httpx
    import requests

    transient = [
        requests.exceptions.ConnectionError("refused"),
        requests.exceptions.Timeout("slow"),
        requests.exceptions.ConnectTimeout("slow"),
        httpx.ConnectError("refused"),
        httpx.ReadTimeout("slow"),
        httpx.RemoteProtocolError("eof"),
        aiohttp.ClientConnectionError("x"),
        aiohttp.ServerDisconnectedError(),
        aiohttp.ClientPayloadError("truncated"),
        aiohttp.ServerTimeoutError("slow"),
    ]
    for exc in transient:
        f = failing(lambda n, exc=exc: exc)
        with pytest.raises(RetryExhausted):
            Retrier(max_attempts=2).call(f)
        assert len(f.raised) == 2, f"{type(exc).__module__}.{type(exc).__qualname__} is transient"
    response = requests.Response()
    response.status_code = 404
    permanent = [requests.exceptions.HTTPError("404", response=response), httpx.HTTPStatusError("404", request=httpx.Request("GET", "http://x"), response=httpx.Response(404))]
    for exc in permanent:
        f = failing(lambda n, exc=exc: exc)
        with pytest.raises(type(exc)):
            Retrier(max_attempts=3).call(f)
        assert len(f.raised) == 1, f"{type(exc).__qualname__} is a response, not a transient error"
    assert requests.exceptions.HTTPError in type(requests.exceptions.HTTPError()).__mro__  # (an OSError)
    classes = Retrier().retry_on
    assert requests.exceptions.Timeout in classes and httpx.TransportError in classes and aiohttp.ClientConnectionError in classes


def test_a_client_is_looked_up_in_sys_modules_never_imported(virtual, monkeypatch):
    # A module registered after the retrier was made counts from then on.
    class FakeTransportError(Exception):
        pass

    r = Retrier(max_attempts=2)
    before = failing(lambda n: FakeTransportError("x"))
    monkeypatch.delitem(sys.modules, "httpx", raising=False)
    with pytest.raises(FakeTransportError):
        r.call(before)
    assert len(before.raised) == 1
    fake = types.ModuleType("httpx")
    fake.TransportError = FakeTransportError  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "httpx", fake)
    after = failing(lambda n: FakeTransportError("x"))
    with pytest.raises(RetryExhausted):
        r.call(after)
    assert len(after.raised) == 2


def test_importing_retryrs_and_failing_imports_no_http_client():
    code = (
        "import sys, retryrs\n"
        "from retryrs import Retrier, RetryExhausted, testing\n"
        "def f(): raise ConnectionError('x')\n"
        "with testing.virtual_time():\n"
        "    try: Retrier(max_attempts=2).call(f)\n"
        "    except RetryExhausted: pass\n"
        "print(sorted(m for m in ('requests', 'httpx', 'aiohttp') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"


# --- replace, from_policy overrides, pickle, copy --------------------------------------


def test_replace_changes_one_knob_and_shares_the_rest(virtual):
    events = []
    budget, breaker = RetryBudget(10, 0.5), CircuitBreaker(failures=100)
    r = Retrier(max_attempts=5, initial_delay=0.1, seed=7, name="db", budget=budget, breaker=breaker, on_event=events.append, retry_on=(KeyError, ConnectionError))
    r2 = r.replace(max_attempts=2)
    assert (r2.max_attempts, r2.initial_delay, r2.seed, r2.name) == (2, 0.1, 7, "db")
    assert r2.budget is budget, "the same budget object"
    assert r2.retry_on == (KeyError, ConnectionError)
    assert r.max_attempts == 5, "the original is unchanged"
    with pytest.raises(RetryExhausted) as info:
        r2.call(failing(lambda n: KeyError(n)))
    assert info.value.attempts == 2
    assert [e.kind for e in events] == ["attempt_failed", "retrying", "attempt_failed", "exhausted"], "the same listener"
    assert budget.tokens < 10, "the same budget spent"
    # The breaker is the same one: a retrier made from r2 sees the failure r2's call recorded.
    assert r2.breaker is not None and r2.breaker.model == "consecutive"
    # Taking an option off and giving a hook again.
    r3 = r.replace(budget=None, on_event=None, reraise=True)
    assert r3.budget is None and r3.reraise and "on_event" not in repr(r3)


def test_replace_refuses_what_the_constructor_refuses():
    r = Retrier()
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_attempt'"):
        r.replace(max_attempt=3)
    with pytest.raises(ValueError, match="max_attempts"):
        r.replace(max_attempts=0)
    with pytest.raises(ValueError, match="max_delay"):
        Retrier(max_delay=1).replace(initial_delay=2)
    with pytest.raises(TypeError, match="deadline"):
        r.replace(deadline="soon")


def test_replace_keeps_the_cancel_token(virtual):
    token = retryrs.CancelToken()
    r = Retrier().with_cancel(token).replace(max_attempts=2)
    assert r.cancel_token is token


def test_a_retrier_pickles_by_its_knobs_and_gets_a_fresh_budget_and_breaker(virtual):
    budget = RetryBudget(4, 0.25)
    r = Retrier(max_attempts=3, initial_delay=0.05, jitter="proportional(0.2)", seed=11, deadline=None, name="p", budget=budget, breaker=CircuitBreaker("sampling", failure_ratio=0.5, minimum_throughput=10, sampling_duration=2), retry_on=(KeyError,), reraise=True)
    with pytest.raises(KeyError):
        r.call(failing(lambda n: KeyError(n)))
    assert budget.tokens < 4
    back = pickle.loads(pickle.dumps(r))
    assert repr(back).split(", budget=")[0] == repr(r).split(", budget=")[0]
    assert (back.max_attempts, back.jitter, back.seed, back.deadline, back.reraise) == (3, "proportional(0.2)", 11, None, True)
    assert back.budget is not budget and back.budget.tokens == 4 and back.budget.max_tokens == 4
    assert back.breaker is not None and back.breaker.model == "sampling" and back.breaker.state == "closed"
    assert back.retry_on == (KeyError,)
    # The same seed gives the same delays.
    assert delays(back) == delays(r.replace(budget=RetryBudget(4, 0.25))) != []
    # The default retry_on stays the default (not frozen into the pickle).
    assert "retry_on" not in Retrier()._options()


def delays(r):
    events = []
    r = r.replace(on_event=events.append)
    try:
        r.call(failing(lambda n: KeyError(n)))
    except (KeyError, RetryExhausted):
        pass
    return [e.delay for e in events if e.kind == "retrying"]


def test_what_cannot_be_pickled_says_why():
    with pytest.raises(TypeError, match="cancel token"):
        pickle.dumps(Retrier().with_cancel(retryrs.CancelToken()))
    with pytest.raises(TypeError, match="quota"):
        pickle.dumps(Retrier(budget=RetryBudget.quota()))
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(Retrier(on_event=lambda e: None))  # a lambda never pickles


def test_copy_shares_and_deepcopy_recreates():
    budget = RetryBudget()
    r = Retrier(budget=budget, max_attempts=2)
    assert copy.copy(r).budget is budget
    deep = copy.deepcopy(r)
    assert deep.budget is not budget and deep.max_attempts == 2
