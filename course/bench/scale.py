"""Memory and time of lab 09's chunked attention and KV cache: ``python -m course.bench.scale``.

The code measured is the lab's own solution: the solution cells of
source/09_attention_at_scale/09_attention_at_scale_lab.ipynb, executed in a fresh namespace after
the import statements of the lab's setup cell (see course.coursedir.scratch.load_solution).

* `chunked_attention_peak_ratio`: the peak extra memory of attention that builds the weights
  (scores, softmax, product with the values) over that of the lab's `chunked_attention`, one
  sequence of L=4096 queries and keys of size d=64, blocks of 128 keys, float32. Each peak is
  measured by `utils.memory.peak_memory` (PyTorch's profiler: every allocation and free of the
  CPU allocator during the call, the output included). The weights take 64 MiB; a block of
  scores 2 MiB. Expected: 8 or more.
* `chunked_vs_sdpa_time_ratio`: the median time of the lab's `chunked_attention` over that of
  `F.scaled_dot_product_attention` (its fused flash kernel on the CPU), same inputs.
* `kv_cache_speedup_256_tokens`: generating 256 tokens one at a time with the lab's
  `CachedSelfAttention` (d_model=64, one sequence): the time when each step recomputes the
  layer on the whole prefix, over the time with a `KVCache`. The outputs are checked equal.

Threads: by default the measures run on one thread (`torch.set_num_threads(1)`, restored
afterwards), as the course's notebooks do; ``--threads 0`` leaves the setting as it is.
"""

import math

import torch
import torch.nn.functional as F

from course.bench.cli import lesson_main
from course.coursedir import scratch
from utils.memory import peak_memory
from utils.timing import call_seconds, torch_threads

ASSIGNMENT = "09_attention_at_scale"
LENGTH, D_HEAD, CHUNK_SIZE = 4096, 64, 128
D_MODEL, TOKENS = 64, 256


def naive_attention(query, keys, values):
    """Attention that builds the (N, Lq, Lk) weights: (N, Lq, d), (N, Lk, d) -> (N, Lq, d)."""
    scores = query @ keys.transpose(1, 2) / math.sqrt(query.shape[-1])  # (N, Lq, Lk)
    return torch.softmax(scores, dim=-1) @ values  # (N, Lq, d)



def attention_figures(namespace, repeats):
    """Peak memory ratio (naive / chunked) and time ratio (chunked / fused) at L=4096, d=64."""
    chunked = namespace["chunked_attention"]
    query, keys, values = torch.randn(3, 1, LENGTH, D_HEAD)  # each (N, L, d)
    expected, naive_peak = peak_memory(naive_attention, query, keys, values)
    (context, _), chunked_peak = peak_memory(chunked, query, keys, values, CHUNK_SIZE)
    if not torch.allclose(context, expected, atol=1e-5):
        raise RuntimeError("the lab's chunked_attention disagrees with attention by hand")
    heads = [tensor[:, None] for tensor in (query, keys, values)]  # (N, 1, L, d): flash path
    chunked_seconds = call_seconds(chunked, query, keys, values, CHUNK_SIZE, repeats=repeats)
    fused_seconds = call_seconds(lambda: F.scaled_dot_product_attention(*heads), repeats=repeats)
    return naive_peak / chunked_peak, chunked_seconds / fused_seconds


def generate(layer, sequence, cache_class=None):
    """Outputs (N, T, D) of T steps of one token: with a cache_class() or recomputing the prefix."""
    cache = None if cache_class is None else cache_class()
    outputs = []
    for t in range(sequence.shape[1]):
        if cache is not None:
            output, _ = layer(sequence[:, t:t + 1], cache)  # (N, 1, D)
        else:
            output, _ = layer(sequence[:, :t + 1])  # (N, t + 1, D)
        outputs.append(output[:, -1:])
    return torch.cat(outputs, dim=1)


def kv_cache_speedup(namespace, repeats):
    """Time to generate 256 tokens recomputing the prefix, over the time with the cache."""
    layer = namespace["CachedSelfAttention"](D_MODEL).eval()
    cache_class = namespace["KVCache"]
    sequence = torch.randn(1, TOKENS, D_MODEL)  # (N, T, D)
    with torch.no_grad():
        stepped, full = generate(layer, sequence, cache_class), layer(sequence)[0]  # (N, T, D)
        if not torch.allclose(stepped, full, atol=1e-5):
            raise RuntimeError("the lab's cached steps disagree with the full forward pass")
        recompute = call_seconds(lambda: generate(layer, sequence), repeats=repeats, warmup=0)
        cached = call_seconds(
            lambda: generate(layer, sequence, cache_class), repeats=repeats, warmup=0
        )
    return recompute / cached


def run(repeats=5, num_threads=1, seed=0):
    """The three figures of lab 09, as {name: value}."""
    namespace = scratch.load_solution(ASSIGNMENT)
    with torch_threads(num_threads):
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            peak_ratio, time_ratio = attention_figures(namespace, repeats)
            speedup = kv_cache_speedup(namespace, repeats)
    return {
        "chunked_attention_peak_ratio": peak_ratio,
        "chunked_vs_sdpa_time_ratio": time_ratio,
        "kv_cache_speedup_256_tokens": speedup,
    }


def main(argv=None):
    """Command-line entry point: print one `name: value` line per figure."""
    lesson_main(run, __doc__, argv, repeats=5)


if __name__ == "__main__":
    main()
