"""Typical mistakes in lab 01: each must lose points and show the message that names it."""

from course.coursedir.scratch import Mistake
from course.coursedir.scratch import with_replacements as _with

# The correct answer of exercise 3; each of its mistakes below changes one part of it.
_TEMPERATURE = '''
def temperature_for_entropy(scores, target, steps=100):
    if scores.shape[-1] < 2 or not 0 < target < math.log(scores.shape[-1]):
        raise ValueError(f"target must be between 0 and ln L, got {target}")
    spread = scores.amax(dim=-1, keepdim=True) - scores.amin(dim=-1, keepdim=True)
    cold, hot = spread * 1e-6, spread * 1e6
    for _ in range(steps):
        middle = (cold * hot).sqrt()
        weights = softmax(scores / middle, dim=-1)
        entropy = -torch.xlogy(weights, weights).sum(dim=-1, keepdim=True)
        too_hot = entropy > target
        hot = torch.where(too_hot, middle, hot)
        cold = torch.where(too_hot, cold, middle)
    return (cold * hot).sqrt()
'''

MISTAKES = [
    Mistake(
        name="naive_softmax_overflows",
        cell="softmax",
        code='''
def softmax(scores, dim=-1):
    exps = scores.exp()
    return exps / exps.sum(dim=dim, keepdim=True)
''',
        message="Subtract the largest score along `dim` first",
    ),
    Mistake(
        name="softmax_ignores_dim",
        cell="softmax",
        code='''
def softmax(scores, dim=-1):
    shifted = scores - scores.amax(dim=-1, keepdim=True)
    return shifted.exp() / shifted.exp().sum(dim=-1, keepdim=True)
''',
        message="did you normalise over the wrong dimension?",
    ),
    Mistake(
        name="softmax_sums_everything",
        cell="softmax",
        code='''
def softmax(scores, dim=-1):
    shifted = scores - scores.max()
    return shifted.exp() / shifted.exp().sum()
''',
        message="do not sum to 1 along dim=-1",
    ),
    Mistake(
        name="softmax_global_maximum",
        cell="softmax",
        code='''
def softmax(scores, dim=-1):
    shifted = scores - scores.max()
    exps = shifted.exp()
    return exps / exps.sum(dim=dim, keepdim=True)
''',
        message="subtract the largest score along `dim` before exponentiating",
    ),
    Mistake(
        name="softmax_shifts_by_the_smallest",
        cell="softmax",
        code='''
def softmax(scores, dim=-1):
    shifted = scores - scores.amin(dim=dim, keepdim=True)
    exps = shifted.exp()
    return exps / exps.sum(dim=dim, keepdim=True)
''',
        message="subtract the largest score along `dim` before exponentiating",
    ),
    Mistake(
        name="log_of_softmax",
        cell="log_softmax",
        code='''
def log_softmax(scores, dim=-1):
    return softmax(scores, dim=dim).log()
''',
        message="log(softmax(x)) underflows",
    ),
    Mistake(
        name="log_sum_exp_without_shift",
        cell="log_softmax",
        code='''
def log_softmax(scores, dim=-1):
    return scores - scores.exp().sum(dim=dim, keepdim=True).log()
''',
        message="exp(1000) overflows to inf",
    ),
    Mistake(
        name="log_sum_exp_forgets_the_maximum",
        cell="log_softmax",
        code='''
def log_softmax(scores, dim=-1):
    largest = scores.amax(dim=dim, keepdim=True)
    return scores - (scores - largest).exp().sum(dim=dim, keepdim=True).log()
''',
        message="forgot to add the maximum back into the log-sum-exp",
    ),
    Mistake(
        name="log_sum_exp_global_maximum",
        cell="log_softmax",
        code='''
def log_softmax(scores, dim=-1):
    largest = scores.max()
    return scores - largest - (scores - largest).exp().sum(dim=dim, keepdim=True).log()
''',
        message="not of the whole tensor",
    ),
    Mistake(
        name="temperature_bounds_swapped",
        cell="temperature_for_entropy",
        code=_with(_TEMPERATURE,
                   "hot = torch.where(too_hot, middle, hot)",
                   "hot = torch.where(too_hot, hot, middle)",
                   "cold = torch.where(too_hot, cold, middle)",
                   "cold = torch.where(too_hot, middle, cold)"),
        message="the entropy grows with T",
    ),
    Mistake(
        name="temperature_inverse_returned",
        cell="temperature_for_entropy",
        code=_with(_TEMPERATURE, "return (cold * hot).sqrt()", "return 1 / (cold * hot).sqrt()"),
        message="it looks like you returned the inverse temperature",
    ),
    Mistake(
        name="temperature_last_dimension_dropped",
        cell="temperature_for_entropy",
        code=_with(_TEMPERATURE, "return (cold * hot).sqrt()",
                   "return (cold * hot).sqrt().squeeze(-1)"),
        message="its last dimension kept (size 1)",
    ),
    Mistake(
        name="temperature_one_interval_for_every_row",
        cell="temperature_for_entropy",
        code='''
def temperature_for_entropy(scores, target, steps=100):
    if scores.shape[-1] < 2 or not 0 < target < math.log(scores.shape[-1]):
        raise ValueError(f"target must be between 0 and ln L, got {target}")
    cold = torch.tensor(1e-6)
    hot = torch.tensor(1e6)
    for _ in range(steps):
        middle = (cold * hot).sqrt()
        weights = softmax(scores / middle, dim=-1)
        entropy = -torch.xlogy(weights, weights).sum(dim=-1).mean()
        if entropy > target:
            hot = middle
        else:
            cold = middle
    return (cold * hot).sqrt().expand(*scores.shape[:-1], 1)
''',
        message="the entropy of each row at its temperature (target 0.5) differs",
    ),
    Mistake(
        name="temperature_target_not_checked",
        cell="temperature_for_entropy",
        code=_with(_TEMPERATURE, "    if scores.shape[-1] < 2 or not 0 < target < math.log("
                   "scores.shape[-1]):\n        raise ValueError(f\"target must be between 0 "
                   "and ln L, got {target}\")\n", ""),
        message="did not raise ValueError",
    ),
]
