"""The review of a student's cell: findings, never a verdict, and the names a cell binds and reads.

Correct code in the usual styles of PyTorch has no finding; each reach into files, processes or
the interpreter, and each call a lab or an exercise forbids, has one. A student sees, as a cell
runs, the findings that the grader lists for the instructor, in the same words.
"""

import re

import pytest
from catalogue import ASSIGNMENTS, idiomatic, mistakes
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from course.coursedir import notebooks, paths
from course.coursedir.scratch import fill, solution_cells
from course.grading.preprocessors import findings as grading
from utils.review import (
    LabPolicy,
    bound_names,
    defined_names,
    findings,
    free_names,
    imported_names,
)


def lab_policy(assignment):
    """The policy in the metadata of a lab's source notebook."""
    return LabPolicy.from_metadata(notebooks.read(paths.source_lab(assignment)).metadata)


def locked_cells(nb):
    """grade_id -> source of each locked code cell of a notebook: the instructor's cells."""
    return {
        notebooks.nbgrader_meta(cell)["grade_id"]: cell.source
        for cell in nb.cells
        if cell.cell_type == "code" and notebooks.nbgrader_meta(cell).get("locked")
    }


def lab_modules(assignment):
    """name -> dotted name of what the locked cells of a lab's source notebook import."""
    return imported_names(locked_cells(notebooks.read(paths.source_lab(assignment))).values())


SOFTMAX_LAB = lab_policy("01_softmax")
MODULES = {
    "torch": "torch",
    "nn": "torch.nn",
    "F": "torch.nn.functional",
    "math": "math",
    "np": "numpy",
}

# Correct code in the usual styles of PyTorch and Python: none of it has a finding.
IDIOMATIC = {
    "public dunders of torch": "nn.Module.__init__\nprint(torch.__version__)\n",
    "a parameter named input": '''
def softmax(input, dim=-1):
    shifted = input - input.amax(dim=dim, keepdim=True)
    return shifted.exp() / shifted.exp().sum(dim=dim, keepdim=True)
''',
    "forward(self, input)": '''
class Scale(nn.Module):
    def forward(self, input):
        return 2.0 * input
''',
    "initialisation through self.modules()": '''
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(2, 2)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)
''',
    "initialisation through self.apply": '''
def init_weights(module):
    if isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, std=0.02)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(2, 2)
        self.apply(init_weights)
''',
    "super(Class, self)": '''
class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
''',
    "extra_repr and __repr__": '''
class Net(nn.Module):
    def extra_repr(self):
        return f"size={self.size}"

    def __repr__(self):
        return f"{self.__class__.__name__}(size={self.size})"
''',
    "type(x).__name__ in an error message": '''
def check(x):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected a tensor, got {type(x).__name__}")
''',
    "a main block": '''
if __name__ == "__main__":
    print(softmax(torch.zeros(3)))
''',
    "help left in": "help(torch.Tensor.amax)\nhelp(softmax)\n",
    "type hints": '''
from typing import Optional


def scale(x: torch.Tensor, factor: Optional[float] = None) -> torch.Tensor:
    return x if factor is None else x * factor
''',
    "asserts": "assert x.shape == (2, 3), f'x is {tuple(x.shape)}'\nassert x.dtype == torch.bool\n",
    "a small helper": '''
def largest(scores, dim):
    return scores.amax(dim=dim, keepdim=True)


def shifted(scores, dim=-1):
    return scores - largest(scores, dim)
''',
    "locals named like builtins": '''
def summary(input, max=None):
    sum = input.sum()
    list = [sum, input.amax()]
    max = max or len(list)
    return list, max, type(input)
''',
    "getattr, hasattr and setattr with a literal name": '''
def has_bias(layer):
    setattr(layer, "checked", True)
    return hasattr(layer, "bias") and getattr(layer, "bias", None) is not None
''',
    "decorators and context managers of torch": '''
@torch.no_grad()
def frozen(model, x):
    with torch.autocast("cpu", enabled=False):
        return model(x)
''',
    "the modules a lab allows": "import math\nimport numpy as np\nfrom torch import nn\n"
    "from torch.nn import functional as F\nx = math.sqrt(np.float32(2.0))\n",
    "a dataclass and a cache": '''
from __future__ import annotations

import dataclasses
import functools


@dataclasses.dataclass(frozen=True)
class Shape:
    batch: int
    length: int


@functools.lru_cache(maxsize=None)
def causal(size: int) -> torch.Tensor:
    return torch.ones(size, size, dtype=torch.bool).tril()
''',
}


