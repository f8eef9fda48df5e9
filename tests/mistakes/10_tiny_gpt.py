"""Typical mistakes in lab 10: each must lose points and show the message that names it."""

from catalogue import Mistake
from catalogue import with_replacements as _with

# Correct solutions; each mistake below changes one part of one of them.
_NEXT_TOKEN_LOSS = '''
import torch


def next_token_loss(logits, tokens, mask=None):
    predicting = logits[:, :-1]
    targets = tokens[:, 1:]
    normaliser = torch.logsumexp(predicting, dim=-1)
    chosen = predicting.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    per_target = normaliser - chosen
    if mask is None:
        return per_target.mean()
    counted = mask[:, 1:] & mask[:, :-1]
    return per_target[counted].mean()
'''

_GENERATE = '''
import torch


def generate(model, prompts, prompt_mask, n_new, temperature=1.0, top_k=None, seed=0):
    generator = torch.Generator().manual_seed(seed)
    batch = prompts.shape[0]
    caches = model.empty_caches(batch)
    key_mask = prompt_mask.clone()
    drawn = []
    with torch.no_grad():
        step_logits = model(prompts, caches, key_mask)[:, -1]
        for step in range(n_new):
            if temperature == 0:
                new = step_logits.argmax(dim=-1, keepdim=True)
            else:
                scaled = step_logits / temperature
                if top_k is not None:
                    threshold = scaled.topk(top_k, dim=-1).values[:, -1:]
                    scaled = scaled.masked_fill(scaled < threshold, float("-inf"))
                probabilities = torch.softmax(scaled, dim=-1)
                new = torch.multinomial(probabilities, 1, generator=generator)
            drawn.append(new)
            if step + 1 < n_new:
                key_mask = torch.cat([key_mask, key_mask.new_ones(batch, 1)], dim=1)
                step_logits = model(new, caches, key_mask)[:, -1]
    return torch.cat(drawn, dim=1)
'''

_PARTS = '''
import math

import torch


# Your parts of labs 08 and 09: paste your apply_rope, attention and KVCache here.
def apply_rope(x, start=0, base=10000.0):
    """Rotate pairs (2i, 2i + 1) of x (N, n_heads, L, d_head) by p * omega_i, p = start + row."""
    length, size = x.shape[-2], x.shape[-1]
    if size % 2 != 0:
        raise ValueError(f"apply_rope needs an even feature size, got d_head={size}")
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise ValueError(f"start must be an integer position >= 0, got start={start!r}")
    even_columns = torch.arange(0, size, 2, dtype=x.dtype)  # (d_head / 2,): 2i
    omega = base ** (-even_columns / size)  # (d_head / 2,)
    positions = torch.arange(start, start + length, dtype=x.dtype)  # (L,): start, start + 1, ...
    angles = positions[:, None] * omega  # (L, d_head / 2)
    cos, sin = torch.cos(angles), torch.sin(angles)  # (L, d_head / 2) each
    first, second = x[..., 0::2], x[..., 1::2]  # (N, n_heads, L, d_head / 2) each
    rotated = torch.stack([first * cos - second * sin, first * sin + second * cos], dim=-1)
    return rotated.flatten(-2)  # (N, n_heads, L, d_head): the pairs back side by side


def attention(q, k, v, mask=None, causal=False, rope=False):
    """The last Lq of Lk positions attend: q (N, n_heads, Lq, d_head), k (N, n_heads, Lk, d_head),
    v (N, n_heads, Lk, d_v) -> (context (N, n_heads, Lq, d_v), weights (N, n_heads, Lq, Lk))."""
    n_queries, n_keys = q.shape[-2], k.shape[-2]
    if n_queries > n_keys:
        raise ValueError(f"the queries are the last Lq of the Lk positions: need Lq <= Lk, got "
                         f"Lq={n_queries}, Lk={n_keys}")
    first = n_keys - n_queries  # the position of the first query
    if rope:  # positions enter the scores only: the values stay as they are
        q, k = apply_rope(q, start=first), apply_rope(k)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (N, n_heads, Lq, Lk)
    allowed = torch.ones(n_queries, n_keys, dtype=torch.bool)  # (Lq, Lk)
    if causal:  # the query at position first + i sees the keys at positions 0 .. first + i
        allowed = allowed.tril(diagonal=first)
    if mask is not None:
        allowed = allowed & mask  # broadcasts to (N, n_heads, Lq, Lk)
    scores = scores.masked_fill(~allowed, float("-inf"))  # (N, n_heads, Lq, Lk)
    has_key = allowed.any(dim=-1, keepdim=True)  # (..., Lq, 1): False for a query with no key
    scores = scores.masked_fill(~has_key, 0.0)  # finite on empty rows: the softmax makes no NaN
    weights = torch.softmax(scores, dim=-1).masked_fill(~allowed, 0.0)  # empty rows: all 0
    return weights @ v, weights  # (N, n_heads, Lq, d_v), (N, n_heads, Lq, Lk)


class KVCache:
    """Keys and values (..., L_seen, d) of the positions seen so far: positions along dim -2."""

    def __init__(self):
        self.keys = None  # (..., L_seen, d): a view of the filled part of key_buffer
        self.values = None
        self.key_buffer = None  # (..., capacity, d), capacity >= L_seen
        self.value_buffer = None

    def length(self):
        """The number of positions held."""
        return 0 if self.keys is None else self.keys.shape[-2]

    def append(self, keys, values):
        """Write keys, values (..., L_new, d) after the stored ones; return all of them."""
        seen, new = self.length(), keys.shape[-2]
        if self.key_buffer is None or seen + new > self.key_buffer.shape[-2]:
            capacity = max(2 * seen, seen + new)  # doubling: each position is copied O(1) times
            key_buffer = keys.new_empty(*keys.shape[:-2], capacity, keys.shape[-1])
            value_buffer = values.new_empty(*values.shape[:-2], capacity, values.shape[-1])
            if seen:
                key_buffer[..., :seen, :] = self.keys  # the one copy of the stored positions
                value_buffer[..., :seen, :] = self.values
            self.key_buffer, self.value_buffer = key_buffer, value_buffer
        self.key_buffer[..., seen:seen + new, :] = keys  # in place: (..., L_new, d)
        self.value_buffer[..., seen:seen + new, :] = values
        self.keys = self.key_buffer[..., :seen + new, :]  # (..., L_seen, d), a view
        self.values = self.value_buffer[..., :seen + new, :]
        return self.keys, self.values
'''

