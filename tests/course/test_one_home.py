"""Each name that processes or modules share is written in one place: the launch record's files
and keys (course/lms/launches.py), the LMS platforms and their gradebooks (course/lms/
platforms.py), the state a score is sent in (course/lms/lti.py), and what "graded" means
(course/coursedir/submissions.py). Elsewhere the code imports them, so a rename cannot leave a
second copy behind; docstrings and messages may say them in longer text.
"""

import ast
import functools

import pytest

from course.coursedir import paths

SOURCES = sorted(
    path for folder in ("course", "deploy") for path in (paths.ROOT / folder).rglob("*.py")
)
HOMES = {  # a string constant -> the one module that may write it
    # the record of LTI launches, shared by the hub, the grade sender and the grades page
    "lti": "course/lms/launches.py",
    "launches.json": "course/lms/launches.py",
    "lms_course.json": "course/lms/launches.py",
    "platform": "course/lms/launches.py",
    "launches": "course/lms/launches.py",
    "tool_key.pem": "course/lms/lti.py",
    # the LMS platforms: the names the manifest keeps, their own names, their gradebooks
    "canvas": "course/lms/platforms.py",
    "moodle": "course/lms/platforms.py",
    "blackboard": "course/lms/platforms.py",
    "Canvas": "course/lms/platforms.py",
    "Moodle": "course/lms/platforms.py",
    "Blackboard": "course/lms/platforms.py",
    "SIS User ID": "course/lms/platforms.py",
    "Identifier": "course/lms/platforms.py",
    "Full name": "course/lms/platforms.py",
    "Feedback comments": "course/lms/platforms.py",
    # the state a graded submission's score is sent in
    "FullyGraded": "course/lms/lti.py",
    "PendingManual": "course/lms/lti.py",
}
GRADED_HOME = "course/coursedir/submissions.py"  # the only caller of notebooks.executed


def docstrings(tree):
    """The ids of the docstring nodes of a module, its classes and its functions."""
    owners = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, owners) and ast.get_docstring(node) is not None
    }


@functools.cache
def string_constants(path):
    """Every string constant of a file that is not a docstring."""
    tree = ast.parse(path.read_text())
    skip = docstrings(tree)
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
    ]


def where(value):
    """Each file outside the tests that writes `value` as a string constant."""
    return [path.relative_to(paths.ROOT).as_posix() for path in SOURCES
            if value in string_constants(path)]  # fmt: skip


@pytest.mark.parametrize("value", sorted(HOMES))
def test_a_shared_name_is_written_in_its_home_alone(value):
    assert where(value) == [HOMES[value]]


def test_only_the_submissions_state_decides_what_graded_means():
    callers = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            called = node.func if isinstance(node, ast.Call) else None
            name = getattr(called, "attr", None) or getattr(called, "id", None)
            if name == "executed":
                callers.append(path.relative_to(paths.ROOT).as_posix())
    assert callers == [GRADED_HOME]


def test_the_check_sees_a_name_in_code_and_not_in_a_docstring(tmp_path):
    module = tmp_path / "module.py"
    module.write_text('"""Reads launches.json."""\n\nFILE = "launches.json"\n')
    assert string_constants(module) == ["launches.json"]
