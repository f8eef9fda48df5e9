"""Controls for the lectures: a slider or a toggle over pure functions that compute what it draws.

Each lesson's control has three layers, so that only the last needs a browser:

* a pure function that computes what the control shows (`temperature_weights`, `attend_one`,
  `online_softmax_trace`, ...), tested like any other;
* a view, `*_view(...) -> (Figure, str)`: the figure and a one-line readout for given values,
  drawn with the plot helpers of `utils.plots`;
* `show(view, **controls)`, which displays the controls, then the view at the controls' starting
  values, and redraws it in place whenever a control moves.

A notebook stored after running such a cell keeps the figure and the readout at the starting
values as ordinary outputs, and no widget id: it reads the same where no kernel runs.
"""

from __future__ import annotations

import functools
import math

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from IPython.display import display

from utils import gpt, plots, transformer, validation

# --------------------------------------------------------------------------- the pure functions


def _vector(x, name: str, length: int | None = None) -> torch.Tensor:
    """x as a float64 tensor of shape (length,) (any length >= 1 if None), or ValueError."""
    tensor = torch.as_tensor(x, dtype=torch.float64)
    if tensor.ndim != 1 or tensor.numel() == 0 or (length is not None and len(tensor) != length):
        expected = f"({length},)" if length is not None else "(n,) with n >= 1"
        raise ValueError(f"{name} must have shape {expected}, got {tuple(tensor.shape)}")
    if not torch.isfinite(tensor).all():
        raise ValueError(f"{name} must be finite, got {tensor.tolist()}")
    return tensor


