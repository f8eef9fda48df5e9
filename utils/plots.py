"""Pure plot helpers: each takes data and an optional ax, draws, and returns the Figure."""

from __future__ import annotations

import math
from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.colors import Colormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, Rectangle
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from utils import validation
from utils.data import direction_name
from utils.training import History

QUERY_COLOR = "C3"
KEY_COLOR = "C0"
CONTEXT_COLOR = "C2"
SOURCE_COLOR = "C0"
TARGET_COLOR = "C1"
PREDICTION_COLOR = "C2"


def _check_ax(ax) -> None:
    """Raise ValueError unless ax is None or a matplotlib Axes."""
    if ax is not None and not isinstance(ax, Axes):
        raise ValueError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")


def _single_axes(ax, figsize=(5, 4)) -> tuple[Figure, Axes]:
    """The figure and axes to draw on: ax's own, or a new figure's when ax is None."""
    _check_ax(ax)
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
        return fig, ax
    return ax.figure, ax


def _grid_axes(ax, count: int, ncols: int, panel_size) -> tuple[Figure, list[Axes]]:
    """count axes: the given sequence of count axes, or a new grid with ncols columns."""
    if ax is None:
        ncols = min(ncols, count)
        nrows = math.ceil(count / ncols)
        figsize = (panel_size[0] * ncols, panel_size[1] * nrows)
        fig, grid = plt.subplots(nrows, ncols, figsize=figsize, squeeze=False, layout="constrained")
        axes = list(grid.ravel())  # (nrows * ncols,)
        for unused in axes[count:]:
            unused.set_visible(False)
        return fig, axes[:count]
    if isinstance(ax, Axes) and count == 1:
        return ax.figure, [ax]
    axes = list(np.ravel(np.asarray(ax, dtype=object))) if not isinstance(ax, Axes) else [ax]
    if len(axes) != count or not all(isinstance(a, Axes) for a in axes):
        raise ValueError(f"ax must be None or a sequence of {count} matplotlib Axes, got {ax!r}")
    return axes[0].figure, axes


def _loss_curves(history, log_scale: bool) -> dict[str, np.ndarray]:
    """The curves name -> losses (epochs,) of a History or a dict, checked."""
    if isinstance(history, History):
        curves = {"train": history.train_loss}
        if history.val_loss:
            curves["validation"] = history.val_loss
    elif isinstance(history, Mapping) and history:
        curves = dict(history)
    else:
        raise ValueError(
            f"history must be a History or a non-empty dict name -> list of floats, got {history!r}"
        )
    checked = {}
    for name, losses in curves.items():
        values = validation.numpy_array(losses, f"history[{name!r}]")
        ok = values.ndim == 1 and values.size > 0
        validation.with_shape(values, f"history[{name!r}]", "(epochs,) with epochs >= 1", ok)
        if log_scale and not bool((values > 0).all()):
            raise ValueError(f"log_scale needs positive losses, got {values.min()} in {name!r}")
        checked[str(name)] = values
    return checked


def plot_losses(history, ax=None, title="Loss", log_scale=False) -> Figure:
    """Loss curves against epoch from a History or a dict name -> list of floats (epochs,)."""
    curves = _loss_curves(history, log_scale)
    fig, ax = _single_axes(ax)
    for name, values in curves.items():
        ax.plot(np.arange(1, len(values) + 1), values, marker="o", markersize=3, label=name)
    if log_scale:
        ax.set_yscale("log")
    ax.set_title(title)
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss (log scale)" if log_scale else "loss")
    ax.legend()
    return fig


def _text_color(cmap, value: float, vmin: float, vmax: float) -> str:
    """Black or white, whichever reads better on the colormap's colour for value."""
    if not math.isfinite(value):
        return "black"  # NaN and inf cells are left blank (white) by imshow
    fraction = (value - vmin) / (vmax - vmin)
    red, green, blue, _ = cmap(min(max(fraction, 0.0), 1.0))
    luminance = 0.299 * red + 0.587 * green + 0.114 * blue
    return "black" if luminance > 0.5 else "white"


