"""Lesson 11's encoder-decoder transformer for lesson 06's noisy squares, and its trainer.

The encoder is a stack of pre-LN blocks (08) without a causal mask, over the source points under
their padding mask. Each decoder block has three sublayers: causal self-attention over the
target points so far, cross-attention whose queries come from the decoder and whose keys and
values come from the encoder's output (under the source's padding mask), and the feed-forward
network. Both stacks end with a LayerNorm, as `torch.nn.Transformer`'s do whatever its `norm_first`;
`to_torch` copies a model's weights into one. Training feeds the true target points (teacher
forcing, one pass under the causal mask); evaluation decodes autoregressively, feeding each
predicted point back in, with the encoder run once and each cross-attention's keys and values
computed once. `forced_and_free_mse` measures both ways per target (exposure bias), and
`moved_squares` is a variant of the squares whose first target needs three source points, for
`Seq2SeqTransformer(encoder_attention=False)`.

Masks mean True = may attend; a query whose keys are all masked gets all-zero weights and no NaN
(`utils.transformer.masked_softmax`). Models return their weights instead of storing them.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from utils import validation
from utils.data import Batches, make_squares, squares_tensors
from utils.gpt import masked_attention
from utils.recipe import (
    RECIPE,
    TrainingRecipe,
    seq2seq_forward,
    squares_batches,
    validation_batches,
)
from utils.seq2seq import N_FEATURES, Encoder, last_step
from utils.training import History, fit, loader_loss, seeded
from utils.transformer import causal_mask, masked_softmax

MAX_LENGTH = 8  # positions of the learned position table: sources and targets are shorter


def check_inputs(source, target=None, mask=None) -> None:
    """Raise ValueError unless source (N, Lk, 2), target (N, Lq, 2), mask (N, 1, Lk) bool fit."""
    if not isinstance(source, torch.Tensor) or source.dim() != 3 or source.shape[-1] != N_FEATURES:
        shape = tuple(source.shape) if isinstance(source, torch.Tensor) else type(source).__name__
        raise ValueError(f"source must be a float tensor (N, Lk, {N_FEATURES}), got {shape}")
    n, length = source.shape[:2]
    if target is not None and (not isinstance(target, torch.Tensor) or target.dim() != 3
                               or target.shape[0] != n or target.shape[-1] != N_FEATURES):
        shape = tuple(target.shape) if isinstance(target, torch.Tensor) else type(target).__name__
        raise ValueError(f"target must be a float tensor ({n}, Lq, {N_FEATURES}), got {shape}")
    if mask is not None and (not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool
                             or tuple(mask.shape) != (n, 1, length)):
        got = (f"{mask.dtype} {tuple(mask.shape)}" if isinstance(mask, torch.Tensor)
               else type(mask).__name__)
        raise ValueError(f"mask must be a bool tensor ({n}, 1, {length}), True = a real source "
                         f"point (utils.seq2seq.source_mask), got {got}")


class AttentionSublayer(nn.Module):
    """Multi-head attention of queries from x over keys and values from memory (or from x)."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        d_model = validation.positive_int(d_model, "d_model")
        self.n_heads = validation.positive_int(n_heads, "n_heads")
        if d_model % self.n_heads:
            raise ValueError(f"d_model={d_model} must be a multiple of n_heads={n_heads}")
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def heads(self, x) -> torch.Tensor:
        """(N, L, d_model) -> (N, n_heads, L, d_head)."""
        return x.unflatten(-1, (self.n_heads, -1)).transpose(1, 2)  # (N, n_heads, L, d_head)

    def keys_values(self, memory) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values (N, n_heads, Lk, d_head) of memory (N, Lk, d_model)."""
        return self.heads(self.w_k(memory)), self.heads(self.w_v(memory))

    def forward(self, x, memory=None, allowed=None, keys_values=None):
        """x (N, Lq, d_model) -> (N, Lq, d_model), weights (N, n_heads, Lq, Lk).

        Keys and values come from `keys_values` if given, else from memory, else from x (self-
        attention); `allowed` broadcasts to (N, n_heads, Lq, Lk), True = may attend.
        """
        if keys_values is None:
            keys_values = self.keys_values(x if memory is None else memory)
        keys, values = keys_values
        if allowed is None:
            allowed = torch.ones(x.shape[1], keys.shape[2], dtype=torch.bool)  # (Lq, Lk)
        context, weights = masked_attention(self.heads(self.w_q(x)), keys, values, allowed)
        merged = context.transpose(1, 2).flatten(2)  # (N, Lq, d_model)
        return self.w_o(merged), weights


def feed_forward(d_model, d_ff) -> nn.Sequential:
    """The position-wise network d_model -> d_ff -> d_model with a ReLU (nn.Transformer's)."""
    return nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))


