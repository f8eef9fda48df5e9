"""Typical mistakes in lab 03: each must lose points and show the message that names it."""

from catalogue import Mistake
from catalogue import with_replacements as _with

# The correct answer; each mistake below changes one part of it or of _BOOLEAN_ONLY.
_ATTENTION = '''
def scaled_dot_product_attention(query, keys, values, mask=None, scale=None):
    if mask is not None and not (mask.dtype == torch.bool or mask.is_floating_point()):
        raise ValueError(f"mask must be boolean or float, got dtype {mask.dtype}")
    if scale is None:
        scale = 1 / math.sqrt(query.shape[-1])
    scores = query @ keys.transpose(-2, -1) * scale
    if mask is not None and mask.dtype == torch.bool:
        scores = scores.masked_fill(~mask, float("-inf"))
    elif mask is not None:
        scores = scores + mask
    weights = torch.softmax(scores, dim=-1)
    return weights @ values, weights
'''

# The answer for a boolean mask and the default scale alone: the first mistakes change it.
_BOOLEAN_ONLY = _with(
    _ATTENTION,
    """    if mask is not None and not (mask.dtype == torch.bool or mask.is_floating_point()):
        raise ValueError(f"mask must be boolean or float, got dtype {mask.dtype}")
    if scale is None:
        scale = 1 / math.sqrt(query.shape[-1])
""", "",
    "* scale", "/ math.sqrt(query.shape[-1])",
    "if mask is not None and mask.dtype == torch.bool:", "if mask is not None:",
    """    elif mask is not None:
        scores = scores + mask
""", "",
)

# The catalogue's correct answers, by cell: each gets every point (tests/lessons/test_autograde.py).
BASES = {"scaled_dot_product_attention": _ATTENTION}

MISTAKES = [
    Mistake("no_scaling", "scaled_dot_product_attention",
            _with(_BOOLEAN_ONLY, " / math.sqrt(query.shape[-1])", ""),
            "it looks like you did not scale the scores"),
    Mistake("scaled_by_d_k", "scaled_dot_product_attention",
            _with(_BOOLEAN_ONLY, "math.sqrt(query.shape[-1])", "query.shape[-1]"),
            "it looks like you divided the scores by d_k instead of sqrt(d_k)"),
    Mistake("scaled_by_sequence_length", "scaled_dot_product_attention",
            _with(_BOOLEAN_ONLY, "math.sqrt(query.shape[-1])", "keys.shape[-2]"),
            "it looks like you divided the scores by the number of keys instead of sqrt(d_k)"),
    Mistake("scaled_by_value_size", "scaled_dot_product_attention",
            _with(_BOOLEAN_ONLY, "math.sqrt(query.shape[-1])", "math.sqrt(values.shape[-1])"),
            "it looks like you divided the scores by the square root of the size of the values"),
    Mistake("scaled_by_first_dimension", "scaled_dot_product_attention",
            _with(_BOOLEAN_ONLY, "math.sqrt(query.shape[-1])", "math.sqrt(query.shape[0])"),
            "divided the scores by the square root of the first dimension"),
    Mistake("mask_inverted", "scaled_dot_product_attention",
            _with(_BOOLEAN_ONLY, "scores.masked_fill(~mask,", "scores.masked_fill(mask,"),
            "it looks like you inverted the mask: True means the key MAY be attended to"),
    Mistake("mask_ignored", "scaled_dot_product_attention",
            _with(_BOOLEAN_ONLY,
                  '''\
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
''', ""),
            "it looks like you ignored the mask"),
    Mistake("mask_applied_after_softmax", "scaled_dot_product_attention",
            _with(_BOOLEAN_ONLY, """    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
""", """    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights * mask
"""),
            "it looks like you set the weights to 0 after the softmax"),
    Mistake("softmax_over_queries", "scaled_dot_product_attention",
            _with(_BOOLEAN_ONLY, "dim=-1)", "dim=-2)"),
            "it looks like you applied the softmax over the queries instead of over the keys"),
    Mistake("context_from_keys", "scaled_dot_product_attention",
            _with(_BOOLEAN_ONLY, "@ values,", "@ keys,"),
            "it looks like you built the context from the keys instead of the values"),
    Mistake("only_three_dimensions", "scaled_dot_product_attention",
            _with(_BOOLEAN_ONLY,
                  "query @ keys.transpose(-2, -1)", "torch.bmm(query, keys.transpose(1, 2))",
                  "weights @ values,", "torch.bmm(weights, values),"),
            "torch.bmm only takes 3-D tensors"),
    Mistake("scale_ignored", "scaled_dot_product_attention",
            _with(_ATTENTION, "* scale", "/ math.sqrt(query.shape[-1])"),
            "it looks like you ignored `scale`"),
    Mistake("scale_divides", "scaled_dot_product_attention",
            _with(_ATTENTION,
                  '''\
        scale = 1 / math.sqrt(query.shape[-1])
    scores = query @ keys.transpose(-2, -1) * scale
''', '''\
        scale = math.sqrt(query.shape[-1])
    scores = query @ keys.transpose(-2, -1) / scale
'''),
            "it looks like you divided the scores by `scale` instead of multiplying them"),
    Mistake("additive_mask_read_as_boolean", "scaled_dot_product_attention",
            _with(_ATTENTION,
                  '''\
    if mask is not None and mask.dtype == torch.bool:
        scores = scores.masked_fill(~mask, float("-inf"))
''', '''\
    if mask is not None:
        scores = scores.masked_fill(~mask.bool(), float("-inf"))
'''),
            "it looks like you read the additive mask as a boolean one"),
    Mistake("additive_mask_not_handled", "scaled_dot_product_attention",
            _with(_ATTENTION, "None and mask.dtype == torch.bool:", "None:"),
            "failed on a float mask"),
    Mistake("additive_mask_hides_nonzero", "scaled_dot_product_attention",
            _with(_ATTENTION, "scores + mask", 'scores.masked_fill(mask != 0, float("-inf"))'),
            "hid the keys where the float mask is not 0"),
    Mistake("integer_mask_added", "scaled_dot_product_attention",
            _with(_ATTENTION,
                  "not (mask.dtype == torch.bool or mask.is_floating_point())",
                  "mask.dim() > 4"),
            "did not raise ValueError"),
]
