"""The async driver of a hedged call (a Retrier whose policy has a ``hedge`` section, or
a gRPC ``hedgingPolicy``), under asyncio and under trio.

The native ``_HedgedCall`` (the core's ``HedgeCall``) decides everything: when the next
attempt launches, how long to wait, which attempt won, which to cancel, when the call is
over and with what. ``_steps`` only follows it: it launches attempts, waits for the first
of "an attempt ended", "the engine's timer" and "the CancelToken fired", and reports
outcomes (in attempt order, before a due hedge). Running attempts concurrently is the
async library's: an asyncio task each (``_Tasks``), or under trio a task in a nursery
the call owns, in its own cancel scope (``_Nursery``). When the call ends every attempt
still in flight is cancelled, and a loser's late result is never reported: neither
returned nor counted (the HTTP helpers' ``discard`` closes a response a loser got).

Retriers without hedging never come here: ``call_async`` picks this driver in native
code, and the decorator when it decorates.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import math
from typing import Any, Awaitable, Callable, Coroutine, Dict, List, Optional, Set, Tuple

from . import _native
from ._aio import _FIRED, _FIRST, _LATE, WRAPPED, _UntilToken, _suspended, _timed_out
from ._runtime import library as _library

_LAUNCH: int = _native._HEDGE_LAUNCH
_WAIT: int = _native._HEDGE_WAIT
_WON: int = _native._HEDGE_WON
_STOP: int = _native._HEDGE_STOP
_AWAIT: int = _native._HEDGE_AWAIT
_CURRENT = _native._CURRENT

Discard = Optional[Callable[[Any], Any]]
Outcome = Tuple[bool, Any]  # (True, value) or (False, the exception)

# asyncio tasks being cancelled or cleaned up: the loop holds tasks weakly, and a loser
# must live until its cancellation has run (closing its connection, say).
_LOSERS: Set["asyncio.Task[Any]"] = set()


class NotAsyncError(TypeError):
    """The function of a hedged call returned something that is not awaitable."""


async def drive(r: _native.Retrier, fn: Callable[..., Awaitable[Any]], args: Tuple[Any, ...], kwargs: Optional[Dict[str, Any]]) -> Any:
    """``await r.call_async(fn, *args, **kwargs)`` for a Retrier that hedges."""
    return await run(r, fn, args, kwargs or {})


async def run(r: _native.Retrier, fn: Callable[..., Awaitable[Any]], args: Tuple[Any, ...], kw: Dict[str, Any], discard: Discard = None) -> Any:
    """``drive`` for the HTTP helpers: ``discard(outcome)`` is given what a loser came to
    if it came to something (a value, or an exception), which nobody else will see: a
    response to close, say (it may return an awaitable, which is run)."""
    call = r._hedge()
    attempt = functools.partial(_attempt, fn, args, kw, r._interrupts)
    if _library() == "trio":
        import trio

        async with trio.open_nursery() as nursery:
            runner: Any = _Nursery(nursery, attempt, call.token)
            ended = await _guarded(r, call, runner, discard)
        # (Raised here, outside the nursery, as it is: not in an exception group.)
    else:
        ended = await _guarded(r, call, _Tasks(attempt, call.token, call.virtual_time), discard)
    ok, out = ended
    if ok:
        return out
    raise out


async def _guarded(r: _native.Retrier, call: Any, runner: Any, discard: Discard) -> Outcome:
    """``_steps``, and whatever ends it: a cancellation of the call (the task cancelled,
    a cancel scope, Ctrl-C) is recorded by the engine and goes on at once; every attempt
    still in flight is cancelled."""
    try:
        return await _steps(r, call, runner)
    except BaseException:
        call.cancel(False)  # (nothing, if the call had ended)
        raise
    finally:
        await runner.close(discard)


async def _steps(r: _native.Retrier, call: Any, runner: Any) -> Outcome:
    """The call, step by step as the engine says, to its winner's value or its error."""
    results: Dict[int, Any] = {}
    infos: Dict[int, Any] = {}  # each attempt in flight's AttemptInfo, to tell its cut
    queue: List[int] = []
    checks = r.retry_on_result is not None
    step = call.poll()
    while True:
        action = step[0]
        if action == _LAUNCH:
            info = infos[step[1]] = call.attempt_info(step[1])
            runner.launch(step[1], info)
        elif action == _WON:
            return True, results.pop(step[1])
        elif action == _STOP:
            error = step[4]
            return False, error if error is not None else RuntimeError("retryrs: a hedged call stopped without an outcome")
        elif action == _WAIT and not queue:
            if await runner.wait(step[2]):
                step = call.cancel(True)  # the CancelToken fired: RetryCancelled
                continue
            queue = runner.finished()
        if queue:
            k = queue.pop(0)
            step = await _report(r, call, k, runner.take(k), checks, results, infos.pop(k, None))
        else:
            step = call.poll()


