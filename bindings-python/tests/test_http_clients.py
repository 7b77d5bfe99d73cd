"""retryrs.http against a real loopback server with the real clients: requests (through
RetryingAdapter), httpx sync (RetryingTransport) and httpx async (AsyncRetryingTransport)."""

from __future__ import annotations

import asyncio
import email.utils
import io
import logging
import os
import subprocess
import sys
import threading
import time
import uuid

import httpx
import pytest
import requests

import retryrs
from retryrs.http import AsyncRetryingTransport, RequestFailed, RetryableStatus, RetryingAdapter, RetryingTransport

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
from scripted_http_server import ScriptedServer, closed_port  # noqa: E402


def fast(**kw):
    """A retrier with no backoff wait (Retry-After still applies) that records events."""
    events = kw.pop("events", [])
    return retryrs.Retrier(initial_delay=0, jitter="none", on_event=events.append, **kw), events


class RequestsClient:
    name = "requests"

    def __init__(self, retrier, **kw):
        self.session = requests.Session()
        self.adapter = RetryingAdapter(retrier, **kw)
        self.session.mount("http://", self.adapter)

    def request(self, method, url, **kw):
        r = self.session.request(method, url, timeout=5, **kw)
        return r.status_code, r.text


class HttpxClient:
    name = "httpx"

    def __init__(self, retrier, **kw):
        self.client = httpx.Client(transport=RetryingTransport(retrier, **kw), timeout=5)

    def request(self, method, url, **kw):
        r = self.client.request(method, url, **kw)
        return r.status_code, r.text


class AsyncHttpxClient:
    name = "httpx-async"

    def __init__(self, retrier, **kw):
        self.retrier, self.kw = retrier, kw

    def request(self, method, url, **kw):
        async def go():
            async with httpx.AsyncClient(transport=AsyncRetryingTransport(self.retrier, **self.kw), timeout=5) as c:
                r = await c.request(method, url, **kw)
                return r.status_code, r.text

        return asyncio.run(go())


CLIENTS = [RequestsClient, HttpxClient, AsyncHttpxClient]


@pytest.fixture
def server():
    with ScriptedServer() as s:
        yield s


def path():
    return f"/{uuid.uuid4().hex}"


@pytest.mark.parametrize("Client", CLIENTS, ids=lambda c: c.name)
def test_the_seed_scenario_four_requests_and_the_third_wait_is_the_servers(server, Client):
    p = path()
    url = server.script(p, [503, 503, (429, "1"), 200])
    r, events = fast()
    t0 = time.monotonic()
    assert Client(r).request("GET", url) == (200, "ok")
    assert time.monotonic() - t0 >= 1.0
    assert server.hits(p) == 4
    retrying = [e for e in events if e.kind == "retrying"]
    assert [e.error.status for e in retrying] == [503, 503, 429]
    assert retrying[2].delay >= 1.0 and retrying[0].delay < 1.0
    assert all(e.error.method == "GET" and e.error.url == url for e in retrying)
    assert events[-1].kind == "success" and events[-1].attempt == 4


@pytest.mark.parametrize("Client", CLIENTS, ids=lambda c: c.name)
def test_an_http_date_retry_after_is_the_minimum_wait(server, Client, virtual):
    p = path()
    when = email.utils.formatdate(time.time() + 3, usegmt=True)
    url = server.script(p, [(503, when), 200])
    r, events = fast()
    assert Client(r).request("GET", url) == (200, "ok")
    delay = [e.delay for e in events if e.kind == "retrying"]
    assert len(delay) == 1 and 1.5 <= delay[0] <= 3.0


@pytest.mark.parametrize("Client", CLIENTS, ids=lambda c: c.name)
def test_a_404_is_returned_at_once(server, Client):
    p = path()
    url = server.script(p, [404, 200])
    r, events = fast()
    assert Client(r).request("GET", url)[0] == 404
    assert server.hits(p) == 1
    # A final error response ends the call as rejected (telemetry), handed back as is.
    assert [e.kind for e in events] == ["attempt_failed", "rejected"] and events[-1].error.status == 404


@pytest.mark.parametrize("Client", CLIENTS, ids=lambda c: c.name)
def test_a_post_answered_503_is_not_retried(server, Client):
    p = path()
    url = server.script(p, [503, 200])
    r, _ = fast()
    assert Client(r).request("POST", url)[0] == 503
    assert server.hits(p) == 1


