"""Typical mistakes in lab 03: each must lose points and show the message that names it."""

from course.coursedir.scratch import Mistake
from course.coursedir.scratch import with_replacements as _with

# The correct answer; each mistake about `scale` and additive masks below changes one part of it.
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

MISTAKES = [
    Mistake(
        name="no_scaling",
        cell="scaled_dot_product_attention",
        code='''
def scaled_dot_product_attention(query, keys, values, mask=None, scale=None):
    scores = query @ keys.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ values, weights
''',
        message="it looks like you did not scale the scores",
    ),
    Mistake(
        name="scaled_by_d_k",
        cell="scaled_dot_product_attention",
        code='''
def scaled_dot_product_attention(query, keys, values, mask=None, scale=None):
    scores = query @ keys.transpose(-2, -1) / query.shape[-1]
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ values, weights
''',
        message="it looks like you divided the scores by d_k instead of sqrt(d_k)",
    ),
    Mistake(
        name="scaled_by_sequence_length",
        cell="scaled_dot_product_attention",
        code='''
def scaled_dot_product_attention(query, keys, values, mask=None, scale=None):
    scores = query @ keys.transpose(-2, -1) / keys.shape[-2]
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ values, weights
''',
        message="it looks like you divided the scores by the number of keys instead of sqrt(d_k)",
    ),
    Mistake(
        name="scaled_by_value_size",
        cell="scaled_dot_product_attention",
        code='''
def scaled_dot_product_attention(query, keys, values, mask=None, scale=None):
    scores = query @ keys.transpose(-2, -1) / math.sqrt(values.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ values, weights
''',
        message="it looks like you divided the scores by the square root of the size of the values",
    ),
    Mistake(
        name="scaled_by_first_dimension",
        cell="scaled_dot_product_attention",
        code='''
def scaled_dot_product_attention(query, keys, values, mask=None, scale=None):
    scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[0])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ values, weights
''',
        message="divided the scores by the square root of the first dimension",
    ),
    Mistake(
        name="mask_inverted",
        cell="scaled_dot_product_attention",
        code='''
def scaled_dot_product_attention(query, keys, values, mask=None, scale=None):
    scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ values, weights
''',
        message="it looks like you inverted the mask: True means the key MAY be attended to",
    ),
    Mistake(
        name="mask_ignored",
        cell="scaled_dot_product_attention",
        code='''
def scaled_dot_product_attention(query, keys, values, mask=None, scale=None):
    scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return weights @ values, weights
''',
        message="it looks like you ignored the mask",
    ),
    Mistake(
        name="mask_applied_after_softmax",
        cell="scaled_dot_product_attention",
        code='''
def scaled_dot_product_attention(query, keys, values, mask=None, scale=None):
    scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights * mask
    return weights @ values, weights
''',
        message="it looks like you set the weights to 0 after the softmax",
    ),
    Mistake(
        name="softmax_over_queries",
        cell="scaled_dot_product_attention",
        code='''
def scaled_dot_product_attention(query, keys, values, mask=None, scale=None):
    scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-2)
    return weights @ values, weights
''',
        message="it looks like you applied the softmax over the queries instead of over the keys",
    ),
    Mistake(
        name="context_from_keys",
        cell="scaled_dot_product_attention",
        code='''
def scaled_dot_product_attention(query, keys, values, mask=None, scale=None):
    scores = query @ keys.transpose(-2, -1) / math.sqrt(query.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ keys, weights
''',
        message="it looks like you built the context from the keys instead of the values",
    ),
    Mistake(
        name="only_three_dimensions",
        cell="scaled_dot_product_attention",
        code='''
def scaled_dot_product_attention(query, keys, values, mask=None, scale=None):
    scores = torch.bmm(query, keys.transpose(1, 2)) / math.sqrt(query.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return torch.bmm(weights, values), weights
''',
        message="torch.bmm only takes 3-D tensors",
    ),
    Mistake(
        name="scale_ignored",
        cell="scaled_dot_product_attention",
        code=_with(_ATTENTION, "keys.transpose(-2, -1) * scale",
                   "keys.transpose(-2, -1) / math.sqrt(query.shape[-1])"),
        message="it looks like you ignored `scale`",
    ),
    Mistake(
        name="scale_divides",
        cell="scaled_dot_product_attention",
        code=_with(_ATTENTION, "scale = 1 / math.sqrt(query.shape[-1])",
                   "scale = math.sqrt(query.shape[-1])", "* scale", "/ scale"),
        message="it looks like you divided the scores by `scale` instead of multiplying them",
    ),
    Mistake(
        name="additive_mask_read_as_boolean",
        cell="scaled_dot_product_attention",
        code=_with(_ATTENTION, "if mask is not None and mask.dtype == torch.bool:",
                   "if mask is not None:", "~mask,", "~mask.bool(),"),
        message="it looks like you read the additive mask as a boolean one",
    ),
    Mistake(
        name="additive_mask_not_handled",
        cell="scaled_dot_product_attention",
        code=_with(_ATTENTION, "if mask is not None and mask.dtype == torch.bool:",
                   "if mask is not None:"),
        message="failed on a float mask",
    ),
    Mistake(
        name="additive_mask_hides_nonzero",
        cell="scaled_dot_product_attention",
        code=_with(_ATTENTION, "        scores = scores + mask\n",
                   "        scores = scores.masked_fill(mask != 0, float(\"-inf\"))\n"),
        message="hid the keys where the float mask is not 0",
    ),
    Mistake(
        name="integer_mask_added",
        cell="scaled_dot_product_attention",
        code=_with(_ATTENTION, "not (mask.dtype == torch.bool or mask.is_floating_point())",
                   "mask.dim() > 4"),
        message="did not raise ValueError",
    ),
]
