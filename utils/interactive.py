"""Controls for the lectures: a slider or a toggle over pure functions that compute what it draws.

Each lesson's control has three layers, so that only the last needs a browser:

* a pure function that computes what the control shows (`temperature_weights`, `attend_one`,
  `online_softmax_trace`, ...), tested like any other;
* a view, `*_view(...) -> (Figure, str)`: the figure and a one-line readout for given values,
  drawn with the plot helpers of `utils.plots`. Inside `keeping_figures`, a view called again
  updates the artists of the figure it drew before (bar heights, lines, images, texts) instead of
  drawing a new one, and leaves it alone when the new value changes nothing it shows;
* `show(view, **controls)`, which displays the controls, then the view at the controls' starting
  values, and redraws it in place whenever a control moves (`LiveView`): the figure's layout is
  fixed at the first draw, and each change draws the changed axes' contents over a kept
  background of what stays, and sends one PNG (`Picture`).

A notebook stored after running such a cell keeps the figure and the readout at the starting
values as ordinary outputs, and no widget id: it reads the same where no kernel runs.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import dataclasses
import functools
import io
import math

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from IPython.display import display
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedFormatter
from PIL import Image

from utils import gpt, plots, transformer, validation

# --------------------------------------------------------------------------- the pure functions


def temperature_weights(scores, temperature) -> tuple[torch.Tensor, float]:
    """(softmax(scores / temperature) (n,), its entropy in nats) for scores (n,)."""
    scores = validation.vector(scores, "scores")
    temperature = validation.positive_number(temperature, "temperature")
    weights = torch.softmax(scores / temperature, dim=0)  # (n,)
    entropy = -(weights * torch.log(weights.clamp_min(1e-300))).sum()
    return weights, float(entropy)


def query_at_angle(angle_degrees, length=1.0) -> torch.Tensor:
    """The 2-D query (2,) of the given length, at angle_degrees from the first axis."""
    if isinstance(angle_degrees, bool) or not isinstance(angle_degrees, int | float):
        raise ValueError(f"angle_degrees must be a number, got {angle_degrees!r}")
    angle = math.radians(angle_degrees)
    length = validation.positive_number(length, "length")
    return torch.tensor([length * math.cos(angle), length * math.sin(angle)], dtype=torch.float64)


def attend_one(query, keys, values, scale=1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """(context (d_v,), weights (Lk,)) of one query (d_k,) over keys (Lk, d_k), values (Lk, d_v)."""
    query = validation.vector(query, "query")
    keys = validation.matrix(keys, "keys", len(query))
    values = validation.matrix(values, "values")
    if len(values) != len(keys):
        raise ValueError(f"values must have {len(keys)} rows like keys, got {len(values)}")
    scale = validation.positive_number(scale, "scale")
    weights = torch.softmax(keys @ query * scale, dim=0)  # (Lk,)
    return weights @ values, weights


def bilinear_matrix(angle_degrees, scale=1.0) -> torch.Tensor:
    """W (2, 2) = scale times the rotation by angle_degrees: the matrix of a bilinear score."""
    query = query_at_angle(angle_degrees, validation.positive_number(scale, "scale"))
    return torch.stack([query, torch.stack([-query[1], query[0]])], dim=1)  # columns: W e1, W e2


SCALING_DIMENSIONS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def divisor_sweep(exponent, dimensions=SCALING_DIMENSIONS, n_keys=8, n_queries=256,
                  seed=0) -> dict[str, list[float]]:
    """Mean largest weight and median gradient norm at the query, per d_k, for scores / d_k^a.

    Queries and keys are random with unit-variance coordinates, `n_keys` keys per query, and an
    upstream gradient drawn at random, as if from a loss.
    """
    if isinstance(exponent, bool) or not isinstance(exponent, int | float) or not (
        0 <= exponent <= 1
    ):
        raise ValueError(f"exponent must be a number from 0 to 1, got {exponent!r}")
    draws = _divisor_draws(tuple(dimensions), validation.positive_int(n_keys, "n_keys"),
                           validation.positive_int(n_queries, "n_queries"), validation.seed(seed))
    sweep = {"d_k": [], "top_weight": [], "query_gradient": []}
    for d_k, (queries, keys, upstream) in zip(dimensions, draws, strict=True):
        d_k, queries = int(d_k), queries.clone().requires_grad_(True)
        scores = queries @ keys.transpose(1, 2) / d_k**exponent  # (n_queries, 1, n_keys)
        weights = torch.softmax(scores, dim=-1)  # (n_queries, 1, n_keys)
        (weights * upstream).sum().backward()
        sweep["d_k"].append(d_k)
        sweep["top_weight"].append(float(weights.detach().amax(dim=-1).mean()))
        sweep["query_gradient"].append(float(queries.grad.norm(dim=-1).median()))
    return sweep


@functools.lru_cache(maxsize=8)
def _divisor_draws(dimensions, n_keys, n_queries, seed) -> list[tuple[torch.Tensor, ...]]:
    """Per d_k: queries (n_q, 1, d_k), keys (n_q, n_keys, d_k), upstream (n_q, 1, n_keys)."""
    generator = torch.Generator()
    generator.manual_seed(seed)
    draws = []
    for d_k in dimensions:
        d_k = validation.positive_int(d_k, "each of dimensions")
        shapes = [(n_queries, 1, d_k), (n_queries, n_keys, d_k), (n_queries, 1, n_keys)]
        draws.append(tuple(torch.randn(*shape, generator=generator, dtype=torch.float64)
                           for shape in shapes))
    return draws


def padding_and_causal_mask(length, valid_keys, causal, padding_first=False) -> torch.Tensor:
    """Boolean mask (length, length), True = may attend: the valid_keys real keys (the first
    ones, or the last ones when the padding comes first), causal if asked."""
    length = validation.positive_int(length, "length")
    valid_keys = validation.index(valid_keys, "valid_keys", length + 1)
    causal = validation.boolean(causal, "causal")
    padding_first = validation.boolean(padding_first, "padding_first")
    positions = torch.arange(length)
    real = positions >= length - valid_keys if padding_first else positions < valid_keys
    mask = real.expand(length, length)  # (Lq, Lk)
    return mask & transformer.causal_mask(length) if causal else mask


def empty_rows(mask) -> list[int]:
    """The queries (rows) of a boolean mask (Lq, Lk) that may attend to no key."""
    mask = torch.as_tensor(mask)
    if mask.dtype != torch.bool or mask.dim() != 2:
        raise ValueError(
            f"mask must be a bool tensor (Lq, Lk), got {mask.dtype} {tuple(mask.shape)}"
        )
    return (~mask).all(dim=-1).nonzero().flatten().tolist()


def masked_weights(scores, mask) -> torch.Tensor:
    """Softmax of scores (Lq, Lk) over the keys the mask allows; a fully masked row is all zeros."""
    scores = validation.matrix(scores, "scores")
    mask = torch.as_tensor(mask)
    if mask.dtype != torch.bool or mask.shape != scores.shape:
        raise ValueError(
            f"mask must be a bool tensor of shape {tuple(scores.shape)}, got "
            f"{mask.dtype} {tuple(mask.shape)}"
        )
    return transformer.masked_softmax(scores, mask)  # a fully masked row: all zeros


def pick(items, index, name="index"):
    """items[index] for a tensor or sequence of items, with a ValueError naming the valid range."""
    return items[validation.index(index, name, len(items))]


def rope_head_scores(query, key, offsets, base=10000.0) -> torch.Tensor:
    """Scores (O,) of a whole head with RoPE: query (d,) at position m + offset, key (d,) at m."""
    query = validation.vector(query, "query")
    key = validation.vector(key, "key", len(query))
    if len(query) % 2:
        raise ValueError(f"query must have an even length (pairs of features), got {len(query)}")
    offsets = validation.vector(offsets, "offsets")
    omega = transformer.rope_frequencies(len(query), base, torch.float64)  # (d / 2,)
    angles = torch.outer(offsets, omega)  # (O, d / 2)
    (q0, q1), (k0, k1) = query.view(-1, 2).T, key.view(-1, 2).T  # (d / 2,) each
    return torch.cos(angles) @ (q0 * k0 + q1 * k1) + torch.sin(angles) @ (q0 * k1 - q1 * k0)


def first_offset_below(offsets, scores, level) -> int | None:
    """The first of offsets (O,) whose score in scores (O,) is below level, or None."""
    offsets = validation.vector(offsets, "offsets")
    scores = validation.vector(scores, "scores", len(offsets))
    below = (scores < level).nonzero()
    return int(offsets[below[0, 0]]) if len(below) else None


def online_softmax_trace(scores, values, chunk_size) -> list[dict[str, float]]:
    """One query's online softmax over scores (L,) and values (L,), one state per chunk.

    Each state holds the running maximum `m`, the running sum `l` of e^(s - m), and the output
    `o / l` of the chunks read so far.
    """
    scores, values = validation.vector(scores, "scores"), validation.vector(values, "values")
    if len(values) != len(scores):
        raise ValueError(f"values must have {len(scores)} entries like scores, got {len(values)}")
    chunk_size = validation.positive_int(chunk_size, "chunk_size")
    m, total, weighted = -math.inf, 0.0, 0.0
    trace = []
    for start in range(0, len(scores), chunk_size):
        chunk = scores[start : start + chunk_size].tolist()
        new_m = max(m, *chunk)
        shrink = math.exp(m - new_m)  # 0 for the first chunk, when m = -inf
        exps = [math.exp(s - new_m) for s in chunk]
        total = total * shrink + sum(exps)
        weighted = weighted * shrink + sum(
            e * v for e, v in zip(exps, values[start : start + chunk_size].tolist(), strict=True)
        )
        m = new_m
        trace.append({"m": m, "l": total, "output": weighted / total, "end": start + len(chunk)})
    return trace


def sampling_distribution(logits, temperature, top_k=None) -> torch.Tensor:
    """The distribution (V,) that generation draws from (utils.gpt.next_token_probabilities)."""
    return gpt.next_token_probabilities(validation.vector(logits, "logits"), temperature, top_k)


def characters_covering(probabilities, share) -> int:
    """How many of the likeliest entries of probabilities (V,) it takes to reach `share`."""
    probabilities = validation.vector(probabilities, "probabilities")
    ordered = probabilities.sort(descending=True).values  # (V,)
    share = validation.probability(share, "share")
    return int((ordered.cumsum(0) < share - 1e-12).sum()) + 1


# --------------------------------------------------------------------------- the views

_KEPT = contextvars.ContextVar("kept_figures", default=None)


@dataclasses.dataclass
class _Drawing:
    """A view's figure, the key its artists were made for, and the state they show."""

    figure: Figure
    key: tuple
    state: dict
    changed: bool = True


