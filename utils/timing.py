"""Wall-clock timing for the lectures and the benchmarks: one way to time a call."""

import statistics
import time
from contextlib import contextmanager

import torch

from utils import validation


def call_seconds(function, *args, repeats=5, warmup=1, summary=statistics.median):
    """Seconds per call of function(*args): `summary` (median, or min) of `repeats` timed calls."""
    validation.positive_int(repeats, "repeats")
    for _ in range(warmup):
        function(*args)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function(*args)
        times.append(time.perf_counter() - start)
    return summary(times)


def alternate_seconds(first, second, repeats=21, warmup=3, summary=statistics.median):
    """(seconds of first(), seconds of second()), timed in turns so both see the same machine."""
    validation.positive_int(repeats, "repeats")
    for _ in range(warmup):
        first()
        second()
    times = ([], [])
    for _ in range(repeats):
        for function, record in zip((first, second), times, strict=True):
            start = time.perf_counter()
            function()
            record.append(time.perf_counter() - start)
    return summary(times[0]), summary(times[1])


@contextmanager
def torch_threads(count):
    """Run the block with `count` intra-op threads (None: as they are), then restore them."""
    previous = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(validation.positive_int(count, "count"))
    try:
        yield
    finally:
        torch.set_num_threads(previous)