def _draw_heatmap(ax, matrix, query_labels, key_labels, title, annotate, cmap, vmin, vmax):
    """Draw one (Lq, Lk) matrix on ax as a heatmap; returns the image."""
    image = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(matrix.shape[1]), labels=key_labels)
    ax.set_yticks(range(matrix.shape[0]), labels=query_labels)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    if annotate:
        for row, col in np.ndindex(matrix.shape):
            ax.text(col, row, "", ha="center", va="center", fontsize=8)
    update_heatmap(ax, matrix, title)
    return image


def update_heatmap(ax, matrix, title=None) -> None:
    """Show matrix (Lq, Lk) in the heatmap plot_attention drew on ax: colours, numbers, title."""
    image = ax.images[0]
    matrix = validation.numpy_array(matrix, "matrix")
    expected = image.get_array().shape
    validation.with_shape(matrix, "matrix", str(expected), matrix.shape == expected)
    image.set_data(matrix)
    vmin, vmax = image.norm.vmin, image.norm.vmax
    for text, value in zip(ax.texts, matrix.ravel(), strict=False):
        text.set_text(f"{value:.2f}")
        text.set_color(_text_color(image.cmap, value, vmin, vmax))
    if title is not None:
        ax.set_title(title)


QUERY_ROW_GID = "chosen query"


def mark_query_row(ax, row) -> None:
    """Outline row `row` of the heatmap plot_attention drew on ax (moved there if outlined)."""
    n_rows, n_columns = ax.images[0].get_array().shape
    row = validation.index(row, "row", n_rows)
    marks = [patch for patch in ax.patches if patch.get_gid() == QUERY_ROW_GID]
    if marks:
        marks[0].set_y(row - 0.5)
        return
    ax.add_patch(Rectangle((-0.5, row - 0.5), n_columns, 1, fill=False, edgecolor="black",
                           linewidth=2.5, gid=QUERY_ROW_GID, clip_on=False))


def plot_attention(
    weights,
    query_labels=None,
    key_labels=None,
    titles=None,
    annotate=True,
    ax=None,
    cmap="viridis",
    ncols=4,
    vmin=0.0,
    vmax=1.0,
) -> Figure:
    """Heatmaps of attention weights (Lq, Lk) or (B, Lq, Lk): keys on x, queries on y."""
    matrices = validation.numpy_array(weights, "weights")
    ok = matrices.ndim in (2, 3) and matrices.size > 0
    validation.with_shape(matrices, "weights", "(Lq, Lk) or (B, Lq, Lk)", ok)
    is_batch = matrices.ndim == 3
    if not is_batch:
        _check_ax(ax)
        matrices = matrices[None]  # (1, Lq, Lk)
    count, n_queries, n_keys = matrices.shape
    query_labels = validation.labels(query_labels, n_queries, "query_labels")
    key_labels = validation.labels(key_labels, n_keys, "key_labels")
    if titles is None and not is_batch:
        titles = ["attention weights"]
    elif titles is None:
        titles = [f"attention weights {i}" for i in range(count)]
    elif isinstance(titles, str):
        titles = [titles] * count
    titles = validation.labels(titles, count, "titles")
    ncols = validation.positive_int(ncols, "ncols")
    finite = validation.is_finite_number(vmin) and validation.is_finite_number(vmax)
    if not (finite and vmin < vmax):
        raise ValueError(f"vmin and vmax must be numbers with vmin < vmax, got {vmin!r}, {vmax!r}")
    if not isinstance(cmap, Colormap) and cmap not in colormaps:
        raise ValueError(f"cmap must be a matplotlib colormap or its name, got {cmap!r}")

    panel_size = (max(3.0, 0.6 * n_keys + 1.5), max(2.5, 0.5 * n_queries + 1.2))
    fig, axes = _grid_axes(ax, count, ncols, panel_size)
    for panel, matrix, title in zip(axes, matrices, titles, strict=True):
        image = _draw_heatmap(
            panel, matrix, query_labels, key_labels, title, annotate, cmap, vmin, vmax
        )
    fig.colorbar(image, ax=axes, label="weight")
    return fig


