"""``help()`` is where Python users read the reference: the docstrings of Retrier, its
``from_policy``, the budget and breaker classes and the HTTP helpers list every
parameter their signature takes, each as an entry ``name (type, default ...): meaning``."""

import inspect
import pydoc
import re

import pytest

import retryrs
import retryrs.http

from native_stub import stub_defaults


def documented(doc):
    """The names a Parameters section lists: lines that start `name (` (or `**name (`)."""
    return set(re.findall(r"^\s*\**([a-z_]+) \(", doc, re.M))


def parameters(obj):
    try:
        return [p for p in inspect.signature(obj).parameters if p != "self"]
    except ValueError:
        return list(stub_defaults(obj))


def undocumented(obj):
    doc = inspect.getdoc(obj) or ""
    return [name for name in parameters(obj) if name not in documented(doc)]


NATIVE = [
    retryrs.Retrier,
    retryrs.Retrier.from_policy,
    retryrs.CircuitBreaker,
    retryrs.RetryBudget,
    retryrs.RetryBudget.quota,
    retryrs.RetryBudget.ratio,
]
HELPERS = ["RetryingAdapter", "RetryingTransport", "AsyncRetryingTransport", "RetryMiddleware", "request_options"]


@pytest.mark.parametrize("obj", NATIVE, ids=lambda o: o.__qualname__)
def test_native_classes_document_every_parameter(obj):
    assert parameters(obj), "a signature to check the docstring against"
    assert undocumented(obj) == []


@pytest.mark.parametrize("name", HELPERS)
def test_http_helpers_document_every_parameter(name):
    obj = getattr(retryrs.http, name)
    assert undocumented(obj) == []


def test_help_of_retrier_shows_each_knob_with_its_default():
    text = pydoc.render_doc(retryrs.Retrier, renderer=pydoc.plaintext)
    for name in parameters(retryrs.Retrier):
        assert re.search(rf"\b{name} \(", text), f"help(Retrier) does not list {name}"
    assert "max_attempts (int, default 5)" in text
    assert "deadline (Optional[float], default 15.0)" in text


def test_the_check_finds_an_undocumented_parameter():
    def f(alpha, beta=1):
        """Parameters
        ----------
        alpha (int): documented.
        """

    assert undocumented(f) == ["beta"]
