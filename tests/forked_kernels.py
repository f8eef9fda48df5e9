"""What the tests of the zygote, its client and the socket folders share: a request for a kernel,
the zygote that forked one, and the clean-up of the socket folders a test mounted."""

import os
import sys
from pathlib import Path

import psutil

from course.grading.kernels import socket_folder

DEADLINE = 60  # a killed kernel has ended by then, however loaded the host


def kernel_request(tmp_path, name):
    """A request for an unsandboxed kernel whose connection file is tmp_path/name.json."""
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", str(tmp_path / f"{name}.json")]
    environment = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    return {"argv": argv, "cwd": str(tmp_path), "env": environment, "sandbox": False}


def kernel_parent(pid):
    """The parent of process `pid` (a forked kernel's zygote)."""
    return psutil.Process(pid).ppid()


def unmount_socket_folders(tmp_path):
    """Unmount whatever socket folder a test left mounted in `tmp_path`, even one that failed."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        mount_point = line.split()[4]
        if mount_point.startswith(f"{tmp_path}/"):
            socket_folder.remove_socket_folder(mount_point)
