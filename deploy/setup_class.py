"""Make the class's exchange and close every home of the class; run as root.

    sudo COURSE_INSTRUCTOR=instructor /opt/course/.venv/bin/python deploy/setup_class.py

The exchange's root is root's and searchable; the course's folder in it and its inbound/,
outbound/ and feedback/ are the instructor's, with the modes that deploy/course_exchange.py
relies on. The file system must support POSIX ACLs (ext4, XFS, btrfs do). Homes are made
0700: Debian's useradd makes them 0755, where a student could read another's work and the copy
of each submission that nbgrader keeps in ~/.local/share/jupyter/nbgrader_cache. Run it again
after adding students (or set HOME_MODE 0700 in /etc/login.defs before adding them).
"""

import grp
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import class_settings
from course_exchange import FEEDBACK_MODE, INBOUND_MODE

FOLDERS = {"outbound": 0o755, "inbound": INBOUND_MODE, "feedback": FEEDBACK_MODE}


def make_folder(path, uid, mode):
    """Create `path` if needed, owned by `uid`, with `mode`."""
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, uid, -1)
    os.chmod(path, mode)


def check_acls(folder, user):
    """Raise SystemExit unless setfacl exists and works in `folder`."""
    if shutil.which("setfacl") is None:
        raise SystemExit("setfacl is missing: install the acl package (apt-get install acl)")
    with tempfile.NamedTemporaryFile(dir=folder) as probe:
        result = subprocess.run(["setfacl", "-m", f"u:{user}:r", probe.name], capture_output=True)
    if result.returncode != 0:
        raise SystemExit(f"{folder} does not take POSIX ACLs: {result.stderr.decode().strip()}")


def make_exchange(exchange=class_settings.EXCHANGE, instructor=class_settings.INSTRUCTOR):
    """The exchange of the course, ready for its first release; returns the course's folder."""
    account = pwd.getpwnam(instructor)
    make_folder(Path(exchange), 0, 0o755)
    course = Path(exchange) / class_settings.COURSE_ID
    make_folder(course, account.pw_uid, 0o755)
    for name, mode in FOLDERS.items():
        make_folder(course / name, account.pw_uid, mode)
    check_acls(course, instructor)
    return course


def class_members(group=class_settings.STUDENTS_GROUP, instructor=class_settings.INSTRUCTOR):
    """The instructor and every student: members of `group`, by name or as primary group."""
    gid = grp.getgrnam(group).gr_gid
    members = {instructor, *grp.getgrnam(group).gr_mem}
    return sorted(members | {user.pw_name for user in pwd.getpwall() if user.pw_gid == gid})


def close_homes(users):
    """Make each user's home 0700: their work, and the instructor's course, are theirs alone."""
    for user in users:
        os.chmod(pwd.getpwnam(user).pw_dir, 0o700)


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("run as root")
    print(f"exchange ready: {make_exchange()}")
    members = class_members()
    close_homes(members)
    print(f"homes closed (0700): {', '.join(members)}")