async def _report(r: _native.Retrier, call: Any, k: int, outcome: Outcome, checks: bool, results: Dict[int, Any], info: Any = None) -> Any:
    """Attempt ``k``'s outcome to the engine (a hook's awaitable answer awaited, and the
    engine asked again with the answers so far); returns its next step. A failure that
    is the attempt's cut at its bound (``info``: its AttemptInfo; the driver's or an HTTP
    helper's cut) is told as a timeout, which a quota prices higher."""
    answers: Tuple[Any, ...] = ()
    ok, out = outcome
    if ok:
        if checks:
            verdict = r._rejects(out)
            if type(verdict) is not bool:
                # Unanswered at the deadline: "rejected", so the engine ends the call
                # (reason deadline) with the value kept, as a retried call's does.
                verdict = await _hook(call, verdict, True)
                if verdict is _FIRED:
                    return _cancelled(call, out)
            if verdict:
                while True:
                    step = call.rejected(k, out, answers)
                    if step[0] != _AWAIT:
                        return step
                    answer = await _hook(call, step[4], None)
                    if answer is _FIRED:
                        return _cancelled(call, out)
                    answers += (answer,)
        results[k] = out
        return call.succeeded(k)
    if isinstance(out, NotAsyncError):
        # Not a failure to hedge on: the call is wrong. The engine records a cancel.
        step = call.cancel(False)
        return (_STOP, step[1], None, step[3], out)
    timed_out = info is not None and _timed_out(out, info)
    while True:
        step = call.failed(k, out, answers, timed_out)
        if step[0] != _AWAIT:
            return step
        # The first hook asked is retry_on: unanswered at the deadline it counts as
        # "transient" (the engine then ends the call, reason deadline, the failure kept).
        answer = await _hook(call, step[4], "transient" if not answers else None)
        if answer is _FIRED:
            return _cancelled(call, out)
        answers += (answer,)


def _cancelled(call: Any, subject: Any) -> Any:
    """The call's end when its token fired while a hook judged ``subject`` (the outcome
    being reported, not yet kept by the engine): RetryCancelled, caused by it when it is
    an exception, so the failure is not lost."""
    step = call.cancel(True)
    error = step[4]
    if isinstance(error, BaseException) and error.__cause__ is None and isinstance(subject, BaseException):
        error.__cause__ = subject
    return step


async def _hook(call: Any, pending: Any, late: Any) -> Any:
    """A hook's awaited answer (``retry_on``, ``retry_after``, ``retry_on_result``),
    bounded as a retried call bounds it: the call's CancelToken firing ends the wait at
    once (``_FIRED``: the driver cancels the call, RetryCancelled) and the call's deadline
    passing answers ``late`` (the hook is cancelled either way). Without a token or a
    deadline it is awaited as it is."""
    token = call.token
    left = call._deadline_left
    if token is None and left is None:
        return await pending
    answer = await _UntilToken(token, pending, left)
    return late if answer is _LATE else answer


async def _attempt(fn: Callable[..., Any], args: Tuple[Any, ...], kw: Dict[str, Any], interrupts: bool, info: _native.AttemptInfo) -> Any:
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


def _fired(fut: "asyncio.Future[None]") -> None:
    if not fut.done():
        fut.set_result(None)


class _Tasks:
    """The attempts as asyncio tasks."""

    def __init__(self, attempt: Callable[[_native.AttemptInfo], Coroutine[Any, Any, Any]], token: Any, virtual: bool) -> None:
        self.loop = asyncio.get_running_loop()
        self.attempt = attempt
        self.tasks: Dict[int, "asyncio.Task[Any]"] = {}
        self.virtual = virtual
        self.token = token
        self.fired: Optional["asyncio.Future[None]"] = None
        self.sub = None
        if token is not None:
            fired = self.fired = self.loop.create_future()
            self.sub = token._subscribe(lambda: self.loop.call_soon_threadsafe(_fired, fired))

    def launch(self, k: int, info: _native.AttemptInfo) -> None:
        self.tasks[k] = self.loop.create_task(self.attempt(info))

    async def wait(self, timeout: Optional[float]) -> bool:
        """Until an attempt ends, the token fires (True), or ``timeout`` seconds pass
        (None: no timer). Under ``retryrs.testing`` virtual time, the attempts get one turn
        of the loop and the timer's time then passes at once."""
        if self.fired is not None and self.fired.done():
            return True
        if self.virtual and timeout is not None:
            await asyncio.sleep(0)
            if not any(t.done() for t in self.tasks.values()):
                _native._testing_advance(timeout)
            return False
        waiting: Set["asyncio.Future[Any]"] = set(self.tasks.values())
        if self.fired is not None:
            waiting.add(self.fired)
        if waiting:
            await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        else:
            await asyncio.sleep(timeout or 0)
        return self.fired is not None and self.fired.done()

    def finished(self) -> List[int]:
        return sorted(k for k, t in self.tasks.items() if t.done())

    def take(self, k: int) -> Outcome:
        task = self.tasks.pop(k)
        if task.cancelled():
            return False, asyncio.CancelledError()
        exc = task.exception()
        return (True, task.result()) if exc is None else (False, exc)

    async def close(self, discard: Discard) -> None:
        """Cancels the attempts still in flight (the losers): their late results are never
        returned (retrieved only so that asyncio does not report them, and handed to
        ``discard`` if there is one)."""
        if self.sub is not None:
            self.token._unsubscribe(self.sub)
        for t in self.tasks.values():
            if not t.done():
                t.cancel()
                _LOSERS.add(t)
            t.add_done_callback(functools.partial(_forget, discard))
        self.tasks.clear()


