"""Trap 7: the default reader of an exception's `retry_after` attribute ignores what it
cannot use (a method, a dict, a bool) instead of ending the call with a TypeError, and
accepts bytes as parse_retry_after does."""

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


# A metaclass answers class attributes, `__dictoffset__` included: the instance dict is
# found through the type's own slot, never the metaclass's answer (a made-up offset was
# dereferenced: a crash from pure Python). In a child process, so a crash fails the test
# rather than the run.
_METACLASS_CHILD = r'''
import retryrs
for answer in ("12", "2**40", "'nope'", "1/0"):
    class Meta(type):
        __dictoffset__ = property(lambda cls, a=answer: eval(a))
    class E(Exception, metaclass=Meta):
        pass
    calls = []
    def attempt():
        calls.append(1)
        if len(calls) == 1:
            raise E("boom")
        return "ok"
    r = retryrs.Retrier(retry_on=E, max_attempts=2, initial_delay=0, jitter="none")
    assert r.call(attempt) == "ok", answer
    try:
        retryrs.Retrier(retry_on=lambda e: False).call(lambda: (_ for _ in ()).throw(E("x")))
    except E:
        pass
    class Hinted(Exception, metaclass=Meta):
        def __init__(self):
            super().__init__("slow down")
            self.retry_after = 0.5
    waits = []
    seen = []
    def hinted():
        seen.append(1)
        if len(seen) == 1:
            raise Hinted()
        return "ok"
    r = retryrs.Retrier(retry_on=Hinted, max_attempts=2, initial_delay=0, jitter="none",
                        on_event=lambda e: waits.append(e.delay) if e.kind == "retrying" else None)
    with retryrs.testing.virtual_time():
        assert r.call(hinted) == "ok"
    assert waits == [0.5], (answer, waits)
print("held")
'''


def test_a_metaclass_cannot_make_up_where_the_instance_dict_is():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _METACLASS_CHILD], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "held"


_LATER_CHILD = r'''
import retryrs

class Throttled(ConnectionError):
    pass

def waited():
    waits = []
    calls = []
    def f():
        calls.append(1)
        if len(calls) == 1:
            raise Throttled()
        return "ok"
    r = retryrs.Retrier(retry_on=Throttled, max_attempts=2, initial_delay=0.01, jitter="none", max_retry_after=100,
                        on_event=lambda e: waits.append(e.delay) if e.kind == "retrying" else None)
    with retryrs.testing.virtual_time():
        assert r.call(f) == "ok"
    return waits

first = waited()
Throttled.retry_after = 5
print(first, waited())
'''


def test_a_class_given_retry_after_later_is_seen_by_a_retrier_made_after():
    # pytest's monkeypatch.setattr(Error, "retry_after", ..., raising=False) in a later
    # test: the answer "does this class supply retry_after?" is each retrier's own. In a
    # fresh process: a process-wide table that other tests filled would hide a stale one.
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _LATER_CHILD], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0.01] [5.0]"
