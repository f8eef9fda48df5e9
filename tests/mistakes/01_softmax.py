"""Typical mistakes in lab 01: each must lose points and show the message that names it."""

from catalogue import Mistake
from catalogue import with_replacements as _with

# Correct answers; each mistake below changes one part of one of them, or is a short answer.
_SOFTMAX = '''
def softmax(scores, dim=-1):
    shifted = scores - scores.amax(dim=dim, keepdim=True)
    exps = shifted.exp()
    return exps / exps.sum(dim=dim, keepdim=True)
'''

_LOG_SOFTMAX = '''
def log_softmax(scores, dim=-1):
    largest = scores.amax(dim=dim, keepdim=True)
    return scores - largest - (scores - largest).exp().sum(dim=dim, keepdim=True).log()
'''

_LOG_SUM_EXP = '''
def log_sum_exp(scores, dims):
    largest = scores.amax(dim=dims, keepdim=True)
    shift = torch.where(largest.isfinite(), largest, torch.zeros_like(largest))
    return shift + (scores - shift).exp().sum(dim=dims, keepdim=True).log()
'''

_TEMPERATURE = '''
def temperature_for_entropy(scores, target, steps=100):
    if scores.shape[-1] < 2 or not 0 < target < math.log(scores.shape[-1]):
        raise ValueError(f"target must be between 0 and ln L, got {target}")
    shifted = scores - scores.amax(dim=-1, keepdim=True)
    spread = -shifted.amin(dim=-1, keepdim=True)
    if bool((spread == 0).any()):
        raise ValueError("a row of equal scores has entropy ln L at every temperature")
    gap = -shifted.topk(2, dim=-1).values[..., 1:]
    cold, hot = torch.where(gap > 0, gap, spread) * 1e-3, spread * 1e6
    for _ in range(steps):
        middle = (cold * hot).sqrt()
        weights = softmax(shifted / middle, dim=-1)
        entropy = -torch.xlogy(weights, weights).sum(dim=-1, keepdim=True)
        too_hot = entropy > target
        hot = torch.where(too_hot, middle, hot)
        cold = torch.where(too_hot, cold, middle)
    return (cold * hot).sqrt()
'''

_GRID_SHIFT = '''\
    largest = scores.amax(dim=dims, keepdim=True)
    shift = torch.where(largest.isfinite(), largest, torch.zeros_like(largest))
'''

# The catalogue's correct answers, by cell: each gets every point (tests/lessons/test_autograde.py).
BASES = {
    "softmax": _SOFTMAX,
    "log_softmax": _LOG_SOFTMAX,
    "log_sum_exp": _LOG_SUM_EXP,
    "temperature_for_entropy": _TEMPERATURE,
}

