"""utils.memory: the peak bytes of a call, measured by the profiler."""

import torch

from utils.memory import peak_memory


def test_peak_counts_a_tensor_the_call_creates():
    result, peak = peak_memory(torch.zeros, 1000)
    assert result.shape == (1000,)
    assert 4000 <= peak < 8000


def test_peak_is_the_largest_running_total_not_the_sum():
    def two_in_turn():
        for _ in range(2):
            block = torch.ones(250_000)  # 1 MB, freed before the next one
            del block

    _, peak = peak_memory(two_in_turn)
    assert 1_000_000 <= peak < 1_500_000


def test_peak_sees_tensors_alive_at_once_and_keyword_arguments():
    def both(size, scale=1.0):
        first, second = torch.ones(size), torch.ones(size)
        return float((first + second).sum()) * scale

    result, peak = peak_memory(both, 250_000, scale=2.0)
    assert result == 1_000_000.0
    assert 3_000_000 <= peak < 4_000_000


def test_memory_allocated_before_the_call_is_not_counted():
    big = torch.ones(1_000_000)
    _, peak = peak_memory(torch.add, big, 1.0)
    assert 4_000_000 <= peak < 5_000_000
