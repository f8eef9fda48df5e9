"""Checks used by the lab tests: each failure names the likely mistake.

Every check raises ``AssertionError`` with a message written for a student, and ``ValueError``
when the check itself is called with the wrong kind of argument.

The checks cannot be fooled from a student's cell: they compare values with NumPy functions and
builtins bound when this module is imported (so replacing ``torch.allclose``, ``numpy.allclose``
or ``builtins.bool`` later changes nothing), they read tensors through PyTorch's C methods with
subclass overrides disabled, and the module refuses to have its attributes replaced.
"""

import ast
import builtins
import linecache
import sys
import traceback
import types

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from utils.shell import ipython_shell

__all__ = [
    "check_close",
    "check_different",
    "check_identical",
    "check_finite",
    "check_layer",
    "check_raises",
    "check_sums_to_one",
    "check_shape",
    "check_true",
    "gradient_of",
    "in_kernel",
    "inputs_changed",
    "nans_created",
    "parameter_gradients",
    "set_parameters",
    "show_failures_first",
]

# Builtins and library functions, bound now: a student's cell that later replaces a builtin or a
# torch or numpy function does not change what the checks compute.
_BUILTINS = """AssertionError BaseException Exception ValueError all bool callable dict float int
getattr isinstance issubclass len list range repr str tuple type zip"""
globals().update({name: getattr(builtins, name) for name in _BUILTINS.split()})
# Only NumPy's C functions (ufuncs) and ndarray methods: its Python wrappers read builtins.
_NUMPY = """abs asarray count_nonzero float64 inf isfinite isinf isnan logical_and logical_not
logical_or unravel_index where"""
_np = types.SimpleNamespace(**{name: getattr(np, name) for name in _NUMPY.split()})
_Tensor = torch.Tensor
_TENSOR_METHODS = "detach cpu numpy to is_floating_point is_complex size"
_tensor_methods = types.SimpleNamespace(
    **{name: getattr(torch._C.TensorBase, name) for name in _TENSOR_METHODS.split()}
)
_dtype_of = torch._C.TensorBase.dtype.__get__
_float64, _bool_dtype = torch.float64, torch.bool
_no_subclass_overrides = torch._C.DisableTorchFunctionSubclass


def in_kernel(definition):
    """Mark a test helper (function or class) that must run beside the student's code.

    In a student's kernel this changes nothing. During autograde the grader runs the tests in
    its own process and calls a marked helper in the kernel, as it calls the student's functions:
    use it for test doubles handed to the student's code, training loops and gradient probes.
    """
    definition.__in_kernel__ = True
    return definition


@in_kernel
def set_parameters(module, values):
    """Copy tensors into a module's parameters, by name: {"w_q.weight": (H, Dq) tensor}."""
    __tracebackhide__ = True
    parameters = dict(module.named_parameters())
    with torch.no_grad():
        for name, value in values.items():
            if name not in parameters:
                _fail(
                    f"the model has no parameter {name} (it has: {', '.join(parameters)})",
                    "keep the attribute names that the exercise gives",
                )
            check_shape(parameters[name], _shape(value), f"parameter {name}")
            parameters[name].copy_(value)
    return module


@in_kernel
def parameter_gradients(module, *inputs, **kwargs):
    """{name: gradient or None} after backward from the sum of squares of module(*inputs)."""
    module.zero_grad(set_to_none=True)
    output = module(*inputs, **kwargs)
    if isinstance(output, tuple):
        output = output[0]
    output.square().sum().backward()
    return {name: parameter.grad for name, parameter in module.named_parameters()}


@in_kernel
def gradient_of(function, tensor, *args, upstream):
    """The gradient of sum(function(tensor, *args) * upstream) with respect to `tensor`."""
    tensor = tensor.detach().clone().requires_grad_(True)
    (function(tensor, *args) * upstream).sum().backward()
    return tensor.grad


