"""The values that cross between the grader and a student's kernel, as JSON.

Only data crosses: None, booleans, numbers, strings, lists, tuples, dicts with string keys,
tensors (dtype, shape and raw bytes), dtypes, and handles (a number naming an object that stays
in the kernel). This module runs on both sides: the grader sends its source to the kernel, so the
two ends always speak the same format. It imports nothing but the standard library, NumPy and
torch, and never unpickles or evaluates anything. JSON text over a budget of values and nesting
is refused before any of it is built (`check_budget`), and so is a tensor whose data does not fit
its shape.
"""

import base64
import json
import math
import re

import numpy as np
import torch

# dtype name -> (torch dtype, NumPy dtype used for the bytes on the wire)
DTYPES = {
    "bool": (torch.bool, np.bool_),
    "uint8": (torch.uint8, np.uint8),
    "int8": (torch.int8, np.int8),
    "int16": (torch.int16, np.int16),
    "int32": (torch.int32, np.int32),
    "int64": (torch.int64, np.int64),
    "float16": (torch.float16, np.float16),
    "bfloat16": (torch.bfloat16, np.int16),  # NumPy has no bfloat16: its bits travel as int16
    "float32": (torch.float32, np.float32),
    "float64": (torch.float64, np.float64),
    "complex64": (torch.complex64, np.complex64),
    "complex128": (torch.complex128, np.complex128),
}
DTYPE_NAMES = {torch_dtype: name for name, (torch_dtype, _) in DTYPES.items()}
MAX_DEPTH = 32
MAX_ELEMENTS = 50_000_000
MAX_DIMENSIONS = 64  # as torch's tensors
# The most of one message that is ever built: the lab tests' values hold a few hundred JSON values
# (a tensor is one string), and a level of a value is at most three levels of JSON (a dict's
# record, its list of items, one item). Within this budget the objects of a message cost tens of
# MB at most, beside its strings (no longer than the message: 64 MiB).
MAX_JSON_VALUES = 100_000
MAX_JSON_DEPTH = 3 * (MAX_DEPTH + 1) + 1
# One JSON token: separators (group 1), an opening bracket (2), a closing one (3), else a value.
JSON_TOKEN = re.compile(r'([\s,:]+)|([\[{])|([\]}])|"[^"]*"|[^\s\[\]{},:"]+')


class MalformedValue(ValueError):
    """A value on the wire that does not follow the format."""


class OverBudget(MalformedValue):
    """JSON text with more values or deeper nesting than the grader ever builds."""