@pytest.mark.parametrize("source", IDIOMATIC.values(), ids=IDIOMATIC.keys())
def test_idiomatic_correct_code_has_no_finding(source):
    assert findings(source, SOFTMAX_LAB, MODULES) == []


# Attacks and reaches: each has its finding, in these words.
REACHES = {
    "a forbidden call through getattr with a literal name": (
        "def softmax(scores, dim=-1):\n    return getattr(torch, 'softmax')(scores, dim)\n",
        "line 2: it calls softmax, which this lab forbids",
    ),
    "a star import": (
        "from torch import *\n",
        "line 1: it imports every name of torch, which hides what it calls",
    ),
    "an import outside the lab": (
        "import os\n",
        "line 1: it imports os, which this lab does not use",
    ),
    "from torch import hub": (
        "from torch import hub\n",
        "line 1: it uses torch.hub, which reaches files, processes or the interpreter",
    ),
    "a dotted import": (
        "import torch.utils.cpp_extension\n",
        "line 1: it uses torch.utils.cpp_extension, which reaches files, processes or the "
        "interpreter",
    ),
    "torch.save": (
        "def keep(model):\n    torch.save(model, 'model.pt')\n",
        "line 2: it uses torch.save, which reaches files, processes or the interpreter",
    ),
    "np.load": (
        "weights = np.load('weights.npy')\n",
        "line 1: it uses numpy.load, which reaches files, processes or the interpreter",
    ),
    "a module through torch": (
        "paths = torch.os.listdir('.')\n",
        "line 1: it uses torch.os.listdir, which reaches files, processes or the interpreter",
    ),
    "getattr with a computed name": (
        "def get(x, name):\n    return getattr(x, name)\n",
        "line 2: it calls getattr with a name that is not a plain literal one, which can reach "
        "anything",
    ),
    "getattr with a built name": (
        "f = getattr(torch, 'get_' + 'ipython')\n",
        "line 1: it calls getattr with a name that is not a plain literal one, which can reach "
        "anything",
    ),
    "getattr with a private name": (
        "c = getattr(torch, '_C')\n",
        "line 1: it calls getattr with a name that is not a plain literal one, which can reach "
        "anything",
    ),
    "every class": (
        "classes = ().__class__.__base__.__subclasses__()\n",
        "line 1: it uses .__subclasses__, which reaches the interpreter's internals",
    ),
    "a frame's globals": (
        "def outer(frame):\n    return frame.f_globals\n",
        "line 2: it uses .f_globals, which reaches the interpreter's internals",
    ),
    "a generator's frame": (
        "frame = (x for x in []).gi_frame\n",
        "line 1: it uses .gi_frame, which reaches the interpreter's internals",
    ),
    "a private part of torch": (
        "def f():\n    return torch._C\n",
        "line 2: it uses torch._C, a private part of torch",
    ),
    "changing a module": (
        "torch.allclose = lambda *args, **kwargs: True\n",
        "line 1: it changes torch.allclose, which every cell shares",
    ),
    "changing a module through an alias": (
        "F.relu = None\n",
        "line 1: it changes torch.nn.functional.relu, which every cell shares",
    ),
    "a relative import": (
        "from . import grading\n",
        "line 1: it imports from a relative module, which this lab does not use",
    ),
    "a reaching name through an alias of an import": (
        "import torch.utils.cpp_extension as ext\nmodule = ext.load('m', ['m.cpp'])\n",
        "line 2: it uses torch.utils.cpp_extension.load, which reaches files, processes or the "
        "interpreter",
    ),
}
REACHING_BUILTINS = ["eval", "exec", "open", "get_ipython", "__import__", "compile", "globals"]


