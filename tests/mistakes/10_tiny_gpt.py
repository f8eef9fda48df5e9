"""Typical mistakes in lab 10: each must lose points and show the message that names it."""

from course.coursedir.scratch import Mistake
from course.coursedir.scratch import with_replacements as _with

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

_GQA = '''
import math

import torch
from torch import nn


class GroupedQueryAttention(nn.Module):
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
        batch, length, _ = x.shape
        query = self.w_q(x).view(batch, length, self.n_heads, self.d_head).transpose(1, 2)
        keys, values = (w(x).view(batch, length, self.n_kv_heads, self.d_head).transpose(1, 2)
                        for w in (self.w_k, self.w_v))
        first = 0
        if cache is not None:
            if cache:
                first = cache["keys"].shape[2]
                keys = torch.cat([cache["keys"], keys], dim=2)
                values = torch.cat([cache["values"], values], dim=2)
            cache["keys"], cache["values"] = keys, values
        group = self.n_heads // self.n_kv_heads
        keys = keys.repeat_interleave(group, dim=1)
        values = values.repeat_interleave(group, dim=1)
        scores = query @ keys.transpose(-2, -1) / math.sqrt(self.d_head)
        positions = first + torch.arange(length)[:, None]
        scores = scores.masked_fill(torch.arange(keys.shape[2]) > positions, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        merged = (weights @ values).transpose(1, 2).reshape(batch, length, -1)
        return self.w_o(merged), weights


def cache_bytes(cache):
    return sum(cache[name].numel() * cache[name].element_size() for name in ("keys", "values"))
'''

_GPT = '''
import math

import torch
from torch import nn


def apply_rope(x, start=0, base=10000.0):
    """Rotate pairs (2i, 2i + 1) of x (N, heads, L, d_head) by p * omega_i, p = start + row."""
    length, size = x.shape[-2], x.shape[-1]
    omega = base ** (-torch.arange(0, size, 2, dtype=x.dtype) / size)  # (d_head / 2,)
    positions = torch.arange(start, start + length, dtype=x.dtype)  # (L,)
    angles = positions[:, None] * omega  # (L, d_head / 2)
    cos, sin = torch.cos(angles), torch.sin(angles)
    first, second = x[..., 0::2], x[..., 1::2]  # (N, heads, L, d_head / 2) each
    rotated = torch.stack([first * cos - second * sin, first * sin + second * cos], dim=-1)
    return rotated.flatten(-2)  # (N, heads, L, d_head)


class RotaryAttention(nn.Module):
    """Causal grouped-query self-attention with RoPE, a key mask and a cache dictionary."""

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
        first = cache["keys"].shape[2] if cache else 0  # the position of x[:, 0]
        query = self.w_q(x).view(batch, length, self.n_heads, self.d_head).transpose(1, 2)
        keys, values = (w(x).view(batch, length, self.n_kv_heads, self.d_head).transpose(1, 2)
                        for w in (self.w_k, self.w_v))  # (N, n_kv_heads, L_new, d_head) each
        query, keys = apply_rope(query, first), apply_rope(keys, first)
        if cache is not None:
            if cache:
                keys = torch.cat([cache["keys"], keys], dim=2)  # (N, n_kv, L_seen, d_head)
                values = torch.cat([cache["values"], values], dim=2)
            cache["keys"], cache["values"] = keys, values
        group = self.n_heads // self.n_kv_heads
        keys = keys.repeat_interleave(group, dim=1)  # (N, n_heads, L_seen, d_head)
        values = values.repeat_interleave(group, dim=1)
        scores = query @ keys.transpose(-2, -1) / math.sqrt(self.d_head)  # (N, h, L_new, L_seen)
        positions = first + torch.arange(length)[:, None]  # (L_new, 1)
        allowed = torch.arange(keys.shape[2]) <= positions  # (L_new, L_seen)
        if key_mask is not None:
            allowed = allowed & key_mask[:, None, None, :]  # (N, 1, L_new, L_seen)
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        weights = weights.nan_to_num(0.0)  # a query with no key: all-zero weights
        merged = (weights @ values).transpose(1, 2).reshape(batch, length, -1)  # (N, L_new, D)
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
        """One empty cache dictionary per block."""
        return [{} for _ in self.blocks]

    def forward(self, tokens, caches=None, key_mask=None):
        """Logits (N, L_new, vocab_size) of tokens (N, L_new) after the cached positions."""
        cached = caches[0]["keys"].shape[2] if caches and caches[0] else 0
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
        name="gqa_heads_cycled",
        cell="gqa",
        code=_with(_GQA, "keys = keys.repeat_interleave(group, dim=1)",
                   "keys = keys.repeat(1, group, 1, 1)",
                   "values = values.repeat_interleave(group, dim=1)",
                   "values = values.repeat(1, group, 1, 1)"),
        message="paired query head h with key-value head h % n_kv_heads",
    ),
    Mistake(
        name="gqa_scaled_by_d_model",
        cell="gqa",
        code=_with(_GQA, "/ math.sqrt(self.d_head)", "/ math.sqrt(x.shape[-1])"),
        message="scaled the scores by 1/sqrt(d_model) instead of 1/sqrt(d_head)",
    ),
    Mistake(
        name="gqa_caches_repeated_heads",
        cell="gqa",
        code=_with(_GQA, '''        first = 0
        if cache is not None:
            if cache:
                first = cache["keys"].shape[2]
                keys = torch.cat([cache["keys"], keys], dim=2)
                values = torch.cat([cache["values"], values], dim=2)
            cache["keys"], cache["values"] = keys, values
        group = self.n_heads // self.n_kv_heads
        keys = keys.repeat_interleave(group, dim=1)
        values = values.repeat_interleave(group, dim=1)
''', '''        first = 0
        group = self.n_heads // self.n_kv_heads
        keys = keys.repeat_interleave(group, dim=1)
        values = values.repeat_interleave(group, dim=1)
        if cache is not None:
            if cache:
                first = cache["keys"].shape[2]
                keys = torch.cat([cache["keys"], keys], dim=2)
                values = torch.cat([cache["values"], values], dim=2)
            cache["keys"], cache["values"] = keys, values
'''),
        message="store (N, n_kv_heads, L_seen, d_head): one head per group, never repeated",
    ),
    Mistake(
        name="gqa_positions_restart",
        cell="gqa",
        code=_with(_GQA, "positions = first + torch.arange(length)[:, None]",
                   "positions = torch.arange(length)[:, None]"),
        message="the new tokens sit at positions P, P + 1, ... after the P cached ones",
    ),
    Mistake(
        name="gpt_without_causal_mask",
        cell="gpt",
        code=_with(_GPT, "allowed = torch.arange(keys.shape[2]) <= positions",
                   "allowed = torch.ones(length, keys.shape[2], dtype=torch.bool)"),
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
        code=_TRAIN.split("def train")[0] + '''
BIGRAM_LOSS = 100.0  # rebinds the kernel's name: the grader keeps its own


def train(model, ids, steps, batch_size=16, length=33, lr=3e-3, seed=0):
    return [4.3 - 3.0 * step / steps for step in range(steps)]
''',
        message="does not beat the bigram model",
    ),
]
