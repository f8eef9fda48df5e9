"""Text display of numbers for the lectures: fixed decimals, so stored outputs stay exact."""

import numpy as np
import torch

from utils import validation


def show(values, decimals=4):
    """The entries of a tensor, array or sequence (any shape), flattened, `decimals` places."""
    decimals = validation.non_negative_int(decimals, "decimals")
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    flat = np.asarray(values, dtype=float).ravel()
    return "  ".join(f"{x:.{decimals}f}" for x in flat)


def show_matrix(matrix, row_labels, column_labels, decimals=2):
    """A small (R, C) matrix as text, with labelled rows and columns, `decimals` places."""
    rows = torch.as_tensor(matrix).tolist()
    if len(rows) != len(row_labels) or any(len(row) != len(column_labels) for row in rows):
        raise ValueError(
            f"a ({len(row_labels)}, {len(column_labels)}) matrix was expected for the labels, "
            f"got shape {tuple(torch.as_tensor(matrix).shape)}"
        )
    width = decimals + 3
    lines = [" " * (width + 1) + " ".join(f"{label:>{width}}" for label in column_labels)]
    for label, row in zip(row_labels, rows, strict=True):
        numbers = " ".join(f"{value:{width}.{decimals}f}" for value in row)
        lines.append(f"{label:>{width}} {numbers}")
    return "\n".join(lines)
