"""Typical mistakes in lab 11: each must lose points and show the message that names it."""

from catalogue import Mistake
from catalogue import with_replacements as _with

# Correct solutions; each mistake below changes one part of one of them.
_PARTS = '''
def split_heads(x, n_heads):
    """Split x (N, L, d_model) into n_heads heads: (N, n_heads, L, d_model // n_heads)."""
    batch, length, d_model = x.shape
    return x.view(batch, length, n_heads, d_model // n_heads).transpose(1, 2)


def merge_heads(x):
    """Merge heads x (N, n_heads, L, d_head) into (N, L, n_heads * d_head)."""
    batch, n_heads, length, d_head = x.shape
    return x.transpose(1, 2).reshape(batch, length, n_heads * d_head)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with n_heads heads of size d_model // n_heads."""

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

    def forward(self, query, keys, values, mask=None):
        """query (N, Lq, d_model), keys, values (N, Lk, d_model) -> (N, Lq, d_model), weights."""
        q = split_heads(self.w_q(query), self.n_heads)  # (N, heads, Lq, d_head)
        k = split_heads(self.w_k(keys), self.n_heads)  # (N, heads, Lk, d_head)
        v = split_heads(self.w_v(values), self.n_heads)  # (N, heads, Lk, d_head)
        q = q / math.sqrt(self.head_size)  # scaling the queries scales every score
        scores = q @ k.transpose(-2, -1)  # (N, heads, Lq, Lk)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))  # (N, heads, Lq, Lk)
            no_key = ~mask.any(dim=-1, keepdim=True)  # (..., Lq, 1): queries with no key
            scores = scores.masked_fill(no_key, 0.0)  # finite, so the softmax makes no NaN
        weights = torch.softmax(scores, dim=-1)  # (N, heads, Lq, Lk)
        if mask is not None:
            weights = weights.masked_fill(~mask, 0.0)  # masked: 0, so an empty row is all 0
        weights = self.dropout(weights)  # (N, heads, Lq, Lk)
        context = merge_heads(weights @ v)  # (N, Lq, d_model)
        return self.w_o(context), weights
'''

_BLOCKS = '''
class EncoderBlock(nn.Module):
    """Post-LN encoder block: self-attention over the real source tokens, feed-forward."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.self_attention = MultiHeadAttention(d_model, n_heads)
        self.feed_forward = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(),
                                          nn.Linear(d_ff, d_model))

    def forward(self, x, source_mask):
        """x (N, Ls, d_model), source_mask (N, Ls) True at real tokens -> (N, Ls, d_model)."""
        keys = source_mask[:, None, None, :]  # (N, 1, 1, Ls): every query, the real keys
        x = self.norm1(x + self.self_attention(x, x, x, keys)[0])
        return self.norm2(x + self.feed_forward(x))


class DecoderBlock(nn.Module):
    """Post-LN decoder block: causal self-attention, cross-attention, feed-forward."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.self_attention = MultiHeadAttention(d_model, n_heads)
        self.cross_attention = MultiHeadAttention(d_model, n_heads)
        self.feed_forward = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(),
                                          nn.Linear(d_ff, d_model))

    def forward(self, y, memory, source_mask):
        """y (N, Lt, d_model), memory (N, Ls, d_model) -> (N, Lt, d_model), cross weights."""
        length = y.shape[1]
        causal = torch.ones(length, length, dtype=torch.bool, device=y.device).tril()  # (Lt, Lt)
        y = self.norm1(y + self.self_attention(y, y, y, causal)[0])
        keys = source_mask[:, None, None, :]  # (N, 1, 1, Ls)
        attended, weights = self.cross_attention(y, memory, memory, keys)
        y = self.norm2(y + attended)
        return self.norm3(y + self.feed_forward(y)), weights
'''

