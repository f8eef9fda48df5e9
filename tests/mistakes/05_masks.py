"""Typical mistakes in lab 05: each must lose points and show the message that names it."""

from catalogue import Mistake
from catalogue import with_replacements as _with

# Correct answers; each mistake below changes one part of one of them, or is a short answer.
_PADDING = '''
def padding_mask(lengths, max_length=None):
    if max_length is None:
        max_length = int(lengths.max())
    if max_length < int(lengths.max()):
        raise ValueError(f"max_length must be at least the longest length, got {max_length}")
    if bool((lengths < 0).any()):
        raise ValueError(f"lengths must be non-negative, got {lengths.tolist()}")
    return torch.arange(max_length)[None, :] < lengths[:, None]
'''

_DECODER = '''
def decoder_mask(n_queries, n_keys, window=None):
    for size in (n_queries, n_keys, 1 if window is None else window):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"sizes must be positive integers, got {size!r}")
    if n_queries > n_keys:
        raise ValueError("n_queries must be at most n_keys")
    back = torch.arange(n_keys - n_queries, n_keys)[:, None] - torch.arange(n_keys)[None, :]
    return (back >= 0) if window is None else (back >= 0) & (back < window)
'''

_SOFTMAX = '''
def masked_softmax(scores, mask, dim=-1):
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be boolean, got {mask.dtype}")
    filled = scores.masked_fill(~mask, float("-inf"))
    largest = filled.amax(dim=dim, keepdim=True)
    largest = largest.masked_fill(largest == float("-inf"), 0.0)
    exps = (filled - largest).exp()
    total = exps.sum(dim=dim, keepdim=True)
    return exps / total.masked_fill(total == 0, 1.0)
'''

_EMPTY_ROW_SHIFT = '    largest = largest.masked_fill(largest == float("-inf"), 0.0)\n'
_PADDING_CHECKS = '''\
    if max_length < int(lengths.max()):
        raise ValueError(f"max_length must be at least the longest length, got {max_length}")
    if bool((lengths < 0).any()):
        raise ValueError(f"lengths must be non-negative, got {lengths.tolist()}")
'''

# The catalogue's correct answers, by cell: each gets every point (tests/lessons/test_autograde.py).
BASES = {"padding_mask": _PADDING, "decoder_mask": _DECODER, "masked_softmax": _SOFTMAX}

