"""Lab 11's encoder-decoder transformer: ``python -m course.bench.encoder_decoder``.

The model is the lab's own solution: the solution cells of
source/11_encoder_decoder/11_encoder_decoder_lab.ipynb, run in a fresh namespace after the import
statements of the lab's setup cell (`course.coursedir.scratch.load_solution`).

* `encoder_decoder_parity_max_abs_error`: the largest absolute difference between the lab's
  `EncoderDecoder` (d_model=32, 4 heads, 2 layers, d_ff=64), given the weights of a seeded
  `nn.Transformer(..., norm_first=True, batch_first=True)` by the lab's `copy_from_torch`, and
  that `nn.Transformer`, on a batch of 16 sources of 12 positions (padded to lengths 1 to 12) and
  targets of 10, in float32;
* `encoder_decoder_forward_seconds_lab`, `encoder_decoder_forward_seconds_torch`,
  `encoder_decoder_forward_ratio`: the seconds of one forward pass of each on that batch,
  without gradients (median of `repeats` calls after one untimed call), and the first over the
  second;
* `encoder_decoder_train_seconds`, `encoder_decoder_valid_mse`: the lab's `SquaresTransformer`
  (d_model=16, 2 heads, 1 layer, d_ff=32) trained by the lab's `train` as the lab's test trains
  it (60 epochs of the recipe's training squares), the seconds of that training, and its MSE on
  the recipe's validation squares (`utils.recipe.validation_batches`) with the lab's greedy
  `generate`;
* `encoder_decoder_lesson06_valid_mse`: lesson 06's GRU with attention (the lecture's
  `AttentionEncoderDecoder`, loaded from notebooks/06_seq2seq_attention.ipynb), trained with
  `utils.recipe.RECIPE` from seed 0, on the same validation squares: the bar of the lab's test.

Threads: one (`torch.set_num_threads(1)`, restored afterwards), as the lab's test uses;
``--threads 0`` leaves the setting as it is.
"""

import statistics
import time
import warnings
from pathlib import Path

import torch
from torch import nn

from course.bench.cli import lesson_main
from course.coursedir import notebooks, paths, scratch
from utils.data import TARGET_LENGTH
from utils.recipe import RECIPE, seq2seq_forward, squares_batches, train_seq2seq, validation_batches
from utils.timing import torch_threads
from utils.training import loader_loss

ASSIGNMENT = "11_encoder_decoder"
LESSON_06 = "notebooks/06_seq2seq_attention.ipynb"
PARITY_SIZES = (32, 4, 2, 64)  # d_model, n_heads, n_layers, d_ff
PARITY_BATCH, PARITY_SOURCE, PARITY_TARGET = 16, 12, 10
SMALL_MODEL = {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32}
TRAIN_EPOCHS = 60


def torch_transformer(d_model, n_heads, n_layers, d_ff, seed=0):
    """A seeded nn.Transformer(..., norm_first=True, batch_first=True) without dropout."""
    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested tensors are off with norm_first: it says so
        model = nn.Transformer(d_model, n_heads, n_layers, n_layers, d_ff, dropout=0.0,
                               norm_first=True, batch_first=True)
    with torch.no_grad():
        for name, value in model.named_parameters():
            if name.endswith("bias") or "norm" in name:  # torch starts them at 0 and 1
                value.add_(0.2 * torch.randn(value.shape))
    return model.eval()


def parity_inputs(d_model, seed=1):
    """Sources (N, Ls, D), targets (N, Lt, D) and a source mask (N, Ls) of lengths 1 .. Ls."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(PARITY_BATCH, PARITY_SOURCE, d_model, generator=generator)
    y = torch.randn(PARITY_BATCH, PARITY_TARGET, d_model, generator=generator)
    lengths = torch.randint(1, PARITY_SOURCE + 1, (PARITY_BATCH, 1), generator=generator)
    return x, y, torch.arange(PARITY_SOURCE) < lengths


def median_seconds(call, repeats):
    """Median wall seconds of `repeats` calls of `call()`, after one untimed call."""
    call()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def parity_figures(namespace, repeats):
    """The lab's EncoderDecoder against nn.Transformer with the same weights: error, seconds."""
    reference = torch_transformer(*PARITY_SIZES)
    model = namespace["copy_from_torch"](namespace["EncoderDecoder"](*PARITY_SIZES), reference)
    model.eval()
    x, y, mask = parity_inputs(PARITY_SIZES[0])
    causal = ~torch.ones(PARITY_TARGET, PARITY_TARGET, dtype=torch.bool).tril()

    def theirs():
        return reference(x, y, tgt_mask=causal, src_key_padding_mask=~mask,
                         memory_key_padding_mask=~mask)

    with torch.no_grad():
        error = float((model(x, y, mask) - theirs()).abs().max())
        lab = median_seconds(lambda: model(x, y, mask), repeats)
        torch_seconds = median_seconds(theirs, repeats)
    return error, lab, torch_seconds


def trained_figures(namespace, epochs, seed=0):
    """(training seconds, validation MSE) of the lab's SquaresTransformer trained by its train."""
    torch.manual_seed(seed)
    model = namespace["SquaresTransformer"](**SMALL_MODEL)
    batches, _ = squares_batches(RECIPE)
    start = time.perf_counter()
    namespace["train"](model, batches, epochs)
    seconds = time.perf_counter() - start
    source, target = next(iter(validation_batches(RECIPE)))
    with torch.no_grad():
        points = model.eval().generate(source, None, TARGET_LENGTH)
    return seconds, float(((points - target) ** 2).mean())


def lesson_06_valid_mse(recipe=RECIPE, root=paths.ROOT):
    """Validation MSE of lecture 06's AttentionEncoderDecoder trained with the recipe, seed 0."""
    cls = notebooks.load_definitions(Path(root) / LESSON_06,
                                     ["AttentionEncoderDecoder"])["AttentionEncoderDecoder"]
    run = train_seq2seq(lambda: cls(recipe.hidden_dim, teacher_forcing=recipe.teacher_forcing),
                        recipe, seed=0, track_test_loss=False)
    return loader_loss(run.model, validation_batches(recipe), forward=seq2seq_forward)


def run(repeats=5, num_threads=1, epochs=TRAIN_EPOCHS, recipe=RECIPE):
    """The figures of lab 11, as {name: value}."""
    namespace = scratch.load_solution(ASSIGNMENT)
    with torch_threads(num_threads), torch.random.fork_rng():
        error, lab_seconds, torch_seconds = parity_figures(namespace, repeats)
        train_seconds, valid_mse = trained_figures(namespace, epochs)
        lesson_06 = lesson_06_valid_mse(recipe)
    return {
        "encoder_decoder_parity_max_abs_error": error,
        "encoder_decoder_forward_seconds_lab": lab_seconds,
        "encoder_decoder_forward_seconds_torch": torch_seconds,
        "encoder_decoder_forward_ratio": lab_seconds / torch_seconds,
        "encoder_decoder_train_seconds": train_seconds,
        "encoder_decoder_valid_mse": valid_mse,
        "encoder_decoder_lesson06_valid_mse": lesson_06,
    }


def main(argv=None):
    """Command-line entry point: print one `name: value` line per figure."""
    lesson_main(run, __doc__, argv, repeats=5)


if __name__ == "__main__":
    main()
