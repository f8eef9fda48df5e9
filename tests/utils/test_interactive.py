"""utils.interactive: the pure functions behind the lectures' controls, their views and widgets."""

import base64
import io
import math

import ipywidgets as widgets
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from IPython.core.pylabtools import print_figure
from matplotlib.figure import Figure
from PIL import Image

from utils import gpt, interactive, plots
from utils.transformer import rotate

matplotlib.use("Agg")
GENERATOR_SEED = 0


@pytest.fixture(autouse=True)
def close_figures():
    """Close every figure a test opened."""
    yield
    plt.close("all")


def randn(*shape):
    """A float64 tensor of the given shape from a seeded generator."""
    generator = torch.Generator().manual_seed(GENERATOR_SEED)
    return torch.randn(*shape, generator=generator, dtype=torch.float64)


def test_temperature_weights_divide_the_scores_and_report_the_entropy():
    scores = torch.tensor([2.0, 1.0, 0.5, -1.0])
    weights, entropy = interactive.temperature_weights(scores, 0.5)
    torch.testing.assert_close(weights, torch.softmax(scores.double() / 0.5, dim=0))
    assert entropy == pytest.approx(float(-(weights * weights.log()).sum()))
    _, uniform = interactive.temperature_weights(scores, 1e6)
    assert uniform == pytest.approx(math.log(4), abs=1e-5)


def test_query_at_angle_and_attend_one_match_dot_product_attention():
    query = interactive.query_at_angle(90, length=2.0)
    torch.testing.assert_close(query, torch.tensor([0.0, 2.0], dtype=torch.float64))
    keys, values = randn(5, 2), randn(5, 3)
    context, weights = interactive.attend_one(query, keys, values)
    expected = F.scaled_dot_product_attention(query[None], keys, values, scale=1.0)[0]
    torch.testing.assert_close(context, expected)
    assert weights.sum().item() == pytest.approx(1.0)


def test_bilinear_matrix_turns_and_stretches():
    turn = interactive.bilinear_matrix(90, scale=2.0)
    torch.testing.assert_close(turn @ torch.tensor([1.0, 0.0]).double(),
                               torch.tensor([0.0, 2.0]).double())
    torch.testing.assert_close(interactive.bilinear_matrix(0), torch.eye(2).double())




def test_masked_weights_match_pytorch_and_zero_a_fully_masked_row():
    scores = randn(4, 4)
    mask = interactive.padding_and_causal_mask(4, 3, causal=True)
    assert mask.tolist()[0] == [True, False, False, False] and not mask[:, 3].any()
    weights = interactive.masked_weights(scores, mask)
    reference = torch.softmax(scores.masked_fill(~mask, -math.inf), dim=-1)
    torch.testing.assert_close(weights, reference)
    empty = interactive.masked_weights(scores, interactive.padding_and_causal_mask(4, 0, False))
    assert empty.eq(0).all()


def test_rope_head_scores_add_up_the_turned_pairs_and_depend_on_the_offset_only():
    query, key, offsets = randn(8), randn(8).flip(0), [0, 1, 5, 40]
    scores = interactive.rope_head_scores(query, key, offsets, base=100.0)
    for offset, score in zip(offsets, scores.tolist(), strict=True):
        for start in (0, 7):  # the key at `start`, the query `offset` positions later
            turned_query = rotate(query.view(1, 8), base=100.0, start=start + offset).double()
            turned_key = rotate(key.view(1, 8), base=100.0, start=start).double()
            assert float(turned_query @ turned_key.T) == pytest.approx(score, abs=1e-5)
    assert float(scores[0]) == pytest.approx(float(query @ key))


def test_the_sampling_control_draws_what_generation_samples_from():
    logits = randn(7)
    expected = gpt.next_token_probabilities(logits[None], 0.7, top_k=3)[0]
    torch.testing.assert_close(interactive.sampling_distribution(logits, 0.7, top_k=3), expected)
    assert int((expected > 0).sum()) == 3


def test_rope_head_scores_of_a_key_equal_to_the_query_are_a_sum_of_cosines():
    ones, offsets = torch.ones(16, dtype=torch.float64), torch.arange(50.0)
    omega = 10000.0 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 16)
    expected = 2 * torch.cos(torch.outer(offsets.double(), omega)).sum(dim=1)
    torch.testing.assert_close(interactive.rope_head_scores(ones, ones, offsets), expected)


