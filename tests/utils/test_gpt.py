"""Tests for utils.text (the corpus and its characters) and utils.gpt (lesson 10's tiny GPT)."""

import math

import pytest
import torch

from utils import gpt, text
from utils.transformer import rotate


def small_model(seed=0, vocab_size=11):
    """A small TinyGPT in eval mode."""
    torch.manual_seed(seed)
    return gpt.TinyGPT(vocab_size, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_length=40).eval()


def test_corpus_ships_with_the_package_and_starts_and_ends_a_speech():
    corpus = text.load_corpus()
    assert corpus.startswith("First Citizen:\nBefore we proceed any further, hear me speak.\n")
    assert corpus.endswith("And pass'd him unelected.\n") and len(corpus) == 63889
    assert (text.CORPUS.parent / "README.md").read_text().count("public domain") == 1


def test_vocabulary_encodes_and_decodes_every_character():
    vocabulary = text.CharVocabulary("banana bread")
    assert vocabulary.chars == sorted(set("banana bread")) and len(vocabulary) == 7
    ids = vocabulary.encode("bread")
    assert ids.dtype == torch.long and vocabulary.decode(ids) == "bread"
    with pytest.raises(ValueError, match="outside the vocabulary"):
        vocabulary.encode("bz")
    with pytest.raises(ValueError, match="token ids"):
        vocabulary.decode([7])
    with pytest.raises(ValueError, match="text"):
        text.CharVocabulary("")


def test_split_and_windows_are_seeded_slices():
    ids = torch.arange(100)
    train, valid = text.split(ids, valid_fraction=0.2)
    assert torch.equal(train, torch.arange(80)) and torch.equal(valid, torch.arange(80, 100))
    first = text.random_windows(ids, 4, 7, torch.Generator().manual_seed(3))
    again = text.random_windows(ids, 4, 7, torch.Generator().manual_seed(3))
    assert first.shape == (4, 7) and torch.equal(first, again)
    assert torch.equal(first[:, 1:] - first[:, :-1], torch.ones(4, 6, dtype=torch.long))
    with pytest.raises(ValueError, match="length"):
        text.random_windows(ids, 2, 101, torch.Generator())
    with pytest.raises(ValueError, match="valid_fraction"):
        text.split(ids, valid_fraction=1.5)


def test_rotate_from_a_start_position_continues_the_sequence():
    x = torch.randn(2, 3, 10, 8)
    assert torch.allclose(rotate(x[:, :, 4:], start=4), rotate(x)[:, :, 4:], atol=1e-6)


def test_model_is_causal_and_ignores_hidden_padding():
    model = small_model()
    tokens = torch.randint(11, (2, 9), generator=torch.Generator().manual_seed(0))
    logits = model(tokens)
    assert logits.shape == (2, 9, 11)
    changed = tokens.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 11
    assert torch.allclose(model(changed)[:, :-1], logits[:, :-1], atol=1e-6)
    padded = torch.cat([torch.zeros(2, 3, dtype=torch.long), tokens], dim=1)  # left padding
    mask = torch.arange(12) >= 3  # (L,): the padding is hidden
    hidden = model(padded, key_mask=mask.expand(2, 12))[:, 3:]
    assert torch.allclose(hidden, logits, atol=1e-5)  # RoPE: only offsets matter
    assert not torch.allclose(model(padded)[:, 3:], logits, atol=1e-3)


def test_model_without_the_causal_mask_reads_later_tokens_with_the_same_weights():
    masked = small_model()
    leaky = gpt.TinyGPT(11, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_length=40,
                        causal=False).eval()
    leaky.load_state_dict(masked.state_dict())
    tokens = torch.randint(11, (2, 9), generator=torch.Generator().manual_seed(0))
    changed = tokens.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 11
    assert not torch.allclose(leaky(changed)[:, 0], leaky(tokens)[:, 0], atol=1e-3)
    torch.testing.assert_close(leaky(tokens[:, :1]), masked(tokens[:, :1]))  # one token
    with pytest.raises(ValueError, match="causal must be True or False"):
        gpt.TinyGPT(11, causal="no")


