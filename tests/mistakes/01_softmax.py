"""Typical mistakes in lab 01: each must lose points and show the message that names it."""

from course.build.submissions import Mistake

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
        name="temperature_multiplies",
        cell="softmax_with_temperature",
        code='''
def softmax_with_temperature(scores, temperature, dim=-1):
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    return softmax(scores * temperature, dim=dim)
''',
        message="multiplied the scores by the temperature instead of dividing them",
    ),
    Mistake(
        name="temperature_not_checked",
        cell="softmax_with_temperature",
        code='''
def softmax_with_temperature(scores, temperature, dim=-1):
    return softmax(scores / temperature, dim=dim)
''',
        message="did not raise ValueError",
    ),
    Mistake(
        name="temperature_zero_allowed",
        cell="softmax_with_temperature",
        code='''
def softmax_with_temperature(scores, temperature, dim=-1):
    if temperature < 0:
        raise ValueError(f"temperature must not be negative, got {temperature}")
    return softmax(scores / temperature, dim=dim)
''',
        message="softmax_with_temperature(scores, 0.0) did not raise ValueError",
    ),
    Mistake(
        name="temperature_ignores_dim",
        cell="softmax_with_temperature",
        code='''
def softmax_with_temperature(scores, temperature, dim=-1):
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    return softmax(scores / temperature)
''',
        message="it looks like you ignored `dim`",
    ),
]