def test_first_offset_below_finds_the_first_crossing_or_none():
    offsets, scores = [0, 1, 2, 3], [1.0, 0.7, 0.4, 0.6]
    assert interactive.first_offset_below(offsets, scores, 0.5) == 2
    assert interactive.first_offset_below(offsets, scores, 0.1) is None


def test_rope_decay_view_reads_out_the_half_point_and_the_distant_swing():
    fig, readout = interactive.rope_decay_view(4.0)
    assert [text.get_text() for text in fig.axes[0].get_legend().get_texts()] == ["base 10^4"]
    ones = torch.ones(64, dtype=torch.float64)
    scores = interactive.rope_head_scores(ones, ones, interactive.ROPE_DECAY_OFFSETS)
    relative = scores / scores[0]
    half = interactive.first_offset_below(interactive.ROPE_DECAY_OFFSETS, relative, 0.5)
    assert relative[:half].min() >= 0.5 > relative[half]
    assert readout.startswith(f"base 10^4: the score halves by offset {half};")
    _, small = interactive.rope_decay_view(1.0)
    _, large = interactive.rope_decay_view(6.0)
    halves = [int(r.split("offset ")[1].split(";")[0]) for r in (small, readout, large)]
    assert halves == sorted(halves) and halves[0] < halves[2]


def test_online_softmax_trace_ends_at_the_softmax_average():
    scores, values = randn(11), randn(11).flip(0)
    trace = interactive.online_softmax_trace(scores, values, chunk_size=4)
    assert [state["end"] for state in trace] == [4, 8, 11]
    assert trace[-1]["m"] == pytest.approx(float(scores.max()))
    assert trace[-1]["output"] == pytest.approx(float(torch.softmax(scores, 0) @ values))
    first = torch.softmax(scores[:4], 0) @ values[:4]
    assert trace[0]["output"] == pytest.approx(float(first))
    assert all(a["m"] <= b["m"] for a, b in zip(trace, trace[1:], strict=False))


def test_sampling_distribution_divides_by_the_temperature_and_keeps_the_top_k():
    logits = torch.tensor([2.0, -1.0, 0.5, 3.0, 0.0])
    expected = torch.softmax(logits.double() / 0.7, dim=0)
    torch.testing.assert_close(interactive.sampling_distribution(logits, 0.7), expected)
    top = interactive.sampling_distribution(logits, 0.7, top_k=2)  # keeps 3.0 and 2.0
    kept = torch.zeros(5, dtype=torch.float64)
    kept[[0, 3]] = torch.softmax(logits.double()[[0, 3]] / 0.7, dim=0)
    torch.testing.assert_close(top, kept)
    assert float(interactive.sampling_distribution(logits, 1e-3)[3]) == pytest.approx(1.0)
    torch.testing.assert_close(interactive.sampling_distribution(logits, 1.0, top_k=9),
                               torch.softmax(logits.double(), 0))
    assert interactive.sampling_distribution(logits, 1.0, top_k=1).tolist() == [0, 0, 0, 1, 0]


def test_characters_covering_counts_the_likeliest_entries():
    probabilities = torch.tensor([0.1, 0.5, 0.3, 0.1])
    assert interactive.characters_covering(probabilities, 0.5) == 1
    assert interactive.characters_covering(probabilities, 0.8) == 2
    assert interactive.characters_covering(probabilities, 0.9) == 3
    assert interactive.characters_covering(probabilities, 1.0) == 4


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: interactive.sampling_distribution([1.0, 2.0], 0), "temperature"),
        (lambda: interactive.sampling_distribution([1.0, 2.0], 1.0, top_k=0), "top_k"),
        (lambda: interactive.characters_covering([0.5, 0.5], 1.5), "share"),
        (lambda: interactive.temperature_weights([1.0, 2.0], 0), "temperature"),
        (lambda: interactive.temperature_weights([], 1.0), "scores must have shape"),
        (lambda: interactive.temperature_weights([1.0, math.nan], 1.0), "scores must be finite"),
        (lambda: interactive.query_at_angle("north"), "angle_degrees"),
        (lambda: interactive.attend_one([1.0, 0.0], randn(3, 3), randn(3, 2)), "keys"),
        (lambda: interactive.attend_one([1.0, 0.0], randn(3, 2), randn(2, 2)), "values must"),
        (lambda: interactive.padding_and_causal_mask(4, 5, False), "valid_keys"),
        (lambda: interactive.padding_and_causal_mask(4, 2, "yes"), "causal"),
        (lambda: interactive.padding_and_causal_mask(4, 2, True, "yes"), "padding_first"),
        (lambda: interactive.empty_rows(torch.ones(2, 2)), "mask must be a bool tensor"),
        (lambda: interactive.masked_weights(randn(2, 3), torch.ones(3, 2).bool()), "mask"),
        (lambda: interactive.pick([1, 2], 2), "index must be an integer from 0 to 1"),
        (lambda: interactive.rope_head_scores(randn(3), randn(3), [0]), "even length"),
        (lambda: interactive.rope_head_scores(randn(4), randn(2), [0]), "key must have shape"),
        (lambda: interactive.rope_head_scores(randn(4), randn(4), [0], base=0), "base"),
        (lambda: interactive.first_offset_below([0, 1], [1.0], 0.5), "scores must have shape"),
        (lambda: interactive.online_softmax_trace([1.0, 2.0], [1.0], 1), "values must"),
        (lambda: interactive.online_softmax_trace([1.0, 2.0], [1.0, 2.0], 0), "chunk_size"),
        (lambda: interactive.show(lambda: None), "at least one control"),
    ],
)
def test_bad_input_raises_a_value_error_naming_it(call, message):
    with pytest.raises(ValueError, match=message):
        call()


