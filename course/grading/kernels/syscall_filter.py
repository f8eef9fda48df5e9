"""A system call filter for each sandboxed kernel: seccomp, built with libseccomp.

`course.grading.kernels.sandbox.enter` installs it as its last step, after the kernel has given up
its privileges. It denies the kernel interfaces that no notebook needs and that widen what a process
can reach: new namespaces (the way to regain capabilities), other processes' memory, the kernel
keyring, BPF, performance counters, userfaultfd, io_uring, mounts, kernel modules, kexec, the clock,
and every socket but a Unix one (the list: `policy.DENIED`). It also denies setting extended
attributes (tmpfs keeps them in memory; ENOTSUP, as on a file system without them) and enlarging
a socket's buffers (setsockopt SO_SNDBUF, SO_RCVBUF and their FORCE forms): what a socket queues
is then Linux's default, whatever mode the sandbox's limits are in. A denied call fails with an
errno (EPERM; EAFNOSUPPORT for a socket, EOPNOTSUPP for a netlink one; ENOSYS for clone3, whose
flags seccomp cannot read, so that the C library falls back to clone), so Python code sees an
OSError. Everything else is allowed.

Where a sandbox has no control group (its limits are per process only), memfd_create is denied
too, with ENOSYS, as though Linux had none: the memory of an anonymous file outlives its mappings,
where the address-space limit no longer counts it, and open files could hold gigabytes. A
library that looks for memfd_create then uses a file in /tmp or /dev/shm, whose sizes are capped.
Where the sandbox could not set the System V IPC limits of its namespace, System V IPC is denied
(EPERM): neither torch nor Python's multiprocessing uses it (their shared memory is in /dev/shm).

The filter names system calls and libseccomp resolves them for the machine's own architecture;
a call newer than the libseccomp installed is found by its number (`policy.NEWER_CALL_NUMBERS`),
and a name that architecture lacks is skipped. libseccomp (libseccomp.so.2) comes through the
`pyseccomp` package. Without it no kernel is sandboxed: `install` raises SandboxError.
"""

import ctypes
import errno
import socket

from course.grading.kernels.linux import (
    CLONE_NEWCGROUP,
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWTIME,
    CLONE_NEWUSER,
    CLONE_NEWUTS,
    SandboxError,
    libc,
)
from course.grading.kernels.policy import (
    DENIED,
    NEWER_CALL_NUMBERS,
    SOCKET_BUFFER_OPTIONS,
    SOL_SOCKET,
    SYSTEM_V_IPC,
    XATTR_WRITES,
)

try:
    import pyseccomp
except (ImportError, OSError, RuntimeError, AttributeError) as error:  # e.g. no libseccomp.so.2
    pyseccomp, _LOAD_ERROR = None, error
else:
    _LOAD_ERROR = None

NETLINK_REFUSED = errno.EOPNOTSUPP
PERSONALITY_BITS = 32  # personality(0) keeps Linux's default, personality(0xFFFFFFFF) asks


def install(memory_files=True, system_v_ipc=True):
    """Filter this process's system calls, and those of every thread and child it makes later.

    `memory_files`: whether memfd_create is allowed (only where a control group counts them);
    `system_v_ipc`: whether System V IPC is (only where its limits are set).
    """
    rules = build(memory_files, system_v_ipc)
    try:
        rules.load()
    except OSError as error:  # e.g. a Linux built without seccomp
        raise SandboxError(f"no system call filter: Linux refused it ({error})") from error


def build(memory_files=True, system_v_ipc=True):
    """The filter, not yet loaded: a pyseccomp.SyscallFilter (the arguments: see `install`)."""
    _require_library()
    rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    # Calls through another ABI (x86_64's int 0x80 or x32) fail whole: the rules name none.
    rules.set_attr(pyseccomp.Attr.ACT_BADARCH, pyseccomp.ERRNO(errno.ENOSYS))
    rules.set_attr(pyseccomp.Attr.CTL_TSYNC, 1)
    for name in DENIED:
        _deny(rules, name, errno.EPERM)
    for name in XATTR_WRITES:
        _deny(rules, name, errno.ENOTSUP)
    _deny_new_namespaces(rules)
    _deny_sockets(rules)
    _deny_larger_socket_buffers(rules)
    for change in _personality_changes():
        _deny(rules, "personality", errno.EPERM, change)
    if not memory_files:
        _deny(rules, "memfd_create", errno.ENOSYS)
    if not system_v_ipc:
        for name in SYSTEM_V_IPC:
            _deny(rules, name, errno.EPERM)
    return rules


