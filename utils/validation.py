"""Checks of the helpers' arguments: each returns the value or raises a ValueError naming it.

Vectors and matrices come in two flavours: `vector` and `matrix` give float64 tensors for the
computations, `numpy_vector` and `numpy_array` give float NumPy arrays for the plots.
`is_finite_number` answers True or False: the number checks share it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import torch


def positive_int(value, name: str) -> int:
    """Return value as an int, or raise ValueError if it is not a positive integer."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def non_negative_int(value, name: str) -> int:
    """Return value as an int, or raise ValueError if it is not a non-negative integer."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def seed(value, name: str = "seed") -> int:
    """Return value as an int, or raise ValueError if it is not a non-negative integer."""
    return non_negative_int(value, name)


def index(value, name: str, count: int) -> int:
    """Return value, or raise ValueError if it is not an int from 0 to count - 1."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < count:
        raise ValueError(f"{name} must be an integer from 0 to {count - 1}, got {value!r}")
    return value


def is_finite_number(value) -> bool:
    """Whether value is a finite real number (not a bool)."""
    is_number = isinstance(value, (int, float, np.integer, np.floating))
    return is_number and not isinstance(value, bool) and math.isfinite(value)


def positive_number(value, name: str) -> float:
    """Return value as a float, or raise ValueError if it is not a finite number above 0."""
    if not is_finite_number(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def non_negative_number(value, name: str) -> float:
    """Return value as a float, or raise ValueError if it is not a finite number >= 0."""
    if not is_finite_number(value) or value < 0:
        raise ValueError(f"{name} must be a non-negative number, got {value!r}")
    return float(value)


def probability(value, name: str) -> float:
    """Return value as a float, or raise ValueError if it is not a number in [0, 1]."""
    is_number = isinstance(value, (int, float, np.integer, np.floating))
    if isinstance(value, bool) or not is_number or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


def boolean(value, name: str) -> bool:
    """Return value as a bool, or raise ValueError if it is not True or False."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def with_shape(array, name: str, expected: str, ok: bool):
    """Return array, or raise ValueError naming the expected shape and array's shape unless ok."""
    if not ok:
        raise ValueError(f"{name} must have shape {expected}, got {tuple(array.shape)}")
    return array


def _one_dimensional(array, name: str, length: int | None):
    """Return array, or raise ValueError unless its shape is (length,) (any length >= 1 if None)."""
    expected = f"({length},)" if length is not None else "(n,) with n >= 1"
    ok = array.ndim == 1 and len(array) > 0 and (length is None or len(array) == length)
    return with_shape(array, name, expected, ok)


def vector(x, name: str, length: int | None = None) -> torch.Tensor:
    """x as a float64 tensor of finite entries, shape (length,) (any length >= 1 if None)."""
    tensor = _one_dimensional(torch.as_tensor(x, dtype=torch.float64), name, length)
    if not torch.isfinite(tensor).all():
        raise ValueError(f"{name} must be finite, got {tensor.tolist()}")
    return tensor


def matrix(x, name: str, columns: int | None = None) -> torch.Tensor:
    """x as a float64 tensor (rows, columns) with rows >= 1, or ValueError."""
    tensor = torch.as_tensor(x, dtype=torch.float64)
    ok = tensor.ndim == 2 and len(tensor) > 0 and (columns is None or tensor.shape[1] == columns)
    expected = f"(rows, {columns})" if columns is not None else "(rows, columns)"
    return with_shape(tensor, name, expected, ok)


def numpy_array(x, name: str = "array") -> np.ndarray:
    """A float NumPy copy of a tensor or array-like x (detached, on the CPU), or ValueError."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    try:
        return np.array(x, dtype=float)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a tensor or array of numbers, got {x!r}") from error


def numpy_vector(x, name: str, length: int | None = None) -> np.ndarray:
    """x as a float NumPy vector of shape (length,) (any length >= 1 if None), or ValueError."""
    return _one_dimensional(numpy_array(x, name), name, length)


def labels(values, n: int, name: str) -> list[str]:
    """values as n strings, or the indices 0 .. n - 1 if None; ValueError unless there are n."""
    if values is None:
        return [str(i) for i in range(n)]
    if isinstance(values, torch.Tensor | np.ndarray):
        values = values.tolist()
    if isinstance(values, str) or not isinstance(values, Sequence) or len(values) != n:
        raise ValueError(f"{name} must be a sequence of {n} labels, got {values!r}")
    return [str(value) for value in values]


def optional_callable(value, name: str):
    """Return value, or raise ValueError if it is neither None nor callable."""
    if value is not None and not callable(value):
        raise ValueError(f"{name} must be callable or None, got {type(value).__name__}")
    return value


def module(value, name: str = "model"):
    """Return value, or raise ValueError unless it is callable with train and eval (nn.Module)."""
    if callable(value) and all(callable(getattr(value, mode, None)) for mode in ("train", "eval")):
        return value
    raise ValueError(f"{name} must be a torch.nn.Module, got {type(value).__name__}")


def batches(loader, name: str):
    """Return loader, or raise ValueError if it is not an iterable of batches."""
    if loader is None or not isinstance(loader, Iterable):
        raise ValueError(f"{name} must be an iterable of (x, y, ...) batches, got {loader!r}")
    return loader
