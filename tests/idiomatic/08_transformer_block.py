"""Correct answers to lab 08 in other styles: each must get every point and have no finding."""

from catalogue import Variant

VARIANTS = [
    Variant(
        name="attention_with_positions_and_masked_fill",
        cell="attention",
        code='''
def attention(q, k, v, mask=None, causal=False, rope=False):
    """q (N, h, Lq, d), k (N, h, Lk, d), v (N, h, Lk, d_v) -> context, weights (N, h, Lq, Lk)."""
    n_queries, n_keys = q.size(-2), k.size(-2)
    if n_queries > n_keys:
        raise ValueError(f"need Lq <= Lk: got Lq={n_queries} and Lk={n_keys}")
    offset = n_keys - n_queries
    if rope:
        q, k = apply_rope(q, start=offset), apply_rope(k)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    if causal:
        allowed = torch.arange(n_keys) <= torch.arange(offset, n_keys)[:, None]
    else:
        allowed = torch.ones(n_queries, n_keys, dtype=torch.bool)
    if mask is not None:
        allowed = allowed & mask
    has_key = allowed.any(dim=-1, keepdim=True)
    scores = scores.masked_fill(~allowed, float("-inf")).masked_fill(~has_key, 0.0)
    weights = scores.softmax(dim=-1).masked_fill(~allowed, 0.0)
    return weights @ v, weights
''',
    ),
    Variant(
        name="attention_with_the_lowest_finite_score",
        cell="attention",
        code='''
def attention(q, k, v, mask=None, causal=False, rope=False):
    """q (N, h, Lq, d), k (N, h, Lk, d), v (N, h, Lk, d_v) -> context, weights (N, h, Lq, Lk)."""
    lq, lk = q.shape[-2], k.shape[-2]
    if lq > lk:
        raise ValueError(f"Lq={lq} queries cannot be the last of Lk={lk} keys")
    if rope:
        q, k = apply_rope(q, start=lk - lq), apply_rope(k)
    scores = torch.einsum("nhqd,nhkd->nhqk", q, k) / q.shape[-1] ** 0.5
    allowed = torch.ones(lq, lk, dtype=torch.bool).tril(diagonal=lk - lq if causal else lk)
    if mask is not None:
        allowed = allowed & mask
    lowest = torch.finfo(scores.dtype).min  # finite: a row with no key is uniform, never 0 / 0
    weights = torch.softmax(torch.where(allowed, scores, lowest), dim=-1)
    weights = torch.where(allowed, weights, 0.0)
    return torch.einsum("nhqk,nhkv->nhqv", weights, v), weights
''',
    ),
    Variant(
        name="block_with_super_input_extra_repr_and_helpers",
        cell="transformer_block",
        code='''
class TransformerBlock(nn.Module):
    """Pre-LayerNorm block: x + out(attention(norm1(x))), then x + feed-forward(norm2(x))."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0,
                 rope: bool = False) -> None:
        super(TransformerBlock, self).__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not a multiple of n_heads={n_heads}")
        self.d_model, self.n_heads, self.rope = d_model, n_heads, rope
        self.norm1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.norm2 = nn.LayerNorm(d_model)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout2 = nn.Dropout(dropout)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, rope={self.rope}"

    def heads(self, part):
        """part (N, L, d_model) -> (N, n_heads, L, d_head)."""
        return part.unflatten(-1, (self.n_heads, self.d_model // self.n_heads)).transpose(1, 2)

    def feed_forward(self, input):
        """The position-wise feed-forward network, with its two dropouts."""
        return self.dropout2(self.linear2(self.dropout(F.relu(self.linear1(input)))))

    def forward(self, input, mask=None, causal=False):
        """input (N, L, d_model) -> output (N, L, d_model), weights (N, n_heads, L, L)."""
        q, k, v = map(self.heads, self.qkv(self.norm1(input)).chunk(3, dim=-1))
        if mask is not None and mask.dim() == 3:
            mask = mask[:, None]
        context, weights = attention(q, k, v, mask=mask, causal=causal, rope=self.rope)
        x = input + self.dropout1(self.out(context.transpose(1, 2).flatten(2)))
        return x + self.feed_forward(self.norm2(x)), weights


if __name__ == "__main__":
    print(TransformerBlock(8, 2, 16))
''',
    ),
]