@pytest.mark.parametrize(("source", "finding"), REACHES.values(), ids=REACHES.keys())
def test_each_reach_has_its_finding(source, finding):
    assert finding in findings(source, SOFTMAX_LAB, MODULES)


@pytest.mark.parametrize("name", REACHING_BUILTINS)
def test_each_builtin_that_reaches_the_interpreter_or_files_has_a_finding(name):
    source = f"def f(text):\n    return {name}(text)\n"
    listed = findings(source, SOFTMAX_LAB, MODULES)
    assert f"line 2: it calls {name}, which reaches the interpreter or files" in listed


def test_a_function_the_student_defines_is_not_the_builtin_it_shadows():
    source = "def open(path):\n    return path\n\n\nfile = open('x')\n"
    assert findings(source, SOFTMAX_LAB, MODULES) == []


def test_every_way_out_through_the_base_class_is_listed():
    listed = findings("classes = ().__class__.__base__.__subclasses__()\n", SOFTMAX_LAB, MODULES)
    assert listed == [
        "line 1: it uses .__base__, which reaches the interpreter's internals",
        "line 1: it uses .__subclasses__, which reaches the interpreter's internals",
    ]


def test_changing_a_forbidden_function_of_torch_is_listed_twice():
    listed = findings("torch.softmax = lambda x, dim: x\n", SOFTMAX_LAB, MODULES)
    assert listed == [
        "line 1: it calls softmax, which this lab forbids",
        "line 1: it changes torch.softmax, which every cell shares",
    ]


@pytest.mark.parametrize(
    "source",
    [
        "def softmax(scores, dim=-1):\n    return torch.softmax(scores, dim=dim)\n",
        "def softmax(scores, dim=-1):\n    return scores.softmax(dim)\n",
        "from torch.nn.functional import softmax as normalise\n",
    ],
)
def test_the_softmax_lab_lists_a_call_of_torchs_softmax(source):
    listed = findings(source, lab_policy("01_softmax"), lab_modules("01_softmax"))
    assert any("it calls softmax, which this lab forbids" in finding for finding in listed)


MASKED_SOFTMAX_BY_TORCH = '''
def masked_softmax(scores, mask, dim=-1):
    """Softmax over the allowed positions."""
    return F.softmax(scores.masked_fill(~mask, float("-inf")), dim=dim)
'''


def test_an_exercise_lists_the_call_it_reimplements_only_in_its_own_cell():
    policy, modules = lab_policy("05_masks"), lab_modules("05_masks")
    assert findings(MASKED_SOFTMAX_BY_TORCH, policy, modules) == [
        "line 4: it calls softmax, which this exercise forbids"
    ]
    elsewhere = "def weights(scores):\n    return F.softmax(scores, dim=-1)\n"
    assert findings(elsewhere, policy, modules) == []


def test_findings_are_in_line_order_without_repeats():
    source = "x = 1\nimport os\nimport os\ny = eval('1')\n"
    assert findings(source, SOFTMAX_LAB, MODULES) == [
        "line 2: it imports os, which this lab does not use",
        "line 3: it imports os, which this lab does not use",
        "line 4: it calls eval, which reaches the interpreter or files",
    ]


def test_a_cell_that_is_not_python_has_no_finding():
    assert findings("def softmax(scores, dim=-1)\n    return scores\n", SOFTMAX_LAB) == []


def test_a_name_the_cell_binds_is_not_the_labs_module():
    assert findings("def f(torch):\n    return torch.save\n", SOFTMAX_LAB, MODULES) == []


FORBIDDEN_CALL = re.compile(r"line \d+: it calls \w+, which this (lab|exercise) forbids")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solutions_and_correct_variants_have_no_finding(assignment):
    policy, modules = lab_policy(assignment), lab_modules(assignment)
    cells = solution_cells(assignment, cell_types=("code",))
    variants = {variant.name: variant.code for variant in idiomatic(assignment)}
    for name, source in {**cells, **variants}.items():
        assert findings(source, policy, modules) == [], f"{assignment} {name}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_catalogued_mistakes_have_no_finding_but_the_calls_they_are_about(assignment):
    policy, modules = lab_policy(assignment), lab_modules(assignment)
    for mistake in mistakes(assignment):
        listed = findings(mistake.code, policy, modules)
        assert all(FORBIDDEN_CALL.fullmatch(finding) for finding in listed), (mistake.name, listed)


