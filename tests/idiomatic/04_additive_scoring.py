"""Correct answers to lab 04 in other styles: each must get every point and have no finding."""

from catalogue import Variant

VARIANTS = [
    Variant(
        name="additive_with_apply_super_and_extra_repr",
        cell="additive_score",
        code='''
class AdditiveScore(nn.Module):
    """Additive score v^T tanh(W_q q + W_k k + b) for every query-key pair."""

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int) -> None:
        super(AdditiveScore, self).__init__()
        self.query_dim, self.key_dim, self.hidden_dim = query_dim, key_dim, hidden_dim
        self.w_q = nn.Linear(query_dim, hidden_dim, bias=False)
        self.w_k = nn.Linear(key_dim, hidden_dim)
        self.v = nn.Linear(hidden_dim, 1, bias=False)
        self.apply(initialise)

    def extra_repr(self) -> str:
        return f"query_dim={self.query_dim}, key_dim={self.key_dim}, hidden_dim={self.hidden_dim}"

    def forward(self, input: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """input (N, Lq, query_dim), keys (N, Lk, key_dim) -> scores (N, Lq, Lk)."""
        hidden = torch.tanh(self.w_q(input)[:, :, None, :] + self.w_k(keys)[:, None, :, :])
        return self.v(hidden)[..., 0]


def initialise(module):
    """Xavier weights and zero biases for every nn.Linear of a module."""
    if isinstance(module, nn.Linear):
        nn.init.xavier_uniform_(module.weight)
        if module.bias is not None:
            nn.init.zeros_(module.bias)


if __name__ == "__main__":
    print(AdditiveScore(3, 2, 4))
''',
    ),
    Variant(
        name="additive_with_modules_loop",
        cell="additive_score",
        code='''
class AdditiveScore(nn.Module):
    """Additive score v^T tanh(W_q q + W_k k + b) for every query-key pair."""

    def __init__(self, query_dim, key_dim, hidden_dim):
        super().__init__()
        self.w_q = nn.Linear(query_dim, hidden_dim, bias=False)
        self.w_k = nn.Linear(key_dim, hidden_dim)
        self.v = nn.Linear(hidden_dim, 1, bias=False)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.1)

    def forward(self, query, keys):
        """query (N, Lq, query_dim), keys (N, Lk, key_dim) -> scores (N, Lq, Lk)."""
        assert query.dim() == keys.dim() == 3, "query and keys are (N, L, features)"
        projected_query = self.w_q(query).unsqueeze(2)
        projected_keys = self.w_k(keys).unsqueeze(1)
        return self.v(torch.tanh(projected_query + projected_keys)).squeeze(-1)
''',
    ),
    Variant(
        name="bilinear_with_reset_parameters_repr_and_einsum",
        cell="bilinear_score",
        code='''
import math


class BilinearScore(nn.Module):
    """Bilinear (Luong's general) score q^T W k for every query-key pair."""

    def __init__(self, query_dim, key_dim):
        super(BilinearScore, self).__init__()
        self.weight = nn.Parameter(torch.empty(query_dim, key_dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Glorot's uniform initialisation of the weight."""
        bound = math.sqrt(6.0 / sum(self.weight.shape))
        nn.init.uniform_(self.weight, -bound, bound)

    def __repr__(self):
        rows, columns = self.weight.shape
        return f"{type(self).__name__}(query_dim={rows}, key_dim={columns})"

    def forward(self, input, keys):
        """input (N, Lq, query_dim), keys (N, Lk, key_dim) -> scores (N, Lq, Lk)."""
        return torch.einsum("nid,de,nje->nij", input, self.weight, keys)
''',
    ),
]
