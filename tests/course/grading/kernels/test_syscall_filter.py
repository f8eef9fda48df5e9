"""The system call filter of a sandboxed kernel: what it denies, and that a kernel still works."""

import ctypes
import errno
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pyseccomp
import pytest
from sandboxed_kernel import EVERYDAY_PRINTED, EVERYDAY_WORK, lines_printed_in_a_sandboxed_kernel

from course.coursedir import paths
from course.grading.kernels import linux, policy, probe, sandbox, syscall_filter

LIBC = ctypes.CDLL(None, use_errno=True)
ADDR_NO_RANDOMIZE = 0x0040000
PERSONALITY_QUERY = 0xFFFFFFFF


def in_filtered_child(look, filtered=True):
    """Fork; in the child install the filter (if `filtered`) and return look() -> JSON value."""

    def work():
        if filtered:
            syscall_filter.install()
        return look()

    value, error = probe.in_child(work)
    assert not error, error
    return value


def syscall(name, *arguments):
    """Call system call `name` by the number libseccomp knows for it: (result, errno)."""
    number = pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)
    result = LIBC.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in arguments])
    error = ctypes.get_errno() if result == -1 else 0
    if result == 0 and name == "clone":  # a child made by an unfiltered clone just ends
        os._exit(0)
    return error


# Arguments that do no harm should the call go through (as it would, unfiltered, for root).
DENIED_CALLS = {
    "unshare a user namespace": ("unshare", linux.CLONE_NEWUSER),
    "unshare a network namespace": ("unshare", linux.CLONE_NEWNET),
    "unshare a mount namespace": ("unshare", linux.CLONE_NEWNS),
    "unshare a cgroup namespace": ("unshare", linux.CLONE_NEWCGROUP),
    "unshare a time namespace": ("unshare", linux.CLONE_NEWTIME),
    "clone into a user namespace": ("clone", linux.CLONE_NEWUSER | 17, 0, 0, 0, 0),
    "clone into a PID namespace": ("clone", linux.CLONE_NEWPID | 17, 0, 0, 0, 0),
    "setns": ("setns", -1, 0),
    "ptrace": ("ptrace", 0, 0, 0, 0),  # PTRACE_TRACEME
    "process_vm_readv": ("process_vm_readv", 1, 0, 0, 0, 0, 0),
    "keyctl": ("keyctl", 0, -3, 0),  # the id of the session keyring
    "add_key": ("add_key", 0, 0, 0, 0, 0),
    "request_key": ("request_key", 0, 0, 0, 0),
    "bpf": ("bpf", -1, 0, 0),
    "perf_event_open": ("perf_event_open", 0, 0, -1, -1, 0),
    "userfaultfd": ("userfaultfd", 0),
    "io_uring_setup": ("io_uring_setup", 0, 0),
    "io_uring_enter": ("io_uring_enter", -1, 0, 0, 0, 0, 0),
    "mount": ("mount", 0, 0, 0, 0, 0),
    "umount2": ("umount2", 0, 0),
    "pivot_root": ("pivot_root", 0, 0),
    "open_tree": ("open_tree", -1, 0, 0),
    "fsopen": ("fsopen", 0, 0),
    "init_module": ("init_module", 0, 0, 0),
    "finit_module": ("finit_module", -1, 0, 0),
    "delete_module": ("delete_module", 0, 0),
    "kexec_file_load": ("kexec_file_load", -1, -1, 0, 0, 0),
    "personality": ("personality", ADDR_NO_RANDOMIZE),
}


@pytest.mark.parametrize("call", DENIED_CALLS.values(), ids=list(DENIED_CALLS))
def test_a_denied_call_fails_with_eperm(call):
    assert in_filtered_child(lambda: syscall(*call)) == errno.EPERM


def test_clone3_fails_with_enosys_so_that_the_c_library_uses_clone():
    assert in_filtered_child(lambda: syscall("clone3", 0, 0)) == errno.ENOSYS


# memfd_create with no name fails with EFAULT where the filter lets it through.
MEMORY_FILES = [(True, errno.EFAULT), (False, errno.ENOSYS)]


@pytest.mark.parametrize(("memory_files", "expected"), MEMORY_FILES)
def test_memfd_create_is_denied_only_where_no_group_counts_its_memory(memory_files, expected):
    def look():
        syscall_filter.install(memory_files)
        return syscall("memfd_create", 0, 0)

    assert in_filtered_child(look, filtered=False) == expected


@pytest.mark.parametrize("call", ["shmget", "msgget", "semget"])
def test_system_v_ipc_is_denied_where_its_limits_could_not_be_set(call):
    def look():
        syscall_filter.install(system_v_ipc=False)
        return syscall(call, 0, 1, 0o1600)  # IPC_PRIVATE, one byte or one semaphore, IPC_CREAT

    assert in_filtered_child(look, filtered=False) == errno.EPERM


