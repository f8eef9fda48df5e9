"""How much of a lab's solution a lecture already shows, in substance rather than in lines.

Each solution function and each lecture function or code cell becomes a token sequence of its
syntax tree in which every local name is `name` and every constant `const`, while attributes
(`.softmax`, `.masked_fill`) and the modules `torch`, `F`, `nn`, `math` and `np` keep their
names: renaming variables, reordering arguments' names or changing numbers does not hide a copy.
Docstrings and input checks (`if ...: raise`) are left out, since a lecture seldom has them.
"""

import ast
import difflib
import re

MODULES = {"torch", "F", "nn", "math", "np", "numpy"}
MAGIC = re.compile(r"^\s*[%!].*$", re.MULTILINE)
MIN_RUN = 4  # shorter common runs of tokens are coincidences of Python's grammar


def _kept(body):
    """Statements of a body without docstrings, raises and input checks that only raise."""
    def dropped(stmt):
        docstring = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        check = isinstance(stmt, ast.If) and not stmt.orelse and all(
            isinstance(inner, ast.Raise) for inner in stmt.body
        )
        return docstring or check or isinstance(stmt, ast.Raise)

    return [stmt for stmt in body if not dropped(stmt)]


def tokens(node):
    """The normalised token sequence of a syntax tree."""
    if isinstance(node, ast.Name):
        return [node.id if node.id in MODULES else "name"]
    if isinstance(node, ast.Attribute):
        return tokens(node.value) + ["." + node.attr]
    if isinstance(node, ast.Constant):
        return ["const"]
    if isinstance(node, ast.arg):
        return ["arg"]
    if isinstance(node, ast.expr_context):
        return []
    children = ast.iter_child_nodes(node)
    return [type(node).__name__] + [token for child in children for token in tokens(child)]


def _parse(source):
    """The syntax tree of a cell, IPython magics removed; None if it does not parse."""
    try:
        return ast.parse(MAGIC.sub("", source))
    except SyntaxError:
        return None


def function_units(source, label=""):
    """[(name, tokens)] for every function (methods included) defined in `source`."""
    tree = _parse(source)
    functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)] if tree else []
    units = [(f"{label}{f.name}", [t for s in _kept(f.body) for t in tokens(s)]) for f in functions]
    return [(name, sequence) for name, sequence in units if sequence]


def cell_units(source, label):
    """Function units of a lecture cell, plus the cell's own top-level code as one unit."""
    tree = _parse(source)
    if tree is None:
        return []
    body = [s for s in _kept(tree.body) if not isinstance(s, (ast.Import, ast.ImportFrom))]
    top = [t for s in body for t in tokens(s)]
    return function_units(source, f"{label} ") + ([(label, top)] if top else [])


def shown_share(solution, shown):
    """Share of the solution's tokens that `shown` contains in common runs of MIN_RUN or more."""
    matcher = difflib.SequenceMatcher(None, solution, shown, autojunk=False)
    common = sum(block.size for block in matcher.get_matching_blocks() if block.size >= MIN_RUN)
    return common / len(solution)
