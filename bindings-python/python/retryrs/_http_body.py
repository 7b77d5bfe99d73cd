"""What becomes of a response's body: the one place every Python HTTP helper asks
(docs/contract.md §6b).

- A response that may be retried (a retryable status) is drained, inside its attempt's
  bound, at most ``DRAIN_LIMIT`` (+1) bytes: ``drain``. The part read is kept.
- The engine then decides. Retried: the response is let go of when the next attempt
  begins (``Held.let_go``): its connection goes back to the pool if the body was read to
  its end, else it is closed. Not retried (retries ran out, a Retry-After too long, the
  deadline): it is handed over *whole*: the part drained, then the rest of the stream
  (``replayed``), so no read API of the client sees it cut.
- A handed-over response's body is the caller's: no bound of the call applies to it any
  more, only a bound on silence: ``silence`` (the attempt timeout, else the deadline), the
  client's own read timeout.

Why drain inside the attempt and decide later: only the engine knows whether a failure
is retried (attempts, deadline, budget, Retry-After), and it decides after the attempt
has ended; reading the whole body first would read 200 MiB for nothing, and cutting it
first would hand the caller a cut body.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Awaitable, Callable, Iterable, Iterator, List, Optional

from . import _native

# A retried response's body is read up to this much, to keep its connection for the next
# attempt; a longer one is not read on: its connection is closed instead.
DRAIN_LIMIT = 64 * 1024


class Prefix:
    """What a drain read of a body: its chunks, whether the body ended, and the error that
    stopped the read (a timeout, a reset), raised again to whoever reads on."""

    __slots__ = ("chunks", "size", "ended", "error")

    def __init__(self) -> None:
        self.chunks: List[bytes] = []
        self.size = 0
        self.ended = False
        self.error: Optional[BaseException] = None

    @property
    def whole(self) -> bool:
        """The body was read to its end: its connection may be reused."""
        return self.ended and self.error is None

    def data(self) -> bytes:
        return b"".join(self.chunks)

    def _take(self, chunk: bytes) -> bool:
        if not chunk:
            self.ended = True
            return False
        self.chunks.append(chunk)
        self.size += len(chunk)
        return self.size <= DRAIN_LIMIT


def drain(next_chunk: Callable[[], bytes]) -> Prefix:
    """Reads a retried response's body through ``next_chunk`` (b"" at its end) until it
    ends, fails, or passes DRAIN_LIMIT. Each read is bounded by the client's own timeout,
    which the helper set to the attempt's time left."""
    prefix = Prefix()
    try:
        while prefix._take(next_chunk()):
            pass
    except Exception as e:  # a broken or stalled body: kept, raised to a later reader
        prefix.error = e
    return prefix


async def adrain(next_chunk: Callable[[], Awaitable[bytes]]) -> Prefix:
    """``drain`` for an async client."""
    prefix = Prefix()
    try:
        while prefix._take(await next_chunk()):
            pass
    except Exception as e:
        prefix.error = e
    return prefix


def replayed(prefix: Prefix, rest: Iterable[bytes]) -> Iterator[bytes]:
    """The whole body for the caller of a drained response: the part drained, then the
    rest of the stream (or the error that stopped the drain)."""
    yield from prefix.chunks
    if prefix.error is not None:
        raise prefix.error
    if not prefix.ended:
        yield from rest


async def areplayed(prefix: Prefix, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """``replayed`` for an async client."""
    for chunk in prefix.chunks:
        yield chunk
    if prefix.error is not None:
        raise prefix.error
    if not prefix.ended:
        async for chunk in rest:
            yield chunk


def silence(retrier: _native.Retrier) -> Optional[float]:
    """How long a handed-over body may stay silent before its read fails: the attempt
    timeout, else the deadline, else no bound (seconds)."""
    bound = retrier.attempt_timeout
    return bound if bound is not None else retrier.deadline


class Held:
    """The drained response of the failed attempt, until the engine decides: the next
    attempt lets go of it (``let_go``); the caller gets it if retries ran out; a call that
    ends otherwise (cancelled, an error) lets go of it too."""

    __slots__ = ("response", "_let_go")

    def __init__(self, response: Any, let_go: Callable[[Any], Any]) -> None:
        self.response = response
        self._let_go = let_go

    def let_go(self) -> Any:
        """Frees the response's connection (an awaitable for an async client)."""
        resp, self.response = self.response, None
        return None if resp is None else self._let_go(resp)
