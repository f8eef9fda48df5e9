"""Tests for utils.encoder_decoder: lesson 11's encoder-decoder transformer and its trainer."""

from dataclasses import replace
from functools import partial

import pytest
import torch

from utils import encoder_decoder as ed
from utils.seq2seq import source_mask
from utils.transformer import causal_mask


def small_model(seed=0, **kwargs):
    """A two-layer Seq2SeqTransformer with two heads, in eval mode."""
    torch.manual_seed(seed)
    return ed.Seq2SeqTransformer(d_model=16, n_heads=2, d_ff=32, n_layers=2, **kwargs).eval()


def padded_batch(seed=0):
    """Sources (4, 3, 2) of lengths 2, 3, 1, 3, their mask (4, 1, 3) and targets (4, 2, 2)."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([2, 3, 1, 3])
    mask = source_mask(lengths, 3)  # (4, 1, 3)
    source = torch.randn(4, 3, 2, generator=generator) * mask[:, 0, :, None]  # padding is 0
    return source, mask, torch.randn(4, 2, 2, generator=generator)


@pytest.mark.parametrize("with_mask", [False, True])
def test_the_body_matches_torch_transformer(with_mask):
    model = small_model()
    reference = ed.to_torch(model)
    source, mask, _ = padded_batch()
    mask = mask if with_mask else None
    x, y = torch.randn(4, 3, 16), torch.randn(4, 5, 16)  # Lq != Lk
    ours = model.body(x, y, mask)
    assert ours.shape == (4, 5, 16)
    torch.testing.assert_close(ours, ed.torch_body(reference, x, y, mask), atol=1e-5, rtol=1e-5)


def test_the_padding_and_the_later_targets_change_nothing():
    model = small_model()
    source, mask, target = padded_batch()
    predictions, maps = model.run(source, target, mask)
    moved = source.clone()
    moved[~mask[:, 0]] = 5.0  # other padding
    changed_target = target.clone()
    changed_target[:, -1] += 1.0  # the last target point is never an input
    again, _ = model.run(moved, changed_target, mask)
    torch.testing.assert_close(again, predictions)
    cross = maps["decoder"][-1][1]  # (N, h, Lq, Lk)
    assert cross.shape == (4, 2, 2, 3)
    assert cross.masked_select(~mask[:, None].expand_as(cross)).abs().max() == 0
    self_weights = maps["decoder"][0][0]  # (N, h, Lq, Lq)
    assert self_weights.masked_select(~causal_mask(2).expand_as(self_weights)).abs().max() == 0


def test_greedy_decoding_with_the_cache_equals_decoding_without_it():
    model = small_model(target_len=4)
    source, mask, _ = padded_batch()
    cached, cached_weights = model.generate(source, mask, cache=True)
    uncached, uncached_weights = model.generate(source, mask, cache=False)
    assert cached.shape == (4, 4, 2) and cached_weights.shape == (4, 2, 4, 3)
    torch.testing.assert_close(cached, uncached)
    torch.testing.assert_close(cached_weights, uncached_weights)
    # greedy decoding feeds back its predictions: teacher forcing on them gives the same points
    forced, _ = model.run(source, cached, mask)
    torch.testing.assert_close(forced, cached, atol=1e-5, rtol=1e-5)


def test_the_encoder_runs_once_and_the_cross_keys_are_computed_once():
    model = small_model(target_len=3)
    source, mask, _ = padded_batch()
    calls = {"encoder": 0, "cross keys": 0}

    def count(name):
        return lambda *_: calls.__setitem__(name, calls[name] + 1)

    model.encoder.register_forward_hook(count("encoder"))
    model.decoder.blocks[0].cross_attention.w_k.register_forward_hook(count("cross keys"))
    model.generate(source, mask, cache=True)
    assert calls == {"encoder": 1, "cross keys": 1}
    model.generate(source, mask, cache=False)
    assert calls == {"encoder": 1 + 3, "cross keys": 1 + 3}


def test_a_fully_masked_source_gives_zero_cross_weights_and_no_nan():
    model = small_model().train()
    source, mask, target = padded_batch()
    mask[2] = False  # no real point at all
    predictions, maps = model.run(source, target, mask)
    cross = maps["decoder"][-1][1]
    assert torch.isfinite(predictions).all() and cross[2].abs().max() == 0
    assert torch.isfinite(maps["encoder"][0]).all()
    predictions.square().sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    assert torch.isfinite(model.eval().generate(source, mask)[0]).all()


def test_forward_forces_the_target_in_training_and_decodes_greedily_otherwise():
    model = small_model()
    source, mask, target = padded_batch()
    greedy, _ = model(source, target, mask)  # eval: the target is not used
    torch.testing.assert_close(greedy, model.generate(source, mask)[0])
    forced, _ = model.train()(source, target, mask)
    torch.testing.assert_close(forced, model.run(source, target, mask)[0])


def test_bad_input_is_refused_with_what_was_expected():
    model = small_model()
    source, mask, target = padded_batch()
    with pytest.raises(ValueError, match=r"source must be a float tensor \(N, Lk, 2\)"):
        model.generate(source[..., :1])
    with pytest.raises(ValueError, match=r"mask must be a bool tensor \(4, 1, 3\)"):
        model.generate(source, mask.float())
    with pytest.raises(ValueError, match=r"mask must be a bool tensor \(4, 1, 3\)"):
        model.generate(source, mask[:, 0])
    with pytest.raises(ValueError, match=r"target must be a float tensor \(4, Lq, 2\)"):
        model.run(source, target[:2], mask)
    with pytest.raises(ValueError, match="multiple of n_heads"):
        ed.Seq2SeqTransformer(d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="at most 8 points"):
        model.generate(torch.zeros(1, 9, 2))
    with pytest.raises(ValueError, match="Seq2SeqTransformer"):
        ed.to_torch(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="split must be 'val' or 'test'"):
        ed.squares_mse(model, "train")
    with pytest.raises(ValueError, match="build must be a function"):
        ed.train_squares(model)


def test_lesson_06_model_masks_its_padding():
    torch.manual_seed(0)
    model = ed.Lesson06Attention().eval()
    source, mask, _ = padded_batch()
    predictions, weights = model(source, mask=mask)
    assert predictions.shape == (4, 2, 2) and weights.shape == (4, 2, 3)
    assert weights.masked_select(~mask.expand_as(weights)).abs().max() == 0


@pytest.mark.slow  # trains an encoder-decoder twice
def test_a_short_training_run_lowers_the_loss_and_is_seeded():
    recipe = replace(ed.RECIPE, n_train=256, n_val=256, batch_size=64, epochs=8)
    build = partial(ed.Seq2SeqTransformer, d_model=8, n_heads=2, d_ff=16)
    run = ed.train_squares(build, recipe, seed=3, lr=0.01)
    again = ed.train_squares(build, recipe, seed=3, lr=0.01)
    losses = run.history.train_loss
    assert len(losses) == 8 and losses[-1] < 0.5 * losses[0]
    assert run.val_mse == again.val_mse and run.val_mse < 0.5
    assert run.model.training is False


def test_without_encoder_attention_each_memory_vector_holds_its_own_point():
    model = small_model(encoder_attention=False)
    source, mask, target = padded_batch()
    memory, maps = model.encode(source, mask)
    moved = source.clone()
    moved[:, 0] += 1.0  # only the first point changes
    again, _ = model.encode(moved, mask)
    assert torch.equal(again[:, 1:], memory[:, 1:]) and not torch.equal(again[:, 0], memory[:, 0])
    real = mask[:, 0]  # (N, Lk)
    diagonal = maps[0].diagonal(dim1=-2, dim2=-1)  # (N, h, Lk): a real point reads itself alone
    assert torch.equal(diagonal, real[:, None].expand_as(diagonal).float())
    mixed = small_model()  # the same weights, with the mixing
    with_mixing = mixed.encode(moved, mask)[0][:, 1:]
    assert not torch.equal(with_mixing, mixed.encode(source, mask)[0][:, 1:])
    x, y = torch.randn(4, 3, 16), torch.randn(4, 2, 16)  # body reads the encoder the same way
    memory, _ = model.encoder(x, model.encoder_allowed(mask, 3))
    expected, _ = model.decoder(y, memory, mask[:, None], causal_mask(2))
    torch.testing.assert_close(model.body(x, y, mask), expected)


def test_forced_and_free_mse_measure_teacher_forcing_and_decoding():
    model = small_model()
    source, mask, target = padded_batch()
    forced, free = ed.forced_and_free_mse(model, source, target, mask)
    assert forced.shape == free.shape == (2,)
    with torch.no_grad():
        expected_forced = ((model.run(source, target, mask)[0] - target) ** 2).mean(dim=(0, 2))
        expected_free = ((model.generate(source, mask)[0] - target) ** 2).mean(dim=(0, 2))
    torch.testing.assert_close(forced, expected_forced)
    torch.testing.assert_close(free, expected_free)
    assert forced[0] == free[0]  # the first position reads no prediction
    torch.manual_seed(1)
    gru = ed.Lesson06Attention().train()
    state = torch.get_rng_state()
    gru_forced, gru_free = ed.forced_and_free_mse(gru, source, target, mask)
    assert torch.equal(torch.get_rng_state(), state) and gru.training
    assert gru.teacher_forcing == ed.RECIPE.teacher_forcing and gru_forced[0] == gru_free[0]


def test_moved_squares_put_corner_4_at_corner_1_minus_2_plus_3():
    source, target = ed.moved_squares(64, seed=5, noise=0.0)
    assert source.shape == (64, 3, 2) and target.shape == (64, 2, 2)
    torch.testing.assert_close(target[:, 0], source[:, 0] - source[:, 1] + source[:, 2])
    torch.testing.assert_close(target[:, 1], source[:, 0])
    centres = (source[:, 0] + source[:, 2]) / 2  # opposite corners
    assert centres.abs().max() <= 1 and centres.std(dim=0).min() > 0.3
    side = (source[:, 1] - source[:, 0]).abs().sum(dim=-1)
    torch.testing.assert_close(side, torch.full((64,), 2.0))
    noisy, again = ed.moved_squares(64, seed=5), ed.moved_squares(64, seed=5)
    assert torch.equal(noisy[0], again[0]) and not torch.equal(noisy[0], source)
    with pytest.raises(ValueError, match="noise"):
        ed.moved_squares(4, seed=0, noise=-1.0)


@pytest.mark.slow  # trains an encoder-decoder twice
def test_training_on_moved_squares_is_seeded_and_refuses_a_model():
    recipe = replace(ed.RECIPE, n_train=128, n_val=64, batch_size=64, epochs=3)
    build = partial(ed.Seq2SeqTransformer, d_model=8, n_heads=1, d_ff=16)
    run, again = (ed.train_moved_squares(build, recipe, seed=2) for _ in range(2))
    assert len(run.history.train_loss) == 3 and run.val_mse == again.val_mse
    assert run.model.training is False
    with pytest.raises(ValueError, match="build must be a function"):
        ed.train_moved_squares(build(), recipe)