VIEWS = [
    (interactive.temperature_view, ([3.0, 1.0, 0.2], 0.5)),
    (interactive.query_view, (45, randn(3, 2), randn(3, 2))),
    (interactive.bilinear_view, (30, [1.0, 0.0], randn(3, 2))),
    (interactive.mask_view, (randn(4, 4), 2, True)),
    (interactive.head_view, (torch.softmax(randn(2, 3, 3), -1), 1, ["a", "b", "c"])),
    (interactive.rope_decay_view, (2.5,)),
    (interactive.online_softmax_view, (1, randn(9), randn(9), 4)),
    (interactive.sampling_view, (randn(5), ["a", "b", "\n", " ", "e"], 0.8, 3)),
]


@pytest.mark.parametrize("view, args", VIEWS, ids=lambda v: getattr(v, "__name__", ""))
def test_each_view_returns_a_figure_and_a_readout(view, args):
    fig, readout = view(*args)
    assert isinstance(fig, Figure) and fig.axes
    assert isinstance(readout, str) and readout and "\n" not in readout


def bar_heights(ax):
    """The heights of the bars drawn on ax."""
    return [patch.get_height() for patch in ax.patches]


def heatmap(ax):
    """The matrix drawn as an image on ax."""
    return torch.as_tensor(ax.images[0].get_array().data, dtype=torch.float64)


def shown(values):
    """Values as a view lists them: two decimals, comma-separated."""
    return ", ".join(f"{value:.2f}" for value in values)


def test_temperature_view_draws_the_weights_and_reads_out_their_entropy():
    fig, readout = interactive.temperature_view([3.0, 1.0, 0.2], 0.5)
    weights, entropy = interactive.temperature_weights([3.0, 1.0, 0.2], 0.5)
    assert bar_heights(fig.axes[0]) == pytest.approx(weights.tolist())
    assert readout == (f"T = 0.50: weights {shown(weights.tolist())}; entropy "
                       f"{entropy:.2f} nats (uniform: {math.log(3):.2f})")


def test_query_and_bilinear_views_read_out_the_weights_of_their_query():
    keys, values = randn(3, 2), randn(3, 2)
    _, readout = interactive.query_view(45, keys, values)
    context, weights = interactive.attend_one(interactive.query_at_angle(45), keys, values)
    assert readout == (f"angle 45: weights {shown(weights.tolist())}; context "
                       f"({context[0]:.2f}, {context[1]:.2f})")
    _, readout = interactive.bilinear_view(30, [1.0, 0.0], keys)
    turned = keys @ interactive.bilinear_matrix(30).T
    _, weights = interactive.attend_one([1.0, 0.0], turned, turned)
    assert readout == f"W turns the keys by 30 degrees: weights {shown(weights.tolist())}"


@pytest.mark.parametrize(
    "valid_keys, causal, padding_first, kind, empty",
    [(2, True, False, "causal + padding last", "none"),
     (0, False, False, "padding last", "0, 1, 2, 3"),
     (1, True, True, "causal + padding first", "0, 1, 2"),
     (3, False, True, "padding first", "none")],
)
def test_mask_view_draws_the_masked_weights_and_names_the_empty_rows(valid_keys, causal,
                                                                    padding_first, kind, empty):
    scores = randn(4, 4)
    fig, readout = interactive.mask_view(scores, valid_keys, causal, padding_first)
    mask = interactive.padding_and_causal_mask(4, valid_keys, causal, padding_first)
    torch.testing.assert_close(heatmap(fig.axes[0]), interactive.masked_weights(scores, mask))
    assert readout == f"{kind}, {valid_keys} real keys: fully masked rows (all-zero weights): " + (
        empty
    )