def xattr_refusals(path):
    """The errno of setting an extended attribute on `path` by each call (0: it was set)."""

    def attempt(call):
        try:
            call()
        except OSError as error:
            return error.errno
        return 0

    with open(path, "rb") as opened:
        found = {
            "setxattr": attempt(lambda: os.setxattr(path, "user.hoard", b"x" * 4000)),
            "lsetxattr": attempt(
                lambda: os.setxattr(path, "user.hoard", b"x", follow_symlinks=False)
            ),
            "fsetxattr": attempt(lambda: os.setxattr(opened.fileno(), "user.hoard", b"x")),
        }
    # setxattrat(AT_FDCWD, path, flags, name, NULL, 0), a call newer than libseccomp 2.5
    number = syscall_filter.call_number("setxattrat")
    arguments = [-100, ctypes.c_char_p(str(path).encode()), 0, ctypes.c_char_p(b"user.hoard")]
    result = LIBC.syscall(ctypes.c_long(number), *arguments, None, ctypes.c_size_t(0))
    found["setxattrat"] = ctypes.get_errno() if result == -1 else 0
    return found


def test_no_extended_attribute_can_be_set_by_any_call(tmp_path):
    target = tmp_path / "file"
    target.write_text("")
    refused = in_filtered_child(lambda: xattr_refusals(target))
    assert refused == dict.fromkeys(policy.XATTR_WRITES, errno.ENOTSUP)


def socket_buffer_options():
    """The errno of setsockopt for each buffer option and for one that sets no buffer."""
    found = {}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as opened:
        for option in (*policy.SOCKET_BUFFER_OPTIONS, socket.SO_PASSCRED):
            try:
                opened.setsockopt(socket.SOL_SOCKET, option, 4 * 2**20)
                found[option] = 0
            except OSError as error:
                found[option] = error.errno
    return found


def test_no_socket_buffer_can_be_enlarged_and_other_options_still_work():
    refused = in_filtered_child(socket_buffer_options)
    expected = {str(option): errno.EPERM for option in policy.SOCKET_BUFFER_OPTIONS}
    assert refused == {**expected, str(socket.SO_PASSCRED): 0}
    assert {socket.SO_SNDBUF, socket.SO_RCVBUF} <= set(policy.SOCKET_BUFFER_OPTIONS)


@pytest.mark.parametrize("name", sorted(policy.NEWER_CALL_NUMBERS))
def test_calls_newer_than_libseccomp_are_denied_by_number(name):
    if syscall_filter.call_number(name) is None:
        pytest.skip(f"{name} has no known number on this architecture")
    number = syscall_filter.call_number(name)

    def look():
        result = LIBC.syscall(ctypes.c_long(number), *[ctypes.c_long(0)] * 5)
        return ctypes.get_errno() if result == -1 else 0

    expected = errno.ENOTSUP if name in policy.XATTR_WRITES else errno.EPERM
    assert in_filtered_child(look) == expected


def refusals(family):
    """The errno of socket(family) and of socketpair(family) in this process."""
    codes = []
    for make in (socket.socket, socket.socketpair):
        try:
            make(family).close()
        except OSError as error:
            codes.append(error.errno)
    return codes


@pytest.mark.parametrize("family", ["AF_INET", "AF_INET6", "AF_PACKET", "AF_VSOCK"])
def test_every_socket_but_a_unix_one_is_refused(family):
    refused = in_filtered_child(lambda: refusals(getattr(socket, family)))
    assert refused == [errno.EAFNOSUPPORT] * 2


def test_a_netlink_socket_is_refused_as_zeromq_expects_when_it_binds_tcp():
    refused = in_filtered_child(lambda: refusals(socket.AF_NETLINK))
    assert refused == [syscall_filter.NETLINK_REFUSED, errno.EAFNOSUPPORT]

    def bind_tcp():
        import zmq

        with zmq.Context() as context, context.socket(zmq.PULL) as pull:
            try:
                pull.bind_to_random_port("tcp://127.0.0.1")
            except zmq.ZMQError as error:
                return error.errno
        return 0

    assert in_filtered_child(bind_tcp) == errno.EAFNOSUPPORT  # an error, not an abort


def test_unshare_u_r_fails_in_a_filtered_child():
    if shutil.which("unshare") is None:
        pytest.skip("util-linux's unshare is not installed")

    def unshare_u_r():
        result = subprocess.run(["unshare", "-U", "-r", "true"], capture_output=True, text=True)
        return [result.returncode, result.stderr]

    code, message = in_filtered_child(unshare_u_r)
    assert code != 0 and "Operation not permitted" in message


def test_the_filter_names_every_denied_call_this_machine_has(tmp_path):
    with open(tmp_path / "filter.pfc", "w") as pseudo_code:  # libseccomp's readable form
        syscall_filter.build().export_pfc(pseudo_code)
    rules = (tmp_path / "filter.pfc").read_text()
    native = pyseccomp.Arch.NATIVE
    here = [n for n in policy.DENIED if pyseccomp.resolve_syscall(native, n) >= 0]
    assert {"bpf", "keyctl", "mount", "ptrace", "io_uring_setup", "kexec_load"} <= set(here)
    for name in here:
        assert f'filter for syscall "{name}"' in rules, name


