"""What a student's cell may contain during autograde: an allowlist, checked before the cell runs.

Verdicts are decided outside the kernel (`course.grading.judge`), but code in the kernel could still
reach IPython's hooks and rewrite the grader's requests there, for example to call torch's
reference instead of the student's function. So every code cell that is not the instructor's
(checked against the gradebook) may only use:

* imports of the modules a lab allows (torch, numpy, math and a few standard helpers);
* no dunder attribute or name other than `__init__`, and no private attribute (`_x`) except
  on `self`;
* no `get_ipython`, `exec`, `eval`, `compile`, `open`, `globals`, `vars`, `setattr`, ... and
  `getattr` only with a literal, public attribute name;
* no module used as a value (`t = torch`, `f(numpy)`) and no assignment to a module's
  attribute, no attribute that leads outside the allowed modules (`torch.sys`), and no file
  or code-loading attribute (`save`, `load`, `tofile`, `jit`, `library`, ...).

A cell outside the allowlist is replaced by one that raises with the reason, so its definitions
never exist and only the tests that need them score 0. Calls to what a lab forbids
(`torch.softmax` in lab 01) are not refused but listed for the instructor in the notebook's
metadata; `make autograde` prints them with the refusals.
"""

import ast
import importlib
import sys
import types

from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import List, Unicode

from course.build.notebooks import nbgrader_meta