class EncoderLayer(nn.Module):
    """Pre-LN block without a causal mask: x + attention(LN(x)), then x + FF(LN(x))."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int):
        super().__init__()
        self.norm1, self.norm2 = (nn.LayerNorm(d_model) for _ in range(2))
        self.attention = AttentionSublayer(d_model, n_heads)
        self.feed_forward = feed_forward(d_model, d_ff)

    def forward(self, x, allowed=None):
        """x (N, Lk, d_model), allowed (N, 1, 1, Lk) -> (N, Lk, d_model), weights (N, h, Lk, Lk)."""
        attended, weights = self.attention(self.norm1(x), allowed=allowed)
        x = x + attended
        return x + self.feed_forward(self.norm2(x)), weights


class DecoderLayer(nn.Module):
    """Pre-LN decoder block: causal self-attention, cross-attention to the encoder, then FF."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int):
        super().__init__()
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))
        self.self_attention = AttentionSublayer(d_model, n_heads)
        self.cross_attention = AttentionSublayer(d_model, n_heads)
        self.feed_forward = feed_forward(d_model, d_ff)

    def forward(self, y, memory, source_allowed=None, target_allowed=None, memory_kv=None):
        """y (N, Lq, d_model), memory (N, Lk, d_model) -> (N, Lq, d_model), (self, cross) weights.

        source_allowed (N, 1, 1, Lk) hides the source's padding from the cross-attention,
        target_allowed (Lq, Lq) is the causal mask; memory_kv, if given, are the cross-attention's
        keys and values of memory, computed once for a whole decoding.
        """
        attended, self_weights = self.self_attention(self.norm1(y), allowed=target_allowed)
        y = y + attended
        read, cross_weights = self.cross_attention(self.norm2(y), memory, source_allowed, memory_kv)
        y = y + read  # queries from the decoder, keys and values from the encoder
        return y + self.feed_forward(self.norm3(y)), (self_weights, cross_weights)


