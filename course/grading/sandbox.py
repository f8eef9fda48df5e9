"""An OS sandbox of its own for each student's kernel: Linux namespaces, entered after a fork.

The zygote (`course.grading.zygote`) has imported torch once; for each kernel it forks a child
that calls `enter`. The child unshares a mount, PID, network, IPC and UTS namespace, forks
the kernel as process 1 of its new PID namespace, and reports that process's id. The kernel then:

* sees a root of its own: Python, the installed packages and `utils` read-only, a private copy of
  the student's folder in a size-capped home, a size-capped /tmp, a few devices, its own /proc,
  and the folder of its Unix sockets. Nothing else of the course, and no home of the instructor;
* has no network: its network namespace holds only a loopback that is down. The grader reaches
  it through jupyter_client's `ipc` transport (Unix sockets in that folder);
* runs as an unprivileged user of its own (a user id no other sandbox has, when the grader is
  root; otherwise root of a user namespace with no capabilities), with no new privileges;
* has limits on memory, processes, CPU time, file size and open files;
* dies whole: killing it (process 1) kills every process of its namespace, and it is killed when
  the zygote or the grader is gone.

`probe()` tells whether this machine can make such a sandbox, and why not.
"""

import ctypes
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from course.build import paths

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 1, 38, 24
SYS_PIVOT_ROOT = 155  # x86_64
UID_BASE = 2_000_000_000  # sandbox user ids: UID_BASE + the pid of the process that made it
HOME = "/home/student"
SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"]
DEVICES = ["null", "zero", "full", "random", "urandom"]
KEPT_ENVIRONMENT = {
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "PYTHONHASHSEED",
    "NBGRADER_EXECUTION",
    "MPLBACKEND",
    "JPY_PARENT_PID",
    "JPY_SESSION_NAME",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "ATEN_CPU_CAPABILITY",
    "MKL_ENABLE_INSTRUCTIONS",
    "ONEDNN_MAX_CPU_ISA",
    "PYDEVD_DISABLE_FILE_VALIDATION",
}
MiB = 1 << 20
_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class Limits:
    """What one sandboxed kernel may use."""

    memory_bytes: int = 4096 * MiB  # address space of each process
    processes: int = 64  # processes and threads of its user
    cpu_seconds: int = 900
    file_bytes: int = 32 * MiB  # largest file it may write
    open_files: int = 256
    tmp_bytes: int = 64 * MiB  # each of /tmp and the home folder


class SandboxError(RuntimeError):
    """This machine cannot make the sandbox."""


def _check(result, what):
    """Raise OSError with errno when a libc call failed."""
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _mount(source, target, fstype=None, flags=0, data=None):
    """mount(2)."""
    encode = lambda text: None if text is None else str(text).encode()  # noqa: E731
    _check(
        _libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)),
        f"mount {target}",
    )


def _bind(source, target, writable=False):
    """Bind `source` at `target`, read-only unless `writable`, never with devices or setuid."""
    _mount(source, target, flags=MS_BIND | MS_REC)
    flags = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | (0 if writable else MS_RDONLY)
    _mount(None, target, flags=flags)


def _prctl(option, value):
    """prctl(2) with one argument."""
    _check(_libc.prctl(option, value, 0, 0, 0), f"prctl {option}")


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
    return {
        **kept,
        "HOME": home,
        "TMPDIR": "/tmp",
        "IPYTHONDIR": "/tmp/ipython",
        "MPLCONFIGDIR": "/tmp/matplotlib",
        "JUPYTER_RUNTIME_DIR": "/tmp/jupyter",
        "JUPYTER_CONFIG_DIR": "/tmp/jupyter",
        "JUPYTER_DATA_DIR": "/tmp/jupyter",
    }


