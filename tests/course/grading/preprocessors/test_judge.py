"""The judge: a layer judged by what it computes, and only free names asked of the kernel."""

import pytest
import torch

from course.grading.preprocessors import judge


def test_a_layer_is_judged_by_what_it_computes():
    from utils.grading import check_layer

    check_layer(torch.nn.Linear(3, 2), torch.nn.Linear, "layer")
    check_layer(torch.nn.LayerNorm(4), torch.nn.LayerNorm, "norm")

    class Spoof(torch.nn.Module):  # a Linear's parameters, but not what a Linear computes
        def __init__(self):
            super().__init__()
            self.weight, self.bias = torch.nn.Parameter(torch.ones(2, 3)), None

        def forward(self, x):
            return x[..., :2]

    Spoof.__name__ = Spoof.__qualname__ = "Linear"
    Spoof.__module__ = "torch.nn.modules.linear"
    with pytest.raises(AssertionError, match="layer should be an nn.Linear"):
        check_layer(Spoof(), torch.nn.Linear, "layer")
    with pytest.raises(ValueError, match="kind must be"):
        check_layer(torch.nn.ReLU(), torch.nn.ReLU, "relu")


def test_a_test_cell_asks_the_kernel_only_for_free_names_that_are_no_builtin():
    test_cell = (
        "out = softmax(TEST_SCORES)\n"
        "check_close(out, expected, mistakes={k: v for k, v in MISTAKES.items()})\n"
        "bool(len(out))\n"
        "def helper(x):\n    return log_softmax(x)\n"
    )
    free = judge.free_names(test_cell) - judge.BUILTIN_NAMES
    assert free == {"softmax", "TEST_SCORES", "check_close", "expected", "MISTAKES", "log_softmax"}