@contextlib.contextmanager
def keeping_figures(drawings: dict):
    """Inside, each view updates the figure it left in `drawings` instead of drawing a new one."""
    token = _KEPT.set(drawings)
    try:
        yield drawings
    finally:
        _KEPT.reset(token)


def _same_state(old: dict, new: dict) -> bool:
    """Whether two states of a drawing hold equal values (arrays compared element by element)."""
    if old.keys() != new.keys():
        return False
    pairs = ((np.asarray(old[name]), np.asarray(new[name])) for name in old)
    return all(a.shape == b.shape and bool(np.array_equal(a, b)) for a, b in pairs)


def _copied(state: dict) -> dict:
    """The state's values as NumPy copies, to compare with the next state."""
    return {name: np.asarray(value).copy() for name, value in state.items()}


def _drawn(key, build, update, **state) -> Figure:
    """build(**state) updated by update(figure, **state); inside keeping_figures, the figure kept
    for `build` if made for the same key, updated only when the state changed."""
    kept = _KEPT.get()
    drawing = kept.get(build) if kept is not None else None
    if drawing is not None and drawing.key == key:
        drawing.changed = not _same_state(drawing.state, state)
        if drawing.changed:
            update(drawing.figure, **state)
            drawing.state = _copied(state)
        return drawing.figure
    figure = build(**state)
    update(figure, **state)
    if kept is not None:
        kept[build] = _Drawing(figure, key, _copied(state))
    return figure


