"""Refuse to run student code that tampers with the grading machinery.

nbgrader restores the test cells from the gradebook, but a student's cell runs in the same
kernel before them and could replace what they rely on (``torch.allclose = ...``, ``check_close =
lambda *a, **k: None``, ``builtins.bool = ...``). During autograde, every cell the student can
edit is read before it runs; a cell that assigns to an attribute of a module, rebinds a name the
locked cells imported, or reaches for the interpreter's internals is replaced by a cell that
raises with an explanation. Its definitions never exist, so the tests that need them score 0,
and every other exercise is graded as usual. The grading checks themselves (`utils.grading`)
also resist such patches at run time.
"""

import ast

from nbgrader.preprocessors import NbGraderPreprocessor

from course.notebooks import nbgrader_meta

FORBIDDEN_NAMES = {
    "__builtins__",
    "builtins",
    "globals",
    "vars",
    "exec",
    "eval",
    "compile",
    "__import__",
    "importlib",
    "ctypes",
    "gc",
    "sys",
    "inspect",
}
FORBIDDEN_MODULES = {"builtins", "importlib", "ctypes", "gc", "inspect", "sys"}


def imported_names(tree):
    """Names bound by the import statements anywhere in a syntax tree."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def top_level_names(tree):
    """Names that the top level of a syntax tree binds with def or class."""
    return {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }


def root_name(node):
    """The name at the root of an attribute or subscript chain (`torch` in `torch.nn.x[0]`)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def assigned_targets(node):
    """The targets written by an assignment, deletion or global declaration."""
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        return [node.target]
    if isinstance(node, ast.Delete):
        return node.targets
    return []


def flattened(targets):
    """Targets with tuple and list unpacking expanded."""
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            yield from flattened(target.elts)
        else:
            yield target


def tampering(source, protected):
    """A description of the first line of `source` that tampers with the grading, or None.

    `protected` are the names that the locked cells import or define.
    """
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None  # the kernel reports it when the cell runs; the cell defines nothing
    imported = protected | imported_names(tree)
    top_level = set(tree.body)
    for node in ast.walk(tree):
        problem = _problem(node, protected, imported, node in top_level)
        if problem:
            return f"line {node.lineno}: {problem} (`{ast.unparse(node).splitlines()[0][:80]}`)"
    return None


def _problem(node, protected, imported, at_top_level):
    """Why this syntax node tampers with the grading, or None."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
        if (module or "").split(".")[0] in FORBIDDEN_MODULES:
            return f"it imports {module}, which can change the interpreter itself"
    if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
        return f"it uses {node.id}, which can change the interpreter itself"
    if isinstance(node, ast.Global) and set(node.names) & protected:
        return "it rebinds a name that the tests use"
    if (
        at_top_level
        and isinstance(node, (ast.FunctionDef, ast.ClassDef))
        and node.name in protected
    ):
        return f"it redefines {node.name}, which the tests use"
    is_setattr = (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"setattr", "delattr"}
    )
    if is_setattr and node.args and root_name(node.args[0]) in imported:
        return f"it changes an attribute of {root_name(node.args[0])}"
    for target in flattened(assigned_targets(node)):
        if at_top_level and isinstance(target, ast.Name) and target.id in protected:
            return f"it rebinds {target.id}, which the tests use"
        if isinstance(target, (ast.Attribute, ast.Subscript)) and root_name(target) in imported:
            return f"it changes {root_name(target)}, which the tests use"
    return None


def is_student_code(cell):
    """True for a code cell the student may edit (not restored from the gradebook)."""
    meta = nbgrader_meta(cell)
    return cell.cell_type == "code" and not meta.get("locked") and not meta.get("grade")


class RefuseTampering(NbGraderPreprocessor):
    """Replace each student cell that tampers with the grading by one that explains why."""

    def preprocess(self, nb, resources):
        """Check every student cell against the names that the locked cells bind."""
        protected = set()
        for cell in nb.cells:
            if cell.cell_type == "code" and not is_student_code(cell):
                try:
                    tree = ast.parse(cell.source)
                except SyntaxError:
                    continue
                protected |= imported_names(tree) | top_level_names(tree)
        for cell in nb.cells:
            if is_student_code(cell):
                reason = tampering(cell.source, protected)
                if reason:
                    self.log.warning("Cell not run, it tampers with the grading: %s", reason)
                    cell.source = refusal(reason)
        return nb, resources


def refusal(reason):
    """The code that replaces a tampering cell."""
    message = (
        f"The autograder did not run this cell: {reason}. Solutions must not change "
        "torch, numpy, builtins or the test helpers."
    )
    return f"raise RuntimeError({message!r})\n"