@pytest.mark.parametrize("Client", CLIENTS, ids=lambda c: c.name)
def test_a_post_answered_by_a_reset_is_not_retried_and_raises_the_clients_error(server, Client):
    p = path()
    url = server.script(p, ["reset", 200])
    r, _ = fast()
    with pytest.raises((requests.ConnectionError, httpx.TransportError)):
        Client(r).request("POST", url)
    assert server.hits(p) == 1


@pytest.mark.parametrize("Client", CLIENTS, ids=lambda c: c.name)
def test_a_post_to_a_closed_port_is_retried_since_it_was_never_sent(Client):
    r, events = fast(max_attempts=3)
    with pytest.raises(retryrs.RetryExhausted) as info:
        Client(r).request("POST", f"http://127.0.0.1:{closed_port()}/x")
    e = info.value
    assert e.attempts == 3 and e.reason == "attempts"
    assert isinstance(e.__cause__, RequestFailed) and e.__cause__.connect
    assert "Connection refused" in str(e.__cause__)
    assert sum(ev.kind == "retrying" for ev in events) == 2


@pytest.mark.parametrize("Client", CLIENTS, ids=lambda c: c.name)
def test_a_put_is_retried(server, Client):
    p = path()
    url = server.script(p, [503, "reset", 200])
    r, _ = fast()
    assert Client(r).request("PUT", url) == (200, "ok")
    assert server.hits(p) == 3


@pytest.mark.parametrize("Client", CLIENTS, ids=lambda c: c.name)
def test_out_of_retries_on_503_the_last_503_response_is_returned(server, Client):
    p = path()
    url = server.script(p, [503])
    r, events = fast(max_attempts=3)
    assert Client(r).request("GET", url) == (503, "HTTP 503 body")
    assert server.hits(p) == 3
    assert events[-1].kind == "exhausted" and events[-1].reason == "attempts" and events[-1].error.status == 503


@pytest.mark.parametrize("Client", CLIENTS, ids=lambda c: c.name)
def test_out_of_retries_on_resets_raises_retry_exhausted_with_the_reset_as_cause(server, Client):
    p = path()
    url = server.script(p, ["reset"])
    r, _ = fast(max_attempts=3)
    with pytest.raises(retryrs.RetryExhausted) as info:
        Client(r).request("GET", url)
    cause = info.value.__cause__
    assert isinstance(cause, RequestFailed) and not cause.connect
    assert isinstance(cause.__cause__, (requests.ConnectionError, httpx.TransportError))
    assert server.hits(p) == 3


@pytest.mark.parametrize("Client", CLIENTS, ids=lambda c: c.name)
@pytest.mark.parametrize("retry_after,reason", [("3600", "retry_after"), ("30", "deadline")])
def test_a_retry_after_past_the_cap_or_the_deadline_ends_at_once_and_the_caller_gets_the_503(server, Client, retry_after, reason):
    # 3600 s is past the default max_retry_after (60 s); 30 s is under it but past the
    # default 15 s deadline. Either way: no wait, the 503 back, the reason in the event.
    p = path()
    url = server.script(p, [(503, retry_after), 200])
    r, events = fast()
    assert r.max_retry_after == 60.0 and r.deadline == 15.0
    t0 = time.monotonic()
    assert Client(r).request("GET", url)[0] == 503
    assert time.monotonic() - t0 < 1.0
    assert server.hits(p) == 1
    assert events[-1].kind == "exhausted" and events[-1].reason == reason


@pytest.mark.parametrize("Client", CLIENTS, ids=lambda c: c.name)
def test_listed_methods_and_statuses_replace_the_defaults(server, Client):
    p, q = path(), path()
    url = server.script(p, [503, 200])
    r, _ = fast()
    assert Client(r, methods=["post"]).request("POST", url)[0] == 200
    assert server.hits(p) == 2
    url = server.script(q, [404, 200])
    assert Client(r, statuses=[404]).request("GET", url)[0] == 200
    assert server.hits(q) == 2


@pytest.mark.parametrize("Client", CLIENTS, ids=lambda c: c.name)
def test_the_budget_applies(server, Client):
    p = path()
    url = server.script(p, [503])
    budget = retryrs.RetryBudget(max_tokens=1.0, token_ratio=0.1)
    r, events = fast(budget=budget)
    assert Client(r).request("GET", url)[0] == 503
    assert events[-1].reason == "budget"


