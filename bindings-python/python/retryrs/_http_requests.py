"""``RetryingAdapter``: a requests ``HTTPAdapter`` whose every request goes through a
retryrs Retrier. One attempt is one request; the core decides which outcomes are
transient (``retryrs._http_common.Rules``)."""

from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional, Tuple, Union

# Missing: retryrs.http names the extra to install.
import requests
from requests import exceptions as rex
from requests.adapters import HTTPAdapter
from requests.utils import rewind_body
from urllib3 import exceptions as uex

from . import _native
from ._errors import RetryExhausted
from ._http_common import (
    RequestAttempts,
    RequestFailed,
    RetryableStatus,
    Rules,
    final_response,
    http_retrier,
    redact_url,
    refuse_attempt_timeout,
)


def _outcome(exc: BaseException) -> Optional[str]:
    """The core's name for a requests failure: "connect" (no connection was made),
    "network" (anything after), or None (not a network failure at all)."""
    if isinstance(exc, (rex.ConnectTimeout, rex.SSLError, rex.ProxyError)):
        return "connect"
    if isinstance(exc, rex.ConnectionError):
        reason: Any = exc.args[0] if exc.args else None
        if isinstance(reason, uex.MaxRetryError):
            reason = reason.reason
        # NameResolutionError is a NewConnectionError in urllib3 2.
        if isinstance(reason, (uex.NewConnectionError, uex.ConnectTimeoutError)):
            return "connect"
        return "network"
    if isinstance(exc, rex.Timeout):
        return "network"
    return None


def _release(resp: requests.Response) -> None:
    """Reads the body (kept on the response, which the caller gets if retries run out)
    and hands the connection back to the pool for the next attempt."""
    try:
        resp.content
    except Exception:  # a broken body: drop the connection instead of reusing it
        pass
    resp.close()


class RetryingAdapter(HTTPAdapter):
    """``session.mount("https://", RetryingAdapter(retrier))``: retries what the core's
    HTTP rules call transient (connect failures for every method; other network failures
    and 408/425/429/500/502/503/504 for idempotent methods, or ``methods``/``statuses``),
    with the Retrier's backoff, Retry-After, deadline, budget, events and cancel token.

    When retries run out on a status the last response is returned, as requests would;
    on a network failure ``RetryExhausted`` is raised. A body that cannot be replayed (a
    generator, a file without ``tell``) is sent once. ``adapter_kwargs`` go to
    ``HTTPAdapter`` (``pool_connections``, ``pool_maxsize``, ``pool_block``).
    """

    def __init__(
        self,
        retrier: Optional[_native.Retrier] = None,
        *,
        methods: Optional[Iterable[str]] = None,
        statuses: Optional[Iterable[int]] = None,
        **adapter_kwargs: Any,
    ) -> None:
        if "max_retries" in adapter_kwargs:
            raise TypeError("RetryingAdapter retries through its Retrier; max_retries would make urllib3 retry as well: leave it out")
        self._rules = Rules(methods, statuses)
        self._retrier = http_retrier(retrier)
        refuse_attempt_timeout(retrier, "RetryingAdapter", "session.get(url, timeout=...)")
        super().__init__(**adapter_kwargs)

    @property
    def retrier(self) -> _native.Retrier:
        return self._retrier

    def send(  # type: ignore[override]
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Union[None, float, Tuple[float, float], Tuple[float, None]] = None,
        verify: Union[bool, str] = True,
        cert: Union[None, bytes, str, Tuple[Union[bytes, str], Union[bytes, str]]] = None,
        proxies: Optional[Mapping[str, str]] = None,
    ) -> requests.Response:
        send = super().send
        kw: Dict[str, Any] = dict(stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=proxies)
        body = request.body
        position = getattr(request, "_body_position", None)
        rewinds = hasattr(body, "read")
        if body is not None and not isinstance(body, (bytes, str)) and not (rewinds and isinstance(position, int)):
            return send(request, **kw)  # a generator or an unrewindable file: sent once
        method = (request.method or "GET").upper()
        url = redact_url(request.url or "")
        rules = self._rules
        attempts = RequestAttempts()

        def attempt() -> requests.Response:
            attempts.begin()
            if rewinds and attempts.made > 1:  # a resend: the body from its start
                rewind_body(request)
            try:
                resp = send(request, **kw)
            except (rex.ConnectionError, rex.Timeout) as e:
                outcome = _outcome(e)
                if outcome is not None and rules.transient(method, outcome):
                    raise RequestFailed(method, url, outcome == "connect", e) from e
                raise
            if rules.transient(method, resp.status_code):
                retry_after = resp.headers.get("Retry-After")
                _release(resp)
                raise attempts.hold(RetryableStatus(resp.status_code, method, url, retry_after, resp))
            return resp

        try:
            return self._retrier.call(attempt)
        except RetryExhausted as e:
            return final_response(e)  # type: ignore[no-any-return]