def _arrow(ax, vector, color, label, linewidth=1.5) -> None:
    """An arrow from the origin to vector (2,) with label at its tip."""
    ax.annotate(
        "",
        xy=tuple(vector),
        xytext=(0.0, 0.0),
        arrowprops={"arrowstyle": "->", "color": color, "linewidth": linewidth},
    )
    ax.annotate(label, xy=tuple(vector), xytext=(4, 4), textcoords="offset points", color=color)


def _plane(ax, limit: float, labels: tuple[str, str], title: str) -> None:
    """Square axes from -limit to limit with the two coordinate axes drawn, labelled and titled."""
    ax.set_xlim(-limit, limit)
    ax.set_ylim(-limit, limit)
    ax.set_aspect("equal")
    ax.axhline(0.0, color="grey", linewidth=0.5)
    ax.axvline(0.0, color="grey", linewidth=0.5)
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.set_title(title)


def plot_query_keys(
    query,
    keys,
    weights=None,
    context=None,
    key_labels=None,
    ax=None,
    title="Query and keys",
) -> Figure:
    """Arrows from the origin for a query (2,), keys (Lk, 2) with weights (Lk,), context (2,)."""
    query = validation.numpy_vector(query, "query", 2)
    keys_array = validation.numpy_array(keys, "keys")
    ok = keys_array.ndim == 2 and keys_array.shape[1] == 2 and len(keys_array) > 0
    validation.with_shape(keys_array, "keys", "(Lk, 2)", ok)
    n_keys = len(keys_array)
    weights, context, key_labels = _checked_arrow_extras(weights, context, key_labels, n_keys)

    fig, ax = _single_axes(ax, figsize=(5, 5))
    ax.add_patch(Circle((0.0, 0.0), 1.0, fill=False, color="grey", alpha=0.3, linestyle="--"))
    _arrow(ax, query, QUERY_COLOR, "q", linewidth=2.5)
    for key in keys_array:
        _arrow(ax, key, KEY_COLOR, "")
    handles = [
        Line2D([], [], color=QUERY_COLOR, label="query"),
        Line2D([], [], color=KEY_COLOR, label="keys"),
    ]
    if context is not None:
        _arrow(ax, context, CONTEXT_COLOR, "c", linewidth=2.5)
        handles.append(Line2D([], [], color=CONTEXT_COLOR, label="context"))
    _plane(ax, 1.0, ("dimension 1", "dimension 2"), title)
    ax.legend(handles=handles, loc="best", fontsize=8)
    _set_query_keys(ax, query, keys_array, weights, context, key_labels)
    return fig


def _checked_arrow_extras(weights, context, key_labels, n_keys) -> tuple:
    """Checked weights (n_keys,) or None, context (2,) or None, and n_keys key labels."""
    if weights is not None:
        weights = validation.numpy_vector(weights, "weights", n_keys)
    if context is not None:
        context = validation.numpy_vector(context, "context", 2)
    if key_labels is None:
        key_labels = [f"k{i + 1}" for i in range(n_keys)]
    return weights, context, validation.labels(key_labels, n_keys, "key_labels")


def _move_arrow(arrow, label, vector, text=None, linewidth=None) -> None:
    """Point an arrow of _arrow and its label at vector (2,); a new text and width if given."""
    arrow.xy = label.xy = tuple(vector)
    arrow.stale = label.stale = True
    if text is not None:
        label.set_text(text)
    if linewidth is not None:
        arrow.arrowprops["linewidth"] = linewidth
        arrow.arrow_patch.set_linewidth(linewidth)


def _set_query_keys(ax, query, keys, weights, context, key_labels) -> None:
    """Move the arrows of plot_query_keys on ax to checked arrays, relabel, set the limits."""
    arrows = list(zip(ax.texts[0::2], ax.texts[1::2], strict=True))  # (arrow, label) pairs
    _move_arrow(*arrows[0], query)
    for i, (key, label) in enumerate(zip(keys, key_labels, strict=True)):
        if weights is None:
            _move_arrow(*arrows[1 + i], key, label, 1.5)
        else:
            _move_arrow(*arrows[1 + i], key, f"{label} ({weights[i]:.2f})", 1 + 3 * abs(weights[i]))
    if context is not None:
        _move_arrow(*arrows[1 + len(keys)], context)
    vectors = [query, *keys] + ([context] if context is not None else [])
    limit = 1.3 * max(1.0, float(np.abs(np.stack(vectors)).max()))
    ax.set_xlim(-limit, limit)
    ax.set_ylim(-limit, limit)


