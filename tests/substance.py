"""How much of a lab's solution a lecture already shows, in substance rather than in lines.

Each solution function and each lecture function or code cell becomes a token sequence of its
syntax tree in which every local name is `name` and every constant `const`, while attributes
(`.softmax`, `.masked_fill`) and the modules `torch`, `F`, `nn`, `math` and `np` keep their
names: renaming variables, reordering arguments' names or changing numbers does not hide a copy.
Nor does respelling: a local assigned once is replaced by the expression it holds, a layer held by
a module (`self.w_q`) is a local name, a literal tensor (`torch.tensor([5, 3])`) is a name,
`x[:, None]` is `x.unsqueeze(...)`, `x.T` is `x.transpose(...)`, `view` is `reshape`, and
applying a layer, `w(x)`, is the product `x @ w`. Docstrings, prints, input checks (`if ...:
raise`), conversions of the parameters (`lengths = torch.as_tensor(lengths)`) and their defaults
(`if n is None: n = ...`) are left out, since a lecture seldom has them: a lecture cell wrapped
in them is still the lecture cell. Only the functions a student writes count, not those a lab
gives. The same measure compares an exercise with the cells its own lab shows (helpers, references
and visible tests as released), with each visible test read together with the helpers it calls,
and with the functions of `utils`: none of them may hold its answer either.
"""

import ast
import difflib
import re
from collections import Counter

MODULES = {"torch", "F", "nn", "math", "np", "numpy"}
MAGIC = re.compile(r"^\s*[%!].*$", re.MULTILINE)
MIN_RUN = 4  # shorter common runs of tokens are coincidences of Python's grammar
SPELLINGS = {"T": "transpose", "mT": "transpose", "swapaxes": "transpose", "view": "reshape"}
CONVERSIONS = {"as_tensor", "tensor", "int", "float", "bool", "tuple", "list", "to", "long",
               "double", "contiguous"}


def _dropped(stmt, parameters, defaulting=False):
    """True for a docstring, a print, a raise, or a check, conversion or default of a parameter."""
    expression = stmt.value if isinstance(stmt, ast.Expr) else None
    docstring = isinstance(expression, ast.Constant)
    printed = isinstance(expression, ast.Call) and getattr(expression.func, "id", "") == "print"
    converted = isinstance(stmt, ast.Assign) and all(
        getattr(target, "id", None) in parameters for target in stmt.targets
    ) and (defaulting or _conversion(stmt.value))
    default = isinstance(stmt, ast.If) and any(
        isinstance(node, ast.Constant) and node.value is None for node in ast.walk(stmt.test)
    )
    check = isinstance(stmt, (ast.If, ast.For)) and not stmt.orelse and all(
        _dropped(inner, parameters, default) for inner in stmt.body
    )  # an `if` or a loop over the arguments that only checks them or fills in a default
    return docstring or printed or converted or check or isinstance(stmt, ast.Raise)


def _conversion(value):
    """True for a call that only converts a value: `torch.as_tensor(x)`, `int(x)`, `x.float()`."""
    function = value.func if isinstance(value, ast.Call) else None
    name = getattr(function, "id", None) or getattr(function, "attr", None)
    return name in CONVERSIONS


def _kept(body, parameters=frozenset()):
    """Statements of a body but docstrings, prints, raises, and checks and conversions."""
    return [stmt for stmt in body if not _dropped(stmt, parameters)]


def _local(node):
    """True for a local name or a layer held by a module (`self.w_q`)."""
    if isinstance(node, ast.Name):
        return node.id not in MODULES
    return isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == "self"


def _literal(node):
    """True for a call of a module (`torch.tensor`) whose arguments are all constants."""
    root = node.func
    while isinstance(root, ast.Attribute):
        root = root.value
    values = [*node.args, *(keyword.value for keyword in node.keywords)]
    return getattr(root, "id", "") in MODULES and bool(values) and all(
        isinstance(inner, ast.Constant) for value in values for inner in ast.walk(value)
        if not isinstance(inner, (ast.List, ast.Tuple, ast.UnaryOp, ast.USub, ast.Load))
    )