_GQA = '''
import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
    """Causal self-attention with n_heads query heads sharing n_kv_heads key-value heads."""

    def __init__(self, d_model, n_heads, n_kv_heads):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"n_heads={n_heads} must divide d_model={d_model}")
        if n_heads % n_kv_heads:
            raise ValueError(f"n_kv_heads={n_kv_heads} must divide n_heads={n_heads}")
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.d_head = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_head)
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_head)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        """x (N, L_new, d_model) -> (N, L_new, d_model), weights (N, n_heads, L_new, L_seen)."""
        batch, length, _ = x.shape
        query = self.w_q(x).view(batch, length, self.n_heads, self.d_head).transpose(1, 2)
        keys, values = (w(x).view(batch, length, self.n_kv_heads, self.d_head).transpose(1, 2)
                        for w in (self.w_k, self.w_v))  # (N, n_kv_heads, L_new, d_head) each
        if cache is not None:  # your KVCache: in place, (N, n_kv_heads, L_seen, d_head) each
            keys, values = cache.append(keys, values)
        group = self.n_heads // self.n_kv_heads
        keys = keys.repeat_interleave(group, dim=1)  # (N, n_heads, L_seen, d_head)
        values = values.repeat_interleave(group, dim=1)
        context, weights = attention(query, keys, values, causal=True)  # the newest L_new
        merged = context.transpose(1, 2).reshape(batch, length, -1)  # (N, L_new, d_model)
        return self.w_o(merged), weights  # weights (N, n_heads, L_new, L_seen)


def cache_bytes(cache):
    """Bytes of the keys and values held in a KVCache."""
    return sum(part.numel() * part.element_size() for part in (cache.keys, cache.values))
'''