@in_kernel
def inputs_changed(function, *args):
    """Positions of the tensor arguments that function(*args) changed in place."""
    before = [arg.clone() if isinstance(arg, _Tensor) else None for arg in args]
    function(*args)
    return [
        position
        for position, (arg, copy) in enumerate(zip(args, before, strict=True))
        if copy is not None and not torch.equal(arg, copy)
    ]


def _nan_count(value):
    """How many NaNs the tensors in `value` (and in its tuples, lists and dicts) hold."""
    if isinstance(value, _Tensor):
        floating = value.is_floating_point() or value.is_complex()
        return int(value.isnan().sum()) if floating and value.layout == torch.strided else 0
    if isinstance(value, (tuple, list)):
        return sum(_nan_count(item) for item in value)
    if isinstance(value, dict):
        return sum(_nan_count(item) for item in value.values())
    return 0


def _tensors_in(value, found):
    """Each distinct tensor in `value` (and in its tuples, lists and dicts), added to `found`."""
    if isinstance(value, _Tensor):
        found.setdefault(id(value), value)
    elif isinstance(value, (tuple, list)):
        for item in value:
            _tensors_in(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _tensors_in(item, found)
    return found


# Operations that hand out memory nobody wrote (a tensor, or a tensor's new elements): whatever
# it held before, a NaN too, is no NaN the student's code made. The recorder makes it zeros.
_UNWRITTEN = frozenset({torch.empty, torch.empty_like, torch.empty_strided, torch.empty_permuted,
                        _Tensor.new_empty, _Tensor.new_empty_strided})  # fmt: skip
_GROWN = frozenset({_Tensor.resize_, _Tensor.resize_as_})


class _NaNRecorder(TorchFunctionMode):
    """Notes each torch operation that makes NaNs: counted in its arguments before and after it
    ran (an in-place operation writes into them) and in what it returns, beside the arguments'."""

    def __init__(self):
        super().__init__()
        self.created = []  # names of the operations, in the order they ran

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        arguments = _tensors_in((args, kwargs), {})
        before = _nan_count(list(arguments.values()))
        kept = args[0].numel() if func in _GROWN else None
        result = func(*args, **kwargs)
        if func in _UNWRITTEN:
            result.zero_()
        elif kept is not None:
            result.view(-1)[kept:].zero_()  # resized tensors are contiguous
        written = _nan_count(list(arguments.values()))
        returned = _nan_count([t for key, t in _tensors_in(result, {}).items()
                               if key not in arguments])  # fmt: skip
        if written > before or returned > before:
            self.created.append(getattr(func, "__name__", repr(func)))
        return result


@in_kernel
def nans_created(function, *args, **kwargs):
    """Names of the torch operations of function(*args, **kwargs) that made NaNs, in order.

    A NaN made and then repaired (`nan_to_num`, `masked_fill`, `where`) is listed, and so is
    one an operation writes into its own input (`sub_`, `div_`, `out=`). Memory nobody wrote
    (`torch.empty`, `new_empty`, what `resize_` adds) holds zeros here. The function runs
    without gradients. See SECURITY.md for what this cannot see.
    """
    with torch.no_grad(), _NaNRecorder() as recorder:
        function(*args, **kwargs)
    return tuple(recorder.created)


def _fail(message, hint=None):
    """Raise AssertionError with the message and, when given, the hint."""
    __tracebackhide__ = True
    if hint:
        message = f"{message}\nHint: {hint}"
    raise AssertionError(message)


def _require_name(name):
    """ValueError unless `name` is a string."""
    __tracebackhide__ = True
    if not isinstance(name, str):
        raise ValueError(f"name must be a string, got {type(name).__name__}")


def _require_tensor(value, name):
    """AssertionError naming the type when a student returned something other than a tensor."""
    __tracebackhide__ = True
    _require_name(name)
    if not isinstance(value, _Tensor):
        _fail(f"{name} should be a torch.Tensor, got {type(value).__name__}")


def _shape(tensor):
    """The shape of a tensor as a tuple of ints."""
    with _no_subclass_overrides():
        return tuple(int(size) for size in _tensor_methods.size(tensor))


def _is_floating(tensor):
    """True for a floating-point (or complex) tensor."""
    with _no_subclass_overrides():
        return bool(_tensor_methods.is_floating_point(tensor)) or bool(
            _tensor_methods.is_complex(tensor)
        )


def _values(tensor):
    """A float64 (or bool) NumPy copy of a tensor's values, read without any Python override."""
    with _no_subclass_overrides():
        plain = _tensor_methods.cpu(_tensor_methods.detach(tensor))
        if _dtype_of(plain) != _bool_dtype:
            plain = _tensor_methods.to(plain, _float64)
        return _np.asarray(_tensor_methods.numpy(plain)).copy()


def _all(values):
    """True when every entry of a boolean array is true."""
    return bool(values.all())


def _index(flat_index, shape):
    """Turn a flat index into a tuple index for an array of the given shape."""
    if not shape:
        return ()
    return tuple(int(i) for i in _np.unravel_index(int(flat_index), shape))


def _show(value):
    """Format one number for a message."""
    value = float(value)
    return f"{value:.6g}" if _np.isfinite(value) else str(value)


def check_true(condition, message, hint=None):
    """Fail with the message (and hint) when condition is false."""
    __tracebackhide__ = True
    if not isinstance(message, str):
        raise ValueError(f"message must be a string, got {type(message).__name__}")
    if isinstance(condition, _Tensor):
        condition = _all(_values(condition))
    if not bool(condition):
        _fail(message, hint)


def check_shape(actual, expected_shape, name="output", hint=None):
    """Check that the tensor `actual` has exactly `expected_shape`."""
    __tracebackhide__ = True
    expected_shape = tuple(expected_shape)
    if not all(isinstance(size, int) and size >= 0 for size in expected_shape):
        raise ValueError(f"expected_shape must be a tuple of sizes, got {expected_shape}")
    _require_tensor(actual, name)
    if _shape(actual) != expected_shape:
        _fail(f"{name} has shape {_shape(actual)}, expected {expected_shape}", hint)


def check_finite(actual, name="output", hint=None):
    """Check that the tensor `actual` has no NaN and no infinity."""
    __tracebackhide__ = True
    _require_tensor(actual, name)
    if not _is_floating(actual):
        return
    values = _values(actual)
    for bad, label in ((_np.isnan(values), "NaN"), (_np.isinf(values), "inf")):
        count = int(_np.count_nonzero(bad))
        if count:
            first = _index(bad.ravel().nonzero()[0][0], values.shape)
            _fail(
                f"{name} contains {label} at {count} of {values.size} positions "
                f"(first at index {first})",
                hint,
            )


def _sums_to_one(values, dim, atol):
    """True when the array `values` sums to 1 along `dim` within atol."""
    return _all(_np.abs(values.sum(axis=dim) - 1) <= atol)


def check_sums_to_one(weights, dim=-1, name="weights", atol=1e-5, hint=None):
    """Check that `weights` are non-negative and sum to 1 along `dim`."""
    __tracebackhide__ = True
    _require_tensor(weights, name)
    ndim = len(_shape(weights))
    if not isinstance(dim, int) or not -ndim <= dim < max(ndim, 1):
        raise ValueError(f"dim must be an integer in [-{ndim}, {ndim}), got {dim}")
    check_finite(weights, name, hint)
    values = _values(weights)
    if values.size and bool((values < 0).any()):
        _fail(
            f"{name} has negative entries (smallest {_show(values.min())}): "
            "probabilities are never negative",
            hint,
        )
    deviation = _np.abs(values.sum(axis=dim) - 1)
    worst = float(deviation.max()) if deviation.size else 0.0
    if worst > atol:
        where = _index(deviation.argmax(), deviation.shape)
        elsewhere = ""
        for other in range(ndim):
            if other != dim % ndim and _sums_to_one(values, other, atol):
                elsewhere = (
                    f" (they sum to 1 along dim={other} instead:"
                    " did you normalise over the wrong dimension?)"
                )
                break
        _fail(
            f"{name} do not sum to 1 along dim={dim}: the sum is off by {worst:.4g} at "
            f"index {where}{elsewhere}",
            hint,
        )


def _matches(actual, expected, atol, rtol):
    """True when two arrays agree elementwise within the tolerances, NaN and inf included."""
    if actual.shape != expected.shape:
        return False
    if actual.dtype == bool or expected.dtype == bool:
        return _all(actual == expected)
    return _all(_agree(actual, expected, atol, rtol))


def _agree(actual, expected, atol, rtol):
    """Elementwise: within the tolerances, or the same infinity, or NaN in both."""
    both_nan = _np.logical_and(_np.isnan(actual), _np.isnan(expected))
    same_inf = _np.logical_and(_np.isinf(expected), actual == expected)
    close = _close_where_finite(actual, expected, atol, rtol)
    return _np.logical_or(close, _np.logical_or(both_nan, same_inf))


def _close_where_finite(actual, expected, atol, rtol):
    """Elementwise |actual - expected| <= atol + rtol |expected|; False where one is not finite."""
    finite = _np.logical_and(_np.isfinite(actual), _np.isfinite(expected))
    actual, expected = _np.where(finite, actual, 0.0), _np.where(finite, expected, 0.0)
    return _np.logical_and(finite, _np.abs(actual - expected) <= atol + rtol * _np.abs(expected))


def check_close(actual, expected, name="output", atol=1e-5, rtol=1e-4, hint=None, mistakes=None):
    """Check that `actual` matches `expected`; name the mistake when a known wrong answer matches.

    `mistakes` maps a description ("normalised over dim=0") to the tensor that mistake would
    produce; when `actual` matches one of them, the message says so.
    """
    __tracebackhide__ = True
    if not isinstance(expected, _Tensor):
        raise ValueError(f"expected must be a torch.Tensor, got {type(expected).__name__}")
    if mistakes is not None and not isinstance(mistakes, dict):
        raise ValueError("mistakes must be a dict mapping a description to a tensor")
    check_shape(actual, _shape(expected), name, hint)
    got, want = _values(actual), _values(expected)
    if _matches(got, want, atol, rtol):
        return
    for description, wrong in (mistakes or {}).items():
        if isinstance(wrong, _Tensor) and _matches(got, _values(wrong), atol, rtol):
            _fail(f"{name} is wrong: it looks like you {description}.", hint)
    check_finite(actual, name, hint)
    _fail(_worst_mismatch(name, got, want, atol, rtol), hint)


def _worst_mismatch(name, got, want, atol, rtol):
    """Describe the element of `got` furthest outside its tolerance, and how many fail."""
    if got.dtype == bool or want.dtype == bool:
        got, want = got.astype(_np.float64), want.astype(_np.float64)
    finite = _np.logical_and(_np.isfinite(got), _np.isfinite(want))
    got_finite, want_finite = _np.where(finite, got, 0.0), _np.where(finite, want, 0.0)
    difference = _np.where(finite, _np.abs(got_finite - want_finite), _np.inf)
    tolerance = atol + rtol * _np.abs(want_finite)
    failing = _np.logical_not(_agree(got, want, atol, rtol))
    excess = _np.where(failing, difference - tolerance, -_np.inf)
    where = _index(excess.argmax(), excess.shape)
    shown_got, shown_want = _distinct(got[where], want[where])
    return (
        f"{name} differs from the expected values at {int(failing.sum())} of {got.size} "
        f"positions; furthest outside the tolerance, at index {where}: got {shown_got}, "
        f"expected {shown_want}, a difference of {_show(difference[where])} where "
        f"{_show(tolerance[where])} is allowed (atol={atol:g}, rtol={rtol:g})"
    )


def _distinct(got, want):
    """Format two numbers with as few digits as tell them apart (6 at least, 17 at most)."""
    for digits in (6, 9, 12, 17):
        shown = [
            f"{float(value):.{digits}g}" if _np.isfinite(value) else str(float(value))
            for value in (got, want)
        ]
        if shown[0] != shown[1]:
            break
    return shown


def _sample(*shape):
    """A fixed random input of this shape, for the layer checks."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def _detached(tensor):
    """A parameter's values without its graph, or None for a missing (None) parameter."""
    return None if tensor is None else _tensor_methods.detach(tensor)


def _linear_case(layer):
    """A sample input (3, in_features) and what nn.Linear with layer's parameters gives on it."""
    weight = _detached(layer.weight)
    sample = _sample(3, _shape(weight)[1])
    return sample, torch.nn.functional.linear(sample, weight, _detached(layer.bias))


def _layer_norm_case(layer):
    """A sample input (3, *normalized_shape) and what nn.LayerNorm with layer's parameters gives."""
    shape = tuple(int(size) for size in layer.normalized_shape)
    sample = _sample(3, *shape)
    weight, bias = _detached(layer.weight), _detached(layer.bias)
    return sample, torch.nn.functional.layer_norm(sample, shape, weight, bias, float(layer.eps))


_LAYER_CASES = {torch.nn.Linear: _linear_case, torch.nn.LayerNorm: _layer_norm_case}


def check_layer(layer, kind, name, hint=None):
    """Check that `layer` computes what a PyTorch `kind` (nn.Linear, nn.LayerNorm) with its
    own parameters computes, on a sample input: judged by what it does, not by its type name."""
    __tracebackhide__ = True
    _require_name(name)
    if kind not in _LAYER_CASES:
        raise ValueError(f"kind must be nn.Linear or nn.LayerNorm, got {kind!r}")
    message = f"{name} should be an nn.{kind.__name__}, got {layer!r}"
    try:
        sample, expected = _LAYER_CASES[kind](layer)
        output = layer(sample)
    except Exception:  # noqa: BLE001 - anything that is not such a layer fails the same way
        _fail(message, hint)
    if not isinstance(output, _Tensor) or not _matches(
        _values(output), _values(expected), 1e-5, 1e-4
    ):
        _fail(message, hint)


def check_identical(first, second, message, hint=None):
    """Fail with `message` unless the tensors have the same shape and exactly the same values."""
    __tracebackhide__ = True
    _require_tensor(first, "the first tensor")
    _require_tensor(second, "the second tensor")
    if not isinstance(message, str):
        raise ValueError(f"message must be a string, got {type(message).__name__}")
    if _shape(first) != _shape(second) or not _matches(_values(first), _values(second), 0.0, 0.0):
        _fail(message, hint)


def check_different(first, second, message, hint=None, atol=1e-6):
    """Fail with `message` when the tensors agree everywhere within `atol`."""
    __tracebackhide__ = True
    _require_tensor(first, "the first tensor")
    _require_tensor(second, "the second tensor")
    if not isinstance(message, str):
        raise ValueError(f"message must be a string, got {type(message).__name__}")
    if _shape(first) == _shape(second) and _matches(_values(first), _values(second), atol, 0.0):
        _fail(message, hint)


def _requirements(match):
    """`match` as a tuple of requirements, each a tuple of alternative strings."""
    items = (match,) if isinstance(match, str) else match
    if not isinstance(items, (tuple, list)) or not items:
        raise ValueError(f"match must be a string or a tuple of them, got {match!r}")
    requirements = tuple((item,) if isinstance(item, str) else tuple(item) for item in items)
    for alternatives in requirements:
        if not alternatives or not all(isinstance(text, str) for text in alternatives):
            raise ValueError(f"match must be a string or a tuple of them, got {match!r}")
    return requirements


def _unnamed(message, requirements):
    """The requirements none of whose alternatives `message` contains (case-insensitive)."""
    lowered = message.lower()
    return [
        alternatives
        for alternatives in requirements
        if not [text for text in alternatives if text.lower() in lowered]
    ]


def check_raises(error, function, *args, name=None, match=None, hint=None, **kwargs):
    """Check that `function(*args, **kwargs)` raises `error` whose message names `match`.

    `match` is a string, or a tuple whose every item the message must contain; an item that is
    itself a tuple of strings is met by any one of them: ("int32", ("bool", "float")).
    """
    __tracebackhide__ = True
    if not (isinstance(error, type) and issubclass(error, BaseException)):
        raise ValueError(f"error must be an exception class, got {error!r}")
    if not callable(function):
        raise ValueError(f"function must be callable, got {type(function).__name__}")
    requirements = () if match is None else _requirements(match)
    name = name or getattr(function, "__name__", "the function")
    try:
        function(*args, **kwargs)
    except error as raised:
        missing = _unnamed(str(raised), requirements)
        if missing:
            wanted = " nor ".join(" or ".join(repr(text) for text in item) for item in missing)
            _fail(
                f"{name} raised {error.__name__} but its message {str(raised)!r} "
                f"does not mention {wanted}",
                hint,
            )
        return
    except Exception as raised:  # noqa: BLE001 - report any other exception to the student
        _fail(f"{name} raised {type(raised).__name__} ({raised}), expected {error.__name__}", hint)
    _fail(f"{name} did not raise {error.__name__}", hint)


def failure_lines(error):
    """The lines that show a failed check: type and message, hint, then the line that failed."""
    lines = str(error).splitlines() or [""]
    lines[0] = f"{type(error).__name__}: {lines[0]}"
    frames = [
        (frame, number)
        for frame, number in traceback.walk_tb(error.__traceback__)
        if not frame.f_locals.get("__tracebackhide__")
    ]
    if frames:
        frame, number = frames[-1]
        text = statement_at("".join(linecache.getlines(frame.f_code.co_filename)), number)
        if text:
            lines.append(f"(failed at line {number}: {text})")
    return lines


STATEMENT_CHARACTERS = 120  # a longer statement is shown up to here, then "…"


def statement_at(source, number):
    """The whole statement of `source` that line `number` belongs to, on one line ("" if none).

    A call written over several lines is joined (its spaces folded); one longer than
    STATEMENT_CHARACTERS is cut there with "…", so the line never looks like broken code.
    """
    lines = source.splitlines()
    if not 1 <= number <= len(lines):
        return ""
    first, last = number, number
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        tree = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.stmt) and node.lineno <= number <= (node.end_lineno or number):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
                              | ast.For | ast.While | ast.If | ast.With | ast.Try):
                first, last = node.lineno, node.end_lineno or node.lineno
    text = " ".join(" ".join(lines[first - 1 : last]).split())
    text = text.replace("( ", "(").replace("[ ", "[").replace(", )", ")")
    if len(text) > STATEMENT_CHARACTERS:
        text = text[: STATEMENT_CHARACTERS - 1].rstrip() + "…"
    return text


def show_failures_first():
    """In IPython, show a failed check as its message and hint, not a traceback through here."""
    shell = ipython_shell()
    if shell is None:
        return

    def show(shell, kind, error, tb, tb_offset=None):
        lines = failure_lines(error)
        lines[0] = "\x1b[0;31m" + lines[0].replace(":", ":\x1b[0m", 1)
        # IPython's showtraceback shows its own formatting; _showtraceback, which ipykernel
        # overrides, sends these lines as the cell's error (test_third_party_hooks.py)
        shell._showtraceback(kind, error, ["\n".join(lines)])
        return lines

    shell.set_custom_exc((AssertionError,), show)


class _ReadOnlyModule(types.ModuleType):
    """A module whose attributes cannot be replaced or deleted once it is loaded."""

    def __setattr__(self, name, value):
        raise AttributeError(f"utils.grading is read-only: {name} cannot be replaced")

    def __delattr__(self, name):
        raise AttributeError(f"utils.grading is read-only: {name} cannot be deleted")


sys.modules[__name__].__class__ = _ReadOnlyModule
