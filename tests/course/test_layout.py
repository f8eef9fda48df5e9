"""The packages of course/ import one way, never another's private names; utils/ imports none.

Which package may import which is import-linter's `[tool.importlinter]` contracts in
pyproject.toml; the checks it cannot express are here.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from course.coursedir import paths
from course.coursedir.nbgrader_run import nbgrader_environment

COURSE = paths.ROOT / "course"
COURSE_FILES = sorted(COURSE.rglob("*.py"))
PACKAGES = sorted(init.parent for init in COURSE.rglob("__init__.py"))


def package_of_file(path):
    """The dotted name of the package of a file: course/grading/pool.py -> course.grading."""
    return ".".join(path.parent.relative_to(paths.ROOT).parts)


def package_of(module):
    """The package whose name `module` is: itself if a package, else the package that holds it."""
    folder = paths.ROOT.joinpath(*module.split("."))
    return module if (folder / "__init__.py").exists() else module.rpartition(".")[0]


def private_names_imported(path):
    """(module, name) for each private name the file imports from a module of course."""
    return [
        (node.module, alias.name)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("course")
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]


def test_the_import_contracts_of_pyproject_hold():
    lint_imports = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint_imports), "--no-cache", "--no-logo"],
        cwd=paths.ROOT,
        capture_output=True,
        text=True,
        env=nbgrader_environment(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout, result.stdout


@pytest.mark.parametrize("path", COURSE_FILES, ids=lambda p: str(p.relative_to(paths.ROOT)))
def test_a_private_name_is_imported_only_within_its_own_package(path):
    package = package_of_file(path)
    for module, name in private_names_imported(path):
        assert package_of(module) == package, f"{path.name} reaches into {module} for {name}"


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: str(p.relative_to(paths.ROOT)))
def test_each_package_says_what_it_owns_and_may_import(package):
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    assert "import" in docstring.lower(), f"{package.name}/__init__.py: say what it may import"
