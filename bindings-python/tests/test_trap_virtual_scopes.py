"""Trap 8: virtual_time() scopes left out of order (by two threads) nest by count:
leaving the outermost turns virtual time off, whatever the order."""

import threading

from retryrs import testing


def test_scopes_left_out_of_order_by_two_threads_turn_virtual_time_off():
    entered = threading.Barrier(2)
    first_left = threading.Event()

    def worker(leave_first):
        scope = testing.virtual_time()
        scope.__enter__()
        entered.wait()
        if leave_first:
            scope.__exit__(None, None, None)
            first_left.set()
        else:
            first_left.wait()
            scope.__exit__(None, None, None)

    # Thread A enters first and leaves first; thread B entered second and leaves last.
    a = threading.Thread(target=worker, args=(True,))
    b = threading.Thread(target=worker, args=(False,))
    a.start(); b.start(); a.join(); b.join()
    assert not testing.is_on(), "virtual time left on: later real calls would never sleep"


def test_scopes_left_out_of_order_on_one_thread():
    outer, inner = testing.virtual_time(), testing.virtual_time()
    outer.__enter__()
    inner.__enter__()
    outer.__exit__(None, None, None)
    assert testing.is_on()
    inner.__exit__(None, None, None)
    assert not testing.is_on()
