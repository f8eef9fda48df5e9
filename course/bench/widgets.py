"""Time the redraw of each lecture's control: ``python -m course.bench.widgets``.

`widget_redraw_ms_<lecture>` is the median milliseconds, over 7 redraws after a warm-up, that
the kernel spends after a control moves, as `utils.interactive.show` redraws: the view computed
at the new value and its kept figure updated in place, then drawn once and rendered to the PNG
sent to the page. The control moves back and forth between two values, so that every redraw
changes the figure. The inputs have the sizes the lectures use. Threads: one, as in the notebooks.
Lectures 06 and 11 have no control: static figures answer their questions.
"""

import itertools

import matplotlib

matplotlib.use("Agg")

import torch  # noqa: E402

from course.bench.cli import lesson_main  # noqa: E402
from utils import interactive  # noqa: E402
from utils.timing import call_seconds, torch_threads  # noqa: E402


def _controls():
    """A seeded control per lecture: (name, view of the control's value, two values)."""
    generator = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=generator)

    scores, keys, values = randn(5), randn(4, 2), randn(4, 2)
    query, turned_keys, mask_scores = randn(2), randn(3, 2), randn(6, 6)
    heads = torch.softmax(randn(4, 8, 8), -1)
    row, row_values = randn(16), randn(16)
    logits, chars = 3.0 * randn(59), [chr(32 + i) for i in range(59)]
    return [
        ("01_softmax", lambda t: interactive.temperature_view(scores, t), 0.7, 1.5),
        ("02_dot_product", lambda a: interactive.query_view(a, keys, values), 60, 75),
        ("03_scaled_dot_product", interactive.divisor_view, 0.5, 0.55),
        ("04_additive_scoring", lambda a: interactive.bilinear_view(a, query, turned_keys),
         45, 60),
        ("05_masks", lambda n: interactive.mask_view(mask_scores, n, True), 4, 3),
        ("07_multihead_attention",
         lambda h: interactive.head_view(heads, h, list("abcdefgh")), 2, 3),
        ("08_transformer_block", interactive.rope_decay_view, 4.5, 5.0),
        ("09_attention_at_scale",
         lambda b: interactive.online_softmax_view(b, row, row_values, 4), 2, 3),
        ("10_tiny_gpt", lambda t: interactive.sampling_view(logits, chars, t), 1.0, 1.1),
    ]


def redraw_seconds(view, first, second):
    """Seconds per redraw as `show` makes it, the control moving between two values: the median
    of 7 after a warm-up."""
    live = interactive.LiveView(lambda value: view(value))
    live(value=first)  # the starting value: the figure drawn, its layout fixed
    values = itertools.cycle([second, first])

    def redraw():
        figure, _ = live(value=next(values))
        if figure is None:
            raise RuntimeError("the bench's two values should draw different figures")

    return call_seconds(redraw, repeats=7, warmup=1)


def run(num_threads=1):
    """{'widget_redraw_ms_<lecture>': milliseconds} for each lecture's control."""
    with torch_threads(num_threads):
        return {
            f"widget_redraw_ms_{name}": 1000 * redraw_seconds(view, first, second)
            for name, view, first, second in _controls()
        }


if __name__ == "__main__":
    lesson_main(run, __doc__)
