"""The AWS quota's price of a retry after an attempt the asyncio driver cut at its bound
(issue 27): 10, against 5 after any other transient failure; the success gives back the
last retry's cost. Only the driver's own cut counts: an AttemptTimeout the attempt raises
itself (an inner Retrier's) is an ordinary failure. Real time, bounds of 50 ms: the
attempts that hang are cut by the driver's timer, whatever the machine's load."""

import asyncio

import pytest

from retryrs import AttemptTimeout, Retrier, RetryBudget, RetryExhausted


def retrier(quota: RetryBudget) -> Retrier:
    return Retrier(
        max_attempts=3,
        initial_delay=0,
        jitter="none",
        attempt_timeout=0.05,
        deadline=None,
        budget=quota,
        retry_on=(ConnectionError, AttemptTimeout),
    )


def test_a_call_cut_at_its_bound_retries_at_the_timeout_price():
    quota = RetryBudget.quota()
    seen = []

    async def attempt():
        seen.append(quota.tokens)
        if len(seen) == 1:
            await asyncio.sleep(3600)  # cut at 50 ms
        if len(seen) == 2:
            raise ConnectionError("reset")
        return len(seen)

    assert asyncio.run(retrier(quota).call_async(attempt)) == 3
    assert seen == [500, 490, 485], "the cut attempt's retry cost 10, the reset's 5"
    assert quota.tokens == 490, "the success gave back the last retry's 5"


def test_the_async_loop_form_prices_its_cut_the_same():
    quota = RetryBudget.quota()
    seen = []

    async def run():
        async for attempt in retrier(quota):
            with attempt:
                seen.append(quota.tokens)
                if attempt.number < 3:
                    await asyncio.sleep(3600)  # cut at 50 ms

    asyncio.run(run())
    assert seen == [500, 490, 480]
    assert quota.tokens == 490, "the success gave back the last retry's 10"


def test_an_attempt_timeout_the_attempt_raises_itself_is_an_ordinary_failure():
    quota = RetryBudget.quota()
    seen = []

    async def attempt():
        seen.append(quota.tokens)
        if len(seen) == 1:
            raise AttemptTimeout(0.05)  # an inner Retrier's, not this driver's cut
        return "ok"

    assert asyncio.run(retrier(quota).call_async(attempt)) == "ok"
    assert seen == [500, 495]


def test_a_budget_refusal_after_a_cut_names_the_budget():
    # 12: the first cut's retry (10) fits, the second's does not.
    quota = RetryBudget.quota(capacity=12)

    async def hang():
        await asyncio.sleep(3600)

    with pytest.raises(RetryExhausted) as raised:
        asyncio.run(retrier(quota).call_async(hang))
    assert raised.value.reason == "budget" and raised.value.attempts == 2
    assert quota.tokens == 2


def test_with_hooks_the_cut_is_priced_the_same():
    quota = RetryBudget.quota()
    seen, asked = [], []

    async def attempt():
        seen.append(quota.tokens)
        if len(seen) < 3:
            await asyncio.sleep(3600)  # cut at 50 ms
        return "ok"

    def before_sleep(attempt, failure, delay):
        asked.append(type(failure))
        return True

    r = Retrier(
        max_attempts=3,
        initial_delay=0,
        jitter="none",
        attempt_timeout=0.05,
        deadline=None,
        budget=quota,
        retry_on=AttemptTimeout,
        before_sleep=before_sleep,
    )
    assert asyncio.run(r.call_async(attempt)) == "ok"
    assert asked == [AttemptTimeout, AttemptTimeout]
    assert seen == [500, 490, 480]
    assert quota.tokens == 490


def test_an_httpx_request_cut_at_its_bound_retries_at_the_timeout_price():
    import httpx

    from retryrs.http import AsyncRetryingTransport

    class Hangs(httpx.AsyncBaseTransport):
        """An inner transport whose first request never answers (the helper cuts it at
        its bound); later ones answer 200. ``seen``: the quota's tokens at each request."""

        def __init__(self) -> None:
            self.seen: list = []

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            self.seen.append(quota.tokens)
            if len(self.seen) == 1:
                await asyncio.sleep(3600)
            return httpx.Response(200, content=b"ok")

    quota = RetryBudget.quota()
    inner = Hangs()

    async def go() -> int:
        r = retrier(quota)
        async with httpx.AsyncClient(transport=AsyncRetryingTransport(r, transport=inner)) as c:
            return (await c.get("http://127.0.0.1:9/")).status_code

    assert asyncio.run(go()) == 200
    assert inner.seen == [500, 490], "the cut request's retry cost 10 (a timeout's), not 5"
    assert quota.tokens == 500, "the success gave back the last retry's 10"


