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
# `make quick` leaves out the tests marked slow: those that grade real submissions, train a model
# or start a server. A test is slow when it uses one of these fixtures (a released course, which
# nbgrader builds), lives in one of these files, is named below, or is marked so itself.
SLOW_FIXTURES = {"released_courses", "regenerated"}
SLOW_FILES = {
    "tests/course/bench/test_lessons.py",  # runs the lessons' benches
    "tests/course/bench/test_queue_overhead.py",  # a PostgreSQL server
    "tests/course/coursedir/test_postgres.py",  # a PostgreSQL server
    "tests/course/grading/test_hostile.py",  # grades hostile submissions in sandboxed kernels
    "tests/course/grading/test_pool.py",  # grades classes on several workers
    "tests/course/grading/test_queue.py",  # a PostgreSQL server
    "tests/course/grading/test_slurm.py",  # a Slurm cluster grades a class
    "tests/course/grading/kernels/test_syscall_filter.py",  # system calls tried in sandboxes
    "tests/course/grading/kernels/test_zygote.py",  # forks kernels from a zygote that imports torch
    "tests/lessons/test_autograde.py",  # the autograde round trip of every lab
    "tests/lessons/test_messages.py",  # every catalogued mistake, graded
    "tests/deploy/test_course_exchange.py",  # collects from a real nbgrader exchange
}
SLOW_TESTS = {  # single tests of fast files, by name, slow enough to matter (seconds on 2 cores)
    "test_source_passes_nbgrader_validation",  # nbgrader validates each lab's source
    "test_training_lowers_the_loss_on_the_corpus",  # trains the course's GPT
    "test_training_lowers_the_loss_and_accuracy_is_a_rate",  # trains a transformer
    "test_the_graders_peak_memory_stays_bounded_whatever_the_kernel_replies",  # replies of 60 MB
    "test_the_budget_counts_each_string_as_one_value_whatever_it_holds",
    "test_pytest_collects_every_test_file",  # collects the whole tree again
    "test_a_cell_keeps_its_outputs_while_they_fit_and_says_how_many_it_dropped",
    "test_the_edition_installs_alone",  # a virtual environment of its own
    "test_a_lecture_runs_in_the_edition",  # runs a lecture and a lab
    "test_a_filled_in_lab_passes_its_tests_in_the_edition",
}
NBGRADER_PAGES = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"


def pytest_collection_modifyitems(config, items):
    """Mark slow every test that uses a slow fixture or lives in a slow file."""
    for item in items:
        where = item.path.relative_to(paths.ROOT).as_posix()
        named = item.originalname in SLOW_TESTS
        if named or where in SLOW_FILES or SLOW_FIXTURES & set(item.fixturenames):
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