class EncoderStack(nn.Module):
    """n_layers encoder blocks, then a final LayerNorm: the encoder's output, the memory."""

    def __init__(self, d_model, n_heads, d_ff, n_layers):
        super().__init__()
        n_layers = validation.positive_int(n_layers, "n_layers")
        self.blocks = nn.ModuleList(EncoderLayer(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, allowed=None):
        """x (N, Lk, d_model) -> memory (N, Lk, d_model), [weights (N, h, Lk, Lk) per block]."""
        maps = []
        for block in self.blocks:
            x, weights = block(x, allowed)
            maps.append(weights)
        return self.norm(x), maps


class DecoderStack(nn.Module):
    """n_layers decoder blocks, then a final LayerNorm."""

    def __init__(self, d_model, n_heads, d_ff, n_layers):
        super().__init__()
        n_layers = validation.positive_int(n_layers, "n_layers")
        self.blocks = nn.ModuleList(DecoderLayer(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)

    def forward(self, y, memory, source_allowed=None, target_allowed=None, memory_kvs=None):
        """y (N, Lq, d_model) -> (N, Lq, d_model), [(self, cross) weights per block]."""
        maps = []
        for n, block in enumerate(self.blocks):
            kv = None if memory_kvs is None else memory_kvs[n]
            y, weights = block(y, memory, source_allowed, target_allowed, kv)
            maps.append(weights)
        return self.norm(y), maps


class Seq2SeqTransformer(nn.Module):
    """The encoder-decoder transformer on 2-D points: (source, target, mask) -> predictions.

    Points enter through a linear layer plus a learned position, and leave through a linear
    layer. The decoder starts from the last real source point, as lesson 06's does. With
    `padding_mask=False` attention ignores the source's padding mask, with `causal=False` the
    decoder's self-attention sees later target points too, and with `encoder_attention=False`
    each source point's encoder self-attention reads that point alone, so that each memory vector
    holds one point (all three to measure what they do).
    """

    def __init__(self, d_model=16, n_heads=2, d_ff=32, n_layers=1, target_len=2,
                 causal=True, padding_mask=True, encoder_attention=True):
        super().__init__()
        self.d_model = validation.positive_int(d_model, "d_model")
        self.target_len = validation.positive_int(target_len, "target_len")
        self.causal = validation.boolean(causal, "causal")
        self.padding_mask = validation.boolean(padding_mask, "padding_mask")
        self.encoder_attention = validation.boolean(encoder_attention, "encoder_attention")
        self.source_in = nn.Linear(N_FEATURES, d_model)
        self.target_in = nn.Linear(N_FEATURES, d_model)
        self.positions = nn.Embedding(MAX_LENGTH, d_model)
        self.encoder = EncoderStack(d_model, n_heads, d_ff, n_layers)
        self.decoder = DecoderStack(d_model, n_heads, d_ff, n_layers)
        self.output = nn.Linear(d_model, N_FEATURES)

    def embed(self, points, layer) -> torch.Tensor:
        """Points (N, L, 2) -> layer(points) + position (N, L, d_model)."""
        if points.shape[1] > MAX_LENGTH:
            raise ValueError(f"sequences must hold at most {MAX_LENGTH} points, got "
                             f"{points.shape[1]}")
        return layer(points) + self.positions.weight[: points.shape[1]]  # (N, L, d_model)

    def source_allowed(self, mask):
        """The attention mask (N, 1, 1, Lk) of the source points, or None without padding mask."""
        return mask[:, None] if mask is not None and self.padding_mask else None

    def encoder_allowed(self, mask, length):
        """The encoder's self-attention mask (N, 1, 1, Lk), (N, 1, Lk, Lk) or (Lk, Lk), or None.

        The source's padding mask; without encoder_attention, each point may attend to itself only.
        """
        allowed = self.source_allowed(mask)
        if self.encoder_attention:
            return allowed
        itself = torch.eye(length, dtype=torch.bool)  # (Lk, Lk)
        return itself if allowed is None else allowed & itself

    def target_allowed(self, length):
        """The decoder's self-attention mask (Lq, Lq): causal, or all True if not self.causal."""
        allowed = causal_mask(length)  # (Lq, Lq)
        return allowed if self.causal else torch.ones_like(allowed)

    def encode(self, source, mask=None):
        """Source (N, Lk, 2), mask (N, 1, Lk) -> memory (N, Lk, d_model), [encoder weights]."""
        allowed = self.encoder_allowed(mask, source.shape[1])
        return self.encoder(self.embed(source, self.source_in), allowed)

    def decode(self, inputs, memory, mask=None, memory_kvs=None):
        """Decoder inputs (N, Lq, 2) -> predictions (N, Lq, 2), [(self, cross) weights]."""
        y = self.embed(inputs, self.target_in)  # (N, Lq, d_model)
        target_allowed = self.target_allowed(inputs.shape[1])
        y, maps = self.decoder(y, memory, self.source_allowed(mask), target_allowed, memory_kvs)
        return self.output(y), maps

    def body(self, x, y, mask=None):
        """Embedded source x (N, Lk, d_model) and targets y (N, Lq, d_model) -> (N, Lq, d_model).

        The part of the model that `torch.nn.Transformer` computes (`to_torch`).
        """
        source_allowed = self.source_allowed(mask)  # (N, 1, 1, Lk) or None
        memory, _ = self.encoder(x, self.encoder_allowed(mask, x.shape[1]))
        return self.decoder(y, memory, source_allowed, self.target_allowed(y.shape[1]))[0]

    def run(self, source, target, mask=None):
        """Teacher forcing: predictions (N, Lq, 2) and every map, in one pass under the masks."""
        check_inputs(source, target, mask)
        start = last_step(source, mask)  # (N, 1, 2): the last real source point
        inputs = torch.cat([start, target[:, :-1]], dim=1)  # (N, Lq, 2): the true points so far
        memory, encoder_maps = self.encode(source, mask)
        predictions, decoder_maps = self.decode(inputs, memory, mask)
        return predictions, {"encoder": encoder_maps, "decoder": decoder_maps}

    def generate(self, source, mask=None, cache=True):
        """Decoding: predictions (N, target_len, 2), cross weights (N, h, target_len, Lk).

        Each step feeds the predictions so far back in. With cache, the encoder runs once and
        each cross-attention's keys and values are computed once; without it, every step runs
        the encoder and computes them again (the same numbers, more work).
        """
        check_inputs(source, None, mask)
        inputs = last_step(source, mask)  # (N, 1, 2)
        memory = kvs = None
        steps, rows = [], []
        for _ in range(self.target_len):
            if memory is None or not cache:
                memory, _ = self.encode(source, mask)
                kvs = [block.cross_attention.keys_values(memory) for block in self.decoder.blocks]
            predictions, maps = self.decode(inputs, memory, mask, kvs)  # (N, step + 1, 2)
            steps.append(predictions[:, -1:])  # (N, 1, 2): the newest point
            rows.append(maps[-1][1][:, :, -1:])  # (N, h, 1, Lk): its cross weights
            inputs = torch.cat([inputs, steps[-1]], dim=1)
        return torch.cat(steps, dim=1), torch.cat(rows, dim=2)

    def forward(self, source, target=None, mask=None):
        """(N, Lq, 2) predictions, cross weights (N, h, Lq, Lk) of the last block.

        In training mode with a target, teacher forcing; otherwise autoregressive decoding.
        """
        if target is not None and self.training:
            predictions, maps = self.run(source, target, mask)
            return predictions, maps["decoder"][-1][1]
        return self.generate(source, mask)


def _copy_attention(theirs: nn.MultiheadAttention, ours: AttentionSublayer) -> None:
    """Copy our w_q, w_k, w_v, w_o into a torch MultiheadAttention."""
    theirs.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
    theirs.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
    theirs.out_proj.weight.copy_(ours.w_o.weight)
    theirs.out_proj.bias.copy_(ours.w_o.bias)


def _copy_feed_forward(theirs, ours: nn.Sequential) -> None:
    """Copy our feed-forward network into a torch layer's linear1 and linear2."""
    theirs.linear1.load_state_dict(ours[0].state_dict())
    theirs.linear2.load_state_dict(ours[2].state_dict())


def to_torch(model: Seq2SeqTransformer) -> nn.Transformer:
    """An nn.Transformer(norm_first=True, batch_first=True) with model's weights, in eval mode."""
    if not isinstance(model, Seq2SeqTransformer):
        raise ValueError(f"model must be a Seq2SeqTransformer, got {type(model).__name__}")
    first = model.encoder.blocks[0]
    with warnings.catch_warnings():  # torch's note that a pre-LN encoder uses no nested tensors
        warnings.filterwarnings("ignore", message="enable_nested_tensor")
        reference = nn.Transformer(
            model.d_model, first.attention.n_heads, len(model.encoder.blocks),
            len(model.decoder.blocks), first.feed_forward[0].out_features, dropout=0.0,
            batch_first=True, norm_first=True,
        )
    with torch.no_grad():
        for theirs, ours in zip(reference.encoder.layers, model.encoder.blocks, strict=True):
            _copy_attention(theirs.self_attn, ours.attention)
            _copy_feed_forward(theirs, ours.feed_forward)
            theirs.norm1.load_state_dict(ours.norm1.state_dict())
            theirs.norm2.load_state_dict(ours.norm2.state_dict())
        for theirs, ours in zip(reference.decoder.layers, model.decoder.blocks, strict=True):
            _copy_attention(theirs.self_attn, ours.self_attention)
            _copy_attention(theirs.multihead_attn, ours.cross_attention)
            _copy_feed_forward(theirs, ours.feed_forward)
            for norm in ("norm1", "norm2", "norm3"):
                getattr(theirs, norm).load_state_dict(getattr(ours, norm).state_dict())
        reference.encoder.norm.load_state_dict(model.encoder.norm.state_dict())
        reference.decoder.norm.load_state_dict(model.decoder.norm.state_dict())
    return reference.eval()


def torch_body(reference: nn.Transformer, x, y, mask=None, causal=True) -> torch.Tensor:
    """reference(x, y) under our masks, turned into torch's (True = may NOT attend)."""
    hidden = None if mask is None else ~mask[:, 0]  # (N, Lk): True at padding
    target_hidden = ~causal_mask(y.shape[1]) if causal else None  # (Lq, Lq): True above diagonal
    with torch.enable_grad():  # the slow path, which keeps every position (no nested tensors)
        return reference(x, y, tgt_mask=target_hidden, src_key_padding_mask=hidden,
                         memory_key_padding_mask=hidden).detach()


class Lesson06Attention(nn.Module):
    """Lecture 06's GRU encoder-decoder with a bilinear score q . (W k), in Luong's order."""

    def __init__(self, hidden_dim=RECIPE.hidden_dim, target_len=2,
                 teacher_forcing=RECIPE.teacher_forcing):
        super().__init__()
        self.encoder = Encoder(N_FEATURES, hidden_dim)
        self.cell = nn.GRUCell(N_FEATURES, hidden_dim)
        self.score = nn.Linear(hidden_dim, hidden_dim, bias=False)  # W in q . (W k)
        self.output = nn.Linear(2 * hidden_dim, N_FEATURES)
        self.target_len = validation.positive_int(target_len, "target_len")
        self.teacher_forcing = validation.probability(teacher_forcing, "teacher_forcing")

    def forward(self, source, target=None, mask=None):
        """Source (N, Lk, 2) -> predictions (N, Lq, 2), weights (N, Lq, Lk)."""
        check_inputs(source, target, mask)
        states, state = self.encoder(source, mask)  # (N, Lk, H), (N, H)
        keys = self.score(states).transpose(1, 2)  # (N, H, Lk): W k, unscaled as in lecture 06
        allowed = torch.ones_like(states[:, None, :, 0], dtype=torch.bool) if mask is None else mask
        point = last_step(source, mask)  # (N, 1, 2)
        forcing = self.training and target is not None
        outputs, maps = [], []
        for step in range(self.target_len):  # lecture 06's loop, feeding points back
            state = self.cell(point[:, 0], state)  # (N, H)
            weights = masked_softmax(state[:, None] @ keys, allowed)  # (N, 1, Lk)
            context = weights @ states  # (N, 1, H)
            outputs.append(self.output(torch.cat([context, state[:, None]], dim=-1)))
            maps.append(weights)  # (N, 1, Lk)
            forced = forcing and torch.rand(()).item() < self.teacher_forcing
            point = target[:, step:step + 1] if forced else outputs[-1]  # (N, 1, 2)
        return torch.cat(outputs, dim=1), torch.cat(maps, dim=1)


@dataclass
class SquaresRun:
    """A trained model, its loss history, its validation MSE and its training time in seconds."""

    model: nn.Module
    history: History
    val_mse: float
    seconds: float


def squares_mse(model, split="val", recipe: TrainingRecipe = RECIPE, variable_length=False):
    """MSE of model (autoregressive decoding) on the recipe's validation or test squares."""
    if split not in ("val", "test"):
        raise ValueError(f"split must be 'val' or 'test', got {split!r}")
    batches = (validation_batches(recipe, variable_length) if split == "val"
               else squares_batches(recipe, variable_length)[1])
    return loader_loss(model, batches, forward=seq2seq_forward)


def train_squares(build: Callable[[], nn.Module], recipe: TrainingRecipe = RECIPE, seed=0,
                  variable_length=False, lr=None) -> SquaresRun:
    """Build a model under seed, train it with the recipe (lr if given), measure it on val.

    The data, splits, batches, epochs and seeds are lesson 06's (`utils.recipe`); the test
    squares are left alone (`squares_mse(model, "test")` measures them, once).
    """
    variable_length = validation.boolean(variable_length, "variable_length")
    train_batches, _ = squares_batches(recipe, variable_length)
    val_batches = validation_batches(recipe, variable_length)
    return _train_run(build, train_batches, val_batches, recipe, seed, lr)


def _train_run(build, train_batches, val_batches, recipe, seed, lr=None) -> SquaresRun:
    """Build a model under seed, fit it for the recipe's epochs, measure its MSE on val_batches."""
    if isinstance(build, nn.Module) or not callable(build):
        raise ValueError(f"build must be a function that returns a fresh model, got {build!r}")
    seed = validation.seed(seed)
    lr = recipe.lr if lr is None else validation.positive_number(lr, "lr")
    with seeded(seed):
        model = build()
    validation.module(model)
    start = time.perf_counter()
    history = fit(model, train_batches, epochs=recipe.epochs, lr=lr, seed=seed,
                  forward=seq2seq_forward)
    seconds = time.perf_counter() - start
    return SquaresRun(model, history, loader_loss(model, val_batches, forward=seq2seq_forward),
                      seconds)


def forced_and_free_mse(model, source, target, mask=None) -> tuple[torch.Tensor, torch.Tensor]:
    """MSE per target position (Lq,), fed the true points so far and fed its own predictions.

    The first is teacher forcing, as in training; the second is autoregressive decoding, as at
    test time. Works for Seq2SeqTransformer and Lesson06Attention, whose RNG it leaves alone.
    """
    validation.module(model)
    check_inputs(source, target, mask)
    was_training = model.training
    with torch.no_grad(), torch.random.fork_rng():
        if isinstance(model, Lesson06Attention):
            forcing, model.teacher_forcing = model.teacher_forcing, 1.0
            forced = model.train()(source, target, mask)[0]
            model.teacher_forcing = forcing
        else:
            forced = model.run(source, target, mask)[0]
        free = model.eval()(source, mask=mask)[0]
    model.train(was_training)
    return (((forced - target) ** 2).mean(dim=(0, 2)), ((free - target) ** 2).mean(dim=(0, 2)))


def moved_squares(n, seed, noise=RECIPE.noise) -> tuple[torch.Tensor, torch.Tensor]:
    """Squares moved off the origin: source (n, 3, 2) corners 1-3, target (n, 2, 2) corners 4, 1.

    Each square of lesson 06 is shifted by its own centre, uniform in [-1, 1]^2, so that corner 4
    is corner 1 - corner 2 + corner 3: the first target needs three source points, not one.
    """
    squares = make_squares(validation.positive_int(n, "n"), validation.seed(seed), noise=0.0)
    corners = torch.cat(squares_tensors(squares)[:2], dim=1)  # (n, 4, 2): exact corners 1-4
    draws = torch.Generator().manual_seed(seed)  # the centres, then the noise
    centres = 2 * torch.rand(n, 1, 2, generator=draws) - 1  # (n, 1, 2)
    path = centres + corners[:, [0, 1, 2, 3, 0]]  # (n, 5, 2): corners 1-4, then 1 again
    path = path + validation.non_negative_number(noise, "noise") * torch.randn(
        path.shape, generator=draws)
    return path[:, :3], path[:, 3:]


def train_moved_squares(build: Callable[[], nn.Module], recipe: TrainingRecipe = RECIPE,
                        seed=0) -> SquaresRun:
    """Build a model under seed, train it on moved squares with the recipe, measure it on val.

    The recipe's sizes, seeds, batches, epochs and learning rate, on `moved_squares` instead.
    """
    train = moved_squares(recipe.n_train, recipe.train_seed, recipe.noise)
    val = moved_squares(recipe.n_val, recipe.val_seed, recipe.noise)
    train_batches = Batches(train, recipe.batch_size, shuffle=True, seed=recipe.train_seed)
    return _train_run(build, train_batches, Batches(val, recipe.n_val), recipe, seed)
