"""The course's text corpus and its characters: loading, a vocabulary, encoding, batches.

The corpus is the opening of Shakespeare's *Coriolanus* (public domain), shipped with the package
in `utils/corpus/` (see its README for the source and what was cut). Lesson 10 trains a
character-level model on it: each distinct character is a token.
"""

from __future__ import annotations

from pathlib import Path

import torch

from utils import validation

CORPUS = Path(__file__).parent / "corpus" / "coriolanus.txt"


def load_corpus() -> str:
    """The whole corpus as one string (about 64 000 characters)."""
    return CORPUS.read_text(encoding="utf-8")


class CharVocabulary:
    """The sorted distinct characters of a text; token i is the i-th character."""

    def __init__(self, text: str):
        if not isinstance(text, str) or not text:
            raise ValueError("text must be a non-empty string")
        self.chars = sorted(set(text))
        self.index = {char: i for i, char in enumerate(self.chars)}

    def __len__(self) -> int:
        """The vocabulary size V."""
        return len(self.chars)

    def encode(self, text: str) -> torch.Tensor:
        """Token ids (L,) of a string; ValueError naming a character outside the vocabulary."""
        unknown = sorted(set(text) - set(self.index))
        if unknown:
            raise ValueError(f"text holds characters outside the vocabulary: {unknown}")
        return torch.tensor([self.index[char] for char in text], dtype=torch.long)

    def decode(self, ids) -> str:
        """The string of token ids (L,)."""
        ids = torch.as_tensor(ids).flatten().tolist()
        if any(not 0 <= i < len(self.chars) for i in ids):
            raise ValueError(f"token ids must be in [0, {len(self.chars)})")
        return "".join(self.chars[i] for i in ids)


def split(ids, valid_fraction=0.1) -> tuple[torch.Tensor, torch.Tensor]:
    """(train ids, validation ids): the first and the last `valid_fraction` of ids (L,)."""
    valid_fraction = validation.probability(valid_fraction, "valid_fraction")
    cut = len(ids) - int(round(len(ids) * valid_fraction))
    return ids[:cut], ids[cut:]


def random_windows(ids, batch_size, length, generator) -> torch.Tensor:
    """batch_size windows of `length` consecutive ids, drawn with `generator`: (N, T)."""
    batch_size = validation.positive_int(batch_size, "batch_size")
    length = validation.positive_int(length, "length")
    if length > len(ids):
        raise ValueError(f"length={length} exceeds the {len(ids)} ids")
    starts = torch.randint(len(ids) - length + 1, (batch_size,), generator=generator)  # (N,)
    return ids[starts[:, None] + torch.arange(length)]  # (N, T)