def test_padding_first_keeps_the_last_keys_and_empties_the_padded_queries_under_causal():
    mask = interactive.padding_and_causal_mask(5, 2, causal=False, padding_first=True)
    assert mask.tolist()[0] == [False, False, False, True, True] and mask.eq(mask[0]).all()
    causal = interactive.padding_and_causal_mask(5, 2, causal=True, padding_first=True)
    assert interactive.empty_rows(causal) == [0, 1, 2]  # the padding's own queries
    for valid_keys in range(1, 6):  # padding last: query 0 always sees key 0
        last = interactive.padding_and_causal_mask(5, valid_keys, True)
        assert interactive.empty_rows(last) == []
    assert interactive.empty_rows(interactive.padding_and_causal_mask(5, 0, True)) == list(range(5))


def test_head_view_shows_the_chosen_head():
    head_weights = torch.softmax(randn(2, 3, 3), -1)
    fig, readout = interactive.head_view(head_weights, 1, ["a", "b", "c"])
    torch.testing.assert_close(heatmap(fig.axes[0]), head_weights[1])
    row = head_weights[1, 0].tolist()
    assert readout == f"head 1, weights of query 'a': a {row[0]:.2f} b {row[1]:.2f} c {row[2]:.2f}"


def test_online_softmax_view_reads_out_the_state_after_the_block():
    scores, values = randn(9), randn(9).flip(0)
    _, readout = interactive.online_softmax_view(1, scores, values, 4)
    trace = interactive.online_softmax_trace(scores, values, 4)
    assert readout == (f"block 1: m = {trace[1]['m']:.2f}, ℓ = {trace[1]['l']:.2f}, output "
                       f"{trace[1]['output']:.3f} (final {trace[-1]['output']:.3f})")


def test_sampling_view_draws_the_likeliest_characters_of_the_sampling_distribution():
    logits, chars = torch.tensor([0.5, 2.0, -1.0, 1.5, 0.0]), ["a", "b", "\n", " ", "e"]
    fig, readout = interactive.sampling_view(logits, chars, 0.8, top_k=3)
    probabilities = interactive.sampling_distribution(logits, 0.8, top_k=3)
    assert bar_heights(fig.axes[0]) == pytest.approx(sorted(probabilities.tolist(), reverse=True))
    labels = [label.get_text() for label in fig.axes[0].get_xticklabels()]
    assert labels[:3] == ["b", " ", "a"] and sorted(labels[3:]) == ["\\n", "e"]
    assert readout == (f"T = 0.8, top 3 characters: 'b' has probability "
                       f"{float(probabilities[1]):.2f}; 90% of the draws come from 2 of 5 "
                       "characters")
    assert interactive.sampling_view(logits, chars, 0.8)[1].startswith("T = 0.8, all characters:")


def test_top_k_keeps_the_ratios_of_the_kept_characters_and_a_temperature_changes_them():
    logits = torch.tensor([0.5, 2.0, -1.0, 1.5, 0.0])
    every, top = (interactive.sampling_distribution(logits, 1.0, k) for k in (None, 3))
    kept = top > 0  # b, ' ' and a: each grows by the same factor
    torch.testing.assert_close(top[kept] / every[kept], (1 / every[kept].sum()).expand(3))
    cold = interactive.sampling_distribution(logits, 0.5)
    assert bool((cold > 0).all()) and float(cold[1] / cold[3]) > float(every[1] / every[3])


def test_show_displays_controls_figure_and_readout_and_redraws_in_place(monkeypatch):
    shown, updates = [], []

    class Handle:
        def update(self, obj, **kwargs):
            updates.append(obj)

    def fake_display(obj, **kwargs):
        shown.append(obj)
        return Handle() if kwargs.get("display_id") else None

    monkeypatch.setattr(interactive, "display", fake_display)
    temperature = interactive.slider(0.1, 5.0, 1.0, 0.1, "T")
    interactive.show(lambda t: interactive.temperature_view([2.0, 0.0], t), t=temperature)
    assert isinstance(shown[0], widgets.VBox) and is_png(shown[1]["image/png"])
    assert shown[1]["text/plain"].startswith("<Figure size ")
    assert "T = 1.00" in shown[2]["text/plain"]
    assert repr(shown[0]) == "Controls: T (run this cell in Jupyter to move them)"
    temperature.value = 0.5
    assert is_png(updates[0]["image/png"]) and updates[0] != shown[1]
    assert "T = 0.50" in updates[1]["text/plain"]
    assert isinstance(interactive.slider(0, 8, 2), widgets.IntSlider)