def _temperature_figure(weights, title) -> Figure:
    """Bars of weights (n,) on a probability axis from 0 to 1."""
    fig = plots.plot_distributions(weights, title=title, xlabel="key")
    fig.axes[0].set_ylim(0, 1)
    return fig


def _temperature_update(fig, weights, title) -> None:
    """New bar heights and title."""
    plots.set_bar_heights(fig.axes[0], weights)
    fig.axes[0].set_title(title)


def temperature_view(scores, temperature) -> tuple[plt.Figure, str]:
    """Bars of softmax(scores / T) and the readout of every weight and of their entropy."""
    weights, entropy = temperature_weights(scores, temperature)
    shown = ", ".join(f"{float(weight):.2f}" for weight in weights)
    readout = f"T = {temperature:.2f}: weights {shown}; " + (
        f"entropy {entropy:.2f} nats (uniform: {math.log(len(weights)):.2f})"
    )
    fig = _drawn((len(weights),), _temperature_figure, _temperature_update, weights=weights,
                 title=f"softmax(s / T) at T = {temperature:.2f}")
    return fig, readout


def _arrows_figure(**arrows) -> Figure:
    """plots.plot_query_keys of the arrows."""
    return plots.plot_query_keys(**arrows)


def _arrows_update(fig, **arrows) -> None:
    """plots.update_query_keys of the arrows."""
    plots.update_query_keys(fig.axes[0], **arrows)