def test_no_connection_leaks_after_100_retried_calls_with_requests(server):
    p = path()
    r, _ = fast()
    client = RequestsClient(r)
    for i in range(100):
        url = server.script(f"{p}{i}", [503, 200])
        assert client.request("GET", url) == (200, "ok")
    assert server.accepted == 1  # one keep-alive connection, released and reused 199 times
    pool = next(iter(client.adapter.poolmanager.pools._container.values()))
    assert pool.pool.qsize() == pool.pool.maxsize  # none checked out


def test_no_connection_leaks_after_100_retried_calls_with_httpx(server):
    p = path()
    r, _ = fast()
    with httpx.Client(transport=RetryingTransport(r)) as client:
        for i in range(100):
            url = server.script(f"{p}{i}", [503, 200])
            assert client.get(url).status_code == 200
    assert server.accepted == 1


def test_no_connection_leaks_after_100_retried_calls_with_async_httpx(server):
    p = path()
    r, _ = fast()

    async def go():
        async with httpx.AsyncClient(transport=AsyncRetryingTransport(r)) as client:
            for i in range(100):
                url = server.script(f"{p}{i}", [503, 200])
                assert (await client.get(url)).status_code == 200

    asyncio.run(go())
    assert server.accepted == 1


def test_cancelling_the_task_mid_wait_ends_at_once_with_async_httpx(server):
    p = path()
    url = server.script(p, [(503, "30"), 200])
    events = []
    r = retryrs.Retrier(deadline=None, on_event=events.append)

    async def go():
        async with httpx.AsyncClient(transport=AsyncRetryingTransport(r)) as client:
            task = asyncio.ensure_future(client.get(url))
            while not any(e.kind == "retrying" for e in events):
                await asyncio.sleep(0.01)
            t0 = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return time.monotonic() - t0

    assert asyncio.run(go()) < 0.5
    assert server.hits(p) == 1
    assert events[-1].kind == "cancelled"


@pytest.mark.parametrize("Client", [RequestsClient, HttpxClient], ids=lambda c: c.name)
def test_a_cancel_token_ends_a_sync_wait_at_once(server, Client):
    p = path()
    url = server.script(p, [(503, "30"), 200])
    token = retryrs.CancelToken()
    waiting = threading.Event()
    r = retryrs.Retrier(deadline=None, on_event=lambda e: e.kind == "retrying" and waiting.set()).with_cancel(token)
    cancelled_at = []

    def cancel_once_waiting():
        # Cancelled once the 30 s wait has begun (a fixed timer could fire before the
        # first request on a loaded machine).
        waiting.wait(10)
        cancelled_at.append(time.monotonic())
        token.cancel()

    threading.Thread(target=cancel_once_waiting, daemon=True).start()
    with pytest.raises(retryrs.RetryCancelled):
        Client(r).request("GET", url)
    assert time.monotonic() - cancelled_at[0] < 2.0
    assert server.hits(p) == 1


def test_a_generator_body_is_sent_once_with_requests(server):
    p = path()
    url = server.script(p, [503, 200])
    r, _ = fast()
    status, _ = RequestsClient(r).request("PUT", url, data=(c for c in [b"ab", b"cd"]))
    assert status == 503 and server.hits(p) == 1 and server.requests[p][0][1] == b"abcd"


def test_a_file_body_is_rewound_for_each_attempt_with_requests(server):
    p = path()
    url = server.script(p, [503, 200])
    r, _ = fast()
    assert RequestsClient(r).request("PUT", url, data=io.BytesIO(b"payload"))[0] == 200
    assert [b for _, b in server.requests[p]] == [b"payload", b"payload"]


@pytest.mark.parametrize("Client", [HttpxClient, AsyncHttpxClient], ids=lambda c: c.name)
def test_a_file_body_is_never_silently_resent_empty_with_httpx(server, Client):
    p = path()
    url = server.script(p, [503, 200])
    r, _ = fast()
    status, _ = Client(r).request("PUT", url, content=io.BytesIO(b"payload") if Client is HttpxClient else _agen())
    assert status == 503 and server.hits(p) == 1
    assert server.requests[p][0][1] == b"payload"


async def _agen():
    yield b"pay"
    yield b"load"


