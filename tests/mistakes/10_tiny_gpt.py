"""Typical mistakes in lab 10: each must lose points and show the message that names it."""

from course.build.submissions import Mistake
from course.build.submissions import with_replacements as _with

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
]
