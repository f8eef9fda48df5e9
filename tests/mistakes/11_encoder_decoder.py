"""Typical mistakes in lab 11: each must lose points and show the message that names it."""

from course.coursedir.scratch import Mistake
from course.coursedir.scratch import with_replacements as _with

# Correct solutions; each mistake below changes one part of one of them.
_ATTENTION = '''
import math

import torch
from torch import nn


class Attention(nn.Module):
    """Multi-head attention of queries from x over keys and values from memory."""

    def __init__(self, d_model, n_heads):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}")
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, x, memory, mask=None):
        """x (N, Lq, d_model), memory (N, Lk, d_model) -> (N, Lq, d_model), (N, h, Lq, Lk)."""
        batch, length_q, d_model = x.shape
        length_k = memory.shape[1]
        q = self.w_q(x).view(batch, length_q, self.n_heads, self.d_head).transpose(1, 2)
        k = self.w_k(memory).view(batch, length_k, self.n_heads, self.d_head).transpose(1, 2)
        v = self.w_v(memory).view(batch, length_k, self.n_heads, self.d_head).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (N, h, Lq, Lk)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
            no_key = ~mask.any(dim=-1, keepdim=True)  # (..., Lq, 1): queries with no key
            scores = scores.masked_fill(no_key, 0.0)  # finite, so the softmax makes no NaN
        weights = torch.softmax(scores, dim=-1)  # (N, h, Lq, Lk)
        if mask is not None:
            weights = weights.masked_fill(~mask, 0.0)  # an empty row: all 0
        context = (weights @ v).transpose(1, 2).reshape(batch, length_q, d_model)  # (N, Lq, D)
        return self.w_o(context), weights
'''

_BLOCKS = '''
from torch import nn


class EncoderBlock(nn.Module):
    """Pre-LN encoder block: self-attention over the real source positions, feed-forward."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.self_attention = Attention(d_model, n_heads)
        self.feed_forward = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(),
                                          nn.Linear(d_ff, d_model))

    def forward(self, x, source_mask=None):
        """x (N, Ls, d_model), source_mask (N, Ls) True at real positions -> (N, Ls, d_model)."""
        mask = None if source_mask is None else source_mask[:, None, None, :]  # (N, 1, 1, Ls)
        normed = self.norm1(x)
        x = x + self.self_attention(normed, normed, mask)[0]
        return x + self.feed_forward(self.norm2(x))


class DecoderBlock(nn.Module):
    """Pre-LN decoder block: causal self-attention, cross-attention, feed-forward."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.self_attention = Attention(d_model, n_heads)
        self.cross_attention = Attention(d_model, n_heads)
        self.feed_forward = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(),
                                          nn.Linear(d_ff, d_model))

    def forward(self, y, memory, source_mask=None):
        """y (N, Lt, d_model), memory (N, Ls, d_model) -> (N, Lt, d_model), cross weights."""
        length = y.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool).tril()  # (Lt, Lt)
        normed = self.norm1(y)
        y = y + self.self_attention(normed, normed, causal)[0]
        mask = None if source_mask is None else source_mask[:, None, None, :]  # (N, 1, 1, Ls)
        attended, weights = self.cross_attention(self.norm2(y), memory, mask)
        y = y + attended
        return y + self.feed_forward(self.norm3(y)), weights
'''

