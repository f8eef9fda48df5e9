"""Typical mistakes in lab 09: each must lose points and show the message that names it."""

from catalogue import Mistake
from catalogue import with_replacements as _with

# Correct solutions; each mistake below changes one part of one of them.
_ONLINE_SOFTMAX = '''
import torch


def online_softmax(scores, chunk_size):
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    lowest = torch.finfo(scores.dtype).min
    running_max = scores.new_full(scores.shape[:-1] + (1,), float("-inf"))
    running_sum = scores.new_zeros(scores.shape[:-1] + (1,))
    starts = range(0, scores.shape[-1], chunk_size)
    for start in starts:
        chunk = scores[..., start:start + chunk_size]
        new_max = torch.maximum(running_max, chunk.amax(dim=-1, keepdim=True))
        safe_max = new_max.clamp(min=lowest)
        running_sum = running_sum * torch.exp(running_max - safe_max) + torch.exp(
            chunk - safe_max).sum(-1, keepdim=True)
        running_max = new_max
    final_max = running_max.clamp(min=lowest)
    safe_sum = running_sum.masked_fill(running_sum == 0, 1.0)
    pieces = [torch.exp(scores[..., start:start + chunk_size] - final_max) / safe_sum
              for start in starts]
    return torch.cat(pieces, dim=-1)
'''

# A mistake, not a change of _ONLINE_SOFTMAX: another structure, a pass for the maximum, then one
# for the sum.
_SOFTMAX_TWO_PASSES = '''
import torch


def online_softmax(scores, chunk_size):
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    starts = range(0, scores.shape[-1], chunk_size)
    running_max = scores.new_full(scores.shape[:-1] + (1,), float("-inf"))
    for start in starts:
        chunk = scores[..., start:start + chunk_size]
        running_max = torch.maximum(running_max, chunk.amax(dim=-1, keepdim=True))
    final_max = running_max.clamp(min=torch.finfo(scores.dtype).min)
    running_sum = scores.new_zeros(scores.shape[:-1] + (1,))
    for start in starts:
        chunk = scores[..., start:start + chunk_size]
        running_sum = running_sum + torch.exp(chunk - final_max).sum(-1, keepdim=True)
    safe_sum = running_sum.masked_fill(running_sum == 0, 1.0)
    pieces = [torch.exp(scores[..., start:start + chunk_size] - final_max) / safe_sum
              for start in starts]
    return torch.cat(pieces, dim=-1)
'''

_CHUNKED_ATTENTION = '''
import math

import torch


def chunked_attention(query, keys, values, chunk_size, causal=False):
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    batch, length_q, _ = query.shape
    length_k = keys.shape[1]
    if causal and length_q != length_k:
        raise ValueError(f"causal=True needs Lq == Lk, got Lq={length_q} and Lk={length_k}")
    query = query / math.sqrt(query.shape[-1])
    running_max = query.new_full((batch, length_q, 1), float("-inf"))
    running_sum = query.new_zeros((batch, length_q, 1))
    output = query.new_zeros((batch, length_q, values.shape[-1]))
    rows = torch.arange(length_q)[:, None]
    for start in range(0, length_k, chunk_size):
        scores = query @ keys[:, start:start + chunk_size].transpose(1, 2)
        if causal:
            columns = start + torch.arange(scores.shape[-1])
            scores = scores.masked_fill(columns > rows, float("-inf"))
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        rescale = torch.exp(running_max - new_max)
        weights = torch.exp(scores - new_max)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        output = output * rescale + weights @ values[:, start:start + chunk_size]
        running_max = new_max
    logsumexp = running_max + torch.log(running_sum)
    return output / running_sum, logsumexp.squeeze(-1)
'''

