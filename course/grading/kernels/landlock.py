"""Landlock for each sandboxed kernel: a second wall, kept by Linux itself, around its files.

`course.grading.kernels.sandbox.enter` installs it right after the system call filter. The kernel
may then read and run files anywhere in its root (already a minimal, read-only tree), but write,
make or remove them only beneath the places the sandbox gives it to write: its home, /tmp, /dev (its
character devices and /dev/shm) and the folder of its Unix sockets (`policy`). Where Linux knows
them (Landlock ABI 4 and later) TCP binds and connections are all refused, and (ABI 6 and later) the
kernel can signal no process outside its sandbox and reach no abstract Unix socket made outside.

Landlock needs Linux 5.13 or later, built and booted with it; elsewhere `abi()` is 0 and
`install` does nothing. The system calls are named, and libseccomp (through `pyseccomp`, as the
filter loads it) resolves them for the machine's own architecture.
"""

import ctypes
import os

from course.grading.kernels import syscall_filter
from course.grading.kernels.linux import SandboxError, libc
from course.grading.kernels.policy import HOME, WRITABLE_PLACES

CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
ACCESS_FS_EXECUTE = 1 << 0
ACCESS_FS_READ_FILE = 1 << 2
ACCESS_FS_READ_DIR = 1 << 3
ACCESS_FS_MAKE_CHAR = 1 << 6
ACCESS_FS_MAKE_BLOCK = 1 << 11
ACCESS_FS_REFER = 1 << 13  # ABI 2
ACCESS_FS_TRUNCATE = 1 << 14  # ABI 3
ACCESS_FS_IOCTL_DEV = 1 << 15  # ABI 5
ACCESS_FS_ABI_1 = (1 << 13) - 1  # execute, read and write files, read folders, remove, make
ACCESS_NET_BIND_TCP = 1 << 0  # ABI 4
ACCESS_NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6
READ_AND_RUN = ACCESS_FS_EXECUTE | ACCESS_FS_READ_FILE | ACCESS_FS_READ_DIR
DEVICE_MAKING = ACCESS_FS_MAKE_CHAR | ACCESS_FS_MAKE_BLOCK  # denied even where writing is not


class RulesetAttr(ctypes.Structure):
    """struct landlock_ruleset_attr: what the ruleset handles (so denies unless a rule allows)."""

    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class PathBeneathAttr(ctypes.Structure):
    """struct landlock_path_beneath_attr (packed): rights allowed beneath an open folder."""

    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi():
    """The Landlock ABI version this Linux offers, or 0 when it has no Landlock."""
    number = _number("landlock_create_ruleset")
    if number < 0:
        return 0
    version = libc.syscall(ctypes.c_long(number), None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    return max(version, 0)


def install(ipc_dir):
    """Confine this process and its children to write only where the sandbox lets its kernel."""
    writable = [HOME, *WRITABLE_PLACES, os.fspath(ipc_dir)]
    return restrict(writable)


def restrict(writable):
    """Allow reading and running beneath /, writing beneath `writable`; the ABI used, 0 if none."""
    version = abi()
    if version == 0:
        return 0
    if len(os.listdir("/proc/self/task")) != 1:  # Landlock confines the calling thread only
        raise SandboxError("no Landlock: the process has more than one thread")
    handled_fs = file_rights(version)
    ruleset = _create_ruleset(version, handled_fs)
    try:
        _allow_beneath(ruleset, "/", READ_AND_RUN)
        for path in writable:
            _allow_beneath(ruleset, path, handled_fs & ~DEVICE_MAKING)
        _call("landlock_restrict_self", ruleset, 0)
    finally:
        os.close(ruleset)
    return version


def file_rights(version):
    """Every file system right that Landlock ABI `version` knows, as a bit mask."""
    rights = ACCESS_FS_ABI_1
    for since, right in [(2, ACCESS_FS_REFER), (3, ACCESS_FS_TRUNCATE), (5, ACCESS_FS_IOCTL_DEV)]:
        if version >= since:
            rights |= right
    return rights


def _create_ruleset(version, handled_fs):
    """A new ruleset's descriptor, handling `handled_fs`, TCP (ABI 4) and scopes (ABI 6)."""
    attr = RulesetAttr(handled_access_fs=handled_fs)
    size = RulesetAttr.handled_access_net.offset
    if version >= 4:
        attr.handled_access_net = ACCESS_NET_BIND_TCP | ACCESS_NET_CONNECT_TCP
        size = RulesetAttr.scoped.offset
    if version >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = ctypes.sizeof(RulesetAttr)
    return _call("landlock_create_ruleset", ctypes.byref(attr), ctypes.c_size_t(size), 0)


def _allow_beneath(ruleset, path, rights):
    """Add to `ruleset` a rule allowing `rights` beneath folder `path`."""
    try:
        folder = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise SandboxError(f"no Landlock rule for {path}: {error.strerror}") from error
    try:
        rule = PathBeneathAttr(allowed_access=rights, parent_fd=folder)
        _call("landlock_add_rule", ruleset, RULE_PATH_BENEATH, ctypes.byref(rule), 0)
    finally:
        os.close(folder)


def _call(name, *arguments):
    """Make Landlock system call `name`; its result, or SandboxError when Linux refuses it."""
    result = libc.syscall(ctypes.c_long(_number(name)), *arguments)
    if result < 0:
        error = ctypes.get_errno()
        raise SandboxError(f"no Landlock: {name} failed ({os.strerror(error)})")
    return result


def _number(name):
    """The number of system call `name` on this architecture, or -1 when it is not known."""
    if syscall_filter.pyseccomp is None:
        return -1
    return syscall_filter.pyseccomp.resolve_syscall(syscall_filter.pyseccomp.Arch.NATIVE, name)
