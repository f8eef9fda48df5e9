"""Typical mistakes in lab 04: each must lose points and show the message that names it."""

from course.coursedir.scratch import Mistake

LAYERS = '''
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
'''

MISTAKES = [
    Mistake(
        name="additive_query_not_unsqueezed",
        cell="additive_score",
        code=LAYERS + '''
    def score(self, query, projected_keys):
        hidden = torch.tanh(self.w_q(query) + projected_keys)
        return self.v(hidden).squeeze(-1)
''',
        message="unsqueeze the query to (N, 1, H)",
    ),
    Mistake(
        name="additive_without_tanh",
        cell="additive_score",
        code=LAYERS + '''
    def score(self, query, projected_keys):
        hidden = self.w_q(query).unsqueeze(1) + projected_keys
        return self.v(hidden).squeeze(-1)
''',
        message="it looks like you forgot the tanh",
    ),
    Mistake(
        name="additive_returns_weights",
        cell="additive_score",
        code=LAYERS + '''
    def score(self, query, projected_keys):
        hidden = torch.tanh(self.w_q(query).unsqueeze(1) + projected_keys)
        return torch.softmax(self.v(hidden).squeeze(-1), dim=-1)
''',
        message="it looks like you returned softmax weights instead of raw scores",
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

    def precompute(self, keys):
        return self.w_k(keys)

    def score(self, query, projected_keys):
        return self.v(torch.tanh(self.w_q(query).unsqueeze(1) + projected_keys)).squeeze(-1)

    def forward(self, query, keys):
        return self.score(query, self.precompute(keys))
''',
        message="additive.w_q has a bias but should not",
    ),
    Mistake(
        name="multi_hop_projects_keys_every_step",
        cell="multi_hop",
        code='''
def multi_hop(scorer, query, keys, values, hops):
    every_step = []
    for _ in range(hops):
        weights = torch.softmax(scorer(query, keys), dim=-1)
        query = query + (weights.unsqueeze(1) @ values).squeeze(1)
        every_step.append(weights)
    return query, torch.stack(every_step, dim=1)
''',
        message="the keys must be projected once per sequence",
    ),
    Mistake(
        name="multi_hop_query_never_updated",
        cell="multi_hop",
        code='''
def multi_hop(scorer, query, keys, values, hops):
    projected_keys = scorer.precompute(keys)
    every_step = []
    context = torch.zeros_like(query)
    for _ in range(hops):
        weights = torch.softmax(scorer.score(query, projected_keys), dim=-1)
        context = context + (weights.unsqueeze(1) @ values).squeeze(1)
        every_step.append(weights)
    return query + context, torch.stack(every_step, dim=1)
''',
        message="it looks like you kept the first query at every step",
    ),
    Mistake(
        name="multi_hop_query_replaced",
        cell="multi_hop",
        code='''
def multi_hop(scorer, query, keys, values, hops):
    projected_keys = scorer.precompute(keys)
    every_step = []
    for _ in range(hops):
        weights = torch.softmax(scorer.score(query, projected_keys), dim=-1)
        query = (weights.unsqueeze(1) @ values).squeeze(1)
        every_step.append(weights)
    return query, torch.stack(every_step, dim=1)
''',
        message="it looks like you replaced the query by the context",
    ),
    Mistake(
        name="multi_hop_softmax_over_sequences",
        cell="multi_hop",
        code='''
def multi_hop(scorer, query, keys, values, hops):
    projected_keys = scorer.precompute(keys)
    every_step = []
    for _ in range(hops):
        weights = torch.softmax(scorer.score(query, projected_keys), dim=0)
        query = query + (weights.unsqueeze(1) @ values).squeeze(1)
        every_step.append(weights)
    return query, torch.stack(every_step, dim=1)
''',
        message="it looks like you applied the softmax over the sequences (dim=0)",
    ),
    Mistake(
        name="multi_hop_steps_stacked_first",
        cell="multi_hop",
        code='''
def multi_hop(scorer, query, keys, values, hops):
    projected_keys = scorer.precompute(keys)
    every_step = []
    for _ in range(hops):
        weights = torch.softmax(scorer.score(query, projected_keys), dim=-1)
        query = query + (weights.unsqueeze(1) @ values).squeeze(1)
        every_step.append(weights)
    return query, torch.stack(every_step)
''',
        message="stack the steps on dim=1",
    ),
]
