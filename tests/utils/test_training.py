"""Tests for utils.training: fit, loader_loss, predict, seeded, count_parameters."""

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from utils.training import (
    History,
    count_parameters,
    evaluating,
    fit,
    loader_loss,
    one_cycle_steps,
    predict,
    predict_with_weights,
    seeded,
)


def regression_loaders(n=64, batch_size=16, extra=False):
    """Loaders over y = x @ w for x (n, 3): batches (x, y) or (x, y, extra)."""
    generator = torch.Generator().manual_seed(123)
    x = torch.randn(n, 3, generator=generator)  # (n, 3)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]])  # (n, 1)
    tensors = (x, y, torch.arange(n)) if extra else (x, y)
    dataset = TensorDataset(*tensors)
    shuffle = DataLoader(
        dataset, batch_size=batch_size, shuffle=True, generator=torch.Generator().manual_seed(0)
    )
    return shuffle, DataLoader(dataset, batch_size=batch_size)


def new_linear(seed=0):
    """A fresh nn.Linear(3, 1) built reproducibly."""
    with seeded(seed):
        return nn.Linear(3, 1)


class WithWeights(nn.Module):
    """A linear model that returns (prediction, weights) like an attention model."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 1)

    def forward(self, x):
        return self.linear(x), torch.softmax(x, dim=-1)


class RecordsCalls(nn.Module):
    """A model that remembers whether it was given a target, and in which mode."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 1)
        self.calls = []

    def forward(self, x, target=None):
        self.calls.append((self.training, target is not None))
        return self.linear(x)


def test_history_defaults_to_empty_lists():
    history = History()
    assert history.train_loss == [] and history.val_loss == []


def test_fit_returns_one_loss_per_epoch_and_loss_decreases():
    train, val = regression_loaders()
    model = new_linear()
    history = fit(model, train, val, epochs=30, lr=0.05)
    assert isinstance(history, History)
    assert len(history.train_loss) == len(history.val_loss) == 30
    assert all(isinstance(loss, float) for loss in history.train_loss + history.val_loss)
    assert history.train_loss[-1] < 0.1 * history.train_loss[0]
    assert history.val_loss[-1] < 0.1 * history.val_loss[0]
    assert not model.training


def test_fit_stops_when_asked_and_matches_the_full_run_up_to_there():
    histories, calls = [], []
    for stop in (None, lambda model, epoch: calls.append(epoch) or epoch == 3):
        train, val = regression_loaders()
        with seeded(1):
            model = new_linear()
        histories.append(fit(model, train, val, epochs=6, seed=2, stop=stop))
    full, stopped = histories
    assert calls == [1, 2, 3]
    assert stopped.train_loss == full.train_loss[:3] and stopped.val_loss == full.val_loss[:3]
    assert not model.training


def test_fit_without_validation_has_empty_val_loss():
    train, _ = regression_loaders()
    history = fit(new_linear(), train, epochs=2)
    assert len(history.train_loss) == 2 and history.val_loss == []


def test_fit_is_reproducible_with_the_same_seed():
    losses = []
    for _ in range(2):
        train, val = regression_loaders()
        with seeded(1):
            model = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.5), nn.Linear(8, 1))
        losses.append(fit(model, train, val, epochs=3, seed=5).train_loss)
    assert losses[0] == losses[1]
    train, val = regression_loaders()
    with seeded(1):
        model = nn.Sequential(nn.Linear(3, 8), nn.Dropout(0.5), nn.Linear(8, 1))
    assert fit(model, train, val, epochs=3, seed=6).train_loss != losses[0]


def test_fit_and_seeded_leave_global_rng_alone():
    numpy_state = np.random.get_state()
    torch_state = torch.get_rng_state()
    train, val = regression_loaders()
    with seeded(3):
        model = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.2), nn.Linear(4, 1))
    fit(model, train, val, epochs=2)
    assert torch.equal(torch_state, torch.get_rng_state())
    assert np.array_equal(numpy_state[1], np.random.get_state()[1])


def test_seeded_gives_the_same_numbers_each_time():
    with seeded(4):
        first = torch.randn(5)
    with seeded(4):
        second = torch.randn(5)
    assert torch.equal(first, second)
    assert torch.equal(new_linear(2).weight, new_linear(2).weight)


def test_val_loss_is_the_mean_over_samples():
    train, val = regression_loaders(n=10, batch_size=4)  # batches of 4, 4 and 2
    model = new_linear()
    history = fit(model, train, val, epochs=1)
    x, y = val.dataset.tensors
    with torch.no_grad():
        expected = nn.functional.mse_loss(model(x), y).item()
    assert history.val_loss[0] == pytest.approx(expected, rel=1e-5)
    assert loader_loss(model, val) == pytest.approx(expected, rel=1e-5)


def test_fit_accepts_models_returning_a_tuple():
    train, val = regression_loaders()
    with seeded(0):
        model = WithWeights()
    history = fit(model, train, val, epochs=5, lr=0.05)
    assert history.train_loss[-1] < history.train_loss[0]
    x = val.dataset.tensors[0][:4]
    assert predict(model, x).shape == (4, 1)
    prediction, weights = predict_with_weights(model, x)
    assert prediction.shape == (4, 1) and weights.shape == (4, 3)