def enter(folder, ipc_dir, limits=Limits(), report=None):
    """In a freshly forked child: make the sandbox, become its process 1, return there.

    `folder` is copied into the sandbox's home and becomes the working directory; `ipc_dir` is
    the folder of the kernel's connection file and sockets. `report(pid)` is called in this
    (the outer) process with the id of the sandboxed process, which then waits for it and exits
    with it: only the sandboxed process returns from this function.
    """
    root = os.geteuid() == 0
    uid = UID_BASE + os.getpid() if root else 0
    outer_uid, outer_gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    _check(_libc.unshare(flags | (0 if root else CLONE_NEWUSER)), "unshare")
    if not root:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"0 {outer_uid} 1")
        Path("/proc/self/gid_map").write_text(f"0 {outer_gid} 1")
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    pid = os.fork()
    if pid:
        _wait_and_exit(pid, report)
    new_root = Path(ipc_dir).parent / "root"
    new_root.mkdir(exist_ok=True)
    _build_root(new_root, Path(folder), Path(ipc_dir), uid, limits)
    _pivot(new_root)
    _libc.sethostname(b"sandbox", 7)
    os.chdir(Path(HOME) / Path(folder).name)
    _limit(limits)
    _drop_privileges(uid, root)
    # Process 1 dies with the process that forked it (set last: a change of user clears it).
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


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
    _mount(None, "/", flags=MS_REC | MS_PRIVATE)
    _mount("tmpfs", new_root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
    # The private folders first: a course installed under /tmp or /home is bound inside them.
    _make_devices(new_root / "dev")
    # A new /proc, of the new PID namespace: mounted while the old root (and its /proc) is still
    # visible, which Linux requires of a user namespace that is not the first.
    (new_root / "proc").mkdir()
    _mount("proc", new_root / "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    size = limits.tmp_bytes
    tmp = new_root / "tmp"
    tmp.mkdir()
    _mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")
    home = new_root / HOME.lstrip("/")
    home.mkdir(parents=True)
    options = f"size={size},mode=700,uid={uid},gid={uid}"
    _mount("tmpfs", home, "tmpfs", MS_NOSUID | MS_NODEV, options)
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
    for path in [ipc_dir, *ipc_dir.iterdir()]:
        os.chown(path, uid, uid)
    _bind(ipc_dir, sockets, writable=True)
    _mount(None, new_root, flags=MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _make_devices(dev):
    """A /dev with only the harmless character devices, and /dev/fd."""
    dev.mkdir()
    _mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=755")
    for name in DEVICES:
        (dev / name).touch()
        _mount(f"/dev/{name}", dev / name, flags=MS_BIND)
    (dev / "fd").symlink_to("/proc/self/fd")
    for number, name in enumerate(["stdin", "stdout", "stderr"]):
        (dev / name).symlink_to(f"/proc/self/fd/{number}")
    (dev / "shm").mkdir(mode=0o1777)


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


def _pivot(new_root):
    """Make `new_root` the root, and the old root unreachable."""
    os.chdir(new_root)
    _check(_libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", MNT_DETACH), "umount old root")
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


def _drop_privileges(uid, root):
    """Become an unprivileged user that can never gain a privilege again."""
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    if root:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    else:  # root of a user namespace: give up every capability
        for capability in range(64):
            _libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0)
        _drop_capabilities()


def _drop_capabilities():
    """Clear the effective, permitted and inheritable capability sets (capset(2))."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [(name, ctypes.c_uint32) for name in ("effective", "permitted", "inheritable")]

    header, data = Header(0x20080522, 0), (Data * 2)()
    _check(_libc.syscall(126, ctypes.byref(header), ctypes.byref(data)), "capset")


def probe(timeout=20):
    """(True, "") when this machine can sandbox a kernel, else (False, the reason)."""
    if not sys.platform.startswith("linux"):
        return False, f"the sandbox needs Linux namespaces, and this is {sys.platform}"
    command = [sys.executable, "-P", "-m", "course.grading.sandbox"]  # -P: not the cwd's modules
    environment = {**os.environ, "PYTHONPATH": str(paths.ROOT)}  # from any working directory
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env=environment
        )
    except subprocess.TimeoutExpired:
        return False, "making a sandbox did not finish"
    if result.returncode == 0 and result.stdout.strip() == "sandboxed":
        return True, ""
    reason = (result.stderr.strip().splitlines() or ["no reason given"])[-1]
    return False, reason


def look_inside(folder, ipc_dir, look):
    """Enter a sandbox in a forked child and run look() -> str there: (its text, error or "")."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            enter(folder, ipc_dir)
            answer = {"text": look(), "error": ""}
        except BaseException as error:  # noqa: BLE001 - the reason goes to the parent
            answer = {"text": "", "error": str(error) or type(error).__name__}
        os.write(write, json.dumps(answer).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as reply:
        text = reply.read()
    os.waitpid(pid, 0)
    answer = json.loads(text) if text else {"text": "", "error": "the child wrote nothing"}
    return answer["text"], answer["error"]


def _probe_main():
    """Make a sandbox around a scratch folder, check it from inside, print 'sandboxed'."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="course-sandbox-") as scratch:
        folder, ipc_dir = Path(scratch) / "work", Path(scratch) / "ipc"
        folder.mkdir()
        ipc_dir.mkdir()

        def checked():
            _check_inside(scratch)
            return "sandboxed"

        message, error = look_inside(folder, ipc_dir, checked)
    if error:
        sys.exit(f"cannot make the sandbox: {error}")
    print(message)


def _check_inside(scratch):
    """Raise unless the sandbox hides the outside, has no network and drops privileges."""
    import socket

    if os.path.exists(Path(scratch) / "root") or os.path.exists(__file__):
        raise SandboxError("the outside file system is visible")
    if _has_capabilities():
        raise SandboxError("privileges were not dropped")
    with socket.socket() as probe_socket:
        probe_socket.settimeout(1)
        if probe_socket.connect_ex(("127.0.0.1", 9)) == 0:
            raise SandboxError("the network is reachable")


def _has_capabilities():
    """True when this process has any effective capability."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16) != 0
    return False


if __name__ == "__main__":
    _probe_main()
