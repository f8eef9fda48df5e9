"""GRU encoder-decoder building blocks for the noisy squares, and the recipe that trains them.

The plain (attention-free) encoder-decoder lives here; lab 06 adds attention to it. Every model
returns its outputs (and attention weights, where it has them) instead of storing them on self.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence

from utils import validation
from utils.data import TARGET_LENGTH, make_squares, squares_tensors
from utils.training import History, evaluate, fit, seeded

N_FEATURES = 2  # a point of a square has two coordinates


@dataclass(frozen=True)
class TrainingRecipe:
    """Data sizes, seeds and hyperparameters shared by the lecture, the lab test and the bench.

    The hidden size is small on purpose. The plain decoder's output layer reads each point off
    its state, so with 2 numbers a state that holds the prediction has no room left for the
    direction of the square: the plain model fails (test MSE above 0.2), while attention brings
    the source back at every step and comes close to the noise floor 0.01. With 4 numbers the
    plain model has room enough and both models do well (lecture 06, section 8).
    The lecture and the lab train on 1 thread (for reproducible numbers), the bench on 2.
    """

    n_train: int = 1024
    n_test: int = 1024
    train_seed: int = 0
    test_seed: int = 1
    noise: float = 0.1
    hidden_dim: int = 2
    batch_size: int = 256
    epochs: int = 100
    lr: float = 0.02
    teacher_forcing: float = 0.5

    def __post_init__(self):
        """Raise ValueError for sizes, seeds or rates that cannot work."""
        for name in ("n_train", "n_test", "hidden_dim", "batch_size", "epochs"):
            validation.positive_int(getattr(self, name), name)
        for name in ("train_seed", "test_seed"):
            validation.seed(getattr(self, name), name)
        if self.train_seed == self.test_seed:
            raise ValueError(f"train_seed and test_seed must differ, got both {self.train_seed}")
        validation.positive_number(self.lr, "lr")  # the same check as utils.training.fit
        _check_teacher_forcing(self.teacher_forcing)

    def shortened(self, factor: int = 2) -> TrainingRecipe:
        """The same recipe with epochs divided by factor (for quick checks)."""
        if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
            raise ValueError(f"factor must be a positive integer, got {factor!r}")
        return replace(self, epochs=max(1, self.epochs // factor))



def _check_teacher_forcing(value) -> float:
    """Return value as a float, or raise ValueError unless it is a probability."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"teacher_forcing must be a probability in [0, 1], got {value!r}")
    return float(value)


RECIPE = TrainingRecipe()


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


class Decoder(nn.Module):
    """One decoding step without attention: the GRU state alone predicts the next point."""

    def __init__(self, n_features: int, hidden_dim: int):
        super().__init__()
        self.n_features = validation.positive_int(n_features, "n_features")
        self.hidden_dim = validation.positive_int(hidden_dim, "hidden_dim")
        self.cell = nn.GRUCell(n_features, hidden_dim)
        self.output = nn.Linear(hidden_dim, n_features)

    def forward(self, x, hidden):
        """Input x (N, 1, F), hidden (N, H) -> prediction (N, 1, F), new hidden (N, H)."""
        hidden = self.cell(x[:, 0], hidden)  # (N, H)
        prediction = self.output(hidden).unsqueeze(1)  # (N, 1, F)
        return prediction, hidden


class EncoderDecoder(nn.Module):
    """The plain encoder-decoder: the decoder sees the source only through one vector (N, H)."""

    def __init__(self, encoder, decoder, target_len: int, teacher_forcing: float = 0.5):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.target_len = validation.positive_int(target_len, "target_len")
        self.teacher_forcing = _check_teacher_forcing(teacher_forcing)

    def forward(self, source, target=None, mask=None):
        """Source (N, Lk, F), target (N, Lq, F) or None, mask (N, 1, Lk) -> (N, Lq, F)."""
        _, hidden = self.encoder(source, mask)  # (N, H)
        x = last_step(source, mask)  # (N, 1, F): the decoder starts from the last source point
        predictions = []
        for step in range(self.target_len):
            prediction, hidden = self.decoder(x, hidden)  # (N, 1, F), (N, H)
            predictions.append(prediction)
            forcing = self.training and target is not None
            if forcing and torch.rand(()).item() < self.teacher_forcing:
                x = target[:, step : step + 1]  # (N, 1, F): the true point
            else:
                x = prediction  # (N, 1, F): the model's own guess
        return torch.cat(predictions, dim=1)  # (N, Lq, F)


def baseline_model(hidden_dim: int = RECIPE.hidden_dim, teacher_forcing=RECIPE.teacher_forcing):
    """A fresh plain EncoderDecoder for the squares (2 features in, 2 target points out)."""
    encoder = Encoder(N_FEATURES, hidden_dim)
    decoder = Decoder(N_FEATURES, hidden_dim)
    return EncoderDecoder(encoder, decoder, TARGET_LENGTH, teacher_forcing=teacher_forcing)


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


def squares_batches(recipe: TrainingRecipe = RECIPE, variable_length: bool = False):
    """Train batches (shuffled) and one test batch of the squares, from different seeds."""
    train = make_squares(recipe.n_train, recipe.train_seed, recipe.noise, variable_length)
    test = make_squares(recipe.n_test, recipe.test_seed, recipe.noise, variable_length)
    keep = 3 if variable_length else 2
    train_tensors = squares_tensors(train)[:keep]
    test_tensors = squares_tensors(test)[:keep]
    train_batches = Batches(train_tensors, recipe.batch_size, shuffle=True, seed=recipe.train_seed)
    test_batches = Batches(test_tensors, recipe.n_test)
    return train_batches, test_batches


def seq2seq_forward(model, batch):
    """Run model on a batch (source, target[, lengths]): the target only in training mode."""
    source, target = batch[0], batch[1]
    mask = source_mask(batch[2], source.shape[1]) if len(batch) > 2 else None
    return model(source, target if model.training else None, mask=mask)


@dataclass
class TrainingResult:
    """A trained model with its loss history, test MSE and training time in seconds."""

    model: nn.Module
    history: History
    test_mse: float
    seconds: float


def train_seq2seq(
    build: Callable[[], nn.Module],
    recipe: TrainingRecipe = RECIPE,
    seed: int = 0,
    variable_length: bool = False,
    track_test_loss: bool = True,
) -> TrainingResult:
    """Build a model under seed, train it with the recipe on the squares, test it on new data."""
    train_batches, test_batches = squares_batches(recipe, variable_length)
    with seeded(seed):
        model = build()
    val_batches = test_batches if track_test_loss else None
    start = time.perf_counter()
    history = fit(
        model,
        train_batches,
        val_batches,
        epochs=recipe.epochs,
        lr=recipe.lr,
        seed=seed,
        forward=seq2seq_forward,
    )
    seconds = time.perf_counter() - start
    test_mse = evaluate(model, test_batches, forward=seq2seq_forward)
    return TrainingResult(model, history, test_mse, seconds)
