"""break-it3: this round's features tried as a stranger would, at the edges."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading

import pytest
import requests

import retryrs
from retryrs import Retrier, load_policies
from retryrs._defaults import certificate_failure
from retryrs.http import RetryingAdapter


class OddReason(ConnectionError):
    """A client error whose ``reason`` is a property that fails (it reads a response
    that is not there)."""

    @property
    def reason(self) -> str:
        raise RuntimeError("no response to read a reason from")


def test_an_exception_chain_with_a_cycle_is_walked_once() -> None:
    a, b = ConnectionError("a"), OSError("b")
    a.__context__, b.__context__ = b, a
    assert not certificate_failure(a)
    cert = ssl.SSLCertVerificationError(1, "certificate verify failed")
    b.__cause__, cert.__context__ = cert, a
    assert certificate_failure(a)


def test_an_error_whose_reason_attribute_raises_is_judged_not_replaced() -> None:
    """The default retry_on looks at a ``reason`` attribute for the certificate check; a
    ``reason`` that raises must not replace the caller's error with retryrs' own bug."""
    assert not certificate_failure(OddReason("reset"))
    attempts = []

    def op() -> None:
        attempts.append(1)
        raise OddReason("reset")

    with pytest.raises(retryrs.RetryExhausted) as info:
        Retrier(initial_delay=0, jitter="none", max_attempts=2).call(op)
    assert len(attempts) == 2
    assert isinstance(info.value.__cause__, OddReason)


@pytest.fixture
def plain_http():
    """A plain-HTTP server on loopback: https to it fails the TLS handshake with
    WRONG_VERSION_NUMBER (an ``ssl.SSLError`` whose errno is OpenSSL's code, 1)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)

    def run() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            try:
                conn.settimeout(5)
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            except OSError:
                pass
            conn.close()

    threading.Thread(target=run, daemon=True).start()
    yield f"https://127.0.0.1:{srv.getsockname()[1]}/"
    srv.close()


def test_an_ssl_error_is_described_by_its_own_text_not_an_errno(plain_http: str) -> None:
    """ssl.SSLError's errno is OpenSSL's error code (1: SSL_ERROR_SSL), not an OS errno:
    the message said "Operation not permitted" (os.strerror(1))."""
    s = requests.Session()
    s.mount("https://", RetryingAdapter(Retrier(initial_delay=0, jitter="none", max_attempts=1)))
    with pytest.raises(requests.exceptions.SSLError) as info:
        s.get(plain_http, timeout=10)
    text = str(info.value)
    assert "Operation not permitted" not in text, text
    assert "WRONG_VERSION_NUMBER" in text or "wrong version number" in text, text


def _hedged() -> Retrier:
    doc = {"policies": {"reads": {"hedge": {"max_attempts": 2, "delay": "20ms"}, "deadline": "10s"}}}
    return Retrier.from_policy(load_policies(doc)["reads"])


@pytest.mark.parametrize("hedge", [False, True], ids=["plain", "hedged"])
def test_a_call_cancelled_while_its_attempts_run_counts_them(hedge: bool) -> None:
    """CHANGELOG: an attempt ended by the call's cancellation counts in ``attempts``. A
    hedged call counted none (the core's HedgeCall did not say its attempts were made)."""
    r = _hedged() if hedge else Retrier(deadline=10)

    async def main() -> None:
        running = asyncio.Event()
        launched = 0

        async def op() -> None:
            nonlocal launched
            launched += 1
            if launched == (2 if hedge else 1):
                running.set()
            await asyncio.Event().wait()  # hangs until cancelled

        task = asyncio.ensure_future(r.call_async(op))
        await asyncio.wait_for(running.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    stats = r.stats()
    assert (stats["calls"], stats["cancellations"]) == (1, 1)
    assert stats["attempts"] >= 1, stats


@pytest.mark.parametrize("form", ["call_async", "async for"])
def test_an_async_wait_after_a_sync_before_sleep_is_asked_once_per_retry(form: str) -> None:
    """A sync ``before_sleep`` and an async ``wait``: the wait hook ran twice per retry
    (the sync answer was not among the driver's awaited ones, so the awaited wait answer
    was read as before_sleep's -- a ``False`` stopped the call -- and wait asked again)."""
    calls: list = []

    async def wait(attempt: int, failure: object, delay: float) -> object:
        calls.append(("wait", attempt))
        return 0

    def before_sleep(attempt: int, failure: object, delay: float) -> None:
        calls.append(("before_sleep", attempt))

    r = Retrier(wait=wait, before_sleep=before_sleep, max_attempts=3, deadline=10, retry_on=lambda e: True)
    tries = 0

    async def op() -> None:
        nonlocal tries
        tries += 1
        raise ConnectionError("reset")

    async def main() -> None:
        if form == "call_async":
            await r.call_async(op)
        else:
            async for attempt in r:
                with attempt:
                    await op()

    with pytest.raises(retryrs.RetryExhausted) as info:
        asyncio.run(main())
    assert info.value.reason == "attempts", info.value
    assert tries == 3
    assert calls == [("before_sleep", 1), ("wait", 1), ("before_sleep", 2), ("wait", 2)]


@pytest.mark.parametrize("hint", [None, 0.0], ids=["no-hint", "zero-hint"])
def test_a_sync_retry_on_with_an_async_retry_after_keeps_its_verdict(hint: object) -> None:
    """A sync ``retry_on`` and an async ``retry_after``: the awaited hint was read as the
    predicate's answer (its truthiness: None or 0 made a transient failure permanent, the
    call ended after one attempt) and the hint hook was asked twice."""
    calls: list = []

    def retry_on(exc: BaseException) -> bool:
        calls.append("retry_on")
        return True

    async def retry_after(exc: BaseException) -> object:
        calls.append("retry_after")
        return hint

    r = Retrier(retry_on=retry_on, retry_after=retry_after, max_attempts=2, initial_delay=0, deadline=10)

    async def op() -> None:
        raise ConnectionError("reset")

    with pytest.raises(retryrs.RetryExhausted) as info:
        asyncio.run(r.call_async(op))
    assert info.value.reason == "attempts"
    assert calls == ["retry_on", "retry_after", "retry_on", "retry_after"]


@pytest.mark.parametrize("signal_class", [KeyboardInterrupt, SystemExit])
def test_under_trio_a_signal_raised_by_a_hedged_attempt_is_raised_as_it_is(signal_class: type) -> None:
    """A KeyboardInterrupt (or SystemExit) raised by a hedged attempt under trio escaped
    the call's nursery as a BaseExceptionGroup, so ``except KeyboardInterrupt`` missed it
    (a call that does not hedge raises it as it is, as does a hedged one under asyncio)."""
    trio = pytest.importorskip("trio")
    r = _hedged()
    launched = 0

    async def op() -> None:
        nonlocal launched
        launched += 1
        if launched == 1:
            await trio.sleep(0.05)  # the hedge goes out at 20 ms
            raise signal_class()
        await trio.sleep_forever()

    with pytest.raises(signal_class):
        trio.run(r.call_async, op)
    stats = r.stats()
    assert (stats["calls"], stats["cancellations"]) == (1, 1), stats
