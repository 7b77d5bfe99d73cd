"""The HTTP helpers' side of propagation: the headers each attempt sends (and to whom),
and a server's pushback honoured, with requests, httpx (sync and async) and aiohttp
against a loopback server that records what it got."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import httpx
import pytest
import requests

import retryrs
from retryrs import propagation
from retryrs.http import AsyncRetryingTransport, RetryingAdapter, RetryingTransport, RetryMiddleware
from propagation_servers import Recording


def get_with(client: str, retrier: retryrs.Retrier, url: str, **kw) -> int:
    """One GET through ``client``'s helper (``kw`` go to the helper): the final status."""
    if client == "requests":
        session = requests.Session()
        session.mount("http://", RetryingAdapter(retrier, **kw))
        return session.get(url).status_code
    if client == "httpx":
        with httpx.Client(transport=RetryingTransport(retrier, **kw)) as c:
            return c.get(url).status_code

    async def go() -> int:
        if client == "httpx-async":
            async with httpx.AsyncClient(transport=AsyncRetryingTransport(retrier, **kw)) as c:
                return (await c.get(url)).status_code
        async with aiohttp.ClientSession() as session:
            return (await RetryMiddleware(retrier, **kw).request(session, "GET", url)).status

    return asyncio.run(go())


CLIENTS = ["requests", "httpx", "httpx-async", "aiohttp"]


def quick(**kw) -> retryrs.Retrier:
    return retryrs.Retrier(initial_delay=0.001, jitter="none", **kw)


def t_and_a(value):
    parts = dict(p.strip().split("=") for p in value.split(","))
    return int(parts["t"]), int(parts["a"]), parts.get("r")


@pytest.mark.parametrize("client", CLIENTS)
def test_each_attempt_carries_its_time_left_and_number(client):
    with Recording([503, 200]) as server:
        assert get_with(client, quick(deadline=2), server.url) == 200
        first, second = server.contexts()
    t1, a1, r1 = t_and_a(first)
    t2, a2, _ = t_and_a(second)
    assert 1500 < t1 <= 2000 and a1 == 1 and r1 is None
    assert 1500 < t2 <= t1 and a2 == 2, "t is recomputed at each send, never copied"


def test_aiohttps_middleware_sends_them_too():
    async def go():
        with Recording([503, 200]) as server:
            async with aiohttp.ClientSession(middlewares=(RetryMiddleware(quick(deadline=2)),)) as s:
                async with s.get(server.url) as resp:
                    return resp.status, server.contexts()

    status, (first, second) = asyncio.run(go())
    assert status == 200 and t_and_a(first)[1:] == (1, None) and t_and_a(second)[1] == 2


@pytest.mark.parametrize("client", CLIENTS)
def test_nothing_is_sent_to_a_host_outside_the_allowlist(client):
    with Recording([503, 200]) as server:
        outside = propagation.Outbound(hosts=["api.example.com", "*.internal"])
        get_with(client, quick(), server.url, propagation=outside)
        assert server.contexts() == [None, None]
        inside = propagation.Outbound(hosts=["127.0.0.1"])
        get_with(client, quick(), server.url, propagation=inside)
        assert all(c is not None for c in server.contexts()[2:])


class _Redirecting:
    """127.0.0.1 answers 302 to the same path on [::1], which records the headers it got:
    a redirect the client follows by itself, to a host outside the allowlist."""

    def __init__(self) -> None:
        import socket
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        seen = self.seen = []
        here = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                if self.server is here.v4:
                    self.send_response(302)
                    self.send_header("Location", f"http://[::1]:{here.v6.server_port}/end")
                else:
                    seen.append({k.lower(): v for k, v in self.headers.items()})
                    self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        class V6(ThreadingHTTPServer):
            address_family = socket.AF_INET6

        self.v4 = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.v6 = V6(("::1", 0), Handler)
        for server in (self.v4, self.v6):
            threading.Thread(target=server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.v4.server_port}/start"

    def close(self) -> None:
        for server in (self.v4, self.v6):
            server.shutdown()
            server.server_close()


@pytest.mark.parametrize("client", CLIENTS)
def test_a_redirect_to_a_host_outside_the_allowlist_carries_none_of_the_headers(client):
    # requests and httpx send the next hop through the helper with the headers of the
    # hop before (their own redirect handling): the helper strips them there.
    server = _Redirecting()
    outbound = propagation.Outbound(hosts=["127.0.0.1"], mesh="envoy")
    try:
        if client == "httpx":
            with httpx.Client(transport=RetryingTransport(quick(), propagation=outbound), follow_redirects=True) as c:
                assert c.get(server.url).status_code == 200
        elif client == "httpx-async":

            async def go() -> int:
                transport = AsyncRetryingTransport(quick(), propagation=outbound)
                async with httpx.AsyncClient(transport=transport, follow_redirects=True) as c:
                    return (await c.get(server.url)).status_code

            assert asyncio.run(go()) == 200
        else:
            assert get_with(client, quick(), server.url, propagation=outbound) == 200
    finally:
        server.close()
    (headers,) = server.seen
    names = {name.lower() for name in outbound.names}
    assert {"retryrs-context", "x-envoy-max-retries", "x-envoy-upstream-rq-timeout-ms"} <= names
    sent = names & set(headers)
    assert sent == set(), f"{client} sent {sent} to [::1]"


@pytest.mark.parametrize("client", CLIENTS)
def test_propagation_false_sends_nothing(client):
    with Recording([200]) as server:
        get_with(client, quick(), server.url, propagation=False)
        assert server.contexts() == [None]
        assert "retryrs-context" not in server.seen[0]


