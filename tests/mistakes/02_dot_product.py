"""Typical mistakes in lab 02: each must lose points and show the message that names it."""

from catalogue import Mistake
from catalogue import with_replacements as _with

# Correct answers; each mistake below changes one part of one of them.
_SCORES = '''
def packed_scores(queries, keys):
    if not queries or len(queries) != len(keys):
        raise ValueError("queries and keys must be two non-empty lists of the same length")
    if min(len(k) for k in keys) == 0:
        raise ValueError("every sequence needs at least one key")
    tensors = [*queries, *keys]
    if len({t.shape[1:] for t in tensors}) != 1 or any(t.dim() != 2 for t in tensors):
        raise ValueError("queries and keys must all be (L, d_k) with one d_k")
    padded_queries = pad_sequence(queries, batch_first=True)
    padded_keys = pad_sequence(keys, batch_first=True)
    scores = torch.bmm(padded_queries, padded_keys.transpose(1, 2))
    real_keys = torch.arange(padded_keys.shape[1]) < torch.tensor([len(k) for k in keys])[:, None]
    return scores.masked_fill(~real_keys[:, None, :], float("-inf"))
'''

_ATTENTION = '''
def packed_attention(queries, keys, values):
    if len(values) != len(keys) or any(len(v) != len(k) for v, k in zip(values, keys)):
        raise ValueError("values must hold one value per key")
    weights = torch.softmax(packed_scores(queries, keys), dim=-1)
    context = torch.bmm(weights, pad_sequence(values, batch_first=True))
    return [(context[n, :len(q)], weights[n, :len(q), :len(k)])
            for n, (q, k) in enumerate(zip(queries, keys))]
'''

# The catalogue's correct answers, by cell: each gets every point (tests/lessons/test_autograde.py).
BASES = {"packed_scores": _SCORES, "packed_attention": _ATTENTION}

MISTAKES = [
    Mistake("scores_padding_not_masked", "packed_scores",
            _with(_SCORES,
                  '''\
    scores = torch.bmm(padded_queries, padded_keys.transpose(1, 2))
    real_keys = torch.arange(padded_keys.shape[1]) < torch.tensor([len(k) for k in keys])[:, None]
    return scores.masked_fill(~real_keys[:, None, :], float("-inf"))
''', "    return torch.bmm(padded_queries, padded_keys.transpose(1, 2))\n"),
            "it looks like you left the padded keys at score 0"),
    Mistake("scores_padded_query_rows_masked", "packed_scores",
            _with(_SCORES,
                  '    return scores.masked_fill(~real_keys[:, None, :], float("-inf"))\n', '''\
    real_queries = torch.arange(padded_queries.shape[1]) < torch.tensor(
        [len(q) for q in queries])[:, None]
    allowed = real_queries[:, :, None] & real_keys[:, None, :]
    return scores.masked_fill(~allowed, float("-inf"))
'''),
            "it looks like you set the rows of the padded queries to -inf too"),
    Mistake("scores_keys_times_queries", "packed_scores",
            _with(_SCORES,
                  "torch.bmm(padded_queries, padded_keys.transpose(1,",
                  "torch.bmm(padded_keys, padded_queries.transpose(1,",
                  "None, :],", ":, None],"),
            "it looks like you multiplied the keys by the queries"),
    Mistake("scores_scaled_too_early", "packed_scores",
            _with(_SCORES,
                  "torch.bmm(padded_queries, padded_keys.transpose(1, 2))",
                  "padded_queries @ padded_keys.transpose(1, 2) / padded_keys.shape[-1] ** 0.5"),
            "it looks like you scaled the scores by 1/sqrt(d_k)"),
    Mistake("attention_softmax_over_queries", "packed_attention",
            _with(_ATTENTION, "dim=-1)", "dim=1)"),
            "it looks like you applied the softmax over the queries"),
    Mistake("attention_padding_kept", "packed_attention",
            _with(_ATTENTION,
                  '''\
    return [(context[n, :len(q)], weights[n, :len(q), :len(k)])
            for n, (q, k) in enumerate(zip(queries, keys))]
''', "    return [(context[n], weights[n]) for n in range(len(queries))]\n"),
            "it looks like you returned the padded results"),
    Mistake("attention_context_from_keys", "packed_attention",
            _with(_ATTENTION, "pad_sequence(values,", "pad_sequence(keys,"),
            "it looks like you built the context from the keys instead of the values"),
    Mistake("attention_without_softmax", "packed_attention",
            _with(_ATTENTION,
                  '''\
    weights = torch.softmax(packed_scores(queries, keys), dim=-1)
    context = torch.bmm(weights, pad_sequence(values, batch_first=True))
    return [(context[n, :len(q)], weights[n, :len(q), :len(k)])
''', '''\
    scores = packed_scores(queries, keys).nan_to_num(neginf=0.0)
    context = torch.bmm(scores, pad_sequence(values, batch_first=True))
    return [(context[n, :len(q)], scores[n, :len(q), :len(k)])
'''),
            "it looks like you forgot the softmax"),
]
