"""Which module of deploy/ may import which: the edges import-linter cannot see.

deploy/ is loaded by path (deploy/__init__.py), so its modules import one another by bare name;
import-linter checks their imports of the course (pyproject.toml), this test their imports of
one another and of JupyterHub: the instructor's and students' servers never load the hub.
"""

import ast

import pytest

from course.coursedir import paths

DEPLOY = paths.ROOT / "deploy"
MAY_IMPORT = {  # each module of deploy/: the modules of deploy/ it may import
    "__init__": set(),
    "class_settings": set(),
    "course_exchange": set(),  # nbgrader's exchange, in every user's server
    "grade_as_root": {"class_settings"},
    "jupyterhub_config": {"class_settings"},  # the hub
    "jupyterhub_lti_config": {"lti_login"},  # the hub, with LTI 1.3
    "lti_grades_page": {"class_settings"},  # the instructor's server
    "lti_lab": {"class_settings"},  # a student's server
    "lti_login": {"class_settings"},  # the hub
    "setup_class": {"class_settings", "course_exchange"},
}
HUB = {"jupyterhub_config", "jupyterhub_lti_config", "lti_login"}
HUB_PACKAGES = {"jupyterhub", "ltiauthenticator"}
FILES = sorted(DEPLOY.rglob("*.py"))


def imported(path):
    """The top-level names of the modules a file imports (absolute imports)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def role(path):
    """The key of MAY_IMPORT a file answers to: its module name; a Jupyter configuration file
    (deploy/jupyter/...) may import only the class's settings."""
    return path.stem if path.parent == DEPLOY else "jupyter configuration"


def test_every_module_of_deploy_is_listed():
    listed = {path.stem for path in FILES if path.parent == DEPLOY}
    assert listed == set(MAY_IMPORT), "list a new module of deploy/ in MAY_IMPORT"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_a_module_of_deploy_imports_only_the_modules_of_deploy_it_may(path):
    allowed = MAY_IMPORT.get(role(path), {"class_settings"})
    siblings = imported(path) & set(MAY_IMPORT)
    assert siblings <= allowed, f"{path.name} imports {sorted(siblings - allowed)}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(DEPLOY)))
def test_only_the_hubs_modules_import_jupyterhub(path):
    if role(path) in HUB:
        return
    assert not imported(path) & HUB_PACKAGES, f"{path.name} would load the hub in a server"

