"""Lab 08's TransformerBlock against PyTorch, and the tiny causal transformer of lecture 08.

``python -m course.bench.transformer`` prints, one ``name: value`` per line:

* `transformer_block_vs_torch_ratio`: forward time of the lab's own TransformerBlock (the solution
  cells of source/08_transformer_block/08_transformer_block_lab.ipynb, run in a fresh namespace
  after the import statements of the lab's setup cell) over that of
  ``nn.TransformerEncoderLayer(norm_first=True, batch_first=True)`` with the same weights, N=32,
  L=128, d_model=256, 8 heads, d_ff=1024, float32, eval mode under ``torch.no_grad()``, a causal
  mask. Ours computes attention with the lab's own `attention` (no fused kernel) and returns the
  per-head weights (N, heads, L, L); PyTorch's layer returns none and may take its fused "fast
  path". Timed
  alternately after a warm-up, median over the rounds;
* `toy_lm_exact_match`, `toy_lm_train_seconds`: the one-layer causal transformer of the lecture
  (`utils.transformer`) with the lab's sinusoidal encodings, trained to reverse 8 digits: exact
  match on 2 000 held-out sequences made with another seed, and training seconds, each the
  median over 3 training seeds.

Everything runs on one thread (``torch.set_num_threads(1)``, restored afterwards), as the
notebooks do.
"""

import statistics

import torch
from torch import nn

from course.bench.cli import lesson_main
from course.coursedir import scratch
from utils.timing import alternate_seconds, torch_threads
from utils.transformer import TinyCausalLM, reversal_accuracy, reversal_data, train_reversal

ASSIGNMENT = "08_transformer_block"
BATCH, LENGTH, D_MODEL, N_HEADS, D_FF = 32, 128, 256, 8, 1024
TOY_LENGTH, TOY_SEEDS = 8, (0, 1, 2)
# PyTorch's parameter names -> the lab's (its block writes its own attention: qkv and out)
TORCH_TO_LAB = {
    "self_attn.in_proj_weight": "qkv.weight",
    "self_attn.in_proj_bias": "qkv.bias",
    "self_attn.out_proj.weight": "out.weight",
    "self_attn.out_proj.bias": "out.bias",
}


def torch_layer_like(block):
    """nn.TransformerEncoderLayer (pre-LN, dropout 0, eval) with the weights of the lab's block."""
    reference = nn.TransformerEncoderLayer(
        D_MODEL, N_HEADS, D_FF, dropout=0.0, norm_first=True, batch_first=True
    )
    with torch.no_grad():
        for name, parameter in reference.named_parameters():
            parameter.copy_(block.get_parameter(TORCH_TO_LAB.get(name, name)))
    return reference.eval()


def block_ratio(namespace, repeats, warmup, seed):
    """Median forward seconds of the lab's block and of PyTorch's layer, and their ratio."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        ours = namespace["TransformerBlock"](D_MODEL, N_HEADS, D_FF).eval()
        theirs = torch_layer_like(ours)
        x = torch.randn(BATCH, LENGTH, D_MODEL)  # (N, L, D)
    causal = torch.ones(LENGTH, LENGTH, dtype=torch.bool).tril()  # (L, L): True = may attend
    with torch.no_grad():
        if not torch.allclose(ours(x, mask=causal)[0], theirs(x, src_mask=~causal), atol=1e-4):
            raise RuntimeError("the lab's block disagrees with nn.TransformerEncoderLayer")
        ours_seconds, torch_seconds = alternate_seconds(
            lambda: ours(x, mask=causal), lambda: theirs(x, src_mask=~causal), repeats, warmup
        )
    return {
        "transformer_block_forward_seconds": ours_seconds,
        "torch_encoder_layer_forward_seconds": torch_seconds,
        "transformer_block_vs_torch_ratio": ours_seconds / torch_seconds,
    }


def toy_lm(namespace, seeds=TOY_SEEDS):
    """Median exact match and training seconds of the lecture's reversal model over seeds."""
    table = namespace["sinusoidal_positions"](32, 64)  # (max_length, D): the lab's encodings
    train_tokens = reversal_data(10_000, TOY_LENGTH, seed=1)
    test_tokens = reversal_data(2_000, TOY_LENGTH, seed=2)
    exact, seconds = [], []
    with torch.random.fork_rng():
        for seed in seeds:
            torch.manual_seed(seed)
            model = TinyCausalLM(max_length=32, positions=table)
            _, elapsed = train_reversal(model, train_tokens, seed=seed)
            exact.append(reversal_accuracy(model, test_tokens)[0])
            seconds.append(elapsed)
    return {
        "toy_lm_exact_match": statistics.median(exact),
        "toy_lm_train_seconds": statistics.median(seconds),
    }


def run(repeats=21, warmup=3, num_threads=1, seed=0, seeds=TOY_SEEDS):
    """The lesson's figures: block vs PyTorch timing, the toy model's accuracy and training time."""
    with torch_threads(num_threads):
        namespace = scratch.load_solution(ASSIGNMENT)
        return {**block_ratio(namespace, repeats, warmup, seed), **toy_lm(namespace, seeds)}


def main(argv=None):
    """Command-line entry point: print one `name: value` line per figure."""
    lesson_main(run, __doc__, argv, repeats=21)


if __name__ == "__main__":
    main()
