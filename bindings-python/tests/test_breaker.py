"""The circuit breaker shared by retriers, and the budget kinds (issue 27)."""

import asyncio
import http.server
import json
import threading
import urllib.request
from pathlib import Path

import pytest

import retryrs
from retryrs import CircuitBreaker, Retrier, RetryBudget, RetryExhausted, load_policies, testing


class Down:
    """A dependency that is down until `up` is set: counts every call it sees."""

    def __init__(self):
        self.calls, self.up = 0, False

    def __call__(self):
        self.calls += 1
        if not self.up:
            raise ConnectionError("503")
        return "ok"


def test_a_shared_breaker_opens_refuses_without_calling_half_opens_and_closes(virtual):
    breaker = CircuitBreaker(failures=2, break_duration=30)
    events = []
    a = Retrier(max_attempts=2, initial_delay=0, breaker=breaker, on_event=events.append, name="a")
    b = Retrier(max_attempts=3, initial_delay=0, breaker=breaker, name="b")
    down = Down()
    for r in (a, b):
        with pytest.raises(RetryExhausted) as info:
            r.call(down)
        assert info.value.reason == "attempts"
    assert down.calls == 5 and breaker.state == "open"
    # Refused at once: the function is not called; the error says why and for how long.
    with pytest.raises(RetryExhausted) as info:
        a.call(down)
    assert down.calls == 5
    err = info.value
    assert (err.reason, err.attempts, err.errors, err.breaker_state) == ("circuit_open", 0, (), "open")
    assert err.retry_in == pytest.approx(30.0)
    assert str(err) == "a: gave up after 0 attempts (circuit breaker open)"
    assert [e.kind for e in events][-1] == "exhausted" and events[-1].reason == "circuit_open"
    assert breaker.rejections == 1
    # The break is over (virtual time): the next call is a probe, and its success closes it.
    virtual.advance(29.999)
    assert breaker.state == "open" and breaker.retry_in == pytest.approx(0.001)
    virtual.advance(0.001)
    assert breaker.state == "half_open"
    down.up = True
    events.clear()
    assert a.call(down) == "ok"
    assert [e.kind for e in events] == ["breaker_half_open", "success", "breaker_closed"]
    assert breaker.state == "closed" and down.calls == 6
    assert a.breaker.state == "closed" and Retrier().breaker is None


def test_the_server_sees_no_request_while_the_breaker_is_open(virtual):
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.path)
            self.send_response(503)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/rates"
        breaker = CircuitBreaker(failures=1, break_duration=10)
        r = Retrier(max_attempts=2, initial_delay=0, breaker=breaker, retry_on=OSError)  # a 503 is an HTTPError
        fetch = lambda: urllib.request.urlopen(url, timeout=5).read()  # noqa: E731
        with pytest.raises(RetryExhausted):
            r.call(fetch)
        assert len(seen) == 2 and breaker.state == "open"
        with pytest.raises(RetryExhausted) as info:
            r.call(fetch)
        assert info.value.reason == "circuit_open" and len(seen) == 2
    finally:
        server.shutdown()
        server.server_close()


def test_async_calls_share_the_breaker(virtual):
    breaker = CircuitBreaker(failures=1, break_duration=5)
    r = Retrier(max_attempts=1, breaker=breaker)
    down = Down()

    async def call():
        return down()

    async def main():
        with pytest.raises(RetryExhausted):
            await r.call_async(call)
        with pytest.raises(RetryExhausted) as info:
            await r.call_async(call)
        assert info.value.reason == "circuit_open" and down.calls == 1
        virtual.advance(5)
        down.up = True
        assert await r.call_async(call) == "ok"

    asyncio.run(main())
    assert breaker.state == "closed"


def test_a_failed_probe_opens_it_again_for_a_growing_break(virtual):
    breaker = CircuitBreaker(failures=1, break_duration=1, break_multiplier=2, max_break_duration=3)
    r = Retrier(max_attempts=1, breaker=breaker)
    for want in (1, 2, 3, 3):
        with pytest.raises(RetryExhausted) as info:
            r.call(Down())
        assert info.value.reason == "attempts"
        assert breaker.retry_in == pytest.approx(want)
        virtual.advance(want)


