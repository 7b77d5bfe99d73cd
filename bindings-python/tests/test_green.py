"""Blocking retry waits under gevent / eventlet monkey-patching cooperate with the hub.

Each case runs in a fresh interpreter: patching must come first, and must not touch the
test process. gevent and eventlet are test requirements (requirements-test.txt) on every
supported CPython: a missing one fails here, it is not skipped."""

import json
import subprocess
import sys
import textwrap

import pytest

import retryrs._green

PRELUDE = {
    "gevent": """
        from gevent import monkey
        monkey.patch_all()
        import gevent
        spawn, sleep = gevent.spawn, gevent.sleep
        def kill(g):
            g.kill()  # (blocks until it is dead)
        def other_os_thread(fn):
            monkey.get_original("_thread", "start_new_thread")(fn, ())
    """,
    "eventlet": """
        import warnings
        warnings.simplefilter("ignore")
        import eventlet
        eventlet.monkey_patch()
        spawn, sleep, kill = eventlet.spawn, eventlet.sleep, eventlet.kill
        def other_os_thread(fn):
            eventlet.patcher.original("_thread").start_new_thread(fn, ())
    """,
}

CHILD = """
    import json, time
    from retryrs import CancelToken, Retrier, RetryCancelled

    ticks = []
    def heartbeat():
        while True:
            sleep(0.1)
            ticks.append(time.monotonic())
    spawn(heartbeat)
    sleep(0)

    def flaky_once():
        calls = []
        def attempt():
            calls.append(1)
            if len(calls) == 1:
                raise ConnectionError("down")
            return len(calls)
        return attempt

    def retrier(delay, **kw):
        return Retrier(retry_on=(ConnectionError,), max_attempts=3, initial_delay=delay, max_delay=delay,
                       jitter="none", deadline=None, **kw)

    def during(fn):
        start = time.monotonic()
        value = fn()
        end = time.monotonic()
        return {"value": value, "seconds": end - start, "ticks": sum(start <= t <= end for t in ticks)}

    out = {}
    # A 1 s wait in each blocking form.
    out["call"] = during(lambda: retrier(1.0).call(flaky_once()))
    out["decorated"] = during(retrier(1.0)(flaky_once()))
    def loop_form():
        attempt_fn = flaky_once()
        for attempt in retrier(1.0):
            with attempt:
                return attempt_fn()
    out["loop"] = during(loop_form)

    # A long wait ended by the token, fired by another green thread, then by another
    # OS thread (not a green one), then already fired when the wait starts.
    def cancelled_by(fire):
        token = CancelToken()
        fire(token)
        try:
            retrier(60.0).with_cancel(token).call(flaky_once())
        except RetryCancelled:
            return "RetryCancelled"
        return "returned"
    def from_green(token):
        spawn(lambda: (sleep(0.2), token.cancel()))
    def from_os_thread(token):
        def run():
            time.sleep(0.2)  # the original time.sleep in a real thread: see the prelude
            token.cancel()
        other_os_thread(run)
    out["cancel_green"] = during(lambda: cancelled_by(from_green))
    out["cancel_os_thread"] = during(lambda: cancelled_by(from_os_thread))
    def fired_before_wait(token):
        def attempt():
            token.cancel()
            raise ConnectionError("down")
        return attempt
    token = CancelToken()
    def cancel_before():
        try:
            retrier(60.0).with_cancel(token).call(fired_before_wait(token))
        except RetryCancelled:
            return "RetryCancelled"
    out["cancel_before"] = during(cancel_before)

    # Killing the waiting green thread ends the call at once.
    def killed():
        g = spawn(lambda: retrier(60.0).call(flaky_once()))
        sleep(0.2)
        kill(g)
        return g.dead
    out["kill"] = during(killed)
    print(json.dumps(out))
"""


def _run(library: str) -> dict:
    src = textwrap.dedent(PRELUDE[library]) + textwrap.dedent(CHILD)
    if library == "eventlet":
        # In a real OS thread eventlet's patched time.sleep would need a hub there.
        src = src.replace("time.sleep(0.2)  #", "eventlet.patcher.original('time').sleep(0.2)  #")
    else:
        src = src.replace("time.sleep(0.2)  #", "monkey.get_original('time', 'sleep')(0.2)  #")
    done = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("library", ["gevent", "eventlet"])
def test_blocking_waits_let_other_green_threads_run(library: str) -> None:
    out = _run(library)
    for form in ("call", "decorated", "loop"):
        # The wait really waited (1 s), and the 100 ms heartbeat kept ticking through it.
        assert out[form]["value"] == 2, (form, out)
        assert out[form]["seconds"] >= 0.99, (form, out)
        assert out[form]["ticks"] >= 8, (form, out)
    for how in ("cancel_green", "cancel_os_thread", "cancel_before"):
        # A 60 s wait, ended by the token at once (generous bound for a loaded machine).
        assert out[how]["value"] == "RetryCancelled", (how, out)
        assert out[how]["seconds"] < 10, (how, out)
    assert out["kill"]["value"] is True, out
    assert out["kill"]["seconds"] < 10, out


def test_imported_but_not_patched_means_the_native_wait() -> None:
    import gevent.monkey  # imports only; patches nothing

    assert not gevent.monkey.is_module_patched("time")
    assert retryrs._green.waiter() is None
