"""Typical mistakes in lab 04: each must lose points and show the message that names it."""

from course.build.submissions import Mistake

MISTAKES = [
    Mistake(
        name="additive_only_one_query",
        cell="additive_score",
        code='''
class AdditiveScore(nn.Module):
    def __init__(self, query_dim, key_dim, hidden_dim):
        super().__init__()
        self.w_q = nn.Linear(query_dim, hidden_dim, bias=False)
        self.w_k = nn.Linear(key_dim, hidden_dim)
        self.v = nn.Linear(hidden_dim, 1, bias=False)

    def forward(self, query, keys):
        hidden = torch.tanh(self.w_q(query) + self.w_k(keys))
        return self.v(hidden).transpose(1, 2)
''',
        message="they only add when Lq is 1 or equals Lk",
    ),
    Mistake(
        name="additive_without_tanh",
        cell="additive_score",
        code='''
class AdditiveScore(nn.Module):
    def __init__(self, query_dim, key_dim, hidden_dim):
        super().__init__()
        self.w_q = nn.Linear(query_dim, hidden_dim, bias=False)
        self.w_k = nn.Linear(key_dim, hidden_dim)
        self.v = nn.Linear(hidden_dim, 1, bias=False)

    def forward(self, query, keys):
        hidden = self.w_q(query).unsqueeze(2) + self.w_k(keys).unsqueeze(1)
        return self.v(hidden).squeeze(-1)
''',
        message="it looks like you forgot the tanh",
    ),
    Mistake(
        name="additive_bias_on_query",
        cell="additive_score",
        code='''
class AdditiveScore(nn.Module):
    def __init__(self, query_dim, key_dim, hidden_dim):
        super().__init__()
        self.w_q = nn.Linear(query_dim, hidden_dim)
        self.w_k = nn.Linear(key_dim, hidden_dim, bias=False)
        self.v = nn.Linear(hidden_dim, 1, bias=False)

    def forward(self, query, keys):
        hidden = torch.tanh(self.w_q(query).unsqueeze(2) + self.w_k(keys).unsqueeze(1))
        return self.v(hidden).squeeze(-1)
''',
        message="additive.w_q has a bias but should not",
    ),
    Mistake(
        name="additive_key_layer_sized_by_query",
        cell="additive_score",
        code='''
class AdditiveScore(nn.Module):
    def __init__(self, query_dim, key_dim, hidden_dim):
        super().__init__()
        self.w_q = nn.Linear(query_dim, hidden_dim, bias=False)
        self.w_k = nn.Linear(query_dim, hidden_dim)
        self.v = nn.Linear(hidden_dim, 1, bias=False)

    def forward(self, query, keys):
        hidden = torch.tanh(self.w_q(query).unsqueeze(2) + self.w_k(keys).unsqueeze(1))
        return self.v(hidden).squeeze(-1)
''',
        message="additive.w_k.weight has shape (4, 3), expected (4, 2)",
    ),
    Mistake(
        name="additive_scores_transposed",
        cell="additive_score",
        code='''
class AdditiveScore(nn.Module):
    def __init__(self, query_dim, key_dim, hidden_dim):
        super().__init__()
        self.w_q = nn.Linear(query_dim, hidden_dim, bias=False)
        self.w_k = nn.Linear(key_dim, hidden_dim)
        self.v = nn.Linear(hidden_dim, 1, bias=False)

    def forward(self, query, keys):
        hidden = torch.tanh(self.w_q(query).unsqueeze(1) + self.w_k(keys).unsqueeze(2))
        return self.v(hidden).squeeze(-1)
''',
        message="= (N, Lk, Lq): the scores are transposed",
    ),
    Mistake(
        name="additive_returns_weights",
        cell="additive_score",
        code='''
class AdditiveScore(nn.Module):
    def __init__(self, query_dim, key_dim, hidden_dim):
        super().__init__()
        self.w_q = nn.Linear(query_dim, hidden_dim, bias=False)
        self.w_k = nn.Linear(key_dim, hidden_dim)
        self.v = nn.Linear(hidden_dim, 1, bias=False)

    def forward(self, query, keys):
        hidden = torch.tanh(self.w_q(query).unsqueeze(2) + self.w_k(keys).unsqueeze(1))
        return torch.softmax(self.v(hidden).squeeze(-1), dim=-1)
''',
        message="returned softmax weights instead of raw scores",
    ),
    Mistake(
        name="bilinear_weight_transposed",
        cell="bilinear_score",
        code='''
class BilinearScore(nn.Module):
    def __init__(self, query_dim, key_dim):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(query_dim, key_dim))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, query, keys):
        return query @ self.weight.T @ keys.transpose(1, 2)
''',
        message="multiplied by weight.T (the transposed weight) instead of weight",
    ),
    Mistake(
        name="bilinear_keys_first",
        cell="bilinear_score",
        code='''
class BilinearScore(nn.Module):
    def __init__(self, query_dim, key_dim):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(query_dim, key_dim))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, query, keys):
        return keys @ self.weight.T @ query.transpose(1, 2)
''',
        message="= (N, Lk, Lq): the scores are transposed",
    ),
    Mistake(
        name="bilinear_weight_shape_swapped",
        cell="bilinear_score",
        code='''
class BilinearScore(nn.Module):
    def __init__(self, query_dim, key_dim):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(key_dim, query_dim))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, query, keys):
        return query @ self.weight.T @ keys.transpose(1, 2)
''',
        message="bilinear.weight has shape (2, 3), expected (3, 2)",
    ),
    Mistake(
        name="bilinear_unscaled_init",
        cell="bilinear_score",
        code='''
class BilinearScore(nn.Module):
    def __init__(self, query_dim, key_dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(query_dim, key_dim))

    def forward(self, query, keys):
        return query @ self.weight @ keys.transpose(1, 2)
''',
        message="it is not initialised at a sensible scale",
    ),
    Mistake(
        name="bilinear_weight_not_a_parameter",
        cell="bilinear_score",
        code='''
class BilinearScore(nn.Module):
    def __init__(self, query_dim, key_dim):
        super().__init__()
        self.weight = torch.randn(query_dim, key_dim) / query_dim ** 0.5

    def forward(self, query, keys):
        return query @ self.weight @ keys.transpose(1, 2)
''',
        message="bilinear.weight should be an nn.Parameter",
    ),
]
