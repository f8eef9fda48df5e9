"""Train lab 06's attention model and the plain encoder-decoder: ``python -m course.bench.seq2seq``.

The attention model is the lab's own solution: the solution cells of
source/06_seq2seq_attention/06_seq2seq_attention_lab.ipynb, executed in a fresh namespace after
the import statements of the lab's setup cell (only its imports: the rest of that cell seeds the
random generator and changes the number of threads of the whole process). The plain model is the
lecture's own `PlainEncoderDecoder`, loaded from notebooks/06_seq2seq_attention.ipynb in the same
way (`course.coursedir.notebooks.load_definitions`).

Both models train with `utils.recipe.RECIPE`, the recipe of the lecture and of the lab's training
test (same data, hidden size, batch size, epochs and learning rate), from each of the seeds 0-4,
and are tested on the recipe's test set (new squares from another seed). Each figure is the median
over the seeds. The seconds count the training loop only (`utils.training.fit`, without a
per-epoch test loss); data generation and the final test are left out. Before it is timed, each
model trains for one epoch on a tiny data set: the first backward pass of a process pays one-time
set-up costs (about 1 s on a 2-core machine) that would otherwise be charged to whichever model
trains first.

Threads: 2 by default (``torch.set_num_threads(2)``, restored afterwards), as the speed target is
for 2 cores; the lecture and the lab train on 1 thread so that their numbers are reproducible.
"""

import statistics
from dataclasses import replace
from pathlib import Path

from course.bench.cli import lesson_main
from course.coursedir import notebooks, paths, scratch
from utils.data import TARGET_LENGTH
from utils.recipe import RECIPE, train_seq2seq
from utils.seq2seq import N_FEATURES, Encoder
from utils.timing import torch_threads

ASSIGNMENT = "06_seq2seq_attention"
LECTURE = "notebooks/06_seq2seq_attention.ipynb"
SEEDS = (0, 1, 2, 3, 4)


def plain_builder(recipe=RECIPE, root=paths.ROOT):
    """A function that builds a fresh PlainEncoderDecoder of lecture 06, sized by the recipe."""
    plain = notebooks.load_definitions(Path(root) / LECTURE, ["PlainEncoderDecoder"])
    cls = plain["PlainEncoderDecoder"]

    def build():
        return cls(recipe.hidden_dim, TARGET_LENGTH, teacher_forcing=recipe.teacher_forcing)

    return build


def attention_builder(namespace, recipe=RECIPE):
    """A function that builds a fresh Seq2SeqWithAttention of the lab, sized by the recipe."""

    def build():
        encoder = Encoder(N_FEATURES, recipe.hidden_dim)
        decoder = namespace["DecoderWithAttention"](N_FEATURES, recipe.hidden_dim)
        return namespace["Seq2SeqWithAttention"](
            encoder, decoder, TARGET_LENGTH, teacher_forcing=recipe.teacher_forcing
        )

    return build


def warm_up(build, recipe):
    """Train a model built by `build` for one epoch on a tiny data set (one-time set-up costs)."""
    tiny = replace(recipe, n_train=64, n_test=64, batch_size=64, epochs=1)
    train_seq2seq(build, tiny, seed=0, track_test_loss=False)


def median_figures(build, recipe, seeds):
    """Median test MSE and median training seconds of models built by `build`, one per seed."""
    runs = [train_seq2seq(build, recipe, seed=seed, track_test_loss=False) for seed in seeds]
    return (
        statistics.median(run.test_mse for run in runs),
        statistics.median(run.seconds for run in runs),
    )


def run(num_threads=2, recipe=RECIPE, root=paths.ROOT, seeds=SEEDS) -> dict:
    """Median test MSE and training seconds over seeds: the lab's attention model, the plain one."""
    build_attention = attention_builder(scratch.load_solution(ASSIGNMENT, root), recipe)
    build_baseline = plain_builder(recipe, root)

    with torch_threads(num_threads):
        warm_up(build_attention, recipe)
        warm_up(build_baseline, recipe)
        attention_mse, attention_seconds = median_figures(build_attention, recipe, seeds)
        baseline_mse, baseline_seconds = median_figures(build_baseline, recipe, seeds)
    return {
        "seq2seq_attention_test_mse": attention_mse,
        "seq2seq_attention_train_seconds": attention_seconds,
        "seq2seq_baseline_test_mse": baseline_mse,
        "seq2seq_baseline_train_seconds": baseline_seconds,
    }


def main(argv=None):
    """Command-line entry point: print one `name: value` line per figure."""
    lesson_main(run, __doc__, argv, threads=2)


if __name__ == "__main__":
    main()
