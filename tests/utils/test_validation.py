"""Tests for utils.validation: one definition of each argument check."""

import math

import numpy as np
import pytest

from utils import validation


@pytest.mark.parametrize("value", [1, 7, np.int64(3)])
def test_positive_int_accepts_python_and_numpy_integers(value):
    assert validation.positive_int(value, "n") == value


@pytest.mark.parametrize("value", [0, -2, True, 2.0, "3", None])
def test_positive_int_names_what_was_expected(value):
    with pytest.raises(ValueError, match="n must be a positive integer"):
        validation.positive_int(value, "n")


@pytest.mark.parametrize("value", [-1, False, 1.5])
def test_seed_must_be_a_non_negative_integer(value):
    with pytest.raises(ValueError, match="train_seed must be a non-negative integer"):
        validation.seed(value, "train_seed")


@pytest.mark.parametrize("value", [0, -0.1, math.inf, math.nan, True, "0.1"])
def test_positive_number_refuses_zero_infinity_and_nan(value):
    with pytest.raises(ValueError, match="lr must be a positive number"):
        validation.positive_number(value, "lr")


def test_positive_number_returns_a_float():
    assert validation.positive_number(np.float32(0.5), "lr") == 0.5
