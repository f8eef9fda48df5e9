"""Correct answers to lab 10 in other styles: each must get every point and have no finding."""

from catalogue import Variant

VARIANTS = [
    Variant(
        name="loss_with_hints_asserts_and_a_helper",
        cell="next_token_loss",
        code='''
from typing import Optional


def log_probabilities(logits: torch.Tensor) -> torch.Tensor:
    """Log of the softmax of logits (..., n_vocab) along the last dimension, same shape."""
    shifted = logits - logits.amax(dim=-1, keepdim=True)
    return shifted - shifted.exp().sum(dim=-1, keepdim=True).log()


def next_token_loss(logits: torch.Tensor, tokens: torch.Tensor,
                    mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Mean cross-entropy of tokens[:, t + 1] under logits[:, t] (N, L, n_vocab)."""
    assert logits.dim() == 3, f"logits must be (N, L, n_vocab), got {tuple(logits.shape)}"
    chosen = log_probabilities(logits[:, :-1]).gather(-1, tokens[:, 1:, None])[..., 0]
    if mask is not None:
        chosen = chosen[mask[:, 1:] & mask[:, :-1]]
    return -chosen.mean()
''',
    ),
    Variant(
        name="generate_with_a_helper_and_no_grad_decorator",
        cell="generate",
        code='''
def next_tokens(step_logits, temperature, top_k, generator):
    """Tokens (N, 1) drawn from the logits (N, n_vocab) of each row's last position."""
    if temperature == 0:
        return step_logits.argmax(dim=-1, keepdim=True)
    scaled = step_logits / temperature
    if top_k is not None:
        kth = torch.topk(scaled, top_k, dim=-1).values[:, -1:]
        scaled = torch.where(scaled < kth, torch.full_like(scaled, float("-inf")), scaled)
    return torch.multinomial(scaled.softmax(dim=-1), num_samples=1, generator=generator)


@torch.no_grad()
def generate(model, prompts, prompt_mask, n_new, temperature=1.0, top_k=None, seed=0):
    """n_new tokens (N, n_new) drawn after left-padded prompts (N, P)."""
    generator = torch.Generator().manual_seed(seed)
    caches = model.empty_caches(len(prompts))
    seen = prompt_mask.clone()
    step_logits = model(prompts, caches, seen)[:, -1]
    new_tokens = []
    for step in range(n_new):
        token = next_tokens(step_logits, temperature, top_k, generator)
        new_tokens.append(token)
        if step < n_new - 1:
            seen = torch.cat([seen, torch.ones_like(token, dtype=torch.bool)], dim=1)
            step_logits = model(token, caches, seen)[:, -1]
    return torch.cat(new_tokens, dim=1)
''',
    ),
    Variant(
        name="grouped_attention_with_super_input_and_extra_repr",
        cell="gqa",
        code='''
class GroupedQueryAttention(nn.Module):
    """Causal self-attention with n_heads query heads sharing n_kv_heads key-value heads."""

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int) -> None:
        super(GroupedQueryAttention, self).__init__()
        if d_model % n_heads != 0:
            raise ValueError(f"d_model={d_model} is not a multiple of n_heads={n_heads}")
        if n_heads % n_kv_heads != 0:
            raise ValueError(f"n_heads={n_heads} is not a multiple of n_kv_heads={n_kv_heads}")
        self.n_heads, self.n_kv_heads, self.d_head = n_heads, n_kv_heads, d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.d_head)
        self.w_v = nn.Linear(d_model, n_kv_heads * self.d_head)
        self.w_o = nn.Linear(d_model, d_model)

    def extra_repr(self) -> str:
        return f"n_heads={self.n_heads}, n_kv_heads={self.n_kv_heads}, d_head={self.d_head}"

    def heads(self, projected, count):
        """projected (N, L, count * d_head) -> (N, count, L, d_head)."""
        return projected.unflatten(-1, (count, self.d_head)).transpose(1, 2)

    def forward(self, input, cache=None):
        """input (N, L_new, d_model) -> (N, L_new, d_model), weights (N, n_heads, L_new, L_seen)."""
        batch, length, _ = input.shape
        query = self.heads(self.w_q(input), self.n_heads)
        keys = self.heads(self.w_k(input), self.n_kv_heads)
        values = self.heads(self.w_v(input), self.n_kv_heads)
        start = 0 if cache is None else cache.length()
        if cache is not None:
            keys, values = cache.append(keys, values)
        group = self.n_heads // self.n_kv_heads
        keys = torch.repeat_interleave(keys, group, dim=1)
        values = torch.repeat_interleave(values, group, dim=1)
        scores = query @ keys.transpose(-2, -1) / math.sqrt(self.d_head)
        future = torch.arange(keys.shape[2])[None, :] > (start + torch.arange(length))[:, None]
        weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        merged = (weights @ values).transpose(1, 2).reshape(batch, length, -1)
        return self.w_o(merged), weights


def cache_bytes(cache: KVCache) -> int:
    """Bytes of the keys and values held in a KVCache."""
    return cache.keys.nbytes + cache.values.nbytes
''',
    ),
    Variant(
        name="gpt_on_the_grouped_attention_of_exercise_3_a_mask_helper_and_super",
        cell="gpt",
        code='''
from typing import Optional


def key_axes(key_mask: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """key_mask (N, L_seen) -> (N, 1, 1, L_seen), for every head and query; None stays None."""
    return None if key_mask is None else key_mask.unsqueeze(1).unsqueeze(2)


class SelfAttention(GroupedQueryAttention):
    """Exercise 3's attention, with RoPE from the cached length and a key mask."""

    def forward(self, input, cache=None, key_mask=None):
        start = cache.length() if cache is not None else 0
        q = apply_rope(self.w_q(input).unflatten(-1, (self.n_heads, -1)).transpose(1, 2), start)
        k = apply_rope(self.w_k(input).unflatten(-1, (self.n_kv_heads, -1)).transpose(1, 2),
                       start)
        v = self.w_v(input).unflatten(-1, (self.n_kv_heads, -1)).transpose(1, 2)
        if cache is not None:
            k, v = cache.append(k, v)
        k = k.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)
        v = v.repeat_interleave(self.n_heads // self.n_kv_heads, dim=1)
        context, _ = attention(q, k, v, mask=key_axes(key_mask), causal=True)
        return self.w_o(context.transpose(1, 2).flatten(2))


class Layer(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads, d_ff):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attention = SelfAttention(d_model, n_heads, n_kv_heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.feed_forward = nn.Sequential(
            nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model)
        )

    def forward(self, input, cache=None, key_mask=None):
        hidden = input + self.attention(self.norm1(input), cache, key_mask)
        return hidden + self.feed_forward(self.norm2(hidden))


class GPT(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, n_layers, d_ff, max_length,
                 n_kv_heads=None):
        super(GPT, self).__init__()
        self.max_length = max_length
        self.embed = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList([Layer(d_model, n_heads, n_kv_heads or n_heads, d_ff)
                                     for _ in range(n_layers)])
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def empty_caches(self, batch):
        return [KVCache() for _ in range(len(self.blocks))]

    def forward(self, input, caches=None, key_mask=None):
        seen = input.shape[1] + (caches[0].length() if caches else 0)
        if seen > self.max_length:
            raise ValueError(f"max_length={self.max_length} is less than {seen} positions")
        hidden = self.embed(input)
        for index, block in enumerate(self.blocks):
            hidden = block(hidden, caches[index] if caches else None, key_mask)
        return self.head(self.norm(hidden))
''',
    ),
    Variant(
        name="train_with_float_and_set_to_none",
        cell="train",
        code='''
def train(model: nn.Module, ids: torch.Tensor, steps: int, batch_size: int = 16,
          length: int = 33, lr: float = 3e-3, seed: int = 0) -> list:
    """AdamW on random windows of ids: the step losses."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(params=model.parameters(), lr=lr)
    model.train(True)
    history = []
    for step in range(steps):
        batch = text.random_windows(ids, batch_size, length, generator)
        optimizer.zero_grad(set_to_none=True)
        loss = next_token_loss(model(batch), batch)
        loss.backward()
        optimizer.step()
        history.append(float(loss))
    return history
''',
    ),
    Variant(
        name="generate_feeding_every_drawn_token_back",
        cell="generate",
        code='''
@torch.no_grad()
def generate(model, prompts, prompt_mask, n_new, temperature=1.0, top_k=None, seed=0):
    """n_new tokens (N, n_new) drawn after left-padded prompts (N, P)."""
    g = torch.Generator().manual_seed(seed)
    caches = model.empty_caches(prompts.size(0))
    mask = prompt_mask
    logits = model(prompts, caches, mask)[:, -1, :]
    out = []
    for _ in range(n_new):
        if temperature == 0:
            idx_next = torch.argmax(logits, dim=-1, keepdim=True)
        else:
            logits = logits / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, top_k)
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1, generator=g)
        out.append(idx_next)
        mask = torch.cat((mask, torch.ones_like(idx_next, dtype=torch.bool)), dim=1)
        logits = model(idx_next, caches, mask)[:, -1, :]
    return torch.cat(out, dim=1)
''',
    ),
    Variant(
        name="gpt_with_rope_tables_in_float32_buffers",
        cell="gpt",
        code='''
def rope_tables(head_dim, max_length, base=10000.0):
    """cos and sin (max_length, head_dim / 2) of RoPE's angles, computed in float32."""
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
    freqs = torch.outer(torch.arange(max_length).float(), inv_freq)
    return freqs.cos(), freqs.sin()


def rotate(x, cos, sin):
    """x (N, h, L, head_dim), pairs (2i, 2i + 1) turned by the angles of cos, sin (L, hd / 2)."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads, max_length):
        super().__init__()
        if n_heads % n_kv_heads != 0:
            raise ValueError(f"n_kv_heads={n_kv_heads} must divide n_heads={n_heads}")
        self.n_heads, self.n_kv_heads = n_heads, n_kv_heads
        self.head_dim = d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, n_kv_heads * self.head_dim)
        self.w_v = nn.Linear(d_model, n_kv_heads * self.head_dim)
        self.w_o = nn.Linear(d_model, d_model)
        cos, sin = rope_tables(self.head_dim, max_length)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, x, cache=None, key_mask=None):
        bsz, seqlen, _ = x.shape
        start = cache.length() if cache is not None else 0
        q = self.w_q(x).view(bsz, seqlen, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.w_k(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.w_v(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.cos[start:start + seqlen], self.sin[start:start + seqlen]
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        if cache is not None:
            k, v = cache.append(k, v)
        n_rep = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        allowed = torch.ones(seqlen, k.size(2), dtype=torch.bool).tril(diagonal=start)
        if key_mask is not None:
            allowed = allowed & key_mask[:, None, None, :]
        empty = ~allowed.any(dim=-1, keepdim=True)
        scores = scores.masked_fill(~allowed, float("-inf")).masked_fill(empty, 0.0)
        probs = F.softmax(scores, dim=-1).masked_fill(~allowed, 0.0)
        out = (probs @ v).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.w_o(out)


class Block(nn.Module):
    def __init__(self, d_model, n_heads, n_kv_heads, d_ff, max_length):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attention = CausalSelfAttention(d_model, n_heads, n_kv_heads, max_length)
        self.norm2 = nn.LayerNorm(d_model)
        self.feed_forward = nn.Sequential(
            nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model)
        )

    def forward(self, x, cache=None, key_mask=None):
        x = x + self.attention(self.norm1(x), cache, key_mask)
        return x + self.feed_forward(self.norm2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, n_layers, d_ff, max_length,
                 n_kv_heads=None):
        super().__init__()
        self.max_length = max_length
        self.embed = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(
            [Block(d_model, n_heads, n_kv_heads or n_heads, d_ff, max_length)
             for _ in range(n_layers)]
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def empty_caches(self, batch):
        return [KVCache() for _ in self.blocks]

    def forward(self, tokens, caches=None, key_mask=None):
        seen = tokens.size(1) + (caches[0].length() if caches else 0)
        if seen > self.max_length:
            raise ValueError(f"{seen} positions exceed max_length={self.max_length}")
        x = self.embed(tokens)
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i], key_mask)
        return self.head(self.norm(x))
''',
    ),
]