_GPT = '''
import math

import torch
from torch import nn


class RotaryAttention(nn.Module):
    """Causal grouped-query self-attention with RoPE and a key mask, over a KVCache."""

    def __init__(self, d_model, n_heads, n_kv_heads):
        super().__init__()
        if d_model % n_heads or (d_model // n_heads) % 2:
            raise ValueError(f"n_heads={n_heads} must split d_model={d_model} into even heads")
        if n_heads % n_kv_heads:
            raise ValueError(f"n_kv_heads={n_kv_heads} must divide n_heads={n_heads}")
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.d_head = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_head)
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_head)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None, key_mask=None):
        """x (N, L_new, d_model) after the cached positions -> (N, L_new, d_model)."""
        batch, length, _ = x.shape
        first = 0 if cache is None else cache.length()  # the position of x[:, 0]
        query = self.w_q(x).view(batch, length, self.n_heads, self.d_head).transpose(1, 2)
        keys, values = (w(x).view(batch, length, self.n_kv_heads, self.d_head).transpose(1, 2)
                        for w in (self.w_k, self.w_v))  # (N, n_kv_heads, L_new, d_head) each
        query, keys = apply_rope(query, first), apply_rope(keys, first)  # positions first, ...
        if cache is not None:  # your KVCache keeps the rotated keys, in place
            keys, values = cache.append(keys, values)  # (N, n_kv_heads, L_seen, d_head) each
        group = self.n_heads // self.n_kv_heads
        keys = keys.repeat_interleave(group, dim=1)  # (N, n_heads, L_seen, d_head)
        values = values.repeat_interleave(group, dim=1)
        mask = None if key_mask is None else key_mask[:, None, None, :]  # (N, 1, 1, L_seen)
        context, _ = attention(query, keys, values, mask=mask, causal=True)  # no NaN made
        merged = context.transpose(1, 2).reshape(batch, length, -1)  # (N, L_new, d_model)
        return self.w_o(merged)


class DecoderBlock(nn.Module):
    """Pre-LN block: x + attention(norm1(x)), then x + feed_forward(norm2(x))."""

    def __init__(self, d_model, n_heads, n_kv_heads, d_ff):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attention = RotaryAttention(d_model, n_heads, n_kv_heads)
        self.feed_forward = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(),
                                          nn.Linear(d_ff, d_model))

    def forward(self, x, cache=None, key_mask=None):
        """(N, L_new, d_model) -> (N, L_new, d_model)."""
        x = x + self.attention(self.norm1(x), cache, key_mask)
        return x + self.feed_forward(self.norm2(x))


class GPT(nn.Module):
    """Embedding, n_layers pre-LN RoPE blocks, a final LayerNorm and an untied linear head."""

    def __init__(self, vocab_size, d_model, n_heads, n_layers, d_ff, max_length,
                 n_kv_heads=None):
        super().__init__()
        self.max_length = max_length
        self.embed = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(
            DecoderBlock(d_model, n_heads, n_kv_heads or n_heads, d_ff) for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def empty_caches(self, batch):
        """One empty KVCache per block."""
        return [KVCache() for _ in self.blocks]

    def forward(self, tokens, caches=None, key_mask=None):
        """Logits (N, L_new, vocab_size) of tokens (N, L_new) after the cached positions."""
        cached = caches[0].length() if caches else 0
        if cached + tokens.shape[1] > self.max_length:
            raise ValueError(f"{cached + tokens.shape[1]} positions exceed "
                             f"max_length={self.max_length}")
        x = self.embed(tokens)  # (N, L_new, d_model)
        for n, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[n], key_mask)
        return self.head(self.norm(x))
'''

_TRAIN = '''
import torch

from utils import text


def train(model, ids, steps, batch_size=16, length=33, lr=3e-3, seed=0):
    """AdamW on random windows (batch_size, length) of ids (L,): the list of the step losses."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        windows = text.random_windows(ids, batch_size, length, generator)  # (N, length)
        loss = next_token_loss(model(windows), windows)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
'''

# The catalogue's correct answers, by cell: each gets every point (tests/lessons/test_autograde.py).
BASES = {
    "next_token_loss": _NEXT_TOKEN_LOSS,
    "generate": _GENERATE,
    "parts": _PARTS,
    "gqa": _GQA,
    "gpt": _GPT,
    "train": _TRAIN,
}

