"""Run nbgrader's command line, or the course's own, on a course directory, as the tools need it."""

import os
import subprocess
import sys


def nbgrader_environment():
    """os.environ for an nbgrader process or a Jupyter server that grades with this course.

    nbgrader runs the `alembic` executable that sits beside this interpreter. The course's
    nbgrader_config.py imports `course`, which is installed (`pip install -e .`), as is the
    entry point of its kernel provisioner.
    """
    return dict(
        os.environ,
        PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]]),
    )


def nbgrader(args, course_root, check=True, environment=None):
    """Run an nbgrader command with the course root as working directory (and extra variables)."""
    command = [sys.executable, "-m", "nbgrader", *args]
    return subprocess.run(
        command,
        cwd=course_root,
        check=check,
        capture_output=True,
        text=True,
        env={**nbgrader_environment(), **(environment or {})},
    )


def instructor(course_root, *args, **options):
    """Run `python -m course.instructor ARGS --root ROOT` as the Makefile does (options: run's)."""
    command = [sys.executable, "-m", "course.instructor", *args, "--root", str(course_root)]
    options = {"capture_output": True, "text": True, "timeout": 900, **options}
    return subprocess.run(command, env=nbgrader_environment(), **options)
