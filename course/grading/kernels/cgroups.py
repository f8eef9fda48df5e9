"""A control group for each sandbox: its memory, processes and CPU share limited as a whole.

Resource limits (rlimits, `course.grading.kernels.sandbox`) bound each process of a sandbox; a
control group bounds the sandbox whole, however many processes or sessions it starts:

* memory: the resident memory of all its processes and of its tmpfs files, with no swap;
* processes: every process and thread of the sandbox together;
* CPU: the same share for every sandbox (cpu.shares on cgroup v1, cpu.weight on v2). With N
  sandboxes busy, each gets at least 1/N of the CPU time they contend for, whatever the number
  of processes any one of them runs: a student's busy processes slow another student's grading
  at most as one more busy student would.

The grader makes one group per sandbox beneath its own group: with the v1 controllers memory,
pids and cpu, as root, or in a cgroup v2 hierarchy where it may hand these controllers down from
its own group (as root, or in a subtree delegated to it). There the grading processes move into
a leaf of their own (LEAF), as cgroup v2 requires of a group whose children have controllers.
Elsewhere each sandbox has only its rlimits: `mode()` says which is in force, and why.
A group is removed when its sandbox ends: every process in it is killed, and waited for (killed
again while any is left), before its folders go; one that cannot be removed is reported.

A grader that is not root needs a subtree delegated to it: `delegate(user)`, run as root (the
hub does, as it starts), makes DELEGATED/<user> beneath its own group and gives it to the user.
The user's processes that start there (the hub starts the instructor's server there) grade in
it. One that starts elsewhere moves in as it first looks for a hierarchy: on cgroup v1 it may;
on cgroup v2 only where it may also write the processes of a group above both, which a user
seldom may, so there the grading must start inside.
"""

import contextlib
import errno
import functools
import itertools
import os
import pwd
import re
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from course.grading.kernels.policy import CPU_SHARES, CPU_WEIGHT, Limits

CONTROLLERS = ("memory", "pids", "cpu")
V1, V2, RLIMITS = "cgroup v1", "cgroup v2", "rlimits"
LEAF = "course-grader"  # cgroup v2: the grading processes' own group, beside the sandboxes'
PREFIX = "course-sandbox-"
DELEGATED = "course-grading"  # beneath it, the group delegated to each user who grades, by name
# The files of a delegated group that its user writes, besides the folder (cgroup(7)).
DELEGATED_FILES = ("cgroup.procs", "cgroup.threads", "cgroup.subtree_control", "tasks")
NAME = re.compile(rf"{PREFIX}(\d+)-\d+")  # PREFIX, the id of the process that made it, a number
REMOVE_SECONDS = 60  # the longest a removal waits for the killed processes to end
FIRST_PAUSE_SECONDS, LAST_PAUSE_SECONDS = 0.01, 0.25  # between the passes of a removal
_numbers = itertools.count()


@dataclass(frozen=True)
class Mode:
    """How sandboxes are limited here: `kind` (V1, V2 or RLIMITS), why, and where groups go."""

    kind: str
    reason: str
    parents: tuple = ()  # the folders that hold the sandboxes' groups: one per hierarchy

    def describe(self, limits=None):
        """One line for the autograde summary: the mode, why, and the bounds in force."""
        if self.kind == RLIMITS:
            head = f"sandbox limits: rlimits, per process only ({self.reason})"
        else:
            head = f"sandbox limits: one {self.kind} group per sandbox ({self.reason})"
        return f"{head}; {bounds(self.kind, limits or Limits())}"


