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
import types
from typing import Any, Awaitable, Callable, Dict, Generator, List, Optional, Tuple

from . import _native
from ._errors import AttemptTimeout, _Raised
from ._runtime import library as _library, sleep as _sleep

_CURRENT = _native._CURRENT
_FirstAttempt = _native._FirstAttempt
_SUSPENDED, _UNSTARTED, _FAILED, _VALUE = 0, 1, 2, 3


async def drive(r: _native.Retrier, fn: Callable[..., Awaitable[Any]], args: Tuple[Any, ...], kwargs: Optional[Dict[str, Any]]) -> Any:
    # The first attempt, up to its first suspension, is the native side's (one call: the
    # attempt set as current_attempt(), the function called and its first step run): an
    # attempt over in that step with a value nobody else needs to see (the happy path of
    # cached or computed values) comes back as the value, with no timer armed.
    first = r._first(fn, args, kwargs)
    if type(first) is _FirstAttempt:
        return await _go_on(r, first, fn, args, kwargs or {})
    return first


async def _go_on(r: _native.Retrier, first: _native._FirstAttempt, fn: Callable[..., Awaitable[Any]], args: Tuple[Any, ...], kw: Dict[str, Any]) -> Any:
    """The rest of an async call whose first attempt was not over with a plain value in
    its first step (see ``Retrier._first``)."""
    kind, info, attempt, step, value, entered, called = first.parts
    del first  # (it may hold the exception: no frame -> traceback -> frame cycle)
    exc: Optional[BaseException] = None
    if kind == _FAILED:
        exc, value = value, None
        _refuse_sync(fn, attempt if called else _NOT_CALLED, exc)
    elif kind != _VALUE:
        try:
            if kind == _SUSPENDED:
                # The bound interrupts the attempt: a timer is armed now that it has
                # suspended.
                value = await (_suspended(attempt, step, info) if info._arm else _resume(attempt, step))
            elif info._arm:
                value = await _suspended(attempt.__await__(), _FIRST, info)
            else:
                value = await attempt
        except BaseException as e:
            exc = e
            _refuse_sync(fn, attempt, e)
        finally:
            _leave(entered)
    if exc is None:
        # No engine state unless someone listens, a budget refills or a result predicate
        # looks at the value (else the success is only counted, for r.stats()).
        if r._wants_success:
            verdict = r._rejects(value)
            if type(verdict) is not bool:
                # An async result predicate: awaited within the call's deadline and token,
                # so the call's engine state is needed now.
                call = r._begin(info)
                if await _answer(call, verdict, late=True):
                    return await _retry(r, call, fn, args, kw, None, value)
                call.succeeded()
                return value
            if verdict:
                return await _retry(r, r._begin(info), fn, args, kw, None, value)
        r._succeeded(info)
        return value
    return await _retry(r, r._begin(info), fn, args, kw, exc, None, _timed_out(exc, info))


_leave = _native._leave_attempt


async def _rejects(r: _native.Retrier, call: _native.SteppedCall, value: Any) -> bool:
    """Whether retry_on_result rejects the value (an async predicate is awaited, within
    the call's deadline and token: still unanswered at the deadline, the value counts as
    rejected and the engine ends the call, reason ``deadline``)."""
    verdict = r._rejects(value)
    if type(verdict) is bool:
        return verdict
    return bool(await _answer(call, verdict, late=True))


def _predicate(retry_on: Any) -> bool:
    """Whether ``retry_on`` is a predicate (asked first, before any hint hook) rather
    than exception classes."""
    return retry_on is not None and not isinstance(retry_on, (type, tuple))


async def _retry(r: _native.Retrier, call: _native.SteppedCall, fn: Callable[..., Awaitable[Any]], args: Tuple[Any, ...], kw: Dict[str, Any], exc: Optional[BaseException], rejected: Any, timed_out: bool = False) -> Any:
    checks_results = r.retry_on_result is not None
    interrupts = r._interrupts
    predicate = _predicate(r.retry_on)
    while True:
        if exc is not None:
            delay = await _failed(call, exc, timed_out, predicate)  # raises when the call ends
        else:
            delay = await _rejected(call, rejected)
        exc = rejected = None  # no frame -> traceback -> frame cycle
        # (A zero delay, or virtual time, still yields one turn of the loop.)
        await _sleep(call, delay)
        call.resume()
        current = call.current()
        entered = _CURRENT.set(current)
        try:
            if current._bound is None or not interrupts:
                value = await fn(*args, **kw)
            else:
                value = await _suspended(fn(*args, **kw).__await__(), _FIRST, current)
        except BaseException as e:
            exc = e
            timed_out = _timed_out(e, current)
        else:
            if checks_results and await _rejects(r, call, value):
                rejected = value
                continue
            call.succeeded()
            return value
        finally:
            _CURRENT.reset(entered)


