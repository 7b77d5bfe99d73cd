"""How a pickled Retrier comes back: by its options, as the constructor takes them."""

from __future__ import annotations

from typing import Any, Dict, Literal

from . import _native


def retrier(options: Dict[str, Any]) -> _native.Retrier:
    return _native.Retrier(**options)


def breaker(model: Literal["consecutive", "sampling", "count"], options: Dict[str, Any]) -> _native.CircuitBreaker:
    return _native.CircuitBreaker(model, **options)
