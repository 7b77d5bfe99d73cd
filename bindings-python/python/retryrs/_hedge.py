"""The async driver of a hedged call (a Retrier whose policy has a ``hedge`` section, or
a gRPC ``hedgingPolicy``), under asyncio and under trio.

The native ``_HedgedCall`` (the core's ``HedgeCall``) decides everything: when the next
attempt launches, how long to wait, which attempt won, which to cancel, when the call is
over and with what. This module only runs each attempt concurrently (an asyncio task; a
task in a nursery the call owns, in its own cancel scope, under trio), waits for the
first of "an attempt ended", "the engine's timer" and "the CancelToken fired", reports
outcomes (in attempt order, before a due hedge), and cancels the attempts it is told to.
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


class NotAsyncError(TypeError):
    """The function of a hedged call returned something that is not awaitable."""


async def drive(r: _native.Retrier, fn: Callable[..., Awaitable[Any]], args: Tuple[Any, ...], kwargs: Optional[Dict[str, Any]]) -> Any:
    """``await r.call_async(fn, *args, **kwargs)`` for a Retrier that hedges."""
    return await run(r, fn, args, kwargs or {})


async def run(r: _native.Retrier, fn: Callable[..., Awaitable[Any]], args: Tuple[Any, ...], kw: Dict[str, Any], discard: Optional[Callable[[Any], Any]] = None) -> Any:
    """``drive`` for the HTTP helpers: ``discard(outcome)`` is given what a loser came to
    if it came to something (a value, or an exception), which nobody else will see: a
    response to close, say (it may return an awaitable, which is run)."""
    call = r._hedge()
    if _library() == "trio":
        return await _trio_run(r, call, fn, args, kw, discard)
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
                step = await _report(r, call, k, _outcome(tasks.pop(k)), checks, results)
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


def _outcome(task: "asyncio.Task[Any]") -> Tuple[bool, Any]:
    """(True, its value) or (False, what it raised) of a finished attempt's task."""
    if task.cancelled():
        return False, asyncio.CancelledError()
    exc = task.exception()
    return (True, task.result()) if exc is None else (False, exc)


async def _report(r: _native.Retrier, call: Any, k: int, outcome: Tuple[bool, Any], checks: bool, results: Dict[int, Any]) -> Any:
    """Attempt ``k``'s outcome (``(True, value)`` or ``(False, exception)``) to the engine
    (a hook's awaitable answer awaited, and the engine asked again with the answers so
    far); returns its next step."""
    answers: Tuple[Any, ...] = ()
    ok, exc = outcome
    if ok:
        value = exc
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


_TOKEN = object()  # (on the trio driver's channel: the CancelToken fired)