def _draw_arrows(query, keys, weights, context=None, key_labels=None, title="") -> Figure:
    """The figure of a query, keys (Lk, 2) with their weights (Lk,), and a context or none."""
    return _drawn((len(keys), context is None), _arrows_figure, _arrows_update, query=query,
                  keys=keys, weights=weights, context=context, key_labels=key_labels,
                  title=title)


def query_view(angle_degrees, keys, values) -> tuple[plt.Figure, str]:
    """The query at an angle among 2-D keys, with its weights and context."""
    query = query_at_angle(angle_degrees)
    context, weights = attend_one(query, keys, values)
    fig = _draw_arrows(query, keys, weights, context, title=f"query at {angle_degrees:.0f} degrees")
    shown = ", ".join(f"{w:.2f}" for w in weights.tolist())
    readout = f"angle {angle_degrees:.0f}: weights {shown}; context ({context[0]:.2f}, " + (
        f"{context[1]:.2f})"
    )
    return fig, readout


def bilinear_view(angle_degrees, query, keys, scale=1.0) -> tuple[plt.Figure, str]:
    """The keys turned by W = scale · rotation, against the query: the scores q · (W k)."""
    keys = validation.matrix(keys, "keys", 2)
    turned = keys @ bilinear_matrix(angle_degrees, scale).T  # (Lk, 2)
    context, weights = attend_one(query, turned, turned)
    fig = _draw_arrows(query, turned, weights,
                       key_labels=[f"Wk{i + 1}" for i in range(len(turned))],
                       title=f"W k, W turning by {angle_degrees:.0f} degrees")
    shown = ", ".join(f"{w:.2f}" for w in weights.tolist())
    return fig, f"W turns the keys by {angle_degrees:.0f} degrees: weights {shown}"


def _divisor_figure(d_k, top_weight, query_gradient, title) -> Figure:
    """Largest weight (left) and gradient (right) against d_k, on log axes."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3), layout="constrained")
    ticks = (d_k[::3], [str(size) for size in d_k[::3]])  # plain text: fast
    left.semilogx(d_k, top_weight, "o-", color="C0")
    left.axhline(1 / 8, color="0.6", linestyle=":", label="uniform (1/8)")
    left.set_ylim(0, 1)
    left.set_xlabel("d_k")
    left.set_ylabel("mean largest weight (8 keys)")
    left.legend(fontsize=8)
    right.loglog(d_k, query_gradient, "s-", color="C3")
    right.set_ylim(1e-4, 2)
    right.set_yticks([1e-4, 1e-3, 1e-2, 1e-1, 1], ["1e-4", "1e-3", "0.01", "0.1", "1"])
    for ax in (left, right):
        ax.minorticks_off()
        ax.set_xticks(*ticks)
    right.set_xlabel("d_k")
    right.set_ylabel("median gradient norm at the query")
    right.set_title("what trains W_q")
    return fig


def _divisor_update(fig, d_k, top_weight, query_gradient, title) -> None:
    """New curves and title."""
    left, right = fig.axes
    left.lines[0].set_data(d_k, top_weight)
    right.lines[0].set_data(d_k, query_gradient)
    left.set_title(title)


def divisor_view(exponent) -> tuple[plt.Figure, str]:
    """Largest weight and gradient at the query against d_k, for scores divided by d_k^a."""
    sweep = divisor_sweep(exponent)
    sizes, top, gradient = sweep["d_k"], sweep["top_weight"], sweep["query_gradient"]
    fig = _drawn((tuple(sizes),), _divisor_figure, _divisor_update, d_k=sizes, top_weight=top,
                 query_gradient=gradient, title=f"scores / d_k^{exponent:.2f}")
    readout = (
        f"divide by d_k^{exponent:.2f}: from d_k = {sizes[0]} to {sizes[-1]}, largest weight "
        f"{top[0]:.2f} -> {top[-1]:.2f}, gradient at the query {gradient[0]:.1e} -> "
        f"{gradient[-1]:.1e}"
    )
    return fig, readout


def _heatmap_figure(weights, title, labels, row) -> Figure:
    """A heatmap of weights (Lq, Lk), with the same labels on both axes if given."""
    return plots.plot_attention(weights, query_labels=labels, key_labels=labels, titles=title)


def _heatmap_update(fig, weights, title, labels, row) -> None:
    """New weights and title, and the chosen query's row outlined (when one is chosen)."""
    plots.update_heatmap(fig.axes[0], weights, title)
    if row is not None:
        plots.mark_query_row(fig.axes[0], row)


