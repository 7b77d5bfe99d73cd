"""Issue 23's scenarios for every Python helper (requests' RetryingAdapter, httpx's sync and
async transports, aiohttp's RetryMiddleware and its fallback for aiohttp < 3.12) on the
scripted loopback server, over TLS where it matters (a throwaway CA made with trustme)."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import pickle
import ssl
import sys
import tracemalloc
import uuid

import aiohttp
import httpx
import pytest
import requests

import retryrs
import retryrs.prometheus
from retryrs.http import AsyncRetryingTransport, RetryingAdapter, RetryingTransport, RetryMiddleware, request_options

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
from scripted_http_server import ScriptedServer, closed_port  # noqa: E402


def fast(**kw):
    events = kw.pop("events", [])
    listeners = [events.append] + kw.pop("listeners", [])
    return retryrs.Retrier(initial_delay=0, jitter="none", on_event=listeners, **kw), events


class Result:
    def __init__(self, status, text, raw=None):
        self.status, self.text, self.raw = status, text, raw


class RequestsClient:
    name = "requests"
    errors = (requests.RequestException,)

    def __init__(self, retrier, ca=None, **kw):
        self.session = requests.Session()
        self.adapter = RetryingAdapter(retrier, **kw)
        self.session.mount("http://", self.adapter)
        self.session.mount("https://", self.adapter)
        self.ca = ca

    def request(self, method, url, headers=None, options=None, **kw):
        req = requests.Request(method, url, headers=headers, data=b"body" if method in ("POST", "PATCH") else None)
        prepared = self.session.prepare_request(req)
        if options is not None:
            prepared.retryrs = options
        r = self.session.send(prepared, timeout=5, verify=self.ca if self.ca else True, **kw)
        return Result(r.status_code, r.text, r)

    def close(self):
        self.session.close()


class HttpxClient:
    name = "httpx"
    errors = (httpx.HTTPError,)

    def __init__(self, retrier, ca=None, **kw):
        transport = httpx.HTTPTransport(verify=ssl.create_default_context(cafile=ca)) if ca else None
        self.client = httpx.Client(transport=RetryingTransport(retrier, transport=transport, **kw), timeout=5)

    def request(self, method, url, headers=None, options=None):
        ext = {"retryrs": options} if options is not None else None
        r = self.client.request(method, url, headers=headers, content=b"body" if method in ("POST", "PATCH") else None, extensions=ext)
        return Result(r.status_code, r.text, r)

    def close(self):
        self.client.close()


class AsyncHttpxClient:
    name = "httpx-async"
    errors = (httpx.HTTPError,)

    def __init__(self, retrier, ca=None, **kw):
        self.retrier, self.ca, self.kw = retrier, ca, kw
        self.loop = asyncio.new_event_loop()
        transport = httpx.AsyncHTTPTransport(verify=ssl.create_default_context(cafile=ca)) if ca else None
        self.client = httpx.AsyncClient(transport=AsyncRetryingTransport(retrier, transport=transport, **kw), timeout=5)

    def request(self, method, url, headers=None, options=None):
        async def go():
            ext = {"retryrs": options} if options is not None else None
            r = await self.client.request(method, url, headers=headers, content=b"body" if method in ("POST", "PATCH") else None, extensions=ext)
            return Result(r.status_code, r.text, r)

        return self.loop.run_until_complete(go())

    def close(self):
        self.loop.run_until_complete(self.client.aclose())
        self.loop.close()


class AiohttpClient:
    name = "aiohttp"
    errors = (aiohttp.ClientError,)
    fallback = False

    def __init__(self, retrier, ca=None, **kw):
        self.mw = RetryMiddleware(retrier, **kw)
        self.loop = asyncio.new_event_loop()
        self.ca = ca

        async def make():
            import ssl

            ctx = ssl.create_default_context(cafile=ca) if ca else None
            connector = aiohttp.TCPConnector(ssl=ctx) if ctx else aiohttp.TCPConnector()
            if self.fallback:
                return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=5))
            return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=5), middlewares=(self.mw,))

        self.session = self.loop.run_until_complete(make())

    def request(self, method, url, headers=None, options=None):
        async def go():
            data = b"body" if method in ("POST", "PATCH") else None
            if self.fallback:
                mw = self.mw if options is None else self.mw.options(**options)
                resp = await mw.request(self.session, method, url, headers=headers, data=data)
            else:
                kw = {} if options is None else {"middlewares": (self.mw.options(**options),)}
                resp = await self.session.request(method, url, headers=headers, data=data, **kw)
            async with resp:
                return Result(resp.status, await resp.text(), resp)

        return self.loop.run_until_complete(go())

    def close(self):
        self.loop.run_until_complete(self.session.close())
        self.loop.close()


class AiohttpFallbackClient(AiohttpClient):
    name = "aiohttp-fallback"
    fallback = True


CLIENTS = [RequestsClient, HttpxClient, AsyncHttpxClient, AiohttpClient, AiohttpFallbackClient]
CLIENT_ERROR = {
    "requests": requests.ConnectionError,
    "httpx": httpx.ConnectError,
    "httpx-async": httpx.ConnectError,
    "aiohttp": aiohttp.ClientConnectorError,
    "aiohttp-fallback": aiohttp.ClientConnectorError,
}


@pytest.fixture
def server():
    with ScriptedServer() as s:
        yield s


@pytest.fixture(scope="module")
def tls():
    ctx, ca = ScriptedServer.tls_context()
    with ScriptedServer(tls=ctx) as s:
        yield s, ca
    os.unlink(ca)


@pytest.fixture
def make():
    made = []

    def build(Client, retrier, **kw):
        c = Client(retrier, **kw)
        made.append(c)
        return c

    yield build
    for c in made:
        c.close()


def path():
    return f"/{uuid.uuid4().hex}"


ids = lambda c: c.name  # noqa: E731


@pytest.mark.parametrize("Client", CLIENTS, ids=ids)
def test_503_503_200_is_three_requests_and_the_200(server, Client, make):
    p = path()
    r, events = fast()
    res = make(Client, r).request("GET", server.script(p, [503, 503, 200]))
    assert (res.status, res.text) == (200, "ok") and server.hits(p) == 3
    assert [e.kind for e in events].count("retrying") == 2 and events[-1].kind == "success"


@pytest.mark.parametrize("Client", CLIENTS, ids=ids)
def test_429_retry_after_1_waits_at_least_a_second(server, Client, make, virtual):
    p = path()
    r, events = fast()
    before = virtual.now()
    assert make(Client, r).request("GET", server.script(p, [(429, "1"), 200])).status == 200
    retrying = [e for e in events if e.kind == "retrying"]
    assert len(retrying) == 1 and retrying[0].delay >= 1.0
    assert virtual.now() - before >= 1.0  # the wait was taken (on the virtual clock)


@pytest.mark.parametrize("Client", CLIENTS, ids=ids)
def test_retry_after_3600_hands_back_the_429_at_once(server, Client, make, virtual):
    p = path()
    r, events = fast()
    before = virtual.now()
    res = make(Client, r).request("GET", server.script(p, [(429, "3600"), 200]))
    assert (res.status, res.text) == (429, "HTTP 429 body") and server.hits(p) == 1  # its body still readable
    assert virtual.now() - before < 1.0
    assert events[-1].kind == "exhausted" and events[-1].reason == "retry_after"


@pytest.mark.parametrize("Client", CLIENTS, ids=ids)
def test_post_503_is_one_request_and_the_metrics_say_rejected_with_the_status(server, Client, make):
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    p = path()
    r, events = fast(name="pay", listeners=[retryrs.prometheus.listener(registry)])
    res = make(Client, r).request("POST", server.script(p, [503, 200]))
    assert res.status == 503 and res.text == "HTTP 503 body" and server.hits(p) == 1
    assert events[-1].kind == "rejected"
    labels = {"retrier": "pay", "outcome": "rejected", "reason": "", "error_type": "503"}
    assert registry.get_sample_value("retryrs_calls_total", labels) == 1.0
    assert registry.get_sample_value("retryrs_calls_total", {**labels, "outcome": "success", "error_type": ""}) is None


@pytest.mark.parametrize("Client", CLIENTS, ids=ids)
def test_post_with_an_idempotency_key_is_resent(server, Client, make):
    p, q = path(), path()
    r, _ = fast()
    key = {"Idempotency-Key": "8e03978e-40d5-43e8-bc93-6894a57f9324"}
    assert make(Client, r).request("POST", server.script(p, [503, 200]), headers=key).status == 200
    assert server.hits(p) == 2
    # Turned off, per helper and per request.
    assert make(Client, r, idempotency_key=False).request("POST", server.script(q, [503, 200]), headers=key).status == 503
    assert server.hits(q) == 1
    q2 = path()
    assert make(Client, r).request("POST", server.script(q2, [503, 200]), headers=key, options={"idempotency_key": False}).status == 503
    assert server.hits(q2) == 1


@pytest.mark.parametrize("Client", CLIENTS, ids=ids)
def test_a_post_whose_tls_connection_breaks_mid_response_is_sent_once(tls, Client, make):
    server, ca = tls
    p = path()
    r, events = fast()
    with pytest.raises(Client.errors) as info:
        make(Client, r, ca=ca).request("POST", server.script(p, ["cut", 200]))
    assert server.hits(p) == 1
    assert not isinstance(info.value, retryrs.RetryExhausted)
    assert [e.kind for e in events] == ["attempt_failed", "rejected"]
    # A GET (idempotent) is sent again after the same failure.
    g = path()
    assert make(Client, r, ca=ca).request("GET", server.script(g, ["cut", 200])).status == 200
    assert server.hits(g) == 2


@pytest.mark.parametrize("Client", CLIENTS, ids=ids)
def test_a_post_to_a_certificate_the_client_does_not_trust_is_one_attempt(tls, Client, make):
    server, _ = tls
    p = path()
    r, events = fast(max_attempts=3)
    # The client does not trust the throwaway CA: a verification failure, the same every
    # time, so never retried (a handshake that is reset is: test_http_certificates.py).
    with pytest.raises(Client.errors) as info:
        make(Client, r).request("POST", server.script(p, [200]))
    assert not isinstance(info.value, retryrs.RetryExhausted) and server.hits(p) == 0
    assert [e.kind for e in events] == ["attempt_failed", "rejected"]


@pytest.mark.parametrize("Client", CLIENTS, ids=ids)
def test_exhaustion_on_refused_connections_raises_the_clients_error_and_retryrs(Client, make):
    r, events = fast(max_attempts=3)
    url = f"http://127.0.0.1:{closed_port()}/x"
    with pytest.raises(CLIENT_ERROR[Client.name]) as info:
        make(Client, r).request("GET", url)
    e = info.value
    assert isinstance(e, retryrs.RetryExhausted) and isinstance(e, Client.errors)
    assert e.attempts == 3 and e.reason == "attempts" and len(e.errors) == 3
    assert isinstance(e.__cause__, retryrs.http.RequestFailed) and e.__cause__.connect
    assert type(e) is retryrs.http.exhausted_type(type(e.__cause__.__cause__))  # one class per client type
    assert "Connection refused" in str(e)
    assert events[-1].kind == "exhausted"
    # Picklable like RetryExhausted (e.g. across a process pool).
    again = pickle.loads(pickle.dumps(e))
    assert type(again) is type(e) and again.attempts == 3


def test_the_exhausted_types_are_made_once_per_client_type():
    a = retryrs.http.exhausted_type(httpx.ReadError)
    assert a is retryrs.http.exhausted_type(httpx.ReadError)
    assert issubclass(a, httpx.ReadError) and issubclass(a, retryrs.RetryExhausted)
    assert a.__module__ == "retryrs.http" and a.__name__ == "ReadErrorRetryExhausted"


SECRET_QUERY = "?token=abc&X-Amz-Signature=def&session=ghi&q=1"


@pytest.mark.parametrize("Client", CLIENTS, ids=ids)
def test_credentials_in_the_query_never_reach_events_logs_or_errors(server, Client, make, caplog):
    p = path()
    logger = logging.getLogger("retryrs.test.v2")
    caplog.set_level(logging.INFO, logger=logger.name)
    events = []
    log = retryrs.log_events(logger)
    r = retryrs.Retrier(initial_delay=0, jitter="none", max_attempts=2, on_event=[events.append, log])
    client = make(Client, r, redact_query=["session"])
    assert client.request("GET", server.script(p, [503]) + SECRET_QUERY).status == 503
    assert client.request("POST", server.script(p + "x", [404]) + SECRET_QUERY).status == 404
    with pytest.raises(retryrs.RetryExhausted) as info:
        client.request("GET", f"http://127.0.0.1:{closed_port()}/x{SECRET_QUERY}")
    texts = [str(info.value), repr(info.value), str(info.value.__cause__), caplog.text]
    texts += [f"{e!r} {e.error!r} {e.error} {getattr(e.error, 'url', '')}" for e in events]
    assert "token=REDACTED" in caplog.text and "X-Amz-Signature=REDACTED" in caplog.text and "session=REDACTED" in caplog.text
    for t in texts:
        for secret in ("abc", "def", "ghi"):
            assert f"={secret}" not in t, t


def test_redaction_lists_every_common_credential_and_refuses_bad_keys():
    keys = {k.lower() for k in retryrs.http.REDACTED_QUERY_KEYS}
    for k in ("token", "access_token", "id_token", "refresh_token", "api_key", "apikey", "key", "client_secret", "password", "x-amz-signature", "x-amz-credential", "x-amz-security-token", "awsaccesskeyid", "signature", "sig", "x-goog-signature"):
        assert k in keys
    assert retryrs.http.redact_url("http://h/?API_KEY=1&Password=2") == "http://h/?API_KEY=REDACTED&Password=REDACTED"
    with pytest.raises(ValueError, match="redact_query.*'a=b'|redact_query.*\"a=b\""):
        RetryingTransport(redact_query=["a=b"])
    with pytest.raises(TypeError, match="redact_query must be a collection"):
        RetryingAdapter(redact_query="token")


@pytest.mark.parametrize("Client", CLIENTS, ids=ids)
def test_no_socket_or_memory_growth_over_200_retried_calls(server, Client, make):
    p = path()
    r = retryrs.Retrier(initial_delay=0, jitter="none")
    client = make(Client, r)

    def run(n, start):
        for i in range(start, start + n):
            assert client.request("GET", server.script(f"{p}{i}", [503, 200])).status == 200

    run(20, 0)  # warm up: pools, caches, the exhausted types
    gc.collect()
    fds = len(os.listdir("/proc/self/fd"))
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    run(200, 20)
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert server.accepted == 1, "one keep-alive connection, reused for all 440 requests"
    assert len(os.listdir("/proc/self/fd")) <= fds
    # The server's scripts (220 paths) are on this process's heap too; 200 leaked
    # responses or exceptions would be far more than this.
    assert grown < 600_000, grown


@pytest.mark.parametrize("Client", CLIENTS, ids=ids)
def test_per_request_attempt_limit_and_lists(server, Client, make):
    r, _ = fast(max_attempts=5)
    client = make(Client, r)
    p = path()
    assert client.request("GET", server.script(p, [503]), options={"max_attempts": 2}).status == 503
    assert server.hits(p) == 2
    q = path()
    assert client.request("POST", server.script(q, [503, 200]), options={"methods": ["POST"]}).status == 200
    assert server.hits(q) == 2
    s = path()
    assert client.request("GET", server.script(s, [404, 200]), options={"statuses": [404]}).status == 200
    assert server.hits(s) == 2
    # The block form, for every helper; the request's own options win over it.
    t = path()
    with request_options(max_attempts=3):
        assert client.request("GET", server.script(t, [503])).status == 503
        assert server.hits(t) == 3
        u = path()
        assert client.request("GET", server.script(u, [503]), options={"max_attempts": 1}).status == 503
        assert server.hits(u) == 1
    with pytest.raises(ValueError, match="unknown retryrs request option 'max_attempt'"):
        client.request("GET", server.script(path(), [200]), options={"max_attempt": 2})


@pytest.mark.parametrize("make_helper", [RetryingAdapter, RetryingTransport, AsyncRetryingTransport, RetryMiddleware], ids=lambda h: h.__name__)
def test_a_retrier_hook_the_http_rules_replace_is_refused_naming_it(make_helper):
    with pytest.raises(ValueError, match=f"{make_helper.__name__} does not use the Retrier's retry_on_result"):
        make_helper(retryrs.Retrier(retry_on_result=lambda v: False))
    with pytest.raises(ValueError, match="does not use the Retrier's retry_after"):
        make_helper(retryrs.Retrier(retry_after=lambda e: None))


def test_httpx_the_response_after_exhaustion_has_an_elapsed_time(server, make):
    for Client in (HttpxClient, AsyncHttpxClient):
        p = path()
        r, _ = fast(max_attempts=2)
        res = make(Client, r).request("GET", server.script(p, [503]))
        assert res.status == 503 and res.raw.elapsed.total_seconds() >= 0


def test_requests_stream_true_the_response_after_exhaustion_reads_its_body(server, make):
    p = path()
    r, _ = fast(max_attempts=2)
    res = make(RequestsClient, r).request("GET", server.script(p, [503]), stream=True)
    assert res.raw.raw.read() == b"HTTP 503 body" or res.text == "HTTP 503 body"
    q = path()
    resp = make(RequestsClient, r).session.get(server.script(q, [503]), stream=True)
    assert resp.status_code == 503 and resp.raw.read() == b"HTTP 503 body"


def test_httpx_instrumentation_puts_resend_count_on_each_attempts_span(server):
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import retryrs.otel

    for how in ("hook", "processor"):
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        kw = {"request_hook": retryrs.otel.resend_count_hook} if how == "hook" else {}
        if how == "processor":
            provider.add_span_processor(retryrs.otel.ResendCountSpanProcessor())
        HTTPXClientInstrumentor().instrument(tracer_provider=provider, **kw)
        try:
            r, _ = fast()
            p = path()
            with httpx.Client(transport=RetryingTransport(r)) as c:
                assert c.get(server.script(p, [503, 503, 200])).status_code == 200
        finally:
            HTTPXClientInstrumentor().uninstrument()
        spans = [s for s in exporter.get_finished_spans() if s.attributes.get("http.request.method") == "GET" or s.attributes.get("http.method") == "GET"]
        assert len(spans) == 3, how
        assert [s.attributes.get("http.request.resend_count") for s in spans] == [None, 1, 2], how


def _one_shot(Client, client, url):
    """A POST whose body cannot be sent twice, in each client's own way."""
    if Client is RequestsClient:
        return client.session.post(url, data=(c for c in [b"pay", b"load"]), timeout=5).status_code
    if Client is HttpxClient:
        return client.client.post(url, content=(c for c in [b"pay", b"load"])).status_code

    async def agen():
        yield b"pay"
        yield b"load"

    if Client is AsyncHttpxClient:
        return client.loop.run_until_complete(client.client.post(url, content=agen())).status_code

    async def go():
        if client.fallback:
            resp = await client.mw.request(client.session, "POST", url, data=agen())
        else:
            resp = await client.session.post(url, data=agen())
        async with resp:
            return resp.status

    return client.loop.run_until_complete(go())