def test_the_sampling_model_and_a_permanent_failure(virtual):
    breaker = CircuitBreaker("sampling", failure_ratio=0.5, minimum_throughput=2, sampling_duration=10)
    r = Retrier(max_attempts=1, breaker=breaker, retry_on=(OSError,))
    with pytest.raises(ValueError):
        r.call(lambda: int("x"))  # permanent: the dependency answered
    assert breaker.state == "closed"
    with pytest.raises(RetryExhausted):
        r.call(Down())
    assert breaker.state == "open", "1 failure of 2 calls reaches 0.5"
    assert breaker.model == "sampling"


def test_bad_breaker_arguments_are_named():
    with pytest.raises(ValueError, match="failures must be a whole number >= 1, got 0"):
        CircuitBreaker(failures=0)
    with pytest.raises(ValueError, match="failure_ratio"):
        CircuitBreaker("sampling", failure_ratio=1.5)
    with pytest.raises(ValueError, match="model must be"):
        CircuitBreaker("leaky")
    with pytest.raises(TypeError, match="failure_ratio belongs to model=\"sampling\" or model=\"count\""):
        CircuitBreaker(failure_ratio=0.5)
    with pytest.raises(TypeError, match="breaker must be a retryrs.CircuitBreaker"):
        Retrier(breaker=RetryBudget())


def test_a_documents_breaker_and_budget_kinds():
    doc = load_policies(
        '{"policies": {"default": {"breaker": "db"}, "a": {"budget": "aws"}, "b": {"budget": "finagle"}},'
        ' "budgets": {"aws": {"kind": "quota"}, "finagle": {"kind": "ratio", "percent_can_retry": 0.5}},'
        ' "breakers": {"db": {"model": "consecutive", "failures": 1, "break_duration": "10s"}}}'
    )
    a, b = Retrier.from_policy(doc["a"]), Retrier.from_policy(doc["b"])
    assert a.budget.kind == "quota" and a.budget.tokens == 500 and b.budget.kind == "ratio"
    with testing.virtual_time():
        with pytest.raises(RetryExhausted):
            a.call(Down())
        with pytest.raises(RetryExhausted) as info:
            b.call(Down())
    assert info.value.reason == "circuit_open", "one breaker for both policies"


def test_the_aws_quota_in_a_total_outage(virtual):
    quota = RetryBudget.quota()
    r = Retrier(max_attempts=3, initial_delay=0, budget=quota)
    down = Down()
    reasons = []
    for _ in range(60):
        with pytest.raises(RetryExhausted) as info:
            r.call(down)
        reasons.append(info.value.reason)
    # 500 / 5: 100 retries (50 calls retried twice), then every call fails at once.
    assert down.calls == 60 + 100 and quota.tokens == 0
    assert reasons.count("attempts") == 50 and reasons.count("budget") == 10
    down.up = True
    assert r.call(down) == "ok" and quota.tokens == 1
    with pytest.raises(ValueError, match="retry_cost"):
        RetryBudget.quota(retry_cost=0)
    assert "kind='quota'" not in repr(quota) and 'kind="quota"' in repr(quota)


def test_finagles_ratio_budget(virtual):
    # percent 0.5, no reserve: two calls pay for one retry.
    budget = RetryBudget.ratio(ttl=60, min_retries_per_sec=0, percent_can_retry=0.5)
    r = Retrier(max_attempts=2, initial_delay=0, budget=budget)
    down = Down()
    with pytest.raises(RetryExhausted) as info:
        r.call(down)
    assert info.value.reason == "budget" and down.calls == 1
    with pytest.raises(RetryExhausted) as info:
        r.call(down)
    assert info.value.reason == "attempts" and down.calls == 3
    with pytest.raises(ValueError, match="ttl"):
        RetryBudget.ratio(ttl=0.5)


BREAKER_SCENARIO = json.loads((Path(__file__).parents[2] / "tests/observability/breaker.json").read_text())


def run_breaker_scenario(on_event, check_state=lambda state: None):
    spec = BREAKER_SCENARIO["breaker"]
    breaker = CircuitBreaker(failures=spec["failures"], break_duration=spec["breakDurationMs"] / 1000)
    r = Retrier(name=BREAKER_SCENARIO["retrier"]["name"], max_attempts=BREAKER_SCENARIO["retrier"]["maxAttempts"],
                breaker=breaker, retry_on=ConnectionError, on_event=on_event)
    with testing.virtual_time() as clock:
        for call in BREAKER_SCENARIO["calls"]:
            clock.advance(call["atMs"] / 1000 - clock.now())
            steps = iter(call["attempts"])

            def attempt():
                step = next(steps)
                if step == "ok":
                    return "ok"
                raise ConnectionError(step)

            try:
                r.call(attempt)
            except RetryExhausted:
                pass
            assert next(steps, None) is None, "every scripted attempt ran, and no other"
            if "then" in call:
                check_state(call["then"]["state"])


