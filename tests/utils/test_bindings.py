"""The names a cell binds and reads, seen in every form Python has, and nothing in broken code."""

from utils.bindings import (
    all_bound_names,
    bound_names,
    defined_names,
    free_names,
    imported_names,
)

BINDING_FORMS = """
import utils.grading as helper_a
from math import pi as helper_b
for helper_c in []:
    pass
with open("/dev/null") as helper_d:
    pass
if (helper_e := 1):
    pass
try:
    pass
except ValueError as helper_f:
    pass
helper_g, (helper_h, helper_i) = 1, (2, 3)
helper_j = helper_k = 0
helper_l += 1
helper_m: int = 0
def helper_n():
    helper_local = 1
class helper_o:
    helper_attribute = 1
del helper_p
"""


def test_every_binding_form_of_a_cell_is_seen():
    names = set(bound_names(BINDING_FORMS))
    assert names == {f"helper_{letter}" for letter in "abcdefghijklmnop"}


def test_a_cell_reads_the_names_its_functions_and_lambdas_need_from_outside():
    source = (
        "import torch\n"
        "def f(x, *args, scale=1, **kwargs):\n"
        "    inner = lambda y: y + offset\n"
        "    return g(inner(x) * scale, torch)\n"
        "class C:\n    size = width\n"
        "total = f(value)\n"
    )
    assert free_names(source) == {"offset", "g", "width", "value"}


def test_only_the_top_level_functions_and_classes_are_defined_names():
    source = "def a():\n    def inner():\n        pass\nclass B:\n    pass\nc = 1\n"
    assert defined_names(source) == {"a", "B"}


def test_code_that_is_not_python_binds_and_reads_nothing():
    broken = "def f(:\n"
    assert bound_names(broken) == free_names(broken) == defined_names(broken) == set()


def test_imported_names_map_each_alias_to_its_full_name():
    sources = ["import torch\nimport torch.nn.functional as F\nfrom torch import nn as layers\n"]
    assert imported_names(sources) == {
        "torch": "torch",
        "F": "torch.nn.functional",
        "layers": "torch.nn",
    }


def test_every_name_bound_anywhere_in_a_cell_is_seen_by_all_bound_names():
    source = "def f(x, *rest, scale=1):\n    local = x\n    class Inner:\n        pass\ny = 1\n"
    assert all_bound_names(source) == {"f", "x", "rest", "scale", "local", "Inner", "y"}
    assert all_bound_names("def f(:\n") == set()
