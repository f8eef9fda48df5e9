"""Time lab 07's MultiHeadAttention against nn.MultiheadAttention: ``python -m course.bench.mha``.

The layer timed is the lab's own solution: the solution cells of
source/07_multihead_attention/07_multihead_attention_lab.ipynb, executed in a fresh namespace
after the import statements of the lab's setup cell (only its imports: the rest of that cell
seeds the random generator and changes the number of threads of the whole process).

Both layers run the same self-attention forward pass, N=32, L=128, d_model=256, 8 heads, float32
on the CPU, in eval mode under ``torch.no_grad()``, with the same weights. nn.MultiheadAttention
is called with ``need_weights=True, average_attn_weights=False``, so that, like ours, it returns
the per-head weights (N, heads, L, L); in this setting PyTorch takes its fused "fast path"
(``torch._native_multi_head_attention``). After a warm-up, the two layers are timed alternately,
one call each per round, and each time is the median over the rounds.

Threads: by default the timing runs on one thread (``torch.set_num_threads(1)``, restored
afterwards), as the course's notebooks do, so that the ratio does not depend on the number of
cores or on other jobs competing for them; ``num_threads=None`` (``--threads 0``) leaves the
setting as it is.
"""


import torch
from torch import nn

from course.bench.cli import lesson_main
from course.coursedir import scratch
from utils.timing import alternate_seconds, torch_threads

ASSIGNMENT = "07_multihead_attention"
BATCH, LENGTH, D_MODEL, N_HEADS = 32, 128, 256, 8


def torch_layer_like(layer):
    """An nn.MultiheadAttention (batch_first) with the weights of the lab's layer, in eval mode."""
    reference = nn.MultiheadAttention(D_MODEL, N_HEADS, batch_first=True).eval()
    projections = (layer.w_q, layer.w_k, layer.w_v)
    with torch.no_grad():
        reference.in_proj_weight.copy_(torch.cat([p.weight for p in projections]))  # (3D, D)
        reference.in_proj_bias.copy_(torch.cat([p.bias for p in projections]))  # (3D,)
        reference.out_proj.weight.copy_(layer.w_o.weight)  # (D, D)
        reference.out_proj.bias.copy_(layer.w_o.bias)  # (D,)
    return reference



def run(repeats=21, warmup=3, num_threads=1, seed=0):
    """Median forward seconds of the lab's MultiHeadAttention and of nn.MultiheadAttention."""
    namespace = scratch.load_solution(ASSIGNMENT)
    with torch_threads(num_threads):
        with torch.random.fork_rng():
            torch.manual_seed(seed)
            ours = namespace["MultiHeadAttention"](D_MODEL, N_HEADS).eval()
            theirs = torch_layer_like(ours)
            x = torch.randn(BATCH, LENGTH, D_MODEL)  # (N, L, D)
        with torch.no_grad():
            output, weights = ours(x, x, x)
            expected, expected_weights = theirs(
                x, x, x, need_weights=True, average_attn_weights=False
            )
            if not (
                torch.allclose(output, expected, atol=1e-5)
                and torch.allclose(weights, expected_weights, atol=1e-5)
            ):
                raise RuntimeError("the lab's layer disagrees with nn.MultiheadAttention")
            ours_seconds, torch_seconds = alternate_seconds(
                lambda: ours(x, x, x),
                lambda: theirs(x, x, x, need_weights=True, average_attn_weights=False),
                repeats,
                warmup,
            )
    return {
        "mha_forward_seconds": ours_seconds,
        "torch_mha_forward_seconds": torch_seconds,
        "mha_vs_torch_ratio": ours_seconds / torch_seconds,
    }


def main(argv=None):
    """Command-line entry point: print one `name: value` line per figure."""
    lesson_main(run, __doc__, argv, repeats=21)


if __name__ == "__main__":
    main()