@pytest.mark.parametrize(
    "mesh, kind, expected",
    [
        ("envoy", "http", {"x-envoy-max-retries": "0", "x-envoy-upstream-rq-timeout-ms": None}),
        ("linkerd", "grpc", {"l5d-retry-limit": "0", "grpc-timeout": None}),
        ("none", "connect", {"connect-timeout-ms": None}),
    ],
)
def test_the_interop_modes(mesh, kind, expected):
    with Recording([200]) as server:
        get_with("requests", quick(deadline=2), server.url, propagation=propagation.Outbound(mesh=mesh, kind=kind))
        [seen] = server.seen
    for name, value in expected.items():
        assert name in seen, (name, seen)
        if value is not None:
            assert seen[name] == value
    for absent in {"x-envoy-max-retries", "l5d-retry-limit", "grpc-timeout", "connect-timeout-ms"} - set(expected):
        assert absent not in seen


def test_a_call_inside_a_request_that_was_a_retry_passes_r_on():
    with Recording([200]) as server:
        with propagation.context({"Retryrs-Context": "t=5000, a=3"}):
            get_with("requests", quick(), server.url)
        t, a, r = t_and_a(server.contexts()[0])
    assert (a, r) == (1, "?1") and t <= 5000 - 100


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("pushback", [("Retryrs-Pushback", "-1"), ("grpc-retry-pushback-ms", "-1"), ("x-envoy-overloaded", "true")])
def test_dont_retry_pushback_makes_one_attempt_and_still_counts_as_a_failure(client, pushback):
    breaker = retryrs.CircuitBreaker(failures=2, break_duration=60)
    events = []
    r = quick(breaker=breaker, on_event=lambda e: events.append(e.kind))
    with Recording([(503, dict([pushback]))]) as server:
        assert get_with(client, r, server.url) == 503
        assert server.hits == 1
        assert get_with(client, r, server.url) == 503
        assert server.hits == 2
    assert breaker.state == "open", "both responses counted as failures"
    assert "retrying" not in events


@pytest.mark.parametrize("client", CLIENTS)
def test_a_non_negative_pushback_is_the_exact_wait(client):
    events = []
    # A backoff of 2 s: Retry-After would wait at least that; the pushback's 300 ms is
    # exact (gRPC A6), shorter than the backoff.
    r = retryrs.Retrier(initial_delay=2, jitter="none", on_event=events.append)
    with Recording([(503, {"Retryrs-Pushback": "300", "Retry-After": "1"}), 200]) as server:
        t0 = time.monotonic()
        assert get_with(client, r, server.url) == 200
        took = time.monotonic() - t0
    [retrying] = [e for e in events if e.kind == "retrying"]
    assert retrying.delay == pytest.approx(0.3) and 0.3 <= took < 1.5


def test_an_exact_wait_still_yields_to_a_wait_hook():
    waits = []
    r = retryrs.Retrier(initial_delay=2, jitter="none", wait=lambda attempt, failure, delay: 0.05, on_event=waits.append)
    with Recording([(503, {"Retryrs-Pushback": "900"}), 200]) as server:
        assert get_with("requests", r, server.url) == 200
    assert [e.delay for e in waits if e.kind == "retrying"] == [pytest.approx(0.05)]


def test_pushback_never_makes_a_response_retried_that_the_rules_hand_over():
    with Recording([(404, {"Retryrs-Pushback": "10"}), 200]) as server:
        assert get_with("requests", quick(), server.url) == 404
        assert server.hits == 1


@pytest.mark.parametrize(
    "kw, error, words",
    [
        ({"hosts": "api.example.com"}, TypeError, "hosts"),
        ({"hosts": [1]}, TypeError, "hosts must hold host names as str, got 1"),
        ({"hosts": 5}, TypeError, "hosts must be a list"),
        ({"hosts": ["a*.example.com"]}, ValueError, "allowed host"),
        ({"mesh": "istio"}, ValueError, "mesh"),
        ({"kind": "soap"}, ValueError, "kind"),
    ],
)
def test_bad_outbound_settings_are_named(kw, error, words):
    with pytest.raises(error, match=words):
        propagation.Outbound(**kw)


def test_a_helper_refuses_a_propagation_option_of_the_wrong_type():
    with pytest.raises(TypeError, match="propagation"):
        RetryingAdapter(quick(), propagation="yes")


def test_aiohttp_before_client_middlewares_refuses_an_allowlist_it_cannot_keep(monkeypatch):
    # aiohttp < 3.12 follows redirects below RetryMiddleware.request and copies the
    # headers to every hop: with hosts set, that is refused unless redirects are off.
    from retryrs import _http_aiohttp

    monkeypatch.setattr(_http_aiohttp, "_HOPS_VISIBLE", False)
    outbound = propagation.Outbound(hosts=["127.0.0.1"])

    async def go(**kw) -> int:
        async with aiohttp.ClientSession() as session:
            resp = await RetryMiddleware(quick(), propagation=outbound).request(session, "GET", server.url, **kw)
            return resp.status

    with Recording([200]) as server:
        with pytest.raises(ValueError, match="allow_redirects=False"):
            asyncio.run(go())
        assert asyncio.run(go(allow_redirects=False)) == 200
        assert server.contexts()[-1] is not None


@pytest.mark.parametrize("client", CLIENTS)
def test_an_attempt_with_under_a_millisecond_left_is_not_sent(client):
    # Inside a request with 5 ms left (the margin takes them all): the next hop would see
    # the request without any header, as a fresh one; nothing is sent and the call ends
    # on its deadline.
    with Recording([503]) as server:
        with propagation.context({"Retryrs-Context": "t=5, a=2"}):
            with pytest.raises(Exception) as e:
                get_with(client, quick(), server.url)
        assert server.seen == [], f"{client} sent {server.seen}"
    assert getattr(e.value, "reason", None) == "deadline", repr(e.value)
