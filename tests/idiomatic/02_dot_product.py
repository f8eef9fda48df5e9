"""Correct answers to lab 02 in other styles: each must get every point and have no finding."""

from catalogue import Variant

VARIANTS = [
    Variant(
        name="packed_scores_filled_by_hand_with_einsum",
        cell="packed_scores",
        code='''
def packed_scores(queries, keys):
    """Scores (N, max Lq, max Lk); -inf where a sequence has no key."""
    if len(queries) == 0 or len(queries) != len(keys):
        raise ValueError(f"expected two non-empty lists of one length: {len(queries)}, {len(keys)}")
    if any(key.shape[0] == 0 for key in keys):
        raise ValueError("expected at least one key in every sequence")
    d_k = queries[0].shape[-1]
    if any(tensor.dim() != 2 or tensor.shape[-1] != d_k for tensor in [*queries, *keys]):
        raise ValueError(f"expected (L, {d_k}) tensors for every query and key")
    n, lq, lk = len(queries), max(q.shape[0] for q in queries), max(k.shape[0] for k in keys)
    padded_queries = queries[0].new_zeros(n, lq, d_k)
    padded_keys = keys[0].new_zeros(n, lk, d_k)
    is_padding = torch.ones(n, lk, dtype=torch.bool)
    for i, (query, key) in enumerate(zip(queries, keys)):
        padded_queries[i, : query.shape[0]] = query
        padded_keys[i, : key.shape[0]] = key
        is_padding[i, : key.shape[0]] = False
    scores = torch.einsum("nqd,nkd->nqk", padded_queries, padded_keys)
    return scores.masked_fill(is_padding.unsqueeze(1), -torch.inf)
''',
    ),
    Variant(
        name="packed_attention_unpadded_with_a_loop",
        cell="packed_attention",
        code='''
def packed_attention(queries, keys, values):
    """One (context, weights) pair per sequence, from one batched softmax and product."""
    if [len(v) for v in values] != [len(k) for k in keys]:
        raise ValueError("expected one value per key in every sequence")
    weights = packed_scores(queries, keys).softmax(dim=-1)
    context = weights @ pad_sequence(values, batch_first=True)
    pairs = []
    for n in range(len(queries)):
        lq, lk = queries[n].shape[0], keys[n].shape[0]
        pairs.append((context[n, :lq, :], weights[n, :lq, :lk]))
    return pairs
''',
    ),
]
