"""A tiny causal transformer that learns to reverse digit sequences, with its data and trainer.

A sequence is `length` digits, a separator, then the same digits reversed:
`3 1 4 1 5 | 5 1 4 1 3`. The model reads the sequence left to right and predicts each next token;
only its predictions of the reversed digits count. Knowing *which* digit comes next needs the
order of the input, so a model without position information cannot do it.

The model is a stack of PyTorch's `nn.TransformerEncoderLayer` (pre-LayerNorm) under a causal
mask. Its position information is chosen by the caller: none, a learned table, a fixed
(max_length, d_model) table of encodings added to the token embeddings, or rotary embeddings
(RoPE), which rotate the queries and keys inside each layer's attention instead.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from utils import validation
from utils.training import evaluating, one_cycle_steps

DIGITS = 10
SEPARATOR = 10  # the token between the digits and their reversal
VOCAB_SIZE = 11
POSITIONS = ("none", "learned", "rope")


def reversal_data(n, length, seed) -> torch.Tensor:
    """n sequences `digits, SEPARATOR, reversed digits` as tokens (n, 2 * length + 1)."""
    n, length = validation.positive_int(n, "n"), validation.positive_int(length, "length")
    rng = np.random.default_rng(validation.seed(seed))
    digits = rng.integers(0, DIGITS, size=(n, length))  # (n, length)
    separator = np.full((n, 1), SEPARATOR)  # (n, 1)
    tokens = np.concatenate([digits, separator, digits[:, ::-1]], axis=1)  # (n, 2 * length + 1)
    return torch.from_numpy(tokens).long()


def causal_mask(length) -> torch.Tensor:
    """(L, L) boolean mask, True where query i may attend to key j, i.e. j <= i."""
    length = validation.positive_int(length, "length")
    return torch.ones(length, length, dtype=torch.bool).tril()


def rope_frequencies(d_head, base=10000.0, dtype=torch.float32) -> torch.Tensor:
    """omega_i = base^(-2i / d_head) (d_head / 2,): the turn per position of each pair of RoPE."""
    d_head = validation.positive_int(d_head, "d_head")
    if d_head % 2:
        raise ValueError(f"d_head must be even (RoPE turns pairs of features), got {d_head}")
    base = validation.positive_number(base, "base")
    return base ** (-torch.arange(0, d_head, 2, dtype=dtype) / d_head)


def masked_softmax(scores, allowed) -> torch.Tensor:
    """Softmax of scores (..., Lk) over the keys `allowed` (broadcast) keeps; empty rows all 0."""
    if not isinstance(allowed, torch.Tensor) or allowed.dtype != torch.bool:
        raise ValueError(f"allowed must be a bool tensor (True = may attend), got {allowed!r}")
    hidden = scores.masked_fill(~allowed, float("-inf"))  # (..., Lq, Lk)
    floor = torch.finfo(hidden.dtype).min  # a finite shift for a row with no allowed key
    shift = hidden.detach().amax(dim=-1, keepdim=True).clamp(min=floor)  # (..., Lq, 1)
    exps = (hidden - shift).exp()  # 0 at every hidden key; the largest allowed key gives 1
    totals = exps.sum(dim=-1, keepdim=True)  # (..., Lq, 1): at least 1, or 0 for an empty row
    # An empty row divides by 1, not 0. (A clamp at 1 would also cut the gradient of a row
    # whose one allowed key makes its total exactly 1, as some torch versions do.)
    return exps / totals.masked_fill(totals == 0, 1.0)


def rotate(x, base=10000.0, start=0) -> torch.Tensor:
    """RoPE on x (..., L, d_head) at positions p = start, start + 1, ...: pair i turned by p w_i."""
    *_, length, d_head = x.shape
    omega = rope_frequencies(d_head, base)  # (d_head / 2,)
    angles = torch.outer(torch.arange(length, dtype=torch.float32) + start, omega)  # (L, d/2)
    turn = torch.polar(torch.ones_like(angles), angles)  # (L, d_head / 2): e^(i p omega_i)
    pairs = torch.view_as_complex(x.float().unflatten(-1, (d_head // 2, 2)).contiguous())
    return torch.view_as_real(pairs * turn).flatten(-2).to(x.dtype)  # (..., L, d_head)


class RotaryEncoderLayer(nn.TransformerEncoderLayer):
    """A pre-LN nn.TransformerEncoderLayer whose attention rotates its queries and keys (RoPE).

    It keeps the parent's parameters and sub-layers and replaces only the self-attention: the
    queries and keys that `self_attn`'s projections make are rotated by their positions before
    they are compared; the values are not. Called as the parent is: `layer(x, src_mask=...)`.
    """

    def __init__(self, d_model, n_heads, d_ff):
        super().__init__(d_model, n_heads, d_ff, dropout=0.0, norm_first=True, batch_first=True)

    def attend(self, normed, src_mask=None):
        """(context (N, L, d_model), weights (N, heads, L, L)) of RoPE attention on normed x."""
        heads = self.self_attn.num_heads
        qkv = nn.functional.linear(normed, self.self_attn.in_proj_weight,
                                   self.self_attn.in_proj_bias)  # (N, L, 3 d_model)
        q, k, v = (t.unflatten(-1, (heads, -1)).transpose(1, 2)
                   for t in qkv.chunk(3, dim=-1))  # each (N, heads, L, d_head)
        scores = rotate(q) @ rotate(k).transpose(-2, -1) / q.shape[-1] ** 0.5  # (N, heads, L, L)
        if src_mask is not None:
            scores = scores.masked_fill(src_mask, float("-inf"))  # torch's mask: True = may NOT
        weights = scores.softmax(dim=-1)  # (N, heads, L, L)
        context = (weights @ v).transpose(1, 2).flatten(2)  # (N, L, d_model)
        return self.self_attn.out_proj(context), weights

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        """x + RoPE attention(norm1(x)), then x + feed-forward(norm2(x)); (N, L, d_model)."""
        if src_key_padding_mask is not None:
            raise ValueError("RotaryEncoderLayer takes src_mask only")
        x = src + self.attend(self.norm1(src), src_mask)[0]
        return x + self.linear2(self.activation(self.linear1(self.norm2(x))))


class TinyCausalLM(nn.Module):
    """Token embedding + positions + n_layers pre-LN encoder layers under a causal mask + head.

    `positions` is "none", "learned" (an nn.Embedding of max_length rows) or a
    (max_length, d_model) tensor of fixed encodings, added to the token embeddings, or "rope":
    nothing added, the queries and keys of every layer rotated (RotaryEncoderLayer).
    """

    def __init__(
        self, d_model=64, n_heads=4, n_layers=1, d_ff=128, max_length=32, positions="none"
    ):
        super().__init__()
        self.max_length = validation.positive_int(max_length, "max_length")
        self.embed = nn.Embedding(VOCAB_SIZE, d_model)
        self.learned = None
        if isinstance(positions, torch.Tensor):
            if tuple(positions.shape) != (max_length, d_model):
                raise ValueError(
                    f"positions must be a (max_length, d_model) = {(max_length, d_model)} table, "
                    f"got {tuple(positions.shape)}"
                )
            self.register_buffer("table", positions.detach().float().clone())
        elif isinstance(positions, str) and positions in POSITIONS:
            self.table = None
            if positions == "learned":
                self.learned = nn.Embedding(max_length, d_model)
        else:
            raise ValueError(
                f"positions must be 'none', 'learned', 'rope' or a tensor, got {positions!r}"
            )
        self.rope = isinstance(positions, str) and positions == "rope"
        self.layers = nn.ModuleList(
            RotaryEncoderLayer(d_model, n_heads, d_ff)
            if self.rope
            else nn.TransformerEncoderLayer(
                d_model, n_heads, d_ff, dropout=0.0, norm_first=True, batch_first=True
            )
            for _ in range(validation.positive_int(n_layers, "n_layers"))
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, VOCAB_SIZE)

    def inputs(self, tokens) -> torch.Tensor:
        """Token embeddings plus position information: tokens (N, L) -> (N, L, d_model)."""
        length = tokens.shape[1]
        if length > self.max_length:
            raise ValueError(f"sequences of length {length} exceed max_length={self.max_length}")
        x = self.embed(tokens)  # (N, L, d_model)
        if self.table is not None:
            x = x + self.table[:length]  # (L, d_model) broadcasts over the batch
        if self.learned is not None:
            x = x + self.learned(torch.arange(length))  # (L, d_model)
        return x

    def forward(self, tokens) -> torch.Tensor:
        """Next-token logits (N, L, VOCAB_SIZE) for tokens (N, L); position i sees tokens <= i."""
        x = self.inputs(tokens)
        forbidden = ~causal_mask(tokens.shape[1])  # (L, L): torch's masks are True = may NOT
        for layer in self.layers:
            x = layer(x, src_mask=forbidden)
        return self.head(self.norm(x))


def attention_weights(model: TinyCausalLM, tokens) -> torch.Tensor:
    """Per-layer, per-head weights (n_layers, N, heads, L, L) of the model on tokens (N, L)."""
    forbidden = ~causal_mask(tokens.shape[1])  # (L, L): True = may NOT attend
    maps = []
    with torch.no_grad():
        x = model.inputs(tokens)
        for layer in model.layers:
            normed = layer.norm1(x)  # the attention of a pre-LN layer reads the normalised x
            if isinstance(layer, RotaryEncoderLayer):
                _, weights = layer.attend(normed, forbidden)
            else:
                _, weights = layer.self_attn(
                    normed, normed, normed, attn_mask=forbidden, average_attn_weights=False
                )
            maps.append(weights)  # (N, heads, L, L)
            x = layer(x, src_mask=forbidden)
    return torch.stack(maps)


def reversal_logits(model, tokens) -> torch.Tensor:
    """Logits (N, length, VOCAB_SIZE) of the predictions of the reversed digits."""
    length = (tokens.shape[1] - 1) // 2
    logits = model(tokens[:, :-1])  # (N, 2 * length, V): position i predicts token i + 1
    return logits[:, length:]  # from the separator on: the reversed digits


def reversal_accuracy(model, tokens) -> tuple[float, float]:
    """(exact-match rate, per-digit accuracy) on the reversed digits, teacher-forced.

    With teacher forcing, a sequence is all right exactly when greedy generation would get it
    all right, so the exact-match rate is that of greedy generation.
    """
    length = (tokens.shape[1] - 1) // 2
    with evaluating(model):
        predicted = reversal_logits(model, tokens).argmax(dim=-1)  # (N, length)
    correct = predicted == tokens[:, length + 1 :]  # (N, length)
    return correct.all(dim=1).float().mean().item(), correct.float().mean().item()


def train_reversal(model, train_tokens, steps=250, batch_size=128, lr=3e-3, seed=0):
    """Train with Adam on minibatches of train_tokens (n, 2L+1); returns (losses, seconds)."""
    steps = validation.positive_int(steps, "steps")
    batch_size = validation.positive_int(batch_size, "batch_size")
    generator = torch.Generator().manual_seed(validation.seed(seed))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    length = (train_tokens.shape[1] - 1) // 2

    def batch_loss():
        batch = train_tokens[torch.randint(len(train_tokens), (batch_size,), generator=generator)]
        logits = reversal_logits(model, batch)  # (B, length, V)
        return loss_fn(logits.reshape(-1, VOCAB_SIZE), batch[:, length + 1 :].reshape(-1))

    return one_cycle_steps(model, batch_loss, optimizer, steps, lr)
