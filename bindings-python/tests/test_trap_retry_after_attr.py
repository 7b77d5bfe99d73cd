"""Trap 7: the default reader of an exception's `retry_after` attribute ignores what it
cannot use (a method, a dict, a bool) instead of ending the call with a TypeError, and
accepts bytes as parse_retry_after does."""

import os
import subprocess
import sys

import pytest

from retryrs import Retrier


class WithMethod(ConnectionError):
    def retry_after(self):
        return 3


class WithAttr(ConnectionError):
    def __init__(self, value):
        super().__init__("down")
        self.retry_after = value


def delays_of(exc_factory):
    delays = []
    calls = []

    def f():
        calls.append(1)
        if len(calls) == 1:
            raise exc_factory()
        return "ok"

    r = Retrier(jitter="none", initial_delay=0.01, on_event=lambda e: delays.append(e.delay) if e.kind == "retrying" else None)
    assert r.call(f) == "ok"
    return delays


@pytest.mark.parametrize("factory", [WithMethod, lambda: WithAttr({"seconds": 3}), lambda: WithAttr(True), lambda: WithAttr(object())])
def test_an_unusable_attribute_is_no_hint(virtual, factory):
    assert delays_of(factory) == [0.01]


def test_bytes_are_a_retry_after_header(virtual):
    assert delays_of(lambda: WithAttr(b"2")) == [2.0]


def test_a_hook_that_returns_garbage_is_still_an_error(virtual):
    def f():
        raise ConnectionError("down")

    with pytest.raises(TypeError, match="retry_after"):
        Retrier(retry_after=lambda e: {"bad": 1}).call(f)


class WithProperty(ConnectionError):
    @property
    def retry_after(self):
        return 2


class WithGetattr(ConnectionError):
    def __getattr__(self, name):
        if name == "retry_after":
            return 2
        raise AttributeError(name)


class Slotted(WithAttr):
    __slots__ = ()


def set_later():
    e = ConnectionError("down")
    e.retry_after = 2  # a plain exception given the attribute after it was made
    return e


def dict_replaced():
    e = ConnectionError("down")
    e.__dict__ = {"retry_after": 2}
    return e


@pytest.mark.parametrize(
    "factory", [WithProperty, WithGetattr, lambda: Slotted(2), lambda: WithAttr(2), set_later, dict_replaced]
)
def test_the_attribute_is_read_wherever_the_exception_keeps_it(virtual, factory):
    # The instance dict is found without building one (see own_attr.rs); a class that
    # supplies the attribute itself is asked.
    assert delays_of(factory) == [2.0]


def test_an_exception_without_the_attribute_gets_the_policys_delay(virtual):
    assert delays_of(lambda: ConnectionError("down")) == [0.01]


def test_many_exception_classes_are_each_read_correctly(virtual):
    # Past the classes whose layout is remembered, a class is looked up each time.
    classes = [type(f"E{i}", (ConnectionError,), {}) for i in range(100)]
    for i, cls in enumerate(classes):
        def make(cls=cls, i=i):
            e = cls("down")
            if i % 2:
                e.retry_after = 2
            return e

        assert delays_of(make) == ([2.0] if i % 2 else [0.01])


def in_child(source):
    """What `source` prints, run in a fresh interpreter that can import this module: a
    crash fails the test rather than the run, and no other test's classes are seen."""
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {here!r})\n{source}"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


# A metaclass answers class attributes, `__dictoffset__` included: the instance dict is
# found through the type's own slot, never the metaclass's answer (a made-up offset was
# dereferenced: a crash from pure Python).
_METACLASS_CHILD = """
import retryrs
from test_trap_retry_after_attr import delays_of
for answer in ("12", "2**40", "'nope'", "1/0"):
    class Meta(type):
        __dictoffset__ = property(lambda cls, a=answer: eval(a))
    class E(ConnectionError, metaclass=Meta):
        def __init__(self, hint=None):
            super().__init__("boom")
            if hint is not None:
                self.retry_after = hint
    with retryrs.testing.virtual_time():
        assert delays_of(E) == [0.01], answer
        assert delays_of(lambda: E(0.5)) == [0.5], answer
    try:
        retryrs.Retrier(retry_on=lambda e: False).call(lambda: (_ for _ in ()).throw(E()))
    except E:
        pass
print("held")
"""


def test_a_metaclass_cannot_make_up_where_the_instance_dict_is():
    assert in_child(_METACLASS_CHILD) == "held"


# pytest's monkeypatch.setattr(Error, "retry_after", ..., raising=False) in a later test:
# the answer "does this class supply retry_after?" is each retrier's own (delays_of makes
# a retrier per call). In a fresh process: a process-wide table that other tests filled
# would hide a stale answer.
_LATER_CHILD = """
import retryrs
from test_trap_retry_after_attr import delays_of
class Throttled(ConnectionError):
    pass
with retryrs.testing.virtual_time():
    first = delays_of(Throttled)
    Throttled.retry_after = 5
    print(first, delays_of(Throttled))
"""


def test_a_class_given_retry_after_later_is_seen_by_a_retrier_made_after():
    assert in_child(_LATER_CHILD) == "[0.01] [5.0]"