def _index(value, name: str, count: int) -> int:
    """value as an int in [0, count), or ValueError."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < count:
        raise ValueError(f"{name} must be an integer from 0 to {count - 1}, got {value!r}")
    return value


def temperature_weights(scores, temperature) -> tuple[torch.Tensor, float]:
    """(softmax(scores / temperature) (n,), its entropy in nats) for scores (n,)."""
    scores = _vector(scores, "scores")
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


def _matrix(x, name: str, columns: int | None = None) -> torch.Tensor:
    """x as a float64 tensor (rows, columns) with rows >= 1, or ValueError."""
    tensor = torch.as_tensor(x, dtype=torch.float64)
    ok = tensor.ndim == 2 and len(tensor) > 0 and (columns is None or tensor.shape[1] == columns)
    if not ok:
        expected = f"(rows, {columns})" if columns is not None else "(rows, columns)"
        raise ValueError(f"{name} must have shape {expected}, got {tuple(tensor.shape)}")
    return tensor


def attend_one(query, keys, values, scale=1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """(context (d_v,), weights (Lk,)) of one query (d_k,) over keys (Lk, d_k), values (Lk, d_v)."""
    query = _vector(query, "query")
    keys = _matrix(keys, "keys", len(query))
    values = _matrix(values, "values")
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
    n_keys = validation.positive_int(n_keys, "n_keys")
    n_queries = validation.positive_int(n_queries, "n_queries")
    generator = torch.Generator().manual_seed(validation.seed(seed))
    sweep = {"d_k": [], "top_weight": [], "query_gradient": []}
    for d_k in dimensions:
        d_k = validation.positive_int(d_k, "each of dimensions")
        queries = torch.randn(n_queries, 1, d_k, generator=generator, dtype=torch.float64)
        keys = torch.randn(n_queries, n_keys, d_k, generator=generator, dtype=torch.float64)
        upstream = torch.randn(n_queries, 1, n_keys, generator=generator, dtype=torch.float64)
        queries.requires_grad_(True)
        scores = queries @ keys.transpose(1, 2) / d_k**exponent  # (n_queries, 1, n_keys)
        weights = torch.softmax(scores, dim=-1)  # (n_queries, 1, n_keys)
        (weights * upstream).sum().backward()
        sweep["d_k"].append(d_k)
        sweep["top_weight"].append(float(weights.detach().amax(dim=-1).mean()))
        sweep["query_gradient"].append(float(queries.grad.norm(dim=-1).median()))
    return sweep


def padding_and_causal_mask(length, valid_keys, causal) -> torch.Tensor:
    """Boolean mask (length, length), True = may attend: keys below valid_keys, causal if asked."""
    length = validation.positive_int(length, "length")
    if isinstance(valid_keys, bool) or not isinstance(valid_keys, int) or not (
        0 <= valid_keys <= length
    ):
        raise ValueError(f"valid_keys must be an integer from 0 to {length}, got {valid_keys!r}")
    if not isinstance(causal, bool):
        raise ValueError(f"causal must be True or False, got {causal!r}")
    mask = (torch.arange(length) < valid_keys).expand(length, length)  # (Lq, Lk)
    return mask & transformer.causal_mask(length) if causal else mask


def masked_weights(scores, mask) -> torch.Tensor:
    """Softmax of scores (Lq, Lk) over the keys the mask allows; a fully masked row is all zeros."""
    scores = _matrix(scores, "scores")
    mask = torch.as_tensor(mask)
    if mask.dtype != torch.bool or mask.shape != scores.shape:
        raise ValueError(
            f"mask must be a bool tensor of shape {tuple(scores.shape)}, got "
            f"{mask.dtype} {tuple(mask.shape)}"
        )
    return transformer.masked_softmax(scores, mask)  # a fully masked row: all zeros


def pick(items, index, name="index"):
    """items[index] for a tensor or sequence of items, with a ValueError naming the valid range."""
    return items[_index(index, name, len(items))]


def rope_head_scores(query, key, offsets, base=10000.0) -> torch.Tensor:
    """Scores (O,) of a whole head with RoPE: query (d,) at position m + offset, key (d,) at m."""
    query = _vector(query, "query")
    key = _vector(key, "key", len(query))
    if len(query) % 2:
        raise ValueError(f"query must have an even length (pairs of features), got {len(query)}")
    offsets = _vector(offsets, "offsets")
    omega = transformer.rope_frequencies(len(query), base, torch.float64)  # (d / 2,)
    angles = torch.outer(offsets, omega)  # (O, d / 2)
    (q0, q1), (k0, k1) = query.view(-1, 2).T, key.view(-1, 2).T  # (d / 2,) each
    return torch.cos(angles) @ (q0 * k0 + q1 * k1) + torch.sin(angles) @ (q0 * k1 - q1 * k0)


def first_offset_below(offsets, scores, level) -> int | None:
    """The first of offsets (O,) whose score in scores (O,) is below level, or None."""
    offsets = _vector(offsets, "offsets")
    scores = _vector(scores, "scores", len(offsets))
    below = (scores < level).nonzero()
    return int(offsets[below[0, 0]]) if len(below) else None


def online_softmax_trace(scores, values, chunk_size) -> list[dict[str, float]]:
    """One query's online softmax over scores (L,) and values (L,), one state per chunk.

    Each state holds the running maximum `m`, the running sum `l` of e^(s - m), and the output
    `o / l` of the chunks read so far.
    """
    scores, values = _vector(scores, "scores"), _vector(values, "values", None)
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
    return gpt.next_token_probabilities(_vector(logits, "logits"), temperature, top_k)


def characters_covering(probabilities, share) -> int:
    """How many of the likeliest entries of probabilities (V,) it takes to reach `share`."""
    ordered = _vector(probabilities, "probabilities").sort(descending=True).values  # (V,)
    share = validation.probability(share, "share")
    return int((ordered.cumsum(0) < share - 1e-12).sum()) + 1


# --------------------------------------------------------------------------- the views


def temperature_view(scores, temperature) -> tuple[plt.Figure, str]:
    """Bars of softmax(scores / T) and the readout of its entropy."""
    weights, entropy = temperature_weights(scores, temperature)
    readout = f"T = {temperature:.2f}: largest weight {float(weights.max()):.2f}, " + (
        f"entropy {entropy:.2f} nats (uniform: {math.log(len(weights)):.2f})"
    )
    fig = plots.plot_distributions(weights, title=f"softmax(s / T) at T = {temperature:.2f}",
                                   xlabel="key")
    fig.axes[0].set_ylim(0, 1)
    return fig, readout


def query_view(angle_degrees, keys, values) -> tuple[plt.Figure, str]:
    """The query at an angle among 2-D keys, with its weights and context."""
    query = query_at_angle(angle_degrees)
    context, weights = attend_one(query, keys, values)
    fig = plots.plot_query_keys(query, keys, weights, context,
                                title=f"query at {angle_degrees:.0f} degrees")
    shown = ", ".join(f"{w:.2f}" for w in weights.tolist())
    readout = f"angle {angle_degrees:.0f}: weights {shown}; context ({context[0]:.2f}, " + (
        f"{context[1]:.2f})"
    )
    return fig, readout


def bilinear_view(angle_degrees, query, keys, scale=1.0) -> tuple[plt.Figure, str]:
    """The keys turned by W = scale · rotation, against the query: the scores q · (W k)."""
    turned = _matrix(keys, "keys", 2) @ bilinear_matrix(angle_degrees, scale).T  # (Lk, 2)
    context, weights = attend_one(query, turned, turned)
    fig = plots.plot_query_keys(query, turned, weights, title=f"W k, W turning by "
                                f"{angle_degrees:.0f} degrees",
                                key_labels=[f"Wk{i + 1}" for i in range(len(turned))])
    shown = ", ".join(f"{w:.2f}" for w in weights.tolist())
    return fig, f"W turns the keys by {angle_degrees:.0f} degrees: weights {shown}"


def divisor_view(exponent) -> tuple[plt.Figure, str]:
    """Largest weight and gradient at the query against d_k, for scores divided by d_k^a."""
    sweep = divisor_sweep(exponent)
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3), layout="constrained")
    ticks = (sweep["d_k"][::3], [str(d_k) for d_k in sweep["d_k"][::3]])  # plain text: fast
    left.semilogx(sweep["d_k"], sweep["top_weight"], "o-", color="C0")
    left.axhline(1 / 8, color="0.6", linestyle=":", label="uniform (1/8)")
    left.set_ylim(0, 1)
    left.set_xlabel("d_k")
    left.set_ylabel("mean largest weight (8 keys)")
    left.set_title(f"scores / d_k^{exponent:.2f}")
    left.legend(fontsize=8)
    right.loglog(sweep["d_k"], sweep["query_gradient"], "s-", color="C3")
    right.set_ylim(1e-4, 2)
    right.set_yticks([1e-4, 1e-3, 1e-2, 1e-1, 1], ["1e-4", "1e-3", "0.01", "0.1", "1"])
    for ax in (left, right):
        ax.minorticks_off()
        ax.set_xticks(*ticks)
    right.set_xlabel("d_k")
    right.set_ylabel("median gradient norm at the query")
    right.set_title("what trains W_q")
    sizes, top, gradient = sweep["d_k"], sweep["top_weight"], sweep["query_gradient"]
    readout = (
        f"divide by d_k^{exponent:.2f}: from d_k = {sizes[0]} to {sizes[-1]}, largest weight "
        f"{top[0]:.2f} -> {top[-1]:.2f}, gradient at the query {gradient[0]:.1e} -> "
        f"{gradient[-1]:.1e}"
    )
    return fig, readout


def mask_view(scores, valid_keys, causal) -> tuple[plt.Figure, str]:
    """Weights of scores (L, L) under a padding mask of valid_keys keys, causal or not."""
    scores = _matrix(scores, "scores")
    mask = padding_and_causal_mask(len(scores), valid_keys, causal)
    weights = masked_weights(scores, mask)
    kind = "causal + padding" if causal else "padding"
    fig = plots.plot_attention(weights, titles=f"{kind} mask, {valid_keys} valid keys")
    empty = int((~mask).all(dim=-1).sum())
    readout = f"{kind}, {valid_keys} valid keys: {empty} fully masked rows (all-zero weights)"
    return fig, readout


def square_view(index, sources, targets, predictions, weights) -> tuple[plt.Figure, str]:
    """One test square: its corners and prediction (left), its attention weights (right)."""
    source, target, prediction = (pick(x, index) for x in (sources, targets, predictions))
    square_weights = pick(weights, index)  # (target_len, source_len)
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.5), layout="constrained")
    plots.plot_squares(source[None], target[None], prediction[None], ax=[left])
    plots.plot_attention(square_weights, ax=right, titles="attention weights",
                         query_labels=[f"target {i + 1}" for i in range(len(square_weights))],
                         key_labels=[f"source {j + 1}" for j in range(square_weights.shape[1])])
    error = float(((prediction - target) ** 2).mean())
    return fig, f"square {index}: mean squared error {error:.2f}"


def head_view(weights, head, tokens=None, query=0) -> tuple[plt.Figure, str]:
    """One head's weights from weights (n_heads, Lq, Lk), and one query's row of them."""
    head_weights = pick(weights, head, "head")  # (Lq, Lk)
    row = pick(head_weights, query, "query")  # (Lk,)
    names = tokens if tokens is not None else [str(i) for i in range(head_weights.shape[-1])]
    fig = plots.plot_attention(head_weights, query_labels=tokens, key_labels=tokens,
                               titles=f"head {head}")
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


def rope_decay_view(log10_base, d_head=64, far=512) -> tuple[plt.Figure, str]:
    """A head's score of a key equal to its query against the offset, base 10^log10_base."""
    d_head, log10_base = validation.positive_int(d_head, "d_head"), float(log10_base)
    curves = {f"base 10^{exponent:g}": _rope_decay_curve(d_head, exponent)
              for exponent in dict.fromkeys((ROPE_USUAL_LOG10_BASE, log10_base))}
    shown = _rope_decay_curve(d_head, log10_base)
    half = first_offset_below(ROPE_DECAY_OFFSETS, shown, 0.5)
    fig = plots.plot_scores_by_offset(
        ROPE_DECAY_OFFSETS, curves, ylabel="score / score at offset 0",
        title=f"One head of {d_head} features, a key equal to its query",
    )
    if half is not None:
        fig.axes[0].plot([half], [0.5], "o", color="black", markersize=4)
    halves = f"halves by offset {half}" if half is not None else "never halves"
    distant = shown[ROPE_DECAY_OFFSETS >= far]
    readout = (
        f"base 10^{log10_base:g}: the score {halves}; beyond offset {far}"
        f" it swings from {distant.min():.2f} to {distant.max():.2f} of its offset-0 value"
    )
    return fig, readout