def test_a_call_this_architecture_lacks_is_skipped(monkeypatch, tmp_path):
    monkeypatch.setattr(syscall_filter, "DENIED", ("vm86", "no_such_call", "bpf"))
    with open(tmp_path / "filter.pfc", "w") as pseudo_code:  # libseccomp knows vm86 only on
        syscall_filter.build().export_pfc(pseudo_code)  # 32-bit x86, and the second nowhere
    rules = (tmp_path / "filter.pfc").read_text()
    assert 'filter for syscall "bpf"' in rules
    assert "no_such_call" not in rules and 'syscall "vm86"' not in rules


def unix_sockets_threads_files_and_children():
    """What a kernel does all the time: each thing's outcome."""
    with socket.socket(socket.AF_UNIX) as listening, socket.socket(socket.AF_UNIX) as talking:
        address = f"\0course-filter-{os.getpid()}"
        listening.bind(address)
        listening.listen()
        talking.connect(address)
    ours, theirs = socket.socketpair()
    ours.sendall(b"ping")
    seen = []
    thread = threading.Thread(target=lambda: seen.append(theirs.recv(4).decode()))
    thread.start()
    thread.join()
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    return {
        "thread": seen,
        "fork": os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]),
        "exec": subprocess.run(["/bin/true"]).returncode,
        "read": Path(__file__).read_text().startswith('"""'),
        "unshare files": LIBC.unshare(0x400),  # CLONE_FILES: no new namespace
        "personality": [LIBC.personality(ctypes.c_ulong(v)) >= 0 for v in (0, PERSONALITY_QUERY)],
    }


def test_unix_sockets_threads_fork_exec_and_files_still_work():
    assert in_filtered_child(unix_sockets_threads_files_and_children) == {
        "thread": ["ping"],
        "fork": 7,
        "exec": 0,
        "read": True,
        "unshare files": 0,
        "personality": [True, True],
    }


TORCH_AND_MATPLOTLIB = """
import io, torch, matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from course.grading.kernels import syscall_filter
syscall_filter.install()
torch.set_num_threads(2)
a = torch.ones(512, 512)
print((a @ a)[0, 0].item(), torch.get_num_threads())
figure, axes = plt.subplots()
axes.plot([1, 2, 3])
image = io.BytesIO()
figure.savefig(image, format="png")
print(image.getvalue()[:4] == b"\\x89PNG")
"""


@pytest.mark.slow  # a Python of its own imports torch and matplotlib
def test_torch_with_two_threads_and_matplotlib_still_work():
    result = subprocess.run(
        [sys.executable, "-c", TORCH_AND_MATPLOTLIB],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(paths.ROOT)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["512.0", "2", "True"]


def test_without_the_filter_check_reports_it():
    def checked():
        try:
            syscall_filter.check()
        except sandbox.SandboxError as error:
            return str(error)
        return ""

    assert "no system call filter" in in_filtered_child(checked, filtered=False)
    assert in_filtered_child(checked) == ""


def test_without_libseccomp_no_sandbox_is_made(tmp_path, monkeypatch):
    monkeypatch.setattr(syscall_filter, "pyseccomp", None)
    folder, ipc_dir = tmp_path / "work", tmp_path / "ipc"
    folder.mkdir()
    ipc_dir.mkdir()
    text, error = probe.look_inside(folder, ipc_dir, lambda: "ran unfiltered")
    assert text == "" and "pyseccomp and libseccomp.so.2 are needed" in error


def test_a_filter_that_linux_refuses_makes_no_sandbox(monkeypatch):
    def refuse(rules):
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(pyseccomp.SyscallFilter, "load", refuse)
    with pytest.raises(sandbox.SandboxError, match="Linux refused it"):
        syscall_filter.install()


def test_the_sandbox_filters_its_kernel(tmp_path):
    folder, ipc_dir = tmp_path / "work", tmp_path / "ipc"
    folder.mkdir()
    ipc_dir.mkdir()

    def seccomp_mode():
        syscall_filter.check()
        status = Path("/proc/self/status").read_text().splitlines()
        return next(line.split()[1] for line in status if line.startswith("Seccomp:"))

    assert probe.look_inside(folder, ipc_dir, seccomp_mode) == ("2", "")
    assert probe.probe() == (True, "")


IN_THE_KERNEL = EVERYDAY_WORK + """
import socket
print("unshare", subprocess.run(["unshare", "-U", "-r", "true"], capture_output=True).returncode)
try:
    socket.socket(socket.AF_INET)
except OSError as error:
    print("inet", error.errno)
"""


@pytest.mark.slow  # a sandboxed kernel
def test_a_filtered_sandboxed_kernel_runs_torch_matplotlib_and_subprocesses(tmp_path):
    printed, outputs = lines_printed_in_a_sandboxed_kernel(IN_THE_KERNEL, tmp_path)
    assert printed[:5] == [*EVERYDAY_PRINTED, "unshare 1", "inet 97"], outputs
