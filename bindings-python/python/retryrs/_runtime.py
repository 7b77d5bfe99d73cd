"""The wait between attempts of an async call, under the async library that runs it:
asyncio (also anyio on asyncio), or trio (also anyio on trio).

Which one is asked of sniffio (trio and anyio depend on it), imported only when an async
call first waits and only if trio has been imported: retryrs itself needs neither. The
waits end at once when the call's CancelToken fires, and are cancelled like any other
await of the task: ``task.cancel()`` under asyncio, a cancel scope under trio; the engine
records the cancel and the library's own cancellation goes on.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Optional

from . import _native

SUPPORTED = ("asyncio", "trio")


def library() -> str:
    """The async library running the current task: "asyncio" or "trio"."""
    if "trio" not in sys.modules:
        return "asyncio"  # (trio cannot be running)
    import sniffio

    try:
        name: str = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return "asyncio"  # (asyncio then says what is wrong)
    if name not in SUPPORTED:
        raise RuntimeError(f"retryrs's async calls run under asyncio or trio (or anyio on either), not under {name}")
    return name


async def sleep(call: _native.SteppedCall, delay: float) -> None:
    """Waits ``delay`` seconds before the next attempt of ``call``; a zero delay still
    yields once to the other tasks (a retry storm may never starve them). Raises
    RetryCancelled if the call's token fires."""
    if library() == "trio":
        await _trio_sleep(call, delay)
    elif delay:
        await _asyncio_sleep(call, delay)
    else:
        await asyncio.sleep(0)


def _settle(fut: "asyncio.Future[bool]", cancelled: bool) -> None:
    if not fut.done():
        fut.set_result(cancelled)


async def _asyncio_sleep(call: _native.SteppedCall, delay: float) -> None:
    token = call.token
    try:
        if token is None:
            await asyncio.sleep(delay)
            return
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        timer = loop.call_later(delay, _settle, fut, False)
        sub = token._subscribe(lambda: loop.call_soon_threadsafe(_settle, fut, True))
        try:
            cancelled = await fut
        finally:
            timer.cancel()
            token._unsubscribe(sub)
    except BaseException:
        # task.cancel() (or Ctrl-C) during the wait: the engine records the cancel and the
        # CancelledError goes on at once.
        call.interrupted()
        raise
    if cancelled:
        call.cancelled()  # raises RetryCancelled


async def _trio_sleep(call: _native.SteppedCall, delay: float) -> None:
    import trio

    token = call.token
    fired: Optional[Any] = None
    try:
        if token is None or not delay:
            await trio.sleep(delay)  # (0: a checkpoint)
            return
        fired = trio.Event()
        # token.cancel() runs its callbacks on the cancelling thread: a trio Event may
        # only be set from the run's own thread, so the setting is handed to the run.
        run = trio.lowlevel.current_trio_token()
        sub = token._subscribe(lambda: _run_soon(run, fired.set))
        try:
            with trio.move_on_after(delay):
                await fired.wait()
        finally:
            token._unsubscribe(sub)
    except BaseException:
        # A cancel scope (or Ctrl-C) ended the wait: the engine records the cancel and
        # trio's Cancelled goes on at once, for the scope to catch.
        call.interrupted()
        raise
    if fired is not None and fired.is_set():
        call.cancelled()  # raises RetryCancelled


def _run_soon(run: Any, fn: Any) -> None:
    import trio

    try:
        run.run_sync_soon(fn)
    except trio.RunFinishedError:
        pass  # the run is over: nobody waits any more