MISTAKES = [
    Mistake(
        name="loss_not_shifted",
        cell="next_token_loss",
        code=_with(_NEXT_TOKEN_LOSS, "predicting = logits[:, :-1]", "predicting = logits",
                   "targets = tokens[:, 1:]", "targets = tokens",
                   "counted = mask[:, 1:] & mask[:, :-1]", "counted = mask"),
        message="did not shift: logits[:, t] must predict tokens[:, t + 1]",
    ),
    Mistake(
        name="loss_shifted_backwards",
        cell="next_token_loss",
        code=_with(_NEXT_TOKEN_LOSS, "predicting = logits[:, :-1]", "predicting = logits[:, 1:]",
                   "targets = tokens[:, 1:]", "targets = tokens[:, :-1]"),
        message="shifted the wrong way",
    ),
    Mistake(
        name="loss_overflows",
        cell="next_token_loss",
        code=_with(_NEXT_TOKEN_LOSS, "normaliser = torch.logsumexp(predicting, dim=-1)",
                   "normaliser = torch.exp(predicting).sum(dim=-1).log()"),
        message="next_token_loss of logits times 1e4",
    ),
    Mistake(
        name="loss_counts_target_after_padding",
        cell="next_token_loss",
        code=_with(_NEXT_TOKEN_LOSS, "counted = mask[:, 1:] & mask[:, :-1]",
                   "counted = mask[:, 1:]"),
        message="counted the first real token of a left-padded row",
    ),
    Mistake(
        name="loss_mean_of_row_means",
        cell="next_token_loss",
        code=_with(_NEXT_TOKEN_LOSS, "    return per_target[counted].mean()",
                   "    return torch.stack([row[keep].mean() for row, keep in "
                   "zip(per_target, counted)]).mean()"),
        message="averaged each row, then the rows",
    ),
    Mistake(
        name="generate_attends_padding",
        cell="generate",
        code=_with(_GENERATE, "step_logits = model(prompts, caches, key_mask)[:, -1]",
                   "step_logits = model(prompts, caches)[:, -1]",
                   "step_logits = model(new, caches, key_mask)[:, -1]",
                   "step_logits = model(new, caches)[:, -1]"),
        message="let the model attend to the padding of the shorter prompts",
    ),
    Mistake(
        name="generate_without_cache",
        cell="generate",
        code=_with(_GENERATE, "step_logits = model(new, caches, key_mask)[:, -1]",
                   "step_logits = model(torch.cat([prompts, *drawn], dim=1), None, key_mask)"
                   "[:, -1]"),
        message="after the prompt, feed only the newest token, with the caches",
    ),
    Mistake(
        name="generate_multiplies_temperature",
        cell="generate",
        code=_with(_GENERATE, "scaled = step_logits / temperature",
                   "scaled = step_logits * temperature"),
        message="multiplied the logits by the temperature instead of dividing them",
    ),
    Mistake(
        name="generate_top_k_drops_the_kth",
        cell="generate",
        code=_with(_GENERATE, "scaled.masked_fill(scaled < threshold",
                   "scaled.masked_fill(scaled <= threshold"),
        message="kept only top_k - 1 tokens",
    ),
    Mistake(
        name="parts_rope_ignores_start",
        cell="parts",
        code=_with(_PARTS, "positions = torch.arange(start, start + length, dtype=x.dtype)",
                   "positions = torch.arange(length, dtype=x.dtype)"),
        message="apply_rope ignored start: row j stands at position start + j",
    ),
    Mistake(
        name="parts_attention_makes_nan_for_a_query_with_no_key",
        cell="parts",
        code=_with(_PARTS, "scores = scores.masked_fill(~has_key, 0.0)", "scores = scores",
                   ".masked_fill(~allowed, 0.0)  # empty rows", "  # empty rows"),
        message="the weights of attention when a query has no key left contains NaN",
    ),
    Mistake(
        name="parts_cache_concatenates_at_every_step",
        cell="parts",
        code=_with(_PARTS, """        seen, new = self.length(), keys.shape[-2]
        if self.key_buffer is None or seen + new > self.key_buffer.shape[-2]:""",
                   """        seen, new = self.length(), keys.shape[-2]
        if seen:
            self.keys = torch.cat([self.keys, keys], dim=-2)
            self.values = torch.cat([self.values, values], dim=-2)
            return self.keys, self.values
        if self.key_buffer is None or seen + new > self.key_buffer.shape[-2]:"""),
        message="the cache copies its stored positions at (almost) every step",
    ),
    Mistake(
        name="gqa_heads_cycled",
        cell="gqa",
        code=_with(_GQA, "keys = keys.repeat_interleave(group, dim=1)",
                   "keys = keys.repeat(1, group, 1, 1)",
                   "values = values.repeat_interleave(group, dim=1)",
                   "values = values.repeat(1, group, 1, 1)"),
        message="paired query head h with key-value head h % n_kv_heads",
    ),
    Mistake(
        name="gqa_caches_repeated_heads",
        cell="gqa",
        code=_with(_GQA, "            keys, values = cache.append(keys, values)\n",
                   "            pass\n",
                   "        values = values.repeat_interleave(group, dim=1)\n",
                   "        values = values.repeat_interleave(group, dim=1)\n"
                   "        if cache is not None:\n"
                   "            keys, values = cache.append(keys, values)\n"),
        message="store (N, n_kv_heads, L_seen, d_head): one head per group, never repeated",
    ),
    Mistake(
        name="gqa_attends_the_new_tokens_only",
        cell="gqa",
        code=_with(_GQA, "            keys, values = cache.append(keys, values)",
                   "            cache.append(keys, values)"),
        message="attend with the new queries to every key that cache.append returns",
    ),
    Mistake(
        name="gpt_without_causal_mask",
        cell="gpt",
        code=_with(_GPT, "mask=mask, causal=True)", "mask=mask, causal=False)"),
        message="attended to later positions",
    ),
    Mistake(
        name="gpt_post_ln",
        cell="gpt",
        code=_with(_GPT, """        x = x + self.attention(self.norm1(x), cache, key_mask)
        return x + self.feed_forward(self.norm2(x))""",
                   """        x = self.norm1(x + self.attention(x, cache, key_mask))
        return self.norm2(x + self.feed_forward(x))"""),
        message="normalised after the residual sum (post-LN)",
    ),
    Mistake(
        name="gpt_residual_adds_the_normalised_input",
        cell="gpt",
        code=_with(_GPT, """        x = x + self.attention(self.norm1(x), cache, key_mask)
        return x + self.feed_forward(self.norm2(x))""",
                   """        x = self.norm1(x)
        x = x + self.attention(x, cache, key_mask)
        x = self.norm2(x)
        return x + self.feed_forward(x)"""),
        message="the residual path adds the normalised x",
    ),
    Mistake(
        name="gpt_rope_restarts_with_the_cache",
        cell="gpt",
        code=_with(_GPT, "query, keys = apply_rope(query, first), apply_rope(keys, first)",
                   "query, keys = apply_rope(query), apply_rope(keys)"),
        message="RoPE restarted at position 0 for the new tokens",
    ),
    Mistake(
        name="gpt_head_tied_to_the_embedding",
        cell="gpt",
        code=_with(_GPT, "        self.head = nn.Linear(d_model, vocab_size)\n",
                   "        self.head = nn.Linear(d_model, vocab_size)\n"
                   "        self.head.weight = self.embed.weight\n"),
        message="the head has no weights of its own",
    ),
    Mistake(
        name="gpt_caches_in_dictionaries",
        cell="gpt",
        code=_with(_GPT, "first = 0 if cache is None else cache.length()",
                   'first = cache["keys"].shape[2] if cache else 0',
                   "            keys, values = cache.append(keys, values)",
                   """            if cache:
                keys = torch.cat([cache["keys"], keys], dim=2)
                values = torch.cat([cache["values"], values], dim=2)
            cache["keys"], cache["values"] = keys, values""",
                   "return [KVCache() for _ in self.blocks]", "return [{} for _ in self.blocks]",
                   "cached = caches[0].length() if caches else 0",
                   'cached = caches[0]["keys"].shape[2] if caches and caches[0] else 0'),
        message="one KVCache (yours, pasted above) per block",
    ),
    Mistake(
        name="gpt_concatenates_onto_the_kv_cache",
        cell="gpt",
        code=_with(_GPT, "            keys, values = cache.append(keys, values)",
                   """            if cache.length():
                keys = torch.cat([cache.keys, keys], dim=2)
                values = torch.cat([cache.values, values], dim=2)
            cache.keys, cache.values = keys, values"""),
        message="the model copies its stored keys and values at (almost) every step",
    ),
    Mistake(
        name="train_predicts_two_ahead",
        cell="train",
        code=_with(_TRAIN, "loss = next_token_loss(model(windows), windows)",
                   "loss = next_token_loss(model(windows[:, :-1]), windows[:, 1:])"),
        message="does not beat the bigram model",
    ),
    Mistake(
        name="train_without_zero_grad",
        cell="train",
        code=_with(_TRAIN, "        optimizer.zero_grad()\n", ""),
        message="the training loss did not fall",
    ),
    Mistake(
        name="train_draws_the_same_batch_every_step",
        cell="train",
        code=_with(_TRAIN, "text.random_windows(ids, batch_size, length, generator)",
                   "text.random_windows(ids, batch_size, length, "
                   "torch.Generator().manual_seed(seed))"),
        message="its last training loss: 0.0",
    ),
    Mistake(
        name="train_reports_falling_losses_without_training",
        cell="train",
        # Not a change of _TRAIN: another structure, a train that trains nothing.
        code=_TRAIN.split("def train")[0] + '''
BIGRAM_LOSS = 100.0  # rebinds the kernel's name: the grader keeps its own


def train(model, ids, steps, batch_size=16, length=33, lr=3e-3, seed=0):
    return [4.3 - 3.0 * step / steps for step in range(steps)]
''',
        message="does not beat the bigram model",
    ),
]
