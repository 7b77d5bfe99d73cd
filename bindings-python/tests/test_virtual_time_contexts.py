"""Virtual time belongs to the context that turned it on: a scope (or enable()) in one
thread or asyncio task leaves another thread's or task's 100 ms wait real; the whole
process is switched only by name (scope="process")."""

import asyncio
import contextvars
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from retryrs import Retrier, RetryExhausted, testing


def one_100ms_wait():
    """Two attempts, one 100 ms wait between them; the seconds it took."""
    r = Retrier(max_attempts=2, initial_delay=0.1, max_delay=0.1, jitter="none", deadline=None)
    started = time.monotonic()
    with pytest.raises(RetryExhausted):
        r.call(_fail)
    return time.monotonic() - started


def _fail():
    raise ConnectionError("down")


async def _afail():
    raise ConnectionError("down")


async def one_100ms_async_wait():
    r = Retrier(max_attempts=2, initial_delay=0.1, max_delay=0.1, jitter="none", deadline=None)
    started = time.monotonic()
    with pytest.raises(RetryExhausted):
        await r.call_async(_afail)
    return time.monotonic() - started


@pytest.mark.parametrize("how", ["scope", "enable"])
def test_a_scope_in_another_thread_leaves_this_threads_wait_real(how):
    on, done = threading.Event(), threading.Event()
    seen = {}

    def virtual_thread():
        with testing.virtual_time() if how == "scope" else _enabled():
            one_100ms_wait()
            seen["now"] = testing.now()
            on.set()
            done.wait(10)

    t = threading.Thread(target=virtual_thread)
    t.start()
    try:
        assert on.wait(10)
        assert seen["now"] == pytest.approx(0.1), "the other thread's own wait was virtual"
        assert not testing.is_on()
        assert one_100ms_wait() >= 0.1, "another thread's virtual time made this wait virtual"
    finally:
        done.set()
        t.join()
    assert not testing.is_on()


class _enabled:
    def __enter__(self):
        testing.enable()

    def __exit__(self, *exc):
        testing.disable()


def test_two_asyncio_tasks_one_in_a_scope():
    async def main():
        in_scope = asyncio.Event()
        other_done = asyncio.Event()

        async def virtual_task():
            with testing.virtual_time() as clock:
                await one_100ms_async_wait()
                assert clock.now() == pytest.approx(0.1)
                in_scope.set()
                await other_done.wait()  # the scope stays open while the other task waits

        async def real_task():
            await in_scope.wait()
            assert not testing.is_on()
            took = await one_100ms_async_wait()
            other_done.set()
            return took

        _, took = await asyncio.gather(virtual_task(), real_task())
        return took

    assert asyncio.run(main()) >= 0.1, "another task's scope made this task's wait virtual"


def test_a_task_started_inside_a_scope_shares_its_clock():
    async def main():
        with testing.virtual_time() as clock:
            took = await asyncio.create_task(one_100ms_async_wait())
            assert clock.now() == pytest.approx(0.1)
            return took

    assert asyncio.run(main()) < 5


def test_the_time_taken_to_a_thread_pool_by_copying_the_context():
    with testing.virtual_time() as clock, ThreadPoolExecutor(1) as pool:
        assert pool.submit(testing.is_on).result() is False, "a pool thread has its own context"
        took = pool.submit(contextvars.copy_context().run, one_100ms_wait).result()
        assert took < 5 and clock.now() == pytest.approx(0.1)


def test_a_left_scope_is_off_in_every_copy_of_the_context():
    scope = testing.virtual_time()
    scope.__enter__()
    copy = contextvars.copy_context()
    scope.__exit__(None, None, None)
    assert copy.run(testing.is_on) is False


def test_the_process_wide_scope_is_asked_for_by_name():
    with pytest.raises(ValueError, match='scope must be "context" or "process", got \'thread\''):
        testing.virtual_time(scope="thread")
    with testing.virtual_time(scope="process") as clock:
        clock.advance(2)
        with ThreadPoolExecutor(1) as pool:
            assert pool.submit(testing.now).result() == 2
            assert pool.submit(one_100ms_wait).result() < 5
        with testing.virtual_time() as mine:
            assert testing.now() == 0, "this context's scope comes first"
            mine.advance(1)
        assert testing.now() == 2.1
    assert not testing.is_on()
    testing.enable(scope="process")
    assert threading_is_on()
    testing.disable()  # this context's switch: the process-wide one stays
    assert testing.is_on()
    testing.disable(scope="process")
    assert not testing.is_on() and not threading_is_on()


def threading_is_on():
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(testing.is_on).result()
