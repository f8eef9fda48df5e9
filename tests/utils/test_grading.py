"""The grading helpers pass right answers and fail wrong ones with a message naming the mistake."""

import builtins

import numpy as np
import pytest
import torch

from utils import grading
from utils.grading import (
    check_close,
    check_different,
    check_finite,
    check_identical,
    check_raises,
    check_shape,
    check_sums_to_one,
    check_true,
    statement_at,
)

AssertionError_ = builtins.AssertionError


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


def test_check_close_reports_the_element_that_failed_with_its_tolerance():
    expected = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    actual = expected.clone()
    actual[1, 0] = 3.5
    message = failure(check_close, actual, expected, "context", hint="use the values")
    assert "at 1 of 4 positions" in message
    assert "at index (1, 0): got 3.5, expected 3, a difference of 0.5 where 0.00031" in message
    assert "Hint: use the values" in message


def test_check_close_shows_the_failing_element_not_the_largest_difference():
    expected = torch.tensor([-1.95431015, 1000.0], dtype=torch.float64)
    actual = torch.tensor([-1.95431, 1000.000005], dtype=torch.float64)  # the second is close
    message = failure(check_close, actual, expected, "logits", atol=1e-8, rtol=1e-8)
    assert "at index (0,): got -1.95431, expected -1.95431015" in message
    assert "(atol=1e-08, rtol=1e-08)" in message


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
    check_raises(ValueError, reject, 0, match=("0", ("positive", "negative")))
    message = failure(check_raises, ValueError, reject, 0, match=("0", ("zero", "sign")))
    assert "does not mention 'zero' or 'sign'" in message
    with pytest.raises(ValueError, match="match must be a string or a tuple"):
        check_raises(ValueError, reject, 0, match=("0", ()))
    assert "raised ZeroDivisionError" in failure(check_raises, ValueError, lambda: 1 / 0)
    with pytest.raises(ValueError, match="exception class"):
        check_raises("ValueError", reject, 0)


def test_check_true():
    check_true(True, "never shown")
    assert failure(check_true, False, "weights changed", hint="h") == "weights changed\nHint: h"
    with pytest.raises(ValueError, match="message must be a string"):
        check_true(True, 3)


# A student's cell can replace library functions; the checks must still fail wrong answers.


def outcomes_with(owner, name, fake):
    """Run three failing checks while `owner.name` is replaced; return what each raised."""
    had_own = name in vars(owner)
    original = vars(owner).get(name)
    checks = [
        lambda: check_close(torch.tensor([1.0, 5.0]), torch.tensor([1.0, 2.0])),
        lambda: check_sums_to_one(torch.tensor([0.2, 0.2])),
        lambda: check_shape(torch.zeros(3), (2,)),
    ]
    outcomes = []
    setattr(owner, name, fake)
    try:
        for check in checks:
            try:
                check()
                outcomes.append(None)
            except BaseException as raised:  # noqa: BLE001 - the test inspects whatever was raised
                outcomes.append((type(raised), str(raised)))
    finally:
        if had_own:
            setattr(owner, name, original)
        else:
            delattr(owner, name)
    return outcomes


@pytest.mark.parametrize(
    ("owner", "name", "fake"),
    [
        (torch, "allclose", lambda *args, **kwargs: True),
        (torch.testing, "assert_close", lambda *args, **kwargs: None),
        (torch, "isnan", lambda x: torch.zeros_like(x, dtype=torch.bool)),
        (torch.Tensor, "__sub__", lambda self, other: torch.zeros_like(self)),
        (torch.Tensor, "abs", lambda self: torch.zeros_like(self)),
        (torch.Tensor, "shape", property(lambda self: torch.Size([2]))),
        (np, "allclose", lambda *args, **kwargs: True),
        (np, "abs", lambda x: x * 0),
        (builtins, "bool", lambda x: True),
        (builtins, "isinstance", lambda *args: True),
        (builtins, "AssertionError", type("Harmless", (Exception,), {})),
    ],
    ids=lambda value: getattr(value, "__name__", None) if not callable(value) else None,
)
def test_checks_survive_patched_libraries(owner, name, fake):
    outcomes = outcomes_with(owner, name, fake)
    expected = ["differs from the expected values", "do not sum to 1", "has shape"]
    for outcome, message in zip(outcomes, expected, strict=True):
        assert outcome is not None and outcome[0] is AssertionError_ and message in outcome[1]


