"""Autograde a lab of the instructor's course as root, then give every file back to them.

    sudo /opt/course/.venv/bin/python deploy/grade_as_root.py 01_softmax [--jobs N]

For a machine where the instructor's own `make autograde` cannot make the sandbox (it then
refuses to grade and says why): as root, each student's kernel gets a user id of its own.
It runs the instructor's copy of `course/`, so only an administrator of the machine should run it.
"""

import os
import subprocess
import sys

import class_settings


def autograde(arguments):
    """`python -m course.instructor autograde ARGUMENTS` in the course folder; its exit status."""
    folder = class_settings.course_folder()
    environment = {**os.environ, **class_settings.user_environment(class_settings.INSTRUCTOR)}
    command = [class_settings.PYTHON_BIN / "python", "-m", "course.instructor", "autograde"]
    result = subprocess.run([*command, *arguments], cwd=folder, env=environment)
    owner = f"{class_settings.INSTRUCTOR}:"
    subprocess.run(["chown", "-R", "--no-dereference", owner, folder], check=True)
    return result.returncode


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("run as root: sudo ... deploy/grade_as_root.py NN_topic")
    sys.exit(autograde(sys.argv[1:]))
