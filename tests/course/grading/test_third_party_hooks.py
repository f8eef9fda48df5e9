"""The private members of its libraries that the course overrides, calls or reads are still there,
and still used by those libraries.

The course relies on a few members of its libraries that are not public API. If a new release
renames one, or stops calling it, the course's override silently stops running (the exchange's
choice of which submission to collect among them), and this test names it. The test finds the
members itself, reading course/, deploy/, utils/ and nbgrader_config.py with `ast`:

* every method or class attribute named with one leading underscore in a class that extends a
  library's class (directly, through a class of the course, or as a mixin placed before one):
  an override of the library's private member. A method that a library's decorator registers
  (traitlets' `@default`) is named freely and left out; the course's own helpers in such a class
  have public names;
* every attribute `thing._name` whose name the course defines nowhere (as a function, a class,
  a variable, an argument, or an attribute of one of its own classes' instances): a library's.
  Python's own modules and the few names Python documents with an underscore are left out.

HOOKS must hold a row for each, and each row must still be found there (no stale row). A row
names the library function that must still use the member: a class is no caller. requirements.txt
pins these libraries; the behaviour of the hooks that carry security weight is tested where it
matters (remote/test_client.py: an oversized message part refused by the replaced unpack;
tests/deploy/test_course_exchange.py: a newer folder made in a student's name by another
user leaves the student's own collected).
"""

import ast
import inspect
import sys

import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.client import KernelClient
from jupyter_client.manager import KernelManager
from jupyter_client.session import Session
from nbclient import NotebookClient
from nbgrader.exchange.default import ExchangeCollect
from nbgrader.preprocessors import GetGrades, SaveAutoGrades
from tornado.web import RequestHandler

from course.coursedir import paths

# (the class or module the course extends or reads, the member, the library function using it)
HOOKS = [
    (KernelManager, "_created_context", KernelManager._async_cleanup_resources),
    (KernelClient, "_created_context", KernelClient.stop_channels),
    (AsyncKernelClient, "_async_is_alive", KernelClient._async_wait_for_ready),
    (KernelClient, "_handle_kernel_info_reply", KernelClient._async_wait_for_ready),
    (KernelClient, "_iopub_channel", KernelClient.iopub_channel.fget),
    (Session, "unpack", Session.deserialize),  # public, but replaced on one session
    (SaveAutoGrades, "_add_score", SaveAutoGrades.preprocess_cell),
    (GetGrades, "_get_score", GetGrades.preprocess_cell),
    (NotebookClient, "_update_display_id", NotebookClient.process_message),
    (NotebookClient, "_display_id_map", NotebookClient.output),
    (NotebookClient, "_async_handle_timeout", NotebookClient._async_poll_for_reply),
    (ExchangeCollect, "_sort_by_timestamp", ExchangeCollect.init_src),
    (ExchangeCollect, "_path_to_record", ExchangeCollect.init_src),
    (InteractiveShell, "_showtraceback", InteractiveShell.showtraceback),
    (RequestHandler, "_finished", RequestHandler.finish),
    (torch, "_C", torch.Tensor.__torch_function__.__func__),
]
OWN_CODE = ["course", "deploy", "utils", "nbgrader_config.py"]
OWN_MODULES = {"course", "utils"} | {path.stem for path in (paths.ROOT / "deploy").rglob("*.py")}
# Named with an underscore, documented as public: namedtuple's and enum's members, os._exit.
PYTHONS_OWN = {"_replace", "_asdict", "_fields", "_make", "_value_", "_name_", "_missing_"}


def is_private(name):
    """True for `_name`: one leading underscore, not a dunder, not `_` alone."""
    return name.startswith("_") and not name.startswith("__") and len(name) > 1


def own_files():
    """The course's own Python files, each (path relative to the root, its parsed tree)."""
    found = []
    for place in OWN_CODE:
        path = paths.ROOT / place
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            found.append((file.relative_to(paths.ROOT).as_posix(), ast.parse(file.read_text())))
    return found


def imported_from(tree):
    """name -> the top-level package it is imported from, in `tree` (a relative import: ours)."""
    sources = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                sources[(alias.asname or alias.name).split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            package = (node.module or "").split(".")[0] if node.level == 0 else "course"
            for alias in node.names:
                sources[alias.asname or alias.name] = package
    return sources


def is_library(package):
    """True for a package the course installs: neither its own nor Python's."""
    return bool(package) and package not in OWN_MODULES and package not in sys.stdlib_module_names


def root_name(node):
    """The name an expression `a.b.c` (or `a.b().c`) starts from, or None."""
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def base_name(node):
    """The class name a base expression ends with (`default.ExchangeCollect` -> ExchangeCollect)."""
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)