def is_png(data):
    """Whether data is a base64 PNG."""
    return base64.b64decode(data).startswith(b"\x89PNG")


def png_pixels(output):
    """The RGBA pixels (height, width, 4) of a display's base64 PNG."""
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(output["image/png"]))))


def test_a_live_view_renders_the_frame_of_a_tight_savefig_and_skips_what_did_not_change():
    live = interactive.LiveView(lambda t: interactive.temperature_view([2.0, 0.0, 1.0], t))
    first, readout = live(t=1.0)
    fresh, _ = interactive.temperature_view([2.0, 0.0, 1.0], 1.0)
    tight = np.asarray(Image.open(io.BytesIO(print_figure(fresh, "png"))))
    assert png_pixels(first).shape == tight.shape and readout.startswith("T = 1.00")
    moved, _ = live(t=2.0)
    assert png_pixels(moved).shape == tight.shape and moved != first
    same, readout = live(t=2.0)
    assert same is None and readout.startswith("T = 2.00")
    assert live.picture.figure.get_layout_engine().__class__.__name__ == "PlaceHolderLayoutEngine"


def test_divisor_sweep_keeps_weight_and_gradient_steady_only_at_the_square_root():
    square_root, none, full = (interactive.divisor_sweep(a) for a in (0.5, 0.0, 1.0))
    assert square_root["d_k"] == list(interactive.SCALING_DIMENSIONS)
    assert max(square_root["top_weight"]) < 0.4 and min(square_root["query_gradient"]) > 0.1
    assert none["top_weight"][-1] > 0.9 and none["query_gradient"][-1] < 1e-2
    assert full["top_weight"][-1] < 0.15 and full["query_gradient"][-1] < 0.1 * (
        square_root["query_gradient"][-1]
    )


def test_divisor_sweep_measures_the_gradient_that_autograd_gives_one_query():
    sweep = interactive.divisor_sweep(0.5, dimensions=(4,), n_keys=3, n_queries=1, seed=2)
    generator = torch.Generator().manual_seed(2)
    query, keys, upstream = (torch.randn(*shape, generator=generator, dtype=torch.float64)
                             for shape in [(1, 1, 4), (1, 3, 4), (1, 1, 3)])
    query.requires_grad_(True)
    weights = torch.softmax(query @ keys.transpose(1, 2) / 2, dim=-1)  # (1, 1, 3)
    (weights * upstream).sum().backward()
    assert sweep["top_weight"] == [pytest.approx(float(weights.detach().max()))]
    assert sweep["query_gradient"] == [pytest.approx(float(query.grad.norm()))]


@pytest.mark.parametrize("exponent", [-0.1, 1.5, "half", True])
def test_divisor_sweep_refuses_an_exponent_outside_zero_to_one(exponent):
    with pytest.raises(ValueError, match="exponent must be a number from 0 to 1"):
        interactive.divisor_sweep(exponent)


def test_divisor_view_returns_a_figure_and_a_readout():
    fig, readout = interactive.divisor_view(1.0)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert readout.startswith("divide by d_k^1.00: from d_k = 1 to 512") and "\n" not in readout


def artists(fig):
    """What a figure shows, by axes: limits, title, tick labels, lines, bars, images, texts."""
    described = []
    for ax in fig.axes:
        described.append({
            "title": ax.get_title(),
            "limits": np.round([ax.get_xlim(), ax.get_ylim()], 9).tolist(),
            "ticks": [(tick.get_text(), tick.get_position()) for tick in ax.get_xticklabels()],
            "lines": [(line.get_xydata().tolist(), line.get_label()) for line in ax.lines],
            "patches": [(patch.get_xy() if hasattr(patch, "get_xy") else None,
                         patch.get_height() if hasattr(patch, "get_height") else None,
                         patch.get_facecolor()) for patch in ax.patches],
            "images": [image.get_array().tolist() for image in ax.images],
            "texts": [(text.get_text(), tuple(getattr(text, "xy", text.get_position())),
                       text.get_color(), getattr(getattr(text, "arrow_patch", None),
                                                 "get_linewidth", lambda: None)())
                      for text in ax.texts],
            "legend": [text.get_text() for text in ax.get_legend().get_texts()]
            if ax.get_legend() else None,
        })
    return described


