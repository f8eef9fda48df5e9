"""JupyterHub for Attention, Step by Step on one machine (the setup of The Littlest JupyterHub).

Students and the instructor are Unix users who log in with their Unix password (PAM); each
gets a JupyterLab server of their own, run as them, from the course's Python environment (the
one that runs the hub: `utils`, nbgrader and torch installed). Students are the members of the
Unix group COURSE_STUDENTS_GROUP (default `students`); the instructor is COURSE_INSTRUCTOR
(default `instructor`), whose copy of the course is ~instructor/attention-step-by-step. The
exchange is COURSE_EXCHANGE (default /srv/nbgrader/exchange); deploy/setup_class.py makes it.
The instructor's server starts in a control group delegated to them (course-grading/<instructor>,
made as the hub starts), where their grading gives each sandbox a group of its own.

    jupyterhub -f deploy/jupyterhub_config.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import class_settings  # noqa: E402 - found beside this file
from jupyterhub.spawner import LocalProcessSpawner  # noqa: E402

from course.grading.kernels import cgroups  # noqa: E402 - installed in the hub's environment

c = get_config()  # noqa: F821 - provided by JupyterHub when it loads this file

INSTRUCTOR = class_settings.INSTRUCTOR

c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.open_sessions = False  # no login session per server: none is needed
c.Authenticator.allowed_users = {INSTRUCTOR}
c.PAMAuthenticator.allowed_groups = {class_settings.STUDENTS_GROUP}


def grading_group():
    """The control group delegated to the instructor, or None (each sandbox has its rlimits)."""
    try:
        return cgroups.delegate(INSTRUCTOR)
    except (OSError, ValueError) as error:
        print(f"no control group for the instructor's grading: {error}", file=sys.stderr)
        return None


GRADING_GROUP = grading_group()


class CourseSpawner(LocalProcessSpawner):
    """A local process for each user, the instructor's started in GRADING_GROUP."""

    def make_preexec_fn(self, name):
        """Join GRADING_GROUP as root, for the instructor, before becoming the user."""
        become_user = super().make_preexec_fn(name)
        if name != INSTRUCTOR or GRADING_GROUP is None:
            return become_user

        def preexec():
            GRADING_GROUP.join()
            become_user()

        return preexec


c.JupyterHub.spawner_class = CourseSpawner
c.Spawner.cmd = [str(class_settings.PYTHON_BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.http_timeout = 120


def pre_spawn_hook(spawner):
    """Give the user's server the course's environment: its configuration, student or not."""
    spawner.environment.update(class_settings.user_environment(spawner.user.name))


c.Spawner.pre_spawn_hook = pre_spawn_hook

# The formgrader runs in the instructor's server. Only its owner may open a server; members of
# the hub group formgrade-<course> (teaching assistants, say) may open the instructor's too.
c.JupyterHub.load_groups = {class_settings.GRADERS_GROUP: {"users": [INSTRUCTOR]}}
c.JupyterHub.load_roles = [
    {
        "name": "formgrader",
        "description": "Open the instructor's server, and so the formgrader",
        "scopes": [f"access:servers!user={INSTRUCTOR}"],
        "groups": [class_settings.GRADERS_GROUP],
    },
]
