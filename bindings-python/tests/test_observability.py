"""retryrs.prometheus and retryrs.otel against the real libraries, on the scenario
tests/observability/scenario.json describes (shared with the Node suite, so both hosts
must produce the same names, labels, units and counts), in virtual time."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

import retryrs
import retryrs.otel
import retryrs.prometheus
from retryrs import CancelToken, Retrier, RetryCancelled, RetryExhausted, testing

SCENARIO = json.loads((Path(__file__).parents[2] / "tests/observability/scenario.json").read_text())
ERRORS = {"ConnectionError": ConnectionError, "ValueError": ValueError}


def scenario_retrier(on_event):
    spec = SCENARIO["retrier"]
    return Retrier(
        name=spec["name"], max_attempts=spec["maxAttempts"], initial_delay=spec["initialDelayS"],
        multiplier=spec["multiplier"], jitter=spec["jitter"], deadline=spec["deadline"],
        retry_on=ConnectionError, on_event=on_event,
    )


def run_scenario(on_event):
    """Every call of the scenario, in virtual time (the 0.6 s of waits take none)."""
    r = scenario_retrier(on_event)
    with testing.virtual_time():
        for call in SCENARIO["calls"]:
            outcomes = iter(call["attempts"])

            def attempt():
                step = next(outcomes)
                if step == "ok":
                    return "paid"
                raise ERRORS[step](step)

            try:
                r.call(attempt)
            except (RetryExhausted, ValueError):
                pass
            assert next(outcomes, None) is None, "every scripted attempt ran"


def prometheus_samples(registry):
    """name -> list of (labels without empty ones, value), from the text exposition."""
    text = generate_latest(registry).decode()
    # prometheus_client also exposes a `<name>_created` timestamp per series (prom-client
    # does not); they are the library's, not retryrs' metrics.
    families = {f.name: f for f in text_string_to_metric_families(text) if not f.name.endswith("_created")}
    samples = [(s.name, {k: v for k, v in s.labels.items() if v != ""}, s.value)
               for f in families.values() for s in f.samples]
    return families, samples


def test_prometheus_counts_the_scenario_exactly():
    registry = CollectorRegistry()
    run_scenario(retryrs.prometheus.listener(registry=registry))
    families, samples = prometheus_samples(registry)
    assert sorted(families) == sorted(SCENARIO["prometheus"]["families"])
    for want in SCENARIO["prometheus"]["samples"]:
        got = [v for (n, labels, v) in samples if n == want["name"] and labels == want["labels"]]
        assert got == [pytest.approx(want["value"])], want
    # Nothing else counted: one series per outcome, one for retries.
    assert len([s for s in samples if s[0] == "retryrs_calls_total"]) == 3
    assert len([s for s in samples if s[0] == "retryrs_retries_total"]) == 1
    buckets = [s[1]["le"] for s in samples if s[0] == "retryrs_retry_delay_seconds_bucket"]
    assert [float(b) for b in buckets[:-1]] == SCENARIO["otel"]["bucketBoundaries"]


def test_prometheus_listeners_share_one_set_of_metrics_per_registry():
    registry = CollectorRegistry()
    first = retryrs.prometheus.listener(registry=registry)
    second = retryrs.prometheus.listener(registry=registry)  # a second retrier: no "duplicated timeseries"
    run_scenario(first)
    run_scenario(second)
    _, samples = prometheus_samples(registry)
    assert [v for (n, _, v) in samples if n == "retryrs_retries_total"] == [8]
    other = retryrs.prometheus.listener(registry=registry, namespace="payments")
    run_scenario(other)
    families, _ = prometheus_samples(registry)
    assert "payments_calls" in families and "retryrs_calls" in families


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="namespace must be a non-empty str, got ''"):
        retryrs.prometheus.listener(registry=CollectorRegistry(), namespace="")
    with pytest.raises(TypeError, match="registry must be a prometheus_client.CollectorRegistry, got 'default'"):
        retryrs.prometheus.listener(registry="default")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="meter_provider must be an OpenTelemetry MeterProvider, got 'global'"):
        retryrs.otel.listener(meter_provider="global")  # type: ignore[arg-type]


@pytest.fixture
def otel():
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    spans = InMemorySpanExporter()
    tracers = TracerProvider()
    tracers.add_span_processor(SimpleSpanProcessor(spans))
    yield reader, meters, tracers.get_tracer("test"), spans
    meters.shutdown()
    tracers.shutdown()


def otel_metrics(reader):
    data = reader.get_metrics_data()
    scopes = [sm for rm in data.resource_metrics for sm in rm.scope_metrics]
    assert [s.scope.name for s in scopes] == [SCENARIO["otel"]["meter"]]
    assert scopes[0].scope.version == retryrs.__version__
    return {metric.name: metric for metric in scopes[0].metrics}


def test_otel_metrics_hold_the_scenario_exactly(otel):
    reader, meters, tracer, _ = otel
    run_scenario(retryrs.otel.listener(meter_provider=meters))
    metrics = otel_metrics(reader)
    assert sorted(metrics) == sorted(i["name"] for i in SCENARIO["otel"]["instruments"])
    for inst in SCENARIO["otel"]["instruments"]:
        metric = metrics[inst["name"]]
        assert metric.unit == inst["unit"]
        points = {json.dumps(dict(p.attributes), sort_keys=True): p for p in metric.data.data_points}
        assert len(points) == len(inst["points"]), inst["name"]
        for want in inst["points"]:
            point = points[json.dumps(want["attributes"], sort_keys=True)]
            if inst["type"] == "sum":
                assert metric.data.is_monotonic
                assert point.value == want["value"]
            else:
                assert point.count == want["count"]
                assert point.sum == pytest.approx(want["sum"])
                assert (point.min, point.max) == (pytest.approx(want["min"]), pytest.approx(want["max"]))
                assert list(point.explicit_bounds) == SCENARIO["otel"]["bucketBoundaries"]


def test_otel_records_each_retry_on_the_current_span(otel):
    _, meters, tracer, spans = otel
    with tracer.start_as_current_span("checkout"):
        run_scenario(retryrs.otel.listener(meter_provider=meters))
    (span,) = spans.get_finished_spans()
    got = [{"name": e.name, "attributes": dict(e.attributes)} for e in span.events]
    assert got == SCENARIO["otel"]["spanEvents"]


def test_otel_span_events_can_be_turned_off_and_need_a_recording_span(otel):
    _, meters, tracer, spans = otel
    run_scenario(retryrs.otel.listener(meter_provider=meters))  # no current span: nothing to do
    with tracer.start_as_current_span("checkout"):
        run_scenario(retryrs.otel.listener(meter_provider=meters, span_events=False))
    (span,) = spans.get_finished_spans()
    assert list(span.events) == []


def test_otel_span_events_follow_the_asyncio_task(otel):
    import asyncio

    _, meters, tracer, spans = otel
    r = scenario_retrier(retryrs.otel.listener(meter_provider=meters))

    async def one(name):
        with tracer.start_as_current_span(name):
            failures = iter([ConnectionError("a")])

            async def attempt():
                err = next(failures, None)
                if err is not None:
                    raise err
                return name

            return await r.call_async(attempt)

    async def main():
        return await asyncio.gather(one("a"), one("b"))

    with testing.virtual_time():
        assert asyncio.run(main()) == ["a", "b"]
    by_name = {s.name: [e.name for e in s.events] for s in spans.get_finished_spans()}
    assert by_name == {"a": ["retryrs.retry"], "b": ["retryrs.retry"]}


def test_a_cancelled_call_counts_as_cancelled_without_an_error_type(otel):
    reader, meters, _, _ = otel
    registry = CollectorRegistry()
    token = CancelToken()
    token.cancel()
    r = Retrier(name="pay", on_event=[retryrs.prometheus.listener(registry=registry),
                                      retryrs.otel.listener(meter_provider=meters)])
    with pytest.raises(RetryCancelled):
        r.with_cancel(token).call(lambda: "never")
    _, samples = prometheus_samples(registry)
    assert [(l, v) for (n, l, v) in samples if n == "retryrs_calls_total"] == [
        ({"retrier": "pay", "outcome": "cancelled"}, 1.0)]
    (point,) = otel_metrics(reader)["retryrs.calls"].data.data_points
    assert dict(point.attributes) == {"retryrs.retrier.name": "pay", "retryrs.outcome": "cancelled"}


def test_listeners_compose_and_one_that_raises_spoils_none(otel, monkeypatch, caplog):
    reader, meters, _, _ = otel
    registry = CollectorRegistry()
    reported = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: reported.append(u.exc_value))

    def broken(event):
        raise RuntimeError("listener bug")

    caplog.set_level(logging.INFO, logger="retryrs")
    run_scenario([retryrs.log_events(), broken, retryrs.prometheus.listener(registry=registry),
                  retryrs.otel.listener(meter_provider=meters)])
    # One line per outcome worth a line (a failed attempt is told by the line after it):
    # 13 events, 7 lines.
    assert len(caplog.records) == 7
    assert len(reported) == 13 and all(str(e) == "listener bug" for e in reported)
    _, samples = prometheus_samples(registry)
    assert [v for (n, _, v) in samples if n == "retryrs_retries_total"] == [4]
    (point,) = otel_metrics(reader)["retryrs.retries"].data.data_points
    assert point.value == 4


def test_on_event_takes_a_list_or_tuple_of_callables_and_names_a_bad_one():
    seen = []
    for given in ([seen.append], (seen.append,), [seen.append, seen.append]):
        Retrier(on_event=given).call(lambda: 1)
    assert [e.kind for e in seen] == ["success"] * 4
    Retrier(on_event=[]).call(lambda: 1)  # no listener at all
    with pytest.raises(TypeError, match=r"on_event must be a callable event -> None, or a list or tuple of them; on_event\[1\] is 3"):
        Retrier(on_event=[print, 3])
    with pytest.raises(TypeError, match="or a list or tuple of them, got 'log'"):
        Retrier(on_event="log")


def test_record_resend_count_marks_resends_only(otel):
    _, _, tracer, spans = otel
    for attempt in (1, 2, 3):
        with tracer.start_as_current_span(f"GET #{attempt}"):
            retryrs.otel.record_resend_count(attempt)
    got = {s.name: s.attributes.get("http.request.resend_count") for s in spans.get_finished_spans()}
    assert got == {"GET #1": None, "GET #2": 1, "GET #3": 2}
    with pytest.raises(ValueError, match="attempt must be an int >= 1, got 0"):
        retryrs.otel.record_resend_count(0)


def test_error_type_is_the_qualified_class_name():
    from retryrs._metrics import error_type

    class Local(Exception):
        pass

    assert error_type(ConnectionError()) == "ConnectionError"
    assert error_type(json.JSONDecodeError("x", "", 0)) == "json.decoder.JSONDecodeError"
    assert error_type(Local()) == f"{__name__}.test_error_type_is_the_qualified_class_name.<locals>.Local"
    assert error_type(None) == "_OTHER"


BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("prometheus_client", "opentelemetry"):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None
    sys.meta_path.insert(0, Block())
""")