_MODEL = '''
import torch
from torch import nn


class EncoderDecoder(nn.Module):
    """The encoder-decoder transformer: n_layers encoder and decoder blocks, a norm after each."""

    def __init__(self, d_model, n_heads, n_layers, d_ff):
        super().__init__()
        self.encoder_blocks = nn.ModuleList(
            EncoderBlock(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.decoder_blocks = nn.ModuleList(
            DecoderBlock(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.encoder_norm = nn.LayerNorm(d_model)
        self.decoder_norm = nn.LayerNorm(d_model)

    def encode(self, x, source_mask=None):
        """The memory (N, Ls, d_model) of the source x (N, Ls, d_model)."""
        for block in self.encoder_blocks:
            x = block(x, source_mask)
        return self.encoder_norm(x)

    def decode(self, y, memory, source_mask=None):
        """The decoder's output (N, Lt, d_model) for y (N, Lt, d_model) over the memory."""
        for block in self.decoder_blocks:
            y, _ = block(y, memory, source_mask)
        return self.decoder_norm(y)

    def forward(self, x, y, source_mask=None):
        """Encode x (N, Ls, d_model), then decode y (N, Lt, d_model): (N, Lt, d_model)."""
        return self.decode(y, self.encode(x, source_mask), source_mask)


class SquaresTransformer(nn.Module):
    """An EncoderDecoder that reads points (N, Ls, n_features) and predicts the next ones."""

    def __init__(self, d_model, n_heads, n_layers, d_ff, n_features=2, max_length=8):
        super().__init__()
        self.core = EncoderDecoder(d_model, n_heads, n_layers, d_ff)
        self.embed_source = nn.Linear(n_features, d_model)
        self.embed_target = nn.Linear(n_features, d_model)
        self.positions = nn.Embedding(max_length, d_model)
        self.start = nn.Parameter(torch.zeros(d_model))
        self.head = nn.Linear(d_model, n_features)

    def forward(self, source, target, source_mask=None):
        """Teacher forcing: predictions (N, Lt, n_features) from the source and target[:, :-1]."""
        batch, length, _ = source.shape
        x = self.embed_source(source) + self.positions.weight[:length]  # (N, Ls, d_model)
        start = self.start.expand(batch, 1, -1)  # (N, 1, d_model)
        y = torch.cat([start, self.embed_target(target[:, :-1])], dim=1)  # (N, Lt, d_model)
        y = y + self.positions.weight[:y.shape[1]]
        return self.head(self.core(x, y, source_mask))  # (N, Lt, n_features)

    def generate(self, source, source_mask=None, n_steps=2):
        """Greedy decoding: n_steps points (N, n_steps, n_features), the encoder run once."""
        batch, length, _ = source.shape
        x = self.embed_source(source) + self.positions.weight[:length]  # (N, Ls, d_model)
        memory = self.core.encode(x, source_mask)  # (N, Ls, d_model): once for every step
        y = self.start.expand(batch, 1, -1)  # (N, 1, d_model): the decoder's input so far
        points = []
        for step in range(n_steps):
            out = self.core.decode(y + self.positions.weight[:step + 1], memory, source_mask)
            point = self.head(out[:, -1:])  # (N, 1, n_features): the newest position's
            points.append(point)
            y = torch.cat([y, self.embed_target(point)], dim=1)  # (N, step + 2, d_model)
        return torch.cat(points, dim=1)  # (N, n_steps, n_features)
'''

_COPY = '''
import torch


def copy_from_torch(model, reference):
    """Copy the weights of nn.Transformer `reference` into the EncoderDecoder `model`."""
    def copy_attention(mine, theirs):
        for linear, weight, bias in zip((mine.w_q, mine.w_k, mine.w_v),
                                        theirs.in_proj_weight.chunk(3),
                                        theirs.in_proj_bias.chunk(3), strict=True):
            linear.weight.copy_(weight)
            linear.bias.copy_(bias)
        mine.w_o.weight.copy_(theirs.out_proj.weight)
        mine.w_o.bias.copy_(theirs.out_proj.bias)

    def copy_module(mine, theirs):
        mine.weight.copy_(theirs.weight)
        mine.bias.copy_(theirs.bias)

    with torch.no_grad():
        for mine, theirs in zip(model.encoder_blocks, reference.encoder.layers, strict=True):
            copy_attention(mine.self_attention, theirs.self_attn)
            copy_module(mine.norm1, theirs.norm1)
            copy_module(mine.norm2, theirs.norm2)
            copy_module(mine.feed_forward[0], theirs.linear1)
            copy_module(mine.feed_forward[2], theirs.linear2)
        for mine, theirs in zip(model.decoder_blocks, reference.decoder.layers, strict=True):
            copy_attention(mine.self_attention, theirs.self_attn)
            copy_attention(mine.cross_attention, theirs.multihead_attn)
            copy_module(mine.norm1, theirs.norm1)
            copy_module(mine.norm2, theirs.norm2)
            copy_module(mine.norm3, theirs.norm3)
            copy_module(mine.feed_forward[0], theirs.linear1)
            copy_module(mine.feed_forward[2], theirs.linear2)
        copy_module(model.encoder_norm, reference.encoder.norm)
        copy_module(model.decoder_norm, reference.decoder.norm)
    return model
'''

_TRAIN = '''
import torch


def train(model, batches, epochs, lr=0.01):
    """AdamW on the teacher-forced MSE of model over batches: the list of the epoch losses."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(epochs):
        total, count = 0.0, 0
        for source, target in batches:
            loss = ((model(source, target) - target) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total, count = total + loss.item() * len(source), count + len(source)
        losses.append(total / count)
    return losses
'''

