"""Typical mistakes in lab 07: each must lose points and show the message that names it."""

from catalogue import Mistake, with_replacements

# Correct answers; each mistake below changes one part of one of them.
_SPLIT = '''
def split_heads(x, n_heads):
    batch, length, d_model = x.shape
    if n_heads <= 0 or d_model % n_heads != 0:
        raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}")
    return x.reshape(batch, length, n_heads, d_model // n_heads).transpose(1, 2)
'''
_SPLIT_CHECK = '''\
    if n_heads <= 0 or d_model % n_heads != 0:
        raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}")
'''

_MERGE = '''
def merge_heads(x):
    batch, n_heads, length, head_size = x.shape
    return x.transpose(1, 2).reshape(batch, length, n_heads * head_size)
'''

_LAYER = '''
import math

import torch
from torch import nn
import torch.nn.functional as F


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        if n_heads <= 0 or d_model % n_heads != 0:
            raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}")
        self.n_heads = n_heads
        self.head_size = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.p = dropout

    def forward(self, query, keys, values, mask=None):
        q = split_heads(self.w_q(query), self.n_heads)
        k = split_heads(self.w_k(keys), self.n_heads)
        v = split_heads(self.w_v(values), self.n_heads)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_size)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
            scores = scores.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights.masked_fill(~mask, 0.0)
        weights = self.dropout(weights)
        return self.w_o(merge_heads(weights @ v)), weights
'''


# The two steps of the layer that give a query with no allowed key all-zero weights.
_EMPTY_ROW_SCORES = (
    "            scores = scores.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)\n"
)
_EMPTY_ROW_WEIGHTS = (
    "        if mask is not None:\n"
    "            weights = weights.masked_fill(~mask, 0.0)\n"
)


def _split_with(*replacements):
    """The correct split_heads with each text `old` of the pairs (old, new) replaced by `new`."""
    return with_replacements(_SPLIT, *replacements)


def _merge_with(*replacements):
    """The correct merge_heads with each text `old` of the pairs (old, new) replaced by `new`."""
    return with_replacements(_MERGE, *replacements)


def _layer_with(*replacements):
    """The correct layer with each text `old` of the pairs (old, new) replaced by `new`."""
    return with_replacements(_LAYER, *replacements)

# The catalogue's correct answers, by cell: each gets every point (tests/lessons/test_autograde.py).
BASES = {"split_heads": _SPLIT, "merge_heads": _MERGE, "multi_head_attention": _LAYER}