def test_a_forward_function_can_pass_the_target_only_in_training():
    train, val = regression_loaders()
    with seeded(0):
        model = RecordsCalls()

    def forward(model, batch):
        x, y = batch
        return model(x, y) if model.training else model(x)

    fit(model, train, val, epochs=1, forward=forward)
    training_calls = [given for training, given in model.calls if training]
    eval_calls = [given for training, given in model.calls if not training]
    assert training_calls and all(training_calls)
    assert eval_calls and not any(eval_calls)


def test_without_teacher_forcing_the_target_is_not_passed():
    train, _ = regression_loaders()
    with seeded(0):
        model = RecordsCalls()
    fit(model, train, epochs=1)
    assert not any(given for _, given in model.calls)


def test_extra_batch_items_are_ignored_by_default_and_reach_a_custom_forward():
    train, val = regression_loaders(extra=True)
    seen = []

    def forward(model, batch):
        x, _, index = batch
        seen.append(index)
        return model(x)

    fit(new_linear(), train, val, epochs=1)
    fit(new_linear(), train, val, epochs=1, forward=forward)
    assert sorted(torch.cat(seen).tolist()) == sorted(list(range(64)) * 2)


def test_custom_loss_fn_is_used():
    train, val = regression_loaders()
    history = fit(new_linear(), train, val, epochs=1, loss_fn=lambda p, y: (p - y).abs().mean())
    mse = fit(new_linear(), train, val, epochs=1).train_loss
    assert history.train_loss != mse


def test_predict_leaves_no_graph_and_uses_eval_mode():
    model = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.9))
    x = torch.ones(2, 3)
    first, second = predict(model, x), predict(model, x)
    assert torch.equal(first, second)
    assert not first.requires_grad
    assert not model.training


def test_count_parameters():
    model = nn.Linear(3, 2)  # 3 * 2 weights + 2 biases
    assert count_parameters(model) == 8
    model.bias.requires_grad_(False)
    assert count_parameters(model) == 6
    assert count_parameters(model, trainable_only=False) == 8


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": "linear"}, "model must be a torch.nn.Module"),
        ({"train_loader": None}, "train_loader must be an iterable"),
        ({"val_loader": 3}, "val_loader must be an iterable"),
        ({"epochs": 0}, "epochs must be a positive integer"),
        ({"epochs": 2.0}, "epochs must be a positive integer"),
        ({"lr": 0}, "lr must be a positive number"),
        ({"lr": float("inf")}, "lr must be a positive number"),
        ({"seed": -1}, "seed must be a non-negative integer"),
        ({"loss_fn": "mse"}, "loss_fn must be callable or None"),
        ({"forward": 1}, "forward must be callable or None"),
        ({"stop": True}, "stop must be callable or None"),
        ({"model": nn.ReLU()}, "model must have at least one trainable parameter"),
        ({"train_loader": []}, "loader must yield at least one batch"),
        ({"train_loader": [torch.ones(2, 3)]}, "each batch must be a tuple \\(x, y\\)"),
    ],
)
def test_fit_rejects_bad_arguments(kwargs, message):
    train, _ = regression_loaders()
    arguments = {"model": nn.Linear(3, 1), "train_loader": train, "epochs": 1, **kwargs}
    model, loader = arguments.pop("model"), arguments.pop("train_loader")
    with pytest.raises(ValueError, match=message):
        fit(model, loader, **arguments)


def test_other_functions_reject_bad_arguments():
    _, val = regression_loaders()
    with pytest.raises(ValueError, match="model must be a torch.nn.Module"):
        loader_loss(None, val)
    with pytest.raises(ValueError, match="loader must be an iterable"):
        loader_loss(nn.Linear(3, 1), None)
    with pytest.raises(ValueError, match="loss_fn must be callable or None"):
        loader_loss(nn.Linear(3, 1), val, loss_fn=2)
    with pytest.raises(ValueError, match="x must be a torch.Tensor"):
        predict(nn.Linear(3, 1), [[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="model must be a torch.nn.Module"):
        predict_with_weights(lambda x: x, torch.ones(1, 3))
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        with seeded(-2):
            pass
    with pytest.raises(ValueError, match="model must be a torch.nn.Module"):
        count_parameters([torch.ones(3)])


def test_evaluating_switches_to_eval_without_gradients_and_restores_the_mode():
    model = new_linear().train()
    with evaluating(model):
        assert not model.training and not torch.is_grad_enabled()
    assert model.training and torch.is_grad_enabled()
    with pytest.raises(RuntimeError), evaluating(model.eval()):
        raise RuntimeError("a failure inside")
    assert not model.training


def test_one_cycle_steps_lowers_the_loss_and_calls_after_step_in_training_mode():
    torch.manual_seed(0)
    model, x = new_linear(), torch.randn(32, 3)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5]])
    calls = []

    def after_step(step):
        calls.append(step)
        model.eval()  # a checkpoint may evaluate; the next step trains again

    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    losses, seconds = one_cycle_steps(
        model, lambda: ((model(x) - y) ** 2).mean(), optimizer, 40, 0.1, after_step
    )
    assert len(losses) == 40 and calls == list(range(1, 41)) and seconds > 0
    assert losses[-1] < 0.1 * losses[0] and model.training
