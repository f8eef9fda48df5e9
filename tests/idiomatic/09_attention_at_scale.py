"""Correct answers to lab 09 in other styles: each must get every point and have no finding."""

from catalogue import Variant

VARIANTS = [
    Variant(
        name="online_softmax_with_input_hints_and_a_helper",
        cell="online_softmax",
        code='''
def rescaled_sum(total, old_maximum, new_maximum, chunk, floor):
    """The running sum (..., 1) moved from old_maximum to new_maximum, plus the chunk's terms."""
    shift = new_maximum.clamp(min=floor)
    terms = torch.exp(chunk - shift).sum(dim=-1, keepdim=True)
    return total * torch.exp(old_maximum - shift) + terms


def online_softmax(input: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """Softmax of input (..., L) over the last dim, reading chunk_size columns at a time."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size!r} "
                         f"({type(chunk_size).__name__})")
    floor = torch.finfo(input.dtype).min
    maximum = input.new_full((*input.shape[:-1], 1), float("-inf"))
    total = input.new_zeros((*input.shape[:-1], 1))
    starts = range(0, input.shape[-1], chunk_size)
    for start in starts:
        chunk = input[..., start:start + chunk_size]
        new_maximum = torch.maximum(maximum, chunk.amax(dim=-1, keepdim=True))
        total = rescaled_sum(total, maximum, new_maximum, chunk, floor)
        maximum = new_maximum
    shift = maximum.clamp(min=floor)
    divisor = torch.where(total == 0, torch.ones_like(total), total)
    return torch.cat([torch.exp(input[..., start:start + chunk_size] - shift) / divisor
                      for start in starts], dim=-1)
''',
    ),
]
