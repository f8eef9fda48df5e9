"""The packages of course/ import one way, never another's private names; utils/ imports none."""

import ast

import pytest

from course.build import paths

# Each role may import the roles before it, never one after it.
ROLES = ["build", "grading", "lms", "instructor", "bench"]


def role_of(module):
    """The role of a dotted module name under course, e.g. course.grading.judge -> grading."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "course" else None


def course_imports(path):
    """(module, names) for each `import` or `from ... import` of course in the file at path."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("course"):
            names = [alias.name for alias in node.names]
            if node.module == "course":  # from course import instructor
                found += [(f"course.{name}", []) for name in names]
            else:
                found.append((node.module, names))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("course")]
    return found


def module_role(path):
    """The role of a file under course/: its package, or instructor."""
    relative = path.relative_to(paths.ROOT / "course")
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


COURSE_FILES = sorted((paths.ROOT / "course").rglob("*.py"))


@pytest.mark.parametrize("path", COURSE_FILES, ids=lambda p: str(p.relative_to(paths.ROOT)))
def test_a_role_imports_only_the_roles_before_it(path):
    role = module_role(path)
    if role == "__init__":
        return
    for module, names in course_imports(path):
        target = role_of(module)
        assert target in ROLES, f"{path.name} imports {module}, which belongs to no role"
        assert ROLES.index(target) <= ROLES.index(role), f"{role} must not import {module}"
        if target != role:
            private = [name for name in names if name.startswith("_")]
            assert not private, f"{path.name} reaches into {module} for {private}"


def test_utils_imports_nothing_from_course():
    for path in sorted((paths.ROOT / "utils").rglob("*.py")):
        assert not course_imports(path), f"utils/{path.name} imports from course/"


@pytest.mark.parametrize("package", [*ROLES[:3], ROLES[4]])
def test_each_package_says_what_it_owns_and_may_import(package):
    init = paths.ROOT / "course" / package / "__init__.py"
    assert init.exists(), f"course/{package}/ has no __init__.py"
    docstring = ast.get_docstring(ast.parse(init.read_text())) or ""
    assert "import" in docstring.lower(), f"course/{package}/__init__.py: say what it may import"