class Liar(torch.Tensor):
    """A tensor subclass whose torch functions all claim success."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return torch.tensor(True)


def test_checks_read_the_real_values_of_a_tensor_subclass():
    liar = torch.tensor([1.0, 5.0]).as_subclass(Liar)
    with pytest.raises(AssertionError_, match="differs from the expected values"):
        check_close(liar, torch.tensor([1.0, 2.0]))


def test_the_checks_cannot_be_replaced():
    with pytest.raises(AttributeError, match="read-only"):
        grading.check_close = lambda *args, **kwargs: None
    with pytest.raises(AttributeError, match="read-only"):
        del grading.check_shape


def test_check_identical_and_check_different():
    a = torch.tensor([1.0, 2.0])
    check_identical(a, a.clone(), "never shown")
    assert failure(check_identical, a, a + 1e-7, "random in eval mode") == "random in eval mode"
    assert "same" in failure(check_different, a, a.clone(), "two calls gave the same output")
    check_different(a, a + 1, "never shown")
    with pytest.raises(ValueError, match="message must be a string"):
        check_identical(a, a, None)


def test_the_failed_line_shows_the_whole_call_or_a_clear_cut():
    source = (
        "result = softmax(scores)\n"
        'check_sums_to_one(result, dim=-1, name="rows of softmax(scores)",\n'
        "                  )\n"
        "check(result,\n"
        f"      {'x' * 200})\n"
    )
    whole = 'check_sums_to_one(result, dim=-1, name="rows of softmax(scores)")'
    assert statement_at(source, 2) == whole
    assert statement_at(source, 3) == statement_at(source, 2)
    long = statement_at(source, 4)
    assert long.startswith("check(result, xxx") and long.endswith("…") and len(long) == 120
    assert statement_at(source, 9) == ""


# The NaN recorder: a NaN made anywhere, in place included, and then repaired, is listed.
ROW_WITHOUT_KEYS = torch.tensor([[True, False, True], [False, False, False]])  # row 1: no key


def zeroed_rows(scores, allowed):
    """The course's rule: finite scores on a row with no key, then zero the masked weights."""
    scores = scores.masked_fill(~allowed, float("-inf"))
    scores = scores.masked_fill(~allowed.any(-1, keepdim=True), 0.0)
    return torch.softmax(scores, -1).masked_fill(~allowed, 0.0)


def shifted_in_place_then_repaired(scores, allowed):
    """-inf - (-inf) written into a copy by sub_, then repaired by nan_to_num."""
    shifted = scores.masked_fill(~allowed, float("-inf")).clone()
    shifted.sub_(shifted.amax(-1, keepdim=True))
    return torch.softmax(shifted.nan_to_num(nan=0.0), -1).masked_fill(~allowed, 0.0)


def softmax_then_where(scores, allowed):
    """The softmax of a row of -inf is NaN, dropped afterwards by torch.where."""
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), -1)
    return torch.where(allowed, weights, 0.0)


def out_argument(scores, allowed):
    """A NaN written through out=, then overwritten."""
    total = torch.empty(2, 1)
    torch.div(scores.sum(-1, keepdim=True) * 0, torch.zeros(2, 1), out=total)
    return total.nan_to_num_(0.0)


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (zeroed_rows, ()),
        (shifted_in_place_then_repaired, ("sub_",)),
        (softmax_then_where, ("softmax",)),
        (out_argument, ("div",)),
    ],
)
def test_nans_created_lists_each_operation_that_made_a_nan(function, expected):
    scores = torch.randn(2, 3, generator=torch.Generator().manual_seed(0))
    assert grading.nans_created(function, scores, ROW_WITHOUT_KEYS) == expected


UNWRITTEN = {
    "empty": lambda x: torch.empty(64),
    "empty_like": lambda x: torch.empty_like(x),
    "new_empty": lambda x: x.new_empty(64),
    "empty_strided": lambda x: torch.empty_strided((64,), (1,)),
    "new_empty_strided": lambda x: x.new_empty_strided((64,), (1,)),
    "empty_permuted": lambda x: torch.empty_permuted((64,), (0,)),
    "resize_": lambda x: x[:1].clone().resize_(64),
    "resize_as_": lambda x: x[:1].clone().resize_as_(x),
}


@pytest.mark.parametrize("make", UNWRITTEN.values(), ids=UNWRITTEN.keys())
def test_memory_nobody_wrote_is_no_nan_created_and_hides_none(make):
    freed = [torch.full((64,), float("nan")) for _ in range(8)]

    def fill_then_divide(x):
        """Memory freed full of NaNs, taken again unwritten; then a 0 / 0 written into it."""
        freed.clear()  # the allocator hands these blocks out again, NaNs and all
        unwritten = make(x)
        assert not unwritten.any()
        torch.div(torch.zeros(64), torch.zeros(64), out=unwritten)
        return unwritten

    assert grading.nans_created(fill_then_divide, torch.zeros(64)) == ("div",)


def test_nans_created_counts_nans_rather_than_noting_their_presence():
    def more_nans(x):
        """x holds one NaN; the division makes a second one (0 / 0)."""
        return x / torch.tensor([1.0, 0.0, 1.0])

    def same_nans(x):
        """x holds one NaN, in place doubled and viewed: nothing new."""
        return x.clone().mul_(2.0).view(3)

    x = torch.tensor([float("nan"), 0.0, 1.0])
    assert grading.nans_created(more_nans, x) == ("div",)
    assert grading.nans_created(same_nans, x) == ()