def library_classes(files):
    """The names of the course's classes that extend a library's class, mixins included."""
    classes = []  # (class node, its module's imports)
    for _, tree in files:
        sources = imported_from(tree)
        classes += [(node, sources) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    extending = set()
    while True:
        before = len(extending)
        for node, sources in classes:
            bases = [base_name(base) for base in node.bases]
            if extending & set(bases) or any(
                is_library(sources.get(root_name(base))) for base in node.bases
            ):
                extending.update([node.name, *bases])  # its own bases too: mixins share it
        if len(extending) == before:
            return extending & {node.name for node, _ in classes}


def registered_by_a_library(function, sources):
    """True when a library's decorator (traitlets' `@default(...)`) registers `function`."""
    return any(
        is_library(sources.get(root_name(decorator))) for decorator in function.decorator_list
    )


def members_overridden(files, extending):
    """member -> where the course overrides it: private names in classes extending a library's."""
    found = {}
    for where, tree in files:
        sources = imported_from(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ClassDef) and node.name in extending):
                continue
            for statement in node.body:
                if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                    if not registered_by_a_library(statement, sources):
                        names = [statement.name]
                    else:
                        names = []
                elif isinstance(statement, ast.Assign | ast.AnnAssign):
                    targets = getattr(statement, "targets", None) or [statement.target]
                    names = [target.id for target in targets if isinstance(target, ast.Name)]
                else:
                    names = []
                for name in filter(is_private, names):
                    found.setdefault(name, []).append(f"{where}:{statement.lineno}")
    return found


def names_the_course_defines(files, extending):
    """Every name the course's own code defines (not as attributes in a library's classes)."""
    defined = set()
    for _, tree in files:
        in_library_class = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name in extending:
                in_library_class.update(map(id, ast.walk(node)))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
            elif isinstance(node, ast.arg):
                defined.add(node.arg)
            elif isinstance(node, ast.alias):
                defined.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if id(node) not in in_library_class:  # an attribute of the course's own objects
                    defined.add(node.attr)
    return defined


def members_used(files, extending):
    """member -> where the course reads, calls or sets a private attribute it does not define."""
    defined = names_the_course_defines(files, extending)
    overridden = members_overridden(files, extending)
    found = {}
    for where, tree in files:
        sources = imported_from(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and is_private(node.attr)):
                continue
            pythons = sources.get(root_name(node.value)) in sys.stdlib_module_names
            if node.attr in PYTHONS_OWN or pythons or node.attr in overridden:
                continue
            if node.attr not in defined:
                found.setdefault(node.attr, []).append(f"{where}:{node.lineno}")
    return found


def private_members_of_libraries():
    """member -> where the course overrides, calls or reads it (see this module's docstring)."""
    files = own_files()
    extending = library_classes(files)
    found = members_overridden(files, extending)
    for member, places in members_used(files, extending).items():
        found.setdefault(member, []).extend(places)
    return found


@pytest.mark.parametrize(
    ("owner", "member", "caller"), HOOKS, ids=[f"{o.__name__}.{m}" for o, m, _ in HOOKS]
)
def test_each_private_member_the_course_relies_on_is_still_used_by_its_library(
    owner, member, caller
):
    assert inspect.isfunction(caller), f"{caller!r}: a row names the library function that uses it"
    defined = hasattr(owner, member) or f"self.{member} =" in inspect.getsource(owner)
    assert defined, f"{owner.__name__}.{member} is gone"
    assert member in inspect.getsource(caller), (
        f"{caller.__qualname__} no longer uses {member}: the course's override would never run"
    )


def test_every_private_member_of_a_library_the_course_touches_has_a_row():
    found = private_members_of_libraries()
    listed = {member for _, member, _ in HOOKS}
    missing = {member: places for member, places in found.items() if member not in listed}
    assert not missing, f"add a row to HOOKS (the library function that uses it): {missing}"


def test_every_row_is_still_used_by_the_course():
    found = set(private_members_of_libraries())
    text = {where: ast.unparse(tree) for where, tree in own_files()}
    for _, member, _ in HOOKS:
        used = member in found or any(f".{member}" in source for source in text.values())
        assert used, f"the course no longer uses {member}: remove its row"


def test_the_finder_sees_an_override_a_call_and_a_read_in_a_mixin():
    source = """
from nbclient import NotebookClient
from traitlets import default
class Plain:
    def __init__(self): self._own = 1
class Budget:
    def _update_display_id(self, msg): ...
    def helper(self): return self.plain._own
class Client(Budget, NotebookClient):
    def _hook(self): self.km._private_call()
    @default("x")
    def _x_default(self): ...
"""
    files = [("example.py", ast.parse(source))]
    extending = library_classes(files)
    assert extending == {"Budget", "Client"}
    assert set(members_overridden(files, extending)) == {"_update_display_id", "_hook"}
    assert set(members_used(files, extending)) == {"_private_call"}