_MODEL = '''
class Translator(nn.Module):
    """An encoder-decoder transformer over tokens: logits (N, Lt, n_vocab) of the next token."""

    def __init__(self, n_vocab, d_model, n_heads, n_layers, d_ff, max_length=16):
        super().__init__()
        self.embedding = nn.Embedding(n_vocab, d_model)
        self.positions = nn.Embedding(max_length, d_model)
        self.encoder_blocks = nn.ModuleList(
            EncoderBlock(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.decoder_blocks = nn.ModuleList(
            DecoderBlock(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.encoder_norm = nn.LayerNorm(d_model)
        self.decoder_norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_vocab)

    def encode(self, source, source_mask):
        """The memory (N, Ls, d_model) of the source tokens (N, Ls)."""
        x = self.embedding(source) + self.positions.weight[:source.shape[1]]  # (N, Ls, D)
        for block in self.encoder_blocks:
            x = block(x, source_mask)
        return self.encoder_norm(x)

    def decode(self, tokens, memory, source_mask):
        """Logits (N, Lt, n_vocab) of each next token; cross weights (N, layers, h, Lt, Ls)."""
        y = self.embedding(tokens) + self.positions.weight[:tokens.shape[1]]  # (N, Lt, D)
        weights = []
        for block in self.decoder_blocks:
            y, block_weights = block(y, memory, source_mask)
            weights.append(block_weights)
        return self.head(self.decoder_norm(y)), torch.stack(weights, dim=1)

    def forward(self, source, target):
        """Teacher forcing: the logits (N, Lt, n_vocab) of target, read shifted behind BOS."""
        source_mask = source != PAD  # (N, Ls): True at the real tokens
        start = torch.full_like(target[:, :1], BOS)  # (N, 1)
        shifted = torch.cat([start, target[:, :-1]], dim=1)  # (N, Lt): BOS, then target
        return self.decode(shifted, self.encode(source, source_mask), source_mask)[0]
'''

_LOSS = '''
def sequence_loss(logits, target, smoothing=0.0):
    """Mean label-smoothed cross-entropy of logits (N, Lt, V) over the real tokens of target."""
    log_probs = torch.log_softmax(logits, dim=-1)  # (N, Lt, V)
    right = -log_probs.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (N, Lt)
    spread = -log_probs.mean(dim=-1)  # (N, Lt): the mean over every token of the vocabulary
    per_token = (1.0 - smoothing) * right + smoothing * spread  # (N, Lt)
    real = target != PAD  # (N, Lt)
    return per_token.masked_fill(~real, 0.0).sum() / real.sum()
'''

_GREEDY = '''
def greedy_decode(model, source, max_length):
    """The likeliest token at each step, each row until its EOS: (N, T) tokens, T <= max_length."""
    source_mask = source != PAD  # (N, Ls)
    memory = model.encode(source, source_mask)  # once for every step
    tokens = torch.full((source.shape[0], 1), BOS, dtype=torch.long)  # (N, 1)
    finished = torch.zeros(source.shape[0], dtype=torch.bool)  # (N,)
    for _ in range(max_length):
        logits, _ = model.decode(tokens, memory, source_mask)  # (N, 1 + written, V)
        following = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)  # (N,)
        tokens = torch.cat([tokens, following[:, None]], dim=1)
        finished = finished | (following == EOS)
        if bool(finished.all()):
            break
    return tokens[:, 1:]
'''

_BEAM = '''
def beam_search(model, source, beam_size, max_length):
    """The best of beam_size hypotheses by log-probability per token: tokens (T,), EOS last."""
    source = source[None]  # (1, Ls): a batch of one
    source_mask = source != PAD
    memory = model.encode(source, source_mask)  # (1, Ls, D): once for every step
    beams = torch.full((1, 1), BOS, dtype=torch.long)  # (k, 1 + written): the live hypotheses
    scores = torch.zeros(1, dtype=memory.dtype)  # (k,): their log-probabilities
    finished = []  # (normalised score, tokens after BOS)

    def normalised(tokens, score):  # the log-probability per token after BOS, the tokens
        return float(score) / (len(tokens) - 1), tokens[1:]

    for _ in range(max_length):
        k = beams.shape[0]
        logits, _ = model.decode(beams, memory.expand(k, *memory.shape[1:]),
                                 source_mask.expand(k, -1))  # (k, 1 + written, V)
        log_probs = torch.log_softmax(logits[:, -1], dim=-1)  # (k, V)
        candidates = (scores[:, None] + log_probs).flatten()  # (k * V,)
        best = candidates.topk(min(beam_size, candidates.numel())).indices
        n_vocab = log_probs.shape[-1]
        beams = torch.cat([beams[best // n_vocab], (best % n_vocab)[:, None]], dim=1)
        scores = candidates[best]
        ended = beams[:, -1] == EOS
        finished += [normalised(*found) for found in zip(beams[ended], scores[ended], strict=True)]
        beams, scores = beams[~ended], scores[~ended]
        if len(beams) == 0:
            break
    finished += [normalised(*found) for found in zip(beams, scores, strict=True)]  # still live
    return max(finished, key=lambda found: found[0])[1]
'''

