"""Typical mistakes in lab 02: each must lose points and show the message that names it."""

from course.build.submissions import Mistake

MISTAKES = [
    Mistake(
        name="scores_keys_times_queries",
        cell="dot_product_scores",
        code='''
def dot_product_scores(query, keys):
    return torch.bmm(keys, query.transpose(1, 2))
''',
        message="it looks like you multiplied the keys by the queries",
    ),
    Mistake(
        name="scores_cosine_similarity",
        cell="dot_product_scores",
        code='''
def dot_product_scores(query, keys):
    query = query / query.norm(dim=-1, keepdim=True)
    keys = keys / keys.norm(dim=-1, keepdim=True)
    return torch.bmm(query, keys.transpose(1, 2))
''',
        message="it looks like you divided by the lengths of the vectors",
    ),
    Mistake(
        name="scores_scaled_too_early",
        cell="dot_product_scores",
        code='''
def dot_product_scores(query, keys):
    return torch.bmm(query, keys.transpose(1, 2)) / query.shape[-1] ** 0.5
''',
        message="it looks like you scaled the scores by 1/sqrt(d_k)",
    ),
    Mistake(
        name="attention_softmax_over_queries",
        cell="attention",
        code='''
def attention(query, keys, values):
    weights = torch.softmax(dot_product_scores(query, keys), dim=1)
    return torch.bmm(weights, values), weights
''',
        message="it looks like you applied the softmax over the queries (dim=1)",
    ),
    Mistake(
        name="attention_context_from_keys",
        cell="attention",
        code='''
def attention(query, keys, values):
    weights = torch.softmax(dot_product_scores(query, keys), dim=-1)
    return torch.bmm(weights, keys), weights
''',
        message="it looks like you built the context from the keys instead of the values",
    ),
    Mistake(
        name="attention_without_softmax",
        cell="attention",
        code='''
def attention(query, keys, values):
    scores = dot_product_scores(query, keys)
    return torch.bmm(scores, values), scores
''',
        message="it looks like you forgot the softmax",
    ),
    Mistake(
        name="attention_scaled",
        cell="attention",
        code='''
def attention(query, keys, values):
    scores = dot_product_scores(query, keys) / query.shape[-1] ** 0.5
    weights = torch.softmax(scores, dim=-1)
    return torch.bmm(weights, values), weights
''',
        message="it looks like you divided the scores by sqrt(d_k)",
    ),
    Mistake(
        name="attention_returns_weights_first",
        cell="attention",
        code='''
def attention(query, keys, values):
    weights = torch.softmax(dot_product_scores(query, keys), dim=-1)
    return weights, torch.bmm(weights, values)
''',
        message="it looks like you returned (weights, context) instead of (context, weights)",
    ),
]