_KV_CACHE = '''
import math

import torch
from torch import nn


class KVCache:
    def __init__(self):
        self.keys = None
        self.values = None
        self.key_buffer = None
        self.value_buffer = None

    def length(self):
        return 0 if self.keys is None else self.keys.shape[-2]

    def append(self, keys, values):
        seen, new = self.length(), keys.shape[-2]
        if self.key_buffer is None or seen + new > self.key_buffer.shape[-2]:
            capacity = max(2 * seen, seen + new)
            key_buffer = keys.new_empty(*keys.shape[:-2], capacity, keys.shape[-1])
            value_buffer = values.new_empty(*values.shape[:-2], capacity, values.shape[-1])
            if seen:
                key_buffer[..., :seen, :] = self.keys
                value_buffer[..., :seen, :] = self.values
            self.key_buffer, self.value_buffer = key_buffer, value_buffer
        self.key_buffer[..., seen:seen + new, :] = keys
        self.value_buffer[..., seen:seen + new, :] = values
        self.keys = self.key_buffer[..., :seen + new, :]
        self.values = self.value_buffer[..., :seen + new, :]
        return self.keys, self.values


class CachedSelfAttention(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        first = 0 if cache is None else cache.length()
        query = self.w_q(x)
        keys, values = self.w_k(x), self.w_v(x)
        if cache is not None:
            keys, values = cache.append(keys, values)
        rows = first + torch.arange(x.shape[1])[:, None]
        allowed = torch.arange(keys.shape[1]) <= rows
        scores = query @ keys.transpose(1, 2) / math.sqrt(x.shape[-1])
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        return self.w_o(weights @ values), weights
'''



# The catalogue's correct answers, by cell: each gets every point (tests/lessons/test_autograde.py).
BASES = {
    "online_softmax": _ONLINE_SOFTMAX,
    "chunked_attention": _CHUNKED_ATTENTION,
    "kv_cache": _KV_CACHE,
}