ALLOWED_MODULES = (
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
FORBIDDEN_NAMES = {
    "get_ipython",
    "exec",
    "eval",
    "compile",
    "open",
    "globals",
    "locals",
    "vars",
    "setattr",
    "delattr",
    "breakpoint",
    "input",
    "help",
    "exit",
    "quit",
    "memoryview",
}
FORBIDDEN_ATTRIBUTES = {
    "as_strided",
    "builtins",
    "classes",
    "compile",
    "cpp_extension",
    "ctypes",
    "ctypeslib",
    "f_back",
    "f_globals",
    "f_locals",
    "fromfile",
    "from_file",
    "genfromtxt",
    "gi_frame",
    "cr_frame",
    "hub",
    "importlib",
    "inspect",
    "jit",
    "library",
    "load",
    "load_inline",
    "load_library",
    "loadtxt",
    "memmap",
    "modules",
    "multiprocessing",
    "ops",
    "os",
    "overrides",
    "package",
    "pickle",
    "save",
    "savetxt",
    "savez",
    "savez_compressed",
    "serialization",
    "subprocess",
    "sys",
    "tb_frame",
    "tofile",
}
ALLOWED_DUNDERS = {"__init__"}
# What each lab's rules forbid: listed for the instructor when a submission calls it.
FORBIDDEN_CALLS = {
    "01_softmax": {"softmax", "log_softmax", "logsumexp", "Softmax", "LogSoftmax"},
    "02_dot_product": {"scaled_dot_product_attention", "MultiheadAttention"},
    "03_scaled_dot_product": {"scaled_dot_product_attention", "MultiheadAttention"},
    "04_additive_scoring": {"Bilinear", "bilinear"},
    "05_masks": {"scaled_dot_product_attention", "MultiheadAttention", "source_mask"},
    "06_seq2seq_attention": {"scaled_dot_product_attention", "MultiheadAttention"},
    "07_multihead_attention": {
        "MultiheadAttention",
        "multi_head_attention_forward",
        "scaled_dot_product_attention",
    },
    "08_transformer_block": {"TransformerEncoderLayer", "TransformerEncoder"},
    "09_attention_at_scale": {
        "scaled_dot_product_attention",
        "MultiheadAttention",
        "multi_head_attention_forward",
        "logsumexp",
    },
    "10_tiny_gpt": {
        "cross_entropy",
        "CrossEntropyLoss",
        "nll_loss",
        "NLLLoss",
        "scaled_dot_product_attention",
        "MultiheadAttention",
        "multi_head_attention_forward",
    },
}
# ... and what one exercise forbids, by the grade_id of its solution cell: the references that
# the exercise reimplements, which the rest of the lab may use.
FORBIDDEN_IN_EXERCISE = {
    "05_masks": {
        "masked_softmax": {"softmax", "log_softmax", "Softmax", "LogSoftmax"},
    },
    "08_transformer_block": {
        "attention": {
            "scaled_dot_product_attention",
            "MultiheadAttention",
            "multi_head_attention_forward",
        },
        "transformer_block": {
            "scaled_dot_product_attention",
            "MultiheadAttention",
            "multi_head_attention_forward",
        },
    },
    "09_attention_at_scale": {
        "online_softmax": {"softmax", "log_softmax", "Softmax", "LogSoftmax"},
        "chunked_attention": {"softmax", "log_softmax", "Softmax", "LogSoftmax"},
    },
    "10_tiny_gpt": {
        "next_token_loss": {"log_softmax", "LogSoftmax", "sequence_loss"},
        "generate": {"sample_next"},
    },
}
REVIEW_KEY = "course_review"


def forbidden_calls(assignment, grade_id):
    """Names whose call the rules of a lab's cell forbid."""
    in_exercise = FORBIDDEN_IN_EXERCISE.get(assignment, {}).get(grade_id, set())
    return FORBIDDEN_CALLS.get(assignment, set()) | in_exercise


def allowed_module(name, allowed):
    """True when `name` (a.b.c) is one of the allowed modules or inside one."""
    return name.split(".")[0] in allowed


def module_aliases(tree):
    """Names that the import statements of a tree bind to modules, with the modules' names."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    aliases[root] = root
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def resolve(node, aliases):
    """The object that an attribute chain rooted at an imported name names, or None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    found = load(aliases[node.id])
    for part in reversed(parts):
        if found is None:
            return None
        found = getattr(found, part, None)
    return found


def load(dotted):
    """The module or object that a dotted import path names, if it is importable here."""
    if dotted in sys.modules:
        return sys.modules[dotted]
    module_name, _, attribute = dotted.rpartition(".")
    try:
        return importlib.import_module(dotted)
    except ImportError:
        pass
    if module_name:
        parent = load(module_name)
        return getattr(parent, attribute, None) if parent is not None else None
    return None


class Allowlist(ast.NodeVisitor):
    """Collect the reasons a cell is outside the allowlist, and its forbidden calls."""

    def __init__(self, aliases, protected, allowed, forbidden_calls):
        self.aliases, self.protected = aliases, protected
        self.allowed, self.forbidden_calls = allowed, forbidden_calls
        self.problems, self.calls = [], []

    def refuse(self, node, reason):
        """Record why the cell may not run."""
        self.problems.append((node.lineno, reason))

    def is_module(self, node):
        """True when a name or attribute chain names a module."""
        return isinstance(resolve(node, self.aliases), types.ModuleType)

    def visit_Import(self, node):
        """Only the allowed modules."""
        for alias in node.names:
            if not allowed_module(alias.name, self.allowed):
                self.refuse(node, f"it imports {alias.name}, which labs do not use")

    def visit_ImportFrom(self, node):
        """Only from the allowed modules, and nothing that leads outside them."""
        module = node.module or ""
        if node.level or not allowed_module(module, self.allowed):
            self.refuse(node, f"it imports from {module or 'a relative module'}")
            return
        for alias in node.names:
            if alias.name == "*" or alias.name.startswith("_"):
                self.refuse(node, f"it imports {alias.name} from {module}")
            elif alias.name in FORBIDDEN_ATTRIBUTES:
                self.refuse(node, f"it imports {alias.name}, which can reach files or the kernel")
            else:
                self.check_reach(node, load(f"{module}.{alias.name}"))
            if alias.name in self.forbidden_calls:
                self.calls.append((node.lineno, alias.name))

    def visit_Name(self, node):
        """No forbidden builtins, no dunder names, no module used as a value."""
        if node.id in FORBIDDEN_NAMES:
            self.refuse(node, f"it uses {node.id}, which can change the kernel itself")
        elif node.id.startswith("__") and node.id.endswith("__"):
            self.refuse(node, f"it uses {node.id}")
        elif node.id == "getattr":
            self.refuse(node, "getattr is allowed only as getattr(obj, 'literal_name')")
        elif isinstance(node.ctx, ast.Load) and node.id in self.aliases and self.is_module(node):
            self.refuse(node, f"it uses the module {node.id} as a value")

    def visit_Attribute(self, node):
        """Check every attribute of a chain; a module may only be the root of a chain."""
        chain, root = [], node
        while isinstance(root, ast.Attribute):
            chain.append(root)
            root = root.value
        for attribute in chain:
            self.check_attribute(attribute)
        if self.is_module(node):
            self.refuse(node, f"it uses the module {ast.unparse(node)} as a value")
        if isinstance(root, ast.Name):
            if root.id not in self.aliases:
                self.visit_Name(root)
        else:
            self.visit(root)

    def check_attribute(self, node):
        """No dunders, no private attributes except on self, nothing outside the modules."""
        name = node.attr
        if name in self.forbidden_calls:
            self.calls.append((node.lineno, name))
        if name in ALLOWED_DUNDERS:
            return
        if name.startswith("__"):
            self.refuse(node, f"it uses the attribute {name}")
        elif name.startswith("_") and not is_self(node.value):
            self.refuse(node, f"it uses the private attribute {name}")
        elif name in FORBIDDEN_ATTRIBUTES:
            self.refuse(node, f"it uses .{name}, which can reach files, code or the kernel")
        else:
            self.check_reach(node, resolve(node, self.aliases))

    def check_reach(self, node, found):
        """Refuse an attribute or import that reaches a module outside the allowed ones."""
        if isinstance(found, types.ModuleType) and not allowed_module(found.__name__, self.allowed):
            self.refuse(node, f"it reaches the module {found.__name__}")

    def visit_Call(self, node):
        """getattr only with a literal public name."""
        if isinstance(node.func, ast.Name) and node.func.id == "getattr":
            name = node.args[1] if len(node.args) >= 2 else None
            literal = isinstance(name, ast.Constant) and isinstance(name.value, str)
            if not literal or name.value.startswith("_"):
                self.refuse(node, "getattr is allowed only as getattr(obj, 'literal_name')")
            for child in [*node.args, *node.keywords]:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Assign(self, node):
        """No assignment to a module's attributes or to a name the tests use."""
        for target in node.targets:
            self.check_target(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        """As for assignments."""
        self.check_target(node.target)
        self.generic_visit(node)

    visit_AnnAssign = visit_AugAssign

    def visit_Delete(self, node):
        """As for assignments."""
        for target in node.targets:
            self.check_target(target)
        self.generic_visit(node)

    def visit_Global(self, node):
        """No rebinding of the tests' names from inside a function."""
        if set(node.names) & (self.protected | set(self.aliases)):
            self.refuse(node, "it rebinds a name that the tests use")

    visit_Nonlocal = visit_Global

    def check_target(self, target):
        """Refuse targets that rebind the tests' names or change a module."""
        for item in ast.walk(target):
            if isinstance(item, ast.Name) and isinstance(item.ctx, (ast.Store, ast.Del)):
                if item.id in self.protected or item.id in self.aliases:
                    self.refuse(target, f"it rebinds {item.id}, which the tests use")
        root = target
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if target is not root and isinstance(root, ast.Name):
            if root.id in self.aliases or root.id in self.protected:
                self.refuse(target, f"it changes {root.id}, which the tests use")


def is_self(node):
    """True for the name `self`."""
    return isinstance(node, ast.Name) and node.id == "self"


def review(source, protected, aliases, allowed=ALLOWED_MODULES, forbidden_calls=()):
    """(first reason the cell may not run or None, [(line, forbidden name)]) for one cell."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None, []  # the kernel reports it when the cell runs; the cell defines nothing
    checker = Allowlist(
        {**aliases, **module_aliases(tree)}, set(protected), set(allowed), set(forbidden_calls)
    )
    checker.visit(tree)
    problem = None
    if checker.problems:
        line, reason = min(checker.problems)
        text = source.splitlines()[line - 1].strip()[:80]
        problem = f"line {line}: {reason} (`{text}`)"
    return problem, sorted(set(checker.calls))


def top_level_names(tree):
    """Names that the top level of a syntax tree binds with def or class."""
    return {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }


def instructor_cells(resources):
    """grade_id -> source of each locked code cell of this notebook in the gradebook."""
    info = resources["nbgrader"]
    with Gradebook(info["db_url"]) as gradebook:
        notebook = gradebook.find_notebook(info["notebook"], info["assignment"])
        return {
            cell.name: cell.source
            for cell in notebook.source_cells
            if cell.locked and cell.cell_type == "code"
        }


def is_instructor_cell(cell, instructor):
    """True for a code cell whose source is the gradebook's locked cell of the same grade_id."""
    grade_id = nbgrader_meta(cell).get("grade_id")
    return grade_id in instructor and cell.source == instructor[grade_id]


class EnforceAllowlist(NbGraderPreprocessor):
    """Replace each student cell outside the allowlist by one that explains why it did not run."""

    allowed_modules = List(
        Unicode(), list(ALLOWED_MODULES), help="Top-level modules a student's cell may import"
    ).tag(config=True)

    def preprocess(self, nb, resources):
        """Check every code cell that is not the instructor's; record refusals and calls."""
        instructor = instructor_cells(resources)
        protected, aliases = set(), {}
        for source in instructor.values():
            try:
                tree = ast.parse(source)
            except SyntaxError:
                continue
            aliases.update(module_aliases(tree))
            protected |= top_level_names(tree) | set(module_aliases(tree))
        assignment = resources["nbgrader"]["assignment"]
        findings = []
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or is_instructor_cell(cell, instructor):
                continue
            grade_id = nbgrader_meta(cell).get("grade_id")
            problem, calls = review(
                cell.source, protected, aliases, self.allowed_modules,
                forbidden_calls(assignment, grade_id),
            )
            where = grade_id or f"cell {index + 1}"
            for line, name in calls:
                findings.append(f"{where}, line {line}: calls {name}, which this lab forbids")
            if problem:
                self.log.warning("Cell %s not run, it is outside the allowlist: %s", where, problem)
                findings.append(f"{where}: not run, {problem}")
                cell.source = refusal(problem)
        nb.metadata[REVIEW_KEY] = findings
        return nb, resources


def refusal(reason):
    """The code that replaces a refused cell."""
    message = (
        f"The autograder did not run this cell: {reason}. Solutions may define functions and "
        "classes with torch, numpy and math, and must not reach into the kernel, files or "
        "the test helpers."
    )
    return f"raise RuntimeError({message!r})\n"