def test_prometheus_shows_the_breakers_state_and_rejections():
    import retryrs.prometheus
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.parser import text_string_to_metric_families

    registry = CollectorRegistry()

    def samples():
        text = generate_latest(registry).decode()
        families = [f for f in text_string_to_metric_families(text) if not f.name.endswith("_created")]
        return families, [(s.name, {k: v for k, v in s.labels.items() if v != ""}, s.value) for f in families for s in f.samples]

    def state_is(want):
        _, got = samples()
        assert [v for n, _, v in got if n == "retryrs_breaker_state"] == [want]

    run_breaker_scenario(retryrs.prometheus.listener(registry=registry), state_is)
    families, got = samples()
    assert sorted(f.name for f in families) == sorted(BREAKER_SCENARIO["prometheus"]["families"])
    for want in BREAKER_SCENARIO["prometheus"]["samples"]:
        assert [v for n, labels, v in got if n == want["name"] and labels == want["labels"]] == [want["value"]], want
    # A retrier without a breaker registers no breaker metric.
    plain = CollectorRegistry()
    Retrier(on_event=retryrs.prometheus.listener(registry=plain)).call(lambda: 1)
    assert "retryrs_breaker_state" not in generate_latest(plain).decode()


def test_otel_shows_the_breakers_state_and_rejections():
    import retryrs.otel
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    try:
        run_breaker_scenario(retryrs.otel.listener(meter_provider=meters))
        data = reader.get_metrics_data()
        metrics = {mt.name: mt for rm in data.resource_metrics for sm in rm.scope_metrics for mt in sm.metrics}
        for inst in BREAKER_SCENARIO["otel"]["instruments"]:
            metric = metrics[inst["name"]]
            assert metric.unit == inst["unit"]
            points = [(dict(p.attributes), p.value) for p in metric.data.data_points]
            assert points == [(p["attributes"], p["value"]) for p in inst["points"]], inst["name"]
    finally:
        meters.shutdown()


def test_log_events_tells_the_breakers_moves(virtual, caplog):
    import logging

    breaker = CircuitBreaker(failures=1, break_duration=2)
    r = Retrier(name="db", max_attempts=1, breaker=breaker, on_event=retryrs.log_events())
    down = Down()
    with caplog.at_level(logging.INFO, logger="retryrs"):
        with pytest.raises(RetryExhausted):
            r.call(down)
        with pytest.raises(RetryExhausted):
            r.call(down)
        virtual.advance(2)
        down.up = True
        r.call(down)
    lines = [rec.getMessage() for rec in caplog.records]
    assert "db: circuit breaker opened for 2000 ms" in lines
    assert "db: refused, circuit breaker open (no attempt made)" in lines
    assert lines[-2:] == ["db: circuit breaker half-open", "db: circuit breaker closed"]


def test_a_request_sent_once_is_one_call_the_breaker_admits_and_counts(virtual):
    # A body that cannot be sent twice is one attempt of the Retrier (same breaker): it is
    # refused while the breaker is open, and half-open it is the probe whose outcome is
    # recorded (a probe taken and never reported would leave it refusing every call).
    httpx = pytest.importorskip("httpx")
    from retryrs.http import RetryingTransport

    breaker = CircuitBreaker(failures=1, break_duration=1)
    r = Retrier(max_attempts=1, breaker=breaker)
    with pytest.raises(RetryExhausted):
        r.call(Down())
    seen = []

    def handler(request):
        seen.append(request.method)
        return httpx.Response(200)

    with httpx.Client(transport=RetryingTransport(r, transport=httpx.MockTransport(handler))) as client:
        with pytest.raises(RetryExhausted) as info:
            client.post("http://test.invalid/upload", content=iter([b"once"]))
        assert info.value.reason == "circuit_open" and seen == [] and breaker.rejections == 1
        virtual.advance(1)
        assert breaker.state == "half_open"
        assert client.post("http://test.invalid/upload", content=iter([b"once"])).status_code == 200
        assert seen == ["POST"] and breaker.state == "closed"
        assert client.get("http://test.invalid/rates").status_code == 200
    assert seen == ["POST", "GET"] and breaker.state == "closed"