@pytest.mark.parametrize("Client", CLIENTS, ids=ids)
def test_a_one_shot_body_is_sent_once_with_the_same_events(server, Client, make):
    # One attempt, but a call like any other to listeners and metrics.
    p, q = path(), path()
    r, events = fast()
    client = make(Client, r, methods=["POST"])
    assert _one_shot(Client, client, server.script(p, [503, 200])) == 503
    assert server.hits(p) == 1 and server.requests[p][0][1] == b"payload"
    assert [e.kind for e in events] == ["attempt_failed", "exhausted"] and events[-1].error.status == 503
    del events[:]
    assert _one_shot(Client, client, server.script(q, [200])) == 200
    assert [e.kind for e in events] == ["success"]


@pytest.mark.parametrize("Client", [AiohttpClient, AiohttpFallbackClient], ids=ids)
def test_aiohttp_a_reset_after_the_request_was_sent_is_not_resent_for_a_post(server, Client, make):
    p, g = path(), path()
    r, events = fast()
    client = make(Client, r)
    with pytest.raises(aiohttp.ClientError) as info:
        client.request("POST", server.script(p, ["reset", 200]))
    assert server.hits(p) == 1 and not isinstance(info.value, retryrs.RetryExhausted)
    assert isinstance(info.value, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError))
    assert events[-1].kind == "rejected"
    # The same failure for a GET was sent, but a GET may be sent again.
    assert client.request("GET", server.script(g, ["reset", "reset", 200])).status == 200
    assert server.hits(g) == 3