async def _failed(call: _native.SteppedCall, exc: BaseException, timed_out: bool = False, predicate: bool = False, step: Any = None) -> float:
    """The engine's answer to a failure (``timed_out``: the driver cut the attempt at its
    bound). A hook (predicate, hint) that answers with an awaitable is awaited here --
    never read as "true" -- and the engine asked again with the answers so far.
    ``predicate``: ``retry_on`` is one (the first hook asked); still unanswered at the
    deadline it counts as "transient", so the engine ends the call with reason
    ``deadline`` and the failure kept. ``step``: the engine's first answer, if it was
    already asked (``async for``)."""
    answers: Tuple[Any, ...] = ()
    while True:
        if step is None:
            step = call.failed(exc, answers, timed_out)
        if type(step) is float:
            return step
        answers += (await _answer(call, step, late=True if predicate and not answers else None, subject=exc),)
        step = None


async def _rejected(call: _native.SteppedCall, value: Any, step: Any = None) -> float:
    """The engine's answer to a rejected value (an async retry_after hook is awaited);
    ``step`` as for ``_failed``."""
    answers: Tuple[Any, ...] = ()
    while True:
        if step is None:
            step = call.rejected(value, answers)
        if type(step) is float:
            return step
        answers += (await _answer(call, step, subject=value),)
        step = None


async def _answer(call: _native.SteppedCall, step: Any, late: Any = None, subject: Any = None) -> Any:
    """A hook's awaited answer. A wait / before_sleep hook that raises (StopRetrying, or
    its own error) goes back to the engine, which closes the call. The call's CancelToken
    firing while a hook is awaited ends the call at once (RetryCancelled, its cause
    ``subject``, the failure being judged, when the engine has not kept one yet; the
    hook is cancelled), as it ends a wait. Still awaited at the call's deadline, the hook
    is cancelled and answers ``late``: None for a hint or a wait / before_sleep hook
    (the engine's own), "rejected"/"transient" for a predicate, and the engine, finding
    the deadline passed, ends the call (reason ``deadline``). Under asyncio and trio."""
    token = call.token
    hooking = call._hooking
    left = call._deadline_left
    if token is not None or left is not None:
        step = _UntilToken(token, step, left)
    if not hooking:
        answer = await step
    else:
        try:
            answer = await step
        except Exception as e:
            return _Raised(e)
        except BaseException:
            call.interrupted()  # (task cancelled during the hook: the engine records it)
            raise
    if answer is _FIRED:
        try:
            call.cancelled()  # raises RetryCancelled
        except BaseException as e:
            if e.__cause__ is None and isinstance(subject, BaseException):
                e.__cause__ = subject
            raise
    if answer is _LATE:
        return None if hooking else late
    return answer


_FIRED: Any = object()  # _UntilToken: the token fired before the hook answered
_LATE: Any = object()  # _UntilToken: the deadline passed before the hook answered


