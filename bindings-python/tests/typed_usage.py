"""A typed usage example: `mypy --strict` must accept it (checked by `make test`), and
pytest runs it too (test_typed_usage.py), so the types describe code that works."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Optional

import retryrs
from retryrs import CancelToken, Event, Retrier, RetryBudget, RetryExhausted


class Throttled(ConnectionError):
    def __init__(self, retry_after: float) -> None:
        super().__init__("429")
        self.retry_after = retry_after


def hint(exc: BaseException) -> Optional[float]:
    return exc.retry_after if isinstance(exc, Throttled) else None


def on_event(event: Event) -> None:
    delay: Optional[float] = event.delay
    assert event.kind and event.attempt >= 0 and event.elapsed >= 0 and (delay is None or delay >= 0)


retrier = Retrier(
    retry_on=(OSError, TimeoutError),
    max_attempts=4,
    initial_delay=timedelta(milliseconds=1),
    max_delay=0.01,
    jitter="equal",
    deadline=None,
    retry_after=hint,
    on_event=on_event,
    budget=RetryBudget(max_tokens=100, token_ratio=1),
    name="typed",
    seed=1,
)

calls = 0


def fetch(symbol: str, *, scale: int = 1) -> float:
    global calls
    calls += 1
    if calls < 2:
        raise ConnectionError("503")
    return 1.0842 * scale


@retrier
def decorated(symbol: str) -> str:
    return symbol.lower()


@retrier
async def decorated_async(n: int) -> int:
    return n + 1


class RatesClient:
    """Decorated methods of every kind: mypy --strict and pyright must bind `self` and
    `cls` as for undecorated ones (trap 5: `C().get("/x")` was "missing positional
    argument")."""

    base = "/rates"

    def __init__(self, scale: int) -> None:
        self.scale = scale

    @retrier
    def get(self, path: str) -> str:
        return f"{self.base}{path}x{self.scale}"

    @retrier
    async def aget(self, path: str, *, times: int = 1) -> str:
        return f"{self.base}{path}" * times

    @classmethod
    @retrier
    def named(cls, scale: int) -> "RatesClient":
        return cls(scale)

    @staticmethod
    @retrier
    def version() -> int:
        return 2


async def afetch(n: int) -> int:
    await asyncio.sleep(0)
    return n * 2


def main() -> None:
    rate: float = retrier.call(fetch, "EURUSD", scale=2)
    lower: str = decorated("EURUSD")
    doubled: int = asyncio.run(retrier.call_async(afetch, 21))
    incremented: int = asyncio.run(decorated_async(41))
    token = CancelToken()
    cancellable: Retrier = retrier.with_cancel(token)
    value: int = cancellable.call(len, "abc")
    seconds: Optional[float] = retryrs.parse_retry_after("120")
    retryable: bool = retryrs.is_retryable_status(503)
    client = RatesClient.named(3)
    got: str = client.get("/eur")
    agot: str = asyncio.run(client.aget("/usd", times=2))
    version: int = RatesClient.version() + client.version()
    unbound: str = RatesClient.get(client, "/gbp")
    assert (got, agot, version, unbound) == ("/rates/eurx3", "/rates/usd/rates/usd", 4, "/rates/gbpx3")
    judged = Retrier(retry_on_result=lambda v: v is None, max_retry_after=timedelta(seconds=30))
    answers = iter([None, "filled"])
    filled: Optional[str] = judged.call(lambda: next(answers))
    assert filled == "filled" and judged.max_retry_after == 30.0
    for judged_attempt in judged:
        with judged_attempt:
            judged_attempt.result = "accepted"
    try:
        with retryrs.testing.virtual_time():
            judged.call(lambda: None)
    except RetryExhausted as gave_up:
        last_value: object = gave_up.result
        assert last_value is None and gave_up.reason == "attempts"
    number = 0
    left: Optional[float] = None
    for attempt in retrier:
        with attempt:
            number = attempt.number
            left = attempt.remaining
            current: Optional[retryrs.AttemptInfo] = retryrs.current_attempt()
            assert current is not None and current.number == number and current.deadline is None
    assert left is None  # deadline=None: unbounded
    logged = Retrier(on_event=retryrs.log_events(logging.getLogger("typed")))
    with retryrs.testing.virtual_time() as clock:
        clock.advance(0.5)
        try:
            logged.call(fetch_fail)
        except RetryExhausted as e:
            attempts: int = e.attempts
            reason: str = e.reason
            assert attempts == 5 and reason == "attempts" and len(e.errors) == 5
    assert number == 1
    assert (rate, lower, doubled, incremented, value, seconds, retryable) == (2.1684, "eurusd", 42, 42, 3, 120.0, True)


def fetch_fail() -> None:
    raise ConnectionError("down")


if __name__ == "__main__":
    main()


# Issue 24's escape hatches, typed.
def exact_wait(attempt: int, failure: object, delay: float) -> Optional[float]:
    return 0.001 * attempt if attempt < 3 else None


def stop_on_third(attempt: int, failure: object, delay: float) -> Optional[bool]:
    if attempt >= 3:
        raise retryrs.StopRetrying()
    return None


hooked = retrier.replace(reraise=True, wait=exact_wait, before_sleep=stop_on_third, budget=None)
reraise_flag: bool = hooked.reraise
counts = hooked.stats()
linked = CancelToken.any([CancelToken(), CancelToken()]).child()
assert not linked.cancelled and reraise_flag and counts["calls"] == 0


# Issue 39's propagation, typed: a server helper around plain ASGI / WSGI callables, the
# context by hand, and a helper's outbound settings.
from typing import Any, Awaitable, Callable, Dict, Iterable, List, MutableMapping, Tuple  # noqa: E402

from retryrs import propagation  # noqa: E402


async def asgi_app(scope: MutableMapping[str, Any], receive: Callable[[], Awaitable[Any]], send: Callable[[Any], Awaitable[None]]) -> None:
    ctx: Optional[propagation.Context] = propagation.current()
    left: Optional[float] = None if ctx is None else ctx.remaining
    await send({"type": "http.response.start", "status": 200 if left is None or left > 0 else 504, "headers": []})


def wsgi_app(environ: Dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    start_response("200 OK", [])
    return [b""]


served_asgi = propagation.ASGIMiddleware(asgi_app, limit=10.0, trust_mesh=True, observe_only=False)
served_wsgi = propagation.WSGIMiddleware(wsgi_app, limit=None)
server_counts: Dict[str, int] = served_wsgi.stats()
with propagation.context({"Retryrs-Context": "t=900, a=2"}, timeout=0.5) as by_hand:
    retry_state: bool = by_hand.is_retry
    abandon: CancelToken = by_hand.cancel_token
sent: List[Tuple[str, str]] = propagation.Outbound(hosts=["*.internal"], mesh="envoy", kind="grpc").headers("http://a.internal/")
assert retry_state and not abandon.cancelled and server_counts["requests"] == 0 and sent