MISTAKES = [
    Mistake("padding_off_by_one", "padding_mask", _with(_PADDING, ":] <", ":] <="),
            "used <= instead of <"),
    Mistake("padding_ignores_max_len", "padding_mask",
            _with(_PADDING,
                  '''\
    if max_length is None:
        max_length = int(lengths.max())
    if max_length < int(lengths.max()):
''', "    if max_length is not None and max_length < int(lengths.max()):\n",
                  "torch.arange(max_length)[None,", "torch.arange(int(lengths.max()))[None,"),
            "the mask must have max_length columns when max_length is given"),
    Mistake("padding_inverted", "padding_mask",
            _with(_PADDING, ":] <", ":] >="),
            "inverted the mask: True must mark the real positions"),
    Mistake("padding_not_validated", "padding_mask",
            _with(_PADDING, _PADDING_CHECKS, ""),
            "padding_mask([2, 3, 1], max_length=2) did not raise ValueError"),
    Mistake("decoder_queries_from_zero", "decoder_mask",
            _with(_DECODER,
                  '''\
    back = torch.arange(n_keys - n_queries, n_keys)[:, None] - torch.arange(n_keys)[None, :]
    return (back >= 0) if window is None else (back >= 0) & (back < window)
''', "    return torch.ones(n_queries, n_keys, dtype=torch.bool).tril()\n"),
            "it looks like you counted the queries from position 0"),
    Mistake("decoder_upper_triangular", "decoder_mask",
            _with(_DECODER,
                  '''\
    back = torch.arange(n_keys - n_queries, n_keys)[:, None] - torch.arange(n_keys)[None, :]
    return (back >= 0) if window is None else (back >= 0) & (back < window)
''', '''\
    positions = torch.arange(n_keys - n_queries, n_keys)[:, None]
    return torch.arange(n_keys)[None, :] >= positions
'''),
            "built an upper-triangular mask"),
    Mistake("decoder_without_diagonal", "decoder_mask",
            _with(_DECODER,
                  ">= 0) if window is None else (back >= 0) & (back <",
                  "> 0) if window is None else (back > 0) & (back <="),
            "left out the diagonal"),
    Mistake("decoder_window_one_too_wide", "decoder_mask", _with(_DECODER, "(back <", "(back <="),
            "let each query see window + 1 keys"),
    Mistake("decoder_more_queries_than_keys_accepted", "decoder_mask",
            _with(_DECODER,
                  '''\
    if n_queries > n_keys:
        raise ValueError("n_queries must be at most n_keys")
''', ""),
            "decoder_mask(5, 3) did not raise ValueError"),
    Mistake("softmax_nan_rows", "masked_softmax",
            _with(_SOFTMAX, _EMPTY_ROW_SHIFT, "", "total.masked_fill(total == 0, 1.0)", "total"),
            "the fully masked row 1 is 0 / 0 = NaN"),
    Mistake("softmax_uniform_rows", "masked_softmax",
            _with(_SOFTMAX, 'masked_fill(~mask, float("-inf"))', "masked_fill(~mask, -1e9)"),
            "row 1 became uniform instead of all zeros"),
    Mistake("softmax_masked_afterwards", "masked_softmax",
            _with(_SOFTMAX, 'scores.masked_fill(~mask, float("-inf"))', "scores",
                  "return exps / total.masked_fill(total == 0, 1.0)", "return exps / total * mask"),
            "multiplied the weights by the mask after the softmax without renormalising"),
    Mistake("softmax_inverted_mask", "masked_softmax",
            _with(_SOFTMAX,
                  '''\
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be boolean, got {mask.dtype}")
    filled = scores.masked_fill(~mask, float("-inf"))
''', '    filled = scores.masked_fill(mask, float("-inf"))\n'),
            "inverted the mask: True means may attend"),
    Mistake("softmax_shift_includes_masked", "masked_softmax",
            _with(_SOFTMAX,
                  '''\
    filled = scores.masked_fill(~mask, float("-inf"))
    largest = filled.amax(dim=dim, keepdim=True)
    largest = largest.masked_fill(largest == float("-inf"), 0.0)
    exps = (filled - largest).exp()
''', "    exps = (scores - scores.amax(dim=dim, keepdim=True)).exp() * mask\n",
                  "total.masked_fill(total == 0, 1.0)", "total.clamp_min(1e-30)"),
            "shifted by the largest score of the row, masked ones included"),
    Mistake("softmax_additive_mask_nan_gradient", "masked_softmax",
            # Not a change of _SOFTMAX: another structure, an additive mask and torch.softmax.
            '''
def masked_softmax(scores, mask, dim=-1):
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be boolean, got {mask.dtype}")
    additive = torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))
    return torch.softmax(scores + additive, dim=dim).nan_to_num(0.0)
''',
            "still flows backward after you replace it by 0"),
    Mistake("softmax_largest_along_the_last_dimension", "masked_softmax",
            _with(_SOFTMAX, "filled.amax(dim=dim,", "filled.amax(dim=-1,"),
            "took the largest allowed score along the last dimension instead of along `dim`"),
    Mistake("softmax_always_last_dimension", "masked_softmax",
            _with(_SOFTMAX,
                  "filled.amax(dim=dim,", "filled.amax(dim=-1,",
                  "exps.sum(dim=dim,", "exps.sum(dim=-1,"),
            "normalised over the last dimension whatever `dim` was"),
]