def bounds(kind, limits):
    """What a sandbox may use in mode `kind` (V1, V2 or RLIMITS), from `limits` (policy.Limits)."""
    gib, mib = 1 << 30, 1 << 20
    each = (
        f"each process {limits.memory_bytes / gib:g} GiB of address space and "
        f"{limits.open_files} open files; /tmp and home {limits.tmp_bytes // mib} MiB and "
        f"{limits.tmp_files} files each; socket buffers at Linux's default, no extended attribute"
    )
    if kind == RLIMITS:
        return (
            f"{each}; {limits.processes} processes of its user; NOT bounded as a whole: memory "
            f"(up to {limits.processes} x {limits.memory_bytes / gib:g} GiB) nor CPU share"
        )
    return (
        f"as a whole {limits.sandbox_memory_bytes / gib:g} GiB of memory without swap, "
        f"{limits.processes} processes and threads, an equal CPU share; {each}"
    )


@dataclass(frozen=True)
class Group:
    """The control group of one sandbox: its folder in each hierarchy."""

    kind: str
    folders: tuple

    def join(self):
        """Move the calling process into the group (its children then start there)."""
        for folder in self.folders:
            (folder / "cgroup.procs").write_text("0")

    def members(self):
        """The ids of the processes in the group."""
        found = set()
        for folder in self.folders:
            with contextlib.suppress(FileNotFoundError):
                found.update(int(pid) for pid in (folder / "cgroup.procs").read_text().split())
        return found

    def kill(self):
        """Send SIGKILL to every process in the group."""
        whole = self.folders[0] / "cgroup.kill"
        if self.kind == V2 and whole.exists():
            whole.write_text("1")
            return
        for pid in self.members():
            _kill_member(self, pid)

    def remove(self, seconds=REMOVE_SECONDS):
        """Kill every process in the group, wait until none is left, then remove the group.

        Each pass kills what is in the group (a process may fork as the first kill lands) and,
        once the group is empty, removes its folders; a pass that finds a process left waits a
        little longer than the last. OSError (EBUSY, naming what is left) after `seconds`.
        """
        deadline = time.monotonic() + seconds
        pause = FIRST_PAUSE_SECONDS
        while True:
            self.kill()
            left = self.members()
            if not left and self._remove_folders():
                return
            if time.monotonic() >= deadline:
                message = (
                    f"the control group {self.folders[0]} still holds "
                    f"{len(left) or 'an exiting'} process{'es' if len(left) > 1 else ''} "
                    f"{seconds:g} s after they were killed"
                )
                raise OSError(errno.EBUSY, message)
            time.sleep(pause)
            pause = min(2 * pause, LAST_PAUSE_SECONDS)

    def _remove_folders(self):
        """Remove the group's folders: True once none is left, False while Linux says busy."""
        for folder in self.folders:
            try:
                folder.rmdir()
            except FileNotFoundError:
                pass
            except OSError as error:  # EBUSY: a killed process is still ending
                if error.errno != errno.EBUSY:
                    raise
                return False
        return True


def _kill_member(group, pid):
    """Kill process `pid` if it is still in `group` (a pidfd: never another process's id)."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        if pid in group.members():
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    finally:
        os.close(pidfd)


def create(limits):
    """A new group for one sandbox, limited by `limits` (a policy.Limits); None if not here."""
    current = mode()
    if current.kind == RLIMITS:
        return None
    return _make(current, f"{PREFIX}{os.getpid()}-{next(_numbers)}", limits)


def _make(current, name, limits):
    """Make group `name` beneath `current.parents` and write its limits."""
    group = Group(current.kind, tuple(parent / name for parent in current.parents))
    try:
        for folder in group.folders:
            folder.mkdir()
        for folder, setting, value, optional in _settings(current, group, limits):
            if not optional or (folder / setting).exists():
                (folder / setting).write_text(str(value))
    except OSError:
        group.remove()
        raise
    return group


def _settings(current, group, limits):
    """(folder, file, value, optional) for each limit of a sandbox's group."""
    memory, processes = limits.sandbox_memory_bytes, limits.processes
    if current.kind == V2:
        (folder,) = group.folders
        return [
            (folder, "memory.max", memory, False),
            (folder, "memory.swap.max", 0, True),
            (folder, "pids.max", processes, False),
            (folder, "cpu.weight", CPU_WEIGHT, False),
        ]
    memory_folder, pids_folder, cpu_folder = group.folders  # in the order of CONTROLLERS
    return [
        (memory_folder, "memory.limit_in_bytes", memory, False),
        (memory_folder, "memory.memsw.limit_in_bytes", memory, True),  # no swap either
        (pids_folder, "pids.max", processes, False),
        (cpu_folder, "cpu.shares", CPU_SHARES, False),
    ]


