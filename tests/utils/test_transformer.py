"""Tests for utils.transformer: digit-reversal data, the tiny causal model, RoPE and masks."""

import math

import pytest
import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from utils import transformer
from utils.transformer import (
    SEPARATOR,
    VOCAB_SIZE,
    TinyCausalLM,
    attention_weights,
    causal_mask,
    reversal_accuracy,
    reversal_data,
    rotate,
    train_reversal,
)


def test_reversal_data_is_digits_separator_reversal():
    tokens = reversal_data(5, 4, seed=0)
    assert tokens.shape == (5, 9) and tokens.dtype == torch.long
    assert bool((tokens[:, 4] == SEPARATOR).all())
    assert torch.equal(tokens[:, 5:], tokens[:, :4].flip(1))
    assert bool((tokens[:, :4] < 10).all())


def test_reversal_data_depends_only_on_its_seed():
    torch.manual_seed(0)
    first = reversal_data(20, 3, seed=7)
    torch.manual_seed(1)
    assert torch.equal(first, reversal_data(20, 3, seed=7))
    assert not torch.equal(first, reversal_data(20, 3, seed=8))


@pytest.mark.parametrize(("n", "length", "seed"), [(0, 3, 0), (3, 0, 0), (3, 2, -1), (2.5, 2, 0)])
def test_reversal_data_refuses_bad_arguments(n, length, seed):
    with pytest.raises(ValueError):
        reversal_data(n, length, seed)


def test_causal_mask_is_lower_triangular():
    assert torch.equal(causal_mask(3), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]]).bool())
    with pytest.raises(ValueError):
        causal_mask(0)


@pytest.mark.parametrize("positions", ["none", "learned", "rope", torch.randn(16, 8)])
def test_model_is_causal_with_every_kind_of_positions(positions):
    torch.manual_seed(0)
    model = TinyCausalLM(d_model=8, n_heads=2, d_ff=16, max_length=16, positions=positions).eval()
    tokens = reversal_data(2, 3, seed=0)  # (2, 7)
    logits = model(tokens)
    assert logits.shape == (2, 7, VOCAB_SIZE)
    changed = tokens.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 10  # change only the last token
    assert torch.allclose(model(changed)[:, :-1], logits[:, :-1], atol=1e-6)


def test_model_refuses_bad_positions_and_long_sequences():
    with pytest.raises(ValueError, match="max_length"):
        TinyCausalLM(d_model=8, n_heads=2, max_length=4, positions=torch.zeros(5, 8))
    with pytest.raises(ValueError, match="positions"):
        TinyCausalLM(d_model=8, n_heads=2, positions="rotary")
    model = TinyCausalLM(d_model=8, n_heads=2, max_length=4)
    with pytest.raises(ValueError, match="max_length=4"):
        model(torch.zeros(1, 5, dtype=torch.long))


def test_rotate_turns_each_pair_by_position_times_frequency():
    x = torch.zeros(1, 3, 4)  # (N, L, d_head): pair 0 = (1, 0), pair 1 = (0, 1) at every position
    x[..., 0], x[..., 3] = 1.0, 1.0
    p = torch.arange(3.0)
    expected = torch.stack([p.cos(), p.sin(), -(p / 100).sin(), (p / 100).cos()], dim=-1)
    assert torch.allclose(rotate(x), expected[None], atol=1e-6)
    q, k = torch.randn(2, 8).unbind(0)
    scores = rotate(q.expand(6, 8)) @ rotate(k.expand(6, 8)).T  # (L, L): depends on p - m only
    assert torch.allclose(scores[1:, 1:], scores[:-1, :-1], atol=1e-5)


def test_rope_model_adds_nothing_to_the_embeddings_and_is_not_a_bag_of_tokens():
    torch.manual_seed(0)
    model = TinyCausalLM(d_model=8, n_heads=2, d_ff=16, max_length=16, positions="rope").eval()
    tokens = reversal_data(1, 3, seed=0)  # (1, 7)
    assert torch.equal(model.inputs(tokens), model.embed(tokens))
    swapped = tokens[:, [1, 0, 2, 3, 4, 5, 6]]  # the first two digits exchanged
    with torch.no_grad():
        assert not torch.allclose(model(swapped)[:, -1], model(tokens)[:, -1], atol=1e-6)
    with pytest.raises(ValueError, match="src_mask"):
        model.layers[0](torch.zeros(1, 2, 8), src_key_padding_mask=torch.zeros(1, 2).bool())


