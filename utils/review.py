"""What your instructor will see about a cell you wrote: findings, never a verdict.

Your points come only from what the tests compute. Beside them, the grader reads each cell you
wrote and lists, for your instructor, what a lab asks you not to use: an import outside the
lab's modules, a call the lab forbids (`torch.softmax` in the softmax lab), and a reach into
files, processes or the interpreter. `show_findings()` (run by each lab's setup cell) shows
you the same findings, in the same words, as each of your cells runs, and nbgrader's Validate
lists them too.

A finding is best effort: it reads the code as written, so code that hides a call is not
listed. It never stops a cell from running.

This module is also the one home of the analysis of the names a cell binds and reads, which
the grader's judge uses to know which names of a test come from your code.
"""

import ast
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

POLICY_KEY = "lab_policy"  # in a lab notebook's metadata, under "course"
DEFAULT_MODULES = (
    "torch",
    "numpy",
    "math",
    "typing",
    "dataclasses",
    "functools",
    "itertools",
    "collections",
    "random",
    "time",
    "utils",
    "__future__",
)
# Parts of the allowed modules that reach files, processes or the interpreter, by dotted name.
REACHING = (
    "torch.hub",
    "torch.jit",
    "torch.library",
    "torch.load",
    "torch.multiprocessing",
    "torch.ops",
    "torch.package",
    "torch.save",
    "torch.serialization",
    "torch.from_file",
    "torch.utils.cpp_extension",
    "numpy.ctypeslib",
    "numpy.fromfile",
    "numpy.genfromtxt",
    "numpy.lib.format",
    "numpy.load",
    "numpy.loadtxt",
    "numpy.memmap",
    "numpy.save",
    "numpy.savetxt",
    "numpy.savez",
    "numpy.savez_compressed",
)
# Modules that an allowed module holds as an attribute (`torch.os`): a way around imports.
REACHING_PARTS = {"builtins", "ctypes", "importlib", "inspect", "os", "pickle", "subprocess", "sys"}
# Builtins that run code, open files or reach the interpreter, when a cell calls them.
REACHING_BUILTINS = {
    "__import__",
    "breakpoint",
    "compile",
    "eval",
    "exec",
    "get_ipython",
    "globals",
    "locals",
    "open",
    "vars",
}
# Attributes that lead to frames, globals, code or every class: the ways out of plain code.
ESCAPE_ATTRIBUTES = {
    "__base__",
    "__bases__",
    "__builtins__",
    "__closure__",
    "__code__",
    "__globals__",
    "__import__",
    "__loader__",
    "__mro__",
    "__reduce__",
    "__reduce_ex__",
    "__spec__",
    "__subclasses__",
    "__traceback__",
    "ag_frame",
    "cr_frame",
    "f_back",
    "f_builtins",
    "f_code",
    "f_globals",
    "f_locals",
    "gi_frame",
    "tb_frame",
    "tb_next",
}
NAMED_ACCESS = {"getattr", "setattr", "delattr", "hasattr"}


# The names a cell binds and reads.


