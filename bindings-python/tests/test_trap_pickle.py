"""Trap 6: a decorated function pickles by reference, as plain functions do (so
ProcessPoolExecutor.submit(fetch) works)."""

import asyncio
import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest

from retryrs import Retrier

retrier = Retrier(max_attempts=2)


@retrier
def double(n):
    return n * 2


@retrier
async def adouble(n):
    return n * 2


class Client:
    @retrier
    def get(self, n):
        return n + 1


def test_a_decorated_function_pickles_by_reference():
    assert pickle.loads(pickle.dumps(double)) is double
    assert pickle.loads(pickle.dumps(adouble)) is adouble
    assert pickle.loads(pickle.dumps(Client.get)) is Client.get


def test_a_bound_decorated_method_pickles():
    bound = pickle.loads(pickle.dumps(Client().get))
    assert bound(1) == 2


# The pool forks (Linux default) a suite process that has threads from earlier tests:
# CPython 3.12+ warns about that, which says nothing about pickling.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:DeprecationWarning")
def test_a_process_pool_runs_a_decorated_function():
    with ProcessPoolExecutor(max_workers=1) as pool:
        assert pool.submit(double, 21).result(timeout=60) == 42
