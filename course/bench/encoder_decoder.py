"""Lab 11's translator of number words into digits: ``python -m course.bench.encoder_decoder``.

The model is the lab's own solution: the solution cells of
source/11_encoder_decoder/11_encoder_decoder_lab.ipynb, run in a fresh namespace after the import
statements of the lab's setup cell (`course.coursedir.scratch.load_solution`).

* `translator_parity_max_abs_error`: the largest absolute difference between the logits of the
  lab's `Translator` (42 tokens, d_model=32, 4 heads, 2 layers, d_ff=64) with seeded random
  weights and those of `nn.Transformer(..., batch_first=True)` (post-LN) holding the same
  weights (fed the same embedded tokens, its output through the same head), on 16 numbers of
  sources padded to 4 words and targets of up to 4 tokens, in float32;
* `translator_forward_seconds_lab`, `translator_forward_seconds_torch`,
  `translator_forward_ratio`: the seconds of one teacher-forced forward pass of each on a batch
  of 200 numbers, without gradients (median of `repeats` calls after one untimed call), and the
  first over the second;
* `translator_train_seconds`: the median seconds of the lab's test training (the lab's `train`:
  `Translator(42, 32, 2, 1, 64)`, 10 epochs of the 800 training numbers in batches of 32);
* `translator_exact_match_min`, `..._median`, `..._max`: over seeds 0-4 of that training, the
  share of the 200 held-out numbers that the lab's `greedy_decode` writes exactly (the lab's bar
  is 0.9); `translator_beam_exact_match_median`: the same with the lab's `beam_search` of width 4;
* `translator_exact_match_causal_cross_median` (min, max): the same training with every
  cross-attention under a causal mask over the source (target position t reads memory positions
  0 .. t), and `translator_exact_match_causal_encoder_median` (min, max) with the encoder's
  self-attention causal too: the numbers of the lab's written answer (2).

Threads: one (`torch.set_num_threads(1)`, restored afterwards), as the lab's test uses;
``--threads 0`` leaves the setting as it is.
"""

import statistics
import time

import torch
from torch import nn

from course.bench.cli import lesson_main
from course.coursedir import scratch
from utils.timing import torch_threads
from utils.translation import BOS, PAD, Vocabulary, batched, number_pairs, split_numbers

ASSIGNMENT = "11_encoder_decoder"
PARITY_SIZES = (32, 4, 2, 64)  # d_model, n_heads, n_layers, d_ff
LAB_SIZES = (32, 2, 1, 64)
TRAIN_EPOCHS, TRAIN_BATCH, SEEDS, BEAM_SIZE, MAX_LENGTH = 10, 32, range(5), 4, 6
TORCH_NAMES = {"encoder.layers.": "encoder_blocks.", "decoder.layers.": "decoder_blocks.",
               "encoder.norm.": "encoder_norm.", "decoder.norm.": "decoder_norm.",
               "self_attn.": "self_attention.", "multihead_attn.": "cross_attention.",
               "out_proj.": "w_o.", "linear1.": "feed_forward.0.", "linear2.": "feed_forward.2."}


def torch_transformer(d_model, n_heads, n_layers, d_ff):
    """nn.Transformer(..., batch_first=True) without dropout: post-LN, its default."""
    model = nn.Transformer(d_model, n_heads, n_layers, n_layers, d_ff, dropout=0.0,
                           batch_first=True)
    model.encoder.use_nested_tensor = False  # padding stays padding: no nested tensors
    return model


def loaded_transformer(model, sizes):
    """nn.Transformer holding the stacks of the lab's Translator `model`."""
    ours = dict(model.named_parameters())
    core = torch_transformer(*sizes)
    state = {}
    for name in core.state_dict():
        course = name
        for theirs, mine in TORCH_NAMES.items():
            course = course.replace(theirs, mine)
        if "in_proj_" in course:
            kind = course.rsplit("_", 1)[1]
            parts = [course.replace(f"in_proj_{kind}", f"w_{role}.{kind}") for role in "qkv"]
            state[name] = torch.cat([ours[part].detach() for part in parts])
        else:
            state[name] = ours[course].detach()
    core.load_state_dict(state)
    return core.eval()