@pytest.mark.parametrize("Client", CLIENTS, ids=lambda c: c.name)
def test_credentials_and_signatures_never_reach_events_errors_or_logs(server, Client, caplog):
    p = path()
    server.script(p, [503])
    # Spelled with letters no hex path or port has, so a random path never matches by chance.
    secret_url = server.base.replace("http://", "http://user:s3cretpw@") + p + "?sig=zq9sig&x=1"
    logger = logging.getLogger("retryrs.test.redaction")
    events = []

    def listen(e):
        events.append(e)
        retryrs.log_events(logger)(e)

    caplog.set_level(logging.INFO, logger=logger.name)
    r = retryrs.Retrier(initial_delay=0, jitter="none", max_attempts=2, on_event=listen)
    assert Client(r).request("GET", secret_url)[0] == 503
    refused = f"http://user:s3cretpw@127.0.0.1:{closed_port()}/x?sig=zq9sig"
    with pytest.raises(retryrs.RetryExhausted) as info:
        Client(r).request("GET", refused)
    texts = [str(info.value), repr(info.value), caplog.text]
    texts += [f"{e!r} {e.error!r} {e.error} {getattr(e.error, 'url', '')}" for e in events]
    assert len(events) >= 6 and "REDACTED:REDACTED@" in caplog.text and "sig=REDACTED" in caplog.text
    for t in texts:
        assert "s3cretpw" not in t and "zq9sig" not in t, t


def test_bad_options_are_refused_with_a_clear_error():
    with pytest.raises(TypeError, match="methods must be a collection"):
        RetryingAdapter(methods="GET")
    with pytest.raises(ValueError, match="statuses must hold HTTP statuses"):
        RetryingTransport(statuses=[99])
    with pytest.raises(TypeError, match="max_retries"):
        RetryingAdapter(max_retries=3)
    with pytest.raises(TypeError, match="retrier must be a retryrs.Retrier"):
        AsyncRetryingTransport(retrier=3)
    with pytest.raises(TypeError, match="transport must be an httpx.BaseTransport"):
        RetryingTransport(transport=httpx.AsyncHTTPTransport())


@pytest.mark.parametrize(
    "module,name,extra",
    [
        ("requests", "RetryingAdapter", "retryrs[requests]"),
        ("httpx", "RetryingTransport", "retryrs[httpx]"),
        ("httpx", "AsyncRetryingTransport", "retryrs[httpx]"),
        ("aiohttp", "RetryMiddleware", "retryrs[aiohttp]"),
    ],
)
def test_without_the_extra_the_module_imports_and_the_class_names_it(module, name, extra):
    code = f"import sys; sys.modules[{module!r}] = None\nimport retryrs.http as h\nprint(h.redact_url('http://a:b@h/'))\ntry:\n    h.{name}\nexcept ImportError as e:\n    print(e)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "REDACTED:REDACTED@h/" in out and f"retryrs.http.{name} needs" in out and extra in out


def test_redact_url_is_the_cores():
    assert retryrs.http.redact_url("https://u:p@h/a?Signature=s&AWSAccessKeyId=k&q=1") == "https://REDACTED:REDACTED@h/a?Signature=REDACTED&AWSAccessKeyId=REDACTED&q=1"
    assert retryrs.http.IDEMPOTENT_METHODS == ("GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE")


@pytest.mark.parametrize("Client", CLIENTS, ids=lambda c: c.name)
def test_resend_count_goes_on_a_client_span_around_the_request_never_on_the_applications(server, Client):
    # OpenTelemetry's semantic conventions: http.request.resend_count on the HTTP client
    # span, on resends only. A client span around the whole request (requests'
    # instrumentation makes one per Session.send) gets the last count; the application's
    # own span (kind INTERNAL) gets nothing.
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    p = path()
    r, _ = fast()
    with tracer.start_as_current_span("GET", kind=SpanKind.CLIENT):
        assert Client(r).request("GET", server.script(p, [503, 503, 200])) == (200, "ok")
    with tracer.start_as_current_span("app"):
        assert Client(r).request("GET", server.script(p + "-app", [503, 200])) == (200, "ok")
    with tracer.start_as_current_span("GET once", kind=SpanKind.CLIENT):
        assert Client(r).request("GET", server.script(p + "-once", [200])) == (200, "ok")
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert spans["GET"].attributes.get("http.request.resend_count") == 2
    assert "http.request.resend_count" not in spans["app"].attributes
    assert "http.request.resend_count" not in spans["GET once"].attributes


def _async_get_or_post(r, method, url):
    async def go():
        async with httpx.AsyncClient(transport=AsyncRetryingTransport(r), timeout=5) as c:
            return (await c.request(method, url, content=b"x" if method == "POST" else None)).status_code

    return asyncio.run(go())


