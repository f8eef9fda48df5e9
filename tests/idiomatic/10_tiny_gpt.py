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
        start = 0
        if cache is not None:
            if "keys" in cache:
                start = cache["keys"].shape[2]
                keys = torch.cat((cache["keys"], keys), dim=2)
                values = torch.cat((cache["values"], values), dim=2)
            cache.update(keys=keys, values=values)
        group = self.n_heads // self.n_kv_heads
        keys = torch.repeat_interleave(keys, group, dim=1)
        values = torch.repeat_interleave(values, group, dim=1)
        scores = query @ keys.transpose(-2, -1) / math.sqrt(self.d_head)
        future = torch.arange(keys.shape[2])[None, :] > (start + torch.arange(length))[:, None]
        weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        merged = (weights @ values).transpose(1, 2).reshape(batch, length, -1)
        return self.w_o(merged), weights


def cache_bytes(cache: dict) -> int:
    """Bytes of the keys and values held in a cache dictionary."""
    return sum(cache[name].nbytes for name in ("keys", "values"))
''',
    ),
]
