"""Typical mistakes in lab 02: each must lose points and show the message that names it."""

from course.coursedir.scratch import Mistake

MISTAKES = [
    Mistake(
        name="scores_padding_not_masked",
        cell="packed_scores",
        code='''
def packed_scores(queries, keys):
    padded_queries = pad_sequence(queries, batch_first=True)
    padded_keys = pad_sequence(keys, batch_first=True)
    return torch.bmm(padded_queries, padded_keys.transpose(1, 2))
''',
        message="it looks like you left the padded keys at score 0",
    ),
    Mistake(
        name="scores_padded_query_rows_masked",
        cell="packed_scores",
        code='''
def packed_scores(queries, keys):
    padded_queries = pad_sequence(queries, batch_first=True)
    padded_keys = pad_sequence(keys, batch_first=True)
    scores = torch.bmm(padded_queries, padded_keys.transpose(1, 2))
    real_keys = torch.arange(padded_keys.shape[1]) < torch.tensor([len(k) for k in keys])[:, None]
    real_queries = torch.arange(padded_queries.shape[1]) < torch.tensor(
        [len(q) for q in queries])[:, None]
    allowed = real_queries[:, :, None] & real_keys[:, None, :]
    return scores.masked_fill(~allowed, float("-inf"))
''',
        message="it looks like you set the rows of the padded queries to -inf too",
    ),
    Mistake(
        name="scores_keys_times_queries",
        cell="packed_scores",
        code='''
def packed_scores(queries, keys):
    padded_queries = pad_sequence(queries, batch_first=True)
    padded_keys = pad_sequence(keys, batch_first=True)
    scores = torch.bmm(padded_keys, padded_queries.transpose(1, 2))
    real_keys = torch.arange(padded_keys.shape[1]) < torch.tensor([len(k) for k in keys])[:, None]
    return scores.masked_fill(~real_keys[:, :, None], float("-inf"))
''',
        message="it looks like you multiplied the keys by the queries",
    ),
    Mistake(
        name="scores_scaled_too_early",
        cell="packed_scores",
        code='''
def packed_scores(queries, keys):
    if not queries or len(queries) != len(keys):
        raise ValueError("queries and keys must be two non-empty lists of the same length")
    padded_queries = pad_sequence(queries, batch_first=True)
    padded_keys = pad_sequence(keys, batch_first=True)
    scores = padded_queries @ padded_keys.transpose(1, 2) / padded_keys.shape[-1] ** 0.5
    real_keys = torch.arange(padded_keys.shape[1]) < torch.tensor([len(k) for k in keys])[:, None]
    return scores.masked_fill(~real_keys[:, None, :], float("-inf"))
''',
        message="it looks like you scaled the scores by 1/sqrt(d_k)",
    ),
    Mistake(
        name="attention_softmax_over_queries",
        cell="packed_attention",
        code='''
def packed_attention(queries, keys, values):
    weights = torch.softmax(packed_scores(queries, keys), dim=1)
    context = torch.bmm(weights, pad_sequence(values, batch_first=True))
    return [(context[n, :len(q)], weights[n, :len(q), :len(k)])
            for n, (q, k) in enumerate(zip(queries, keys))]
''',
        message="it looks like you applied the softmax over the queries",
    ),
    Mistake(
        name="attention_padding_kept",
        cell="packed_attention",
        code='''
def packed_attention(queries, keys, values):
    weights = torch.softmax(packed_scores(queries, keys), dim=-1)
    context = torch.bmm(weights, pad_sequence(values, batch_first=True))
    return [(context[n], weights[n]) for n in range(len(queries))]
''',
        message="it looks like you returned the padded results",
    ),
    Mistake(
        name="attention_context_from_keys",
        cell="packed_attention",
        code='''
def packed_attention(queries, keys, values):
    weights = torch.softmax(packed_scores(queries, keys), dim=-1)
    context = torch.bmm(weights, pad_sequence(keys, batch_first=True))
    return [(context[n, :len(q)], weights[n, :len(q), :len(k)])
            for n, (q, k) in enumerate(zip(queries, keys))]
''',
        message="it looks like you built the context from the keys instead of the values",
    ),
    Mistake(
        name="attention_without_softmax",
        cell="packed_attention",
        code='''
def packed_attention(queries, keys, values):
    scores = packed_scores(queries, keys).nan_to_num(neginf=0.0)
    context = torch.bmm(scores, pad_sequence(values, batch_first=True))
    return [(context[n, :len(q)], scores[n, :len(q), :len(k)])
            for n, (q, k) in enumerate(zip(queries, keys))]
''',
        message="it looks like you forgot the softmax",
    ),
]
