"""Correct answers to lab 03 in other styles: each must get every point and have no finding."""

from catalogue import Variant

VARIANTS = [
    Variant(
        name="einsum_where_and_finfo_min",
        cell="scaled_dot_product_attention",
        code='''
from typing import Optional


def scaled_dot_product_attention(
    query: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: Optional[torch.Tensor] = None,
    scale: Optional[float] = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention of query (..., Lq, d_k) on keys (..., Lk, d_k), values (..., Lk, d_v)."""
    scale = query.size(-1) ** -0.5 if scale is None else scale
    scores = torch.einsum("...qd,...kd->...qk", query, keys) * scale  # (..., Lq, Lk)
    if mask is None:
        bias = torch.zeros((), dtype=scores.dtype)
    elif mask.dtype == torch.bool:
        hidden = torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype)
        bias = torch.where(mask, torch.zeros((), dtype=scores.dtype), hidden)
    elif torch.is_floating_point(mask):
        bias = mask
    else:
        raise ValueError(f"expected a torch.bool or floating mask, got dtype {mask.dtype}")
    weights = F.softmax(scores + bias, dim=-1)  # (..., Lq, Lk)
    return torch.einsum("...qk,...kd->...qd", weights, values), weights
''',
    ),
    Variant(
        name="masked_fill_with_an_error_naming_the_kinds_in_words",
        cell="scaled_dot_product_attention",
        code='''
def scaled_dot_product_attention(query, keys, values, mask=None, scale=None):
    """Attention of query (..., Lq, d_k) on keys (..., Lk, d_k), values (..., Lk, d_v)."""
    if scale is None:
        scale = 1.0 / math.sqrt(query.size(-1))
    scores = torch.matmul(query, keys.transpose(-2, -1)) * scale  # (..., Lq, Lk)
    if mask is not None:
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(mask.logical_not(), float("-inf"))
        elif mask.is_floating_point():
            scores = scores + mask
        else:
            raise ValueError(
                "mask must be boolean (True = may attend) or floating point (added to the "
                f"scores), got {mask.dtype}"
            )
    weights = F.softmax(scores, dim=-1)  # (..., Lq, Lk)
    return torch.matmul(weights, values), weights
''',
    ),
]
