"""An OS sandbox of its own for each student's kernel: Linux namespaces, entered after a fork.

The zygote (`course.grading.kernels.zygote`) has imported torch once; for each kernel it forks a
child that calls `enter`. The child unshares a mount, PID, network, IPC and UTS namespace, forks
the kernel as process 1 of its new PID namespace, and reports that process's id. The kernel then:

* sees a root of its own: Python, the installed packages and `utils` read-only, a private copy of
  the student's folder in a size-capped home, a size-capped /tmp, a few devices, its own /proc,
  and the folder of its Unix sockets (`socket_folder`, the grader's side: a fresh, size-capped
  tmpfs for each kernel when the grader is root, taken back once the kernel has made its
  sockets). Nothing else of the course, and no home of the instructor;
* has no network: its network namespace holds only a loopback that is down. The grader reaches
  it through jupyter_client's `ipc` transport (Unix sockets in that folder);
* runs as an unprivileged user of its own (a user id no other sandbox has, when the grader is
  root; otherwise root of a user namespace with no capabilities), with no new privileges;
* has its system calls filtered (`course.grading.kernels.syscall_filter`: no new namespace, no
  socket but a Unix one, none of the kernel's more exposed interfaces) and, where Linux has
  Landlock, may write only in its own folders, use no TCP and signal nothing outside
  (`course.grading.kernels.landlock`);
* has limits on memory, processes, CPU time, file size and open files, for each process, and
  on memory, processes and CPU share for the sandbox whole, in a control group of its own where
  the grader can make one (`course.grading.kernels.cgroups`). Its IPC namespace has small limits
  on System V shared memory, message queues and semaphores (Linux's defaults are practically
  none), and without a control group it may make no anonymous memory file (memfd_create);
* dies whole: killing it (process 1) kills every process of its namespace, and it is killed when
  the zygote or the grader is gone.

Every limit, folder, device and variable named above is in `course.grading.kernels.policy`;
what the sandbox needs of Linux (the C library, its flags, SandboxError) in `linux`.

All of this module runs in the forked child. The grader's side of a kernel's folders is
`socket_folder`; `probe` tells whether this machine can make such a sandbox, and why not.

Why not bubblewrap or nsjail: both build their sandbox around a program that they then exec. A
kernel is a fork of the zygote, which has already imported torch and ipykernel; an exec would
throw those imports away and cost each kernel the 1-2 s that the zygote saves. So the forked
process makes its sandbox itself, with the same system calls those tools make (unshare, mounts,
pivot_root, a user of its own, no capabilities, a system call filter).
"""

import ctypes
import os
import platform
import resource
import shutil
import signal
import sys
from pathlib import Path

from course.grading.kernels import landlock, syscall_filter
from course.grading.kernels.linux import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    CLONE_NEWUTS,
    FOLDER_FLAGS,
    MNT_DETACH,
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    PIVOT_ROOT_NUMBERS,
    PR_CAPBSET_DROP,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    SandboxError,
    check,
    libc,
    mount,
    prctl,
)
from course.grading.kernels.policy import (
    DEVICE_FOLDER_BYTES,
    DEVICE_FOLDER_FILES,
    DEVICES,
    HOME,
    KEPT_ENVIRONMENT,
    MESSAGE_BYTES,
    MESSAGE_QUEUE_BYTES,
    PRIVATE_FOLDERS,
    ROOT_BYTES,
    ROOT_FILES,
    SEMAPHORES_PER_SET,
    SYSTEM_DIRS,
    UID_BASE,
    Limits,
)

DEFAULT_LIMITS = Limits()


def _bind(source, target, writable=False):
    """Bind `source` at `target`, read-only unless `writable`, never with devices or setuid."""
    mount(source, target, flags=MS_BIND | MS_REC)
    flags = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | (0 if writable else MS_RDONLY)
    mount(None, target, flags=flags)


def readable_paths():
    """The folders a kernel reads: the system, Python, the installed packages and `utils`."""
    import utils

    found = [Path(p) for p in SYSTEM_DIRS if os.path.isdir(p) and not os.path.islink(p)]
    python = [sys.base_prefix, sys.prefix, Path(sys.executable).resolve().parent.parent]
    found += [Path(p).resolve() for p in python]
    found.append(Path(utils.__file__).resolve().parent)
    unique = []
    for path in sorted(set(found), key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(kept) for kept in unique):
            unique.append(path)
    return unique