# Issue 35: the options Polly and resilience4j users look for (docs/breaker.md).


def test_a_count_window_judges_the_last_calls(virtual):
    breaker = CircuitBreaker("count", failure_ratio=0.5, minimum_calls=2, window_size=2)
    assert (breaker.model, breaker.state) == ("count", "closed")
    r = Retrier(max_attempts=1, initial_delay=0, breaker=breaker)
    down = Down()
    with pytest.raises(RetryExhausted):
        r.call(down)
    assert breaker.state == "closed", "1 call: under the minimum"
    down.up = True
    assert r.call(down) == "ok"
    assert breaker.state == "open", "1 failure of the last 2 reaches 0.5"


def test_permanent_failures_count_only_when_asked(virtual):
    def bad_request():
        raise ValueError("400")

    for count_permanent, state in ((False, "closed"), (True, "open")):
        breaker = CircuitBreaker(failures=2, count_permanent=count_permanent)
        r = Retrier(max_attempts=3, initial_delay=0, breaker=breaker, retry_on=lambda e: not isinstance(e, ValueError))
        for _ in range(2):
            with pytest.raises(ValueError):
                r.call(bad_request)
        assert breaker.state == state, count_permanent


def test_slow_calls_open_it_by_their_own_ratio(virtual):
    breaker = CircuitBreaker("count", minimum_calls=2, window_size=2, slow_call_duration=0.1, slow_call_ratio=0.5)
    r = Retrier(max_attempts=1, breaker=breaker)

    def slow():
        virtual.advance(0.1)
        return "ok"

    assert r.call(lambda: "ok") == "ok"
    assert breaker.state == "closed"
    assert r.call(slow) == "ok"
    assert breaker.state == "open", "every call succeeded; 1 of 2 took 100 ms"


def test_isolate_refuses_until_reset(virtual):
    breaker = CircuitBreaker(failures=1)
    r = Retrier(max_attempts=1, breaker=breaker)
    breaker.isolate()
    assert breaker.state == "isolated"
    virtual.advance(86400 * 2)
    calls = []
    with pytest.raises(RetryExhausted) as info:
        r.call(lambda: calls.append(1))
    assert (info.value.reason, info.value.breaker_state, calls) == ("circuit_open", "isolated", [])
    breaker.reset()
    assert breaker.state == "closed"
    assert r.call(lambda: "ok") == "ok"


def test_probes_judged_together(virtual):
    breaker = CircuitBreaker("count", failure_ratio=0.5, minimum_calls=1, window_size=1, break_duration=1,
                             half_open_probes=2, judge_all_probes=True)
    r = Retrier(max_attempts=1, breaker=breaker)
    down = Down()
    with pytest.raises(RetryExhausted):
        r.call(down)
    virtual.advance(1)
    down.up = True
    assert r.call(down) == "ok"
    assert breaker.state == "half_open", "one good probe of two decides nothing"
    down.up = False
    with pytest.raises(RetryExhausted):
        r.call(down)
    assert breaker.state == "open", "1 of 2 probes failed: 0.5 reaches the threshold"


def test_new_options_are_checked_and_pickled():
    with pytest.raises(TypeError, match='window_size belongs to model="count"'):
        CircuitBreaker(window_size=10)
    with pytest.raises(TypeError, match='failures belongs to model="consecutive"'):
        CircuitBreaker("count", failures=3)
    with pytest.raises(ValueError, match="slow_call_duration must be unset for a consecutive breaker"):
        CircuitBreaker(slow_call_duration=1)
    with pytest.raises(ValueError, match="window_size must be a whole number in"):
        CircuitBreaker("count", window_size=0)
    with pytest.raises(ValueError, match="slow_call_ratio"):
        CircuitBreaker("sampling", slow_call_ratio=2)
    for flag in ("per_attempt", "count_permanent", "judge_all_probes"):
        with pytest.raises(TypeError, match=f"CircuitBreaker {flag} must be True or False, got 1"):
            CircuitBreaker(**{flag: 1})
    import pickle

    b = CircuitBreaker("count", failure_ratio=0.25, minimum_calls=3, window_size=7, slow_call_duration=0.5,
                       count_permanent=True, judge_all_probes=True)
    b.isolate()
    copy = pickle.loads(pickle.dumps(b))
    assert (copy.model, copy.state) == ("count", "closed"), "a copy is a fresh breaker of the same configuration"
    assert copy.__reduce__()[1] == b.__reduce__()[1]
