"""OpenTelemetry metrics and span events from retry events (the extra ``retryrs[otel]``,
which brings ``opentelemetry-api``; the application brings the SDK and exporters):

    import retryrs, retryrs.otel

    r = retryrs.Retrier(name="rates", on_event=retryrs.otel.listener())

Counters ``retryrs.calls`` and ``retryrs.retries``, the histogram ``retryrs.retry.delay``
(s), and on the current span one ``retryrs.retry`` event per retry; with a circuit
breaker also the gauge ``retryrs.breaker.state`` (0 closed, 1 open, 2 half-open) and the
counter ``retryrs.breaker.rejections``; docs/observability.md has the table.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

try:
    from opentelemetry import metrics, trace
    from opentelemetry.util.types import Attributes
except ImportError as e:  # pragma: no cover - exercised by a subprocess test
    raise ImportError("retryrs.otel needs opentelemetry-api: pip install 'retryrs[otel]'") from e

from . import _metrics as m
from ._native import Event, __version__

__all__ = ["listener", "record_resend_count", "resend_count_hook", "ResendCountSpanProcessor", "RESEND_COUNT"]

#: OpenTelemetry's HTTP attribute for a resent request (semconv v1.23+, stable).
RESEND_COUNT = "http.request.resend_count"


def listener(
    meter_provider: Optional[metrics.MeterProvider] = None,
    *,
    span_events: bool = True,
) -> Callable[[Event], None]:
    """A listener for ``Retrier(on_event=...)``: the instruments of meter ``retryrs`` from
    ``meter_provider`` (default: the global one), and, with ``span_events``, a
    ``retryrs.retry`` event on the current span (if it records) for each retry. No tracer
    is needed for that: the span is whichever the caller's code made current."""
    if meter_provider is not None and not callable(getattr(meter_provider, "get_meter", None)):
        raise TypeError(f"meter_provider must be an OpenTelemetry MeterProvider, got {meter_provider!r}")
    meter = metrics.get_meter("retryrs", __version__, meter_provider=meter_provider)
    calls = meter.create_counter(m.CALLS, unit=m.CALLS_UNIT, description=m.CALLS_HELP)
    retries = meter.create_counter(m.RETRIES, unit=m.RETRIES_UNIT, description=m.RETRIES_HELP)
    delay = meter.create_histogram(
        m.RETRY_DELAY, unit=m.RETRY_DELAY_UNIT, description=m.RETRY_DELAY_HELP,
        explicit_bucket_boundaries_advisory=m.DELAY_BUCKETS,
    )
    # The attribute sets are few (retrier x outcome x reason x error type): built once each.
    call_attrs: Dict[Tuple[str, str, Optional[str], Optional[str]], Attributes] = {}
    retry_attrs: Dict[Tuple[str, str], Attributes] = {}
    # The breaker's instruments, made on the first breaker event (none without a breaker).
    breaker: Dict[str, Any] = {}

    def breaker_instruments() -> Dict[str, Any]:
        if not breaker:
            breaker["state"] = meter.create_gauge(
                m.BREAKER_STATE, unit=m.BREAKER_STATE_UNIT, description=m.BREAKER_STATE_HELP,
            )
            breaker["rejections"] = meter.create_counter(
                m.BREAKER_REJECTIONS, unit=m.BREAKER_REJECTIONS_UNIT, description=m.BREAKER_REJECTIONS_HELP,
            )
        return breaker

    def on_event(event: Event) -> None:
        kind = event.kind
        if kind == "retrying":
            error_type = m.error_type(event.error)
            key = (event.name, error_type)
            attrs = retry_attrs.get(key)
            if attrs is None:
                attrs = retry_attrs[key] = {m.ATTR_RETRIER: event.name, m.ATTR_ERROR_TYPE: error_type}
            wait = event.delay or 0.0
            retries.add(1, attrs)
            delay.record(wait, {m.ATTR_RETRIER: event.name})
            if span_events:
                span = trace.get_current_span()
                if span.is_recording():
                    span.add_event(m.RETRY_SPAN_EVENT, {
                        m.ATTR_RETRIER: event.name,
                        m.ATTR_ATTEMPT: event.attempt,
                        m.RETRY_DELAY: wait,
                        m.ATTR_ERROR_TYPE: error_type,
                    })
        elif kind in m.OUTCOMES:
            reason = event.reason
            failure = m.error_type(event.error) if kind in m.FAILED_OUTCOMES else None
            ckey = (event.name, kind, reason, failure)
            attrs = call_attrs.get(ckey)
            if attrs is None:
                built = {m.ATTR_RETRIER: event.name, m.ATTR_OUTCOME: kind}
                if reason is not None:
                    built[m.ATTR_REASON] = reason
                if failure is not None:
                    built[m.ATTR_ERROR_TYPE] = failure
                attrs = call_attrs[ckey] = built
            calls.add(1, attrs)
            if reason == m.REFUSED_REASON:
                breaker_instruments()["rejections"].add(1, {m.ATTR_RETRIER: event.name})
        elif kind in m.BREAKER_STATES:
            breaker_instruments()["state"].set(m.BREAKER_STATES[kind], {m.ATTR_RETRIER: event.name})

    return on_event