def test_otel_metrics_for_post_503_say_rejected_with_the_status(server, make):
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    import retryrs.otel

    reader = InMemoryMetricReader()
    listener = retryrs.otel.listener(MeterProvider(metric_readers=[reader]), span_events=False)
    r, _ = fast(name="pay", listeners=[listener])
    p, q = path(), path()
    assert make(HttpxClient, r).request("POST", server.script(p, [503])).status == 503
    assert make(HttpxClient, r).request("GET", server.script(q, [503, 200])).status == 200
    points = {}
    for rm in reader.get_metrics_data().resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                for dp in metric.data.data_points:
                    points[(metric.name, tuple(sorted(dp.attributes.items())))] = getattr(dp, "value", None)
    rejected = ("retryrs.calls", (("error.type", "503"), ("retryrs.outcome", "rejected"), ("retryrs.retrier.name", "pay")))
    success = ("retryrs.calls", (("retryrs.outcome", "success"), ("retryrs.retrier.name", "pay")))
    retry = ("retryrs.retries", (("error.type", "503"), ("retryrs.retrier.name", "pay")))
    assert points[rejected] == 1 and points[success] == 1 and points[retry] == 1, points


def test_requests_instrumentation_span_gets_the_last_resend_count(server):
    # requests' instrumentation wraps Session.send: one CLIENT span around all attempts,
    # current while RetryingAdapter resends, so it carries the last resend count.
    from opentelemetry.instrumentation.requests import RequestsInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    RequestsInstrumentor().instrument(tracer_provider=provider)
    try:
        r, _ = fast()
        session = requests.Session()
        session.mount("http://", RetryingAdapter(r))
        assert session.get(server.script(path(), [503, 503, 200]), timeout=5).status_code == 200
        assert session.get(server.script(path(), [200]), timeout=5).status_code == 200
    finally:
        RequestsInstrumentor().uninstrument()
    spans = exporter.get_finished_spans()
    assert [s.attributes.get("http.request.resend_count") for s in spans] == [2, None]


def test_classify_http_takes_the_idempotency_key_from_the_core():
    assert retryrs.classify_http("POST", 503) == "response"
    assert retryrs.classify_http("POST", 503, idempotency_key="k1") == "retry"
    assert retryrs.classify_http("patch", failure="network", idempotency_key="k1") == "retry"
    assert retryrs.classify_http("POST", 503, idempotency_key="  ") == "response"
    assert retryrs.classify_http("POST", 503, idempotency_key="k1", honour_idempotency_key=False) == "response"
    assert retryrs.classify_http("CONNECT", 503, idempotency_key="k1") == "response"
