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
        name="log_sum_exp_one_dimension_at_a_time",
        cell="log_sum_exp",
        code='''
def log_sum_exp(scores, dims):
    """Log-sum-exp over `dims`, reduced one dimension after the other (the LSE of LSEs)."""
    if isinstance(dims, int):
        dims = (dims,)
    result = scores
    for dim in sorted(d % scores.dim() for d in dims):
        top = result.max(dim=dim, keepdim=True).values
        top = top.masked_fill(top == -math.inf, 0.0)
        result = top + torch.log(torch.sum(torch.exp(result - top), dim=dim, keepdim=True))
    return result
''',
    ),
    Variant(
        name="log_sum_exp_by_flattening_the_grid",
        cell="log_sum_exp",
        code='''
def log_sum_exp(scores: torch.Tensor, dims) -> torch.Tensor:
    """Log-sum-exp over `dims`: move them to the end, flatten them into one, reduce it."""
    dims = [dims] if isinstance(dims, int) else list(dims)
    dims = [d % scores.ndim for d in dims]
    kept = [d for d in range(scores.ndim) if d not in dims]
    flat = scores.permute(*kept, *dims).flatten(start_dim=len(kept))     # (..., cells)
    top = flat.amax(dim=-1, keepdim=True)
    top = torch.where(torch.isneginf(top), torch.zeros_like(top), top)
    total = top + (flat - top).exp().sum(dim=-1, keepdim=True).log()     # (..., 1)
    shape = [1 if d in dims else size for d, size in enumerate(scores.shape)]
    return total.reshape(shape)
''',
    ),
    Variant(
        name="temperature_by_bisection_on_the_inverse_temperature",
        cell="temperature_for_entropy",
        code='''
def row_entropy(scores: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """Entropy (..., 1) of softmax(beta * scores) along the last dimension."""
    log_p = log_softmax(scores * beta, dim=-1)
    return -(log_p.exp() * log_p).sum(-1, keepdim=True)


def temperature_for_entropy(scores: torch.Tensor, target: float) -> torch.Tensor:
    """T (..., 1) per row such that softmax(scores / T) has entropy `target`."""
    length = scores.size(-1)
    if length < 2 or target <= 0 or target >= math.log(length):
        raise ValueError(f"need 0 < target < ln({length}) = {math.log(max(length, 1)):.4f}, "
                         f"got target={target}")
    scores = scores - scores.max(-1, keepdim=True).values   # the gap of a near tie stays exact
    span = -scores.min(-1, keepdim=True).values
    if (span == 0).any():
        raise ValueError("a row of equal scores has the same entropy at every temperature")
    gap = -scores.topk(2, dim=-1).values[..., 1:]            # largest minus second largest
    low_beta = torch.full_like(span, 1e-7) / span    # nearly uniform
    high_beta = 1e3 / torch.where(gap > 0, gap, span)  # one-hot: e^-1000 is 0
    for _ in range(120):
        beta = (low_beta * high_beta).sqrt()
        sharp_enough = row_entropy(scores, beta) <= target
        high_beta = torch.where(sharp_enough, beta, high_beta)
        low_beta = torch.where(sharp_enough, low_beta, beta)
    return 1 / (low_beta * high_beta).sqrt()
''',
    ),
    Variant(
        name="temperature_whose_error_gives_the_value_received",
        cell="temperature_for_entropy",
        code='''
def entropy(weights):
    """Entropy (..., 1) of each row of weights (..., L), with 0 log 0 = 0."""
    return -torch.xlogy(weights, weights).sum(dim=-1, keepdim=True)


def temperature_for_entropy(scores, target, steps=100):
    """Temperatures (..., 1): softmax(scores / T) of each row has entropy `target`."""
    L = scores.shape[-1]
    if L < 2:
        raise ValueError(f"need at least 2 scores per row, got {L}")
    if not 0 < target < math.log(L):
        raise ValueError(f"expected 0 < H < ln({L}) = {math.log(L):.4f}, got {target}")
    top2 = scores.topk(2, dim=-1).values                                 # (..., 2)
    s = scores - top2[..., :1]                                           # largest at 0, exactly
    spread = -s.min(dim=-1, keepdim=True).values
    if (spread == 0).any():
        raise ValueError("a row of equal scores: its weights are uniform at every temperature")
    gap = top2[..., :1] - top2[..., 1:]
    lo, hi = torch.where(gap > 0, gap, spread) * 1e-3, spread * 1e6
    for _ in range(steps):
        mid = torch.sqrt(lo * hi)
        hot = entropy(softmax(s / mid, dim=-1)) > target
        lo, hi = torch.where(hot, lo, mid), torch.where(hot, mid, hi)
    return torch.sqrt(lo * hi)
''',
    ),
]
