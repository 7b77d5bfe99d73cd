"""Prometheus metrics from retry events (the extra ``retryrs[prometheus]``, which brings
``prometheus_client``):

    import retryrs, retryrs.prometheus

    r = retryrs.Retrier(name="rates", on_event=retryrs.prometheus.listener())

``retryrs_calls_total{retrier, outcome, reason, error_type}``,
``retryrs_retries_total{retrier, error_type}`` and the histogram
``retryrs_retry_delay_seconds{retrier}``; with a circuit breaker also the gauge
``retryrs_breaker_state{retrier}`` (0 closed, 1 open, 2 half-open) and
``retryrs_breaker_rejections_total{retrier}``; docs/observability.md has the table.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar

try:
    import prometheus_client
    from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
except ImportError as e:  # pragma: no cover - exercised by a subprocess test
    raise ImportError(
        "retryrs.prometheus needs prometheus_client: pip install 'retryrs[prometheus]'"
    ) from e

from . import _metrics as m
from ._native import Event

__all__ = ["listener"]

_Families = Tuple[Counter, Counter, Histogram]
# One set of metrics per registry and namespace: a second listener (another retrier)
# shares them, since a registry refuses a name twice. Weak, so a dropped registry goes.
_families: "weakref.WeakKeyDictionary[CollectorRegistry, Dict[str, _Families]]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _prom_name(otel_name: str, namespace: str) -> str:
    # "retryrs.retry.delay" -> "<namespace>_retry_delay"
    return namespace + "_" + otel_name.split(".", 1)[1].replace(".", "_")


def _families_for(registry: CollectorRegistry, namespace: str) -> _Families:
    with _lock:
        per_registry = _families.setdefault(registry, {})
        families = per_registry.get(namespace)
        if families is None:
            calls = Counter(
                _prom_name(m.CALLS, namespace), m.CALLS_HELP,
                (m.LABEL_RETRIER, m.LABEL_OUTCOME, m.LABEL_REASON, m.LABEL_ERROR_TYPE),
                registry=registry,
            )
            retries = Counter(
                _prom_name(m.RETRIES, namespace), m.RETRIES_HELP,
                (m.LABEL_RETRIER, m.LABEL_ERROR_TYPE), registry=registry,
            )
            delay = Histogram(
                _prom_name(m.RETRY_DELAY, namespace), m.RETRY_DELAY_HELP, (m.LABEL_RETRIER,),
                unit="seconds", buckets=m.DELAY_BUCKETS, registry=registry,
            )
            families = per_registry[namespace] = (calls, retries, delay)
        return families


_breaker_families: "weakref.WeakKeyDictionary[CollectorRegistry, Dict[str, Tuple[Gauge, Counter]]]" = weakref.WeakKeyDictionary()


def _breaker_families_for(registry: CollectorRegistry, namespace: str) -> Tuple[Gauge, Counter]:
    """The breaker's metrics, registered on first use (a retrier without a breaker adds none)."""
    with _lock:
        per_registry = _breaker_families.setdefault(registry, {})
        families = per_registry.get(namespace)
        if families is None:
            state = Gauge(
                _prom_name(m.BREAKER_STATE, namespace), m.BREAKER_STATE_HELP, (m.LABEL_RETRIER,), registry=registry,
            )
            rejections = Counter(
                _prom_name(m.BREAKER_REJECTIONS, namespace), m.BREAKER_REJECTIONS_HELP, (m.LABEL_RETRIER,),
                registry=registry,
            )
            families = per_registry[namespace] = (state, rejections)
        return families


_F = TypeVar("_F", Counter, Gauge, Histogram)


def _cached(family: _F) -> Callable[..., _F]:
    """family.labels(...), remembered: prometheus_client validates and locks on every
    lookup, and a listener sees few distinct label sets."""
    children: Dict[Tuple[str, ...], _F] = {}

    def labels(*values: str) -> _F:
        found = children.get(values)
        if found is None:
            found = children[values] = family.labels(*values)
        return found

    return labels


def listener(registry: Optional[CollectorRegistry] = None, namespace: str = "retryrs") -> Callable[[Event], None]:
    """A listener for ``Retrier(on_event=...)`` that counts calls and retries and observes
    retry waits in ``registry`` (default: prometheus_client's global ``REGISTRY``).
    Listeners made for the same registry and namespace share one set of metrics, so one
    listener per retrier (or one for all) both work."""
    if not isinstance(namespace, str) or not namespace:
        raise ValueError(f"namespace must be a non-empty str, got {namespace!r}")
    if registry is None:
        registry = prometheus_client.REGISTRY
    elif not isinstance(registry, CollectorRegistry):
        raise TypeError(f"registry must be a prometheus_client.CollectorRegistry, got {registry!r}")
    calls, retries, delay = _families_for(registry, namespace)
    call_child, retry_child, delay_child = _cached(calls), _cached(retries), _cached(delay)
    outcomes, failed, error_type = m.OUTCOMES, m.FAILED_OUTCOMES, m.error_type  # closure reads, not module lookups
    breaker_states = m.BREAKER_STATES
    breaker: Dict[str, Callable[..., Any]] = {}

    def breaker_children() -> Dict[str, Callable[..., Any]]:
        if not breaker:
            state, rejections = _breaker_families_for(registry, namespace)
            breaker.update(state=_cached(state), rejections=_cached(rejections))
        return breaker

    def on_event(event: Event) -> None:
        kind = event.kind
        if kind == "retrying":
            retry_child(event.name, error_type(event.error)).inc()
            delay_child(event.name).observe(event.delay or 0.0)
        elif kind in outcomes:
            failure = error_type(event.error) if kind in failed else ""
            call_child(event.name, kind, event.reason or "", failure).inc()
            if event.reason == m.REFUSED_REASON:
                breaker_children()["rejections"](event.name).inc()
        elif kind in breaker_states:
            breaker_children()["state"](event.name).set(breaker_states[kind])

    return on_event
