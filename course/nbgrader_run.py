"""Run nbgrader's command line on a course directory, as the build and grading tools need it."""

import os
import subprocess
import sys


def nbgrader(args, course_root, check=True):
    """Run an nbgrader command with the course root as working directory."""
    command = [sys.executable, "-m", "nbgrader", *args]
    # nbgrader runs the `alembic` executable that sits beside this interpreter.
    env = dict(
        os.environ, PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]])
    )
    return subprocess.run(
        command, cwd=course_root, check=check, capture_output=True, text=True, env=env
    )
