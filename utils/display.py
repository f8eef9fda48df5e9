"""Text display of numbers for the lectures: fixed decimals, so stored outputs stay exact."""

import numbers

import numpy as np
import torch


def show(values, decimals=4):
    """The entries of a tensor, array or sequence (any shape), flattened, `decimals` places."""
    if isinstance(decimals, bool) or not isinstance(decimals, numbers.Integral) or decimals < 0:
        raise ValueError(f"decimals must be a non-negative integer, got {decimals!r}")
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    flat = np.asarray(values, dtype=float).ravel()
    return "  ".join(f"{x:.{decimals}f}" for x in flat)