def test_async_httpx_a_get_past_attempt_timeout_is_a_read_timeout_and_sent_again(server):
    p = path()
    url = server.script(p, [("slow", 1.0), 200])
    r, events = fast(attempt_timeout=0.2)
    assert _async_get_or_post(r, "GET", url) == 200
    assert server.hits(p) == 2
    retrying = [e for e in events if e.kind == "retrying"]
    assert len(retrying) == 1 and isinstance(retrying[0].error, RequestFailed)
    assert isinstance(retrying[0].error.__cause__, httpx.ReadTimeout)


def test_async_httpx_a_post_past_attempt_timeout_is_not_sent_again(server):
    # It may have reached the server: an attempt timeout is a read timeout to the HTTP
    # rules (the request's read timeout is the attempt's bound), not an always-transient
    # AttemptTimeout (which would send a payment twice).
    p = path()
    url = server.script(p, [("slow", 1.0), 200])
    r, events = fast(attempt_timeout=0.2)
    with pytest.raises(httpx.ReadTimeout):
        _async_get_or_post(r, "POST", url)
    assert server.hits(p) == 1
    assert [ev.kind for ev in events] == ["attempt_failed", "rejected"]


def test_async_httpx_a_streamed_body_is_sent_once_but_still_bounded_by_attempt_timeout(server):
    # A body that cannot be replayed skips the retries, not the timeout the user set.
    p = path()
    url = server.script(p, [("slow", 1.5), 200])
    r, _ = fast(attempt_timeout=0.2)

    async def go():
        async def body():
            yield b"pay"

        async with httpx.AsyncClient(transport=AsyncRetryingTransport(r), timeout=5) as c:
            await c.post(url, content=body())

    t0 = time.monotonic()
    with pytest.raises(httpx.ReadTimeout) as e:
        asyncio.run(go())
    assert time.monotonic() - t0 < 1.0, "the request was abandoned, not waited out"
    assert server.hits(p) == 1


def test_async_httpx_a_response_finished_after_the_bound_is_still_the_value():
    # A transport that completes its response despite the interruption (a shielded
    # read): a success that arrives late is still a success (the contract: the value is
    # never thrown away), and nothing is sent again.
    class Stubborn(httpx.AsyncBaseTransport):
        made = 0

        async def handle_async_request(self, request):
            Stubborn.made += 1
            try:
                await asyncio.sleep(0.5)
            except asyncio.CancelledError:
                pass
            return httpx.Response(200, content=b"late")

    r, events = fast(attempt_timeout=0.05, max_attempts=2)

    async def go():
        async with httpx.AsyncClient(transport=AsyncRetryingTransport(r, transport=Stubborn())) as c:
            resp = await c.get("http://stubborn.invalid/")
            # The task's cancel that interrupted it was taken back: it can still wait.
            await asyncio.sleep(0.01)
            return resp

    resp = asyncio.run(go())
    assert (resp.status_code, resp.content, Stubborn.made) == (200, b"late", 1)
    assert [e.kind for e in events] == ["success"]


@pytest.mark.parametrize("Client", [RequestsClient, HttpxClient], ids=lambda c: c.name)
def test_a_sync_helper_bounds_each_request_by_attempt_timeout(server, Client):
    # A blocking request cannot be interrupted, but its client's timeout can be the
    # attempt's bound: a GET past attempt_timeout is a read timeout, sent again.
    p = path()
    url = server.script(p, [("slow", 1.5), 200])
    r, events = fast(attempt_timeout=0.3)
    t0 = time.monotonic()
    assert Client(r).request("GET", url) == (200, "ok")
    assert time.monotonic() - t0 < 1.4, "the first request was not waited out"
    assert server.hits(p) == 2
    retrying = [e for e in events if e.kind == "retrying"]
    assert len(retrying) == 1 and isinstance(retrying[0].error, RequestFailed) and not retrying[0].error.connect


def test_cancelling_the_task_during_a_bounded_request_is_prompt_and_never_retried(server):
    p = path()
    url = server.script(p, [("slow", 2.0), 200])
    r, events = fast(attempt_timeout=1.5)

    async def go():
        async with httpx.AsyncClient(transport=AsyncRetryingTransport(r), timeout=5) as c:
            task = asyncio.ensure_future(c.get(url))
            await asyncio.sleep(0.3)
            task.cancel()
            t0 = time.monotonic()
            with pytest.raises(asyncio.CancelledError):
                await task
            return time.monotonic() - t0

    assert asyncio.run(go()) < 0.5
    time.sleep(1.5)  # past the attempt timeout: nothing was sent again
    assert server.hits(p) == 1
    assert [e.kind for e in events] == ["cancelled"]