SQUARE_VALUES = randn(3, 2, 2)
HEADS = torch.softmax(randn(3, 4, 4), -1)
MOVES = [  # (view of one value, start, end, whether the start's figure is kept)
    (lambda t: interactive.temperature_view([3.0, 1.0, 0.2], t), 0.5, 2.0, True),
    (lambda a: interactive.query_view(a, SQUARE_VALUES[0], SQUARE_VALUES[1]), 45, 150, True),
    (lambda a: interactive.bilinear_view(a, [1.0, 0.0], SQUARE_VALUES[2], 2.0), 30, -90, True),
    (interactive.divisor_view, 0.5, 1.0, True),
    (lambda n: interactive.mask_view(randn(4, 4), n, True), 2, 0, True),
    (lambda h: interactive.head_view(HEADS, h, ["a", "b", "c", "d"], 1), 0, 2, True),
    (lambda q: interactive.head_view(HEADS, 1, ["a", "b", "c", "d"], q), 0, 3, True),
    (interactive.rope_decay_view, 2.5, 5.0, True),
    (interactive.rope_decay_view, 4.0, 4.5, False),  # one curve, then two: a new figure
    (lambda b: interactive.online_softmax_view(b, randn(9), randn(9).flip(0), 4), 0, 2, True),
    (lambda b: interactive.online_softmax_view(b, randn(9), randn(9).flip(0), 4), 2, 1, True),
    (lambda t: interactive.sampling_view(randn(30), [chr(97 + i) for i in range(30)], t, 6),
     0.3, 1.7, True),
]


@pytest.mark.parametrize("view, start, end, kept", MOVES)
def test_a_kept_figure_updated_to_a_value_shows_what_a_fresh_one_does(view, start, end, kept):
    with interactive.keeping_figures({}):
        first, _ = view(start)
        interactive.Picture(first)  # drawn at the start, its layout fixed, as show draws it
        updated, readout = view(end)
    fresh, fresh_readout = view(end)
    assert (updated is first) == kept
    assert readout == fresh_readout
    assert artists(updated) == artists(fresh)


def test_a_view_keeps_its_figure_and_redraws_only_what_changed():
    drawings = {}
    with interactive.keeping_figures(drawings):
        first, _ = interactive.head_view(HEADS, 0, query=0)
        (drawing,) = drawings.values()
        again, readout = interactive.head_view(HEADS, 0, query=0)
        assert again is first and not drawing.changed
        moved, readout = interactive.head_view(HEADS, 0, query=2)
        assert moved is first and drawing.changed and "query '2'" in readout
        (outline,) = [p for p in first.axes[0].patches if p.get_gid() == plots.QUERY_ROW_GID]
        assert outline.get_y() == 1.5 and "query '2'" in first.axes[0].get_title()
        other, _ = interactive.head_view(torch.softmax(randn(2, 5, 5), -1), 1)
        assert other is not first  # another shape: a new figure
    assert interactive.head_view(HEADS, 1)[0] is not first  # outside: always a new figure


def test_the_divisor_sweep_draws_its_queries_once_for_every_exponent():
    interactive.divisor_sweep(0.5)
    hits = interactive._divisor_draws.cache_info().hits
    interactive.divisor_sweep(0.25)
    assert interactive._divisor_draws.cache_info().hits == hits + 1


def fully_drawn_pixels(picture):
    """The framed pixels of a picture's figure drawn whole, nothing kept from an earlier draw."""
    animated = [a for ax in picture.figure.axes for a in ax.get_children() if a.get_animated()]
    for artist in animated:
        artist.set_animated(False)
    picture.figure.canvas.draw()
    pixels = picture.pixels()
    for artist in animated:
        artist.set_animated(True)
    return pixels


@pytest.mark.parametrize("view, start, end, kept", MOVES)
def test_a_redraw_over_the_kept_background_equals_a_whole_draw(view, start, end, kept):
    live = interactive.LiveView(lambda value: view(value))
    live(value=start)
    for value in (end, start, end):
        output, _ = live(value=value)
        np.testing.assert_array_equal(png_pixels(output), fully_drawn_pixels(live.picture))


def test_the_word_slider_shows_the_word_and_gives_its_index():
    control = interactive.word_slider(["the", "cat", "sat"], 1, "query word")
    assert control.value == 1 and control.label == "cat"
    control.value = 2
    assert control.label == "sat"
