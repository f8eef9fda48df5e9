"""Correct answers to lab 04 in other styles: each must get every point and have no finding."""

from catalogue import Variant

VARIANTS = [
    Variant(
        name="additive_with_einsum_and_broadcast_by_indexing",
        cell="additive_score",
        code='''
class AdditiveScore(nn.Module):
    """v^T tanh(W_q q + W_k k + b)."""

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.w_q = nn.Linear(query_dim, hidden_dim, bias=False)
        self.w_k = nn.Linear(key_dim, hidden_dim, bias=True)
        self.v = nn.Linear(hidden_dim, 1, bias=False)

    def precompute(self, keys: torch.Tensor) -> torch.Tensor:
        """W_k k + b for every key."""
        return self.w_k(keys)

    def score(self, query: torch.Tensor, projected_keys: torch.Tensor) -> torch.Tensor:
        """One score per key for one query per sequence."""
        hidden = torch.tanh(self.w_q(query)[:, None, :] + projected_keys)
        return torch.einsum("nkh,h->nk", hidden, self.v.weight[0])

    def forward(self, query, keys):
        return self.score(query, self.precompute(keys))
''',
    ),
    Variant(
        name="multi_hop_with_einsum_and_preallocated_weights",
        cell="multi_hop",
        code='''
def multi_hop(scorer, query, keys, values, hops):
    """Read the memory `hops` times, adding what was read to the query each time."""
    if type(hops) is not int or hops <= 0:
        raise ValueError(f"hops must be an int > 0, got {hops!r}")
    memory = scorer.precompute(keys)
    history = query.new_empty(query.shape[0], hops, keys.shape[1])
    for step in range(hops):
        weights = scorer.score(query, memory).softmax(dim=-1)
        query = query + torch.einsum("nk,nkd->nd", weights, values)
        history[:, step] = weights
    return query, history
''',
    ),
    Variant(
        name="additive_with_functional_linear_on_the_layers_weights",
        cell="additive_score",
        code='''
import torch.nn.functional as F


class AdditiveScore(nn.Module):
    """Bahdanau's score v^T tanh(W_q q + W_k k + b), the keys' part computed once."""

    def __init__(self, query_dim, key_dim, hidden_dim):
        super().__init__()
        self.w_q = nn.Linear(query_dim, hidden_dim, bias=False)
        self.w_k = nn.Linear(key_dim, hidden_dim)
        self.v = nn.Linear(hidden_dim, 1, bias=False)

    def precompute(self, keys):
        """keys (N, Lk, key_dim) -> W_k k + b (N, Lk, H)."""
        return F.linear(keys, self.w_k.weight, self.w_k.bias)

    def score(self, query, projected_keys):
        """query (N, query_dim), projected_keys (N, Lk, H) -> scores (N, Lk)."""
        projected_query = F.linear(query, self.w_q.weight).unsqueeze(1)  # (N, 1, H)
        return F.linear(torch.tanh(projected_query + projected_keys), self.v.weight).squeeze(-1)

    def forward(self, query, keys):
        return self.score(query, self.precompute(keys))
''',
    ),
]
