"""Scratch courses and page configurations shared by the test folders.

`nbgrader generate_assignment` takes seconds per lab: each lab is released once per session, and
a test or a module that grades gets a copy of its own (`course_copy`, `lab_01_course`).
"""

import os
import shutil
from pathlib import Path

import nbgrader
import pytest
from catalogue import mistakes
from traitlets.config.loader import PyFileConfigLoader

from course.coursedir import notebooks, paths
from course.coursedir.scratch import fill, scratch_course, solution_cells

LAB_01 = "01_softmax"
# `make quick` leaves out the tests marked slow: a file says so at its top (`pytestmark`), a test
# with `@pytest.mark.slow`. Those that start a kernel, a browser or a server must, and
# tests/slow_tier.py fails each that does not. A test that uses a released course (nbgrader builds
# it, seconds per lab) is slow by that need alone: it uses one of SLOW_FIXTURES.
pytest_plugins = ["slow_tier"]
SLOW_FIXTURES = {"released_courses"}
NBGRADER_PAGES = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"


def pytest_collection_modifyitems(config, items):
    """Mark slow every test that uses a released course."""
    for item in items:
        if SLOW_FIXTURES & set(item.fixturenames):
            item.add_marker(pytest.mark.slow)


def append_config(root, config_lines):
    """Add `config_lines` to the nbgrader_config.py of the course at `root`."""
    if config_lines:
        with open(root / "nbgrader_config.py", "a") as config:
            config.write("\n" + "\n".join(config_lines) + "\n")


class ReleasedCourses(dict):
    """lab -> a scratch course with that lab released (and in its gradebook), built on first use."""

    def __init__(self, tmp_path_factory):
        super().__init__()
        self.tmp_path_factory = tmp_path_factory

    def __missing__(self, lab):
        self[lab] = scratch_course(self.tmp_path_factory.mktemp(f"released_{lab}"), [lab])
        return self[lab]


@pytest.fixture(scope="session")
def released_courses(tmp_path_factory):
    """The released scratch courses of this session, by lab: copy them, never change them."""
    return ReleasedCourses(tmp_path_factory)


@pytest.fixture(scope="session")
def released_lab_01(released_courses):
    """The scratch course with lab 01 released: copy it, never change it."""
    return released_courses[LAB_01]


@pytest.fixture(scope="session")
def course_copy(released_courses, tmp_path_factory):
    """A function: a course of one's own with `lab` released and `config_lines` configured."""

    def copy(lab=LAB_01, config_lines=(), name="course"):
        root = tmp_path_factory.mktemp(name) / "course"
        shutil.copytree(released_courses[lab], root)
        append_config(root, config_lines)
        return root

    return copy


@pytest.fixture
def lab_01_course(course_copy):
    """A course of this test's own, with lab 01 released and nothing submitted."""
    return course_copy(LAB_01)


@pytest.fixture(scope="session")
def lab_01_work(released_lab_01):
    """Lab 01 as students hand it in: the solution, the blank release and a catalogued mistake.

    The notebooks are shared by the session: submit or fill them, never change them.
    """
    release = notebooks.read(released_lab_01 / "release" / LAB_01 / paths.lab_filename(LAB_01))
    answers = solution_cells(LAB_01)
    ignores_dim = next(m for m in mistakes(LAB_01) if m.name == "softmax_ignores_dim")
    return {
        "solution": fill(release, answers),
        "blank": release,
        "mistake": fill(release, {**answers, ignores_dim.cell: ignores_dim.code}),
    }


def load_course_config():
    """The course's nbgrader configuration, read from nbgrader_config.py."""
    return PyFileConfigLoader("nbgrader_config.py", path=str(paths.ROOT)).load_config()


@pytest.fixture
def course_config():
    """The course's nbgrader configuration, as the formgrader's pages load it (a fresh copy)."""
    return load_course_config()


@pytest.fixture
def feedback_config():
    """The course's configuration of the feedback page, completed as nbgrader's feedback does.

    (nbgrader adds its own templates only where the configuration names none: the course's does.)
    """
    config = load_course_config()
    config.HTMLExporter.template_name = "feedback"
    bootstrap = NBGRADER_PAGES / "static" / "node_modules" / "bootstrap" / "dist" / "css"
    config.HTMLExporter.extra_template_paths = [str(bootstrap)]
    return config


# A skip whose reason starts so is for want of a feature of the Linux kernel, which no install
# brings; any other skip is for want of something .ci/run installs, and fails the run there.
KERNEL_FEATURE = "this Linux"


def needed_but_skipped(config):
    """Reports of the tests skipped for want of an install, under COURSE_NO_SKIPS=1 (.ci/run)."""
    if os.environ.get("COURSE_NO_SKIPS") != "1":
        return []
    stats = config.pluginmanager.get_plugin("terminalreporter").stats
    return [report for report in stats.get("skipped", [])
            if not skip_reason(report).startswith(KERNEL_FEATURE)]  # fmt: skip


def skip_reason(report):
    """The reason a skipped test's report gives."""
    return str(report.longrepr[-1]).removeprefix("Skipped: ") if report.longrepr else ""


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    """A needed test that skipped fails the run."""
    if needed_but_skipped(session.config) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config):
    """Name each needed test that skipped, and why."""
    for report in needed_but_skipped(config):
        terminalreporter.write_line(f"skipped, and needed: {report.nodeid}: {skip_reason(report)}")
