"""The noisy-squares data set (go round the corners of a square, predict the next two corners)
and `Batches`, which serves tensors in batches."""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np
import torch

from utils import validation

# The corners of the square [-1, 1]^2, listed clockwise.
CORNERS = np.array([(-1.0, -1.0), (-1.0, 1.0), (1.0, 1.0), (1.0, -1.0)], dtype=np.float32)
CLOCKWISE = 1
COUNTER_CLOCKWISE = 0
TARGET_LENGTH = 2


@dataclass(frozen=True)
class SquaresData:
    """Square sequences: source (n, Lk, 2), target (n, 2, 2), lengths (n,), directions (n,)."""

    source: np.ndarray
    target: np.ndarray
    lengths: np.ndarray
    directions: np.ndarray

    def __len__(self) -> int:
        """Number of sequences n."""
        return len(self.source)


def direction_name(d) -> str:
    """Name of a direction d (int 1 or 0): 'clockwise' or 'counter-clockwise'."""
    try:
        value = None if isinstance(d, bool) else operator.index(d)
    except TypeError:
        value = None
    if value not in (CLOCKWISE, COUNTER_CLOCKWISE):
        raise ValueError(f"direction must be 1 (clockwise) or 0 (counter-clockwise), got {d!r}")
    return "clockwise" if value == CLOCKWISE else "counter-clockwise"


def _corner_paths(starts: np.ndarray, directions: np.ndarray, n_points: int) -> np.ndarray:
    """Noiseless corners visited from starts (n,) in directions (n,): returns (n, n_points, 2)."""
    steps = np.where(directions == CLOCKWISE, 1, -1)  # (n,)
    offsets = np.arange(n_points)  # (n_points,)
    indices = (starts[:, None] + steps[:, None] * offsets[None, :]) % len(CORNERS)  # (n, n_points)
    return CORNERS[indices]  # (n, n_points, 2)


def make_squares(n, seed, noise=0.1, variable_length=False) -> SquaresData:
    """Make n noisy square sequences: source (n, Lk, 2), target (n, 2, 2), Lk = 3 if variable."""
    n = validation.positive_int(n, "n")
    seed = validation.seed(seed)
    noise = validation.non_negative_number(noise, "noise")
    variable_length = validation.boolean(variable_length, "variable_length")

    rng = np.random.default_rng(seed)
    starts = rng.integers(0, len(CORNERS), size=n)  # (n,)
    directions = rng.integers(0, 2, size=n).astype(np.int64)  # (n,)
    if variable_length:
        lengths = rng.integers(2, 4, size=n).astype(np.int64)  # (n,) in {2, 3}
    else:
        lengths = np.full(n, 2, dtype=np.int64)  # (n,)
    max_length = 3 if variable_length else 2
    n_points = max_length + TARGET_LENGTH

    paths = _corner_paths(starts, directions, n_points)  # (n, n_points, 2)
    paths = paths + noise * rng.standard_normal(paths.shape)  # (n, n_points, 2)
    paths = paths.astype(np.float32)

    positions = np.arange(max_length)  # (Lk,)
    is_real = positions[None, :] < lengths[:, None]  # (n, Lk)
    source = np.where(is_real[:, :, None], paths[:, :max_length], 0.0)  # (n, Lk, 2)
    target_index = lengths[:, None] + np.arange(TARGET_LENGTH)[None, :]  # (n, 2)
    target = np.take_along_axis(paths, target_index[:, :, None], axis=1)  # (n, 2, 2)

    return SquaresData(
        source=source.astype(np.float32),
        target=target.astype(np.float32),
        lengths=lengths,
        directions=directions,
    )


def squares_tensors(data: SquaresData) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Copy a SquaresData into tensors: source (n, Lk, 2), target (n, 2, 2), lengths (n,)."""
    if not isinstance(data, SquaresData):
        raise ValueError(f"data must be a SquaresData, got {type(data).__name__}")
    source = torch.tensor(data.source, dtype=torch.float32)
    target = torch.tensor(data.target, dtype=torch.float32)
    lengths = torch.tensor(data.lengths, dtype=torch.int64)
    return source, target, lengths


class Batches:
    """Batches (source, target[, lengths]) of tensors, reshuffled each pass by its own generator."""

    def __init__(self, tensors, batch_size: int, shuffle: bool = False, seed: int = 0):
        self.tensors = tuple(tensors)
        if not self.tensors or any(len(t) != len(self.tensors[0]) for t in self.tensors):
            raise ValueError("tensors must be a non-empty sequence of tensors of equal length")
        self.batch_size = validation.positive_int(batch_size, "batch_size")
        self.shuffle = shuffle
        self.generator = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        """Number of batches per pass."""
        return -(-len(self.tensors[0]) // self.batch_size)

    def __iter__(self):
        """Yield tuples of batch tensors, in a new random order each pass if shuffle."""
        n = len(self.tensors[0])
        order = torch.randperm(n, generator=self.generator) if self.shuffle else torch.arange(n)
        for start in range(0, n, self.batch_size):
            index = order[start : start + self.batch_size]  # (B,)
            yield tuple(t[index] for t in self.tensors)
