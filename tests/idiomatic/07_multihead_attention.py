"""Correct answers to lab 07 in other styles: each must get every point and have no finding."""

from catalogue import Variant

VARIANTS = [
    Variant(
        name="split_heads_with_input_and_unflatten",
        cell="split_heads",
        code='''
def split_heads(input: torch.Tensor, n_heads: int) -> torch.Tensor:
    """input (N, L, d_model) -> (N, n_heads, L, d_model // n_heads)."""
    *_, d_model = input.shape
    if n_heads < 1 or d_model % n_heads:
        raise ValueError(f"d_model={d_model} is not a multiple of n_heads={n_heads}")
    return input.unflatten(-1, (n_heads, d_model // n_heads)).transpose(-3, -2)
''',
    ),
    Variant(
        name="merge_heads_with_flatten",
        cell="merge_heads",
        code='''
def merge_heads(input):
    """input (N, n_heads, L, d_head) -> (N, L, n_heads * d_head)."""
    assert input.dim() == 4, f"expected (N, n_heads, L, d_head), got {tuple(input.shape)}"
    return input.transpose(1, 2).flatten(start_dim=2)
''',
    ),
    Variant(
        name="attention_with_modules_init_extra_repr_and_a_helper",
        cell="multi_head_attention",
        code='''
class MultiHeadAttention(nn.Module):
    """Multi-head attention with n_heads heads of size d_model // n_heads."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0) -> None:
        super(MultiHeadAttention, self).__init__()
        if n_heads <= 0 or d_model % n_heads:
            raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}")
        self.d_model, self.n_heads = d_model, n_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))
        self.dropout = nn.Dropout(dropout)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}"

    def forward(self, query, keys, values, mask=None):
        """query (N, Lq, d_model), keys, values (N, Lk, d_model) -> (N, Lq, d_model), weights."""
        q, k, v = (split_heads(layer(x), self.n_heads)
                   for layer, x in ((self.w_q, query), (self.w_k, keys), (self.w_v, values)))
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        weights = self.dropout(attention_weights(scores, mask))
        return self.w_o(merge_heads(weights @ v)), weights


def attention_weights(scores, mask=None):
    """Softmax of scores (..., Lq, Lk) over the allowed keys; all 0 for a query with none."""
    if mask is None:
        return scores.softmax(dim=-1)
    scores = scores.masked_fill(~mask, float("-inf"))
    scores = scores.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return scores.softmax(dim=-1).masked_fill(~mask, 0.0)
''',
    ),
    Variant(
        name="attention_with_apply_and_forward_input",
        cell="multi_head_attention",
        code='''
def init_linear(module):
    """Small normal weights and zero biases for every nn.Linear."""
    if type(module).__name__ == "Linear":
        nn.init.normal_(module.weight, std=0.02)
        nn.init.zeros_(module.bias)


class MultiHeadAttention(nn.Module):
    """Multi-head attention with n_heads heads of size d_model // n_heads."""

    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        if n_heads <= 0 or d_model % n_heads != 0:
            raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}")
        self.n_heads = n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(p=dropout)
        self.apply(init_linear)

    def __repr__(self):
        return f"{type(self).__name__}(d_model={self.w_q.in_features}, n_heads={self.n_heads})"

    def forward(self, input, keys, values, mask=None):
        """input (N, Lq, d_model), keys, values (N, Lk, d_model) -> (N, Lq, d_model), weights."""
        q = split_heads(self.w_q(input), self.n_heads)
        k = split_heads(self.w_k(keys), self.n_heads)
        v = split_heads(self.w_v(values), self.n_heads)
        scores = torch.matmul(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
            empty = ~mask.any(dim=-1, keepdim=True)
            scores = torch.where(empty, torch.zeros_like(scores), scores)
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights * mask
        weights = self.dropout(weights)
        return self.w_o(merge_heads(torch.matmul(weights, v))), weights
''',
    ),
    Variant(
        name="attention_with_the_lowest_finite_score",
        cell="multi_head_attention",
        code='''
class MultiHeadAttention(nn.Module):
    """Multi-head attention; a masked score is the lowest finite number, so no row makes a NaN."""

    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        if n_heads < 1 or d_model % n_heads:
            raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}")
        self.n_heads = n_heads
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
        scores = torch.einsum("nhqd,nhkd->nhqk", q, k) / math.sqrt(q.shape[-1])
        if mask is not None:  # an empty row is all equal, hence uniform, then zeroed
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(dim=-1)
        if mask is not None:
            weights = torch.where(mask, weights, 0.0)
        weights = self.dropout(weights)
        return self.w_o(merge_heads(torch.einsum("nhqk,nhkd->nhqd", weights, v))), weights
''',
    ),
]