# A lab's policy.


def test_a_notebook_without_a_policy_has_the_default_one():
    assert LabPolicy.from_metadata({}) == LabPolicy()
    assert LabPolicy().allows("torch.nn.functional") and not LabPolicy().allows("torchvision")


def test_an_unknown_key_in_a_policy_is_refused():
    metadata = {"course": {"lab_policy": {"allowed_modules": ["torch"], "forbiden_calls": []}}}
    with pytest.raises(ValueError, match="not \\['forbiden_calls'\\]"):
        LabPolicy.from_metadata(metadata)


def test_every_lab_has_a_policy_whose_exercises_are_its_own():
    for assignment in ASSIGNMENTS:
        metadata = notebooks.read(paths.source_lab(assignment)).metadata
        assert "lab_policy" in metadata.get("course", {}), assignment
        defined = set().union(
            *map(defined_names, solution_cells(assignment, cell_types=("code",)).values())
        )
        assert set(lab_policy(assignment).forbidden_in) <= defined, assignment


# The names a cell binds and reads.

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


# The same words in the student's kernel.

STUDENT_CELLS = {
    "01_softmax": {
        "softmax": "import os\n\n\ndef softmax(scores, dim=-1):\n"
        "    return torch.softmax(scores, dim=dim)\n",
        "log_softmax": "def log_softmax(scores, dim=-1):\n"
        "    return eval('scores.log_softmax(dim)')\n",
        "temperature_for_entropy": "def temperature_for_entropy(scores, target):\n"
        "    return getattr(torch, 'soft' + 'max')(scores / target, -1)\n",
    },
    "05_masks": {
        "decoder_mask": "def decoder_mask(n_queries, n_keys, window=None):\n"
        "    return torch._C\n",
        "masked_softmax": MASKED_SOFTMAX_BY_TORCH,
    },
}


@pytest.fixture
def shell():
    """A fresh IPython shell, as in a student's kernel (without a history file)."""
    config = Config()
    config.HistoryManager.enabled = False
    yield InteractiveShell.instance(config=config)
    InteractiveShell.clear_instance()


@pytest.mark.parametrize("assignment", STUDENT_CELLS)
def test_a_student_sees_as_a_cell_runs_what_the_grader_lists(
    assignment, shell, tmp_path, monkeypatch, capsys
):
    filename = paths.lab_filename(assignment)
    nb = fill(notebooks.read(paths.RELEASE / assignment / filename), STUDENT_CELLS[assignment])
    notebooks.write(nb, tmp_path / filename)
    monkeypatch.chdir(tmp_path)
    imports = "\n".join(f"import {dotted} as {name}" for name, dotted in MODULES.items())
    shell.run_cell(f"{imports}\nfrom utils.review import show_findings\nshow_findings()\n")
    capsys.readouterr()
    for grade_id, source in STUDENT_CELLS[assignment].items():
        result = shell.run_cell(source)
        assert result.success, f"{grade_id}: {result.error_in_exec!r}"
    shown = [line.strip() for line in capsys.readouterr().out.splitlines() if line[:7] == "  line "]
    listed = grading.notebook_findings(nb, locked_cells(nb), lab_policy(assignment))
    assert len(listed) >= len(STUDENT_CELLS[assignment])
    assert shown == [finding.split(", ", 1)[1] for finding in listed]


@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
def test_outside_a_labs_folder_no_cell_shows_findings(folder, shell, monkeypatch, capsys):
    # A solution notebook (no lab policy) and a lecture run their own code, tests included.
    monkeypatch.chdir(paths.ROOT / folder / ("01_softmax" if folder == "solutions" else ""))
    shell.run_cell("from utils.review import show_findings\nshow_findings()\n")
    result = shell.run_cell("import os\nx = eval('1')\n")
    assert result.success and "findings" not in capsys.readouterr().out
