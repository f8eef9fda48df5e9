"""Correct answers to lab 01 in other styles: each must get every point and have no finding."""

from catalogue import Variant

VARIANTS = [
    Variant(
        name="softmax_with_torch_style_input",
        cell="softmax",
        code='''
def softmax(input, dim=-1):
    """Softmax of `input` along `dim`, with the argument named as torch names it."""
    exps = torch.exp(input - input.max(dim=dim, keepdim=True).values)
    return exps / exps.sum(dim, keepdim=True)
''',
    ),
    Variant(
        name="softmax_with_hints_asserts_and_a_helper",
        cell="softmax",
        code='''
from typing import Optional


def shifted_by_largest(scores: torch.Tensor, dim: int) -> torch.Tensor:
    """`scores` minus their largest value along `dim` (same shape): every entry <= 0."""
    return scores - scores.amax(dim=dim, keepdim=True)


def softmax(scores: torch.Tensor, dim: int = -1, name: Optional[str] = None) -> torch.Tensor:
    """Softmax of `scores` along `dim`."""
    assert isinstance(scores, torch.Tensor), f"{name or 'scores'}: {type(scores).__name__}"
    exps = shifted_by_largest(scores, dim).exp()
    weights = exps / exps.sum(dim=dim, keepdim=True)
    assert weights.shape == scores.shape
    return weights
''',
    ),
    Variant(
        name="softmax_with_a_main_block_and_help_left_in",
        cell="softmax",
        code='''
SHOW_HELP = False


def softmax(scores, dim=-1):
    """Softmax of `scores` along `dim`."""
    shifted = scores - scores.amax(dim=dim, keepdim=True)
    return shifted.exp() / shifted.exp().sum(dim=dim, keepdim=True)


if SHOW_HELP:
    help(torch.Tensor.amax)

if __name__ == "__main__":
    print(softmax(torch.tensor([1.0, 2.0, 3.0])))
''',
    ),
    Variant(
        name="log_softmax_with_locals_named_like_builtins",
        cell="log_softmax",
        code='''
def log_softmax(input, dim=-1):
    """Log-softmax of `input` along `dim`, in the log domain."""
    max = input.amax(dim=dim, keepdim=True)
    sum = (input - max).exp().sum(dim=dim, keepdim=True)
    return input - max - sum.log()
''',
    ),
    Variant(
        name="temperature_with_hints_and_the_type_in_the_error",
        cell="softmax_with_temperature",
        code='''
def softmax_with_temperature(scores: torch.Tensor, temperature: float,
                             dim: int = -1) -> torch.Tensor:
    """Softmax of `scores / temperature` along `dim`."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r} "
                         f"({type(temperature).__name__})")
    return softmax(scores / temperature, dim=dim)
''',
    ),
]