def update_query_keys(ax, query, keys, weights=None, context=None, key_labels=None,
                      title=None) -> None:
    """Redraw plot_query_keys's arrows on ax for a new query, keys, weights and context."""
    n_arrows = len(ax.texts) // 2
    query = validation.numpy_vector(query, "query", 2)
    keys = validation.numpy_array(keys, "keys")
    n_keys = n_arrows - 1 - (context is not None)
    validation.with_shape(keys, "keys", f"({n_keys}, 2)", keys.shape == (n_keys, 2))
    weights, context, key_labels = _checked_arrow_extras(weights, context, key_labels, n_keys)
    _set_query_keys(ax, query, keys, weights, context, key_labels)
    if title is not None:
        ax.set_title(title)


def plot_distributions(
    distributions, labels=None, ax=None, title="Probability distributions", xlabel="index"
) -> Figure:
    """Side-by-side bars of probability vectors (n,): one vector or a dict name -> vector."""
    if not isinstance(distributions, Mapping):
        distributions = {"p": distributions}
    if not distributions:
        raise ValueError("distributions must be a vector or a non-empty dict of vectors, got {}")
    vectors = {str(name): validation.numpy_vector(p, f"distributions[{name!r}]")
               for name, p in distributions.items()}
    length = len(next(iter(vectors.values())))
    for name, vector in vectors.items():
        ok = len(vector) == length
        validation.with_shape(vector, f"distributions[{name!r}]", f"({length},)", ok)
    tick_labels = validation.labels(labels, length, "labels")

    fig, ax = _single_axes(ax, figsize=(max(4.0, 0.5 * length + 2), 3.5))
    width = 0.8 / len(vectors)
    positions = np.arange(length)  # (n,)
    for i, (name, vector) in enumerate(vectors.items()):
        offset = (i - (len(vectors) - 1) / 2) * width
        ax.bar(positions + offset, vector, width=width, label=name)
    ax.set_xticks(positions, labels=tick_labels)
    ax.set_ylim(bottom=min(0.0, *(v.min() for v in vectors.values())))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("probability")
    ax.set_title(title)
    ax.legend()
    return fig


def set_bar_heights(ax, heights) -> None:
    """Give the bars drawn on ax, in the order drawn, the heights (n,)."""
    heights = validation.numpy_vector(heights, "heights", len(ax.patches))
    for bar, height in zip(ax.patches, heights, strict=True):
        bar.set_height(height)


def _check_batch(x, name: str, count: int, length: int | None) -> np.ndarray:
    """x as a numpy array of shape (count, length, 2), or ValueError."""
    array = validation.numpy_array(x, name)
    expected = f"({count}, {length if length is not None else 'L'}, 2)"
    ok = array.ndim == 3 and array.shape[0] == count and array.shape[2] == 2
    ok = ok and (length is None or array.shape[1] == length)
    return validation.with_shape(array, name, expected, ok)


def _check_squares_lengths(lengths, count: int, max_length: int) -> np.ndarray:
    """lengths as ints (count,) in 1..max_length, or ValueError."""
    values = validation.numpy_vector(lengths, "lengths", count)
    if not bool(((values >= 1) & (values <= max_length) & (values == values.round())).all()):
        raise ValueError(f"lengths must be integers in 1..{max_length}, got {values.tolist()}")
    return values.astype(int)


def _draw_square_panel(ax, source, target, prediction, title) -> None:
    """One sequence on ax: source (Ls, 2), target (2, 2) or None, prediction (2, 2) or None."""
    ax.plot([], [], "-o", color=SOURCE_COLOR, markersize=5)
    ax.plot([], [], "o", color=SOURCE_COLOR, markersize=9, alpha=0.5)
    if target is not None:
        ax.plot([], [], ":", color=TARGET_COLOR)
        ax.plot([], [], "s", color=TARGET_COLOR, markersize=6)
    if prediction is not None:
        ax.plot([], [], "--x", color=PREDICTION_COLOR, markersize=7)
    _set_square_panel(ax, source, target, prediction)
    ax.set_xlim(-1.6, 1.6)
    ax.set_ylim(-1.6, 1.6)
    ax.set_aspect("equal")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("x", fontsize=8)
    ax.set_ylabel("y", fontsize=8)
    ax.tick_params(labelsize=7)