MISTAKES = [
    Mistake(
        name="softmax_sum_not_rescaled",
        cell="online_softmax",
        code=_with(_ONLINE_SOFTMAX, "running_sum * torch.exp(running_max - safe_max)",
                   "running_sum"),
        message="did not rescale the running sum when the maximum grew",
    ),
    Mistake(
        name="softmax_max_of_chunk_only",
        cell="online_softmax",
        code=_with(_ONLINE_SOFTMAX,
                   "torch.maximum(running_max, chunk.amax(dim=-1, keepdim=True))",
                   "chunk.amax(dim=-1, keepdim=True)"),
        message="the largest score seen so far, over every chunk",
    ),
    Mistake(
        name="softmax_nan_on_masked_chunk",
        cell="online_softmax",
        code=_with(_ONLINE_SOFTMAX, "safe_max = new_max.clamp(min=lowest)", "safe_max = new_max"),
        message="exp(-inf - (-inf)) is NaN",
    ),
    Mistake(
        name="softmax_nan_on_fully_masked_row",
        cell="online_softmax",
        code=_with(_ONLINE_SOFTMAX, "running_sum.masked_fill(running_sum == 0, 1.0)",
                   "running_sum"),
        message="online_softmax of a row whose scores are all -inf",
    ),
    Mistake(
        name="softmax_does_not_validate",
        cell="online_softmax",
        code=_with(_ONLINE_SOFTMAX, '''    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
''', ""),
        message="online_softmax(scores, 0) raised ValueError but its message",
    ),
    Mistake(
        name="softmax_output_from_the_whole_row",
        cell="online_softmax",
        code=_with(_ONLINE_SOFTMAX, "return torch.cat(pieces, dim=-1)",
                   "return torch.exp(scores - final_max) / safe_sum"),
        message="it read more than one chunk of the scores at once",
    ),
    Mistake(
        name="softmax_calls_torch_softmax",
        cell="online_softmax",
        # Not a change of _ONLINE_SOFTMAX: another structure, no chunks at all.
        code='''
import torch


def online_softmax(scores, chunk_size):
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    return torch.softmax(scores, dim=-1)
''',
        message="it read more than one chunk of the scores at once",
    ),
    Mistake(
        name="softmax_max_pass_then_sum_pass",
        cell="online_softmax",
        code=_SOFTMAX_TWO_PASSES,
        message="expected one pass 0 1 2 3 that computes the running max and sum together",
    ),
    Mistake(
        name="attention_nothing_rescaled",
        cell="chunked_attention",
        code=_with(_CHUNKED_ATTENTION, "running_sum * rescale +", "running_sum +",
                   "output * rescale +", "output +"),
        message="rescaled neither the running sum nor the output accumulator",
    ),
    Mistake(
        name="attention_output_not_rescaled",
        cell="chunked_attention",
        code=_with(_CHUNKED_ATTENTION, "output * rescale +", "output +"),
        message="rescaled the running sum but not the output accumulator",
    ),
    Mistake(
        name="attention_causal_offset",
        cell="chunked_attention",
        code=_with(_CHUNKED_ATTENTION, "columns = start + torch.arange(scores.shape[-1])",
                   "columns = torch.arange(scores.shape[-1])"),
        message="compared the query positions with the key positions inside the block",
    ),
    Mistake(
        name="attention_logsumexp_without_max",
        cell="chunked_attention",
        code=_with(_CHUNKED_ATTENTION, "logsumexp = running_max + torch.log(running_sum)",
                   "logsumexp = torch.log(running_sum)"),
        message="returned log(running sum) without adding the running maximum back",
    ),
    Mistake(
        name="attention_all_scores_at_once",
        cell="chunked_attention",
        code=_with(_CHUNKED_ATTENTION,
                   "    for start in range(0, length_k, chunk_size):\n"
                   "        scores = query @ keys[:, start:start + chunk_size].transpose(1, 2)\n",
                   "    all_scores = query @ keys.transpose(1, 2)\n"
                   "    for start in range(0, length_k, chunk_size):\n"
                   "        scores = all_scores[:, :, start:start + chunk_size]\n"),
        message="never query @ keys.transpose(1, 2) with all the keys",
    ),
    Mistake(
        name="attention_causal_does_not_validate",
        cell="chunked_attention",
        code=_with(_CHUNKED_ATTENTION, '''    if causal and length_q != length_k:
        raise ValueError(f"causal=True needs Lq == Lk, got Lq={length_q} and Lk={length_k}")
''', ""),
        message="chunked_attention with causal=True, Lq=5 and Lk=7 did not raise ValueError",
    ),
    Mistake(
        name="cache_stores_queries",
        cell="kv_cache",
        code=_with(_KV_CACHE, "keys, values = cache.append(keys, values)",
                   "keys, values = cache.append(query, values)"),
        message="stored the projected queries in the cache, not the keys",
    ),
    Mistake(
        name="cache_positions_restart",
        cell="kv_cache",
        code=_with(_KV_CACHE, "rows = first + torch.arange(x.shape[1])[:, None]",
                   "rows = torch.arange(x.shape[1])[:, None]"),
        message="restarted the positions at 0 in every step",
    ),
    Mistake(
        name="cache_attends_new_tokens_only",
        cell="kv_cache",
        code=_with(_KV_CACHE, "keys, values = cache.append(keys, values)",
                   "cache.append(keys, values)"),
        message="attended only to the new tokens of the step",
    ),
    Mistake(
        name="cache_kept_on_the_layer",
        cell="kv_cache",
        code=_with(_KV_CACHE, '''        first = 0 if cache is None else cache.length()
''', '''        if cache is not None:
            if getattr(self, "cache", None) is None:
                self.cache = cache
            cache = self.cache
        first = 0 if cache is None else cache.length()
'''),
        message="each sequence has its own cache",
    ),
    Mistake(
        name="cache_copies_every_step",
        cell="kv_cache",
        code=_with(_KV_CACHE, '''        seen, new = self.length(), keys.shape[-2]
        if self.key_buffer is None or seen + new > self.key_buffer.shape[-2]:
            capacity = max(2 * seen, seen + new)
            key_buffer = keys.new_empty(*keys.shape[:-2], capacity, keys.shape[-1])
            value_buffer = values.new_empty(*values.shape[:-2], capacity, values.shape[-1])
            if seen:
                key_buffer[..., :seen, :] = self.keys
                value_buffer[..., :seen, :] = self.values
            self.key_buffer, self.value_buffer = key_buffer, value_buffer
        self.key_buffer[..., seen:seen + new, :] = keys
        self.value_buffer[..., seen:seen + new, :] = values
        self.keys = self.key_buffer[..., :seen + new, :]
        self.values = self.value_buffer[..., :seen + new, :]
''', '''        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = torch.cat([self.keys, keys], dim=-2)
            self.values = torch.cat([self.values, values], dim=-2)
'''),
        message="the cache copies its stored positions at (almost) every step",
    ),
    Mistake(
        name="cache_grows_by_what_it_needs",
        cell="kv_cache",
        code=_with(_KV_CACHE, "capacity = max(2 * seen, seen + new)", "capacity = seen + new"),
        message="the cache copies its stored positions at (almost) every step",
    ),
    Mistake(
        name="cache_preallocated",
        cell="kv_cache",
        code=_with(_KV_CACHE, "capacity = max(2 * seen, seen + new)",
                   "capacity = max(4096, seen + new)"),
        message="the cache allocated buffers for a length it was not told",
    ),
    Mistake(
        name="cache_grows_by_fixed_steps",
        cell="kv_cache",
        code=_with(_KV_CACHE, "capacity = max(2 * seen, seen + new)",
                   "capacity = seen + max(new, 32)"),
        message="the buffers grow by a fixed number of positions",
    ),
]
