"""The wire between grader and kernel: values cross unchanged, the budget refuses the rest."""

import base64

import pytest
import torch

from course.grading.remote import client, wire


def round_trip(value):
    """Encode a value as the kernel would and decode it as the grader does."""
    text = wire.dumps(wire.encode(value, lambda obj: {"t": "handle", "id": 1, "types": ["x.Y"]}))
    return wire.decode(wire.loads(text), lambda record: ("handle", record["id"]))


def tensor_record(**changes):
    """A valid wire record of a float32 (2,) tensor, with some fields changed."""
    record = {
        "t": "tensor",
        "dtype": "float32",
        "shape": [2],
        "grad": False,
        "param": False,
        "data": base64.b64encode(torch.ones(2).numpy().tobytes()).decode(),
    }
    return {**record, **changes}


def nested(levels, make):
    """A value nested `levels` deep, each level made by `make(inner)`."""
    value = 1
    for _ in range(levels):
        value = make(value)
    return value


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        3,
        -2.5,
        "text",
        [1, [2, "three"]],
        (1, (2.0, None)),
        {"a": 1, "b": [True]},
        torch.float64,
    ],
)
def test_plain_values_cross_unchanged(value):
    assert round_trip(value) == value


@pytest.mark.parametrize(
    "dtype",
    [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.bool],
)
def test_tensors_cross_with_dtype_shape_and_values(dtype):
    tensor = (torch.arange(12.0).reshape(3, 4) - 5).to(dtype)
    back = round_trip(tensor)
    assert back.dtype == dtype and back.shape == (3, 4)
    assert torch.equal(back, tensor)


def test_special_floats_parameters_and_gradients_cross():
    assert torch.isnan(torch.tensor(round_trip(float("nan"))))
    assert round_trip(float("-inf")) == float("-inf")
    parameter = round_trip(torch.nn.Parameter(torch.ones(2)))
    assert isinstance(parameter, torch.nn.Parameter) and parameter.requires_grad
    assert round_trip(torch.ones(2, requires_grad=True)).requires_grad


def test_other_objects_cross_as_handles():
    assert round_trip(object()) == ("handle", 1)


@pytest.mark.parametrize(
    "record",
    [
        tensor_record(dtype="object"),
        tensor_record(shape=[3]),
        tensor_record(shape=[-2]),
        tensor_record(shape=[True, 2]),
        tensor_record(data="not base64!"),
        tensor_record(extra=1),
        {"t": "tuple", "v": "abc"},
        {"t": "dict", "v": [["a", 1], ["a", 2]]},
        {"t": "float", "v": "1e400"},
        {"t": "pickle", "v": "..."},
        {"no": "tag"},
    ],
)
def test_malformed_values_are_refused(record):
    with pytest.raises(wire.MalformedValue):
        wire.decode(record, lambda record: None)


def test_too_deep_values_are_refused():
    value = []
    for _ in range(100):
        value = [value]
    with pytest.raises(wire.MalformedValue):
        wire.decode(value, lambda record: None)


@pytest.mark.parametrize(
    "value",
    [
        (torch.randn(512, 512), torch.randn(4, 6, 8).double(), torch.ones(3, dtype=torch.bool)),
        {f"w_{index}.weight": torch.randn(8, 8) for index in range(200)},
        [0.5 * step for step in range(10_000)],
        nested(wire.MAX_DEPTH, lambda inner: {"a": inner}),
        nested(wire.MAX_DEPTH, lambda inner: (inner,)),
        'a string with [brackets], {braces}, "quotes" and \\ backslashes: \\"[[',
    ],
    ids=["tensors", "parameters", "history", "deep dicts", "deep tuples", "punctuation"],
)
def test_the_budget_admits_every_value_the_tests_read(value):
    back = round_trip(value)
    assert str(back) == str(value)


@pytest.mark.slow  # decodes replies of many megabytes
def test_the_budget_counts_each_string_as_one_value_whatever_it_holds():
    text = wire.dumps(['[[[{,:\\"]]' * 1000, 'a\\"b\\\\'] * (wire.MAX_JSON_VALUES // 2 - 1))
    wire.check_budget(text)
    with pytest.raises(wire.OverBudget):
        wire.check_budget(text[:-1] + ', "one more", 2]')


@pytest.mark.parametrize(
    ("text", "over"),
    [
        ("[" + "0, " * wire.MAX_JSON_VALUES + "0]", "values"),
        ("[" + "[], " * wire.MAX_JSON_VALUES + "[]]", "values"),
        ("[" + '{"a": 1}, ' * (wire.MAX_JSON_VALUES // 2) + "1]", "values"),
        ("[" + '"ab", ' * wire.MAX_JSON_VALUES + '"ab"]', "values"),
        ("[" * (wire.MAX_JSON_DEPTH + 1) + "]" * (wire.MAX_JSON_DEPTH + 1), "levels deep"),
        ('{"a": ' * (wire.MAX_JSON_DEPTH + 1) + "1" + "}" * (wire.MAX_JSON_DEPTH + 1), "deep"),
    ],
    ids=["numbers", "empty lists", "small dicts", "short strings", "nested lists", "nested dicts"],
)
def test_json_over_the_budget_is_refused_naming_what_was_over(text, over):
    with pytest.raises(wire.OverBudget, match=over):
        wire.loads(text)
    with pytest.raises(client.MalformedReply, match=over):
        content = {"comm_id": "c", "data": {"reply": f'{{"value": {text}}}'}}  # the agent's reply
        client.KernelLink(executor=None).decode_reply(content)


@pytest.mark.parametrize(
    "text", ["]" * 1000 + "[" * 1000, '"unterminated [[[', "[1, 2", "{" + ":" * 10**6 + "}"]
)
def test_json_the_budget_cannot_parse_is_refused(text):
    with pytest.raises(wire.MalformedValue):
        wire.loads(text)


@pytest.mark.parametrize(
    "record",
    [
        tensor_record(shape=[wire.MAX_ELEMENTS]),
        tensor_record(shape=[1] * (wire.MAX_DIMENSIONS + 1)),
        tensor_record(shape=[10**4000, 0]),
        tensor_record(data="AAAA" * 1000),
    ],
    ids=["more elements than data", "too many dimensions", "a huge size", "more data than shape"],
)
def test_tensor_records_are_checked_against_their_data_before_decoding(record):
    with pytest.raises(wire.MalformedValue, match="tensor"):
        wire.decode(record, lambda record: None)