def test_an_aiohttp_request_cut_at_its_bound_retries_at_the_timeout_price():
    import socket
    import threading

    import aiohttp

    from retryrs.http import RetryMiddleware

    quota = RetryBudget.quota()
    seen = []
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    held = []

    def serve() -> None:
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            held.append(conn)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            seen.append(quota.tokens)
            if len(seen) > 1:  # the first request is never answered
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    threading.Thread(target=serve, daemon=True).start()

    async def go() -> int:
        mw = RetryMiddleware(retrier(quota))
        async with aiohttp.ClientSession(middlewares=(mw,)) as s:
            async with s.get(f"http://127.0.0.1:{sock.getsockname()[1]}/") as resp:
                return resp.status

    try:
        assert asyncio.run(go()) == 200
    finally:
        sock.close()
        for c in held:
            c.close()
    assert seen == [500, 490], "the cut request's retry cost 10 (a timeout's), not 5"
    assert quota.tokens == 500, "the success gave back the last retry's 10"


def test_a_hedged_attempt_cut_at_its_bound_prices_its_hedge_as_a_timeout():
    from retryrs import load_policies

    # The hedge delay is long: the second attempt launches only when the first fails.
    doc = {
        "policies": {"reads": {"hedge": {"max_attempts": 3, "delay": "60s"}, "attempt_timeout": "50ms", "budget": "aws"}},
        "budgets": {"aws": {"kind": "quota"}},
    }
    r = Retrier.from_policy(load_policies(doc)["reads"], retry_on=(ConnectionError, AttemptTimeout))
    quota = r.budget
    seen = []

    async def attempt():
        seen.append(quota.tokens)
        if len(seen) == 1:
            await asyncio.sleep(3600)  # cut at 50 ms
        if len(seen) == 2:
            raise ConnectionError("reset")
        return "ok"

    assert asyncio.run(r.call_async(attempt)) == "ok"
    assert seen == [500, 490, 485], "the cut attempt's hedge cost 10, the reset's 5"


class FirstHangs:
    """A loopback HTTP server whose first request is read and never answered; later ones
    get 200. ``seen``: the quota's tokens as each request arrived."""

    def __init__(self, quota: RetryBudget) -> None:
        import socket
        import threading

        self.quota = quota
        self.seen: list = []
        self.held: list = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            self.seen.append(self.quota.tokens)
            if len(self.seen) > 1:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    def close(self) -> None:
        self.sock.close()
        for c in self.held:
            c.close()


def _client_timeout_case(send):
    """``send(retrier, url)`` makes one GET through a helper whose client times out on the
    first request (its own timeout, 50 ms, the Retrier bounding nothing)."""
    quota = RetryBudget.quota()
    server = FirstHangs(quota)
    r = Retrier(max_attempts=3, initial_delay=0, jitter="none", deadline=None, budget=quota)
    try:
        assert send(r, server.url) == 200
    finally:
        server.close()
    assert server.seen == [500, 490], "the client's timeout priced the retry as a timeout's (10), not 5"
    assert quota.tokens == 500, "the success gave back the last retry's 10"


def test_requests_adapter_prices_the_clients_own_timeout_as_a_timeout():
    import requests

    from retryrs.http import RetryingAdapter

    def send(r, url):
        s = requests.Session()
        s.mount("http://", RetryingAdapter(r))
        return s.get(url, timeout=0.05).status_code

    _client_timeout_case(send)


def test_httpx_transports_price_the_clients_own_timeout_as_a_timeout():
    import httpx

    from retryrs.http import AsyncRetryingTransport, RetryingTransport

    def sync(r, url):
        with httpx.Client(transport=RetryingTransport(r), timeout=0.05) as c:
            return c.get(url).status_code

    def async_(r, url):
        async def go():
            async with httpx.AsyncClient(transport=AsyncRetryingTransport(r), timeout=0.05) as c:
                return (await c.get(url)).status_code

        return asyncio.run(go())

    _client_timeout_case(sync)
    _client_timeout_case(async_)


def test_aiohttp_prices_the_clients_own_timeout_as_a_timeout():
    import aiohttp

    from retryrs.http import RetryMiddleware

    def send(r, url):
        async def go():
            timeout = aiohttp.ClientTimeout(sock_read=0.05)
            async with aiohttp.ClientSession(middlewares=(RetryMiddleware(r),), timeout=timeout) as s:
                async with s.get(url) as resp:
                    return resp.status

        return asyncio.run(go())

    _client_timeout_case(send)


def test_a_helpers_connection_reset_stays_an_ordinary_failures_price():
    import socket
    import threading

    import requests

    from retryrs.http import RetryingAdapter

    quota = RetryBudget.quota()
    seen = []
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)

    def serve():
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            conn.recv(65536)
            seen.append(quota.tokens)
            if len(seen) == 1:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                conn.close()  # a reset, not a timeout
                continue
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    r = Retrier(max_attempts=3, initial_delay=0, jitter="none", deadline=None, budget=quota)
    s = requests.Session()
    s.mount("http://", RetryingAdapter(r))
    try:
        assert s.get(f"http://127.0.0.1:{sock.getsockname()[1]}/", timeout=5).status_code == 200
    finally:
        sock.close()
    assert seen == [500, 495]
