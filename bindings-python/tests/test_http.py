"""The seed scenario against a real local HTTP server (scripts/flaky_server.py in a
thread): 503, 503, 429 with Retry-After: 1, then 200; and the core's HTTP classifier."""

import os
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

import retryrs

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import flaky_server  # noqa: E402


class HttpStatus(Exception):
    def __init__(self, status, retry_after):
        super().__init__(f"HTTP {status}")
        self.status, self.retry_after = status, retry_after


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.read().decode()
    except urllib.error.HTTPError as e:
        header = e.headers.get("Retry-After")
        e.close()
        raise HttpStatus(e.code, retryrs.parse_retry_after(header) if header else None) from None


def test_seed_scenario_gets_the_rate_on_attempt_4_after_honouring_retry_after():
    server, base = flaky_server.serve()
    try:
        events = []
        r = retryrs.Retrier(
            retry_on=lambda e: isinstance(e, HttpStatus) and retryrs.is_retryable_status(e.status),
            name="rates",
            seed=42,
            on_event=events.append,
        )
        url = f"{base}/{uuid.uuid4().hex}/rates/EURUSD"
        t0 = time.monotonic()
        assert r.call(fetch, url) == "EUR/USD 1.0842"
        took = time.monotonic() - t0
    finally:
        server.shutdown()
    retrying = [e for e in events if e.kind == "retrying"]
    assert [e.error.status for e in retrying] == [503, 503, 429]
    assert retrying[2].delay >= 1.0
    assert events[-1].kind == "success" and events[-1].attempt == 4
    assert took >= 1.0


def test_classify_http_is_the_cores_rule_and_names_bad_input():
    assert retryrs.classify_http("GET", status=503) == "retry"
    assert retryrs.classify_http("POST", status=503) == "response"
    assert retryrs.classify_http("POST", failure="connect") == "retry"
    assert retryrs.classify_http("POST", failure="network") == "fail"
    assert retryrs.classify_http("POST", status=503, retry_methods=["post"]) == "retry"
    assert retryrs.classify_http("GET", status=409, retry_statuses=[409]) == "retry"
    with pytest.raises(ValueError, match="exactly one of status or failure"):
        retryrs.classify_http("GET")
    with pytest.raises(ValueError, match="exactly one of status or failure"):
        retryrs.classify_http("GET", status=503, failure="connect")
    with pytest.raises(ValueError, match="failure must be 'connect' or 'network'"):
        retryrs.classify_http("GET", failure="dns")
    with pytest.raises(TypeError, match="status must be an int"):
        retryrs.classify_http("GET", status=True)
    with pytest.raises(ValueError, match="status must be an HTTP status"):
        retryrs.classify_http("GET", status=70000)
    with pytest.raises(ValueError, match="retry_statuses"):
        retryrs.classify_http("GET", status=503, retry_statuses=[-1])
