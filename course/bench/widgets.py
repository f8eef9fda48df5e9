"""Time the redraw of each lecture's control: ``python -m course.bench.widgets``.

`widget_redraw_ms_<lecture>` is the median milliseconds, over 7 redraws after a warm-up, that
the kernel spends after a control moves: computing the view (`utils.interactive`) and rendering
its figure to the PNG that Jupyter's inline backend sends to the page. The inputs have the sizes
the lectures use. Threads: one, as in the notebooks.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from IPython.core.pylabtools import print_figure  # noqa: E402

from course.bench.cli import lesson_main  # noqa: E402
from utils import interactive  # noqa: E402
from utils.timing import call_seconds, torch_threads  # noqa: E402


def _inputs():
    """A seeded view call per lecture: (name, view, arguments)."""
    generator = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=generator)

    squares = [torch.rand(8, 2, 2, generator=generator) for _ in range(3)]
    weights = torch.softmax(randn(8, 2, 2), dim=-1)
    return [
        ("01_softmax", interactive.temperature_view, (randn(5), 0.7)),
        ("02_dot_product", interactive.query_view, (60, randn(4, 2), randn(4, 2))),
        ("03_scaled_dot_product", interactive.divisor_view, (0.5,)),
        ("04_additive_scoring", interactive.bilinear_view, (45, randn(2), randn(3, 2))),
        ("05_masks", interactive.mask_view, (randn(6, 6), 4, True)),
        ("06_seq2seq_attention", interactive.square_view, (3, *squares, weights)),
        ("07_multihead_attention", interactive.head_view,
         (torch.softmax(randn(4, 8, 8), -1), 2, list("abcdefgh"))),
        ("08_transformer_block", interactive.rope_decay_view, (4.5,)),
        ("09_attention_at_scale", interactive.online_softmax_view, (2, randn(16), randn(16), 4)),
        ("10_tiny_gpt", interactive.sampling_view,
         (3.0 * randn(59), [chr(32 + i) for i in range(59)], 1.0)),
    ]


def redraw_seconds(view, args):
    """Seconds to compute a view and render its figure to PNG, median of 7 after a warm-up."""

    def redraw():
        fig, _ = view(*args)
        print_figure(fig, "png")
        plt.close(fig)

    return call_seconds(redraw, repeats=7, warmup=1)


def run(num_threads=1):
    """{'widget_redraw_ms_<lecture>': milliseconds} for each lecture's control."""
    with torch_threads(num_threads):
        return {
            f"widget_redraw_ms_{name}": 1000 * redraw_seconds(view, args)
            for name, view, args in _inputs()
        }


if __name__ == "__main__":
    lesson_main(run, __doc__)
