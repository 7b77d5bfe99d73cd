"""Trap 10: knobs that look plausible but mean nothing are refused, naming what was
wrong."""

import pytest

from retryrs import Retrier, RetryBudget


@pytest.mark.parametrize("value", [str, bool, int, (OSError, str)])
def test_retry_on_refuses_classes_that_are_not_exceptions(value):
    with pytest.raises(TypeError, match="retry_on"):
        Retrier(retry_on=value)


def test_budget_refuses_bools():
    with pytest.raises(TypeError, match="max_tokens"):
        RetryBudget(True, 1)
    with pytest.raises(TypeError, match="token_ratio"):
        RetryBudget(10, True)


def test_budget_names_the_argument_of_the_wrong_type():
    with pytest.raises(TypeError, match="max_tokens.*'10'"):
        RetryBudget("10")
    with pytest.raises(TypeError, match="token_ratio"):
        RetryBudget(10, "0.1")


def test_budget_refuses_a_ratio_that_would_be_zero_tokens():
    with pytest.raises(ValueError, match="max_tokens"):
        RetryBudget(1e-9, 1e-9)
