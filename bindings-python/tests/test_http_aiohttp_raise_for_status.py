"""aiohttp sessions made with ``raise_for_status=True`` (issue 23): aiohttp raises for an
error status only once its middlewares are done, so RetryMiddleware sees each 503 as a
response and retries it; the caller then gets what aiohttp gives for the final response
(the 200, or ``ClientResponseError`` for the last 503). The fallback for aiohttp < 3.12
(``mw.request(session, ...)``) must do the same: it asks ``session.request`` not to raise,
and raises as the session (or the request's own ``raise_for_status``) would, once."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from typing import Any

import aiohttp
import pytest

import retryrs
from retryrs.http import RetryMiddleware

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
from scripted_http_server import ScriptedServer  # noqa: E402


@pytest.fixture
def server() -> Any:
    with ScriptedServer() as s:
        yield s


def path() -> str:
    return f"/{uuid.uuid4().hex}"


def retrier(events: list) -> retryrs.Retrier:
    return retryrs.Retrier(max_attempts=3, initial_delay=0, jitter="none", on_event=events.append)


@pytest.mark.parametrize("fallback", [False, True], ids=["middleware", "fallback"])
def test_a_raising_session_retries_503s_and_returns_the_200(server: Any, fallback: bool) -> None:
    p = path()
    events: list = []
    mw = RetryMiddleware(retrier(events))

    async def main() -> Any:
        kw = {} if fallback else {"middlewares": (mw,)}
        async with aiohttp.ClientSession(raise_for_status=True, **kw) as session:
            url = server.script(p, [503, 503, 200])
            resp = await (mw.request(session, "GET", url) if fallback else session.get(url))
            async with resp:
                return resp.status, await resp.text()

    assert asyncio.run(main()) == (200, "ok")
    assert server.hits(p) == 3
    assert [e.kind for e in events].count("retrying") == 2 and events[-1].kind == "success"


@pytest.mark.parametrize("fallback", [False, True], ids=["middleware", "fallback"])
def test_a_raising_session_raises_for_the_last_503_once_retries_run_out(server: Any, fallback: bool) -> None:
    p = path()
    events: list = []
    mw = RetryMiddleware(retrier(events))

    async def main() -> None:
        kw = {} if fallback else {"middlewares": (mw,)}
        async with aiohttp.ClientSession(raise_for_status=True, **kw) as session:
            url = server.script(p, [503, 503, 503, 200])
            with pytest.raises(aiohttp.ClientResponseError) as info:
                await (mw.request(session, "GET", url) if fallback else session.get(url))
            assert info.value.status == 503

    asyncio.run(main())
    assert server.hits(p) == 3, "every attempt was made: the 503s were retried, not raised at once"
    assert events[-1].kind == "exhausted"


def test_the_fallback_honours_a_request_s_own_raise_for_status(server: Any) -> None:
    p, q = path(), path()
    mw = RetryMiddleware(retrier([]))

    async def main() -> None:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.ClientResponseError):
                await mw.request(session, "GET", server.script(p, [503, 503, 503]), raise_for_status=True)
            # A 404 is final (not retried) and raised by the request's own setting.
            with pytest.raises(aiohttp.ClientResponseError) as info:
                await mw.request(session, "GET", server.script(q, [404]), raise_for_status=True)
            assert info.value.status == 404

    asyncio.run(main())
    assert server.hits(p) == 3 and server.hits(q) == 1
