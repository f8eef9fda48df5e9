"""A tiny trainer: fit a model with Adam, return the loss history, leave global state alone."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

from utils import validation


@dataclass
class History:
    """Mean loss per epoch: train_loss (epochs,) and val_loss (epochs,) or empty without val."""

    train_loss: list[float] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)


def _prediction(output) -> torch.Tensor:
    """The prediction in a model output: the output itself, or its first element if a tuple."""
    return output[0] if isinstance(output, (tuple, list)) else output


def _split_batch(batch) -> tuple[torch.Tensor, torch.Tensor]:
    """The (x, y) of a batch (x, y) or (x, y, *extra)."""
    if not isinstance(batch, (tuple, list)) or len(batch) < 2:
        raise ValueError(f"each batch must be a tuple (x, y) or (x, y, *extra), got {batch!r}")
    return batch[0], batch[1]


def _default_forward(model: nn.Module, batch) -> torch.Tensor:
    """The default forward(model, batch): model(x) for a batch (x, y[, *extra])."""
    x, _ = _split_batch(batch)
    return model(x)


def _run_epoch(model, loader, loss_fn, forward, optimizer=None) -> float:
    """One pass over loader, training if an optimizer is given; returns the mean loss per sample."""
    total_loss = torch.zeros(())
    n_samples = 0
    for batch in loader:
        _, y = _split_batch(batch)
        loss = loss_fn(_prediction(forward(model, batch)), y)
        if optimizer is not None:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        total_loss += loss.detach().cpu() * len(y)
        n_samples += len(y)
    if n_samples == 0:
        raise ValueError("loader must yield at least one batch, got none")
    return total_loss.item() / n_samples


def fit(
    model,
    train_loader,
    val_loader=None,
    *,
    epochs,
    lr=1e-2,
    loss_fn=None,
    seed=0,
    forward=None,
    stop=None,
) -> History:
    """Train model with Adam on batches (x, y[, *extra]) for epochs; returns the History.

    stop, if given, is called as stop(model, epoch) after each epoch (epoch counts from 1) and
    ends the training early when it returns True.
    """
    validation.module(model)
    validation.batches(train_loader, "train_loader")
    if val_loader is not None:
        validation.batches(val_loader, "val_loader")
    validation.positive_int(epochs, "epochs")
    lr = validation.positive_number(lr, "lr")
    validation.seed(seed)
    validation.optional_callable(loss_fn, "loss_fn")
    validation.optional_callable(forward, "forward")
    validation.optional_callable(stop, "stop")
    parameters = [p for p in model.parameters() if p.requires_grad]
    if not parameters:
        raise ValueError("model must have at least one trainable parameter, got none")

    loss_fn = loss_fn or nn.MSELoss()
    forward = forward or _default_forward
    history = History()
    with seeded(seed):
        optimizer = torch.optim.Adam(parameters, lr=lr)
        for epoch in range(1, epochs + 1):
            model.train()
            history.train_loss.append(_run_epoch(model, train_loader, loss_fn, forward, optimizer))
            if val_loader is not None:
                history.val_loss.append(loader_loss(model, val_loader, loss_fn, forward))
            if stop is not None and stop(model, epoch):
                break
    model.eval()
    return history


def loader_loss(model, loader, loss_fn=None, forward=None) -> float:
    """Mean loss per sample of model over loader's batches (x, y[, *extra]), in eval mode."""
    validation.module(model)
    validation.batches(loader, "loader")
    validation.optional_callable(loss_fn, "loss_fn")
    validation.optional_callable(forward, "forward")
    model.eval()
    with torch.no_grad():
        loss_fn = loss_fn or nn.MSELoss()
        return _run_epoch(model, loader, loss_fn, forward or _default_forward)


def predict_with_weights(model, x, **kwargs):
    """The whole output of model(x, **kwargs) in eval mode, no gradients: e.g. (pred, weights)."""
    validation.module(model)
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"x must be a torch.Tensor, got {type(x).__name__}")
    model.eval()
    with torch.no_grad():
        return model(x, **kwargs)


def predict(model, x, **kwargs) -> torch.Tensor:
    """The prediction of model(x, **kwargs) in eval mode without gradients (first of a tuple)."""
    return _prediction(predict_with_weights(model, x, **kwargs))


@contextmanager
def seeded(seed):
    """Run the block with torch's RNG seeded to seed, then restore the previous RNG state."""
    seed = validation.seed(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        yield


@contextmanager
def evaluating(model):
    """Run the block with model in eval mode and without gradients, then restore its mode."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


def one_cycle_steps(
    model, batch_loss: Callable[[], torch.Tensor], optimizer, steps, lr, after_step=None
) -> tuple[list[float], float]:
    """Take `steps` steps on batch_loss() under a one-cycle schedule: (losses, seconds).

    after_step(step), if given, runs after each step (from 1) and leaves the model in training
    mode; its time is not counted in the seconds.
    """
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=steps)
    losses, seconds = [], 0.0
    model.train()
    for step in range(1, steps + 1):
        start = time.perf_counter()
        loss = batch_loss()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        seconds += time.perf_counter() - start
        losses.append(loss.item())
        if after_step is not None:
            after_step(step)
            model.train()
    return losses, seconds


def count_parameters(model, trainable_only=True) -> int:
    """Number of scalar parameters in model (only those requiring grad if trainable_only)."""
    validation.module(model)
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)
