"""The review of a student's cell: findings, never a verdict, for the cells a student wrote.

Correct code in the usual styles of PyTorch has no finding; each reach into files, processes or
the interpreter, and each call a lab or an exercise forbids, has one. A student sees, as a cell
runs, the findings that the grader lists for the instructor, in the same words.
"""

import json
import re

import pytest
from catalogue import ASSIGNMENTS, idiomatic, mistakes
from IPython.core.interactiveshell import InteractiveShell
from nbformat.v4 import new_code_cell
from traitlets.config import Config

from course.coursedir import notebooks, paths
from course.coursedir.scratch import fill, solution_cells
from course.grading.preprocessors import findings as grading
from utils.bindings import defined_names, imported_names
from utils.review import (
    MAX_READ_CHARACTERS,
    LabPolicy,
    finding_note,
    findings,
    notebook_findings,
    student_cells,
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
    "string annotations that name classes": '''
class Net(nn.Module):
    def forward(self, x: "torch.Tensor") -> "torch.Tensor":
        return x

    @classmethod
    def build(cls) -> "Net":
        return cls().eval()
''',
    "a single dispatch on types": '''
import functools


@functools.singledispatch
def size(x) -> int:
    return len(x)


@size.register
def _(x: torch.Tensor) -> int:
    return x.numel()
''',
    "timing with time": "import time\nstart = time.perf_counter()\n",
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
    "an indented cell, which IPython runs unindented": (
        "    import os\n    pid = os.getpid()\n",
        "line 1: it imports os, which this lab does not use",
    ),
    "a shell line": (
        "scale = 1\n!cat /etc/passwd\n",
        "line 2: it calls get_ipython, which reaches the interpreter or files",
    ),
    "a line magic": (
        "%time hidden = 1\n",
        "line 1: it calls get_ipython, which reaches the interpreter or files",
    ),
    "a cell magic": (
        "%%bash\ncat /etc/passwd\n",
        "line 1: it calls get_ipython, which reaches the interpreter or files",
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
    "every object through a module torch holds": (
        "objects = torch.cuda.graphs.gc.get_objects()\n",
        "line 1: it uses torch.cuda.graphs.gc.get_objects, which reaches files, processes or the "
        "interpreter",
    ),
    "a format string that reads a function's globals": (
        "template = '{0.__init__.__globals__[sys].modules}'\nprint(template.format(f))\n",
        "line 1: it uses .__globals__ in a format string, which reaches the interpreter's "
        "internals",
    ),
    "a library loaded through torch.classes": (
        "torch.classes.load_library('ops.so')\n",
        "line 1: it uses torch.classes.load_library, which reaches files, processes or the "
        "interpreter",
    ),
    "numpy.fromregex": (
        "rows = np.fromregex('data.txt', r'(\\d+)', [('x', int)])\n",
        "line 1: it uses numpy.fromregex, which reaches files, processes or the interpreter",
    ),
    "torch.save through getattr": (
        "getattr(torch, 'save')(model, 'model.pt')\n",
        "line 1: it uses torch.save, which reaches files, processes or the interpreter",
    ),
    "changing a module through setattr": (
        "setattr(torch, 'allclose', lambda *args, **kwargs: True)\n",
        "line 1: it changes torch.allclose, which every cell shares",
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
REACHING_BUILTINS = ["open", "get_ipython", "globals", "breakpoint"]


@pytest.mark.parametrize(("source", "finding"), REACHES.values(), ids=REACHES.keys())
def test_each_reach_has_its_finding(source, finding):
    assert finding in findings(source, SOFTMAX_LAB, MODULES)


@pytest.mark.parametrize("name", REACHING_BUILTINS)
def test_each_builtin_that_reaches_the_interpreter_or_files_has_a_finding(name):
    source = f"def f(text):\n    return {name}(text)\n"
    listed = findings(source, SOFTMAX_LAB, MODULES)
    assert f"line 2: it calls {name}, which reaches the interpreter or files" in listed


# Code run from a string or a pickle: each call has its finding, which says what it does.
TYPE_HINTS = "runs code from a string: typing.get_type_hints evaluates string annotations"
UNPICKLES = "runs code from a pickle: unpickling calls whatever the pickle names"
TIMES = "runs code from a string: timeit compiles and runs its stmt and setup strings"
RUNS_CODE = {
    "typing.get_type_hints": (
        "import typing\nhints = typing.get_type_hints(f)\n",
        f"line 2: it uses typing.get_type_hints, which {TYPE_HINTS}",
    ),
    "get_type_hints through getattr": (
        "import typing\nhints = getattr(typing, 'get_type_hints')(f)\n",
        f"line 2: it uses typing.get_type_hints, which {TYPE_HINTS}",
    ),
    "get_type_hints imported by name": (
        "from typing import get_type_hints as hints\n",
        f"line 1: it uses typing.get_type_hints, which {TYPE_HINTS}",
    ),
    "typing.ForwardRef": (
        "import typing\nref = typing.ForwardRef('Net')\n",
        "line 2: it uses typing.ForwardRef, which runs code from a string: a ForwardRef "
        "evaluates its string when resolved",
    ),
    "inspect.get_annotations(eval_str=True)": (
        "import inspect\nhints = inspect.get_annotations(f, eval_str=True)\n",
        "line 2: it calls inspect.get_annotations with eval_str, which runs code from a string: "
        "eval_str=True evaluates string annotations",
    ),
    "inspect.signature with a computed eval_str": (
        "import inspect\nsignature = inspect.signature(f, eval_str=flag)\n",
        "line 2: it calls inspect.signature with eval_str, which runs code from a string: "
        "eval_str=True evaluates string annotations",
    ),
    "functools.singledispatch on a string annotation": (
        "import functools\n\n\n@functools.singledispatch\ndef size(x):\n    return len(x)\n\n\n"
        "@size.register\ndef _(x: 'torch.Tensor'):\n    return x.numel()\n",
        "line 4: it uses functools.singledispatch, which runs code from a string: functools "
        "evaluates the string annotations of what it registers",
    ),
    "torch.fx": (
        "graph_module = torch.fx.symbolic_trace(model)\n",
        "line 1: it uses torch.fx.symbolic_trace, which runs code from a string: torch.fx writes "
        "Python source for a graph, whose calls may be named by strings, and compiles it "
        "(GraphModule, symbolic_trace, recompile)",
    ),
    "torch.utils.benchmark.Timer": (
        "timer = torch.utils.benchmark.Timer(stmt=statement)\n",
        "line 1: it uses torch.utils.benchmark.Timer, which runs code from a string: the "
        "benchmark Timer compiles and runs its stmt and setup strings",
    ),
    "torch.utils.collect_env.run": (
        "from torch.utils.collect_env import run\n",
        "line 1: it uses torch.utils.collect_env.run, which runs code from a string: "
        "collect_env's run runs a shell command from a string",
    ),
    "torch.jit.CompilationUnit": (
        "unit = torch.jit.CompilationUnit(source)\n",
        "line 1: it uses torch.jit.CompilationUnit, which runs code from a string: TorchScript "
        "compiles source from a string",
    ),
    "np.load(allow_pickle=True)": (
        "weights = np.load('weights.npy', allow_pickle=True)\n",
        "line 1: it calls numpy.load with allow_pickle, which runs code from a pickle: "
        "allow_pickle=True lets NumPy unpickle object arrays",
    ),
    "np.load with allow_pickle by position": (
        "weights = np.load('weights.npy', None, True)\n",
        "line 1: it calls numpy.load with allow_pickle, which runs code from a pickle: "
        "allow_pickle=True lets NumPy unpickle object arrays",
    ),
    "torch.load(weights_only=False)": (
        "state = torch.load('model.pt', weights_only=False)\n",
        "line 1: it calls torch.load with weights_only, which runs code from a pickle: "
        "weights_only=False lets torch.load unpickle any object",
    ),
    "torch.load with a pickle_module": (
        "import pickle\nstate = torch.load('model.pt', pickle_module=pickle)\n",
        "line 2: it calls torch.load with pickle_module, which runs code from a pickle: a "
        "pickle_module makes torch.load unpickle any object",
    ),
    "pickle.loads": (
        "import pickle\nvalue = pickle.loads(data)\n",
        f"line 2: it uses pickle.loads, which {UNPICKLES}",
    ),
    "pickle through torch": (
        "value = torch.serialization.pickle.loads(data)\n",
        f"line 1: it uses torch.serialization.pickle.loads, which {UNPICKLES}",
    ),
    "_pickle.Unpickler": (
        "from _pickle import Unpickler\n",
        f"line 1: it uses _pickle.Unpickler, which {UNPICKLES}",
    ),
    "shelve.open": (
        "import shelve\nshelf = shelve.open('saved')\n",
        "line 2: it uses shelve.open, which runs code from a pickle: a shelf unpickles each "
        "value it reads",
    ),
    "marshal.loads": (
        "import marshal\ncode = marshal.loads(data)\n",
        "line 2: it uses marshal.loads, which runs code from bytes: marshal makes code objects "
        "from bytes",
    ),
    "timeit.timeit": (
        "import timeit\nseconds = timeit.timeit('softmax(x)', globals=names)\n",
        f"line 2: it uses timeit.timeit, which {TIMES}",
    ),
    "timeit.Timer imported by name": (
        "from timeit import Timer\n",
        f"line 1: it uses timeit.Timer, which {TIMES}",
    ),
    "code.InteractiveInterpreter": (
        "import code\ncode.InteractiveInterpreter(names).runsource(text)\n",
        "line 2: it uses code.InteractiveInterpreter, which runs code from a string: the code "
        "module compiles and runs Python source from strings",
    ),
    "runpy": (
        "import runpy\nnames = runpy.run_path('script.py')\n",
        "line 2: it uses runpy.run_path, which runs code from a string: runpy runs a module or a "
        "script named by a string",
    ),
    "doctest": (
        "import doctest\ndoctest.run_docstring_examples(f, names)\n",
        "line 2: it uses doctest.run_docstring_examples, which runs code from a string: doctest "
        "runs the examples written in docstrings and strings",
    ),
    "logging.config.listen": (
        "import logging.config\nlistener = logging.config.listen(9999)\n",
        "line 2: it uses logging.config.listen, which runs code from a string: logging.config "
        "evaluates and imports what a configuration names in strings, and "
        "logging.config.listen takes one from a socket",
    ),
    "numpy.f2py": (
        "from numpy import f2py\n",
        "line 1: it uses numpy.f2py, which runs code from a string: numpy.f2py compiles Fortran "
        "source from strings and loads it",
    ),
    "importlib.import_module": (
        "import importlib\nmodule = importlib.import_module(name)\n",
        "line 2: it uses importlib.import_module, which reaches code named by a string: "
        "importlib imports modules named by strings, running their code",
    ),
    "pydoc.locate": (
        "import pydoc\nf = pydoc.locate(name)\n",
        "line 2: it uses pydoc.locate, which reaches code named by a string: pydoc imports what "
        "a dotted name in a string names",
    ),
    "pkgutil.resolve_name": (
        "import pkgutil\nf = pkgutil.resolve_name(name)\n",
        "line 2: it uses pkgutil.resolve_name, which reaches code named by a string: pkgutil "
        "imports what a dotted name in a string names",
    ),
    "operator.attrgetter with a computed name": (
        "import operator\nf = operator.attrgetter(name)(torch)\n",
        "line 2: it calls operator.attrgetter with a name that is not a plain literal one, "
        "which can reach anything",
    ),
    "eval": (
        "def f(text):\n    return eval(text)\n",
        "line 2: it calls eval, which runs code from a string: eval evaluates an expression "
        "written in a string",
    ),
    "exec": (
        "def f(text):\n    exec(text)\n",
        "line 2: it calls exec, which runs code from a string: exec runs statements written in "
        "a string",
    ),
    "compile": (
        "def f(text):\n    return compile(text, 'cell', 'exec')\n",
        "line 2: it calls compile, which runs code from a string: compile makes code from a "
        "string, for eval and exec to run",
    ),
    "__import__": (
        "def f(name):\n    return __import__(name)\n",
        "line 2: it calls __import__, which reaches code named by a string: __import__ imports "
        "a module named by a string, running its code",
    ),
}


@pytest.mark.parametrize(("source", "finding"), RUNS_CODE.values(), ids=RUNS_CODE.keys())
def test_each_call_that_runs_code_from_a_string_or_a_pickle_has_its_finding(source, finding):
    assert finding in findings(source, SOFTMAX_LAB, MODULES)


# A string that runs as code is read as code: the call it hides is listed, at its line.
HIDDEN_IN_STRINGS = {
    "a string annotation evaluated by get_type_hints": '''import typing


def softmax(scores, dim=-1):
    def hidden(call: "torch.softmax"):
        pass

    return typing.get_type_hints(hidden)["call"](scores, dim=dim)
''',
    "a string inside an annotation": '''


def softmax(scores, dim=-1):
    def hidden(call: typing.Optional["F.softmax"]) -> None:
        pass
''',
    "eval": "\n\n\n\nprobabilities = eval('torch.softmax(scores, -1)')\n",
    "exec of several lines": "\n\nexec('''\nx = 1\ny = torch.softmax(scores, -1)\n''')\n",
    "timeit": "import timeit\n\n\n\nt = timeit.timeit(stmt='scores.softmax(-1)', number=1)\n",
    "pydoc.locate": "import pydoc\n\n\n\nf = pydoc.locate('torch.nn.functional.softmax')\n",
    "operator.attrgetter": "import operator\n\n\n\nf = operator.attrgetter('softmax')(torch)\n",
    "operator.methodcaller": "import operator\n\n\n\nf = operator.methodcaller('softmax', -1)\n",
}


@pytest.mark.parametrize("source", HIDDEN_IN_STRINGS.values(), ids=HIDDEN_IN_STRINGS.keys())
def test_a_call_hidden_in_a_string_that_runs_is_listed_at_its_line(source):
    listed = findings(source, SOFTMAX_LAB, MODULES)
    assert "line 5: it calls softmax, which this lab forbids" in listed, listed


# Loaders that run no pickle: only the finding of their reach into files.
LOADS_NO_PICKLE = {
    "np.load without allow_pickle": "weights = np.load('weights.npy')\n",
    "np.load with allow_pickle=False": "weights = np.load('weights.npy', allow_pickle=False)\n",
    "np.save with allow_pickle": "np.save('weights.npy', weights, allow_pickle=True)\n",
    "torch.load": "state = torch.load('model.pt')\n",
    "torch.load(weights_only=True)": "state = torch.load('model.pt', weights_only=True)\n",
}


@pytest.mark.parametrize("source", LOADS_NO_PICKLE.values(), ids=LOADS_NO_PICKLE.keys())
def test_a_loader_that_runs_no_pickle_has_only_its_file_finding(source):
    listed = findings(source, SOFTMAX_LAB, MODULES)
    assert len(listed) == 1 and "which reaches files, processes or the interpreter" in listed[0]


def test_a_long_dotted_name_is_listed_once_by_its_whole_name():
    source = "module = torch.utils.cpp_extension.load_inline('m', cpp)\n"
    assert findings(source, SOFTMAX_LAB, MODULES) == [
        "line 1: it uses torch.utils.cpp_extension.load_inline, which runs code from a string: "
        "load_inline compiles C++ and CUDA source from strings and loads it"
    ]


def test_code_nested_too_deeply_to_read_is_listed_and_the_rest_still_read():
    sum_of_ones = " + ".join(["1"] * 1500)
    source = f"import os\nx = {sum_of_ones}\nimport subprocess\n"
    assert findings(source, SOFTMAX_LAB, MODULES) == [
        "line 1: it imports os, which this lab does not use",
        "line 2: it nests its code too deeply to be read, so what it calls is not listed",
        "line 3: it imports subprocess, which this lab does not use",
    ]


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


# One rule in every lab: a cell a student writes calls none of the course's own answers in utils.
WRAPS_A_COURSE_ANSWER = {
    "05_masks": '''
from utils.transformer import masked_softmax as course_masked_softmax


def masked_softmax(scores, mask, dim=-1):
    """Softmax over the allowed positions."""
    return course_masked_softmax(scores.movedim(dim, -1), mask.movedim(dim, -1)).movedim(-1, dim)
''',
    "08_transformer_block": '''
import utils.transformer


def apply_rope(x, start=0, base=10000.0):
    """RoPE of x (N, n_heads, L, d_head)."""
    return utils.transformer.rotate(x, base=base, start=start)
''',
    "10_tiny_gpt": '''
def attention(q, k, v, mask=None, causal=False, rope=False):
    """Attention by the course's masked_softmax, which the setup cell imports."""
    weights = masked_softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, mask)
    return weights @ v, weights
''',
    "02_dot_product": '''
import utils


def packed_attention(queries, keys, values, mask):
    """Attention of packed queries by the lecture's model."""
    return utils.gpt.masked_attention(queries, keys, values, mask)
''',
}


@pytest.mark.parametrize("assignment", sorted(WRAPS_A_COURSE_ANSWER))
def test_every_lab_lists_a_call_of_the_course_s_own_answer(assignment):
    policy, modules = lab_policy(assignment), lab_modules(assignment)
    listed = findings(WRAPS_A_COURSE_ANSWER[assignment], policy, modules)
    assert listed and all(FORBIDDEN_CALL.fullmatch(finding) for finding in listed), listed


def test_a_lab_may_give_its_students_a_course_answer_to_build_with():
    source = "def encode(source, lengths):\n    return source_mask(lengths, source.shape[1])\n"
    modules = {"source_mask": "utils.seq2seq.source_mask"}
    assert findings(source, lab_policy("05_masks"), modules) == [
        "line 2: it calls source_mask, which this lab forbids"
    ]
    assert findings(source, lab_policy("06_seq2seq_attention"), modules) == []


def test_findings_are_in_line_order_without_repeats():
    source = "x = 1\nimport os\nimport os\ny = eval('1')\n"
    assert findings(source, SOFTMAX_LAB, MODULES) == [
        "line 2: it imports os, which this lab does not use",
        "line 3: it imports os, which this lab does not use",
        "line 4: it calls eval, which runs code from a string: eval evaluates an expression "
        "written in a string",
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
    listed = grading.submission_findings(nb, locked_cells(nb), lab_policy(assignment))
    assert len(listed) >= len(STUDENT_CELLS[assignment])
    assert shown == [finding.split(", ", 1)[1] for finding in listed]


@pytest.mark.parametrize("folder", ["solutions", "notebooks"])
def test_outside_a_labs_folder_no_cell_shows_findings(folder, shell, monkeypatch, capsys):
    # A solution notebook (no lab policy) and a lecture run their own code, tests included.
    monkeypatch.chdir(paths.ROOT / folder / ("01_softmax" if folder == "solutions" else ""))
    shell.run_cell("from utils.review import show_findings\nshow_findings()\n")
    result = shell.run_cell("import os\nx = eval('1')\n")
    assert result.success and "findings" not in capsys.readouterr().out


def test_the_note_under_a_cell_says_a_forbidden_call_may_cost_points_by_hand():
    note = finding_note(["line 2: it calls softmax, which this lab forbids"])
    assert "The tests give your points" in note and "may take points for it" in note
    assert note.endswith("  line 2: it calls softmax, which this lab forbids\n")


# Which cells are the student's: one rule (`student_cells`) for the grader, Validate and the kernel.


def test_a_cell_is_the_instructors_when_it_is_a_locked_one_but_for_the_whitespace_around_it():
    locked = ["print(1)\n"]
    cells = [
        {"cell_type": "code", "source": "\n\nprint(1)\n  \n"},  # blank lines around it
        {"cell_type": "code", "source": ["print(1)\n", "import os\n"]},  # a line added
        {"cell_type": "code", "source": "    print(1)\n"},  # indented: IPython runs it alike
        {"cell_type": "markdown", "source": "import os\n"},
        {"cell_type": "code", "source": "print(1)" + " " * MAX_READ_CHARACTERS},  # too large
    ]
    assert [index for index, _ in student_cells(cells, locked)] == [1, 4]
    assert student_cells(cells, locked)[0] == (1, "print(1)\nimport os\n")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_released_lab_has_no_finding_against_its_gradebook_hidden_tests_and_all(assignment):
    released = notebooks.read(paths.RELEASE / assignment / paths.lab_filename(assignment))
    gradebook = locked_cells(notebooks.read(paths.source_lab(assignment)))
    assert any("### BEGIN HIDDEN TESTS" in source for source in gradebook.values())
    assert grading.submission_findings(released, gradebook, lab_policy(assignment)) == []


AROUND_A_LOCKED_CELL = {  # what a student does to the text of the visible test of softmax
    "blank lines around it": (lambda source: f"\n\n{source}\n  \n", False),
    "a line added": (lambda source: f"{source.rstrip()}\nimport os\n", True),
}
SOFTMAX_CALLED = "it calls softmax, which this lab forbids"


@pytest.mark.parametrize(
    ("change", "listed"), AROUND_A_LOCKED_CELL.values(), ids=AROUND_A_LOCKED_CELL.keys()
)
def test_the_grader_validate_and_the_kernel_decide_alike_about_a_copy_of_a_locked_cell(
    change, listed, shell, tmp_path, monkeypatch, capsys
):
    # The visible test calls torch.softmax, which the lab forbids its students. A student copies it
    # into a cell of their own. The grader reads the copy against the gradebook's locked cells,
    # Validate against the notebook's, the kernel as it runs against those of its folder: blank
    # lines around the text change none of what it runs, so none of them lists it (the grader did,
    # when it compared exact text); a line added, all three list alike.
    assignment = "01_softmax"
    filename = paths.lab_filename(assignment)
    nb = notebooks.read(paths.RELEASE / assignment / filename)
    grade_ids = [notebooks.nbgrader_meta(cell).get("grade_id") for cell in nb.cells]
    visible = nb.cells[grade_ids.index("test_softmax_visible")].source
    own = findings(visible, lab_policy(assignment), lab_modules(assignment))
    assert any(finding.endswith(SOFTMAX_CALLED) for finding in own)
    nb.cells.append(new_code_cell(change(visible)))
    gradebook = locked_cells(notebooks.read(paths.source_lab(assignment)))
    graded = grading.submission_findings(nb, gradebook, lab_policy(assignment))
    notebooks.write(nb, tmp_path / filename)
    validated = notebook_findings(json.loads((tmp_path / filename).read_text(encoding="utf-8")))
    monkeypatch.chdir(tmp_path)
    shell.run_cell("from utils.review import show_findings\nshow_findings()\n")
    capsys.readouterr()
    shell.run_cell(change(visible))
    shown = [line.strip() for line in capsys.readouterr().out.splitlines() if line[:7] == "  line "]
    assert bool(shown) == listed
    assert any(line.endswith("imports os, which this lab does not use") for line in shown) == listed
    assert [finding.split(", ", 1)[1] for finding in graded] == shown
    assert [found for _, _, cell_findings in validated for found in cell_findings] == shown


def test_a_locked_cell_changed_only_in_whitespace_is_the_instructors_for_the_grader_too():
    assignment = "01_softmax"
    nb = notebooks.read(paths.RELEASE / assignment / paths.lab_filename(assignment))
    for cell in nb.cells:
        if notebooks.nbgrader_meta(cell).get("locked"):
            cell.source = f"\n{cell.source}\n\n"
    gradebook = locked_cells(notebooks.read(paths.source_lab(assignment)))
    assert grading.submission_findings(nb, gradebook, lab_policy(assignment)) == []
    assert notebook_findings(nb) == []
