"""The CPU time a kernel has used: the clock of the grader's time limits on a student's code.

A test's limit (`c.Execute.timeout`) counts the CPU time of the kernel's sandbox, not the time on
the clock, so that a busy grading machine, which runs every kernel more slowly, never turns a
correct answer into a timeout. It is read from the sandbox's control group where it has one that
counts CPU time (cgroup v2's `cpu.stat`, or cgroup v1's `cpuacct.usage` where the cpu and cpuacct
controllers share a hierarchy), else summed over the kernel's process and every process below it
(a sandboxed kernel is process 1 of its PID namespace, so every process of its sandbox is below
it, and the CPU time of those that ended is in their parents' count once they were reaped).

A kernel that waits without computing is stopped by the clock instead, but only by the time it
spent waiting: `busy_seconds` is what Linux's scheduler statistics count of the kernel's own time
running or waiting for a CPU, and of the grader's time waiting for one, so that a machine busy
with other work, which makes both wait, never makes a kernel look idle.
"""

import contextlib
from pathlib import Path

import psutil

from course.grading.kernels import cgroups


def kernel_cpu_seconds(pid):
    """(pid, CPU seconds used by kernel `pid` and its processes so far); None once gone."""
    seconds = group_cpu_seconds(pid)
    if seconds is None:
        seconds = tree_cpu_seconds(pid)
    return None if seconds is None else (pid, seconds)


def group_cpu_seconds(pid, proc="/proc"):
    """The CPU seconds of the sandbox's control group of process `pid`; None if none counts."""
    try:
        groups = cgroups.parse_membership(Path(f"{proc}/{pid}/cgroup").read_text())
        mounts = cgroups.parse_mountinfo(Path(f"{proc}/self/mountinfo").read_text())
    except OSError:
        return None
    for controller, counter, unit in (("", "cpu.stat", 1e-6), ("cpuacct", "cpuacct.usage", 1e-9)):
        path = groups.get(controller)
        if path is None or controller not in mounts or not cgroups.NAME.fullmatch(Path(path).name):
            continue
        with contextlib.suppress(OSError, ValueError):
            text = (cgroups._inside(mounts[controller], path) / counter).read_text()
            return parse_counter(text, counter) * unit
    return None


def parse_counter(text, counter):
    """The number in a cgroup's CPU counter: `usage_usec` of cpu.stat, else the file's value."""
    if counter != "cpu.stat":
        return int(text.split()[0])
    fields = dict(line.split(None, 1) for line in text.splitlines() if " " in line)
    return int(fields["usage_usec"])


def tree_cpu_seconds(pid):
    """The CPU seconds of process `pid` and every process below it; None once it has gone."""
    try:
        kernel = psutil.Process(pid)
        processes = [kernel, *kernel.children(recursive=True)]
    except psutil.Error:
        return None
    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


def busy_seconds(pid, proc="/proc"):
    """Seconds kernel `pid` ran or waited for a CPU, plus those this thread waited for one.

    From each task's `schedstat` (run time, run-queue wait, in ns); None where Linux keeps none.
    """
    try:
        kernel = Path(f"{proc}/{pid}/schedstat").read_text().split()
        grader = Path(f"{proc}/thread-self/schedstat").read_text().split()
        return (int(kernel[0]) + int(kernel[1]) + int(grader[1])) * 1e-9
    except (OSError, ValueError, IndexError):
        return None
