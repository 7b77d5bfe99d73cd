"""The propagation vectors (tests/conformance/propagation.json, format in
tests/conformance/README.md), run through the Python helpers where a helper does the
job: the server helpers' reading and upward rule (WSGIMiddleware), a call made inside a
context (retryrs.propagation.context under virtual time, so every bound is exact), the
client helpers' outbound headers and allowlist (retryrs.propagation.Outbound), and a
response's pushback (the one status verdict every HTTP helper uses). conformance.py's
run_vector hands each propagation vector here."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import retryrs
from retryrs import _native, propagation, testing
from retryrs._http_common import ErrorStatus, RequestAttempts, RetryableStatus, Rules, response_failure

KINDS = ("inbound", "margin", "constrain", "outbound", "pushback", "upward", "allowlist")


def seconds(ms: Optional[float]) -> Optional[float]:
    # Half a millisecond more: a whole number of ms as seconds in binary floating point
    # (1.999) may read back a hair under it, and the headers round down.
    return None if ms is None else (ms + 0.5) / 1000


def whole_ms(s: Optional[float]) -> Optional[int]:
    return None if s is None else round(s * 1000)


def inbound(case: Dict[str, Any], expect: Dict[str, Any], build: Callable[..., Any]) -> List[str]:
    limit = case.get("limit_ms", 15000)
    headers = [tuple(h) for h in case["headers"]]
    budget, is_retry, clamped, malformed = _native.read_inbound(headers, None if limit is None else limit / 1000, case.get("trust_mesh", False))
    got = {"budget_ms": whole_ms(budget), "is_retry": is_retry, "clamped": clamped, "malformed": malformed}
    problems = [f"{k} = {got[k]!r}, expected {v!r}" for k, v in expect.items() if got.get(k) != v]
    # The server helper reads them the same way: its context's time left and retry state.
    with testing.virtual_time():
        mw = propagation.WSGIMiddleware(
            _record, limit=None if limit is None else limit / 1000, trust_mesh=case.get("trust_mesh", False), observe_only=True
        )
        ctx = _served(mw, headers)
        if whole_ms(ctx.remaining) != expect["budget_ms"] or ctx.is_retry != expect["is_retry"]:
            problems.append(f"WSGIMiddleware's context: {ctx.remaining!r} s, is_retry {ctx.is_retry}")
    if mw.stats()["malformed"] != expect["malformed"] or mw.stats()["clamped"] != int(expect["clamped"]):
        problems.append(f"WSGIMiddleware's counts: {mw.stats()}")
    return problems


_SEEN: List[Any] = []


def _record(environ: Dict[str, Any], start_response: Any) -> List[bytes]:
    _SEEN.append(propagation.current())
    start_response("200 OK", [])
    return [b""]


def _served(mw: propagation.WSGIMiddleware, headers: List[Any]) -> Any:
    """The context the application ran in (None: it did not run), the response status."""
    _SEEN.clear()
    environ = {"HTTP_" + name.upper().replace("-", "_"): value for name, value in headers}
    status: List[str] = []
    mw(environ, lambda s, h: status.append(s))
    return _SEEN[0] if _SEEN else status[0]


def margin(case: Dict[str, Any], expect: Dict[str, Any], build: Callable[..., Any]) -> List[str]:
    got = whole_ms(_native.margin(case["left_ms"] / 1000))
    return [] if got == expect["margin_ms"] else [f"margin {got} ms, expected {expect['margin_ms']}"]


def constrain(case: Dict[str, Any], expect: Dict[str, Any], build: Callable[..., Any]) -> List[str]:
    r = build()
    left = None if case["left_ms"] is None else case["left_ms"] / 1000
    under = _native.retrier_constrained(r, left, case["is_retry"])
    problems = []
    if (under is not None) != expect["changed"]:
        problems.append(f"changed: {under is not None}, expected {expect['changed']}")
    shown = under or r
    if (whole_ms(shown.deadline), shown.max_attempts) != (expect["deadline_ms"], expect["max_attempts"]):
        problems.append(f"deadline {shown.deadline} s, {shown.max_attempts} attempts")
    # A call made inside such a context runs under it: its first attempt's bound is the
    # deadline (an attempt timeout aside), and it makes max_attempts attempts at most.
    bounds: List[Optional[float]] = []

    def fail() -> None:
        bounds.append(retryrs.current_attempt().remaining)  # type: ignore[union-attr]
        raise ConnectionError

    with testing.virtual_time(), propagation.context(timeout=left, is_retry=case["is_retry"], limit=None):
        try:
            r.replace(retry_on=ConnectionError).call(fail)
        except retryrs.RetryExhausted:
            pass
    if whole_ms(bounds[0]) != expect["deadline_ms"]:
        problems.append(f"inside the context the first attempt's bound is {bounds[0]} s")
    if expect["deadline_ms"] > 0 and len(bounds) != expect["max_attempts"]:
        problems.append(f"inside the context the call made {len(bounds)} attempts")
    return problems


class _Attempt:
    """What a client helper hands ``Outbound.headers``: an attempt's number and time left."""

    def __init__(self, left_ms: Optional[float], number: int) -> None:
        self.remaining = seconds(left_ms)
        self.number = number