def _draw_heatmap(weights, title, labels=None, row=None) -> Figure:
    """The figure of a heatmap of weights (Lq, Lk), with query `row` outlined if given."""
    key = (tuple(weights.shape), None if labels is None else tuple(labels), row is None)
    return _drawn(key, _heatmap_figure, _heatmap_update, weights=weights, title=title,
                  labels=labels, row=row)


def mask_view(scores, valid_keys, causal, padding_first=False) -> tuple[plt.Figure, str]:
    """Weights of scores (L, L) under a padding mask of valid_keys keys (the padding after them,
    or first), causal or not; the readout names the fully masked rows."""
    scores = validation.matrix(scores, "scores")
    mask = padding_and_causal_mask(len(scores), valid_keys, causal, padding_first)
    weights = masked_weights(scores, mask)
    side = "padding first" if padding_first else "padding last"
    kind = f"causal + {side}" if causal else side
    fig = _draw_heatmap(weights, f"{kind}, {valid_keys} real keys")
    empty = empty_rows(mask)
    rows = ", ".join(str(row) for row in empty) if empty else "none"
    readout = f"{kind}, {valid_keys} real keys: fully masked rows (all-zero weights): {rows}"
    return fig, readout


def head_view(weights, head, tokens=None, query=0) -> tuple[plt.Figure, str]:
    """One head's weights from weights (n_heads, Lq, Lk), and one query's row of them."""
    head_weights = pick(weights, head, "head")  # (Lq, Lk)
    row = pick(head_weights, query, "query")  # (Lk,)
    names = tokens if tokens is not None else [str(i) for i in range(head_weights.shape[-1])]
    fig = _draw_heatmap(head_weights, f"head {head}, query {names[query]!r}", tokens, query)
    shown = " ".join(f"{name} {weight:.2f}" for name, weight in zip(names, row.tolist(),
                                                                     strict=True))
    return fig, f"head {head}, weights of query {names[query]!r}: {shown}"


ROPE_DECAY_OFFSETS = torch.arange(4097, dtype=torch.float64)  # offsets 0 .. 4096 of the view
ROPE_USUAL_LOG10_BASE = 4.0  # base 10 000, as in RoFormer and the lecture


@functools.lru_cache(maxsize=64)
def _rope_decay_curve(d_head: int, log10_base: float) -> torch.Tensor:
    """Scores (O,) of a key equal to its all-ones query, over the score at offset 0 (cached)."""
    ones = torch.ones(d_head, dtype=torch.float64)
    scores = rope_head_scores(ones, ones, ROPE_DECAY_OFFSETS, base=10.0**log10_base)  # (O,)
    return scores / scores[0]


def _rope_decay_figure(labels, curves, half, title) -> Figure:
    """Curves (C, O) against the offsets, labelled, and a dot where the last halves."""
    fig = plots.plot_scores_by_offset(ROPE_DECAY_OFFSETS, dict(zip(labels, curves, strict=True)),
                                      ylabel="score / score at offset 0", title=title)
    fig.axes[0].plot([], [], "o", color="black", markersize=4)
    return fig


def _rope_decay_update(fig, labels, curves, half, title) -> None:
    """New curves, labels and dot."""
    ax = fig.axes[0]
    ax.lines[-1].set_data([half] if half is not None else [], [0.5] if half is not None else [])
    plots.update_scores_by_offset(ax, ROPE_DECAY_OFFSETS, dict(zip(labels, curves, strict=True)))