def tokens(node):
    """The normalised token sequence of a syntax tree."""
    if _local(node):
        return ["name"]
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return tokens(node.value) + ["." + SPELLINGS.get(node.attr, node.attr)]
    if isinstance(node, ast.Constant):
        return ["const"]
    if isinstance(node, ast.arg):
        return ["arg"]
    if isinstance(node, ast.expr_context):
        return []
    if isinstance(node, ast.Call):
        return _call_tokens(node)
    if isinstance(node, (ast.Return, ast.Expr)) and node.value is not None:
        return tokens(node.value)  # `return x` computes what a lecture's `y = x` does
    if isinstance(node, ast.Subscript) and _inserts_axes(node.slice):
        return tokens(node.value) + [".unsqueeze"]
    children = ast.iter_child_nodes(node)
    return [type(node).__name__] + [token for child in children for token in tokens(child)]


def _call_tokens(call):
    """Tokens of a call: a literal tensor is a name, a layer applied to x is x @ layer."""
    if _literal(call):
        return ["name"]
    if _local(call.func) and len(call.args) == 1 and not call.keywords:
        return ["BinOp"] + tokens(call.args[0]) + ["MatMult", "name"]
    if isinstance(call.func, ast.Attribute) and call.func.attr == "unsqueeze":
        return tokens(call.func.value) + [".unsqueeze"]
    children = ast.iter_child_nodes(call)
    return ["Call"] + [token for child in children for token in tokens(child)]


def _inserts_axes(index):
    """True for an index such as [:, None] or [None, :, :] that only inserts and keeps axes."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    slices = all(
        isinstance(part, ast.Slice) and part.lower is part.upper is part.step is None
        or isinstance(part, ast.Constant) and part.value in (None, Ellipsis)
        for part in parts
    )
    return slices and any(isinstance(part, ast.Constant) and part.value is None for part in parts)


class _Inline(ast.NodeTransformer):
    """Replaces each read of a local by the expression it was assigned, if assigned once."""

    def __init__(self, values):
        self.values = values

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return self.visit(ast.parse(ast.unparse(self.values[node.id]), mode="eval").body)
        return node


def _inlined(statements):
    """The statements with every local assigned once by a plain `name = ...` read in place."""
    stores = Counter(
        node.id for stmt in statements for node in ast.walk(stmt)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    )
    values = {
        stmt.targets[0].id: stmt.value for stmt in statements
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name) and stores[stmt.targets[0].id] == 1
    }
    while cyclic := [name for name in values if name in _reads(values[name], values)]:
        del values[cyclic[0]]  # a parameter rebound from itself (x = torch.as_tensor(x)) stays
    inliner = _Inline(values)
    return [inliner.visit(ast.parse(ast.unparse(stmt)).body[0]) for stmt in statements], values


def _reads(expression, values, seen=frozenset()):
    """The locals of `values` that an expression reads, directly or through other locals."""
    direct = {n.id for n in ast.walk(expression) if isinstance(n, ast.Name)} & set(values)
    new = direct - seen
    return direct.union(*(_reads(values[name], values, seen | direct) for name in new))


def _sequence(body, keep_assignments, parameters=frozenset()):
    """Tokens of a body after inlining, with or without the assignments it inlined."""
    statements, values = _inlined(_kept(body, parameters))
    kept = [
        stmt for stmt in statements
        if keep_assignments or not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                                    and getattr(stmt.targets[0], "id", None) in values)
    ]
    return [token for stmt in kept for token in tokens(stmt)]


def _parse(source):
    """The syntax tree of a cell, IPython magics removed; None if it does not parse."""
    try:
        return ast.parse(MAGIC.sub("", source))
    except SyntaxError:
        return None


def _functions(tree):
    """Every function (methods included) of a syntax tree, or none if there is no tree."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)] if tree else []


