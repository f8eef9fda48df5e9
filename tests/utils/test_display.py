"""Tests for utils.display: the lectures' fixed-decimal printing."""

import numpy as np
import pytest
import torch

from utils.display import show, show_matrix


def test_show_flattens_tensors_with_four_decimals():
    assert show(torch.tensor([[0.55, -0.0993], [1.0, 3.11924]])) == (
        "0.5500  -0.0993  1.0000  3.1192")


def test_show_takes_arrays_sequences_scalars_and_other_decimals():
    assert show(np.array([0.12345]), decimals=2) == "0.12"
    assert show([1, 2.5]) == "1.0000  2.5000"
    assert show(torch.tensor(0.5), decimals=0) == "0"
    assert show(torch.ones(2, requires_grad=True), decimals=1) == "1.0  1.0"


@pytest.mark.parametrize("decimals", [-1, 1.5, "4", True])
def test_show_rejects_bad_decimals(decimals):
    with pytest.raises(ValueError, match="decimals must be a non-negative integer"):
        show(torch.ones(2), decimals=decimals)


def test_show_matrix_labels_rows_and_columns():
    text = show_matrix(torch.tensor([[0.5, 0.25], [1.0, 0.0]]), ["a", "b"], ["x", "y"])
    assert text.splitlines() == ["          x     y", "    a  0.50  0.25", "    b  1.00  0.00"]


def test_show_matrix_refuses_labels_of_another_shape():
    with pytest.raises(ValueError, match=r"a \(3, 2\) matrix was expected"):
        show_matrix(torch.zeros(2, 2), ["a", "b", "c"], ["x", "y"])