def rope_decay_view(log10_base, d_head=64, far=512) -> tuple[plt.Figure, str]:
    """A head's score of a key equal to its query against the offset, base 10^log10_base."""
    d_head, log10_base = validation.positive_int(d_head, "d_head"), float(log10_base)
    exponents = tuple(dict.fromkeys((ROPE_USUAL_LOG10_BASE, log10_base)))
    curves = torch.stack([_rope_decay_curve(d_head, exponent) for exponent in exponents])
    shown = curves[-1]
    half = first_offset_below(ROPE_DECAY_OFFSETS, shown, 0.5)
    fig = _drawn((d_head, len(exponents)), _rope_decay_figure, _rope_decay_update,
                 labels=[f"base 10^{exponent:g}" for exponent in exponents], curves=curves,
                 half=half, title=f"One head of {d_head} features, a key equal to its query")
    halves = f"halves by offset {half}" if half is not None else "never halves"
    distant = shown[ROPE_DECAY_OFFSETS >= far]
    readout = (
        f"base 10^{log10_base:g}: the score {halves}; beyond offset {far}"
        f" it swings from {distant.min():.2f} to {distant.max():.2f} of its offset-0 value"
    )
    return fig, readout


def _online_softmax_figure(scores, colors, m, sums, outputs, final, blocks, title) -> Figure:
    """The scores read (left), the running sum and output per block (right)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5), layout="constrained")
    left.bar(np.arange(len(scores)), scores, color=colors)
    left.axhline(m, color="C3", linestyle="--", label="running max m")
    left.set_xlabel("key")
    left.set_ylabel("score")
    left.legend(fontsize=8)
    right.plot(np.arange(len(sums)), sums, marker="o", label="running sum ℓ")
    right.plot(np.arange(len(outputs)), outputs, marker="s", label="output o/ℓ")
    right.axhline(final, color="0.5", linestyle=":", label="final output")
    right.set_xlabel("block")
    right.set_xticks(np.arange(blocks))
    right.legend(fontsize=8)
    return fig


def _online_softmax_update(fig, scores, colors, m, sums, outputs, final, blocks, title) -> None:
    """New bar colours, running max, curves and title; both axes rescaled to the data."""
    left, right = fig.axes
    for bar, color in zip(left.patches, colors, strict=True):
        bar.set_facecolor(color)
    left.lines[0].set_ydata([m, m])
    left.set_title(title)
    right.lines[0].set_data(np.arange(len(sums)), sums)
    right.lines[1].set_data(np.arange(len(outputs)), outputs)
    right.lines[2].set_ydata([final, final])
    left.relim()
    left.autoscale_view()
    _fit_to_curves_then_level(right, right.lines[2], final)
    right.set_xticks(np.arange(blocks))  # widens the limits to every block's tick


def _fit_to_curves_then_level(ax, level_line, level) -> None:
    """Fit ax's limits to its other lines, then to the level line only if it falls outside them:
    the limits `axhline` leaves on a new axes."""
    level_line.set_visible(False)
    ax.relim(visible_only=True)
    ax.autoscale_view()
    level_line.set_visible(True)
    low, high = ax.get_ylim()
    if not low <= level <= high:
        ax.relim()
        ax.autoscale_view()


def online_softmax_view(block, scores, values, chunk_size) -> tuple[plt.Figure, str]:
    """The scores read after `block` chunks, with the running m, l and output at each block."""
    trace = online_softmax_trace(scores, values, chunk_size)
    state = pick(trace, block, "block")
    seen = np.arange(len(scores)) < state["end"]
    fig = _drawn((len(scores), len(trace)), _online_softmax_figure, _online_softmax_update,
                 scores=np.asarray(scores, dtype=float),
                 colors=np.where(seen, "C0", "0.8").tolist(), m=state["m"],
                 sums=[s["l"] for s in trace[: block + 1]],
                 outputs=[s["output"] for s in trace[: block + 1]], final=trace[-1]["output"],
                 blocks=len(trace), title=f"after block {block}: {state['end']} keys read")
    readout = (
        f"block {block}: m = {state['m']:.2f}, ℓ = {state['l']:.2f}, output {state['output']:.3f}"
        f" (final {trace[-1]['output']:.3f})"
    )
    return fig, readout


def _sampling_figure(probabilities, labels, title) -> Figure:
    """Bars of the likeliest characters' probabilities, labelled with the characters."""
    fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
    ax.bar(np.arange(len(labels)), np.asarray(probabilities, dtype=float), color="C0")
    ax.set_ylim(0, 1)
    ax.set_xlabel("next character (likeliest first)")
    ax.set_ylabel("probability")
    return fig


