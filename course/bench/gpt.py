"""Lesson 10's tiny GPT and lab 10's grouped-query attention: ``python -m course.bench.gpt``.

* `tiny_gpt_valid_loss`, `tiny_gpt_train_seconds`: the lecture's model (`utils.gpt.TinyGPT`,
  d_model=64, 4 heads, 2 blocks, d_ff=256) trained as the lecture trains it (600 AdamW steps on
  batches of 32 windows of 65 characters of the course's corpus, `utils.text`), on one thread:
  its loss on the validation text (8 seeded batches, nats per character) and the seconds of the
  600 steps;
* `bigram_valid_loss`: the baseline without attention, `utils.gpt.bigram_loss` (next-character
  counts of the training text, each plus one) on the validation text, nats per character;
* `tiny_gpt_loss_positions_0_64`, `tiny_gpt_loss_positions_128_256`: the trained model's mean
  loss at positions 0 to 63 (inside the 64 positions it trains on) and 128 to 255 (beyond them)
  of 32 seeded validation windows of 257 characters (`utils.gpt.loss_per_position`);
* `tiny_gpt_tokens_per_second_cached`, `tiny_gpt_tokens_per_second_recomputed`,
  `tiny_gpt_kv_cache_speedup`: greedy generation of 400 characters after a 15-character prompt
  by the trained model, with the KV cache and recomputing the whole sequence at every step
  (median of `repeats` runs; the two texts are checked equal), and their ratio;
* `gqa_kv_cache_bytes_mha`, `gqa_kv_cache_bytes_gqa`, `gqa_kv_cache_ratio`: the bytes of the
  cache (the lab's `KVCache`) of the lab's own `GroupedQueryAttention` (the solution cells of
  source/10_tiny_gpt/10_tiny_gpt_lab.ipynb, run in a fresh namespace after the import
  statements of the lab's setup cell) after 512 positions of one sequence, d_model=256, 8 query
  heads, with 8 key-value heads (multi-head attention) and with 2, and their ratio: 4 exactly.
  The steps are checked to give the outputs of the full pass;
* `student_gpt_train_seconds`, `student_gpt_valid_loss`, `student_gpt_gqa_valid_loss`: the lab's
  own `GPT` (its solution cells, as above; d_model=32, 4 heads, 2 blocks, d_ff=128), trained by
  the lab's own `train` as the lab's test trains it (300 AdamW steps on 16 windows of 33
  characters): the seconds of those steps, and its validation loss (8 seeded batches of windows
  of 33 characters) with 4 key-value heads and with 2. The lab requires both below the bigram's.

Threads: one (`torch.set_num_threads(1)`, restored afterwards), as the notebooks use;
``--threads 0`` leaves the setting as it is.
"""

import statistics
import time

import torch

from course.bench.cli import lesson_main
from course.coursedir import scratch
from utils import gpt, text
from utils.timing import torch_threads

ASSIGNMENT = "10_tiny_gpt"
STEPS, BATCH, WINDOW, LR = 600, 32, 65, 3e-3
PROMPT, NEW_TOKENS = "First Citizen:\n", 400
POSITION_WINDOWS, POSITION_LENGTH = 32, 257
INSIDE, BEYOND = slice(0, WINDOW - 1), slice(128, 256)  # positions within and past training
GQA_D_MODEL, GQA_HEADS, GQA_KV_HEADS, GQA_POSITIONS = 256, 8, 2, 512
STUDENT_GPT = {"d_model": 32, "n_heads": 4, "n_layers": 2, "d_ff": 128, "max_length": 64}
STUDENT_STEPS, STUDENT_WINDOW = 300, 33


def corpus_split():
    """The course's corpus as (its vocabulary, training ids (L,), validation ids (L,))."""
    corpus = text.load_corpus()
    vocabulary = text.CharVocabulary(corpus)
    return vocabulary, *text.split(vocabulary.encode(corpus), valid_fraction=0.1)


def trained_model(vocabulary, train_ids, valid_ids, steps=STEPS, seed=0):
    """(the lecture's model trained for `steps` on train_ids, its validation loss, seconds)."""
    torch.manual_seed(seed)
    model = gpt.TinyGPT(len(vocabulary), d_model=64, n_heads=4, n_layers=2, d_ff=256,
                        max_length=512)
    _, seconds = gpt.train_gpt(model, train_ids, steps, batch_size=BATCH, length=WINDOW, lr=LR,
                               seed=seed)
    return model, gpt.evaluate(model, valid_ids), seconds


