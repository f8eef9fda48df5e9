"""Typical mistakes in lab 04: each must lose points and show the message that names it."""

from catalogue import Mistake
from catalogue import with_replacements as _with

# Correct answers; each mistake below changes one part of one of them.
_ADDITIVE = '''
class AdditiveScore(nn.Module):
    def __init__(self, query_dim, key_dim, hidden_dim):
        super().__init__()
        self.w_q = nn.Linear(query_dim, hidden_dim, bias=False)
        self.w_k = nn.Linear(key_dim, hidden_dim)
        self.v = nn.Linear(hidden_dim, 1, bias=False)

    def precompute(self, keys):
        return self.w_k(keys)

    def forward(self, query, keys):
        return self.score(query, self.precompute(keys))

    def score(self, query, projected_keys):
        hidden = torch.tanh(self.w_q(query).unsqueeze(1) + projected_keys)
        return self.v(hidden).squeeze(-1)
'''

_MULTI_HOP = '''
def multi_hop(scorer, query, keys, values, hops):
    if isinstance(hops, bool) or not isinstance(hops, int) or hops < 1:
        raise ValueError(f"hops must be a positive integer, got {hops!r}")
    projected_keys = scorer.precompute(keys)
    every_step = []
    for _ in range(hops):
        weights = torch.softmax(scorer.score(query, projected_keys), dim=-1)
        query = query + (weights.unsqueeze(1) @ values).squeeze(1)
        every_step.append(weights)
    return query, torch.stack(every_step, dim=1)
'''

# The catalogue's correct answers, by cell: each gets every point (tests/lessons/test_autograde.py).
BASES = {"additive_score": _ADDITIVE, "multi_hop": _MULTI_HOP}

MISTAKES = [
    Mistake("additive_query_not_unsqueezed", "additive_score",
            _with(_ADDITIVE,
                  "torch.tanh(self.w_q(query).unsqueeze(1)", "torch.tanh(self.w_q(query)"),
            "unsqueeze the query to (N, 1, H)"),
    Mistake("additive_without_tanh", "additive_score",
            _with(_ADDITIVE,
                  "torch.tanh(self.w_q(query).unsqueeze(1) + projected_keys)",
                  "self.w_q(query).unsqueeze(1) + projected_keys"),
            "it looks like you forgot the tanh"),
    Mistake("additive_returns_weights", "additive_score",
            _with(_ADDITIVE,
                  "self.v(hidden).squeeze(-1)",
                  "torch.softmax(self.v(hidden).squeeze(-1), dim=-1)"),
            "it looks like you returned softmax weights instead of raw scores"),
    Mistake("additive_bias_on_query", "additive_score",
            _with(_ADDITIVE,
                  '''\
        self.w_q = nn.Linear(query_dim, hidden_dim, bias=False)
        self.w_k = nn.Linear(key_dim, hidden_dim)
''', '''\
        self.w_q = nn.Linear(query_dim, hidden_dim)
        self.w_k = nn.Linear(key_dim, hidden_dim, bias=False)
''',
                  '''\

    def forward(self, query, keys):
''', '''\

    def score(self, query, projected_keys):
        return self.v(torch.tanh(self.w_q(query).unsqueeze(1) + projected_keys)).squeeze(-1)

    def forward(self, query, keys):
''',
                  '''\

    def score(self, query, projected_keys):
        hidden = torch.tanh(self.w_q(query).unsqueeze(1) + projected_keys)
        return self.v(hidden).squeeze(-1)
''', ""),
            "additive.w_q has a bias but should not"),
    Mistake("multi_hop_projects_keys_every_step", "multi_hop",
            _with(_MULTI_HOP,
                  "    projected_keys = scorer.precompute(keys)\n", "",
                  "torch.softmax(scorer.score(query, projected_keys),",
                  "torch.softmax(scorer(query, keys),"),
            "the keys must be projected once per sequence"),
    Mistake("multi_hop_query_never_updated", "multi_hop",
            _with(_MULTI_HOP,
                  "    every_step = []\n", '''\
    every_step = []
    context = torch.zeros_like(query)
''',
                  "query = query", "context = context",
                  "return query,", "return query + context,"),
            "it looks like you kept the first query at every step"),
    Mistake("multi_hop_query_replaced", "multi_hop",
            _with(_MULTI_HOP, "query + (weights.unsqueeze(1)", "(weights.unsqueeze(1)"),
            "it looks like you replaced the query by the context"),
    Mistake("multi_hop_softmax_over_sequences", "multi_hop", _with(_MULTI_HOP, "dim=-1)", "dim=0)"),
            "it looks like you applied the softmax over the sequences (dim=0)"),
    Mistake("multi_hop_steps_stacked_first", "multi_hop",
            _with(_MULTI_HOP, "torch.stack(every_step, dim=1)", "torch.stack(every_step)"),
            "stack the steps on dim=1"),
    Mistake("multi_hop_without_gradients", "multi_hop",
            _with(_MULTI_HOP, """    for _ in range(hops):
        weights = torch.softmax(scorer.score(query, projected_keys), dim=-1)
        query = query + (weights.unsqueeze(1) @ values).squeeze(1)
        every_step.append(weights)
""", """    with torch.set_grad_enabled(False):
        for _ in range(hops):
            weights = torch.softmax(scorer.score(query, projected_keys), dim=-1)
            query = query + (weights.unsqueeze(1) @ values).squeeze(1)
            every_step.append(weights)
"""),
            "returned a final query that carries no gradient"),
    Mistake("multi_hop_detaches_the_query", "multi_hop",
            _with(_MULTI_HOP, "query = query + (weights.unsqueeze(1) @ values).squeeze(1)",
                  "query = (query + (weights.unsqueeze(1) @ values).squeeze(1)).detach()"),
            "returned a final query that carries no gradient"),
]
