"""Peak memory of one call on the CPU, measured with PyTorch's profiler."""

import os

from torch.profiler import ProfilerActivity, profile

# The profiler's own log lines (profiler start and stop) would clutter notebook outputs.
os.environ.setdefault("KINETO_LOG_LEVEL", "99")


def peak_memory(function, *args, **kwargs):
    """(result, bytes): function(*args, **kwargs) and the most bytes it had allocated at once.

    The profiler records every allocation and free of PyTorch's CPU allocator during the call,
    those of fused kernels included; the peak is the largest running total, counted from 0 at
    the start of the call (so memory allocated before the call is not counted).
    """
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as recording:
        result = function(*args, **kwargs)
    events = [e for e in recording.profiler.kineto_results.events() if e.name() == "[memory]"]
    live = peak = 0
    for event in sorted(events, key=lambda e: e.start_ns()):
        live += event.nbytes()
        peak = max(peak, live)
    return result, peak