def check():
    """Raise SandboxError unless this process is filtered: no user namespace, no network socket."""
    if libc.unshare(CLONE_NEWUSER) == 0 or ctypes.get_errno() != errno.EPERM:
        raise SandboxError("no system call filter: a kernel can make user namespaces")
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    except OSError as refused:
        if refused.errno == errno.EAFNOSUPPORT:
            return
    raise SandboxError("no system call filter: a kernel can open network sockets")


def _require_library():
    """Raise SandboxError when pyseccomp or libseccomp could not be loaded."""
    if pyseccomp is None:
        reason = f"no system call filter: pyseccomp and libseccomp.so.2 are needed ({_LOAD_ERROR})"
        raise SandboxError(reason)


def _deny(rules, name, error, *conditions):
    """Make system call `name` fail with `error` (when all `conditions` hold), if it exists here."""
    number = call_number(name)
    if number is not None:
        rules.add_rule(pyseccomp.ERRNO(error), number, *conditions)


def call_number(name):
    """The number of system call `name` here: libseccomp's, else NEWER_CALL_NUMBERS' on the
    architectures that share them; None where this architecture has no such call."""
    number = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)
    if number >= 0:
        return number
    if pyseccomp.system_arch() in (pyseccomp.Arch.X86_64, pyseccomp.Arch.AARCH64):
        return NEWER_CALL_NUMBERS.get(name)
    return None


def _deny_new_namespaces(rules):
    """Deny unshare(2) and clone(2) with any namespace flag, and clone3(2) whole."""
    _deny(rules, "clone3", errno.ENOSYS)
    for flag in _namespace_flags():
        _deny(rules, "unshare", errno.EPERM, pyseccomp.Arg(0, pyseccomp.MASKED_EQ, flag, flag))
        if flag != CLONE_NEWTIME:
            clone_flags = pyseccomp.Arg(_clone_flags_argument(), pyseccomp.MASKED_EQ, flag, flag)
            _deny(rules, "clone", errno.EPERM, clone_flags)


def _deny_sockets(rules):
    """Deny every socket but a Unix one."""
    for name in ("socket", "socketpair"):
        _deny(rules, name, errno.EAFNOSUPPORT, pyseccomp.Arg(0, pyseccomp.NE, socket.AF_UNIX))
    # The C library lists network interfaces through a netlink socket. ZeroMQ does so to bind a
    # TCP address, as ipykernel does at start: it reads EOPNOTSUPP as "no interface", but aborts
    # the kernel on EPERM or EAFNOSUPPORT.
    netlink = pyseccomp.Arg(0, pyseccomp.EQ, socket.AF_NETLINK)
    _deny(rules, "socket", NETLINK_REFUSED, netlink)


def _deny_larger_socket_buffers(rules):
    """Deny setsockopt(SOL_SOCKET, option) for each option that sets a socket's buffer size."""
    level = pyseccomp.Arg(1, pyseccomp.EQ, SOL_SOCKET)
    for option in SOCKET_BUFFER_OPTIONS:
        _deny(rules, "setsockopt", errno.EPERM, level, pyseccomp.Arg(2, pyseccomp.EQ, option))


def _namespace_flags():
    """Each flag of unshare(2) and clone(2) that makes a new namespace."""
    return [
        CLONE_NEWNS,
        CLONE_NEWUTS,
        CLONE_NEWIPC,
        CLONE_NEWUSER,
        CLONE_NEWPID,
        CLONE_NEWNET,
        CLONE_NEWCGROUP,
        CLONE_NEWTIME,
    ]


def _personality_changes():
    """Conditions on personality(2), one of which holds unless its bits are all clear or all set."""
    # Going round such a value's bits, some set bit is followed by a clear one.
    for bit in range(PERSONALITY_BITS):
        pair = 1 << bit | 1 << (bit + 1) % PERSONALITY_BITS
        yield pyseccomp.Arg(0, pyseccomp.MASKED_EQ, pair, 1 << bit)


def _clone_flags_argument():
    """Which argument of clone(2) holds its flags: the second on s390, else the first."""
    return 1 if pyseccomp.system_arch() in (pyseccomp.Arch.S390, pyseccomp.Arch.S390X) else 0
