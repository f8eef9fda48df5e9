"""Tests for utils.timing."""

import pytest
import torch

from utils.timing import alternate_seconds, call_seconds, torch_threads


def test_call_seconds_counts_warmup_and_timed_calls():
    calls = []
    seconds = call_seconds(calls.append, 1, repeats=3, warmup=2, summary=min)
    assert len(calls) == 5 and seconds >= 0


def test_alternate_seconds_times_both_functions_in_turn():
    order = []
    first, second = alternate_seconds(
        lambda: order.append("a"), lambda: order.append("b"), repeats=2, warmup=0
    )
    assert order == ["a", "b", "a", "b"] and first >= 0 and second >= 0


def test_torch_threads_restores_the_thread_count():
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before


def test_repeats_must_be_positive():
    with pytest.raises(ValueError, match="repeats must be a positive integer"):
        call_seconds(print, repeats=0)
