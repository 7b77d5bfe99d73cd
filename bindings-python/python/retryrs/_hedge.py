"""The asyncio driver of a hedged call (a Retrier whose policy has a ``hedge`` section, or
a gRPC ``hedgingPolicy``).

The native ``_HedgedCall`` (the core's ``HedgeCall``) decides everything: when the next
attempt launches, how long to wait, which attempt won, which to cancel, when the call is
over and with what. This module only runs each attempt as an asyncio task, waits for the
first of "an attempt ended", "the engine's timer" and "the CancelToken fired", reports
outcomes (in attempt order, before a due hedge), and cancels the tasks it is told to.
A loser's late result is never reported: it is neither returned nor counted.

Retriers without hedging never come here: ``call_async`` picks this driver in native
code, and the decorator when it decorates.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any, Awaitable, Callable, Dict, List, Optional, Set, Tuple

from . import _native
from ._aio import _FIRST, _suspended
from ._runtime import library as _library

_LAUNCH: int = _native._HEDGE_LAUNCH
_WAIT: int = _native._HEDGE_WAIT
_WON: int = _native._HEDGE_WON
_STOP: int = _native._HEDGE_STOP
_AWAIT: int = _native._HEDGE_AWAIT
_CURRENT = _native._CURRENT

# Losers being cancelled: the loop holds tasks weakly, and a loser must live until its
# cancellation has run (closing its connection, say).
_LOSERS: Set["asyncio.Task[Any]"] = set()


_TRIO = (
    "{name}: this policy hedges, and retryrs runs hedged calls under asyncio only: under trio an attempt "
    "would need its own cancel scope in a nursery the call owns, which retryrs does not do yet; "
    "use a policy without `hedge` (or `hedgingPolicy`) under trio"
)


class NotAsyncError(TypeError):
    """The function of a hedged call returned something that is not awaitable."""


async def drive(r: _native.Retrier, fn: Callable[..., Awaitable[Any]], args: Tuple[Any, ...], kwargs: Optional[Dict[str, Any]]) -> Any:
    """``await r.call_async(fn, *args, **kwargs)`` for a Retrier that hedges."""
    return await run(r, fn, args, kwargs or {})


async def run(r: _native.Retrier, fn: Callable[..., Awaitable[Any]], args: Tuple[Any, ...], kw: Dict[str, Any], discard: Optional[Callable[[Any], Any]] = None) -> Any:
    """``drive`` for the HTTP helpers: ``discard(outcome)`` is given what a loser came to
    if it came to something (a value, or an exception), which nobody else will see: a
    response to close, say (it may return an awaitable, which is run)."""
    if _library() == "trio":
        raise RuntimeError(_TRIO.format(name=r.name))
    call = r._hedge()
    return await _run(r, call, fn, args, kw, discard)


def _fired(fut: "asyncio.Future[None]") -> None:
    if not fut.done():
        fut.set_result(None)


async def _run(r: _native.Retrier, call: Any, fn: Callable[..., Awaitable[Any]], args: Tuple[Any, ...], kw: Dict[str, Any], discard: Optional[Callable[[Any], Any]]) -> Any:
    loop = asyncio.get_running_loop()
    tasks: Dict[int, "asyncio.Task[Any]"] = {}
    results: Dict[int, Any] = {}
    queue: List[int] = []
    checks = r.retry_on_result is not None
    interrupts = r._interrupts
    token = call.token
    fired: Optional["asyncio.Future[None]"] = None
    sub = None
    if token is not None:
        fired = loop.create_future()
        sub = token._subscribe(lambda: loop.call_soon_threadsafe(_fired, fired))
    over = False
    try:
        step = call.poll()
        while True:
            action = step[0]
            if action == _LAUNCH:
                k = step[1]
                tasks[k] = loop.create_task(_attempt(fn, args, kw, call.attempt_info(k), interrupts))
            elif action == _WON:
                over = True
                return results.pop(step[1])
            elif action == _STOP:
                over = True
                error = step[4]
                if error is None:  # (only a host cancellation ends without one: not here)
                    raise RuntimeError("retryrs: a hedged call stopped without an outcome")
                raise error
            elif action == _WAIT and not queue:
                if fired is None or not fired.done():
                    await _wait(call, tasks, fired, step[2])
                if fired is not None and fired.done():
                    step = call.cancel(True)
                    continue
                queue = sorted(k for k, t in tasks.items() if t.done())
            if queue:
                k = queue.pop(0)
                step = await _report(r, call, k, tasks.pop(k), checks, results)
                if step[0] == _STOP and isinstance(step[4], NotAsyncError):
                    over = True
                    raise step[4]
            else:
                step = call.poll()
    except BaseException:
        if not over:
            # The task was cancelled (or Ctrl-C): the engine records the cancel, every
            # attempt is cancelled below, and the host's own signal goes on at once.
            call.cancel(False)
        raise
    finally:
        if sub is not None:
            token._unsubscribe(sub)
        _abandon(tasks, discard)
        if discard is not None:
            for value in results.values():  # (none but the winner's is ever kept)
                _discard(discard, value)


async def _wait(call: Any, tasks: Dict[int, "asyncio.Task[Any]"], fired: Optional["asyncio.Future[None]"], timeout: Optional[float]) -> None:
    """Until an attempt ends, the token fires, or ``timeout`` seconds pass (None: no
    timer). Under ``retryrs.testing`` virtual time, the attempts get one turn of the loop
    and the timer's time then passes at once."""
    if call.virtual_time and timeout is not None:
        await asyncio.sleep(0)
        if not any(t.done() for t in tasks.values()):
            _native._testing_advance(timeout)
        return
    waiting: Set["asyncio.Future[Any]"] = set(tasks.values())
    if fired is not None:
        waiting.add(fired)
    if waiting:
        await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    else:
        await asyncio.sleep(timeout or 0)