class _Bindings(ast.NodeVisitor):
    """The names a piece of code binds in its own scope, and the names it reads anywhere."""

    def __init__(self):
        self.bound, self.read = set(), set()

    def visit_Name(self, node):
        (self.read if isinstance(node.ctx, ast.Load) else self.bound).add(node.id)

    def visit_FunctionDef(self, node):
        self.bound.add(node.name)
        self.read |= free_names_of(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.bound.add(node.name)
        self.read |= free_names_of(node)

    def visit_Lambda(self, node):
        self.read |= free_names_of(node)

    def visit_alias(self, node):
        if node.name != "*":
            self.bound.add((node.asname or node.name).split(".")[0])

    def visit_ExceptHandler(self, node):
        if node.name:
            self.bound.add(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node):
        if node.name:
            self.bound.add(node.name)
        self.generic_visit(node)

    visit_MatchStar = visit_MatchAs


def free_names_of(node):
    """The names read inside `node` (a function, class or lambda) that it does not bind itself."""
    read, bound = set(), set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            (read if isinstance(inner.ctx, ast.Load) else bound).add(inner.id)
        elif isinstance(inner, ast.arg):
            bound.add(inner.arg)
        elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(inner.name)
        elif isinstance(inner, ast.alias) and inner.name != "*":
            bound.add((inner.asname or inner.name).split(".")[0])
    return read - bound


def _bindings(source):
    """The _Bindings of a cell's top level, or None when it is not valid Python."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    found = _Bindings()
    found.visit(tree)
    return found


def bound_names(source):
    """Names that the top level of a cell binds, in any way (def, class, import, for, with, ...)."""
    found = _bindings(source)
    return set() if found is None else found.bound


def free_names(source):
    """Names a cell reads that its top level does not bind itself."""
    found = _bindings(source)
    return set() if found is None else found.read - found.bound


def defined_names(source):
    """Names of the functions and classes a cell defines at its top level."""
    try:
        body = ast.parse(source).body
    except SyntaxError:
        return set()
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return {node.name for node in body if isinstance(node, kinds)}


# A lab's policy.


@dataclass(frozen=True)
class LabPolicy:
    """What a lab asks students not to use: its modules, and the calls it forbids.

    `forbidden_in` maps the name of a function or class an exercise asks for to the calls
    forbidden in the cell that defines it (the references that exercise reimplements).
    """

    allowed_modules: tuple = DEFAULT_MODULES
    forbidden_calls: frozenset = frozenset()
    forbidden_in: dict = field(default_factory=dict)

    @classmethod
    def from_metadata(cls, metadata):
        """The policy in a notebook's metadata (`course.lab_policy`), or the default one."""
        policy = metadata.get("course", {}).get(POLICY_KEY)
        if policy is None:
            return cls()
        unknown = set(policy) - {"allowed_modules", "forbidden_calls", "forbidden_in"}
        if unknown:
            raise ValueError(f"a lab policy has allowed_modules, forbidden_calls, forbidden_in, "
                             f"not {sorted(unknown)}")
        return cls(
            allowed_modules=tuple(policy.get("allowed_modules", DEFAULT_MODULES)),
            forbidden_calls=frozenset(policy.get("forbidden_calls", ())),
            forbidden_in={name: frozenset(calls)
                          for name, calls in policy.get("forbidden_in", {}).items()},
        )

    def calls_forbidden_in(self, source):
        """(lab-wide forbidden calls, those forbidden in this cell's exercise) for a cell."""
        in_exercise = set().union(
            *(self.forbidden_in.get(name, ()) for name in defined_names(source))
        )
        return self.forbidden_calls, frozenset(in_exercise) - self.forbidden_calls

    def allows(self, module):
        """True when a module, by its full dotted name, is one of the lab's or inside one."""
        return any(module == allowed or module.startswith(f"{allowed}.")
                   for allowed in self.allowed_modules)


# Findings.


def reaches(dotted):
    """True when a dotted name leads to files, processes or the interpreter."""
    parts = dotted.split(".")
    inside = any(dotted == name or dotted.startswith(f"{name}.") for name in REACHING)
    return inside or bool(REACHING_PARTS & set(parts[1:]))


def private_part(dotted):
    """The first private part (`_C`) of a dotted name below its module, or None.

    Dunders are public (`torch.__version__`, `nn.Module.__init__`), but for `__dict__`, which
    reaches every private part.
    """
    return next((part for part in dotted.split(".")[1:] if _private(part)), None)


def _private(name):
    """True for `_name` and `__dict__`; False for other dunders and public names."""
    dunder = name.startswith("__") and name.endswith("__")
    return name == "__dict__" or (name.startswith("_") and not dunder)


class _Reader(ast.NodeVisitor):
    """Collect a cell's findings: (line, text)."""

    def __init__(self, policy, source, modules):
        self.policy, self.found = policy, []
        self.lab_wide, self.in_exercise = policy.calls_forbidden_in(source)
        self.bound = _all_bound(source)
        self.modules = dict(modules)  # name -> full dotted name of what it was imported as

    def note(self, node, text):
        """Record a finding about `node`'s line."""
        self.found.append((node.lineno, text))

    def forbidden(self, node, name):
        """Note a call of `name` when the lab or this exercise forbids it."""
        if name in self.in_exercise:
            self.note(node, f"it calls {name}, which this exercise forbids")
        elif name in self.lab_wide:
            self.note(node, f"it calls {name}, which this lab forbids")

    def check_dotted(self, node, dotted, imported=False):
        """Note an import or a use of an imported name that leaves the lab's modules."""
        if not self.policy.allows(dotted):
            if imported:
                self.note(node, f"it imports {dotted}, which this lab does not use")
        elif reaches(dotted):
            self.note(node, f"it uses {dotted}, which reaches files, processes or the interpreter")
        elif private_part(dotted):
            self.note(node, f"it uses {dotted}, a private part of {dotted.split('.')[0]}")

    def visit_Import(self, node):
        for alias in node.names:
            self.check_dotted(node, alias.name, imported=True)

    def visit_ImportFrom(self, node):
        if node.level or not node.module:
            self.note(node, "it imports from a relative module, which this lab does not use")
            return
        if any(alias.name == "*" for alias in node.names):
            self.note(node, f"it imports every name of {node.module}, which hides what it calls")
        for alias in node.names:
            dotted = node.module if alias.name == "*" else f"{node.module}.{alias.name}"
            self.check_dotted(node, dotted, imported=True)
            self.forbidden(node, alias.name)

    def visit_Attribute(self, node):
        if node.attr in ESCAPE_ATTRIBUTES:
            self.note(node, f"it uses .{node.attr}, which reaches the interpreter's internals")
        self.forbidden(node, node.attr)
        dotted = self.dotted(node)
        if dotted is not None and isinstance(node.ctx, ast.Load):
            self.check_dotted(node, dotted)
        elif dotted is not None:
            self.note(node, f"it changes {dotted}, which every cell shares")
        self.generic_visit(node)

    def dotted(self, node):
        """The full dotted name of an attribute chain rooted at an imported name, or None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.modules:
            return ".".join([self.modules[node.id], *reversed(parts)])
        return None

    def visit_Call(self, node):
        function = node.func
        if isinstance(function, ast.Name) and function.id not in self.bound:
            if function.id in REACHING_BUILTINS:
                self.note(node, f"it calls {function.id}, which reaches the interpreter or files")
            elif function.id in NAMED_ACCESS and _public_literal(node.args[1:2]):
                self.forbidden(node, node.args[1].value)
            elif function.id in NAMED_ACCESS:
                self.note(node, f"it calls {function.id} with a name that is not a plain "
                                "literal one, which can reach anything")
        self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in ESCAPE_ATTRIBUTES and node.id not in self.bound:
            self.note(node, f"it uses {node.id}, which reaches the interpreter's internals")


def _all_bound(source):
    """Every name bound anywhere in a cell: arguments, locals, definitions, imports."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


def _public_literal(arguments):
    """True when the one argument given is a string literal that names a public attribute."""
    if len(arguments) != 1 or not isinstance(arguments[0], ast.Constant):
        return False
    name = arguments[0].value
    return isinstance(name, str) and not name.startswith("_")


def imported_names(sources):
    """name -> full dotted name of each module or object that these cells' imports bind."""
    modules = {}
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    modules[alias.asname or top] = alias.name if alias.asname else top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        modules[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return modules


def findings(source, policy=LabPolicy(), modules=None):
    """What the grader lists about one cell: ["line N: it ...", ...], in line order, no repeats.

    `modules` maps the names that the lab's own cells import (`imported_names`) to what they are.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []  # the kernel reports it when the cell runs; the cell defines nothing
    own = imported_names([source])
    shadowed = _all_bound(source) - set(own)
    lab = {name: dotted for name, dotted in (modules or {}).items() if name not in shadowed}
    reader = _Reader(policy, source, {**lab, **own})
    reader.visit(tree)
    return [f"line {line}: {text}" for line, text in sorted(set(reader.found))]


# In the student's kernel.


def lab_notebooks(folder):
    """The lab notebooks in a folder: (policy, sources of their locked code cells, stripped).

    The policy is None when no notebook there has one (not a lab's folder).
    """
    notebooks = []
    for path in sorted(Path(folder).glob("*.ipynb")):
        try:
            notebooks.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    with_policy = [nb for nb in notebooks if POLICY_KEY in nb.get("metadata", {}).get("course", {})]
    policy = LabPolicy.from_metadata(with_policy[0]["metadata"]) if with_policy else None
    return policy, set().union(*(locked_sources(nb) for nb in notebooks))


def locked_sources(notebook):
    """The sources, stripped, of the code cells that a lab notebook (a dict) locks."""
    return {
        _text(cell.get("source", "")).strip()
        for cell in notebook.get("cells", [])
        if cell.get("cell_type") == "code" and _locked(cell)
    }


def notebook_findings(notebook):
    """[(index, source, findings)] for each code cell with findings that a lab notebook leaves
    to its student (a dict, as read from its file)."""
    policy = LabPolicy.from_metadata(notebook.get("metadata", {}))
    locked = locked_sources(notebook)
    modules = imported_names(locked)
    listed = []
    for index, cell in enumerate(notebook.get("cells", [])):
        source = _text(cell.get("source", ""))
        if cell.get("cell_type") != "code" or source.strip() in locked:
            continue
        cell_findings = findings(source, policy, modules)
        if cell_findings:
            listed.append((index, source, cell_findings))
    return listed


def _locked(cell):
    """True for a cell that nbgrader locks (a setup or test cell of the lab)."""
    return bool(cell.get("metadata", {}).get("nbgrader", {}).get("locked"))


def _text(source):
    """A cell's source as one string (notebooks may store it as a list of lines)."""
    return source if isinstance(source, str) else "".join(source)


def finding_note(cell_findings):
    """What a student sees under a cell with findings."""
    lines = "\n".join(f"  {finding}" for finding in cell_findings)
    return (
        "Your instructor will see these findings about this cell (your points come only from "
        f"the tests):\n{lines}\n"
    )


def ipython_shell():
    """The IPython shell this code runs in, or None (plain Python, or IPython not installed)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def show_findings(folder="."):
    """In IPython, in a lab's folder, show a cell's findings as it runs, as the grader will."""
    shell = ipython_shell()
    policy, locked = lab_notebooks(folder)
    if shell is None or policy is None:  # outside IPython, or outside a lab's folder
        return
    modules = imported_names(locked)

    def before_cell(info):
        source = info.raw_cell or ""
        if source.strip() in locked:
            return
        cell_findings = findings(source, policy, modules)
        if cell_findings:
            sys.stdout.write(finding_note(cell_findings))

    for callback in list(shell.events.callbacks["pre_run_cell"]):
        if getattr(callback, "__qualname__", "") == before_cell.__qualname__:
            shell.events.unregister("pre_run_cell", callback)  # the setup cell ran again
    shell.events.register("pre_run_cell", before_cell)