def outbound(case: Dict[str, Any], expect: Dict[str, Any], build: Callable[..., Any]) -> List[str]:
    out = propagation.Outbound(mesh=case["mesh"], kind=case["kind"])
    ctx = propagation.context(is_retry=True, limit=None) if case["is_retry"] else None
    if ctx is not None:
        ctx.__enter__()
    try:
        got = out.headers("http://service.internal/", _Attempt(case["left_ms"], case["attempt"]))  # type: ignore[arg-type]
    finally:
        if ctx is not None:
            ctx.__exit__(None, None, None)
    want = [tuple(h) for h in expect["headers"]]
    return [] if [tuple(h) for h in got] == want else [f"headers {got}, expected {want}"]


def pushback(case: Dict[str, Any], expect: Dict[str, Any], build: Callable[..., Any]) -> List[str]:
    raw = _native.read_pushback([tuple(h) for h in case["headers"]])
    got_pushback = "dont_retry" if raw is retryrs.DONT_RETRY else whole_ms(raw)
    problems = [] if got_pushback == expect["pushback"] else [f"pushback {got_pushback!r}, expected {expect['pushback']!r}"]
    # Through the helpers' status verdict: a 503 to a GET is what the rules retry, to a
    # POST what they hand over.
    method = "GET" if case["verdict"] == "retry" else "POST"
    headers = _Headers(case["headers"])
    failure = response_failure(Rules(None, None), RequestAttempts(), method, "http://x/", None, None, 503, headers)
    if isinstance(failure, RetryableStatus):
        hint = failure.retry_after
        exact = hint.seconds if isinstance(hint, _native._ExactWait) else None
        verdict, wait = ("dont_retry", None) if hint is retryrs.DONT_RETRY else ("retry", whole_ms(exact))
    else:
        verdict, wait = "response", None
        if failure is not None and not isinstance(failure, ErrorStatus):
            problems.append(f"unexpected failure {failure!r}")
    if (verdict, wait) != (expect["verdict"], expect["wait_ms"]):
        problems.append(f"verdict {verdict}, wait {wait} ms; expected {expect['verdict']}, {expect['wait_ms']} ms")
    return problems


class _Headers(dict):  # type: ignore[type-arg]
    """Response headers as the clients give them: looked up ignoring case."""

    def __init__(self, pairs: List[List[str]]) -> None:
        super().__init__((k, v) for k, v in pairs)

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return next((v for k, v in self.items() if k.lower() == name.lower()), default)


def upward(case: Dict[str, Any], expect: Dict[str, Any], build: Callable[..., Any]) -> List[str]:
    mw = propagation.WSGIMiddleware(_record, observe_only=case["observe_only"])
    got = []
    for headers in case["requests"]:
        before = mw.stats()
        served = _served(mw, headers)
        after = mw.stats()
        if isinstance(served, str):
            got.append("refuse" if served.startswith("504") else f"status {served}")
        else:
            got.append(next((k for k, n in (("observed", "observed"), ("capped", "capped")) if after[n] > before[n]), "run"))
    return [] if got == expect["upward"] else [f"upward {got}, expected {expect['upward']}"]


def allowlist(case: Dict[str, Any], expect: Dict[str, Any], build: Callable[..., Any]) -> List[str]:
    out = propagation.Outbound(hosts=case["hosts"])
    got = bool(out.headers(f"http://{case['host']}/", _Attempt(1000, 1)))  # type: ignore[arg-type]
    return [] if got == expect["allows"] else [f"allows {case['host']!r}: {got}"]


RUNNERS = {"inbound": inbound, "margin": margin, "constrain": constrain, "outbound": outbound, "pushback": pushback, "upward": upward, "allowlist": allowlist}


def run(v: Dict[str, Any], build: Callable[[], Any]) -> List[str]:
    """The problems with one propagation vector (``build``: the vector's retrier)."""
    p = v["propagation"]
    kinds = [k for k in p if k != "expect"]
    if len(kinds) != 1 or kinds[0] not in RUNNERS:
        return [f"a propagation vector has one of {', '.join(KINDS)} besides expect, got {sorted(p)}"]
    return RUNNERS[kinds[0]](p[kinds[0]], p["expect"], build)