def _forget(discard: Discard, t: "asyncio.Task[Any]") -> None:
    _LOSERS.discard(t)
    if t.cancelled():
        return
    exc = t.exception()
    if discard is None:
        return
    try:
        pending = discard(t.result() if exc is None else exc)
        if inspect.isawaitable(pending):
            cleanup = asyncio.ensure_future(pending)
            _LOSERS.add(cleanup)
            cleanup.add_done_callback(functools.partial(_forget, None))
    except Exception:  # a loser's cleanup never changes the call's outcome
        pass


_TOKEN = object()  # (on the trio runner's channel: the CancelToken fired)


class _Nursery:
    """The attempts under trio: each a task in the call's nursery, in its own cancel
    scope, sending its outcome on a channel the driver waits on."""

    def __init__(self, nursery: Any, attempt: Callable[[_native.AttemptInfo], Awaitable[Any]], token: Any) -> None:
        import trio

        from ._runtime import _run_soon

        self.nursery = nursery
        self.attempt = attempt
        self.send, self.recv = trio.open_memory_channel(math.inf)
        self.scopes: Dict[int, Any] = {}
        self.arrived: Dict[int, Outcome] = {}
        self.fired = False
        self.token = token
        self.sub = None
        if token is not None:
            run = trio.lowlevel.current_trio_token()
            self.sub = token._subscribe(lambda: _run_soon(run, lambda: self.send.send_nowait(_TOKEN)))

    def launch(self, k: int, info: _native.AttemptInfo) -> None:
        import trio

        self.scopes[k] = trio.CancelScope()
        self.nursery.start_soon(self._one, k, info, self.scopes[k])

    async def _one(self, k: int, info: _native.AttemptInfo, scope: Any) -> None:
        with scope:
            try:
                value = await self.attempt(info)
            except (Exception, KeyboardInterrupt, SystemExit) as e:
                # A signal too goes to the driver (the engine records the cancel and it is
                # raised outside the nursery as it is), not into an exception group.
                self.send.send_nowait((k, False, e))
                return
            self.send.send_nowait((k, True, value))

    def _take(self, msg: Any) -> None:
        if msg is _TOKEN:
            self.fired = True
        else:
            self.arrived[msg[0]] = (msg[1], msg[2])

    def _drain(self) -> None:
        import trio

        while True:
            try:
                self._take(self.recv.receive_nowait())
            except trio.WouldBlock:
                return

    async def wait(self, timeout: Optional[float]) -> bool:
        import trio

        with trio.move_on_after(math.inf if timeout is None else timeout):
            if not self.fired:
                self._take(await self.recv.receive())
        self._drain()
        return self.fired

    def finished(self) -> List[int]:
        return sorted(self.arrived)

    def take(self, k: int) -> Outcome:
        return self.arrived.pop(k)

    async def close(self, discard: Discard) -> None:
        """Cancels every attempt's scope (the losers; the nursery then waits for them, at
        once), and hands what a loser came to, if anything, to ``discard``."""
        if self.sub is not None:
            self.token._unsubscribe(self.sub)
        for scope in self.scopes.values():
            scope.cancel()
        self._drain()
        if discard is None:
            return
        import trio

        for _, late in self.arrived.values():
            try:
                pending = discard(late)
                if inspect.isawaitable(pending):
                    # Shielded (the call may be ending by cancellation) and bounded.
                    with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                        await pending
            except Exception:  # a loser's cleanup never changes the call's outcome
                pass


def decorate(r: _native.Retrier, fn: Any) -> Any:
    """The decorator's wrapper of an ``async def`` for a Retrier that hedges."""

    @functools.wraps(fn, WRAPPED)
    async def hedging(*args: Any, **kwargs: Any) -> Any:
        return await drive(r, fn, args, kwargs)

    hedging.retrier = r  # type: ignore[attr-defined]
    return hedging


__all__: List[str] = []
