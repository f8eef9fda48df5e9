"""Checks used by the lab tests: each failure names the likely mistake.

Every check raises ``AssertionError`` with a message written for a student, and
``ValueError`` when the check itself is called with the wrong kind of argument.
"""

import math

import torch

__all__ = [
    "check_close",
    "check_finite",
    "check_raises",
    "check_sums_to_one",
    "check_shape",
    "check_true",
]


def _fail(message, hint=None):
    """Raise AssertionError with the message and, when given, the hint."""
    if hint:
        message = f"{message}\nHint: {hint}"
    raise AssertionError(message)


def _require_tensor(value, name):
    """ValueError for a bad name; AssertionError naming the type when `value` is no tensor."""
    if not isinstance(name, str):
        raise ValueError(f"name must be a string, got {type(name).__name__}")
    if not isinstance(value, torch.Tensor):
        _fail(f"{name} should be a torch.Tensor, got {type(value).__name__}")


def _index(flat_index, shape):
    """Turn a flat index into a tuple index for a tensor of the given shape."""
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat_index), shape))


def check_true(condition, message, hint=None):
    """Fail with the message (and hint) when condition is false."""
    if not isinstance(message, str):
        raise ValueError(f"message must be a string, got {type(message).__name__}")
    if not condition:
        _fail(message, hint)


def check_shape(actual, expected_shape, name="output", hint=None):
    """Check that the tensor `actual` has exactly `expected_shape`."""
    expected_shape = tuple(expected_shape)
    if not all(isinstance(size, int) and size >= 0 for size in expected_shape):
        raise ValueError(f"expected_shape must be a tuple of sizes, got {expected_shape}")
    _require_tensor(actual, name)
    if tuple(actual.shape) != expected_shape:
        _fail(f"{name} has shape {tuple(actual.shape)}, expected {expected_shape}", hint)


def check_finite(actual, name="output", hint=None):
    """Check that the tensor `actual` has no NaN and no infinity."""
    _require_tensor(actual, name)
    if not actual.is_floating_point():
        return
    for bad, label in ((torch.isnan(actual), "NaN"), (torch.isinf(actual), "inf")):
        count = int(bad.sum())
        if count:
            first = _index(int(bad.flatten().nonzero()[0]), actual.shape)
            _fail(
                f"{name} contains {label} at {count} of {actual.numel()} positions "
                f"(first at index {first})",
                hint,
            )


def check_sums_to_one(weights, dim=-1, name="weights", atol=1e-5, hint=None):
    """Check that `weights` are non-negative and sum to 1 along `dim`."""
    _require_tensor(weights, name)
    if not isinstance(dim, int) or not -weights.dim() <= dim < max(weights.dim(), 1):
        raise ValueError(
            f"dim must be an integer in [-{weights.dim()}, {weights.dim()}), got {dim}"
        )
    check_finite(weights, name, hint)
    if bool((weights < 0).any()):
        _fail(
            f"{name} has negative entries (smallest {float(weights.min()):.4g}): "
            "probabilities are never negative",
            hint,
        )
    deviation = (weights.double().sum(dim=dim) - 1).abs()
    worst = float(deviation.max()) if deviation.numel() else 0.0
    if worst > atol:
        where = _index(int(deviation.argmax()), deviation.shape)
        sums_elsewhere = ""
        for other in range(weights.dim()):
            if other != dim % weights.dim() and _sums_to_one(weights, other, atol):
                sums_elsewhere = (
                    f" (they sum to 1 along dim={other} instead:"
                    " did you normalise over the wrong dimension?)"
                )
                break
        _fail(
            f"{name} do not sum to 1 along dim={dim}: the sum is off by {worst:.4g} at "
            f"index {where}{sums_elsewhere}",
            hint,
        )


def _sums_to_one(weights, dim, atol):
    """True when `weights` sum to 1 along `dim` within atol."""
    return bool(((weights.double().sum(dim=dim) - 1).abs() <= atol).all())


def check_close(actual, expected, name="output", atol=1e-5, rtol=1e-4, hint=None, mistakes=None):
    """Check that `actual` matches `expected`; name the mistake when a known wrong answer matches.

    `mistakes` maps a description ("normalised over dim=0") to the tensor that
    mistake would produce; when `actual` matches one of them, the message says so.
    """
    if not isinstance(expected, torch.Tensor):
        raise ValueError(f"expected must be a torch.Tensor, got {type(expected).__name__}")
    if mistakes is not None and not isinstance(mistakes, dict):
        raise ValueError("mistakes must be a dict mapping a description to a tensor")
    check_shape(actual, expected.shape, name, hint)
    expected = expected.to(actual.dtype) if actual.is_floating_point() else expected
    if _matches(actual, expected, atol, rtol):
        return
    for description, wrong in (mistakes or {}).items():
        if (
            isinstance(wrong, torch.Tensor)
            and wrong.shape == actual.shape
            and _matches(actual, wrong.to(actual.dtype), atol, rtol)
        ):
            _fail(f"{name} is wrong: it looks like you {description}.", hint)
    if actual.is_floating_point():
        check_finite(actual, name, hint)
    difference = (actual.double() - expected.double()).abs()
    difference = torch.where(torch.isnan(difference), torch.inf, difference)
    where = _index(int(difference.argmax()), difference.shape)
    _fail(
        f"{name} differs from the expected values: largest difference "
        f"{float(difference[where]):.4g} at index {where} "
        f"(got {_show(actual[where])}, expected {_show(expected[where])})",
        hint,
    )


def _matches(actual, expected, atol, rtol):
    """True when the tensors agree elementwise within the tolerances, NaN and inf included."""
    if actual.dtype == torch.bool or expected.dtype == torch.bool:
        return bool((actual == expected).all())
    a, e = actual.double(), expected.double()
    same_special = (torch.isnan(a) & torch.isnan(e)) | ((a == e) & torch.isinf(e))
    close = (a - e).abs() <= atol + rtol * e.abs()
    return bool((close | same_special).all())


def _show(value):
    """Format a scalar tensor for a message."""
    value = value.item()
    if isinstance(value, float) and math.isfinite(value):
        return f"{value:.6g}"
    return str(value)


def check_raises(error, function, *args, name=None, match=None, hint=None, **kwargs):
    """Check that `function(*args, **kwargs)` raises `error` (with `match` in its message)."""
    if not (isinstance(error, type) and issubclass(error, BaseException)):
        raise ValueError(f"error must be an exception class, got {error!r}")
    if not callable(function):
        raise ValueError(f"function must be callable, got {type(function).__name__}")
    name = name or getattr(function, "__name__", "the function")
    try:
        function(*args, **kwargs)
    except error as raised:
        if match is not None and match.lower() not in str(raised).lower():
            _fail(
                f"{name} raised {error.__name__} but its message {str(raised)!r} "
                f"does not mention {match!r}",
                hint,
            )
        return
    except Exception as raised:  # noqa: BLE001 - report any other exception to the student
        _fail(f"{name} raised {type(raised).__name__} ({raised}), expected {error.__name__}", hint)
    _fail(f"{name} did not raise {error.__name__}", hint)
