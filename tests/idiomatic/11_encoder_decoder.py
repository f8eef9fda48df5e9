"""Correct answers to lab 11 in other styles: each must get every point and have no finding."""

from catalogue import Variant

VARIANTS = [
    Variant(
        name="blocks_with_a_shared_sublayer_helper",
        cell="blocks",
        code='''
def feed_forward(d_model, d_ff):
    """The position-wise feed-forward part of a block."""
    return nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))


class EncoderBlock(nn.Module):
    """Post-LN encoder block."""

    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.self_attention = MultiHeadAttention(d_model, n_heads)
        self.feed_forward = feed_forward(d_model, d_ff)

    def forward(self, x, source_mask):
        attended, _ = self.self_attention(x, x, x, mask=source_mask.unsqueeze(1).unsqueeze(2))
        x = self.norm1(attended + x)
        return self.norm2(self.feed_forward(x) + x)


class DecoderBlock(nn.Module):
    """Post-LN decoder block."""

    def __init__(self, d_model, n_heads, d_ff):
        super().__init__()
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))
        self.self_attention = MultiHeadAttention(d_model, n_heads)
        self.cross_attention = MultiHeadAttention(d_model, n_heads)
        self.feed_forward = feed_forward(d_model, d_ff)

    def forward(self, y, memory, source_mask):
        steps = torch.arange(y.shape[1])
        y = self.norm1(y + self.self_attention(y, y, y, mask=steps[None, :] <= steps[:, None])[0])
        context, weights = self.cross_attention(y, memory, memory,
                                                mask=source_mask.unsqueeze(1).unsqueeze(2))
        y = self.norm2(y + context)
        return self.norm3(y + self.feed_forward(y)), weights
''',
    ),
    Variant(
        name="sequence_loss_from_logsumexp",
        cell="sequence_loss",
        code='''
def sequence_loss(logits, target, smoothing=0.0):
    """Label-smoothed cross-entropy from the log-sum-exp, over the tokens that are not PAD."""
    keep = target.ne(PAD)
    picked = logits[keep]  # (tokens, V)
    normaliser = torch.logsumexp(picked, dim=-1)
    right = normaliser - picked.gather(1, target[keep][:, None]).squeeze(1)
    spread = normaliser - picked.mean(dim=-1)
    return ((1 - smoothing) * right + smoothing * spread).mean()
''',
    ),
    Variant(
        name="greedy_decode_with_a_list_of_steps",
        cell="greedy_decode",
        code='''
@torch.no_grad()
def greedy_decode(model, source, max_length):
    """Greedy decoding, the tokens kept in a list of columns."""
    mask = source.ne(PAD)
    memory = model.encode(source, mask)
    columns = [torch.full((len(source),), BOS, dtype=torch.long)]
    alive = torch.ones(len(source), dtype=torch.bool)
    while len(columns) <= max_length and alive.any():
        logits, _ = model.decode(torch.stack(columns, dim=1), memory, mask)
        chosen = torch.where(alive, logits[:, -1, :].argmax(-1), torch.full_like(alive, PAD,
                                                                                 dtype=torch.long))
        columns.append(chosen)
        alive = alive & chosen.ne(EOS)
    return torch.stack(columns[1:], dim=1)
''',
    ),
    Variant(
        name="beam_search_one_hypothesis_at_a_time",
        cell="beam_search",
        code='''
def beam_search(model, source, beam_size, max_length):
    """Beam search over Python lists of (log-probability, tokens), decoding each in turn."""
    source = source.unsqueeze(0)
    mask = source.ne(PAD)
    memory = model.encode(source, mask)
    live, done = [(0.0, [BOS])], []
    for _ in range(max_length):
        candidates = []
        for score, tokens in live:
            logits = model.decode(torch.tensor([tokens]), memory, mask)[0][0, -1]
            for token, value in enumerate(torch.log_softmax(logits, dim=-1).tolist()):
                candidates.append((score + value, tokens + [token]))
        candidates.sort(key=lambda found: found[0], reverse=True)
        live = []
        for score, tokens in candidates[:beam_size]:
            (done if tokens[-1] == EOS else live).append((score, tokens))
        if not live:
            break
    done += live
    best = max(done, key=lambda found: found[0] / (len(found[1]) - 1))
    return torch.tensor(best[1][1:], dtype=torch.long)
''',
    ),
    Variant(
        name="train_with_set_to_none_and_a_token_count",
        cell="train",
        code='''
def train(model, batches, epochs, lr=0.01, smoothing=0.1):
    """AdamW over the epochs; each epoch's loss weighted by real target tokens."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    history = []
    for epoch in range(epochs):
        weighted = torch.zeros(())
        counted = 0
        for source, target in batches:
            optimizer.zero_grad(set_to_none=True)
            loss = sequence_loss(model(source, target), target, smoothing=smoothing)
            loss.backward()
            optimizer.step()
            n_tokens = target.ne(PAD).sum().item()
            weighted += loss.detach() * n_tokens
            counted += n_tokens
        history.append(weighted.item() / counted)
    return history
''',
    ),
]
