"""A TLS certificate that fails verification is never retried (the default retry_on and
every HTTP helper): one attempt, the client's own exception unchanged. A handshake that
is reset stays a connect failure: retried, a POST too. Real loopback servers: one with a
throwaway trustme CA the client does not trust (or trusts, for a hostname the certificate
does not name), one that resets every connection as its ClientHello arrives."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import struct
import sys
import threading
import uuid

import aiohttp
import httpx
import pytest
import requests

import retryrs
from retryrs.http import AsyncRetryingTransport, RetryingAdapter, RetryingTransport, RetryMiddleware

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
from scripted_http_server import ScriptedServer  # noqa: E402


class ResetServer:
    """Accepts TLS clients and resets each connection (TCP RST) once its ClientHello is
    read: the handshake never completes. ``connections`` counts the attempts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.connections = 0
        self.url = f"https://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            try:
                conn.settimeout(5)
                conn.recv(4096)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def tls():
    ctx, ca = ScriptedServer.tls_context()
    with ScriptedServer(tls=ctx) as s:
        yield s, ca
    os.unlink(ca)


@pytest.fixture
def reset():
    s = ResetServer()
    yield s
    s.close()


def fast(**kw):
    events = []
    return retryrs.Retrier(initial_delay=0, jitter="none", max_attempts=3, on_event=events.append, **kw), events


def path():
    return f"/{uuid.uuid4().hex}"


# Each client, sending one request (method, url) through its helper, trusting `ca` (None:
# the system's CAs only, which do not include the throwaway one).
def via_requests(r, method, url, ca=None):
    with requests.Session() as s:
        s.mount("https://", RetryingAdapter(r))
        return s.request(method, url, data=b"body", timeout=5, verify=ca or True).status_code


def via_httpx(r, method, url, ca=None):
    inner = httpx.HTTPTransport(verify=ssl.create_default_context(cafile=ca) if ca else True)
    with httpx.Client(transport=RetryingTransport(r, transport=inner), timeout=5) as c:
        return c.request(method, url, content=b"body").status_code


def via_httpx_async(r, method, url, ca=None):
    async def go():
        inner = httpx.AsyncHTTPTransport(verify=ssl.create_default_context(cafile=ca) if ca else True)
        async with httpx.AsyncClient(transport=AsyncRetryingTransport(r, transport=inner), timeout=5) as c:
            return (await c.request(method, url, content=b"body")).status_code

    return asyncio.run(go())


def via_aiohttp(r, method, url, ca=None):
    async def go():
        connector = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=ca) if ca else True)
        async with aiohttp.ClientSession(connector=connector, middlewares=(RetryMiddleware(r),), timeout=aiohttp.ClientTimeout(total=5)) as s:
            async with s.request(method, url, data=b"body") as resp:
                return resp.status

    return asyncio.run(go())


def via_aiohttp_fallback(r, method, url, ca=None):
    async def go():
        connector = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=ca) if ca else True)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=5)) as s:
            resp = await RetryMiddleware(r).request(s, method, url, data=b"body")
            async with resp:
                return resp.status

    return asyncio.run(go())


# The plain Retrier (default retry_on) around each client, no helper.
def plain_requests(r, method, url, ca=None):
    return r.call(lambda: requests.request(method, url, data=b"body", timeout=5, verify=ca or True).status_code)


def plain_httpx(r, method, url, ca=None):
    verify = ssl.create_default_context(cafile=ca) if ca else True
    return r.call(lambda: httpx.request(method, url, content=b"body", verify=verify, timeout=5).status_code)


def plain_httpx_async(r, method, url, ca=None):
    async def once():
        async with httpx.AsyncClient(verify=ssl.create_default_context(cafile=ca) if ca else True, timeout=5) as c:
            return (await c.request(method, url, content=b"body")).status_code

    return asyncio.run(r.call_async(once))


def plain_aiohttp(r, method, url, ca=None):
    async def once():
        connector = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=ca) if ca else True)
        async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=5)) as s:
            async with s.request(method, url, data=b"body") as resp:
                return resp.status

    return asyncio.run(r.call_async(once))


HELPERS = [via_requests, via_httpx, via_httpx_async, via_aiohttp, via_aiohttp_fallback]
PLAIN = [plain_requests, plain_httpx, plain_httpx_async, plain_aiohttp]
CLIENTS = HELPERS + PLAIN
# What each client raises for a certificate it cannot verify, as it raises it.
CERT_ERROR = {
    "requests": requests.exceptions.SSLError,
    "httpx": httpx.ConnectError,
    "httpx_async": httpx.ConnectError,
    "aiohttp": aiohttp.ClientConnectorCertificateError,
    "aiohttp_fallback": aiohttp.ClientConnectorCertificateError,
}
ids = lambda f: f.__name__  # noqa: E731


def client_of(send):
    return send.__name__.split("_", 1)[1]


@pytest.mark.parametrize("send", CLIENTS, ids=ids)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_an_untrusted_certificate_is_one_attempt_and_the_clients_own_error(tls, send, method):
    server, _ = tls
    p = path()
    r, events = fast()
    with pytest.raises(Exception) as info:
        send(r, method, server.script(p, [200]))  # the client does not trust the throwaway CA
    e = info.value
    assert type(e) is CERT_ERROR[client_of(send)], repr(e)  # unchanged: not wrapped, not a RetryExhausted
    assert retryrs._defaults.certificate_failure(e)
    assert [ev.kind for ev in events] == ["attempt_failed", "rejected"]
    assert events[0].attempt == 1 and server.hits(p) == 0
    assert r.stats()["attempts"] == 1 and r.stats()["retries"] == 0


