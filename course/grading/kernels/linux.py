"""What the sandbox needs of Linux: the C library, its constants, and SandboxError.

The one handle on the C library for `sandbox`, `socket_folder`, `landlock` and `syscall_filter`;
the flags of unshare(2), clone(2), mount(2), umount2(2), prctl(2) and of opening a folder without
following a link; and the error every part of the sandbox raises when this machine cannot make
it. Imports nothing of `course`.
"""

import ctypes
import os

CLONE_NEWTIME = 0x00000080  # unshare only: in clone's flags these bits are the exit signal
CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH, UMOUNT_NOFOLLOW = 2, 8
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 1, 38, 24
FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC  # open(2): no link
# pivot_root(2) has no glibc wrapper: its system call number, by platform.machine().
PIVOT_ROOT_NUMBERS = {"x86_64": 155, "aarch64": 41}

libc = ctypes.CDLL(None, use_errno=True)


class SandboxError(RuntimeError):
    """This machine cannot make the sandbox."""


def check(result, what):
    """Raise OSError with errno when a C library call (`what`) returned other than 0."""
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def mount(source, target, fstype=None, flags=0, data=None):
    """mount(2)."""
    encode = lambda text: None if text is None else str(text).encode()  # noqa: E731
    check(
        libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)),
        f"mount {target}",
    )


def prctl(option, value):
    """prctl(2) with one argument."""
    check(libc.prctl(option, value, 0, 0, 0), f"prctl {option}")