def record_resend_count(attempt: int, span: Optional[trace.Span] = None) -> None:
    """Sets ``http.request.resend_count`` on ``span`` (default: the current span) for
    attempt ``attempt`` of an HTTP request: ``attempt - 1`` from the second attempt on,
    nothing on the first (OpenTelemetry sets it on resends only). For HTTP helpers that
    make one span per physical request."""
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise ValueError(f"attempt must be an int >= 1, got {attempt!r}")
    if attempt == 1:
        return
    target = span if span is not None else trace.get_current_span()
    target.set_attribute(RESEND_COUNT, attempt - 1)


def _resend_count() -> int:
    from ._http_common import RESEND_COUNT as current

    return current.get()


def resend_count_hook(span: trace.Span, *_: object) -> None:
    """A ``request_hook`` for the client's own OpenTelemetry instrumentation, which makes
    one span per physical request: sets ``http.request.resend_count`` on that span when
    retryrs.http is resending (nothing on a first attempt)::

        HTTPXClientInstrumentor().instrument(request_hook=retryrs.otel.resend_count_hook)
        RequestsInstrumentor().instrument(request_hook=retryrs.otel.resend_count_hook)
        AioHttpClientInstrumentor().instrument(request_hook=retryrs.otel.resend_count_hook)

    (httpx's instrumentation wraps the transport that sends, so it makes a span per
    attempt of ``RetryingTransport``; requests' wraps ``Session.send``, one span around
    all attempts, which retryrs.http marks itself since it is current.)"""
    n = _resend_count()
    if n and span.is_recording():
        span.set_attribute(RESEND_COUNT, n)


try:
    from opentelemetry.sdk.trace import SpanProcessor as _SpanProcessor
except ImportError:  # pragma: no cover - the SDK is the application's
    _SpanProcessor = object  # type: ignore[assignment,misc]


class ResendCountSpanProcessor(_SpanProcessor):
    """The same as ``resend_count_hook`` for every instrumentation at once, without
    hooks: add it to the SDK's ``TracerProvider``
    (``provider.add_span_processor(ResendCountSpanProcessor())``) and each client span
    (``SpanKind.CLIENT``) started while retryrs.http resends a request gets
    ``http.request.resend_count``. Needs opentelemetry-sdk."""

    def on_start(self, span: trace.Span, parent_context: object = None) -> None:
        n = _resend_count()
        if n and getattr(span, "kind", None) == trace.SpanKind.CLIENT:
            span.set_attribute(RESEND_COUNT, n)

    def on_end(self, span: object) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