def _set_square_panel(ax, source, target, prediction) -> None:
    """Give the lines of _draw_square_panel on ax a new source, target and prediction."""
    lines = iter(ax.lines)
    next(lines).set_data(source[:, 0], source[:, 1])
    next(lines).set_data(source[:1, 0], source[:1, 1])
    last = source[-1:]  # (1, 2)
    if target is not None:
        path = np.concatenate([last, target])  # (3, 2)
        next(lines).set_data(path[:, 0], path[:, 1])
        next(lines).set_data(target[:, 0], target[:, 1])
    if prediction is not None:
        path = np.concatenate([last, prediction])  # (L + 1, 2)
        next(lines).set_data(path[:, 0], path[:, 1])


def _squares_legend(has_target: bool, has_prediction: bool) -> list[Line2D]:
    """Legend handles for the squares panels."""
    handles = [Line2D([], [], color=SOURCE_COLOR, marker="o", label="source")]
    if has_target:
        handles.append(Line2D([], [], color=TARGET_COLOR, marker="s", ls=":", label="target"))
    if has_prediction:
        handles.append(
            Line2D([], [], color=PREDICTION_COLOR, marker="x", ls="--", label="prediction")
        )
    return handles


def plot_squares(
    source, target=None, prediction=None, directions=None, ax=None, ncols=4, lengths=None
) -> Figure:
    """One panel per sequence: source (B, Ls, 2), target (B, 2, 2), prediction (B, 2, 2)."""
    source = validation.numpy_array(source, "source")
    validation.with_shape(source, "source", "(B, Ls, 2)", source.ndim == 3 and source.shape[2] == 2)
    count, max_length, _ = source.shape
    ok = count > 0 and max_length > 0
    validation.with_shape(source, "source", "(B, Ls, 2) with B, Ls >= 1", ok)
    if target is not None:
        target = _check_batch(target, "target", count, None)
    if prediction is not None:
        expected_length = target.shape[1] if target is not None else None
        prediction = _check_batch(prediction, "prediction", count, expected_length)
    if directions is not None:
        directions = validation.numpy_vector(directions, "directions", count)
        if not bool(np.isin(directions, (0, 1)).all()):
            raise ValueError(f"directions must be 0 or 1, got {directions.tolist()}")
        titles = [direction_name(int(d)) for d in directions]
    else:
        titles = [f"sequence {i}" for i in range(count)]
    if lengths is None:
        lengths = np.full(count, max_length)
    lengths = _check_squares_lengths(lengths, count, max_length)
    ncols = validation.positive_int(ncols, "ncols")

    fig, axes = _grid_axes(ax, count, ncols, (2.6, 2.6))
    handles = _squares_legend(target is not None, prediction is not None)
    if ax is None:
        fig.legend(handles=handles, loc="outside upper center", ncols=len(handles), fontsize=8)
    else:
        axes[0].legend(handles=handles, fontsize=7, loc="upper left")
    for i, panel in enumerate(axes):
        _draw_square_panel(
            panel,
            source[i, : lengths[i]],
            None if target is None else target[i],
            None if prediction is None else prediction[i],
            titles[i],
        )
    return fig