def sandbox_environment(environment, home=HOME):
    """The kernel's environment: the harmless variables of `environment` and private folders."""
    kept = {key: value for key, value in environment.items() if key in KEPT_ENVIRONMENT}
    return {**kept, "HOME": home, **PRIVATE_FOLDERS}


def enter(folder, ipc_dir, limits=DEFAULT_LIMITS, report=None, group=None):
    """In a freshly forked child: make the sandbox, become its process 1, return there.

    `folder` is copied into the sandbox's home and becomes the working directory; `ipc_dir` is
    the folder of the kernel's connection file and sockets (`socket_folder`). `report(pid)`
    is called in this (the outer) process with the id of the sandboxed process, which then waits
    for it and exits with it: only the sandboxed process returns from this function. Both first
    join `group` (a `cgroups.Group`, or None), so every process of the sandbox starts there.
    """
    if group is not None:
        group.join()
    root = os.geteuid() == 0
    uid = UID_BASE + os.getpid() if root else 0
    outer_uid, outer_gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    check(libc.unshare(flags | (0 if root else CLONE_NEWUSER)), "unshare")
    if not root:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"0 {outer_uid} 1")
        Path("/proc/self/gid_map").write_text(f"0 {outer_gid} 1")
    ipc_limited = _limit_ipc(limits)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    pid = os.fork()
    if pid:
        _wait_and_exit(pid, report)
    new_root = Path(ipc_dir).parent / "root"
    new_root.mkdir(exist_ok=True)
    _build_root(new_root, Path(folder), Path(ipc_dir), uid, limits)
    _pivot(new_root)
    libc.sethostname(b"sandbox", 7)
    os.chdir(Path(HOME) / Path(folder).name)
    _limit(limits)
    _drop_privileges(uid, root)
    # Process 1 dies with the process that forked it (set last: a change of user clears it).
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    # denies calls that the steps above made; memfd_create too where no group counts its memory
    syscall_filter.install(memory_files=group is not None, system_v_ipc=ipc_limited)
    landlock.install(ipc_dir)  # where Linux has Landlock: writes only where the kernel may


def _wait_and_exit(pid, report):
    """The outer process: report the sandbox's process 1, wait for it, exit with its status."""
    if report is not None:
        report(pid)
    for fd in range(3):
        os.dup2(os.open(os.devnull, os.O_RDWR), fd)
    os.closerange(3, 65536)
    status = 1
    try:
        while True:
            waited, code = os.waitpid(pid, 0)
            if waited == pid:
                status = os.waitstatus_to_exitcode(code)
                break
    except ChildProcessError:
        pass
    os._exit(status if status >= 0 else 128 - status)


def _build_root(new_root, folder, ipc_dir, uid, limits):
    """Mount the sandbox's file system at `new_root`."""
    mount(None, "/", flags=MS_REC | MS_PRIVATE)
    options = f"size={ROOT_BYTES},nr_inodes={ROOT_FILES},mode=755"
    mount("tmpfs", new_root, "tmpfs", MS_NOSUID | MS_NODEV, options)
    # The private folders first: a course installed under /tmp or /home is bound inside them.
    _make_devices(new_root / "dev")
    # A new /proc, of the new PID namespace: mounted while the old root (and its /proc) is still
    # visible, which Linux requires of a user namespace that is not the first.
    (new_root / "proc").mkdir()
    mount("proc", new_root / "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    size = f"size={limits.tmp_bytes},nr_inodes={limits.tmp_files}"
    tmp = new_root / "tmp"
    tmp.mkdir()
    mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV, f"{size},mode=1777")
    home = new_root / HOME.lstrip("/")
    home.mkdir(parents=True)
    options = f"{size},mode=700,uid={uid},gid={uid}"
    mount("tmpfs", home, "tmpfs", MS_NOSUID | MS_NODEV, options)
    _copy_folder(folder, home / folder.name, uid)
    for path in readable_paths():
        target = new_root / path.relative_to("/")
        target.mkdir(parents=True, exist_ok=True)
        _bind(path, target)
    for name in ("bin", "sbin", "lib", "lib32", "lib64"):
        link = Path("/") / name
        if link.is_symlink():
            (new_root / name).symlink_to(os.readlink(link))
    sockets = new_root / ipc_dir.relative_to("/")
    sockets.mkdir(parents=True, exist_ok=True)
    _hand_over(ipc_dir, uid)
    _bind(ipc_dir, sockets, writable=True)
    mount(None, new_root, flags=MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _hand_over(ipc_dir, uid):
    """Give the sandbox's user the socket folder and the grader's files in it, following no link."""
    folder = os.open(ipc_dir, FOLDER_FLAGS)
    try:
        os.fchown(folder, uid, uid)
        for name in os.listdir(folder):
            os.chown(name, uid, uid, dir_fd=folder, follow_symlinks=False)
    finally:
        os.close(folder)


def _make_devices(dev):
    """A /dev with only the harmless character devices, and /dev/fd."""
    dev.mkdir()
    options = f"size={DEVICE_FOLDER_BYTES},nr_inodes={DEVICE_FOLDER_FILES},mode=755"
    mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, options)
    for name in DEVICES:
        (dev / name).touch()
        mount(f"/dev/{name}", dev / name, flags=MS_BIND)
    (dev / "fd").symlink_to("/proc/self/fd")
    for number, name in enumerate(["stdin", "stdout", "stderr"]):
        (dev / name).symlink_to(f"/proc/self/fd/{number}")
    (dev / "shm").mkdir()
    os.chmod(dev / "shm", 0o1777)  # mkdir's mode passes through the umask