MISTAKES = [
    Mistake(
        name="split_view_without_transpose",
        cell="split_heads",
        code=_split_with("x.reshape(batch, length, n_heads, d_model // n_heads).transpose(1, 2)",
                         "x.view(batch, n_heads, length, d_model // n_heads)"),
        message="reshaped straight to (N, n_heads, L, d_head) with one view, without the transpose",
    ),
    Mistake(
        name="split_interleaves_heads",
        cell="split_heads",
        code=_split_with("(batch, length, n_heads, d_model // n_heads).transpose(1, 2)",
                         "(batch, length, d_model // n_heads, n_heads).permute(0, 3, 1, 2)"),
        message="cut the features as (d_head, n_heads) instead of (n_heads, d_head)",
    ),
    Mistake(
        name="split_does_not_validate",
        cell="split_heads",
        code=_split_with(_SPLIT_CHECK, ""),
        message="raised RuntimeError",
    ),
    Mistake(
        name="split_error_without_numbers",
        cell="split_heads",
        code=_split_with('f"n_heads={n_heads} does not divide d_model={d_model}"',
                         '"n_heads must divide the model size"'),
        message="does not mention '3'",
    ),
    Mistake(
        name="merge_without_transpose",
        cell="merge_heads",
        code=_merge_with("x.transpose(1, 2).reshape(", "x.reshape("),
        message="without transposing heads and positions back",
    ),
    Mistake(
        name="merge_interleaves_heads",
        cell="merge_heads",
        code=_merge_with("x.transpose(1, 2).reshape(", "x.permute(0, 2, 3, 1).reshape("),
        message="interleaved the heads' features",
    ),
    Mistake(
        name="merge_view_after_transpose",
        cell="merge_heads",
        code=_merge_with(".reshape(", ".view("),
        message="after transpose the tensor is not contiguous, so view cannot flatten it",
    ),
    Mistake(
        name="merge_keeps_heads_apart",
        cell="merge_heads",
        code=_merge_with(".reshape(batch, length, n_heads * head_size)", ""),
        message="has shape (2, 3, 2, 4), expected (2, 3, 8)",
    ),
    Mistake(
        name="layer_without_output_projection",
        cell="multi_head_attention",
        code=_layer_with("return self.w_o(merge_heads(weights @ v)), weights",
                         "return merge_heads(weights @ v), weights"),
        message="forgot the output projection w_o after merging the heads",
    ),
    Mistake(
        name="layer_scales_by_d_model",
        cell="multi_head_attention",
        code=_layer_with("/ math.sqrt(self.head_size)",
                         "/ math.sqrt(self.n_heads * self.head_size)"),
        message="scaled the scores by sqrt(d_model) instead of sqrt(d_model // n_heads)",
    ),
    Mistake(
        name="layer_without_scaling",
        cell="multi_head_attention",
        code=_layer_with(" / math.sqrt(self.head_size)", ""),
        message="forgot to divide the scores by sqrt(head size)",
    ),
    Mistake(
        name="layer_dropout_in_eval",
        cell="multi_head_attention",
        code=_layer_with("weights = self.dropout(weights)",
                         "weights = F.dropout(weights, p=self.p)"),
        message="gave different outputs for the same input in eval mode",
    ),
    Mistake(
        name="layer_inverted_mask",
        cell="multi_head_attention",
        code=_layer_with('scores.masked_fill(~mask, float("-inf"))',
                         'scores.masked_fill(mask, float("-inf"))',
                         _EMPTY_ROW_SCORES, "", _EMPTY_ROW_WEIGHTS, ""),
        message="inverted the mask: here True means *may attend*",
    ),
    Mistake(
        name="layer_without_dropout",
        cell="multi_head_attention",
        code=_layer_with("        weights = self.dropout(weights)\n", ""),
        message="two calls gave the same output: apply dropout to the attention weights",
    ),
    Mistake(
        name="layer_dropout_on_output",
        cell="multi_head_attention",
        code=_layer_with("        weights = self.dropout(weights)\n", "",
                         "return self.w_o(merge_heads(weights @ v)), weights",
                         "return self.dropout(self.w_o(merge_heads(weights @ v))), weights"),
        message="(expected about half): apply dropout to the attention weights and return them",
    ),
    Mistake(
        name="layer_does_not_validate",
        cell="multi_head_attention",
        code=_layer_with('''        if n_heads <= 0 or d_model % n_heads != 0:
            raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}")
''', ""),
        message="MultiHeadAttention(8, 3) did not raise ValueError",
    ),
    Mistake(
        name="layer_fully_masked_row_nan",
        cell="multi_head_attention",
        code=_layer_with(_EMPTY_ROW_SCORES, "", _EMPTY_ROW_WEIGHTS, ""),
        message="gave NaN weights to a query whose keys are all masked",
    ),
    Mistake(
        name="layer_repairs_nan_with_masked_fill",
        cell="multi_head_attention",
        code=_layer_with(_EMPTY_ROW_SCORES, ""),
        message="a NaN was created and then repaired (nan_to_num, or masked_fill / where over it)",
    ),
    Mistake(
        name="layer_repairs_nan_with_nan_to_num",
        cell="multi_head_attention",
        code=_layer_with(_EMPTY_ROW_SCORES, "", _EMPTY_ROW_WEIGHTS,
                         "        weights = weights.nan_to_num(0.0)\n"),
        message="the course's rule is to never create it",
    ),
    Mistake(
        name="layer_makes_nan_in_place_and_repairs_it",
        cell="multi_head_attention",
        code=_layer_with(_EMPTY_ROW_SCORES, "            scores = scores.clone()\n"
                         "            scores.sub_(scores.amax(-1, keepdim=True).detach())\n"
                         "            scores = scores.nan_to_num(nan=0.0)\n"),
        message="(`sub_` returned a NaN for a query with no allowed key)",
    ),
]
