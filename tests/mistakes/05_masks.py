"""Typical mistakes in lab 05: each must lose points and show the message that names it."""

from course.coursedir.scratch import Mistake

MISTAKES = [
    Mistake(
        name="padding_off_by_one",
        cell="padding_mask",
        code='''
def padding_mask(lengths, max_length=None):
    if max_length is None:
        max_length = int(lengths.max())
    if max_length < int(lengths.max()):
        raise ValueError(f"max_length must be at least the longest length, got {max_length}")
    if bool((lengths < 0).any()):
        raise ValueError(f"lengths must be non-negative, got {lengths.tolist()}")
    return torch.arange(max_length)[None, :] <= lengths[:, None]
''',
        message="used <= instead of <",
    ),
    Mistake(
        name="padding_ignores_max_len",
        cell="padding_mask",
        code='''
def padding_mask(lengths, max_length=None):
    if max_length is not None and max_length < int(lengths.max()):
        raise ValueError(f"max_length must be at least the longest length, got {max_length}")
    if bool((lengths < 0).any()):
        raise ValueError(f"lengths must be non-negative, got {lengths.tolist()}")
    return torch.arange(int(lengths.max()))[None, :] < lengths[:, None]
''',
        message="the mask must have max_length columns when max_length is given",
    ),
    Mistake(
        name="padding_inverted",
        cell="padding_mask",
        code='''
def padding_mask(lengths, max_length=None):
    if max_length is None:
        max_length = int(lengths.max())
    return torch.arange(max_length)[None, :] >= lengths[:, None]
''',
        message="inverted the mask: True must mark the real positions",
    ),
    Mistake(
        name="padding_not_validated",
        cell="padding_mask",
        code='''
def padding_mask(lengths, max_length=None):
    if max_length is None:
        max_length = int(lengths.max())
    return torch.arange(max_length)[None, :] < lengths[:, None]
''',
        message="padding_mask([2, 3, 1], max_length=2) did not raise ValueError",
    ),
    Mistake(
        name="decoder_queries_from_zero",
        cell="decoder_mask",
        code='''
def decoder_mask(n_queries, n_keys, window=None):
    if n_queries > n_keys or window == 0:
        raise ValueError("n_queries must be at most n_keys, and window positive")
    return torch.ones(n_queries, n_keys, dtype=torch.bool).tril()
''',
        message="it looks like you counted the queries from position 0",
    ),
    Mistake(
        name="decoder_upper_triangular",
        cell="decoder_mask",
        code='''
def decoder_mask(n_queries, n_keys, window=None):
    if n_queries > n_keys or window == 0:
        raise ValueError("n_queries must be at most n_keys, and window positive")
    positions = torch.arange(n_keys - n_queries, n_keys)[:, None]
    return torch.arange(n_keys)[None, :] >= positions
''',
        message="built an upper-triangular mask",
    ),
    Mistake(
        name="decoder_without_diagonal",
        cell="decoder_mask",
        code='''
def decoder_mask(n_queries, n_keys, window=None):
    if n_queries > n_keys or window == 0:
        raise ValueError("n_queries must be at most n_keys, and window positive")
    back = torch.arange(n_keys - n_queries, n_keys)[:, None] - torch.arange(n_keys)[None, :]
    return (back > 0) if window is None else (back > 0) & (back <= window)
''',
        message="left out the diagonal",
    ),
    Mistake(
        name="decoder_window_one_too_wide",
        cell="decoder_mask",
        code='''
def decoder_mask(n_queries, n_keys, window=None):
    if n_queries > n_keys or window == 0:
        raise ValueError("n_queries must be at most n_keys, and window positive")
    back = torch.arange(n_keys - n_queries, n_keys)[:, None] - torch.arange(n_keys)[None, :]
    return (back >= 0) if window is None else (back >= 0) & (back <= window)
''',
        message="let each query see window + 1 keys",
    ),
    Mistake(
        name="decoder_more_queries_than_keys_accepted",
        cell="decoder_mask",
        code='''
def decoder_mask(n_queries, n_keys, window=None):
    back = torch.arange(n_keys - n_queries, n_keys)[:, None] - torch.arange(n_keys)[None, :]
    return (back >= 0) if not window else (back >= 0) & (back < window)
''',
        message="decoder_mask(5, 3) did not raise ValueError",
    ),
    Mistake(
        name="softmax_nan_rows",
        cell="masked_softmax",
        code='''
def masked_softmax(scores, mask, dim=-1):
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=dim)
''',
        message="the fully masked row 1 is 0 / 0 = NaN",
    ),
    Mistake(
        name="softmax_uniform_rows",
        cell="masked_softmax",
        code='''
def masked_softmax(scores, mask, dim=-1):
    return torch.softmax(scores.masked_fill(~mask, -1e9), dim=dim)
''',
        message="row 1 became uniform instead of all zeros",
    ),
    Mistake(
        name="softmax_masked_afterwards",
        cell="masked_softmax",
        code='''
def masked_softmax(scores, mask, dim=-1):
    return torch.softmax(scores, dim=dim) * mask
''',
        message="multiplied the weights by the mask after the softmax without renormalising",
    ),
    Mistake(
        name="softmax_inverted_mask",
        cell="masked_softmax",
        code='''
def masked_softmax(scores, mask, dim=-1):
    filled = scores.masked_fill(mask, float("-inf"))
    largest = filled.amax(dim=dim, keepdim=True)
    largest = largest.masked_fill(largest == float("-inf"), 0.0)
    exps = (filled - largest).exp()
    total = exps.sum(dim=dim, keepdim=True)
    return exps / total.masked_fill(total == 0, 1.0)
''',
        message="inverted the mask: True means may attend",
    ),
    Mistake(
        name="softmax_shift_includes_masked",
        cell="masked_softmax",
        code='''
def masked_softmax(scores, mask, dim=-1):
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be boolean, got {mask.dtype}")
    exps = (scores - scores.amax(dim=dim, keepdim=True)).exp() * mask
    total = exps.sum(dim=dim, keepdim=True)
    return exps / total.clamp_min(1e-30)
''',
        message="shifted by the largest score of the row, masked ones included",
    ),
    Mistake(
        name="softmax_additive_mask_nan_gradient",
        cell="masked_softmax",
        code='''
def masked_softmax(scores, mask, dim=-1):
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be boolean, got {mask.dtype}")
    additive = torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
    return torch.softmax(scores + additive, dim=dim).nan_to_num(0.0)
''',
        message="still flows backward after you replace it by 0",
    ),
    Mistake(
        name="softmax_always_last_dimension",
        cell="masked_softmax",
        code='''
def masked_softmax(scores, mask, dim=-1):
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be boolean, got {mask.dtype}")
    filled = scores.masked_fill(~mask, float("-inf"))
    largest = filled.amax(dim=-1, keepdim=True)
    largest = largest.masked_fill(largest == float("-inf"), 0.0)
    exps = (filled - largest).exp()
    total = exps.sum(dim=-1, keepdim=True)
    return exps / total.masked_fill(total == 0, 1.0)
''',
        message="normalised over the last dimension whatever `dim` was",
    ),
]