def _copy_folder(folder, target, uid):
    """Copy the student's folder (links stay links, and what does not fit is left out)."""
    try:
        shutil.copytree(folder, target, symlinks=True)
    except (shutil.Error, OSError):
        target.mkdir(exist_ok=True)
    for path in [target, *target.rglob("*")]:
        try:
            os.chown(path, uid, uid, follow_symlinks=False)
        except OSError:
            pass


def pivot_root_number(machine=None):
    """The system call number of pivot_root on `machine` (default: this one's)."""
    machine = machine or platform.machine()
    if machine not in PIVOT_ROOT_NUMBERS:
        raise SandboxError(f"the number of the pivot_root system call on {machine} is not known")
    return PIVOT_ROOT_NUMBERS[machine]


def _pivot(new_root):
    """Make `new_root` the root, and the old root unreachable."""
    os.chdir(new_root)
    number = ctypes.c_long(pivot_root_number())
    check(libc.syscall(number, b".", b"."), "pivot_root")
    check(libc.umount2(b".", MNT_DETACH), "umount old root")
    os.chdir("/")


def _limit(limits):
    """Set the resource limits of the sandbox's processes."""
    for kind, value in [
        (resource.RLIMIT_AS, limits.memory_bytes),
        (resource.RLIMIT_NPROC, limits.processes),
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_FSIZE, limits.file_bytes),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_CORE, 0),
    ]:
        resource.setrlimit(kind, (value, value))


def ipc_settings(limits, page_bytes=None):
    """{file of /proc/sys/kernel: value}: the System V IPC limits of the sandbox's namespace."""
    page_bytes = page_bytes or os.sysconf("SC_PAGE_SIZE")
    objects, per_set = limits.ipc_objects, SEMAPHORES_PER_SET
    return {
        "shmmax": limits.shared_memory_bytes,  # one segment
        "shmall": limits.shared_memory_bytes // page_bytes,  # every segment, in pages
        "shmmni": objects,
        "msgmax": MESSAGE_BYTES,  # one message
        "msgmnb": MESSAGE_QUEUE_BYTES,  # one queue
        "msgmni": objects,
        # semaphores in one set, in every set, operations in one call, sets
        "sem": f"{per_set} {per_set * objects} {per_set} {objects}",
    }


def _limit_ipc(limits):
    """Write `ipc_settings` in the new IPC namespace: True, or False where Linux refuses.

    Root may; the root of a user namespace may on a recent Linux, which gives the files to the
    namespace's owner. Where it may not, the system call filter denies System V IPC instead.
    """
    try:
        for name, value in ipc_settings(limits).items():
            Path("/proc/sys/kernel", name).write_text(str(value))
    except PermissionError:
        return False
    return True


def _drop_privileges(uid, root):
    """Become an unprivileged user that can never gain a privilege again."""
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if root:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    else:  # root of a user namespace: give up every capability
        for capability in range(64):
            libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
        _drop_capabilities()


def _drop_capabilities():
    """Clear the effective, permitted and inheritable capability sets (glibc's capset)."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [(name, ctypes.c_uint32) for name in ("effective", "permitted", "inheritable")]

    header, data = Header(0x20080522, 0), (Data * 2)()
    check(libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")
