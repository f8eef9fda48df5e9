"""What the tests undo of the sandbox's control groups: the groups root delegated to a user."""

import contextlib

from course.grading.kernels import cgroups


def undelegate(user):
    """As root: remove the groups delegated to `user`, once empty, and DELEGATED once empty."""
    for parent in cgroups.mode().parents:
        folder = parent / cgroups.DELEGATED / user
        for empty in (folder / cgroups.LEAF, folder, folder.parent):
            with contextlib.suppress(OSError):  # not there, or still holds a group or a process
                empty.rmdir()
