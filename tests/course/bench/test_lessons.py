"""The benches of the lessons that train or time a lab's own solution: each reports every figure."""

import math
from dataclasses import replace

import pytest

from course.bench import encoder_decoder as encoder_decoder_bench
from course.bench import gpt as gpt_bench
from course.bench import seq2seq as seq2seq_bench
from course.bench import transformer as transformer_bench
from course.coursedir import scratch
from utils.recipe import RECIPE

pytestmark = pytest.mark.slow  # trains and times the labs' solutions

TINY = replace(RECIPE, n_train=64, n_test=32, n_val=32, batch_size=32, epochs=2)


def test_lesson_06_bench_loads_the_lab_solution_and_reports_every_figure():
    namespace = scratch.load_solution(seq2seq_bench.ASSIGNMENT)
    assert {"Attention", "DecoderWithAttention", "Seq2SeqWithAttention"} <= set(namespace)
    figures = seq2seq_bench.run(num_threads=1, recipe=TINY, seeds=(0, 1))
    assert set(figures) == {
        "seq2seq_attention_test_mse",
        "seq2seq_attention_train_seconds",
        "seq2seq_baseline_test_mse",
        "seq2seq_baseline_train_seconds",
    }
    assert all(value > 0 for value in figures.values())


def test_lesson_08_bench_loads_the_lab_solution_and_reports_every_figure():
    figures = transformer_bench.run(repeats=2, warmup=1, seeds=(0,))
    assert {
        "transformer_block_vs_torch_ratio",
        "toy_lm_exact_match",
        "toy_lm_train_seconds",
    } <= set(figures)
    assert all(value > 0 for value in figures.values())
    assert figures["toy_lm_exact_match"] >= 0.95


def test_lesson_10_bench_loads_the_lab_solution_and_reports_every_figure():
    figures = gpt_bench.run(repeats=1, steps=30, student_steps=30)
    assert set(figures) == {
        "tiny_gpt_valid_loss",
        "tiny_gpt_train_seconds",
        "bigram_valid_loss",
        "tiny_gpt_loss_positions_0_64",
        "tiny_gpt_loss_positions_128_256",
        "tiny_gpt_tokens_per_second_cached",
        "tiny_gpt_tokens_per_second_recomputed",
        "tiny_gpt_kv_cache_speedup",
        "gqa_kv_cache_bytes_mha",
        "gqa_kv_cache_bytes_gqa",
        "gqa_kv_cache_ratio",
        "student_gpt_train_seconds",
        "student_gpt_valid_loss",
        "student_gpt_gqa_valid_loss",
    }
    assert all(value > 0 for value in figures.values())
    assert figures["gqa_kv_cache_ratio"] == 4
    assert figures["gqa_kv_cache_bytes_mha"] == 2 * 512 * 256 * 4
    assert figures["tiny_gpt_valid_loss"] < math.log(59)
    assert figures["bigram_valid_loss"] == pytest.approx(2.43, abs=0.005)


def test_lesson_11_bench_loads_the_lab_solution_and_reports_every_figure():
    figures = encoder_decoder_bench.run(repeats=1, epochs=1, seeds=range(1))
    shares = {f"translator_exact_match{kind}_{stat}" for kind in ("", "_causal_cross",
                                                                   "_causal_encoder")
              for stat in ("min", "median", "max")}
    assert set(figures) == {
        "translator_parity_max_abs_error",
        "translator_forward_seconds_lab",
        "translator_forward_seconds_torch",
        "translator_forward_ratio",
        "translator_train_seconds",
        "translator_beam_exact_match_median",
        *shares,
    }
    assert all(0 <= figures[name] <= 1 for name in shares)
    assert figures["translator_parity_max_abs_error"] < 1e-4
