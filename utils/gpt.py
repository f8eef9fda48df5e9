"""Lesson 10's tiny GPT: a character-level decoder-only transformer, its trainer and sampler.

The model puts the course's parts together: token embeddings; pre-LN blocks (08) whose
multi-head causal self-attention (05, 07) rotates its queries and keys with RoPE from a start
position (08, `utils.transformer.rotate`) and can run step by step over a KV cache (09); a final
LayerNorm and a linear head that gives next-token logits. An optional key mask (True = a real
token) hides the padding of prompts of different lengths; a query whose keys are all hidden gets
all-zero weights (05).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from utils import text, validation
from utils.training import evaluating, one_cycle_steps
from utils.transformer import causal_mask, masked_softmax, rotate


class LayerCache:
    """Keys and values (N, n_heads, L_max, d_head) of one layer, written in place, and a length."""

    def __init__(self, batch, n_heads, max_length, d_head, dtype=torch.float32):
        self.keys = torch.zeros(batch, n_heads, max_length, d_head, dtype=dtype)
        self.values = torch.zeros(batch, n_heads, max_length, d_head, dtype=dtype)
        self.length = 0  # positions held

    def add(self, keys, values) -> tuple[torch.Tensor, torch.Tensor]:
        """Store keys, values (N, n_heads, L_new, d_head); return all held (N, n_heads, L, d)."""
        stop = self.length + keys.shape[2]
        if stop > self.keys.shape[2]:
            raise ValueError(f"the cache holds at most {self.keys.shape[2]} positions")
        self.keys[:, :, self.length:stop] = keys
        self.values[:, :, self.length:stop] = values
        self.length = stop
        return self.keys[:, :, :stop], self.values[:, :, :stop]

    def nbytes(self) -> int:
        """Bytes of the keys and values held."""
        per_position = self.keys[:, :, :1].numel() * self.keys.element_size()
        return 2 * per_position * self.length


def masked_attention(query, keys, values, allowed):
    """Attention (N, h, Lq, d) over keys (N, h, Lk, d); allowed broadcasts to (N, h, Lq, Lk)."""
    scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (N, h, Lq, Lk)
    weights = masked_softmax(scores, allowed)  # hidden keys get 0, fully hidden rows all 0
    return weights @ values, weights  # (N, h, Lq, d), (N, h, Lq, Lk)


class RotarySelfAttention(nn.Module):
    """Multi-head causal self-attention with RoPE that can run step by step over a LayerCache."""

    def __init__(self, d_model, n_heads, causal=True):
        super().__init__()
        if d_model % n_heads or (d_model // n_heads) % 2:
            raise ValueError(f"d_model={d_model} must split into n_heads={n_heads} even heads")
        self.n_heads = n_heads
        self.causal = validation.boolean(causal, "causal")
        self.in_proj = nn.Linear(d_model, 3 * d_model)  # queries, keys and values at once
        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None, key_mask=None):
        """x (N, L_new, d_model) after the cached positions -> (N, L_new, d_model), weights.

        key_mask (N, L_seen), True at real tokens, covers the cached positions and the new ones.
        """
        start = 0 if cache is None else cache.length  # position of x[:, 0]
        q, k, v = (t.unflatten(-1, (self.n_heads, -1)).transpose(1, 2)
                   for t in self.in_proj(x).chunk(3, dim=-1))  # each (N, n_heads, L_new, d_head)
        q, k = rotate(q, start=start), rotate(k, start=start)
        if cache is not None:
            k, v = cache.add(k, v)  # (N, n_heads, L_seen, d_head) each
        allowed = causal_mask(k.shape[2])[start:]  # (L_new, L_seen): the rows of the new queries
        if not self.causal:  # every query sees every key, the later ones too
            allowed = torch.ones_like(allowed)
        if key_mask is not None:
            allowed = allowed & key_mask[:, None, None, :]  # (N, 1, L_new, L_seen)
        context, weights = masked_attention(q, k, v, allowed)
        return self.out_proj(context.transpose(1, 2).flatten(2)), weights  # (N, L_new, d_model)


class Block(nn.Module):
    """Pre-LN block: x + attention(LN(x)), then x + feed-forward(LN(x))."""

    def __init__(self, d_model, n_heads, d_ff, causal=True):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attention = RotarySelfAttention(d_model, n_heads, causal)
        self.feed_forward = nn.Sequential(
            nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model)
        )

    def forward(self, x, cache=None, key_mask=None):
        """(N, L_new, d_model) -> (N, L_new, d_model), attention weights (N, h, L_new, L_seen)."""
        attended, weights = self.attention(self.norm1(x), cache, key_mask)
        x = x + attended
        return x + self.feed_forward(self.norm2(x)), weights


class TinyGPT(nn.Module):
    """Embedding, n_layers pre-LN RoPE blocks under a causal mask, final LayerNorm, linear head.

    `causal=False` drops the causal mask, so that each position also reads the tokens after it.
    """

    def __init__(self, vocab_size, d_model=64, n_heads=4, n_layers=2, d_ff=256, max_length=512,
                 causal=True):
        super().__init__()
        self.vocab_size = validation.positive_int(vocab_size, "vocab_size")
        self.max_length = validation.positive_int(max_length, "max_length")
        self.embed = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(
            Block(d_model, n_heads, d_ff, causal)
            for _ in range(validation.positive_int(n_layers, "n_layers"))
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def empty_caches(self, batch) -> list[LayerCache]:
        """One empty LayerCache per block for `batch` sequences of up to max_length tokens."""
        attention = self.blocks[0].attention
        d_head = self.embed.embedding_dim // attention.n_heads
        dtype = self.embed.weight.dtype
        return [LayerCache(batch, attention.n_heads, self.max_length, d_head, dtype)
                for _ in self.blocks]

    def run(self, tokens, caches=None, key_mask=None):
        """Logits (N, L_new, n_vocab) of tokens (N, L_new), [weights (N, h, L_new, L_seen)]."""
        seen = tokens.shape[1] + (0 if caches is None else caches[0].length)
        if seen > self.max_length:
            raise ValueError(f"{seen} positions exceed max_length={self.max_length}")
        if key_mask is not None and tuple(key_mask.shape) != (len(tokens), seen):
            raise ValueError(
                f"key_mask must be (N, L_seen) = {(len(tokens), seen)}, the cached and the new "
                f"positions, got {tuple(key_mask.shape)}"
            )
        x = self.embed(tokens)  # (N, L_new, d_model): RoPE adds nothing here
        maps = []
        for n, block in enumerate(self.blocks):
            x, weights = block(x, None if caches is None else caches[n], key_mask)
            maps.append(weights)
        return self.head(self.norm(x)), maps

    def forward(self, tokens, caches=None, key_mask=None):
        """Next-token logits (N, L_new, n_vocab) of tokens (N, L_new) after the cached positions."""
        return self.run(tokens, caches, key_mask)[0]


def sequence_loss(model, windows) -> torch.Tensor:
    """Mean cross-entropy of predicting windows[:, 1:] from windows[:, :-1], windows (N, L)."""
    logits = model(windows[:, :-1])  # (N, L - 1, n_vocab)
    return F.cross_entropy(logits.flatten(0, 1), windows[:, 1:].flatten())


def evaluate(model, ids, batches=8, batch_size=32, length=65, seed=0) -> float:
    """Mean loss over `batches` seeded random windows (N, length) of ids, without gradients."""
    generator = torch.Generator().manual_seed(validation.seed(seed))
    with evaluating(model):
        losses = [sequence_loss(model, text.random_windows(ids, batch_size, length, generator))
                  for _ in range(validation.positive_int(batches, "batches"))]
    return float(torch.stack(losses).mean())


def train_gpt(model, train_ids, steps, batch_size=32, length=65, lr=3e-3, seed=0,
              checkpoints=(), on_checkpoint=None) -> tuple[list[float], float]:
    """Adam with a one-cycle schedule on random windows (N, length): (losses, seconds).

    `on_checkpoint(step, model)` is called after each step listed in `checkpoints` (0: before
    training); its time is not counted in the seconds.
    """
    steps = validation.positive_int(steps, "steps")
    generator = torch.Generator().manual_seed(validation.seed(seed))
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    if on_checkpoint is not None and 0 in checkpoints:
        on_checkpoint(0, model)

    def batch_loss():
        return sequence_loss(model, text.random_windows(train_ids, batch_size, length, generator))

    def after_step(step):
        if on_checkpoint is not None and step in checkpoints:
            on_checkpoint(step, model)

    return one_cycle_steps(model, batch_loss, optimizer, steps, lr, after_step)


def bigram_loss(train_ids, valid_ids, n_vocab) -> float:
    """Loss on valid_ids (L,) of next-token counts from train_ids (L,), each count plus one."""
    n_vocab = validation.positive_int(n_vocab, "n_vocab")
    counts = torch.ones(n_vocab, n_vocab)  # (n_vocab, n_vocab): previous -> next, add-one
    counts.index_put_((train_ids[:-1], train_ids[1:]), torch.ones(len(train_ids) - 1),
                      accumulate=True)
    log_probabilities = (counts / counts.sum(dim=1, keepdim=True)).log()
    return float(-log_probabilities[valid_ids[:-1], valid_ids[1:]].mean())


def loss_per_position(model, ids, n_windows=32, length=257, seed=0) -> torch.Tensor:
    """Mean loss (length - 1,) of each position over n_windows seeded random windows of ids."""
    if validation.positive_int(length, "length") < 2:
        raise ValueError(f"length must be at least 2 (one prediction), got {length}")
    generator = torch.Generator().manual_seed(validation.seed(seed))
    windows = text.random_windows(ids, n_windows, length, generator)  # (N, length)
    with evaluating(model):
        logits = model(windows[:, :-1])  # (N, length - 1, n_vocab)
    losses = F.cross_entropy(logits.transpose(1, 2), windows[:, 1:], reduction="none")
    return losses.mean(dim=0)  # (length - 1,)


def first_token_weight(model, ids, n_windows=32, length=64, first_query=16,
                       seed=0) -> tuple[torch.Tensor, float]:
    """Mean weight (n_layers, n_heads) on position 0 of queries t >= first_query, and 1/(t+1)'s.

    The queries are those of n_windows seeded random windows (N, length) of ids; the second
    value is what weights spread evenly over the keys 0 .. t would give, averaged the same way.
    """
    first_query = validation.non_negative_int(first_query, "first_query")
    if first_query >= validation.positive_int(length, "length"):
        raise ValueError(f"first_query={first_query} must be below length={length}")
    generator = torch.Generator().manual_seed(validation.seed(seed))
    windows = text.random_windows(ids, n_windows, length, generator)  # (N, length)
    maps = attention_maps(model, windows)  # (n_layers, N, n_heads, length, length)
    on_first = maps[:, :, :, first_query:, 0]  # (n_layers, N, n_heads, queries)
    uniform = (1 / torch.arange(first_query + 1, length + 1, dtype=torch.float64)).mean()
    return on_first.mean(dim=(1, 3)), float(uniform)


def next_token_probabilities(logits, temperature=1.0, top_k=None) -> torch.Tensor:
    """What sampling draws from: softmax(logits (..., n_vocab) / T) over each row's top_k."""
    scaled = logits / validation.positive_number(temperature, "temperature")  # (..., n_vocab)
    if top_k is not None:
        top_k = min(validation.positive_int(top_k, "top_k"), scaled.shape[-1])
        kth = scaled.topk(top_k, dim=-1).values[..., -1:]  # (..., 1)
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))  # only the top_k can be drawn
    return scaled.softmax(dim=-1)  # (..., n_vocab): -inf outside the top_k gives 0