@pytest.fixture(scope="module")
def misnamed():
    """A server whose certificate, from a CA the client trusts, names another host."""
    import tempfile

    import trustme

    ca = trustme.CA()
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("example.org").configure_cert(ctx)
    with tempfile.NamedTemporaryFile(prefix="retryrs-test-ca-", suffix=".pem", delete=False) as pem:
        pem.write(ca.cert_pem.bytes())
    with ScriptedServer(tls=ctx) as s:
        yield s, pem.name
    os.unlink(pem.name)


@pytest.mark.parametrize("send", CLIENTS, ids=ids)
def test_a_certificate_for_another_host_is_not_retried(misnamed, send):
    server, ca = misnamed
    p = path()
    r, events = fast()
    with pytest.raises(Exception) as info:
        send(r, "GET", server.script(p, [200]), ca=ca)
    assert type(info.value) is CERT_ERROR[client_of(send)], repr(info.value)
    assert [ev.kind for ev in events] == ["attempt_failed", "rejected"] and server.hits(p) == 0


@pytest.fixture(scope="module")
def mtls():
    """A server (its certificate trusted by the client) that requires a client certificate
    the client does not present: it refuses us with a TLS alert."""
    ctx, ca = ScriptedServer.tls_context()
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(cafile=ca)
    with ScriptedServer(tls=ctx) as s:
        yield s, ca
    os.unlink(ca)


def test_a_server_refusing_our_certificate_is_not_retried(mtls):
    # As in Node's helpers: the peer's certificate alert fails the same way every time. The
    # server sends its alert and closes, so a client may read the close (an EOF, which
    # stays transient) before the alert: each client is checked for what it saw, and the
    # alert must have reached some of them.
    server, ca = mtls
    saw_alert = []
    for send in CLIENTS:
        r, events = fast()
        with pytest.raises(Exception) as info:
            send(r, "GET", server.script(path(), [200]), ca=ca)
        e = info.value
        if retryrs._defaults.certificate_failure(e):
            saw_alert.append(send.__name__)
            assert not isinstance(e, retryrs.RetryExhausted), (send.__name__, repr(e))
            # The attempt that read the alert ended the call (an earlier one may have read
            # an EOF first, and was retried).
            assert [ev.kind for ev in events][-2:] == ["attempt_failed", "rejected"], send.__name__
        else:
            assert isinstance(e, retryrs.RetryExhausted) and e.attempts == 3, (send.__name__, repr(e))
    assert saw_alert, "no client read the server's certificate alert"


def test_a_certificate_alert_is_a_certificate_failure_in_both_spellings():
    from retryrs._defaults import certificate_failure

    for reason in ["TLSV13_ALERT_CERTIFICATE_REQUIRED", "SSLV3_ALERT_BAD_CERTIFICATE", "SSL/TLS_ALERT_BAD_CERTIFICATE", "TLSV1_ALERT_UNKNOWN_CA"]:
        alert = ssl.SSLError(1, f"[SSL: {reason}] alert")
        alert.reason = reason
        wrapped = ConnectionError("outer")
        wrapped.__cause__ = alert
        assert certificate_failure(wrapped), reason
    other = ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number")
    other.reason = "WRONG_VERSION_NUMBER"
    assert not certificate_failure(other)


@pytest.mark.parametrize("send", CLIENTS, ids=ids)
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_handshake_reset_is_retried_as_a_connect_failure(reset, send, method):
    r, events = fast()
    with pytest.raises(Exception) as info:
        send(r, method, f"{reset.url}/x")
    e = info.value
    assert isinstance(e, retryrs.RetryExhausted), repr(e)
    assert e.attempts == 3 and reset.connections == 3
    assert not retryrs._defaults.certificate_failure(e)
    assert sum(ev.kind == "retrying" for ev in events) == 2
    if send in HELPERS:  # nothing was sent: a connect failure, so a POST is retried too
        assert isinstance(e.__cause__, retryrs.http.RequestFailed) and e.__cause__.connect


def test_a_trusted_certificate_still_succeeds(tls):
    server, ca = tls
    for send in CLIENTS:
        r, _ = fast()
        assert send(r, "GET", server.script(path(), [200]), ca=ca) == 200, send.__name__


def test_certificate_failure_walks_causes_contexts_and_args():
    from retryrs._defaults import certificate_failure

    cert = ssl.SSLCertVerificationError(1, "certificate verify failed: certificate has expired")
    assert certificate_failure(cert) and ssl.CertificateError is ssl.SSLCertVerificationError
    wrapped = ConnectionError("outer")
    wrapped.__cause__ = OSError("middle", cert)
    assert certificate_failure(wrapped)
    ctx = ConnectionError("during handling")
    ctx.__context__ = cert
    assert certificate_failure(ctx)
    # A reset or an EOF in the handshake is not one.
    assert not certificate_failure(ssl.SSLEOFError(8, "EOF occurred in violation of protocol"))
    assert not certificate_failure(ConnectionResetError(104, "Connection reset by peer"))
    # A cycle ends.
    a, b = ConnectionError("a"), ConnectionError("b")
    a.__context__, b.__context__ = b, a
    assert not certificate_failure(a)
    # The default retry_on: a ConnectionError caused by one is permanent, others retried.
    calls = []

    def flaky():
        calls.append(1)
        raise wrapped

    with pytest.raises(ConnectionError) as info:
        retryrs.Retrier(initial_delay=0).call(flaky)
    assert info.value is wrapped and len(calls) == 1