class _UntilToken:
    """Awaits a hook's awaitable in a task of its own, until ``token`` (if any) fires or
    ``left`` seconds (if any) pass: then the hook's task is cancelled and the answer is
    ``_FIRED`` or ``_LATE``."""

    __slots__ = ("token", "step", "left")

    def __init__(self, token: Any, step: Any, left: Optional[float] = None) -> None:
        self.token = token
        self.step = step
        self.left = left

    def __await__(self) -> Generator[Any, Any, Any]:
        left = self.left
        if left is not None and left <= 0 and inspect.iscoroutine(self.step):
            self.step.close()  # (asked past the deadline: never started)
            return _late().__await__()
        return (self._trio_race() if _library() == "trio" else self._race()).__await__()

    async def _trio_race(self) -> Any:
        """``_race`` under trio: the hook runs in this task, inside a cancel scope with the
        deadline (1 ms past it) that the token cancels; its Cancelled stays in the scope."""
        import trio

        from ._runtime import _run_soon

        left = self.left
        scope = trio.CancelScope(deadline=trio.current_time() + left + 0.001 if left is not None else float("inf"))
        fired = [False]

        def fire() -> None:
            fired[0] = True
            scope.cancel()

        token = self.token
        run = trio.lowlevel.current_trio_token()
        # (token.cancel() may run on another thread: the scope is cancelled on the run's.)
        sub = None if token is None else token._subscribe(lambda: _run_soon(run, fire))
        try:
            with scope:
                return await self.step
        finally:
            if sub is not None:
                token._unsubscribe(sub)
        return _FIRED if fired[0] else _LATE

    async def _race(self) -> Any:
        left = self.left
        loop = asyncio.get_running_loop()
        hook = asyncio.ensure_future(self.step)
        hook.add_done_callback(_retrieved)
        fired: "asyncio.Future[bool]" = loop.create_future()
        token = self.token
        sub = None if token is None else token._subscribe(lambda: loop.call_soon_threadsafe(_fire, fired))
        try:
            # (1 ms past the deadline, for the engine to find it passed.)
            timeout = None if left is None else left + 0.001
            await asyncio.wait((hook, fired), timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            hook.cancel()
            raise
        finally:
            if sub is not None:
                token._unsubscribe(sub)
        if hook.done():
            return hook.result()
        hook.cancel()
        return _FIRED if fired.done() else _LATE


async def _late() -> Any:
    return _LATE


def _fire(fut: "asyncio.Future[bool]") -> None:
    if not fut.done():
        fut.set_result(True)


def _retrieved(task: "asyncio.Future[Any]") -> None:
    """An abandoned hook's late exception is nobody's: retrieved so asyncio does not log it."""
    if not task.cancelled():
        task.exception()


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


_FIRST: Any = object()  # _suspended: the attempt has not been started yet


@types.coroutine
def _resume(it: Any, step: Any) -> Generator[Any, Any, Any]:
    """The rest of an unbounded attempt that yielded ``step`` in its first step."""
    return (yield from _forward(it, step))


@types.coroutine
def _suspended(it: Any, step: Any, current: _native.AttemptInfo, grace: float = 0.0) -> Generator[Any, Any, Any]:
    """Runs the rest of one attempt (``it``, which yielded ``step`` to the loop, or
    ``_FIRST``: not started) within its bound (plus ``grace``): past it, the task is
    cancelled (as ``asyncio.timeout`` does, so whatever the attempt awaits is cancelled with it) and
    the cancellation comes out as an ``AttemptTimeout``. A cancellation of the task from
    anywhere else stays one."""
    if _library() == "trio":
        return (yield from _trio_suspended(it, step, current, grace))
    loop = asyncio.get_running_loop()
    task = asyncio.current_task(loop)
    fired = [False]
    left = current.remaining
    # Outside a task (a bare coroutine driven by hand) there is nothing to cancel.
    handle = None if task is None else loop.call_later((0 if left is None else left) + grace, _expire, task, fired)
    try:
        return (yield from _forward(it, step))
    except asyncio.CancelledError:
        if fired[0] and _own_cancel(task, fired):
            raise _cut(current) from None
        raise
    finally:
        if handle is not None:
            handle.cancel()
        if fired[0]:
            _own_cancel(task, fired)  # the attempt swallowed the cancel: take it back


def _forward(it: Any, step: Any) -> Generator[Any, Any, Any]:
    """Drives the rest of ``it`` (which yielded ``step``, or ``_FIRST``: not started) for
    the task running it, whatever the async library: what it yields goes to the loop, what
    the loop sends or throws goes back to it."""
    try:
        if step is _FIRST:
            step = it.send(None)
        while True:
            try:
                sent = yield step
            except GeneratorExit:
                it.close()
                raise
            except BaseException as e:
                step = it.throw(e)
            else:
                step = it.send(sent)
    except StopIteration as done:
        return done.value


def _trio_suspended(it: Any, step: Any, current: _native.AttemptInfo, grace: float) -> Generator[Any, Any, Any]:
    """``_suspended`` under trio: a cancel scope bounds the attempt (cancelling whatever it
    awaits); a TimeoutError the attempt raises itself stays its own."""
    import trio

    left = current.remaining
    with trio.move_on_after((0 if left is None else left) + grace):
        return (yield from _forward(it, step))
    raise _cut(current)


def _cut(current: _native.AttemptInfo) -> AttemptTimeout:
    """The AttemptTimeout of the attempt ``current`` the driver cut at its bound, marked as
    the driver's own (``_timed_out``), so a quota prices the retry after it as a timeout's
    and an AttemptTimeout raised by anything else (an inner Retrier's) stays a plain
    failure."""
    timeout = AttemptTimeout(current._bound or 0.0)
    timeout._cut = current  # type: ignore[attr-defined]
    return timeout


def _timed_out(exc: Optional[BaseException], current: Any) -> bool:
    """Whether ``exc`` is the driver's own AttemptTimeout for the attempt ``current``, or
    a failure caused by it (an HTTP helper cuts its request with the driver's
    ``_suspended`` and hands the Retrier the client's timeout error, its ``__cause__``
    the AttemptTimeout, itself wrapped in a ``RequestFailed``), or an HTTP helper's
    ``RequestFailed`` for its client's own timeout: each is priced by a quota as a
    timeout (docs/contract.md section 7)."""
    # An HTTP helper's RequestFailed for its client's own timeout (or its cut).
    if getattr(exc, "_retryrs_timed_out", False) is True:
        return True
    seen = 0
    while exc is not None and seen < 4:  # (the helpers' chains are 3 deep)
        if type(exc) is AttemptTimeout:
            return getattr(exc, "_cut", None) is current
        exc = exc.__cause__
        seen += 1
    return False


def _expire(task: Any, fired: List[bool]) -> None:
    fired[0] = True
    task.cancel()


def _own_cancel(task: Any, fired: List[bool]) -> bool:
    """Takes back the cancel the bound requested (once); True when no other cancel of the
    task is pending (always, before Python 3.11: a task cannot say)."""
    fired[0] = False
    uncancel = getattr(task, "uncancel", None)
    if uncancel is None:
        return True
    return bool(uncancel() == 0)


def bound(current: _native.AttemptInfo) -> "Bound | TrioBound":
    """The bound of one ``async for`` attempt, for the running async library."""
    return TrioBound(current) if _library() == "trio" else Bound(current)


class TrioBound:
    """``Bound`` under trio: a cancel scope entered when the attempt starts and left with
    the attempt's block, in the same task; the scope's own cancellation comes out as an
    ``AttemptTimeout``."""

    __slots__ = ("_scope", "_current")

    def __init__(self, current: _native.AttemptInfo) -> None:
        import trio

        left = current.remaining
        self._scope = trio.CancelScope(deadline=trio.current_time() + (0 if left is None else left))
        self._scope.__enter__()
        self._current = current

    def leave(self, exc: Optional[BaseException]) -> Optional[BaseException]:
        scope = self._scope
        swallowed = scope.__exit__(type(exc) if exc is not None else None, exc, exc.__traceback__ if exc is not None else None)
        if swallowed and scope.cancelled_caught:
            return _cut(self._current)
        return exc


class Bound:
    """The bound of one attempt of the ``async for`` loop form, whose body (a ``with``
    block) cannot be wrapped: a timer armed when the attempt starts cancels the task past
    the bound, and ``leave`` turns that cancellation into an ``AttemptTimeout``."""

    __slots__ = ("_task", "_fired", "_handle", "_current")

    def __init__(self, current: _native.AttemptInfo) -> None:
        loop = asyncio.get_running_loop()
        self._task = asyncio.current_task(loop)
        self._fired = [False]
        self._current = current
        left = current.remaining
        task = self._task
        self._handle = None if task is None else loop.call_later(0 if left is None else left, _expire, task, self._fired)

    def leave(self, exc: Optional[BaseException]) -> Optional[BaseException]:
        """Disarms; returns the failure to judge: ``exc``, or an ``AttemptTimeout`` in place
        of the cancellation the bound caused."""
        if self._handle is not None:
            self._handle.cancel()
        if not self._fired[0]:
            return exc
        own = _own_cancel(self._task, self._fired)
        if isinstance(exc, asyncio.CancelledError) and own:
            timeout = _cut(self._current)
            timeout.__context__ = None
            return timeout
        return exc


# What a decorated function keeps of the function it wraps: functools' attributes and, as
# tenacity's wrapper does, its defaults (for code that inspects them: `__defaults__` on the
# wrapper describes the function's parameters, not the wrapper's `*args, **kwargs`).
WRAPPED = functools.WRAPPER_ASSIGNMENTS + ("__defaults__", "__kwdefaults__")


def decorate(r: _native.Retrier, fn: Any) -> Any:
    if not callable(fn):
        raise TypeError(f"a Retrier decorates a function, got {fn!r}")
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        # Calling one only builds the generator: the work runs later, outside the retry.
        raise TypeError(
            f"{fn!r} is a generator function: calling it only creates the generator, so there is nothing to retry; "
            "decorate a function that does the work, or use the loop form (`for attempt in retrier: with attempt: ...`) inside the generator"
        )
    # An unnamed retrier takes the function's name, in events, log lines and errors.
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if isinstance(name, str):
        r = r._named(name)
    if inspect.iscoroutinefunction(fn):
        if r._hedges:  # (decided here, once: the wrapper below pays nothing for it)
            from ._hedge import decorate as hedged

            return hedged(r, fn)

        first_attempt = r._first

        # drive() written out (one coroutine fewer per call on the happy path).
        @functools.wraps(fn, WRAPPED)
        async def retrying(*args: Any, **kwargs: Any) -> Any:
            first = first_attempt(fn, args, kwargs)
            if type(first) is _FirstAttempt:
                return await _go_on(r, first, fn, args, kwargs)
            return first

        retrying.retrier = r  # type: ignore[attr-defined]
        return retrying
    wrapper = _native.RetryingFunction(r, fn)
    functools.update_wrapper(wrapper, fn, WRAPPED)
    return wrapper