MISTAKES = [
    Mistake("naive_softmax_overflows", "softmax",
            _with(_SOFTMAX,
                  '''\
    shifted = scores - scores.amax(dim=dim, keepdim=True)
    exps = shifted.exp()
''', "    exps = scores.exp()\n"),
            "Subtract the largest score along `dim` first"),
    Mistake("softmax_ignores_dim", "softmax",
            _with(_SOFTMAX, "amax(dim=dim,", "amax(dim=-1,", "sum(dim=dim,", "sum(dim=-1,"),
            "did you normalise over the wrong dimension?"),
    Mistake("softmax_sums_everything", "softmax",
            _with(_SOFTMAX, "scores.amax(dim=dim, keepdim=True)", "scores.max()",
                  "exps.sum(dim=dim, keepdim=True)", "exps.sum()"),
            "do not sum to 1 along dim=-1"),
    Mistake("softmax_global_maximum", "softmax",
            _with(_SOFTMAX, "scores.amax(dim=dim, keepdim=True)", "scores.max()"),
            "subtract the largest score along `dim` before exponentiating"),
    Mistake("softmax_shifts_by_the_smallest", "softmax",
            _with(_SOFTMAX, "scores.amax(dim=dim,", "scores.amin(dim=dim,"),
            "subtract the largest score along `dim` before exponentiating"),
    Mistake("softmax_maximum_along_the_last_dimension", "softmax",
            _with(_SOFTMAX, "scores.amax(dim=dim,", "scores.amax(dim=-1,"),
            "subtracted the maximum along the last dimension instead of along `dim`"),
    Mistake("log_of_softmax", "log_softmax",
            # Not a change of _LOG_SOFTMAX: another structure, the log of the lab's softmax.
            '''
def log_softmax(scores, dim=-1):
    return softmax(scores, dim=dim).log()
''',
            "log(softmax(x)) underflows"),
    Mistake("log_sum_exp_without_shift", "log_softmax",
            _with(_LOG_SOFTMAX, "    largest = scores.amax(dim=dim, keepdim=True)\n", "",
                  "largest - (scores - largest).exp()", "scores.exp()"),
            "exp(1000) overflows to inf"),
    Mistake("log_sum_exp_forgets_the_maximum", "log_softmax",
            _with(_LOG_SOFTMAX, "largest - (scores", "(scores"),
            "forgot to add the maximum back into the log-sum-exp"),
    Mistake("log_sum_exp_over_dim_0", "log_softmax",
            _with(_LOG_SOFTMAX, ".exp().sum(dim=dim,", ".exp().sum(dim=0,"),
            "sum to 1 along dim=0 instead: did you normalise over the wrong dimension?"),
    Mistake("log_sum_exp_maximum_along_the_last_dimension", "log_softmax",
            _with(_LOG_SOFTMAX, "scores.amax(dim=dim,", "scores.amax(dim=-1,"),
            "took the maximum along the last dimension instead of along `dim`"),
    Mistake("log_sum_exp_global_maximum", "log_softmax",
            _with(_LOG_SOFTMAX, "scores.amax(dim=dim, keepdim=True)", "scores.max()"),
            "not of the whole tensor"),
    Mistake("grid_lse_without_shift", "log_sum_exp",
            _with(_LOG_SUM_EXP, _GRID_SHIFT, "", "shift + (scores - shift).exp()", "scores.exp()"),
            "exp(1000) overflows to inf: subtract the largest score of each grid first"),
    Mistake("grid_lse_maximum_along_the_last_dimension", "log_sum_exp",
            _with(_LOG_SUM_EXP, "scores.amax(dim=dims,", "scores.amax(dim=-1,"),
            "reduce every dimension of `dims` at once"),
    Mistake("grid_lse_keepdim_dropped", "log_sum_exp",
            _with(_LOG_SUM_EXP, "amax(dim=dims, keepdim=True)", "amax(dim=dims)",
                  "(scores - shift).exp().sum(dim=dims, keepdim=True)",
                  "(scores - shift.reshape(*shift.shape, 1, 1)).exp().sum(dim=dims)"),
            "each of them kept with size 1 (keepdim=True)"),
    Mistake("grid_lse_masked_grid_nan", "log_sum_exp",
            _with(_LOG_SUM_EXP,
                  "torch.where(largest.isfinite(), largest, torch.zeros_like(largest))", "largest"),
            "-inf - (-inf) is nan; shift such a grid by 0 (torch.where)"),
    Mistake("temperature_bounds_swapped", "temperature_for_entropy",
            _with(_TEMPERATURE,
                  '''\
        hot = torch.where(too_hot, middle, hot)
        cold = torch.where(too_hot, cold, middle)
''', '''\
        hot = torch.where(too_hot, hot, middle)
        cold = torch.where(too_hot, middle, cold)
'''),
            "the entropy grows with T"),
    Mistake("temperature_inverse_returned", "temperature_for_entropy",
            _with(_TEMPERATURE, "return (cold", "return 1 / (cold"),
            "it looks like you returned the inverse temperature"),
    Mistake("temperature_last_dimension_dropped", "temperature_for_entropy",
            _with(_TEMPERATURE,
                  "return (cold * hot).sqrt()", "return (cold * hot).sqrt().squeeze(-1)"),
            "its last dimension kept (size 1)"),
    Mistake("temperature_one_interval_for_every_row", "temperature_for_entropy",
            _with(_TEMPERATURE,
                  "cold, hot = torch.where(gap > 0, gap, spread) * 1e-3, spread * 1e6",
                  "cold, hot = torch.tensor(1e-6), torch.tensor(1e6)",
                  '''\
        entropy = -torch.xlogy(weights, weights).sum(dim=-1, keepdim=True)
        too_hot = entropy > target
        hot = torch.where(too_hot, middle, hot)
        cold = torch.where(too_hot, cold, middle)
    return (cold * hot).sqrt()
''', '''\
        entropy = -torch.xlogy(weights, weights).sum(dim=-1).mean()
        if entropy > target:
            hot = middle
        else:
            cold = middle
    return (cold * hot).sqrt().expand(*scores.shape[:-1], 1)
'''),
            "the entropy of each row at its temperature (target 0.5) differs"),
    Mistake("temperature_target_not_checked", "temperature_for_entropy",
            _with(_TEMPERATURE,
                  '''\
    if scores.shape[-1] < 2 or not 0 < target < math.log(scores.shape[-1]):
        raise ValueError(f"target must be between 0 and ln L, got {target}")
''', ""),
            "did not raise ValueError"),
    Mistake("temperature_cold_bound_from_the_spread", "temperature_for_entropy",
            _with(_TEMPERATURE, "torch.where(gap > 0, gap, spread) * 1e-3", "spread * 1e-6"),
            "the entropy of rows whose two largest scores are 6e-5 and 1e-7 apart"),
]