MISTAKES = [
    Mistake(
        name="attention_mask_inverted",
        cell="attention",
        code=_with(_ATTENTION, 'scores = scores.masked_fill(~mask, float("-inf"))',
                   'scores = scores.masked_fill(mask, float("-inf"))',
                   "weights = weights.masked_fill(~mask, 0.0)",
                   "weights = weights.masked_fill(mask, 0.0)"),
        message="inverted the mask",
    ),
    Mistake(
        name="attention_nan_repaired",
        cell="attention",
        code=_with(_ATTENTION, "scores = scores.masked_fill(no_key, 0.0)",
                   "scores = scores + 0.0 * no_key",
                   "weights = torch.softmax(scores, dim=-1)",
                   "weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)"),
        message="a NaN was created for the source with no real position",
    ),
    Mistake(
        name="attention_scaled_by_d_model",
        cell="attention",
        code=_with(_ATTENTION, "math.sqrt(self.d_head)", "math.sqrt(d_model)"),
        message="scaled the scores by sqrt(d_model)",
    ),
    Mistake(
        name="attention_keys_from_x",
        cell="attention",
        code=_with(_ATTENTION, "k = self.w_k(memory).view(batch, length_k,",
                   "k = self.w_k(x).view(batch, length_q,",
                   "v = self.w_v(memory).view(batch, length_k,",
                   "v = self.w_v(x).view(batch, length_q,"),
        message="did the keys come from x instead of memory?",
    ),
    Mistake(
        name="encoder_causal_mask",
        cell="blocks",
        code=_with(_BLOCKS, "x = x + self.self_attention(normed, normed, mask)[0]",
                   "causal = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()\n"
                   "        mask = causal if mask is None else mask & causal\n"
                   "        x = x + self.self_attention(normed, normed, mask)[0]",
                   "from torch import nn", "import torch\nfrom torch import nn"),
        message="gave the encoder a causal mask",
    ),
    Mistake(
        name="cross_attention_over_own_states",
        cell="blocks",
        code=_with(_BLOCKS, "self.cross_attention(self.norm2(y), memory, mask)",
                   "self.cross_attention(self.norm2(y), self.norm2(y))"),
        message="did the cross-attention read the decoder's own states?",
    ),
    Mistake(
        name="cross_attention_without_source_mask",
        cell="blocks",
        code=_with(_BLOCKS, "self.cross_attention(self.norm2(y), memory, mask)",
                   "self.cross_attention(self.norm2(y), memory)"),
        message="the source mask is missing",
    ),
    Mistake(
        name="decoder_without_causal_mask",
        cell="blocks",
        code=_with(_BLOCKS, "y = y + self.self_attention(normed, normed, causal)[0]",
                   "y = y + self.self_attention(normed, normed)[0]"),
        message="no causal mask in the decoder's self-attention",
    ),
    Mistake(
        name="encoder_recomputed_each_step",
        cell="encoder_decoder",
        code=_with(_MODEL, "out = self.core.decode(y + self.positions.weight[:step + 1], memory,",
                   "out = self.core(x, y + self.positions.weight[:step + 1],"),
        message="it was recomputed at every step",
    ),
    Mistake(
        name="source_mask_only_in_encoder",
        cell="encoder_decoder",
        code=_with(_MODEL, "return self.decode(y, self.encode(x, source_mask), source_mask)",
                   "return self.decode(y, self.encode(x, source_mask))"),
        message="the source mask reached the encoder but not the cross-attention",
    ),
    Mistake(
        name="generate_appends_first_position",
        cell="encoder_decoder",
        code=_with(_MODEL, "self.head(out[:, -1:])", "self.head(out[:, :1])"),
        message="append the head of the LAST position",
    ),
    Mistake(
        name="copy_keys_first",
        cell="copy_from_torch",
        code=_with(_COPY, "zip((mine.w_q, mine.w_k, mine.w_v),",
                   "zip((mine.w_k, mine.w_q, mine.w_v),"),
        message="split in_proj in the order keys, queries, values",
    ),
    Mistake(
        name="copy_without_final_norms",
        cell="copy_from_torch",
        code=_with(_COPY, "        copy_module(model.encoder_norm, reference.encoder.norm)\n"
                   "        copy_module(model.decoder_norm, reference.decoder.norm)\n", ""),
        message="left encoder_norm and decoder_norm as initialised",
    ),
    Mistake(
        name="copy_norms_swapped",
        cell="copy_from_torch",
        code=_with(_COPY, "copy_module(mine.norm2, theirs.norm2)\n"
                   "            copy_module(mine.norm3, theirs.norm3)",
                   "copy_module(mine.norm2, theirs.norm3)\n"
                   "            copy_module(mine.norm3, theirs.norm2)"),
        message="swapped norm2 and norm3 of the decoder blocks",
    ),
    Mistake(
        name="train_without_zero_grad",
        cell="train",
        code=_with(_TRAIN, "            optimizer.zero_grad()\n", ""),
        message="the training loss did not halve",
    ),
    Mistake(
        name="train_loss_per_batch",
        cell="train",
        code=_with(_TRAIN, "        losses.append(total / count)\n", "",
                   "            total, count = total + loss.item() * len(source), "
                   "count + len(source)\n",
                   "            losses.append(loss.item())\n"),
        message="losses for 60 epochs",
    ),
    Mistake(
        name="train_on_reversed_targets",
        cell="train",
        code=_with(_TRAIN, "loss = ((model(source, target) - target) ** 2).mean()",
                   "loss = ((model(source, target.flip(1)) - target) ** 2).mean()"),
        message="is not below lesson 06's",
    ),
]
