"""Tests for utils.validation: one definition of each argument check."""

import math

import numpy as np
import pytest
import torch
from torch import nn

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


def test_vector_gives_a_float64_tensor_and_numpy_vector_a_float_array():
    tensor = validation.vector([1, 2, 3], "scores")
    assert tensor.dtype == torch.float64 and tensor.tolist() == [1.0, 2.0, 3.0]
    array = validation.numpy_vector(torch.tensor([1.0, 2.0], requires_grad=True), "query", 2)
    assert isinstance(array, np.ndarray) and array.dtype == float and array.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("check", [validation.vector, validation.numpy_vector])
@pytest.mark.parametrize(
    "value, length, message",
    [
        ([], None, r"x must have shape \(n,\) with n >= 1, got \(0,\)"),
        ([[1.0, 2.0]], None, r"x must have shape \(n,\) with n >= 1, got \(1, 2\)"),
        ([1.0, 2.0], 3, r"x must have shape \(3,\), got \(2,\)"),
    ],
)
def test_both_vector_flavours_name_the_expected_shape(check, value, length, message):
    with pytest.raises(ValueError, match=message):
        check(value, "x", length)


def test_only_the_tensor_vector_requires_finite_entries():
    with pytest.raises(ValueError, match=r"scores must be finite, got \[1.0, nan\]"):
        validation.vector([1.0, math.nan], "scores")
    assert math.isnan(validation.numpy_vector([1.0, math.nan], "scores")[1])


def test_numpy_array_names_what_cannot_be_read_as_numbers():
    with pytest.raises(ValueError, match="weights must be a tensor or array of numbers"):
        validation.numpy_array(["a", "b"], "weights")


def test_matrix_checks_the_rows_and_the_columns():
    assert validation.matrix([[1, 2]], "keys", 2).dtype == torch.float64
    with pytest.raises(ValueError, match=r"keys must have shape \(rows, 2\), got \(3, 3\)"):
        validation.matrix(torch.zeros(3, 3), "keys", 2)
    with pytest.raises(ValueError, match=r"scores must have shape \(rows, columns\), got \(0, 2\)"):
        validation.matrix(torch.zeros(0, 2), "scores")


@pytest.mark.parametrize("value", [-1, 3, True, 1.0])
def test_index_must_be_an_int_below_the_count(value):
    with pytest.raises(ValueError, match="head must be an integer from 0 to 2"):
        validation.index(value, "head", 3)


def test_labels_default_to_the_indices_and_must_number_n():
    assert validation.labels(None, 3, "labels") == ["0", "1", "2"]
    assert validation.labels(np.array([4, 5]), 2, "labels") == ["4", "5"]
    with pytest.raises(ValueError, match="key_labels must be a sequence of 2 labels"):
        validation.labels("ab", 2, "key_labels")


@pytest.mark.parametrize("value", [-0.1, math.inf, True, "0"])
def test_non_negative_number_refuses_negatives_infinity_and_non_numbers(value):
    with pytest.raises(ValueError, match="noise must be a non-negative number"):
        validation.non_negative_number(value, "noise")


def test_boolean_accepts_python_and_numpy_booleans_only():
    assert validation.boolean(np.bool_(True), "causal") is True
    with pytest.raises(ValueError, match="causal must be True or False"):
        validation.boolean(1, "causal")


def test_module_is_a_duck_type_of_what_the_trainer_calls():
    class Switchable:
        def __call__(self, x):
            return x

        def train(self, mode=True):
            return self

        def eval(self):
            return self

    assert validation.module(nn.Linear(2, 1)) is not None
    assert isinstance(validation.module(Switchable()), Switchable)
    with pytest.raises(ValueError, match="model must be a torch.nn.Module, got function"):
        validation.module(lambda x: x)


def test_optional_callable_and_batches_name_the_argument():
    assert validation.optional_callable(None, "stop") is None
    with pytest.raises(ValueError, match="stop must be callable or None, got int"):
        validation.optional_callable(3, "stop")
    with pytest.raises(ValueError, match="val_loader must be an iterable of"):
        validation.batches(None, "val_loader")