def sample_next(logits, temperature=1.0, top_k=None, generator=None) -> torch.Tensor:
    """Next ids (N,) drawn from softmax(logits (N, n_vocab) / T) over the top_k; T = 0: greedy."""
    if temperature == 0:
        return logits.argmax(dim=-1)
    probabilities = next_token_probabilities(logits, temperature, top_k)  # (N, n_vocab)
    return torch.multinomial(probabilities, 1, generator=generator)[:, 0]


def generate(model, prompt, n_new, temperature=1.0, top_k=None, seed=0, use_cache=True):
    """prompt (N, P) and n_new ids drawn after it: (N, P + n_new), with or without a KV cache."""
    generator = torch.Generator().manual_seed(validation.seed(seed))
    tokens = prompt
    with evaluating(model):
        caches = model.empty_caches(len(prompt)) if use_cache else None
        logits = model(prompt, caches)[:, -1]  # (N, n_vocab)
        for step in range(validation.non_negative_int(n_new, "n_new")):
            new = sample_next(logits, temperature, top_k, generator)[:, None]  # (N, 1)
            tokens = torch.cat([tokens, new], dim=1)
            if step + 1 < n_new:  # the logits of the last token are never used
                logits = (model(new, caches) if use_cache else model(tokens))[:, -1]
    return tokens


def attention_maps(model, tokens) -> torch.Tensor:
    """Weights (n_layers, N, n_heads, L, L) of the model on tokens (N, L)."""
    with torch.no_grad():
        return torch.stack(model.run(tokens)[1])