def _sampling_update(fig, probabilities, labels, title) -> None:
    """New bar heights, characters and title."""
    ax = fig.axes[0]
    plots.set_bar_heights(ax, probabilities)
    shown = ax.xaxis.get_major_formatter()
    if not isinstance(shown, FixedFormatter) or list(shown.seq) != list(labels):
        ax.set_xticks(np.arange(len(labels)), labels, fontfamily="monospace")
    ax.set_title(title)


def sampling_view(logits, chars, temperature, top_k=None, shown=20) -> tuple[plt.Figure, str]:
    """Bars of the `shown` likeliest next characters at temperature T (and top-k), a readout."""
    probabilities = sampling_distribution(logits, temperature, top_k)  # (V,)
    order = probabilities.argsort(descending=True)[:shown]  # (shown,)
    limit = "all" if top_k is None else f"top {top_k}"
    fig = _drawn((len(order),), _sampling_figure, _sampling_update,
                 probabilities=probabilities[order],
                 labels=[repr(chars[i])[1:-1] or " " for i in order.tolist()],
                 title=f"What sampling draws from at T = {temperature:.1f} ({limit} characters)")
    top = int(order[0])
    readout = (f"T = {temperature:.1f}, {limit} characters: {repr(chars[top])} has probability "
               f"{float(probabilities[top]):.2f}; 90% of the draws come from "
               f"{characters_covering(probabilities, 0.9)} of {len(chars)} characters")
    return fig, readout


# --------------------------------------------------------------------------- the widgets


class Controls(widgets.VBox):
    """The box of a view's controls; outside a live kernel it reads as a short note."""

    def __repr__(self):
        names = ", ".join(child.description or "control" for child in self.children)
        return f"Controls: {names} (run this cell in Jupyter to move them)"


def slider(low, high, value, step=1, description=""):
    """An integer or float slider (floats when any bound or the step is a float)."""
    floats = any(isinstance(x, float) for x in (low, high, value, step))
    kind = widgets.FloatSlider if floats else widgets.IntSlider
    return kind(min=low, max=high, value=value, step=step, description=description,
                continuous_update=False)


def word_slider(words, value, description=""):
    """A slider over `words` that shows the word and gives its index."""
    return widgets.SelectionSlider(options=[(word, i) for i, word in enumerate(words)],
                                   value=value, description=description, continuous_update=False)


def checkbox(value, description):
    """A checkbox: a toggle."""
    return widgets.Checkbox(value=value, description=description, indent=False)


def _contents(ax) -> list:
    """The artists of ax that a view's update may change, in drawing order: all but its
    background patch and its axes (ticks, tick labels, axis labels)."""
    kept = (ax.patch, ax.xaxis, ax.yaxis)
    return sorted((a for a in ax.get_children() if all(a is not k for k in kept)),
                  key=lambda artist: artist.get_zorder())


def _frame_of(ax) -> tuple:
    """What the background shows of ax: its limits, tick locators and formatters, axis labels."""
    axes = (ax.xaxis, ax.yaxis)
    return (tuple(ax.viewLim.bounds),
            *((id(a.major.locator), id(a.major.formatter), a.label.get_text()) for a in axes))