def online_softmax_view(block, scores, values, chunk_size) -> tuple[plt.Figure, str]:
    """The scores read after `block` chunks, with the running m, l and output at each block."""
    trace = online_softmax_trace(scores, values, chunk_size)
    state = pick(trace, block, "block")
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5), layout="constrained")
    positions = np.arange(len(scores))
    seen = positions < state["end"]
    left.bar(positions, np.asarray(scores, dtype=float), color=np.where(seen, "C0", "0.8"))
    left.axhline(state["m"], color="C3", linestyle="--", label="running max m")
    left.set_xlabel("key")
    left.set_ylabel("score")
    left.set_title(f"after block {block}: {state['end']} keys read")
    left.legend(fontsize=8)
    steps = np.arange(block + 1)
    right.plot(steps, [s["l"] for s in trace[: block + 1]], marker="o", label="running sum ℓ")
    right.plot(steps, [s["output"] for s in trace[: block + 1]], marker="s", label="output o/ℓ")
    right.axhline(trace[-1]["output"], color="0.5", linestyle=":", label="final output")
    right.set_xlabel("block")
    right.set_xticks(np.arange(len(trace)))
    right.legend(fontsize=8)
    readout = (
        f"block {block}: m = {state['m']:.2f}, ℓ = {state['l']:.2f}, output {state['output']:.3f}"
        f" (final {trace[-1]['output']:.3f})"
    )
    return fig, readout


