"""utils.translation: number words into digits, the vocabulary, splits and padded batches."""

import pytest
import torch

from utils import translation
from utils.translation import BOS, EOS, PAD, Vocabulary


@pytest.mark.parametrize(
    ("n", "words"),
    [
        (0, ["zero"]),
        (7, ["seven"]),
        (13, ["thirteen"]),
        (40, ["forty"]),
        (91, ["ninety", "one"]),
        (100, ["one", "hundred"]),
        (305, ["three", "hundred", "five"]),
        (342, ["three", "hundred", "forty", "two"]),
        (999, ["nine", "hundred", "ninety", "nine"]),
    ],
)
def test_number_words(n, words):
    assert translation.number_words(n) == words
    assert translation.number_digits(n) == list(str(n))


def test_every_number_has_its_own_words_within_the_lengths():
    spelled = {tuple(translation.number_words(n)) for n in range(1000)}
    assert len(spelled) == 1000
    assert max(map(len, spelled)) == translation.MAX_SOURCE
    assert max(len(translation.number_digits(n)) for n in range(1000)) + 1 == translation.MAX_TARGET


@pytest.mark.parametrize("bad", [-1, 1000, 2.0, True, "3"])
def test_a_number_outside_0_999_is_refused(bad):
    with pytest.raises(ValueError, match="n must be an integer from 0 to 999"):
        translation.number_words(bad)


def test_vocabulary_puts_the_special_tokens_first_and_round_trips():
    vocabulary = Vocabulary()
    assert len(vocabulary) == 42
    assert vocabulary.tokens[PAD] == "<pad>" and vocabulary.tokens[BOS] == "<bos>"
    assert vocabulary.tokens[EOS] == "<eos>"
    ids = vocabulary.encode(["three", "hundred", "forty", "two"])
    assert vocabulary.decode(torch.tensor([BOS, *ids, EOS, 40, PAD])) == [
        "three", "hundred", "forty", "two"]
    with pytest.raises(ValueError, match="words of the vocabulary, got \\['zwei'\\]"):
        vocabulary.encode(["zwei"])
    with pytest.raises(ValueError, match="token id must be an integer from 0 to 41"):
        vocabulary.decode([42])


def test_pairs_are_right_padded_and_targets_end_with_eos():
    vocabulary = Vocabulary()
    source, target = translation.number_pairs([342, 7], vocabulary)
    assert source.dtype == target.dtype == torch.long
    assert source.tolist() == [vocabulary.encode(["three", "hundred", "forty", "two"]),
                               vocabulary.encode(["seven"]) + [PAD] * 3]
    assert target.tolist() == [vocabulary.encode(["3", "4", "2"]) + [EOS],
                               vocabulary.encode(["7"]) + [EOS, PAD, PAD]]
    with pytest.raises(ValueError, match="at least one token list"):
        translation.padded([], vocabulary)


def test_split_is_seeded_disjoint_and_complete():
    train, valid = translation.split_numbers(seed=0)
    again, _ = translation.split_numbers(seed=0)
    other, _ = translation.split_numbers(seed=1)
    assert len(train) == 800 and len(valid) == 200
    assert sorted([*train, *valid]) == list(range(1000))
    assert train.tolist() == again.tolist() and train.tolist() != other.tolist()
    with pytest.raises(ValueError, match="n_valid"):
        translation.split_numbers(n_valid=1000)


def test_batches_cover_every_row_once_cut_to_their_longest():
    source, target = translation.number_pairs(list(range(0, 999, 37)), Vocabulary())
    batches = translation.batched(source, target, 10, seed=3)
    assert [len(s) for s, _ in batches] == [10, 10, 7]
    rows = sorted(tuple(s[s != PAD].tolist()) for rows, _ in batches for s in rows)
    assert rows == sorted(tuple(s[s != PAD].tolist()) for s in source)
    for src, tgt in batches:
        assert (src[:, -1] != PAD).any() and (tgt[:, -1] != PAD).any()
    assert [t.tolist() for _, t in translation.batched(source, target, 10, seed=3)] == [
        t.tolist() for _, t in batches]
    with pytest.raises(ValueError, match="as many rows"):
        translation.batched(source, target[:3], 10)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        translation.batched(source, target, 0)