_TRAIN = '''
def train(model, batches, epochs, lr=0.01, smoothing=0.1):
    """AdamW on sequence_loss of the teacher-forced logits: the list of the epoch losses."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(epochs):
        total, tokens = 0.0, 0
        for source, target in batches:
            loss = sequence_loss(model(source, target), target, smoothing)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            real = int((target != PAD).sum())
            total, tokens = total + loss.item() * real, tokens + real
        losses.append(total / tokens)
    return losses
'''

# The catalogue's correct answers, by cell: each gets every point (tests/lessons/test_autograde.py).
BASES = {
    "lab_07_parts": _PARTS,
    "blocks": _BLOCKS,
    "translator": _MODEL,
    "sequence_loss": _LOSS,
    "greedy_decode": _GREEDY,
    "beam_search": _BEAM,
    "train": _TRAIN,
}

MISTAKES = [
    Mistake(
        name="parts_without_scaling",
        cell="lab_07_parts",
        code=_with(_PARTS, "        q = q / math.sqrt(self.head_size)  # scaling the queries "
                   "scales every score\n", ""),
        message="left out the 1/sqrt(d_head) scaling of the scores",
    ),
    Mistake(
        name="parts_mask_inverted",
        cell="lab_07_parts",
        code=_with(_PARTS, 'scores = scores.masked_fill(~mask, float("-inf"))',
                   'scores = scores.masked_fill(mask, float("-inf"))',
                   "weights = weights.masked_fill(~mask, 0.0)",
                   "weights = weights.masked_fill(mask, 0.0)"),
        message="inverted the mask",
    ),
    Mistake(
        name="parts_nan_repaired",
        cell="lab_07_parts",
        code=_with(_PARTS, "scores = scores.masked_fill(no_key, 0.0)",
                   "scores = scores + 0.0 * no_key",
                   "weights = torch.softmax(scores, dim=-1)",
                   "weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)"),
        message="a NaN was created for the source with no real position",
    ),
    Mistake(
        name="encoder_causal_mask",
        cell="blocks",
        code=_with(_BLOCKS, "keys = source_mask[:, None, None, :]  # (N, 1, 1, Ls): every query, "
                   "the real keys",
                   "length = x.shape[1]\n"
                   "        causal = torch.ones(length, length, dtype=torch.bool).tril()\n"
                   "        keys = source_mask[:, None, None, :] & causal"),
        message="gave the encoder a causal mask",
    ),
    Mistake(
        name="encoder_reads_padding",
        cell="blocks",
        code=_with(_BLOCKS, "x = self.norm1(x + self.self_attention(x, x, x, keys)[0])",
                   "x = self.norm1(x + self.self_attention(x, x, x)[0])"),
        message="let the encoder read the source's padding",
    ),
    Mistake(
        name="encoder_pre_ln",
        cell="blocks",
        code=_with(_BLOCKS, "x = self.norm1(x + self.self_attention(x, x, x, keys)[0])\n"
                   "        return self.norm2(x + self.feed_forward(x))",
                   "normed = self.norm1(x)\n"
                   "        x = x + self.self_attention(normed, normed, normed, keys)[0]\n"
                   "        return x + self.feed_forward(self.norm2(x))"),
        message="wrote pre-LN blocks",
    ),
    Mistake(
        name="cross_attention_over_own_states",
        cell="blocks",
        code=_with(_BLOCKS, "self.cross_attention(y, memory, memory, keys)",
                   "self.cross_attention(y, y, y)"),
        message="did the cross-attention read the decoder's own states?",
    ),
    Mistake(
        name="cross_attention_without_source_mask",
        cell="blocks",
        code=_with(_BLOCKS, "self.cross_attention(y, memory, memory, keys)",
                   "self.cross_attention(y, memory, memory)"),
        message="the source mask is missing",
    ),
    Mistake(
        name="decoder_without_causal_mask",
        cell="blocks",
        code=_with(_BLOCKS, "y = self.norm1(y + self.self_attention(y, y, y, causal)[0])",
                   "y = self.norm1(y + self.self_attention(y, y, y)[0])"),
        message="no causal mask in the decoder's self-attention",
    ),
    Mistake(
        name="decoder_reads_the_target_unshifted",
        cell="translator",
        code=_with(_MODEL, "return self.decode(shifted, self.encode(source, source_mask), "
                   "source_mask)",
                   "return self.decode(target, self.encode(source, source_mask), source_mask)"),
        message="fed the decoder the target itself",
    ),
    Mistake(
        name="decoder_input_shifted_left",
        cell="translator",
        code=_with(_MODEL, "shifted = torch.cat([start, target[:, :-1]], dim=1)",
                   "shifted = torch.cat([target[:, 1:], torch.zeros_like(start)], dim=1)"),
        message="shifted the target left",
    ),
    Mistake(
        name="decoder_input_starts_with_pad",
        cell="translator",
        code=_with(_MODEL, "start = torch.full_like(target[:, :1], BOS)",
                   "start = torch.full_like(target[:, :1], PAD)"),
        message="started the decoder's input with PAD",
    ),
    Mistake(
        name="source_mask_only_in_encoder",
        cell="translator",
        code=_with(_MODEL, "return self.decode(shifted, self.encode(source, source_mask), "
                   "source_mask)",
                   "return self.decode(shifted, self.encode(source, source_mask), "
                   "torch.ones_like(source_mask))"),
        message="the source mask reached the encoder but not the cross-attention",
    ),
    Mistake(
        name="loss_counts_padding",
        cell="sequence_loss",
        code=_with(_LOSS, "return per_token.masked_fill(~real, 0.0).sum() / real.sum()",
                   "return per_token.mean()"),
        message="counted the padding as tokens to predict",
    ),
    Mistake(
        name="loss_smoothing_over_wrong_tokens",
        cell="sequence_loss",
        code=_with(_LOSS, "spread = -log_probs.mean(dim=-1)",
                   "spread = -(log_probs.sum(dim=-1) + right) / (log_probs.shape[-1] - 1)"),
        message="spread smoothing over the V - 1 wrong tokens only",
    ),
    Mistake(
        name="loss_mean_of_sequence_means",
        cell="sequence_loss",
        code=_with(_LOSS, "return per_token.masked_fill(~real, 0.0).sum() / real.sum()",
                   "return (per_token.masked_fill(~real, 0.0).sum(1) / real.sum(1)).mean()"),
        message="took the mean of each sequence's mean",
    ),
    Mistake(
        name="greedy_encodes_every_step",
        cell="greedy_decode",
        code=_with(_GREEDY, "logits, _ = model.decode(tokens, memory, source_mask)",
                   "logits, _ = model.decode(tokens, model.encode(source, source_mask), "
                   "source_mask)"),
        message="the encoder ran 4 times while decoding",
    ),
    Mistake(
        name="greedy_rows_go_on_after_eos",
        cell="greedy_decode",
        code=_with(_GREEDY, "following = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)",
                   "following = logits[:, -1].argmax(dim=-1)"),
        message="a row went on writing after its EOS",
    ),
    Mistake(
        name="greedy_runs_to_max_length",
        cell="greedy_decode",
        code=_with(_GREEDY, "        if bool(finished.all()):\n            break\n", ""),
        message="whose translations end after 3, 1 and 2 tokens",
    ),
    Mistake(
        name="beam_without_length_normalisation",
        cell="beam_search",
        code=_with(_BEAM, "return float(score) / (len(tokens) - 1), tokens[1:]",
                   "return float(score), tokens[1:]"),
        message="without dividing each by its number of tokens",
    ),
    Mistake(
        name="beam_ranks_by_the_last_token",
        cell="beam_search",
        code=_with(_BEAM, "candidates = (scores[:, None] + log_probs).flatten()",
                   "candidates = log_probs.flatten()"),
        message="ranked the candidates by the new token's log-probability alone",
    ),
    Mistake(
        name="beam_encodes_every_step",
        cell="beam_search",
        code=_with(_BEAM, "        k = beams.shape[0]\n",
                   "        k = beams.shape[0]\n"
                   "        memory = model.encode(source, source_mask)\n"),
        message="the encoder ran 9 times during the search",
    ),
    Mistake(
        name="train_unweighted_epoch_mean",
        cell="train",
        code=_with(_TRAIN, "total, tokens = total + loss.item() * real, tokens + real",
                   "total, tokens = total + loss.item(), tokens + 1"),
        message="the epoch losses of train on a stand-in model",
    ),
    Mistake(
        name="train_ignores_smoothing",
        cell="train",
        code=_with(_TRAIN, "loss = sequence_loss(model(source, target), target, smoothing)",
                   "loss = sequence_loss(model(source, target), target)"),
        message="the epoch losses of train on a stand-in model",
    ),
    Mistake(
        name="train_without_training_mode",
        cell="train",
        code=_with(_TRAIN, "    model.train()\n", ""),
        message="without putting it in training mode",
    ),
    Mistake(
        name="train_loss_per_batch",
        cell="train",
        code=_with(_TRAIN, "        losses.append(total / tokens)\n", "",
                   "            total, tokens = total + loss.item() * real, tokens + real\n",
                   "            losses.append(loss.item())\n"),
        message="losses for 10 epochs",
    ),
]