def test_cached_steps_give_the_full_pass_and_count_their_bytes():
    model = small_model()
    tokens = torch.randint(11, (3, 12), generator=torch.Generator().manual_seed(1))
    caches = model.empty_caches(3)
    with torch.no_grad():
        full = model(tokens)
        steps = [model(tokens[:, :5], caches)] + [model(tokens[:, t:t + 1], caches)
                                                  for t in range(5, 12)]
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)
    assert caches[0].length == 12 and caches[0].nbytes() == 2 * 3 * 12 * 16 * 4
    with pytest.raises(ValueError, match="key_mask"):
        model(tokens[:, :1], model.empty_caches(3), key_mask=torch.ones(3, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match="max_length"):
        model(torch.zeros(1, 41, dtype=torch.long))


def test_attention_maps_are_causal_distributions():
    maps = gpt.attention_maps(small_model(), torch.randint(11, (2, 6)))
    assert maps.shape == (2, 2, 2, 6, 6)
    assert torch.allclose(maps.sum(dim=-1), torch.ones(2, 2, 2, 6), atol=1e-6)
    assert bool((maps.triu(diagonal=1) == 0).all())


def test_sample_next_temperature_and_top_k():
    logits = torch.tensor([[0.0, 3.0, 1.0, 2.0]])
    assert gpt.sample_next(logits, temperature=0).tolist() == [1]
    assert gpt.sample_next(logits, temperature=5.0, top_k=1).tolist() == [1]
    generator = torch.Generator().manual_seed(0)
    draws = torch.stack([gpt.sample_next(logits, 1.0, top_k=2, generator=generator)
                         for _ in range(400)])
    assert set(draws.flatten().tolist()) == {1, 3}
    share = float((draws == 1).float().mean())
    assert abs(share - 1 / (1 + math.exp(-1.0))) < 0.08
    with pytest.raises(ValueError, match="temperature"):
        gpt.sample_next(logits, temperature=-1.0)


def test_generate_with_and_without_the_cache_gives_the_same_tokens():
    model = small_model()
    prompt = torch.tensor([[1, 2, 3], [4, 5, 6]])
    cached = gpt.generate(model, prompt, 10, temperature=0.9, top_k=4, seed=2)
    assert cached.shape == (2, 13) and torch.equal(cached[:, :3], prompt)
    assert torch.equal(cached, gpt.generate(model, prompt, 10, 0.9, 4, seed=2, use_cache=False))
    assert model.training is False


@pytest.mark.slow  # trains the course's GPT
def test_training_lowers_the_loss_on_the_corpus():
    corpus = text.load_corpus()[:5000]
    vocabulary = text.CharVocabulary(corpus)
    ids = vocabulary.encode(corpus)
    model = small_model(vocab_size=len(vocabulary)).train()
    seen = []
    losses, seconds = gpt.train_gpt(model, ids, 40, batch_size=8, length=17, seed=0,
                                    checkpoints=(0, 40), on_checkpoint=lambda s, m: seen.append(s))
    assert len(losses) == 40 and seconds > 0 and seen == [0, 40]
    assert sum(losses[-5:]) < sum(losses[:5])
    assert gpt.evaluate(model, ids, batches=2, batch_size=4, length=17) < math.log(len(vocabulary))




def test_bigram_loss_is_the_mean_surprise_of_add_one_counts():
    train, valid = torch.tensor([0, 1, 0, 1, 0]), torch.tensor([0, 1, 1])
    # counts from 0: {0: 1, 1: 3} of 4; from 1: {0: 3, 1: 1} of 4
    expected = -(math.log(3 / 4) + math.log(1 / 4)) / 2
    assert gpt.bigram_loss(train, valid, 2) == pytest.approx(expected)
    with pytest.raises(ValueError, match="n_vocab"):
        gpt.bigram_loss(train, valid, 0)


def test_loss_per_position_averages_to_the_loss_of_the_same_windows():
    model = small_model()
    ids = torch.randint(11, (200,), generator=torch.Generator().manual_seed(2))
    losses = gpt.loss_per_position(model, ids, n_windows=5, length=30, seed=4)
    windows = text.random_windows(ids, 5, 30, torch.Generator().manual_seed(4))
    with torch.no_grad():
        expected = gpt.sequence_loss(model, windows)
        first = torch.nn.functional.cross_entropy(model(windows[:, :1])[:, 0], windows[:, 1])
    assert losses.shape == (29,) and float(losses.mean()) == pytest.approx(float(expected))
    assert float(losses[0]) == pytest.approx(float(first), abs=1e-5)
    with pytest.raises(ValueError, match="length"):
        gpt.loss_per_position(model, ids, n_windows=5, length=1)


def test_first_token_weight_of_even_attention_is_the_mean_of_one_over_t_plus_one():
    model = small_model()
    with torch.no_grad():
        for block in model.blocks:
            block.attention.in_proj.weight[:32] = 0.0  # queries and keys 0: every score equal
            block.attention.in_proj.bias[:32] = 0.0
    ids = torch.randint(11, (100,), generator=torch.Generator().manual_seed(3))
    on_first, uniform = gpt.first_token_weight(model, ids, n_windows=4, length=12, first_query=3)
    assert uniform == pytest.approx(sum(1 / (t + 1) for t in range(3, 12)) / 9)
    assert on_first.shape == (2, 2) and torch.allclose(on_first, torch.full((2, 2), uniform))
    with pytest.raises(ValueError, match="first_query"):
        gpt.first_token_weight(model, ids, length=12, first_query=12)