def generation_speeds(model, vocabulary, repeats, n_new=NEW_TOKENS):
    """Characters per second of greedy generation with and without the KV cache (medians)."""
    prompt = vocabulary.encode(PROMPT)[None]  # (1, P)
    texts, speeds = {}, {}
    for use_cache in (True, False):
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            texts[use_cache] = gpt.generate(model, prompt, n_new, temperature=0,
                                            use_cache=use_cache)
            runs.append(n_new / (time.perf_counter() - start))
        speeds[use_cache] = statistics.median(runs)
    if not torch.equal(texts[True], texts[False]):
        raise RuntimeError("greedy generation with the KV cache differs from recomputing")
    return speeds[True], speeds[False]


def gqa_cache_bytes(namespace, n_kv_heads, seed=0):
    """Bytes of the lab's GroupedQueryAttention cache after GQA_POSITIONS positions, checked."""
    torch.manual_seed(seed)
    layer = namespace["GroupedQueryAttention"](GQA_D_MODEL, GQA_HEADS, n_kv_heads).eval()
    x = torch.randn(1, GQA_POSITIONS, GQA_D_MODEL)  # (N, L, d_model)
    cache = namespace["KVCache"]()  # the lab's own cache of lab 09, pasted into lab 10
    with torch.no_grad():
        full, _ = layer(x)
        prompt, _ = layer(x[:, :GQA_POSITIONS // 2], cache)
        steps = [layer(x[:, t:t + 1], cache)[0] for t in range(GQA_POSITIONS // 2, GQA_POSITIONS)]
    if not torch.allclose(torch.cat([prompt, *steps], dim=1), full, atol=1e-4):
        raise RuntimeError("the lab's cached GroupedQueryAttention disagrees with its full pass")
    return namespace["cache_bytes"](cache)


def student_gpt(namespace, vocabulary, train_ids, valid_ids, steps, n_kv_heads=None, seed=0):
    """(validation loss, training seconds) of the lab's GPT trained by the lab's train."""
    torch.manual_seed(seed)
    model = namespace["GPT"](len(vocabulary), **STUDENT_GPT, n_kv_heads=n_kv_heads)
    start = time.perf_counter()
    namespace["train"](model, train_ids, steps)
    seconds = time.perf_counter() - start
    return gpt.evaluate(model, valid_ids, length=STUDENT_WINDOW), seconds


def run(repeats=3, num_threads=1, steps=STEPS, student_steps=STUDENT_STEPS):
    """The figures of lesson 10, as {name: value}."""
    namespace = scratch.load_solution(ASSIGNMENT)
    with torch_threads(num_threads), torch.random.fork_rng():
        vocabulary, train_ids, valid_ids = corpus_split()
        model, valid_loss, seconds = trained_model(vocabulary, train_ids, valid_ids, steps)
        positions = gpt.loss_per_position(model, valid_ids, POSITION_WINDOWS, POSITION_LENGTH)
        cached, recomputed = generation_speeds(model, vocabulary, repeats)
        mha = gqa_cache_bytes(namespace, GQA_HEADS)
        gqa = gqa_cache_bytes(namespace, GQA_KV_HEADS)
        student_loss, student_seconds = student_gpt(namespace, vocabulary, train_ids,
                                                    valid_ids, student_steps)
        student_gqa, _ = student_gpt(namespace, vocabulary, train_ids, valid_ids, student_steps,
                                     n_kv_heads=2)
    return {
        "tiny_gpt_valid_loss": valid_loss,
        "tiny_gpt_train_seconds": seconds,
        "bigram_valid_loss": gpt.bigram_loss(train_ids, valid_ids, len(vocabulary)),
        "tiny_gpt_loss_positions_0_64": float(positions[INSIDE].mean()),
        "tiny_gpt_loss_positions_128_256": float(positions[BEYOND].mean()),
        "tiny_gpt_tokens_per_second_cached": cached,
        "tiny_gpt_tokens_per_second_recomputed": recomputed,
        "tiny_gpt_kv_cache_speedup": cached / recomputed,
        "gqa_kv_cache_bytes_mha": mha,
        "gqa_kv_cache_bytes_gqa": gqa,
        "gqa_kv_cache_ratio": mha / gqa,
        "student_gpt_train_seconds": student_seconds,
        "student_gpt_valid_loss": student_loss,
        "student_gpt_gqa_valid_loss": student_gqa,
    }


def main(argv=None):
    """Command-line entry point: print one `name: value` line per figure."""
    lesson_main(run, __doc__, argv, repeats=3)


if __name__ == "__main__":
    main()