def test_retryrs_imports_and_works_without_the_optional_libraries():
    code = BLOCKER + textwrap.dedent("""
        import retryrs
        seen = []
        assert retryrs.Retrier(on_event=[seen.append, retryrs.log_events()]).call(lambda: 7) == 7
        assert [e.kind for e in seen] == ["success"]
        assert not any(m.split(".")[0] in ("prometheus_client", "opentelemetry") for m in sys.modules)
        for name in ("prometheus", "otel"):
            try:
                getattr(retryrs, name)
            except ImportError as e:
                print(e)
            else:
                raise AssertionError(name + " imported without its library")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "retryrs.prometheus needs prometheus_client: pip install 'retryrs[prometheus]'",
        "retryrs.otel needs opentelemetry-api: pip install 'retryrs[otel]'",
    ]


def test_integrations_load_on_first_attribute_use():
    code = "import sys, retryrs; assert 'retryrs.prometheus' not in sys.modules; " \
           "retryrs.prometheus.listener; retryrs.otel.listener; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out == "ok\n"
    with pytest.raises(AttributeError, match="module 'retryrs' has no attribute 'nope'"):
        retryrs.nope  # noqa: B018


def test_listener_lists_hold_no_extra_references_once_dropped():
    import gc

    def first(event):
        pass

    def second(event):
        pass

    before = (sys.getrefcount(first), sys.getrefcount(second))
    for _ in range(10_000):
        Retrier(on_event=[first, second]).call(lambda: 1)
    gc.collect()
    assert (sys.getrefcount(first), sys.getrefcount(second)) == before