async def _report(r: _native.Retrier, call: Any, k: int, task: "asyncio.Task[Any]", checks: bool, results: Dict[int, Any]) -> Any:
    """Attempt ``k``'s outcome to the engine (a hook's awaitable answer awaited, and the
    engine asked again with the answers so far); returns its next step."""
    answers: Tuple[Any, ...] = ()
    if task.cancelled():
        exc: Optional[BaseException] = asyncio.CancelledError()
    else:
        exc = task.exception()
    if exc is None:
        value = task.result()
        if checks:
            verdict = r._rejects(value)
            rejected = verdict if type(verdict) is bool else bool(await verdict)
            if rejected:
                while True:
                    step = call.rejected(k, value, answers)
                    if step[0] != _AWAIT:
                        return step
                    answers += (await step[4],)
        results[k] = value
        return call.succeeded(k)
    if isinstance(exc, NotAsyncError):
        # Not a failure to hedge on: the call is wrong. The engine records a cancel.
        step = call.cancel(False)
        return (_STOP, step[1], None, step[3], exc)
    while True:
        step = call.failed(k, exc, answers)
        if step[0] != _AWAIT:
            return step
        answers += (await step[4],)


async def _attempt(fn: Callable[..., Any], args: Tuple[Any, ...], kw: Dict[str, Any], info: _native.AttemptInfo, interrupts: bool) -> Any:
    """One attempt, in its own task: ``retryrs.current_attempt()`` is ``info`` (the task's
    own copy of the context), and the attempt is interrupted at its bound as a retried
    attempt is (an ``AttemptTimeout``), unless the Retrier leaves that to an HTTP helper."""
    _CURRENT.set(info)
    attempt = fn(*args, **kw)
    if not inspect.isawaitable(attempt):
        raise NotAsyncError(f"{fn!r} is not async (it returned {type(attempt).__name__}, not an awaitable): a hedged call runs an async function; a sync call cannot hedge")
    if interrupts and info._bound is not None:
        return await _suspended(attempt.__await__(), _FIRST, info)
    return await attempt


def _abandon(tasks: Dict[int, "asyncio.Task[Any]"], discard: Optional[Callable[[Any], Any]]) -> None:
    """Cancels the attempts still in flight (the losers): their late results are never
    returned (retrieved only so that asyncio does not report them, and handed to
    ``discard`` if there is one)."""
    for t in tasks.values():
        if not t.done():
            t.cancel()
            _LOSERS.add(t)
        t.add_done_callback(functools.partial(_forget, discard))
    tasks.clear()


def _forget(discard: Optional[Callable[[Any], Any]], t: "asyncio.Task[Any]") -> None:
    _LOSERS.discard(t)
    if t.cancelled():
        return
    exc = t.exception()
    if discard is not None:
        _discard(discard, t.result() if exc is None else exc)


def _discard(discard: Callable[[Any], Any], outcome: Any) -> None:
    try:
        pending = discard(outcome)
        if inspect.isawaitable(pending):
            task = asyncio.ensure_future(pending)
            _LOSERS.add(task)
            task.add_done_callback(functools.partial(_forget, None))
    except Exception:  # a loser's cleanup never changes the call's outcome
        pass


def decorate(r: _native.Retrier, fn: Any) -> Any:
    """The decorator's wrapper of an ``async def`` for a Retrier that hedges."""

    @functools.wraps(fn)
    async def hedging(*args: Any, **kwargs: Any) -> Any:
        return await drive(r, fn, args, kwargs)

    hedging.retrier = r  # type: ignore[attr-defined]
    return hedging


__all__: List[str] = []
