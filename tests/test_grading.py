"""The grading helpers pass right answers and fail wrong ones with a message naming the mistake."""

import pytest
import torch

from utils.grading import (
    check_close,
    check_finite,
    check_raises,
    check_shape,
    check_sums_to_one,
    check_true,
)


def failure(function, *args, **kwargs):
    """The AssertionError message raised by a check."""
    with pytest.raises(AssertionError) as raised:
        function(*args, **kwargs)
    return str(raised.value)


def test_check_shape_names_expected_and_actual():
    check_shape(torch.zeros(2, 3), (2, 3))
    message = failure(check_shape, torch.zeros(3, 2), (2, 3), "weights")
    assert "weights has shape (3, 2), expected (2, 3)" in message


def test_check_shape_reports_a_non_tensor():
    assert "should be a torch.Tensor, got list" in failure(check_shape, [1, 2], (2,))


def test_check_shape_rejects_a_bad_expected_shape():
    with pytest.raises(ValueError, match="expected_shape"):
        check_shape(torch.zeros(2), (-1,))


def test_check_finite_locates_nan_and_inf():
    check_finite(torch.ones(3))
    message = failure(check_finite, torch.tensor([1.0, float("nan"), 2.0]), "softmax(x)")
    assert "softmax(x) contains NaN at 1 of 3 positions (first at index (1,))" in message
    assert "inf" in failure(check_finite, torch.tensor([[0.0, float("inf")]]))


def test_check_sums_to_one_accepts_a_softmax():
    check_sums_to_one(torch.softmax(torch.randn(2, 3, 4), dim=-1), dim=-1)


def test_check_sums_to_one_names_the_dimension_that_was_normalised():
    weights = torch.softmax(torch.randn(3, 4), dim=0)
    message = failure(check_sums_to_one, weights, dim=-1)
    assert "do not sum to 1 along dim=-1" in message
    assert "they sum to 1 along dim=0 instead" in message


def test_check_sums_to_one_rejects_negative_weights():
    assert "negative" in failure(check_sums_to_one, torch.tensor([1.5, -0.5]))


def test_check_sums_to_one_rejects_a_bad_dim():
    with pytest.raises(ValueError, match="dim must be"):
        check_sums_to_one(torch.ones(2, 2) / 2, dim=2)


def test_check_close_reports_the_largest_difference():
    expected = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    actual = expected.clone()
    actual[1, 0] = 3.5
    message = failure(check_close, actual, expected, "context", hint="use the values")
    assert "largest difference 0.5 at index (1, 0) (got 3.5, expected 3)" in message
    assert "Hint: use the values" in message


def test_check_close_names_a_known_mistake():
    scores = torch.randn(2, 3)
    message = failure(
        check_close,
        torch.softmax(scores, 0),
        torch.softmax(scores, 1),
        "weights",
        mistakes={"normalised over dim=0": torch.softmax(scores, 0)},
    )
    assert "it looks like you normalised over dim=0" in message


def test_check_close_accepts_matching_infinities_and_tolerances():
    check_close(torch.tensor([float("-inf"), 1.0]), torch.tensor([float("-inf"), 1.0 + 1e-7]))


def test_check_close_reports_nan_before_values():
    assert "NaN" in failure(check_close, torch.tensor([float("nan")]), torch.tensor([1.0]))


def test_check_close_rejects_a_non_tensor_expected():
    with pytest.raises(ValueError, match="expected must be a torch.Tensor"):
        check_close(torch.ones(1), [1.0])
    with pytest.raises(ValueError, match="mistakes must be a dict"):
        check_close(torch.ones(1), torch.ones(1), mistakes=[torch.ones(1)])


def test_check_raises():
    def reject(value):
        raise ValueError(f"temperature must be positive, got {value}")

    check_raises(ValueError, reject, 0, match="temperature")
    assert "did not raise ValueError" in failure(check_raises, ValueError, lambda: None, name="f")
    assert "does not mention 'heads'" in failure(check_raises, ValueError, reject, 0, match="heads")
    assert "raised ZeroDivisionError" in failure(check_raises, ValueError, lambda: 1 / 0)
    with pytest.raises(ValueError, match="exception class"):
        check_raises("ValueError", reject, 0)


def test_check_true():
    check_true(True, "never shown")
    assert failure(check_true, False, "weights changed", hint="h") == "weights changed\nHint: h"
    with pytest.raises(ValueError, match="message must be a string"):
        check_true(True, 3)
