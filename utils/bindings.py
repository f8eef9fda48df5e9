"""The names a cell binds and reads, read from its code without running it.

The grader's judge uses them to know which names of a test come from the student's code, and
the review to know what a name a cell uses was imported as.
"""

import ast


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


def all_bound_names(source):
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
