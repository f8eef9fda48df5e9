"""Lab 11's translation task, generated: English number words into digits ("three hundred
forty two" -> "3 4 2"), one vocabulary with padding, start and end tokens, seeded splits and
padded batches."""

from __future__ import annotations

import numpy as np
import torch

from utils import validation

PAD, BOS, EOS = 0, 1, 2
SPECIAL = ("<pad>", "<bos>", "<eos>")
ONES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
        "eighteen", "nineteen")
TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
DIGITS = tuple("0123456789")
WORDS = (*ONES, *TENS, "hundred")
TOKENS = (*SPECIAL, *WORDS, *DIGITS)
LARGEST = 999
MAX_SOURCE, MAX_TARGET = 4, 4  # words of the longest number; its 3 digits and the end token


def number_words(n) -> list[str]:
    """The English words of an integer n in 0 .. 999, without "and": 342 -> three hundred ..."""
    n = validation.index(n, "n", LARGEST + 1)
    hundreds, rest = divmod(n, 100)
    words = [ONES[hundreds], "hundred"] if hundreds else []
    if rest >= 20:
        words.append(TENS[rest // 10 - 2])
        rest %= 10
        if rest:
            words.append(ONES[rest])
    elif rest or not words:
        words.append(ONES[rest])
    return words


def number_digits(n) -> list[str]:
    """The decimal digits of an integer n in 0 .. 999, one token each: 342 -> ["3", "4", "2"]."""
    return list(str(validation.index(n, "n", LARGEST + 1)))


class Vocabulary:
    """The task's tokens: <pad> = 0, <bos> = 1, <eos> = 2, the number words, the digits."""

    def __init__(self) -> None:
        self.tokens = TOKENS
        self.ids = {token: i for i, token in enumerate(TOKENS)}

    def __len__(self) -> int:
        """The number of tokens, n_vocab."""
        return len(self.tokens)

    def encode(self, tokens) -> list[int]:
        """The ids of a list of tokens (strings); ValueError for a token it does not hold."""
        unknown = [token for token in tokens if token not in self.ids]
        if unknown:
            raise ValueError(f"tokens must be words of the vocabulary, got {unknown}")
        return [self.ids[token] for token in tokens]

    def decode(self, ids) -> list[str]:
        """The tokens of ids (N,), up to the first <eos>, without <pad>, <bos> or <eos>."""
        found = []
        for i in torch.as_tensor(ids).tolist():
            i = validation.index(i, "token id", len(self.tokens))
            if i == EOS:
                break
            if i not in (PAD, BOS):
                found.append(self.tokens[i])
        return found


def padded(sequences, vocabulary: Vocabulary, end=False) -> torch.Tensor:
    """Token lists as ids (N, L), padded on the right with <pad>; end=True adds <eos> to each."""
    ids = [vocabulary.encode(tokens) + ([EOS] if end else []) for tokens in sequences]
    if not ids:
        raise ValueError("sequences must hold at least one token list")
    out = torch.full((len(ids), max(map(len, ids))), PAD, dtype=torch.long)
    for row, values in enumerate(ids):
        out[row, :len(values)] = torch.tensor(values, dtype=torch.long)
    return out


def split_numbers(seed=0, n_valid=200) -> tuple[np.ndarray, np.ndarray]:
    """The numbers 0 .. 999 shuffled by seed, cut into (train, valid), valid of n_valid."""
    seed = validation.seed(seed)
    n_valid = validation.index(n_valid, "n_valid", LARGEST + 1)
    order = np.random.default_rng(seed).permutation(LARGEST + 1)
    return np.sort(order[n_valid:]), np.sort(order[:n_valid])


def number_pairs(numbers, vocabulary: Vocabulary) -> tuple[torch.Tensor, torch.Tensor]:
    """Sources (N, Ls) of number words and targets (N, Lt) of digits then <eos>, padded."""
    numbers = [int(n) for n in np.asarray(numbers).reshape(-1)]
    source = padded([number_words(n) for n in numbers], vocabulary)
    target = padded([number_digits(n) for n in numbers], vocabulary, end=True)
    return source, target


def batched(source, target, batch_size, seed=0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(source, target) pairs of rows shuffled by seed, in batches of batch_size (the last may
    be smaller), each cut to its longest source and target."""
    batch_size = validation.positive_int(batch_size, "batch_size")
    if len(source) != len(target):
        raise ValueError(f"source and target must hold as many rows, got {len(source)} and "
                         f"{len(target)}")
    order = torch.from_numpy(np.random.default_rng(validation.seed(seed)).permutation(len(source)))
    found = []
    for rows in order.split(batch_size):
        src, tgt = source[rows], target[rows]
        found.append((src[:, :int((src != PAD).sum(1).max())],
                      tgt[:, :int((tgt != PAD).sum(1).max())]))
    return found