@functools.cache
def mode():
    """The Mode in force for this process: a group per sandbox where one can be made."""
    try:
        found = _find_hierarchy()
    except OSError as error:
        return Mode(RLIMITS, f"the control groups cannot be read: {error}")
    if found.kind == RLIMITS:
        return found
    try:
        _make(found, f"{PREFIX}{os.getpid()}-{next(_numbers)}", _ProbeLimits()).remove()
    except OSError as error:
        return Mode(RLIMITS, f"cannot make a control group in {found.parents[0]}: {error}")
    return found


@dataclass(frozen=True)
class _ProbeLimits:
    """The limits of the group made once to see that groups can be made."""

    sandbox_memory_bytes: int = 1 << 30
    processes: int = 64


def _find_hierarchy(mountinfo="/proc/self/mountinfo", membership="/proc/self/cgroup"):
    """The Mode of the first usable hierarchy: v2 with the controllers, else v1, else RLIMITS.

    A process that is not root first moves into the groups delegated to its user, if any.
    """
    mounts = parse_mountinfo(Path(mountinfo).read_text())
    groups = parse_membership(Path(membership).read_text())
    if os.geteuid() != 0:
        try:
            if _join_delegated(mounts, groups):
                groups = parse_membership(Path(membership).read_text())
        except OSError as error:
            return Mode(RLIMITS, f"cannot join the group delegated to this user: {error}")
    if "" in mounts and "" in groups:
        own = _inside(mounts[""], groups[""])
        available = (own / "cgroup.controllers").read_text().split()
        if set(CONTROLLERS) <= set(available):
            try:
                return Mode(V2, f"beneath {own}", (hand_down(own),))
            except OSError as error:
                return Mode(RLIMITS, f"cgroup v2: cannot hand the controllers down: {error}")
    missing = [name for name in CONTROLLERS if name not in mounts or name not in groups]
    if missing:
        return Mode(RLIMITS, f"no cgroup v2 or v1 hierarchy with {', '.join(missing)}")
    parents = tuple(_inside(mounts[name], groups[name]) for name in CONTROLLERS)
    return Mode(V1, f"controllers {', '.join(CONTROLLERS)}", parents)


def _join_delegated(mounts, groups):
    """Move this process into each group delegated to its user that it is outside; True if any."""
    moved = False
    for name in ("", *CONTROLLERS):
        if name not in mounts or name not in groups:
            continue
        own = _inside(mounts[name], groups[name])
        delegated = _delegated_folder(own, mounts[name][0])
        if delegated is None or own.is_relative_to(delegated):
            continue
        entry = delegated / LEAF if name == "" else delegated
        (entry / "cgroup.procs").write_text("0")
        moved = True
    return moved


def _delegated_folder(own, mount_point):
    """The group delegated to this process's user beside `own` or an ancestor of it, or None."""
    uid = os.geteuid()
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        return None
    for folder in (own, *own.parents):
        candidate = folder / DELEGATED / user
        if candidate.is_dir() and candidate.stat().st_uid == uid:
            return candidate
        if folder == mount_point:
            break
    return None


