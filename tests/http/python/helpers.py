"""Python's HTTP helpers as the conformance runner drives them: each makes a client with
the case's policy, sends the case's request and reads the body through one read API,
reporting a ``Result``. A helper says which kind of client it is (tests/http/README.md):
``reads_body`` True when the body is read inside the attempt."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from typing import Any, Awaitable, Callable, Dict, List, Optional

import aiohttp
import httpx
import requests
import urllib3

import retryrs
from retryrs.http import AsyncRetryingTransport, RetryingAdapter, RetryingTransport, RetryMiddleware

from cases import Result

READ_APIS = ("bytes", "text", "json", "stream")


def retrier(policy: Dict[str, Any]) -> retryrs.Retrier:
    """The case's policy: a missing knob is the default, ``null`` turns it off; no jitter."""
    kw: Dict[str, Any] = {"jitter": "none"}
    for key, knob in (("deadline_ms", "deadline"), ("attempt_timeout_ms", "attempt_timeout"),
                      ("max_retry_after_ms", "max_retry_after"), ("initial_delay_ms", "initial_delay")):
        if key in policy:
            kw[knob] = None if policy[key] is None else policy[key] / 1000
    if "max_attempts" in policy:
        kw["max_attempts"] = policy["max_attempts"]
    return retryrs.Retrier(**kw)


_TIMEOUTS: Any = (TimeoutError, socket.timeout, asyncio.TimeoutError, httpx.TimeoutException,
                  urllib3.exceptions.TimeoutError, requests.Timeout, aiohttp.ServerTimeoutError)
_CLIENT_ERRORS: Any = (OSError, httpx.TransportError, requests.RequestException, urllib3.exceptions.HTTPError, aiohttp.ClientError)


def _chain(e: BaseException) -> List[BaseException]:
    """The exception, its causes and contexts, and what requests/urllib3 wrap in args."""
    out: List[BaseException] = []
    todo = [e]
    while todo:
        x = todo.pop()
        if x is None or any(x is y for y in out):
            continue
        out.append(x)
        todo += [x.__cause__, x.__context__] + [a for a in getattr(x, "args", ()) if isinstance(a, BaseException)]
        reason = getattr(x, "reason", None)
        if isinstance(reason, BaseException):
            todo.append(reason)
    return out


def error_kind(e: BaseException) -> str:
    if isinstance(e, retryrs.RetryExhausted):
        return "exhausted"
    if any(isinstance(x, _TIMEOUTS) for x in _chain(e)):
        return "timeout"
    if isinstance(e, _CLIENT_ERRORS):
        return "connection"
    return "other"


def _failed(r: Result, e: BaseException) -> None:
    r.outcome = "error"
    r.error = error_kind(e)
    r.error_repr = f"{type(e).__name__}: {e}"[:300]
    r.attempts = getattr(e, "attempts", None)


def _read_failed(r: Result, e: BaseException) -> None:
    r.read = "error"
    r.read_error = error_kind(e)
    r.read_error_repr = f"{type(e).__name__}: {e}"[:300]


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value).encode()


def _request_kwargs(case: Dict[str, Any]) -> Dict[str, Any]:
    req = case["request"]
    n = req.get("body_bytes", 0)
    return {"headers": dict(req.get("headers") or {}), "data": b"x" * n if n else None}


async def _capped(one: Callable[[Result], Awaitable[None]], case: Dict[str, Any], api: str) -> Result:
    """One async call and its read, given up on (a failure of the case, reported as a
    hang) well past the case's bound: a helper that hangs fails fast."""
    bounds = [e.get("within_ms") for e in (case["expect"], case.get("expect_if_reads_body") or {})]
    cap = max([b for b in bounds if b] or [10000]) / 1000 + 5
    r = Result(api=api)
    t0 = time.monotonic()
    try:
        await asyncio.wait_for(one(r), cap)
    except asyncio.TimeoutError:
        r.outcome = r.outcome or "hang"
        r.read = "hang" if r.outcome == "response" else r.read
        r.error_repr = r.read_error_repr = f"still running after {cap:.1f} s: abandoned"
    r.elapsed_ms = (time.monotonic() - t0) * 1000
    return r


def _one(r: Result, send: Callable[[], Any], status: Callable[[Any], int], read: Callable[[Any], bytes], close: Callable[[Any], Any]) -> None:
    """One call (``send``), then its body through one read API (``read``)."""
    try:
        resp = send()
    except Exception as e:
        _failed(r, e)
        return
    r.outcome, r.status = "response", status(resp)
    try:
        r.body = read(resp)
        r.read = "whole"
    except Exception as e:
        _read_failed(r, e)
    finally:
        close(resp)


async def _aone(r: Result, send: Callable[[], Awaitable[Any]], status: Callable[[Any], int], read: Callable[[Any], Awaitable[bytes]], close: Callable[[Any], Any]) -> None:
    """``_one`` for an async client (``close`` may return an awaitable)."""
    try:
        resp = await send()
    except Exception as e:
        _failed(r, e)
        return
    r.outcome, r.status = "response", status(resp)
    try:
        r.body = await read(resp)
        r.read = "whole"
    except Exception as e:
        _read_failed(r, e)
    finally:
        closing = close(resp)
        if closing is not None:
            await closing


def _timed(api: str, run: Callable[[Result], None]) -> Result:
    r = Result(api=api)
    t0 = time.monotonic()
    run(r)
    r.elapsed_ms = (time.monotonic() - t0) * 1000
    return r


