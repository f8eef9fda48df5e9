"""Lesson 06's training recipe for the noisy squares, and the training run that follows it.

The lecture, the lab's training test and the bench train with the same `RECIPE`: the same data,
seeds, hidden size, batch size, epochs and learning rate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from torch import nn

from utils import validation
from utils.data import Batches, make_squares, squares_tensors
from utils.seq2seq import source_mask
from utils.training import History, fit, loader_loss, seeded


@dataclass(frozen=True)
class TrainingRecipe:
    """Data sizes, seeds and hyperparameters shared by the lecture, the lab test and the bench.

    The hidden size is small on purpose. The plain decoder's output layer reads each point off
    its state, so with 2 numbers a state that holds the prediction has little room left for the
    rest of the square: after the recipe's 100 epochs the plain model is at a test MSE above 0.2
    (still falling slowly: about 0.21 after 300 epochs with seed 0), while attention brings the
    source back at every step and comes close to the noise floor 0.01 in the same budget. With 4
    numbers the plain model has room enough and both models do well (lecture 06, section 8).
    The lecture and the lab train on 1 thread (for reproducible numbers), the bench on 2.
    """

    n_train: int = 1024
    n_test: int = 1024
    n_val: int = 1024
    train_seed: int = 0
    test_seed: int = 1
    val_seed: int = 2
    noise: float = 0.1
    hidden_dim: int = 2
    batch_size: int = 256
    epochs: int = 100
    lr: float = 0.02
    teacher_forcing: float = 0.5

    def __post_init__(self):
        """Raise ValueError for sizes, seeds or rates that cannot work."""
        for name in ("n_train", "n_test", "n_val", "hidden_dim", "batch_size", "epochs"):
            validation.positive_int(getattr(self, name), name)
        seeds = {name: validation.seed(getattr(self, name), name)
                 for name in ("train_seed", "test_seed", "val_seed")}
        if len(set(seeds.values())) < len(seeds):
            raise ValueError(f"train_seed, test_seed and val_seed must all differ, got {seeds}")
        validation.positive_number(self.lr, "lr")  # the same check as utils.training.fit
        validation.probability(self.teacher_forcing, "teacher_forcing")

    def shortened(self, factor: int = 2) -> TrainingRecipe:
        """The same recipe with epochs divided by factor (for quick checks)."""
        factor = validation.positive_int(factor, "factor")
        return replace(self, epochs=max(1, self.epochs // factor))


RECIPE = TrainingRecipe()


def _squares(recipe, n, seed, variable_length):
    """(source, target[, lengths]) of n squares from seed: lengths only if variable_length."""
    squares = make_squares(n, seed, recipe.noise, variable_length)
    return squares_tensors(squares)[: 3 if variable_length else 2]


def squares_batches(recipe: TrainingRecipe = RECIPE, variable_length: bool = False):
    """Train batches (shuffled) and one test batch of the squares, from different seeds."""
    train_tensors = _squares(recipe, recipe.n_train, recipe.train_seed, variable_length)
    test_tensors = _squares(recipe, recipe.n_test, recipe.test_seed, variable_length)
    train_batches = Batches(train_tensors, recipe.batch_size, shuffle=True, seed=recipe.train_seed)
    test_batches = Batches(test_tensors, recipe.n_test)
    return train_batches, test_batches


def validation_batches(recipe: TrainingRecipe = RECIPE, variable_length: bool = False) -> Batches:
    """One batch of n_val squares from val_seed: for decisions in training, never the test set."""
    val_tensors = _squares(recipe, recipe.n_val, recipe.val_seed, variable_length)
    return Batches(val_tensors, recipe.n_val)


def seq2seq_forward(model, batch):
    """Run model on a batch (source, target[, lengths]): the target only in training mode."""
    source, target = batch[0], batch[1]
    mask = source_mask(batch[2], source.shape[1]) if len(batch) > 2 else None
    return model(source, target if model.training else None, mask=mask)


STOP_CHECK_EPOCHS = 5  # how often train_seq2seq(..., stop_below=x) validates the model


def _below(threshold, val_batches):
    """stop(model, epoch) for fit: True every STOP_CHECK_EPOCHS epochs if val MSE < threshold."""

    def stop(model, epoch):
        if epoch % STOP_CHECK_EPOCHS:
            return False
        return loader_loss(model, val_batches, forward=seq2seq_forward) < threshold

    return stop


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
    stop_below: float | None = None,
) -> TrainingResult:
    """Build a model under seed, train it with the recipe on the squares, test it on new data.

    With stop_below, training ends at the first multiple of STOP_CHECK_EPOCHS epochs where the
    MSE on the validation squares (val_seed) is below it: the run is the same as the full one up
    to there, only shorter. The test squares decide nothing; they are measured once, at the end.
    """
    train_batches, test_batches = squares_batches(recipe, variable_length)
    with seeded(seed):
        model = build()
    val_batches = test_batches if track_test_loss else None
    stop = None
    if stop_below is not None:
        threshold = validation.positive_number(stop_below, "stop_below")
        stop = _below(threshold, validation_batches(recipe, variable_length))
    start = time.perf_counter()
    history = fit(
        model,
        train_batches,
        val_batches,
        epochs=recipe.epochs,
        lr=recipe.lr,
        seed=seed,
        forward=seq2seq_forward,
        stop=stop,
    )
    seconds = time.perf_counter() - start
    test_mse = loader_loss(model, test_batches, forward=seq2seq_forward)
    return TrainingResult(model, history, test_mse, seconds)