def delegate(user):
    """As root: make a group for `user` to manage beneath this process's own; a Group to join.

    cgroup v2: DELEGATED/<user> may hand CONTROLLERS down, and its processes start in its LEAF;
    cgroup v1: DELEGATED/<user> in the hierarchy of each controller. Each folder, and the files
    of it that move processes or hand controllers down, become the user's. OSError where no
    hierarchy serves; ValueError for an unknown user.
    """
    try:
        account = pwd.getpwnam(user)
    except KeyError:
        message = f"expected the name of a Unix user to delegate a group to, not {user!r}"
        raise ValueError(message) from None
    found = mode()
    if found.kind == RLIMITS:
        raise OSError(errno.ENOTSUP, f"no control group can be delegated here: {found.reason}")
    entries = []
    for parent in found.parents:
        folder = parent / DELEGATED / user
        folder.mkdir(parents=True, exist_ok=True)
        if found.kind == V2:
            wanted = " ".join(f"+{name}" for name in CONTROLLERS)
            (folder.parent / "cgroup.subtree_control").write_text(wanted)
            (folder / LEAF).mkdir(exist_ok=True)
            _hand_over(folder / LEAF, account)
        _hand_over(folder, account)
        entries.append(folder / LEAF if found.kind == V2 else folder)
    return Group(found.kind, tuple(entries))


def _hand_over(folder, account):
    """Give the group `folder`, and its DELEGATED_FILES, to the user of `account`."""
    for path in (folder, *(folder / name for name in DELEGATED_FILES)):
        if path.exists():
            os.chown(path, account.pw_uid, account.pw_gid)


def parse_mountinfo(text):
    """{controller: (mount point, root)} of cgroup v1 mounts, and "" for the cgroup v2 mount."""
    found = {}
    for line in text.splitlines():
        fields, _, tail = line.partition(" - ")
        fields, tail = fields.split(), tail.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        place = (Path(fields[4]), fields[3])
        if tail[0] == "cgroup2":
            found.setdefault("", place)
        elif tail[0] == "cgroup":
            for option in tail[2].split(","):
                found.setdefault(option, place)
    return found


def parse_membership(text):
    """{controller: group path} from /proc/self/cgroup, and "" for the cgroup v2 group."""
    found = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        for name in controllers.split(",") if controllers else [""]:
            found[name] = path
    return found


def _inside(place, path):
    """The folder of group `path` in the hierarchy mounted at `place` (mount point, its root)."""
    mount_point, root = place
    relative = os.path.relpath(path, root)
    if relative.startswith(".."):
        raise OSError(errno.ENOENT, f"group {path} is outside the mount at {mount_point}")
    return (mount_point / relative).resolve()


def hand_down(own):
    """cgroup v2: enable CONTROLLERS for the children of `own`; the folder that holds them.

    A group whose children have controllers may hold no process itself (unless it is the root):
    its processes first move to LEAF, a child of its own.
    """
    if own.name == LEAF:  # an earlier run moved the grading processes here
        own = own.parent
    control = own / "cgroup.subtree_control"
    if set(CONTROLLERS) <= set(control.read_text().split()):
        return own
    wanted = " ".join(f"+{name}" for name in CONTROLLERS)
    try:
        control.write_text(wanted)
    except OSError as error:
        if error.errno != errno.EBUSY:
            raise
        leaf = own / LEAF
        leaf.mkdir(exist_ok=True)
        for pid in (own / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                (leaf / "cgroup.procs").write_text(pid)
        control.write_text(wanted)
    return own


def sweep(report=None):
    """Remove the groups of sandboxes whose maker has ended (e.g. a zygote that was killed).

    A group that cannot be removed is reported: report(the OSError), by default on stderr.
    """
    current = mode()
    if current.kind == RLIMITS:
        return
    report = report or _report
    for name in {p.name for parent in current.parents for p in parent.glob(f"{PREFIX}*")}:
        match = NAME.fullmatch(name)
        if match and not running(int(match.group(1))):
            try:
                Group(current.kind, tuple(p / name for p in current.parents)).remove()
            except OSError as error:
                report(error)


def _report(error):
    """Say on stderr that a group could not be removed."""
    print(f"cannot remove a sandbox's control group: {error}", file=sys.stderr)


def running(pid):
    """True while process `pid` exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        pass
    return True