class Helper:
    name = ""
    reads_body = False

    def calls(self, case: Dict[str, Any], url: str, api: str, n: int) -> List[Result]:
        raise NotImplementedError


class Requests(Helper):
    """requests' ``RetryingAdapter``; ``stream``: the caller's ``stream=True`` (the
    response handed over at its headers) or not (the body read inside the attempt)."""

    def __init__(self, stream: bool) -> None:
        self.stream = stream
        self.name = "requests-stream" if stream else "requests"
        self.reads_body = not stream

    def calls(self, case: Dict[str, Any], url: str, api: str, n: int) -> List[Result]:
        with requests.Session() as s:
            s.mount("http://", RetryingAdapter(retrier(case["policy"])))
            s.mount("https://", RetryingAdapter(retrier(case["policy"])))
            kw = _request_kwargs(case)
            method = case["request"]["method"]

            def send() -> requests.Response:
                return s.request(method, url, stream=self.stream, **kw)

            def read(resp: requests.Response) -> bytes:
                if api == "bytes":
                    return resp.content
                if api == "text":
                    return resp.text.encode()
                if api == "json":
                    return _json_bytes(resp.json())
                return b"".join(resp.iter_content(8192))

            return [_timed(api, lambda r: _one(r, send, lambda x: x.status_code, read, lambda x: x.close())) for _ in range(n)]


def _httpx_read(resp: httpx.Response, api: str) -> bytes:
    """A read ``resp`` already read (``read``/``aread``) through ``api``."""
    return resp.content if api == "bytes" else resp.text.encode() if api == "text" else _json_bytes(resp.json())


class HttpxSync(Helper):
    """httpx's ``RetryingTransport`` (hands over at headers: ``send(stream=True)``, then
    the read API)."""

    name = "httpx"

    def calls(self, case: Dict[str, Any], url: str, api: str, n: int) -> List[Result]:
        kw = _request_kwargs(case)
        with httpx.Client(transport=RetryingTransport(retrier(case["policy"]), transport=httpx.HTTPTransport(verify=False))) as c:

            def send() -> httpx.Response:
                return c.send(c.build_request(case["request"]["method"], url, content=kw["data"], headers=kw["headers"]), stream=True)

            def read(resp: httpx.Response) -> bytes:
                if api == "stream":
                    return b"".join(resp.iter_bytes())
                resp.read()
                return _httpx_read(resp, api)

            return [_timed(api, lambda r: _one(r, send, lambda x: x.status_code, read, lambda x: x.close())) for _ in range(n)]


class HttpxAsync(Helper):
    """httpx's ``AsyncRetryingTransport``."""

    name = "httpx-async"

    def calls(self, case: Dict[str, Any], url: str, api: str, n: int) -> List[Result]:
        return asyncio.run(self._calls(case, url, api, n))

    async def _calls(self, case: Dict[str, Any], url: str, api: str, n: int) -> List[Result]:
        kw = _request_kwargs(case)
        transport = AsyncRetryingTransport(retrier(case["policy"]), transport=httpx.AsyncHTTPTransport(verify=False))
        async with httpx.AsyncClient(transport=transport) as c:

            async def send() -> httpx.Response:
                return await c.send(c.build_request(case["request"]["method"], url, content=kw["data"], headers=kw["headers"]), stream=True)

            async def read(resp: httpx.Response) -> bytes:
                if api == "stream":
                    return b"".join([chunk async for chunk in resp.aiter_bytes()])
                await resp.aread()
                return _httpx_read(resp, api)

            return [await _capped(lambda r: _aone(r, send, lambda x: x.status_code, read, lambda x: x.aclose()), case, api) for _ in range(n)]


class Aiohttp(Helper):
    """aiohttp's ``RetryMiddleware`` (hands over at headers)."""

    name = "aiohttp"

    def calls(self, case: Dict[str, Any], url: str, api: str, n: int) -> List[Result]:
        return asyncio.run(self._calls(case, url, api, n))

    async def _calls(self, case: Dict[str, Any], url: str, api: str, n: int) -> List[Result]:
        kw = _request_kwargs(case)
        connector = aiohttp.TCPConnector(ssl=False)
        async with aiohttp.ClientSession(connector=connector, middlewares=(RetryMiddleware(retrier(case["policy"])),)) as s:

            async def send() -> aiohttp.ClientResponse:
                return await s.request(case["request"]["method"], url, data=kw["data"], headers=kw["headers"])

            async def read(resp: aiohttp.ClientResponse) -> bytes:
                if api == "bytes":
                    return await resp.read()
                if api == "text":
                    return (await resp.text()).encode()
                if api == "json":
                    return _json_bytes(await resp.json())
                return b"".join([chunk async for chunk in resp.content.iter_chunked(8192)])

            return [await _capped(lambda r: _aone(r, send, lambda x: x.status, read, lambda x: x.release()), case, api) for _ in range(n)]


HELPERS: Dict[str, Callable[[], Helper]] = {
    "requests": lambda: Requests(stream=False),
    "requests-stream": lambda: Requests(stream=True),
    "httpx": HttpxSync,
    "httpx-async": HttpxAsync,
    "aiohttp": Aiohttp,
}


def rss_mb(field_name: str = "VmRSS") -> Optional[float]:
    """This process's resident set (``VmRSS``) or its peak (``VmHWM``), in MB (Linux)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def reset_peak_rss() -> bool:
    """Resets ``VmHWM`` to the current RSS (Linux: ``echo 5 > /proc/self/clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False
