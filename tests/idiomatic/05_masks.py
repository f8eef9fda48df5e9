"""Correct answers to lab 05 in other styles: each must get every point and have no finding."""

from catalogue import Variant

VARIANTS = [
    Variant(
        name="padding_mask_with_hints_and_asserts",
        cell="padding_mask",
        code='''
from typing import Optional


def padding_mask(lengths: torch.Tensor, max_length: Optional[int] = None) -> torch.Tensor:
    """Boolean mask (N, max_length), True at the real positions."""
    lengths = torch.as_tensor(lengths)
    if bool((lengths < 0).any()):
        raise ValueError(f"lengths must be non-negative, got {lengths.tolist()}")
    longest = int(lengths.max()) if lengths.numel() else 0
    max_length = longest if max_length is None else max_length
    if max_length < longest:
        raise ValueError(f"max_length={max_length} is shorter than the longest length {longest}")
    mask = torch.arange(max_length).unsqueeze(0) < lengths.unsqueeze(1)
    assert mask.shape == (len(lengths), max_length)
    return mask
''',
    ),
    Variant(
        name="decoder_mask_from_tril_and_triu",
        cell="decoder_mask",
        code='''
from typing import Optional


def decoder_mask(n_queries: int, n_keys: int, window: Optional[int] = None) -> torch.Tensor:
    """Boolean mask (n_queries, n_keys) of the newest queries over a cache of keys."""
    for name, size in (("n_queries", n_queries), ("n_keys", n_keys), ("window", window)):
        if size is None and name == "window":
            continue
        if type(size) is not int or size <= 0:
            raise ValueError(f"{name} must be a positive int, got {size!r}")
    if n_queries > n_keys:
        raise ValueError(f"expected n_queries <= n_keys, got {n_queries} > {n_keys}")
    offset = n_keys - n_queries
    mask = torch.ones(n_queries, n_keys, dtype=torch.bool).tril(diagonal=offset)
    if window is not None:
        mask = mask.triu(diagonal=offset - window + 1)
    return mask


if __name__ == "__main__":
    print(decoder_mask(2, 5, window=3).int())
''',
    ),
    Variant(
        name="masked_softmax_with_input_and_helpers",
        cell="masked_softmax",
        code='''
def finite_row_maximum(filled, dim):
    """The largest allowed score along `dim` (keepdim), 0 where a row allows nothing."""
    largest = filled.amax(dim=dim, keepdim=True)
    return torch.where(torch.isneginf(largest), torch.zeros_like(largest), largest)


def masked_softmax(input, mask, dim=-1):
    """Softmax of `input` along `dim` over the positions where `mask` is True."""
    if mask.dtype is not torch.bool:
        raise ValueError(f"mask must be a bool tensor, not {type(mask).__name__} of {mask.dtype}")
    filled = input.masked_fill(~mask, float("-inf"))
    exps = torch.exp(filled - finite_row_maximum(filled, dim))
    total = exps.sum(dim=dim, keepdim=True)
    return exps / torch.where(total == 0, torch.ones_like(total), total)
''',
    ),
]