def randomised(model, seed=0):
    """The model with every parameter drawn at random (biases and norms too)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for value in model.parameters():
            value.copy_(0.3 * torch.randn(value.shape, generator=generator))
    return model.eval()


def median_seconds(call, repeats):
    """Median wall seconds of `repeats` calls of `call()`, after one untimed call."""
    call()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def parity_figures(namespace, vocabulary, repeats):
    """The lab's Translator against nn.Transformer with the same weights: error, seconds."""
    model = randomised(namespace["Translator"](len(vocabulary), *PARITY_SIZES))
    core = loaded_transformer(model, PARITY_SIZES)
    source, target = number_pairs(list(range(5, 999, 62)), vocabulary)  # 16 numbers
    big_source, big_target = number_pairs(split_numbers(0)[1], vocabulary)  # 200 numbers

    def theirs(source, target):
        decoder_input = torch.cat([torch.full_like(target[:, :1], BOS), target[:, :-1]], dim=1)
        places = model.positions.weight
        x = model.embedding(source) + places[:source.shape[1]]
        y = model.embedding(decoder_input) + places[:decoder_input.shape[1]]
        causal = ~torch.ones(y.shape[1], y.shape[1], dtype=torch.bool).tril()
        return model.head(core(x, y, tgt_mask=causal, src_key_padding_mask=source == PAD,
                               memory_key_padding_mask=source == PAD))

    with torch.no_grad():
        error = float((model(source, target) - theirs(source, target)).abs().max())
        lab = median_seconds(lambda: model(big_source, big_target), repeats)
        torch_seconds = median_seconds(lambda: theirs(big_source, big_target), repeats)
    return error, lab, torch_seconds


def causal_over_keys(attention):
    """Make a MultiHeadAttention of the lab read keys 0 .. t only from query t, whatever else."""
    forward = attention.forward

    def masked(query, keys, values, mask=None):
        causal = torch.ones(query.shape[1], keys.shape[1], dtype=torch.bool).tril()
        return forward(query, keys, values, causal if mask is None else mask & causal)

    attention.forward = masked


def trained(namespace, vocabulary, seed, epochs, causal=()):
    """The lab's Translator trained as the lab's test trains it: (model, seconds).

    `causal` names the attentions given a causal mask: "cross" and "encoder"."""
    train_numbers, _ = split_numbers(0)
    torch.manual_seed(seed)
    model = namespace["Translator"](len(vocabulary), *LAB_SIZES)
    for block in model.decoder_blocks if "cross" in causal else ():
        causal_over_keys(block.cross_attention)
    for block in model.encoder_blocks if "encoder" in causal else ():
        causal_over_keys(block.self_attention)
    batches = batched(*number_pairs(train_numbers, vocabulary), TRAIN_BATCH, seed=0)
    start = time.perf_counter()
    namespace["train"](model, batches, epochs)
    return model.eval(), time.perf_counter() - start


def exact_match(written, target):
    """The share of rows of written (N, T) that are target (N, Lt), padding aside."""
    width = max(written.shape[1], target.shape[1])
    written = nn.functional.pad(written, (0, width - written.shape[1]), value=PAD)
    target = nn.functional.pad(target, (0, width - target.shape[1]), value=PAD)
    return float((written == target).all(dim=1).float().mean())


def accuracy_figures(namespace, vocabulary, epochs, seeds):
    """Exact-match shares over seeds of greedy and beam decoding, and of the masked variants."""
    source, target = number_pairs(split_numbers(0)[1], vocabulary)
    greedy, beam, cross, encoder, seconds = [], [], [], [], []
    for seed in seeds:
        model, spent = trained(namespace, vocabulary, seed, epochs)
        seconds.append(spent)
        with torch.no_grad():
            greedy.append(exact_match(namespace["greedy_decode"](model, source, MAX_LENGTH),
                                      target))
            beam.append(statistics.mean(
                namespace["beam_search"](model, row, BEAM_SIZE, MAX_LENGTH).tolist()
                == [token for token in wanted.tolist() if token != PAD]
                for row, wanted in zip(source, target, strict=True)))
        for runs, causal in ((cross, ("cross",)), (encoder, ("cross", "encoder"))):
            masked, _ = trained(namespace, vocabulary, seed, epochs, causal)
            with torch.no_grad():
                written = namespace["greedy_decode"](masked, source, MAX_LENGTH)
            runs.append(exact_match(written, target))
    figures = {"translator_train_seconds": statistics.median(seconds),
               "translator_beam_exact_match_median": statistics.median(beam)}
    for name, runs in (("", greedy), ("_causal_cross", cross), ("_causal_encoder", encoder)):
        figures.update({f"translator_exact_match{name}_min": min(runs),
                        f"translator_exact_match{name}_median": statistics.median(runs),
                        f"translator_exact_match{name}_max": max(runs)})
    return figures


def run(repeats=5, num_threads=1, epochs=TRAIN_EPOCHS, seeds=SEEDS):
    """The figures of lab 11, as {name: value}."""
    namespace = scratch.load_solution(ASSIGNMENT)
    vocabulary = Vocabulary()
    with torch_threads(num_threads), torch.random.fork_rng():
        error, lab_seconds, torch_seconds = parity_figures(namespace, vocabulary, repeats)
        figures = accuracy_figures(namespace, vocabulary, epochs, seeds)
    return {
        "translator_parity_max_abs_error": error,
        "translator_forward_seconds_lab": lab_seconds,
        "translator_forward_seconds_torch": torch_seconds,
        "translator_forward_ratio": lab_seconds / torch_seconds,
        **figures,
    }


def main(argv=None):
    """Command-line entry point: print one `name: value` line per figure."""
    lesson_main(run, __doc__, argv, repeats=5)


if __name__ == "__main__":
    main()
