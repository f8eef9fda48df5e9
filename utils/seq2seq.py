"""The parts of lesson 06's encoder-decoders that the lecture and the lab share: the GRU encoder,
the padding mask of the sources and the last real step of a padded sequence.

The decoders are the lesson's to build: the lecture writes its own, the lab asks for one with
attention. Models return their outputs (and attention weights) instead of storing them on self.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence

from utils import validation

N_FEATURES = 2  # a point of a square has two coordinates


def source_mask(lengths, max_length: int) -> torch.Tensor:
    """Boolean key mask (N, 1, max_length) of the source points: True = real (may attend)."""
    counts = torch.as_tensor(lengths)
    if counts.dim() != 1 or counts.dtype.is_floating_point:
        raise ValueError(f"lengths must be a 1-D tensor of integers, got {counts!r}")
    validation.positive_int(max_length, "max_length")
    if bool((counts < 1).any()) or bool((counts > max_length).any()):
        raise ValueError(f"lengths must lie in 1..{max_length}, got {counts.tolist()}")
    rows = [torch.ones(count, dtype=torch.bool) for count in counts.tolist()]
    rows.append(torch.zeros(max_length, dtype=torch.bool))  # pads every row to max_length
    return pad_sequence(rows, batch_first=True)[:-1].unsqueeze(1)  # (N, 1, max_length)


def last_step(sequence: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """The last real step (N, 1, D) of sequence (N, L, D) under a padding mask (N, 1, L) or None."""
    if sequence.dim() != 3:
        raise ValueError(f"sequence must have shape (N, L, D), got {tuple(sequence.shape)}")
    if mask is None:
        return sequence[:, -1:]  # (N, 1, D)
    n, length, _ = sequence.shape
    flat_mask = mask.reshape(n, -1)  # (N, L)
    if flat_mask.shape[1] != length:
        raise ValueError(f"mask must have shape ({n}, 1, {length}), got {tuple(mask.shape)}")
    last = flat_mask.long().sum(dim=1) - 1  # (N,)
    index = last.clamp(min=0)[:, None, None].expand(-1, 1, sequence.shape[2])  # (N, 1, D)
    return sequence.gather(1, index)  # (N, 1, D)


class Encoder(nn.Module):
    """A one-layer GRU over the source points."""

    def __init__(self, n_features: int, hidden_dim: int):
        super().__init__()
        self.n_features = validation.positive_int(n_features, "n_features")
        self.hidden_dim = validation.positive_int(hidden_dim, "hidden_dim")
        self.gru = nn.GRU(n_features, hidden_dim, batch_first=True)

    def forward(self, source, mask=None):
        """Source (N, Lk, F), mask (N, 1, Lk) or None -> states (N, Lk, H), final (N, H)."""
        states, _ = self.gru(source)  # (N, Lk, H)
        final = last_step(states, mask)[:, 0]  # (N, H): the state after the last real point
        return states, final