def _written(function, source):
    """True when the function holds a solution block: a student writes it, it is not given."""
    lines = source.splitlines()[function.lineno - 1:function.end_lineno]
    return "### BEGIN SOLUTION" not in source or any("### BEGIN SOLUTION" in line for line in lines)


def function_units(source, label=""):
    """[(name, tokens)] for every function a student writes in a solution cell."""
    units = [
        (f"{label}{f.name}", _sequence(f.body, False, {a.arg for a in ast.walk(f.args)
                                                      if isinstance(a, ast.arg)}))
        for f in _functions(_parse(source)) if _written(f, source)
    ]
    return [(name, sequence) for name, sequence in units if sequence]


def cell_units(source, label):
    """Units of a lecture cell: each function, and the cell's own top-level code."""
    tree = _parse(source)
    if tree is None:
        return []
    functions = [(f"{label} {f.name}", _sequence(f.body, True)) for f in _functions(tree)]
    body = [s for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
    units = functions + [(label, _sequence(body, True))]
    return [(name, sequence) for name, sequence in units if sequence]


def notebook_units(cells, label):
    """Units of every code cell of a notebook, each named `label` and the cell's number."""
    return [
        unit
        for number, cell in enumerate(cells)
        if cell.get("cell_type") == "code"
        for unit in cell_units(cell.get("source", ""), f"{label} cell {number}")
    ]


def shown_share(solution, shown):
    """Share of the solution's tokens that `shown` contains in common runs of MIN_RUN or more."""
    matcher = difflib.SequenceMatcher(None, solution, shown, autojunk=False)
    common = sum(block.size for block in matcher.get_matching_blocks() if block.size >= MIN_RUN)
    return common / len(solution)


def exercise_share(functions, shown):
    """(share, [(function, share, where)]) of an exercise's functions against a lecture's units.

    Each function is matched with the unit that shows most of it, and the exercise's share is
    the mean over its functions weighted by their numbers of tokens.
    """
    found = [
        (name, *max((shown_share(tokens_, unit), label) for label, unit in shown))
        for name, tokens_ in functions
    ]
    sizes = [len(tokens_) for _, tokens_ in functions]
    share = sum(part * size for (_, part, _), size in zip(found, sizes, strict=True)) / sum(sizes)
    return share, found


def module_units(source, label):
    """Units of a module of `utils`: each function and method, named `label` and its name."""
    return [
        (f"{label} {function.name}", sequence)
        for function in _functions(_parse(source))
        if (sequence := _sequence(function.body, True))
    ]


def visible_test_units(cells, label):
    """Units of the test cells of a notebook (a dict's cells, as released): each test cell's code
    with the body of every function of the notebook it calls placed after the call, so that a
    reference that a helper cell defines and the test calls counts as the test's own code."""
    definitions = {}
    for cell in cells:
        if cell.get("cell_type") == "code":
            for function in _functions(_parse(cell.get("source", ""))):
                definitions.setdefault(function.name, function)
    return [
        (f"{label} test cell {number}", sequence)
        for number, cell in enumerate(cells)
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade")
        and cell.get("cell_type") == "code"
        and (sequence := _test_sequence(_parse(cell.get("source", "")), definitions))
    ]


def _test_sequence(tree, definitions):
    """Tokens of a test cell's statements, each followed by the bodies of the functions it calls."""
    if tree is None:
        return []
    sequence, inlined = [], set()
    for statement in tree.body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            continue
        sequence += tokens(statement)
        sequence += _called_bodies(statement, definitions, inlined)
    return sequence


def _called_bodies(node, definitions, inlined):
    """Tokens of the bodies of the functions of `definitions` that `node` calls (and they call),
    each once."""
    found = []
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        name = getattr(call.func, "id", None)
        if name in definitions and name not in inlined:
            inlined.add(name)
            body = definitions[name].body
            found += _sequence(body, True)
            for statement in body:
                found += _called_bodies(statement, definitions, inlined)
    return found