def sampling_view(logits, chars, temperature, top_k=None, shown=20) -> tuple[plt.Figure, str]:
    """Bars of the `shown` likeliest next characters at temperature T (and top-k), a readout."""
    probabilities = sampling_distribution(logits, temperature, top_k)  # (V,)
    order = probabilities.argsort(descending=True)[:shown]  # (shown,)
    labels = [repr(chars[i])[1:-1] or " " for i in order.tolist()]
    fig, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
    ax.bar(np.arange(len(order)), probabilities[order].numpy(), color="C0")
    ax.set_xticks(np.arange(len(order)), labels, fontfamily="monospace")
    ax.set_ylim(0, 1)
    ax.set_xlabel("next character (likeliest first)")
    ax.set_ylabel("probability")
    limit = "all" if top_k is None else f"top {top_k}"
    ax.set_title(f"What sampling draws from at T = {temperature:.1f} ({limit} characters)")
    top = int(order[0])
    readout = (f"T = {temperature:.1f}: {repr(chars[top])} has probability "
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


def checkbox(value, description):
    """A checkbox: a toggle."""
    return widgets.Checkbox(value=value, description=description, indent=False)


def show(view, **controls):
    """Display the controls, then view(**values) -> (Figure, readout); redraw on every change."""
    if not controls or not all(isinstance(c, widgets.ValueWidget) for c in controls.values()):
        raise ValueError("show needs at least one control, each an ipywidgets value widget")
    values = {name: control.value for name, control in controls.items()}
    fig, readout = view(**values)
    display(Controls(list(controls.values())))
    figure_handle = display(fig, display_id=True)
    readout_handle = display({"text/plain": readout}, raw=True, display_id=True)
    plt.close(fig)

    def redraw(_change):
        new_fig, new_readout = view(**{name: c.value for name, c in controls.items()})
        figure_handle.update(new_fig)
        readout_handle.update({"text/plain": new_readout}, raw=True)
        plt.close(new_fig)

    for control in controls.values():
        control.observe(redraw, names="value")