async def _trio_run(r: _native.Retrier, call: Any, fn: Callable[..., Awaitable[Any]], args: Tuple[Any, ...], kw: Dict[str, Any], discard: Optional[Callable[[Any], Any]]) -> Any:
    """``_run`` under trio: the attempts run in a nursery the call owns, each in its own
    cancel scope (cancelled when it loses, or when the call ends), and send their outcome
    on a channel the driver waits on with the engine's timer (``move_on_after``). A
    cancel scope around the call cancels every attempt at once."""
    import math

    import trio

    from ._runtime import _run_soon

    send, recv = trio.open_memory_channel(math.inf)
    scopes: Dict[int, Any] = {}
    results: Dict[int, Any] = {}
    arrived: Dict[int, Tuple[bool, Any]] = {}
    queue: List[int] = []
    checks = r.retry_on_result is not None
    interrupts = r._interrupts
    token = call.token
    sub = None
    if token is not None:
        run = trio.lowlevel.current_trio_token()
        sub = token._subscribe(lambda: _run_soon(run, lambda: send.send_nowait(_TOKEN)))
    over, fired = False, False
    value: Any = None
    error: Optional[BaseException] = None

    def take(msg: Any) -> None:
        nonlocal fired
        if msg is _TOKEN:
            fired = True
        else:
            arrived[msg[0]] = (msg[1], msg[2])

    try:
        async with trio.open_nursery() as nursery:
            try:
                step = call.poll()
                while True:
                    action = step[0]
                    if action == _LAUNCH:
                        k = step[1]
                        scopes[k] = trio.CancelScope()
                        nursery.start_soon(_trio_attempt, fn, args, kw, call.attempt_info(k), interrupts, k, scopes[k], send)
                    elif action == _WON:
                        over, value = True, results.pop(step[1])
                        break
                    elif action == _STOP:
                        over, error = True, step[4]
                        break
                    elif action == _WAIT and not queue:
                        with trio.move_on_after(math.inf if step[2] is None else step[2]):
                            if not fired:
                                take(await recv.receive())
                        while True:
                            try:
                                take(recv.receive_nowait())
                            except trio.WouldBlock:
                                break
                        if fired:
                            step = call.cancel(True)
                            continue
                        queue = sorted(arrived)
                    if queue:
                        k = queue.pop(0)
                        step = await _report(r, call, k, arrived.pop(k), checks, results)
                        if step[0] == _STOP and isinstance(step[4], NotAsyncError):
                            over, error = True, step[4]
                            break
                    else:
                        step = call.poll()
            finally:
                for scope in scopes.values():  # the losers (and nothing else is left)
                    scope.cancel()
    except BaseException:
        if not over:
            call.cancel(False)
        raise
    finally:
        if sub is not None:
            token._unsubscribe(sub)
        while True:
            try:
                take(recv.receive_nowait())
            except trio.WouldBlock:
                break
        if discard is not None:
            for late in [out for _, out in arrived.values()] + list(results.values()):
                await _trio_discard(discard, late)
    if error is not None:
        raise error
    if not over:
        raise RuntimeError("retryrs: a hedged call stopped without an outcome")
    return value


async def _trio_discard(discard: Callable[[Any], Any], outcome: Any) -> None:
    """``_discard`` under trio: an awaitable cleanup runs here, shielded (the call may be
    ending by cancellation) and bounded."""
    import trio

    try:
        pending = discard(outcome)
        if inspect.isawaitable(pending):
            with trio.CancelScope(shield=True):
                with trio.move_on_after(1.0):
                    await pending
    except Exception:  # a loser's cleanup never changes the call's outcome
        pass


async def _trio_attempt(fn: Callable[..., Any], args: Tuple[Any, ...], kw: Dict[str, Any], info: _native.AttemptInfo, interrupts: bool, k: int, scope: Any, send: Any) -> None:
    """One attempt under trio, in its own cancel scope (and within its bound, as an
    ``AttemptTimeout``, unless an HTTP helper bounds it): its outcome goes to ``send``; a
    cancelled attempt sends nothing."""
    import trio

    from ._errors import AttemptTimeout

    with scope:
        _CURRENT.set(info)
        try:
            attempt = fn(*args, **kw)
            if not inspect.isawaitable(attempt):
                raise NotAsyncError(f"{fn!r} is not async (it returned {type(attempt).__name__}, not an awaitable): a hedged call runs an async function; a sync call cannot hedge")
            left = info.remaining if interrupts else None
            if left is None:
                value = await attempt
            else:
                with trio.move_on_after(left) as bound:
                    value = await attempt
                if bound.cancelled_caught:
                    raise AttemptTimeout(info._bound or 0.0)
        except Exception as e:
            send.send_nowait((k, False, e))
            return
        send.send_nowait((k, True, value))


def decorate(r: _native.Retrier, fn: Any) -> Any:
    """The decorator's wrapper of an ``async def`` for a Retrier that hedges."""

    @functools.wraps(fn)
    async def hedging(*args: Any, **kwargs: Any) -> Any:
        return await drive(r, fn, args, kwargs)

    hedging.retrier = r  # type: ignore[attr-defined]
    return hedging


__all__: List[str] = []