@pytest.mark.parametrize("positions", ["learned", "rope"])
def test_attention_weights_are_causal_distributions(positions):
    torch.manual_seed(0)
    model = TinyCausalLM(
        d_model=8, n_heads=2, n_layers=2, d_ff=16, max_length=16, positions=positions
    )
    maps = attention_weights(model, reversal_data(3, 2, seed=1))  # (layers, N, heads, L, L)
    assert maps.shape == (2, 3, 2, 5, 5)
    assert torch.allclose(maps.sum(dim=-1), torch.ones(2, 3, 2, 5))
    assert bool((maps[..., ~causal_mask(5)] == 0).all())


@pytest.mark.slow  # trains a transformer
def test_training_lowers_the_loss_and_accuracy_is_a_rate():
    torch.manual_seed(0)
    model = TinyCausalLM(d_model=16, n_heads=2, d_ff=32, max_length=16, positions="learned")
    tokens = reversal_data(256, 3, seed=0)
    losses, seconds = train_reversal(model, tokens, steps=40, batch_size=32, seed=0)
    assert len(losses) == 40 and seconds > 0
    assert sum(losses[-5:]) < sum(losses[:5])
    exact, per_digit = reversal_accuracy(model, tokens)
    assert 0.0 <= exact <= per_digit <= 1.0
    assert model.training  # reversal_accuracy restores the mode it found


def test_rope_frequencies_are_one_home_for_every_rotation():
    omega = transformer.rope_frequencies(8, base=100.0, dtype=torch.float64)
    torch.testing.assert_close(omega, torch.tensor([1.0, 100 ** -0.25, 100 ** -0.5, 100 ** -0.75],
                                                   dtype=torch.float64))
    pair = torch.tensor([[1.0, 0.0] * 4])  # (1, 8): each pair at angle 0
    turned = transformer.rotate(pair, base=100.0, start=1)  # position 1: pair i turned by omega_i
    torch.testing.assert_close(turned[0, 0::2], omega.float().cos())
    with pytest.raises(ValueError, match="d_head must be even"):
        transformer.rope_frequencies(7)
    with pytest.raises(ValueError, match="base"):
        transformer.rope_frequencies(8, base=0)


def test_masked_softmax_gives_hidden_keys_and_empty_rows_zero():
    scores = torch.tensor([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    allowed = torch.tensor([[True, False, True], [False, False, False]])
    weights = transformer.masked_softmax(scores, allowed)
    torch.testing.assert_close(weights[0], torch.softmax(torch.tensor([1.0, -math.inf, 3.0]), 0))
    assert weights[1].eq(0).all()


class NaNRecorder(TorchDispatchMode):
    """Record every ATen operation whose floating-point result holds a NaN, forward or backward."""

    def __init__(self):
        super().__init__()
        self.creators = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        for tensor in pytree.tree_leaves(result):
            floating = isinstance(tensor, torch.Tensor) and tensor.is_floating_point()
            if floating and tensor.isnan().any():
                self.creators.append(str(func))
        return result


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_masked_softmax_never_creates_a_nan_forward_or_backward(dtype):
    scores = torch.randn(2, 3, 4, dtype=dtype).requires_grad_()
    allowed = torch.tensor([[True, False, True, True], [False] * 4, [True] + [False] * 3])
    with NaNRecorder() as recorder:
        weights = transformer.masked_softmax(scores, allowed)
        (weights * torch.arange(4.0, dtype=dtype)).sum().backward()
    assert recorder.creators == []
    assert weights[:, 1].eq(0).all() and weights[:, 2, 0].eq(1).all()
    assert scores.grad[:, 1].eq(0).all() and scores.grad.isfinite().all()


def test_masked_softmax_matches_softmax_where_every_key_is_allowed():
    scores = torch.randn(3, 5, 7)
    weights = transformer.masked_softmax(scores, torch.ones(5, 7, dtype=torch.bool))
    torch.testing.assert_close(weights, scores.softmax(dim=-1))


def test_masked_softmax_has_softmax_gradients_under_a_causal_mask():
    # The first row keeps one key, whose exponentials sum to exactly 1: its gradient is 0.
    scores = torch.randn(2, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    upstream = torch.randn(2, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    allowed = torch.ones(4, 4, dtype=torch.bool).tril()
    ours = scores.clone().requires_grad_()
    (transformer.masked_softmax(ours, allowed) * upstream).sum().backward()
    theirs = scores.clone().requires_grad_()
    (theirs.masked_fill(~allowed, float("-inf")).softmax(-1) * upstream).sum().backward()
    assert torch.allclose(ours.grad, theirs.grad, atol=1e-12)
    assert ours.grad[:, 0].abs().max() == 0


def test_masked_softmax_refuses_a_mask_that_is_not_boolean():
    with pytest.raises(ValueError, match="bool tensor"):
        transformer.masked_softmax(torch.zeros(2, 2), torch.ones(2, 2))
