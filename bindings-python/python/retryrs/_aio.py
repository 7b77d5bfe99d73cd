"""The asyncio driver and the decorator.

The native call object decides everything (verdicts, delays, deadline, budget, events);
this module only awaits: the attempt, then the wait (``_runtime.sleep``, under asyncio or
trio, woken early by a CancelToken). Under ``retryrs.testing`` virtual time the native
side has already "waited", and nothing here sleeps.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any, Awaitable, Callable, Dict, Optional, Tuple

from . import _native
from ._errors import AttemptTimeout
from ._runtime import library as _library, sleep as _sleep, trio_bounded as _trio_bounded


async def drive(r: _native.Retrier, fn: Callable[..., Awaitable[Any]], args: Tuple[Any, ...], kwargs: Optional[Dict[str, Any]]) -> Any:
    start = r._start()
    timeout = r.attempt_timeout
    kw = kwargs or {}
    # The attempt is written out here and again in _retry on purpose: a shared helper
    # costs the asyncio happy path ~35 ns a call (measured with bench/python, 1.70x ->
    # 1.85x the hand loop).
    # `attempt` is kept so that a failure can tell a sync function given by mistake
    # (checked only then: the happy path pays one local store).
    attempt: Any = _NOT_CALLED
    try:
        attempt = fn(*args, **kw)
        if timeout is None:
            value = await attempt
        else:
            value = await _bounded(attempt, timeout)
    except BaseException as e:
        exc: Optional[BaseException] = e
        _refuse_sync(fn, attempt, e)
    else:
        # The happy path: no engine state unless someone listens, a budget refills or a
        # result predicate looks at the value.
        if r._wants_success:
            if await _rejects(r, value):
                return await _retry(r, r._begin(start), fn, args, kw, timeout, None, value)
            r._succeeded(start)
        return value
    return await _retry(r, r._begin(start), fn, args, kw, timeout, exc, None)


async def _rejects(r: _native.Retrier, value: Any) -> bool:
    """Whether retry_on_result rejects the value (an async predicate is awaited)."""
    verdict = r._rejects(value)
    if type(verdict) is bool:
        return verdict
    return bool(await verdict)


async def _retry(r: _native.Retrier, call: _native.SteppedCall, fn: Callable[..., Awaitable[Any]], args: Tuple[Any, ...], kw: Dict[str, Any], timeout: Optional[float], exc: Optional[BaseException], rejected: Any) -> Any:
    checks_results = r.retry_on_result is not None
    while True:
        if exc is not None:
            delay = await _failed(call, exc, type(exc) is AttemptTimeout)  # raises when the call ends
        else:
            delay = await _rejected(call, rejected)
        exc = rejected = None  # no frame -> traceback -> frame cycle
        # (A zero delay, or virtual time, still yields one turn of the loop.)
        await _sleep(call, delay)
        call.resume()
        try:
            if timeout is None:
                value = await fn(*args, **kw)
            else:
                value = await _bounded(fn(*args, **kw), timeout)
        except BaseException as e:
            exc = e
        else:
            if checks_results and await _rejects(r, value):
                rejected = value
                continue
            call.succeeded()
            return value


async def _failed(call: _native.SteppedCall, exc: BaseException, timed_out: bool) -> float:
    """The engine's answer to a failure. A hook (predicate, hint) that answers with an
    awaitable is awaited here -- never read as "true" -- and the engine asked again with
    the answers so far."""
    answers: Tuple[Any, ...] = ()
    while True:
        step = call.failed(exc, timed_out, answers)
        if type(step) is float:
            return step
        answers += (await step,)


async def _rejected(call: _native.SteppedCall, value: Any) -> float:
    """The engine's answer to a rejected value (an async retry_after hook is awaited)."""
    answers: Tuple[Any, ...] = ()
    while True:
        step = call.rejected(value, answers)
        if type(step) is float:
            return step
        answers += (await step,)


_NOT_CALLED = object()


def _refuse_sync(fn: Any, attempt: Any, exc: BaseException) -> None:
    """A sync function given to call_async would run with blocking waits on the loop, and
    its value is not awaitable: refused, saying what to use instead. Told apart after a
    first failure only: the function's value was not awaitable, or it raised before
    returning one and is not an async function."""
    if attempt is _NOT_CALLED:
        if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None)):
            return
        what = "raised before returning an awaitable"
    elif inspect.isawaitable(attempt):
        return
    else:
        what = f"returned {type(attempt).__name__}, not an awaitable"
    raise TypeError(f"{fn!r} is not async (it {what}): use retrier.call(fn, ...) for a sync function") from exc


async def _bounded(coro: Awaitable[Any], timeout: float) -> Any:
    """Runs one attempt for at most ``timeout`` seconds. Unlike ``asyncio.wait_for``, the
    timeout is told apart from a TimeoutError the attempt raises itself."""
    if _library() == "trio":
        return await _trio_bounded(coro, timeout)
    task = asyncio.ensure_future(coro)
    try:
        done, _ = await asyncio.wait((task,), timeout=timeout)
    except BaseException:
        task.cancel()
        raise
    if not done:
        task.cancel()
        await asyncio.wait((task,))
        raise AttemptTimeout(timeout)
    return task.result()


def decorate(r: _native.Retrier, fn: Any) -> Any:
    if not callable(fn):
        raise TypeError(f"a Retrier decorates a function, got {fn!r}")
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        # Calling one only builds the generator: the work runs later, outside the retry.
        raise TypeError(
            f"{fn!r} is a generator function: calling it only creates the generator, so there is nothing to retry; "
            "decorate a function that does the work, or use the loop form (`for attempt in retrier: with attempt: ...`) inside the generator"
        )
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def retrying(*args: Any, **kwargs: Any) -> Any:
            return await drive(r, fn, args, kwargs)

        retrying.retrier = r  # type: ignore[attr-defined]
        return retrying
    if r.attempt_timeout is not None:
        raise ValueError(
            f"attempt_timeout only applies to async functions, and {fn!r} is sync: a blocking attempt cannot be stopped safely; "
            "use a Retrier without attempt_timeout, or the function's own timeout"
        )
    wrapper = _native.RetryingFunction(r, fn)
    functools.update_wrapper(wrapper, fn)
    return wrapper