def plot_running_max(scores, running_max, running_sum, ax=None, title=None) -> Figure:
    """Scores read one by one, with the running maximum m and the running sum ℓ after each."""
    scores = validation.numpy_array(scores, "scores")
    ok = scores.ndim == 1 and scores.size > 0
    validation.with_shape(scores, "scores", "(L,) with L >= 1", ok)
    running_max = validation.numpy_vector(running_max, "running_max", scores.size)
    running_sum = validation.numpy_vector(running_sum, "running_sum", scores.size)
    fig, ax = _single_axes(ax, figsize=(7, 3.5))
    positions = np.arange(scores.size)
    ax.plot(positions, scores, "o", color=KEY_COLOR, label="score $s_j$")
    ax.step(positions, running_max, where="post", color=QUERY_COLOR, label="running maximum $m$")
    ax.set_xlabel("position j read so far")
    ax.set_ylabel("score")
    right = ax.twinx()
    right.step(positions, running_sum, where="post", color=CONTEXT_COLOR, linestyle="--",
               label="running sum $\\ell$")
    right.set_ylabel("running sum $\\ell$")
    right.set_ylim(bottom=0)
    lines = ax.get_legend_handles_labels()
    extra = right.get_legend_handles_labels()
    ax.legend(lines[0] + extra[0], lines[1] + extra[1], fontsize=8, loc="lower right")
    ax.set_title(title or "The online softmax, one score at a time")
    return fig


TILE_KINDS = ("skipped", "partly masked", "computed in full")


def tile_kinds(allowed, block_q: int, block_k: int) -> np.ndarray:
    """(tiles of queries, tiles of keys) codes: 0 all masked, 1 partly, 2 nothing masked."""
    allowed = validation.numpy_array(allowed, "allowed") > 0
    validation.with_shape(allowed, "allowed", "(Lq, Lk)", allowed.ndim == 2 and allowed.size > 0)
    block_q = validation.positive_int(block_q, "block_q")
    block_k = validation.positive_int(block_k, "block_k")
    rows = range(0, allowed.shape[0], block_q)
    columns = range(0, allowed.shape[1], block_k)
    kinds = np.zeros((len(rows), len(columns)), dtype=int)
    for i, first_q in enumerate(rows):
        for j, first_k in enumerate(columns):
            tile = allowed[first_q:first_q + block_q, first_k:first_k + block_k]
            kinds[i, j] = 2 if tile.all() else int(tile.any())
    return kinds


def plot_block_tiling(allowed, block_q: int, block_k: int, ax=None, title=None) -> Figure:
    """A mask (Lq, Lk), True = may attend, cut into tiles of block_q queries by block_k keys."""
    kinds = tile_kinds(allowed, block_q, block_k)
    allowed = validation.numpy_array(allowed, "allowed") > 0
    length_q, length_k = allowed.shape
    fig, ax = _single_axes(ax, figsize=(5, 5))
    ax.imshow(allowed, cmap=colormaps["Greys"], vmin=-0.5, vmax=1.5, aspect="equal")
    styles = ({"fill": False, "hatch": "//"}, {"facecolor": "C1", "alpha": 0.4},
              {"facecolor": "C2", "alpha": 0.4})
    for i, first_q in enumerate(range(0, length_q, block_q)):
        for j, first_k in enumerate(range(0, length_k, block_k)):
            height = min(block_q, length_q - first_q)
            width = min(block_k, length_k - first_k)
            kind = kinds[i, j]
            ax.add_patch(plt.Rectangle((first_k - 0.5, first_q - 0.5), width, height,
                                       edgecolor="black", linewidth=1.5, **styles[kind]))
            ax.text(first_k - 0.5 + width / 2, first_q - 0.5 + height / 2,
                    ("skip", "mask", "full")[kind], ha="center", va="center", fontsize=8,
                    bbox={"facecolor": "white", "alpha": 0.8, "linewidth": 0})
    handles = [plt.Rectangle((0, 0), 1, 1, edgecolor="black", **style) for style in styles]
    ax.legend(handles, TILE_KINDS, fontsize=8, loc="upper right")
    ax.set_xlabel(f"key position (blocks of {block_k})")
    ax.set_ylabel(f"query position (blocks of {block_q})")
    ax.set_xlim(-0.5, length_k - 0.5)
    ax.set_ylim(length_q - 0.5, -0.5)
    ax.set_title(title or "Tiles of the scores: dark = may attend")
    return fig


