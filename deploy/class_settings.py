"""Who and where the class is: one place read by the hub, the servers and nbgrader.

The defaults suit a machine set up as the README says. Each can be changed by an environment
variable of the hub; the hub passes them on to every user's server.
"""

import os
import pwd
import sys
from pathlib import Path

from course.coursedir import paths

COURSE_ID = paths.COURSE_ID
DEPLOY = Path(__file__).resolve().parent
INSTRUCTOR = os.environ.get("COURSE_INSTRUCTOR", "instructor")
STUDENTS_GROUP = os.environ.get("COURSE_STUDENTS_GROUP", "students")
EXCHANGE = os.environ.get("COURSE_EXCHANGE", "/srv/nbgrader/exchange")
GRADERS_GROUP = f"formgrade-{COURSE_ID}"  # nbgrader's name for those who may grade the course
PYTHON_BIN = Path(os.environ.get("COURSE_PYTHON", sys.executable)).parent  # the course's env
SETTINGS = {
    "COURSE_INSTRUCTOR": INSTRUCTOR,
    "COURSE_STUDENTS_GROUP": STUDENTS_GROUP,
    "COURSE_EXCHANGE": EXCHANGE,
    "COURSE_PYTHON": str(PYTHON_BIN / "python"),
}


def course_folder(instructor=INSTRUCTOR):
    """The instructor's copy of the course: ~instructor/attention-step-by-step."""
    return Path(pwd.getpwnam(instructor).pw_dir) / COURSE_ID


def user_environment(user):
    """The variables a user's server (and what it runs) needs, beyond HOME, USER and SHELL."""
    role = "instructor" if user == INSTRUCTOR else "student"
    config = [DEPLOY / "jupyter" / role, DEPLOY / "jupyter" / "common"]
    python_path = [DEPLOY, course_folder()] if role == "instructor" else [DEPLOY]
    return {
        **SETTINGS,
        "PATH": os.pathsep.join([str(PYTHON_BIN), "/usr/local/bin", "/usr/bin", "/bin"]),
        "PYTHONPATH": os.pathsep.join(map(str, python_path)),
        "JUPYTER_CONFIG_PATH": os.pathsep.join(map(str, config)),
    }