class Picture:
    """PNGs of a figure whose layout its first draw fixes, framed by that draw's tight box.

    The frame is the one `savefig(bbox_inches="tight")` gives, padded with the figure's colour
    where it reaches past the figure. Later draws keep a background of what stays (the axes'
    ticks and labels, the colour bars, the panels that do not change) and draw over it only the
    contents of the axes that changed; the background is drawn again when their limits, ticks
    or labels change.
    """

    def __init__(self, figure: Figure):
        self.figure = figure
        if not isinstance(figure.canvas, FigureCanvasAgg):
            FigureCanvasAgg(figure)
        figure.canvas.draw()  # the layout engine places the axes, this once
        figure.set_layout_engine("none")
        box = figure.get_tightbbox(figure.canvas.get_renderer())
        box = box.padded(float(plt.rcParams["savefig.pad_inches"])).transformed(
            figure.dpi_scale_trans
        )  # in pixels from the bottom left
        for ax in figure.axes:
            ax.stale = False  # as drawn: measuring the box changed nothing shown
        top = round(figure.bbox.height - box.y1)
        left = round(box.x0)
        self._frame = (top, left, top + int(box.height), left + int(box.width))
        self._background = np.round(255 * np.asarray(figure.get_facecolor())).astype(np.uint8)
        self._moving = []  # the axes whose contents changed since the first draw
        self._kept = None  # (the background's pixels, the frames of the moving axes in it)

    def draw(self) -> None:
        """Draw the figure as it is now: the moving axes' contents over the kept background."""
        moved = [ax for ax in self.figure.axes if ax.stale and ax not in self._moving]
        others = (*self.figure.texts, *self.figure.legends, *self.figure.lines,
                  *self.figure.patches, *self.figure.images)
        frames = [_frame_of(ax) for ax in self._moving + moved]
        if moved or self._kept is None or frames != self._kept[1] or any(
            artist.stale for artist in others
        ):
            self._moving += moved
            for ax in moved:
                for artist in _contents(ax):
                    artist.set_animated(True)  # left out of the figure's draw
            self.figure.canvas.draw()
            self._kept = (self.figure.canvas.copy_from_bbox(self.figure.bbox), frames)
        else:
            self.figure.canvas.restore_region(self._kept[0])
        renderer = self.figure.canvas.get_renderer()
        for ax in self._moving:
            for artist in _contents(ax):
                artist.draw(renderer)

    def pixels(self) -> np.ndarray:
        """The framed RGBA pixels (height, width, 4) of the figure as last drawn."""
        drawn = np.asarray(self.figure.canvas.buffer_rgba())  # (H, W, 4)
        top, left, bottom, right = self._frame
        framed = np.empty((bottom - top, right - left, 4), dtype=np.uint8)
        framed[...] = self._background
        rows = slice(max(top, 0), min(bottom, drawn.shape[0]))
        columns = slice(max(left, 0), min(right, drawn.shape[1]))
        framed[rows.start - top : rows.stop - top, columns.start - left : columns.stop - left] = (
            drawn[rows, columns]
        )
        return framed

    def output(self, draw=True) -> dict[str, str]:
        """The figure as Jupyter's display data: a base64 PNG and the figure's repr."""
        if draw:
            self.draw()
        png = io.BytesIO()
        Image.fromarray(self.pixels()).save(png, format="png", compress_level=1)
        return {"image/png": base64.b64encode(png.getvalue()).decode("ascii"),
                "text/plain": repr(self.figure)}


class LiveView:
    """A view whose figure is kept between values: updated in place, rendered once per change."""

    def __init__(self, view):
        self.view = view
        self.picture = None
        self._drawings = {}

    def __call__(self, **values) -> tuple[dict[str, str] | None, str]:
        """(the figure's display data, or None if it did not change; the readout) at values."""
        with keeping_figures(self._drawings):
            figure, readout = self.view(**values)
        if self.picture is None or figure is not self.picture.figure:
            plt.close(figure)  # out of pyplot's hands: only the control draws it
            self.picture = Picture(figure)
            return self.picture.output(draw=False), readout
        drawing = next((d for d in self._drawings.values() if d.figure is figure), None)
        if drawing is not None and not drawing.changed:
            return None, readout
        return self.picture.output(), readout


def show(view, **controls):
    """Display the controls, then view(**values) -> (Figure, readout); redraw on every change.

    The figure is drawn once and kept: a change updates its artists and sends one new PNG.
    """
    if not controls or not all(isinstance(c, widgets.ValueWidget) for c in controls.values()):
        raise ValueError("show needs at least one control, each an ipywidgets value widget")
    live = LiveView(view)
    figure, readout = live(**{name: control.value for name, control in controls.items()})
    display(Controls(list(controls.values())))
    figure_handle = display(figure, raw=True, display_id=True)
    readout_handle = display({"text/plain": readout}, raw=True, display_id=True)

    def redraw(_change):
        figure, readout = live(**{name: control.value for name, control in controls.items()})
        if figure is not None:
            figure_handle.update(figure, raw=True)
        readout_handle.update({"text/plain": readout}, raw=True)

    for control in controls.values():
        control.observe(redraw, names="value")