def encode(value, handle_of, depth=0):
    """A JSON-ready form of `value`; `handle_of(obj)` names an object that is not data."""
    if depth > MAX_DEPTH:
        raise MalformedValue(f"a value nested more than {MAX_DEPTH} levels deep")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, np.bool_):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else {"t": "float", "v": repr(value)}
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, torch.Tensor):
        return _encode_tensor(value)
    if isinstance(value, np.ndarray):
        return _encode_tensor(torch.from_numpy(np.ascontiguousarray(value)))
    if isinstance(value, torch.dtype):
        return {"t": "dtype", "v": DTYPE_NAMES.get(value, str(value))}
    if isinstance(value, tuple):  # torch.Size is a tuple
        return {"t": "tuple", "v": [encode(item, handle_of, depth + 1) for item in value]}
    if isinstance(value, list):
        return [encode(item, handle_of, depth + 1) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        items = [[key, encode(item, handle_of, depth + 1)] for key, item in value.items()]
        return {"t": "dict", "v": items}
    return handle_of(value)


def _encode_tensor(tensor):
    """A tensor's dtype, shape, requires_grad flag and bytes."""
    plain = torch.Tensor.contiguous(torch.Tensor.cpu(torch.Tensor.detach(tensor)))
    name = DTYPE_NAMES.get(plain.dtype)
    if name is None:
        raise MalformedValue(f"tensors of dtype {plain.dtype} cannot be sent")
    if name == "bfloat16":
        plain = plain.view(torch.int16)
    data = np.ascontiguousarray(torch.Tensor.numpy(plain)).tobytes()
    return {
        "t": "tensor",
        "dtype": name,
        "shape": [int(size) for size in tensor.shape],
        "grad": bool(tensor.requires_grad),
        "param": isinstance(tensor, torch.nn.Parameter),
        "data": base64.b64encode(data).decode("ascii"),
    }


def decode(value, object_of, depth=0):
    """The value that `encode` wrote; `object_of(handle)` turns a handle back into an object."""
    if depth > MAX_DEPTH:
        raise MalformedValue(f"a value nested more than {MAX_DEPTH} levels deep")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [decode(item, object_of, depth + 1) for item in value]
    if not isinstance(value, dict):
        raise MalformedValue(f"unexpected {type(value).__name__} on the wire")
    tag = value.get("t")
    if tag == "tensor":
        return _decode_tensor(value)
    if tag == "tuple":
        return tuple(decode(item, object_of, depth + 1) for item in _field(value, "v", list))
    if tag == "dict":
        items = _field(value, "v", list)
        if not all(isinstance(item, list) and len(item) == 2 for item in items):
            raise MalformedValue("a dict's items must be [key, value] pairs")
        decoded = {}
        for key, item in items:
            if not isinstance(key, str) or key in decoded:
                raise MalformedValue("a dict's keys must be distinct strings")
            decoded[key] = decode(item, object_of, depth + 1)
        return decoded
    if tag == "float":
        text = _field(value, "v", str)
        if text not in ("nan", "inf", "-inf"):
            raise MalformedValue(f"{text!r} is not a special float")
        return float(text)
    if tag == "dtype":
        name = _field(value, "v", str)
        if name not in DTYPES:
            raise MalformedValue(f"unknown dtype {name!r}")
        return DTYPES[name][0]
    if tag == "handle":
        return object_of(value)
    raise MalformedValue(f"unknown value tag {tag!r}")


def _field(record, key, kind):
    """record[key], checked to be of type `kind`."""
    item = record.get(key)
    if not isinstance(item, kind) or isinstance(item, bool) and kind is not bool:
        raise MalformedValue(f"field {key!r} should be a {kind.__name__}, got {item!r:.80}")
    return item


def _tensor_shape(record):
    """A tensor record's shape, checked to be at most MAX_DIMENSIONS sizes of MAX_ELEMENTS."""
    shape = _field(record, "shape", list)
    if len(shape) > MAX_DIMENSIONS or not all(
        type(size) is int and 0 <= size <= MAX_ELEMENTS for size in shape
    ):
        raise MalformedValue(f"a tensor shape must be a list of sizes, got {shape!r:.80}")
    count = math.prod(shape)
    if count > MAX_ELEMENTS:
        raise MalformedValue(f"a tensor of {count} elements is too large")
    return shape


def _decode_tensor(record):
    """A fresh tensor from its wire record, with every field checked."""
    if set(record) != {"t", "dtype", "shape", "grad", "param", "data"}:
        raise MalformedValue(f"a tensor record has the fields {sorted(record)}")
    name = _field(record, "dtype", str)
    if name not in DTYPES:
        raise MalformedValue(f"unknown tensor dtype {name!r}")
    shape = _tensor_shape(record)
    torch_dtype, wire_dtype = DTYPES[name]
    size = math.prod(shape) * np.dtype(wire_dtype).itemsize
    text = _field(record, "data", str)
    if len(text) != 4 * -(-size // 3):  # checked before decoding: no bytes built for nothing
        raise MalformedValue(f"tensor data has {len(text)} base64 characters for shape {shape}")
    try:
        data = base64.b64decode(text, validate=True)
    except ValueError as error:
        raise MalformedValue(f"tensor data is not base64: {error}") from None
    if len(data) != size:
        raise MalformedValue(f"tensor data has {len(data)} bytes for shape {shape} of {name}")
    array = np.frombuffer(data, dtype=wire_dtype).reshape(shape).copy()
    tensor = torch.from_numpy(array)
    if name == "bfloat16":
        tensor = tensor.view(torch.bfloat16)
    wants_grad = _field(record, "grad", bool) and tensor.is_floating_point()
    if _field(record, "param", bool):
        return torch.nn.Parameter(tensor, requires_grad=wants_grad)
    return tensor.requires_grad_(wants_grad)


def dumps(value):
    """JSON text of an already encoded value."""
    return json.dumps(value, allow_nan=False)


def loads(text):
    """The encoded value in JSON text; MalformedValue when it is not JSON or over the budget."""
    if not isinstance(text, str):
        raise MalformedValue(f"expected JSON text, got {type(text).__name__}")
    check_budget(text)
    try:
        return json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        raise MalformedValue(f"not valid JSON: {error}") from None


def _no_constant(name):
    """Refuse NaN and Infinity literals: special floats travel tagged."""
    raise ValueError(f"bare {name} is not allowed")


def check_budget(text):
    """Refuse JSON text over MAX_JSON_VALUES or MAX_JSON_DEPTH, counting without building it."""
    values = depth = 0
    for token in JSON_TOKEN.finditer(without_escapes(text)):
        kind = token.lastindex
        if kind == 3:
            depth -= 1
            if depth < 0:
                raise MalformedValue("not valid JSON: a bracket closes nothing")
        elif kind != 1:
            values += 1
            depth += kind == 2
            if values > MAX_JSON_VALUES:
                raise OverBudget(f"JSON text of more than {MAX_JSON_VALUES} values")
            if depth > MAX_JSON_DEPTH:
                raise OverBudget(f"JSON text nested more than {MAX_JSON_DEPTH} levels deep")


def without_escapes(text):
    """`text` without the escapes of its strings, so that each of its quotes opens or ends one."""
    return text.replace("\\\\", "").replace('\\"', "") if "\\" in text else text
