"""The tables a cell is read against: a name matches wherever it appears in a dotted chain."""

import pytest

from utils.review_rules import (
    BY_A_NAME,
    FROM_A_PICKLE,
    FROM_A_STRING,
    FROM_BYTES,
    RUNS_CODE,
    RUNS_CODE_ARGUMENTS,
    RUNS_CODE_BUILTINS,
    private_part,
    reaches,
    runs_code,
)

RUNS_CODE_NAMES = {
    "pickle.loads": "pickle.loads",
    "torch.serialization.pickle.loads": "pickle.loads",  # pickle, held by torch
    "typing.get_type_hints": "typing.get_type_hints",
    "torch.utils.cpp_extension.load_inline": "torch.utils.cpp_extension.load_inline",
    "torch.fx.symbolic_trace": "torch.fx",  # the longest name it holds
    "torch.softmax": None,
    "typing.Optional": None,
}


@pytest.mark.parametrize(("dotted", "name"), RUNS_CODE_NAMES.items(), ids=RUNS_CODE_NAMES.keys())
def test_a_dotted_name_runs_code_by_the_longest_name_of_the_table_it_holds(dotted, name):
    assert runs_code(dotted) == name


@pytest.mark.parametrize("dotted", ["torch.load", "numpy.load", "torch.os.getpid", "torch.hub"])
def test_a_dotted_name_that_reaches_files_or_processes_reaches(dotted):
    assert reaches(dotted)


@pytest.mark.parametrize("dotted", ["torch.softmax", "torch.nn.functional", "numpy.loadings"])
def test_a_dotted_name_of_plain_computation_does_not_reach(dotted):
    assert not reaches(dotted)


def test_a_private_part_is_a_single_underscore_name_or_dict_below_the_module():
    assert private_part("torch._C._nn") == "_C"
    assert private_part("torch.nn.Module.__dict__") == "__dict__"
    assert private_part("torch.nn.Module.__init__") is None
    assert private_part("_thread.start") is None  # the module itself is not below it


def test_every_row_says_how_it_runs_code_and_what_it_does():
    kinds = {FROM_A_STRING, FROM_A_PICKLE, FROM_BYTES, BY_A_NAME}
    rows = [*RUNS_CODE.values(), *RUNS_CODE_BUILTINS.values()]
    rows += [row[:2] for row in RUNS_CODE_ARGUMENTS.values()]
    assert all(how in kinds and what for how, what in rows)