def plot_rotations(vector, angles, labels=None, ax=None, title="A pair rotated by p * omega_i"):
    """Arrows for a pair `vector` (2,) turned by each of `angles` (P,) radians, labelled."""
    vector = validation.numpy_vector(vector, "vector", 2)
    angles = validation.numpy_vector(angles, "angles")
    if labels is None:
        labels = [f"{a:.2f} rad" for a in angles]
    labels = validation.labels(labels, len(angles), "labels")
    fig, ax = _single_axes(ax, figsize=(4, 4))
    radius = float(np.hypot(*vector))
    ax.add_patch(Circle((0.0, 0.0), radius, fill=False, color="grey", alpha=0.3, linestyle="--"))
    colors = colormaps["viridis"](np.linspace(0.0, 0.85, len(angles)))
    for angle, label, color in zip(angles, labels, colors, strict=True):
        c, s = math.cos(angle), math.sin(angle)
        turned = np.array([c * vector[0] - s * vector[1], s * vector[0] + c * vector[1]])
        _arrow(ax, turned, color, label)
    _plane(ax, 1.35 * max(radius, 1e-9), ("feature 2i", "feature 2i + 1"), title)
    return fig


def plot_gram_matrix(vectors, ax=None, title="Dot products between rows", label="position"):
    """Heatmap of the dot products vectors @ vectors.T of rows (L, d), with a colour bar."""
    array = validation.numpy_array(vectors, "vectors")
    ok = array.ndim == 2 and array.shape[0] > 0 and array.shape[1] > 0
    validation.with_shape(array, "vectors", "(L, d) with L, d >= 1", ok)
    gram = array @ array.T  # (L, L)
    fig, ax = _single_axes(ax, figsize=(5, 4))
    image = ax.imshow(gram, cmap="viridis")
    fig.colorbar(image, ax=ax, label="dot product")
    ax.set_xlabel(f"{label} m")
    ax.set_ylabel(f"{label} p")
    ax.set_title(title)
    return fig


def plot_scores_by_offset(offsets, curves, ax=None, title="Score against offset", ylabel="score"):
    """One line per {label: scores (O,)} of `curves` against offsets (O,), offsets > 0, log x."""
    offsets = validation.numpy_vector(offsets, "offsets")
    if not isinstance(curves, Mapping) or not curves:
        raise ValueError(f"curves must be a non-empty mapping of label to scores, got {curves!r}")
    curves = {label: validation.numpy_vector(scores, f"curves[{label!r}]", len(offsets))
              for label, scores in curves.items()}
    fig, ax = _single_axes(ax, figsize=(6, 3.5))
    for _ in curves:
        ax.plot([], [], linewidth=1.2)
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.set_xscale("log")
    _set_scores_by_offset(ax, offsets, curves)
    positive = offsets > 0
    largest = float(offsets[positive].max()) if positive.any() else 1.0
    ax.xaxis.set_major_locator(FixedLocator([4.0**i for i in range(32) if 4.0**i <= largest]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    ax.xaxis.set_minor_locator(NullLocator())  # plain powers of 4, and a cheaper redraw
    ax.set_xlabel("offset of the query from the key (log scale)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return fig


def _set_scores_by_offset(ax, offsets, curves) -> None:
    """Give the first len(curves) lines on ax the curves' scores (O,) at offsets > 0 and labels;
    fit the limits to every line, the line at 0 included."""
    positive = offsets > 0
    for line, (label, scores) in zip(ax.lines, curves.items(), strict=False):
        scores = validation.numpy_vector(scores, f"curves[{label!r}]", len(offsets))
        line.set_data(offsets[positive], scores[positive])
        line.set_label(str(label))
    ax.relim()
    ax.autoscale_view()


def update_scores_by_offset(ax, offsets, curves) -> None:
    """Redraw plot_scores_by_offset's curves on ax: new scores and labels, the limits rescaled."""
    offsets = validation.numpy_vector(offsets, "offsets")
    legend = ax.get_legend()
    drawn = len(legend.get_texts()) if legend is not None else len(ax.lines) - 1
    if not isinstance(curves, Mapping) or len(curves) != drawn:
        raise ValueError(f"curves must be a mapping of {drawn} labels to scores, got {curves!r}")
    _set_scores_by_offset(ax, offsets, curves)
    if legend is not None:
        for text, label in zip(legend.get_texts(), curves, strict=True):
            text.set_text(str(label))
