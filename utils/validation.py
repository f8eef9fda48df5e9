"""Checks of the helpers' arguments: each returns the value or raises a ValueError naming it."""

import math

import numpy as np


def positive_int(value, name: str) -> int:
    """Return value as an int, or raise ValueError if it is not a positive integer."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def seed(value, name: str = "seed") -> int:
    """Return value as an int, or raise ValueError if it is not a non-negative integer."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def positive_number(value, name: str) -> float:
    """Return value as a float, or raise ValueError if it is not a finite number above 0."""
    is_number = isinstance(value, (int, float, np.integer, np.floating))
    if isinstance(value, bool) or not is_number or not 0 < value < math.inf:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def probability(value, name: str) -> float:
    """Return value as a float, or raise ValueError if it is not a number in [0, 1]."""
    is_number = isinstance(value, (int, float, np.integer, np.floating))
    if isinstance(value, bool) or not is_number or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)
