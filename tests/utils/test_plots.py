"""Tests for utils.plots: every helper returns a labelled Figure and draws on a given ax."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from utils.data import make_squares  # noqa: E402
from utils.plots import (  # noqa: E402
    plot_attention,
    plot_distributions,
    plot_losses,
    plot_query_keys,
    plot_squares,
)
from utils.training import History  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    """Close every figure a test opened."""
    yield
    plt.close("all")


def tick_labels(labels) -> list[str]:
    """The texts of a list of tick labels."""
    return [label.get_text() for label in labels]


def texts(ax) -> list[str]:
    """Every text drawn on ax (annotations included)."""
    return [text.get_text() for text in ax.texts]


def assert_labelled(ax):
    """ax has a title and both axis labels."""
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()


# plot_losses


def test_plot_losses_from_history():
    fig = plot_losses(History([3.0, 2.0, 1.0], [3.5, 2.5, 1.5]), title="Training")
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert ax.get_title() == "Training"
    assert ax.get_xlabel() == "epoch" and ax.get_ylabel() == "loss"
    assert [line.get_label() for line in ax.get_lines()] == ["train", "validation"]
    np.testing.assert_array_equal(ax.get_lines()[0].get_xdata(), [1, 2, 3])
    np.testing.assert_array_equal(ax.get_lines()[1].get_ydata(), [3.5, 2.5, 1.5])


def test_plot_losses_without_validation_and_from_dict():
    fig = plot_losses(History([1.0, 0.5]))
    assert [line.get_label() for line in fig.axes[0].get_lines()] == ["train"]
    fig = plot_losses({"model A": [1.0, 0.5], "model B": [0.9, 0.8, 0.7]}, log_scale=True)
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["model A", "model B"]
    assert ax.get_yscale() == "log" and "log" in ax.get_ylabel()


def test_plot_losses_draws_on_given_ax():
    fig, ax = plt.subplots()
    assert plot_losses(History([1.0]), ax=ax) is fig
    assert len(ax.get_lines()) == 1 and len(fig.axes) == 1


@pytest.mark.parametrize(
    ("history", "kwargs", "message"),
    [
        ([1.0, 2.0], {}, "history must be a History or a non-empty dict"),
        ({}, {}, "history must be a History or a non-empty dict"),
        (History([]), {}, "must have shape \\(epochs,\\)"),
        ({"a": [[1.0]]}, {}, "must have shape \\(epochs,\\)"),
        ({"a": ["x"]}, {}, "must be a tensor or array of numbers"),
        ({"a": [1.0, 0.0]}, {"log_scale": True}, "log_scale needs positive losses"),
        (History([1.0]), {"ax": "left"}, "ax must be a matplotlib Axes or None"),
    ],
)
def test_plot_losses_rejects_bad_arguments(history, kwargs, message):
    with pytest.raises(ValueError, match=message):
        plot_losses(history, **kwargs)


# plot_attention


def test_plot_attention_single_matrix():
    weights = torch.softmax(torch.randn(2, 3), dim=-1)  # (Lq, Lk)
    fig = plot_attention(weights, query_labels=["q1", "q2"], key_labels=["a", "b", "c"])
    ax = fig.axes[0]
    assert ax.get_xlabel() == "key" and ax.get_ylabel() == "query" and ax.get_title()
    assert tick_labels(ax.get_xticklabels()) == ["a", "b", "c"]
    assert tick_labels(ax.get_yticklabels()) == ["q1", "q2"]
    expected = [f"{value:.2f}" for value in weights.flatten().tolist()]
    assert texts(ax) == expected
    assert ax.images[0].get_clim() == (0.0, 1.0)
    assert len(fig.axes) == 2  # the heatmap and its colorbar


def test_plot_attention_annotation_colour_reads_on_the_colormap():
    fig = plot_attention(np.array([[0.0, 1.0]]))
    dark_cell, bright_cell = fig.axes[0].texts  # viridis: dark purple at 0, yellow at 1
    assert dark_cell.get_color() == "white" and bright_cell.get_color() == "black"


def test_plot_attention_batch_grid_with_default_labels():
    weights = torch.softmax(torch.randn(5, 2, 4), dim=-1).requires_grad_()  # (B, Lq, Lk)
    fig = plot_attention(weights, ncols=2, annotate=False, titles=list("abcde"), vmax=0.5)
    heatmaps = [ax for ax in fig.axes if ax.images]
    assert len(heatmaps) == 5
    assert [ax.get_title() for ax in heatmaps] == list("abcde")
    assert tick_labels(heatmaps[0].get_xticklabels()) == ["0", "1", "2", "3"]
    assert tick_labels(heatmaps[0].get_yticklabels()) == ["0", "1"]
    assert all(not ax.texts for ax in heatmaps)
    assert heatmaps[0].images[0].get_clim() == (0.0, 0.5)
    hidden = [ax for ax in fig.axes if not ax.get_visible()]
    assert len(hidden) == 1  # 3 rows x 2 columns for 5 matrices


def test_plot_attention_draws_on_given_axes():
    fig, axes = plt.subplots(1, 2)
    assert plot_attention(np.full((2, 3, 3), 1 / 3), ax=axes) is fig
    assert all(ax.images for ax in axes)
    fig, ax = plt.subplots()
    assert plot_attention(np.eye(3), ax=ax, titles="identity") is fig
    assert ax.get_title() == "identity"


@pytest.mark.parametrize(
    ("weights", "kwargs", "message"),
    [
        (np.ones(3), {}, "weights must have shape \\(Lq, Lk\\) or \\(B, Lq, Lk\\), got \\(3,\\)"),
        (np.ones((1, 1, 2, 2)), {}, "weights must have shape"),
        (np.ones((2, 3)), {"query_labels": ["a"]}, "query_labels must be a sequence of 2"),
        (np.ones((2, 3)), {"key_labels": "abc"}, "key_labels must be a sequence of 3"),
        (np.ones((2, 2, 3)), {"titles": ["one"]}, "titles must be a sequence of 2"),
        (np.ones((2, 3)), {"ncols": 0}, "ncols must be a positive integer"),
        (np.ones((2, 3)), {"vmin": 1.0, "vmax": 0.0}, "vmin < vmax"),
        (np.ones((2, 3)), {"vmax": None}, "vmin < vmax"),
        (np.ones((2, 3)), {"cmap": "no-such-map"}, "cmap must be a matplotlib colormap"),
        (np.ones((2, 3)), {"ax": [1]}, "ax must be a matplotlib Axes or None"),
        (np.ones((2, 2, 3)), {"ax": "grid"}, "ax must be None or a sequence of 2"),
    ],
)
def test_plot_attention_rejects_bad_arguments(weights, kwargs, message):
    with pytest.raises(ValueError, match=message):
        plot_attention(weights, **kwargs)


def test_plot_attention_rejects_wrong_number_of_axes():
    _, axes = plt.subplots(1, 3)
    with pytest.raises(ValueError, match="ax must be None or a sequence of 2 matplotlib Axes"):
        plot_attention(np.ones((2, 2, 2)), ax=axes)


# plot_query_keys


def test_plot_query_keys_with_weights_and_context():
    keys = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])  # (Lk, 2)
    weights = torch.tensor([0.7, 0.2, 0.1])  # (Lk,)
    fig = plot_query_keys(torch.tensor([0.8, 0.1]), keys, weights, context=weights @ keys)
    ax = fig.axes[0]
    assert_labelled(ax)
    labels = texts(ax)
    assert "q" in labels and "c" in labels
    assert {"k1 (0.70)", "k2 (0.20)", "k3 (0.10)"} <= set(labels)
    assert ax.get_aspect() == 1.0
    assert len(ax.patches) == 1  # the unit circle
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["query", "keys", "context"]


def test_plot_query_keys_plain_and_on_given_ax_with_labels():
    fig, ax = plt.subplots()
    out = plot_query_keys([3.0, 0.0], [[1.0, 1.0]], key_labels=["cat"], ax=ax, title="Match")
    assert out is fig and ax.get_title() == "Match"
    assert set(texts(ax)) == {"", "q", "cat"}
    assert ax.get_xlim()[1] >= 3.0  # the limits fit the longest vector


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"query": [1.0, 2.0, 3.0]}, "query must have shape \\(2,\\), got \\(3,\\)"),
        ({"keys": [1.0, 2.0]}, "keys must have shape \\(Lk, 2\\), got \\(2,\\)"),
        ({"keys": np.ones((2, 3))}, "keys must have shape \\(Lk, 2\\)"),
        ({"weights": [0.5]}, "weights must have shape \\(2,\\), got \\(1,\\)"),
        ({"context": [[1.0, 0.0]]}, "context must have shape \\(2,\\)"),
        ({"key_labels": ["only one"]}, "key_labels must be a sequence of 2"),
    ],
)
def test_plot_query_keys_rejects_bad_arguments(kwargs, message):
    arguments = {"query": [1.0, 0.0], "keys": [[1.0, 0.0], [0.0, 1.0]], **kwargs}
    with pytest.raises(ValueError, match=message):
        plot_query_keys(**arguments)


# plot_distributions


def test_plot_distributions_side_by_side():
    p1, p2 = torch.tensor([0.7, 0.2, 0.1]), np.array([0.4, 0.35, 0.25])
    fig = plot_distributions({"T = 0.5": p1, "T = 1": p2}, labels=["a", "b", "c"], title="Heat")
    ax = fig.axes[0]
    assert ax.get_title() == "Heat" and ax.get_ylabel() == "probability" and ax.get_xlabel()
    assert tick_labels(ax.get_xticklabels()) == ["a", "b", "c"]
    assert len(ax.patches) == 6
    heights = [bar.get_height() for bar in ax.patches]
    np.testing.assert_allclose(heights, [0.7, 0.2, 0.1, 0.4, 0.35, 0.25], rtol=1e-6)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["T = 0.5", "T = 1"]
    lefts = [bar.get_x() for bar in ax.patches]
    assert lefts[0] < lefts[3] < lefts[1]  # the two bars for "a" sit side by side


def test_plot_distributions_single_vector_on_given_ax():
    fig, ax = plt.subplots()
    assert plot_distributions([0.5, 0.5], ax=ax) is fig
    assert tick_labels(ax.get_xticklabels()) == ["0", "1"]
    assert len(ax.patches) == 2


@pytest.mark.parametrize(
    ("distributions", "kwargs", "message"),
    [
        ({}, {}, "distributions must be a vector or a non-empty dict"),
        ({"a": [0.5, 0.5], "b": [1.0]}, {}, "distributions\\['b'\\] must have shape \\(2,\\)"),
        ({"a": [[0.5, 0.5]]}, {}, "distributions\\['a'\\] must have shape"),
        ([], {}, "must have shape"),
        ([0.5, 0.5], {"labels": ["x"]}, "labels must be a sequence of 2"),
    ],
)
def test_plot_distributions_rejects_bad_arguments(distributions, kwargs, message):
    with pytest.raises(ValueError, match=message):
        plot_distributions(distributions, **kwargs)


# plot_squares


def test_plot_squares_panels_titles_and_styles():
    data = make_squares(6, seed=0)
    prediction = torch.from_numpy(data.target) + 0.05  # (B, 2, 2)
    fig = plot_squares(data.source, data.target, prediction, directions=data.directions, ncols=4)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 6
    names = {0: "counter-clockwise", 1: "clockwise"}
    assert [ax.get_title() for ax in panels] == [names[d] for d in data.directions.tolist()]
    for ax in panels:
        assert_labelled(ax)
    styles = {line.get_linestyle() for line in panels[0].get_lines()}
    assert "--" in styles  # the prediction is dashed
    colours = {line.get_color() for line in panels[0].get_lines() if line.get_marker() != "None"}
    assert len(colours) == 3  # source, target and prediction differ


def test_plot_squares_uses_only_real_source_points():
    data = make_squares(4, seed=1, variable_length=True)
    fig = plot_squares(data.source, data.target, lengths=data.lengths, ncols=2)
    for ax, length in zip(fig.axes, data.lengths, strict=True):
        source_line = ax.get_lines()[0]
        assert len(source_line.get_xdata()) == length
    assert [ax.get_title() for ax in fig.axes] == [f"sequence {i}" for i in range(4)]


def test_plot_squares_draws_on_given_axes():
    data = make_squares(2, seed=0)
    fig, axes = plt.subplots(1, 2)
    assert plot_squares(data.source, ax=axes) is fig
    assert all(ax.get_lines() for ax in axes)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"source": np.ones((2, 2))}, "source must have shape \\(B, Ls, 2\\), got \\(2, 2\\)"),
        ({"source": np.ones((0, 2, 2))}, "source must have shape \\(B, Ls, 2\\) with B, Ls >= 1"),
        ({"target": np.ones((3, 2, 2))}, "target must have shape \\(2, L, 2\\)"),
        ({"prediction": np.ones((2, 3, 2))}, "prediction must have shape \\(2, 2, 2\\)"),
        ({"directions": [1, 2]}, "directions must be 0 or 1"),
        ({"directions": [1]}, "directions must have shape \\(2,\\)"),
        ({"lengths": [2, 4]}, "lengths must be integers in 1..3"),
        ({"lengths": [0, 1]}, "lengths must be integers in 1..3"),
        ({"ncols": -1}, "ncols must be a positive integer"),
        ({"ax": "axes"}, "ax must be None or a sequence of 2"),
    ],
)
def test_plot_squares_rejects_bad_arguments(kwargs, message):
    arguments = {"source": np.ones((2, 3, 2)), "target": np.ones((2, 2, 2)), **kwargs}
    with pytest.raises(ValueError, match=message):
        plot_squares(**arguments)


def test_plots_leave_global_state_alone():
    numpy_state = np.random.get_state()
    torch_state = torch.get_rng_state()
    rc = dict(matplotlib.rcParams)
    plot_attention(np.eye(2))
    plot_squares(make_squares(2, seed=0).source)
    assert torch.equal(torch_state, torch.get_rng_state())
    assert np.array_equal(numpy_state[1], np.random.get_state()[1])
    assert dict(matplotlib.rcParams) == rc


def test_labels_may_be_arrays_and_bad_calls_open_no_figure():
    fig = plot_attention(np.eye(2), key_labels=np.array(["x", "y"]), query_labels=torch.arange(2))
    assert tick_labels(fig.axes[0].get_xticklabels()) == ["x", "y"]
    plt.close("all")
    with pytest.raises(ValueError):
        plot_losses({"a": [[1.0]]})
    with pytest.raises(ValueError):
        plot_squares(np.ones((2, 2)))
    assert plt.get_fignums() == []


def test_plot_running_max_draws_scores_maximum_and_sum_on_two_axes():
    from utils.plots import plot_running_max

    fig = plot_running_max([0.5, 2.0, -1.0], [0.5, 2.0, 2.0], [1.0, 1.22, 1.27])
    assert isinstance(fig, Figure)
    left, right = fig.axes
    assert_labelled(left)
    assert right.get_ylabel() == "running sum $\\ell$"
    assert len(left.get_legend().get_texts()) == 3
    _, ax = plt.subplots()
    assert plot_running_max([1.0], [1.0], [1.0], ax=ax) is ax.figure
    with pytest.raises(ValueError, match="running_sum"):
        plot_running_max([1.0, 2.0], [1.0, 2.0], [1.0])


def test_tile_kinds_of_a_causal_mask_and_ragged_tiles():
    from utils.plots import tile_kinds

    causal = torch.ones(12, 12, dtype=torch.bool).tril()
    assert tile_kinds(causal, 4, 4).tolist() == [[1, 0, 0], [2, 1, 0], [2, 2, 1]]
    assert tile_kinds(causal[:5, :7], 4, 3).tolist() == [[1, 1, 0], [2, 1, 0]]
    assert tile_kinds(np.ones((2, 3)), 8, 8).tolist() == [[2]]
    with pytest.raises(ValueError, match="block_k"):
        tile_kinds(causal, 4, 0)
    with pytest.raises(ValueError, match="allowed"):
        tile_kinds(np.ones(3), 1, 1)


def test_plot_block_tiling_outlines_every_tile_on_given_ax():
    from utils.plots import plot_block_tiling

    fig = plot_block_tiling(torch.ones(12, 12, dtype=torch.bool).tril(), 4, 4)
    ax = fig.axes[0]
    assert_labelled(ax)
    assert sorted(texts(ax)) == sorted(["mask"] * 3 + ["full"] * 3 + ["skip"] * 3)
    assert len(ax.patches) == 9
    _, given = plt.subplots()
    assert plot_block_tiling(np.ones((3, 5)), 2, 2, ax=given) is given.figure
    assert len(given.patches) == 6


# plot_rotations and plot_gram_matrix (lecture 08)

from utils.plots import plot_gram_matrix, plot_rotations  # noqa: E402


def test_plot_rotations_draws_one_turned_arrow_per_angle():
    fig = plot_rotations([1.0, 0.0], [0.0, np.pi / 2], labels=["p = 0", "p = 1"])
    (ax,) = fig.axes
    assert_labelled(ax)
    arrows = [a for a in ax.texts if a.get_text()]
    assert [a.get_text() for a in arrows] == ["p = 0", "p = 1"]
    np.testing.assert_allclose(arrows[0].xy, (1.0, 0.0), atol=1e-12)
    np.testing.assert_allclose(arrows[1].xy, (0.0, 1.0), atol=1e-12)


def test_plot_rotations_on_a_given_ax_and_bad_input():
    fig, ax = plt.subplots()
    assert plot_rotations(torch.tensor([0.5, 0.5]), torch.tensor([0.1]), ax=ax) is fig
    with pytest.raises(ValueError, match="vector"):
        plot_rotations([1.0, 0.0, 0.0], [0.0])
    with pytest.raises(ValueError, match="labels"):
        plot_rotations([1.0, 0.0], [0.0, 1.0], labels=["one"])


def test_plot_gram_matrix_shows_the_dot_products():
    vectors = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    fig = plot_gram_matrix(vectors, title="Gram")
    ax = fig.axes[0]
    assert_labelled(ax) and ax.get_title() == "Gram"
    np.testing.assert_allclose(ax.images[0].get_array(), (vectors @ vectors.T).numpy())
    fig, ax = plt.subplots()
    assert plot_gram_matrix(vectors, ax=ax) is fig
    with pytest.raises(ValueError, match="vectors"):
        plot_gram_matrix(torch.zeros(3))


# plot_scores_by_offset (lecture 08's control)

from utils.plots import plot_scores_by_offset  # noqa: E402


def test_plot_scores_by_offset_draws_each_curve_on_positive_offsets():
    offsets = np.arange(5.0)
    fig = plot_scores_by_offset(offsets, {"a": offsets ** 2, "b": -offsets}, title="T")
    (ax,) = fig.axes
    assert_labelled(ax) and ax.get_xscale() == "log" and ax.get_title() == "T"
    curves = [line for line in ax.lines if line.get_label() in ("a", "b")]
    np.testing.assert_allclose(curves[0].get_xdata(), [1, 2, 3, 4])
    np.testing.assert_allclose(curves[1].get_ydata(), [-1, -2, -3, -4])
    fig, ax = plt.subplots()
    assert plot_scores_by_offset(offsets, {"a": offsets}, ax=ax) is fig
    with pytest.raises(ValueError, match="curves must be a non-empty mapping"):
        plot_scores_by_offset(offsets, {})
    with pytest.raises(ValueError, match=r"curves\['a'\] must have shape \(5,\)"):
        plot_scores_by_offset(offsets, {"a": np.zeros(3)})


# the updates of the lectures' controls: a drawn figure given new data shows what a new one does

from utils.plots import (  # noqa: E402
    set_bar_heights,
    update_heatmap,
    update_query_keys,
    update_scores_by_offset,
)


def shown(ax) -> dict:
    """What ax shows: limits, title, lines, bar heights, image, texts with places and colours."""
    return {
        "title": ax.get_title(),
        "limits": np.round([ax.get_xlim(), ax.get_ylim()], 9).tolist(),
        "lines": [(line.get_xydata().tolist(), line.get_label()) for line in ax.lines],
        "heights": [getattr(patch, "get_height", lambda: None)() for patch in ax.patches],
        "images": [image.get_array().tolist() for image in ax.images],
        "texts": [(text.get_text(), tuple(getattr(text, "xy", text.get_position())),
                   text.get_color()) for text in ax.texts],
        "widths": [text.arrow_patch.get_linewidth() for text in ax.texts
                   if getattr(text, "arrow_patch", None)],
        "legend": [t.get_text() for t in ax.get_legend().get_texts()] if ax.get_legend() else [],
    }


def test_update_heatmap_shows_new_weights_and_numbers_as_a_new_heatmap_does():
    old, new = torch.rand(3, 4), torch.rand(3, 4)
    fig = plot_attention(old, titles="old")
    update_heatmap(fig.axes[0], new, "new")
    assert shown(fig.axes[0]) == shown(plot_attention(new, titles="new").axes[0])
    with pytest.raises(ValueError, match=r"matrix must have shape \(3, 4\)"):
        update_heatmap(fig.axes[0], torch.rand(4, 3))


def test_update_query_keys_moves_the_arrows_as_a_new_plot_draws_them():
    query, keys, weights = torch.tensor([0.0, 1.0]), torch.rand(3, 2), torch.tensor([0.2, 0.3, 0.5])
    fig = plot_query_keys(torch.tensor([1.0, 0.0]), -keys, weights.flip(0), torch.rand(2) * 3)
    update_query_keys(fig.axes[0], query, keys, weights, keys[0], title="new")
    fresh = plot_query_keys(query, keys, weights, keys[0], title="new")
    assert shown(fig.axes[0]) == shown(fresh.axes[0])
    plain = plot_query_keys(query, keys, key_labels=["a", "b", "c"])
    update_query_keys(plain.axes[0], -query, keys, key_labels=["a", "b", "c"])
    assert texts(plain.axes[0])[1::2] == ["q", "a", "b", "c"]
    with pytest.raises(ValueError, match=r"keys must have shape \(3, 2\)"):
        update_query_keys(plain.axes[0], query, keys[:2])


def test_update_scores_by_offset_relabels_and_rescales_as_a_new_plot_does():
    offsets = np.arange(9.0)
    fig = plot_scores_by_offset(offsets, {"a": offsets, "b": -offsets})
    curves = {"c": np.cos(offsets) * 5, "d": offsets**2}
    update_scores_by_offset(fig.axes[0], offsets, curves)
    assert shown(fig.axes[0]) == shown(plot_scores_by_offset(offsets, curves).axes[0])
    with pytest.raises(ValueError, match="curves must be a mapping of 2 labels"):
        update_scores_by_offset(fig.axes[0], offsets, {"c": offsets})


def test_set_bar_heights_gives_each_bar_its_height():
    fig = plot_distributions(torch.tensor([0.5, 0.5]))
    set_bar_heights(fig.axes[0], [0.1, 0.9])
    assert [bar.get_height() for bar in fig.axes[0].patches] == [0.1, 0.9]
    with pytest.raises(ValueError, match=r"heights must have shape \(2,\)"):
        set_bar_heights(fig.axes[0], [0.1, 0.2, 0.7])
